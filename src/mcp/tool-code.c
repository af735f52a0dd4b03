/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_code for python and bash (docs/mcp.md): the sandbox's code interpreter (docs/code.md),
 * whose contexts keep their state between calls. A call names a context (a name the agent
 * picks, made on first use) or uses the language's default one; the run's NDJSON answer is
 * read from the loop and becomes one tool result: stdout, stderr, the rich results (text,
 * HTML, Markdown, LaTeX, JSON, SVG) and, as MCP image content blocks, its pictures (PNG,
 * JPEG), so a chat client shows a plot as a plot.
 *
 * A run past its timeout, or one whose call is cancelled, ends by closing its connection:
 * the interpreter interrupts it, and the context keeps its state.
 *
 * Trust: every line comes from inside the sandbox. Lines, strings and pictures are bounded
 * (LINE_MAX, FIELD_MAX, IMAGE_MAX, IMAGES_MAX); a picture is passed on only when it decodes
 * as base64 and starts with its format's signature; anything else is dropped and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "backend.h"
#include "client.h"
#include "mcp.h"
#include "tool-code.h"

#define LINE_MAX	 (48u << 20)  /* one NDJSON line: a result with a large picture */
#define FIELD_MAX	 (256u << 10) /* one text field of a result (HTML of a big table) */
#define IMAGE_MAX	 (16u << 20)  /* one picture, base64 */
#define IMAGES_MAX	 16	      /* pictures in one answer */
#define ERROR_BODY_MAX	 (16u << 10)
#define CONTEXT_BODY_MAX (64u << 10)
#define LINES_PER_WAKE	 64

struct text {
	char *buf;
	size_t len;
	bool truncated;
};

struct coderun {
	struct mcp_backend *b;
	struct event_base *base;
	struct mcp_call *call;
	char *sandbox_id, *language, *context, *code;
	json_t *env, *contexts; /* references */
	double timeout_s;
	size_t output_max;
	bool waiting;	/* for the backend's answer (fn not called yet) */
	bool cancelled; /* ... and the call was cancelled meanwhile */
	bool creating;	/* the answer awaited is the context's creation */
	struct http_conn *conn;
	struct event *ev, *timer;
	/* what the run said so far */
	struct text out[2];
	json_t *results, *images, *error, *count;
	unsigned dropped; /* results or pictures not passed on */
	bool ended;	  /* end_of_execution came */
	bool timed_out;
};

static void coderun_free(struct coderun *r)
{
	if (r->ev)
		event_free(r->ev);
	if (r->timer)
		event_free(r->timer);
	http_conn_free(r->conn);
	json_decref(r->env);
	json_decref(r->contexts);
	json_decref(r->results);
	json_decref(r->images);
	json_decref(r->error);
	json_decref(r->count);
	free(r->out[0].buf);
	free(r->out[1].buf);
	free(r->sandbox_id);
	free(r->language);
	free(r->context);
	free(r->code);
	free(r);
}

static void fail(struct coderun *r, paddock_error *err)
{
	mcp_call_error(r->call, err);
	coderun_free(r);
}

static void fail_msg(struct coderun *r, int code, const char *field, const char *msg)
{
	paddock_error err = { 0 };

	paddock_fail_field(&err, code, field, "%s", msg);
	fail(r, &err);
}

static void text_add(struct text *t, size_t max, const char *s, size_t n)
{
	size_t room = t->len < max ? max - t->len : 0;
	char *p;

	if (n > room) {
		n = room;
		t->truncated = true;
	}
	if (!n || !(p = realloc(t->buf, t->len + n + 1)))
		return;
	memcpy(p + t->len, s, n);
	t->len += n;
	p[t->len] = '\0';
	t->buf = p;
}

/* A string field of a result, bounded. */
static json_t *field_text(json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (!s)
		return NULL;
	if (n <= FIELD_MAX)
		return json_stringn(s, n);
	/* cut at a UTF-8 boundary */
	while (n > FIELD_MAX || (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80))
		n--;
	return json_sprintf("%.*s\n[paddock: cut at %u bytes]", (int)n, s, FIELD_MAX);
}

/* A picture as an MCP image block: base64 that decodes to the format's signature. */
static json_t *image_block(json_t *v, const char *mime, const unsigned char *sig, size_t sig_len)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), len = 0;
	char *raw = NULL;
	bool ok;

	if (!s || n == 0 || n > IMAGE_MAX ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
		      "nopqrstuvwxyz0123456789+/=\n") != n)
		return NULL;
	ok = paddock_base64_decode(s, n, &raw, &len) == 0 && len >= sig_len &&
	     memcmp(raw, sig, sig_len) == 0;
	free(raw);
	if (!ok)
		return NULL;
	/* what the block carries is the picture itself, newlines (Jupyter's wrapping) dropped */
	json_t *block =
		json_pack("{s:s, s:s%, s:s}", "type", "image", "data", s, n, "mimeType", mime);
	if (block && strchr(s, '\n')) {
		char *flat = malloc(n + 1);
		size_t k = 0;

		if (!flat) {
			json_decref(block);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			if (s[i] != '\n')
				flat[k++] = s[i];
		json_object_set_new(block, "data", json_stringn(flat, k));
		free(flat);
	}
	return block;
}

static void add_result(struct coderun *r, json_t *m)
{
	static const char *const fields[] = { "text", "html",	    "markdown", "latex",
					      "svg",  "javascript", NULL };
	static const unsigned char png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	static const unsigned char jpeg[] = { 0xff, 0xd8, 0xff };
	json_t *out = json_object(), *shown = json_array(), *v;

	if (!out || !shown) {
		json_decref(out);
		json_decref(shown);
		return;
	}
	json_object_set_new(out, "is_main_result",
			    json_boolean(json_is_true(json_object_get(m, "is_main_result"))));
	for (const char *const *f = fields; *f; f++)
		if ((v = field_text(json_object_get(m, *f))))
			json_object_set_new(out, *f, v);
	/* JSON results: any JSON value, bounded by its size as text */
	if ((v = json_object_get(m, "json"))) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		if (s && strlen(s) <= FIELD_MAX)
			json_object_set(out, "json", v);
		else
			r->dropped++;
		free(s);
	}
	for (int i = 0; i < 2; i++) {
		const char *key = i ? "jpeg" : "png";
		json_t *img = json_object_get(m, key), *block;

		if (!img)
			continue;
		if (json_array_size(r->images) >= IMAGES_MAX ||
		    !(block = i ? image_block(img, "image/jpeg", jpeg, sizeof(jpeg))
				: image_block(img, "image/png", png, sizeof(png)))) {
			r->dropped++;
			continue;
		}
		json_array_append_new(r->images, block);
		json_array_append_new(
			shown, json_pack("{s:s, s:I}", "mime_type", i ? "image/jpeg" : "image/png",
					 "content_index", (json_int_t)json_array_size(r->images)));
	}
	if (json_array_size(shown))
		json_object_set_new(out, "images", shown);
	else
		json_decref(shown);
	json_array_append_new(r->results, out);
}

/* One line of the run's answer. */
static void take_line(struct coderun *r, const char *line, size_t len)
{
	json_t *m = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(m, "type"));
	json_t *v;

	if (!type) {
		r->dropped++;
	} else if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		v = json_object_get(m, "text");
		if (json_is_string(v))
			text_add(&r->out[type[3] == 'e'], r->output_max, json_string_value(v),
				 json_string_length(v));
	} else if (!strcmp(type, "result")) {
		add_result(r, m);
	} else if (!strcmp(type, "error")) {
		json_decref(r->error);
		r->error = json_object();
		for (const char *const *f =
			     (const char *const[]){ "name", "value", "traceback", NULL };
		     *f; f++) {
			json_t *s = field_text(json_object_get(m, *f));

			json_object_set_new(r->error, *f, s ? s : json_string(""));
		}
	} else if (!strcmp(type, "number_of_executions")) {
		v = json_object_get(m, "execution_count");
		if (json_is_integer(v)) {
			json_decref(r->count);
			r->count = json_incref(v);
		}
	} else if (!strcmp(type, "end_of_execution")) {
		r->ended = true;
	}
	json_decref(m);
}

static json_t *text_json(const struct text *t)
{
	return json_stringn(t->buf ? t->buf : "", t->len);
}

/* The tool's answer from what the run said. */
static void finish(struct coderun *r, const char *broken)
{
	json_t *res;

	if (r->timed_out) {
		json_decref(r->error);
		r->error = json_pack("{s:s, s:s, s:s}", "name", "Timeout", "value",
				     "the run took longer than timeout_s and was interrupted; the "
				     "context keeps its state",
				     "traceback", "");
	} else if (!r->ended && !r->error) {
		r->error = json_pack("{s:s, s:s, s:s}", "name", "Interrupted", "value",
				     broken ? broken
					    : "the code interpreter's answer ended early "
					      "(it was killed: a limit, or the code)",
				     "traceback", "");
	}
	res = json_pack("{s:s, s:s, s:s?, s:O, s:o, s:o, s:b, s:b, s:O, s:O, s:b, s:i}",
			"sandbox_id", r->sandbox_id, "language", r->language, "context", r->context,
			"execution_count", r->count ? r->count : json_null(), "stdout",
			text_json(&r->out[0]), "stderr", text_json(&r->out[1]), "stdout_truncated",
			r->out[0].truncated, "stderr_truncated", r->out[1].truncated, "results",
			r->results, "error", r->error ? r->error : json_null(), "timed_out",
			r->timed_out, "dropped", (int)r->dropped);
	if (!res) {
		paddock_error err = { 0 };

		paddock_fail(&err, ENOMEM, "answer the call");
		return fail(r, &err);
	}
	mcp_call_result_with(r->call, res,
			     json_array_size(r->images) ? json_incref(r->images) : NULL);
	coderun_free(r);
}

static void readable(evutil_socket_t fd, short what, void *arg)
{
	struct coderun *r = arg;
	paddock_error err = { 0 };
	const char *line;
	size_t len;

	(void)fd;
	(void)what;
	for (int i = 0; i < LINES_PER_WAKE; i++) {
		int n = http_read_line(r->conn, LINE_MAX, &line, &len, &err);

		if (n == -EAGAIN)
			return;
		if (n == 0)
			return finish(r, NULL);
		if (n < 0)
			return finish(r, err.msg);
		take_line(r, line, len);
	}
	event_active(r->ev, EV_READ, 0); /* more may be buffered: after the others' turn */
}

static void timed_out(evutil_socket_t fd, short what, void *arg)
{
	struct coderun *r = arg;

	(void)fd;
	(void)what;
	/* closing the connection is the interrupt (the interpreter notices its client left) */
	r->timed_out = true;
	finish(r, NULL);
}

static void cancelled(struct mcp_call *c, void *data)
{
	struct coderun *r = data;

	(void)c;
	if (r->waiting) {
		r->cancelled = true; /* the backend's answer frees it */
		return;
	}
	coderun_free(r);
}

/* An error answer's message: paddockd's JSON error or the interpreter's text. */
static void answer_message(struct http_conn *c, char *msg, size_t size)
{
	char *body = NULL;
	size_t len = 0;
	paddock_error err = { 0 };
	json_t *j;

	snprintf(msg, size, "the code interpreter refused the request");
	if (http_read_body_all(c, ERROR_BODY_MAX, &body, &len, &err) < 0 || !len) {
		free(body);
		return;
	}
	j = json_loadb(body, len, 0, NULL);
	if (json_is_string(json_object_get(json_object_get(j, "error"), "message")))
		snprintf(
			msg, size, "%s",
			json_string_value(json_object_get(json_object_get(j, "error"), "message")));
	else if (!j)
		snprintf(msg, size, "%s", PADDOCK_ESC(body));
	json_decref(j);
	free(body);
}

static void send_execute(struct coderun *r, const char *context_id);

static void answered(struct http_conn *conn, const struct http_response *resp,
		     const paddock_error *err, void *userdata)
{
	struct coderun *r = userdata;
	char msg[256];

	r->waiting = false;
	if (r->cancelled) {
		http_conn_free(conn);
		return coderun_free(r);
	}
	if (!conn) {
		paddock_error e = *err;

		return fail(r, &e);
	}
	r->conn = conn;
	if (resp->status == 404 && r->context && !r->creating) {
		/* the interpreter started over (it was killed): the context and its state are gone
		 */
		json_object_del(r->contexts, r->context);
		snprintf(msg, sizeof(msg),
			 "the context '%s' is gone with its state (the code interpreter was "
			 "restarted, after a kill or a limit); run again to start it afresh",
			 PADDOCK_ESC(r->context));
		return fail_msg(r, ENOENT, "context", msg);
	}
	if (resp->status < 200 || resp->status > 299) {
		answer_message(conn, msg, sizeof(msg));
		return fail_msg(r, resp->status == 400 ? EINVAL : EIO,
				r->creating ? "context" : "code", msg);
	}
	if (r->creating) {
		char *body = NULL;
		size_t len = 0;
		paddock_error e = { 0 };
		json_t *j = NULL, *id;

		r->creating = false;
		if (http_read_body_all(conn, CONTEXT_BODY_MAX, &body, &len, &e) == 0)
			j = json_loadb(body, len, 0, NULL);
		free(body);
		id = json_object_get(j, "id");
		if (!json_is_string(id) || json_string_length(id) > 64) {
			json_decref(j);
			return fail_msg(r, EPROTO, "context",
					"the code interpreter's answer names no context");
		}
		json_object_set_new(r->contexts, r->context,
				    json_pack("{s:O, s:s}", "id", id, "language", r->language));
		r->conn = http_conn_free(r->conn);
		send_execute(r, json_string_value(id));
		json_decref(j);
		return;
	}
	http_conn_set_nonblocking(conn, true);
	r->ev = event_new(r->base, http_conn_fd(conn), EV_READ | EV_PERSIST, readable, r);
	if (!r->ev || event_add(r->ev, NULL) < 0)
		return fail_msg(r, ENOMEM, NULL, "out of memory");
	if (r->timeout_s > 0) {
		struct timeval tv = {
			.tv_sec = (time_t)r->timeout_s,
			.tv_usec =
				(suseconds_t)((r->timeout_s - (double)(time_t)r->timeout_s) * 1e6)
		};

		r->timer = evtimer_new(r->base, timed_out, r);
		if (!r->timer || evtimer_add(r->timer, &tv) < 0)
			return fail_msg(r, ENOMEM, NULL, "out of memory");
	}
	event_active(r->ev, EV_READ, 0); /* lines may be buffered with the head */
}

static void request(struct coderun *r, const char *path, json_t *body_take)
{
	char *body = body_take ? json_dumps(body_take, JSON_COMPACT) : NULL;
	paddock_error err = { 0 };
	int rc;

	json_decref(body_take);
	if (!body)
		return fail_msg(r, ENOMEM, NULL, "out of memory");
	r->waiting = true;
	rc = r->b->ops->code_request(r->b, r->sandbox_id, "POST", path, body, strlen(body),
				     answered, r, &err);
	free(body);
	if (rc < 0) {
		r->waiting = false;
		fail(r, &err);
	}
}

static void send_execute(struct coderun *r, const char *context_id)
{
	json_t *body = json_pack("{s:s}", "code", r->code);

	if (body && context_id)
		json_object_set_new(body, "context_id", json_string(context_id));
	else if (body)
		json_object_set_new(body, "language", json_string(r->language));
	if (body && r->env)
		json_object_set(body, "env_vars", r->env);
	request(r, "/execute", body);
}

void mcp_code_run(struct mcp_backend *b, struct event_base *base, struct mcp_call *c,
		  const struct mcp_code_req *req)
{
	struct coderun *r = calloc(1, sizeof(*r));
	paddock_error err = { 0 };
	json_t *known;

	if (!r || !(r->sandbox_id = strdup(req->sandbox_id)) ||
	    !(r->language = strdup(req->language)) || !(r->code = strdup(req->code)) ||
	    (req->context && !(r->context = strdup(req->context))) ||
	    !(r->results = json_array()) || !(r->images = json_array())) {
		if (r)
			coderun_free(r);
		paddock_fail(&err, ENOMEM, "run_code");
		return mcp_call_error(c, &err);
	}
	r->b = b;
	r->base = base;
	r->call = c;
	r->env = json_incref(req->env);
	r->contexts = json_incref(req->contexts);
	r->timeout_s = req->timeout_s;
	r->output_max = req->output_max;
	mcp_call_set_cancel(c, cancelled, r);
	if (!r->context)
		return send_execute(r, NULL);
	known = json_object_get(r->contexts, r->context);
	if (known) {
		const char *lang = json_string_value(json_object_get(known, "language"));

		if (lang && strcmp(lang, r->language) != 0) {
			char msg[200];

			snprintf(msg, sizeof(msg), "the context '%s' runs %s, not %s; name another",
				 PADDOCK_ESC(r->context), lang, r->language);
			return fail_msg(r, EINVAL, "context", msg);
		}
		return send_execute(r, json_string_value(json_object_get(known, "id")));
	}
	if (json_object_size(r->contexts) >= MCP_CODE_CONTEXTS_MAX) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "this sandbox has %u contexts, the most it keeps; use "
			 "one of them",
			 MCP_CODE_CONTEXTS_MAX);
		return fail_msg(r, EPERM, "context", msg);
	}
	r->creating = true;
	request(r, "/contexts", json_pack("{s:s}", "language", r->language));
}
