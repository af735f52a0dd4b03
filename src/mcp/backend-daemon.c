/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backend of `paddock mcp --connect SOCKET`: the sandboxes of a running paddockd, through
 * its HTTP API on a unix socket (docs/api.md) and the client library of src/client/client.h.
 *
 * Each operation is one blocking request, bounded in time (SOCKET_TIMEOUT_S without
 * a byte moving either way is an error) and in size. A command is the exception: its answer
 * is an NDJSON stream read from the server's event loop, so the server keeps answering pings
 * and cancellations while it runs. Cancelling closes that connection, and paddockd kills a
 * foreground command whose client went away (watcher_gone() in src/daemon/api-exec.c).
 *
 * Lifetime: paddockd deletes a sandbox when its TTL (at most a day) runs out, or after
 * idle_timeout_s without a request. A timer here renews the TTL and makes a request for each
 * sandbox often enough that they live as long as this backend (a long command counts as
 * idle to paddockd), and end soon after a `paddock mcp` killed before it could delete them.
 *
 * Trust: paddockd is trusted to speak HTTP, but what it relays (output, file names, error
 * messages that quote paths) comes from the sandbox or the agent: every answer is bounded and
 * parsed as hostile, and a malformed one is an error, never a guess. The agent reaches only
 * the sandboxes this backend created, never the tenant's others.
 *
 * This file holds the requests, the sandboxes and their lifetime; backend-daemon-exec.c the
 * commands and background processes, backend-daemon-files.c the files, backend-daemon-asks.c
 * the decisions a sandbox asks for.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

#include <jansson.h>

#include "paddock/paddock.h"
#include "backend.h"
#include "backend-daemon-internal.h"
#include "api-error.h"
#include "client.h"
#include "paddock/cleanup.h"

#define SOCKET_TIMEOUT_S 60
#define ERROR_ANSWER_MAX (64u << 10) /* an error answer */
#define TTL_S		 86400	     /* paddockd's maximum */
#define RENEW_S		 3600
#define PROCS_KEPT	 1024 /* background processes remembered per sandbox */

static time_t mono_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with this clock */
	return ts.tv_sec;
}

/* ---- requests ----------------------------------------------------------------------------- */

/* "/v1/sandboxes/SEG/SEG...?KEY=VALUE&...", as dopen() says; NULL when out of memory. */
static char *sandboxes_url(const char *const *segs, const char *const *query)
{
	char *url = NULL;
	size_t len;
	FILE *f = open_memstream(&url, &len);

	if (!f)
		return NULL;
	fputs("/v1/sandboxes", f);
	for (; segs && *segs; segs++) {
		fputc('/', f);
		http_put_encoded(f, *segs, false);
	}
	for (size_t i = 0; query && query[i]; i += 2) {
		fputc(i == 0 ? '?' : '&', f);
		http_put_encoded(f, query[i], false);
		fputc('=', f);
		http_put_encoded(f, query[i + 1], true);
	}
	if (fclose(f) != 0) {
		free(url);
		return NULL;
	}
	return url;
}

/* The client's errors; a receive or send that timed out is the one it leaves unexplained. */
int dbackend_io_error(int r, paddock_error *err)
{
	if (r == -EAGAIN)
		return paddock_fail(err, ETIMEDOUT, "paddockd did not answer within %d s",
				    SOCKET_TIMEOUT_S);
	paddock_error_prefix(err, "paddockd");
	return r;
}

/* Control characters blanked: paddockd's messages may quote the agent's paths */
static void blank_controls(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			*s = ' ';
}

/*
 * An error answer (src/client/api-error.h) becomes err; paddockd's fields "id" and "process"
 * are the tools' "sandbox_id" and "process_id".
 */
static int answer_error(struct http_conn *c, const struct http_response *resp, paddock_error *err)
{
	_cleanup_free_ char *body = NULL;
	size_t len = 0;
	int r;

	if (http_read_body_all(c, ERROR_ANSWER_MAX, &body, &len, err) < 0)
		body = NULL, len = 0;
	r = client_error_answer(resp->status, resp->reason, body, len, err, NULL);
	blank_controls(err->msg);
	if (strcmp(err->field, "id") == 0)
		snprintf(err->field, sizeof(err->field), "sandbox_id");
	else if (strcmp(err->field, "process") == 0)
		snprintf(err->field, sizeof(err->field), "process_id");
	blank_controls(err->field);
	return r;
}

/* Connects, sends `req` and reads the answer's head, whatever its status. */
static int dsend(struct dbackend *b, const struct http_request *req, struct http_conn **ret_conn,
		 struct http_response *ret_resp, paddock_error *err)
{
	struct timeval tv = { .tv_sec = SOCKET_TIMEOUT_S };
	_cleanup_conn_ struct http_conn *c = NULL;
	int r;

	r = http_connect_unix(b->socket_path, &c, err);
	if (r < 0) {
		paddock_error_prefix(err, "cannot reach paddockd at '%s'",
				     PADDOCK_ESC(b->socket_path));
		return r;
	}
	/* reads and writes give up after SOCKET_TIMEOUT_S */
	if (setsockopt(http_conn_fd(c), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(http_conn_fd(c), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return paddock_fail(err, errno, "set the timeouts of paddockd's socket");
	r = http_send_request(c, req, err);
	if (r >= 0)
		r = http_read_response(c, ret_resp, err);
	if (r < 0)
		return dbackend_io_error(r, err);
	*ret_conn = TAKE_PTR(c);
	return 0;
}

int dopen(struct dbackend *b, const struct http_request *req, const char *const *segs,
	  const char *const *query, struct http_conn **ret_conn, struct http_response *ret_resp,
	  paddock_error *err)
{
	_cleanup_free_ char *url = req->target ? NULL : sandboxes_url(segs, query);
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_request to = *req;
	int r;

	*ret_resp = (struct http_response){ 0 };
	if (!req->target && !url)
		return paddock_fail(err, ENOMEM, "out of memory");
	to.target = req->target ? req->target : url;
	r = dsend(b, &to, &c, ret_resp, err);
	if (r < 0)
		return r;
	if (ret_resp->status < 200 || ret_resp->status > 299)
		return answer_error(c, ret_resp, err);
	*ret_conn = TAKE_PTR(c);
	return 0;
}

int dopen_json(struct dbackend *b, const char *method, const char *const *segs,
	       const char *const *query, const json_t *body, struct http_conn **ret_conn,
	       struct http_response *ret_resp, paddock_error *err)
{
	_cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	size_t len = text ? strlen(text) : 0;
	int r;

	if (body && !text)
		return paddock_fail(err, ENOMEM, "out of memory");
	r = dopen(b,
		  &(struct http_request){ .method = method,
					  .content_type = body ? "application/json" : NULL,
					  .body = text,
					  .body_len = len,
					  .body_fd = -1 },
		  segs, query, ret_conn, ret_resp, err);
	/* SECURITY: a create request holds the values of secrets: gone from memory once sent */
	if (text)
		explicit_bzero(text, len);
	return r;
}

int dcall(struct dbackend *b, const char *method, const char *const *segs, const char *const *query,
	  const json_t *body, size_t max, json_t **ret_json, paddock_error *err)
{
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_free_ char *answer = NULL;
	struct http_response resp;
	json_t *json = NULL;
	json_error_t jerr;
	size_t len = 0;
	int r;

	r = dopen_json(b, method, segs, query, body, &c, &resp, err);
	if (r < 0 || !ret_json)
		return r;
	r = http_read_body_all(c, max, &answer, &len, err);
	if (r < 0)
		return dbackend_io_error(r, err);
	if (len > 0 && !(json = json_loadb(answer, len, 0, &jerr)))
		return paddock_fail(err, EPROTO, "paddockd's answer is not JSON: %s", jerr.text);
	*ret_json = json;
	return 0;
}

/* ---- sandboxes and processes this backend made --------------------------------------------- */

struct dsandbox *dsandbox_find(struct mcp_backend *mb, const char *id, paddock_error *err)
{
	for (struct dsandbox *s = dbackend(mb)->sandboxes; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	paddock_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s' in this session",
			   PADDOCK_ESC(id));
	return NULL;
}

static void procs_free(struct dproc *p)
{
	while (p) {
		struct dproc *next = p->next;
		free(p);
		p = next;
	}
}

static void sandbox_unlink(struct dbackend *b, struct dsandbox *s)
{
	for (struct dsandbox **pp = &b->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	dsandbox_asks_unwatch(s);
	procs_free(s->procs);
	free(s);
}

struct dproc *dproc_find(struct mcp_backend *mb, const char *id, const char *tag,
			 struct dsandbox **ret_s, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);

	if (!s)
		return NULL;
	for (struct dproc *p = s->procs; p; p = p->next)
		if (strcmp(p->tag, tag) == 0) {
			*ret_s = s;
			return p;
		}
	paddock_fail_field(err, ENOENT, "process_id", "no process '%s' in sandbox '%s'",
			   PADDOCK_ESC(tag), s->id);
	return NULL;
}

void dproc_forget(struct dsandbox *s, struct dproc *p)
{
	for (struct dproc **pp = &s->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			s->n_procs--;
			free(p);
			return;
		}
}

/* Remembers a new process; the oldest beyond PROCS_KEPT is forgotten (paddockd did too). */
struct dproc *dproc_add(struct dsandbox *s, paddock_error *err)
{
	struct dproc *p = calloc(1, sizeof(*p));

	if (!p) {
		paddock_fail(err, ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(p->tag, sizeof(p->tag), "p%u", ++s->next_proc);
	p->next = s->procs;
	s->procs = p;
	if (++s->n_procs > PROCS_KEPT) {
		struct dproc *last = s->procs;

		while (last->next)
			last = last->next;
		dproc_forget(s, last);
	}
	return p;
}

/* paddockd's ids: "sb_" and 12 of [a-z2-9]; anything else in a URL or a list is refused. */
static bool valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 4 || n >= SANDBOX_ID_MAX || strncmp(id, "sb_", 3) != 0)
		return false;
	return strspn(id + 3, "abcdefghijklmnopqrstuvwxyz0123456789") == n - 3;
}

static int sandbox_delete(struct dbackend *b, const char *id, paddock_error *err)
{
	int r = dcall(b, "DELETE", SEGS(id), NULL, NULL, 0, NULL, err);

	/* -ENOENT: its TTL or idle timeout ran out, or paddockd lost it: gone anyway */
	return r == -ENOENT ? 0 : r;
}

/* ---- create and destroy ------------------------------------------------------------------- */

/*
 * A secret's source names this process's environment or files, not paddockd's (and a value
 * given in the spec is never written out): read each here and send it as a write-only
 * "value", as `paddock create` does.
 */
static int put_secret_values(const paddock_spec *spec, json_t *req, paddock_error *err)
{
	json_t *sec;
	size_t i;

	json_array_foreach(json_object_get(req, "secrets"), i, sec)
	{
		const char *name = json_string_value(json_object_get(sec, "name"));
		uint8_t *val = NULL;
		size_t n = 0;
		json_t *value;
		int r;

		r = name ? paddock_spec_secret_value(spec, name, &val, &n, err) : -ENOENT;
		if (r == -ENOENT)
			return paddock_fail(err, EPROTO,
					    "the spec's secrets do not match their JSON");
		if (r < 0)
			return r;
		value = json_stringn((const char *)val, n);
		explicit_bzero(val, n);
		free(val);
		if (!value) {
			char field[48];

			snprintf(field, sizeof(field), "secrets[%zu].source", i);
			return paddock_fail_field(err, EINVAL, field,
						  "secret '%s': the value is not UTF-8 text",
						  PADDOCK_ESC(name));
		}
		(void)json_object_del(sec, "source");
		if (json_object_set_new(sec, "value", value) < 0)
			return paddock_fail(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* SECURITY: the values' copies inside jansson are wiped before it frees them. */
static void wipe_secret_values(json_t *req)
{
	json_t *sec;
	size_t i;

	json_array_foreach(json_object_get(req, "secrets"), i, sec)
	{
		json_t *v = json_object_get(sec, "value");

		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
	}
}

/* The create request: the effective spec, the secrets' values, TTL and idle timeout. */
static int create_request(struct dbackend *b, const paddock_spec *spec, json_t **ret,
			  paddock_error *err)
{
	_cleanup_free_ char *text = NULL;
	json_t *req;
	int r;

	r = paddock_spec_to_json(spec, &text, err);
	if (r < 0)
		return r;
	req = json_loads(text, 0, NULL);
	if (!json_is_object(req)) {
		json_decref(req);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	r = put_secret_values(spec, req, err);
	if (r >= 0 &&
	    (json_object_set_new(req, "ttl_s", json_integer(TTL_S)) < 0 ||
	     (b->idle_timeout_s > 0 &&
	      json_object_set_new(req, "idle_timeout_s", json_integer(b->idle_timeout_s)) < 0)))
		r = paddock_fail(err, ENOMEM, "out of memory");
	if (r < 0) {
		wipe_secret_values(req);
		json_decref(req);
		return r;
	}
	*ret = req;
	return 0;
}

static int d_create(struct mcp_backend *mb, const paddock_spec *spec, char **ret_id,
		    paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	_cleanup_json_ json_t *answer = NULL;
	struct dsandbox *s;
	json_t *req = NULL;
	const char *id;
	char *copy;
	int r;

	r = create_request(b, spec, &req, err);
	if (r < 0)
		return r;
	r = dcall(b, "POST", NULL, NULL, req, ANSWER_MAX, &answer, err);
	wipe_secret_values(req);
	json_decref(req);
	if (r < 0)
		return r;
	id = json_string_value(json_object_get(answer, "id"));
	if (!id || !valid_id(id))
		return paddock_fail(err, EPROTO, "paddockd's answer has no valid sandbox id");
	s = calloc(1, sizeof(*s));
	copy = strdup(id);
	if (!s || !copy) {
		free(s);
		free(copy);
		(void)sandbox_delete(b, id, err); /* best effort: its idle timeout ends it else */
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->b = b;
	s->next = b->sandboxes;
	b->sandboxes = s;
	*ret_id = copy;
	return 0;
}

static int d_destroy(struct mcp_backend *mb, const char *id, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = dsandbox_find(mb, id, err);
	int r;

	if (!s)
		return -ENOENT;
	r = sandbox_delete(b, s->id, err);
	if (r < 0)
		return r;
	sandbox_unlink(b, s);
	return 0;
}

/* POST /v1/sandboxes/{id}/pause or .../resume (docs/api.md "Pause and resume") */
static int d_set_paused(struct mcp_backend *mb, const char *id, bool pause, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	json_t *answer = NULL;
	int r;

	if (!s)
		return -ENOENT;
	r = dcall(s->b, "POST", SEGS(s->id, pause ? "pause" : "resume"), NULL, NULL, 1u << 20,
		  &answer, err);
	json_decref(answer);
	return r;
}

/* ---- keeping the sandboxes alive, and the end ----------------------------------------------- */

/*
 * paddockd's idle timeout counts requests, not running commands: a request to each sandbox
 * within every third of it; and the TTL renewed every RENEW_S. Failures are left for the
 * next round (a sandbox that is gone answers its next tool call with the reason).
 */
static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dbackend *b = arg;
	bool renew = mono_s() - b->last_renew >= RENEW_S - 60; /* a tick never misses one */
	_cleanup_json_ json_t *ttl = json_pack("{s:i}", "ttl_s", TTL_S);

	(void)fd;
	(void)what;
	if (renew)
		b->last_renew = mono_s();
	for (struct dsandbox *s = b->sandboxes; s; s = s->next) {
		paddock_error err = { 0 };

		if (b->idle_timeout_s > 0)
			(void)dcall(b, "GET", SEGS(s->id, "files", "stat"), QUERY("path", "/"),
				    NULL, 0, NULL, &err);
		if (ttl && renew)
			(void)dcall(b, "POST", SEGS(s->id, "ttl"), NULL, ttl, 0, NULL, &err);
	}
}

static void d_free(struct mcp_backend *mb)
{
	struct dbackend *b = dbackend(mb);

	if (!b)
		return;
	if (b->keepalive)
		event_free(b->keepalive);
	while (b->pending) /* their commands are killed as the connections close */
		dpending_free(b->pending);
	while (b->sandboxes) {
		struct dsandbox *s = b->sandboxes;
		paddock_error err = { 0 };

		if (sandbox_delete(b, s->id, &err) < 0) {
			char buf[sizeof(err.msg) + 64];

			/* a front end's diagnostic: it is left to its idle timeout or TTL */
			fprintf(stderr, "paddock mcp: could not delete sandbox %s: %s\n", s->id,
				paddock_error_format(&err, buf, sizeof(buf)));
		}
		sandbox_unlink(b, s);
	}
	free(b);
}

/* ---- the code interpreter ---------------------------------------------------------------- */

static int d_code_request(struct mcp_backend *mb, const char *id, const char *method,
			  const char *path, const char *body, size_t len, mcp_code_fn fn,
			  void *userdata, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	struct http_response resp;
	struct http_conn *c = NULL;
	char target[160];
	int r;

	if (!s)
		return -ENOENT;
	/* the path is tools' own ("/execute", "/contexts"): only the id needs checking */
	if (!valid_id(id) || strlen(path) > 80 || path[0] != '/')
		return paddock_fail_field(err, EINVAL, "sandbox_id", "not a sandbox id");
	snprintf(target, sizeof(target), "/v1/sandboxes/%s/code%s", id, path);
	r = dsend(s->b,
		  &(struct http_request){ .method = method,
					  .target = target,
					  .content_type = "application/json",
					  .body = body,
					  .body_len = len,
					  .body_fd = -1 },
		  &c, &resp, err);
	if (r < 0)
		return r;
	fn(c, &resp, NULL, userdata);
	return 0;
}

static const struct mcp_backend_ops daemon_ops = {
	.name = "paddockd",
	.create = d_create,
	.destroy = d_destroy,
	.set_paused = d_set_paused,
	.exec = d_exec,
	.cancel = d_cancel,
	.read_file = d_read_file,
	.write_file = d_write_file,
	.list_dir = d_list_dir,
	.bg_start = d_bg_start,
	.bg_output = d_bg_output,
	.bg_signal = d_bg_signal,
	.code_request = d_code_request,
	.watch_asks = d_watch_asks,
	.answer = d_answer,
	.free = d_free,
};

int mcp_backend_daemon_new(struct event_base *base, const char *socket_path,
			   unsigned idle_timeout_s, struct mcp_backend **ret, paddock_error *err)
{
	struct http_response resp;
	struct http_conn *c = NULL;
	struct dbackend *b;
	unsigned period;
	int r;

	if (!base || !socket_path || !ret)
		return paddock_fail(err, EINVAL, "missing argument");
	b = calloc(1, sizeof(*b));
	if (!b)
		return paddock_fail(err, ENOMEM, "out of memory");
	b->base.ops = &daemon_ops;
	b->ev_base = base;
	b->idle_timeout_s = idle_timeout_s;
	b->last_renew = mono_s();
	if (strlen(socket_path) >= sizeof(b->socket_path)) {
		free(b);
		return paddock_fail(err, ENAMETOOLONG, "socket path '%s' is longer than %zu bytes",
				    PADDOCK_ESC(socket_path), sizeof(b->socket_path) - 1);
	}
	memcpy(b->socket_path, socket_path, strlen(socket_path) + 1);
	/* fail now, not at the agent's first tool call, when paddockd is not there */
	r = dopen(b, &(struct http_request){ .method = "GET", .target = "/healthz", .body_fd = -1 },
		  NULL, NULL, &c, &resp, err);
	http_conn_free(c);
	if (r < 0) {
		free(b);
		return r;
	}
	period = idle_timeout_s > 0 ? idle_timeout_s / 3 : RENEW_S;
	period = period < 1 ? 1 : period > RENEW_S ? RENEW_S : period;
	b->keepalive = event_new(base, -1, EV_PERSIST, keepalive_cb, b);
	if (!b->keepalive ||
	    event_add(b->keepalive, &(struct timeval){ .tv_sec = (time_t)period }) < 0) {
		d_free(&b->base);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	*ret = &b->base;
	return 0;
}
