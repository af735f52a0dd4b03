/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities and identity of a command: become the sandbox user and keep nothing.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
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

/*
 * What a command run as root inside (spec "user": "root") keeps, over the sandbox's own
 * namespaces only: owning and chown'ing files (CHOWN, DAC_OVERRIDE, FOWNER), changing ids
 * (SETUID, SETGID: apt drops to _apt), KILL, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT.
 * SECURITY: never SYS_PTRACE (init is uid 0 too, and non-dumpable: without it no command
 * reaches init's memory or fds), SYS_ADMIN, NET_ADMIN, NET_RAW, MKNOD, FSETID, SETFCAP,
 * SYS_MODULE and the rest.
 */
#define PD_CAPS_ROOT                                                                               \
	((1ULL << 0) | (1ULL << 1) | (1ULL << 3) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) |       \
	 (1ULL << 8) | (1ULL << 10) | (1ULL << 18))

/* Drops every capability not in `keep` from the bounding set (CAP_SETPCAP). 0 or -errno. */
int pd_caps_limit_bounding(int last_cap, uint64_t keep);

/*
 * In a root command's child, before exec: clear ambient, become uid/gid 0 (supplementary
 * groups cleared when `setgroups_allowed`), keep exactly PD_CAPS_ROOT in permitted and
 * effective (none inheritable), and check the bounding set holds nothing else. With
 * no_new_privs the exec keeps these and gains nothing. Raw syscalls only. 0 or -errno.
 */
int pd_caps_become_root(bool setgroups_allowed);
