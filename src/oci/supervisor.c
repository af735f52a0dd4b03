/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor: one per container, forked by `create` (or `run`), the process the pid
 * file names. It makes the paddock sandbox (libpaddock: user, mount, pid, net, ipc, uts and
 * cgroup namespaces, seccomp, Landlock, limits; the egress proxy and secret broker live in
 * this process when the annotations ask for them), keeps the engine's stdio or a terminal
 * for the container's process, and serves the commands on <--root>/<id>/sock from one
 * libevent loop. When the container's process ends it records the status, kills whatever
 * is left (the sandbox goes whole), and exits with that status: the engine, a child
 * subreaper, reaps it as it would reap runc's init.
 *
 * Trust: requests come through a 0700 directory (the engine, or root); the container
 * reaches nothing here but through libpaddock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "paddock/oci.h"
#include "oci.h"

struct sup;

/* A command's connection: a request, or an exec that lives as long as it does. */
struct conn {
	struct sup *s;
	int fd;
	struct event *ev;
	paddock_exec *ex; /* exec: its process, until it ends */
	struct conn *next;
};

struct sup {
	struct event_base *base;
	paddock_ctx *ctx;
	paddock_sandbox *sb;
	struct oci_bundle *b;
	struct oci_state st;
	int listen_fd;
	struct event *listen_ev;
	struct event *sig_ev[8];
	paddock_exec *main;
	int pty_slave; /* the container's terminal until start, or -1 */
	bool ending;
	struct conn *conns;
};

static void save(struct sup *s)
{
	paddock_error err = { 0 };

	if (oci_state_save(&s->st, &err) < 0)
		oci_fail(&err);
}

static void reply(struct conn *c, json_t *msg, const int *fds, size_t nfds)
{
	paddock_error err = { 0 };

	if (msg && oci_wire_send(c->fd, msg, fds, nfds, &err) < 0)
		oci_debug("answer a command: %s", err.msg);
	json_decref(msg);
}

static void reply_error(struct conn *c, const paddock_error *err)
{
	reply(c, oci_wire_error(err), NULL, 0);
}

static void conn_free(struct conn *c)
{
	struct sup *s = c->s;

	for (struct conn **p = &s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	if (c->ex) {
		/* the exec's caller went away (SIGKILL): its process goes too, as runc's would not,
		 * but nothing else could wait for it or take its status */
		paddock_exec_set_callback(c->ex, NULL, NULL);
		(void)paddock_exec_signal(c->ex, SIGKILL, NULL);
	}
	event_free(c->ev);
	close(c->fd);
	free(c);
}

static void finish(struct sup *s, int status)
{
	if (s->ending)
		return;
	s->ending = true;
	s->st.status = OCI_STOPPED;
	s->st.exit_status = status;
	save(s);
	event_base_loopbreak(s->base);
}

/* ---- the container's process ---------------------------------------------------------- */

static void on_main_exit(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct sup *s = userdata;
	int status = res->signal ? 128 + res->signal : paddock_result_exit_status(res);

	(void)ex;
	s->main = NULL;
	oci_debug("container '%s': its process ended (%s, status %d)", s->st.id,
		  paddock_end_reason_to_string(res->reason), status);
	finish(s, status);
}

static void on_sandbox_exit(paddock_sandbox *sb, enum paddock_end_reason reason, void *userdata)
{
	struct sup *s = userdata;

	(void)sb;
	if (!s->main)
		finish(s, 128 + SIGKILL);
	oci_debug("container '%s': sandbox ended (%s)", s->st.id,
		  paddock_end_reason_to_string(reason));
}

static int start_process(struct sup *s, const struct oci_process *p, int fds[3], bool ctty,
			 paddock_exec_fn fn, void *userdata, paddock_exec **ret, paddock_error *err)
{
	struct paddock_exec_opts o = {
		.argv = (const char *const *)p->args,
		.env = (const char *const *)p->env,
		.cwd = p->cwd,
		.fds = { fds[0], fds[1], fds[2] },
		.timeout_s = -1, /* a container runs until it ends or is stopped */
		.ctty = ctty,
		.filter = s->b->filter,
		.filter_len = s->b->filter_len,
		.user_set = p->uid != 0,
		.uid = p->uid,
		.gid = p->gid,
	};

	/* the sandbox's user was chosen at create: root, or the sandbox user */
	if ((p->uid == 0) != (s->b->process.uid == 0)) {
		err->code = EINVAL;
		snprintf(err->field, sizeof(err->field), "process.user.uid");
		snprintf(err->msg, sizeof(err->msg), "%u: this container's processes run as uid %u",
			 p->uid, s->b->process.uid);
		return -EINVAL;
	}
	return paddock_exec_start(s->sb, &o, fn, userdata, ret, err);
}

static void op_start(struct sup *s, struct conn *c)
{
	paddock_error err = { 0 };
	int fds[3] = { 0, 1, 2 };
	bool tty = s->pty_slave >= 0;
	int r;

	if (s->st.status != OCI_CREATED) {
		err.code = EINVAL;
		snprintf(err.msg, sizeof(err.msg), "container '%s' is %s, not created", s->st.id,
			 oci_status_to_string(s->st.status));
		return reply_error(c, &err);
	}
	if (tty)
		fds[0] = fds[1] = fds[2] = s->pty_slave;
	r = start_process(s, &s->b->process, fds, tty, on_main_exit, s, &s->main, &err);
	if (r < 0)
		return reply_error(c, &err);
	s->st.status = OCI_RUNNING;
	save(s);
	/* the process has its stdio now: ours go, so the engine sees EOF when it closes them */
	if (s->pty_slave >= 0)
		close(s->pty_slave);
	s->pty_slave = -1;
	{
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		for (int i = 0; null >= 0 && i < 3; i++)
			(void)dup2(null, i);
		if (null > 2)
			close(null);
	}
	reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
	{
		char *state = oci_state_json(&s->st);

		if (state && oci_hooks_run(&s->b->hooks, OCI_HOOK_POSTSTART, state, &err) < 0)
			oci_warn("ignoring a failed poststart hook: %s", err.msg);
		free(state);
	}
}

static void op_kill(struct sup *s, struct conn *c, json_t *req)
{
	int sig = (int)json_integer_value(json_object_get(req, "signal"));
	bool all = json_is_true(json_object_get(req, "all"));
	paddock_error err = { 0 };
	int r = 0;

	if (sig <= 0 || sig >= NSIG) {
		err.code = EINVAL;
		snprintf(err.field, sizeof(err.field), "signal");
		snprintf(err.msg, sizeof(err.msg), "expected a signal number");
		return reply_error(c, &err);
	}
	/* a frozen process cannot die: SIGKILL thaws the container first (other signals wait) */
	if (sig == SIGKILL && s->st.status == OCI_PAUSED &&
	    paddock_sandbox_resume(s->sb, NULL) >= 0) {
		s->st.status = OCI_RUNNING;
		save(s);
	}
	if (s->main && !(all && sig == SIGKILL)) {
		r = paddock_exec_signal(s->main, sig, &err);
	} else if (sig == SIGKILL || !s->main) {
		/* created and never started, or --all KILL: the whole sandbox goes */
		r = paddock_sandbox_kill(s->sb, PADDOCK_END_KILLED, &err);
		if (!s->main)
			finish(s, 128 + sig);
	}
	if (r < 0)
		return reply_error(c, &err);
	reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

/* ---- exec ----------------------------------------------------------------------------- */

static void on_exec_exit(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct conn *c = userdata;
	int status = res->signal ? 128 + res->signal : paddock_result_exit_status(res);

	(void)ex;
	c->ex = NULL;
	reply(c, json_pack("{s:i}", "exit", status), NULL, 0);
}

static void op_exec(struct sup *s, struct conn *c, json_t *req, int *fds, size_t nfds)
{
	struct oci_process p = { 0 };
	paddock_error err = { 0 };
	bool tty = json_is_true(json_object_get(req, "tty"));
	int master = -1, slave = -1, io[3] = { -1, -1, -1 };
	int r;

	if (s->st.status != OCI_RUNNING || !s->main) {
		err.code = EINVAL;
		snprintf(err.msg, sizeof(err.msg), "container not running: '%s'", s->st.id);
		return reply_error(c, &err);
	}
	if (c->ex) {
		err.code = EBUSY;
		snprintf(err.msg, sizeof(err.msg), "one exec per connection");
		return reply_error(c, &err);
	}
	r = oci_process_load(json_object_get(req, "process"), "process", &p, &err);
	if (r >= 0 && tty)
		r = paddock_sandbox_open_pty(s->sb, p.rows, p.cols, &master, &slave, &err);
	if (r >= 0) {
		for (int i = 0; i < 3; i++)
			io[i] = tty ? slave : (i < (int)nfds ? fds[i] : -1);
		r = start_process(s, &p, io, tty, on_exec_exit, c, &c->ex, &err);
	}
	oci_process_release(&p);
	if (slave >= 0)
		close(slave);
	if (r < 0) {
		if (master >= 0)
			close(master);
		return reply_error(c, &err);
	}
	reply(c, json_pack("{s:i}", "pid", (int)paddock_exec_pid(c->ex)), &master,
	      master >= 0 ? 1 : 0);
	if (master >= 0)
		close(master);
}

/* ---- pause, resume ---------------------------------------------------------------------- */

/* runc's pause: every process of the container stops (libpaddock's freezer, or SIGSTOP). */
static void op_pause(struct sup *s, struct conn *c, bool pause)
{
	paddock_error err = { 0 };
	enum oci_status want = pause ? OCI_PAUSED : OCI_RUNNING;
	int r;

	if (s->st.status != OCI_RUNNING && s->st.status != OCI_PAUSED) {
		err.code = EINVAL;
		snprintf(err.msg, sizeof(err.msg), "container '%s' is %s, not running", s->st.id,
			 oci_status_to_string(s->st.status));
		return reply_error(c, &err);
	}
	r = pause ? paddock_sandbox_pause(s->sb, &err) : paddock_sandbox_resume(s->sb, &err);
	if (r < 0)
		return reply_error(c, &err);
	if (s->st.status != want) {
		s->st.status = want;
		save(s);
	}
	reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

/* ---- ps, stats ------------------------------------------------------------------------ */

/* The host pids of the sandbox: the processes in init's pid namespace. */
static json_t *list_pids(struct sup *s)
{
	char link[64], want[64], path[64];
	json_t *a = json_array();
	ssize_t n;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)paddock_sandbox_init_pid(s->sb));
	n = readlink(path, want, sizeof(want) - 1);
	if (n <= 0)
		return a;
	want[n] = '\0';
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/ns/pid", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, want))
			json_array_append_new(a, json_integer(atoi(de->d_name)));
	}
	if (d)
		closedir(d);
	return a;
}

static void op_stats(struct sup *s, struct conn *c)
{
	struct paddock_usage u = { 0 };
	paddock_error err = { 0 };

	if (paddock_sandbox_usage(s->sb, &u, &err) < 0)
		return reply_error(c, &err);
	reply(c,
	      json_pack("{s:{s:{s:{s:I}},s:{s:{s:I,s:I}},s:{s:I}}}", "data", "cpu", "usage",
			"total", (json_int_t)(u.cpu_s * 1e9), "memory", "usage", "usage",
			(json_int_t)u.memory_bytes, "max", (json_int_t)u.memory_peak_bytes, "pids",
			"current", (json_int_t)u.pids),
	      NULL, 0);
}

/* ---- the socket ----------------------------------------------------------------------- */

static void on_conn(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct sup *s = c->s;
	paddock_error err = { 0 };
	json_t *req = NULL;
	int fds[3];
	size_t nfds = 3;
	const char *op;

	(void)fd;
	(void)what;
	if (oci_wire_recv(c->fd, 0, &req, fds, &nfds, &err) < 0) {
		conn_free(c); /* EOF, or a broken peer */
		return;
	}
	op = json_string_value(json_object_get(req, "op"));
	if (!op)
		op = "";
	if (!strcmp(op, "start"))
		op_start(s, c);
	else if (!strcmp(op, "kill"))
		op_kill(s, c, req);
	else if (!strcmp(op, "pause") || !strcmp(op, "resume"))
		op_pause(s, c, op[0] == 'p');
	else if (!strcmp(op, "exec"))
		op_exec(s, c, req, fds, nfds);
	else if (!strcmp(op, "signal") && c->ex) {
		int sig = (int)json_integer_value(json_object_get(req, "signal"));

		if (sig > 0 && sig < NSIG)
			(void)paddock_exec_signal(c->ex, sig, NULL);
	} else if (!strcmp(op, "ps"))
		reply(c, json_pack("{s:o}", "pids", list_pids(s)), NULL, 0);
	else if (!strcmp(op, "stats"))
		op_stats(s, c);
	else {
		err.code = EINVAL;
		snprintf(err.field, sizeof(err.field), "op");
		snprintf(err.msg, sizeof(err.msg), "unknown request");
		reply_error(c, &err);
	}
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	json_decref(req);
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct sup *s = arg;
	struct conn *c;
	int cfd;

	(void)what;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(cfd);
		return;
	}
	c->s = s;
	c->fd = cfd;
	c->ev = event_new(s->base, cfd, EV_READ | EV_PERSIST, on_conn, c);
	if (!c->ev || event_add(c->ev, NULL) < 0) {
		if (c->ev)
			event_free(c->ev);
		close(cfd);
		free(c);
		return;
	}
	c->next = s->conns;
	s->conns = c;
}

static int listen_on(struct sup *s, paddock_error *err)
{
	struct sockaddr_un sa;
	int dfd, r;

	r = oci_sock_addr(s->st.id, &sa, &dfd, err);
	if (r < 0)
		return r;
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->listen_fd, 64) < 0) {
		err->code = errno;
		snprintf(err->msg, sizeof(err->msg), "listen on the container's socket");
		close(dfd);
		return -err->code;
	}
	close(dfd);
	s->listen_ev = event_new(s->base, s->listen_fd, EV_READ | EV_PERSIST, on_accept, s);
	if (!s->listen_ev || event_add(s->listen_ev, NULL) < 0) {
		err->code = ENOMEM;
		snprintf(err->msg, sizeof(err->msg), "watch the socket");
		return -ENOMEM;
	}
	return 0;
}

/* Signals to the supervisor go to the container's process, as to runc's init. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct sup *s = arg;

	(void)what;
	if (s->main)
		(void)paddock_exec_signal(s->main, (int)sig, NULL);
	else if (sig != SIGWINCH && sig != SIGCHLD) {
		(void)paddock_sandbox_kill(s->sb, PADDOCK_END_KILLED, NULL);
		finish(s, 128 + (int)sig);
	}
}

static void on_event(const struct paddock_event *ev, void *userdata)
{
	(void)userdata;
	if (ev->level >= PADDOCK_LEVEL_WARN)
		oci_log(paddock_event_level_to_string(ev->level), "%s", ev->json);
	else
		oci_debug("%s", ev->json);
}

/* ---- its life ------------------------------------------------------------------------- */

static void report(int fd, const paddock_error *err)
{
	char buf[1024];
	int n;

	if (fd < 0)
		return;
	if (err) {
		char e[768];

		n = snprintf(buf, sizeof(buf), "%s%s%s\n", err->field, err->field[0] ? ": " : "",
			     paddock_error_format(err, e, sizeof(e)));
	} else {
		n = snprintf(buf, sizeof(buf), "ok\n");
	}
	(void)!write(fd, buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	close(fd);
}

static int setup(struct sup *s, const struct oci_create_opts *o, paddock_error *err)
{
	static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	char *state;
	int master = -1;
	int r;

	if (s->b->supervisor_netns) {
		/* the proxy's connections leave from the pod's network (config.c, map_netns()) */
		int fd = open(s->b->supervisor_netns, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
			err->code = errno;
			snprintf(err->field, sizeof(err->field), "linux.namespaces.network.path");
			snprintf(err->msg, sizeof(err->msg), "enter '%.200s'",
				 s->b->supervisor_netns);
			if (fd >= 0)
				close(fd);
			return -err->code;
		}
		close(fd);
	}
	s->base = event_base_new();
	if (!s->base) {
		err->code = ENOMEM;
		snprintf(err->msg, sizeof(err->msg), "event loop");
		return -ENOMEM;
	}
	r = paddock_ctx_new(s->base, &s->ctx, err);
	if (r < 0)
		return r;
	paddock_ctx_set_event_sink(s->ctx, on_event, s);
	if (arg_resolve_hosts &&
	    (r = paddock_ctx_set_resolve_hosts(s->ctx, arg_resolve_hosts, err)) < 0)
		return r;
	for (size_t i = 0; arg_upstream_ca[i]; i++)
		if ((r = paddock_ctx_add_upstream_ca(s->ctx, arg_upstream_ca[i], err)) < 0)
			return r;
	r = paddock_sandbox_create(s->ctx, s->b->spec, &s->sb, err);
	if (r < 0)
		return r;
	paddock_sandbox_set_exit_callback(s->sb, on_sandbox_exit, s);
	s->st.init_pid = paddock_sandbox_init_pid(s->sb);
	if (s->b->process.terminal) {
		if (!o->console_socket && !o->foreground) {
			err->code = EINVAL;
			snprintf(err->field, sizeof(err->field), "process.terminal");
			snprintf(err->msg, sizeof(err->msg),
				 "a terminal needs --console-socket to hand it to");
			return -EINVAL;
		}
		r = paddock_sandbox_open_pty(s->sb, s->b->process.rows, s->b->process.cols, &master,
					     &s->pty_slave, err);
		if (r >= 0 && o->console_socket)
			r = oci_send_console(o->console_socket, master, err);
		if (master >= 0)
			close(master);
		if (r < 0)
			return r;
	}
	r = listen_on(s, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		s->sig_ev[i] = evsignal_new(s->base, forwarded[i], on_signal, s);
		if (s->sig_ev[i])
			event_add(s->sig_ev[i], NULL);
	}
	s->st.status = OCI_CREATED;
	state = oci_state_json(&s->st);
	r = state ? 0 : -ENOMEM;
	if (r >= 0)
		r = oci_hooks_run(&s->b->hooks, OCI_HOOK_PRESTART, state, err);
	if (r >= 0)
		r = oci_hooks_run(&s->b->hooks, OCI_HOOK_CREATE_RUNTIME, state, err);
	free(state);
	if (r < 0)
		return r;
	save(s);
	return 0;
}

_Noreturn void oci_supervise(struct oci_bundle *b, const struct oci_create_opts *o)
{
	struct sup s = { .b = b, .listen_fd = -1, .pty_slave = -1 };
	paddock_error err = { 0 };
	char ts[64];
	int r;

	if (!o->foreground)
		(void)setsid();
	signal(SIGPIPE, SIG_IGN);
	snprintf(s.st.id, sizeof(s.st.id), "%s", o->id);
	s.st.status = OCI_CREATING;
	s.st.pid = getpid();
	s.st.start = oci_proc_start(s.st.pid);
	s.st.bundle = strdup(b->dir);
	oci_now_rfc3339(ts, sizeof(ts));
	s.st.created = strdup(ts);
	s.st.annotations = json_incref(b->annotations);
	{
		json_t *cfg = json_loads(b->config_json, 0, NULL);

		s.st.hooks = json_incref(json_object_get(cfg, "hooks"));
		json_decref(cfg);
	}
	r = oci_state_save(&s.st, &err);
	if (r >= 0)
		r = setup(&s, o, &err);
	if (r < 0) {
		oci_fail(&err);
		report(o->ready_fd, &err);
		paddock_sandbox_free(s.sb);
		(void)oci_state_remove(s.st.id, &(paddock_error){ 0 });
		_exit(1);
	}
	report(o->ready_fd, NULL);
	event_base_dispatch(s.base);

	/* the container's process ended (or it was killed before it started) */
	while (s.conns) {
		struct conn *c = s.conns;

		if (c->ex) {
			paddock_exec_set_callback(c->ex, NULL, NULL);
			c->ex = NULL;
			reply(c, json_pack("{s:i}", "exit", 128 + SIGKILL), NULL, 0);
		}
		conn_free(c);
	}
	paddock_sandbox_free(s.sb); /* every process, mount and namespace of it goes */
	{
		char dir[PATH_MAX], sock[PATH_MAX + 8];

		if (oci_state_dir(s.st.id, dir, sizeof(dir), &err) >= 0) {
			snprintf(sock, sizeof(sock), "%s/sock", dir);
			(void)unlink(sock);
		}
	}
	_exit(s.st.exit_status & 0xff);
}
