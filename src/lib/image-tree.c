/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Removing a tree of the image store: a layer pruned or replaced, a layer half unpacked, an
 * entry a later one of the same layer replaces (image-unpack.c). The tree is ours but was
 * written from a hostile tar, so the walk holds each directory by fd, looks with
 * fstatat(AT_SYMLINK_NOFOLLOW), enters only with O_NOFOLLOW below the fd it came from and
 * never leaves the filesystem it started on. Bounded in depth.
 */
#include "image-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define MAX_REMOVE_DEPTH 512

static int remove_children(int dfd, unsigned depth, paddock_error *err);

static int remove_at(int dirfd, const char *name, unsigned depth, paddock_error *err)
{
	struct stat st;
	int r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return pd_fail(err, errno, "stat '%s'", PD_ESC(name));
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return pd_fail(err, errno, "remove '%s'", PD_ESC(name));
		return 0;
	}
	if (depth >= MAX_REMOVE_DEPTH)
		return pd_fail(err, ELOOP, "remove '%s': nested too deep", PD_ESC(name));
	/* our own tree: make a directory we may not write to writable, then empty it */
	if ((st.st_mode & 0700) != 0700)
		if (fchmodat(dirfd, name, (st.st_mode & 07777) | 0700, 0) < 0)
			(void)0; /* not ours to change: the removal says why it fails */
	{
		_cleanup_close_ int sub =
			openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat sst;

		if (sub < 0)
			return pd_fail(err, errno, "open '%s'", PD_ESC(name));
		/* SECURITY: never leave the filesystem we started on */
		if (fstat(sub, &sst) < 0 || sst.st_dev != st.st_dev)
			return pd_fail(err, EXDEV, "remove '%s': a mount point", PD_ESC(name));
		r = remove_children(sub, depth + 1, err);
		if (r < 0)
			return r;
	}
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return pd_fail(err, errno, "remove '%s'", PD_ESC(name));
	return 0;
}

static int remove_children(int dfd, unsigned depth, paddock_error *err)
{
	for (;;) {
		_cleanup_close_ int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
		DIR *d;
		struct dirent *de;
		bool any = false;
		int r = 0;

		if (dup_fd < 0)
			return pd_fail(err, errno, "dup directory");
		d = fdopendir(dup_fd);
		if (!d)
			return pd_fail(err, errno, "read directory");
		TAKE_FD(dup_fd);
		rewinddir(d);
		while ((de = readdir(d)) && r >= 0) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			any = true;
			r = remove_at(dfd, de->d_name, depth, err);
		}
		closedir(d);
		if (r < 0)
			return r;
		/* removing while reading may skip names: read again until nothing is left */
		if (!any)
			return 0;
	}
}

int pd_image_remove_tree(int dirfd, const char *name, paddock_error *err)
{
	return remove_at(dirfd, name, 0, err);
}
