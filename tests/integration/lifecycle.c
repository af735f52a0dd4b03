/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock's lifecycle, through the public API only: many sandboxes in a row leak no fd
 * and no child; several commands share one sandbox's state; freeing a sandbox with work in
 * flight leaves no process; bad exec options are refused by field.
 */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "paddock/paddock.h"

struct waiter {
	struct event_base *base;
	bool done;
	struct paddock_result res;
};

static void on_exit_cb(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct waiter *w = userdata;

	(void)ex;
	w->res = *res;
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
		"sh", "-c",
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
	assert_int_equal(paddock_sandbox_write_file(sb, "/workspace/hello.txt", "hi\n", 3, 0640,
						    &err),
			 0);
	assert_string_equal(run_in(base, sb, cat, NULL), "hi\n");
	assert_string_equal(run_in(base, sb, owner, NULL), "user 640\n");
	assert_int_equal(paddock_sandbox_read_file(sb, "workspace/hello.txt", 100, &data, &len,
						   &err),
			 0);
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
	assert_int_equal(paddock_sandbox_read_file(sb, "/etc/hostname", 100, &data, &len, &err),
			 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_fd_or_child_leaks),
		cmocka_unit_test(test_state_persists_between_commands),
		cmocka_unit_test(test_two_sandboxes_have_distinct_ids),
		cmocka_unit_test(test_free_with_command_running),
		cmocka_unit_test(test_bad_exec_options),
		cmocka_unit_test(test_signal_reaches_command),
		cmocka_unit_test(test_files_round_trip_and_escapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
