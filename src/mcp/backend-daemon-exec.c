/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands through paddockd (backend-daemon.c says how the backend works): a foreground one
 * is POST .../exec with stream:true, its NDJSON read from the server's loop (LINES_PER_WAKE
 * lines at a time) into the run_command result; a background one is started with
 * background:true and a tag of ours, and read with GET .../processes/{tag}/output from the
 * offsets already returned. The output is the sandbox's: bounded per line and per stream.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "paddock/paddock.h"
#include "backend.h"
#include "backend-daemon-internal.h"
#include "client.h"
#include "exec-stream.h"
#include "paddock/cleanup.h"

/* one line of an exec stream: a chunk of at most 64 KiB, escaped (\u0001: 6 bytes a byte) */
#define EXEC_LINE_MAX (1u << 20)
/* one line of a process's output: the whole ring of 1 MiB, escaped */
#define RING_LINE_MAX  (8u << 20)
#define RING_LINES_MAX 16     /* the ring is two lines and an exit: more is not paddockd's */
#define STDIN_MAX      65536u /* paddockd takes this much stdin in an exec request */

/* What is kept of one stream of a command: the first `keep` bytes, and how many came. */
struct capture {
	char *buf;
	size_t len, cap;
	uint64_t total;
};

/* A command running: its exec stream, read from the loop. */
struct mcp_pending {
	struct dbackend *b;
	struct http_conn *conn;
	struct event *ev;
	mcp_exec_done_fn fn;
	void *userdata;
	size_t keep;
	struct capture out[2];
	struct mcp_pending *next;
};

/* ---- commands ----------------------------------------------------------------------------- */

static int set_new(json_t *o, const char *key, json_t *v, const char *field, paddock_error *err)
{
	if (!v)
		return paddock_fail_field(err, EINVAL, field, "expected UTF-8 text");
	if (json_object_set_new(o, key, v) < 0)
		return paddock_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* {"NAME": "VALUE", ...} of the request's "NAME=VALUE" strings. */
static int env_json(const char *const *env, json_t **ret, paddock_error *err)
{
	_cleanup_json_ json_t *o = json_object();
	int r;

	if (!o)
		return paddock_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		_cleanup_free_ char *name = NULL;

		if (!eq || eq == env[i])
			return paddock_fail_field(err, EINVAL, "env",
						  "expected NAME=VALUE, got '%s'",
						  PADDOCK_ESC(env[i]));
		name = strndup(env[i], (size_t)(eq - env[i]));
		if (!name)
			return paddock_fail(err, ENOMEM, "out of memory");
		r = set_new(o, name, json_string(eq + 1), "env", err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(o);
	return 0;
}

/* The body of POST …/exec for `req` (without "stream" or "background"). */
static int exec_body(const struct mcp_exec_req *req, bool with_stdin, json_t **ret,
		     paddock_error *err)
{
	_cleanup_json_ json_t *o = json_object(), *argv = json_array(), *env = NULL;
	int r;

	if (!o || !argv)
		return paddock_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; req->argv[i]; i++) {
		json_t *s = json_string(req->argv[i]);

		if (!s)
			return paddock_fail_field(err, EINVAL, "command", "expected UTF-8 text");
		if (json_array_append_new(argv, s) < 0)
			return paddock_fail(err, ENOMEM, "out of memory");
	}
	r = set_new(o, "argv", TAKE_PTR(argv), "command", err);
	if (r >= 0 && req->env) {
		r = env_json(req->env, &env, err);
		if (r >= 0)
			r = set_new(o, "env", TAKE_PTR(env), "env", err);
	}
	if (r >= 0 && req->cwd)
		r = set_new(o, "cwd", json_string(req->cwd), "cwd", err);
	if (r >= 0 && req->timeout_s > 0)
		r = set_new(o, "timeout_s", json_real(req->timeout_s), "timeout_s", err);
	if (r >= 0 && with_stdin && req->stdin_data) {
		/* base64 whatever the bytes: a JSON string could not carry every byte */
		_cleanup_free_ char *b64 = paddock_base64_encode(req->stdin_data, req->stdin_len);

		r = b64 ? set_new(o, "stdin_b64", json_string(b64), "stdin", err)
			: paddock_fail(err, ENOMEM, "out of memory");
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}

/* Keeps the first `keep` bytes of a stream and counts them all. */
static int capture_add(struct capture *c, size_t keep, const char *data, size_t n)
{
	size_t take = c->len < keep ? keep - c->len : 0;

	c->total += n;
	if (take > n)
		take = n;
	if (take == 0)
		return 0;
	if (c->cap - c->len < take) {
		size_t cap = c->cap ? c->cap : 4096;
		char *p;

		while (cap - c->len < take)
			cap = cap > keep / 2 ? keep : cap * 2;
		p = realloc(c->buf, cap);
		if (!p)
			return -ENOMEM;
		c->buf = p;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, data, take);
	c->len += take;
	return 0;
}

/* A report's integer member, or null. */
static json_t *int_or_null(const json_t *report, const char *key)
{
	json_t *v = json_object_get(report, key);

	return json_is_integer(v) ? json_integer(json_integer_value(v)) : json_null();
}

/* The run_command result (backend.h) from the output kept and paddockd's report. */
static json_t *exec_result(const struct mcp_pending *p, json_t *report)
{
	const char *reason = json_string_value(json_object_get(report, "reason"));

	return json_pack("{s:o,s:s,s:o,s:o,s:o,s:b,s:b,s:I,s:I,s:O}", "exit_code",
			 int_or_null(report, "exit_code"), "reason", reason ? reason : "error",
			 "signal", int_or_null(report, "signal"), "stdout",
			 mcp_json_text(p->out[0].buf, p->out[0].len), "stderr",
			 mcp_json_text(p->out[1].buf, p->out[1].len), "stdout_truncated",
			 p->out[0].total > p->out[0].len, "stderr_truncated",
			 p->out[1].total > p->out[1].len, "stdout_bytes",
			 (json_int_t)p->out[0].total, "stderr_bytes", (json_int_t)p->out[1].total,
			 "report", report);
}

/* One event of the exec stream: 1 and *ret_result at the exit event, 0 to go on, or -errno. */
static int command_event(struct mcp_pending *p, const struct exec_event *ev, json_t **ret_result,
			 paddock_error *err)
{
	if (ev->type == EXEC_EVENT_STDOUT || ev->type == EXEC_EVENT_STDERR) {
		if (capture_add(&p->out[ev->type], p->keep, ev->data, ev->len) < 0)
			return paddock_fail(err, ENOMEM, "out of memory");
		return 0;
	}
	if (ev->type != EXEC_EVENT_EXIT)
		return 0; /* "start", and what a newer paddockd may add */
	if (!ev->result)
		return paddock_fail(err, EPROTO, "paddockd sent no report of the command's end");
	*ret_result = exec_result(p, ev->result);
	if (!*ret_result)
		return paddock_fail(err, ENOMEM, "out of memory");
	return 1;
}

void dpending_free(struct mcp_pending *p)
{
	for (struct mcp_pending **pp = &p->b->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	if (p->ev)
		event_free(p->ev);
	http_conn_free(p->conn); /* paddockd kills a foreground command whose client went */
	for (int i = 0; i < 2; i++)
		free(p->out[i].buf);
	free(p);
}

/*
 * Ends a command: everything of it is freed before `fn` runs, so fn may call the backend
 * (start another command, destroy the sandbox) without meeting it.
 */
static void exec_finish(struct mcp_pending *p, json_t *result, const paddock_error *err)
{
	mcp_exec_done_fn fn = p->fn;
	void *userdata = p->userdata;

	dpending_free(p);
	fn(result, result ? NULL : err, userdata);
}

static void exec_readable(evutil_socket_t fd, short what, void *arg)
{
	struct mcp_pending *p = arg;
	paddock_error err = { 0 };
	json_t *result = NULL;

	(void)fd;
	(void)what;
	for (int i = 0; i < LINES_PER_WAKE; i++) {
		struct exec_event ev;
		int r = exec_stream_next(p->conn, EXEC_LINE_MAX, &ev, &err);

		if (r == -EAGAIN)
			return;
		if (r == 0) {
			r = paddock_fail(&err, EPIPE,
					 "paddockd ended the command's stream before its end (the "
					 "sandbox was destroyed, or paddockd stopped)");
		} else if (r > 0) {
			r = command_event(p, &ev, &result, &err);
			exec_event_release(&ev);
		} else {
			paddock_error_prefix(&err, "paddockd");
		}
		if (r != 0) {
			exec_finish(p, result, &err);
			return;
		}
	}
	event_active(p->ev, EV_READ, 0); /* lines may wait in the buffer: after the others */
}

int d_exec(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
	   mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
	   paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_json_ json_t *body = NULL;
	struct http_response resp;
	struct mcp_pending *p;
	int r;

	if (!s)
		return -ENOENT;
	if (req->stdin_data && req->stdin_len > STDIN_MAX)
		return paddock_fail_field(err, EFBIG, "stdin",
					  "at most %u bytes of stdin through paddockd, got %zu",
					  STDIN_MAX, req->stdin_len);
	r = exec_body(req, true, &body, err);
	if (r < 0)
		return r;
	if (json_object_set_new(body, "stream", json_true()) < 0)
		return paddock_fail(err, ENOMEM, "out of memory");
	/* the head comes once init has forked the command: blocking here is short */
	r = dopen_json(b, "POST", SEGS(s->id, "exec"), NULL, body, &c, &resp, err);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return paddock_fail(err, ENOMEM, "out of memory");
	*p = (struct mcp_pending){
		.b = b, .fn = fn, .userdata = userdata, .keep = req->output_max
	};
	http_conn_set_nonblocking(c, true);
	p->ev = event_new(b->ev_base, http_conn_fd(c), EV_READ | EV_PERSIST, exec_readable, p);
	if (!p->ev || event_add(p->ev, NULL) < 0) {
		if (p->ev)
			event_free(p->ev);
		free(p);
		return paddock_fail(err, ENOMEM, "watch paddockd's answer");
	}
	p->conn = TAKE_PTR(c);
	p->next = b->pending;
	b->pending = p;
	/* the head's read may have taken lines with it: read them from the loop, not here */
	event_active(p->ev, EV_READ, 0);
	*ret_pending = p;
	return 0;
}

void d_cancel(struct mcp_backend *mb, struct mcp_pending *p)
{
	(void)mb;
	if (p)
		dpending_free(p);
}

/* ---- background processes ------------------------------------------------------------------ */

int d_bg_start(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
	       char **ret_proc, int *ret_pid, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_json_ json_t *body = NULL, *answer = NULL;
	char tag[sizeof(((struct dproc *)NULL)->tag)];
	struct dproc *p;
	json_t *pid;
	char *copy;
	int r;

	if (!s)
		return -ENOENT;
	r = exec_body(req, false, &body, err); /* stdin is /dev/null */
	if (r < 0)
		return r;
	snprintf(tag, sizeof(tag), "p%u", s->next_proc + 1);
	if (json_object_set_new(body, "background", json_true()) < 0 ||
	    json_object_set_new(body, "tag", json_string(tag)) < 0)
		return paddock_fail(err, ENOMEM, "out of memory");
	r = dcall(s->b, "POST", SEGS(s->id, "exec"), NULL, body, ANSWER_MAX, &answer, err);
	if (r < 0)
		return r;
	pid = json_object_get(answer, "pid");
	if (!json_is_integer(pid) || json_integer_value(pid) < 0 ||
	    json_integer_value(pid) > INT32_MAX)
		return paddock_fail(err, EPROTO, "paddockd's answer has no valid pid");
	copy = strdup(tag);
	p = copy ? dproc_add(s, err) : NULL;
	if (!p) {
		free(copy);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	*ret_proc = copy;
	*ret_pid = (int)json_integer_value(pid);
	return 0;
}

/* What bg_output() returns of a stream: the newest `max` bytes of what is new. */
struct fresh {
	char *buf;
	size_t len;
	uint64_t dropped;
};

/* Appends, dropping (and counting) the oldest bytes beyond `max`. */
static int fresh_add(struct fresh *f, size_t max, const char *data, size_t n)
{
	char *p;

	if (n == 0)
		return 0;
	if (n >= max) {
		f->dropped += f->len + (n - max);
		data += n - max;
		n = max;
		f->len = 0;
	} else if (f->len + n > max) {
		size_t drop = f->len + n - max;

		memmove(f->buf, f->buf + drop, f->len - drop);
		f->len -= drop;
		f->dropped += drop;
	}
	p = realloc(f->buf, f->len + n + 1);
	if (!p)
		return -ENOMEM;
	f->buf = p;
	memcpy(f->buf + f->len, data, n);
	f->len += n;
	return 0;
}

/*
 * One event of GET …/output: a chunk from the ring, at `offset` in its stream, or the exit
 * event (*ret_report: its result, a new reference).
 */
static int output_event(struct dproc *p, const struct exec_event *ev, size_t max,
			struct fresh out[2], json_t **ret_report, paddock_error *err)
{
	int i = ev->type;

	if (ev->type == EXEC_EVENT_EXIT) {
		json_decref(*ret_report);
		*ret_report = ev->result ? json_incref(ev->result) : json_null();
		return 0;
	}
	if (ev->type != EXEC_EVENT_STDOUT && ev->type != EXEC_EVENT_STDERR)
		return 0;
	if (ev->offset >= 0) {
		uint64_t o = (uint64_t)ev->offset;

		/* above what was asked: the ring dropped the bytes between; below: a restart */
		if (o > p->since[i])
			out[i].dropped += o - p->since[i];
		p->since[i] = o + ev->len;
	}
	if (fresh_add(&out[i], max, ev->data, ev->len) < 0)
		return paddock_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* Reads GET …/output?since_stdout=…&since_stderr=… to its end. */
static int read_output(struct dsandbox *s, struct dproc *p, size_t max, struct fresh out[2],
		       json_t **ret_report, paddock_error *err)
{
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_response resp;
	char since[2][24];
	int r;

	for (int i = 0; i < 2; i++)
		snprintf(since[i], sizeof(since[i]), "%" PRIu64, p->since[i]);
	r = dopen_json(s->b, "GET", SEGS(s->id, "processes", p->tag, "output"),
		       QUERY("since_stdout", since[0], "since_stderr", since[1]), NULL, &c, &resp,
		       err);
	if (r < 0)
		return r;
	for (int lines = 0;; lines++) {
		struct exec_event ev;

		r = exec_stream_next(c, RING_LINE_MAX, &ev, err);
		if (r < 0)
			return dbackend_io_error(r, err);
		if (r == 0)
			return 0;
		if (lines < RING_LINES_MAX)
			r = output_event(p, &ev, max, out, ret_report, err);
		else
			r = paddock_fail(err, EPROTO, "paddockd sent more than %d lines of output",
					 RING_LINES_MAX);
		exec_event_release(&ev);
		if (r < 0)
			return r;
	}
}

static json_t *output_result(struct fresh out[2], json_t *report)
{
	bool ended = report != NULL;
	json_t *reason = json_object_get(report, "reason");

	return json_pack("{s:b,s:o,s:o,s:I,s:I,s:o,s:O,s:O}", "running", !ended, "stdout",
			 mcp_json_text(out[0].buf, out[0].len), "stderr",
			 mcp_json_text(out[1].buf, out[1].len), "stdout_dropped",
			 (json_int_t)out[0].dropped, "stderr_dropped", (json_int_t)out[1].dropped,
			 "exit_code", ended ? int_or_null(report, "exit_code") : json_null(),
			 "reason", json_is_string(reason) ? reason : json_null(), "report",
			 json_is_object(report) ? report : json_null());
}

int d_bg_output(struct mcp_backend *mb, const char *id, const char *proc, size_t max, json_t **ret,
		paddock_error *err)
{
	struct dsandbox *s;
	struct dproc *p = dproc_find(mb, id, proc, &s, err);
	struct fresh out[2] = { { 0 } };
	json_t *report = NULL, *result = NULL;
	uint64_t saved[2];
	int r;

	if (!p)
		return -ENOENT;
	memcpy(saved, p->since, sizeof(saved));
	r = read_output(s, p, max, out, &report, err);
	if (r >= 0) {
		result = output_result(out, report);
		if (!result)
			r = paddock_fail(err, ENOMEM, "out of memory");
	}
	if (r < 0) {
		memcpy(p->since, saved, sizeof(saved)); /* nothing was returned: again next time */
		if (r == -ENOENT && strcmp(err->field, "process_id") == 0)
			dproc_forget(s, p); /* paddockd no longer keeps it */
	}
	json_decref(report);
	for (int i = 0; i < 2; i++)
		free(out[i].buf);
	if (r < 0)
		return r;
	*ret = result;
	return 0;
}

int d_bg_signal(struct mcp_backend *mb, const char *id, const char *proc, int sig,
		paddock_error *err)
{
	struct dsandbox *s;
	struct dproc *p = dproc_find(mb, id, proc, &s, err);
	_cleanup_json_ json_t *body = NULL;
	int r;

	if (!p)
		return -ENOENT;
	if (sig < 1 || sig > 64)
		return paddock_fail_field(err, EINVAL, "signal", "expected a signal number, got %d",
					  sig);
	body = json_pack("{s:i}", "signal", sig);
	if (!body)
		return paddock_fail(err, ENOMEM, "out of memory");
	r = dcall(s->b, "POST", SEGS(s->id, "processes", p->tag, "signal"), NULL, body, 0, NULL,
		  err);
	if (r == -EBUSY) /* 409: "the process has ended" */
		return paddock_fail_field(err, ESRCH, "process_id", "process '%s' has ended",
					  PADDOCK_ESC(proc));
	return r;
}
