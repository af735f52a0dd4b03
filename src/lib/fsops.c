/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading and changing a sandbox's files from the supervisor. The supervisor may be host
 * root, and the sandbox has had every chance to prepare its tree: symlinks to host paths,
 * "../.." chains, /proc/<pid>/root magic links, fifos and devices where a file is expected,
 * and files swapped between a check and a use. So: one root fd, init's "/" sent over the
 * control socket before any command ran; a client's path cleaned lexically, then its
 * directory resolved by openat2() with RESOLVE_IN_ROOT (absolute symlinks and ".." in
 * symlinks stay beneath the root) and RESOLVE_NO_MAGICLINKS, and its last component reached
 * by *at() calls that never follow it; checks made on an fd or on that one entry, never on a
 * joined path; writes land in a temporary file in the same directory, then renameat() over
 * the target, so a reader never sees half a file. All of it with the sandbox user's
 * file-system identity, so the kernel checks permissions as it would for the sandbox.
 *
 * Listing and removing trees: fsops-tree.c. Watching: fsops-watch.c.
 */
#include "fsops.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "fsops-internal.h"
#include "util/cleanup.h"
#include "util/fd.h"

/* ---- paths ----------------------------------------------------------------------------- */

static int check_path(const char *field, const char *path, paddock_error *err)
{
	size_t n = path ? strnlen(path, PD_FSOPS_MAX_PATH + 1) : 0;

	if (n == 0 || n > PD_FSOPS_MAX_PATH)
		return pd_fail_field(err, EINVAL, field, "expected a path of 1 to %d bytes",
				     PD_FSOPS_MAX_PATH);
	return 0;
}

int pd_fsops_clean_path(const char *field, const char *path, char **ret_clean, paddock_error *err)
{
	_cleanup_free_ char *out = NULL;
	size_t n = 0;
	int r;

	r = check_path(field, path, err);
	if (r < 0)
		return r;
	out = malloc(strlen(path) + 2); /* a "/" may be added in front */
	if (!out)
		return pd_fail(err, ENOMEM, "copy path");
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, "/");

		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* "" or ".": nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[--n] != '/') /* drop the last component, if any */
				;
		} else {
			out[n] = '/';
			memcpy(out + n + 1, p, len);
			n += len + 1;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	*ret_clean = TAKE_PTR(out);
	return 0;
}

const char *pd_fsops_basename(const char *clean)
{
	const char *slash = strrchr(clean, '/');

	return slash && slash[1] ? slash + 1 : clean;
}

char *pd_fsops_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *s;

	if (nl == 0)
		return strdup(dir);

	if (dl == 1 && dir[0] == '/')
		dl = 0; /* "/" + "/name" */
	s = malloc(dl + nl + 2);
	if (!s)
		return NULL;
	memcpy(s, dir, dl);
	if (dir[0]) /* "" + name is name: relative paths below a watch */
		s[dl++] = '/';
	memcpy(s + dl, name, nl + 1);
	return s;
}

int pd_fsops_open_in_root(int root_fd, const char *field, const char *path, int flags, mode_t mode,
			  paddock_error *err)
{
	struct open_how how = {
		/* openat2 refuses O_PATH with any flag it ignores, O_NOCTTY among them */
		.flags = (uint64_t)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY)),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int r;

	const char *shown = path; /* as the caller named it, for messages */

	r = check_path(field, path, err);
	if (r < 0)
		return r;
	/* "/a/b" is "a/b" beneath the root; RESOLVE_IN_ROOT would do it too, be explicit */
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	/*
	 * A concurrent rename while ".." in a symlink is resolved: openat2 asks to retry. A
	 * sandbox renaming in a loop could ask forever, so a few times, then -EAGAIN.
	 */
	for (int tries = 0;; tries++) {
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN || tries >= PD_FSOPS_OPENAT2_TRIES)
			break;
	}
	if (fd < 0)
		return pd_fail_field(err, errno, field, "open '%s' in the sandbox", PD_ESC(shown));
	return (int)fd;
}

int pd_openat_in_root(int root_fd, const char *path, int flags, mode_t mode, paddock_error *err)
{
	return pd_fsops_open_in_root(root_fd, "path", path, flags, mode, err);
}

int pd_fsops_open_parent(int root_fd, const char *field, const char *clean, const char **ret_name,
			 paddock_error *err)
{
	const char *name = pd_fsops_basename(clean);
	char parent[PD_FSOPS_MAX_PATH + 2];
	size_t n = (size_t)(name - clean);
	int fd;

	assert(clean[0] == '/');
	if (name == clean)
		return pd_fail_field(err, EINVAL, field, "expected a path below '/'");
	/* "/a/b" -> "/a/", "/a" -> "/" */
	if (n >= sizeof(parent))
		return pd_fail_field(err, ENAMETOOLONG, field, "path too long");
	memcpy(parent, clean, n);
	parent[n] = '\0';
	fd = pd_fsops_open_in_root(root_fd, field, parent, O_PATH | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	*ret_name = name;
	return fd;
}

/* ---- identity -------------------------------------------------------------------------- */

/* setfsuid() never fails visibly, so the change is checked. */
int pd_fsops_become(uid_t uid, gid_t gid, struct pd_fsid *ret_old, paddock_error *err)
{
	gid_t old_gid = (gid_t)setfsgid(gid);
	uid_t old_uid = (uid_t)setfsuid(uid);

	if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid) {
		(void)setfsuid(old_uid);
		(void)setfsgid(old_gid);
		return pd_fail(err, EPERM, "take the sandbox user's identity for file access");
	}
	*ret_old = (struct pd_fsid){ .uid = old_uid, .gid = old_gid, .active = true };
	return 0;
}

void pd_fsops_restore(struct pd_fsid *old)
{
	if (!old->active)
		return;
	(void)setfsuid(old->uid);
	(void)setfsgid(old->gid);
	old->active = false;
}

/* ---- metadata -------------------------------------------------------------------------- */

void pd_fsops_info_release(struct paddock_file_info *info)
{
	if (!info)
		return;
	free(info->path);
	free(info->symlink_target);
	*info = (struct paddock_file_info){ 0 };
}

void pd_fsops_infos_free(struct paddock_file_info *infos, size_t n)
{
	if (!infos)
		return;
	for (size_t i = 0; i < n; i++)
		pd_fsops_info_release(&infos[i]);
	free(infos);
}

static enum paddock_file_type file_type(mode_t m)
{
	if (S_ISREG(m))
		return PADDOCK_FILE_REGULAR;
	if (S_ISDIR(m))
		return PADDOCK_FILE_DIR;
	if (S_ISLNK(m))
		return PADDOCK_FILE_SYMLINK;
	return PADDOCK_FILE_OTHER;
}

int pd_fsops_info_fill(char *path, const struct stat *st, int dirfd, const char *name,
		       struct paddock_file_info *ret, paddock_error *err)
{
	_cleanup_free_ char *p = path, *target = NULL;

	if (S_ISLNK(st->st_mode)) {
		char buf[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf) - 1);

		/* replaced meanwhile (EINVAL, ENOENT): report the link without a target */
		if (n < 0 && errno != EINVAL && errno != ENOENT)
			return pd_fail_field(err, errno, "path", "read the symlink '%s'",
					     PD_ESC(p));
		target = strndup(buf, n < 0 ? 0 : (size_t)n);
		if (!target)
			return pd_fail(err, ENOMEM, "copy a symlink target");
	}
	*ret = (struct paddock_file_info){
		.type = file_type(st->st_mode),
		.size = st->st_size < 0 ? 0 : (uint64_t)st->st_size,
		.mode = (unsigned)(st->st_mode & 07777),
		.uid = st->st_uid,
		.gid = st->st_gid,
		.mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
		.symlink_target = TAKE_PTR(target),
	};
	ret->path = TAKE_PTR(p);
	ret->name = pd_fsops_basename(ret->path);
	return 0;
}

int pd_fsops_stat(int root_fd, const char *path, uid_t uid, gid_t gid,
		  struct paddock_file_info *ret_info, paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	_cleanup_close_ int dir = -EBADF;
	const char *name = "";
	struct stat st;
	int r;

	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	if (strcmp(clean, "/") == 0)
		dir = pd_fsops_open_in_root(root_fd, "path", "/", O_PATH | O_DIRECTORY, 0, err);
	else
		dir = pd_fsops_open_parent(root_fd, "path", clean, &name, err);
	if (dir < 0)
		return dir;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH) < 0)
		return pd_fail_field(err, errno, "path", "stat '%s'", PD_ESC(clean));
	return pd_fsops_info_fill(TAKE_PTR(clean), &st, dir, name, ret_info, err);
}

/* ---- directories and names ------------------------------------------------------------- */

/*
 * mkdirat, then the mode exactly (the supervisor's umask trimmed it). fchmodat with
 * AT_SYMLINK_NOFOLLOW: if the sandbox swapped the new directory for a symlink meanwhile,
 * the chmod fails instead of following it. Returns 0, 1 when it existed, or -errno.
 */
static int make_dir(int dir, const char *name, mode_t mode)
{
	if (mkdirat(dir, name, mode) < 0)
		return errno == EEXIST ? 1 : -errno;
	if (fchmodat(dir, name, mode, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/*
 * mkdir -p, one component at a time: each directory is resolved from the root again
 * (symlinks on the way resolve inside the sandbox, as for any path) and the next one made
 * beneath it with mkdirat. Directories on the way get mode plus owner write and search.
 */
static int mkdir_parents(int root_fd, const char *field, const char *clean, mode_t mode,
			 paddock_error *err)
{
	_cleanup_close_ int dir = -EBADF;
	char prefix[PD_FSOPS_MAX_PATH + 2];
	size_t len = strlen(clean);
	int r;

	if (len >= sizeof(prefix))
		return pd_fail_field(err, ENAMETOOLONG, field, "path too long");
	dir = pd_fsops_open_in_root(root_fd, field, "/", O_PATH | O_DIRECTORY, 0, err);
	if (dir < 0)
		return dir;
	for (size_t i = 1; i < len;) {
		size_t n = strcspn(clean + i, "/");
		bool last = clean[i + n] == '\0';
		char name[NAME_MAX + 1];

		if (n > NAME_MAX)
			return pd_fail_field(err, ENAMETOOLONG, field, "a name in '%s' is too long",
					     PD_ESC(clean));
		memcpy(name, clean + i, n);
		name[n] = '\0';
		memcpy(prefix, clean, i + n);
		prefix[i + n] = '\0';
		r = make_dir(dir, name, last ? mode : mode | 0300);
		if (r < 0)
			return pd_fail_field(err, r, field, "mkdir '%s'", PD_ESC(prefix));
		dir = pd_close(dir);
		dir = pd_fsops_open_in_root(root_fd, field, prefix, O_PATH | O_DIRECTORY, 0, err);
		if (dir == -ENOTDIR)
			return pd_fail_field(err, EEXIST, field,
					     "'%s' exists and is not a directory", PD_ESC(prefix));
		if (dir < 0)
			return dir;
		i += n + 1;
	}
	return 0;
}

int pd_fsops_mkdir(int root_fd, const char *path, mode_t mode, bool parents, uid_t uid, gid_t gid,
		   paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	_cleanup_close_ int dir = -EBADF;
	const char *name;
	int r;

	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	mode &= 07777;
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	if (parents)
		return mkdir_parents(root_fd, "path", clean, mode, err);
	if (strcmp(clean, "/") == 0)
		return pd_fail_field(err, EEXIST, "path", "'/' exists");
	dir = pd_fsops_open_parent(root_fd, "path", clean, &name, err);
	if (dir < 0)
		return dir;
	r = make_dir(dir, name, mode);
	if (r == 1)
		return pd_fail_field(err, EEXIST, "path", "'%s' exists", PD_ESC(clean));
	if (r < 0)
		return pd_fail_field(err, r, "path", "mkdir '%s'", PD_ESC(clean));
	return 0;
}

int pd_fsops_move(int root_fd, const char *from, const char *to, bool overwrite, uid_t uid,
		  gid_t gid, paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *cfrom = NULL, *cto = NULL;
	_cleanup_close_ int fdir = -EBADF, tdir = -EBADF;
	const char *fname, *tname;
	int r;

	r = pd_fsops_clean_path("from", from, &cfrom, err);
	if (r < 0)
		return r;
	r = pd_fsops_clean_path("to", to, &cto, err);
	if (r < 0)
		return r;
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	fdir = pd_fsops_open_parent(root_fd, "from", cfrom, &fname, err);
	if (fdir < 0)
		return fdir;
	tdir = pd_fsops_open_parent(root_fd, "to", cto, &tname, err);
	if (tdir < 0)
		return tdir;
	/* SECURITY: renameat2 never follows a symlink at either end: the link itself moves */
	if (renameat2(fdir, fname, tdir, tname, overwrite ? 0 : RENAME_NOREPLACE) < 0) {
		r = errno;
		return pd_fail_field(err, r,
				     r == EEXIST || r == ENOTEMPTY || r == EISDIR || r == ENOTDIR
					     ? "to"
					     : "from",
				     "move '%s' to '%s'", PD_ESC(cfrom), PD_ESC(cto));
	}
	return 0;
}

/* ---- streams --------------------------------------------------------------------------- */

int pd_fsops_open_read(int root_fd, const char *path, uint64_t offset, uid_t uid, gid_t gid,
		       int *ret_fd, uint64_t *ret_size, paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	/*
	 * Symlinks are followed, beneath the root only. O_NONBLOCK: a fifo planted where a file
	 * was expected must not hang us; it is cleared once the fd is known to be a file.
	 */
	fd = pd_fsops_open_in_root(root_fd, "path", clean, O_RDONLY | O_NONBLOCK, 0, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return pd_fail_field(err, errno, "path", "stat '%s'", PD_ESC(clean));
	if (!S_ISREG(st.st_mode))
		return pd_fail_field(err, EINVAL, "path", "'%s' is not a regular file",
				     PD_ESC(clean));
	if (offset > (uint64_t)st.st_size)
		return pd_fail_field(err, EINVAL, "offset", "offset %llu is past the end of '%s'",
				     (unsigned long long)offset, PD_ESC(clean));
	if (lseek(fd, (off_t)offset, SEEK_SET) < 0)
		return pd_fail_field(err, errno, "offset", "seek in '%s'", PD_ESC(clean));
	r = fcntl(fd, F_GETFL);
	if (r < 0 || fcntl(fd, F_SETFL, r & ~O_NONBLOCK) < 0)
		return pd_fail(err, errno, "clear O_NONBLOCK");
	*ret_fd = TAKE_FD(fd);
	*ret_size = (uint64_t)st.st_size;
	return 0;
}

int pd_fsops_read_file(int root_fd, const char *path, size_t max, uid_t uid, gid_t gid,
		       char **ret_data, size_t *ret_len, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	uint64_t size;
	ssize_t n;
	int r;

	r = pd_fsops_open_read(root_fd, path, 0, uid, gid, &fd, &size, err);
	if (r < 0)
		return r;
	if (size > max)
		return pd_fail_field(err, EFBIG, "path", "'%s' is larger than %zu bytes",
				     PD_ESC(path), max);
	buf = malloc((size_t)size + 1);
	if (!buf)
		return pd_fail(err, ENOMEM, "allocate for '%s'", PD_ESC(path));
	/* the file may grow meanwhile: read at most what was checked, plus one to notice */
	n = pd_read_full(fd, buf, (size_t)size + 1);
	if (n < 0)
		return pd_fail(err, (int)-n, "read '%s'", PD_ESC(path));
	if ((size_t)n > size)
		return pd_fail_field(err, EAGAIN, "path", "'%s' changed while it was read",
				     PD_ESC(path));
	buf[n] = '\0';
	*ret_data = TAKE_PTR(buf);
	*ret_len = (size_t)n;
	return 0;
}

struct paddock_file_writer {
	int dir;	  /* O_PATH of the target's directory */
	int fd;		  /* the temporary file, until commit */
	char *path;	  /* clean, for messages */
	const char *name; /* the target's name, in path */
	char tmp[32];	  /* the temporary file's name in dir; "" once gone */
	uid_t uid;
	gid_t gid;
};

paddock_file_writer *pd_fsops_writer_free(paddock_file_writer *w)
{
	if (!w)
		return NULL;
	if (w->tmp[0]) {
		_cleanup_fsid_ struct pd_fsid old = { 0 };

		/* never committed: the temporary file is ours alone, in a directory we hold */
		if (pd_fsops_become(w->uid, w->gid, &old, NULL) == 0)
			(void)unlinkat(w->dir, w->tmp, 0);
	}
	w->fd = pd_close(w->fd);
	w->dir = pd_close(w->dir);
	free(w->path);
	free(w);
	return NULL;
}
PD_DEFINE_CLEANUP(paddock_file_writer, pd_fsops_writer_free)

/* A path the caller ended with "/", "." or "..": it names a directory, not a file to write. */
static bool names_dir(const char *path)
{
	size_t n = strlen(path);

	return n == 0 || path[n - 1] == '/' || strcmp(pd_fsops_basename(path), ".") == 0 ||
	       strcmp(pd_fsops_basename(path), "..") == 0;
}

int pd_fsops_writer_open(int root_fd, const char *path, mode_t mode, bool parents, uid_t uid,
			 gid_t gid, paddock_file_writer **ret_writer, paddock_error *err)
{
	_cleanup_(pd_fsops_writer_freep) paddock_file_writer *w = NULL;
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	int r;

	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	if (names_dir(path))
		return pd_fail_field(err, EINVAL, "path", "expected a file name at the end of '%s'",
				     PD_ESC(path));
	w = calloc(1, sizeof(*w));
	if (!w)
		return pd_fail(err, ENOMEM, "allocate a writer");
	*w = (struct paddock_file_writer){ .dir = -EBADF, .fd = -EBADF, .uid = uid, .gid = gid };
	w->path = TAKE_PTR(clean);
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	if (parents) {
		char parent[PD_FSOPS_MAX_PATH + 2];
		size_t n = (size_t)(pd_fsops_basename(w->path) - w->path);

		snprintf(parent, sizeof(parent), "%.*s", (int)n, w->path);
		r = mkdir_parents(root_fd, "path", parent, 0755, err);
		if (r < 0)
			return r;
	}
	w->dir = pd_fsops_open_parent(root_fd, "path", w->path, &w->name, err);
	if (w->dir < 0)
		return w->dir;
	for (int tries = 0; w->fd < 0; tries++) {
		unsigned rnd = 0;

		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (unsigned)getpid() ^ (unsigned)tries; /* O_EXCL: a clash is retried */
		snprintf(w->tmp, sizeof(w->tmp), ".paddock-write-%08x", rnd);
		/* SECURITY: a fresh name, O_EXCL: nothing the sandbox prepared is opened */
		w->fd = openat(w->dir, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       mode & 07777);
		if (w->fd < 0) {
			r = -errno;
			w->tmp[0] = '\0';
			if (r != -EEXIST || tries >= 8)
				return pd_fail_field(err, r, "path", "create a file next to '%s'",
						     PD_ESC(w->path));
		}
	}
	if (fchmod(w->fd, mode & 07777) < 0) /* the umask trimmed it at creation */
		return pd_fail(err, errno, "chmod a file next to '%s'", PD_ESC(w->path));
	*ret_writer = TAKE_PTR(w);
	return 0;
}

int pd_fsops_writer_fd(const paddock_file_writer *w)
{
	return w->fd < 0 ? -1 : w->fd;
}

int pd_fsops_writer_commit(paddock_file_writer *w, paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	int r;

	if (!w->tmp[0])
		return pd_fail(err, EALREADY, "'%s' was committed already", PD_ESC(w->path));
	/* close() reports a deferred write error on some file systems: it must not be lost */
	r = close(TAKE_FD(w->fd));
	if (r < 0 && errno != EINTR)
		return pd_fail_field(err, errno, "path", "write '%s'", PD_ESC(w->path));
	r = pd_fsops_become(w->uid, w->gid, &old, err);
	if (r < 0)
		return r;
	/* SECURITY: renameat replaces a symlink at the target, it never follows one */
	if (renameat(w->dir, w->tmp, w->dir, w->name) < 0)
		return pd_fail_field(err, errno, "path", "replace '%s'", PD_ESC(w->path));
	w->tmp[0] = '\0';
	return 0;
}

int pd_fsops_write_file(int root_fd, const char *path, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, paddock_error *err)
{
	_cleanup_(pd_fsops_writer_freep) paddock_file_writer *w = NULL;
	int r;

	r = pd_fsops_writer_open(root_fd, path, mode, false, uid, gid, &w, err);
	if (r < 0)
		return r;
	r = pd_write_all(w->fd, data, len);
	if (r < 0)
		return pd_fail_field(err, r, "path", "write '%s'", PD_ESC(w->path));
	return pd_fsops_writer_commit(w, err);
}
