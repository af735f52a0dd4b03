/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What fsops.c, fsops-tree.c and fsops-watch.c share: the file-system identity switch,
 * path cleaning, and resolution of a path's parent beneath the sandbox's root.
 */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "paddock/paddock.h"
#include "util/cleanup.h"

/*
 * The supervisor's file-system identity while it touches a sandbox's files. setfsuid() is
 * per thread and the supervisor has one thread. Declare with _cleanup_fsid_ and = { 0 }:
 * the old identity comes back on every return.
 */
struct pd_fsid {
	uid_t uid;
	gid_t gid;
	bool active;
};

int pd_fsops_become(uid_t uid, gid_t gid, struct pd_fsid *ret_old, paddock_error *err);
void pd_fsops_restore(struct pd_fsid *old);
#define _cleanup_fsid_ _cleanup_(pd_fsops_restore)

/*
 * A client's path made absolute and lexical: "/" then its components, without "", "." or
 * ".." (which drops the component before it, and stays at "/"). So ".." never reaches the
 * kernel and the path reported back is the path that was resolved. -EINVAL naming `field`
 * when empty or longer than PD_FSOPS_MAX_PATH. Caller frees *ret_clean.
 */
int pd_fsops_clean_path(const char *field, const char *path, char **ret_clean, paddock_error *err);

/* The last component of a clean path, pointing into it; "/" for the root. */
const char *pd_fsops_basename(const char *clean);

/*
 * "dir/name": "/name" when dir is "/", `name` when dir is "", `dir` when name is "". NULL
 * when out of memory.
 */
char *pd_fsops_join(const char *dir, const char *name);

/* pd_openat_in_root() whose error names `field` ("path", "from", "to"). */
int pd_fsops_open_in_root(int root_fd, const char *field, const char *path, int flags, mode_t mode,
			  paddock_error *err);

/*
 * Opens the directory holding the clean path `clean` (O_PATH, resolved in the root) and
 * points *ret_name at its last component, for *at() calls with AT_SYMLINK_NOFOLLOW. -EINVAL
 * for "/", which has no parent. Returns the fd.
 */
int pd_fsops_open_parent(int root_fd, const char *field, const char *clean, const char **ret_name,
			 paddock_error *err);

/*
 * Fills *ret from `st` of the entry `name` in dirfd (readlinkat for a symlink's target;
 * name "" reads dirfd itself). Takes `path` (a clean path) in every case.
 */
int pd_fsops_info_fill(char *path, const struct stat *st, int dirfd, const char *name,
		       struct paddock_file_info *ret, paddock_error *err);
