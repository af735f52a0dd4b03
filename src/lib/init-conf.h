/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a sandbox's init needs once its root is built, handed across its exec. init starts
 * as a clone of its supervisor (init.c: namespaces, root, cgroup, built with the spec and
 * every library the supervisor has), then execs the small static init image
 * (init-image.c) with this, packed into a sealed memfd; the image's main (init-main.c)
 * parses it and runs the sandbox (init-run.c) from it. An idle sandbox then costs a process
 * of its own few pages, not a copy-on-write snapshot of its supervisor's address space.
 *
 * Trust: packed by init before exec, before any code of the sandbox's has run; parsed
 * strictly all the same (a bad one ends init: the sandbox fails to start).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paddock/paddock.h"
#include "control.h"
#include "idmap.h"

enum {
	PD_INIT_POOLED = 1u << 0, /* wait for a claim (PD_CTL_BIND) before confining */
	PD_INIT_EGRESS = 1u << 1, /* the sandbox has network: the proxy's variables */
	PD_INIT_CA = 1u << 2,	  /* the sandbox's CA is in its root: the CA's variables */
	PD_INIT_ROOT = 1u << 3,	  /* commands run as uid 0 with PD_CAPS_ROOT (spec "user") */
};

#define PD_INIT_CONF_MAX (8u << 20) /* bytes, packed */

struct pd_init_conf {
	uint32_t flags;
	struct pd_idmap idmap;	       /* lock_fd and owns_slot mean nothing here: see lock_fd */
	struct pd_ctl_rlimits rlimits; /* of every command */
	uint64_t disk_bytes;	       /* the disk's size now: a claim resizes from it */
	int ctl;		       /* the control socket */
	int lock_fd;		       /* the id slot's lock, or -1 */
	int listen_fd;		       /* the reconnect socket, or -1 */
	int orphan_timeout_s;
	int landlock_fd; /* the ruleset to enforce, or -1 (no Landlock) */
	int host_tree;	 /* pooled: the host's tree, for a claim's workspace by path; or -1 */
	int proc_view;	 /* pooled: the directory of the /proc view (proc-view.h); or -1 */
	int upper_fd;	 /* an image's writable layer (O_PATH), sent at READY; or -1 */
	int last_cap;
	const char *cwd; /* of commands, unless a request names one */
	char **env;	 /* the spec's NAME=VALUE, NULL-terminated */
	char **secret_env;
	char **writable; /* the paths Landlock leaves writable (a claim re-makes the ruleset) */
};

/* Packs `c` into a new buffer (free() it). 0 or -errno (-E2BIG past PD_INIT_CONF_MAX). */
int pd_init_conf_pack(const struct pd_init_conf *c, char **ret_buf, size_t *ret_len);

/*
 * Parses what pd_init_conf_pack() made. The strings of *ret point into buf, which must
 * outlive it; pd_init_conf_release() frees the arrays. 0 or -EPROTO / -ENOMEM.
 */
int pd_init_conf_parse(const char *buf, size_t len, struct pd_init_conf *ret);
void pd_init_conf_release(struct pd_init_conf *c);
