/* SPDX-License-Identifier: Apache-2.0 */
#include "caps.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fd.h"

int pd_caps_last_cap(void)
{
	_cleanup_close_ int fd = -EBADF;
	char buf[16] = { 0 };
	ssize_t n;
	long v;

	fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return CAP_LAST_CAP;
	n = pd_read_full(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return CAP_LAST_CAP;
	v = strtol(buf, NULL, 10);
	if (v < CAP_LAST_CAP || v > 63)
		return v > 63 ? 63 : CAP_LAST_CAP;
	return (int)v;
}

int pd_caps_drop_bounding(int last_cap)
{
	/* SECURITY: a capability left in the bounding set could be regained by exec. */
	for (int cap = 0; cap <= last_cap; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	return 0;
}

__attribute__((no_sanitize("address"))) static long sys(long nr, long a, long b, long c, long d,
							long e)
{
	long r = syscall(nr, a, b, c, d, e);

	return r < 0 ? -errno : r;
}

__attribute__((no_sanitize("address"))) int pd_caps_drop_to_user(uid_t uid, gid_t gid,
								 bool setgroups_allowed)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	long r;

	/*
	 * Raw syscalls: glibc's set*id wrappers may broadcast to "all threads" through state
	 * shared with init, which this CLONE_VM child must not touch.
	 */
	r = sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0 && r != -EINVAL)
		return (int)r;
	if ((r = sys(SYS_prctl, PR_SET_KEEPCAPS, 0, 0, 0, 0)) < 0)
		return (int)r;
	if (setgroups_allowed && (r = sys(SYS_setgroups, 0, 0, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_setresgid, gid, gid, gid, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_setresuid, uid, uid, uid, 0, 0)) < 0)
		return (int)r;
	/* Rootless, the uid did not change, so nothing was cleared for us: do it. */
	if ((r = sys(SYS_capset, (long)&hdr, (long)data, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_capget, (long)&hdr, (long)data, 0, 0, 0)) < 0)
		return (int)r;
	if (data[0].effective | data[0].permitted | data[0].inheritable | data[1].effective |
	    data[1].permitted | data[1].inheritable)
		return -EPERM;
	/* SECURITY: CAP_SYS_ADMIN is bit 21; init emptied the bounding set, so this fails */
	if (sys(SYS_prctl, PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
		return -EPERM;
	return 0;
}

int pd_caps_limit_bounding(int last_cap, uint64_t keep)
{
	for (int cap = 0; cap <= last_cap && cap < 64; cap++)
		if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return -errno;
	return 0;
}

__attribute__((no_sanitize("address"))) int pd_caps_become_root(bool setgroups_allowed)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {
		{ .effective = (uint32_t)PD_CAPS_ROOT, .permitted = (uint32_t)PD_CAPS_ROOT },
		{ .effective = (uint32_t)(PD_CAPS_ROOT >> 32),
		  .permitted = (uint32_t)(PD_CAPS_ROOT >> 32) },
	};
	long r;

	r = sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0 && r != -EINVAL)
		return (int)r;
	if (setgroups_allowed && (r = sys(SYS_setgroups, 0, 0, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_setresgid, 0, 0, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_setresuid, 0, 0, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_capset, (long)&hdr, (long)data, 0, 0, 0)) < 0)
		return (int)r;
	if ((r = sys(SYS_capget, (long)&hdr, (long)data, 0, 0, 0)) < 0)
		return (int)r;
	if (data[0].permitted != (uint32_t)PD_CAPS_ROOT ||
	    data[0].effective != (uint32_t)PD_CAPS_ROOT || data[0].inheritable)
		return -EPERM;
	if (data[1].permitted | data[1].effective | data[1].inheritable)
		return -EPERM;
	/* SECURITY: init limited the bounding set to PD_CAPS_ROOT: nothing else comes back */
	if (sys(SYS_prctl, PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0 ||
	    sys(SYS_prctl, PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) != 0)
		return -EPERM;
	return 0;
}

int pd_caps_keep_across_exec(int last_cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	data[0].inheritable = data[0].permitted;
	data[1].inheritable = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	for (int cap = 0; cap <= last_cap && cap < 64; cap++) {
		if (!(data[cap / 32].permitted & (1u << (cap % 32))))
			continue;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
			return -errno;
	}
	return 0;
}

int pd_caps_clear_inherited(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	data[0].inheritable = 0;
	data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}
