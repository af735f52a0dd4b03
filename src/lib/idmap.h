/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who is who inside a sandbox. Commands always run as PD_SANDBOX_UID/GID (1000, "user").
 *
 * As root: each live sandbox holds a slot, an outside range of 65536 uids and gids that no
 * other live sandbox uses (an flock'ed file under /run/paddock/idmap, released by the
 * kernel when the supervisor dies, which also kills the sandbox). Inside 0..65535 map to
 * PD_IDMAP_BASE + slot * 65536: nothing inside is host root.
 *
 * Rootless: the invoking uid/gid map to 1000 and nothing else exists inside; init runs as
 * 1000 too, with capabilities only in the sandbox's own user namespace.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "paddock/paddock.h"

#define PD_SANDBOX_UID 1000
#define PD_SANDBOX_GID 1000
#define PD_IDMAP_RANGE 65536u
#define PD_IDMAP_BASE  0x60000000u /* 1610612736: far above any distro's allocations */
/* 32768 ranges end at 0xE0000000, below (uid_t)-1; more than pid_max's default allows */
#define PD_IDMAP_SLOTS	  32768u
#define PD_IDMAP_LOCK_DIR "/run/paddock/idmap"

struct pd_idmap {
	bool rootless;
	uid_t outside_uid; /* rootless: the invoker; root: start of the range */
	gid_t outside_gid;
	unsigned slot;
	int lock_fd; /* root: held until init holds it (paddockd), else while the sandbox lives */
	bool owns_slot; /* root: this process counts the slot as taken (pd_idmap_release) */
	uid_t init_uid; /* what init is inside: 0 as root, 1000 rootless (0 with root_user) */
	gid_t init_gid;
	bool root_user; /* commands run as uid 0 inside (spec "user": "root") */
};

/* Who commands are inside: uid/gid 0 with root_user, else the sandbox user. */
static inline uid_t pd_idmap_user_uid(const struct pd_idmap *m)
{
	return m->root_user ? 0 : PD_SANDBOX_UID;
}

static inline gid_t pd_idmap_user_gid(const struct pd_idmap *m)
{
	return m->root_user ? 0 : PD_SANDBOX_GID;
}

/*
 * True when this process is root of the host: euid 0 in the initial user namespace, with
 * the capabilities root mode uses (CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_CHOWN). Root
 * of a user namespace of its own (`unshare -r`, some CI runners and nested containers) is
 * not: paddock runs rootless there. Probed once per process.
 */
bool pd_idmap_host_root(void);

void pd_idmap_init(struct pd_idmap *m);
/*
 * Picks the mapping for a new sandbox (and a slot, as root). Rootless, the invoker maps to
 * the sandbox user, or to uid 0 with root_user: one id, so chown to any other fails.
 */
int pd_idmap_acquire(struct pd_idmap *m, bool root_user, paddock_error *err);
/* Writes uid_map, setgroups and gid_map of the child `pid`. */
int pd_idmap_write(const struct pd_idmap *m, pid_t pid, paddock_error *err);
/* Counts m's slot as this process's (an adopted sandbox's); undone by pd_idmap_release(). */
void pd_idmap_own_slot(struct pd_idmap *m);
/* Closes the lock (if still ours) and stops counting the slot as this process's. */
void pd_idmap_release(struct pd_idmap *m);

/*
 * As root: a detached clone of the host directory `path`, idmapped so that its owner (uid
 * and gid on disk) is the sandbox user inside, and what the sandbox user creates there is
 * owned by that owner on the host: a --workspace as the invoker knows it, not owned by the
 * sandbox's private id range. -EOPNOTSUPP (err filled) when the filesystem or kernel cannot
 * idmap; the caller falls back to a plain bind.
 */
int pd_idmap_mount_tree(const struct pd_idmap *m, const char *path, int *ret_fd,
			paddock_error *err);

/*
 * An image layer of the store for init to stack: as root a detached clone of `path`,
 * read-only, nosuid, nodev and idmapped through init's own user namespace (/proc/PID/ns/
 * user), so that the layer's root (host uid 0 on disk) is the sandbox's root and no layer
 * file is anyone else's. Rootless, init opens the layers itself (the invoker's files are
 * the sandbox's). An fd, or -errno.
 */
int pd_idmap_layer_tree(const struct pd_idmap *m, pid_t init_pid, const char *path,
			paddock_error *err);
