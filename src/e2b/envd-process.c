/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's `process.Process` service on the service core's process table (src/service/proc.c):
 * Start becomes a typed request (struct svc_exec_req) the core starts as it starts
 * paddockd's, and the process's events reach the client through a W_HOOK watcher that
 * formats them as ProcessEvent messages in Connect envelopes.
 *
 * Every E2B process is what paddockd calls a background process: it outlives the stream
 * that started it (envd's behaviour: a client that goes away does not kill its command;
 * Connect re-attaches), its recent output is kept, and it is listed. Connect-Timeout-Ms on
 * Start is the command's timeout, as the SDK's `timeoutMs` means.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b.h"

#define INPUT_MAX (1u << 20) /* bytes of one SendInput */

/* One client following a process (Start or Connect). */
struct pstream {
	struct e2b *e;
	struct evhttp_request *req;
	struct event *keepalive;
	struct timeval keepalive_tv;
	bool started; /* the 200 went out */
	bool sent_start;
};

static void pstream_free(struct pstream *ps)
{
	if (ps->keepalive)
		event_free(ps->keepalive);
	free(ps);
}

static void send_event(struct pstream *ps, json_t *event_take)
{
	if (!ps->req) {
		json_decref(event_take);
		return;
	}
	e2b_connect_stream_send(ps->req, &ps->started, json_pack("{s:o}", "event", event_take));
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pstream *ps = arg;

	(void)fd;
	(void)what;
	send_event(ps, json_pack("{s:{}}", "keepalive"));
}

static void hook_started(struct watcher *w, struct proc *p)
{
	struct pstream *ps = w->ctx;

	if (ps->sent_start)
		return;
	ps->sent_start = true;
	send_event(ps, json_pack("{s:{s:i}}", "start", "pid", p->pid));
}

static void hook_data(struct watcher *w, struct proc *p, int stream, const char *buf, size_t n)
{
	struct pstream *ps = w->ctx;
	const char *name = p->pty ? "pty" : stream == 0 ? "stdout" : "stderr";

	if (!ps->sent_start) /* output before init's start report cannot happen, but be safe */
		hook_started(w, p);
	send_event(ps, json_pack("{s:{s:o}}", "data", name, e2b_pbjson_bytes_new(buf, n)));
}

/* Go's os.ProcessState.String() for a signal, which envd reports */
static const char *signal_status(int sig)
{
	switch (sig) {
	case SIGKILL:
		return "signal: killed";
	case SIGTERM:
		return "signal: terminated";
	case SIGINT:
		return "signal: interrupt";
	case SIGHUP:
		return "signal: hangup";
	case SIGQUIT:
		return "signal: quit";
	case SIGSEGV:
		return "signal: segmentation fault";
	case SIGABRT:
		return "signal: aborted";
	case SIGPIPE:
		return "signal: broken pipe";
	case SIGBUS:
		return "signal: bus error";
	case SIGFPE:
		return "signal: floating point exception";
	case SIGUSR1:
		return "signal: user defined signal 1";
	case SIGUSR2:
		return "signal: user defined signal 2";
	default:
		return "signal: killed";
	}
}

static void hook_ended(struct watcher *w, struct proc *p)
{
	struct pstream *ps = w->ctx;
	json_t *res = p->result, *end;
	const char *reason = json_string_value(json_object_get(res, "reason"));
	json_t *code = json_object_get(res, "exit_code");
	int sig = (int)json_integer_value(json_object_get(res, "signal"));

	pdd_watcher_detach(w);
	if (!ps->req)
		goto out;
	if (!res) {
		e2b_connect_stream_end(ps->req, &ps->started, E2B_CONNECT_UNAVAILABLE,
				       "the sandbox was deleted (or paddockd is stopping)");
		goto out;
	}
	if (reason && strcmp(reason, "timeout") == 0) {
		/* the SDK's timeoutMs: its TimeoutError comes from this code */
		e2b_connect_stream_end(
			ps->req, &ps->started, E2B_CONNECT_DEADLINE_EXCEEDED,
			"the command ran past its timeout (Connect-Timeout-Ms) and was "
			"killed");
		goto out;
	}
	if (reason && strcmp(reason, "error") == 0 && !ps->sent_start) {
		json_t *e = json_object_get(res, "error");
		const char *name = json_string_value(json_object_get(e, "code"));
		const char *m = json_string_value(json_object_get(e, "message"));
		/* envd: a missing cwd or program is the request's fault (invalid_argument) */
		enum e2b_connect_code c =
			name && (strcmp(name, "EACCES") == 0 || strcmp(name, "EPERM") == 0)
				? E2B_CONNECT_PERMISSION_DENIED
			: name && (strcmp(name, "EAGAIN") == 0 || strcmp(name, "ENOMEM") == 0)
				? E2B_CONNECT_RESOURCE_EXHAUSTED
				: E2B_CONNECT_INVALID_ARGUMENT;

		e2b_connect_stream_end(ps->req, &ps->started, (int)c,
				       "the command could not start: %s", m ? m : "unknown error");
		goto out;
	}
	if (!ps->sent_start)
		hook_started(w, p);
	if (json_is_integer(code)) {
		char status[32];

		snprintf(status, sizeof(status), "exit status %d", (int)json_integer_value(code));
		end = json_pack("{s:I,s:b,s:s}", "exitCode", json_integer_value(code), "exited", 1,
				"status", status);
	} else {
		end = json_pack("{s:i,s:b,s:s}", "exitCode", -1, "exited", 0, "status",
				signal_status(sig ? sig : SIGKILL));
	}
	/*
	 * envd's error is Go's exec error: the status of a command that failed ("exit status
	 * 3", "signal: killed"); the SDK's CommandExitError carries it. paddock's limits end a
	 * command for reasons envd does not have: they are said too.
	 */
	if (!json_is_integer(code) || json_integer_value(code) != 0) {
		const char *st = json_string_value(json_object_get(end, "status"));
		char msg[128];

		if (reason && strcmp(reason, "exited") != 0 && strcmp(reason, "signaled") != 0)
			snprintf(msg, sizeof(msg), "%s (ended by paddock: %s)", st, reason);
		else
			snprintf(msg, sizeof(msg), "%s", st);
		json_object_set_new(end, "error", json_string(msg));
	}
	send_event(ps, json_pack("{s:o}", "end", end));
	e2b_connect_stream_end(ps->req, &ps->started, -1, "%s", "");
out:
	ps->req = NULL;
	pstream_free(ps);
	w->ctx = NULL;
}

static const struct watcher_ops hook_ops = {
	.started = hook_started,
	.data = hook_data,
	.ended = hook_ended,
};

/* the client left: the process runs on (envd's behaviour); only the stream ends */
static void hook_gone(struct watcher *w)
{
	if (w->ctx)
		pstream_free(w->ctx);
	w->ctx = NULL;
	pdd_proc_unhook(w);
}

static struct pstream *pstream_new(struct e2b_req *r)
{
	struct pstream *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->e = r->e;
	ps->req = r->req;
	if (r->keepalive_s > 0) {
		ps->keepalive_tv.tv_sec = (time_t)r->keepalive_s;
		ps->keepalive = event_new(r->d->base, -1, EV_PERSIST, keepalive_cb, ps);
		if (ps->keepalive)
			event_add(ps->keepalive, &ps->keepalive_tv);
	}
	return ps;
}

/* ---- the daemon's errors, as Connect errors ------------------------------------------------ */

/*
 * The Connect code of the status paddockd's API answers err with (pdd_http_status()): an exec
 * refused over E2B is refused for the same reason, and in the same class, as over the API.
 */
static enum e2b_connect_code code_of_status(int status)
{
	switch (status) {
	case 400:
		return E2B_CONNECT_INVALID_ARGUMENT;
	case 403:
		return E2B_CONNECT_PERMISSION_DENIED;
	case 404:
		return E2B_CONNECT_NOT_FOUND;
	case 409:
		return E2B_CONNECT_FAILED_PRECONDITION;
	case 413:
		return E2B_CONNECT_RESOURCE_EXHAUSTED;
	case 422:
		return E2B_CONNECT_UNIMPLEMENTED;
	case 429:
		return E2B_CONNECT_RESOURCE_EXHAUSTED;
	case 503:
		return E2B_CONNECT_UNAVAILABLE;
	default:
		return E2B_CONNECT_INTERNAL;
	}
}

/* svc_exec_start's errors end the stream, named as paddockd names them ("tag: a running ...") */
static void start_failed(struct e2b_req *r, bool *started, const paddock_error *err)
{
	e2b_connect_stream_end(r->req, started, (int)code_of_status(pdd_http_status(err, NULL)),
			       "%s%s%s", err->field, err->field[0] ? ": " : "",
			       err->msg[0] ? err->msg : "failed");
}

/* ---- selectors ------------------------------------------------------------------------------ */

/* An error of a unary call, or the end of a stream */
static void fail(struct e2b_req *r, bool stream, bool *started, enum e2b_connect_code code,
		 const char *msg)
{
	if (stream)
		e2b_connect_stream_end(r->req, started, (int)code, "%s", msg);
	else
		e2b_connect_reply_error(r->req, code, "%s", msg);
}

/* A running process a ProcessSelector names, or NULL with the error answered. */
static struct proc *select_proc(struct e2b_req *r, json_t *msg, bool stream, bool *started)
{
	json_t *sel = json_object_get(msg, "process");
	json_t *pid = json_object_get(sel, "pid"), *tag = json_object_get(sel, "tag");
	char key[SVC_MAX_TAG + 24], why[SVC_MAX_TAG + 64];
	struct proc *p;
	uint32_t n;

	if (!json_is_object(sel) || (!pid && !tag) || (pid && tag)) {
		fail(r, stream, started, E2B_CONNECT_INVALID_ARGUMENT,
		     "process: expected a selector with 'pid' or 'tag'");
		return NULL;
	}
	if (pid && (!e2b_pbjson_uint32(pid, &n) || n == 0)) {
		fail(r, stream, started, E2B_CONNECT_INVALID_ARGUMENT,
		     "process.pid: expected a pid");
		return NULL;
	}
	if (!pid && (!json_is_string(tag) || json_string_length(tag) > SVC_MAX_TAG)) {
		fail(r, stream, started, E2B_CONNECT_INVALID_ARGUMENT,
		     "process.tag: expected a string of at most 64 bytes");
		return NULL;
	}
	if (pid)
		snprintf(key, sizeof(key), "%u", n);
	else
		snprintf(key, sizeof(key), "%s", json_string_value(tag));
	p = svc_proc_find(r->box, key);
	if (!p || p->exited || !p->ex) {
		snprintf(why, sizeof(why), "process with %s '%s' not found", pid ? "pid" : "tag",
			 key);
		fail(r, stream, started, E2B_CONNECT_NOT_FOUND, why);
		return NULL;
	}
	return p;
}

/* ---- methods ------------------------------------------------------------------------------ */

static bool bad(struct e2b_req *r, bool *started, const char *msg)
{
	e2b_connect_stream_end(r->req, started, E2B_CONNECT_INVALID_ARGUMENT, "%s", msg);
	return false;
}

/* A StartRequest as the core's request: argv, env and cwd its own, the rest in q. */
struct start_req {
	struct svc_exec_req q;
	const char **argv;
	char **env;
	size_t n_env;
	char *cwd;
};

static void start_req_release(struct start_req *s)
{
	free(s->argv);
	for (size_t i = 0; i < s->n_env; i++)
		free(s->env[i]);
	free(s->env);
	free(s->cwd);
}

/* NAME=value into s->env, unless the request set NAME (envd's defaults: HOME, USER, TERM) */
static bool env_add(struct start_req *s, json_t *envs, const char *name, const char *value)
{
	if (envs && json_object_get(envs, name))
		return true;
	if (asprintf(&s->env[s->n_env], "%s=%s", name, value) < 0)
		return false;
	s->n_env++;
	return true;
}

/* process.cmd and process.args: the command line */
static bool start_argv(struct e2b_req *r, json_t *proc, struct start_req *s, bool *started)
{
	json_t *cmd = json_object_get(proc, "cmd"), *args = json_object_get(proc, "args"), *v;
	size_t i, n = 0;

	if (!json_is_string(cmd) || json_string_length(cmd) == 0)
		return bad(r, started, "process.cmd: expected a non-empty string");
	if (args && (!json_is_array(args) || json_array_size(args) > 4095))
		return bad(r, started, "process.args: expected an array of strings");
	s->argv = calloc(json_array_size(args) + 2, sizeof(char *));
	if (!s->argv)
		return bad(r, started, "out of memory");
	s->argv[n++] = json_string_value(cmd);
	json_array_foreach(args, i, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return bad(r, started, "process.args: expected an array of strings");
		s->argv[n++] = json_string_value(v);
	}
	if (strlen(json_string_value(cmd)) != json_string_length(cmd))
		return bad(r, started, "process.cmd: expected a string without NUL bytes");
	s->q.argv = s->argv;
	return true;
}

/* process.envs over envd's defaults */
static bool start_env(struct e2b_req *r, json_t *proc, bool pty, struct start_req *s, bool *started)
{
	json_t *envs = json_object_get(proc, "envs"), *val;
	const char *k;

	if (envs && (!json_is_object(envs) || json_object_size(envs) > 4096))
		return bad(r, started, "process.envs: expected an object of strings");
	s->env = calloc(json_object_size(envs) + 4, sizeof(char *));
	if (!s->env)
		return bad(r, started, "out of memory");
	json_object_foreach(envs, k, val)
	{
		if (!json_is_string(val) || !k[0] || strchr(k, '=') ||
		    strlen(json_string_value(val)) != json_string_length(val))
			return bad(
				r, started,
				"process.envs: expected NAME: \"value\" pairs (NAME without '=')");
		if (!env_add(s, NULL, k, json_string_value(val)))
			return bad(r, started, "out of memory");
	}
	/* envd sets the user's identity; the home is where relative things land */
	if (!env_add(s, envs, "HOME", r->home) || !env_add(s, envs, "USER", "user") ||
	    (pty && !env_add(s, envs, "TERM", "xterm-256color")))
		return bad(r, started, "out of memory");
	s->q.env = (const char *const *)s->env;
	return true;
}

/* A StartRequest, checked, into s; false with the stream ended. */
static bool start_parse(struct e2b_req *r, json_t *msg, struct start_req *s, bool *started)
{
	json_t *proc = json_object_get(msg, "process"), *v;

	if (!json_is_object(proc))
		return bad(r, started, "process: expected a ProcessConfig object");
	if (!start_argv(r, proc, s, started))
		return false;
	v = json_object_get(proc, "cwd");
	if (v && !json_is_string(v))
		return bad(r, started, "process.cwd: expected a string");
	s->cwd = e2b_path(r, json_string_value(v));
	if (!s->cwd)
		return bad(r, started, "process.cwd: too long");
	s->q.cwd = s->cwd;
	s->q.background = true;
	if ((v = json_object_get(msg, "stdin")) && !json_is_boolean(v))
		return bad(r, started, "stdin: expected a boolean");
	s->q.keep_stdin = json_is_true(v);
	if ((v = json_object_get(msg, "tag")) && !json_is_string(v))
		return bad(r, started, "tag: expected a string");
	s->q.tag = json_string_value(v);
	if ((v = json_object_get(msg, "pty"))) {
		json_t *size = json_object_get(v, "size");
		uint32_t rows = 24, cols = 80;

		if (!json_is_object(v) || (size && !json_is_object(size)) ||
		    !e2b_pbjson_uint32(json_object_get(size, "rows"), &rows) ||
		    !e2b_pbjson_uint32(json_object_get(size, "cols"), &cols))
			return bad(r, started, "pty.size: expected {\"cols\": N, \"rows\": N}");
		s->q.pty = true;
		s->q.rows = rows ? rows : 24;
		s->q.cols = cols ? cols : 80;
	}
	if (!start_env(r, proc, s->q.pty, s, started))
		return false;
	s->q.timeout_s = r->timeout_s > 0 ? r->timeout_s : 0; /* 0: none */
	return true;
}

static void start(struct e2b_req *r, json_t *msg)
{
	struct start_req s = { 0 };
	paddock_error err = { 0 };
	json_t *cfg = json_object_get(msg, "process");
	struct pstream *ps = NULL;
	struct watcher *w;
	struct proc *p;
	bool started = false;

	if (!start_parse(r, msg, &s, &started))
		goto out;
	ps = pstream_new(r);
	if (!ps) {
		e2b_connect_stream_end(r->req, &started, E2B_CONNECT_RESOURCE_EXHAUSTED,
				       "out of memory");
		goto out;
	}
	if (svc_exec_start(r->box, &s.q, &p, &err) < 0) {
		pstream_free(ps);
		start_failed(r, &started, &err);
		goto out;
	}
	w = pdd_proc_hook(r->req, p, &hook_ops, ps);
	if (!w) {
		pstream_free(ps);
		svc_proc_kill(p);
		e2b_connect_stream_end(r->req, &started, E2B_CONNECT_RESOURCE_EXHAUSTED,
				       "out of memory");
		goto out;
	}
	w->on_gone = hook_gone;
	p->fe_info = json_pack("{s:O?,s:O?,s:O?,s:s}", "cmd", json_object_get(cfg, "cmd"), "args",
			       json_object_get(cfg, "args"), "envs", json_object_get(cfg, "envs"),
			       "cwd", s.cwd);
out:
	start_req_release(&s);
}

static void connect_proc(struct e2b_req *r, json_t *msg)
{
	bool started = false;
	struct proc *p = select_proc(r, msg, true, &started);
	struct pstream *ps;
	struct watcher *w;

	if (!p)
		return;
	ps = pstream_new(r);
	w = ps ? pdd_proc_hook(r->req, p, &hook_ops, ps) : NULL;
	if (!w) {
		if (ps)
			pstream_free(ps);
		e2b_connect_stream_end(r->req, &started, E2B_CONNECT_RESOURCE_EXHAUSTED,
				       "out of memory");
		return;
	}
	w->on_gone = hook_gone;
	if (p->started)
		hook_started(w, p);
}

static json_t *process_info(struct proc *p)
{
	json_t *cfg = p->fe_info ? json_deep_copy(p->fe_info) : NULL;

	if (!cfg) { /* started through paddockd's own API: its argv */
		json_t *args = json_array();
		size_t i;
		json_t *v;

		json_array_foreach(p->argv, i, v) if (i > 0) json_array_append(args, v);
		cfg = json_pack("{s:O?,s:o,s:{}}", "cmd", json_array_get(p->argv, 0), "args", args,
				"envs");
	}
	json_t *o = json_pack("{s:o,s:i}", "config", cfg, "pid", p->pid);
	if (p->tag[0])
		json_object_set_new(o, "tag", json_string(p->tag));
	return o;
}

static void list(struct e2b_req *r)
{
	json_t *a = json_array();

	for (struct proc *p = r->box->procs; p; p = p->next)
		if (!p->exited && p->ex && p->started)
			json_array_append_new(a, process_info(p));
	e2b_connect_reply(r->req, json_pack("{s:o}", "processes", a));
}

static void send_input(struct e2b_req *r, json_t *msg)
{
	struct proc *p = select_proc(r, msg, false, NULL);
	json_t *in = json_object_get(msg, "input");
	json_t *data = json_object_get(in, "stdin") ? json_object_get(in, "stdin")
						    : json_object_get(in, "pty");
	uint8_t *bytes = NULL;
	size_t len = 0;
	int w;

	if (!p)
		return;
	if (!json_is_object(in) || !data || !e2b_pbjson_bytes(data, &bytes, &len))
		return e2b_connect_reply_error(
			r->req, E2B_CONNECT_INVALID_ARGUMENT,
			"input: expected {\"stdin\": base64} or {\"pty\": base64}");
	if (len > INPUT_MAX) {
		free(bytes);
		return e2b_connect_reply_error(r->req, E2B_CONNECT_RESOURCE_EXHAUSTED,
					       "input: at most %u bytes per SendInput", INPUT_MAX);
	}
	w = len ? svc_proc_write_stdin(p, (const char *)bytes, len, NULL) : 0;
	free(bytes);
	if (w == -EAGAIN)
		return e2b_connect_reply_error(
			r->req, E2B_CONNECT_RESOURCE_EXHAUSTED,
			"the process is not reading its stdin; nothing of this "
			"input was taken");
	if (w == -EBADF)
		return e2b_connect_reply_error(
			r->req, E2B_CONNECT_FAILED_PRECONDITION,
			"the process's stdin is closed (start it with stdin: true)");
	if (w < 0)
		return e2b_connect_reply_error(r->req, e2b_connect_code_from_errno(w),
					       "write to the process's stdin: %s", strerror(-w));
	e2b_connect_reply(r->req, json_object());
}

static void send_signal(struct e2b_req *r, json_t *msg)
{
	struct proc *p = select_proc(r, msg, false, NULL);
	json_t *v = json_object_get(msg, "signal");
	paddock_error err = { 0 };
	int sig = 0;

	if (!p)
		return;
	if (json_is_string(v) && strcmp(json_string_value(v), "SIGNAL_SIGKILL") == 0)
		sig = SIGKILL;
	else if (json_is_string(v) && strcmp(json_string_value(v), "SIGNAL_SIGTERM") == 0)
		sig = SIGTERM;
	else if (json_is_integer(v) && (json_integer_value(v) == 9 || json_integer_value(v) == 15))
		sig = (int)json_integer_value(v);
	if (!sig)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					       "signal: expected SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	if (paddock_exec_signal(p->ex, sig, &err) < 0)
		return e2b_reply_paddock_error(r, &err);
	e2b_connect_reply(r->req, json_object());
}

static void close_stdin(struct e2b_req *r, json_t *msg)
{
	struct proc *p = select_proc(r, msg, false, NULL);

	if (!p)
		return;
	if (p->pty)
		return e2b_connect_reply_error(
			r->req, E2B_CONNECT_FAILED_PRECONDITION,
			"a pty has no stdin to close: send EOT (Ctrl-D) instead");
	svc_proc_close_stdin(p);
	e2b_connect_reply(r->req, json_object());
}

static void update(struct e2b_req *r, json_t *msg)
{
	struct proc *p = select_proc(r, msg, false, NULL);
	json_t *size = json_object_get(json_object_get(msg, "pty"), "size");
	paddock_error err = { 0 };
	uint32_t rows = 0, cols = 0;

	if (!p)
		return;
	if (!size)
		return e2b_connect_reply(r->req, json_object()); /* nothing to change */
	if (!e2b_pbjson_uint32(json_object_get(size, "rows"), &rows) ||
	    !e2b_pbjson_uint32(json_object_get(size, "cols"), &cols) || rows < 1 || rows > 1000 ||
	    cols < 1 || cols > 1000)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					       "pty.size: expected rows and cols from 1 to 1000");
	if (!p->pty)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_FAILED_PRECONDITION,
					       "the process has no pty");
	if (paddock_exec_resize(p->ex, (unsigned short)rows, (unsigned short)cols, &err) < 0)
		return e2b_reply_paddock_error(r, &err);
	e2b_connect_reply(r->req, json_object());
}

void e2b_process(struct e2b_req *r, const char *method, json_t *msg, bool streaming)
{
	(void)streaming; /* e2b.c decided it from the method */
	if (strcmp(method, "Start") == 0)
		return start(r, msg);
	if (strcmp(method, "Connect") == 0)
		return connect_proc(r, msg);
	if (strcmp(method, "List") == 0)
		return list(r);
	if (strcmp(method, "SendInput") == 0)
		return send_input(r, msg);
	if (strcmp(method, "SendSignal") == 0)
		return send_signal(r, msg);
	if (strcmp(method, "CloseStdin") == 0)
		return close_stdin(r, msg);
	if (strcmp(method, "Update") == 0)
		return update(r, msg);
	e2b_connect_reply_error(r->req, E2B_CONNECT_UNIMPLEMENTED,
				"process.Process has no method '%.64s'", method);
}
