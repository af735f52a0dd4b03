/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unpacking an image layer. Runs in the supervisor (`paddock image pull/import`), as root
 * into the root store or as the invoker into theirs, before any sandbox sees the result.
 *
 * Trust: the layer is hostile. It comes from a registry or a file anyone may have made, and
 * its digest proves only that it is the blob the manifest named, not that it is benign. So:
 *
 *   - the stream is read by libarchive with two readers stacked: the outer one decompresses
 *     (gzip or zstd, in-process only: a filter that would run an external program is
 *     refused), the inner one reads tar (ustar, pax, GNU). Both digests are computed on the
 *     way (compressed: the blob's; uncompressed: the diff id) and checked at the end;
 *   - names are cleaned ("./" and leading "/" dropped) and refused with ".." or NUL-length
 *     components; every parent is walked component by component with O_NOFOLLOW below the
 *     layer's directory fd, so an entry never goes through a symlink (one made earlier in the
 *     same tar: refused) and nothing is written outside the layer. Hard links must name an
 *     entry already in this layer, and never a directory;
 *   - device nodes and sockets are skipped; set-id bits and every extended attribute of the
 *     tar (file capabilities included) are dropped; FIFOs, files, directories and symlinks
 *     are made with modes we set; symlink targets are stored, never followed here;
 *   - limits: uncompressed bytes, entries, and a ratio of uncompressed to compressed bytes
 *     past 64 MiB (compression bombs), each refused with an error naming it;
 *   - OCI whiteouts: ".wh.NAME" removes NAME of this layer and leaves an overlay whiteout
 *     (character device 0/0, which the kernel lets anyone make since Linux 5.8);
 *     ".wh..wh..opq" marks its directory opaque with the xattr "user.overlay.opaque" (the
 *     overlay is mounted with "userxattr", as a user namespace's must be). Other ".wh..wh."
 *     names (aufs bookkeeping) are skipped.
 *
 * Directories are made 0700 and get their own mode, owner and time at the end, so a
 * read-only directory of the tar does not stop its own entries (rootless, no
 * CAP_DAC_OVERRIDE).
 */
#include "image-unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "error.h"
#include "image-tree.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define READ_BLOCK  (128u << 10)
#define RATIO_FLOOR (UINT64_C(64) << 20)
#define MAX_NAME    255
#define WHITEOUT    ".wh."
#define OPAQUE	    ".wh..wh..opq"

PD_DEFINE_CLEANUP(struct archive, archive_read_free)

/* A directory whose mode, owner and times are set once the whole layer is in. */
struct deferred_dir {
	char *path;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
};

struct unpack {
	const struct pd_unpack_opts *opts;
	int in_fd;
	int root; /* the layer's directory */
	struct archive *raw, *tar;
	struct pd_digest blob, diff;
	bool diff_ok, blob_ok;
	uint64_t max_bytes, max_entries;
	unsigned char in_buf[READ_BLOCK];
	unsigned char out_buf[READ_BLOCK];
	bool raw_eof;
	int read_errno;	    /* of in_fd, for the message */
	paddock_error *err; /* a limit hit inside a callback, reported once libarchive returns */
	bool failed;
	struct pd_unpack_stats st;
	/* the last parent directory opened, by its relative path: tars come in order */
	char parent_path[PATH_MAX];
	int parent_fd;
	struct deferred_dir *dirs;
	size_t n_dirs, cap_dirs;
};

/* ---- reading: compressed bytes in, tar bytes out ---------------------------------------- */

static la_ssize_t raw_read(struct archive *a, void *data, const void **buf)
{
	struct unpack *u = data;
	ssize_t n;

	(void)a;
	do
		n = read(u->in_fd, u->in_buf, sizeof(u->in_buf));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		u->read_errno = errno;
		archive_set_error(a, errno, "read layer");
		return -1;
	}
	pd_digest_update(&u->blob, u->in_buf, (size_t)n);
	u->st.bytes_in += (uint64_t)n;
	*buf = u->in_buf;
	return n;
}

static la_ssize_t tar_read(struct archive *a, void *data, const void **buf)
{
	struct unpack *u = data;
	la_ssize_t n;

	(void)a;
	if (u->raw_eof)
		return 0;
	n = archive_read_data(u->raw, u->out_buf, sizeof(u->out_buf));
	if (n < 0) {
		archive_set_error(a, archive_errno(u->raw) ? archive_errno(u->raw) : EIO, "%s",
				  archive_error_string(u->raw) ? archive_error_string(u->raw)
							       : "decompress");
		return -1;
	}
	if (n == 0) {
		u->raw_eof = true;
		return 0;
	}
	pd_digest_update(&u->diff, u->out_buf, (size_t)n);
	u->st.bytes_out += (uint64_t)n;
	if (u->st.bytes_out > u->max_bytes) {
		archive_set_error(a, EFBIG, "layer too large");
		if (!u->failed)
			pd_fail(u->err, EFBIG, "layer: more than %" PRIu64 " bytes uncompressed",
				u->max_bytes);
		u->failed = true;
		return -1;
	}
	if (u->st.bytes_out > RATIO_FLOOR &&
	    u->st.bytes_out / PD_UNPACK_MAX_RATIO > u->st.bytes_in) {
		archive_set_error(a, EFBIG, "compression ratio");
		if (!u->failed)
			pd_fail(u->err, EFBIG,
				"layer: expands more than %u times (a compression bomb?)",
				PD_UNPACK_MAX_RATIO);
		u->failed = true;
		return -1;
	}
	*buf = u->out_buf;
	return n;
}

/* The formats and filters we accept, and only in-process ones. */
static int open_readers(struct unpack *u, paddock_error *err)
{
	struct archive_entry *e;
	int r;

	u->raw = archive_read_new();
	u->tar = archive_read_new();
	if (!u->raw || !u->tar)
		return pd_fail(err, ENOMEM, "allocate layer reader");
	/* SECURITY: ARCHIVE_WARN means "through an external program": never */
	if (archive_read_support_filter_gzip(u->raw) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(u->raw) != ARCHIVE_OK ||
	    archive_read_support_filter_none(u->raw) != ARCHIVE_OK ||
	    archive_read_support_format_raw(u->raw) != ARCHIVE_OK ||
	    archive_read_support_format_empty(u->raw) != ARCHIVE_OK)
		return pd_fail(err, EOPNOTSUPP,
			       "this libarchive cannot decompress gzip and zstd by itself");
	if (archive_read_support_format_tar(u->tar) != ARCHIVE_OK)
		return pd_fail(err, EOPNOTSUPP, "this libarchive cannot read tar");
	if (archive_read_open(u->raw, u, NULL, raw_read, NULL) != ARCHIVE_OK)
		return pd_fail(err, archive_errno(u->raw) > 0 ? archive_errno(u->raw) : EINVAL,
			       "open layer: %s", archive_error_string(u->raw));
	r = archive_read_next_header(u->raw, &e);
	if (r == ARCHIVE_EOF) {
		u->raw_eof = true; /* an empty stream: the tar reader says what it thinks */
	} else if (r != ARCHIVE_OK) {
		return pd_fail(err, EINVAL, "open layer: %s", archive_error_string(u->raw));
	}
	if (archive_read_open(u->tar, u, NULL, tar_read, NULL) != ARCHIVE_OK) {
		if (u->failed)
			return -u->err->code;
		return pd_fail(err, EINVAL, "read layer: %s", archive_error_string(u->tar));
	}
	return 0;
}

/* ---- names ----------------------------------------------------------------------------- */

/*
 * "./usr//bin/" -> "usr/bin"; "" for the layer's root. Refuses ".." and over-long names.
 * SECURITY: this is what keeps an entry inside the layer, with the O_NOFOLLOW walk.
 */
static int clean_path(const char *in, char *out, size_t size, const char *what, paddock_error *err)
{
	size_t o = 0;

	if (!in)
		return pd_fail(err, EINVAL, "%s without a name", what);
	for (const char *p = in; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return pd_fail(err, EINVAL, "%s '%s' has a '..' component", what,
				       PD_ESC(in));
		if (n > MAX_NAME)
			return pd_fail(err, ENAMETOOLONG, "%s '%s' has a name over %d bytes", what,
				       PD_ESC(in), MAX_NAME);
		if (o + n + 2 > size)
			return pd_fail(err, ENAMETOOLONG, "%s '%s' is too long", what, PD_ESC(in));
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	return 0;
}

/* Opens a directory below root by a clean relative path, never following a symlink. */
static int walk(int root, const char *path, bool create, const char *name_for_errors,
		paddock_error *err)
{
	_cleanup_close_ int cur = -EBADF;
	char buf[PATH_MAX];
	char *save = NULL;

	cur = fcntl(root, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return pd_fail(err, errno, "dup layer directory");
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, c, 0700) < 0 && errno != EEXIST)
				return pd_fail(err, errno, "entry '%s': make its directory '%s'",
					       PD_ESC(name_for_errors), PD_ESC(c));
			next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				return pd_fail(err, EINVAL,
					       "entry '%s' goes through a symlink or a file ('%s')",
					       PD_ESC(name_for_errors), PD_ESC(c));
			return pd_fail(err, errno, "entry '%s': open '%s'", PD_ESC(name_for_errors),
				       PD_ESC(c));
		}
		pd_close(cur);
		cur = next;
	}
	return TAKE_FD(cur);
}

static void forget_parent(struct unpack *u)
{
	u->parent_fd = pd_close(u->parent_fd);
	u->parent_path[0] = '\0';
}

/* The parent directory of a clean path (made if missing), and the last name in it. */
static int parent_of(struct unpack *u, const char *path, const char **ret_name, paddock_error *err)
{
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX];
	int fd;

	if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	else
		parent[0] = '\0';
	*ret_name = slash ? slash + 1 : path;
	if (u->parent_fd >= 0 && !strcmp(parent, u->parent_path))
		return u->parent_fd;
	forget_parent(u);
	fd = walk(u->root, parent, true, path, err);
	if (fd < 0)
		return fd;
	u->parent_fd = fd;
	snprintf(u->parent_path, sizeof(u->parent_path), "%s", parent);
	return fd;
}

/* ---- entries ----------------------------------------------------------------------------- */

/* SECURITY: no set-id bits out of an image; the sticky bit stays (/tmp). */
static mode_t clean_mode(mode_t m)
{
	return m & (0777 | S_ISVTX);
}

static int set_owner(struct unpack *u, int dirfd, const char *name, struct archive_entry *e,
		     paddock_error *err)
{
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);

	if (!u->opts->chown)
		return 0;
	if (uid < 0 || gid < 0 || uid >= UINT32_MAX || gid >= UINT32_MAX)
		return pd_fail(err, EINVAL, "entry '%s': owner %lld:%lld out of range",
			       PD_ESC(archive_entry_pathname(e)), (long long)uid, (long long)gid);
	if (fchownat(dirfd, name, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(err, errno, "chown '%s'", PD_ESC(archive_entry_pathname(e)));
	return 0;
}

static void entry_mtime(struct archive_entry *e, struct timespec *ts)
{
	ts->tv_sec = archive_entry_mtime_is_set(e) ? archive_entry_mtime(e) : 0;
	ts->tv_nsec = archive_entry_mtime_is_set(e) ? archive_entry_mtime_nsec(e) : 0;
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000)
		ts->tv_nsec = 0;
}

static void set_times(int dirfd, const char *name, struct archive_entry *e)
{
	struct timespec ts[2];

	entry_mtime(e, &ts[1]);
	ts[0] = ts[1];
	/* times are a nicety: a filesystem that refuses one costs nothing */
	(void)utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

/* Replaces whatever is at dirfd/name (not a directory that may stay one). */
static int clear_slot(int dirfd, const char *name, bool keep_dir, paddock_error *err)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : pd_fail(err, errno, "stat '%s'", PD_ESC(name));
	/*
	 * The cached parent (dirfd) stays valid: what goes is a child of it, and a later entry
	 * below what went opens its parents again (another parent path than the cached one).
	 */
	if (S_ISDIR(st.st_mode) && keep_dir)
		return 1;
	return pd_image_remove_tree(dirfd, name, err);
}

static int write_data(struct unpack *u, int fd, struct archive_entry *e, paddock_error *err)
{
	la_int64_t size = archive_entry_size(e), end = 0;

	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(u->tar, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK)
			return u->failed ? -u->err->code
					 : pd_fail(err, EINVAL, "entry '%s': %s",
						   PD_ESC(archive_entry_pathname(e)),
						   archive_error_string(u->tar));
		if (off < 0 || (uint64_t)off + len > u->max_bytes)
			return pd_fail(err, EFBIG, "entry '%s' is too large",
				       PD_ESC(archive_entry_pathname(e)));
		for (size_t done = 0; done < len;) {
			ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
					   (off_t)off + (off_t)done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return pd_fail(err, errno, "write '%s'",
					       PD_ESC(archive_entry_pathname(e)));
			done += (size_t)n;
		}
		u->st.size += len;
		if (off + (la_int64_t)len > end)
			end = off + (la_int64_t)len;
	}
	/* a sparse file's last hole */
	if (size > end && ftruncate(fd, (off_t)size) < 0)
		return pd_fail(err, errno, "size '%s'", PD_ESC(archive_entry_pathname(e)));
	return 0;
}

static int make_file(struct unpack *u, int dirfd, const char *name, struct archive_entry *e,
		     paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct timespec ts[2];
	int r;

	if (archive_entry_size(e) < 0 || (uint64_t)archive_entry_size(e) > u->max_bytes)
		return pd_fail(err, EFBIG, "entry '%s' is too large",
			       PD_ESC(archive_entry_pathname(e)));
	r = clear_slot(dirfd, name, false, err);
	if (r < 0)
		return r;
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return pd_fail(err, errno, "create '%s'", PD_ESC(archive_entry_pathname(e)));
	r = write_data(u, fd, e, err);
	if (r < 0)
		return r;
	if (u->opts->chown) {
		r = set_owner(u, dirfd, name, e, err);
		if (r < 0)
			return r;
	}
	/* after chown, which clears set-id bits anyway: none are given */
	if (fchmod(fd, clean_mode(archive_entry_perm(e))) < 0)
		return pd_fail(err, errno, "chmod '%s'", PD_ESC(archive_entry_pathname(e)));
	entry_mtime(e, &ts[1]);
	ts[0] = ts[1];
	(void)futimens(fd, ts);
	return 0;
}

static int defer_dir(struct unpack *u, const char *path, struct archive_entry *e,
		     paddock_error *err)
{
	struct deferred_dir *d = NULL;

	for (size_t i = u->n_dirs; i > 0 && !d; i--)
		if (!strcmp(u->dirs[i - 1].path, path))
			d = &u->dirs[i - 1];
	if (!d) {
		if (u->n_dirs == u->cap_dirs) {
			size_t cap = u->cap_dirs ? 2 * u->cap_dirs : 256;
			struct deferred_dir *v = reallocarray(u->dirs, cap, sizeof(*v));

			if (!v)
				return pd_fail(err, ENOMEM, "out of memory");
			u->dirs = v;
			u->cap_dirs = cap;
		}
		d = &u->dirs[u->n_dirs];
		*d = (struct deferred_dir){ .path = strdup(path) };
		if (!d->path)
			return pd_fail(err, ENOMEM, "out of memory");
		u->n_dirs++;
	}
	d->mode = clean_mode(archive_entry_perm(e));
	d->uid = (uid_t)archive_entry_uid(e);
	d->gid = (gid_t)archive_entry_gid(e);
	entry_mtime(e, &d->mtime);
	return 0;
}

static int make_dir(struct unpack *u, const char *path, int dirfd, const char *name,
		    struct archive_entry *e, paddock_error *err)
{
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
	int r;

	if (uid < 0 || gid < 0 || uid >= UINT32_MAX || gid >= UINT32_MAX)
		return pd_fail(err, EINVAL, "entry '%s': owner %lld:%lld out of range",
			       PD_ESC(path), (long long)uid, (long long)gid);
	r = clear_slot(dirfd, name, true, err);
	if (r < 0)
		return r;
	if (r == 0 && mkdirat(dirfd, name, 0700) < 0)
		return pd_fail(err, errno, "mkdir '%s'", PD_ESC(path));
	return defer_dir(u, path, e, err);
}

static int make_symlink(struct unpack *u, int dirfd, const char *name, struct archive_entry *e,
			paddock_error *err)
{
	const char *target = archive_entry_symlink_utf8(e);
	int r;

	if (!target)
		target = archive_entry_symlink(e);
	if (!target || !target[0] || strlen(target) >= PATH_MAX)
		return pd_fail(err, EINVAL, "entry '%s': a symlink without a usable target",
			       PD_ESC(archive_entry_pathname(e)));
	r = clear_slot(dirfd, name, false, err);
	if (r < 0)
		return r;
	/* SECURITY: the target is only stored; it is resolved inside a sandbox's root */
	if (symlinkat(target, dirfd, name) < 0)
		return pd_fail(err, errno, "symlink '%s'", PD_ESC(archive_entry_pathname(e)));
	r = set_owner(u, dirfd, name, e, err);
	if (r < 0)
		return r;
	set_times(dirfd, name, e);
	return 0;
}

static int make_hardlink(struct unpack *u, int dirfd, const char *name, const char *link,
			 struct archive_entry *e, paddock_error *err)
{
	_cleanup_close_ int tdir = -EBADF;
	char target[PATH_MAX];
	const char *tname;
	char *slash;
	struct stat st, cur;
	int r;

	r = clean_path(link, target, sizeof(target), "hard link target", err);
	if (r < 0)
		return r;
	if (!target[0])
		return pd_fail(err, EINVAL, "entry '%s': a hard link to the layer's root",
			       PD_ESC(archive_entry_pathname(e)));
	slash = strrchr(target, '/');
	tname = slash ? slash + 1 : target;
	if (slash)
		*slash = '\0';
	/* SECURITY: the target is resolved below the layer, without symlinks, and must exist */
	tdir = walk(u->root, slash ? target : "", false, link, err);
	if (tdir == -ENOENT)
		return pd_fail(err, EINVAL,
			       "entry '%s': hard link to '%s', which is not in this "
			       "layer",
			       PD_ESC(archive_entry_pathname(e)), PD_ESC(link));
	if (tdir < 0)
		return tdir;
	if (fstatat(tdir, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(err, errno == ENOENT ? EINVAL : errno,
			       "entry '%s': hard link to '%s', which is not in this layer",
			       PD_ESC(archive_entry_pathname(e)), PD_ESC(link));
	if (S_ISDIR(st.st_mode))
		return pd_fail(err, EINVAL, "entry '%s': hard link to a directory",
			       PD_ESC(archive_entry_pathname(e)));
	if (fstatat(dirfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0 && cur.st_ino == st.st_ino &&
	    cur.st_dev == st.st_dev)
		return 0; /* linked already */
	r = clear_slot(dirfd, name, false, err);
	if (r < 0)
		return r;
	if (linkat(tdir, tname, dirfd, name, 0) < 0)
		return pd_fail(err, errno, "link '%s'", PD_ESC(archive_entry_pathname(e)));
	return 0;
}

static int make_fifo(struct unpack *u, int dirfd, const char *name, struct archive_entry *e,
		     paddock_error *err)
{
	int r = clear_slot(dirfd, name, false, err);

	if (r < 0)
		return r;
	if (mkfifoat(dirfd, name, 0600) < 0)
		return pd_fail(err, errno, "mkfifo '%s'", PD_ESC(archive_entry_pathname(e)));
	r = set_owner(u, dirfd, name, e, err);
	if (r < 0)
		return r;
	if (fchmodat(dirfd, name, clean_mode(archive_entry_perm(e)), 0) < 0)
		return pd_fail(err, errno, "chmod '%s'", PD_ESC(archive_entry_pathname(e)));
	set_times(dirfd, name, e);
	return 0;
}

static int make_whiteout(int dirfd, const char *name, const char *path, paddock_error *err)
{
	const char *victim = name + strlen(WHITEOUT);
	int r;

	if (!strcmp(name, OPAQUE)) {
		char self[64];

		/* an O_RDONLY directory fd: fsetxattr() does not take O_PATH ones */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", dirfd);
		if (fsetxattr(dirfd, "user.overlay.opaque", "y", 1, 0) < 0 &&
		    setxattr(self, "user.overlay.opaque", "y", 1, 0) < 0)
			return pd_fail(err, errno, "mark '%s' opaque (user.overlay.opaque)",
				       PD_ESC(path));
		return 0;
	}
	if (!strncmp(victim, WHITEOUT, strlen(WHITEOUT)))
		return 1; /* aufs bookkeeping (.wh..wh.plnk, .wh..wh.aufs): nothing of ours */
	if (!victim[0] || !strcmp(victim, ".") || !strcmp(victim, ".."))
		return pd_fail(err, EINVAL, "entry '%s': a whiteout of nothing", PD_ESC(path));
	r = clear_slot(dirfd, victim, false, err);
	if (r < 0)
		return r;
	if (mknodat(dirfd, victim, S_IFCHR | 0600, makedev(0, 0)) < 0)
		return pd_fail(err, errno, "make whiteout '%s'", PD_ESC(path));
	return 0;
}

static int unpack_entry(struct unpack *u, struct archive_entry *e, paddock_error *err)
{
	const char *raw = archive_entry_pathname_utf8(e);
	const char *link = archive_entry_hardlink_utf8(e);
	char path[PATH_MAX];
	const char *name;
	int dirfd, r;

	if (!raw)
		raw = archive_entry_pathname(e);
	if (!link)
		link = archive_entry_hardlink(e);
	r = clean_path(raw, path, sizeof(path), "entry", err);
	if (r < 0)
		return r;
	if (++u->st.entries > u->max_entries)
		return pd_fail(err, EFBIG, "layer: more than %" PRIu64 " entries", u->max_entries);
	if (!path[0])
		return 0; /* "./": the layer's root is ours */
	dirfd = parent_of(u, path, &name, err);
	if (dirfd < 0)
		return dirfd;
	if (!strncmp(name, WHITEOUT, strlen(WHITEOUT))) {
		r = make_whiteout(dirfd, name, path, err);
		return r < 0 ? r : 0;
	}
	if (link)
		return make_hardlink(u, dirfd, name, link, e, err);
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		return make_file(u, dirfd, name, e, err);
	case AE_IFDIR:
		return make_dir(u, path, dirfd, name, e, err);
	case AE_IFLNK:
		return make_symlink(u, dirfd, name, e, err);
	case AE_IFIFO:
		return make_fifo(u, dirfd, name, e, err);
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFSOCK:
		/* SECURITY: no device nodes from an image (a sandbox mounts nodev anyway) */
		u->st.entries--;
		u->st.skipped++;
		return 0;
	default:
		return pd_fail(err, EINVAL, "entry '%s' has an unknown type 0%o", PD_ESC(path),
			       (unsigned)archive_entry_filetype(e));
	}
}

/* Each directory's own mode, owner and time, now that nothing more goes into it. */
static int finish_dirs(struct unpack *u, paddock_error *err)
{
	for (size_t i = u->n_dirs; i > 0; i--) {
		const struct deferred_dir *d = &u->dirs[i - 1];
		paddock_error ignored = { 0 };
		_cleanup_close_ int fd = walk(u->root, d->path, false, d->path, &ignored);
		struct timespec ts[2] = { d->mtime, d->mtime };

		if (fd < 0)
			continue; /* replaced or whited out later in the layer */
		if (u->opts->chown && fchown(fd, d->uid, d->gid) < 0)
			return pd_fail(err, errno, "chown '%s'", PD_ESC(d->path));
		if (fchmod(fd, d->mode) < 0)
			return pd_fail(err, errno, "chmod '%s'", PD_ESC(d->path));
		(void)futimens(fd, ts);
	}
	return 0;
}

/* The rest of both streams, so that the digests cover every byte. */
static int drain(struct unpack *u, paddock_error *err)
{
	ssize_t n;

	while (!u->raw_eof) {
		const void *b;
		if (tar_read(u->tar, u, &b) < 0)
			return u->failed ? -u->err->code
					 : pd_fail(err, EINVAL, "read layer: %s",
						   archive_error_string(u->raw));
	}
	do {
		n = read(u->in_fd, u->in_buf, sizeof(u->in_buf));
		if (n > 0) {
			pd_digest_update(&u->blob, u->in_buf, (size_t)n);
			u->st.bytes_in += (uint64_t)n;
		}
	} while (n > 0 || (n < 0 && errno == EINTR));
	if (n < 0)
		return pd_fail(err, errno, "read layer");
	return 0;
}

static int verify(struct unpack *u, paddock_error *err)
{
	char blob[PD_DIGEST_MAX];

	pd_digest_final(&u->diff, u->st.diff_id);
	pd_digest_final(&u->blob, blob);
	if (u->opts->blob_size >= 0 && u->st.bytes_in != (uint64_t)u->opts->blob_size)
		return pd_fail(err, EBADMSG, "layer %s: %" PRIu64 " bytes, expected %" PRId64,
			       u->opts->blob_digest ? u->opts->blob_digest : "", u->st.bytes_in,
			       u->opts->blob_size);
	if (u->opts->blob_digest && strcmp(blob, u->opts->blob_digest) != 0)
		return pd_fail(err, EBADMSG, "layer %s: its content has digest %s",
			       u->opts->blob_digest, blob);
	if (u->opts->diff_id && strcmp(u->st.diff_id, u->opts->diff_id) != 0)
		return pd_fail(err, EBADMSG,
			       "layer %s: uncompressed, it has digest %s, not the diff id %s",
			       u->opts->blob_digest ? u->opts->blob_digest : "", u->st.diff_id,
			       u->opts->diff_id);
	return 0;
}

/*
 * A layer that failed to unpack may simply not be the blob it claims to be (a damaged
 * download, a swapped file): read the rest of it and, if its digest is another, say that
 * rather than what the damage looked like to the decompressor.
 */
static int blame_blob(struct unpack *u, int r, paddock_error *err)
{
	char blob[PD_DIGEST_MAX];
	uint64_t limit = u->opts->blob_size >= 0 ? (uint64_t)u->opts->blob_size : u->max_bytes;
	ssize_t n;

	do {
		n = read(u->in_fd, u->in_buf, sizeof(u->in_buf));
		if (n > 0) {
			pd_digest_update(&u->blob, u->in_buf, (size_t)n);
			u->st.bytes_in += (uint64_t)n;
		}
	} while ((n > 0 && u->st.bytes_in <= limit) || (n < 0 && errno == EINTR));
	if (n != 0)
		return r;
	pd_digest_final(&u->blob, blob);
	if (!strcmp(blob, u->opts->blob_digest))
		return r;
	return pd_fail(err, EBADMSG, "layer %s: its content has digest %s", u->opts->blob_digest,
		       blob);
}

static void release(struct unpack *u)
{
	archive_read_free(u->tar);
	archive_read_free(u->raw);
	pd_digest_release(&u->blob);
	pd_digest_release(&u->diff);
	forget_parent(u);
	for (size_t i = 0; i < u->n_dirs; i++)
		free(u->dirs[i].path);
	free(u->dirs);
}

int pd_unpack_layer(int in_fd, int dir_fd, const struct pd_unpack_opts *opts,
		    struct pd_unpack_stats *ret_stats, paddock_error *err)
{
	struct unpack *u = calloc(1, sizeof(*u));
	struct archive_entry *e;
	int r;

	if (!u)
		return pd_fail(err, ENOMEM, "out of memory");
	u->opts = opts;
	u->in_fd = in_fd;
	u->root = dir_fd;
	u->err = err;
	u->parent_fd = -EBADF;
	u->max_bytes = opts->max_bytes ? opts->max_bytes : PD_UNPACK_MAX_BYTES;
	u->max_entries = opts->max_entries ? opts->max_entries : PD_UNPACK_MAX_ENTRIES;
	r = pd_digest_init(&u->blob);
	if (r >= 0)
		r = pd_digest_init(&u->diff);
	if (r < 0) {
		r = pd_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	r = open_readers(u, err);
	while (r >= 0) {
		int a = archive_read_next_header(u->tar, &e);

		if (a == ARCHIVE_EOF)
			break;
		if (u->failed) {
			r = -err->code;
			break;
		}
		/* ARCHIVE_WARN: a name that would not convert, an odd header field; read on */
		if (a != ARCHIVE_OK && a != ARCHIVE_WARN) {
			r = pd_fail(err, u->read_errno ? u->read_errno : EINVAL,
				    "read layer: %s (truncated or not a tar?)",
				    archive_error_string(u->tar) ? archive_error_string(u->tar)
								 : "bad header");
			break;
		}
		r = unpack_entry(u, e, err);
	}
	if (r >= 0)
		r = drain(u, err);
	if (r >= 0)
		r = finish_dirs(u, err);
	if (r >= 0)
		r = verify(u, err);
	else if (opts->blob_digest)
		r = blame_blob(u, r, err);
	if (r >= 0 && ret_stats)
		*ret_stats = u->st;
out:
	release(u);
	free(u);
	return r < 0 ? r : 0;
}
