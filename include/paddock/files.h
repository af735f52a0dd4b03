/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: file access into a running sandbox from outside. Every path is a path as the
 * sandbox sees it; symlinks and ".." resolve inside the sandbox and never reach a host file.
 */
#pragma once

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reads a regular file of the sandbox (a path as the sandbox sees it) of at most max_bytes:
 * -EFBIG beyond, -EINVAL when it is not a regular file. Symlinks and ".." resolve inside the
 * sandbox and never reach a host file. Caller frees *ret_data (NUL-terminated).
 */
PADDOCK_API int paddock_sandbox_read_file(paddock_sandbox *sb, const char *path,
					  size_t max_bytes, char **ret_data, size_t *ret_len,
					  paddock_error *err);

/*
 * Writes a regular file of the sandbox atomically, owned by the sandbox user (uid 1000),
 * with `mode`. The directory must exist. Resolves like paddock_sandbox_read_file().
 */
PADDOCK_API int paddock_sandbox_write_file(paddock_sandbox *sb, const char *path,
					   const void *data, size_t len, unsigned mode,
					   paddock_error *err);

#ifdef __cplusplus
}
#endif
