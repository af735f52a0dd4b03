/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
 * mount_setattr) and close_range. glibc (2.36 on) wraps them in <sys/mount.h> and
 * <unistd.h>; musl, which the init image is built with where it is installed (init-image.h),
 * does not: there they are the raw system calls, with the kernel's constants.
 */
#pragma once

#include <sys/mount.h>
#include <unistd.h>

#ifndef __GLIBC__
#include <linux/close_range.h>
#include <linux/mount.h>
#include <stddef.h>
#include <sys/syscall.h>

static inline int open_tree(int dfd, const char *path, unsigned int flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static inline int move_mount(int from_dfd, const char *from_path, int to_dfd, const char *to_path,
			     unsigned int flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from_path, to_dfd, to_path, flags);
}

static inline int fsopen(const char *fs_name, unsigned int flags)
{
	return (int)syscall(SYS_fsopen, fs_name, flags);
}

static inline int fsconfig(int fd, unsigned int cmd, const char *key, const void *value, int aux)
{
	return (int)syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}

static inline int fsmount(int fd, unsigned int flags, unsigned int attr_flags)
{
	return (int)syscall(SYS_fsmount, fd, flags, attr_flags);
}

static inline int fspick(int dfd, const char *path, unsigned int flags)
{
	return (int)syscall(SYS_fspick, dfd, path, flags);
}

static inline int mount_setattr(int dfd, const char *path, unsigned int flags,
				struct mount_attr *attr, size_t size)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, size);
}

static inline int close_range(unsigned int first, unsigned int last, int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}
#endif
