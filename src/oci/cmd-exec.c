/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `exec`: a process in a running container. The supervisor starts it in the sandbox (as
 * libpaddock starts any command: every confinement of the container's process), with our
 * stdio or a terminal of the container's devpts. This process stays to the end and exits
 * with the process's status, forwarding the signals it gets: with --detach a child of ours
 * does, and the pid file names it (the engine reaps it, and signals it directly). If it is
 * killed outright, the supervisor sees the connection close and kills the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

struct exec_args {
	struct oci_launch_args launch;
	const char *process, *cwd, *id;
	bool tty;
	json_t *env;
	char **cmd;
};

static int parse(int argc, char **argv, struct exec_args *a)
{
	static const struct option opts[] = {
		{ "process", required_argument, NULL, 'p' },
		OCI_LAUNCH_LONG_OPTIONS,
		{ "tty", no_argument, NULL, 't' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "user", required_argument, NULL, 'u' },
		{ "cap", required_argument, NULL, OCI_OPT_IGNORED },
		{ "no-new-privs", no_argument, NULL, OCI_OPT_IGNORED },
		{ "apparmor", required_argument, NULL, OCI_OPT_IGNORED },
		{ "process-label", required_argument, NULL, OCI_OPT_IGNORED },
		{ "ignore-paused", no_argument, NULL, OCI_OPT_IGNORED },
		{ "cgroup", required_argument, NULL, OCI_OPT_IGNORED },
		{ 0 },
	};
	int c, r;

	*a = (struct exec_args){ .env = json_array() };
	while ((c = getopt_long_only(argc, argv, "+dte:u:w:p:", opts, NULL)) != -1) {
		r = oci_launch_option(&a->launch, c, optarg);
		if (r < 0)
			return 1;
		if (r > 0)
			continue;
		switch (c) {
		case 'p':
			a->process = optarg;
			break;
		case 't':
			a->tty = true;
			break;
		case 'w':
			a->cwd = optarg;
			break;
		case 'e':
			json_array_append_new(a->env, json_string(optarg));
			break;
		case 'u':
			if (strcmp(optarg, "0") && strcmp(optarg, "0:0") &&
			    strcmp(optarg, "1000") && strcmp(optarg, "1000:1000"))
				return oci_failf(
					"--user: a paddock container runs processes as 0 or "
					"1000, got '%s'",
					optarg);
			break;
		default:
			return oci_failf("usage: exec [--process FILE | ID COMMAND...] [--detach] "
					 "[--pid-file FILE] [--console-socket SOCK] [--tty] ID");
		}
	}
	if (optind >= argc)
		return oci_failf("exec: expected a container id");
	a->id = argv[optind];
	a->cmd = argv + optind + 1;
	if (!a->process && !a->cmd[0])
		return oci_failf("exec: expected --process FILE or a command");
	return 0;
}

/* The process object: the --process file, or the command line's with the container's env. */
static int process_json(const struct exec_args *a, json_t **ret, paddock_error *err)
{
	json_t *p;

	if (a->process) {
		int r = oci_read_json(a->process, OCI_MSG_MAX / 2, &p, NULL, err);

		if (r < 0) {
			snprintf(err->field, sizeof(err->field), "--process");
			return r;
		}
	} else {
		json_t *args = json_array();

		for (char **s = a->cmd; *s; s++)
			json_array_append_new(args, json_string(*s));
		p = json_pack("{s:o,s:s}", "args", args, "cwd", a->cwd ? a->cwd : "/");
	}
	if (a->cwd)
		json_object_set_new(p, "cwd", json_string(a->cwd));
	if (json_array_size(a->env)) {
		json_t *env = json_object_get(p, "env");

		if (!json_is_array(env)) {
			env = json_array();
			json_object_set_new(p, "env", env);
		}
		json_array_extend(env, a->env);
	}
	if (a->tty)
		json_object_set_new(p, "terminal", json_true());
	*ret = p;
	return 0;
}

/* Starts the process; with a terminal, hands it to the console socket. */
static int start(const struct exec_args *a, json_t *process, int *ret_conn, paddock_error *err)
{
	bool tty = json_is_true(json_object_get(process, "terminal"));
	json_t *req = json_pack("{s:s,s:O,s:b}", "op", "exec", "process", process, "tty", tty);
	json_t *ans = NULL;
	int fds[3] = { 0, 1, 2 }, master = -1, conn = -1;
	size_t nfds = 1;
	int r;

	if (tty && !a->launch.console_socket) {
		json_decref(req);
		err->code = EINVAL;
		snprintf(err->field, sizeof(err->field), "--console-socket");
		snprintf(err->msg, sizeof(err->msg), "a terminal needs a console socket");
		return -EINVAL;
	}
	r = oci_wire_connect(a->id, &conn, err);
	if (r >= 0)
		r = oci_wire_send(conn, req, fds, tty ? 0 : 3, err);
	json_decref(req);
	if (r >= 0)
		r = oci_wire_recv(conn, 30000, &ans, &master, &nfds, err);
	json_decref(ans);
	if (r >= 0 && tty) {
		if (nfds != 1) {
			err->code = EPROTO;
			snprintf(err->msg, sizeof(err->msg), "no terminal from the supervisor");
			r = -EPROTO;
		} else {
			r = oci_send_console(a->launch.console_socket, master, err);
			close(master);
		}
	}
	if (r < 0) {
		if (conn >= 0)
			close(conn);
		return r;
	}
	*ret_conn = conn;
	return 0;
}

/* Until the process ends: its status, forwarding our signals. */
static int follow(int conn, int sigfd)
{
	paddock_error err = { 0 };

	for (;;) {
		struct pollfd p[2] = { { .fd = conn, .events = POLLIN },
				       { .fd = sigfd, .events = POLLIN } };
		json_t *msg = NULL;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				json_t *req = json_pack("{s:s,s:i}", "op", "signal", "signal",
							(int)si.ssi_signo);

				(void)oci_wire_send(conn, req, NULL, 0, &err);
				json_decref(req);
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (oci_wire_recv(conn, 0, &msg, NULL, NULL, &err) < 0)
			return 128 + SIGKILL; /* the container went with its supervisor */
		if (json_object_get(msg, "exit")) {
			int status = (int)json_integer_value(json_object_get(msg, "exit"));

			json_decref(msg);
			return status & 0xff;
		}
		json_decref(msg);
	}
}

int cmd_exec(int argc, char **argv)
{
	struct exec_args a;
	paddock_error err = { 0 };
	json_t *process = NULL;
	sigset_t set;
	int sigfd, conn = -1, r, ready[2];
	pid_t pid;
	char c;

	if (parse(argc, argv, &a))
		return 1;
	r = oci_check_id(a.id, &err);
	if (r >= 0)
		r = process_json(&a, &process, &err);
	json_decref(a.env); /* in the process object now */
	a.env = NULL;
	if (r < 0)
		return oci_fail(&err);
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (!a.launch.detach) {
		r = start(&a, process, &conn, &err);
		json_decref(process);
		if (r < 0)
			return oci_fail(&err);
		if (a.launch.pid_file && oci_write_pid_file(a.launch.pid_file, getpid(), &err) < 0)
			return oci_fail(&err);
		return follow(conn, sigfd);
	}
	/* --detach: a child of ours waits for the process and is what the pid file names */
	if (pipe2(ready, O_CLOEXEC) < 0)
		return oci_failf("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return oci_failf("fork: %s", strerror(errno));
	if (pid == 0) {
		int null;

		close(ready[0]);
		r = start(&a, process, &conn, &err);
		if (r < 0) {
			oci_fail(&err);
			_exit(1);
		}
		(void)!write(ready[1], "k", 1);
		close(ready[1]);
		/* the process holds the engine's stdio now; we let go of ours */
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; null >= 0 && i < 3; i++)
			(void)dup2(null, i);
		_exit(follow(conn, sigfd));
	}
	close(ready[1]);
	json_decref(process);
	r = (int)read(ready[0], &c, 1);
	close(ready[0]);
	if (r != 1) {
		(void)waitpid(pid, NULL, 0);
		return 1; /* the child said why */
	}
	if (a.launch.pid_file && oci_write_pid_file(a.launch.pid_file, pid, &err) < 0) {
		(void)kill(pid, SIGKILL);
		return oci_fail(&err);
	}
	return 0;
}
