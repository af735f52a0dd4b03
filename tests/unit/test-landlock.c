/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Landlock, tested for real: the parent builds the ruleset as init would (that does not
 * restrict it), a forked child enforces it after no_new_privs and tries reads and writes,
 * reporting each over a pipe; the parent checks them, showing both sides of each miss.
 *
 * Layout, under $TMPDIR: rw/ (a rw path), other/ (not one) holding rwfile (a rw path that is
 * a regular file, so the file-rights mask is exercised) and existing. Every write the
 * policy must deny targets other/, so a broken policy harms nothing.
 *
 * Without Landlock the tests skip, unless PADDOCK_TEST_MUST_WORK=1. The fallback (no Landlock:
 * -EOPNOTSUPP) is forced by re-executing this binary under a seccomp filter that makes
 * landlock_create_ruleset fail with ENOSYS, as on a kernel built without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "landlock.h"
#include "util/cleanup.h"

struct dirs {
	char base[256]; /* mkdtemp()'d */
	char rw[300];
	char other[300];
	char rwfile[320];
	char existing[320];
};

/* One operation's outcome, written by the child in one write() (well below PIPE_BUF). */
struct probe_record {
	char name[48];
	int error; /* 0 when the operation succeeded */
	int want;  /* the errno the policy must give, 0 for "must succeed" */
};

static bool must_work(void)
{
	const char *v = secure_getenv("PADDOCK_TEST_MUST_WORK");

	return v && strcmp(v, "1") == 0;
}

/* Skips the calling test when Landlock is missing, or fails it under PADDOCK_TEST_MUST_WORK=1. */
static int require_landlock(void)
{
	int abi = pd_landlock_abi();

	if (abi == 0 && must_work())
		fail_msg("landlock is unavailable and PADDOCK_TEST_MUST_WORK=1");
	if (abi == 0)
		skip();
	return abi;
}

static const char *errno_str(int e)
{
	const char *s = e ? strerrorname_np(e) : "0";

	return s ? s : "E?";
}

static void report(int fd, const char *name, int error, int want)
{
	struct probe_record rec = { .error = error, .want = want };

	snprintf(rec.name, sizeof(rec.name), "%s", name);
	(void)!write(fd, &rec, sizeof(rec)); /* a lost record shows up as a missing check */
}

/* 0 or the errno of creating (or opening, without O_CREAT in flags) and writing a file. */
static int try_write(const char *dir, const char *name, int flags)
{
	int dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd, e = 0;

	if (dir_fd < 0)
		return errno;
	fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC | flags, 0600);
	if (fd < 0)
		e = errno;
	else if (write(fd, "x", 1) != 1)
		e = errno ? errno : EIO;
	(void)pd_close(fd);
	(void)pd_close(dir_fd);
	return e;
}

static int try_read(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;

	if (fd < 0)
		return errno;
	if (read(fd, buf, sizeof(buf)) < 0)
		e = errno;
	(void)pd_close(fd);
	return e;
}

static int errno_of(int r)
{
	return r < 0 ? errno : 0;
}

static void run_probes(int fd, const struct dirs *d, int ruleset_fd, const char *readable)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	char path[400];
	int r;

	/* cmocka's crash handlers would run the rest of the suite in this child */
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
		(void)signal(sigs[i], SIG_DFL);

	report(fd, "prctl(NO_NEW_PRIVS)", errno_of(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)), 0);
	r = pd_landlock_apply(ruleset_fd);
	report(fd, "pd_landlock_apply", -r, 0);
	if (r < 0)
		return;

	report(fd, "create a file in rw/", try_write(d->rw, "new", O_CREAT | O_EXCL), 0);
	snprintf(path, sizeof(path), "%s/newdir", d->rw);
	report(fd, "mkdir in rw/", errno_of(mkdir(path, 0700)), 0);
	snprintf(path, sizeof(path), "%s/new", d->rw);
	char to[400];
	snprintf(to, sizeof(to), "%s/renamed", d->rw);
	report(fd, "rename within rw/", errno_of(rename(path, to)), 0);
	report(fd, "unlink in rw/", errno_of(unlink(to)), 0);

	report(fd, "create a file in other/", try_write(d->other, "new", O_CREAT | O_EXCL), EACCES);
	snprintf(path, sizeof(path), "%s/newdir", d->other);
	report(fd, "mkdir in other/", errno_of(mkdir(path, 0700)), EACCES);
	report(fd, "write other/existing", try_write(d->other, "existing", 0), EACCES);
	report(fd, "read other/existing", try_read(d->existing), 0);
	report(fd, "write other/rwfile (a rw path)", try_write(d->other, "rwfile", O_TRUNC), 0);
	report(fd, "unlink other/rwfile", errno_of(unlink(d->rwfile)), EACCES);

	report(fd, "read a system file", try_read(readable), 0);
	report(fd, "write /dev/null", try_write("/dev", "null", 0), 0);
}

static int setup_dirs(void **state)
{
	struct dirs *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (!d)
		return -1;
	snprintf(d->base, sizeof(d->base), "%s/paddock-test-landlock-XXXXXX",
		 tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(d->base)) {
		free(d);
		return -1;
	}
	snprintf(d->rw, sizeof(d->rw), "%s/rw", d->base);
	snprintf(d->other, sizeof(d->other), "%s/other", d->base);
	snprintf(d->rwfile, sizeof(d->rwfile), "%s/rwfile", d->other);
	snprintf(d->existing, sizeof(d->existing), "%s/existing", d->other);
	*state = d; /* from here on the teardown cleans up */
	if (mkdir(d->rw, 0700) < 0 || mkdir(d->other, 0700) < 0)
		return -1;
	fd = open(d->rwfile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	(void)pd_close(fd);
	fd = open(d->existing, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, "existing\n", 9) != 9) {
		(void)pd_close(fd);
		return -1;
	}
	(void)pd_close(fd);
	return 0;
}

/* Removes exactly what the tests may have made; anything else left is a bug to notice. */
static int teardown_dirs(void **state)
{
	static const char *const files[] = { "rw/new", "rw/renamed", "other/new", "other/rwfile",
					     "other/existing" };
	static const char *const subdirs[] = { "rw/newdir", "other/newdir", "rw", "other" };
	struct dirs *d = *state;
	char path[400];
	int r = 0;

	if (!d)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", d->base, files[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			r = -1;
	}
	for (size_t i = 0; i < ELEMENTSOF(subdirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", d->base, subdirs[i]);
		if (rmdir(path) < 0 && errno != ENOENT)
			r = -1;
	}
	if (rmdir(d->base) < 0)
		r = -1;
	free(d);
	return r;
}

static void test_abi(void **state)
{
	int abi = pd_landlock_abi();

	(void)state;
	assert_true(abi >= 0);
	assert_int_equal(pd_landlock_abi(), abi); /* cached, and stable */
	if (abi == 0 && must_work())
		fail_msg("landlock is unavailable and PADDOCK_TEST_MUST_WORK=1");
	print_message("landlock abi %d\n", abi);
}

static void test_ruleset_fd(void **state)
{
	paddock_error err = { 0 };
	int fd = -EBADF, flags;

	(void)state;
	require_landlock();
	if (pd_landlock_prepare(NULL, &fd, &err) < 0)
		fail_msg("pd_landlock_prepare: %s (%s)", err.msg, errno_str(err.code));
	flags = fcntl(fd, F_GETFD);
	(void)pd_close(fd);
	assert_true(flags >= 0);
	assert_true(flags & FD_CLOEXEC);
}

static void test_relative_path_rejected(void **state)
{
	static const char *const rw[] = { "workspace", NULL };
	paddock_error err = { 0 };
	int fd = -EBADF;

	(void)state;
	require_landlock();
	assert_int_equal(pd_landlock_prepare(rw, &fd, &err), -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(fd, -EBADF); /* out-parameter untouched on failure */
}

static void test_enforced_in_child(void **state)
{
	const struct dirs *d = *state;
	const char *const rw[] = { d->rw, d->rwfile, "/nonexistent/paddock-test", NULL };
	const char *readable = access("/etc/hostname", R_OK) == 0 ? "/etc/hostname" : "/etc/passwd";
	paddock_error err = { 0 };
	struct probe_record rec;
	int ruleset_fd = -EBADF, fds[2], status, failures = 0, checks = 0;
	ssize_t n;
	pid_t pid;

	require_landlock();
	if (pd_landlock_prepare(rw, &ruleset_fd, &err) < 0)
		fail_msg("pd_landlock_prepare: %s (%s)", err.msg, errno_str(err.code));
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)close(fds[0]);
		run_probes(fds[1], d, ruleset_fd, readable);
		_exit(0);
	}
	(void)close(fds[1]);
	(void)pd_close(ruleset_fd);

	/* records are written whole and are far below PIPE_BUF, so reads return whole ones */
	while ((n = read(fds[0], &rec, sizeof(rec))) == (ssize_t)sizeof(rec)) {
		rec.name[sizeof(rec.name) - 1] = '\0';
		checks++;
		if (rec.error != rec.want) {
			print_error("%s: expected %s, got %s\n", rec.name, errno_str(rec.want),
				    errno_str(rec.error));
			failures++;
		}
	}
	(void)close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);

	assert_int_equal(n, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("probe child did not exit cleanly (status 0x%x) after %d checks", status,
			 checks);
	if (failures > 0)
		fail_msg("%d of %d checks failed", failures, checks);
	assert_int_equal(checks, 14);
}

#define FORCED_FALLBACK_ARG "--forced-no-landlock"

/* Runs in the re-executed binary, where landlock_create_ruleset answers ENOSYS. */
static int forced_fallback_main(void)
{
	paddock_error err = { 0 };
	int fd = -EBADF, r;

	if (pd_landlock_abi() != 0) {
		fprintf(stderr, "abi: expected 0, got %d\n", pd_landlock_abi());
		return 1;
	}
	r = pd_landlock_prepare(NULL, &fd, &err);
	if (r != -EOPNOTSUPP || err.code != EOPNOTSUPP || err.msg[0] == '\0' || fd != -EBADF) {
		fprintf(stderr, "prepare: expected -EOPNOTSUPP with a message, got %d (%s) fd %d\n",
			r, err.msg, fd);
		return 1;
	}
	return 0;
}

static void test_forced_fallback(void **state)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ELEMENTSOF(insns), .filter = insns };
	int status;
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char arg0[] = "test-landlock", arg1[] = FORCED_FALLBACK_ARG;
		char *argv[] = { arg0, arg1, NULL };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(126);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("forced fallback: expected exit 0, got status 0x%x", status);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forced_fallback),
		cmocka_unit_test(test_abi),
		cmocka_unit_test(test_ruleset_fd),
		cmocka_unit_test(test_relative_path_rejected),
		cmocka_unit_test_setup_teardown(test_enforced_in_child, setup_dirs, teardown_dirs),
	};

	if (argc == 2 && strcmp(argv[1], FORCED_FALLBACK_ARG) == 0)
		return forced_fallback_main();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
