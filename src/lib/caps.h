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
 * Empties the bounding set (needs CAP_SETPCAP). The caller keeps its permitted and effective
 * capabilities; nothing it execs, and nothing its children exec, can ever hold one again.
 * init does this once, so commands need not. 0 or -errno.
 */
int pd_caps_drop_bounding(int last_cap);

/*
 * In a command's child, before exec: clear ambient, switch to uid/gid (supplementary groups
 * cleared when `setgroups_allowed`), then clear effective, permitted and inheritable and
 * check that nothing is left, bounding set included. Raw syscalls only: it runs in a
 * CLONE_VM child that shares init's memory. 0 or -errno.
 */
int pd_caps_drop_to_user(uid_t uid, gid_t gid, bool setgroups_allowed);

/*
 * Before init execs its image: inheritable and ambient get every permitted capability, so
 * the exec keeps them (rootless, init is not uid 0 in its user namespace). 0 or -errno.
 */
int pd_caps_keep_across_exec(int last_cap);

/* After that exec: ambient and inheritable emptied; permitted and effective stay. */
int pd_caps_clear_inherited(void);
