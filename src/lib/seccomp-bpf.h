/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp-bpf policy every sandboxed command runs under. The policy is written with
 * libseccomp (seccomp-policy.c) and compiled into BPF at build time (seccomp-gen writes
 * seccomp-program.c); at run time libpaddock only holds that program and loads it with one
 * seccomp(2) call just before execve — no per-sandbox or per-exec compilation.
 */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>

#include "paddock/paddock.h"

struct pd_seccomp_prog {
	struct sock_filter *filter;
	unsigned short len;
	bool owned; /* filter is malloc'ed (policy build), not the embedded program */
};

/* The default deny policy, built now with libseccomp (docs/security.md lists each rule). */
int pd_seccomp_policy_build(struct pd_seccomp_prog *ret_prog, paddock_error *err);

/* The default deny policy as compiled at build time. Never fails; nothing to release. */
int pd_seccomp_build(struct pd_seccomp_prog *ret_prog, paddock_error *err);
void pd_seccomp_prog_release(struct pd_seccomp_prog *prog);
/*
 * Installs the program on the calling thread. Async-signal-safe (no allocation): called in
 * a forked child after no_new_privs, as the last step before execve. Returns 0 or -errno.
 */
int pd_seccomp_load(const struct pd_seccomp_prog *prog);

/* Generated at build time (seccomp-program.c). */
extern const struct sock_filter pd_seccomp_default_filter[];
extern const unsigned short pd_seccomp_default_len;
