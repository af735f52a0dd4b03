/* SPDX-License-Identifier: Apache-2.0 */
/*
 * try-syscall: a probe the integration tests run inside sandboxes. For each syscall the
 * seccomp policy denies (docs/security.md), and a few it must keep allowing, it makes the
 * call and prints one JSON object per line:
 *
 *   {"name":"mount","ret":-1,"errno":"EPERM"}
 *   {"name":"getpid","ret":2,"errno":null}
 *   {"name":"vhangup","skipped":true}
 *   {"name":"i386_mount","signal":"SIGSEGV"}       (the probe died of a signal)
 *
 * Usage: try-syscall [NAME...]   (no NAME: every probe; --list: the names)
 * Exit status: 0 when every probe ran, whatever the results; 2 for an unknown name.
 *
 * SECURITY: it must be harmless outside a sandbox, as root too, in case the policy is not
 * in force (or a test runs it on the host by mistake). So every call gets arguments the
 * kernel rejects before it does anything: a bad magic, bad flags, an invalid clock, a NULL
 * pointer the kernel reads before acting, or a path below /dev/null (which can never
 * exist). Each call's comment says what it returns unsandboxed; where the kernel allows,
 * that is not EPERM, so a test can tell the policy's answer from a missing capability's.
 * The few that can succeed (clone with CLONE_NEWUSER, personality, ptrace of our own
 * child) only change the probe's own throwaway child, and every probe runs in such a child.
 * vhangup, which would hang up the caller's terminal, and ptrace on PID 1 run only with
 * PADDOCK_PROBE_INSIDE=1.
 *
 * Standalone: links only libc and builds against glibc 2.36 headers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Syscalls newer than the oldest headers we build with (x86_64 numbers). */
#ifdef __x86_64__
#ifndef __NR_kexec_file_load
#define __NR_kexec_file_load 320
#endif
#ifndef __NR_bpf
#define __NR_bpf 321
#endif
#ifndef __NR_userfaultfd
#define __NR_userfaultfd 323
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_fspick
#define __NR_fspick 433
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Cannot exist: nothing lives below a character device. */
#define NO_PATH "/dev/null/paddock-probe"
/* A bit no flags argument of these syscalls defines. */
#define BAD_FLAGS 0x80000000UL
/* A clock id past every valid one (negative ids are CPU and fd clocks). */
#define BAD_CLOCK 0x7fff
/* quotactl(): Q_GETINFO (read-only) for quota type 0xff, refused as >= MAXQUOTAS. */
#define BAD_QUOTA_CMD ((0x800005U << 8) | 0xffU)
/*
 * (clock_)adjtimex(): the kernel's ADJ_ADJTIME without ADJ_OFFSET_SINGLESHOT (bit 0), refused
 * first, before the capability check and before anything is set.
 */
#define BAD_TIMEX_MODES 0x8000U

/* PADDOCK_PROBE_INSIDE=1: we are in a sandbox, so vhangup and ptrace(PID 1) may run. */
static bool arg_inside;

/* For calls that return an fd: never keep one. */
static long closing(long ret)
{
	if (ret >= 0)
		(void)close((int)ret);
	return ret;
}

/* ---- denied: loading and replacing the kernel ---------------------------------------- */

static long probe_init_module(void)
{
	/* unsandboxed: ENOEXEC, an image of 0 bytes (or EPERM) */
	return syscall(__NR_init_module, NULL, 0UL, "");
}

static long probe_finit_module(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return syscall(__NR_finit_module, -1, "", BAD_FLAGS);
}

static long probe_delete_module(void)
{
	/* unsandboxed: EFAULT reading the NULL name (or EPERM) */
	return syscall(__NR_delete_module, NULL, 0);
}

static long probe_kexec_load(void)
{
	/*
	 * unsandboxed: EINVAL. Never nr_segments 0: that unloads the loaded kernel. Here both
	 * the flags and the segment count (over KEXEC_SEGMENT_MAX) are refused, and the NULL
	 * segment list could not be read anyway.
	 */
	return syscall(__NR_kexec_load, 0UL, 0x7fffUL, NULL, 0x8000UL);
}

#ifdef __NR_kexec_file_load
static long probe_kexec_file_load(void)
{
	/* unsandboxed: EINVAL for the flags (KEXEC_FILE_UNLOAD, bit 0, stays clear) */
	return syscall(__NR_kexec_file_load, -1, -1, 0UL, NULL, BAD_FLAGS);
}
#endif

static long probe_reboot(void)
{
	/* unsandboxed: EINVAL, the magic numbers are wrong (or EPERM) */
	return syscall(__NR_reboot, 0, 0, 0, NULL);
}

/* ---- denied: kernel attack surface --------------------------------------------------- */

static long probe_bpf(void)
{
	/* unsandboxed: EINVAL, no such command (or EPERM) */
	return syscall(__NR_bpf, 0x7fffffff, NULL, 0);
}

static long probe_perf_event_open(void)
{
	/* unsandboxed: EINVAL for the flags */
	return closing(syscall(__NR_perf_event_open, NULL, 0, -1, -1, BAD_FLAGS));
}

static long probe_userfaultfd(void)
{
	/* unsandboxed: EINVAL for the flags */
	return closing(syscall(__NR_userfaultfd, ~0U));
}

static long probe_io_uring_setup(void)
{
	/* unsandboxed: EFAULT, NULL params (or EPERM when io_uring is disabled) */
	return closing(syscall(__NR_io_uring_setup, 0, NULL));
}

static long probe_io_uring_enter(void)
{
	/* unsandboxed: EBADF */
	return syscall(__NR_io_uring_enter, -1, 0, 0, 0, NULL, 0);
}

static long probe_io_uring_register(void)
{
	/* unsandboxed: EINVAL or EBADF */
	return syscall(__NR_io_uring_register, -1, 0, NULL, 0);
}

static long probe_keyctl(void)
{
	/* unsandboxed: EOPNOTSUPP, no such operation */
	return syscall(__NR_keyctl, 0x7fffffff, 0, 0, 0, 0);
}

static long probe_add_key(void)
{
	/* unsandboxed: EFAULT reading the NULL type */
	return syscall(__NR_add_key, NULL, NULL, NULL, 0, 0);
}

static long probe_request_key(void)
{
	/* unsandboxed: EFAULT reading the NULL type */
	return syscall(__NR_request_key, NULL, NULL, NULL, 0);
}

/* ---- denied: file handles ------------------------------------------------------------ */

static long probe_open_by_handle_at(void)
{
	/* unsandboxed: EBADF or EFAULT (or EPERM) */
	return closing(syscall(__NR_open_by_handle_at, -1, NULL, O_RDONLY));
}

static long probe_name_to_handle_at(void)
{
	/* unsandboxed: EINVAL for the flags */
	return syscall(__NR_name_to_handle_at, AT_FDCWD, NO_PATH, NULL, NULL, (int)BAD_FLAGS);
}

/* ---- denied: mounts ------------------------------------------------------------------ */

static long probe_mount(void)
{
	/* unsandboxed: ENOTDIR, the target is looked up before any permission check */
	return mount(NULL, NO_PATH, NULL, 0, NULL);
}

static long probe_umount2(void)
{
	/* unsandboxed: EINVAL for the flags, checked first */
	return umount2(NO_PATH, (int)BAD_FLAGS);
}

static long probe_pivot_root(void)
{
	/* unsandboxed: ENOTDIR (or EPERM) */
	return syscall(__NR_pivot_root, NO_PATH, NO_PATH);
}

static long probe_move_mount(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return syscall(__NR_move_mount, -1, NO_PATH, -1, NO_PATH, BAD_FLAGS);
}

static long probe_fsopen(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return closing(syscall(__NR_fsopen, "paddock-probe-nofs", BAD_FLAGS));
}

static long probe_fsconfig(void)
{
	/* unsandboxed: EINVAL or EBADF, no fs context */
	return syscall(__NR_fsconfig, -1, 0, NULL, NULL, 0);
}

static long probe_fsmount(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return closing(syscall(__NR_fsmount, -1, BAD_FLAGS, 0));
}

static long probe_fspick(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return closing(syscall(__NR_fspick, -1, NO_PATH, BAD_FLAGS));
}

static long probe_open_tree(void)
{
	/* unsandboxed: EINVAL for the flags */
	return closing(syscall(__NR_open_tree, -1, NO_PATH, BAD_FLAGS));
}

static long probe_mount_setattr(void)
{
	/* unsandboxed: EINVAL for the flags */
	return syscall(__NR_mount_setattr, -1, NO_PATH, BAD_FLAGS, NULL, 0);
}

/* ---- denied: namespaces -------------------------------------------------------------- */

static long probe_unshare(void)
{
	/*
	 * unsandboxed: EINVAL, CLONE_VFORK means nothing to unshare and is refused before the
	 * capability check, so even without privileges the answer is not the policy's EPERM
	 */
	return unshare(CLONE_NEWNS | CLONE_VFORK);
}

static long probe_setns(void)
{
	/* unsandboxed: EBADF */
	return setns(-1, 0);
}

static long probe_clone_newuser(void)
{
	/* unsandboxed: usually succeeds; the new process leaves at once */
	long ret =
		syscall(__NR_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, 0);

	if (ret == 0)
		_exit(0);
	if (ret > 0)
		(void)waitpid((pid_t)ret, NULL, 0);
	return ret;
}

static long probe_clone3(void)
{
	/* unsandboxed: EINVAL, a size of 0; the policy answers ENOSYS whatever the arguments */
	return syscall(__NR_clone3, NULL, 0);
}

/* ---- denied: other processes --------------------------------------------------------- */

static long probe_ptrace(void)
{
	pid_t target = 1;
	long ret;
	int saved;

	/*
	 * Inside, the target is the sandbox's init. Unsandboxed it is a child of our own,
	 * never the host's init: unsandboxed the call succeeds.
	 */
	if (!arg_inside) {
		target = fork();
		if (target < 0)
			return -1;
		if (target == 0) {
			pause();
			_exit(0);
		}
	}
	ret = ptrace(PTRACE_ATTACH, target, NULL, NULL);
	saved = errno;
	if (ret == 0)
		(void)ptrace(PTRACE_DETACH, target, NULL, NULL);
	if (!arg_inside) {
		(void)kill(target, SIGKILL);
		(void)waitpid(target, NULL, 0);
	}
	errno = saved;
	return ret;
}

static long probe_process_vm_readv(void)
{
	/* unsandboxed: 0, nothing to copy (and our own memory) */
	return syscall(__NR_process_vm_readv, getpid(), NULL, 0UL, NULL, 0UL, 0UL);
}

static long probe_process_vm_writev(void)
{
	/* unsandboxed: 0, nothing to copy (and our own memory) */
	return syscall(__NR_process_vm_writev, getpid(), NULL, 0UL, NULL, 0UL, 0UL);
}

static long probe_pidfd_getfd(void)
{
	/* unsandboxed: EBADF */
	return closing(syscall(__NR_pidfd_getfd, -1, 0, 0));
}

/* ---- denied: host-wide state --------------------------------------------------------- */

static long probe_acct(void)
{
	/* unsandboxed: ENOTDIR (or EPERM). Never NULL: that turns accounting off. */
	return acct(NO_PATH);
}

static long probe_swapon(void)
{
	/* unsandboxed: EINVAL for the flags, checked first */
	return swapon(NO_PATH, (int)BAD_FLAGS);
}

static long probe_swapoff(void)
{
	/* unsandboxed: ENOTDIR (or EPERM) */
	return swapoff(NO_PATH);
}

static long probe_settimeofday(void)
{
	/*
	 * unsandboxed: EINVAL, 2 000 000 microseconds. Raw: glibc's wrapper calls clock_settime.
	 * No timezone: the first settimeofday with one can warp the clock.
	 */
	struct timeval tv = { .tv_sec = 0, .tv_usec = 2000000 };

	return syscall(__NR_settimeofday, &tv, NULL);
}

static long probe_clock_settime(void)
{
	/* unsandboxed: EINVAL, no such clock (and the nanoseconds are out of range) */
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 2000000000L };

	return syscall(__NR_clock_settime, BAD_CLOCK, &ts);
}

static long probe_clock_adjtime(void)
{
	/* unsandboxed: EINVAL, no such clock (and bad modes) */
	struct timex tx = { .modes = BAD_TIMEX_MODES };

	return syscall(__NR_clock_adjtime, BAD_CLOCK, &tx);
}

static long probe_adjtimex(void)
{
	/* unsandboxed: EINVAL for the modes. Raw: glibc's adjtimex calls clock_adjtime. */
	struct timex tx = { .modes = BAD_TIMEX_MODES };

	return syscall(__NR_adjtimex, &tx);
}

static long probe_syslog(void)
{
	/* unsandboxed: EINVAL, no such action (or EPERM) */
	return syscall(__NR_syslog, 0x7fff, NULL, 0);
}

static long probe_quotactl(void)
{
	/* unsandboxed: EINVAL, quota type 0xff */
	return syscall(__NR_quotactl, BAD_QUOTA_CMD, NO_PATH, 0, NULL);
}

static long probe_quotactl_fd(void)
{
	/* unsandboxed: EINVAL, quota type 0xff */
	return syscall(__NR_quotactl_fd, -1, BAD_QUOTA_CMD, 0, NULL);
}

static long probe_vhangup(void)
{
	/* Only inside: as root on the host this hangs up the caller's terminal. */
	return syscall(__NR_vhangup);
}

static long probe_fanotify_init(void)
{
	/* unsandboxed: EINVAL for the flags (or EPERM) */
	return closing(syscall(__NR_fanotify_init, ~0U, 0U));
}

/* ---- denied: obsolete and x86-only ----------------------------------------------------- */

#ifdef __NR_lookup_dcookie
static long probe_lookup_dcookie(void)
{
	/* unsandboxed: ENOSYS (removed in 6.8), else EINVAL or EPERM */
	return syscall(__NR_lookup_dcookie, 0ULL, NULL, 0UL);
}
#endif
#ifdef __NR_nfsservctl
static long probe_nfsservctl(void)
{
	/* unsandboxed: ENOSYS */
	return syscall(__NR_nfsservctl, 0, NULL, NULL);
}
#endif
#ifdef __NR_uselib
static long probe_uselib(void)
{
	/* unsandboxed: ENOSYS or ENOTDIR */
	return syscall(__NR_uselib, NO_PATH);
}
#endif
#ifdef __NR_create_module
static long probe_create_module(void)
{
	/* unsandboxed: ENOSYS */
	return syscall(__NR_create_module, NULL, 0UL);
}
#endif
#ifdef __NR_get_kernel_syms
static long probe_get_kernel_syms(void)
{
	/* unsandboxed: ENOSYS */
	return syscall(__NR_get_kernel_syms, NULL);
}
#endif
#ifdef __NR_query_module
static long probe_query_module(void)
{
	/* unsandboxed: ENOSYS */
	return syscall(__NR_query_module, NULL, 0, NULL, 0UL, NULL);
}
#endif
#ifdef __NR__sysctl
static long probe_sysctl(void)
{
	/* unsandboxed: ENOSYS (removed in 5.5) */
	return syscall(__NR__sysctl, NULL);
}
#endif
#ifdef __NR_iopl
static long probe_iopl(void)
{
	/* unsandboxed: EINVAL, levels stop at 3 */
	return syscall(__NR_iopl, 7);
}
#endif
#ifdef __NR_ioperm
static long probe_ioperm(void)
{
	/* unsandboxed: EINVAL, an empty range */
	return syscall(__NR_ioperm, 0UL, 0UL, 0);
}
#endif

/* ---- denied by argument: terminals, personality --------------------------------------- */

/* A terminal to aim at: fd 0 if it is one, else /dev/tty, else fd 0 anyway. */
static int terminal_fd(void)
{
	int fd;

	if (isatty(0))
		return 0;
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	return fd >= 0 ? fd : 0;
}

static long probe_ioctl_tiocsti(void)
{
	/*
	 * unsandboxed: EFAULT. The kernel reads the character to inject from the NULL
	 * pointer after its permission checks and before injecting (or EIO, EPERM, ENOTTY).
	 */
	return ioctl(terminal_fd(), TIOCSTI, NULL);
}

static long probe_ioctl_tioclinux(void)
{
	/* unsandboxed: EFAULT reading the NULL subcode on a VT, else ENOTTY or EINVAL */
	return ioctl(terminal_fd(), TIOCLINUX, NULL);
}

static long probe_personality(void)
{
	/* unsandboxed: succeeds, in this throwaway child */
	return personality(READ_IMPLIES_EXEC);
}

#ifdef __x86_64__
/* An i386 syscall from 64-bit code: the rules must hold for this entry point too. */
static long int80(long nr, long a0, long a1)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a0), "c"(a1), "d"(0) : "memory");
	ret = (int)ret;
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static long probe_i386_mount(void)
{
	/*
	 * unsandboxed: EFAULT, the NULL target; or SIGSEGV when the kernel has no ia32
	 * emulation (then nothing to filter).
	 */
	return int80(21, 0, 0);
}

static long probe_x32_keyctl(void)
{
	/* unsandboxed: EOPNOTSUPP, or ENOSYS when the kernel has no x32 support */
	return syscall(0x40000000L | 250, 0x7fffffff, 0, 0, 0, 0);
}
#endif

/* ---- denied: set-id modes, socket families, others' limits ------------------------- */

static long probe_chmod_setuid(void)
{
	/* unsandboxed: ENOTDIR */
	return chmod(NO_PATH, 04755);
}

static long probe_fchmodat_setgid(void)
{
	/* unsandboxed: ENOTDIR */
	return fchmodat(AT_FDCWD, NO_PATH, 02755, 0);
}

static long probe_fchmodat2_setuid(void)
{
	/* unsandboxed: ENOTDIR (ENOSYS before Linux 6.6) */
	return syscall(__NR_fchmodat2, AT_FDCWD, NO_PATH, 04755, 0);
}

static long probe_open_creat_setuid(void)
{
	/* unsandboxed: ENOTDIR */
	return closing(openat(AT_FDCWD, NO_PATH, O_CREAT | O_WRONLY | O_CLOEXEC, 04755));
}

static long probe_mkdir_setgid(void)
{
	/* unsandboxed: ENOTDIR */
	return mkdir(NO_PATH, 02755);
}

static long probe_mknod_setuid(void)
{
	/* unsandboxed: ENOTDIR */
	return mknod(NO_PATH, S_IFREG | 04755, 0);
}

static long probe_openat2(void)
{
	/* unsandboxed: EFAULT, the NULL struct open_how */
	return closing(syscall(__NR_openat2, AT_FDCWD, NO_PATH, NULL, 24UL));
}

/* socket(family): unsandboxed, each succeeds where the kernel has the family */
static long socket_of(int family, int type, int protocol)
{
	return closing(socket(family, type | SOCK_CLOEXEC, protocol));
}

static long probe_socket_vsock(void)
{
	return socket_of(AF_VSOCK, SOCK_STREAM, 0);
}

static long probe_socket_packet(void)
{
	return socket_of(AF_PACKET, SOCK_DGRAM, 0);
}

static long probe_socket_bluetooth(void)
{
	return socket_of(AF_BLUETOOTH, SOCK_STREAM, 0);
}

static long probe_socket_alg(void)
{
	return socket_of(AF_ALG, SOCK_SEQPACKET, 0);
}

static long probe_socket_key(void)
{
	return socket_of(AF_KEY, SOCK_RAW, 2);
}

static long probe_socket_tipc(void)
{
	return socket_of(AF_TIPC, SOCK_RDM, 0);
}

static long probe_socket_rds(void)
{
	return socket_of(AF_RDS, SOCK_SEQPACKET, 0);
}

static long probe_socket_xdp(void)
{
	return socket_of(AF_XDP, SOCK_RAW, 0);
}

static long probe_socket_can(void)
{
	return socket_of(AF_CAN, SOCK_RAW, 1);
}

static long probe_socket_netlink_audit(void)
{
	return socket_of(AF_NETLINK, SOCK_RAW, 9);
}

static long probe_socket_netlink_netfilter(void)
{
	return socket_of(AF_NETLINK, SOCK_RAW, 12);
}

/*
 * prlimit on PID 1 (inside: the sandbox's init), to the limits it has: a no-op if the
 * policy lets it through. Inside only.
 */
static long probe_prlimit_init(void)
{
	struct rlimit cur;

	if (syscall(__NR_prlimit64, 1, RLIMIT_NOFILE, NULL, &cur) < 0)
		return -1;
	return syscall(__NR_prlimit64, 1, RLIMIT_NOFILE, &cur, NULL);
}

/* ---- allowed ------------------------------------------------------------------------- */

static long probe_socket_unix(void)
{
	return socket_of(AF_UNIX, SOCK_STREAM, 0);
}

static long probe_socket_inet6(void)
{
	return socket_of(AF_INET6, SOCK_DGRAM, 0);
}

static long probe_socket_netlink_route(void)
{
	return socket_of(AF_NETLINK, SOCK_RAW, 0);
}

static long probe_setrlimit_self(void)
{
	struct rlimit cur;

	if (getrlimit(RLIMIT_NOFILE, &cur) < 0)
		return -1;
	return setrlimit(RLIMIT_NOFILE, &cur);
}

static long probe_chmod_plain(void)
{
	/* a mode without set-id bits reaches the kernel: ENOTDIR here, not EPERM */
	long r = chmod(NO_PATH, 0755);

	if (r < 0 && errno == ENOTDIR)
		return 0;
	return r < 0 ? -1 : r;
}

static long probe_getpid(void)
{
	return getpid();
}

static long probe_fork(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errno = ECHILD;
		return -1;
	}
	return 0;
}

static void *thread_main(void *arg)
{
	return arg;
}

static long probe_pthread_create(void)
{
	/* glibc tries clone3 first and falls back to clone on ENOSYS */
	pthread_t t;
	int r = pthread_create(&t, NULL, thread_main, NULL);

	if (r != 0) {
		errno = r;
		return -1;
	}
	(void)pthread_join(t, NULL);
	return 0;
}

static long probe_personality_query(void)
{
	return personality(0xffffffff);
}

static long probe_personality_linux(void)
{
	return personality(PER_LINUX);
}

struct probe {
	const char *name;
	long (*fn)(void);
	bool inside_only;
};

static const struct probe probes[] = {
	{ "init_module", probe_init_module, false },
	{ "finit_module", probe_finit_module, false },
	{ "delete_module", probe_delete_module, false },
	{ "kexec_load", probe_kexec_load, false },
#ifdef __NR_kexec_file_load
	{ "kexec_file_load", probe_kexec_file_load, false },
#endif
	{ "reboot", probe_reboot, false },
	{ "bpf", probe_bpf, false },
	{ "perf_event_open", probe_perf_event_open, false },
	{ "userfaultfd", probe_userfaultfd, false },
	{ "io_uring_setup", probe_io_uring_setup, false },
	{ "io_uring_enter", probe_io_uring_enter, false },
	{ "io_uring_register", probe_io_uring_register, false },
	{ "keyctl", probe_keyctl, false },
	{ "add_key", probe_add_key, false },
	{ "request_key", probe_request_key, false },
	{ "open_by_handle_at", probe_open_by_handle_at, false },
	{ "name_to_handle_at", probe_name_to_handle_at, false },
	{ "mount", probe_mount, false },
	{ "umount2", probe_umount2, false },
	{ "pivot_root", probe_pivot_root, false },
	{ "move_mount", probe_move_mount, false },
	{ "fsopen", probe_fsopen, false },
	{ "fsconfig", probe_fsconfig, false },
	{ "fsmount", probe_fsmount, false },
	{ "fspick", probe_fspick, false },
	{ "open_tree", probe_open_tree, false },
	{ "mount_setattr", probe_mount_setattr, false },
	{ "unshare", probe_unshare, false },
	{ "setns", probe_setns, false },
	{ "clone_newuser", probe_clone_newuser, false },
	{ "clone3", probe_clone3, false },
	{ "ptrace", probe_ptrace, false },
	{ "process_vm_readv", probe_process_vm_readv, false },
	{ "process_vm_writev", probe_process_vm_writev, false },
	{ "pidfd_getfd", probe_pidfd_getfd, false },
	{ "acct", probe_acct, false },
	{ "swapon", probe_swapon, false },
	{ "swapoff", probe_swapoff, false },
	{ "settimeofday", probe_settimeofday, false },
	{ "clock_settime", probe_clock_settime, false },
	{ "clock_adjtime", probe_clock_adjtime, false },
	{ "adjtimex", probe_adjtimex, false },
	{ "syslog", probe_syslog, false },
	{ "quotactl", probe_quotactl, false },
	{ "quotactl_fd", probe_quotactl_fd, false },
	{ "vhangup", probe_vhangup, true },
	{ "fanotify_init", probe_fanotify_init, false },
#ifdef __NR_lookup_dcookie
	{ "lookup_dcookie", probe_lookup_dcookie, false },
#endif
#ifdef __NR_nfsservctl
	{ "nfsservctl", probe_nfsservctl, false },
#endif
#ifdef __NR_uselib
	{ "uselib", probe_uselib, false },
#endif
#ifdef __NR_create_module
	{ "create_module", probe_create_module, false },
#endif
#ifdef __NR_get_kernel_syms
	{ "get_kernel_syms", probe_get_kernel_syms, false },
#endif
#ifdef __NR_query_module
	{ "query_module", probe_query_module, false },
#endif
#ifdef __NR__sysctl
	{ "_sysctl", probe_sysctl, false },
#endif
#ifdef __NR_iopl
	{ "iopl", probe_iopl, false },
#endif
#ifdef __NR_ioperm
	{ "ioperm", probe_ioperm, false },
#endif
	{ "ioctl_tiocsti", probe_ioctl_tiocsti, false },
	{ "ioctl_tioclinux", probe_ioctl_tioclinux, false },
	{ "personality", probe_personality, false },
#ifdef __x86_64__
	{ "i386_mount", probe_i386_mount, false },
	{ "x32_keyctl", probe_x32_keyctl, false },
#endif
	/* allowed */
	{ "chmod_setuid", probe_chmod_setuid, false },
	{ "fchmodat_setgid", probe_fchmodat_setgid, false },
	{ "fchmodat2_setuid", probe_fchmodat2_setuid, false },
	{ "open_creat_setuid", probe_open_creat_setuid, false },
	{ "mkdir_setgid", probe_mkdir_setgid, false },
	{ "mknod_setuid", probe_mknod_setuid, false },
	{ "openat2", probe_openat2, false },
	{ "socket_vsock", probe_socket_vsock, false },
	{ "socket_packet", probe_socket_packet, false },
	{ "socket_bluetooth", probe_socket_bluetooth, false },
	{ "socket_alg", probe_socket_alg, false },
	{ "socket_key", probe_socket_key, false },
	{ "socket_tipc", probe_socket_tipc, false },
	{ "socket_rds", probe_socket_rds, false },
	{ "socket_xdp", probe_socket_xdp, false },
	{ "socket_can", probe_socket_can, false },
	{ "socket_netlink_audit", probe_socket_netlink_audit, false },
	{ "socket_netlink_netfilter", probe_socket_netlink_netfilter, false },
	{ "prlimit_init", probe_prlimit_init, true },
	/* allowed */
	{ "getpid", probe_getpid, false },
	{ "socket_unix", probe_socket_unix, false },
	{ "socket_inet6", probe_socket_inet6, false },
	{ "socket_netlink_route", probe_socket_netlink_route, false },
	{ "setrlimit_self", probe_setrlimit_self, false },
	{ "chmod_plain", probe_chmod_plain, false },
	{ "fork", probe_fork, false },
	{ "pthread_create", probe_pthread_create, false },
	{ "personality_query", probe_personality_query, false },
	{ "personality_linux", probe_personality_linux, false },
};

#define N_PROBES (sizeof(probes) / sizeof(probes[0]))

struct outcome {
	long ret;
	int error;
};

static const char *errno_name(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

/* Runs one probe in a child, so that whatever succeeds changes nothing here. */
static void run(const struct probe *p)
{
	struct outcome out = { 0 };
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	if (p->inside_only && !arg_inside) {
		printf("{\"name\":\"%s\",\"skipped\":true}\n", p->name);
		return;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		printf("{\"name\":\"%s\",\"error\":\"pipe2: %s\"}\n", p->name, errno_name(errno));
		return;
	}
	fflush(stdout); /* or the child's exit would repeat what is buffered */
	pid = fork();
	if (pid < 0) {
		printf("{\"name\":\"%s\",\"error\":\"fork: %s\"}\n", p->name, errno_name(errno));
		(void)close(fds[0]);
		(void)close(fds[1]);
		return;
	}
	if (pid == 0) {
		(void)close(fds[0]);
		errno = 0;
		out.ret = p->fn();
		out.error = out.ret < 0 ? errno : 0;
		(void)!write(fds[1], &out, sizeof(out)); /* the parent notices a short record */
		_exit(0);
	}
	(void)close(fds[1]);
	do
		n = read(fds[0], &out, sizeof(out));
	while (n < 0 && errno == EINTR);
	(void)close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;

	if (WIFSIGNALED(status) && n != (ssize_t)sizeof(out)) {
		const char *sig = sigabbrev_np(WTERMSIG(status));

		printf("{\"name\":\"%s\",\"signal\":\"SIG%s\"}\n", p->name, sig ? sig : "?");
	} else if (n != (ssize_t)sizeof(out)) {
		printf("{\"name\":\"%s\",\"error\":\"no result\"}\n", p->name);
	} else if (out.ret < 0) {
		printf("{\"name\":\"%s\",\"ret\":%ld,\"errno\":\"%s\"}\n", p->name, out.ret,
		       errno_name(out.error));
	} else {
		printf("{\"name\":\"%s\",\"ret\":%ld,\"errno\":null}\n", p->name, out.ret);
	}
}

static const struct probe *find(const char *name)
{
	for (size_t i = 0; i < N_PROBES; i++)
		if (strcmp(probes[i].name, name) == 0)
			return &probes[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *inside = secure_getenv("PADDOCK_PROBE_INSIDE");

	arg_inside = inside && strcmp(inside, "1") == 0;
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < N_PROBES; i++)
			printf("%s\n", probes[i].name);
		return 0;
	}
	/* every name is checked before anything runs */
	for (int i = 1; i < argc; i++) {
		if (!find(argv[i])) {
			fprintf(stderr, "try-syscall: unknown probe '%s' (see --list)\n", argv[i]);
			return 2;
		}
	}
	/* A closed stdout is reported by the exit status, not by dying of SIGPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);

	if (argc == 1)
		for (size_t i = 0; i < N_PROBES; i++)
			run(&probes[i]);
	else
		for (int i = 1; i < argc; i++) {
			const struct probe *p = find(argv[i]);

			if (p)
				run(p);
		}
	return fflush(stdout) == 0 ? 0 : 1;
}
