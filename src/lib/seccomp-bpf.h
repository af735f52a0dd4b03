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
#include <stdint.h>

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
 * Installs the program on the calling thread, with a user-notification listener: the calls
 * the policy denies wait until someone answers on *ret_listener (close-on-exec), with
 * pd_seccomp_receive() and pd_seccomp_answer(); with no listener left open they fail with
 * ENOSYS. init loads it on itself (init-run.c). Returns 0 or -errno.
 */
int pd_seccomp_load(const struct pd_seccomp_prog *prog, int *ret_listener);

/* One denied call waiting for its answer. */
struct pd_seccomp_denial {
	uint64_t id;   /* the kernel's cookie for it */
	uint32_t arch; /* AUDIT_ARCH_X86_64 (x32: nr has bit 30 set) or AUDIT_ARCH_I386 */
	int32_t nr;    /* the syscall number as the filter saw it */
	int32_t pid;   /* the caller, in the listener's pid namespace; 0 if not visible there */
	int error;     /* what the call will fail with (pd_seccomp_denied_errno()) */
};

/*
 * The errno a denied call gets, as the policy's rule says: EAFNOSUPPORT for a socket family
 * (EPROTONOSUPPORT for a netlink protocol), EPERM for everything else.
 */
int pd_seccomp_denied_errno(uint32_t arch, int32_t nr, const uint64_t args[6]);
/*
 * Takes the next denied call off the listener (call it when poll() says it is readable:
 * without one pending it waits). -ENOENT when its caller was killed meanwhile.
 */
int pd_seccomp_receive(int listener, struct pd_seccomp_denial *ret);
/* Whether the call is still waiting (its pid still names its caller). */
bool pd_seccomp_still_waiting(int listener, uint64_t id);
/* Fails the call with d->error. -ENOENT when its caller is gone. */
int pd_seccomp_answer(int listener, const struct pd_seccomp_denial *d);

/*
 * The name of a syscall of an architecture the filter knows ("x86_64", "i386", "x32" from
 * pd_seccomp_arch_name()); NULL for a number no table has. Generated at build time
 * (seccomp-names.c), in libpaddock only: the init image never names a syscall.
 */
const char *pd_seccomp_syscall_name(uint32_t arch, int32_t nr);
const char *pd_seccomp_arch_name(uint32_t arch, int32_t nr);

/* Generated at build time (seccomp-program.c). */
extern const struct sock_filter pd_seccomp_default_filter[];
extern const unsigned short pd_seccomp_default_len;
