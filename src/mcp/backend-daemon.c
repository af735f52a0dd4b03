/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backend of `paddock mcp --connect SOCKET`: the sandboxes of a running paddockd, through
 * its HTTP API on a unix socket (docs/api.md) and the small client of src/cli/client.h.
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
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
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
#include "client.h"
#include "error.h"
#include "spec.h"
#include "util/base64.h"
#include "util/cleanup.h"

#define SOCKET_TIMEOUT_S 60
#define ANSWER_MAX (4u << 20)	     /* a JSON answer: a sandbox object holds its spec (<= 1 MiB) */
#define LIST_ANSWER_MAX (64u << 20)  /* files/list: up to 10 000 entries */
#define ERROR_ANSWER_MAX (64u << 10) /* an error answer */
/* one line of an exec stream: a chunk of at most 64 KiB, escaped (\u0001: 6 bytes a byte) */
#define EXEC_LINE_MAX (1u << 20)
/* one line of a process's output: the whole ring of 1 MiB, escaped */
#define RING_LINE_MAX (8u << 20)
#define RING_LINES_MAX 16 /* the ring is two lines and an exit: more is not paddockd's */
#define LINES_PER_WAKE 64 /* then back to the loop, so a chatty command cannot hog it */
#define STDIN_MAX 65536u /* paddockd takes this much stdin in an exec request */
#define READ_MAX (64u << 20) /* bytes of a file one read_file() returns */
#define TTL_S 86400	  /* paddockd's maximum */
#define RENEW_S 3600
#define PROCS_KEPT 1024 /* background processes remembered per sandbox */
#define SANDBOX_ID_MAX 32

static const char *const stream_names[2] = { "stdout", "stderr" };

/* A background process this backend started: the tag that names it, what was read of it. */
struct dproc {
	char tag[16];
	uint64_t since[2]; /* offsets in stdout and stderr up to which bg_output() returned */
	struct dproc *next;
};

struct dsandbox {
	char id[SANDBOX_ID_MAX];
	unsigned next_proc;
	struct dproc *procs; /* newest first */
	size_t n_procs;
	/* watch_asks(): its pending decisions, followed (GET .../network/pending?follow=1) */
	struct http_conn *ask_conn;
	struct event *ask_ev;
	mcp_ask_fn ask_fn;
	void *ask_ud;
	struct dbackend *b;
	struct dsandbox *next;
};

struct dbackend {
	struct mcp_backend base; /* first: the ops get &base */
	struct event_base *ev_base;
	char socket_path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	unsigned idle_timeout_s;
	struct dsandbox *sandboxes;
	struct mcp_pending *pending;
	struct event *keepalive;
	time_t last_renew; /* CLOCK_MONOTONIC seconds */
};

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

#define _cleanup_json_ _cleanup_(json_decrefp)
PD_DEFINE_CLEANUP(struct http_conn, http_conn_free)
#define _cleanup_conn_ _cleanup_(http_conn_freep)

static struct dbackend *dbackend(struct mcp_backend *mb)
{
	return (struct dbackend *)mb;
}

static time_t mono_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with this clock */
	return ts.tv_sec;
}

/* ---- URLs --------------------------------------------------------------------------------- */

static void put_encoded(FILE *f, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~", *p) ||
			     (keep_slash && *p == '/');

		if (plain)
			fputc(*p, f);
		else
			fprintf(f, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

/*
 * "/v1/sandboxes/SEG/SEG...?KEY=VALUE&...": `segs` NULL-terminated, each percent-encoded
 * (a '/' too); `query` NULL-terminated KEY, VALUE pairs, values encoded with '/' kept. NULL
 * when out of memory.
 */
static char *make_url(const char *const *segs, const char *const *query)
{
	char *url = NULL;
	size_t len;
	FILE *f = open_memstream(&url, &len);

	if (!f)
		return NULL;
	fputs("/v1/sandboxes", f);
	for (; segs && *segs; segs++) {
		fputc('/', f);
		put_encoded(f, *segs, false);
	}
	for (size_t i = 0; query && query[i]; i += 2) {
		fputc(i == 0 ? '?' : '&', f);
		put_encoded(f, query[i], false);
		fputc('=', f);
		put_encoded(f, query[i + 1], true);
	}
	if (fclose(f) != 0) {
		free(url);
		return NULL;
	}
	return url;
}

#define SEGS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define QUERY(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- requests ----------------------------------------------------------------------------- */

/* The client's errors; a receive or send that timed out is the one it leaves unexplained. */
static int io_error(int r, paddock_error *err)
{
	if (r == -EAGAIN)
		return pd_fail(err, ETIMEDOUT, "paddockd did not answer within %d s",
			       SOCKET_TIMEOUT_S);
	pd_error_prefix(err, "paddockd");
	return r;
}

/* "ENOENT" -> ENOENT through libpaddock's table; 0 when unknown. */
static int errno_from_name(const char *name)
{
	if (!name || strncmp(name, "E", 1) != 0)
		return 0;
	for (int e = 1; e < 200; e++)
		if (strcmp(paddock_errno_name(e), name) == 0)
			return e;
	return 0;
}

static int status_errno(int status)
{
	switch (status) {
	case 400:
	case 405:
	case 416:
		return EINVAL;
	case 401:
		return EACCES;
	case 403:
		return EPERM;
	case 404:
		return ENOENT;
	case 409:
		return EBUSY;
	case 413:
		return EFBIG;
	case 422:
		return ENOTSUP;
	case 429:
		return EAGAIN;
	default:
		return status >= 500 ? EIO : EPROTO;
	}
}

/* Copies a message from paddockd, control characters blanked (it may quote the agent's paths). */
static void copy_text(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src[i] && i < size - 1; i++)
		dst[i] = (unsigned char)src[i] < ' ' || src[i] == 0x7f ? ' ' : src[i];
	dst[i] = '\0';
}

/*
 * An error answer: {"error":{"code","field","message"[,"errno"]}} becomes err, with the errno
 * paddockd named or else the status's. paddockd's fields "id" and "process" are the tools'
 * "sandbox_id" and "process_id".
 */
static int answer_error(struct http_conn *c, const struct http_response *resp, paddock_error *err)
{
	_cleanup_free_ char *body = NULL;
	_cleanup_json_ json_t *json = NULL;
	size_t len = 0;
	json_t *e;
	const char *msg, *field;
	int code;

	if (http_read_body_all(c, ERROR_ANSWER_MAX, &body, &len, err) < 0)
		body = NULL, len = 0;
	json = body ? json_loadb(body, len, 0, NULL) : NULL;
	e = json_object_get(json, "error");
	msg = json_string_value(json_object_get(e, "message"));
	field = json_string_value(json_object_get(e, "field"));
	code = errno_from_name(json_string_value(json_object_get(e, "errno")));
	if (!code)
		code = status_errno(resp->status);
	if (!msg) /* not paddockd's JSON: evhttp's own answers (413 past its body limit) */
		return pd_fail(err, code, "paddockd answered %d %s", resp->status, resp->reason);
	pd_error_clear(err);
	err->code = code;
	copy_text(err->msg, sizeof(err->msg), msg);
	if (field && strcmp(field, "id") == 0)
		field = "sandbox_id";
	else if (field && strcmp(field, "process") == 0)
		field = "process_id";
	copy_text(err->field, sizeof(err->field), field ? field : "");
	return -code;
}

/* A connection to paddockd whose reads and writes give up after SOCKET_TIMEOUT_S. */
static int dconnect(struct dbackend *b, struct http_conn **ret_conn, paddock_error *err)
{
	struct timeval tv = { .tv_sec = SOCKET_TIMEOUT_S };
	struct http_conn *c = NULL;
	int r;

	r = http_connect_unix(b->socket_path, &c, err);
	if (r < 0) {
		pd_error_prefix(err, "cannot reach paddockd at '%s'", PD_ESC(b->socket_path));
		return r;
	}
	if (setsockopt(http_conn_fd(c), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(http_conn_fd(c), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		r = pd_fail(err, errno, "set the timeouts of paddockd's socket");
		http_conn_free(c);
		return r;
	}
	*ret_conn = c;
	return 0;
}

/*
 * Sends `req` and reads the answer's head into *ret_resp (also for an error answer, whose
 * status and Content-Range callers may want). A 2xx answer gives 0 and the connection,
 * positioned at the body; an error answer is read into err.
 */
static int dopen(struct dbackend *b, const struct http_request *req, struct http_conn **ret_conn,
		 struct http_response *ret_resp, paddock_error *err)
{
	_cleanup_conn_ struct http_conn *c = NULL;
	int r;

	*ret_resp = (struct http_response){ 0 };
	r = dconnect(b, &c, err);
	if (r < 0)
		return r;
	r = http_send_request(c, req, err);
	if (r >= 0)
		r = http_read_response(c, ret_resp, err);
	if (r < 0)
		return io_error(r, err);
	if (ret_resp->status < 200 || ret_resp->status > 299)
		return answer_error(c, ret_resp, err);
	*ret_conn = TAKE_PTR(c);
	return 0;
}

/*
 * One request with an optional JSON body, its JSON answer (at most `max` bytes) in *ret_json
 * when ret_json is not NULL (NULL for an empty answer: 204).
 */
static int dcall(struct dbackend *b, const char *method, const char *target, const json_t *body,
		 size_t max, json_t **ret_json, paddock_error *err)
{
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_free_ char *text = NULL, *answer = NULL;
	struct http_response resp;
	size_t text_len = 0, len = 0;
	json_t *json = NULL;
	json_error_t jerr;
	int r;

	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return pd_fail(err, ENOMEM, "out of memory");
		text_len = strlen(text);
	}
	struct http_request req = { .method = method,
				    .target = target,
				    .content_type = body ? "application/json" : NULL,
				    .body = text,
				    .body_len = text_len,
				    .body_fd = -1 };
	r = dopen(b, &req, &c, &resp, err);
	/* SECURITY: a create request holds the values of secrets: gone from memory once sent */
	if (text)
		explicit_bzero(text, text_len);
	if (r < 0)
		return r;
	if (!ret_json)
		return 0;
	r = http_read_body_all(c, max, &answer, &len, err);
	if (r < 0)
		return io_error(r, err);
	if (len > 0) {
		json = json_loadb(answer, len, 0, &jerr);
		if (!json)
			return pd_fail(err, EPROTO, "paddockd's answer is not JSON: %s", jerr.text);
	}
	*ret_json = json;
	return 0;
}

/* ---- sandboxes and processes this backend made --------------------------------------------- */

static struct dsandbox *sandbox_find(struct dbackend *b, const char *id, paddock_error *err)
{
	for (struct dsandbox *s = b->sandboxes; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	pd_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s' in this session", PD_ESC(id));
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

static void asks_unwatch(struct dsandbox *s)
{
	if (s->ask_ev)
		event_free(s->ask_ev);
	s->ask_ev = NULL;
	http_conn_free(s->ask_conn);
	s->ask_conn = NULL;
	s->ask_fn = NULL;
}

static void sandbox_unlink(struct dbackend *b, struct dsandbox *s)
{
	for (struct dsandbox **pp = &b->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	asks_unwatch(s);
	procs_free(s->procs);
	free(s);
}

static struct dproc *proc_find(struct dsandbox *s, const char *tag, paddock_error *err)
{
	for (struct dproc *p = s->procs; p; p = p->next)
		if (strcmp(p->tag, tag) == 0)
			return p;
	pd_fail_field(err, ENOENT, "process_id", "no process '%s' in sandbox '%s'", PD_ESC(tag),
		      s->id);
	return NULL;
}

static void proc_forget(struct dsandbox *s, struct dproc *p)
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
static struct dproc *proc_add(struct dsandbox *s, paddock_error *err)
{
	struct dproc *p = calloc(1, sizeof(*p));

	if (!p) {
		pd_fail(err, ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(p->tag, sizeof(p->tag), "p%u", ++s->next_proc);
	p->next = s->procs;
	s->procs = p;
	if (++s->n_procs > PROCS_KEPT) {
		struct dproc *last = s->procs;

		while (last->next)
			last = last->next;
		proc_forget(s, last);
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
	_cleanup_free_ char *url = make_url(SEGS(id), NULL);
	int r;

	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	r = dcall(b, "DELETE", url, NULL, 0, NULL, err);
	if (r == -ENOENT) /* its TTL or idle timeout ran out, or paddockd lost it: gone anyway */
		return 0;
	return r;
}

/* ---- create and destroy ------------------------------------------------------------------- */

/*
 * A secret's source names this process's environment or files, not paddockd's (and a value
 * given in the spec is never written out): read each here and send it as a write-only
 * "value", as `paddock create` does.
 */
static int put_secret_values(const paddock_spec *spec, json_t *req, paddock_error *err)
{
	json_t *list = json_object_get(req, "secrets");

	if (spec->n_secrets != json_array_size(list))
		return pd_fail(err, EPROTO, "the spec's secrets do not match their JSON");
	for (size_t i = 0; i < spec->n_secrets; i++) {
		json_t *sec = json_array_get(list, i), *value;
		char field[48];
		uint8_t *val = NULL;
		size_t n = 0;
		int r;

		snprintf(field, sizeof(field), "secrets[%zu].source", i);
		if (strcmp(json_string_value(json_object_get(sec, "name")) ?: "",
			   spec->secrets[i].name) != 0)
			return pd_fail(err, EPROTO, "the spec's secrets do not match their JSON");
		r = pd_spec_secret_value(&spec->secrets[i], field, &val, &n, err);
		if (r < 0)
			return r;
		value = json_stringn((const char *)val, n);
		explicit_bzero(val, n);
		free(val);
		if (!value)
			return pd_fail_field(err, EINVAL, field,
					     "secret '%s': the value is not UTF-8 text",
					     PD_ESC(spec->secrets[i].name));
		(void)json_object_del(sec, "source");
		if (json_object_set_new(sec, "value", value) < 0)
			return pd_fail(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* SECURITY: the values' copies inside jansson are wiped before it frees them. */
static void wipe_secret_values(json_t *req)
{
	json_t *sec;
	size_t i;

	json_array_foreach(json_object_get(req, "secrets"), i, sec) {
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
		return pd_fail(err, ENOMEM, "out of memory");
	}
	r = put_secret_values(spec, req, err);
	if (r >= 0 && (json_object_set_new(req, "ttl_s", json_integer(TTL_S)) < 0 ||
		       (b->idle_timeout_s > 0 &&
			json_object_set_new(req, "idle_timeout_s",
					    json_integer(b->idle_timeout_s)) < 0)))
		r = pd_fail(err, ENOMEM, "out of memory");
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
	r = dcall(b, "POST", "/v1/sandboxes", req, ANSWER_MAX, &answer, err);
	wipe_secret_values(req);
	json_decref(req);
	if (r < 0)
		return r;
	id = json_string_value(json_object_get(answer, "id"));
	if (!id || !valid_id(id))
		return pd_fail(err, EPROTO, "paddockd's answer has no valid sandbox id");
	s = calloc(1, sizeof(*s));
	copy = strdup(id);
	if (!s || !copy) {
		free(s);
		free(copy);
		(void)sandbox_delete(b, id, err); /* best effort: its idle timeout ends it else */
		return pd_fail(err, ENOMEM, "out of memory");
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->next = b->sandboxes;
	b->sandboxes = s;
	*ret_id = copy;
	return 0;
}

static int d_destroy(struct mcp_backend *mb, const char *id, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
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
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_free_ char *url = NULL;
	json_t *answer = NULL;
	int r;

	if (!s)
		return -ENOENT;
	url = make_url(SEGS(s->id, pause ? "pause" : "resume"), NULL);
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	r = dcall(b, "POST", url, NULL, 1u << 20, &answer, err);
	json_decref(answer);
	return r;
}

/* ---- commands ----------------------------------------------------------------------------- */

static int set_new(json_t *o, const char *key, json_t *v, const char *field, paddock_error *err)
{
	if (!v)
		return pd_fail_field(err, EINVAL, field, "expected UTF-8 text");
	if (json_object_set_new(o, key, v) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* {"NAME": "VALUE", ...} of the request's "NAME=VALUE" strings. */
static int env_json(const char *const *env, json_t **ret, paddock_error *err)
{
	_cleanup_json_ json_t *o = json_object();
	int r;

	if (!o)
		return pd_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		_cleanup_free_ char *name = NULL;

		if (!eq || eq == env[i])
			return pd_fail_field(err, EINVAL, "env", "expected NAME=VALUE, got '%s'",
					     PD_ESC(env[i]));
		name = strndup(env[i], (size_t)(eq - env[i]));
		if (!name)
			return pd_fail(err, ENOMEM, "out of memory");
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
		return pd_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; req->argv[i]; i++) {
		json_t *s = json_string(req->argv[i]);

		if (!s)
			return pd_fail_field(err, EINVAL, "command", "expected UTF-8 text");
		if (json_array_append_new(argv, s) < 0)
			return pd_fail(err, ENOMEM, "out of memory");
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
		_cleanup_free_ char *b64 = pd_base64_encode(req->stdin_data, req->stdin_len);

		r = b64 ? set_new(o, "stdin_b64", json_string(b64), "stdin", err)
			: pd_fail(err, ENOMEM, "out of memory");
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}

/* An event's bytes: `data` (borrowed) or `data_b64` (decoded into *ret_buf, to free). */
static int event_bytes(json_t *ev, char **ret_buf, const char **ret_data, size_t *ret_len,
		       paddock_error *err)
{
	json_t *d = json_object_get(ev, "data"), *b = json_object_get(ev, "data_b64");

	*ret_buf = NULL;
	*ret_data = NULL;
	*ret_len = 0;
	if (json_is_string(d)) {
		*ret_data = json_string_value(d);
		*ret_len = json_string_length(d);
		return 0;
	}
	if (!json_is_string(b) ||
	    pd_base64_decode(json_string_value(b), json_string_length(b), ret_buf, ret_len) < 0)
		return pd_fail(err, EPROTO, "paddockd sent an output event without valid data");
	*ret_data = *ret_buf;
	return 0;
}

static int stream_index(const char *type)
{
	for (int i = 0; i < 2; i++)
		if (strcmp(type, stream_names[i]) == 0)
			return i;
	return -1;
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

/* One line of the exec stream: 1 and *ret_result at the exit event, 0 to go on, or -errno. */
static int exec_line(struct mcp_pending *p, const char *line, size_t len, json_t **ret_result,
		     paddock_error *err)
{
	_cleanup_json_ json_t *ev = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	_cleanup_free_ char *buf = NULL;
	const char *type = json_string_value(json_object_get(ev, "type")), *data;
	json_t *report;
	size_t n;
	int i, r;

	if (!type)
		return pd_fail(err, EPROTO,
			       "paddockd sent a malformed line in the command's stream");
	i = stream_index(type);
	if (i >= 0) {
		r = event_bytes(ev, &buf, &data, &n, err);
		if (r < 0)
			return r;
		if (capture_add(&p->out[i], p->keep, data, n) < 0)
			return pd_fail(err, ENOMEM, "out of memory");
		return 0;
	}
	if (strcmp(type, "exit") != 0)
		return 0; /* "start", and what a newer paddockd may add */
	report = json_object_get(ev, "result");
	if (!json_is_object(report))
		return pd_fail(err, EPROTO, "paddockd sent no report of the command's end");
	*ret_result = exec_result(p, report);
	if (!*ret_result)
		return pd_fail(err, ENOMEM, "out of memory");
	return 1;
}

static void pending_free(struct mcp_pending *p)
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

	pending_free(p);
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
		const char *line;
		size_t len;
		int r = http_read_line(p->conn, EXEC_LINE_MAX, &line, &len, &err);

		if (r == -EAGAIN)
			return;
		if (r == 0)
			r = pd_fail(&err, EPIPE,
				    "paddockd ended the command's stream before its end (the "
				    "sandbox was destroyed, or paddockd stopped)");
		else if (r > 0)
			r = exec_line(p, line, len, &result, &err);
		else
			pd_error_prefix(&err, "paddockd");
		if (r != 0) {
			exec_finish(p, result, &err);
			return;
		}
	}
	event_active(p->ev, EV_READ, 0); /* lines may wait in the buffer: after the others */
}

static int d_exec(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
		  mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
		  paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_free_ char *url = NULL, *text = NULL;
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_json_ json_t *body = NULL;
	struct http_response resp;
	struct mcp_pending *p;
	int r;

	if (!s)
		return -ENOENT;
	if (req->stdin_data && req->stdin_len > STDIN_MAX)
		return pd_fail_field(err, EFBIG, "stdin",
				     "at most %u bytes of stdin through paddockd, got %zu", STDIN_MAX,
				     req->stdin_len);
	r = exec_body(req, true, &body, err);
	if (r < 0)
		return r;
	url = make_url(SEGS(s->id, "exec"), NULL);
	if (!url || json_object_set_new(body, "stream", json_true()) < 0 ||
	    !(text = json_dumps(body, JSON_COMPACT)))
		return pd_fail(err, ENOMEM, "out of memory");
	struct http_request hreq = { .method = "POST",
				     .target = url,
				     .content_type = "application/json",
				     .body = text,
				     .body_len = strlen(text),
				     .body_fd = -1 };
	/* the head comes once init has forked the command: blocking here is short */
	r = dopen(b, &hreq, &c, &resp, err);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return pd_fail(err, ENOMEM, "out of memory");
	*p = (struct mcp_pending){
		.b = b, .fn = fn, .userdata = userdata, .keep = req->output_max
	};
	http_conn_set_nonblocking(c, true);
	p->ev = event_new(b->ev_base, http_conn_fd(c), EV_READ | EV_PERSIST, exec_readable, p);
	if (!p->ev || event_add(p->ev, NULL) < 0) {
		if (p->ev)
			event_free(p->ev);
		free(p);
		return pd_fail(err, ENOMEM, "watch paddockd's answer");
	}
	p->conn = TAKE_PTR(c);
	p->next = b->pending;
	b->pending = p;
	/* the head's read may have taken lines with it: read them from the loop, not here */
	event_active(p->ev, EV_READ, 0);
	*ret_pending = p;
	return 0;
}

static void d_cancel(struct mcp_backend *mb, struct mcp_pending *p)
{
	(void)mb;
	if (p)
		pending_free(p);
}

/* ---- files -------------------------------------------------------------------------------- */

/* The size after the '/' of "bytes A-B/SIZE" or "bytes *" "/SIZE". */
static int parse_content_range(const char *s, uint64_t *ret)
{
	const char *slash = strrchr(s, '/');
	uint64_t n = 0;

	if (strncmp(s, "bytes ", 6) != 0 || !slash || !slash[1])
		return -EPROTO;
	for (const char *p = slash + 1; *p; p++) {
		if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10)
			return -EPROTO;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*ret = n;
	return 0;
}

/* Reads `max` bytes of the body at most (what follows is left unread), after skipping `skip`. */
static int read_some(struct http_conn *c, uint64_t skip, size_t max, char **ret_data,
		     size_t *ret_len, paddock_error *err)
{
	_cleanup_free_ char *data = malloc(max + 1);
	char scratch[16384];
	size_t len = 0;

	if (!data)
		return pd_fail(err, ENOMEM, "out of memory");
	while (len < max) {
		bool skipping = skip > 0;
		size_t want = skipping ? (skip < sizeof(scratch) ? (size_t)skip : sizeof(scratch))
				       : max - len;
		ssize_t n = http_read_body(c, skipping ? scratch : data + len, want, err);

		if (n < 0)
			return io_error((int)n, err);
		if (n == 0)
			break;
		if (skipping)
			skip -= (uint64_t)n;
		else
			len += (size_t)n;
	}
	data[len] = '\0';
	*ret_data = TAKE_PTR(data);
	*ret_len = len;
	return 0;
}

static int d_read_file(struct mcp_backend *mb, const char *id, const char *path, uint64_t offset,
		       size_t max, char **ret_data, size_t *ret_len, uint64_t *ret_size,
		       paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_free_ char *url = NULL;
	struct http_response resp;
	char range[64];
	uint64_t size, last;
	int r;

	if (!s)
		return -ENOENT;
	if (max > READ_MAX)
		max = READ_MAX; /* fewer bytes than asked is a short read, which callers expect */
	url = make_url(SEGS(s->id, "files"), QUERY("path", path));
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	/* at least one byte is asked for, so the answer also says the size when max is 0 */
	last = max > 0 && offset + (max - 1) >= offset ? offset + (max - 1) : offset;
	snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, offset, last);
	struct http_request req = { .method = "GET", .target = url, .body_fd = -1, .range = range };
	r = dopen(b, &req, &c, &resp, err);
	if (r < 0 && resp.status == 416 && parse_content_range(resp.content_range, &size) == 0) {
		/* from at or past the end (an empty file too): nothing to read */
		char *empty = strdup("");

		if (!empty)
			return pd_fail(err, ENOMEM, "out of memory");
		pd_error_clear(err);
		*ret_data = empty;
		*ret_len = 0;
		*ret_size = size;
		return 0;
	}
	if (r < 0)
		return r;
	if (resp.status == 206) {
		if (parse_content_range(resp.content_range, &size) < 0)
			return pd_fail(err, EPROTO, "paddockd's answer has no valid Content-Range");
		r = read_some(c, 0, max, ret_data, ret_len, err);
	} else {
		/* the whole file: a server that ignored the range */
		if (resp.content_length < 0)
			return pd_fail(err, EPROTO, "paddockd's answer has no Content-Length");
		size = (uint64_t)resp.content_length;
		r = read_some(c, offset, max, ret_data, ret_len, err);
	}
	if (r < 0)
		return r;
	*ret_size = size;
	return 0;
}

static int d_write_file(struct mcp_backend *mb, const char *id, const char *path,
			const void *data, size_t len, unsigned mode, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_free_ char *url = NULL;
	struct http_response resp;
	char m[8];

	if (!s)
		return -ENOENT;
	snprintf(m, sizeof(m), "%04o", mode & 07777);
	url = make_url(SEGS(s->id, "files"), QUERY("path", path, "mode", m));
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	struct http_request req = { .method = "PUT",
				    .target = url,
				    .content_type = "application/octet-stream",
				    .body = len ? data : "",
				    .body_len = len,
				    .body_fd = -1,
				    /* a refusal (413) before a large body is sent in vain */
				    .expect_continue = len > 65536 };
	return dopen(b, &req, &c, &resp, err); /* 201 and the entry, which we do not need */
}

/* paddockd's entry, checked, as backend.h's: without uid and gid, mtime never null. */
static json_t *entry_from(json_t *e)
{
	json_t *size = json_object_get(e, "size"), *target = json_object_get(e, "symlink_target");
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *path = json_string_value(json_object_get(e, "path"));
	const char *type = json_string_value(json_object_get(e, "type"));
	const char *mode = json_string_value(json_object_get(e, "mode"));
	const char *mtime = json_string_value(json_object_get(e, "mtime"));
	char epoch[32];

	if (!name || !path || !type || !mode || !json_is_integer(size) ||
	    (target && !json_is_string(target) && !json_is_null(target)))
		return NULL;
	if (strcmp(type, "file") && strcmp(type, "dir") && strcmp(type, "symlink"))
		type = "other";
	return json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:O}", "path", path, "name", name, "type", type,
			 "size", json_integer_value(size), "mode", mode, "mtime",
			 mtime ? mtime : mcp_rfc3339(0, epoch, sizeof(epoch)), "symlink_target",
			 target ? target : json_null());
}

static int d_list_dir(struct mcp_backend *mb, const char *id, const char *path, unsigned depth,
		      size_t max_entries, json_t **ret_entries, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_json_ json_t *answer = NULL, *out = NULL;
	_cleanup_free_ char *url = NULL;
	char d[16];
	json_t *entries, *e;
	size_t i;
	int r;

	if (!s)
		return -ENOENT;
	snprintf(d, sizeof(d), "%u", depth);
	url = make_url(SEGS(s->id, "files", "list"), QUERY("path", path, "depth", d));
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	r = dcall(b, "GET", url, NULL, LIST_ANSWER_MAX, &answer, err);
	if (r == -EFBIG) /* over paddockd's 10 000 entries (413), or over our bound */
		return pd_fail_field(err, E2BIG, "depth", "more entries below '%s' than can be "
							  "listed: list a smaller tree",
				     PD_ESC(path));
	if (r < 0)
		return r;
	entries = json_object_get(answer, "entries");
	if (!json_is_array(entries))
		return pd_fail(err, EPROTO, "paddockd's answer has no entries");
	if (json_array_size(entries) > max_entries)
		return pd_fail_field(err, E2BIG, "depth", "more than %zu entries below '%s'",
				     max_entries, PD_ESC(path));
	out = json_array();
	if (!out)
		return pd_fail(err, ENOMEM, "out of memory");
	json_array_foreach(entries, i, e) {
		json_t *mine = entry_from(e);

		if (!mine)
			return pd_fail(err, EPROTO, "paddockd sent a malformed entry");
		if (json_array_append_new(out, mine) < 0)
			return pd_fail(err, ENOMEM, "out of memory");
	}
	*ret_entries = TAKE_PTR(out);
	return 0;
}

/* ---- background processes ------------------------------------------------------------------ */

static int d_bg_start(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
		      char **ret_proc, int *ret_pid, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_json_ json_t *body = NULL, *answer = NULL;
	_cleanup_free_ char *url = NULL;
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
	url = make_url(SEGS(s->id, "exec"), NULL);
	if (!url || json_object_set_new(body, "background", json_true()) < 0 ||
	    json_object_set_new(body, "tag", json_string(tag)) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	r = dcall(b, "POST", url, body, ANSWER_MAX, &answer, err);
	if (r < 0)
		return r;
	pid = json_object_get(answer, "pid");
	if (!json_is_integer(pid) || json_integer_value(pid) < 0 ||
	    json_integer_value(pid) > INT32_MAX)
		return pd_fail(err, EPROTO, "paddockd's answer has no valid pid");
	copy = strdup(tag);
	p = copy ? proc_add(s, err) : NULL;
	if (!p) {
		free(copy);
		return pd_fail(err, ENOMEM, "out of memory");
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
 * One line of GET …/output: a chunk from the ring, at `offset` in its stream, or the exit
 * event (*ret_report: its result, a new reference).
 */
static int output_line(struct dproc *p, const char *line, size_t len, size_t max,
		       struct fresh out[2], json_t **ret_report, paddock_error *err)
{
	_cleanup_json_ json_t *ev = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	_cleanup_free_ char *buf = NULL;
	const char *type = json_string_value(json_object_get(ev, "type")), *data;
	json_t *off;
	size_t n;
	int i, r;

	if (!type)
		return pd_fail(err, EPROTO, "paddockd sent a malformed line of process output");
	if (strcmp(type, "exit") == 0) {
		json_t *report = json_object_get(ev, "result");

		json_decref(*ret_report);
		*ret_report = json_is_object(report) ? json_incref(report) : json_null();
		return 0;
	}
	i = stream_index(type);
	if (i < 0)
		return 0;
	r = event_bytes(ev, &buf, &data, &n, err);
	if (r < 0)
		return r;
	off = json_object_get(ev, "offset");
	if (json_is_integer(off) && json_integer_value(off) >= 0) {
		uint64_t o = (uint64_t)json_integer_value(off);

		/* above what was asked: the ring dropped the bytes between; below: a restart */
		if (o > p->since[i])
			out[i].dropped += o - p->since[i];
		p->since[i] = o + n;
	}
	if (fresh_add(&out[i], max, data, n) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* Reads GET …/output?since_stdout=…&since_stderr=… to its end. */
static int read_output(struct dbackend *b, struct dsandbox *s, struct dproc *p, size_t max,
		       struct fresh out[2], json_t **ret_report, paddock_error *err)
{
	_cleanup_conn_ struct http_conn *c = NULL;
	_cleanup_free_ char *url = NULL;
	struct http_response resp;
	char since[2][24];
	int r;

	for (int i = 0; i < 2; i++)
		snprintf(since[i], sizeof(since[i]), "%" PRIu64, p->since[i]);
	url = make_url(SEGS(s->id, "processes", p->tag, "output"),
		       QUERY("since_stdout", since[0], "since_stderr", since[1]));
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	struct http_request req = { .method = "GET", .target = url, .body_fd = -1 };
	r = dopen(b, &req, &c, &resp, err);
	if (r < 0)
		return r;
	for (int lines = 0;; lines++) {
		const char *line;
		size_t len;

		r = http_read_line(c, RING_LINE_MAX, &line, &len, err);
		if (r < 0)
			return io_error(r, err);
		if (r == 0)
			return 0;
		if (lines >= RING_LINES_MAX)
			return pd_fail(err, EPROTO, "paddockd sent more than %d lines of output",
				       RING_LINES_MAX);
		r = output_line(p, line, len, max, out, ret_report, err);
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

static int d_bg_output(struct mcp_backend *mb, const char *id, const char *proc, size_t max,
		       json_t **ret, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	struct fresh out[2] = { { 0 } };
	json_t *report = NULL, *result = NULL;
	struct dproc *p;
	uint64_t saved[2];
	int r;

	if (!s)
		return -ENOENT;
	p = proc_find(s, proc, err);
	if (!p)
		return -ENOENT;
	memcpy(saved, p->since, sizeof(saved));
	r = read_output(b, s, p, max, out, &report, err);
	if (r >= 0) {
		result = output_result(out, report);
		if (!result)
			r = pd_fail(err, ENOMEM, "out of memory");
	}
	if (r < 0) {
		memcpy(p->since, saved, sizeof(saved)); /* nothing was returned: again next time */
		if (r == -ENOENT && strcmp(err->field, "process_id") == 0)
			proc_forget(s, p); /* paddockd no longer keeps it */
	}
	json_decref(report);
	for (int i = 0; i < 2; i++)
		free(out[i].buf);
	if (r < 0)
		return r;
	*ret = result;
	return 0;
}

static int d_bg_signal(struct mcp_backend *mb, const char *id, const char *proc, int sig,
		       paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_json_ json_t *body = NULL;
	_cleanup_free_ char *url = NULL;
	struct dproc *p;
	int r;

	if (!s)
		return -ENOENT;
	p = proc_find(s, proc, err);
	if (!p)
		return -ENOENT;
	if (sig < 1 || sig > 64)
		return pd_fail_field(err, EINVAL, "signal", "expected a signal number, got %d",
				     sig);
	url = make_url(SEGS(s->id, "processes", p->tag, "signal"), NULL);
	body = json_pack("{s:i}", "signal", sig);
	if (!url || !body)
		return pd_fail(err, ENOMEM, "out of memory");
	r = dcall(b, "POST", url, body, 0, NULL, err);
	if (r == -EBUSY) /* 409: "the process has ended" */
		return pd_fail_field(err, ESRCH, "process_id", "process '%s' has ended",
				     PD_ESC(proc));
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
		_cleanup_free_ char *touch = make_url(SEGS(s->id, "files", "stat"),
						      QUERY("path", "/"));
		_cleanup_free_ char *renew_url = make_url(SEGS(s->id, "ttl"), NULL);
		paddock_error err = { 0 };

		if (touch && b->idle_timeout_s > 0)
			(void)dcall(b, "GET", touch, NULL, 0, NULL, &err);
		if (renew_url && ttl && renew)
			(void)dcall(b, "POST", renew_url, ttl, 0, NULL, &err);
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
		pending_free(b->pending);
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
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	struct http_request req = { .method = method, .content_type = "application/json",
				    .body = body, .body_len = len, .body_fd = -1 };
	struct http_response resp = { 0 };
	struct http_conn *c = NULL;
	char target[160];
	int r;

	if (!s)
		return -ENOENT;
	/* the path is tools' own ("/execute", "/contexts"): only the id needs checking */
	if (!valid_id(id) || strlen(path) > 80 || path[0] != '/')
		return pd_fail_field(err, EINVAL, "sandbox_id", "not a sandbox id");
	snprintf(target, sizeof(target), "/v1/sandboxes/%s/code%s", id, path);
	req.target = target;
	r = dconnect(b, &c, err);
	if (r < 0)
		return r;
	r = http_send_request(c, &req, err);
	if (r >= 0)
		r = http_read_response(c, &resp, err);
	if (r < 0) {
		http_conn_free(c);
		return io_error(r, err);
	}
	fn(c, &resp, NULL, userdata);
	return 0;
}

/* ---- asking a person ----------------------------------------------------------------------- */

#define ASK_LINE_MAX 4096 /* one decision: a name of 253 bytes and a few fields */

static int64_t parse_time_ms(const char *s)
{
	struct tm tm = { 0 };
	const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	int64_t ms = 0;

	if (!rest)
		return 0;
	if (rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' && rest[2] >= '0' &&
	    rest[2] <= '9' && rest[3] >= '0' && rest[3] <= '9')
		ms = (rest[1] - '0') * 100 + (rest[2] - '0') * 10 + (rest[3] - '0');
	return (int64_t)timegm(&tm) * 1000 + ms;
}

/* One line of the follow stream: a decision, checked before it is told. */
static void ask_line(struct dsandbox *s, const char *line, size_t len)
{
	_cleanup_json_ json_t *o = json_loadb(line, len, 0, NULL);
	json_t *id = json_object_get(o, "id"), *port = json_object_get(o, "port");
	const char *host = json_string_value(json_object_get(o, "host"));
	const char *rule = json_string_value(json_object_get(o, "rule"));
	const char *answer = json_string_value(json_object_get(o, "answer"));

	/* what paddockd relays of a sandbox's choosing is bounded and shaped, or not told */
	if (!json_is_integer(id) || json_integer_value(id) < 1 || !json_is_integer(port) ||
	    json_integer_value(port) < 1 || json_integer_value(port) > 65535 || !host ||
	    strlen(host) > 253 || !rule || strlen(rule) > 270 ||
	    strspn(host, "abcdefghijklmnopqrstuvwxyz0123456789-.:") != strlen(host) ||
	    (answer && paddock_ask_answer_from_string(answer) < 0) || !s->ask_fn)
		return;
	struct mcp_ask a = {
		.sandbox = s->id,
		.id = (uint64_t)json_integer_value(id),
		.host = host,
		.port = (uint16_t)json_integer_value(port),
		.rule = rule,
		.expires_ms = parse_time_ms(json_string_value(json_object_get(o, "expires_at"))),
		.decided = answer != NULL,
		.answer = answer,
		.by = answer ? json_string_value(json_object_get(o, "by")) : NULL,
	};

	if (a.decided && !a.by)
		a.by = "paddockd";
	s->ask_fn(&a, s->ask_ud);
}

static void asks_readable(evutil_socket_t fd, short what, void *arg)
{
	struct dsandbox *s = arg;
	paddock_error err = { 0 };

	(void)fd;
	(void)what;
	for (int i = 0; i < LINES_PER_WAKE && s->ask_conn; i++) {
		const char *line;
		size_t len;
		int r = http_read_line(s->ask_conn, ASK_LINE_MAX, &line, &len, &err);

		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			/* the sandbox is gone, or paddockd stopped: nothing more will come */
			asks_unwatch(s);
			return;
		}
		ask_line(s, line, len); /* may unwatch */
	}
	if (s->ask_ev)
		event_active(s->ask_ev, EV_READ, 0);
}

static int d_watch_asks(struct mcp_backend *mb, const char *id, mcp_ask_fn fn, void *userdata,
			paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_free_ char *url = NULL;
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_response resp;
	int r;

	if (!s)
		return -ENOENT;
	asks_unwatch(s);
	if (!fn)
		return 0;
	url = make_url(SEGS(s->id, "network", "pending"), QUERY("follow", "1"));
	if (!url)
		return pd_fail(err, ENOMEM, "out of memory");
	struct http_request req = { .method = "GET", .target = url, .body_fd = -1 };

	r = dopen(b, &req, &c, &resp, err);
	if (r < 0)
		return r;
	http_conn_set_nonblocking(c, true);
	s->b = b;
	s->ask_ev = event_new(b->ev_base, http_conn_fd(c), EV_READ | EV_PERSIST, asks_readable, s);
	if (!s->ask_ev || event_add(s->ask_ev, NULL) < 0) {
		if (s->ask_ev)
			event_free(s->ask_ev);
		s->ask_ev = NULL;
		return pd_fail(err, ENOMEM, "follow the sandbox's pending decisions");
	}
	s->ask_conn = TAKE_PTR(c);
	s->ask_fn = fn;
	s->ask_ud = userdata;
	event_active(s->ask_ev, EV_READ, 0); /* lines the head's read took along */
	return 0;
}

static int d_answer(struct mcp_backend *mb, const char *id, uint64_t ask,
		    enum paddock_ask_answer answer, const char *who, paddock_error *err)
{
	struct dbackend *b = dbackend(mb);
	struct dsandbox *s = sandbox_find(b, id, err);
	_cleanup_free_ char *url = NULL;
	_cleanup_json_ json_t *body = NULL;

	if (!s)
		return -ENOENT;
	url = make_url(SEGS(s->id, "network", "decisions"), NULL);
	body = json_pack("{s:I, s:s, s:s?}", "id", (json_int_t)ask, "answer",
			 paddock_ask_answer_to_string(answer), "who", who);
	if (!url || !body)
		return pd_fail(err, ENOMEM, "out of memory");
	/* recorded by paddockd with this backend's tenant, and `who` */
	return dcall(b, "POST", url, body, ANSWER_MAX, NULL, err);
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
	struct dbackend *b;
	unsigned period;
	int r;

	if (!base || !socket_path || !ret)
		return pd_fail(err, EINVAL, "missing argument");
	b = calloc(1, sizeof(*b));
	if (!b)
		return pd_fail(err, ENOMEM, "out of memory");
	b->base.ops = &daemon_ops;
	b->ev_base = base;
	b->idle_timeout_s = idle_timeout_s;
	b->last_renew = mono_s();
	if (strlen(socket_path) >= sizeof(b->socket_path)) {
		free(b);
		return pd_fail(err, ENAMETOOLONG, "socket path '%s' is longer than %zu bytes",
			       PD_ESC(socket_path), sizeof(b->socket_path) - 1);
	}
	memcpy(b->socket_path, socket_path, strlen(socket_path) + 1);
	/* fail now, not at the agent's first tool call, when paddockd is not there */
	r = dcall(b, "GET", "/healthz", NULL, 0, NULL, err);
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
		return pd_fail(err, ENOMEM, "out of memory");
	}
	*ret = &b->base;
	return 0;
}
