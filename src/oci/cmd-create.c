/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `create` and `run`: read the bundle, fork the supervisor (supervisor.c) and wait until it
 * holds the container or says why not. `create` then writes the pid file and returns; `run`
 * starts the process and waits for the supervisor, whose status is the container's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"

struct create_args {
	struct oci_launch_args launch;
	const char *bundle, *id;
};

static int parse(int argc, char **argv, bool run, struct create_args *a)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		OCI_LAUNCH_LONG_OPTIONS,
		{ "no-pivot", no_argument, NULL, OCI_OPT_IGNORED },
		{ "no-new-keyring", no_argument, NULL, OCI_OPT_IGNORED },
		{ "keep", no_argument, NULL, OCI_OPT_IGNORED },
		{ "no-subreaper", no_argument, NULL, OCI_OPT_IGNORED },
		{ 0 },
	};
	int c, r;

	*a = (struct create_args){ .bundle = "." };
	while ((c = getopt_long_only(argc, argv, "b:d", opts, NULL)) != -1) {
		r = oci_launch_option(&a->launch, c, optarg);
		if (r < 0)
			return 1;
		if (r > 0)
			continue;
		if (c != 'b')
			return oci_failf("usage: %s [--bundle DIR] [--pid-file FILE] "
					 "[--console-socket SOCK] ID",
					 run ? "run" : "create");
		a->bundle = optarg;
	}
	if (optind != argc - 1)
		return oci_failf("%s: expected one container id", run ? "run" : "create");
	a->id = argv[optind];
	return 0;
}

/* Forks the supervisor; returns its pid once it is ready, or -1 (the error logged). */
static pid_t spawn(struct oci_bundle *b, const struct create_args *a, bool foreground)
{
	paddock_error err = { 0 };
	char buf[1024];
	int p[2];
	pid_t pid;
	ssize_t n;
	size_t len = 0;

	if (oci_state_mkdir(a->id, &err) < 0)
		return oci_fail(&err), -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		(void)oci_state_remove(a->id, &err);
		return oci_failf("pipe: %s", strerror(errno)), -1;
	}
	pid = fork();
	if (pid < 0) {
		(void)oci_state_remove(a->id, &err);
		return oci_failf("fork: %s", strerror(errno)), -1;
	}
	if (pid == 0) {
		struct oci_create_opts o = { .id = a->id,
					     .console_socket = a->launch.console_socket,
					     .foreground = foreground,
					     .ready_fd = p[1] };

		close(p[0]);
		oci_supervise(b, &o);
	}
	close(p[1]);
	while (len < sizeof(buf) - 1 && (n = read(p[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	buf[len] = '\0';
	if (strcmp(buf, "ok\n")) {
		/* the supervisor logged it and removed the state: say it once more on stderr */
		if (!len)
			oci_failf("the container's supervisor ended during create");
		else if (arg_log)
			dprintf(STDERR_FILENO, "paddock-oci: %s", buf);
		(void)waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int cmd_create(int argc, char **argv)
{
	struct create_args a;
	struct oci_bundle b = { 0 };
	paddock_error err = { 0 };
	pid_t pid;

	if (parse(argc, argv, false, &a))
		return 1;
	if (oci_check_id(a.id, &err) < 0 || oci_bundle_load(a.bundle, &b, &err) < 0)
		return oci_fail(&err);
	pid = spawn(&b, &a, false);
	oci_bundle_release(&b);
	if (pid < 0)
		return 1;
	if (a.launch.pid_file && oci_write_pid_file(a.launch.pid_file, pid, &err) < 0) {
		(void)kill(pid, SIGKILL);
		return oci_fail(&err);
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	struct create_args a;
	struct oci_bundle b = { 0 };
	paddock_error err = { 0 };
	json_t *ans = NULL;
	int status;
	pid_t pid;

	if (parse(argc, argv, true, &a))
		return 1;
	if (oci_check_id(a.id, &err) < 0 || oci_bundle_load(a.bundle, &b, &err) < 0)
		return oci_fail(&err);
	pid = spawn(&b, &a, !a.launch.detach);
	oci_bundle_release(&b);
	if (pid < 0)
		return 1;
	if (a.launch.pid_file && oci_write_pid_file(a.launch.pid_file, pid, &err) < 0)
		goto fail;
	{
		json_t *req = json_pack("{s:s}", "op", "start");
		int r = oci_wire_call(a.id, req, NULL, 0, &ans, &err);

		json_decref(req);
		json_decref(ans);
		if (r < 0)
			goto fail;
	}
	if (a.launch.detach)
		return 0;
	/* the terminal's signals reach the supervisor too (same process group): it forwards */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	(void)oci_state_remove(a.id, &err); /* run deletes what it made, as runc run does */
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
fail:
	oci_fail(&err);
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	(void)oci_state_remove(a.id, &err);
	return 1;
}
