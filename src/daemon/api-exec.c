/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands in a sandbox (docs/api.md "Processes"): run to completion, stream as NDJSON, or
 * start in the background and come back for output, stdin, signals, resize and the result.
 *
 * Each command's output and stdin are its exec session, kept by libpaddock (exec-io.c): a
 * foreground command's output whole up to the sandbox's limits.output (then the command
 * ends with reason "output"), a background one's newest bytes per stream (libpaddock's
 * ring, 1 MiB), read here by offset and passed on as it comes. Trust: output is hostile
 * bytes, passed on as UTF-8 text or base64, never interpreted.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

#define ENDED_KEPT	   64	      /* ended processes listed per sandbox */
#define STDIN_REQUEST_MAX  65536      /* stdin in an exec request: what libpaddock queues at once */
#define STREAM_PENDING_MAX (4u << 20) /* unsent output a following client may have */
#define WAIT_DEFAULT_S	   30
#define WAIT_MAX_S	   300

static const char *const exec_fields[] = {
	"argv",	  "cmd",	"env", "cwd", "stdin",	    "stdin_b64", "timeout_s",
	"stream", "background", "tag", "pty", "keep_stdin", NULL,
};

static const char *const stream_names[2] = { "stdout", "stderr" };

/* ---- process objects -------------------------------------------------------------------- */

json_t *pdd_proc_json(struct proc *p)
{
	return json_pack("{s:s,s:i,s:s?,s:O,s:b,s:b,s:s,s:o,s:o,s:O?}", "exec", p->exec_str, "pid",
			 p->pid, "tag", p->tag[0] ? p->tag : NULL, "argv", p->argv, "background",
			 p->background, "pty", p->pty, "state", p->exited ? "exited" : "running",
			 "started_at", svc_time_json(p->started_ms), "ended_at",
			 svc_time_json(p->ended_ms), "result", p->result);
}

struct proc *pdd_proc_find(struct box *b, const char *key)
{
	char *end;
	long pid = strtol(key, &end, 10);
	bool numeric = *key && !*end;

	for (struct proc *p = b->procs; p; p = p->next) {
		if (numeric && p->pid == pid && !p->exited)
			return p;
		if (!numeric && p->tag[0] && strcmp(p->tag, key) == 0 && !p->exited)
			return p;
	}
	/* an ended one: the newest with that pid or tag */
	for (struct proc *p = b->procs; p; p = p->next)
		if ((numeric && p->pid == pid) ||
		    (!numeric && p->tag[0] && strcmp(p->tag, key) == 0))
			return p;
	return NULL;
}

void pdd_proc_free(struct proc *p)
{
	struct box *b = p->box;

	for (struct proc **pp = &b->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	b->n_procs--;
	while (p->watchers) {
		struct watcher *w = p->watchers;

		/* one-answer requests get one; streams end */
		if (w->req && (w->kind == W_RESULT || w->kind == W_WAIT)) {
			pdd_watcher_detach(w);
			pdd_http_reply_error(b->d, w->req, 409, "conflict", "id",
					     "the sandbox was deleted or paddockd is stopping");
			w->req = NULL;
		}
		w->on_gone = NULL;
		if (w->kind == W_HOOK)
			w->ops->ended(w, p); /* p->result NULL: the sandbox went first */
		else
			pdd_stream_end(w);
		pdd_watcher_free(w, &p->watchers);
	}
	if (p->ex)
		paddock_exec_set_callback(p->ex, NULL, NULL);
	if (p->session) {
		paddock_exec_set_output_callback(p->session, NULL, NULL);
		p->session = paddock_exec_unref(p->session);
	}
	if (p->resume_ev)
		event_free(p->resume_ev);
	free(p->pending_stdin);
	json_decref(p->argv);
	json_decref(p->result);
	json_decref(p->fe_info);
	free(p);
}

/* Keeps the newest ENDED_KEPT ended processes. */
static void prune_ended(struct box *b)
{
	unsigned ended = 0;
	struct proc *p, *next;

	for (p = b->procs; p; p = next) {
		next = p->next;
		if (p->exited && !p->watchers && ++ended > ENDED_KEPT)
			pdd_proc_free(p);
	}
}

/* ---- output ----------------------------------------------------------------------------- */

/* All that libpaddock kept of stream (1, 2) from offset `from`, as bytes for svc_json_set_bytes. */
static size_t kept(struct proc *p, int stream, uint64_t *from, struct evbuffer *into)
{
	char buf[65536];
	size_t n, all = 0;

	while (p->session &&
	       (n = paddock_exec_read_output(p->session, stream, from, buf, sizeof(buf))) > 0) {
		evbuffer_add(into, buf, n);
		all += n;
	}
	return all;
}

json_t *pdd_proc_result_json(struct proc *p)
{
	json_t *o = json_pack("{s:s,s:i}", "exec", p->exec_str, "pid", p->pid);

	if (!o)
		return NULL;
	for (int i = 0; i < 2; i++) {
		struct evbuffer *b = evbuffer_new();
		uint64_t from = 0;
		size_t n = b ? kept(p, i + 1, &from, b) : 0;

		svc_json_set_bytes(o, stream_names[i],
				   b ? (const char *)evbuffer_pullup(b, -1) : "", n);
		if (b)
			evbuffer_free(b);
	}
	json_object_set(o, "result", p->result ? p->result : json_null());
	return o;
}

static void send_result(struct proc *p, struct watcher *w)
{
	json_t *o = pdd_proc_result_json(p);

	pdd_watcher_detach(w);
	if (w->req) {
		pdd_http_reply_json(p->box->d, w->req, 200, o);
		w->req = NULL;
	} else {
		json_decref(o);
	}
}

static void notify_end(struct proc *p)
{
	struct watcher *w, *next;

	for (w = p->watchers; w; w = next) {
		next = w->next;
		if (w->kind == W_OUTPUT) {
			pdd_stream_start(w, "application/x-ndjson"); /* one that never started */
			pdd_stream_line(
				w, json_pack("{s:s,s:O?}", "type", "exit", "result", p->result));
			pdd_stream_end(w);
		} else if (w->kind == W_START && w->req) {
			pdd_watcher_detach(w);
			pdd_http_reply_json(p->box->d, w->req, 201, pdd_proc_json(p));
			w->req = NULL;
		} else if (w->kind == W_RESULT) {
			send_result(p, w);
		} else if (w->kind == W_HOOK) {
			w->ops->ended(w, p);
		} else if (w->kind == W_WAIT && w->req) {
			pdd_watcher_detach(w);
			pdd_http_reply_json(p->box->d, w->req, 200, pdd_proc_json(p));
			w->req = NULL;
		}
		pdd_watcher_free(w, &p->watchers);
	}
}

/*
 * A client following the output that reads slower than the command writes: its unsent bytes
 * would pile up in paddockd. Reading the command's output stops instead (its pipe fills and
 * it blocks on write, as it would writing to a slow terminal) until the client caught up.
 */
static bool followers_behind(struct proc *p)
{
	for (struct watcher *w = p->watchers; w; w = w->next) {
		struct bufferevent *bev;

		if ((w->kind != W_OUTPUT && w->kind != W_HOOK) || !w->evcon)
			continue;
		bev = evhttp_connection_get_bufferevent(w->evcon);
		if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > STREAM_PENDING_MAX)
			return true;
	}
	return false;
}

static const struct timeval resume_tv = { 0, 20000 };

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	(void)fd;
	(void)what;
	if (followers_behind(p)) {
		evtimer_add(p->resume_ev, &resume_tv);
		return;
	}
	paddock_exec_pause_output(p->session, false);
}

/* after a chunk: pause the output while a follower is behind */
static void pace(struct proc *p)
{
	if (!followers_behind(p))
		return;
	if (!p->resume_ev)
		p->resume_ev = evtimer_new(p->box->d->base, resume_cb, p);
	if (!p->resume_ev)
		return;
	paddock_exec_pause_output(p->session, true);
	evtimer_add(p->resume_ev, &resume_tv);
}

/* libpaddock kept a chunk of output: to the followers, as it comes */
static void on_output(paddock_exec *ex, int stream, const void *data, size_t n, void *userdata)
{
	struct proc *p = userdata;

	(void)ex;
	for (struct watcher *w = p->watchers; w; w = w->next)
		if (w->kind == W_OUTPUT) {
			json_t *o = json_pack("{s:s}", "type", stream_names[stream - 1]);
			svc_json_set_bytes(o, "data", data, n);
			pdd_stream_line(w, o);
		} else if (w->kind == W_HOOK) {
			w->ops->data(w, p, stream - 1, data, n);
		}
	pace(p);
}

static void exec_done(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct proc *p = userdata;
	struct daemon *d = p->box->d;
	paddock_error err = { 0 };
	char *json = NULL;

	(void)ex;
	p->ex = NULL;
	p->exited = true;
	p->ended_ms = svc_now_ms();
	/* output_truncated is libpaddock's: the stored copy and the answer are the same */
	if (paddock_result_to_json(res, &json, NULL) >= 0)
		p->result = json_loads(json, 0, NULL);
	pdd_metrics_exec(d, res, svc_mono_s() - p->t0);
	if (paddock_store_end_exec(d->store, p->box->id, p->exec_id, p->ended_ms,
				   json ? json : "null", &err) < 0)
		fprintf(stderr, "paddockd: store: %s\n", err.msg);
	free(json);
	notify_end(p);
	prune_ended(p->box);
}

static void watcher_gone(struct watcher *w)
{
	struct proc *p = w->owner;

	/* a foreground command whose client went away is ended: nobody would see its result */
	if ((w->kind == W_RESULT || w->kind == W_OUTPUT) && p->ex && !p->background)
		(void)paddock_exec_terminate(p->ex, PADDOCK_END_KILLED, NULL);
	pdd_watcher_free(w, &p->watchers);
}

/* ---- start ------------------------------------------------------------------------------ */

static int record(struct proc *p, paddock_error *err);
static int write_stdin(struct proc *p, const char *data, size_t len, paddock_error *err);

/*
 * The command runs but cannot be recorded (the store failed): nobody could find it again
 * after a restart, so it is ended, and whoever waits for its start or its result is told
 * the request failed (503: the store). Streams that started already get its end instead.
 */
static void unrecorded(struct proc *p, paddock_exec *ex, const paddock_error *cause)
{
	struct watcher *w, *next;
	paddock_error err = { 0 };

	svc_store_error(&err, cause);
	for (w = p->watchers; w; w = next) {
		next = w->next;
		if (!w->req || w->kind == W_HOOK || w->streaming)
			continue;
		pdd_watcher_detach(w);
		pdd_http_reply_paddock_error(p->box->d, w->req, &err);
		w->req = NULL;
		pdd_watcher_free(w, &p->watchers);
	}
	(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
}

/* init forked the command: its session is libpaddock's; give it its stdin, tell who waits */
static void proc_started(paddock_exec *ex, void *userdata)
{
	struct proc *p = userdata;
	struct watcher *w, *next;
	paddock_error err = { 0 };

	p->started = true;
	p->pid = paddock_exec_pid(ex);
	if (record(p, &err) < 0)
		return unrecorded(p, ex, &err);
	if (p->pending_stdin) {
		if (write_stdin(p, p->pending_stdin, p->pending_len, &err) < 0 && err.code != EPIPE)
			fprintf(stderr, "paddockd: stdin of %s: %s\n", p->exec_str, err.msg);
		free(p->pending_stdin);
		p->pending_stdin = NULL;
	}
	if (p->pending_close)
		(void)paddock_exec_close_stdin(ex, NULL);
	for (w = p->watchers; w; w = next) {
		next = w->next;
		if (w->kind == W_START) {
			if (w->req) {
				pdd_watcher_detach(w);
				pdd_http_reply_json(p->box->d, w->req, 201, pdd_proc_json(p));
				w->req = NULL;
			}
			pdd_watcher_free(w, &p->watchers);
		} else if (w->kind == W_OUTPUT && !w->streaming) {
			pdd_stream_start(w, "application/x-ndjson");
			pdd_stream_line(w, json_pack("{s:s,s:s,s:i}", "type", "start", "exec",
						     p->exec_str, "pid", p->pid));
		} else if (w->kind == W_HOOK) {
			w->ops->started(w, p);
		}
	}
}

static struct proc *proc_new(struct box *b)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->box = b;
	p->next = b->procs;
	b->procs = p;
	b->n_procs++;
	return p;
}

static int record(struct proc *p, paddock_error *ret_err)
{
	paddock_error err = { 0 };
	char *argv = json_dumps(p->argv, JSON_COMPACT);
	int r;
	struct paddock_store_exec row = {
		.sandbox_id = p->box->id,
		.exec_id = p->exec_id,
		.pid = p->pid,
		.tag = p->tag[0] ? p->tag : NULL,
		.argv_json = argv ? argv : "[]",
		.background = p->background,
		.pty = p->pty,
		.started_ms = p->started_ms,
	};

	r = paddock_store_put_exec(p->box->d->store, &row, &err);
	if (r < 0) {
		fprintf(stderr, "paddockd: store: %s\n", err.msg);
		if (ret_err)
			*ret_err = err;
	}
	free(argv);
	return r;
}

/* All or nothing: -EAGAIN (err filled) when the command has not read what waits already. */
static int write_stdin(struct proc *p, const char *data, size_t len, paddock_error *err)
{
	if (!p->session || !p->has_stdin)
		return paddock_fail(err, EBADF, "the process has no stdin to write");
	return paddock_exec_write_stdin(p->session, data, len, err);
}

void pdd_exec_req_release(struct exec_req *q)
{
	json_decref(q->argv);
	free(q->argv_c);
	if (q->env_c)
		for (size_t i = 0; q->env_c[i]; i++)
			free((char *)q->env_c[i]);
	free(q->env_c);
	free(q->stdin_data);
}

static bool valid_tag(const char *t)
{
	size_t n = strlen(t);

	if (n < 1 || n > SVC_MAX_TAG)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-",
			    t[i]))
			return false;
	/* a tag is never all digits: those name pids */
	return strspn(t, "0123456789") != n;
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
	json_object_foreach(v, k, val)
	{
		char *e;

		if (!json_is_string(val) || !k[0] || strchr(k, '=') ||
		    strlen(json_string_value(val)) != json_string_length(val))
			return paddock_fail_field(
				err, EINVAL, "env",
				"expected NAME: \"value\" pairs (NAME without '=')");
		if (asprintf(&e, "%s=%s", k, json_string_value(val)) < 0)
			return paddock_fail(err, ENOMEM, "out of memory");
		q->env_c[i++] = e;
	}
	return 0;
}

/* "stdin" (text) or "stdin_b64" (bytes), at most what a pipe holds */
static int parse_stdin(json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v;

	if ((v = json_object_get(body, "stdin"))) {
		if (!json_is_string(v))
			return paddock_fail_field(err, EINVAL, "stdin", "expected a string");
		q->stdin_len = json_string_length(v);
		q->stdin_data = malloc(q->stdin_len + 1);
		if (!q->stdin_data)
			return paddock_fail(err, ENOMEM, "out of memory");
		memcpy(q->stdin_data, json_string_value(v), q->stdin_len);
		q->has_stdin = true;
	}
	if ((v = json_object_get(body, "stdin_b64"))) {
		if (q->has_stdin || !json_is_string(v) ||
		    paddock_base64_decode(json_string_value(v), json_string_length(v),
					  &q->stdin_data, &q->stdin_len) < 0)
			return paddock_fail_field(
				err, EINVAL, "stdin_b64",
				"expected base64 (and not together with 'stdin')");
		q->has_stdin = true;
	}
	/* more than a pipe holds would block: bounded to what fits */
	if (q->stdin_len > STDIN_REQUEST_MAX)
		return paddock_fail_field(err, EFBIG, "stdin",
					  "at most 65536 bytes of stdin in the request; write more "
					  "through a background process's stdin");
	return 0;
}

/* "timeout_s", and the booleans "stream", "background", "keep_stdin" */
static int parse_mode(struct box *b, json_t *body, struct exec_req *q, paddock_error *err)
{
	static const char *const flags[] = { "stream", "background", "keep_stdin" };
	json_t *v;

	q->timeout_s = b->sb ? -1 : 0;
	if ((v = json_object_get(body, "timeout_s"))) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400)
			return paddock_fail_field(err, EINVAL, "timeout_s",
						  "expected seconds from 0 to 86400");
		q->timeout_s = json_number_value(v);
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		v = json_object_get(body, flags[i]);
		if (v && !json_is_boolean(v))
			return paddock_fail_field(err, EINVAL, flags[i], "expected true or false");
	}
	q->stream = json_is_true(json_object_get(body, "stream"));
	q->background = json_is_true(json_object_get(body, "background"));
	q->keep_stdin = json_is_true(json_object_get(body, "keep_stdin"));
	if (q->stream && q->background)
		return paddock_fail_field(
			err, EINVAL, "stream",
			"a background process is followed through its output endpoint");
	return 0;
}

/* "tag": a name no running process of the sandbox has */
static int parse_tag(struct box *b, json_t *body, struct exec_req *q, paddock_error *err)
{
	json_t *v = json_object_get(body, "tag");

	if (!v)
		return 0;
	if (!json_is_string(v) || !valid_tag(json_string_value(v)))
		return paddock_fail_field(err, EINVAL, "tag",
					  "expected 1 to 64 of [A-Za-z0-9_.-], not all digits");
	q->tag = json_string_value(v);
	for (struct proc *p = b->procs; p; p = p->next)
		if (!p->exited && strcmp(p->tag, q->tag) == 0)
			return paddock_fail_field(err, EEXIST, "tag",
						  "a running process already has tag '%s'", q->tag);
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
	q->pty = true;
	q->rows = (unsigned)json_integer_value(rows);
	q->cols = (unsigned)json_integer_value(cols);
	return 0;
}

int pdd_exec_parse(struct box *b, json_t *body, struct exec_req *q, paddock_error *err)
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
	if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/'))
		return paddock_fail_field(err, EINVAL, "cwd", "expected an absolute path");
	q->cwd = cwd ? json_string_value(cwd) : NULL;
	r = parse_stdin(body, q, err);
	if (r < 0)
		return r;
	r = parse_mode(b, body, q, err);
	if (r < 0)
		return r;
	r = parse_tag(b, body, q, err);
	if (r < 0)
		return r;
	return parse_pty(body, q, err);
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
	if (pdd_exec_start(r->req, b, body, NULL, NULL, NULL, &err) < 0)
		pdd_reply_paddock_error(r, &err);
	json_decref(body);
}

/* Whether b can run a command now: -ESRCH (409) when it does not run, -EBUSY when paused. */
static int check_runs(const struct box *b, paddock_error *err)
{
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return paddock_fail_field(err, ESRCH, "id", "the sandbox is not running");
	return svc_box_check_not_paused(b, err);
}

/* -EAGAIN (429) when the sandbox tracks SVC_MAX_PROCS processes, also once ended ones went */
static int check_room(struct box *b, paddock_error *err)
{
	if (b->n_procs < SVC_MAX_PROCS)
		return 0;
	prune_ended(b);
	if (b->n_procs < SVC_MAX_PROCS)
		return 0;
	return paddock_fail(err, EAGAIN, "the sandbox has %d processes tracked", SVC_MAX_PROCS);
}

/* libpaddock's options for a parsed request (borrowing q's strings) */
static void exec_opts(const struct exec_req *q, struct paddock_exec_opts *opts)
{
	/*
	 * The API's timeout_s: absent, the sandbox's limits.timeout_s (libpaddock's default,
	 * 0) for a foreground command and none for a background one; 0, none.
	 */
	opts->timeout_s = q->timeout_s < 0    ? (q->background ? -1 : 0)
			  : q->timeout_s == 0 ? -1
					      : q->timeout_s;
	opts->argv = q->argv_c;
	opts->env = q->env_c;
	opts->cwd = q->cwd;
	/* the exec session: a foreground command's output whole (limits.output), else a ring */
	opts->capture = q->background ? PADDOCK_CAPTURE_RING : PADDOCK_CAPTURE_ALL;
	if (q->pty) {
		opts->pty_streams = 7;
		opts->pty_rows = (unsigned short)q->rows;
		opts->pty_cols = (unsigned short)q->cols;
	} else {
		opts->pipe_streams = (q->has_stdin || q->keep_stdin) ? 1 : 0;
	}
	opts->on_started = proc_started;
}

/* Starts q's command as a new process of b; its stdin waits for init's start report. */
static int launch(struct box *b, struct exec_req *q, struct proc **ret, paddock_error *err)
{
	struct paddock_exec_opts opts = { .fds = { -1, -1, -1 } };
	paddock_exec *ex = NULL;
	struct proc *p = proc_new(b);
	int r;

	if (!p)
		return paddock_fail(err, ENOMEM, "out of memory");
	p->argv = json_incref(q->argv);
	p->background = q->background;
	p->pty = q->pty;
	p->has_stdin = q->pty || q->has_stdin || q->keep_stdin;
	p->t0 = svc_mono_s();
	if (q->tag)
		snprintf(p->tag, sizeof(p->tag), "%s", q->tag);
	exec_opts(q, &opts);
	r = paddock_exec_start(b->sb, &opts, exec_done, p, &ex, err);
	if (r < 0) {
		pdd_proc_free(p);
		return r;
	}
	p->ex = ex;
	p->session = paddock_exec_ref(ex);
	paddock_exec_set_output_callback(ex, on_output, p);
	p->exec_id = paddock_exec_id(ex);
	snprintf(p->exec_str, sizeof(p->exec_str), "ex_%llu", (unsigned long long)p->exec_id);
	p->started_ms = svc_now_ms();
	if (q->has_stdin) {
		p->pending_stdin = q->stdin_data;
		q->stdin_data = NULL;
		p->pending_len = q->stdin_len;
	}
	p->pending_close = q->has_stdin && !q->keep_stdin && !q->pty;
	*ret = p;
	return 0;
}

int pdd_exec_start(struct evhttp_request *req, struct box *b, json_t *body,
		   const struct watcher_ops *ops, void *ctx, struct proc **ret_proc,
		   paddock_error *err)
{
	struct exec_req q = { 0 };
	struct proc *p = NULL;
	struct watcher *w;
	int r;

	r = check_runs(b, err);
	if (r < 0)
		return r;
	r = pdd_exec_parse(b, body, &q, err);
	if (r >= 0)
		r = check_room(b, err);
	if (r >= 0)
		r = launch(b, &q, &p, err);
	if (r < 0)
		goto out;
	/* the answer waits for init: a 201 with the pid, the stream's start, or the result */
	w = ops ? pdd_proc_hook(req, p, ops, ctx)
		: pdd_watcher_open(b->d, req,
				   q.background ? W_START
				   : q.stream	? W_OUTPUT
						: W_RESULT,
				   p, &p->watchers);
	if (!w) {
		(void)paddock_exec_terminate(p->ex, PADDOCK_END_ERROR, NULL);
		r = paddock_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	if (!ops)
		w->on_gone = watcher_gone;
	if (ret_proc)
		*ret_proc = p;
out:
	pdd_exec_req_release(&q);
	return r;
}

struct watcher *pdd_proc_hook(struct evhttp_request *req, struct proc *p,
			      const struct watcher_ops *ops, void *ctx)
{
	struct watcher *w = pdd_watcher_open(p->box->d, req, W_HOOK, p, &p->watchers);

	if (w) {
		w->ops = ops;
		w->ctx = ctx;
	}
	return w;
}

int pdd_proc_write_stdin(struct proc *p, const char *data, size_t len)
{
	paddock_error err = { 0 };

	if (p->exited)
		return -ESRCH;
	return write_stdin(p, data, len, &err);
}

void pdd_proc_close_stdin(struct proc *p)
{
	if (!p->exited && p->session)
		(void)paddock_exec_close_stdin(p->session, NULL);
}

/* ---- adopt ------------------------------------------------------------------------------ */

void pdd_proc_adopt(struct box *b, paddock_exec *ex, const struct paddock_store_exec *row,
		    bool end_it)
{
	struct proc *p = proc_new(b);

	if (!p)
		return;
	p->argv = row && row->argv_json ? json_loads(row->argv_json, 0, NULL) : NULL;
	if (!p->argv)
		p->argv = json_array();
	p->exec_id = row ? row->exec_id : paddock_exec_id(ex);
	snprintf(p->exec_str, sizeof(p->exec_str), "ex_%llu", (unsigned long long)p->exec_id);
	p->pid = row ? row->pid : paddock_exec_pid(ex);
	p->background = row ? row->background : true;
	p->pty = row ? row->pty : paddock_exec_pty_streams(ex) != 0;
	p->started_ms = row ? row->started_ms : svc_now_ms();
	p->t0 = svc_mono_s();
	if (row && row->tag)
		snprintf(p->tag, sizeof(p->tag), "%s", row->tag);
	if (!ex) {
		/* ended while no paddockd listened, and its report went with the old one */
		p->exited = true;
		p->ended_ms = svc_now_ms();
		p->result = json_pack("{s:s,s:{s:s}}", "reason", "error", "error", "message",
				      "the command's report was lost when paddockd restarted");
		(void)paddock_store_end_exec(b->d->store, b->id, p->exec_id, p->ended_ms,
					     "{\"reason\":\"error\"}", NULL);
		return;
	}
	p->ex = ex;
	p->started = true;
	paddock_exec_set_callback(ex, exec_done, p);
	/* its pipes came back with init's report: a ring, as for any background command */
	if (paddock_exec_capture(ex, PADDOCK_CAPTURE_RING, 0, NULL) >= 0) {
		p->session = paddock_exec_ref(ex);
		p->has_stdin = true;
		paddock_exec_set_output_callback(ex, on_output, p);
	}
	if (!row && record(p, NULL) < 0)
		end_it = true; /* a command nobody can find again after a restart */
	/*
	 * Whoever waited for it in the foreground went with the old paddockd: it is ended, as
	 * when a client goes away (docs/api.md, Restarts), and its result says "killed".
	 */
	if (end_it && !p->exited)
		(void)paddock_exec_terminate(ex, PADDOCK_END_KILLED, NULL);
}

/* ---- /processes ------------------------------------------------------------------------- */

static void wait_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;
	struct proc *p = w->owner;

	(void)fd;
	(void)what;
	if (w->req) {
		pdd_watcher_detach(w);
		pdd_http_reply_json(p->box->d, w->req, 200, pdd_proc_json(p));
		w->req = NULL;
	}
	pdd_watcher_free(w, &p->watchers);
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
	n = kept(p, i + 1, &from, b);
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
	w = pdd_watcher_new(r, W_OUTPUT, p, &p->watchers);
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
		pdd_watcher_free(w, &p->watchers);
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
	w = write_stdin(p, (const char *)evbuffer_pullup(in, -1), n, &err);
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
		return pdd_reply_json(r, 200, pdd_proc_json(p));
	w = pdd_watcher_new(r, W_WAIT, p, &p->watchers);
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
		pdd_proc_close_stdin(p);
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
			json_array_append_new(a, pdd_proc_json(p));
		return pdd_reply_json(r, 200, json_pack("{s:o}", "processes", a));
	}
	p = pdd_proc_find(b, r->seg[4]);
	if (!p)
		return pdd_reply_error(r, 404, "not_found", "process", "no such process");
	if (r->n_seg == 5) {
		if (r->method != EVHTTP_REQ_GET)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
		return pdd_reply_json(r, 200, pdd_proc_json(p));
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
