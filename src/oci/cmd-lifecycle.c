/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `start`, `kill`, `delete`, `pause`, `resume`, `update`: requests to the container's
 * supervisor, and delete's cleanup when there is none any more.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "oci.h"

#define DELETE_WAIT_MS 20000

static int one_id(int argc, char **argv, const char *what, const char **ret)
{
	if (optind != argc - 1)
		return oci_failf("%s: expected one container id", what);
	*ret = argv[optind];
	return 0;
}

static int request(const char *id, json_t *req)
{
	paddock_error err = { 0 };
	json_t *ans = NULL;
	int r;

	r = oci_wire_call(id, req, NULL, 0, &ans, &err);
	json_decref(req);
	json_decref(ans);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		struct oci_state st;

		if (oci_state_load(id, &st, &err) < 0)
			return oci_fail(&err);
		oci_state_release(&st);
		/* containerd's shim and Podman recognise runc's words */
		return oci_failf("container not running: '%s'", id);
	}
	return r < 0 ? oci_fail(&err) : 0;
}

int cmd_start(int argc, char **argv)
{
	const char *id = NULL;
	paddock_error err = { 0 };

	while (getopt_long_only(argc, argv, "", (struct option[]){ { 0 } }, NULL) != -1)
		return oci_failf("usage: start ID");
	if (one_id(argc, argv, "start", &id))
		return 1;
	if (oci_check_id(id, &err) < 0)
		return oci_fail(&err);
	return request(id, json_pack("{s:s}", "op", "start"));
}

int cmd_kill(int argc, char **argv)
{
	static const struct option opts[] = { { "all", no_argument, NULL, 'a' }, { 0 } };
	paddock_error err = { 0 };
	bool all = false;
	int c, sig = SIGTERM;

	while ((c = getopt_long_only(argc, argv, "a", opts, NULL)) != -1) {
		if (c != 'a')
			return oci_failf("usage: kill [--all] ID [SIGNAL]");
		all = true;
	}
	if (optind >= argc || argc - optind > 2)
		return oci_failf("usage: kill [--all] ID [SIGNAL]");
	if (argc - optind == 2 && (sig = oci_parse_signal(argv[optind + 1])) < 0)
		return oci_failf("kill: unknown signal '%s'", argv[optind + 1]);
	if (oci_check_id(argv[optind], &err) < 0)
		return oci_fail(&err);
	return request(argv[optind],
		       json_pack("{s:s,s:i,s:b}", "op", "kill", "signal", sig, "all", all));
}

/* Waits until pid (started at `start`) is gone, at most ms. */
static bool wait_gone(pid_t pid, unsigned long long start, int ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool gone;

	if (fd < 0)
		return true;
	if (start && oci_proc_start(pid) != start) {
		close(fd);
		return true; /* another process has the pid now */
	}
	gone = poll(&p, 1, ms) > 0;
	close(fd);
	return gone;
}

/* The supervisor did not answer: SIGKILL it (checked by start time), and wait. */
static void kill_supervisor(const struct oci_state *st)
{
	int fd = (int)syscall(SYS_pidfd_open, st->pid, 0);

	if (fd < 0)
		return;
	if (oci_proc_start(st->pid) == st->start)
		(void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	close(fd);
	(void)wait_gone(st->pid, 0, DELETE_WAIT_MS);
}

int cmd_delete(int argc, char **argv)
{
	static const struct option opts[] = { { "force", no_argument, NULL, 'f' }, { 0 } };
	paddock_error err = { 0 };
	struct oci_state st;
	struct oci_hooks hooks = { 0 };
	bool force = false;
	const char *id = NULL;
	char *state;
	int c, r;

	while ((c = getopt_long_only(argc, argv, "f", opts, NULL)) != -1) {
		if (c != 'f')
			return oci_failf("usage: delete [--force] ID");
		force = true;
	}
	if (one_id(argc, argv, "delete", &id))
		return 1;
	r = oci_state_load(id, &st, &err);
	if (r == -ENOENT && force)
		return 0;
	if (r < 0)
		return oci_fail(&err);
	if (st.status == OCI_RUNNING && !force) {
		oci_state_release(&st);
		return oci_failf("container '%s' is running: stop it first, or delete --force", id);
	}
	if (st.status != OCI_STOPPED || oci_state_alive(&st)) {
		/* created (never started: runc deletes those too) or --force */
		json_t *ans = NULL,
		       *req = json_pack("{s:s,s:i,s:b}", "op", "kill", "signal", SIGKILL, "all", 1);

		r = oci_wire_call(id, req, NULL, 0, &ans, &err);
		json_decref(req);
		json_decref(ans);
		if (r < 0 || !wait_gone(st.pid, st.start, DELETE_WAIT_MS))
			kill_supervisor(&st);
	}
	/* the sandbox's init dies with its supervisor: make sure it is gone before we say so */
	if (st.init_pid > 0)
		(void)wait_gone(st.init_pid, 0, DELETE_WAIT_MS);
	st.status = OCI_STOPPED;
	state = oci_state_json(&st);
	if (st.hooks && oci_hooks_load(st.hooks, &hooks, &err) >= 0 && state &&
	    oci_hooks_run(&hooks, OCI_HOOK_POSTSTOP, state, &err) < 0)
		oci_warn("ignoring a failed poststop hook: %s", err.msg);
	oci_hooks_release(&hooks);
	free(state);
	r = oci_state_remove(id, &err);
	oci_state_release(&st);
	return r < 0 ? oci_fail(&err) : 0;
}

/* runc pause|resume ID: the container's supervisor freezes or thaws it (libpaddock). */
static int pause_resume(int argc, char **argv, const char *op)
{
	const char *id = NULL;
	paddock_error err = { 0 };

	while (getopt_long_only(argc, argv, "", (struct option[]){ { 0 } }, NULL) != -1)
		return oci_failf("usage: %s ID", op);
	if (one_id(argc, argv, op, &id))
		return 1;
	if (oci_check_id(id, &err) < 0)
		return oci_fail(&err);
	return request(id, json_pack("{s:s}", "op", op));
}

int cmd_pause(int argc, char **argv)
{
	return pause_resume(argc, argv, "pause");
}

int cmd_resume(int argc, char **argv)
{
	return pause_resume(argc, argv, "resume");
}

int cmd_update(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return oci_failf("update: changing a running container's resources is not supported by "
			 "paddock-oci yet; its limits are the ones it was created with");
}
