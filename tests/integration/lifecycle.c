/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock's lifecycle, through the public API only: many sandboxes in a row leak no fd
 * and no child; several commands share one sandbox's state; freeing a sandbox with work in
 * flight leaves no process; bad exec options are refused by field; a sweep of reconnect
 * sockets leaves no orphan init alive.
 */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "paddock/paddock.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

struct waiter {
	struct event_base *base;
	bool done;
	struct paddock_result res;
	char limits[2048]; /* res.limits_json, which lives only as long as the exec */
};

static void on_exit_cb(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct waiter *w = userdata;

	(void)ex;
	w->res = *res;
	snprintf(w->limits, sizeof(w->limits), "%s", res->limits_json ? res->limits_json : "");
	w->res.limits_json = NULL;
	w->done = true;
	event_base_loopbreak(w->base);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Runs argv in sb, stdout into a pipe; returns what it printed (static buffer). */
static const char *run_in(struct event_base *base, paddock_sandbox *sb, const char *const *argv,
			  struct paddock_result *ret_res)
{
	static char out[4096];
	struct waiter w = { .base = base };
	paddock_error err = { 0 };
	int p[2];
	ssize_t n;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, p[1], -1 } };
	int r = paddock_exec_start(sb, &o, on_exit_cb, &w, NULL, &err);
	if (r < 0)
		fail_msg("exec_start: %s", err.msg);
	close(p[1]);
	while (!w.done)
		assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
	n = read(p[0], out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(p[0]);
	if (ret_res)
		*ret_res = w.res;
	return out;
}

static paddock_sandbox *make_sandbox(paddock_ctx *ctx)
{
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	paddock_error err = { 0 };

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	if (paddock_sandbox_create(ctx, spec, &sb, &err) < 0)
		fail_msg("create: %s (errno %d)", err.msg, err.code);
	paddock_spec_free(spec);
	return sb;
}

static void test_no_fd_or_child_leaks(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "true", NULL };
	int before, after;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	/* warm up lazily-opened library fds first */
	paddock_sandbox_free(make_sandbox(ctx));
	before = count_fds();
	for (int i = 0; i < 20; i++) {
		struct paddock_result res;
		paddock_sandbox *sb = make_sandbox(ctx);

		run_in(base, sb, argv, &res);
		assert_int_equal(res.reason, PADDOCK_END_EXITED);
		assert_int_equal(res.exit_code, 0);
		paddock_sandbox_free(sb);
	}
	after = count_fds();
	assert_int_equal(before, after);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_state_persists_between_commands(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *w[] = { "sh", "-c", "echo kept > /workspace/f; echo $$", NULL };
	const char *r[] = { "cat", "/workspace/f", NULL };

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	run_in(base, sb, w, NULL);
	assert_string_equal(run_in(base, sb, r, NULL), "kept\n");
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_two_sandboxes_have_distinct_ids(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "cat", "/proc/self/uid_map", NULL };
	char a[4096];

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *s1 = make_sandbox(ctx), *s2 = make_sandbox(ctx);
	assert_string_not_equal(paddock_sandbox_id(s1), paddock_sandbox_id(s2));
	snprintf(a, sizeof(a), "%s", run_in(base, s1, argv, NULL));
	const char *b = run_in(base, s2, argv, NULL);
	if (geteuid() == 0)
		assert_string_not_equal(a, b); /* each live sandbox has its own host uid range */
	paddock_sandbox_free(s1);
	paddock_sandbox_free(s2);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* A sandbox given its id (paddockd's start of a stopped one) has it; another form is refused. */
static void test_given_id(void **state)
{
	static const char *const bad[] = { "sb_short", "sb_k2q7m3x9abcl", "../k2q7m3x9abcd",
					   "sb_k2q7m3x9abcd0", "sb_K2Q7M3X9ABCD" };
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	paddock_error err = { 0 };
	struct paddock_sandbox_opts opts = { .id = "sb_k2q7m3x9abcd" };

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct paddock_sandbox_opts o = { .id = bad[i] };

		memset(&err, 0, sizeof(err));
		assert_int_equal(paddock_sandbox_create_with(ctx, spec, &o, &sb, &err), -EINVAL);
		assert_string_equal(err.field, "id");
		assert_null(sb);
	}
	if (paddock_sandbox_create_with(ctx, spec, &opts, &sb, &err) < 0)
		fail_msg("create: %s (errno %d)", err.msg, err.code);
	assert_string_equal(paddock_sandbox_id(sb), "sb_k2q7m3x9abcd");
	paddock_sandbox_free(sb);
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* As root: the id slot (uid range) of a sandbox, from its uid_map. */
static unsigned slot_of(struct event_base *base, paddock_sandbox *sb)
{
	const char *argv[] = { "cat", "/proc/self/uid_map", NULL };
	unsigned inside = 1, outside = 0;

	assert_int_equal(sscanf(run_in(base, sb, argv, NULL), "%u %u", &inside, &outside), 2);
	assert_int_equal(inside, 0);
	return (outside - 0x60000000u) / 65536u;
}

/*
 * As root: a slot held by someone else is skipped, and taken again once it is free (the
 * supervisor's memory of others' slots expires within a second): the lowest free slot first
 * keeps the kept cgroups (one per slot ever used) as few as the peak of live sandboxes.
 */
static void test_freed_slot_is_reused(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_sandbox *a, *b;
	char path[64];
	unsigned low;
	int fd, i;

	(void)state;
	if (geteuid() != 0) {
		event_base_free(base);
		skip();
	}
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	a = make_sandbox(ctx);
	low = slot_of(base, a);
	paddock_sandbox_free(a);
	/* once its init has exited, this test holds that slot itself */
	snprintf(path, sizeof(path), "/run/paddock/idmap/%u", low);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < 200 && flock(fd, LOCK_EX | LOCK_NB) < 0; i++)
		usleep(10000);
	assert_true(i < 200);
	a = make_sandbox(ctx);
	assert_int_not_equal(slot_of(base, a), low);
	close(fd); /* free again */
	usleep(1100 * 1000);
	/*
	 * Slots are the machine's: a sandbox of another suite running meanwhile may take the
	 * freed one first, and free it again. Reused means ours got it, or someone held it.
	 */
	for (i = 0; i < 5; i++) {
		bool held;

		b = make_sandbox(ctx);
		if (slot_of(base, b) == low)
			break;
		fd = open(path, O_RDWR | O_CLOEXEC);
		assert_true(fd >= 0);
		held = flock(fd, LOCK_EX | LOCK_NB) < 0;
		close(fd);
		if (held)
			break;
		paddock_sandbox_free(b); /* it was free by the time we looked: again */
		usleep(1100 * 1000);
	}
	assert_true(i < 5);
	paddock_sandbox_free(a);
	paddock_sandbox_free(b);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_free_with_command_running(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "sh", "-c", "setsid sleep 1000 & exec sleep 1000", NULL };
	struct waiter w = { .base = base };

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	pid_t init = paddock_sandbox_init_pid(sb);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 } };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w, NULL, &err), 0);
	assert_int_equal(kill(init, 0), 0);
	paddock_sandbox_free(sb);
	/* init was reaped by free: its pid is gone, and with it the whole pid namespace */
	assert_int_equal(kill(init, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_false(w.done);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_bad_exec_options(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *empty[] = { "", NULL };
	const char *ok[] = { "true", NULL };
	const char *badenv[] = { "NOEQUALS", NULL };

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts o = { .argv = empty, .fds = { -1, -1, -1 } };
	assert_int_equal(paddock_exec_start(sb, &o, NULL, NULL, NULL, &err), -EINVAL);
	assert_string_equal(err.field, "argv");
	o.argv = ok;
	o.cwd = "relative";
	assert_int_equal(paddock_exec_start(sb, &o, NULL, NULL, NULL, &err), -EINVAL);
	assert_string_equal(err.field, "cwd");
	o.cwd = NULL;
	o.env = badenv;
	assert_int_equal(paddock_exec_start(sb, &o, NULL, NULL, NULL, &err), -EINVAL);
	assert_string_equal(err.field, "env");
	/* the sandbox is still usable after refused requests */
	struct paddock_result res;
	run_in(base, sb, ok, &res);
	assert_int_equal(res.exit_code, 0);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_signal_reaches_command(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "sleep", "1000", NULL };
	struct waiter w = { .base = base };
	paddock_exec *ex = NULL;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 } };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w, &ex, &err), 0);
	assert_true(paddock_exec_pid(ex) > 1);
	assert_int_equal(paddock_exec_signal(ex, SIGUSR1, &err), 0);
	while (!w.done)
		assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
	assert_int_equal(w.res.reason, PADDOCK_END_SIGNALED);
	assert_int_equal(w.res.signal, SIGUSR1);
	assert_int_equal(paddock_result_exit_status(&w.res), 128 + SIGUSR1);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static void test_files_round_trip_and_escapes(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	char *data = NULL;
	size_t len = 0;
	const char *cat[] = { "cat", "/workspace/hello.txt", NULL };
	const char *owner[] = { "stat", "-c", "%U %a", "/workspace/hello.txt", NULL };
	const char *plant[] = {
		"sh",
		"-c",
		"ln -s /etc/hostname /workspace/abs; ln -s ../../../../../../etc/hostname "
		"/workspace/rel; ln -s /proc/1/root/etc/hostname /workspace/magic; "
		"mkfifo /workspace/fifo; ln -s /workspace /workspace/loopdir; "
		"head -c 5000 /dev/zero > /workspace/big",
		NULL,
	};

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);

	/* a file written from outside is the sandbox user's, and atomic */
	assert_int_equal(
		paddock_sandbox_write_file(sb, "/workspace/hello.txt", "hi\n", 3, 0640, &err), 0);
	assert_string_equal(run_in(base, sb, cat, NULL), "hi\n");
	assert_string_equal(run_in(base, sb, owner, NULL), "user 640\n");
	assert_int_equal(
		paddock_sandbox_read_file(sb, "workspace/hello.txt", 100, &data, &len, &err), 0);
	assert_int_equal(len, 3);
	assert_string_equal(data, "hi\n");
	free(data);

	/* symlinks resolve inside the sandbox: its /etc/hostname, never the host's */
	run_in(base, sb, plant, NULL);
	assert_int_equal(paddock_sandbox_read_file(sb, "/workspace/abs", 100, &data, &len, &err),
			 0);
	assert_string_equal(data, "sandbox\n");
	free(data);
	assert_int_equal(paddock_sandbox_read_file(sb, "/workspace/rel", 100, &data, &len, &err),
			 0);
	assert_string_equal(data, "sandbox\n");
	free(data);
	/* a magic link is refused outright; a fifo is not a file; limits hold */
	assert_true(paddock_sandbox_read_file(sb, "/workspace/magic", 100, &data, &len, &err) < 0);
	assert_int_equal(paddock_sandbox_read_file(sb, "/workspace/fifo", 100, &data, &len, &err),
			 -EINVAL);
	assert_string_equal(err.field, "path");
	assert_int_equal(paddock_sandbox_read_file(sb, "/workspace/big", 4096, &data, &len, &err),
			 -EFBIG);
	assert_true(paddock_sandbox_read_file(sb, "/workspace/nope", 100, &data, &len, &err) < 0);
	assert_int_equal(err.code, ENOENT);
	/* writing over a planted symlink replaces the link, it does not follow it */
	assert_int_equal(paddock_sandbox_write_file(sb, "/workspace/abs", "x", 1, 0644, &err), 0);
	assert_int_equal(paddock_sandbox_read_file(sb, "/etc/hostname", 100, &data, &len, &err), 0);
	assert_string_equal(data, "sandbox\n");
	free(data);
	/* read-only places stay read-only; bad arguments change nothing */
	assert_true(paddock_sandbox_write_file(sb, "/etc/passwd", "x", 1, 0644, &err) < 0);
	assert_int_equal(paddock_sandbox_write_file(sb, "/workspace/", "x", 1, 0644, &err),
			 -EINVAL);
	assert_int_equal(paddock_sandbox_write_file(sb, "/workspace/m", "x", 1, 010000, &err),
			 -EINVAL);
	assert_string_equal(err.field, "mode");
	assert_int_equal(paddock_sandbox_write_file(sb, "/nodir/x", "x", 1, 0644, &err), -ENOENT);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* Reads an fd to EOF (bounded), waiting in poll. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t got = 0;

	(void)fcntl(fd, F_SETFL, 0);
	while (got + 1 < size) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

static void wait_done(struct event_base *base, struct waiter *w)
{
	while (!w->done)
		assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
}

/* init-made pipes: the caller takes its ends; stdin reaches EOF only by close_stdin */
static void test_pipes_and_close_stdin(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "sh", "-c", "cat; echo done >&2", NULL };
	struct waiter w = { .base = base };
	paddock_exec *ex = NULL;
	char buf[256];
	int in, out, errfd;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 }, .pipe_streams = 7 };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w, &ex, &err), 0);
	assert_int_equal(paddock_exec_pipe_streams(ex), 7u);
	in = paddock_exec_take_fd(ex, 0);
	out = paddock_exec_take_fd(ex, 1);
	errfd = paddock_exec_take_fd(ex, 2);
	assert_true(in >= 0 && out >= 0 && errfd >= 0);
	assert_int_equal(paddock_exec_take_fd(ex, 1), -1); /* taken once */
	assert_int_equal(write(in, "piped", 5), 5);
	close(in);
	/* our end is closed, init's copy is not: cat still waits */
	assert_false(w.done);
	assert_int_equal(paddock_exec_close_stdin(ex, &err), 0);
	wait_done(base, &w);
	assert_int_equal(w.res.reason, PADDOCK_END_EXITED);
	read_all(out, buf, sizeof(buf));
	assert_string_equal(buf, "piped");
	read_all(errfd, buf, sizeof(buf));
	assert_string_equal(buf, "done\n");
	close(out);
	close(errfd);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* a command's own timeout, and an end forced by the caller, name their reason */
static void test_exec_timeout_and_terminate(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "sleep", "30", NULL };
	struct waiter w1 = { .base = base }, w2 = { .base = base };
	paddock_exec *ex = NULL;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 }, .timeout_s = 0.2 };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w1, NULL, &err), 0);
	wait_done(base, &w1);
	assert_int_equal(w1.res.reason, PADDOCK_END_TIMEOUT);
	assert_int_equal(w1.res.signal, SIGKILL);
	o.timeout_s = 0;
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w2, &ex, &err), 0);
	assert_int_equal(paddock_exec_terminate(ex, PADDOCK_END_OUTPUT, &err), 0);
	wait_done(base, &w2);
	assert_int_equal(w2.res.reason, PADDOCK_END_OUTPUT);
	/* negative: none; 0: the spec's limits.timeout_s; past 10^7 s: refused */
	o.timeout_s = 2e7;
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w2, NULL, &err), -EINVAL);
	assert_string_equal(err.field, "timeout_s");
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* Spins the loop for `ms`, so that timers and events are served meanwhile. */
static void loop_for(struct event_base *base, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* The counter a busy loop in the sandbox keeps writing to /tmp/count. */
static long counter(paddock_sandbox *sb)
{
	paddock_error err = { 0 };
	char *data = NULL;
	size_t len = 0;
	long v;

	if (paddock_sandbox_read_file(sb, "/tmp/count", 64, &data, &len, &err) < 0)
		return -1;
	v = strtol(data, NULL, 10);
	free(data);
	return v;
}

/*
 * Pause stops every process where it is (the freezer as root, SIGSTOP rootless), refuses
 * commands and sockets meanwhile, holds a command's timeout; resume continues all of it.
 */
static void test_pause_and_resume(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	/* written aside and renamed: a reader never sees the file empty */
	const char *loop[] = { "sh", "-c",
			       "i=0; while :; do i=$((i+1)); echo $i >/tmp/c.new; mv /tmp/c.new "
			       "/tmp/count; done",
			       NULL };
	const char *sleeper[] = { "sleep", "30", NULL };
	const char *echo[] = { "echo", "hi", NULL };
	struct waiter wl = { .base = base }, ws = { .base = base };
	long a, b, c;
	int fd = -1;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts ol = { .argv = loop, .fds = { -1, -1, -1 }, .timeout_s = -1 };
	struct paddock_exec_opts os = { .argv = sleeper, .fds = { -1, -1, -1 }, .timeout_s = 1.0 };
	assert_int_equal(paddock_exec_start(sb, &ol, on_exit_cb, &wl, NULL, &err), 0);
	assert_int_equal(paddock_exec_start(sb, &os, on_exit_cb, &ws, NULL, &err), 0);
	for (int i = 0; i < 100 && counter(sb) < 10; i++)
		loop_for(base, 20);
	assert_true(counter(sb) >= 10);

	if (paddock_sandbox_pause(sb, &err) < 0)
		fail_msg("pause: %s", err.msg);
	assert_true(paddock_sandbox_paused(sb));
	assert_int_equal(paddock_sandbox_pause(sb, &err), 0); /* again: nothing to do */
	a = counter(sb);
	loop_for(base, 1500); /* past the sleeper's 1 s timeout: held while paused */
	b = counter(sb);
	assert_int_equal(a, b); /* not one more round */
	assert_false(ws.done);
	struct paddock_exec_opts oe = { .argv = echo, .fds = { -1, -1, -1 } };
	assert_int_equal(paddock_exec_start(sb, &oe, on_exit_cb, &ws, NULL, &err), -EBUSY);
	assert_non_null(strstr(err.msg, "paused"));
	assert_int_equal(paddock_sandbox_socket(sb, AF_INET, SOCK_STREAM, &fd, &err), -EBUSY);

	if (paddock_sandbox_resume(sb, &err) < 0)
		fail_msg("resume: %s", err.msg);
	assert_false(paddock_sandbox_paused(sb));
	loop_for(base, 300);
	c = counter(sb);
	assert_true(c > b);
	/* the sleeper's timeout runs again with what it had left (under a second) */
	wait_done(base, &ws);
	assert_int_equal(ws.res.reason, PADDOCK_END_TIMEOUT);
	assert_true(ws.res.wall_s >= 2.3);
	assert_string_equal(run_in(base, sb, echo, NULL), "hi\n");
	assert_int_equal(paddock_sandbox_resume(sb, &err), 0); /* not paused: nothing to do */
	/* a paused sandbox ends like any other: freed while paused, nothing is left */
	assert_int_equal(paddock_sandbox_pause(sb, &err), 0);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* a socket made in the sandbox's netns reaches a server on the sandbox's own loopback */
static void test_socket_in_sandbox_netns(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = { "python3", "-c",
			       "import socket\n"
			       "s=socket.socket(); s.bind(('127.0.0.1', 7777)); s.listen(1)\n"
			       "print('ready', flush=True)\n"
			       "c,_=s.accept(); c.sendall(b'inside'); c.close()",
			       NULL };
	struct waiter w = { .base = base };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(7777),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	paddock_exec *ex = NULL;
	char buf[64];
	int fd = -1, out;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	assert_int_equal(paddock_sandbox_socket(sb, AF_UNIX, SOCK_STREAM, &fd, &err),
			 -EAFNOSUPPORT);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 }, .pipe_streams = 2 };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w, &ex, &err), 0);
	out = paddock_exec_take_fd(ex, 1);
	(void)fcntl(out, F_SETFL, 0);
	assert_true(read(out, buf, 6) == 6);
	/* the host's own loopback has nothing on 7777; the sandbox's has the server */
	assert_int_equal(paddock_sandbox_socket(sb, AF_INET, SOCK_STREAM, &fd, &err), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(read_all(fd, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "inside");
	close(fd);
	close(out);
	wait_done(base, &w);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* released by one supervisor, adopted by the next: the command is still there */
static void test_release_and_adopt(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	paddock_error err = { 0 };
	char dir[] = "/tmp/pdtest.adoptXXXXXX", *handle = NULL, id[32], buf[64];
	const char *argv[] = { "sh", "-c", "read x; echo got $x", NULL };
	struct waiter w = { .base = base };
	paddock_exec *ex = NULL;
	int in, out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	struct paddock_sandbox_opts so = { .reconnect_dir = dir, .orphan_timeout_s = 30 };
	if (paddock_sandbox_create_with(ctx, spec, &so, &sb, &err) < 0)
		fail_msg("create: %s", err.msg);
	snprintf(id, sizeof(id), "%s", paddock_sandbox_id(sb));
	assert_int_equal(paddock_sandbox_handle(sb, &handle, &err), 0);
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 }, .pipe_streams = 3 };
	assert_int_equal(paddock_exec_start(sb, &o, NULL, NULL, &ex, &err), 0);
	uint64_t exec_id = paddock_exec_id(ex);
	paddock_sandbox_release(sb);
	sb = NULL;

	assert_int_equal(paddock_sandbox_adopt(ctx, spec, "{\"v\":1}", &sb, &err), -EINVAL);
	assert_string_equal(err.field, "handle");
	if (paddock_sandbox_adopt(ctx, spec, handle, &sb, &err) < 0)
		fail_msg("adopt: %s", err.msg);
	assert_string_equal(paddock_sandbox_id(sb), id);
	ex = paddock_sandbox_exec_next(sb, NULL);
	assert_non_null(ex);
	assert_int_equal(paddock_exec_id(ex), exec_id);
	assert_null(paddock_sandbox_exec_next(sb, ex));
	paddock_exec_set_callback(ex, on_exit_cb, &w);
	in = paddock_exec_take_fd(ex, 0);
	out = paddock_exec_take_fd(ex, 1);
	assert_true(in >= 0 && out >= 0);
	assert_int_equal(write(in, "again\n", 6), 6);
	wait_done(base, &w);
	assert_int_equal(w.res.reason, PADDOCK_END_EXITED);
	read_all(out, buf, sizeof(buf));
	assert_string_equal(buf, "got again\n");
	close(in);
	close(out);
	paddock_sandbox_free(sb);
	/* the reconnect socket went with the sandbox */
	assert_int_equal(rmdir(dir), 0);
	free(handle);
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/*
 * A sandbox taken over from its init's record alone (paddock_sandbox_recover(), a supervisor
 * whose store is lost) with a command that ended while nobody supervised it: its report
 * arrives before the record's spec does.
 */
static void test_recover_ended_command(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	paddock_error err = { 0 };
	char dir[] = "/tmp/pdtest.recoverXXXXXX", path[128];
	/* ends when its stdin closes: after the release, whatever the machine's load */
	const char *argv[] = { "sh", "-c", "read x; exit 0", NULL };
	struct paddock_sandbox_opts so = { .orphan_timeout_s = 30 };
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 }, .pipe_streams = 1 };
	struct waiter w = { .base = base };
	paddock_exec *ex = NULL;
	int in;

	(void)state;
	assert_non_null(mkdtemp(dir));
	so.reconnect_dir = dir;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	if (paddock_sandbox_create_with(ctx, spec, &so, &sb, &err) < 0)
		fail_msg("create: %s", err.msg);
	snprintf(path, sizeof(path), "%s/%s", dir, paddock_sandbox_id(sb));
	assert_int_equal(paddock_sandbox_set_record(sb, "{}", &err), 0);
	assert_int_equal(paddock_exec_start(sb, &o, NULL, NULL, &ex, &err), 0);
	in = paddock_exec_take_fd(ex, 0);
	assert_true(in >= 0);
	/* init's copy of stdin goes now: the command's EOF is then ours to give */
	assert_int_equal(paddock_exec_close_stdin(ex, &err), 0);
	/*
	 * Released, then the command ends: init keeps the report for the next supervisor. (Under
	 * load the recover may come before the end; the command is then adopted running and its
	 * end reported as it comes: the same outcome.)
	 */
	paddock_sandbox_release(sb);
	sb = NULL;
	close(in);
	usleep(300 * 1000);
	if (paddock_sandbox_recover(ctx, path, &sb, &err) < 0)
		fail_msg("recover: %s", err.msg);
	ex = paddock_sandbox_exec_next(sb, NULL);
	assert_non_null(ex);
	paddock_exec_set_callback(ex, on_exit_cb, &w);
	wait_done(base, &w);
	assert_int_equal(w.res.reason, PADDOCK_END_EXITED);
	assert_int_equal(w.res.exit_code, 0);
	paddock_sandbox_free(sb);
	assert_int_equal(rmdir(dir), 0);
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

struct sweep_seen {
	const char *keep_id;
	char ended[4][32];
	unsigned n_ended, n_asked;
};

static bool sweep_keep(const char *id, const char *socket_path, void *userdata)
{
	struct sweep_seen *s = userdata;

	(void)socket_path;
	s->n_asked++;
	return strcmp(id, s->keep_id) == 0;
}

static void sweep_ended(const char *id, void *userdata)
{
	struct sweep_seen *s = userdata;

	if (s->n_ended < ELEMENTSOF(s->ended))
		snprintf(s->ended[s->n_ended], sizeof(s->ended[0]), "%s", id);
	s->n_ended++;
}

/* a released sandbox that nothing adopts is ended by the sweep, and gone when it returns */
static void test_sweep_orphans(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_spec *spec = NULL;
	paddock_sandbox *orphan = NULL, *kept = NULL;
	paddock_error err = { 0 };
	char dir[] = "/tmp/pdtest.sweepXXXXXX", orphan_id[32], kept_id[32], path[128];
	char *handle = NULL;
	struct paddock_sandbox_opts so = { .orphan_timeout_s = 30 };
	struct sweep_seen seen = { .keep_id = kept_id };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p = { .events = POLLIN };
	int stale, pidfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	so.reconnect_dir = dir;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	if (paddock_sandbox_create_with(ctx, spec, &so, &orphan, &err) < 0 ||
	    paddock_sandbox_create_with(ctx, spec, &so, &kept, &err) < 0)
		fail_msg("create: %s", err.msg);
	snprintf(orphan_id, sizeof(orphan_id), "%s", paddock_sandbox_id(orphan));
	snprintf(kept_id, sizeof(kept_id), "%s", paddock_sandbox_id(kept));
	assert_int_equal(paddock_sandbox_handle(kept, &handle, &err), 0);
	/* our child (the test made it), so its pid cannot be reused before we reap it */
	pidfd = (int)syscall(SYS_pidfd_open, paddock_sandbox_init_pid(orphan), 0);
	assert_true(pidfd >= 0);
	/*
	 * paused when its supervisor went: frozen as root (v1 delivers a frozen task's SIGKILL
	 * only once thawed, so the sweep must thaw it), stopped rootless
	 */
	if (paddock_sandbox_pause(orphan, &err) < 0)
		fail_msg("pause: %s", err.msg);
	paddock_sandbox_release(orphan);
	paddock_sandbox_release(kept);
	/* a socket nobody listens on any more (a sandbox that ended) */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sb_stalestale22", dir);
	stale = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(stale);

	assert_int_equal(paddock_sweep_orphans(dir, sweep_keep, sweep_ended, &seen, &err), 1);
	assert_int_equal(seen.n_asked, 3);
	assert_int_equal(seen.n_ended, 1);
	assert_string_equal(seen.ended[0], orphan_id);
	/* the orphan's init is gone already, not merely signalled */
	p.fd = pidfd;
	assert_int_equal(poll(&p, 1, 0), 1);
	(void)waitid(P_PIDFD, (id_t)pidfd, NULL, WEXITED | WNOHANG); /* reap our zombie */
	close(pidfd);
	snprintf(path, sizeof(path), "%s/%s", dir, orphan_id);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(sa.sun_path, F_OK), -1);
	/* the kept one was not touched: still adoptable */
	if (paddock_sandbox_adopt(ctx, spec, handle, &kept, &err) < 0)
		fail_msg("adopt: %s", err.msg);
	assert_string_equal(paddock_sandbox_id(kept), kept_id);
	paddock_sandbox_free(kept);
	assert_int_equal(paddock_sweep_orphans(dir, sweep_keep, NULL, &seen, &err), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(paddock_sweep_orphans(dir, sweep_keep, NULL, &seen, &err), -ENOENT);
	free(handle);
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

struct async_waiter {
	struct waiter w;
	int started;
	pid_t pid;
	int out; /* taken in on_started: the exec may be gone by the time the loop returns */
};

static void on_started_cb(paddock_exec *ex, void *userdata)
{
	struct async_waiter *a = userdata;

	a->started++;
	a->pid = paddock_exec_pid(ex);
	a->out = paddock_exec_take_fd(ex, 1);
}

static void on_async_exit(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	on_exit_cb(ex, res, &((struct async_waiter *)userdata)->w);
}

/* an asynchronous start returns at once; on_started, then the exit; or only the exit */
static void test_async_start(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *ok_argv[] = { "sh", "-c", "echo $$", NULL };
	const char *bad_argv[] = { "no-such-command", NULL };
	struct async_waiter a = { .w = { .base = base }, .out = -1 },
			    b = { .w = { .base = base }, .out = -1 };
	paddock_exec *ex = NULL;
	char buf[64];
	int out;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	struct paddock_exec_opts o = { .argv = ok_argv,
				       .fds = { -1, -1, -1 },
				       .pipe_streams = 2,
				       .on_started = on_started_cb };
	assert_int_equal(paddock_exec_start(sb, &o, on_async_exit, &a, &ex, &err), 0);
	assert_int_equal(a.started, 0); /* not yet: the loop has not run */
	assert_int_equal(paddock_exec_take_fd(ex, 1), -1);
	wait_done(base, &a.w);
	assert_int_equal(a.started, 1);
	out = a.out;
	assert_true(out >= 0);
	assert_int_equal(a.w.res.reason, PADDOCK_END_EXITED);
	read_all(out, buf, sizeof(buf));
	assert_int_equal(atoi(buf), a.pid); /* the pid on_started saw is the command's */
	close(out);
	o.argv = bad_argv;
	assert_int_equal(paddock_exec_start(sb, &o, on_async_exit, &b, NULL, &err), 0);
	wait_done(base, &b.w);
	assert_int_equal(b.started, 0);
	assert_int_equal(b.w.res.reason, PADDOCK_END_ERROR);
	assert_int_equal(paddock_result_exit_status(&b.w.res), 127);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/*
 * The egress listeners' mechanism: a socket init made in the sandbox's netns, bound and
 * listened on from outside (a privileged port too, rootless), reached from inside.
 */
static void test_listen_in_sandbox_netns(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	const char *argv[] = {
		"python3", "-c",
		"import socket\n"
		"c=socket.create_connection(('127.0.0.1', 3128)); c.sendall(b'from inside')\n"
		"u=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
		"u.sendto(b'query', ('127.0.0.1', 53))",
		NULL
	};
	struct waiter w = { .base = base };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(3128),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, lfd = -1, ufd = -1, c;
	char buf[64];

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	paddock_sandbox *sb = make_sandbox(ctx);
	assert_int_equal(paddock_sandbox_socket(sb, AF_INET, SOCK_STREAM, &lfd, &err), 0);
	assert_int_equal(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(paddock_sandbox_socket(sb, AF_INET, SOCK_DGRAM, &ufd, &err), 0);
	sa.sin_port = htons(53);
	if (bind(ufd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		fail_msg("bind 127.0.0.1:53 in the sandbox's netns: %s", strerror(errno));
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 } };
	assert_int_equal(paddock_exec_start(sb, &o, on_exit_cb, &w, NULL, &err), 0);
	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	assert_int_equal(read_all(c, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "from inside");
	assert_int_equal(recv(ufd, buf, sizeof(buf), 0), 5);
	assert_memory_equal(buf, "query", 5);
	wait_done(base, &w);
	assert_int_equal(w.res.exit_code, 0);
	close(c);
	close(lfd);
	close(ufd);
	paddock_sandbox_free(sb);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* Appends "<file>=<content>" of dir/file to buf, when the file exists. */
static void append_file(char *buf, size_t size, const char *dir, const char *file)
{
	char path[512], val[128];
	size_t len = strlen(buf);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(val, sizeof(val), f))
		val[0] = '\0';
	fclose(f);
	val[strcspn(val, "\n")] = '\0';
	snprintf(buf + len, size - len, "%s=%s\n", file, val);
}

/*
 * The limits in a sandbox's cgroup, read from the host (a sandbox has no /sys): v1 where
 * memory is on a v1 hierarchy, else v2. "" without a cgroup (rootless).
 */
static void cgroup_facts(const paddock_sandbox *sb, char *buf, size_t size)
{
	char path[64], line[512], dir[600], v2[512] = "";
	bool v1 = false;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)paddock_sandbox_init_pid(sb));
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!cg)
			continue;
		*cg++ = '\0';
		ctl++;
		cg[strcspn(cg, "\n")] = '\0';
		if (!strstr(cg, "/paddock/"))
			continue; /* not a cgroup of ours: none */
		if (!*ctl) {
			snprintf(v2, sizeof(v2), "%s", cg);
			continue;
		}
		if (!strcmp(ctl, "memory")) {
			v1 = true;
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%s", cg);
			append_file(buf, size, dir, "memory.limit_in_bytes");
			append_file(buf, size, dir, "memory.memsw.limit_in_bytes");
		} else if (!strcmp(ctl, "pids")) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/pids%s", cg);
			append_file(buf, size, dir, "pids.max");
		} else if (!strcmp(ctl, "cpu,cpuacct") || !strcmp(ctl, "cpu")) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu%s", cg);
			append_file(buf, size, dir, "cpu.cfs_quota_us");
			append_file(buf, size, dir, "cpu.cfs_period_us");
		}
	}
	fclose(f);
	if (!v1 && v2[0]) {
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", v2);
		append_file(buf, size, dir, "memory.max");
		append_file(buf, size, dir, "memory.swap.max");
		append_file(buf, size, dir, "pids.max");
		append_file(buf, size, dir, "cpu.max");
	}
}

/* What a sandbox is from inside (and its cgroup's limits from outside), for comparisons. */
static const char *const facts[] = {
	"sh", "-c",
	"id; hostname; echo \"$GREETING\"; env | sort | grep -v '^_='; "
	"grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; "
	/* mount points and types: options name host uids, which differ per sandbox */
	"awk '{ for (i = 7; $i != \"-\"; i++); print $5, $(i + 1) }' /proc/self/mountinfo; "
	"ulimit -a; ls /proc | grep -v '^[0-9]' | sort | tr '\\n' ' '; "
	"tail -n +3 /proc/net/dev | cut -d: -f1; cat /proc/self/cgroup | sed 's/[0-9a-z_]*$//'; "
	"echo disk $(df -k / | tail -n 1 | awk '{ print $2 }')K",
	NULL
};

static void sandbox_facts(struct event_base *base, paddock_sandbox *sb, char *buf, size_t size)
{
	size_t len;

	snprintf(buf, size, "%s", run_in(base, sb, facts, NULL));
	len = strlen(buf);
	cgroup_facts(sb, buf + len, size - len);
}

/* How many processes a sandbox can fork before its pids limit refuses more. */
static int fork_bomb(struct event_base *base, paddock_sandbox *sb)
{
	const char *argv[] = { "python3", "-c",
			       "import os, signal\n"
			       "kids = []\n"
			       "try:\n"
			       "    while len(kids) < 200:\n"
			       "        p = os.fork()\n"
			       "        if p == 0:\n"
			       "            signal.pause()\n"
			       "        kids.append(p)\n"
			       "except OSError:\n"
			       "    pass\n"
			       "for p in kids:\n"
			       "    os.kill(p, signal.SIGKILL)\n"
			       "    os.waitpid(p, 0)\n"
			       "print(len(kids))\n",
			       NULL };
	struct paddock_result res;
	const char *out = run_in(base, sb, argv, &res);

	assert_int_equal(res.reason, PADDOCK_END_EXITED);
	assert_int_equal(res.exit_code, 0);
	return atoi(out);
}

/* The report's "limits" of a command (how each limit was enforced), as JSON. */
static char *report_limits(struct event_base *base, paddock_sandbox *sb)
{
	const char *argv[] = { "true", NULL };
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 } };
	struct waiter w = { .base = base };
	paddock_error err = { 0 };

	if (paddock_exec_start(sb, &o, on_exit_cb, &w, NULL, &err) < 0)
		fail_msg("exec_start: %s", err.msg);
	wait_done(base, &w);
	assert_int_equal(w.res.reason, PADDOCK_END_EXITED);
	assert_true(w.limits[0] == '{');
	return strdup(w.limits);
}

/*
 * A pooled sandbox: no command before its claim; a claim with another template is refused;
 * once claimed it has the claim's hostname and environment and is, from inside, the same as
 * a sandbox made cold from that spec (ids, confinement, mounts, limits, network). This claim
 * keeps the template's own limits.
 */
static void test_pooled_claim(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_spec *tmpl = NULL, *claim = NULL, *other = NULL;
	paddock_sandbox *pooled = NULL, *cold = NULL;
	const struct paddock_sandbox_opts opts = { .pooled = true };
	const char *argv[] = { "true", NULL };
	struct paddock_exec_opts o = { .argv = argv, .fds = { -1, -1, -1 } };
	char cold_out[8192], pooled_out[8192];
	char *cold_limits, *pooled_limits;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&tmpl, &err), 0);
	assert_int_equal(paddock_spec_set(tmpl, "limits.memory", "256M", &err), 0);
	if (paddock_sandbox_create_with(ctx, tmpl, &opts, &pooled, &err) < 0)
		fail_msg("create pooled: %s", err.msg);

	/* nothing runs in a pooled sandbox before its claim */
	assert_int_equal(paddock_exec_start(pooled, &o, on_exit_cb, NULL, NULL, &err), -EBUSY);

	/* another template is refused, and the sandbox stays claimable */
	assert_int_equal(paddock_spec_new(&other, &err), 0);
	assert_int_equal(paddock_spec_set(other, "limits.memory", "256M", &err), 0);
	assert_int_equal(paddock_spec_set(other, "cwd", "/tmp", &err), 0);
	assert_int_equal(paddock_sandbox_claim(pooled, other, &err), -EINVAL);

	/* the claim's own fields: hostname, env, timeout */
	assert_int_equal(paddock_spec_new(&claim, &err), 0);
	assert_int_equal(paddock_spec_set(claim, "limits.memory", "256M", &err), 0);
	assert_int_equal(paddock_spec_set(claim, "hostname", "claimed", &err), 0);
	assert_int_equal(paddock_spec_set(claim, "env", "GREETING=hello from the claim", &err), 0);
	assert_int_equal(paddock_spec_set(claim, "limits.timeout_s", "60", &err), 0);
	if (paddock_sandbox_claim(pooled, claim, &err) < 0)
		fail_msg("claim: %s", err.msg);
	assert_int_equal(paddock_sandbox_claim(pooled, claim, &err), -EINVAL); /* once only */

	if (paddock_sandbox_create(ctx, claim, &cold, &err) < 0)
		fail_msg("create cold: %s", err.msg);
	sandbox_facts(base, cold, cold_out, sizeof(cold_out));
	assert_non_null(strstr(cold_out, "claimed\nhello from the claim\n"));
	sandbox_facts(base, pooled, pooled_out, sizeof(pooled_out));
	assert_string_equal(pooled_out, cold_out);
	if (geteuid() == 0)
		assert_non_null(strstr(cold_out, "=268435456\n")); /* the cgroup facts were read */
	assert_int_equal(paddock_sandbox_landlock_abi(pooled), paddock_sandbox_landlock_abi(cold));
	cold_limits = report_limits(base, cold);
	pooled_limits = report_limits(base, pooled);
	assert_string_equal(pooled_limits, cold_limits);
	free(cold_limits);
	free(pooled_limits);

	paddock_sandbox_free(pooled);
	paddock_sandbox_free(cold);
	paddock_spec_free(tmpl);
	paddock_spec_free(claim);
	paddock_spec_free(other);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

static paddock_spec *spec_with(const char *const *fields)
{
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	for (; *fields; fields += 2)
		if (paddock_spec_set(spec, fields[0], fields[1], &err) < 0)
			fail_msg("%s: %s", fields[0], err.msg);
	return spec;
}

/*
 * Limits are bound at the claim: a pool made from A serves B, which differs in every limit
 * but `required`. From inside and from the host (cgroup files, rlimits, disk size, how many
 * processes fit, the report's limits) the claimed sandbox is a cold one made from B.
 */
static void test_pooled_claim_limits(void **state)
{
	static const char *const a_fields[] = { "limits.memory", "256M", "limits.pids", "64",
						"limits.cpus",	 "1",	 NULL };
	static const char *const b_fields[] = { "hostname",
						"bee",
						"limits.memory",
						"128M",
						"limits.pids",
						"32",
						"limits.cpus",
						"0.5",
						"limits.cpu_time_s",
						"5",
						"limits.file_size",
						"10M",
						"limits.nofile",
						"256",
						"limits.disk",
						"64M",
						"limits.timeout_s",
						"120",
						NULL };
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_spec *a = spec_with(a_fields), *b = spec_with(b_fields);
	paddock_sandbox *pooled = NULL, *cold = NULL;
	const struct paddock_sandbox_opts opts = { .pooled = true };
	char cold_out[8192], pooled_out[8192], *ta = NULL, *tb = NULL;
	char *cold_limits, *pooled_limits;
	int cold_forks, pooled_forks;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	/* one template */
	assert_int_equal(paddock_spec_template_json(a, &ta, &err), 0);
	assert_int_equal(paddock_spec_template_json(b, &tb, &err), 0);
	assert_string_equal(ta, tb);
	if (paddock_sandbox_create_with(ctx, a, &opts, &pooled, &err) < 0)
		fail_msg("create pooled: %s", err.msg);
	if (paddock_sandbox_claim(pooled, b, &err) < 0)
		fail_msg("claim: %s", err.msg);
	if (paddock_sandbox_create(ctx, b, &cold, &err) < 0)
		fail_msg("create cold: %s", err.msg);

	sandbox_facts(base, cold, cold_out, sizeof(cold_out));
	sandbox_facts(base, pooled, pooled_out, sizeof(pooled_out));
	assert_string_equal(pooled_out, cold_out);
	/* B's values, not A's */
	assert_non_null(strstr(cold_out, "disk 65536K\n"));
	/* dash's `ulimit -a` */
	assert_non_null(strstr(cold_out, "\ntime(seconds)        5\n"));
	assert_non_null(strstr(cold_out, "\nnofiles              256\n"));
	if (geteuid() == 0) {
		assert_true(strstr(cold_out, "memory.limit_in_bytes=134217728\n") ||
			    strstr(cold_out, "memory.max=134217728\n"));
		assert_non_null(strstr(cold_out, "pids.max=32\n"));
		assert_true(strstr(cold_out, "cpu.cfs_quota_us=50000\n") ||
			    strstr(cold_out, "cpu.max=50000 100000\n"));
	} else {
		assert_non_null(strstr(cold_out, "\nprocess              32\n"));
	}

	/* a fork bomb stops at B's pids */
	cold_forks = fork_bomb(base, cold);
	pooled_forks = fork_bomb(base, pooled);
	assert_int_equal(pooled_forks, cold_forks);
	assert_true(cold_forks > 20 && cold_forks < 32);

	cold_limits = report_limits(base, cold);
	pooled_limits = report_limits(base, pooled);
	assert_string_equal(pooled_limits, cold_limits);
	if (!strstr(cold_limits, "\"pids\":{\"value\":32,"))
		fail_msg("limits: %s", cold_limits);

	free(cold_limits);
	free(pooled_limits);
	free(ta);
	free(tb);
	paddock_sandbox_free(pooled);
	paddock_sandbox_free(cold);
	paddock_spec_free(a);
	paddock_spec_free(b);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* What a sandbox with a secret TOKEN shows of it: the env (placeholder masked), the CA files. */
static const char *const secret_facts[] = {
	"sh", "-c",
	"env | sort | grep -v '^_=' | sed 's/^TOKEN=.*/TOKEN=<placeholder>/'; "
	"echo \"shape $(printf %s \"$TOKEN\" | tr 'A-Za-z0-9' "
	"'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')\"; "
	"ls -ln /etc/paddock | awk 'NR > 1 { print $1, $3, $4, $NF }'; "
	"grep -c 'BEGIN CERTIFICATE' /etc/paddock/ca.pem; "
	"n=$(wc -c < /etc/paddock/ca.pem); "
	"tail -c \"$n\" /etc/paddock/ca-bundle.pem | cmp -s - /etc/paddock/ca.pem && echo bundle "
	"ends with the CA; "
	"echo base $(head -c -\"$n\" /etc/paddock/ca-bundle.pem | sha256sum); "
	"touch /etc/paddock/ca.pem 2>/dev/null || echo the CA is read-only",
	NULL
};

/* The sandbox's own $TOKEN, sent over plain HTTP to an address (no secret's host) by proxy. */
static const char *leak_script =
	"import os, socket, sys\n"
	"port = os.environ['http_proxy'].rsplit(':', 1)[1].strip('/')\n"
	"s = socket.create_connection(('127.0.0.1', int(port)), timeout=10)\n"
	"t = sys.argv[1]\n"
	"s.sendall(('GET http://127.0.0.1:%s/ HTTP/1.1\\r\\nHost: 127.0.0.1:%s\\r\\n'\n"
	"           'X-Token: %s\\r\\nConnection: close\\r\\n\\r\\n' % (t, t, "
	"os.environ['TOKEN'])).encode())\n"
	"out = b''\n"
	"while True:\n"
	"    b = s.recv(4096)\n"
	"    if not b:\n"
	"        break\n"
	"    out += b\n"
	"print(out.decode(errors='replace'))\n";

static const char *token_of(struct event_base *base, paddock_sandbox *sb)
{
	const char *argv[] = { "sh", "-c", "printf %s \"$TOKEN\"", NULL };

	return run_in(base, sb, argv, NULL);
}

/*
 * Secrets are bound at the claim: a pool made without secrets serves a spec with one. From
 * inside, the claimed sandbox has the placeholder (never the value), /etc/paddock/ca.pem and
 * ca-bundle.pem and the CA variables as a cold sandbox of the claim's spec has them (the CA
 * itself differs per sandbox); its proxy knows the claim's placeholder (a leak of it is
 * blocked, naming the secret). A second pooled sandbox claimed with another value has only
 * its own placeholder.
 */
static void test_pooled_claim_secrets(void **state)
{
	static const char *const tmpl_fields[] = { "network.allow", "127.0.0.1", NULL };
	static const char *const one_fields[] = { "network.allow", "127.0.0.1", "secrets",
						  "TOKEN=env:PD_TEST_TOKEN_ONE@api.example", NULL };
	static const char *const two_fields[] = { "network.allow", "127.0.0.1", "secrets",
						  "TOKEN=env:PD_TEST_TOKEN_TWO@api.example", NULL };
	static const char one[] = "ghp_Val1dTok3nNumberOne0123456789abcdef";
	static const char two[] = "ghp_Val1dTok3nNumberTwo0123456789abcdef";
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_spec *tmpl, *s1, *s2;
	paddock_sandbox *p1 = NULL, *p2 = NULL, *cold = NULL;
	const struct paddock_sandbox_opts opts = { .pooled = true };
	char cold_out[8192], pooled_out[8192], ph1[256], ph2[256], port[16], *ta = NULL, *tb = NULL;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int lfd;

	(void)state;
	assert_int_equal(setenv("PD_TEST_TOKEN_ONE", one, 1), 0);
	assert_int_equal(setenv("PD_TEST_TOKEN_TWO", two, 1), 0);
	tmpl = spec_with(tmpl_fields);
	s1 = spec_with(one_fields);
	s2 = spec_with(two_fields);
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	/* secrets are not part of the template */
	assert_int_equal(paddock_spec_template_json(tmpl, &ta, &err), 0);
	assert_int_equal(paddock_spec_template_json(s1, &tb, &err), 0);
	assert_string_equal(ta, tb);

	if (paddock_sandbox_create_with(ctx, tmpl, &opts, &p1, &err) < 0 ||
	    paddock_sandbox_create_with(ctx, tmpl, &opts, &p2, &err) < 0)
		fail_msg("create pooled: %s", err.msg);
	if (paddock_sandbox_claim(p1, s1, &err) < 0)
		fail_msg("claim: %s", err.msg);
	if (paddock_sandbox_create(ctx, s1, &cold, &err) < 0)
		fail_msg("create cold: %s", err.msg);

	snprintf(cold_out, sizeof(cold_out), "%s", run_in(base, cold, secret_facts, NULL));
	snprintf(pooled_out, sizeof(pooled_out), "%s", run_in(base, p1, secret_facts, NULL));
	assert_string_equal(pooled_out, cold_out);
	if (!strstr(cold_out, "\nSSL_CERT_FILE=/etc/paddock/ca-bundle.pem\n") ||
	    !strstr(cold_out, "\nNODE_EXTRA_CA_CERTS=/etc/paddock/ca.pem\n") ||
	    !strstr(cold_out, "\n1\nbundle ends with the CA\n") ||
	    !strstr(cold_out, "\nthe CA is read-only"))
		fail_msg("a cold sandbox with a secret: %s", cold_out);
	assert_null(strstr(pooled_out, one));

	/* the placeholder is the claim's: the same shape as the value, not the value */
	snprintf(ph1, sizeof(ph1), "%s", token_of(base, p1));
	assert_int_equal(strlen(ph1), strlen(one));
	assert_string_not_equal(ph1, one);
	assert_int_equal(strncmp(ph1, "ghp_", 4), 0);
	/* ...and each sandbox's CA its own */
	{
		const char *ca[] = { "cat", "/etc/paddock/ca.pem", NULL };
		char ca_cold[4096];

		snprintf(ca_cold, sizeof(ca_cold), "%s", run_in(base, cold, ca, NULL));
		assert_string_not_equal(run_in(base, p1, ca, NULL), ca_cold);
	}

	/* the supervisor's side: its proxy substitutes for, and stops leaks of, that placeholder */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(port, sizeof(port), "%u", ntohs(sa.sin_port));
	{
		const char *argv[] = { "python3", "-c", leak_script, port, NULL };
		const char *out = run_in(base, p1, argv, NULL);

		if (!strstr(out, "placeholder of secret TOKEN"))
			fail_msg("a leak of the claim's placeholder was not stopped: %s", out);
	}

	/* a claim whose secret cannot be read fails and leaves the sandbox pooled */
	{
		static const char *const bad_fields[] = {
			"network.allow", "127.0.0.1", "secrets",
			"TOKEN=env:PD_TEST_TOKEN_UNSET@api.example", NULL
		};
		paddock_spec *bad = spec_with(bad_fields);

		unsetenv("PD_TEST_TOKEN_UNSET");
		assert_true(paddock_sandbox_claim(p2, bad, &err) < 0);
		assert_int_equal(
			paddock_exec_start(p2,
					   &(struct paddock_exec_opts){
						   .argv = (const char *[]){ "true", NULL },
						   .fds = { -1, -1, -1 } },
					   on_exit_cb, NULL, NULL, &err),
			-EBUSY);
		paddock_spec_free(bad);
	}

	/* a second claim, another value: its own placeholder only */
	if (paddock_sandbox_claim(p2, s2, &err) < 0)
		fail_msg("claim: %s", err.msg);
	snprintf(ph2, sizeof(ph2), "%s", token_of(base, p2));
	assert_int_equal(strlen(ph2), strlen(two));
	assert_string_not_equal(ph2, two);
	assert_string_not_equal(ph2, ph1);
	assert_null(strstr(run_in(base, p2, secret_facts, NULL), one));
	{
		const char *argv[] = { "python3", "-c", leak_script, port, NULL };
		const char *out = run_in(base, p2, argv, NULL);

		if (!strstr(out, "placeholder of secret TOKEN"))
			fail_msg("a leak of the second claim's placeholder was not stopped: %s",
				 out);
	}

	close(lfd);
	free(ta);
	free(tb);
	paddock_sandbox_free(p1);
	paddock_sandbox_free(p2);
	paddock_sandbox_free(cold);
	paddock_spec_free(tmpl);
	paddock_spec_free(s1);
	paddock_spec_free(s2);
	paddock_ctx_free(ctx);
	event_base_free(base);
	unsetenv("PD_TEST_TOKEN_ONE");
	unsetenv("PD_TEST_TOKEN_TWO");
}

/*
 * What a sandbox shows of its /workspace: the host file, owners and modes, its mount line
 * (mountinfo but for the mount ids and propagation, which differ per mount), the one mount
 * there, and a file it writes ($1 names it, the output does not).
 */
static const char *const workspace_facts[] = {
	"sh",
	"-c",
	"cat /workspace/host-file; stat -c '%u %g %a %n' /workspace /workspace/host-file; "
	"awk '$5 == \"/workspace\"' /proc/self/mountinfo | "
	"sed -E 's/^[0-9]+ [0-9]+ //; s/ (shared|master|propagate_from):[0-9]+//g'; "
	"echo inside >/workspace/by-\"$1\" && stat -c '%u %g %a' /workspace/by-\"$1\"; "
	"touch /by-\"$1\" 2>/dev/null || echo the rest is read-only",
	"sh",
	NULL,
	NULL
};

static const char *workspace_facts_of(struct event_base *base, paddock_sandbox *sb,
				      const char *name)
{
	const char *argv[ELEMENTSOF(workspace_facts)];

	memcpy(argv, workspace_facts, sizeof(argv));
	argv[4] = name;
	return run_in(base, sb, argv, NULL);
}

static void make_host_dir(char *dir, const char *content)
{
	char path[256];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/host-file", dir);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "%s\n", content);
	assert_int_equal(fclose(f), 0);
	/* as root, a writable directory must be an unprivileged user's (root's is refused) */
	if (geteuid() == 0) {
		const char *e = getenv("PADDOCK_TEST_UID");
		unsigned id = e && *e ? (unsigned)strtoul(e, NULL, 10) : 4242;

		assert_int_equal(chown(dir, id, id), 0);
		assert_int_equal(chown(path, id, id), 0);
	}
}

static void host_owner(const char *dir, const char *file, char *buf, size_t size)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	assert_int_equal(stat(path, &st), 0);
	snprintf(buf, size, "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
}

/*
 * Rootless, a pooled init clones a claim's workspace from the host tree it kept when it was
 * made: a mount made on the host since is not in it. The supervisor sends the device and
 * inode it found at the path; init binds that directory or none. Here the supervisor's
 * view changes (a child of the test in a mount namespace of its own, a tmpfs over `dir`),
 * the claim must fail naming the workspace, and bind nothing.
 */
static void claim_after_host_mount(paddock_ctx *ctx, paddock_spec *tmpl, const char *dir)
{
	const struct paddock_sandbox_opts opts = { .pooled = true };
	paddock_sandbox *p = NULL;
	paddock_error err = { 0 };
	char path[256];
	int status;
	pid_t pid;

	if (paddock_sandbox_create_with(ctx, tmpl, &opts, &p, &err) < 0)
		fail_msg("create pooled: %s", err.msg);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		paddock_spec *s = NULL;
		uid_t uid = geteuid();
		gid_t gid = getegid();
		char map[64];
		int fd, r;

		/* our own view: the same path is another directory now */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(10);
		fd = open("/proc/self/setgroups", O_WRONLY);
		if (fd < 0 || write(fd, "deny", 4) != 4)
			_exit(11);
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		fd = open("/proc/self/uid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
			_exit(12);
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		fd = open("/proc/self/gid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
			_exit(13);
		close(fd);
		if (mount("none", dir, "tmpfs", 0, NULL) < 0 || mkdir(path, 0755) < 0)
			_exit(14);
		if (paddock_spec_new(&s, &err) < 0 ||
		    paddock_spec_set(s, "workspace", path, &err) < 0)
			_exit(15);
		r = paddock_sandbox_claim(p, s, &err);
		if (r != -EXDEV || strcmp(err.field, "workspace") != 0) {
			fprintf(stderr, "claim after a host mount: %d %s: %s\n", r, err.field,
				err.msg);
			_exit(16);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the claim killed it: nothing half-bound serves */
	paddock_sandbox_free(p);
}

/*
 * The workspace is bound at the claim: a pool made without one serves a spec with one. From
 * inside, /workspace of the claimed sandbox is a cold sandbox's of the claim's spec: the host
 * file, owners, modes, the one mount with its flags, writes Landlock allows; what it writes
 * belongs on the host to whom a cold sandbox's writes belong. A second claim with another
 * directory sees only its own. Rootless (the tree made by init from the host tree it kept,
 * as a cold init makes it before its pivot) as well as root (an idmapped tree from the
 * supervisor).
 */
static void test_pooled_claim_workspace(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_spec *tmpl = NULL, *s1 = NULL, *s2 = NULL;
	paddock_sandbox *p1 = NULL, *p2 = NULL, *cold = NULL;
	const struct paddock_sandbox_opts opts = { .pooled = true };
	char d1[] = "/tmp/pd-ws-one.XXXXXX", d2[] = "/tmp/pd-ws-two.XXXXXX";
	char cold_out[4096], pooled_out[4096], cold_owner[32], pooled_owner[32], cmd[128];
	char *ta = NULL, *tb = NULL;

	(void)state;
	make_host_dir(d1, "one");
	make_host_dir(d2, "two");
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&tmpl, &err), 0);
	assert_int_equal(paddock_spec_new(&s1, &err), 0);
	assert_int_equal(paddock_spec_set(s1, "workspace", d1, &err), 0);
	assert_int_equal(paddock_spec_new(&s2, &err), 0);
	assert_int_equal(paddock_spec_set(s2, "workspace", d2, &err), 0);
	/* the workspace is not part of the template */
	assert_int_equal(paddock_spec_template_json(tmpl, &ta, &err), 0);
	assert_int_equal(paddock_spec_template_json(s1, &tb, &err), 0);
	assert_string_equal(ta, tb);

	if (paddock_sandbox_create_with(ctx, tmpl, &opts, &p1, &err) < 0 ||
	    paddock_sandbox_create_with(ctx, tmpl, &opts, &p2, &err) < 0)
		fail_msg("create pooled: %s", err.msg);

	/* a claim whose directory does not exist is refused before BIND: still pooled */
	{
		paddock_spec *bad = NULL;

		assert_int_equal(paddock_spec_new(&bad, &err), 0);
		assert_int_equal(paddock_spec_set(bad, "workspace", "/nonexistent/pd-ws", &err), 0);
		assert_true(paddock_sandbox_claim(p1, bad, &err) < 0);
		assert_int_equal(
			paddock_exec_start(p1,
					   &(struct paddock_exec_opts){
						   .argv = (const char *[]){ "true", NULL },
						   .fds = { -1, -1, -1 } },
					   on_exit_cb, NULL, NULL, &err),
			-EBUSY);
		paddock_spec_free(bad);
	}

	if (paddock_sandbox_claim(p1, s1, &err) < 0)
		fail_msg("claim: %s", err.msg);
	if (paddock_sandbox_create(ctx, s1, &cold, &err) < 0)
		fail_msg("create cold: %s", err.msg);
	snprintf(cold_out, sizeof(cold_out), "%s", workspace_facts_of(base, cold, "cold"));
	snprintf(pooled_out, sizeof(pooled_out), "%s", workspace_facts_of(base, p1, "pooled"));
	assert_string_equal(pooled_out, cold_out);
	if (!strstr(cold_out, "one\n") || !strstr(cold_out, " /workspace rw,nosuid,nodev") ||
	    !strstr(cold_out, "the rest is read-only"))
		fail_msg("a cold sandbox's workspace: %s", cold_out);
	host_owner(d1, "by-cold", cold_owner, sizeof(cold_owner));
	host_owner(d1, "by-pooled", pooled_owner, sizeof(pooled_owner));
	assert_string_equal(pooled_owner, cold_owner);

	/* a second claim, another directory: its own only */
	if (paddock_sandbox_claim(p2, s2, &err) < 0)
		fail_msg("claim: %s", err.msg);
	{
		const char *ls[] = { "sh", "-c",
				     "ls -A /workspace | tr '\\n' ' '; cat /workspace/host-file",
				     NULL };

		assert_string_equal(run_in(base, p2, ls, NULL), "host-file two\n");
	}

	if (geteuid() != 0)
		claim_after_host_mount(ctx, tmpl, d2);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d1, d2);
	assert_int_equal(system(cmd), 0);
	free(ta);
	free(tb);
	paddock_sandbox_free(p1);
	paddock_sandbox_free(p2);
	paddock_sandbox_free(cold);
	paddock_spec_free(tmpl);
	paddock_spec_free(s1);
	paddock_spec_free(s2);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

/* An unclaimed pooled sandbox freed, or its init gone, leaves nothing. */
static void test_pooled_unclaimed_free(void **state)
{
	struct event_base *base = event_base_new();
	paddock_ctx *ctx = NULL;
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;
	const struct paddock_sandbox_opts opts = { .pooled = true };
	int before;

	(void)state;
	assert_int_equal(paddock_ctx_new(base, &ctx, &err), 0);
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	paddock_sandbox_free(make_sandbox(ctx)); /* lazily opened library fds first */
	before = count_fds();
	for (int i = 0; i < 5; i++) {
		paddock_sandbox *sb = NULL;

		if (paddock_sandbox_create_with(ctx, spec, &opts, &sb, &err) < 0)
			fail_msg("create pooled: %s", err.msg);
		paddock_sandbox_free(sb);
	}
	/* an unclaimed init goes on its own: its exit is reaped by the loop, under load later */
	for (int i = 0; i < 500; i++) {
		siginfo_t si;

		/* WNOWAIT: look without reaping, which is the library's to do */
		errno = 0;
		if (count_fds() == before &&
		    waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD)
			break;
		loop_for(base, 10);
	}
	assert_int_equal(count_fds(), before);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_fd_or_child_leaks),
		cmocka_unit_test(test_state_persists_between_commands),
		cmocka_unit_test(test_two_sandboxes_have_distinct_ids),
		cmocka_unit_test(test_given_id),
		cmocka_unit_test(test_freed_slot_is_reused),
		cmocka_unit_test(test_free_with_command_running),
		cmocka_unit_test(test_bad_exec_options),
		cmocka_unit_test(test_signal_reaches_command),
		cmocka_unit_test(test_files_round_trip_and_escapes),
		cmocka_unit_test(test_pipes_and_close_stdin),
		cmocka_unit_test(test_exec_timeout_and_terminate),
		cmocka_unit_test(test_socket_in_sandbox_netns),
		cmocka_unit_test(test_release_and_adopt),
		cmocka_unit_test(test_sweep_orphans),
		cmocka_unit_test(test_recover_ended_command),
		cmocka_unit_test(test_async_start),
		cmocka_unit_test(test_listen_in_sandbox_netns),
		cmocka_unit_test(test_pooled_claim),
		cmocka_unit_test(test_pooled_claim_limits),
		cmocka_unit_test(test_pooled_claim_secrets),
		cmocka_unit_test(test_pooled_claim_workspace),
		cmocka_unit_test(test_pooled_unclaimed_free),
		cmocka_unit_test(test_pause_and_resume),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
