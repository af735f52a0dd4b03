/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What rootfs.c, rootfs-image.c (an image's layers as the root, its /etc) and rootfs-proc.c
 * (/proc, its view and masks, and /dev) share while a sandbox's root is built: the build's
 * state and the fd helpers. Private to those three files.
 */
#pragma once

#include "rootfs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "proc-view.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/mount-api.h"
#include "util/strv.h"

/* the CA bundle of a Debian-style tree, relative to its root */
#define BASE_BUNDLE "etc/ssl/certs/ca-certificates.crt"

/* The /etc files every sandbox gets (rootfs.c), also over an image's (rootfs-image.c). */
extern const char pd_rootfs_passwd_fmt[], pd_rootfs_group_fmt[], pd_rootfs_nsswitch[];
extern const char pd_rootfs_resolv_none[], pd_rootfs_resolv_egress[];

struct build {
	const paddock_spec *spec;
	const struct pd_idmap *idmap;
	struct pd_rootfs_sources *sources;
	const char *base;  /* "/" or the rootfs path */
	int base_fd;	   /* O_PATH of base */
	const char *stage; /* where disk is attached in the old root */
	int disk;	   /* mount fd of the disk tmpfs */
	int root;	   /* mount fd of the new root */
	uid_t root_uid;	   /* init's own ids inside */
	gid_t root_gid;
	bool image; /* the root is an overlay of an image's layers (sources->layer_fds) */
};

int pd_rootfs_set_attr(int fd, const char *path, unsigned flags, uint64_t set, uint64_t clr);
int pd_rootfs_new_fs(const char *type, const char *const *opts, unsigned attrs, paddock_error *err);
int pd_rootfs_attach(int mfd, int dirfd, const char *path, paddock_error *err);
int pd_rootfs_bind_at(int dirfd, const char *src, int to_dirfd, const char *to, uint64_t attrs,
		      paddock_error *err);
int pd_rootfs_mkdir_owned(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid,
			  paddock_error *err);
int pd_rootfs_touch(int dirfd, const char *name, paddock_error *err);
int pd_rootfs_open_dir(int dirfd, const char *name, paddock_error *err);
int pd_rootfs_open_in_root(int root_fd, const char *path, int flags);
int pd_rootfs_write_ca(int etc, int bundle_fd, const char *ca_pem, uid_t uid, gid_t gid,
		       paddock_error *err);
int pd_rootfs_mount_image_overlay(struct build *b, paddock_error *err);
int pd_rootfs_build_etc_image(struct build *b, paddock_error *err);
int pd_rootfs_build_proc(struct build *b, paddock_error *err);
int pd_rootfs_build_dev(struct build *b, paddock_error *err);
