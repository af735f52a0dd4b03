/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading and writing a sandbox's files from the supervisor. The supervisor may be host
 * root, and the sandbox has had every chance to prepare its tree: symlinks to host paths,
 * "../.." chains, /proc/<pid>/root magic links, fifos and devices where a file is expected,
 * and files swapped between a check and a use. So: one root fd, init's "/" sent over the
 * control socket before any command ran; every path resolved by openat2() with
 * RESOLVE_IN_ROOT (".." and
 * absolute symlinks stay beneath the root) and RESOLVE_NO_MAGICLINKS; checks made on the
 * opened fd, never on a path; writes land in a temporary file in the same directory, then
 * renameat() over the target, so a reader never sees half a file.
 */
#include "fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

static int check_path(const char *path, paddock_error *err)
{
	size_t n = strnlen(path, PD_FSOPS_MAX_PATH + 1);

	if (n == 0 || n > PD_FSOPS_MAX_PATH)
		return pd_fail_field(err, EINVAL, "path", "expected a path of 1 to %d bytes",
				     PD_FSOPS_MAX_PATH);
	return 0;
}

int pd_openat_in_root(int root_fd, const char *path, int flags, mode_t mode, paddock_error *err)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int r;

	r = check_path(path, err);
	if (r < 0)
		return r;
	/* "/a/b" is "a/b" beneath the root; RESOLVE_IN_ROOT would do it too, be explicit */
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	do
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN); /* a concurrent rename: openat2 asks to retry */
	if (fd < 0)
		return pd_fail_field(err, errno, "path", "open '%s' in the sandbox", PD_ESC(path));
	return (int)fd;
}

/*
 * The supervisor's file-system identity while it touches a sandbox's files. setfsuid() is
 * per thread and the supervisor has one; it never fails visibly, so the change is checked.
 */
struct fsid {
	uid_t uid;
	gid_t gid;
};

static int become(uid_t uid, gid_t gid, struct fsid *ret_old, paddock_error *err)
{
	ret_old->gid = (gid_t)setfsgid(gid);
	ret_old->uid = (uid_t)setfsuid(uid);
	if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid) {
		(void)setfsuid(ret_old->uid);
		(void)setfsgid(ret_old->gid);
		return pd_fail(err, EPERM, "take the sandbox user's identity for file access");
	}
	return 0;
}

static void restore(const struct fsid *old)
{
	(void)setfsuid(old->uid);
	(void)setfsgid(old->gid);
}

static int open_as(int root_fd, const char *path, int flags, uid_t uid, gid_t gid,
		   paddock_error *err)
{
	struct fsid old;
	int fd, r;

	r = become(uid, gid, &old, err);
	if (r < 0)
		return r;
	fd = pd_openat_in_root(root_fd, path, flags, 0, err);
	restore(&old);
	return fd;
}

int pd_fsops_read_file(int root_fd, const char *path, size_t max, uid_t uid, gid_t gid,
		       char **ret_data, size_t *ret_len, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	ssize_t n;

	/*
	 * Symlinks are followed, beneath the root only. O_NONBLOCK: a fifo planted where a file
	 * was expected must not hang us.
	 */
	fd = open_as(root_fd, path, O_RDONLY | O_NONBLOCK, uid, gid, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return pd_fail(err, errno, "stat '%s'", PD_ESC(path));
	if (!S_ISREG(st.st_mode))
		return pd_fail_field(err, EINVAL, "path", "'%s' is not a regular file",
				     PD_ESC(path));
	if ((uint64_t)st.st_size > max)
		return pd_fail_field(err, EFBIG, "path", "'%s' is larger than %zu bytes",
				     PD_ESC(path), max);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return pd_fail(err, ENOMEM, "allocate for '%s'", PD_ESC(path));
	/* the file may grow meanwhile: read at most what was checked, plus one to notice */
	n = pd_read_full(fd, buf, (size_t)st.st_size + 1);
	if (n < 0)
		return pd_fail(err, (int)-n, "read '%s'", PD_ESC(path));
	if ((size_t)n > (size_t)st.st_size)
		return pd_fail_field(err, EAGAIN, "path", "'%s' changed while it was read",
				     PD_ESC(path));
	buf[n] = '\0';
	*ret_data = TAKE_PTR(buf);
	*ret_len = (size_t)n;
	return 0;
}

int pd_fsops_write_file(int root_fd, const char *path, const void *data, size_t len,
			mode_t mode, uid_t uid, gid_t gid, paddock_error *err)
{
	_cleanup_close_ int dir = -EBADF, fd = -EBADF;
	_cleanup_free_ char *parent = NULL;
	const char *name;
	char tmp[64];
	unsigned rnd = 0;
	int r;

	r = check_path(path, err);
	if (r < 0)
		return r;
	name = strrchr(path, '/');
	parent = name ? strndup(path, (size_t)(name - path)) : strdup(".");
	name = name ? name + 1 : path;
	if (!parent)
		return pd_fail(err, ENOMEM, "copy path");
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return pd_fail_field(err, EINVAL, "path", "expected a file name at the end of '%s'",
				     PD_ESC(path));
	dir = open_as(root_fd, parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY, uid, gid, err);
	if (dir < 0)
		return dir;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (unsigned)getpid() ^ (unsigned)len; /* O_EXCL below makes a clash an error */
	snprintf(tmp, sizeof(tmp), ".paddock-write-%08x", rnd);
	struct fsid old;
	r = become(uid, gid, &old, err);
	if (r < 0)
		return r;
	/* SECURITY: a fresh name, O_EXCL: nothing the sandbox prepared is opened for writing */
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	if (fd < 0) {
		r = -errno;
		restore(&old);
		return pd_fail_field(err, r, "path", "create a file in '%s'", PD_ESC(parent));
	}
	r = pd_write_all(fd, data, len);
	if (r >= 0 && fchmod(fd, mode & 07777) < 0) /* the umask trimmed it at creation */
		r = -errno;
	if (r >= 0 && renameat(dir, tmp, dir, name) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dir, tmp, 0); /* ours alone; a failed write leaves nothing */
	restore(&old);
	if (r < 0)
		return pd_fail_field(err, r, "path", "write '%s'", PD_ESC(path));
	return 0;
}
