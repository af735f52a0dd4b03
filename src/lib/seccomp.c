/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run-time half of seccomp: hand out the program compiled at build time and load it.
 * See seccomp-policy.c for the rules and seccomp-bpf.h for how the halves meet.
 */
#include "seccomp-bpf.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int pd_seccomp_build(struct pd_seccomp_prog *ret_prog, paddock_error *err)
{
	(void)err;
	*ret_prog = (struct pd_seccomp_prog){
		/* the kernel only reads it; sock_fprog's field is not const */
		.filter = (struct sock_filter *)pd_seccomp_default_filter,
		.len = pd_seccomp_default_len,
		.owned = false,
	};
	return 0;
}

void pd_seccomp_prog_release(struct pd_seccomp_prog *prog)
{
	if (!prog)
		return;
	if (prog->owned)
		free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
	prog->owned = false;
}

int pd_seccomp_load(const struct pd_seccomp_prog *prog)
{
	if (!prog || !prog->filter || prog->len == 0)
		return -EINVAL;

	struct sock_fprog fprog = { .len = prog->len, .filter = prog->filter };

	/* Flags 0: one thread (no TSYNC needed), and speculation mitigations stay on. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
		return -errno;
	return 0;
}
