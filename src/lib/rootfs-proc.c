/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sandbox sees of the machine through /proc and /dev (rootfs.c builds the rest): a
 * fresh /proc with its masks and the sandbox's own view (proc-view.c), and a minimal /dev.
 */
#include "rootfs-build.h"

/*
 * Files and directories of a fresh /proc that reveal the host or let it be poked. A file only
 * host root may open (mode without "other" bits, owned by a uid that is nobody in here) is
 * out of reach from a user namespace whatever we do, so only those open to others are
 * masked: the rule is checked when the root is built, not assumed from a kernel version.
 * /proc/sys is made read-only as a whole: the sysctls of the sandbox's own network namespace
 * belong to its root.
 */
static const char *const proc_null_files[] = {
	"kcore",    "keys", "key-users",     "timer_list", "sched_debug", "latency_stats",
	"kallsyms", "kmsg", "sysrq-trigger", "config.gz",  "kpagecount",  "kpageflags",
};
static const char *const proc_empty_dirs[] = { "acpi", "scsi", "asound", "driver" };
static const char *const proc_readonly[] = { "sys" };

static bool listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

/* A random boot id of the sandbox's own, as the kernel writes one (a version 4 UUID). */
static int write_boot_id(int dirfd, paddock_error *err)
{
	uint8_t u[16];
	char s[40];

	if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u))
		return pd_fail(err, errno ? errno : EIO, "random boot id");
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
	snprintf(s, sizeof(s),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
	if (pd_write_file_at(dirfd, "boot_id", s, strlen(s), 0444) < 0)
		return pd_fail(err, errno, "write the sandbox's boot id");
	return 0;
}

/* The host's cpuinfo, kept beside the view: it takes its first N processors' blocks. */
static void keep_host_cpuinfo(int dirfd)
{
	_cleanup_close_ int in = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = -EBADF;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return; /* the view numbers its processors alone */
	out = openat(dirfd, PD_PROC_VIEW_HOST_CPUINFO,
		     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	if (out < 0)
		return;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (pd_write_all(out, buf, (size_t)n) < 0)
			return;
}

/*
 * The sandbox's view of the machine (proc-view.h): written files of the disk bound over
 * /proc's, or, as root where the host runs LXCFS, its live ones where it has them.
 */
static int build_proc_view(struct build *b, int proc, paddock_error *err)
{
	_cleanup_close_ int view = -EBADF;
	int lxcfs = b->idmap->rootless ? -EBADF : b->sources->lxcfs_proc;
	struct pd_proc_view v = {
		.memory_bytes = b->spec->limits.memory_bytes,
		.cpus = pd_proc_view_cpus(b->spec->limits.cpus),
		.boot_time = (int64_t)time(NULL),
	};
	int r;

	r = pd_rootfs_mkdir_owned(b->disk, PD_PROC_VIEW_DIR, 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	view = openat(b->disk, PD_PROC_VIEW_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (view < 0)
		return pd_fail(err, errno, "open the /proc view");
	keep_host_cpuinfo(view);
	r = pd_proc_view_write(view, &v, err);
	if (r < 0)
		return r;
	for (size_t i = 0; pd_proc_view_files[i]; i++) {
		const char *name = pd_proc_view_files[i];

		if (lxcfs >= 0 && listed(pd_proc_view_lxcfs_files, name) &&
		    faccessat(lxcfs, name, R_OK, 0) == 0)
			r = pd_rootfs_bind_at(lxcfs, name, proc, name, MOUNT_ATTR_RDONLY, err);
		else
			r = pd_rootfs_bind_at(view, name, proc, name, MOUNT_ATTR_RDONLY, err);
		if (r < 0)
			return r;
	}
	/* after /proc/sys became read-only: this bind sits on that mount */
	r = write_boot_id(view, err);
	if (r >= 0)
		r = pd_rootfs_bind_at(view, "boot_id", proc, "sys/kernel/random/boot_id",
				      MOUNT_ATTR_RDONLY, err);
	if (r < 0)
		return r;
	if (b->sources->want_host_tree)
		b->sources->proc_view_fd = TAKE_FD(view);
	return 0;
}

int pd_rootfs_build_proc(struct build *b, paddock_error *err)
{
	_cleanup_close_ int mfd = -EBADF, proc = -EBADF;
	int r;

	r = pd_rootfs_mkdir_owned(b->root, "proc", 0555, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	mfd = pd_rootfs_new_fs("proc", NULL,
			       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (mfd < 0)
		return mfd;
	r = pd_rootfs_attach(mfd, b->root, "proc", err);
	if (r < 0)
		return r;
	proc = pd_rootfs_open_dir(b->root, "proc", err);
	if (proc < 0)
		return proc;
	for (size_t i = 0; i < ELEMENTSOF(proc_null_files); i++) {
		struct stat st;

		if (fstatat(proc, proc_null_files[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || !(st.st_mode & (S_IROTH | S_IWOTH)))
			continue;
		r = pd_rootfs_bind_at(b->root, "dev/null", proc, proc_null_files[i],
				      MOUNT_ATTR_RDONLY, err);
		if (r < 0)
			return r;
	}
	/*
	 * One empty directory of the disk (not below its root: invisible otherwise), bound
	 * read-only over each: a tmpfs apiece would be a superblock apiece, and every
	 * superblock on the machine grows every memory cgroup's shrinker table (see
	 * pd_rootfs_build_dev()).
	 */
	r = pd_rootfs_mkdir_owned(b->disk, "empty", 0555, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(proc_empty_dirs); i++) {
		struct stat st;

		if (fstatat(proc, proc_empty_dirs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		r = pd_rootfs_bind_at(b->disk, "empty", proc, proc_empty_dirs[i],
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOEXEC,
				      err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(proc_readonly); i++) {
		struct stat st;

		if (fstatat(proc, proc_readonly[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		r = pd_rootfs_bind_at(proc, proc_readonly[i], proc, proc_readonly[i],
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOEXEC,
				      err);
		if (r < 0)
			return r;
	}
	return build_proc_view(b, proc, err);
}

static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

int pd_rootfs_build_dev(struct build *b, paddock_error *err)
{
	_cleanup_close_ int mfd = -EBADF, host_dev = -EBADF, pts = -EBADF;
	char ptsgid[16];
	int r;

	r = pd_rootfs_mkdir_owned(b->root, "dev", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	/*
	 * /dev is a directory of the disk, bound read-only, not a tmpfs of its own. Density:
	 * each superblock registers a memcg-aware shrinker, and the kernel sizes every memory
	 * cgroup's shrinker table by the most shrinkers ever registered at once (about 8 bytes
	 * per shrinker per memory cgroup, never shrunk): at thousands of sandboxes, each
	 * superblock a sandbox holds costs every sandbox's memory cgroup tens of kilobytes.
	 */
	r = pd_rootfs_mkdir_owned(b->disk, "dev", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	mfd = open_tree(b->disk, "dev", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (mfd < 0)
		return pd_fail(err, errno, "clone tree 'dev'");
	host_dev = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host_dev < 0)
		return pd_fail(err, errno, "open /dev");
	for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
		r = pd_rootfs_touch(mfd, dev_nodes[i], err);
		if (r < 0)
			return r;
		r = pd_rootfs_bind_at(host_dev, dev_nodes[i], mfd, dev_nodes[i],
				      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
		if (r < 0)
			return r;
	}
	const struct {
		const char *name, *target;
	} links[] = {
		{ "fd", "/proc/self/fd" },	 { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" },
	};
	for (size_t i = 0; i < ELEMENTSOF(links); i++)
		if (symlinkat(links[i].target, mfd, links[i].name) < 0)
			return pd_fail(err, errno, "symlink /dev/%s", links[i].name);
	r = pd_rootfs_mkdir_owned(mfd, "pts", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	r = pd_rootfs_mkdir_owned(mfd, "shm", 01777, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	/* gid 5 ("tty") exists inside only when a whole range is mapped (as root) */
	snprintf(ptsgid, sizeof(ptsgid), "%d", 5);
	pts = pd_rootfs_new_fs(
		"devpts",
		b->idmap->rootless ? (const char *const[]){ "newinstance", NULL, "ptmxmode", "0666",
							    "mode", "0620", NULL }
				   : (const char *const[]){ "newinstance", NULL, "ptmxmode", "0666",
							    "mode", "0620", "gid", ptsgid, NULL },
		MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
	if (pts < 0)
		return pts;
	r = pd_rootfs_attach(pts, mfd, "pts", err);
	if (r < 0)
		return r;
	r = pd_rootfs_bind_at(b->disk, "shm", mfd, "shm",
			      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (r < 0)
		return r;
	/* nothing new can be created in /dev itself */
	r = pd_rootfs_set_attr(mfd, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC, 0);
	if (r < 0)
		return pd_fail(err, r, "make /dev read-only");
	return pd_rootfs_attach(mfd, b->root, "dev", err);
}
