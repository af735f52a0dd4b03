/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Landlock as the second wall around the filesystem: commands may read and execute
 * everywhere in their (already private) root, but write only below the paths the sandbox
 * owns. Probed at runtime; the ruleset is built once per sandbox by init, after pivot_root,
 * and each command's child enforces it with one call.
 */
#pragma once

#include "paddock/paddock.h"

/* The kernel's Landlock ABI version, 0 when Landlock is unavailable. Cached after the first call.
 */
int pd_landlock_abi(void);

/*
 * Builds a ruleset: read/execute on "/", full access below each of `rw_paths` (absolute,
 * NULL-terminated; paths that do not exist are skipped), device ioctls below "/dev".
 * On success *ret_ruleset_fd is a close-on-exec fd. -EOPNOTSUPP when Landlock is unavailable.
 */
int pd_landlock_prepare(const char *const *rw_paths, int *ret_ruleset_fd, paddock_error *err);

/* Enforces the ruleset on the calling thread; needs no_new_privs or CAP_SYS_ADMIN.
 * Async-signal-safe. */
int pd_landlock_apply(int ruleset_fd);
