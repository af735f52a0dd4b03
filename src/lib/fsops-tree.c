/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Walking a sandbox's directory trees from the supervisor: listing and recursive removal.
 * The tree is the sandbox's and changes under us, so the walk holds each directory by fd,
 * looks at each entry with fstatat/statx(AT_SYMLINK_NOFOLLOW) and enters a subdirectory
 * only with openat(O_NOFOLLOW | O_DIRECTORY) below the fd it came from: a symlink, or an
 * entry swapped for one, is never followed, so the walk cannot leave the directory it
 * started in. Both walks are bounded: a listing by depth and entries, a removal by depth
 * (one fd per level) and by the mount it started on. Never nftw(), which follows by path.
 * The caller (fsops.h) has taken the sandbox user's identity for all of it.
 */
#include "fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "error.h"
#include "fsops-internal.h"
#include "util/cleanup.h"

PD_DEFINE_CLEANUP(DIR, closedir)

#define SUBDIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

static bool is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* A directory stream over fd, which it takes in every case. */
static DIR *open_stream(int fd)
{
	DIR *d = fdopendir(fd);

	if (!d)
		(void)pd_close(fd);
	return d;
}

/* "'dir/name'" for a message about an entry: only built when something failed. */
static int fail_entry(paddock_error *err, int code, const char *what, const char *dir,
		      const char *name)
{
	_cleanup_free_ char *p = pd_fsops_join(dir, name);

	return pd_fail_field(err, code, "path", "%s '%s'", what, PD_ESC(p ? p : dir));
}

/* ---- listing --------------------------------------------------------------------------- */

struct listing {
	struct paddock_file_info *v;
	size_t n, cap, max;
	unsigned depth;
};

/* a subdirectory we may not enter, or that changed meanwhile: listed without its entries */
static bool skip_subdir(int e)
{
	return e == EACCES || e == EPERM || e == ENOENT || e == ELOOP || e == ENOTDIR;
}

static int list_stream(struct listing *l, int fd, const char *dirpath, unsigned level,
		       paddock_error *err)
{
	_cleanup_(closedirp) DIR *d = open_stream(fd);
	struct dirent *de;
	int r;

	if (!d)
		return pd_fail_field(err, errno, "path", "read the directory '%s'",
				     PD_ESC(dirpath));
	for (;;) {
		struct paddock_file_info *info;
		struct stat st;
		char *path;
		int sub;

		errno = 0;
		de = readdir(d);
		if (!de && errno)
			return pd_fail_field(err, errno, "path", "read the directory '%s'",
					     PD_ESC(dirpath));
		if (!de)
			return 0;
		if (is_dot(de->d_name))
			continue;
		if (l->n >= l->max)
			return pd_fail(err, E2BIG, "more than %zu entries to list", l->max);
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct paddock_file_info *v;

			if (cap > l->max)
				cap = l->max;
			v = reallocarray(l->v, cap, sizeof(*v));
			if (!v)
				return pd_fail(err, ENOMEM, "allocate a listing");
			l->v = v;
			l->cap = cap;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) < 0) {
			if (errno == ENOENT) /* removed meanwhile */
				continue;
			return fail_entry(err, errno, "stat", dirpath, de->d_name);
		}
		path = pd_fsops_join(dirpath, de->d_name);
		if (!path)
			return pd_fail(err, ENOMEM, "allocate a path");
		info = &l->v[l->n];
		r = pd_fsops_info_fill(path, &st, dirfd(d), de->d_name, info, err);
		if (r < 0)
			return r;
		l->n++;
		if (!S_ISDIR(st.st_mode) || level >= l->depth)
			continue;
		/* SECURITY: O_NOFOLLOW: a directory swapped for a symlink is not entered */
		sub = openat(dirfd(d), de->d_name, SUBDIR_FLAGS);
		if (sub < 0 && skip_subdir(errno))
			continue;
		if (sub < 0)
			return fail_entry(err, errno, "open", dirpath, de->d_name);
		/* info->path stays put when l->v moves */
		r = list_stream(l, sub, info->path, level + 1, err);
		if (r < 0)
			return r;
	}
}

/* By path, component by component: "/a", "/a/b", "/a.txt" ('/' sorts before any byte). */
static int path_cmp(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)((const struct paddock_file_info *)a)->path;
	const unsigned char *y = (const unsigned char *)((const struct paddock_file_info *)b)->path;
	unsigned cx, cy;

	while (*x && *x == *y)
		x++, y++;
	cx = *x == '/' ? 1u : *x ? *x + 1u : 0u;
	cy = *y == '/' ? 1u : *y ? *y + 1u : 0u;
	return cx < cy ? -1 : cx > cy;
}

int pd_fsops_list(int root_fd, const char *path, unsigned depth, size_t max_entries, uid_t uid,
		  gid_t gid, struct paddock_file_info **ret_infos, size_t *ret_n,
		  paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	struct listing l = { .max = max_entries, .depth = depth };
	int fd, r;

	if (depth < 1 || depth > PD_FSOPS_MAX_DEPTH)
		return pd_fail_field(err, EINVAL, "depth", "expected a depth of 1 to %d, got %u",
				     PD_FSOPS_MAX_DEPTH, depth);
	if (max_entries < 1 || max_entries > PD_FSOPS_MAX_ENTRIES)
		return pd_fail_field(err, EINVAL, "max_entries",
				     "expected 1 to %d entries, got %zu", PD_FSOPS_MAX_ENTRIES,
				     max_entries);
	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	/* the directory named is resolved like any path: symlinks followed, inside the root */
	fd = pd_fsops_open_in_root(root_fd, "path", clean, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	r = list_stream(&l, fd, clean, 1, err);
	if (r < 0) {
		pd_fsops_infos_free(l.v, l.n);
		return r;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), path_cmp);
	*ret_infos = l.v;
	*ret_n = l.n;
	return 0;
}

/* ---- removal --------------------------------------------------------------------------- */

/* What decides whether the walk may enter a directory: which mount it is on, and which inode. */
struct node {
	mode_t mode;
	dev_t dev;
	ino_t ino;
	uint64_t mnt_id; /* 0 when the kernel does not say (before 5.8) */
};

static int node_at(int dir, const char *name, struct node *ret)
{
	struct statx stx;

	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH,
		  STATX_TYPE | STATX_INO | STATX_MNT_ID, &stx) < 0)
		return -errno;
	*ret = (struct node){
		.mode = stx.stx_mode,
		.dev = makedev(stx.stx_dev_major, stx.stx_dev_minor),
		.ino = stx.stx_ino,
		/* COMPAT(kernel 5.8): no STATX_MNT_ID; st_dev alone tells file systems apart */
		.mnt_id = (stx.stx_mask & STATX_MNT_ID) ? stx.stx_mnt_id : 0,
	};
	return 0;
}

/*
 * st_dev tells file systems apart and the mount id binds of one file system. Directories
 * only: on an overlay of several file systems, a non-directory reports its layer's st_dev.
 */
static bool same_mount(const struct node *a, const struct node *b)
{
	return a->dev == b->dev && a->mnt_id == b->mnt_id;
}

/* Opens the subdirectory `name` of dir, and makes sure it is still the one `n` describes. */
static int enter(int dir, const char *name, const struct node *n)
{
	_cleanup_close_ int fd = -EBADF;
	struct node now;
	int r;

	/* SECURITY: O_NOFOLLOW; then the inode and mount checked on the fd we will use */
	fd = openat(dir, name, SUBDIR_FLAGS);
	if (fd < 0)
		return -errno;
	r = node_at(fd, "", &now);
	if (r < 0)
		return r;
	if (now.ino != n->ino || !same_mount(&now, n))
		return -EAGAIN; /* swapped or mounted over since it was looked at */
	return TAKE_FD(fd);
}

/* Empties the directory fd (taken) on mount `fs`. */
static int remove_below(int fd, const char *dirpath, const struct node *fs, unsigned level,
			paddock_error *err)
{
	_cleanup_(closedirp) DIR *d = open_stream(fd);
	struct dirent *de;
	int r;

	if (!d)
		return pd_fail_field(err, errno, "path", "read the directory '%s'",
				     PD_ESC(dirpath));
	for (;;) {
		_cleanup_free_ char *child = NULL;
		struct node n;
		int sub;

		errno = 0;
		de = readdir(d);
		if (!de && errno)
			return pd_fail_field(err, errno, "path", "read the directory '%s'",
					     PD_ESC(dirpath));
		if (!de)
			return 0;
		if (is_dot(de->d_name))
			continue;
		r = node_at(dirfd(d), de->d_name, &n);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return fail_entry(err, r, "stat", dirpath, de->d_name);
		if (!S_ISDIR(n.mode)) {
			if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
				return fail_entry(err, errno, "remove", dirpath, de->d_name);
			continue;
		}
		if (!same_mount(&n, fs))
			return fail_entry(err, EXDEV, "not removing the mount point", dirpath,
					  de->d_name);
		if (level >= PD_FSOPS_MAX_REMOVE_DEPTH)
			return fail_entry(err, ELOOP, "too deep to remove", dirpath, de->d_name);
		sub = enter(dirfd(d), de->d_name, &n);
		if (sub == -ENOENT)
			continue;
		if (sub < 0)
			return fail_entry(err, sub, "open", dirpath, de->d_name);
		child = pd_fsops_join(dirpath, de->d_name);
		if (!child) {
			(void)pd_close(sub);
			return pd_fail(err, ENOMEM, "allocate a path");
		}
		r = remove_below(sub, child, fs, level + 1, err);
		if (r < 0)
			return r;
		if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return pd_fail_field(err, errno, "path", "remove '%s'", PD_ESC(child));
	}
}

int pd_fsops_remove(int root_fd, const char *path, bool recursive, uid_t uid, gid_t gid,
		    paddock_error *err)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *clean = NULL;
	_cleanup_close_ int dir = -EBADF;
	struct node n, parent;
	const char *name;
	int r;

	r = pd_fsops_clean_path("path", path, &clean, err);
	if (r < 0)
		return r;
	if (strcmp(clean, "/") == 0)
		return pd_fail_field(err, EINVAL, "path", "refusing to remove '/'");
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	dir = pd_fsops_open_parent(root_fd, "path", clean, &name, err);
	if (dir < 0)
		return dir;
	r = node_at(dir, name, &n);
	if (r < 0)
		return pd_fail_field(err, r, "path", "stat '%s'", PD_ESC(clean));
	if (!S_ISDIR(n.mode)) {
		/* a file, or a symlink: the link itself */
		if (unlinkat(dir, name, 0) < 0)
			return pd_fail_field(err, errno, "path", "remove '%s'", PD_ESC(clean));
		return 0;
	}
	r = node_at(dir, "", &parent);
	if (r < 0)
		return pd_fail_field(err, r, "path", "stat the directory of '%s'", PD_ESC(clean));
	if (!same_mount(&n, &parent))
		return pd_fail_field(err, EBUSY, "path", "'%s' is a mount point", PD_ESC(clean));
	if (recursive) {
		int sub = enter(dir, name, &n);

		if (sub < 0)
			return pd_fail_field(err, sub, "path", "open '%s'", PD_ESC(clean));
		r = remove_below(sub, clean, &n, 1, err);
		if (r < 0)
			return r;
	}
	if (unlinkat(dir, name, AT_REMOVEDIR) < 0)
		return pd_fail_field(err, errno, "path", "remove '%s'", PD_ESC(clean));
	return 0;
}
