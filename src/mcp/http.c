/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP's Streamable HTTP transport (`paddock mcp --http ADDR:PORT`), the subset a tools-only
 * server needs: one endpoint, /mcp. POST carries one JSON-RPC message: a request is answered
 * with application/json, a notification or response with 202. initialize makes a session
 * (Mcp-Session-Id, 128 random bits) with its own server, tools and sandboxes; DELETE ends
 * it, and so does idleness. GET opens a stream for server-initiated messages: this server
 * sends none, but a client that holds one (the official SDK does, from initialize to
 * close()) says by closing it that it is gone, and the session then ends once it has no
 * stream and no request for --session-gone seconds, not after --session-idle. Browsers are
 * kept out: an Origin that is not this machine is 403 (DNS rebinding), and a listener on
 * anything but loopback needs a bearer token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "mcp.h"
#include "mcp-http.h"

#define SESSION_ID_LEN	 32
#define SWEEP_S		 1
#define MAX_STREAMS	 4		 /* GET streams open at once per session */
#define STREAM_TIMEOUT_S (7 * 24 * 3600) /* a stream is quiet by nature: no evhttp timeout */

struct session;

/* A GET stream: held open, sends nothing, tells by its end that the client may be gone. */
struct stream {
	struct session *s;
	struct evhttp_request *req;
	struct evhttp_connection *evcon;
	struct stream *next;
};

struct pending {
	json_t *id;
	struct evhttp_request *req;
	struct evhttp_connection *evcon; /* evhttp frees req with it: compare this instead */
	struct pending *next;
};

struct session {
	struct mcp_http *h;
	char id[SESSION_ID_LEN + 1];
	struct mcp_tools *tools;
	struct mcp_server *server;
	struct pending *pending;	/* requests waiting for their answer */
	struct evhttp_request *current; /* the POST being handled, for an answer with id null */
	bool current_answered;
	double last_used;
	struct stream *streams;
	unsigned n_streams;
	bool had_stream; /* its client holds GET streams: their end says it is gone */
	struct session *next;
};

struct mcp_http {
	struct event_base *base;
	struct evhttp *http;
	struct event *sweep;
	struct mcp_backend *backend;
	const struct mcp_policy *policy;
	char *token; /* NULL: none needed (loopback only) */
	unsigned max_sessions, idle_s, gone_s, n_sessions;
	struct session *sessions;
};

static double now_s(struct mcp_http *h)
{
	struct timeval tv;

	event_base_gettimeofday_cached(h->base, &tv);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void reply_json(struct evhttp_request *req, int code, const char *reason, const char *json,
		       const char *session)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	evhttp_add_header(out, "Content-Type", "application/json");
	evhttp_add_header(out, "Cache-Control", "no-store");
	if (session)
		evhttp_add_header(out, "Mcp-Session-Id", session);
	if (b && json)
		evbuffer_add_printf(b, "%s", json);
	evhttp_send_reply(req, code, reason, b);
	if (b)
		evbuffer_free(b);
}

/* A transport error: a JSON-RPC error with id null, and the HTTP status that says it. */
static void reply_error(struct evhttp_request *req, int code, const char *reason,
			const char *message)
{
	json_t *e = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code",
			      MCP_INVALID_REQUEST, "message", message);
	char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;

	reply_json(req, code, reason, text, NULL);
	free(text);
	json_decref(e);
}

/* ---- sessions --------------------------------------------------------------------------- */

static void pending_remove(struct session *s, struct pending *p)
{
	for (struct pending **pp = &s->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	json_decref(p->id);
	free(p);
}

/* The server answers: to the POST that carries the request with that id. */
static void session_send(const char *json, size_t len, void *userdata)
{
	struct session *s = userdata;
	json_t *msg = json_loadb(json, len, 0, NULL), *id = json_object_get(msg, "id");

	for (struct pending *p = s->pending; p; p = p->next)
		if (id && !json_is_null(id) && json_equal(p->id, id)) {
			evhttp_connection_set_closecb(p->evcon, NULL, NULL);
			reply_json(p->req, 200, "OK", json, s->id);
			if (p->req == s->current)
				s->current_answered = true;
			pending_remove(s, p);
			json_decref(msg);
			return;
		}
	/* id null: about the message being handled now (it was not a valid request) */
	if (s->current && !s->current_answered) {
		reply_json(s->current, 400, "Bad Request", json, s->id);
		s->current_answered = true;
	}
	json_decref(msg);
}

static void session_free(struct session *s)
{
	struct mcp_http *h = s->h;

	for (struct session **pp = &h->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	h->n_sessions--;
	while (s->streams) {
		struct stream *st = s->streams;

		s->streams = st->next;
		evhttp_connection_set_closecb(st->evcon, NULL, NULL);
		evhttp_send_reply_end(st->req);
		free(st);
	}
	/* calls in flight end unanswered; their POSTs learn the session is gone */
	mcp_server_free(s->server);
	while (s->pending) {
		struct evhttp_request *req = s->pending->req;

		evhttp_connection_set_closecb(s->pending->evcon, NULL, NULL);
		reply_error(req, 404, "Not Found", "the session ended");
		pending_remove(s, s->pending);
	}
	mcp_tools_free(s->tools); /* its sandboxes end */
	free(s);
}

static int session_new(struct mcp_http *h, struct session **ret, paddock_error *err)
{
	uint8_t raw[SESSION_ID_LEN / 2];
	struct session *s;
	int r;

	if (h->n_sessions >= h->max_sessions)
		return paddock_fail(err, EBUSY, "%u sessions are open, the most allowed",
				    h->n_sessions);
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return paddock_fail(err, errno ? errno : EIO, "make a session id");
	s = calloc(1, sizeof(*s));
	if (!s)
		return paddock_fail(err, ENOMEM, "allocate a session");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
	s->h = h;
	r = mcp_tools_new(h->backend, h->policy, h->base, &s->tools, err);
	if (r >= 0)
		r = mcp_server_new(s->tools, session_send, s, &s->server, err);
	if (r < 0) {
		mcp_tools_free(s->tools);
		free(s);
		return r;
	}
	s->next = h->sessions;
	h->sessions = s;
	h->n_sessions++;
	*ret = s;
	return 0;
}

static struct session *session_find(struct mcp_http *h, const char *id)
{
	for (struct session *s = h->sessions; id && s; s = s->next)
		if (strlen(id) == SESSION_ID_LEN && !strcmp(s->id, id))
			return s;
	return NULL;
}

static void sweep_cb(evutil_socket_t fd, short what, void *data)
{
	struct mcp_http *h = data;
	double now = now_s(h);

	(void)fd;
	(void)what;
	for (struct session *s = h->sessions, *next; s; s = next) {
		bool quiet = !s->pending && !mcp_server_busy(s->server);

		next = s->next;
		if (quiet && now - s->last_used > h->idle_s) {
			fprintf(stderr, "paddock mcp: session %.8s… idle for %u s: ended\n", s->id,
				h->idle_s);
			session_free(s);
		} else if (quiet && s->had_stream && !s->n_streams &&
			   now - s->last_used > h->gone_s) {
			/* its client closed its stream (the SDK's close()) and sent nothing since
			 */
			fprintf(stderr,
				"paddock mcp: session %.8s… has had no stream and no request "
				"for %u s, its client is gone: ended\n",
				s->id, h->gone_s);
			session_free(s);
		}
	}
}

/* ---- requests --------------------------------------------------------------------------- */

static void closed_cb(struct evhttp_connection *conn, void *data)
{
	struct session *s = data;

	(void)conn;
	/* a client that hung up: its answer has nowhere to go (this is no cancellation) */
	for (struct pending *p = s->pending, *next; p; p = next) {
		next = p->next;
		if (p->evcon == conn)
			pending_remove(s, p);
	}
}

static void stream_closed(struct evhttp_connection *evcon, void *arg)
{
	struct stream *st = arg;
	struct session *s = st->s;

	(void)evcon;
	for (struct stream **pp = &s->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	s->n_streams--;
	s->last_used = now_s(s->h); /* --session-gone counts from the last stream's end */
	/* a reply under way when the client left: evhttp gave the request up, ours to free */
	if (!evhttp_request_get_connection(st->req))
		evhttp_request_free(st->req);
	free(st);
}

/* GET /mcp: a stream for server-initiated messages, held open (none are ever sent). */
static void handle_get(struct mcp_http *h, struct evhttp_request *req, struct session *s)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct stream *st;

	if (!s) {
		reply_error(req, 400, "Bad Request", "Mcp-Session-Id is required");
		return;
	}
	if (s->n_streams >= MAX_STREAMS) {
		reply_error(req, 429, "Too Many Requests", "this session has streams open already");
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		reply_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	st->s = s;
	st->req = req;
	st->evcon = evhttp_request_get_connection(req);
	st->next = s->streams;
	s->streams = st;
	s->n_streams++;
	s->had_stream = true;
	s->last_used = now_s(h);
	evhttp_connection_set_closecb(st->evcon, stream_closed, st);
	evhttp_connection_set_timeout(st->evcon, STREAM_TIMEOUT_S);
	evhttp_add_header(out, "Content-Type", "text/event-stream");
	evhttp_add_header(out, "Cache-Control", "no-store");
	evhttp_add_header(out, "Mcp-Session-Id", s->id);
	evhttp_send_reply_start(req, 200, "OK");
}

/* Origin, when a browser sent one, must be this machine. */
static bool origin_ok(const char *origin)
{
	static const char *const local[] = { "http://localhost",  "http://127.0.0.1",
					     "http://[::1]",	  "https://localhost",
					     "https://127.0.0.1", "https://[::1]" };

	if (!origin)
		return true;
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
		size_t n = strlen(local[i]);

		if (!strncmp(origin, local[i], n) && (origin[n] == '\0' || origin[n] == ':'))
			return true;
	}
	return false;
}

static bool token_ok(struct mcp_http *h, const char *auth)
{
	size_t n, t;
	unsigned diff = 0;

	if (!h->token)
		return true;
	if (!auth || strncmp(auth, "Bearer ", 7))
		return false;
	auth += 7;
	n = strlen(auth);
	t = strlen(h->token);
	/* constant time in the token's content */
	for (size_t i = 0; i < t; i++)
		diff |= (unsigned)(h->token[i] ^ (i < n ? auth[i] : 0));
	return diff == 0 && n == t;
}

static void handle_post(struct mcp_http *h, struct evhttp_request *req, struct session *s)
{
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(body);
	const char *data = (const char *)evbuffer_pullup(body, -1);
	json_t *msg = json_loadb(data ? data : "", len, JSON_REJECT_DUPLICATES, NULL);
	json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
	bool is_request = json_is_string(method) && id && !json_is_null(id);
	bool initialize = is_request && !strcmp(json_string_value(method), "initialize");
	paddock_error err = { 0 };

	if (!s && !initialize) {
		reply_error(req, 400, "Bad Request",
			    "Mcp-Session-Id is required (initialize makes a session)");
		goto out;
	}
	if (!s && session_new(h, &s, &err) < 0) {
		reply_error(req, 503, "Service Unavailable", err.msg);
		goto out;
	}
	s->last_used = now_s(h);
	if (is_request) {
		struct pending *p = calloc(1, sizeof(*p));

		if (!p) {
			reply_error(req, 500, "Internal Server Error", "out of memory");
			goto out;
		}
		p->id = json_incref(id);
		p->req = req;
		p->evcon = evhttp_request_get_connection(req);
		p->next = s->pending;
		s->pending = p;
		evhttp_connection_set_closecb(evhttp_request_get_connection(req), closed_cb, s);
	}
	s->current = req;
	s->current_answered = false;
	mcp_server_message(s->server, data ? data : "", len);
	s->current = NULL;
	if (s->current_answered) {
		/* answered with an error about the message itself: nothing else will come */
		for (struct pending *p = s->pending; p; p = p->next)
			if (p->req == req) {
				evhttp_connection_set_closecb(p->evcon, NULL, NULL);
				pending_remove(s, p);
				break;
			}
	} else if (!is_request) {
		reply_json(req, 202, "Accepted", NULL, s->id); /* a notification or a response */
	}
out:
	json_decref(msg);
}

static void request_cb(struct evhttp_request *req, void *data)
{
	struct mcp_http *h = data;
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
	struct session *s = session_find(h, sid);

	if (!origin_ok(evhttp_find_header(in, "Origin"))) {
		reply_error(req, 403, "Forbidden", "Origin is not this machine");
		return;
	}
	if (!token_ok(h, evhttp_find_header(in, "Authorization"))) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
				  "Bearer");
		reply_error(req, 401, "Unauthorized", "a bearer token is required");
		return;
	}
	if (!path || strcmp(path, "/mcp")) {
		reply_error(req, 404, "Not Found", "the MCP endpoint is /mcp");
		return;
	}
	const char *version = evhttp_find_header(in, "MCP-Protocol-Version");

	if (version && !mcp_protocol_supported(version)) {
		reply_error(req, 400, "Bad Request",
			    "MCP-Protocol-Version: not a revision this "
			    "server speaks (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)");
		return;
	}
	if (sid && !s) {
		reply_error(req, 404, "Not Found", "no such session (it ended): initialize again");
		return;
	}
	if (evhttp_request_get_command(req) == EVHTTP_REQ_POST) {
		handle_post(h, req, s);
	} else if (evhttp_request_get_command(req) == EVHTTP_REQ_DELETE) {
		if (!s) {
			reply_error(req, 400, "Bad Request", "Mcp-Session-Id is required");
			return;
		}
		session_free(s);
		reply_json(req, 200, "OK", NULL, NULL);
	} else if (evhttp_request_get_command(req) == EVHTTP_REQ_GET) {
		handle_get(h, req, s);
	} else {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
				  "GET, POST, DELETE");
		reply_error(req, 405, "Method Not Allowed", "POST a JSON-RPC message to /mcp");
	}
}

/* ---- set-up ----------------------------------------------------------------------------- */

int mcp_http_new(struct event_base *base, const struct mcp_http_opts *o,
		 struct mcp_backend *backend, const struct mcp_policy *policy,
		 struct mcp_http **ret, paddock_error *err)
{
	const struct timeval sweep = { SWEEP_S, 0 };
	struct mcp_http *h = calloc(1, sizeof(*h));

	if (!h)
		return paddock_fail(err, ENOMEM, "allocate the HTTP transport");
	h->base = base;
	h->backend = backend;
	h->policy = policy;
	h->max_sessions = o->max_sessions;
	h->idle_s = o->idle_s;
	h->gone_s = o->gone_s ? o->gone_s : 30;
	if (o->token && !(h->token = strdup(o->token))) {
		free(h);
		return paddock_fail(err, ENOMEM, "allocate the HTTP transport");
	}
	h->http = evhttp_new(base);
	h->sweep = event_new(base, -1, EV_PERSIST, sweep_cb, h);
	if (!h->http || !h->sweep || event_add(h->sweep, &sweep) < 0) {
		mcp_http_free(h);
		return paddock_fail(err, ENOMEM, "allocate the HTTP transport");
	}
	evhttp_set_gencb(h->http, request_cb, h);
	evhttp_set_max_body_size(h->http, (ev_ssize_t)o->max_message);
	evhttp_set_max_headers_size(h->http, 65536);
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_timeout(h->http, 3600); /* a command may run long before its answer */
	if (evhttp_bind_socket(h->http, o->addr, o->port) < 0) {
		int r = paddock_fail_field(err, errno ? errno : EADDRINUSE, "http",
					   "listen on %s port %u", PADDOCK_ESC(o->addr), o->port);

		mcp_http_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

struct mcp_http *mcp_http_free(struct mcp_http *h)
{
	if (!h)
		return NULL;
	while (h->sessions)
		session_free(h->sessions);
	if (h->sweep)
		event_free(h->sweep);
	if (h->http)
		evhttp_free(h->http);
	if (h->token)
		explicit_bzero(h->token, strlen(h->token));
	free(h->token);
	free(h);
	return NULL;
}
