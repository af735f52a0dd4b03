/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands in a sandbox over paddockd's API (docs/api.md "Processes"): run to completion,
 * stream as NDJSON, or start in the background and come back for output, stdin, signals,
 * resize and the result.
 *
 * The process table is the service core's (src/service/proc.c): here an exec body becomes a
 * typed request (struct svc_exec_req), and each client of a process is a watcher bound to
 * its HTTP request that listens to the process (struct svc_proc_listener) and answers in
 * the form the route promised. Trust: output is hostile bytes, passed on as UTF-8 text or
 * base64, never interpreted.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

#define WAIT_DEFAULT_S 30
#define WAIT_MAX_S     300

static const char *const exec_fields[] = {
	"argv",	  "cmd",	"env", "cwd", "stdin",	    "stdin_b64", "timeout_s",
	"stream", "background", "tag", "pty", "keep_stdin", NULL,
};

static const char *const stream_names[2] = { "stdout", "stderr" };

/* ---- a process's watchers: listeners that answer HTTP requests ---------------------------- */

static const struct svc_proc_listener_ops watcher_listener;

static struct watcher *watcher_of(struct svc_proc_listener *l)
{
	return (struct watcher *)((char *)l - offsetof(struct watcher, listener));
}

static struct watcher *proc_watcher(struct evhttp_request *req, struct proc *p, int kind)
{
	struct watcher *w = pdd_watcher_open(p->box->d, req, kind, p, NULL);

	if (w) {
		w->listener.ops = &watcher_listener;
		svc_proc_listen(p, &w->listener);
	}
	return w;
}

static void watcher_drop(struct watcher *w)
{
	svc_proc_unlisten(w->owner, &w->listener);
	pdd_watcher_free(w, NULL);
}

/* one JSON answer to w's request (status, o taken); w stays */
static void answer(struct watcher *w, int status, json_t *o)
{
	struct proc *p = w->owner;

	if (!w->req) {
		json_decref(o);
		return;
	}
	pdd_watcher_detach(w);
	pdd_http_reply_json(p->box->d, w->req, status, o);
	w->req = NULL;
}

static void stream_begin(struct watcher *w, struct proc *p)
{
	if (w->streaming)
		return;
	pdd_stream_start(w, "application/x-ndjson");
	pdd_stream_line(
		w, json_pack("{s:s,s:s,s:i}", "type", "start", "exec", p->exec_str, "pid", p->pid));
}

static void on_started(struct svc_proc_listener *l, struct proc *p)
{
	struct watcher *w = watcher_of(l);

	if (w->kind == W_START) {
		answer(w, 201, svc_proc_json(p));
		watcher_drop(w);
	} else if (w->kind == W_OUTPUT) {
		stream_begin(w, p);
	} else if (w->kind == W_HOOK) {
		w->ops->started(w, p);
	}
}

/* the store failed: who waits for one answer gets the error (503); streams get the end */
static void on_unrecorded(struct svc_proc_listener *l, struct proc *p, const paddock_error *err)
{
	struct watcher *w = watcher_of(l);

	if (!w->req || w->kind == W_HOOK || w->streaming)
		return;
	pdd_watcher_detach(w);
	pdd_http_reply_paddock_error(p->box->d, w->req, err);
	w->req = NULL;
	watcher_drop(w);
}

static void on_data(struct svc_proc_listener *l, struct proc *p, int stream, const char *buf,
		    size_t n)
{
	struct watcher *w = watcher_of(l);

	if (w->kind == W_OUTPUT) {
		json_t *o = json_pack("{s:s}", "type", stream_names[stream]);
		svc_json_set_bytes(o, "data", buf, n);
		pdd_stream_line(w, o);
	} else if (w->kind == W_HOOK) {
		w->ops->data(w, p, stream, buf, n);
	}
}

/* the sandbox went first: one-answer requests get a 409, streams end */
static void sandbox_gone(struct watcher *w, struct proc *p)
{
	if (w->req && (w->kind == W_RESULT || w->kind == W_WAIT || w->kind == W_START)) {
		pdd_watcher_detach(w);
		pdd_http_reply_error(p->box->d, w->req, 409, "conflict", "id",
				     "the sandbox was deleted or paddockd is stopping");
		w->req = NULL;
	}
	w->on_gone = NULL;
	if (w->kind == W_HOOK)
		w->ops->ended(w, p); /* p->result NULL: the sandbox went first */
	else
		pdd_stream_end(w);
}

static void on_ended(struct svc_proc_listener *l, struct proc *p, bool gone)
{
	struct watcher *w = watcher_of(l);

	if (gone)
		sandbox_gone(w, p);
	else if (w->kind == W_OUTPUT) {
		stream_begin(w, p); /* one that never started */
		pdd_stream_line(w, json_pack("{s:s,s:O?}", "type", "exit", "result", p->result));
		pdd_stream_end(w);
	} else if (w->kind == W_START) {
		answer(w, 201, svc_proc_json(p));
	} else if (w->kind == W_RESULT) {
		answer(w, 200, svc_proc_result_json(p));
	} else if (w->kind == W_HOOK) {
		w->ops->ended(w, p);
	} else if (w->kind == W_WAIT) {
		answer(w, 200, svc_proc_json(p));
	}
	pdd_watcher_free(w, NULL); /* unlinked already */
}

/* what the client has not taken: the core pauses the command's output past its bound */
static size_t on_backlog(struct svc_proc_listener *l)
{
	struct watcher *w = watcher_of(l);
	struct bufferevent *bev;

	if ((w->kind != W_OUTPUT && w->kind != W_HOOK) || !w->evcon)
		return 0;
	bev = evhttp_connection_get_bufferevent(w->evcon);
	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static const struct svc_proc_listener_ops watcher_listener = {
	.started = on_started,
	.unrecorded = on_unrecorded,
	.data = on_data,
	.ended = on_ended,
	.backlog = on_backlog,
};

/* the client went away; a foreground command is ended: nobody would see its result */
static void watcher_gone(struct watcher *w)
{
	struct proc *p = w->owner;
	bool end_it = (w->kind == W_RESULT || w->kind == W_OUTPUT) && !p->background;

	watcher_drop(w);
	if (end_it)
		svc_proc_kill(p);
}

bool pdd_proc_waited_for(struct proc *p)
{
	for (struct svc_proc_listener *l = p->listeners; l; l = l->next) {
		struct watcher *w = l->ops == &watcher_listener ? watcher_of(l) : NULL;

		if (w && w->req && (w->kind == W_RESULT || w->kind == W_WAIT))
			return true;
	}
	return false;
}

struct watcher *pdd_proc_hook(struct evhttp_request *req, struct proc *p,
			      const struct watcher_ops *ops, void *ctx)
{
	struct watcher *w = proc_watcher(req, p, W_HOOK);

	if (w) {
		w->ops = ops;
		w->ctx = ctx;
	}
	return w;
}

void pdd_proc_unhook(struct watcher *w)
{
	watcher_drop(w);
}

/* ---- the exec body ------------------------------------------------------------------------ */

void pdd_exec_req_release(struct exec_req *q)
{
	json_decref(q->argv);
	free(q->argv_c);
	if (q->env_c)
		for (size_t i = 0; q->env_c[i]; i++)
			free(q->env_c[i]);
	free(q->env_c);
	free(q->stdin_data);
}

/* "argv" (an array of strings) or "cmd" (a string for /bin/sh -c), exactly one */
static int parse_argv(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v, *argv = json_object_get(body, "argv"), *cmd = json_object_get(body, "cmd");
	size_t i;

	if ((argv && cmd) || (!argv && !cmd))
		return paddock_fail_field(err, EINVAL, "argv", "expected either 'argv' or 'cmd'");
	if (cmd) {
		if (!json_is_string(cmd) || json_string_length(cmd) == 0)
			return paddock_fail_field(err, EINVAL, "cmd",
						  "expected a non-empty string");
		q->argv = json_pack("[s,s,O]", "/bin/sh", "-c", cmd);
	} else {
		if (!json_is_array(argv) || json_array_size(argv) == 0 ||
		    json_array_size(argv) > 4096)
			return paddock_fail_field(err, EINVAL, "argv",
						  "expected an array of 1 to 4096 strings");
		json_array_foreach(argv, i, v)
		{
			if (!json_is_string(v) ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return paddock_fail_field(
					err, EINVAL, "argv",
					"expected strings without NUL bytes (item %zu)", i);
		}
		q->argv = json_incref(argv);
	}
	q->argv_c = q->argv ? calloc(json_array_size(q->argv) + 1, sizeof(char *)) : NULL;
	if (!q->argv_c)
		return paddock_fail(err, ENOMEM, "out of memory");
	json_array_foreach(q->argv, i, v) q->argv_c[i] = json_string_value(v);
	q->q.argv = q->argv_c;
	return 0;
}

/* "env": {NAME: "value"}, as NAME=value strings */
static int parse_env(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v = json_object_get(body, "env"), *val;
	const char *k;
	size_t i = 0;

	if (v && (!json_is_object(v) || json_object_size(v) > 4096))
		return paddock_fail_field(err, EINVAL, "env", "expected an object of strings");
	q->env_c = calloc((v ? json_object_size(v) : 0) + 1, sizeof(char *));
	if (!q->env_c)
		return paddock_fail(err, ENOMEM, "out of memory");
	q->q.env = (const char *const *)q->env_c;
	json_object_foreach(v, k, val)
	{
		if (!json_is_string(val) || !k[0] || strchr(k, '=') ||
		    strlen(json_string_value(val)) != json_string_length(val))
			return paddock_fail_field(
				err, EINVAL, "env",
				"expected NAME: \"value\" pairs (NAME without '=')");
		if (asprintf(&q->env_c[i], "%s=%s", k, json_string_value(val)) < 0) {
			q->env_c[i] = NULL;
			return paddock_fail(err, ENOMEM, "out of memory");
		}
		i++;
	}
	return 0;
}

/* "stdin" (text) or "stdin_b64" (bytes) */
static int parse_stdin(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v;

	if ((v = json_object_get(body, "stdin"))) {
		if (!json_is_string(v))
			return paddock_fail_field(err, EINVAL, "stdin", "expected a string");
		q->q.stdin_data = json_string_value(v);
		q->q.stdin_len = json_string_length(v);
		q->q.has_stdin = true;
	}
	if ((v = json_object_get(body, "stdin_b64"))) {
		if (q->q.has_stdin || !json_is_string(v) ||
		    paddock_base64_decode(json_string_value(v), json_string_length(v),
					  &q->stdin_data, &q->q.stdin_len) < 0)
			return paddock_fail_field(
				err, EINVAL, "stdin_b64",
				"expected base64 (and not together with 'stdin')");
		q->q.stdin_data = q->stdin_data;
		q->q.has_stdin = true;
	}
	return 0;
}

/* "timeout_s", and the booleans "stream", "background", "keep_stdin" */
static int parse_mode(json_t *body, struct exec_req *q, paddock_error *err)
{
	static const char *const flags[] = { "stream", "background", "keep_stdin" };
	json_t *v;

	q->q.timeout_s = -1;
	if ((v = json_object_get(body, "timeout_s"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400)
			return paddock_fail_field(err, EINVAL, "timeout_s",
						  "expected seconds from 0 to 86400");
		q->q.timeout_s = json_number_value(v);
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		v = json_object_get(body, flags[i]);
		if (v && !json_is_boolean(v))
			return paddock_fail_field(err, EINVAL, flags[i], "expected true or false");
	}
	q->stream = json_is_true(json_object_get(body, "stream"));
	q->q.background = json_is_true(json_object_get(body, "background"));
	q->q.keep_stdin = json_is_true(json_object_get(body, "keep_stdin"));
	if (q->stream && q->q.background)
		return paddock_fail_field(
			err, EINVAL, "stream",
			"a background process is followed through its output endpoint");
	return 0;
}

/* "tag": checked by the core (svc_tag_valid, and no running process has it) */
static int parse_tag(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v = json_object_get(body, "tag");

	if (v && (!json_is_string(v) || !svc_tag_valid(json_string_value(v))))
		return paddock_fail_field(err, EINVAL, "tag",
					  "expected 1 to 64 of [A-Za-z0-9_.-], not all digits");
	q->q.tag = json_string_value(v);
	return 0;
}

/* "pty": {"rows", "cols"}, 0 (or absent) for init's default */
static int parse_pty(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v = json_object_get(body, "pty");
	json_t *rows = json_object_get(v, "rows"), *cols = json_object_get(v, "cols");

	if (!v)
		return 0;
	if (!json_is_object(v) || (rows && !json_is_integer(rows)) ||
	    (cols && !json_is_integer(cols)) || json_integer_value(rows) < 0 ||
	    json_integer_value(rows) > 1000 || json_integer_value(cols) < 0 ||
	    json_integer_value(cols) > 1000)
		return paddock_fail_field(err, EINVAL, "pty",
					  "expected {\"rows\": 1..1000, \"cols\": 1..1000}");
	q->q.pty = true;
	q->q.rows = (unsigned)json_integer_value(rows);
	q->q.cols = (unsigned)json_integer_value(cols);
	return 0;
}

int pdd_exec_parse(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *cwd = json_object_get(body, "cwd");
	int r;

	r = pdd_json_check_fields(body, exec_fields, err);
	if (r < 0)
		return r;
	r = parse_argv(body, q, err);
	if (r < 0)
		return r;
	r = parse_env(body, q, err);
	if (r < 0)
		return r;
	/* a string here; absolute is the core's check (svc_exec_check) */
	if (cwd && !json_is_string(cwd))
		return paddock_fail_field(err, EINVAL, "cwd", "expected an absolute path");
	q->q.cwd = cwd ? json_string_value(cwd) : NULL;
	r = parse_stdin(body, q, err);
	if (r < 0)
		return r;
	r = parse_mode(body, q, err);
	if (r < 0)
		return r;
	r = parse_tag(body, q, err);
	if (r < 0)
		return r;
	return parse_pty(body, q, err);
}

int pdd_exec_body_start(struct box *b, json_t *body, struct proc **ret, bool *ret_stream,
			paddock_error *err)
{
	struct exec_req q = { 0 };
	int r;

	r = pdd_exec_parse(body, &q, err);
	if (r >= 0)
		r = svc_exec_start(b, &q.q, ret, err);
	if (ret_stream)
		*ret_stream = q.stream;
	pdd_exec_req_release(&q);
	return r;
}

/* The command an exec body asks for, answered as the body asked (201, a stream, the result). */
static int exec_start(struct evhttp_request *req, struct box *b, json_t *body, paddock_error *err)
{
	struct proc *p = NULL;
	struct watcher *w;
	bool stream = false;
	int r;

	r = pdd_exec_body_start(b, body, &p, &stream, err);
	if (r < 0)
		return r;
	/* the answer waits for init: a 201 with the pid, the stream's start, or the result */
	w = proc_watcher(req, p, p->background ? W_START : stream ? W_OUTPUT : W_RESULT);
	if (!w) {
		svc_proc_kill(p);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	w->on_gone = watcher_gone;
	return 0;
}

void pdd_api_exec(struct request *r, struct box *b)
{
	paddock_error err = { 0 };
	json_t *body;

	if (r->method != EVHTTP_REQ_POST)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pdd_reply_error(r, 409, "conflict", "id", "the sandbox is not running");
	body = pdd_body_object(r, false);
	if (!body)
		return;
	if (exec_start(r->req, b, body, &err) < 0)
		pdd_reply_paddock_error(r, &err);
	json_decref(body);
}

/* ---- /processes ------------------------------------------------------------------------- */

static void wait_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;
	struct proc *p = w->owner;

	(void)fd;
	(void)what;
	answer(w, 200, svc_proc_json(p));
	watcher_drop(w);
}

/* ?since_stdout=N: a byte offset in the stream; absent: 0 */
static bool parse_since(struct request *r, const char *key, uint64_t *ret)
{
	const char *s = pdd_query(r, key);
	char *end;

	*ret = 0;
	if (!s)
		return true;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (!*s || *end || *s < '0' || *s > '9' || errno) {
		pdd_reply_error(r, 400, "invalid", key, "expected a byte offset such as 4096");
		return false;
	}
	return true;
}

/*
 * What libpaddock kept of stream i from offset `since` on (the ring keeps the newest of it;
 * an offset before them starts at the oldest kept). An offset past the end is from before a
 * restart of paddockd (whose session and count start again at 0): all of it then.
 */
static void ring_line(struct watcher *w, struct proc *p, int i, uint64_t since)
{
	struct evbuffer *b;
	uint64_t from;
	size_t n;
	json_t *o;

	if (!p->session)
		return;
	from = since <= paddock_exec_output_end(p->session, i + 1) ? since : 0;
	b = evbuffer_new();
	if (!b)
		return;
	n = svc_proc_read(p, i + 1, &from, b);
	if (n > 0) {
		o = json_pack("{s:s,s:I}", "type", stream_names[i], "offset",
			      (json_int_t)(from - n));
		svc_json_set_bytes(o, "data", (const char *)evbuffer_pullup(b, -1), n);
		pdd_stream_line(w, o);
	}
	evbuffer_free(b);
}

static void output(struct request *r, struct proc *p)
{
	const char *follow = pdd_query(r, "follow");
	uint64_t since[2];
	struct watcher *w;

	if (!parse_since(r, "since_stdout", &since[0]) ||
	    !parse_since(r, "since_stderr", &since[1]))
		return;
	w = proc_watcher(r->req, p, W_OUTPUT);
	if (!w)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	w->on_gone = watcher_gone; /* a background process's followers come and go */
	pdd_stream_start(w, "application/x-ndjson");
	for (int i = 0; i < 2; i++)
		ring_line(w, p, i, since[i]);
	if (p->exited || !follow || strcmp(follow, "1") != 0) {
		if (p->exited)
			pdd_stream_line(
				w, json_pack("{s:s,s:O?}", "type", "exit", "result", p->result));
		pdd_stream_end(w);
		watcher_drop(w);
	}
}

/* POST .../stdin: the body's bytes to the process's stdin queue, all or nothing */
static void stdin_write(struct request *r, struct proc *p)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	size_t n = evbuffer_get_length(in);
	paddock_error err = { 0 };
	int w;

	if (p->exited)
		return pdd_reply_error(r, 409, "conflict", NULL, "the process has ended");
	if (!p->has_stdin)
		return pdd_reply_error(r, 409, "conflict", "stdin",
				       "the process's stdin is closed (start it with keep_stdin or "
				       "pty)");
	if (n > PDD_STDIN_WRITE_MAX)
		return pdd_reply_error(r, 413, "too_large", "body", "at most %d bytes per write",
				       PDD_STDIN_WRITE_MAX);
	w = svc_proc_write_stdin(p, (const char *)evbuffer_pullup(in, -1), n, &err);
	if (w == -EAGAIN)
		return pdd_reply_error(r, 429, "limit", "stdin",
				       "the process is not reading its stdin: %s; nothing of this "
				       "write was taken",
				       err.msg);
	if (w < 0)
		return pdd_reply_error(r, 409, "conflict", "stdin",
				       "the process's stdin is closed (%s)", err.msg);
	pdd_reply_empty(r, 204);
}

/* POST .../wait[?timeout_s=N]: the process object once it ended, or at the deadline */
static void wait_end(struct request *r, struct proc *p)
{
	const char *t = pdd_query(r, "timeout_s");
	char *end = NULL;
	double s = t ? strtod(t, &end) : WAIT_DEFAULT_S;
	struct watcher *w;

	if (t && (*end || !(s >= 0 && s <= WAIT_MAX_S)))
		return pdd_reply_error(r, 400, "invalid", "timeout_s",
				       "expected seconds from 0 to %d", WAIT_MAX_S);
	if (p->exited || s == 0)
		return pdd_reply_json(r, 200, svc_proc_json(p));
	w = proc_watcher(r->req, p, W_WAIT);
	if (!w)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	w->on_gone = watcher_gone;
	struct timeval tv = { .tv_sec = (time_t)s,
			      .tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6) };
	w->timer = evtimer_new(p->box->d->base, wait_timeout, w);
	if (w->timer)
		evtimer_add(w->timer, &tv);
}

/* A signal body's "signal": a name (with or without SIG) or a number; 0 when neither. */
static int signal_of(json_t *v)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT },
		      { "HUP", SIGHUP },   { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 },
		      { "USR2", SIGUSR2 }, { "STOP", SIGSTOP }, { "CONT", SIGCONT } };
	const char *s = json_string_value(v);

	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 65)
		return (int)json_integer_value(v);
	if (s && strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	return 0;
}

/* POST .../signal {"signal"} */
static void send_signal(struct request *r, struct proc *p, json_t *body)
{
	static const char *const fields[] = { "signal", NULL };
	paddock_error err = { 0 };
	int sig;

	if (!pdd_check_fields(r, body, fields))
		return;
	sig = signal_of(json_object_get(body, "signal"));
	if (!sig)
		return pdd_reply_error(r, 400, "invalid", "signal",
				       "expected a signal name (TERM, KILL, INT, HUP, QUIT, USR1, "
				       "USR2, STOP, CONT) or number");
	if (!p->ex)
		return pdd_reply_error(r, 409, "conflict", NULL, "the process has ended");
	if (paddock_exec_signal(p->ex, sig, &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	pdd_reply_empty(r, 204);
}

/* POST .../resize {"rows", "cols"}: a pty's window size */
static void resize(struct request *r, struct proc *p, json_t *body)
{
	static const char *const fields[] = { "rows", "cols", NULL };
	json_t *rows = json_object_get(body, "rows"), *cols = json_object_get(body, "cols");
	paddock_error err = { 0 };

	if (!pdd_check_fields(r, body, fields))
		return;
	if (!json_is_integer(rows) || !json_is_integer(cols) || json_integer_value(rows) < 1 ||
	    json_integer_value(rows) > 1000 || json_integer_value(cols) < 1 ||
	    json_integer_value(cols) > 1000)
		return pdd_reply_error(r, 400, "invalid", "rows",
				       "expected rows and cols from 1 to 1000");
	if (!p->ex || !p->pty)
		return pdd_reply_error(r, 409, "conflict", NULL, "%s",
				       p->ex ? "the process has no terminal"
					     : "the process has ended");
	if (paddock_exec_resize(p->ex, (unsigned short)json_integer_value(rows),
				(unsigned short)json_integer_value(cols), &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	pdd_reply_empty(r, 204);
}

/* POST .../processes/{key}/{what}[/{sub}] */
static void process_action(struct request *r, struct proc *p, const char *what, const char *sub)
{
	json_t *body;

	if (r->method != EVHTTP_REQ_POST)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
	if (strcmp(what, "stdin") == 0 && !sub)
		return stdin_write(r, p);
	if (strcmp(what, "stdin") == 0 && strcmp(sub, "close") == 0) {
		svc_proc_close_stdin(p);
		return pdd_reply_empty(r, 204);
	}
	if (sub)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	if (strcmp(what, "wait") == 0)
		return wait_end(r, p);
	body = pdd_body_object(r, false);
	if (!body)
		return;
	if (strcmp(what, "signal") == 0)
		send_signal(r, p, body);
	else if (strcmp(what, "resize") == 0)
		resize(r, p, body);
	else
		pdd_reply_error(r, 404, "not_found", "path", "no such route");
	json_decref(body);
}

void pdd_api_processes(struct request *r, struct box *b)
{
	struct proc *p;

	if (r->n_seg == 4) {
		json_t *a = json_array();

		if (r->method != EVHTTP_REQ_GET)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
		for (p = b->procs; p; p = p->next)
			json_array_append_new(a, svc_proc_json(p));
		return pdd_reply_json(r, 200, json_pack("{s:o}", "processes", a));
	}
	p = svc_proc_find(b, r->seg[4]);
	if (!p)
		return pdd_reply_error(r, 404, "not_found", "process", "no such process");
	if (r->n_seg == 5) {
		if (r->method != EVHTTP_REQ_GET)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
		return pdd_reply_json(r, 200, svc_proc_json(p));
	}
	if (r->n_seg == 6 && strcmp(r->seg[5], "output") == 0) {
		if (r->method != EVHTTP_REQ_GET)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
		return output(r, p);
	}
	if (r->n_seg > 7)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	process_action(r, p, r->seg[5], r->n_seg == 7 ? r->seg[6] : NULL);
}
