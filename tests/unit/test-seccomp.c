/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp policy, tested for real: a forked child sets no_new_privs, loads the program
 * and tries denied and allowed calls; it sends one record per call over a pipe and the
 * parent checks them all, showing the expected and the actual result for each miss.
 *
 * Each denied call is made with arguments the kernel itself would refuse with another
 * errno (or, for personality, accept), so EPERM proves the filter, not missing privileges;
 * and nothing happens if the filter is broken and the call reaches the kernel as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "seccomp-bpf.h"
#include "util/cleanup.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define NETLINK_AUDIT	9
#define NETLINK_GENERIC 16

/* A path below /dev/null can never exist: an unfiltered call fails with ENOTDIR. */
#define NO_PATH "/dev/null/paddock-probe"

/* One call's outcome, written by the child in one write() (well below PIPE_BUF). */
struct probe_record {
	char name[64];
	long ret;
	int error; /* errno after a failed call, 0 after a successful one */
	int want;  /* the errno the policy must give, 0 for "must succeed" */
	int skipped;
};

static void report(int fd, const char *name, long ret, int error, int want)
{
	struct probe_record rec = { .ret = ret, .error = ret < 0 ? error : 0, .want = want };

	snprintf(rec.name, sizeof(rec.name), "%s", name);
	(void)!write(fd, &rec, sizeof(rec)); /* a lost record shows up as a missing check */
}

static void report_skip(int fd, const char *name)
{
	struct probe_record rec = { .skipped = 1 };

	snprintf(rec.name, sizeof(rec.name), "%s", name);
	(void)!write(fd, &rec, sizeof(rec));
}

#define PROBE(fd, name, want, expr)                                                                \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _ret = (long)(expr);                                                          \
		report((fd), (name), _ret, errno, (want));                                         \
	} while (0)

/* A raw clone() with no new stack: if it ever succeeds, the child leaves at once. */
static long raw_clone(unsigned long flags)
{
	long ret = syscall(SYS_clone, flags, NULL, NULL, NULL, 0);

	if (ret == 0)
		_exit(0);
	if (ret > 0)
		(void)waitpid((pid_t)ret, NULL, __WALL);
	return ret;
}

static long fork_and_wait(void)
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

static long start_thread(void)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, thread_main, NULL);

	if (r != 0) {
		errno = r;
		return -1;
	}
	(void)pthread_join(t, NULL);
	return 0;
}

#ifdef __x86_64__
/* An i386 syscall from 64-bit code, as an attacker would make one to dodge x86_64 rules. */
static long int80(long nr, long a0)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a0), "c"(0), "d"(0) : "memory");
	ret = (int)ret; /* the result is 32 bits wide */
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/*
 * In a grandchild: a kernel booted with ia32_emulation=false answers int 0x80 with
 * SIGSEGV, which is a skip, not a failure.
 */
static void probe_i386(int fd)
{
	fflush(NULL);
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		report(fd, "fork for i386 probes", -1, errno, 0);
		return;
	}
	if (pid == 0) {
		PROBE(fd, "i386 keyctl(invalid)", EPERM, int80(288, 0x7fffffff));
		PROBE(fd, "i386 mount(NULL)", EPERM, int80(21, 0));
		PROBE(fd, "i386 getpid", 0, int80(20, 0));
		_exit(0);
	}
	if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status))
		report_skip(fd, "i386 syscalls (no ia32 emulation)");
}
#endif

/* socket() that closes what it gets: -1 with errno, or 0 */
static long try_socket(unsigned long domain, int type, unsigned long protocol)
{
	long s = syscall(SYS_socket, domain, type | SOCK_CLOEXEC, protocol);

	if (s >= 0)
		(void)close((int)s);
	return s < 0 ? -1 : 0;
}

/* set-id modes everywhere a mode goes in; without them the same calls reach the kernel */
static void probe_setid(int fd)
{
	PROBE(fd, "chmod(04755)", EPERM, chmod(NO_PATH, 04755));
	PROBE(fd, "chmod(02755)", EPERM, chmod(NO_PATH, 02755));
	PROBE(fd, "chmod(0755) reaches the kernel", ENOTDIR, chmod(NO_PATH, 0755));
	/* unfiltered: EBADF */
	PROBE(fd, "fchmod(06755)", EPERM, fchmod(-1, 06755));
	PROBE(fd, "fchmod(0755) reaches the kernel", EBADF, fchmod(-1, 0755));
	PROBE(fd, "fchmod(04755 | 1 << 32)", EPERM,
	      syscall(SYS_fchmod, -1, (unsigned long)04755 | (1UL << 32)));
	PROBE(fd, "fchmodat(02755)", EPERM, fchmodat(AT_FDCWD, NO_PATH, 02755, 0));
	PROBE(fd, "fchmodat2(04755)", EPERM, syscall(SYS_fchmodat2, AT_FDCWD, NO_PATH, 04755, 0));
	PROBE(fd, "creat(04755)", EPERM, creat(NO_PATH, 04755));
	PROBE(fd, "open(O_CREAT, 04755)", EPERM,
	      syscall(SYS_open, NO_PATH, O_CREAT | O_WRONLY, 04755));
	PROBE(fd, "openat(O_CREAT, 02755)", EPERM,
	      openat(AT_FDCWD, NO_PATH, O_CREAT | O_WRONLY, 02755));
	PROBE(fd, "openat(O_CREAT, 0644) reaches the kernel", ENOTDIR,
	      openat(AT_FDCWD, NO_PATH, O_CREAT | O_WRONLY, 0644));
	PROBE(fd, "mkdir(02755)", EPERM, mkdir(NO_PATH, 02755));
	PROBE(fd, "mkdirat(04755)", EPERM, mkdirat(AT_FDCWD, NO_PATH, 04755));
	PROBE(fd, "mknod(S_IFREG | 04755)", EPERM, mknod(NO_PATH, S_IFREG | 04755, 0));
	PROBE(fd, "mknodat(S_IFREG | 02755)", EPERM,
	      mknodat(AT_FDCWD, NO_PATH, S_IFREG | 02755, 0));
	/* unfiltered: EFAULT for the NULL struct open_how */
	PROBE(fd, "openat2", ENOSYS, syscall(SYS_openat2, AT_FDCWD, NO_PATH, NULL, 24));
}

static void probe_sockets(int fd)
{
	static const struct {
		const char *name;
		int family;
	} denied[] = {
		{ "socket(AF_VSOCK)", AF_VSOCK },
		{ "socket(AF_PACKET)", AF_PACKET },
		{ "socket(AF_ALG)", AF_ALG },
		{ "socket(AF_KEY)", AF_KEY },
		{ "socket(AF_TIPC)", AF_TIPC },
		{ "socket(AF_RDS)", AF_RDS },
		{ "socket(AF_BLUETOOTH)", AF_BLUETOOTH },
		{ "socket(AF_X25)", AF_X25 },
		{ "socket(AF_CAN)", AF_CAN },
		{ "socket(AF_XDP)", AF_XDP },
		{ "socket(AF_UNSPEC)", AF_UNSPEC },
		{ "socket(AF_APPLETALK)", AF_APPLETALK },
		{ "socket(AF_MAX + 7)", AF_MAX + 7 },
	};
	struct rlimit cur;

	for (size_t i = 0; i < ELEMENTSOF(denied); i++)
		PROBE(fd, denied[i].name, EAFNOSUPPORT,
		      try_socket((unsigned)denied[i].family, SOCK_STREAM, 0));
	/* the kernel reads an int: the upper half must not hide a family */
	PROBE(fd, "socket(AF_VSOCK | 1 << 32)", EAFNOSUPPORT,
	      try_socket((unsigned long)AF_VSOCK | (1UL << 32), SOCK_STREAM, 0));
	PROBE(fd, "socket(AF_INET | 1 << 32)", EAFNOSUPPORT,
	      try_socket((unsigned long)AF_INET | (1UL << 32), SOCK_STREAM, 0));
	PROBE(fd, "socket(AF_NETLINK, NETLINK_AUDIT)", EPROTONOSUPPORT,
	      try_socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
	PROBE(fd, "socket(AF_NETLINK, NETLINK_GENERIC)", EPROTONOSUPPORT,
	      try_socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC));
	PROBE(fd, "socket(AF_NETLINK, NETLINK_ROUTE | 1 << 32)", EPROTONOSUPPORT,
	      try_socket(AF_NETLINK, SOCK_RAW, 1UL << 32));
	PROBE(fd, "socket(AF_UNIX)", 0, try_socket(AF_UNIX, SOCK_STREAM, 0));
	PROBE(fd, "socket(AF_INET)", 0, try_socket(AF_INET, SOCK_STREAM, 0));
	PROBE(fd, "socket(AF_INET6, SOCK_DGRAM)", 0, try_socket(AF_INET6, SOCK_DGRAM, 0));
	PROBE(fd, "socket(AF_NETLINK, NETLINK_ROUTE)", 0, try_socket(AF_NETLINK, SOCK_RAW, 0));
	PROBE(fd, "socket(AF_NETLINK, NETLINK_SOCK_DIAG)", 0, try_socket(AF_NETLINK, SOCK_RAW, 4));
	/* a socket that needs a protocol of another family still gets the kernel's answer */
	PROBE(fd, "socket(AF_INET, protocol 255) reaches the kernel", EPROTONOSUPPORT,
	      try_socket(AF_INET, SOCK_STREAM, 255));

	/* another process's limits: the parent's, set to what they are (a no-op if let through) */
	if (getrlimit(RLIMIT_NOFILE, &cur) < 0)
		report(fd, "getrlimit", -1, errno, 0);
	PROBE(fd, "prlimit64(parent, new limits)", EPERM,
	      syscall(SYS_prlimit64, getppid(), RLIMIT_NOFILE, &cur, NULL));
	PROBE(fd, "prlimit64(parent, read only)", 0,
	      syscall(SYS_prlimit64, getppid(), RLIMIT_NOFILE, NULL, &cur));
	PROBE(fd, "prlimit64(0, new limits)", 0,
	      syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &cur, NULL));
	PROBE(fd, "setrlimit", 0, setrlimit(RLIMIT_NOFILE, &cur));
}

/* What the responder saw of one denied call. */
struct denial_record {
	uint32_t arch;
	int32_t nr;
	int error;
};

/*
 * Plays init's part: answers every denied call on the listener with its errno, as
 * init-run.c does, and writes what it answered to `out`. Filtered itself (forked after the
 * load), as init is; it makes no call the policy denies.
 */
_Noreturn static void respond(int listener, int out)
{
	for (;;) {
		struct pollfd p = { .fd = listener, .events = POLLIN };
		struct pd_seccomp_denial d;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
			_exit(0);
		if (pd_seccomp_receive(listener, &d) < 0)
			continue;
		struct denial_record rec = { .arch = d.arch, .nr = d.nr, .error = d.error };
		(void)!write(out, &rec, sizeof(rec));
		(void)pd_seccomp_answer(listener, &d);
	}
}

static void run_probes(int fd, int denials, const struct pd_seccomp_prog *prog)
{
	_cleanup_close_ int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int p[2] = { -1, -1 };
	int n = 0, r, listener = -1;
	pid_t responder;

	PROBE(fd, "prctl(NO_NEW_PRIVS)", 0, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	if (pipe2(p, O_CLOEXEC) < 0)
		report(fd, "pipe2", -1, errno, 0);
	r = pd_seccomp_load(prog, &listener);
	report(fd, "pd_seccomp_load", r, -r, 0);
	if (r < 0)
		return;
	responder = fork();
	if (responder == 0)
		respond(listener, denials);
	(void)close(listener);
	(void)close(denials);
	report(fd, "fork the responder", responder, errno, 0);
	if (responder < 0)
		return;

	/* unfiltered: ENOTDIR (nothing below /dev/null), whatever our privileges */
	PROBE(fd, "mount", EPERM, mount(NULL, "/dev/null/paddock", NULL, 0, NULL));
	PROBE(fd, "umount2", EPERM, umount2("/dev/null/paddock", 0));
	PROBE(fd, "unshare(CLONE_NEWUSER)", EPERM, unshare(CLONE_NEWUSER));
	PROBE(fd, "setns(-1)", EPERM, setns(-1, 0));
	/* unfiltered: EOPNOTSUPP for an unknown operation */
	PROBE(fd, "keyctl(invalid)", EPERM, syscall(SYS_keyctl, 0x7fffffff, 0, 0, 0, 0));
	PROBE(fd, "bpf(invalid)", EPERM, syscall(SYS_bpf, -1, NULL, 0));
	PROBE(fd, "ptrace(ATTACH, 0)", EPERM, ptrace(PTRACE_ATTACH, 0, NULL, NULL));
	PROBE(fd, "io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 0, NULL));
	/* unfiltered: EINVAL for a size of 0 */
	PROBE(fd, "clone3", ENOSYS, syscall(SYS_clone3, NULL, 0));

	/* unfiltered: EINVAL, CLONE_THREAD without CLONE_SIGHAND (checked before anything) */
	static const struct {
		const char *name;
		unsigned long flag;
	} ns[] = {
		{ "clone(CLONE_NEWNS)", CLONE_NEWNS },
		{ "clone(CLONE_NEWUTS)", CLONE_NEWUTS },
		{ "clone(CLONE_NEWIPC)", CLONE_NEWIPC },
		{ "clone(CLONE_NEWUSER)", CLONE_NEWUSER },
		{ "clone(CLONE_NEWPID)", CLONE_NEWPID },
		{ "clone(CLONE_NEWNET)", CLONE_NEWNET },
		{ "clone(CLONE_NEWCGROUP)", CLONE_NEWCGROUP },
		{ "clone(CLONE_NEWTIME)", CLONE_NEWTIME },
	};
	for (size_t i = 0; i < ELEMENTSOF(ns); i++)
		PROBE(fd, ns[i].name, EPERM, raw_clone(ns[i].flag | CLONE_THREAD));

	/* unfiltered: ENOTTY, /dev/null is no terminal */
	PROBE(fd, "ioctl(TIOCSTI)", EPERM, ioctl(null_fd, TIOCSTI, NULL));
	PROBE(fd, "ioctl(TIOCSTI | 1 << 32)", EPERM,
	      syscall(SYS_ioctl, null_fd, (unsigned long)TIOCSTI | (1UL << 32), NULL));
	PROBE(fd, "ioctl(TIOCLINUX)", EPERM, ioctl(null_fd, TIOCLINUX, NULL));
	PROBE(fd, "ioctl(FIONREAD) on a pipe", 0, ioctl(p[0], FIONREAD, &n));

	/* unfiltered: all of these succeed */
	PROBE(fd, "personality(READ_IMPLIES_EXEC)", EPERM, personality(READ_IMPLIES_EXEC));
	PROBE(fd, "personality(ADDR_NO_RANDOMIZE)", EPERM, personality(ADDR_NO_RANDOMIZE));
	PROBE(fd, "personality(PER_LINUX32|MMAP_PAGE_ZERO)", EPERM,
	      personality(PER_LINUX32 | MMAP_PAGE_ZERO));
	PROBE(fd, "personality(0xfffffffe)", EPERM, personality(0xfffffffe));
	PROBE(fd, "personality(0x7fffffff)", EPERM, personality(0x7fffffff));
	PROBE(fd, "personality(1 << 32)", EPERM, syscall(SYS_personality, 1UL << 32));
	PROBE(fd, "personality(query)", 0, personality(0xffffffff));
	PROBE(fd, "personality(PER_LINUX32)", 0, personality(PER_LINUX32));
	PROBE(fd, "personality(PER_LINUX32|UNAME26)", 0, personality(PER_LINUX32 | UNAME26));
	PROBE(fd, "personality(UNAME26)", 0, personality(UNAME26));
	PROBE(fd, "personality(PER_LINUX)", 0, personality(PER_LINUX));

	probe_setid(fd);
	probe_sockets(fd);

	PROBE(fd, "getpid", 0, getpid());
	PROBE(fd, "fork", 0, fork_and_wait());
	/* glibc tries clone3 first and falls back to clone on ENOSYS */
	PROBE(fd, "pthread_create", 0, start_thread());

#ifdef __x86_64__
	/* x32 keyctl (250 | __X32_SYSCALL_BIT); unfiltered: EOPNOTSUPP, or ENOSYS without x32 */
	PROBE(fd, "x32 keyctl(invalid)", EPERM, syscall(0x40000000 | 250, 0x7fffffff, 0, 0, 0, 0));
	probe_i386(fd);
#endif
	(void)pd_close(p[0]);
	(void)pd_close(p[1]);
	(void)kill(responder, SIGKILL);
	(void)waitpid(responder, NULL, 0);
}

/*
 * cmocka catches crashes to report them and go on with the next test; in a child that would
 * run the rest of the suite a second time. A crash there must end the child.
 */
static void reset_crash_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS, SIGABRT };

	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		(void)signal(sigs[i], SIG_DFL);
}

static int read_record(int fd, struct probe_record *rec)
{
	size_t done = 0;

	while (done < sizeof(*rec)) {
		ssize_t n = read(fd, (char *)rec + done, sizeof(*rec) - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done == 0 ? 0 : -EIO;
		done += (size_t)n;
	}
	return 1;
}

static const char *errno_str(int e)
{
	const char *s = e ? strerrorname_np(e) : "0";

	return s ? s : "E?";
}

static void test_build(void **state)
{
	struct pd_seccomp_prog a = { 0 }, b = { 0 };
	paddock_error err = { 0 };

	(void)state;
	if (pd_seccomp_build(&a, &err) < 0)
		fail_msg("pd_seccomp_build: %s (%s)", err.msg, errno_str(err.code));
	assert_non_null(a.filter);
	assert_true(a.len > 0);
	assert_true(a.len <= BPF_MAXINSNS);

	/*
	 * The embedded program (compiled at build time) is exactly what the policy compiles
	 * to now: the two halves cannot drift apart.
	 */
	if (pd_seccomp_policy_build(&b, &err) < 0)
		fail_msg("pd_seccomp_policy_build: %s (%s)", err.msg, errno_str(err.code));
	assert_true(b.owned);
	assert_false(a.owned);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.filter, b.filter, a.len * sizeof(*a.filter));

	pd_seccomp_prog_release(&a);
	assert_null(a.filter);
	assert_int_equal(a.len, 0);
	pd_seccomp_prog_release(&a);
	pd_seccomp_prog_release(NULL);
	pd_seccomp_prog_release(&b);
}

static void test_load_rejects_empty(void **state)
{
	struct pd_seccomp_prog empty = { 0 };

	(void)state;
	int listener = -1;

	assert_int_equal(pd_seccomp_load(&empty, &listener), -EINVAL);
	assert_int_equal(pd_seccomp_load(NULL, &listener), -EINVAL);
	assert_int_equal(listener, -1);
}

/* Whether the responder answered a call of that name (and architecture) with that errno. */
static bool answered(const struct denial_record *recs, size_t n, const char *arch, const char *name,
		     int error)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = pd_seccomp_arch_name(recs[i].arch, recs[i].nr);
		const char *s = pd_seccomp_syscall_name(recs[i].arch, recs[i].nr);

		if (a && s && !strcmp(a, arch) && !strcmp(s, name) && recs[i].error == error)
			return true;
	}
	return false;
}

static void test_policy_in_child(void **state)
{
	struct pd_seccomp_prog prog = { 0 };
	paddock_error err = { 0 };
	struct probe_record rec;
	struct denial_record recs[256];
	size_t n_recs = 0;
	bool no_ia32 = false;
	int fds[2], dfds[2], status, failures = 0, checks = 0, r;
	pid_t pid;

	(void)state;
	if (pd_seccomp_build(&prog, &err) < 0)
		fail_msg("pd_seccomp_build: %s (%s)", err.msg, errno_str(err.code));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	/* big enough for every record: nobody reads it until the probes are done */
	assert_int_equal(pipe2(dfds, O_CLOEXEC), 0);
	(void)fcntl(dfds[1], F_SETPIPE_SZ, 1 << 16);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)close(fds[0]);
		(void)close(dfds[0]);
		reset_crash_signals();
		run_probes(fds[1], dfds[1], &prog);
		_exit(0);
	}
	(void)close(fds[1]);
	(void)close(dfds[1]);

	while ((r = read_record(fds[0], &rec)) > 0) {
		rec.name[sizeof(rec.name) - 1] = '\0';
		if (rec.skipped) {
			print_message("skipped: %s\n", rec.name);
			no_ia32 |= strstr(rec.name, "i386") != NULL;
			continue;
		}
		checks++;
		if (rec.want == 0 && rec.ret < 0) {
			print_error("%s: expected success, got ret=%ld errno=%s\n", rec.name,
				    rec.ret, errno_str(rec.error));
			failures++;
		} else if (rec.want != 0 && (rec.ret != -1 || rec.error != rec.want)) {
			print_error("%s: expected ret=-1 errno=%s, got ret=%ld errno=%s\n",
				    rec.name, errno_str(rec.want), rec.ret, errno_str(rec.error));
			failures++;
		}
	}
	(void)close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	pd_seccomp_prog_release(&prog);
	while (n_recs < ELEMENTSOF(recs) &&
	       read(dfds[0], &recs[n_recs], sizeof(recs[0])) == sizeof(recs[0]))
		n_recs++;
	(void)close(dfds[0]);

	/* the listener saw the calls the filter denied, by name and architecture */
	assert_true(answered(recs, n_recs, "x86_64", "mount", EPERM));
	assert_true(answered(recs, n_recs, "x86_64", "keyctl", EPERM));
	assert_true(answered(recs, n_recs, "x86_64", "socket", EAFNOSUPPORT));
	assert_true(answered(recs, n_recs, "x86_64", "socket", EPROTONOSUPPORT));
	assert_true(answered(recs, n_recs, "x86_64", "prlimit64", EPERM));
	assert_true(answered(recs, n_recs, "x86_64", "fchmodat2", EPERM));
	assert_true(answered(recs, n_recs, "x32", "keyctl", EPERM));
	if (!no_ia32)
		assert_true(answered(recs, n_recs, "i386", "mount", EPERM));
	/* the compatibility answers (ENOSYS) are the filter's own, off the record */
	assert_false(answered(recs, n_recs, "x86_64", "clone3", ENOSYS));
	assert_false(answered(recs, n_recs, "x86_64", "openat2", ENOSYS));

	assert_int_equal(r, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("probe child did not exit cleanly (status 0x%x) after %d checks", status,
			 checks);
	if (failures > 0)
		fail_msg("%d of %d checks failed", failures, checks);
	/*
	 * 3 setup + 9 denied + 8 clone + 4 ioctl + 11 personality + 17 set-id + 27 socket and
	 * prlimit + 3 allowed
	 */
	assert_true(checks >= 82);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_load_rejects_empty),
		cmocka_unit_test(test_policy_in_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
