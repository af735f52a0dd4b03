/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File access into a sandbox from outside (the supervisor), that no symlink, "..", mount
 * trick or magic link planted by the sandbox can steer to a host file. Every path resolves
 * with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) beneath a root fd of the sandbox
 * (init's "/", sent over the control socket when it is ready); the last component is then
 * reached with *at() calls that do not follow it (AT_SYMLINK_NOFOLLOW, O_NOFOLLOW).
 *
 * Every pd_fsops_* call acts with the file-system identity uid/gid (host ids of the sandbox
 * user): the sandbox's tmpfs knows no other owner, and permissions are checked as for the
 * sandbox user. The identity is the supervisor's again when a call returns. The uid and gid
 * in a paddock_file_info are host ids here; sandbox-files.c maps them.
 *
 * Paths are cleaned first (pd_fsops_clean_path(), see include/paddock/files.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "paddock/paddock.h"

#define PD_FSOPS_MAX_PATH    PADDOCK_FILES_MAX_PATH
#define PD_FSOPS_MAX_DEPTH   PADDOCK_FILES_MAX_DEPTH
#define PD_FSOPS_MAX_ENTRIES PADDOCK_FILES_MAX_ENTRIES
#define PD_FSOPS_MAX_WATCHES PADDOCK_WATCH_MAX_DIRS
/* a deeper tree is not removed (-ELOOP): the walk holds one fd per level */
#define PD_FSOPS_MAX_REMOVE_DEPTH 128
/* openat2 -EAGAIN (a rename raced with "..") is retried this often, then reported */
#define PD_FSOPS_OPENAT2_TRIES 16

/* openat2 beneath root_fd; `path` is absolute inside the sandbox or relative to its "/". */
int pd_openat_in_root(int root_fd, const char *path, int flags, mode_t mode, paddock_error *err);

/* Reads a regular file of at most max bytes (-EFBIG beyond). Caller frees *ret_data. */
int pd_fsops_read_file(int root_fd, const char *path, size_t max, uid_t uid, gid_t gid,
		       char **ret_data, size_t *ret_len, paddock_error *err);

/* Writes a regular file atomically with `mode` (a pd_fsops_writer). The directory must exist. */
int pd_fsops_write_file(int root_fd, const char *path, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, paddock_error *err);

void pd_fsops_info_release(struct paddock_file_info *info);
void pd_fsops_infos_free(struct paddock_file_info *infos, size_t n);

/* lstat of `path`. Caller releases *ret_info. */
int pd_fsops_stat(int root_fd, const char *path, uid_t uid, gid_t gid,
		  struct paddock_file_info *ret_info, paddock_error *err);

/* fsops-tree.c: see paddock_sandbox_list_dir() and paddock_sandbox_remove(). */
int pd_fsops_list(int root_fd, const char *path, unsigned depth, size_t max_entries, uid_t uid,
		  gid_t gid, struct paddock_file_info **ret_infos, size_t *ret_n,
		  paddock_error *err);
int pd_fsops_remove(int root_fd, const char *path, bool recursive, uid_t uid, gid_t gid,
		    paddock_error *err);

int pd_fsops_mkdir(int root_fd, const char *path, mode_t mode, bool parents, uid_t uid, gid_t gid,
		   paddock_error *err);
int pd_fsops_move(int root_fd, const char *from, const char *to, bool overwrite, uid_t uid,
		  gid_t gid, paddock_error *err);

/* A regular file open for reading at `offset`; caller closes *ret_fd. */
int pd_fsops_open_read(int root_fd, const char *path, uint64_t offset, uid_t uid, gid_t gid,
		       int *ret_fd, uint64_t *ret_size, paddock_error *err);

/* The streamed atomic write of paddock_sandbox_open_write(); the writer keeps uid/gid. */
int pd_fsops_writer_open(int root_fd, const char *path, mode_t mode, bool parents, uid_t uid,
			 gid_t gid, paddock_file_writer **ret_writer, paddock_error *err);
int pd_fsops_writer_fd(const paddock_file_writer *w);
int pd_fsops_writer_commit(paddock_file_writer *w, paddock_error *err);
paddock_file_writer *pd_fsops_writer_free(paddock_file_writer *w);

/* fsops-watch.c: see paddock_sandbox_watch(); the watch keeps uid/gid and its directory's fd. */
int pd_fsops_watch_open(int root_fd, const char *path, bool recursive, uid_t uid, gid_t gid,
			paddock_watch **ret_watch, paddock_error *err);
int pd_fsops_watch_fd(const paddock_watch *w);
int pd_fsops_watch_read(paddock_watch *w, paddock_watch_fn fn, void *userdata, paddock_error *err);
paddock_watch *pd_fsops_watch_free(paddock_watch *w);
