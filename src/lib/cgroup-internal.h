/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What cgroup.c shares with its two backends, cgroup-v1.c and cgroup-v2.c, and with
 * cgroup-parse.c and cgroup-prune.c: the mount layout found in /proc/self/mountinfo, the ops
 * struct, a directory handle with bounded reads and checked writes of its control files, the
 * slot lock, killing by pidfd, and the pids controller (its files are the same on v1 and v2).
 * Also the parsers, for the unit tests and the fuzzer.
 */
#pragma once

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroup.h"

#define PD_CGROUP_POOL "paddock" /* <hierarchy root>/paddock/<slot> */

/* Largest control file we read whole (flat-keyed files such as cpu.stat are far smaller). */
#define PD_CGROUP_FILE_MAX 4096

enum pd_cgroup_controller {
	PD_CGROUP_MEMORY,
	PD_CGROUP_PIDS,
	PD_CGROUP_CPU,
	PD_CGROUP_CPUACCT, /* v1 only: CPU usage; on v2 cpu.stat has it */
	PD_CGROUP_FREEZER, /* v1 only, optional: pause; on v2 cgroup.freeze is core */
	PD_CGROUP_CONTROLLER_MAX,
};

const char *pd_cgroup_controller_to_string(enum pd_cgroup_controller c);
/* -1 when `s` names no controller we use. */
int pd_cgroup_controller_from_string(const char *s);

/* One mounted hierarchy. */
struct pd_cgroup_hierarchy {
	char mount_point[PATH_MAX]; /* e.g. "/sys/fs/cgroup/memory"; "" when none */
	char mount_root[PATH_MAX];  /* the cgroup mounted there, as /proc/<pid>/cgroup names it */
	unsigned controllers;	    /* v1: 1u << enum pd_cgroup_controller */
};

struct pd_cgroup_layout {
	enum pd_cgroup_version version; /* what is mounted; writability is probe()'s business */
	struct pd_cgroup_hierarchy v2;	/* the first cgroup2 mount */
	/* Distinct v1 mounts carrying our controllers; v1[0] holds memory (and the slot lock). */
	struct pd_cgroup_hierarchy v1[PD_CGROUP_CONTROLLER_MAX];
	size_t n_v1;
	int v1_index[PD_CGROUP_CONTROLLER_MAX]; /* controller -> v1[]; -1 when not mounted */
};

/* The cached layout of this machine (parsed once). */
const struct pd_cgroup_layout *pd_cgroup_layout(void);
/* Fills `l` from mountinfo text; version stays NONE until pd_cgroup_layout_decide(). */
int pd_cgroup_parse_mountinfo(FILE *f, struct pd_cgroup_layout *l);
/*
 * Picks the backend: v2 when `v2_controllers` (the unified root's cgroup.controllers, NULL
 * when unreadable) lists memory, pids and cpu; else v1 when memory, pids and cpu are mounted.
 */
void pd_cgroup_layout_decide(struct pd_cgroup_layout *l, const char *v2_controllers);

/* Empties `l`: no hierarchy, version NONE. */
void pd_cgroup_layout_init(struct pd_cgroup_layout *l);

/* "max" -> UINT64_MAX; decimal with optional trailing newline. 0 or -EINVAL. */
int pd_cgroup_parse_u64(const char *s, uint64_t *ret);
/* The same over exactly `len` bytes, no newline: a cgroup.procs line, a slot's name. */
int pd_cgroup_parse_u64_n(const char *s, size_t len, uint64_t *ret);
/* The value of `key` in a flat-keyed text ("key value\n..."). -ENODATA when absent. */
int pd_cgroup_parse_key(const char *text, const char *key, uint64_t *ret);
/* Whether a space-separated list holds `word`. */
bool pd_cgroup_has_word(const char *list, const char *word);
/*
 * Whether /proc/<pid>/cgroup text places the process in `cgpath` of the hierarchy carrying
 * `controller` ("" for the v2 line "0::").
 */
bool pd_cgroup_proc_in(const char *text, const char *controller, const char *cgpath);

/* A cgroup directory of one hierarchy: <mount point>/paddock/<slot>. */
struct pd_cgroup_dir {
	int fd;			/* O_RDONLY | O_DIRECTORY; -EBADF when unset */
	const char *controller; /* as /proc/<pid>/cgroup names the hierarchy ("" for v2) */
	/*
	 * The cgroup as /proc/<pid>/cgroup names it: the mount's root, "/paddock/", the slot.
	 * Not PATH_MAX: a sandbox holds one of these per hierarchy, and at thousands of
	 * sandboxes 4 KiB each was most of paddockd's memory per sandbox (and of the heap each
	 * init inherits). A longer mount root is refused by name (ENAMETOOLONG).
	 */
	char cgpath[512];
	char label[160]; /* <mount point>/paddock/<slot> for messages (may be cut) */
};

#define PD_CGROUP_DIR_INIT                                                                         \
	{                                                                                          \
		.fd = -EBADF, .controller = ""                                                     \
	}
void pd_cgroup_dir_release(struct pd_cgroup_dir *d);

/* The hierarchy's root: its mount point. */
int pd_cgroup_open_root(const struct pd_cgroup_hierarchy *h, struct pd_cgroup_dir *ret_root,
			paddock_error *err);
/* <root>/paddock; with `create`, made when missing. */
int pd_cgroup_open_pool(const struct pd_cgroup_dir *root, bool create,
			struct pd_cgroup_dir *ret_pool, paddock_error *err);

/*
 * The pool lock: flock on the root directory of the first hierarchy (v1[0], or the unified
 * one). An open holds it shared while it creates directories, after which its pools are no
 * longer empty; a prune removes empty pools only while holding it exclusively (-EBUSY when an
 * open is under way). `ret_root` holds the lock until released.
 */
int pd_cgroup_lock_pools(const struct pd_cgroup_hierarchy *h, bool exclusive,
			 struct pd_cgroup_dir *ret_root, paddock_error *err);

enum pd_cgroup_lock {
	PD_CGROUP_NO_LOCK,
	PD_CGROUP_LOCK_WAIT, /* a prune holds a slot briefly: wait up to ~100 ms */
	PD_CGROUP_LOCK_TRY,
};

/*
 * Creates (when missing) and opens <pool>/<slot> of hierarchy h into `d`. With a lock mode,
 * takes the slot lock (flock on the directory, held while `d` is open): -EBUSY when another
 * handle holds it. -ESTALE when a concurrent prune removed the directory or the pool: start
 * over. *ret_created tells whether this call made the directory.
 */
int pd_cgroup_dir_open(const struct pd_cgroup_hierarchy *h, const struct pd_cgroup_dir *pool,
		       const char *controller, unsigned slot, enum pd_cgroup_lock lock,
		       struct pd_cgroup_dir *d, bool *ret_created, paddock_error *err);

/* Reads a whole control file into buf (NUL-terminated); -EFBIG when it does not fit. */
int pd_cgroup_read(const struct pd_cgroup_dir *d, const char *file, char *buf, size_t size,
		   paddock_error *err);
int pd_cgroup_read_u64(const struct pd_cgroup_dir *d, const char *file, uint64_t *ret,
		       paddock_error *err);
/* -ENODATA (err filled) when the key is missing, -ENOENT when the file is. */
int pd_cgroup_read_key(const struct pd_cgroup_dir *d, const char *file, const char *key,
		       uint64_t *ret, paddock_error *err);
int pd_cgroup_write(const struct pd_cgroup_dir *d, const char *file, const char *value,
		    paddock_error *err);
/* Writes "<pid>" to cgroup.procs. */
int pd_cgroup_write_pid(const struct pd_cgroup_dir *d, pid_t pid, paddock_error *err);
/* Opens d's `file` write-only for pd_cgroup_join_self(): an fd, or -errno with err filled. */
int pd_cgroup_open_join_file(const struct pd_cgroup_dir *d, const char *file, paddock_error *err);

/*
 * One pass over cgroup.procs of each dir: SIGKILL (by pidfd, after checking the pid still
 * names a member) to every process listed. Returns how many were listed, or -errno.
 */
int pd_cgroup_kill_round(const struct pd_cgroup_dir *dirs, size_t n, paddock_error *err);
/* Kill rounds until every cgroup.procs is empty: bounded, -EBUSY when they stay populated. */
int pd_cgroup_kill_until_empty(const struct pd_cgroup_dir *dirs, size_t n, paddock_error *err);

/* The pids controller: same files on v1 and v2. */
struct pd_cgroup_pids_base {
	uint64_t max_events; /* pids.events "max" at open */
	uint64_t peak;	     /* pids.peak at open (0 when absent) */
	bool peak_exact;     /* the cgroup was created by this open: pids.peak is ours */
};
#define PD_CGROUP_PIDS_KEEP UINT64_MAX /* adopting: leave pids.max as it is */
int pd_cgroup_pids_setup(const struct pd_cgroup_dir *d, uint64_t limit, bool created,
			 struct pd_cgroup_pids_base *ret_base, paddock_error *err);
int pd_cgroup_pids_stats(const struct pd_cgroup_dir *d, const struct pd_cgroup_pids_base *base,
			 struct pd_cgroup_stats *st, paddock_error *err);

/* A counter since a baseline, 0 when it went backwards (reset under us). */
static inline uint64_t pd_cgroup_since(uint64_t now, uint64_t base)
{
	return now >= base ? now - base : 0;
}

/* The CPU quota of `cpus` in microseconds per 100 ms period (limits were validated). */
#define PD_CGROUP_CPU_PERIOD_US 100000u
uint64_t pd_cgroup_cpu_quota_us(double cpus);

/*
 * The common head of both backends' handles. Callers of cgroup.h only see pd_cgroup;
 * backends embed it first and cast back.
 */
struct pd_cgroup {
	const struct pd_cgroup_ops *ops;
	unsigned slot;
	int clone_fd; /* owned by the backend; -1 on v1 */
	int oom_fd;   /* owned by the backend; -1 when unavailable */
};

struct pd_cgroup_ops {
	enum pd_cgroup_version version;
	int (*open)(const struct pd_cgroup_layout *layout, unsigned slot,
		    const struct pd_cgroup_limits *limits, struct pd_cgroup **ret_cgroup,
		    paddock_error *err);
	int (*set_limits)(struct pd_cgroup *cg, const struct pd_cgroup_limits *limits,
			  paddock_error *err);
	int (*attach)(struct pd_cgroup *cg, pid_t pid, paddock_error *err);
	int (*join_fds)(struct pd_cgroup *cg, int *ret_fds, paddock_error *err);
	bool (*oom_ack)(struct pd_cgroup *cg);
	int (*stats)(struct pd_cgroup *cg, struct pd_cgroup_stats *ret_stats, paddock_error *err);
	int (*kill_all)(struct pd_cgroup *cg, paddock_error *err);
	/* -ENOTSUP when this cgroup cannot be frozen (v1 without the freezer hierarchy) */
	int (*freeze)(struct pd_cgroup *cg, bool frozen, paddock_error *err);
	void (*free)(struct pd_cgroup *cg);
};

extern const struct pd_cgroup_ops pd_cgroup_v1_ops;
extern const struct pd_cgroup_ops pd_cgroup_v2_ops;

/*
 * Polls `file`'s key (or, with key NULL, the file's first word) until it reads `want`, for at
 * most PD_CGROUP_FREEZE_WAIT_MS: freezing is asynchronous. -ETIMEDOUT past it. With
 * rewrite, `want` is written to the file again at each look that does not find it (v1's
 * freezer: a FREEZING that a busy task left is retried so, cgroup-v1/freezer-subsystem.rst).
 */
#define PD_CGROUP_FREEZE_WAIT_MS 5000 /* a loaded machine (ASan, two suites) took over 2 s */
int pd_cgroup_wait_state(const struct pd_cgroup_dir *d, const char *file, const char *key,
			 const char *want, bool rewrite, paddock_error *err);

/*
 * Removes the idle pool cgroups of these hierarchies (h[0] holds the slot locks). Returns the
 * number of slots removed. pd_cgroup_prune() calls it with the machine's layout.
 */
int pd_cgroup_prune_hierarchies(const struct pd_cgroup_hierarchy *const *h, size_t n,
				paddock_error *err);

/*
 * v2 on a unified hierarchy without our controllers: everything but limits and memory/pids
 * accounting (placement, lock, attach, cgroup.kill, cpu.stat). Only for tests on machines
 * whose controllers are on v1.
 */
#define PD_CGROUP_V2_NO_CONTROLLERS (1u << 0)
int pd_cgroup_v2_open_at(const struct pd_cgroup_hierarchy *h, unsigned slot,
			 const struct pd_cgroup_limits *limits, unsigned flags,
			 struct pd_cgroup **ret_cgroup, paddock_error *err);
