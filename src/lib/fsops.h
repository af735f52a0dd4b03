/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File access into a sandbox from outside (the supervisor), that no symlink, "..", mount
 * trick or magic link planted by the sandbox can steer to a host file. Every path resolves
 * with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) beneath a root fd of the sandbox
 * (init's "/", sent over the control socket when it is ready), and only regular files are
 * read or written.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "paddock/paddock.h"

#define PD_FSOPS_MAX_PATH 4096

/* openat2 beneath root_fd; `path` is absolute inside the sandbox or relative to its "/". */
int pd_openat_in_root(int root_fd, const char *path, int flags, mode_t mode, paddock_error *err);

/*
 * Both act with the file-system identity uid/gid (host ids of the sandbox user): the
 * sandbox's tmpfs knows no other owner, and permissions are checked as for the sandbox user.
 */

/* Reads a regular file of at most max bytes (-EFBIG beyond). Caller frees *ret_data. */
int pd_fsops_read_file(int root_fd, const char *path, size_t max, uid_t uid, gid_t gid,
		       char **ret_data, size_t *ret_len, paddock_error *err);

/*
 * Writes a regular file atomically (a temporary file in the same directory, renamed over
 * the target) with `mode`. The directory must exist.
 */
int pd_fsops_write_file(int root_fd, const char *path, const void *data, size_t len,
			mode_t mode, uid_t uid, gid_t gid, paddock_error *err);
