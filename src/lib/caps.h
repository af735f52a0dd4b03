/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities and identity of a command: become the sandbox user and keep nothing.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap). */
int pd_caps_last_cap(void);

/*
 * In a forked child, before exec: drop every capability from the bounding set (needs
 * CAP_SETPCAP, so first), clear ambient, switch to uid/gid (supplementary groups cleared
 * when `setgroups_allowed`), then clear effective, permitted and inheritable and check
 * that nothing is left. Async-signal-safe. 0 or -errno.
 */
int pd_caps_drop_to_user(uid_t uid, gid_t gid, bool setgroups_allowed, int last_cap);
