/* SPDX-License-Identifier: Apache-2.0 */
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

/*
 * Hints, so a new sandbox does not open and flock every held slot again (thousands of opens
 * per create at density): the slots this process's sandboxes hold, and those found held by
 * another process (or by an init of ours that is still exiting). The latter are forgotten
 * every THEIRS_TTL_S, and whenever a scan finds nothing else, so a slot freed since is taken
 * again (lowest first keeps the kept cgroups few). The flock stays the authority.
 */
#define THEIRS_TTL_S 1
static uint64_t slots_ours[PD_IDMAP_SLOTS / 64], slots_theirs[PD_IDMAP_SLOTS / 64];
static time_t theirs_since;
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_slot(uint64_t *map, unsigned slot, bool set)
{
	uint64_t bit = UINT64_C(1) << (slot % 64);

	if (slot >= PD_IDMAP_SLOTS)
		return;
	pthread_mutex_lock(&slots_lock);
	if (set)
		map[slot / 64] |= bit;
	else
		map[slot / 64] &= ~bit;
	pthread_mutex_unlock(&slots_lock);
}

/* The slots to skip now, in `skip`; with `forget`, nobody else's are remembered first. */
static void slots_to_skip(uint64_t *skip, bool forget)
{
	struct timespec now;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&slots_lock);
	if (forget || now.tv_sec - theirs_since >= THEIRS_TTL_S) {
		memset(slots_theirs, 0, sizeof(slots_theirs));
		theirs_since = now.tv_sec;
	}
	for (size_t i = 0; i < PD_IDMAP_SLOTS / 64; i++)
		skip[i] = slots_ours[i] | slots_theirs[i];
	pthread_mutex_unlock(&slots_lock);
}

void pd_idmap_init(struct pd_idmap *m)
{
	*m = (struct pd_idmap){ .lock_fd = -EBADF };
}

static int open_lock_dir(paddock_error *err)
{
	int fd;

	/* mkdir -p /run/paddock/idmap, root-only so nobody can squat or steal a slot */
	if (mkdir("/run/paddock", 0700) < 0 && errno != EEXIST)
		return pd_fail(err, errno, "mkdir '/run/paddock'");
	if (mkdir(PD_IDMAP_LOCK_DIR, 0700) < 0 && errno != EEXIST)
		return pd_fail(err, errno, "mkdir '%s'", PD_IDMAP_LOCK_DIR);
	fd = open(PD_IDMAP_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pd_fail(err, errno, "open '%s'", PD_IDMAP_LOCK_DIR);
	return fd;
}

/* The lowest slot not skipped that nobody holds, flocked into m; -EAGAIN when none. */
static int try_slots(struct pd_idmap *m, int dfd, bool forget, paddock_error *err)
{
	uint64_t skip[PD_IDMAP_SLOTS / 64];

	slots_to_skip(skip, forget);
	for (unsigned slot = 0; slot < PD_IDMAP_SLOTS; slot++) {
		_cleanup_close_ int fd = -EBADF;
		char name[32];

		if (skip[slot / 64] == UINT64_MAX) {
			slot |= 63; /* a whole word of held slots */
			continue;
		}
		if (skip[slot / 64] & (UINT64_C(1) << (slot % 64)))
			continue;
		snprintf(name, sizeof(name), "%u", slot);
		fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return pd_fail(err, errno, "open id slot '%s'", name);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK)
				return pd_fail(err, errno, "lock id slot '%s'", name);
			note_slot(slots_theirs, slot, true);
			continue;
		}
		m->slot = slot;
		m->lock_fd = TAKE_FD(fd);
		pd_idmap_own_slot(m);
		return 0;
	}
	return -EAGAIN;
}

static int acquire_slot(struct pd_idmap *m, paddock_error *err)
{
	_cleanup_close_ int dfd = -EBADF;
	int r;

	dfd = open_lock_dir(err);
	if (dfd < 0)
		return dfd;
	/*
	 * Lowest free slot first: the slot also names the sandbox's cgroup, which is kept and
	 * reused (cgroup.h), so the pool stays as small as the peak of live sandboxes.
	 */
	r = try_slots(m, dfd, false, err);
	if (r == -EAGAIN) /* nothing free but what others held a moment ago: look again */
		r = try_slots(m, dfd, true, err);
	if (r == -EAGAIN)
		return pd_fail(err, EAGAIN, "all %u id ranges are in use", PD_IDMAP_SLOTS);
	return r;
}

/*
 * The initial user namespace maps all of 0..2^32-2 onto itself, in one line; every other
 * namespace maps less (a namespace cannot map more than its parent holds).
 */
static bool in_initial_userns(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
	char line[128];
	unsigned long inside, outside, count;
	int lines = 0;
	bool full = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		lines++;
		full = sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 &&
		       outside == 0 && count == 4294967295UL;
	}
	return lines == 1 && full;
}

static bool has_root_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	static const int need[] = { CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_CHOWN };

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(need); i++)
		if (!(data[need[i] / 32].effective & (1u << (need[i] % 32))))
			return false;
	return true;
}

bool pd_idmap_host_root(void)
{
	/* a feature-probe cache: euid, user namespace and capabilities do not change under us */
	static int cached = -1;

	if (cached < 0)
		cached = geteuid() == 0 && in_initial_userns() && has_root_caps();
	return cached;
}

bool paddock_host_root(void)
{
	return pd_idmap_host_root();
}

int pd_idmap_acquire(struct pd_idmap *m, bool root_user, paddock_error *err)
{
	int r;

	pd_idmap_init(m);
	m->root_user = root_user;
	if (!pd_idmap_host_root()) {
		m->rootless = true;
		m->outside_uid = geteuid();
		m->outside_gid = getegid();
		m->init_uid = pd_idmap_user_uid(m);
		m->init_gid = pd_idmap_user_gid(m);
		return 0;
	}
	r = acquire_slot(m, err);
	if (r < 0)
		return r;
	m->outside_uid = PD_IDMAP_BASE + m->slot * PD_IDMAP_RANGE;
	m->outside_gid = m->outside_uid;
	m->init_uid = 0;
	m->init_gid = 0;
	return 0;
}

int pd_idmap_write(const struct pd_idmap *m, pid_t pid, paddock_error *err)
{
	_cleanup_close_ int dfd = -EBADF;
	char path[64], line[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return pd_fail(err, errno, "open '%s'", path);
	if (m->rootless)
		snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)m->init_uid,
			 (unsigned)m->outside_uid);
	else
		snprintf(line, sizeof(line), "0 %u %u\n", (unsigned)m->outside_uid, PD_IDMAP_RANGE);
	r = pd_write_control(dfd, "uid_map", line);
	if (r < 0)
		return pd_fail(err, r, "write uid_map '%s'", line);
	if (m->rootless) {
		/* An unprivileged writer must give up setgroups() before it may map a gid. */
		r = pd_write_control(dfd, "setgroups", "deny");
		if (r < 0)
			return pd_fail(err, r, "write setgroups");
		snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)m->init_gid,
			 (unsigned)m->outside_gid);
	} else {
		snprintf(line, sizeof(line), "0 %u %u\n", (unsigned)m->outside_gid, PD_IDMAP_RANGE);
	}
	r = pd_write_control(dfd, "gid_map", line);
	if (r < 0)
		return pd_fail(err, r, "write gid_map '%s'", line);
	return 0;
}

void pd_idmap_own_slot(struct pd_idmap *m)
{
	if (m->rootless || m->owns_slot)
		return;
	note_slot(slots_ours, m->slot, true);
	m->owns_slot = true;
}

void pd_idmap_release(struct pd_idmap *m)
{
	m->lock_fd = pd_close(m->lock_fd);
	if (m->owns_slot)
		note_slot(slots_ours, m->slot, false);
	m->owns_slot = false;
}

/*
 * A user namespace whose only mapping is "owner (inside) <-> the sandbox user's host id
 * (outside)": an idmapped mount reads an on-disk id as an id inside this namespace. It is
 * made by a child that unshares and waits; the namespace outlives it through the fd.
 */
static int owner_userns(uid_t owner, gid_t group, uid_t user, gid_t ugroup, paddock_error *err)
{
	_cleanup_close_ int rd = -EBADF, wr = -EBADF, dfd = -EBADF;
	char path[64], line[64];
	int p[2], ns, r;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_fail(err, errno, "pipe");
	rd = p[0];
	wr = p[1];
	pid = fork();
	if (pid < 0)
		return pd_fail(err, errno, "fork an id-mapping helper");
	if (pid == 0) {
		/* async-signal-safe only; the parent SIGKILLs us when done, or dies and we follow
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		(void)!write(wr, "u", 1);
		for (;;)
			pause();
	}
	wr = pd_close(wr);
	r = read(rd, &c, 1) == 1 ? 0 : -EIO;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (r >= 0) {
		dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dfd < 0 ? -errno : 0;
	}
	if (r >= 0) {
		snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)owner, (unsigned)user);
		r = pd_write_control(dfd, "uid_map", line);
	}
	if (r >= 0) {
		snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)group, (unsigned)ugroup);
		r = pd_write_control(dfd, "gid_map", line);
	}
	ns = r >= 0 ? openat(dfd, "ns/user", O_RDONLY | O_CLOEXEC) : -1;
	if (r >= 0 && ns < 0)
		r = -errno;
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "make the id mapping for an idmapped mount");
	return ns;
}

int pd_idmap_mount_tree(const struct pd_idmap *m, const char *path, int *ret_fd, paddock_error *err)
{
	_cleanup_close_ int tree = -EBADF, ns = -EBADF;
	struct mount_attr a = { .attr_set =
					MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	struct stat st;

	if (m->rootless)
		return pd_fail(err, EOPNOTSUPP, "rootless: ids map to the invoker already");
	tree = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return pd_fail_field(err, errno, "workspace", "open '%s'", path);
	if (fstat(tree, &st) < 0)
		return pd_fail(err, errno, "stat '%s'", path);
	/* a single file keeps its owner: only directories are made the sandbox user's */
	if (!S_ISDIR(st.st_mode))
		return pd_fail_field(err, ENOTDIR, "workspace", "'%s' is not a directory", path);
	/*
	 * SECURITY: what the sandbox makes below an idmapped directory belongs on the host to
	 * the directory's owner. Never to root: a file owned by root (even without set-id bits,
	 * which seccomp refuses) is one the host trusts. Such a directory is refused rather
	 * than bound unwritable or mapped to some other owner: the caller decides whose files
	 * come out, by the owner they give the directory.
	 */
	if (st.st_uid == 0 || st.st_gid == 0)
		return pd_fail_field(err, EPERM, "workspace",
				     "'%s' is owned by %s: what the sandbox writes there would "
				     "belong to root on the host; give the directory to the "
				     "unprivileged user and group who should own the results "
				     "(chown USER:GROUP), or bind it read-only",
				     PD_ESC(path), st.st_uid == 0 ? "root" : "group root");
	/* the owner is whoever commands run as: the sandbox user, or root with root_user */
	ns = owner_userns(st.st_uid, st.st_gid, m->outside_uid + pd_idmap_user_uid(m),
			  m->outside_gid + pd_idmap_user_gid(m), err);
	if (ns < 0)
		return ns;
	a.userns_fd = (uint64_t)ns;
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0) {
		int e = errno;
		/* COMPAT: filesystems and kernels without idmapped mounts say EINVAL/EPERM */
		return pd_fail(err, e == EINVAL || e == EPERM || e == ENOSYS ? EOPNOTSUPP : e,
			       "idmap '%s'", path);
	}
	*ret_fd = TAKE_FD(tree);
	return 0;
}

int pd_idmap_layer_tree(const struct pd_idmap *m, pid_t init_pid, const char *path,
			paddock_error *err)
{
	_cleanup_close_ int tree = -EBADF, ns = -EBADF;
	struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY |
					    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
	char nspath[64];

	if (m->rootless)
		return pd_fail(err, EOPNOTSUPP, "rootless: init opens the layers itself");
	tree = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return pd_fail_field(err, errno, "image", "clone layer '%s'", PD_ESC(path));
	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/user", (int)init_pid);
	ns = open(nspath, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return pd_fail(err, errno, "open the sandbox's user namespace");
	a.userns_fd = (uint64_t)ns;
	/*
	 * SECURITY: without the idmap, the layer's files would be host root's, which is nobody
	 * inside: a root user could not write over them, and nothing more. With it they are the
	 * sandbox's range's, as everything else of the sandbox.
	 */
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
		return pd_fail_field(err, errno, "image",
				     "idmap layer '%s' (the image store's filesystem must "
				     "support idmapped mounts: ext4, xfs, btrfs, tmpfs)",
				     PD_ESC(path));
	return TAKE_FD(tree);
}
