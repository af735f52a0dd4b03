/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroups, tested for real: as root on whichever backend the machine offers, children are
 * forked into pool slots far above the id-map slots (70000+), made to allocate, exceed
 * limits, fork and sleep, and the limits, counters, OOM fd, kill and prune are checked by
 * reading the control files back. The parsers are tested on crafted text, with no root.
 *
 * The v2 code that needs no controller (placement, lock, CLONE_INTO_CGROUP, attach,
 * cgroup.kill, cpu.stat, prune) also runs on a machine whose controllers are on v1, on its
 * unified hierarchy, through pd_cgroup_v2_open_at(PD_CGROUP_V2_NO_CONTROLLERS).
 *
 * Without a usable cgroup the tests skip, unless PADDOCK_TEST_MUST_WORK=1 as root. Every child
 * arms alarm() so nothing outlives a broken test; the test process is a child subreaper, so
 * orphans of the process trees come back to it and are reaped.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-internal.h"
#include "cgroup.h"
#include "util/cleanup.h"

#define SLOT_BASE     70000u /* idmap hands out 0..4095: never a live sandbox's slot */
#define MIB	      (1024u * 1024u)
#define CHILD_ALARM_S 30

#define CHECK(call, err)                                                                           \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		if (r_ < 0)                                                                        \
			fail_msg("%s = %d (%s): %s", #call, r_, strerror(-r_), (err).msg);         \
	} while (0)

static bool must_work(void)
{
	const char *v = secure_getenv("PADDOCK_TEST_MUST_WORK");

	return v && strcmp(v, "1") == 0;
}

static enum pd_cgroup_version require_cgroup(void)
{
	enum pd_cgroup_version v = pd_cgroup_probe();

	if (v == PD_CGROUP_NONE && must_work() && geteuid() == 0)
		fail_msg("no usable cgroup hierarchy and PADDOCK_TEST_MUST_WORK=1");
	if (v == PD_CGROUP_NONE)
		skip();
	return v;
}

/* The unified hierarchy, writable, for the no-controller v2 tests. */
static const struct pd_cgroup_hierarchy *require_unified(void)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();

	if (geteuid() != 0 || !l->v2.mount_point[0] ||
	    faccessat(AT_FDCWD, l->v2.mount_point, W_OK, AT_EACCESS) < 0) {
		if (must_work() && geteuid() == 0)
			fail_msg("no writable cgroup2 mount and PADDOCK_TEST_MUST_WORK=1");
		skip();
	}
	return &l->v2;
}

static const struct pd_cgroup_hierarchy *hier_of(enum pd_cgroup_controller c)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();

	if (l->version == PD_CGROUP_V2)
		return &l->v2;
	assert_true(l->v1_index[c] >= 0);
	return &l->v1[l->v1_index[c]];
}

static void slot_path(const struct pd_cgroup_hierarchy *h, unsigned slot, char *buf, size_t size)
{
	if (slot == UINT32_MAX)
		snprintf(buf, size, "%s/%s", h->mount_point, PD_CGROUP_POOL);
	else
		snprintf(buf, size, "%s/%s/%u", h->mount_point, PD_CGROUP_POOL, slot);
}

static bool slot_exists(const struct pd_cgroup_hierarchy *h, unsigned slot)
{
	char path[PATH_MAX + 32];
	struct stat st;

	slot_path(h, slot, path, sizeof(path));
	return stat(path, &st) == 0;
}

/* Reads a control file of a slot (UINT32_MAX: of the pool); -errno on failure. */
static int read_ctl(const struct pd_cgroup_hierarchy *h, unsigned slot, const char *file, char *buf,
		    size_t size)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	slot_path(h, slot, path, sizeof(path));
	strncat(path, "/", sizeof(path) - strlen(path) - 1);
	strncat(path, file, sizeof(path) - strlen(path) - 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	(void)pd_close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static void expect_ctl(enum pd_cgroup_controller c, unsigned slot, const char *file,
		       const char *want)
{
	char got[256];
	int r = read_ctl(hier_of(c), slot, file, got, sizeof(got));

	if (r < 0)
		fail_msg("read %s of slot %u: %s", file, slot, strerror(-r));
	if (strcmp(got, want) != 0)
		fail_msg("%s of slot %u: got '%.*s', want '%.*s'", file, slot,
			 (int)strcspn(got, "\n"), got, (int)strcspn(want, "\n"), want);
}

static bool has_ctl(enum pd_cgroup_controller c, unsigned slot, const char *file)
{
	char buf[256];

	return read_ctl(hier_of(c), slot, file, buf, sizeof(buf)) == 0;
}

static int count_procs(const struct pd_cgroup_hierarchy *h, unsigned slot)
{
	char buf[4096];
	int n = 0;

	if (read_ctl(h, slot, "cgroup.procs", buf, sizeof(buf)) < 0)
		return -1;
	for (const char *p = buf; *p; p++)
		n += *p == '\n';
	return n;
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/* ---- children ---- */

/* A child held before its work until released, so it can be attached first. */
struct child {
	pid_t pid;
	int go; /* write end: one byte releases the child */
};

/*
 * Closes every fd from 3 up but a and b. A forked child shares the open file descriptions of
 * the slot locks; init closes what it inherits at once, and so do our children.
 */
static void close_other_fds(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	(void)close_range(3, (unsigned)lo - 1, 0);
	(void)close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	(void)close_range((unsigned)hi + 1, ~0U, 0);
}

static struct child start_child(int (*fn)(long), long arg, int keep_fd)
{
	int go[2];
	pid_t pid;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		alarm(CHILD_ALARM_S);
		close_other_fds(go[0], keep_fd >= 3 ? keep_fd : go[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(120);
		_exit(fn(arg));
	}
	(void)pd_close(go[0]);
	return (struct child){ .pid = pid, .go = go[1] };
}

static void release_child(struct child *c)
{
	assert_int_equal(write(c->go, "g", 1), 1);
	c->go = pd_close(c->go);
}

static int wait_child(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void expect_exit(int status, int code)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != code)
		fail_msg("child: status 0x%x (signal %d), want exit %d", status,
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0, code);
}

static void expect_killed(int status)
{
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("child: status 0x%x, want SIGKILL", status);
}

/*
 * Touches `mib` MiB of fresh anonymous memory. Raw mmap and no ASan checks: neither an
 * allocator nor ASan's shadow of the range (1/8 more) may add to what the cgroup counts.
 */
__attribute__((no_sanitize_address)) static int touch_mib(long mib)
{
	size_t len = (size_t)mib * MIB;
	volatile char *p = (volatile char *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
						    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 2;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	return 0;
}

static int sleep_forever(long arg)
{
	(void)arg;
	pause();
	return 0;
}

/* Forks `n` children that sleep; exits with the number of forks refused with EAGAIN. */
static int fork_many(long n)
{
	int refused = 0;

	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			alarm(CHILD_ALARM_S);
			pause();
			_exit(0);
		}
		if (pid < 0 && errno == EAGAIN)
			refused++;
	}
	return refused;
}

/* Ready byte on fd, then sleep until killed. */
static void ready_and_sleep(int fd)
{
	alarm(CHILD_ALARM_S);
	(void)!write(fd, "r", 1);
	pause();
	_exit(0);
}

/* A tree: a sleeper, a setsid() sleeper, an orphaned setsid() grandchild, and itself. */
static int grow_tree(long ready_fd)
{
	int fd = (int)ready_fd;
	pid_t pid;

	if (fork() == 0)
		ready_and_sleep(fd);
	if (fork() == 0) {
		(void)setsid();
		ready_and_sleep(fd);
	}
	pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			(void)setsid();
			ready_and_sleep(fd);
		}
		_exit(0);
	}
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	ready_and_sleep(fd);
	return 0;
}

static struct pd_cgroup *open_slot(unsigned slot, uint64_t memory, uint64_t pids, double cpus)
{
	struct pd_cgroup_limits lim = { .memory_bytes = memory, .pids = pids, .cpus = cpus };
	struct pd_cgroup *cg = NULL;
	paddock_error err = { 0 };

	CHECK(pd_cgroup_open(slot, &lim, &cg, &err), err);
	assert_non_null(cg);
	return cg;
}

static struct pd_cgroup_stats stats_of(struct pd_cgroup *cg)
{
	struct pd_cgroup_stats st;
	paddock_error err = { 0 };

	CHECK(pd_cgroup_stats(cg, &st, &err), err);
	return st;
}

static void kill_all(struct pd_cgroup *cg)
{
	paddock_error err = { 0 };

	CHECK(pd_cgroup_kill_all(cg, &err), err);
	reap_all();
}

/* Runs fn(arg) in a child attached to cg; returns its wait status. */
static int run_in(struct pd_cgroup *cg, int (*fn)(long), long arg)
{
	paddock_error err = { 0 };
	struct child c = start_child(fn, arg, -1);

	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	return wait_child(c.pid);
}

/*
 * Runs fn(arg) in a child that joins cg by itself (pd_cgroup_join_self()) after giving up
 * root, as a sandbox's init joins from its own user namespace; returns its wait status.
 */
static int join_and_run(struct pd_cgroup *cg, int (*fn)(long), long arg)
{
	int fds[PD_CGROUP_JOIN_MAX];
	paddock_error err = { 0 };
	int n = pd_cgroup_join_fds(cg, fds, &err);
	pid_t pid;

	CHECK(n, err);
	assert_true(n >= 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		/* nobody: no right over the cgroup files but through the fds opened as root */
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(121);
		if (pd_cgroup_join_self(fds, (size_t)n, &err) < 0)
			_exit(122);
		_exit(fn(arg));
	}
	for (int i = 0; i < n; i++)
		pd_close(fds[i]);
	return wait_child(pid);
}

/* ---- parsers (no root needed) ---- */

static const char mountinfo_v1[] =
	"22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
	"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpuacct\n"
	"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"35 30 0:32 /docker/abc /sys/fs/cgroup/pi\\040ds rw - cgroup cgroup rw,pids\n"
	"39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	"41 30 0:38 / /again/memory rw - cgroup cgroup rw,memory\n"
	"garbage line\n"
	"42 30 0:39 / /x rw no-separator cgroup cgroup rw,pids\n";

static void test_parse_mountinfo_v1(void **state)
{
	static struct pd_cgroup_layout l;
	FILE *f = fmemopen((void *)mountinfo_v1, sizeof(mountinfo_v1) - 1, "r");
	const struct pd_cgroup_hierarchy *h;

	(void)state;
	assert_non_null(f);
	assert_int_equal(pd_cgroup_parse_mountinfo(f, &l), 0);
	fclose(f);
	assert_int_equal(l.n_v1, 4);
	/* ordered memory, pids, cpu, cpuacct: v1[0] holds the slot lock */
	assert_int_equal(l.v1_index[PD_CGROUP_MEMORY], 0);
	assert_int_equal(l.v1_index[PD_CGROUP_PIDS], 1);
	assert_int_equal(l.v1_index[PD_CGROUP_CPU], 2);
	assert_int_equal(l.v1_index[PD_CGROUP_CPUACCT], 3);
	assert_string_equal(l.v1[0].mount_point, "/sys/fs/cgroup/memory"); /* first mount wins */
	h = &l.v1[1];
	assert_string_equal(h->mount_point, "/sys/fs/cgroup/pi ds");
	assert_string_equal(h->mount_root, "/docker/abc");
	assert_int_equal(h->controllers, 1u << PD_CGROUP_PIDS);
	assert_string_equal(l.v2.mount_point, "/sys/fs/cgroup/unified");

	pd_cgroup_layout_decide(&l, "hugetlb\n");
	assert_int_equal(l.version, PD_CGROUP_V1);
	pd_cgroup_layout_decide(&l, NULL);
	assert_int_equal(l.version, PD_CGROUP_V1);
	pd_cgroup_layout_decide(&l, "cpuset cpu io memory hugetlb pids rdma misc\n");
	assert_int_equal(l.version, PD_CGROUP_V2);
}

/* A sandbox's cgroup path has a bounded buffer: a mount root too long for it is refused. */
static void test_long_mount_root(void **state)
{
	static struct pd_cgroup_hierarchy h;
	struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT, d = PD_CGROUP_DIR_INIT;
	paddock_error err = { 0 };
	bool created = false;

	(void)state;
	snprintf(h.mount_point, sizeof(h.mount_point), "/sys/fs/cgroup/memory");
	h.mount_root[0] = '/';
	memset(h.mount_root + 1, 'a', sizeof(d.cgpath));
	assert_int_equal(
		pd_cgroup_dir_open(&h, &pool, "memory", 7, PD_CGROUP_NO_LOCK, &d, &created, &err),
		-ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "/sys/fs/cgroup/memory"));
	assert_false(created);
	pd_cgroup_dir_release(&d);
}

static void test_parse_mountinfo_joint_and_v2(void **state)
{
	static const char joint[] =
		"5 1 0:5 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"6 1 0:6 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
		"7 1 0:7 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
	static const char v2only[] =
		"9 1 0:9 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
	static const char nothing[] = "9 1 0:9 / / rw - ext4 /dev/sda1 rw\n";
	static struct pd_cgroup_layout l;
	FILE *f;

	(void)state;
	f = fmemopen((void *)joint, sizeof(joint) - 1, "r");
	assert_int_equal(pd_cgroup_parse_mountinfo(f, &l), 0);
	fclose(f);
	assert_int_equal(l.n_v1, 3);
	assert_int_equal(l.v1_index[PD_CGROUP_MEMORY], 0);
	assert_int_equal(l.v1_index[PD_CGROUP_PIDS], 1);
	assert_int_equal(l.v1_index[PD_CGROUP_CPU], 2);
	assert_int_equal(l.v1_index[PD_CGROUP_CPUACCT], 2);
	assert_string_equal(l.v1[2].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
	pd_cgroup_layout_decide(&l, NULL);
	assert_int_equal(l.version, PD_CGROUP_V1);

	f = fmemopen((void *)v2only, sizeof(v2only) - 1, "r");
	assert_int_equal(pd_cgroup_parse_mountinfo(f, &l), 0);
	fclose(f);
	assert_int_equal(l.n_v1, 0);
	pd_cgroup_layout_decide(&l, "memory pids");
	assert_int_equal(l.version, PD_CGROUP_NONE); /* cpu missing */
	pd_cgroup_layout_decide(&l, "memory pids cpu");
	assert_int_equal(l.version, PD_CGROUP_V2);

	f = fmemopen((void *)nothing, sizeof(nothing) - 1, "r");
	assert_int_equal(pd_cgroup_parse_mountinfo(f, &l), 0);
	fclose(f);
	pd_cgroup_layout_decide(&l, NULL);
	assert_int_equal(l.version, PD_CGROUP_NONE);
}

static void test_parse_values(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(pd_cgroup_parse_u64("123\n", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(pd_cgroup_parse_u64("max\n", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(pd_cgroup_parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(pd_cgroup_parse_u64("18446744073709551616", &v), -EINVAL);
	assert_int_equal(pd_cgroup_parse_u64("-1\n", &v), -EINVAL);
	assert_int_equal(pd_cgroup_parse_u64("", &v), -EINVAL);
	assert_int_equal(pd_cgroup_parse_u64("1\n2\n", &v), -EINVAL);
	assert_int_equal(pd_cgroup_parse_u64("12 \n", &v), -EINVAL);

	static const char stat[] = "usage_usec 250\nuser_usec 200\nsystem_usec 50\nnr_periods 0\n";
	assert_int_equal(pd_cgroup_parse_key(stat, "user_usec", &v), 0);
	assert_int_equal(v, 200);
	assert_int_equal(pd_cgroup_parse_key(stat, "usage_usec", &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(pd_cgroup_parse_key(stat, "usage", &v), -ENODATA);
	assert_int_equal(pd_cgroup_parse_key(stat, "nr_throttled", &v), -ENODATA);
	assert_int_equal(pd_cgroup_parse_key("oom_kill 3", "oom_kill", &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(pd_cgroup_parse_key("oom_kill x\n", "oom_kill", &v), -EINVAL);

	assert_true(pd_cgroup_has_word("cpuset cpu io memory\n", "cpu"));
	assert_true(pd_cgroup_has_word("memory", "memory"));
	assert_false(pd_cgroup_has_word("cpuset io memory\n", "cpu"));
	assert_false(pd_cgroup_has_word("", "cpu"));
}

static void test_parse_proc_cgroup(void **state)
{
	static const char v1[] = "9:name=systemd:/\n8:pids:/paddock/7\n3:cpu,cpuacct:/paddock/7\n"
				 "4:memory:/process_api/abc\n0::/\n";
	static const char v2[] = "0::/paddock/7\n";

	(void)state;
	assert_true(pd_cgroup_proc_in(v1, "pids", "/paddock/7"));
	assert_true(pd_cgroup_proc_in(v1, "cpu", "/paddock/7"));
	assert_true(pd_cgroup_proc_in(v1, "cpuacct", "/paddock/7"));
	assert_false(pd_cgroup_proc_in(v1, "memory", "/paddock/7"));
	assert_false(pd_cgroup_proc_in(v1, "pids", "/paddock/70"));
	assert_false(pd_cgroup_proc_in(v1, "", "/paddock/7"));
	assert_true(pd_cgroup_proc_in(v2, "", "/paddock/7"));
	assert_false(pd_cgroup_proc_in(v2, "memory", "/paddock/7"));
	assert_false(pd_cgroup_proc_in("0::/paddock/7 (deleted)\n", "", "/paddock/7"));
	assert_false(pd_cgroup_proc_in("", "", "/"));
	assert_false(pd_cgroup_proc_in("garbage\n", "", "/"));
}

static void test_bad_limits(void **state)
{
	struct pd_cgroup_limits lim = { .cpus = NAN };
	struct pd_cgroup *cg = NULL;
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(pd_cgroup_open(SLOT_BASE, &lim, &cg, &err), -EINVAL);
	assert_string_equal(err.field, "limits.cpus");
	assert_null(cg);
	lim.cpus = -1;
	assert_int_equal(pd_cgroup_open(SLOT_BASE, &lim, &cg, &err), -EINVAL);
	lim.cpus = 0.001;
	assert_int_equal(pd_cgroup_open(SLOT_BASE, &lim, &cg, &err), -EINVAL);
	assert_string_equal(err.field, "limits.cpus");
	lim = (struct pd_cgroup_limits){ .memory_bytes = UINT64_MAX };
	assert_int_equal(pd_cgroup_open(SLOT_BASE, &lim, &cg, &err), -EINVAL);
	assert_string_equal(err.field, "limits.memory");
	assert_null(cg);
}

/* ---- the backend this machine offers ---- */

static void test_rootless_gets_none(void **state)
{
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* already rootless: pd_cgroup_probe() is NONE by construction */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pd_cgroup_limits lim = { 0 };
		struct pd_cgroup *cg = NULL;
		paddock_error err = { 0 };

		alarm(CHILD_ALARM_S);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		if (pd_cgroup_probe() != PD_CGROUP_NONE)
			_exit(11);
		if (pd_cgroup_open(SLOT_BASE, &lim, &cg, &err) != -EACCES || cg)
			_exit(12);
		if (pd_cgroup_prune(&err) != 0)
			_exit(13);
		_exit(0);
	}
	expect_exit(wait_child(pid), 0);
}

static void test_open_applies_limits(void **state)
{
	enum pd_cgroup_version v = require_cgroup();
	const struct pd_cgroup_layout *l = pd_cgroup_layout();
	unsigned slot = SLOT_BASE + 1;
	struct pd_cgroup *cg;

	(void)state;
	cg = open_slot(slot, 256 * MIB, 100, 1.5);
	assert_int_equal(pd_cgroup_version(cg), v);
	if (v == PD_CGROUP_V1) {
		for (size_t i = 0; i < l->n_v1; i++)
			assert_true(slot_exists(&l->v1[i], slot));
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", "268435456\n");
		if (has_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes"))
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   "268435456\n");
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.oom_control",
			   "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "100\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_period_us", "100000\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "150000\n");
		assert_int_equal(pd_cgroup_clone_fd(cg), -1);
	} else {
		assert_true(slot_exists(&l->v2, slot));
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.max", "268435456\n");
		if (has_ctl(PD_CGROUP_MEMORY, slot, "memory.swap.max"))
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.swap.max", "0\n");
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.oom.group", "1\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "100\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.max", "150000 100000\n");
		assert_true(pd_cgroup_clone_fd(cg) >= 0);
	}
	assert_true(pd_cgroup_oom_fd(cg) >= 0);
	pd_cgroup_free(cg);
}

static void test_reopen_overwrites_limits(void **state)
{
	enum pd_cgroup_version v = require_cgroup();
	unsigned slot = SLOT_BASE + 2;
	char unlimited[64];
	bool memsw;

	(void)state;
	pd_cgroup_free(open_slot(slot, 256 * MIB, 100, 1.5));
	/* lowering (the limit before memsw), then raising (memsw before the limit) */
	pd_cgroup_free(open_slot(slot, 64 * MIB, 10, 0.5));
	if (v == PD_CGROUP_V1) {
		memsw = has_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes");
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", "67108864\n");
		if (memsw)
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   "67108864\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "10\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "50000\n");
		pd_cgroup_free(open_slot(slot, 512 * MIB, 1000, 4));
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", "536870912\n");
		if (memsw)
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   "536870912\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "1000\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "400000\n");
		/* 0: unlimited, as the never-limited pool directory is */
		pd_cgroup_free(open_slot(slot, 0, 0, 0));
		assert_int_equal(read_ctl(hier_of(PD_CGROUP_MEMORY), UINT32_MAX,
					  "memory.limit_in_bytes", unlimited, sizeof(unlimited)),
				 0);
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", unlimited);
		if (memsw)
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   unlimited);
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "max\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "-1\n");
	} else {
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.max", "67108864\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "10\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.max", "50000 100000\n");
		pd_cgroup_free(open_slot(slot, 0, 0, 0));
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.max", "max\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "max\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.max", "max 100000\n");
	}
}

/*
 * A pooled sandbox's claim writes new limits to its open cgroup: lowering (v1: the limit before
 * memsw), raising (memsw first), with a member inside; the OOM fd and counters stay.
 */
static void test_set_limits(void **state)
{
	enum pd_cgroup_version v = require_cgroup();
	unsigned slot = SLOT_BASE + 14;
	struct pd_cgroup_limits lim = { .memory_bytes = 64 * MIB, .pids = 10, .cpus = 0.5 };
	struct pd_cgroup *cg;
	paddock_error err = { 0 };
	struct child c;
	int oom_fd;
	bool memsw;

	(void)state;
	cg = open_slot(slot, 256 * MIB, 100, 1.5);
	oom_fd = pd_cgroup_oom_fd(cg);
	c = start_child(sleep_forever, 0, -1);
	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	CHECK(pd_cgroup_set_limits(cg, &lim, &err), err);
	if (v == PD_CGROUP_V1) {
		memsw = has_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes");
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", "67108864\n");
		if (memsw)
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   "67108864\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "10\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "50000\n");
		lim = (struct pd_cgroup_limits){ .memory_bytes = 512 * MIB,
						 .pids = 1000,
						 .cpus = 4 };
		CHECK(pd_cgroup_set_limits(cg, &lim, &err), err);
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.limit_in_bytes", "536870912\n");
		if (memsw)
			expect_ctl(PD_CGROUP_MEMORY, slot, "memory.memsw.limit_in_bytes",
				   "536870912\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "1000\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.cfs_quota_us", "400000\n");
	} else {
		expect_ctl(PD_CGROUP_MEMORY, slot, "memory.max", "67108864\n");
		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "10\n");
		expect_ctl(PD_CGROUP_CPU, slot, "cpu.max", "50000 100000\n");
	}
	/* a bad value is refused before anything is written */
	lim.cpus = -1;
	assert_int_equal(pd_cgroup_set_limits(cg, &lim, &err), -EINVAL);
	assert_string_equal(err.field, "limits.cpus");
	assert_int_equal(count_procs(hier_of(PD_CGROUP_PIDS), slot), 1);
	assert_int_equal(pd_cgroup_oom_fd(cg), oom_fd);
	CHECK(pd_cgroup_kill_all(cg, &err), err);
	expect_killed(wait_child(c.pid));
	pd_cgroup_free(cg);
}

static void test_memory_peak_and_cpu(void **state)
{
	struct pd_cgroup *cg;
	struct pd_cgroup_stats st;
	uint64_t lo = 64 * MIB, hi = lo + lo / 10;

	(void)state;
	require_cgroup();
	cg = open_slot(SLOT_BASE + 3, 0, 0, 0);
	expect_exit(run_in(cg, touch_mib, 64), 0);
	st = stats_of(cg);
	if (st.memory_peak_bytes < lo || st.memory_peak_bytes > hi)
		fail_msg("memory peak %" PRIu64 " not within [%" PRIu64 ", %" PRIu64 "]",
			 st.memory_peak_bytes, lo, hi);
	if (st.cpu_usage_us == 0)
		fail_msg("cpu usage 0 after touching 64 MiB (user %" PRIu64 ", system %" PRIu64 ")",
			 st.cpu_user_us, st.cpu_system_us);
	assert_int_equal(st.oom_kills, 0);
	assert_int_equal(st.pids_current, 0);
	/* the memory is gone with the child */
	if (st.memory_current_bytes >= lo)
		fail_msg("memory current %" PRIu64 " after the child exited",
			 st.memory_current_bytes);
	pd_cgroup_free(cg);
}

static void test_oom_kill_and_fd(void **state)
{
	struct pd_cgroup *cg;
	struct pd_cgroup_stats st;
	struct pollfd p;

	(void)state;
	require_cgroup();
	cg = open_slot(SLOT_BASE + 4, 32 * MIB, 0, 0);
	p = (struct pollfd){ .fd = pd_cgroup_oom_fd(cg), .events = POLLIN };
	assert_true(p.fd >= 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	expect_killed(run_in(cg, touch_mib, 128));
	st = stats_of(cg);
	if (st.oom_kills < 1)
		fail_msg("oom_kills %" PRIu64 ", want >= 1", st.oom_kills);
	if (st.memory_peak_bytes > 32 * MIB)
		fail_msg("memory peak %" PRIu64 " above the 32 MiB limit", st.memory_peak_bytes);
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(p.revents & POLLIN);
	pd_cgroup_oom_ack(cg);
	assert_int_equal(poll(&p, 1, 0), 0);
	pd_cgroup_free(cg);
}

/* A child with no right over the cgroup files joins with the supervisor's: the limits bind. */
static void test_join_self(void **state)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();
	enum pd_cgroup_version v = require_cgroup();
	unsigned slot = SLOT_BASE + 21;
	struct pd_cgroup *cg;
	struct pd_cgroup_stats st;

	(void)state;
	cg = open_slot(slot, 32 * MIB, 0, 0);
	expect_exit(join_and_run(cg, touch_mib, 4), 0);
	expect_killed(join_and_run(cg, touch_mib, 128));
	st = stats_of(cg);
	if (st.oom_kills < 1)
		fail_msg("oom_kills %" PRIu64 " after joining by itself, want >= 1", st.oom_kills);
	/* in every hierarchy: the one left running is counted in each */
	struct child c = start_child(sleep_forever, 0, -1);
	int fds[PD_CGROUP_JOIN_MAX];
	paddock_error err = { 0 };
	int n = pd_cgroup_join_fds(cg, fds, &err);

	CHECK(n, err);
	for (int i = 0; i < n; i++)
		pd_close(fds[i]);
	release_child(&c);
	if (v == PD_CGROUP_V1)
		assert_int_equal((size_t)n, l->n_v1);
	else
		assert_int_equal(n, 1);
	kill_all(cg);
	pd_cgroup_free(cg);
}

static void test_pids_limit(void **state)
{
	unsigned slot = SLOT_BASE + 5;
	struct pd_cgroup *cg;
	struct pd_cgroup_stats st;
	int status;

	(void)state;
	require_cgroup();
	cg = open_slot(slot, 0, 5, 0);
	status = run_in(cg, fork_many, 20);
	assert_true(WIFEXITED(status));
	/* 1 + 4 forks fit in 5 */
	assert_int_equal(WEXITSTATUS(status), 16);
	st = stats_of(cg);
	assert_int_equal(st.pids_max_hits, 16);
	assert_int_equal(st.pids_current, 4); /* the sleepers */
	if (has_ctl(PD_CGROUP_PIDS, slot, "pids.peak"))
		assert_int_equal(st.pids_peak, 5); /* the slot was made by this open: exact */
	kill_all(cg);
	st = stats_of(cg);
	assert_int_equal(st.pids_current, 0);
	pd_cgroup_free(cg);
}

static void test_kill_all_tree(void **state)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();
	enum pd_cgroup_version v = require_cgroup();
	unsigned slot = SLOT_BASE + 6;
	paddock_error err = { 0 };
	struct pd_cgroup *cg;
	struct child c;
	int ready[2];
	char buf[4];

	(void)state;
	cg = open_slot(slot, 0, 0, 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	c = start_child(grow_tree, ready[1], ready[1]);
	(void)pd_close(ready[1]);
	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	for (size_t got = 0; got < sizeof(buf);) {
		struct pollfd p = { .fd = ready[0], .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&p, 1, 5000), 1);
		n = read(ready[0], buf, sizeof(buf) - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	(void)pd_close(ready[0]);
	assert_true(count_procs(hier_of(PD_CGROUP_PIDS), slot) >= 4);
	CHECK(pd_cgroup_kill_all(cg, &err), err);
	if (v == PD_CGROUP_V1) {
		for (size_t i = 0; i < l->n_v1; i++)
			assert_int_equal(count_procs(&l->v1[i], slot), 0);
	} else {
		assert_int_equal(count_procs(&l->v2, slot), 0);
	}
	expect_killed(wait_child(c.pid));
	reap_all();
	pd_cgroup_free(cg);
}

static void test_reopen_starts_from_zero(void **state)
{
	unsigned slot = SLOT_BASE + 7;
	struct pd_cgroup *cg;
	struct pd_cgroup_stats st;

	(void)state;
	require_cgroup();
	cg = open_slot(slot, 32 * MIB, 5, 0);
	expect_killed(run_in(cg, touch_mib, 128));
	(void)run_in(cg, fork_many, 10);
	kill_all(cg);
	st = stats_of(cg);
	assert_true(st.oom_kills >= 1);
	assert_true(st.pids_max_hits >= 1);
	assert_true(st.cpu_usage_us > 0);
	assert_true(st.memory_peak_bytes > 16 * MIB);
	/*
	 * Kernel memory of the dead (page tables above all: ASan's are large) is freed after an
	 * RCU grace period; the reset baseline is the usage at open, so let it drain first.
	 */
	for (int i = 0; i < 200 && stats_of(cg).memory_current_bytes > MIB; i++)
		usleep(10000);
	pd_cgroup_free(cg);

	cg = open_slot(slot, 0, 0, 0);
	st = stats_of(cg);
	assert_int_equal(st.oom_kills, 0);
	assert_int_equal(st.pids_max_hits, 0);
	assert_int_equal(st.pids_current, 0);
	assert_int_equal(st.pids_peak, 0); /* not ours, not reset: unknown */
	if (st.cpu_usage_us > 1000)
		fail_msg("cpu usage %" PRIu64 " us right after reopening", st.cpu_usage_us);
	if (st.memory_peak_bytes > 2 * MIB)
		fail_msg("memory peak %" PRIu64 " right after reopening", st.memory_peak_bytes);
	/* and counting works from there */
	expect_exit(run_in(cg, touch_mib, 16), 0);
	st = stats_of(cg);
	assert_true(st.memory_peak_bytes >= 16 * MIB);
	pd_cgroup_free(cg);
}

static void test_open_kills_leftovers(void **state)
{
	unsigned slot = SLOT_BASE + 8;
	paddock_error err = { 0 };
	struct pd_cgroup *cg;
	struct child c;

	(void)state;
	require_cgroup();
	cg = open_slot(slot, 0, 0, 0);
	c = start_child(sleep_forever, 0, -1);
	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	/* a supervisor that died: the handle goes, the process stays */
	pd_cgroup_free(cg);
	assert_int_equal(count_procs(hier_of(PD_CGROUP_MEMORY), slot), 1);
	cg = open_slot(slot, 0, 0, 0);
	assert_int_equal(count_procs(hier_of(PD_CGROUP_MEMORY), slot), 0);
	expect_killed(wait_child(c.pid));
	pd_cgroup_free(cg);
}

static void test_slot_is_exclusive(void **state)
{
	struct pd_cgroup_limits lim = { 0 };
	struct pd_cgroup *cg, *other = NULL;
	paddock_error err = { 0 };

	(void)state;
	require_cgroup();
	cg = open_slot(SLOT_BASE + 9, 0, 0, 0);
	assert_int_equal(pd_cgroup_open(SLOT_BASE + 9, &lim, &other, &err), -EBUSY);
	assert_null(other);
	assert_non_null(strstr(err.msg, "held by another sandbox"));
	pd_cgroup_free(cg);
	other = open_slot(SLOT_BASE + 9, 0, 0, 0);
	pd_cgroup_free(other);
}

static bool slot_anywhere(unsigned slot)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();

	if (l->version == PD_CGROUP_V2)
		return slot_exists(&l->v2, slot);
	for (size_t i = 0; i < l->n_v1; i++)
		if (slot_exists(&l->v1[i], slot))
			return true;
	return false;
}

static void test_prune(void **state)
{
	unsigned idle = SLOT_BASE + 10, held = SLOT_BASE + 11, busy = SLOT_BASE + 12;
	paddock_error err = { 0 };
	struct pd_cgroup *cg_held, *cg;
	struct child c;
	int n;

	(void)state;
	require_cgroup();
	pd_cgroup_free(open_slot(idle, 0, 0, 0));
	cg_held = open_slot(held, 0, 0, 0);
	cg = open_slot(busy, 0, 0, 0);
	c = start_child(sleep_forever, 0, -1);
	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	pd_cgroup_free(cg);

	n = pd_cgroup_prune(&err);
	CHECK(n, err);
	assert_true(n >= 1);
	assert_false(slot_anywhere(idle));
	assert_true(slot_anywhere(held));
	assert_true(slot_exists(hier_of(PD_CGROUP_MEMORY), busy));

	assert_int_equal(kill(c.pid, SIGKILL), 0);
	expect_killed(wait_child(c.pid));
	pd_cgroup_free(cg_held);
	n = pd_cgroup_prune(&err);
	CHECK(n, err);
	assert_true(n >= 2);
	assert_false(slot_anywhere(held));
	assert_false(slot_anywhere(busy));
}

/* A prune running against open/free of the same slot: every open succeeds (retrying). */
static void test_open_races_prune(void **state)
{
	unsigned slot = SLOT_BASE + 13;
	pid_t pid;
	int status;

	(void)state;
	require_cgroup();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		for (int i = 0; i < 300; i++)
			if (pd_cgroup_prune(NULL) < 0)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < 300; i++) {
		struct pd_cgroup *cg = open_slot(slot, 64 * MIB, 16, 1);

		expect_ctl(PD_CGROUP_PIDS, slot, "pids.max", "16\n");
		pd_cgroup_free(cg);
	}
	status = wait_child(pid);
	expect_exit(status, 0);
}

/* ---- v2 on the unified hierarchy, without controllers ---- */

static int spin_ms(long ms)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
	return 0;
}

/* clone3(CLONE_INTO_CGROUP) of a child that spins `ms`; returns its wait status. */
static int clone_into(struct pd_cgroup *cg, long ms)
{
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)pd_cgroup_clone_fd(cg),
	};
	pid_t pid;

	assert_true(pd_cgroup_clone_fd(cg) >= 0);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)spin_ms(ms);
		syscall(SYS_exit_group, 0);
	}
	return wait_child(pid);
}

/* How many processes the unified hierarchy's `slot` holds, as the exit status. */
static int count_in_slot(long slot)
{
	const struct pd_cgroup_hierarchy *h = &pd_cgroup_layout()->v2;

	return count_procs(h, (unsigned)slot);
}

static void test_v2_core_on_unified(void **state)
{
	const struct pd_cgroup_hierarchy *h = require_unified();
	const struct pd_cgroup_hierarchy *hs[] = { h };
	struct pd_cgroup_limits lim = { 0 };
	unsigned slot = SLOT_BASE + 20;
	struct pd_cgroup *cg = NULL, *other = NULL;
	struct pd_cgroup_stats st;
	paddock_error err = { 0 };
	struct child c;
	int n;

	(void)state;
	CHECK(pd_cgroup_v2_open_at(h, slot, &lim, PD_CGROUP_V2_NO_CONTROLLERS, &cg, &err), err);
	assert_int_equal(pd_cgroup_version(cg), PD_CGROUP_V2);
	assert_true(slot_exists(h, slot));
	/* a claim's limits: nothing to write without controllers, and no error */
	CHECK(pd_cgroup_set_limits(cg, &lim, &err), err);
	assert_int_equal(
		pd_cgroup_v2_open_at(h, slot, &lim, PD_CGROUP_V2_NO_CONTROLLERS, &other, &err),
		-EBUSY);

	/* born inside with CLONE_INTO_CGROUP, as init is */
	expect_exit(clone_into(cg, 30), 0);
	st = stats_of(cg);
	if (st.cpu_usage_us < 10000)
		fail_msg("cpu usage %" PRIu64 " us after a 30 ms spin inside", st.cpu_usage_us);

	/* attach and kill */
	c = start_child(sleep_forever, 0, -1);
	CHECK(pd_cgroup_attach(cg, c.pid, &err), err);
	release_child(&c);
	assert_int_equal(count_procs(h, slot), 1);
	CHECK(pd_cgroup_kill_all(cg, &err), err);
	assert_int_equal(count_procs(h, slot), 0);
	expect_killed(wait_child(c.pid));
	/* a process joins by itself through the join file, with no right of its own */
	expect_exit(join_and_run(cg, count_in_slot, (long)slot), 1);
	pd_cgroup_free(cg);

	/* a reopen starts its CPU count from zero */
	CHECK(pd_cgroup_v2_open_at(h, slot, &lim, PD_CGROUP_V2_NO_CONTROLLERS, &cg, &err), err);
	st = stats_of(cg);
	if (st.cpu_usage_us > 1000)
		fail_msg("cpu usage %" PRIu64 " us right after reopening", st.cpu_usage_us);
	/* a slot whose sandbox was killed still takes the next one's init (no cgroup.kill) */
	expect_exit(clone_into(cg, 1), 0);
	pd_cgroup_free(cg);

	n = pd_cgroup_prune_hierarchies(hs, 1, &err);
	CHECK(n, err);
	assert_true(n >= 1);
	assert_false(slot_exists(h, slot));
}

/* ---- setup ---- */

/* Every idle slot goes, ours included; and the unified pool of the v2 test where it is not ours. */
static void prune_all(void)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();
	const struct pd_cgroup_hierarchy *unified[] = { &l->v2 };

	(void)pd_cgroup_prune(NULL);
	if (geteuid() == 0 && l->version != PD_CGROUP_V2 && l->v2.mount_point[0])
		(void)pd_cgroup_prune_hierarchies(unified, 1, NULL);
}

static int group_setup(void **state)
{
	(void)state;
	/* orphans of the process trees come back here to be reaped */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -1;
	prune_all(); /* leftovers of an interrupted run */
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	reap_all();
	prune_all();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_mountinfo_v1),
		cmocka_unit_test(test_parse_mountinfo_joint_and_v2),
		cmocka_unit_test(test_long_mount_root),
		cmocka_unit_test(test_parse_values),
		cmocka_unit_test(test_parse_proc_cgroup),
		cmocka_unit_test(test_bad_limits),
		cmocka_unit_test(test_rootless_gets_none),
		cmocka_unit_test(test_open_applies_limits),
		cmocka_unit_test(test_reopen_overwrites_limits),
		cmocka_unit_test(test_set_limits),
		cmocka_unit_test(test_memory_peak_and_cpu),
		cmocka_unit_test(test_oom_kill_and_fd),
		cmocka_unit_test(test_join_self),
		cmocka_unit_test(test_pids_limit),
		cmocka_unit_test(test_kill_all_tree),
		cmocka_unit_test(test_reopen_starts_from_zero),
		cmocka_unit_test(test_open_kills_leftovers),
		cmocka_unit_test(test_slot_is_exclusive),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_open_races_prune),
		cmocka_unit_test(test_v2_core_on_unified),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
