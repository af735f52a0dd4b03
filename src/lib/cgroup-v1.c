/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup v1 backend: one directory paddock/<slot> in each hierarchy carrying memory,
 * pids, cpu and (optionally) cpuacct; where cpu and cpuacct share a mount ("cpu,cpuacct")
 * that is one directory. Processes join by a write to cgroup.procs of every directory
 * (v1 has no CLONE_INTO_CGROUP), before init runs its own code.
 *
 * Accounting "since this sandbox took the cgroup": memory.max_usage_in_bytes and
 * memory.failcnt are reset at open, cpuacct.usage too (which resets usage_user and usage_sys
 * with it, seen on 6.18.44; a baseline taken after the reset covers kernels where it does not);
 * oom_kill and pids.events are cumulative and get baselines. The peak counts from the usage
 * at open, which includes page cache the previous sandbox of the slot left charged: it is
 * not force-emptied on purpose, as that would evict the host's cache of the base /usr.
 *
 * OOM notification: an eventfd registered for memory.oom_control through
 * cgroup.event_control; the registration ends when the eventfd is closed.
 */
#include "cgroup.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define OPEN_ATTEMPTS 5 /* against a concurrent prune of our slot (paddock gc) */

struct cgroup_v1 {
	struct pd_cgroup cg;
	/* One per hierarchy, in layout order: dirs[0] is memory's and holds the slot lock. */
	struct pd_cgroup_dir dirs[PD_CGROUP_CONTROLLER_MAX];
	bool created[PD_CGROUP_CONTROLLER_MAX];
	size_t n_dirs;
	const struct pd_cgroup_dir *memory, *pids, *cpu;
	const struct pd_cgroup_dir *cpuacct; /* NULL when cpuacct is not mounted */
	const struct pd_cgroup_dir *freezer; /* NULL when freezer is not mounted */
	bool memsw;			     /* memory.memsw.* exist: swap is accounted */
	bool cpuacct_ns_split;		     /* cpuacct.usage_user/_sys exist (4.7+) */
	int oom_efd;
	uint64_t oom_kills_base;
	struct pd_cgroup_pids_base pids_base;
	uint64_t usage_ns_base, user_ns_base, system_ns_base;
};

static struct cgroup_v1 *to_v1(struct pd_cgroup *cg)
{
	return (struct cgroup_v1 *)cg;
}

static void v1_destroy(struct cgroup_v1 *v)
{
	for (size_t i = 0; i < ELEMENTSOF(v->dirs); i++)
		pd_cgroup_dir_release(&v->dirs[i]);
	v->oom_efd = pd_close(v->oom_efd);
	free(v);
}

static void v1_free(struct pd_cgroup *cg)
{
	v1_destroy(to_v1(cg));
}

static void v1_freep(struct cgroup_v1 **v)
{
	if (*v)
		v1_destroy(*v);
}

static bool has_file(const struct pd_cgroup_dir *d, const char *file)
{
	return faccessat(d->fd, file, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Creates or reuses paddock/<slot> in every hierarchy; the slot lock first. */
static int take_dirs(struct cgroup_v1 *v, const struct pd_cgroup_layout *l, unsigned slot,
		     paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pools = PD_CGROUP_DIR_INIT;
	int r;

	r = pd_cgroup_lock_pools(&l->v1[0], false, &pools, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->n_v1; i++) {
		_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir root = PD_CGROUP_DIR_INIT;
		_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT;
		const struct pd_cgroup_hierarchy *h = &l->v1[i];
		/* /proc/<pid>/cgroup names a hierarchy by its controllers: any one of ours */
		const char *controller = pd_cgroup_controller_to_string(
			(enum pd_cgroup_controller)__builtin_ctz(h->controllers));

		r = pd_cgroup_open_root(h, &root, err);
		if (r < 0)
			return r;
		r = pd_cgroup_open_pool(&root, true, &pool, err);
		if (r < 0)
			return r;
		r = pd_cgroup_dir_open(h, &pool, controller, slot,
				       i == 0 ? PD_CGROUP_LOCK_WAIT : PD_CGROUP_NO_LOCK,
				       &v->dirs[i], &v->created[i], err);
		if (r < 0)
			return r;
		v->n_dirs++;
	}
	v->memory = &v->dirs[l->v1_index[PD_CGROUP_MEMORY]];
	v->pids = &v->dirs[l->v1_index[PD_CGROUP_PIDS]];
	v->cpu = &v->dirs[l->v1_index[PD_CGROUP_CPU]];
	if (l->v1_index[PD_CGROUP_CPUACCT] >= 0)
		v->cpuacct = &v->dirs[l->v1_index[PD_CGROUP_CPUACCT]];
	if (l->v1_index[PD_CGROUP_FREEZER] >= 0) {
		v->freezer = &v->dirs[l->v1_index[PD_CGROUP_FREEZER]];
		/* a reused slot must not stay frozen from a supervisor that died while paused */
		r = pd_cgroup_write(v->freezer, "freezer.state", "THAWED", err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_limit(const struct pd_cgroup_dir *d, const char *file, const char *value,
		       const char *field, paddock_error *err)
{
	int r = pd_write_control(d->fd, file, value);

	if (r < 0)
		return pd_fail_field(err, r, field, "write '%s' to '%s/%s'", value, d->label, file);
	return 0;
}

/*
 * memory.limit_in_bytes, and memory.memsw.limit_in_bytes (memory + swap) to the same value so
 * nothing is swapped. The kernel keeps memsw >= limit at every step: when raising, memsw
 * goes first; when lowering, the limit does.
 */
static int set_memory_limit(struct cgroup_v1 *v, uint64_t bytes, paddock_error *err)
{
	uint64_t want = bytes ? bytes : UINT64_MAX, current;
	char value[24] = "-1";
	int r;

	if (bytes)
		snprintf(value, sizeof(value), "%" PRIu64, bytes);
	if (!v->memsw)
		return write_limit(v->memory, "memory.limit_in_bytes", value, "limits.memory", err);
	r = pd_cgroup_read_u64(v->memory, "memory.limit_in_bytes", &current, err);
	if (r < 0)
		return r;
	if (want >= current) {
		r = write_limit(v->memory, "memory.memsw.limit_in_bytes", value, "limits.memory",
				err);
		if (r < 0)
			return r;
		return write_limit(v->memory, "memory.limit_in_bytes", value, "limits.memory", err);
	}
	r = write_limit(v->memory, "memory.limit_in_bytes", value, "limits.memory", err);
	if (r < 0)
		return r;
	return write_limit(v->memory, "memory.memsw.limit_in_bytes", value, "limits.memory", err);
}

static int watch_oom(struct cgroup_v1 *v, paddock_error *err)
{
	_cleanup_close_ int efd = -EBADF;
	_cleanup_close_ int ocfd = -EBADF;
	char line[32];
	int r;

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return pd_fail(err, errno, "eventfd");
	ocfd = openat(v->memory->fd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
	if (ocfd < 0)
		return pd_fail(err, errno, "open '%s/memory.oom_control'", v->memory->label);
	snprintf(line, sizeof(line), "%d %d", efd, ocfd);
	r = pd_cgroup_write(v->memory, "cgroup.event_control", line, err);
	if (r == -ENOENT)
		return 0; /* no v1 memory events in this kernel: no OOM fd, stats still count */
	if (r < 0)
		return r;
	/* the registration keeps what it needs of ocfd; it ends when efd is closed */
	v->oom_efd = TAKE_FD(efd);
	v->cg.oom_fd = v->oom_efd;
	return 0;
}

static int setup_memory(struct cgroup_v1 *v, uint64_t bytes, paddock_error *err)
{
	int r;

	/* a reused cgroup must not keep an earlier OOM-killer setting: killer on */
	r = pd_cgroup_write(v->memory, "memory.oom_control", "0", err);
	if (r < 0)
		return r;
	v->memsw = has_file(v->memory, "memory.memsw.limit_in_bytes");
	r = set_memory_limit(v, bytes, err);
	if (r < 0)
		return r;
	/* without swap accounting (no memsw), at least do not prefer swap; not always writable */
	(void)pd_cgroup_write(v->memory, "memory.swappiness", "0", NULL);
	/* writing 0 resets the peak to the current usage and the limit-hit count */
	r = pd_cgroup_write(v->memory, "memory.max_usage_in_bytes", "0", err);
	if (r < 0)
		return r;
	r = pd_cgroup_write(v->memory, "memory.failcnt", "0", err);
	if (r < 0)
		return r;
	if (v->memsw) {
		r = pd_cgroup_write(v->memory, "memory.memsw.max_usage_in_bytes", "0", err);
		if (r < 0)
			return r;
		r = pd_cgroup_write(v->memory, "memory.memsw.failcnt", "0", err);
		if (r < 0)
			return r;
	}
	r = pd_cgroup_read_key(v->memory, "memory.oom_control", "oom_kill", &v->oom_kills_base,
			       err);
	/* COMPAT(kernel 4.13): no oom_kill count before; oom_kills stays 0 */
	if (r < 0 && r != -ENODATA)
		return r;
	return watch_oom(v, err);
}

static int setup_cpu(struct cgroup_v1 *v, double cpus, paddock_error *err)
{
	char quota[24] = "-1", period[24];
	int r;

	snprintf(period, sizeof(period), "%u", PD_CGROUP_CPU_PERIOD_US);
	if (cpus > 0)
		snprintf(quota, sizeof(quota), "%" PRIu64, pd_cgroup_cpu_quota_us(cpus));
	r = write_limit(v->cpu, "cpu.cfs_period_us", period, "limits.cpus", err);
	if (r == -ENOENT && cpus == 0)
		return 0; /* a kernel without CFS bandwidth control, and no quota wanted */
	if (r < 0)
		return r;
	return write_limit(v->cpu, "cpu.cfs_quota_us", quota, "limits.cpus", err);
}

/* CPU time in ns: cpuacct.usage, usage_user, usage_sys (or cpuacct.stat in USER_HZ). */
static int read_cpu(struct cgroup_v1 *v, uint64_t *ret_usage, uint64_t *ret_user,
		    uint64_t *ret_system, paddock_error *err)
{
	uint64_t usage, user, system;
	int r;

	r = pd_cgroup_read_u64(v->cpuacct, "cpuacct.usage", &usage, err);
	if (r < 0)
		return r;
	if (v->cpuacct_ns_split) {
		r = pd_cgroup_read_u64(v->cpuacct, "cpuacct.usage_user", &user, err);
		if (r < 0)
			return r;
		r = pd_cgroup_read_u64(v->cpuacct, "cpuacct.usage_sys", &system, err);
		if (r < 0)
			return r;
	} else {
		/* COMPAT(kernel 4.7): only cpuacct.stat, in USER_HZ ticks */
		long hz = sysconf(_SC_CLK_TCK);

		r = pd_cgroup_read_key(v->cpuacct, "cpuacct.stat", "user", &user, err);
		if (r < 0)
			return r;
		r = pd_cgroup_read_key(v->cpuacct, "cpuacct.stat", "system", &system, err);
		if (r < 0)
			return r;
		hz = hz > 0 ? hz : 100;
		user = user * (1000000000u / (uint64_t)hz);
		system = system * (1000000000u / (uint64_t)hz);
	}
	*ret_usage = usage;
	*ret_user = user;
	*ret_system = system;
	return 0;
}

static int setup_cpuacct(struct cgroup_v1 *v, paddock_error *err)
{
	if (!v->cpuacct)
		return 0;
	v->cpuacct_ns_split = has_file(v->cpuacct, "cpuacct.usage_user");
	/* the reset is a nicety; the baselines below make the numbers right without it */
	(void)pd_cgroup_write(v->cpuacct, "cpuacct.usage", "0", NULL);
	return read_cpu(v, &v->usage_ns_base, &v->user_ns_base, &v->system_ns_base, err);
}

/* A live sandbox's cgroup, taken over: its members and limits stay, counters start now. */
static int adopt(struct cgroup_v1 *v, paddock_error *err)
{
	int r;

	r = pd_cgroup_read_key(v->memory, "memory.oom_control", "oom_kill", &v->oom_kills_base,
			       err);
	if (r < 0 && r != -ENODATA)
		return r;
	r = watch_oom(v, err);
	if (r < 0)
		return r;
	r = pd_cgroup_pids_setup(v->pids, PD_CGROUP_PIDS_KEEP, false, &v->pids_base, err);
	if (r < 0)
		return r;
	if (!v->cpuacct)
		return 0;
	v->cpuacct_ns_split = has_file(v->cpuacct, "cpuacct.usage_user");
	return read_cpu(v, &v->usage_ns_base, &v->user_ns_base, &v->system_ns_base, err);
}

/* A claim's limits: the limit writes of setup(), each by the function setup() uses. */
static int v1_set_limits(struct pd_cgroup *cg, const struct pd_cgroup_limits *limits,
			 paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);
	size_t pids_i = (size_t)(v->pids - v->dirs);
	int r;

	r = set_memory_limit(v, limits->memory_bytes, err);
	if (r < 0)
		return r;
	r = pd_cgroup_pids_setup(v->pids, limits->pids, v->created[pids_i], &v->pids_base, err);
	if (r < 0)
		return r;
	return setup_cpu(v, limits->cpus, err);
}

static int setup(struct cgroup_v1 *v, const struct pd_cgroup_limits *limits, paddock_error *err)
{
	size_t pids_i = (size_t)(v->pids - v->dirs);
	int r;

	if (!limits)
		return adopt(v, err);
	/* left by a supervisor that crashed: nothing of an earlier sandbox may share ours */
	r = pd_cgroup_kill_until_empty(v->dirs, v->n_dirs, err);
	if (r < 0)
		return r;
	r = setup_memory(v, limits->memory_bytes, err);
	if (r < 0)
		return r;
	r = pd_cgroup_pids_setup(v->pids, limits->pids, v->created[pids_i], &v->pids_base, err);
	if (r < 0)
		return r;
	r = setup_cpu(v, limits->cpus, err);
	if (r < 0)
		return r;
	return setup_cpuacct(v, err);
}

/* One attempt; -ESTALE when a concurrent prune removed the slot under us. */
static int open_once(const struct pd_cgroup_layout *l, unsigned slot,
		     const struct pd_cgroup_limits *limits, struct pd_cgroup **ret_cgroup,
		     paddock_error *err)
{
	_cleanup_(v1_freep) struct cgroup_v1 *v = NULL;
	int r;

	v = calloc(1, sizeof(*v));
	if (!v)
		return pd_fail(err, ENOMEM, "allocate cgroup");
	for (size_t i = 0; i < ELEMENTSOF(v->dirs); i++)
		v->dirs[i] = (struct pd_cgroup_dir)PD_CGROUP_DIR_INIT;
	v->cg = (struct pd_cgroup){
		.ops = &pd_cgroup_v1_ops, .slot = slot, .clone_fd = -1, .oom_fd = -1
	};
	v->oom_efd = -EBADF;
	r = take_dirs(v, l, slot, err);
	if (r < 0)
		return r;
	r = setup(v, limits, err);
	if (r < 0)
		return r;
	*ret_cgroup = &TAKE_PTR(v)->cg;
	return 0;
}

static int v1_open(const struct pd_cgroup_layout *l, unsigned slot,
		   const struct pd_cgroup_limits *limits, struct pd_cgroup **ret_cgroup,
		   paddock_error *err)
{
	int r;

	for (int attempt = 1;; attempt++) {
		r = open_once(l, slot, limits, ret_cgroup, err);
		if (r != -ESTALE || attempt >= OPEN_ATTEMPTS)
			return r;
	}
}

static int v1_attach(struct pd_cgroup *cg, pid_t pid, paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);

	/* memory first: the limit that matters most binds from the first write */
	for (size_t i = 0; i < v->n_dirs; i++) {
		int r = pd_cgroup_write_pid(&v->dirs[i], pid, err);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Each hierarchy's `tasks`, memory's first (cgroup.h: joining from inside). */
static int v1_join_fds(struct pd_cgroup *cg, int *ret_fds, paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);
	int fds[PD_CGROUP_JOIN_MAX];
	size_t n = 0;

	static_assert(PD_CGROUP_JOIN_MAX >= PD_CGROUP_CONTROLLER_MAX, "one per hierarchy");
	for (; n < v->n_dirs; n++) {
		fds[n] = pd_cgroup_open_join_file(&v->dirs[n], "tasks", err);
		if (fds[n] < 0) {
			int r = fds[n];

			while (n > 0)
				pd_close(fds[--n]);
			return r;
		}
	}
	memcpy(ret_fds, fds, n * sizeof(*fds));
	return (int)n;
}

/*
 * The eventfd registered for memory.oom_control is signalled when the memory cgroup goes
 * under OOM, which is before the OOM killer has counted its kill in oom_kill: reading the
 * count then can still give 0, and no second event follows. So on v1 the event is the
 * proof (the kernel also signals it when the cgroup is removed, which a live sandbox's never
 * is).
 */
static bool v1_oom_ack(struct pd_cgroup *cg)
{
	struct cgroup_v1 *v = to_v1(cg);
	uint64_t count = 0;

	/* one read resets the eventfd's counter; EAGAIN: nothing pending */
	if (v->oom_efd < 0 || read(v->oom_efd, &count, sizeof(count)) != sizeof(count))
		return false;
	return count > 0;
}

static int v1_stats(struct pd_cgroup *cg, struct pd_cgroup_stats *ret_stats, paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);
	struct pd_cgroup_stats st = { 0 };
	uint64_t oom_kills = 0, usage = 0, user = 0, system = 0;
	int r;

	r = pd_cgroup_read_u64(v->memory, "memory.max_usage_in_bytes", &st.memory_peak_bytes, err);
	if (r < 0)
		return r;
	r = pd_cgroup_read_u64(v->memory, "memory.usage_in_bytes", &st.memory_current_bytes, err);
	if (r < 0)
		return r;
	r = pd_cgroup_read_key(v->memory, "memory.oom_control", "oom_kill", &oom_kills, err);
	if (r < 0 && r != -ENODATA)
		return r;
	st.oom_kills = pd_cgroup_since(oom_kills, v->oom_kills_base);
	r = pd_cgroup_pids_stats(v->pids, &v->pids_base, &st, err);
	if (r < 0)
		return r;
	if (v->cpuacct) {
		r = read_cpu(v, &usage, &user, &system, err);
		if (r < 0)
			return r;
		st.cpu_usage_us = pd_cgroup_since(usage, v->usage_ns_base) / 1000;
		st.cpu_user_us = pd_cgroup_since(user, v->user_ns_base) / 1000;
		st.cpu_system_us = pd_cgroup_since(system, v->system_ns_base) / 1000;
	}
	*ret_stats = st;
	return 0;
}

static int v1_freeze(struct pd_cgroup *cg, bool frozen, paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);
	const char *want = frozen ? "FROZEN" : "THAWED";
	int r;

	if (!v->freezer)
		return pd_fail(err, ENOTSUP, "the freezer cgroup hierarchy is not mounted");
	r = pd_cgroup_write(v->freezer, "freezer.state", want, err);
	if (r < 0)
		return r;
	/* FREEZING until every task is: written again, a stuck one is retried */
	return pd_cgroup_wait_state(v->freezer, "freezer.state", NULL, want, frozen, err);
}

static int v1_kill_all(struct pd_cgroup *cg, paddock_error *err)
{
	struct cgroup_v1 *v = to_v1(cg);

	/* v1: a frozen task takes SIGKILL only once thawed */
	if (v->freezer)
		(void)pd_cgroup_write(v->freezer, "freezer.state", "THAWED", NULL);

	/* every hierarchy: a crash between two attach writes leaves a process in some only */
	return pd_cgroup_kill_until_empty(v->dirs, v->n_dirs, err);
}

const struct pd_cgroup_ops pd_cgroup_v1_ops = {
	.version = PD_CGROUP_V1,
	.open = v1_open,
	.set_limits = v1_set_limits,
	.attach = v1_attach,
	.join_fds = v1_join_fds,
	.oom_ack = v1_oom_ack,
	.stats = v1_stats,
	.kill_all = v1_kill_all,
	.freeze = v1_freeze,
	.free = v1_free,
};
