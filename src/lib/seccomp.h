/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp-bpf policy every sandboxed command runs under. Built once per sandbox (by
 * init, with libseccomp) into a BPF program held in memory; each command's child loads the
 * ready program with one seccomp(2) call just before execve — no per-exec compilation.
 */
#pragma once

#include <linux/filter.h>

#include "paddock/paddock.h"

struct pd_seccomp_prog {
	struct sock_filter *filter;
	unsigned short len;
};

/* Builds the default deny policy (docs/security.md lists each rule). */
int pd_seccomp_build(struct pd_seccomp_prog *ret_prog, paddock_error *err);
void pd_seccomp_prog_release(struct pd_seccomp_prog *prog);
/*
 * Installs the program on the calling thread. Async-signal-safe (no allocation): called in
 * a forked child after no_new_privs, as the last step before execve. Returns 0 or -errno.
 */
int pd_seccomp_load(const struct pd_seccomp_prog *prog);
