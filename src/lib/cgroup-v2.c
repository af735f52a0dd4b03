/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup v2 backend: one directory paddock/<slot> below the unified hierarchy's root,
 * with memory, pids and cpu enabled in the root's and the pool's cgroup.subtree_control.
 * init is born inside it (clone3 CLONE_INTO_CGROUP on pd_cgroup_clone_fd()), so no process
 * of the sandbox ever runs outside; pd_cgroup_attach() exists for callers that cannot.
 *
 * Written against Documentation/admin-guide/cgroup-v2.rst of 6.18 (read 2026-12) and not
 * run with controllers on the machine it was written on (they are on v1 there); what needs no
 * controller (placement, lock, CLONE_INTO_CGROUP, attach, freeze and kill, cpu.stat) is
 * tested on its unified hierarchy through pd_cgroup_v2_open_at(PD_CGROUP_V2_NO_CONTROLLERS).
 *
 * Accounting "since this sandbox took the cgroup": cpu.stat, memory.events oom_kill and
 * pids.events max are cumulative and get baselines. memory.peak can be reset per open file
 * (6.12+): we keep that fd and read the peak through it. Before 6.12, and for pids.peak,
 * which cannot be reset, the peak is reported only when it is known to be ours: the cgroup
 * was made by this open, or the peak rose above its value at open; otherwise 0 (unknown).
 *
 * OOM notification: inotify on memory.events, which the kernel marks modified on each event;
 * the caller re-reads the stats to see whether oom_kill rose.
 */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define OPEN_ATTEMPTS 5 /* against a concurrent prune of our slot (paddock gc) */

struct cgroup_v2 {
	struct pd_cgroup cg;
	struct pd_cgroup_dir dir; /* holds the slot lock; also the CLONE_INTO_CGROUP fd */
	unsigned flags;
	bool created;	    /* this open made the directory */
	bool has_peak;	    /* memory.peak exists (5.19+) */
	int peak_fd;	    /* memory.peak, reset through this fd (6.12+); -EBADF otherwise */
	int notify_fd;	    /* inotify on memory.events: the OOM fd */
	uint64_t peak_base; /* memory.peak at open, when peak_fd is unset */
	uint64_t oom_kills_base;
	struct pd_cgroup_pids_base pids_base;
	uint64_t usage_base, user_base, system_base; /* cpu.stat, µs */
};

static struct cgroup_v2 *to_v2(struct pd_cgroup *cg)
{
	return (struct cgroup_v2 *)cg;
}

static void v2_destroy(struct cgroup_v2 *v)
{
	pd_cgroup_dir_release(&v->dir);
	v->peak_fd = pd_close(v->peak_fd);
	v->notify_fd = pd_close(v->notify_fd);
	free(v);
}

static void v2_free(struct pd_cgroup *cg)
{
	v2_destroy(to_v2(cg));
}

static void v2_freep(struct cgroup_v2 **v)
{
	if (*v)
		v2_destroy(*v);
}

static bool controlled(const struct cgroup_v2 *v)
{
	return !(v->flags & PD_CGROUP_V2_NO_CONTROLLERS);
}

/* Makes memory, pids and cpu available to the children of d (all or nothing). */
static int enable_controllers(const struct pd_cgroup_dir *d, paddock_error *err)
{
	char enabled[PD_CGROUP_FILE_MAX];
	int r;

	r = pd_cgroup_read(d, "cgroup.subtree_control", enabled, sizeof(enabled), err);
	if (r < 0)
		return r;
	if (pd_cgroup_has_word(enabled, "memory") && pd_cgroup_has_word(enabled, "pids") &&
	    pd_cgroup_has_word(enabled, "cpu"))
		return 0;
	return pd_cgroup_write(d, "cgroup.subtree_control", "+memory +pids +cpu", err);
}

static int take_dir(struct cgroup_v2 *v, const struct pd_cgroup_hierarchy *h, unsigned slot,
		    paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir root = PD_CGROUP_DIR_INIT;
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT;
	int r;

	/* the root also holds the pool lock: no prune removes the pool while we fill it */
	r = pd_cgroup_lock_pools(h, false, &root, err);
	if (r < 0)
		return r;
	if (controlled(v)) {
		r = enable_controllers(&root, err);
		if (r < 0)
			return r;
	}
	r = pd_cgroup_open_pool(&root, true, &pool, err);
	if (r < 0)
		return r;
	/* the pool holds no process (v2's no-internal-process rule lets it enable these) */
	if (controlled(v)) {
		r = enable_controllers(&pool, err);
		if (r < 0)
			return r;
	}
	return pd_cgroup_dir_open(h, &pool, "", slot, PD_CGROUP_LOCK_WAIT, &v->dir, &v->created,
				  err);
}

/* Watches `file` of the cgroup for modification: an inotify fd or -errno. */
static int watch(const struct cgroup_v2 *v, const char *file, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	char path[64];

	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0)
		return pd_fail(err, errno, "inotify_init1");
	/* by our directory fd, not by path: the watch lands on the file we hold */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", v->dir.fd, file);
	if (inotify_add_watch(fd, path, IN_MODIFY) < 0)
		return pd_fail(err, errno, "watch '%s/%s'", v->dir.label, file);
	return TAKE_FD(fd);
}

static void drain(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	/* bounded: events queued meanwhile just make the fd readable again */
	for (int i = 0; i < 64; i++)
		if (read(fd, buf, sizeof(buf)) <= 0)
			break;
}

/*
 * Kills every process of the cgroup: freeze it so nothing forks while we walk cgroup.procs
 * (frozen processes still die of SIGKILL), SIGKILL each member by pidfd until the list is
 * empty, thaw (a frozen cgroup would stop the next sandbox of the slot).
 *
 * cgroup.kill (5.14) is not used, on purpose: since the kill_seq change in 6.14 ("cgroup:
 * fix race between fork and cgroup.kill"), cgroup_css_set_fork() records the kill_seq of
 * the parent's cgroup for clone3(CLONE_INTO_CGROUP) while cgroup_post_fork() compares it
 * with the target's, so once a cgroup has been cgroup.kill'ed every process later born into
 * it is SIGKILLed at birth. A pool slot is reused: its next init would die. Seen on 6.18.44,
 * 2026-12; test_v2_core_on_unified (tests/unit/test-cgroup.c) clones into a killed slot.
 */
static int v2_kill_all(struct pd_cgroup *cg, paddock_error *err)
{
	struct cgroup_v2 *v = to_v2(cg);
	uint64_t populated = 0;
	int r, thaw;

	r = pd_cgroup_read_key(&v->dir, "cgroup.events", "populated", &populated, err);
	if (r < 0 || populated == 0)
		return r;
	/* COMPAT(kernel 5.2): without cgroup.freeze the rounds below still converge */
	(void)pd_write_control(v->dir.fd, "cgroup.freeze", "1");
	r = pd_cgroup_kill_until_empty(&v->dir, 1, err);
	thaw = pd_write_control(v->dir.fd, "cgroup.freeze", "0");
	if (r >= 0 && thaw < 0 && thaw != -ENOENT)
		return pd_fail(err, thaw, "write '0' to '%s/cgroup.freeze'", v->dir.label);
	return r;
}

static int v2_freeze(struct pd_cgroup *cg, bool frozen, paddock_error *err)
{
	struct cgroup_v2 *v = to_v2(cg);
	int r = pd_write_control(v->dir.fd, "cgroup.freeze", frozen ? "1" : "0");

	if (r == -ENOENT)
		return pd_fail(err, ENOTSUP, "no cgroup.freeze in '%s' (kernel before 5.2)",
			       v->dir.label);
	if (r < 0)
		return pd_fail(err, r, "write '%s/cgroup.freeze'", v->dir.label);
	return pd_cgroup_wait_state(&v->dir, "cgroup.events", "frozen", frozen ? "1" : "0", false,
				    err);
}

static int write_limit(const struct cgroup_v2 *v, const char *file, const char *value,
		       const char *field, paddock_error *err)
{
	int r = pd_write_control(v->dir.fd, file, value);

	if (r < 0)
		return pd_fail_field(err, r, field, "write '%s' to '%s/%s'", value, v->dir.label,
				     file);
	return 0;
}

static int set_limits(struct cgroup_v2 *v, const struct pd_cgroup_limits *limits,
		      paddock_error *err)
{
	char value[48] = "max";
	int r;

	if (limits->memory_bytes)
		snprintf(value, sizeof(value), "%" PRIu64, limits->memory_bytes);
	r = write_limit(v, "memory.max", value, "limits.memory", err);
	if (r < 0)
		return r;
	/* no swap, ever; the file is missing only where the kernel has no swap support */
	r = write_limit(v, "memory.swap.max", "0", "limits.memory", err);
	if (r < 0 && r != -ENOENT)
		return r;
	/* SECURITY: an OOM kill takes the whole sandbox, not a process the sandbox picks */
	r = write_limit(v, "memory.oom.group", "1", "limits.memory", err);
	if (r < 0 && r != -ENOENT) /* COMPAT(kernel 4.19) */
		return r;
	r = pd_cgroup_pids_setup(&v->dir, limits->pids, v->created, &v->pids_base, err);
	if (r < 0)
		return r;
	if (limits->cpus > 0)
		snprintf(value, sizeof(value), "%" PRIu64 " %u",
			 pd_cgroup_cpu_quota_us(limits->cpus), PD_CGROUP_CPU_PERIOD_US);
	else
		snprintf(value, sizeof(value), "max %u", PD_CGROUP_CPU_PERIOD_US);
	return write_limit(v, "cpu.max", value, "limits.cpus", err);
}

static int read_cpu(struct cgroup_v2 *v, uint64_t *ret_usage, uint64_t *ret_user,
		    uint64_t *ret_system, paddock_error *err)
{
	char buf[PD_CGROUP_FILE_MAX];
	uint64_t usage, user, system;
	int r;

	/* cpu.stat exists with or without the cpu controller; one read for the three keys */
	r = pd_cgroup_read(&v->dir, "cpu.stat", buf, sizeof(buf), err);
	if (r < 0)
		return r;
	if (pd_cgroup_parse_key(buf, "usage_usec", &usage) < 0 ||
	    pd_cgroup_parse_key(buf, "user_usec", &user) < 0 ||
	    pd_cgroup_parse_key(buf, "system_usec", &system) < 0)
		return pd_fail(err, EIO, "unexpected content in '%s/cpu.stat'", v->dir.label);
	*ret_usage = usage;
	*ret_user = user;
	*ret_system = system;
	return 0;
}

/* memory.peak: reset for our fd where the kernel allows it, else a baseline. */
static int setup_peak(struct cgroup_v2 *v, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	fd = openat(v->dir.fd, "memory.peak", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && pd_write_all(fd, "reset\n", 6) == 0) {
		v->has_peak = true;
		v->peak_fd = TAKE_FD(fd);
		return 0;
	}
	/* COMPAT(kernel 6.12): memory.peak is read-only (EACCES on open) or missing (<5.19) */
	r = pd_cgroup_read_u64(&v->dir, "memory.peak", &v->peak_base, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	v->has_peak = true;
	return 0;
}

static int take_baselines(struct cgroup_v2 *v, paddock_error *err)
{
	int r;

	r = read_cpu(v, &v->usage_base, &v->user_base, &v->system_base, err);
	if (r < 0 || !controlled(v))
		return r;
	r = setup_peak(v, err);
	if (r < 0)
		return r;
	return pd_cgroup_read_key(&v->dir, "memory.events", "oom_kill", &v->oom_kills_base, err);
}

static int setup(struct cgroup_v2 *v, const struct pd_cgroup_limits *limits, paddock_error *err)
{
	int r;

	/* adopting a live sandbox (limits NULL): its members and limits stay */
	if (!limits)
		goto baselines;
	/* left by a supervisor that crashed: nothing of an earlier sandbox may share ours */
	r = v2_kill_all(&v->cg, err);
	if (r < 0)
		return r;
	/* and a freeze it left would stop ours; the file is missing before 5.2 */
	r = pd_write_control(v->dir.fd, "cgroup.freeze", "0");
	if (r < 0 && r != -ENOENT)
		return pd_fail(err, r, "write '0' to '%s/cgroup.freeze'", v->dir.label);
	if (controlled(v)) {
		r = set_limits(v, limits, err);
		if (r < 0)
			return r;
	}
baselines:
	r = take_baselines(v, err);
	if (r < 0)
		return r;
	if (controlled(v)) {
		r = watch(v, "memory.events", err);
		if (r < 0)
			return r;
		v->notify_fd = r;
		v->cg.oom_fd = r;
	}
	v->cg.clone_fd = v->dir.fd;
	return 0;
}

/* One attempt; -ESTALE when a concurrent prune removed the slot under us. */
static int open_once(const struct pd_cgroup_hierarchy *h, unsigned slot,
		     const struct pd_cgroup_limits *limits, unsigned flags,
		     struct pd_cgroup **ret_cgroup, paddock_error *err)
{
	_cleanup_(v2_freep) struct cgroup_v2 *v = NULL;
	int r;

	v = calloc(1, sizeof(*v));
	if (!v)
		return pd_fail(err, ENOMEM, "allocate cgroup");
	v->cg = (struct pd_cgroup){
		.ops = &pd_cgroup_v2_ops, .slot = slot, .clone_fd = -1, .oom_fd = -1
	};
	v->dir = (struct pd_cgroup_dir)PD_CGROUP_DIR_INIT;
	v->flags = flags;
	v->peak_fd = -EBADF;
	v->notify_fd = -EBADF;
	r = take_dir(v, h, slot, err);
	if (r < 0)
		return r;
	r = setup(v, limits, err);
	if (r < 0)
		return r;
	*ret_cgroup = &TAKE_PTR(v)->cg;
	return 0;
}

int pd_cgroup_v2_open_at(const struct pd_cgroup_hierarchy *h, unsigned slot,
			 const struct pd_cgroup_limits *limits, unsigned flags,
			 struct pd_cgroup **ret_cgroup, paddock_error *err)
{
	int r;

	for (int attempt = 1;; attempt++) {
		r = open_once(h, slot, limits, flags, ret_cgroup, err);
		if (r != -ESTALE || attempt >= OPEN_ATTEMPTS)
			return r;
	}
}

static int v2_open(const struct pd_cgroup_layout *l, unsigned slot,
		   const struct pd_cgroup_limits *limits, struct pd_cgroup **ret_cgroup,
		   paddock_error *err)
{
	return pd_cgroup_v2_open_at(&l->v2, slot, limits, 0, ret_cgroup, err);
}

/* A claim's limits: set_limits(), as setup() applies them. */
static int v2_set_limits(struct pd_cgroup *cg, const struct pd_cgroup_limits *limits,
			 paddock_error *err)
{
	struct cgroup_v2 *v = to_v2(cg);

	return controlled(v) ? set_limits(v, limits, err) : 0;
}

static int v2_attach(struct pd_cgroup *cg, pid_t pid, paddock_error *err)
{
	return pd_cgroup_write_pid(&to_v2(cg)->dir, pid, err);
}

/* cgroup.procs (cgroup.h: joining from inside; the kernel takes its global lock either way). */
static int v2_join_fds(struct pd_cgroup *cg, int *ret_fds, paddock_error *err)
{
	int fd = pd_cgroup_open_join_file(&to_v2(cg)->dir, "cgroup.procs", err);

	if (fd < 0)
		return fd;
	ret_fds[0] = fd;
	return 1;
}

/*
 * inotify on memory.events says only that the file changed ("oom" may have risen before
 * "oom_kill"): the caller re-reads oom_kill. The kernel notifies again for the later change
 * (cgroup_file_notify() defers one within 10 ms, it does not drop it).
 */
static bool v2_oom_ack(struct pd_cgroup *cg)
{
	struct cgroup_v2 *v = to_v2(cg);

	if (v->notify_fd >= 0)
		drain(v->notify_fd);
	return false;
}

static int read_peak(struct cgroup_v2 *v, uint64_t *ret_peak, paddock_error *err)
{
	char buf[64];
	uint64_t peak;
	ssize_t n;
	int r;

	if (v->peak_fd >= 0) {
		/* the per-fd peak is read through the fd that reset it, from offset 0 */
		n = pread(v->peak_fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			return pd_fail(err, errno, "read '%s/memory.peak'", v->dir.label);
		buf[n] = '\0';
		if (pd_cgroup_parse_u64(buf, ret_peak) < 0)
			return pd_fail(err, EIO, "unexpected content in '%s/memory.peak': '%s'",
				       v->dir.label, PD_ESC(buf));
		return 0;
	}
	*ret_peak = 0;
	if (!v->has_peak)
		return 0;
	r = pd_cgroup_read_u64(&v->dir, "memory.peak", &peak, err);
	if (r < 0)
		return r;
	if (v->created || peak > v->peak_base)
		*ret_peak = peak;
	return 0;
}

static int v2_stats(struct pd_cgroup *cg, struct pd_cgroup_stats *ret_stats, paddock_error *err)
{
	struct cgroup_v2 *v = to_v2(cg);
	struct pd_cgroup_stats st = { 0 };
	uint64_t oom_kills = 0, usage = 0, user = 0, system = 0;
	int r;

	r = read_cpu(v, &usage, &user, &system, err);
	if (r < 0)
		return r;
	st.cpu_usage_us = pd_cgroup_since(usage, v->usage_base);
	st.cpu_user_us = pd_cgroup_since(user, v->user_base);
	st.cpu_system_us = pd_cgroup_since(system, v->system_base);
	if (controlled(v)) {
		r = read_peak(v, &st.memory_peak_bytes, err);
		if (r < 0)
			return r;
		r = pd_cgroup_read_u64(&v->dir, "memory.current", &st.memory_current_bytes, err);
		if (r < 0)
			return r;
		r = pd_cgroup_read_key(&v->dir, "memory.events", "oom_kill", &oom_kills, err);
		if (r < 0)
			return r;
		st.oom_kills = pd_cgroup_since(oom_kills, v->oom_kills_base);
		r = pd_cgroup_pids_stats(&v->dir, &v->pids_base, &st, err);
		if (r < 0)
			return r;
	}
	*ret_stats = st;
	return 0;
}

const struct pd_cgroup_ops pd_cgroup_v2_ops = {
	.version = PD_CGROUP_V2,
	.open = v2_open,
	.set_limits = v2_set_limits,
	.attach = v2_attach,
	.join_fds = v2_join_fds,
	.oom_ack = v2_oom_ack,
	.stats = v2_stats,
	.kill_all = v2_kill_all,
	.freeze = v2_freeze,
	.free = v2_free,
};
