/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP front of paddockd: evhttp on a unix socket (every client is the tenant "local";
 * the socket's mode 0600 is the access control) and optionally on TCP, where a bearer token
 * names the tenant. Parses the path into segments, routes, and answers errors in one shape:
 * {"error":{"code","field","message"}}. The gate below evhttp (http-gate.c) bounds heads,
 * bodies, connections and the time a head may take, and authenticates TCP requests at their
 * head, before evhttp reads a body.
 *
 * Trust: every request is hostile until its tenant is known, and then still bounded.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

static void count_status(struct daemon *d, int status)
{
	if (status >= 100 && status < 600)
		d->http->http_by_class[status / 100]++;
}

void pdd_http_reply_json(struct daemon *d, struct evhttp_request *req, int status, json_t *body)
{
	struct evbuffer *b = evbuffer_new();
	char *s = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(body);
	if (b && s) {
		evbuffer_add(b, s, strlen(s));
		evbuffer_add(b, "\n", 1);
	}
	free(s);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	count_status(d, status);
	evhttp_send_reply(req, status, NULL, b);
	if (b)
		evbuffer_free(b);
}

static json_t *error_json(const char *code, const char *field, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static json_t *error_json(const char *code, const char *field, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "field", field ? field : "",
			 "message", msg);
}

void pdd_http_reply_error(struct daemon *d, struct evhttp_request *req, int status,
			  const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	o = error_json(code, field, fmt, ap);
	va_end(ap);
	pdd_http_reply_json(d, req, status, o);
}

int pdd_http_status(const paddock_error *err, const char **ret_code)
{
	int status = 500;
	const char *code = "internal";

	switch (err->code) {
	case EINVAL:
	case E2BIG:
	case ENAMETOOLONG:
	case ERANGE:
	case EDOM:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
	case EXDEV:
	case ENOTEMPTY:
		status = 400, code = "invalid";
		break;
	case ENOENT:
		status = 404, code = "not_found";
		break;
	case EEXIST:
	case ESRCH:
	case EBUSY:
		status = 409, code = "conflict";
		break;
	case EACCES:
	case EPERM:
	case EROFS: /* a read-only bind or path: not the client's to write, not paddockd failing */
		status = 403, code = "forbidden";
		break;
	case EFBIG:
		status = 413, code = "too_large";
		break;
	case EAGAIN:
	case ENOSPC:
	case EDQUOT:
		status = 429, code = "limit";
		break;
	case EOPNOTSUPP:
		status = 422, code = "unsupported";
		break;
	default:
		break;
	}
	if (status == 400 && strncmp(err->msg, "unknown field", 13) == 0)
		code = "unknown_field";
	/* pdd_json_body(): EBADMSG elsewhere is a pulled blob's digest, paddockd's own failure */
	if (err->code == EBADMSG && strcmp(err->field, "body") == 0)
		status = 400, code = "malformed";
	/* the state store could not record it (svc_store_error()): nothing changed, retry */
	if (strcmp(err->field, "store") == 0)
		status = 503, code = "unavailable";
	if (ret_code)
		*ret_code = code;
	return status;
}

void pdd_http_reply_paddock_error(struct daemon *d, struct evhttp_request *req,
				  const paddock_error *err)
{
	const char *code;
	int status = pdd_http_status(err, &code);

	pdd_http_reply_json(d, req, status,
			    json_pack("{s:{s:s,s:s,s:s,s:s}}", "error", "code", code, "field",
				      err->field, "message", err->msg, "errno",
				      paddock_errno_name(err->code)));
}

void pdd_reply_json(struct request *r, int status, json_t *body)
{
	r->status = status;
	if (!r->req) { /* a parser under test: the status is all that is kept */
		json_decref(body);
		return;
	}
	pdd_http_reply_json(r->d, r->req, status, body);
}

void pdd_reply_empty(struct request *r, int status)
{
	r->status = status;
	if (!r->req)
		return;
	count_status(r->d, status);
	evhttp_send_reply(r->req, status, NULL, NULL);
}

void pdd_reply_error(struct request *r, int status, const char *code, const char *field,
		     const char *fmt, ...)
{
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	o = error_json(code, field, fmt, ap);
	va_end(ap);
	pdd_reply_json(r, status, o);
}

void pdd_reply_paddock_error(struct request *r, const paddock_error *err)
{
	r->status = pdd_http_status(err, NULL);
	if (r->req)
		pdd_http_reply_paddock_error(r->d, r->req, err);
}

json_t *pdd_json_body(struct evhttp_request *req, bool empty_ok, paddock_error *err)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	json_error_t jerr;
	json_t *o;

	if (len == 0 && empty_ok)
		return json_object();
	if (len > PDD_MAX_BODY) {
		(void)paddock_fail_field(err, EFBIG, "body", "a JSON body may have %u bytes",
					 PDD_MAX_BODY);
		return NULL;
	}
	o = json_loadb((const char *)evbuffer_pullup(in, -1), len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		(void)paddock_fail_field(err, EBADMSG, "body",
					 "expected a JSON object: %s (line %d)", jerr.text,
					 jerr.line);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		(void)paddock_fail_field(err, EBADMSG, "body", "expected a JSON object");
		return NULL;
	}
	return o;
}

json_t *pdd_body_object(struct request *r, bool empty_ok)
{
	paddock_error err = { 0 };
	json_t *o = pdd_json_body(r->req, empty_ok, &err);

	if (!o)
		pdd_reply_paddock_error(r, &err);
	return o;
}

int pdd_json_check_fields(json_t *o, const char *const *allowed, paddock_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v)
	{
		bool ok = false;

		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, key) == 0;
		if (!ok) {
			char esc[80];
			size_t n = 0;

			for (const char *k = key; *k && n + 1 < sizeof(esc); k++)
				esc[n++] = (*k >= 0x20 && *k < 0x7f) ? *k : '?';
			esc[n] = '\0';
			return paddock_fail_field(err, EINVAL, esc, "unknown field '%s'", esc);
		}
	}
	return 0;
}

bool pdd_check_fields(struct request *r, json_t *o, const char *const *allowed)
{
	paddock_error err = { 0 };

	if (pdd_json_check_fields(o, allowed, &err) < 0) {
		pdd_reply_paddock_error(r, &err);
		return false;
	}
	return true;
}

const char *pdd_query(struct request *r, const char *key)
{
	return r->query ? evhttp_find_header(r->query, key) : NULL;
}

/* ---- streams ---------------------------------------------------------------------------- */

static void watcher_closed(struct evhttp_connection *evcon, void *arg)
{
	struct watcher *w = arg;

	(void)evcon;
	/*
	 * evhttp frees the request with the connection, unless it gave the request up first:
	 * a client that closed while a reply was under way leaves the request detached (no
	 * connection; libevent's evhttp_connection_incoming_fail) for its owner to free.
	 */
	if (w->req && !evhttp_request_get_connection(w->req))
		evhttp_request_free(w->req);
	w->req = NULL;
	w->evcon = NULL;
	if (w->hup) {
		event_free(w->hup);
		w->hup = NULL;
	}
	if (w->on_gone)
		w->on_gone(w); /* may free w */
}

/*
 * evhttp notices a client that left only when it next reads or writes the connection; a
 * command that prints nothing for minutes would run on for nobody. EV_CLOSED (EPOLLRDHUP)
 * tells without reading: the connection is then freed, which runs the close callback.
 */
static void hup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watcher *w = arg;

	(void)fd;
	(void)what;
	if (w->evcon)
		evhttp_connection_free(w->evcon); /* calls watcher_closed(), which may free w */
}

static void watch_hangup(struct daemon *d, struct watcher *w)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(w->evcon);
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;

	if (fd < 0 || !(event_base_get_features(d->base) & EV_FEATURE_EARLY_CLOSE))
		return;
	w->hup = event_new(d->base, fd, EV_CLOSED, hup_cb, w);
	if (w->hup && event_add(w->hup, NULL) < 0) {
		event_free(w->hup);
		w->hup = NULL;
	}
}

struct watcher *pdd_watcher_open(struct daemon *d, struct evhttp_request *req, int kind,
				 void *owner, struct watcher **list)
{
	struct watcher *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->req = req;
	w->evcon = evhttp_request_get_connection(req);
	w->kind = kind;
	w->owner = owner;
	evhttp_connection_set_closecb(w->evcon, watcher_closed, w);
	watch_hangup(d, w);
	/*
	 * A stream may be quiet for long (a follow, a wait): an evhttp timeout would cut it. The
	 * gate's connections have none (http-gate.c keeps their time); the E2B front end's do.
	 */
	if (kind != W_RESULT && !pdd_http_gate_owns(w->evcon))
		evhttp_connection_set_timeout(w->evcon, 7 * 24 * 3600);
	if (list) {
		w->next = *list;
		*list = w;
	}
	return w;
}

struct watcher *pdd_watcher_new(struct request *r, int kind, void *owner, struct watcher **list)
{
	return pdd_watcher_open(r->d, r->req, kind, owner, list);
}

void pdd_watcher_detach(struct watcher *w)
{
	if (w->hup) {
		event_free(w->hup);
		w->hup = NULL;
	}
	if (w->evcon)
		evhttp_connection_set_closecb(w->evcon, NULL, NULL);
	w->evcon = NULL;
	w->on_gone = NULL;
}

void pdd_watcher_free(struct watcher *w, struct watcher **list)
{
	for (struct watcher **pp = list; pp && *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (w->evcon)
		evhttp_connection_set_closecb(w->evcon, NULL, NULL);
	if (w->timer)
		event_free(w->timer);
	if (w->hup)
		event_free(w->hup);
	free(w);
}

void pdd_stream_start(struct watcher *w, const char *content_type)
{
	if (!w->req)
		return;
	if (w->streaming)
		return;
	w->streaming = true;
	evhttp_add_header(evhttp_request_get_output_headers(w->req), "Content-Type", content_type);
	evhttp_send_reply_start(w->req, 200, "OK");
}

void pdd_stream_line(struct watcher *w, json_t *o)
{
	char *s;

	if (!w->req || !o) {
		json_decref(o);
		return;
	}
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return;
	struct evbuffer *b = evbuffer_new();
	if (b) {
		evbuffer_add(b, s, strlen(s));
		evbuffer_add(b, "\n", 1);
		evhttp_send_reply_chunk(w->req, b);
		evbuffer_free(b);
	}
	free(s);
}

void pdd_stream_event(struct daemon *d, struct watcher *w, json_t *o)
{
	struct bufferevent *bev = w->evcon ? evhttp_connection_get_bufferevent(w->evcon) : NULL;
	uint64_t max =
		d->http->stream_behind_max ? d->http->stream_behind_max : PDD_STREAM_BEHIND_MAX;

	/* a follower still replaying reads this one from the store, in its order */
	if (w->behind || !w->req || w->replaying) {
		json_decref(o);
		return;
	}
	/* the gate's filter keeps what the socket has not taken yet (http-gate.c, gate_out) */
	if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > max) {
		json_decref(o);
		w->behind = true;
		d->http->streams_dropped++;
		/*
		 * hup_cb frees the connection from the loop, which unlinks and frees w. Without
		 * EV_CLOSED (not epoll) it stays until the client goes, sent nothing more.
		 */
		if (w->hup)
			event_active(w->hup, EV_CLOSED, 0);
		return;
	}
	pdd_stream_line(w, o);
}

void pdd_stream_end(struct watcher *w)
{
	if (!w->req)
		return;
	pdd_watcher_detach(w);
	evhttp_send_reply_end(w->req);
	w->req = NULL;
}

/* ---- routing ----------------------------------------------------------------------------- */

bool pdd_sandbox_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n != 15 || strncmp(s, "sb_", 3) != 0)
		return false;
	for (size_t i = 3; i < n; i++)
		if (!strchr("abcdefghijkmnpqrstuvwxyz23456789", s[i]))
			return false;
	return true;
}

static void route(struct request *r)
{
	struct daemon *d = r->d;
	struct box *b;

	if (r->n_seg >= 1 && strcmp(r->seg[0], "ui") == 0)
		return pdd_api_ui(r);
	/* SECURITY: past the console's files, every request has a tenant */
	if (!r->tenant)
		return pdd_reply_error(r, 401, "unauthorized", "Authorization",
				       "expected "
				       "'Authorization: Bearer <token>' with a known token");
	if (r->n_seg == 1 && strcmp(r->seg[0], "healthz") == 0) {
		/* SECURITY: a tenant counts its own sandboxes; the operator (unix socket) all */
		bool all = strcmp(r->tenant, SVC_LOCAL_TENANT) == 0;
		unsigned n = 0;

		for (b = d->boxes; b; b = b->next)
			n += all || strcmp(b->tenant, r->tenant) == 0;
		return pdd_reply_json(r, d->stopping ? 503 : 200,
				      json_pack("{s:s,s:i}", "status",
						d->stopping ? "stopping" : "ok", "sandboxes", n));
	}
	if (r->n_seg == 1 && strcmp(r->seg[0], "metrics") == 0)
		return pdd_api_metrics(r);
	if (r->n_seg == 2 && strcmp(r->seg[0], "v1") == 0 && strcmp(r->seg[1], "run") == 0)
		return pdd_api_run(r);
	if (r->n_seg >= 2 && strcmp(r->seg[0], "v1") == 0 && strcmp(r->seg[1], "templates") == 0)
		return pdd_api_templates(r);
	if (r->n_seg >= 2 && strcmp(r->seg[0], "v1") == 0 && strcmp(r->seg[1], "images") == 0)
		return pdd_api_images(r);
	if (r->n_seg == 2 && strcmp(r->seg[0], "v1") == 0 && strcmp(r->seg[1], "events") == 0)
		return pdd_api_events_all(r);
	if (r->n_seg < 2 || strcmp(r->seg[0], "v1") != 0 || strcmp(r->seg[1], "sandboxes") != 0)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	if (r->n_seg == 2)
		return pdd_api_sandboxes(r);
	b = pdd_sandbox_id_valid(r->seg[2]) ? svc_box_find(d, r->tenant, r->seg[2]) : NULL;
	if (!b)
		return pdd_reply_error(r, 404, "not_found", "id", "no such sandbox");
	if (r->n_seg == 3 ||
	    (r->n_seg == 4 && (strcmp(r->seg[3], "ttl") == 0 || strcmp(r->seg[3], "pause") == 0 ||
			       strcmp(r->seg[3], "resume") == 0 || strcmp(r->seg[3], "stop") == 0 ||
			       strcmp(r->seg[3], "start") == 0)))
		return pdd_api_sandboxes(r);
	svc_box_touch(b);
	/* stopped by a request: nothing runs until its start; its events are history */
	if (b->stopped && b->kept_image[0] && strcmp(r->seg[3], "events") != 0)
		return pdd_reply_error(r, 409, "conflict", "state",
				       "sandbox '%s' is stopped: start it first (POST "
				       "/v1/sandboxes/%s/start)",
				       b->id, b->id);
	if (strcmp(r->seg[3], "exec") == 0 && r->n_seg == 4)
		return pdd_api_exec(r, b);
	if (strcmp(r->seg[3], "processes") == 0)
		return pdd_api_processes(r, b);
	if (strcmp(r->seg[3], "files") == 0)
		return pdd_api_files(r, b);
	if (strcmp(r->seg[3], "events") == 0 && r->n_seg == 4)
		return pdd_api_events(r, b);
	if (strcmp(r->seg[3], "network") == 0 && r->n_seg == 4)
		return pdd_api_network(r, b);
	if (strcmp(r->seg[3], "network") == 0 && r->n_seg == 5)
		return pdd_api_network_asks(r, b);
	if (strcmp(r->seg[3], "ports") == 0)
		return pdd_api_ports(r, b);
	if (strcmp(r->seg[3], "code") == 0 && r->n_seg >= 5)
		return pdd_api_code(r, b);
	if ((strcmp(r->seg[3], "snapshot") == 0 || strcmp(r->seg[3], "fork") == 0) && r->n_seg == 4)
		return pdd_api_snapshots(r, b);
	pdd_reply_error(r, 404, "not_found", "path", "no such route");
}

static const char *bearer_tenant(struct daemon *d, struct evhttp_request *req)
{
	return pdd_http_bearer_tenant(
		d, evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"));
}

const char *pdd_http_bearer_tenant(struct daemon *d, const char *h)
{
	const char *tenant = NULL;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	h += 7;
	/* SECURITY: compare every token in full, in time independent of where they differ */
	for (size_t i = 0; i < d->http->n_tokens; i++) {
		const char *t = d->http->tokens[i].token;
		size_t lt = strlen(t), lh = strlen(h);
		unsigned char diff = (unsigned char)(lt != lh);

		for (size_t k = 0; k < lt; k++)
			diff |= (unsigned char)(t[k] ^ (k < lh ? h[k] : 0));
		if (!diff)
			tenant = d->http->tokens[i].tenant;
	}
	return tenant;
}

static bool loopback_host(const char *host)
{
	static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (strncasecmp(host, names[i], n) == 0 && (host[n] == '\0' || host[n] == ':'))
			return true;
	}
	return false;
}

/*
 * CSRF and DNS rebinding, as a second wall: a browser names the page that makes a request
 * in Origin (cross-site always, same-site for all but GET and HEAD). A TCP request needs a
 * bearer token, which a page of another site does not have and a browser never adds by
 * itself (no cookies here), so it could not act anyway; still, a request that says it comes
 * from another origin than the Host it was sent to is refused. The unix socket needs no
 * token, so a page reaching it through a local forwarder must also name a loopback Host: a
 * rebound name (evil.example resolving to 127.0.0.1) is refused. Non-browser clients send
 * no Origin and are not affected.
 */
static bool origin_allowed(struct evhttp_request *req, bool tcp)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *origin = evhttp_find_header(in, "Origin");
	const char *host = evhttp_find_header(in, "Host");
	size_t n;

	if (!origin)
		return true;
	if (!host || !*host)
		return false;
	if (strncmp(origin, "http://", 7) == 0)
		origin += 7;
	else if (strncmp(origin, "https://", 8) == 0)
		origin += 8;
	else
		return false; /* "null" (a sandboxed frame, a file), or nonsense */
	n = strlen(host);
	if (strncasecmp(origin, host, n) != 0 || origin[n] != '\0')
		return false;
	return tcp || loopback_host(host);
}

static void handle(struct evhttp_request *req, void *arg, bool tcp)
{
	struct daemon *d = arg;
	struct request r = { .d = d, .req = req, .method = (int)evhttp_request_get_command(req) };
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct evkeyvalq q = { 0 };
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
	char *save = NULL;
	bool bad = false;

	svc_pool_request(d);
	/* refused at its head (http-gate.c): answered there, as the API's JSON */
	if (pdd_http_gate_request(d, req))
		return;
	r.tenant = tcp ? bearer_tenant(d, req) : "local";
	/* the console's files are no one's: the gate let them through without a token too */
	if (!r.tenant && !(path && pdd_ui_path(path, strlen(path)))) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
				  "Bearer");
		return pdd_reply_error(
			&r, 401, "unauthorized", "Authorization",
			"expected 'Authorization: Bearer <token>' with a known token");
	}
	if (!origin_allowed(req, tcp))
		return pdd_reply_error(&r, 403, "forbidden", "Origin",
				       "expected no Origin or this server's own (a page of another "
				       "site may not call the API)");
	if (d->stopping)
		return pdd_reply_error(&r, 503, "unavailable", NULL, "paddockd is shutting down");
	if (!path || !(r.path = strdup(path)))
		return pdd_reply_error(&r, 400, "malformed", "path", "bad request path");
	if (query) {
		if (evhttp_parse_query_str(query, &q) < 0) {
			free(r.path);
			return pdd_reply_error(&r, 400, "malformed", "query", "bad query string");
		}
		r.query = &q;
	}
	/* split first, then decode each segment: "%2F" inside a segment is no separator */
	for (char *s = strtok_r(r.path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		size_t len = 0;
		char *dec;

		if (r.n_seg == sizeof(r.seg) / sizeof(r.seg[0]))
			break; /* the ports proxy takes the rest of the raw path itself */
		dec = evhttp_uridecode(s, 0, &len);
		if (!dec || len != strlen(dec)) { /* SECURITY: no NUL smuggled into a name */
			free(dec);
			bad = true;
			break;
		}
		r.seg[r.n_seg++] = dec;
	}
	if (bad)
		pdd_reply_error(&r, 400, "malformed", "path", "bad request path");
	else
		route(&r);
	if (r.query)
		evhttp_clear_headers(&q);
	for (size_t i = 0; i < r.n_seg; i++)
		free(r.seg[i]);
	free(r.path);
}

static void handle_unix(struct evhttp_request *req, void *arg)
{
	handle(req, arg, false);
}

void pdd_http_no_delay(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	int one = 1;

	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void handle_tcp(struct evhttp_request *req, void *arg)
{
	pdd_http_no_delay(req);
	handle(req, arg, true);
}

static struct evhttp *new_http(struct daemon *d, void (*cb)(struct evhttp_request *, void *),
			       bool tcp)
{
	struct evhttp *h = evhttp_new(d->base);

	if (!h)
		return NULL;
	if (pdd_http_gate_add(d, h, tcp) < 0) {
		evhttp_free(h);
		return NULL;
	}
	evhttp_set_gencb(h, cb, d);
	/* a second wall: the gate bounds heads and bodies before evhttp reads them */
	evhttp_set_max_headers_size(h, 2 * PDD_MAX_HEADERS);
	evhttp_set_max_body_size(h, (ev_ssize_t)(d->http->max_upload + 65536));
	/*
	 * No evhttp timeouts: the gate times heads, bodies and stalled answers itself
	 * (COMPAT(libevent 2.1.12): a filter's timeout timer can outlive the filter).
	 */
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
					      EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
					      EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	evhttp_set_default_content_type(h, "application/json");
	return h;
}

int pdd_http_setup(struct daemon *d, paddock_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, r;

	struct evhttp_bound_socket *bound;

	d->http->http_unix = new_http(d, handle_unix, false);
	if (!d->http->http_unix)
		return paddock_fail(err, ENOMEM, "evhttp");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return paddock_fail(err, errno, "socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->http->socket_path);
	(void)unlink(sa.sun_path);
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(sa.sun_path, 0600) < 0 || listen(fd, 128) < 0) {
		r = errno;
		close(fd);
		return paddock_fail(err, r, "listen on '%s'", d->http->socket_path);
	}
	bound = evhttp_accept_socket_with_handle(d->http->http_unix, fd);
	if (!bound) {
		close(fd);
		return paddock_fail(err, EIO, "serve '%s'", d->http->socket_path);
	}
	pdd_http_gate_listening(d, d->http->http_unix, evhttp_bound_socket_get_listener(bound));
	return 0;
}

int pdd_http_listen_tcp(struct daemon *d, const char *addr, unsigned short port, paddock_error *err)
{
	struct evhttp_bound_socket *bound;

	d->http->http_tcp = new_http(d, handle_tcp, true);
	if (!d->http->http_tcp)
		return paddock_fail(err, ENOMEM, "evhttp");
	bound = evhttp_bind_socket_with_handle(d->http->http_tcp, addr, port);
	if (!bound)
		return paddock_fail(err, errno ? errno : EADDRINUSE, "listen on %s:%u", addr, port);
	pdd_http_gate_listening(d, d->http->http_tcp, evhttp_bound_socket_get_listener(bound));
	return 0;
}

void pdd_http_stop(struct daemon *d)
{
	if (d->http->http_unix)
		evhttp_free(d->http->http_unix);
	if (d->http->http_tcp)
		evhttp_free(d->http->http_tcp);
	d->http->http_unix = d->http->http_tcp = NULL;
	pdd_http_gate_stop(d);
	(void)unlink(d->http->socket_path);
}

/*
 * What the service core asks of paddockd's clients of a sandbox (service.h, struct svc_hooks):
 * they are watchers bound to evhttp requests, which the core does not know.
 */
static void hook_release_clients(struct box *b)
{
	pdd_files_release(b);
	pdd_network_release(b);
}

static void hook_box_unlinked(struct box *b)
{
	while (b->watchers) {
		pdd_stream_end(b->watchers);
		pdd_watcher_free(b->watchers, &b->watchers);
	}
}

static void deleter_gone(struct watcher *w)
{
	struct box *b = w->owner;

	pdd_watcher_free(w, &b->deleters);
}

static void hook_deleter_wait(struct box *b, void *deleter)
{
	struct watcher *w = pdd_watcher_new(deleter, W_WAIT, b, &b->deleters);

	if (w)
		w->on_gone = deleter_gone;
	else
		pdd_reply_empty(deleter, 204);
}

static void hook_box_freed(struct box *b)
{
	while (b->deleters) {
		struct watcher *w = b->deleters;

		if (w->req) {
			struct request r = { .d = b->d, .req = w->req };
			pdd_watcher_detach(w);
			pdd_reply_empty(&r, 204);
			w->req = NULL;
		}
		pdd_watcher_free(w, &b->deleters);
	}
}

static void hook_box_event(struct box *b, json_t *o)
{
	for (struct watcher *w = b->watchers; w; w = w->next)
		pdd_stream_event(b->d, w, json_incref(o));
}

const struct svc_hooks pdd_service_hooks = {
	.release_clients = hook_release_clients,
	.box_unlinked = hook_box_unlinked,
	.deleter_wait = hook_deleter_wait,
	.box_freed = hook_box_freed,
	.box_event = hook_box_event,
	.box_asked = pdd_network_asked,
	.event = pdd_events_broadcast,
};
