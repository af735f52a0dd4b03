/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroups, the common part: which backend this machine offers (mountinfo parsed once by
 * cgroup-parse.c, never assumed paths), the dispatch through struct pd_cgroup_ops, and what
 * both backends share: bounded reads and checked writes of control files by directory fd, the
 * slot lock, killing the members of a cgroup and the pids controller. Pruning the pool is
 * cgroup-prune.c.
 *
 * Runs in the supervisor as root. The control files are written only by us, but the
 * processes inside decide what cgroup.procs lists and how long it is, and their pids may be
 * reused by host processes at any moment: a pid read from cgroup.procs is signalled only
 * through a pidfd, after checking that the process it holds is still a member.
 *
 * The slot lock: a sandbox's cgroup is flock()ed (on the directory of the first hierarchy)
 * for as long as its handle is open, so two handles never share a cgroup and a concurrent
 * prune (paddock gc) never removes a cgroup that a sandbox holds between two commands.
 */
#include "cgroup.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "idmap.h"
#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define PROC_CGROUP_MAX	  8192	  /* /proc/<pid>/cgroup: one short line per hierarchy */
#define PROCS_LISTED_MAX  4194304 /* PID_MAX_LIMIT: no cgroup can list more in one read */
#define KILL_ROUNDS	  100	  /* with the back-off below, about 5 s in all */
#define KILL_DELAY_MAX_US 50000
#define LOCK_TRIES	  100 /* 1 ms apart: a prune holds a slot's lock for a few rmdir()s */
#define CPUS_MAX	  1048576.0

/* The probe cache: the mount layout does not change under a running supervisor. */
static struct {
	bool done;
	struct pd_cgroup_layout layout;
} probe_cache;

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	(void)nanosleep(&ts, NULL); /* an interrupted wait only shortens one back-off step */
}

/* ---- reading and writing control files ---- */

static ssize_t read_at(int dirfd, const char *file, char *buf, size_t size)
{
	_cleanup_close_ int fd = -EBADF;
	ssize_t n, more;
	char extra;

	assert(size > 1);
	buf[0] = '\0';
	fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = pd_read_full(fd, buf, size - 1);
	if (n < 0)
		return n;
	if ((size_t)n == size - 1) {
		more = pd_read_full(fd, &extra, 1);
		if (more != 0)
			return more < 0 ? more : -EFBIG;
	}
	buf[n] = '\0';
	return n;
}

static void load_layout(struct pd_cgroup_layout *l)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_close_ int root_fd = -EBADF;
	char controllers[PD_CGROUP_FILE_MAX];
	bool have_controllers = false;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f || pd_cgroup_parse_mountinfo(f, l) < 0) {
		pd_cgroup_layout_init(l);
		return;
	}
	if (l->v2.mount_point[0]) {
		root_fd = open(l->v2.mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		have_controllers = root_fd >= 0 && read_at(root_fd, "cgroup.controllers",
							   controllers, sizeof(controllers)) >= 0;
	}
	pd_cgroup_layout_decide(l, have_controllers ? controllers : NULL);
}

const struct pd_cgroup_layout *pd_cgroup_layout(void)
{
	if (!probe_cache.done) {
		load_layout(&probe_cache.layout);
		probe_cache.done = true;
	}
	return &probe_cache.layout;
}

enum pd_cgroup_version pd_cgroup_probe(void)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();

	/* Rootless: the hierarchy roots belong to root; a delegated subtree is not used (yet). */
	if (l->version == PD_CGROUP_NONE || !pd_idmap_host_root())
		return PD_CGROUP_NONE;
	if (l->version == PD_CGROUP_V2)
		return faccessat(AT_FDCWD, l->v2.mount_point, W_OK, AT_EACCESS) == 0
			       ? PD_CGROUP_V2
			       : PD_CGROUP_NONE;
	for (size_t i = 0; i < l->n_v1; i++)
		if (faccessat(AT_FDCWD, l->v1[i].mount_point, W_OK, AT_EACCESS) < 0)
			return PD_CGROUP_NONE;
	return PD_CGROUP_V1;
}

void pd_cgroup_dir_release(struct pd_cgroup_dir *d)
{
	d->fd = pd_close(d->fd);
}

int pd_cgroup_read(const struct pd_cgroup_dir *d, const char *file, char *buf, size_t size,
		   paddock_error *err)
{
	ssize_t n = read_at(d->fd, file, buf, size);

	if (n < 0)
		return pd_fail(err, (int)n, "read '%s/%s'", d->label, file);
	return 0;
}

int pd_cgroup_read_u64(const struct pd_cgroup_dir *d, const char *file, uint64_t *ret,
		       paddock_error *err)
{
	char buf[64];
	int r;

	r = pd_cgroup_read(d, file, buf, sizeof(buf), err);
	if (r < 0)
		return r;
	if (pd_cgroup_parse_u64(buf, ret) < 0)
		return pd_fail(err, EIO, "unexpected content in '%s/%s': '%s'", d->label, file,
			       PD_ESC(buf));
	return 0;
}

int pd_cgroup_read_key(const struct pd_cgroup_dir *d, const char *file, const char *key,
		       uint64_t *ret, paddock_error *err)
{
	char buf[PD_CGROUP_FILE_MAX];
	int r;

	r = pd_cgroup_read(d, file, buf, sizeof(buf), err);
	if (r < 0)
		return r;
	r = pd_cgroup_parse_key(buf, key, ret);
	if (r == -ENODATA)
		return pd_fail(err, ENODATA, "no '%s' in '%s/%s'", key, d->label, file);
	if (r < 0)
		return pd_fail(err, EIO, "unexpected '%s' in '%s/%s'", key, d->label, file);
	return 0;
}

int pd_cgroup_write(const struct pd_cgroup_dir *d, const char *file, const char *value,
		    paddock_error *err)
{
	int r = pd_write_control(d->fd, file, value);

	if (r < 0)
		return pd_fail(err, r, "write '%s' to '%s/%s'", value, d->label, file);
	return 0;
}

int pd_cgroup_write_pid(const struct pd_cgroup_dir *d, pid_t pid, paddock_error *err)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return pd_cgroup_write(d, "cgroup.procs", buf, err);
}

int pd_cgroup_open_join_file(const struct pd_cgroup_dir *d, const char *file, paddock_error *err)
{
	int fd = openat(d->fd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return pd_fail(err, errno, "open '%s/%s'", d->label, file);
	return fd;
}

int pd_cgroup_join_self(const int *fds, size_t n, paddock_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (write(fds[i], "0", 1) != 1)
			return pd_fail(err, errno, "join the sandbox's cgroup (file %zu of %zu)",
				       i + 1, n);
	return 0;
}

/* ---- directories and the slot lock ---- */

/* "<parent label>/<name>", only for messages: one cut short ends in "..." */
static void set_label(struct pd_cgroup_dir *d, const char *parent, const char *name)
{
	int n = snprintf(d->label, sizeof(d->label), "%s%s%s", parent ? parent : "",
			 parent ? "/" : "", name);

	if (n < 0 || (size_t)n >= sizeof(d->label))
		memcpy(d->label + sizeof(d->label) - 4, "...", 4);
}

/* Opens `name` below `parent` (an absolute path without parent), mkdir first with create. */
static int dir_open(struct pd_cgroup_dir *d, const struct pd_cgroup_dir *parent, const char *name,
		    bool create, bool *ret_created, paddock_error *err)
{
	int dirfd = parent ? parent->fd : AT_FDCWD;
	bool created = false;

	set_label(d, parent ? parent->label : NULL, name);
	if (create) {
		if (mkdirat(dirfd, name, 0755) == 0)
			created = true;
		else if (errno != EEXIST)
			return pd_fail(err, errno, "mkdir '%s'", PD_ESC(d->label));
	}
	d->fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (d->fd < 0 && errno == ENOENT && create) /* a prune removed it after our mkdir */
		return pd_fail(err, ESTALE, "'%s' was removed while taking it", PD_ESC(d->label));
	if (d->fd < 0)
		return pd_fail(err, errno, "open '%s'", PD_ESC(d->label));
	if (ret_created)
		*ret_created = created;
	return 0;
}

int pd_cgroup_open_root(const struct pd_cgroup_hierarchy *h, struct pd_cgroup_dir *ret_root,
			paddock_error *err)
{
	return dir_open(ret_root, NULL, h->mount_point, false, NULL, err);
}

int pd_cgroup_open_pool(const struct pd_cgroup_dir *root, bool create,
			struct pd_cgroup_dir *ret_pool, paddock_error *err)
{
	return dir_open(ret_pool, root, PD_CGROUP_POOL, create, NULL, err);
}

int pd_cgroup_lock_pools(const struct pd_cgroup_hierarchy *h, bool exclusive,
			 struct pd_cgroup_dir *ret_root, paddock_error *err)
{
	int r;

	r = pd_cgroup_open_root(h, ret_root, err);
	if (r < 0)
		return r;
	/* shared: wait, a prune holds it for a few rmdir()s; exclusive: never wait for opens */
	while (flock(ret_root->fd, exclusive ? LOCK_EX | LOCK_NB : LOCK_SH) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return pd_fail(err, EBUSY, "'%s' is being set up", ret_root->label);
		return pd_fail(err, errno, "lock '%s'", ret_root->label);
	}
	return 0;
}

/* Takes the flock of a slot directory and checks it is still linked where we found it. */
static int lock_slot(const struct pd_cgroup_dir *pool, const char *name,
		     const struct pd_cgroup_dir *d, enum pd_cgroup_lock lock, paddock_error *err)
{
	int tries = lock == PD_CGROUP_LOCK_WAIT ? LOCK_TRIES : 0;
	struct stat held, linked;

	for (int i = 0; flock(d->fd, LOCK_EX | LOCK_NB) < 0; i++) {
		if (errno != EWOULDBLOCK)
			return pd_fail(err, errno, "lock '%s'", d->label);
		if (i >= tries)
			return pd_fail(err, EBUSY, "'%s' is held by another sandbox", d->label);
		sleep_us(1000);
	}
	/* a prune may have removed it between our mkdir and the lock: then start over */
	if (fstat(d->fd, &held) < 0)
		return pd_fail(err, errno, "stat '%s'", d->label);
	if (fstatat(pool->fd, name, &linked, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return pd_fail(err, ESTALE, "'%s' was removed while taking it", d->label);
		return pd_fail(err, errno, "stat '%s'", d->label);
	}
	if (held.st_dev != linked.st_dev || held.st_ino != linked.st_ino)
		return pd_fail(err, ESTALE, "'%s' was replaced while taking it", d->label);
	return 0;
}

int pd_cgroup_dir_open(const struct pd_cgroup_hierarchy *h, const struct pd_cgroup_dir *pool,
		       const char *controller, unsigned slot, enum pd_cgroup_lock lock,
		       struct pd_cgroup_dir *d, bool *ret_created, paddock_error *err)
{
	const char *root = strcmp(h->mount_root, "/") == 0 ? "" : h->mount_root;
	char name[16];
	int n, r;

	snprintf(name, sizeof(name), "%u", slot);
	d->controller = controller;
	n = snprintf(d->cgpath, sizeof(d->cgpath), "%s/%s/%s", root, PD_CGROUP_POOL, name);
	if (n < 0 || (size_t)n >= sizeof(d->cgpath))
		return pd_fail(err, ENAMETOOLONG, "cgroup path below '%s' is too long",
			       PD_ESC(h->mount_point));
	r = dir_open(d, pool, name, true, ret_created, err);
	if (r < 0) {
		/* the pool itself was pruned under us */
		return r == -ENOENT ? pd_fail(err, ESTALE, "'%s' was removed", pool->label) : r;
	}
	return lock != PD_CGROUP_NO_LOCK ? lock_slot(pool, name, d, lock, err) : 0;
}

/* ---- killing ---- */

/* SIGKILL to `pid` if the process is (still) in the cgroup of `d`. */
static int kill_member(const struct pd_cgroup_dir *d, pid_t pid, paddock_error *err)
{
	_cleanup_close_ int pidfd = -EBADF;
	_cleanup_close_ int proc_fd = -EBADF;
	char path[40], buf[PROC_CGROUP_MAX];
	ssize_t n;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		if (errno == ESRCH)
			return 0; /* gone already */
		return pd_fail(err, errno, "pidfd_open %d", (int)pid);
	}
	/*
	 * SECURITY: the pid was listed a moment ago and may name a host process by now. The
	 * pidfd pins one process; if /proc, read after it was taken, shows that pid in our
	 * cgroup and the pidfd's process still lives (the signal below fails otherwise), the
	 * two are the same process. Nothing inside can leave the cgroup on its own.
	 */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return errno == ENOENT ? 0 : pd_fail(err, errno, "open '%s'", path);
	n = read_at(proc_fd, "cgroup", buf, sizeof(buf));
	if (n == -ESRCH || n == -ENOENT)
		return 0;
	if (n < 0)
		return pd_fail(err, (int)n, "read '%s/cgroup'", path);
	if (!pd_cgroup_proc_in(buf, d->controller, d->cgpath))
		return 0;
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return pd_fail(err, errno, "kill %d", (int)pid);
	return 0;
}

/* Parses one cgroup.procs line. */
static pid_t parse_pid(const char *s, size_t len)
{
	uint64_t v;

	if (pd_cgroup_parse_u64_n(s, len, &v) < 0 || v == 0 || v > INT32_MAX)
		return -1;
	return (pid_t)v;
}

/* Kills what one cgroup.procs lists, reading it in chunks; returns how many it listed. */
static int kill_listed(const struct pd_cgroup_dir *d, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	char buf[4096];
	size_t have = 0;
	int listed = 0, r;

	fd = openat(d->fd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pd_fail(err, errno, "open '%s/cgroup.procs'", d->label);
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		char *start = buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_fail(err, errno, "read '%s/cgroup.procs'", d->label);
		if (n == 0)
			break;
		have += (size_t)n;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			pid_t pid = parse_pid(start, (size_t)(nl - start));

			if (pid < 0)
				return pd_fail(err, EIO, "unexpected line in '%s/cgroup.procs'",
					       d->label);
			r = kill_member(d, pid, err);
			if (r < 0)
				return r;
			if (++listed >= PROCS_LISTED_MAX)
				return listed;
			start = nl + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (have == sizeof(buf))
			return pd_fail(err, EIO, "overlong line in '%s/cgroup.procs'", d->label);
	}
	if (have > 0)
		return pd_fail(err, EIO, "unterminated line in '%s/cgroup.procs'", d->label);
	return listed;
}

int pd_cgroup_kill_round(const struct pd_cgroup_dir *dirs, size_t n, paddock_error *err)
{
	int listed = 0;

	for (size_t i = 0; i < n; i++) {
		int r = kill_listed(&dirs[i], err);

		if (r < 0)
			return r;
		listed += r;
	}
	return listed;
}

int pd_cgroup_kill_until_empty(const struct pd_cgroup_dir *dirs, size_t n, paddock_error *err)
{
	long delay = 1000;

	for (int round = 0; round < KILL_ROUNDS; round++) {
		int r = pd_cgroup_kill_round(dirs, n, err);

		if (r <= 0)
			return r;
		/* killed processes leave cgroup.procs only once their exit has run */
		sleep_us(delay);
		delay = delay * 2 > KILL_DELAY_MAX_US ? KILL_DELAY_MAX_US : delay * 2;
	}
	return pd_fail(err, EBUSY, "processes remain in '%s' after %d rounds of SIGKILL",
		       dirs[0].label, KILL_ROUNDS);
}

/* ---- the pids controller ---- */

int pd_cgroup_pids_setup(const struct pd_cgroup_dir *d, uint64_t limit, bool created,
			 struct pd_cgroup_pids_base *ret_base, paddock_error *err)
{
	struct pd_cgroup_pids_base base = { .peak_exact = created };
	char value[24] = "max";
	int r;

	if (limit > 0)
		snprintf(value, sizeof(value), "%" PRIu64, limit);
	r = limit == PD_CGROUP_PIDS_KEEP ? 0 : pd_write_control(d->fd, "pids.max", value);
	if (r < 0)
		return pd_fail_field(err, r, "limits.pids", "write '%s' to '%s/pids.max'", value,
				     d->label);
	r = pd_cgroup_read_key(d, "pids.events", "max", &base.max_events, err);
	if (r < 0)
		return r;
	/* COMPAT(kernel ~6.1, not pinned down): no pids.peak before; stats report 0 (unknown) */
	r = pd_cgroup_read_u64(d, "pids.peak", &base.peak, err);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret_base = base;
	return 0;
}

int pd_cgroup_pids_stats(const struct pd_cgroup_dir *d, const struct pd_cgroup_pids_base *base,
			 struct pd_cgroup_stats *st, paddock_error *err)
{
	uint64_t v = 0;
	int r;

	r = pd_cgroup_read_u64(d, "pids.current", &st->pids_current, err);
	if (r < 0)
		return r;
	r = pd_cgroup_read_key(d, "pids.events", "max", &v, err);
	if (r < 0)
		return r;
	st->pids_max_hits = pd_cgroup_since(v, base->max_events);
	/*
	 * pids.peak cannot be reset: it is ours when the cgroup was made for us, or when it rose
	 * above what it was at open; otherwise the peak is unknown (0).
	 */
	r = pd_cgroup_read_u64(d, "pids.peak", &v, err);
	if (r < 0 && r != -ENOENT)
		return r;
	st->pids_peak = r == 0 && (base->peak_exact || v > base->peak) ? v : 0;
	return 0;
}

uint64_t pd_cgroup_cpu_quota_us(double cpus)
{
	return (uint64_t)llround(cpus * PD_CGROUP_CPU_PERIOD_US);
}

/* ---- the interface: dispatch to the backend ---- */

static int check_limits(const struct pd_cgroup_limits *l, paddock_error *err)
{
	/* written as a positive test so that NaN fails it */
	if (!(l->cpus >= 0 && l->cpus <= CPUS_MAX))
		return pd_fail_field(err, EINVAL, "limits.cpus",
				     "expected 0 (unlimited) or a CPU count up to %.0f, got %g",
				     CPUS_MAX, l->cpus);
	if (l->cpus > 0 && pd_cgroup_cpu_quota_us(l->cpus) < 1000)
		return pd_fail_field(
			err, EINVAL, "limits.cpus",
			"expected at least 0.01 CPUs (the kernel's 1 ms quota), got %g", l->cpus);
	if (l->memory_bytes > INT64_MAX)
		return pd_fail_field(err, EINVAL, "limits.memory",
				     "expected at most %" PRId64 " bytes, got %" PRIu64, INT64_MAX,
				     l->memory_bytes);
	return 0;
}

int pd_cgroup_open(unsigned slot, const struct pd_cgroup_limits *limits,
		   struct pd_cgroup **ret_cgroup, paddock_error *err)
{
	const struct pd_cgroup_ops *ops;
	int r;

	if (!ret_cgroup)
		return pd_fail(err, EINVAL, "open cgroup: missing argument");
	r = limits ? check_limits(limits, err) : 0;
	if (r < 0)
		return r;
	switch (pd_cgroup_probe()) {
	case PD_CGROUP_NONE:
		return pd_fail(err, EACCES,
			       "no cgroup hierarchy with the memory, pids and cpu controllers that "
			       "uid %u may write",
			       (unsigned)geteuid());
	case PD_CGROUP_V1:
		ops = &pd_cgroup_v1_ops;
		break;
	case PD_CGROUP_V2:
		ops = &pd_cgroup_v2_ops;
		break;
	default:
		assert(false);
		return pd_fail(err, EINVAL, "open cgroup: bad probe");
	}
	r = ops->open(pd_cgroup_layout(), slot, limits, ret_cgroup, err);
	if (r < 0)
		pd_error_prefix(err, "cgroup of slot %u", slot);
	return r;
}

int pd_cgroup_adopt(unsigned slot, struct pd_cgroup **ret_cgroup, paddock_error *err)
{
	return pd_cgroup_open(slot, NULL, ret_cgroup, err);
}

/*
 * The slot of the paddock cgroup a line of /proc/PID/cgroup names for the freezer (v1's
 * "N:freezer:/.../paddock/SLOT", v2's "0::/.../paddock/SLOT"), or -1.
 */
static long freezer_slot(const char *line)
{
	const char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
	const char *tail = "/" PD_CGROUP_POOL "/", *p;
	char *end;
	long slot;

	if (!path)
		return -1;
	/* the controllers field: "freezer" among v1's, or v2's empty one */
	if (path != ctl + 1 && !(path - ctl - 1 == 7 && strncmp(ctl + 1, "freezer", 7) == 0))
		return -1;
	p = strstr(path, tail);
	if (!p)
		return -1;
	p += strlen(tail);
	errno = 0;
	slot = strtol(p, &end, 10);
	if (errno || end == p || (*end != '\n' && *end != '\0') || slot < 0)
		return -1;
	return slot;
}

int pd_cgroup_freezer_slot(pid_t pid, unsigned *ret_slot)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[512];
	long slot = -1;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (slot < 0 && fgets(line, sizeof(line), f))
		slot = freezer_slot(line);
	if (slot < 0 || slot > (long)UINT32_MAX)
		return -ENOENT;
	*ret_slot = (unsigned)slot;
	return 0;
}

int pd_cgroup_set_limits(struct pd_cgroup *cg, const struct pd_cgroup_limits *limits,
			 paddock_error *err)
{
	int r;

	if (!cg || !limits)
		return pd_fail(err, EINVAL, "set cgroup limits: missing argument");
	r = check_limits(limits, err);
	if (r < 0)
		return r;
	r = cg->ops->set_limits(cg, limits, err);
	if (r < 0)
		pd_error_prefix(err, "cgroup of slot %u", cg->slot);
	return r;
}

enum pd_cgroup_version pd_cgroup_version(const struct pd_cgroup *cg)
{
	return cg ? cg->ops->version : PD_CGROUP_NONE;
}

int pd_cgroup_clone_fd(const struct pd_cgroup *cg)
{
	return cg ? cg->clone_fd : -1;
}

int pd_cgroup_attach(struct pd_cgroup *cg, pid_t pid, paddock_error *err)
{
	if (!cg || pid <= 0)
		return pd_fail(err, EINVAL, "attach to cgroup: bad argument");
	return cg->ops->attach(cg, pid, err);
}

int pd_cgroup_join_fds(struct pd_cgroup *cg, int ret_fds[PD_CGROUP_JOIN_MAX], paddock_error *err)
{
	if (!cg || !ret_fds)
		return pd_fail(err, EINVAL, "cgroup join files: bad argument");
	return cg->ops->join_fds(cg, ret_fds, err);
}

int pd_cgroup_oom_fd(const struct pd_cgroup *cg)
{
	return cg ? cg->oom_fd : -1;
}

bool pd_cgroup_oom_ack(struct pd_cgroup *cg)
{
	return cg ? cg->ops->oom_ack(cg) : false;
}

int pd_cgroup_stats(struct pd_cgroup *cg, struct pd_cgroup_stats *ret_stats, paddock_error *err)
{
	if (!cg || !ret_stats)
		return pd_fail(err, EINVAL, "cgroup stats: bad argument");
	return cg->ops->stats(cg, ret_stats, err);
}

int pd_cgroup_wait_state(const struct pd_cgroup_dir *d, const char *file, const char *key,
			 const char *want, bool rewrite, paddock_error *err)
{
	char buf[PD_CGROUP_FILE_MAX];
	long waited = 0, delay = 100;

	for (;;) {
		ssize_t n = read_at(d->fd, file, buf, sizeof(buf) - 1);
		const char *v = buf;

		if (n < 0)
			return pd_fail(err, (int)-n, "read '%s/%s'", d->label, file);
		buf[n] = '\0';
		if (key) {
			/* flat-keyed: "KEY VALUE" lines */
			size_t kl = strlen(key);

			for (v = buf; v && !(strncmp(v, key, kl) == 0 && v[kl] == ' ');
			     v = strchr(v, '\n') ? strchr(v, '\n') + 1 : NULL)
				;
			v = v ? v + kl + 1 : "";
		}
		if (strncmp(v, want, strlen(want)) == 0 &&
		    (v[strlen(want)] == '\n' || v[strlen(want)] == '\0'))
			return 0;
		if (waited >= PD_CGROUP_FREEZE_WAIT_MS * 1000L)
			return pd_fail(err, ETIMEDOUT, "'%s/%s' did not become '%s' within %d ms",
				       d->label, file, want, PD_CGROUP_FREEZE_WAIT_MS);
		if (rewrite)
			(void)pd_cgroup_write(d, file, want, NULL);
		sleep_us(delay);
		waited += delay;
		delay = delay * 2 > 20000 ? 20000 : delay * 2;
	}
}

int pd_cgroup_freeze(struct pd_cgroup *cg, bool frozen, paddock_error *err)
{
	if (!cg)
		return pd_fail(err, EINVAL, "freeze cgroup: bad argument");
	return cg->ops->freeze(cg, frozen, err);
}

int pd_cgroup_kill_all(struct pd_cgroup *cg, paddock_error *err)
{
	if (!cg)
		return pd_fail(err, EINVAL, "kill cgroup: bad argument");
	return cg->ops->kill_all(cg, err);
}

struct pd_cgroup *pd_cgroup_free(struct pd_cgroup *cg)
{
	if (cg)
		cg->ops->free(cg);
	return NULL;
}
