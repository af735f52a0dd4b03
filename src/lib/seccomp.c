/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run-time half of seccomp: hand out the program compiled at build time, load it, and answer
 * the calls it denies. See seccomp-policy.c for the rules and seccomp-bpf.h for how the
 * halves meet.
 *
 * A denied call reaches its sandbox's init as a user notification (seccomp_unotify(2)); init
 * answers it here with the errno of the rule that matched and reports it to the supervisor
 * (init-run.c). The calls that wait for an answer are the sandbox's own: a command, or init
 * itself (which, confined too, must never make one: it would wait for its own answer).
 */
#include "seccomp-bpf.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
/* Linux 6.6 (include/uapi/linux/seccomp.h); Debian 12's headers predate it */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS _IOW('!', 4, uint64_t)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* x86 syscall numbers the errno choice depends on (as the filter sees them) */
#define X32_SYSCALL_BIT	   0x40000000
#define NR_X86_64_SOCKET   41
#define NR_I386_SOCKET	   359
#define NR_I386_SOCKETCALL 102

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

int pd_seccomp_load(const struct pd_seccomp_prog *prog, int *ret_listener)
{
	long fd;

	if (!prog || !prog->filter || prog->len == 0 || !ret_listener)
		return -EINVAL;

	struct sock_fprog fprog = { .len = prog->len, .filter = prog->filter };

	/*
	 * No TSYNC (one thread), no SPEC_ALLOW (speculation mitigations stay on). The listener
	 * is close-on-exec from birth.
	 */
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		     &fprog);
	if (fd < 0)
		return -errno;
	/*
	 * The caller of a denied call sleeps until init answers: with a synchronous wake-up the
	 * kernel switches straight to init on the same CPU, and back. COMPAT(kernel 6.6): before
	 * it the ioctl fails and the ordinary wake-up works as well, only slower.
	 */
	(void)ioctl((int)fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	*ret_listener = (int)fd;
	return 0;
}

static bool is_socket(uint32_t arch, int32_t nr)
{
	switch (arch) {
	case AUDIT_ARCH_X86_64:
		return nr == NR_X86_64_SOCKET || nr == (NR_X86_64_SOCKET | X32_SYSCALL_BIT);
	case AUDIT_ARCH_I386:
		return nr == NR_I386_SOCKET || nr == NR_I386_SOCKETCALL;
	default:
		return false;
	}
}

int pd_seccomp_denied_errno(uint32_t arch, int32_t nr, const uint64_t args[6])
{
	if (!is_socket(arch, nr))
		return EPERM;
	/* i386's socketcall(SYS_SOCKET, args) has its family in memory: a family it is not */
	if (arch == AUDIT_ARCH_I386 && nr == NR_I386_SOCKETCALL)
		return EAFNOSUPPORT;
	return args[0] == AF_NETLINK ? EPROTONOSUPPORT : EAFNOSUPPORT;
}

int pd_seccomp_receive(int listener, struct pd_seccomp_denial *ret)
{
	struct seccomp_notif n;
	uint64_t args[6];

	/* the kernel refuses a buffer that is not zeroed */
	memset(&n, 0, sizeof(n));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0)
		return -errno; /* ENOENT: the caller was killed or interrupted meanwhile */
	for (size_t i = 0; i < 6; i++)
		args[i] = n.data.args[i];
	*ret = (struct pd_seccomp_denial){
		.id = n.id,
		.arch = n.data.arch,
		.nr = n.data.nr,
		.pid = (int32_t)n.pid,
		.error = pd_seccomp_denied_errno(n.data.arch, n.data.nr, args),
	};
	return 0;
}

bool pd_seccomp_still_waiting(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int pd_seccomp_answer(int listener, const struct pd_seccomp_denial *d)
{
	struct seccomp_notif_resp resp = { .id = d->id, .val = 0, .error = -d->error };

	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return -errno; /* ENOENT: the caller is gone */
	return 0;
}
