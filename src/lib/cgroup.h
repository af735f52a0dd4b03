/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compute limits and accounting of a sandbox through cgroups: one interface, two backends
 * (v2 where the memory, pids and cpu controllers are on the unified hierarchy, v1 where they
 * are not), chosen at run time. Callers never test which backend they hold.
 *
 * Placement and reuse: a sandbox's cgroup is "paddock/<slot>" below the root of each
 * hierarchy that carries a controller we use, where <slot> is the sandbox's id slot (idmap.h).
 * The directory is kept when the sandbox ends and reused by the next sandbox with that slot:
 * removed memory cgroups linger in the kernel and slow creation down over thousands of
 * sandboxes (v1 especially), so paddock keeps a small pool instead of mkdir/rmdir per sandbox.
 * Slots are handed out lowest-first, so the pool is as large as the peak number of live
 * sandboxes.
 *
 * Trust: the cgroup files are written by the supervisor only. Processes inside the sandbox
 * cannot write them (they are owned by host root and not mapped in the sandbox's user
 * namespace), but they can fill them with processes: every read is bounded.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "paddock/paddock.h"

enum pd_cgroup_version {
	PD_CGROUP_NONE, /* no usable controller: rootless without delegation */
	PD_CGROUP_V1,
	PD_CGROUP_V2,
};

struct pd_cgroup_limits {
	uint64_t memory_bytes; /* hard limit, no swap; 0 = leave unlimited */
	uint64_t pids;	       /* 0 = leave unlimited */
	double cpus;	       /* CPU quota in CPUs (0.5, 2); 0 = leave unlimited */
};

struct pd_cgroup_stats {
	uint64_t memory_peak_bytes; /* since this sandbox took the cgroup */
	uint64_t memory_current_bytes;
	uint64_t oom_kills; /* since this sandbox took the cgroup */
	uint64_t pids_current;
	uint64_t pids_peak;	/* 0 when the kernel does not report it (v1) */
	uint64_t pids_max_hits; /* forks refused by pids.max since this sandbox took it */
	uint64_t cpu_usage_us;	/* user + system, since this sandbox took the cgroup */
	uint64_t cpu_user_us;
	uint64_t cpu_system_us;
};

struct pd_cgroup;

/* Which backend this machine offers this process: PD_CGROUP_NONE when it cannot write one. */
enum pd_cgroup_version pd_cgroup_probe(void);

/*
 * Takes the cgroup of `slot` (creating it the first time), makes sure it holds no process,
 * records the counters' baselines and applies the limits. -EACCES/-EROFS/-ENOENT (with err
 * filled) when this process may not manage cgroups (rootless): the caller falls back to
 * rlimits.
 */
int pd_cgroup_open(unsigned slot, const struct pd_cgroup_limits *limits,
		   struct pd_cgroup **ret_cgroup, paddock_error *err);

/*
 * Takes over the cgroup of a live sandbox whose supervisor died (paddock_sandbox_adopt()):
 * the slot lock is taken again, but nothing is killed and no limit is written; counters
 * (CPU, OOM kills, forks refused) start from now.
 */
int pd_cgroup_adopt(unsigned slot, struct pd_cgroup **ret_cgroup, paddock_error *err);
/*
 * The slot of the paddock cgroup whose freezer holds process `pid`, as the kernel says
 * (/proc/PID/cgroup: v1's freezer hierarchy, or v2's): 0, or -ENOENT when it is in none
 * (rootless, no freezer), -errno when the process is gone.
 */
int pd_cgroup_freezer_slot(pid_t pid, unsigned *ret_slot);

/*
 * Writes new limits to an open cgroup: the writes pd_cgroup_open() makes for them (memory with
 * v1's memsw ordering, pids, CPU quota), nothing else (members, OOM watch and counters stay).
 * For the claim of a pooled sandbox, before it runs anything. Lowering memory below what is
 * in use makes the kernel reclaim; v1 refuses with -EBUSY when it cannot, v2 OOM-kills. On
 * failure some limits may be written and others not: the caller writes the old ones back.
 */
int pd_cgroup_set_limits(struct pd_cgroup *cg, const struct pd_cgroup_limits *limits,
			 paddock_error *err);

enum pd_cgroup_version pd_cgroup_version(const struct pd_cgroup *cg);

/* v2: a directory fd for clone3(CLONE_INTO_CGROUP); v1: -1 (use pd_cgroup_attach). */
int pd_cgroup_clone_fd(const struct pd_cgroup *cg);

/* Moves pid (and with v1, only that process) into the cgroup of every controller. */
int pd_cgroup_attach(struct pd_cgroup *cg, pid_t pid, paddock_error *err);

/*
 * Joining from inside: a sandbox's init moves itself into its cgroup, with files the
 * supervisor opened for it. Moving another process (pd_cgroup_attach()) takes the kernel's
 * global cgroup_threadgroup_rwsem for writing, which first waits for an RCU grace period:
 * 5-15 ms on the 2-core development VM, on the critical path of every create. A thread that
 * moves itself skips that lock (kernel/cgroup/cgroup.c, cgroup_procs_write_start(): "If we
 * migrate a single thread ... we can skip the global lock"; Linux 6.2+, read in 6.18,
 * measured 2026-12: 0.05 ms for three hierarchies). The kernel checks the credentials that
 * opened the file, not the writer's, so init needs no right over the host's cgroup files.
 *
 * pd_cgroup_join_fds() opens them, write-only and close-on-exec, in the order to join: v1 each
 * hierarchy's `tasks` (the writing thread; init is single-threaded), memory first; v2 the
 * directory's cgroup.procs (the kernel takes the lock for a process either way). Returns how
 * many it put in ret_fds; the caller owns them.
 */
#define PD_CGROUP_JOIN_MAX 5 /* v1: memory, pids, cpu, cpuacct, freezer */
int pd_cgroup_join_fds(struct pd_cgroup *cg, int ret_fds[PD_CGROUP_JOIN_MAX], paddock_error *err);
/* Writes "0" to each join file: the calling process (a single thread) joins the cgroup. */
int pd_cgroup_join_self(const int *fds, size_t n, paddock_error *err);

/*
 * An fd that becomes readable when the OOM killer acts in the cgroup (v1: an eventfd
 * registered through cgroup.event_control; v2: inotify on memory.events). After it fires,
 * pd_cgroup_oom_ack() drains it, and says true when what it drained proves an OOM happened
 * (v1's event does); false means "look at the stats' oom_kills". -1 when unavailable.
 */
int pd_cgroup_oom_fd(const struct pd_cgroup *cg);
bool pd_cgroup_oom_ack(struct pd_cgroup *cg);

int pd_cgroup_stats(struct pd_cgroup *cg, struct pd_cgroup_stats *ret_stats, paddock_error *err);

/*
 * Kills every process in the cgroup: each pid of cgroup.procs through a pidfd (checked to be
 * still in the cgroup), repeated until empty, bounded; v2 freezes the cgroup meanwhile.
 * Never v2's cgroup.kill: on 6.14+ kernels a cgroup once killed that way kills every later
 * clone3(CLONE_INTO_CGROUP) into it at birth, and pool cgroups are reused.
 */
int pd_cgroup_kill_all(struct pd_cgroup *cg, paddock_error *err);
/*
 * Freezes (or thaws) every process in the cgroup and returns once they are (v1: the freezer
 * hierarchy; v2: cgroup.freeze). -ENOTSUP when this cgroup has no freezer.
 */
int pd_cgroup_freeze(struct pd_cgroup *cg, bool frozen, paddock_error *err);

/*
 * Releases the handle. The directory stays for the next sandbox of the slot. Accepts NULL,
 * returns NULL.
 */
struct pd_cgroup *pd_cgroup_free(struct pd_cgroup *cg);

/*
 * Removes every idle pool cgroup (no process inside) of every hierarchy: for `paddock gc`
 * and tests. Returns the number removed, or -errno.
 */
int pd_cgroup_prune(paddock_error *err);
