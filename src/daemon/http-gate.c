/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate in front of evhttp (http-gate.h). libevent 2.1's HTTP server reads a request's
 * body whole before its callback runs and offers no hook after the headers, so a client
 * without a token could make paddockd hold a 256 MiB upload before the 401; and it caps
 * neither connections nor the time a head may take. The gate sits below evhttp as a filter
 * bufferevent (evhttp_set_bevcb()): it sees the bytes first.
 *
 * Per request it waits for the whole head (bounded: PDD_MAX_HEADERS), parses it
 * (http-head.c), authenticates it (TCP: the bearer token) and checks a body's
 * Content-Length against the route's limit; only then does evhttp get the head, and then the
 * body as framed (Content-Length, or chunked: decoded here to count it and to find its end).
 * A refused request never reaches evhttp: the gate drops what the client sends from then on
 * and hands evhttp a bodiless stand-in ("GET / ... Connection: close"), which
 * pdd_http_gate_request() answers with the refusal as the API's JSON; evhttp then closes.
 * Memory per connection is thus the head and what the route allows, never more.
 *
 * Per connection a deadline: from accept, or from the end of the last answer, the next head
 * must be whole within --header-timeout (idle keep-alive counts); a head that began while a
 * request was in flight too. A request in flight has no deadline here (streams and long
 * commands are normal). Per listener a cap on connections (accepting pauses at it) and, on
 * TCP, on connections per peer address (more are closed at once); accept() failing for want
 * of file descriptors pauses accepting with a growing back-off instead of spinning, and
 * what the gate refuses is logged at most once per 10 s per listener.
 *
 * Lifetimes: evhttp owns the filter (its connection's bufferevent); the gate's connection
 * state lives as the filter's context and is freed with it (gate_conn_free). bufferevent_free()
 * clears the callbacks before the deferred destruction, so a timer that finds no callback
 * argument knows evhttp let the connection go.
 */
#include "http-gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon.h"

#define CHUNK_LINE_MAX 256	  /* a chunk-size line: hex digits and spaces */
#define TRAILER_MAX    (8u << 10) /* trailer lines after the last chunk */
#define BIG_BODY       (1u << 20) /* after a body this large, memory goes back to the system */
#define IO_IDLE_S      600	  /* a body that stops coming, an answer nobody reads */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define LOG_EVERY_S    10
#define STAND_IN       "GET / HTTP/1.1\r\nConnection: close\r\n\r\n"

enum gate_state {
	G_HEAD,	      /* waiting for (or reading) a request's head */
	G_BODY,	      /* `left` bytes of a Content-Length body */
	G_CHUNK_SIZE, /* chunked: the next chunk-size line */
	G_CHUNK_DATA, /* `left` bytes of chunk data */
	G_CHUNK_END,  /* the line end after chunk data */
	G_TRAILER,    /* trailer lines after the last chunk, up to an empty one */
	G_RAW,	      /* upgraded: bytes both ways, no HTTP any more (api-ports.c's splice) */
	G_DISCARD,    /* refused: what the client sends is dropped until evhttp closes */
};

enum refused_reason {
	R_PER_PEER,
	R_HEADER_TIMEOUT,
	R_IDLE_TIMEOUT,
	R_HEADERS,
	R_UNAUTHORIZED,
	R_TOO_LARGE,
	R_MALFORMED,
	R_ACCEPT_ERROR,
	_R_MAX,
};

static const char *const reason_names[_R_MAX] = {
	"per_peer",	"header_timeout", "idle_timeout", "headers_too_large",
	"unauthorized", "too_large",	  "malformed",	  "accept_error",
};

struct gate_listener;

struct refusal {
	int status;
	char code[24], field[32], msg[200];
};

struct gate_conn {
	struct gate_listener *l;
	struct bufferevent *bev; /* the filter evhttp reads from */
	enum gate_state state;
	uint64_t left;		 /* G_BODY, G_CHUNK_DATA: bytes to pass */
	uint64_t body, limit;	 /* chunked: body bytes passed, and how many the route allows */
	size_t scan, line_start; /* G_HEAD: the search for the head's end goes on from here */
	size_t trailer;		 /* G_TRAILER: bytes so far */
	uint64_t passed;	 /* heads given to evhttp (the stand-in included) */
	uint64_t dispatched;	 /* requests evhttp dispatched (pdd_http_gate_request()) */
	uint64_t completed;	 /* requests answered (on_complete) */
	uint64_t refused_at;	 /* the request (1-based) the stand-in is for, 0: none */
	uint64_t raw_at;	 /* the upgrade request, 0: none */
	struct refusal refusal;
	int shape;     /* a policy's: how the request being read answers errors */
	bool big;      /* a large body went through: trim memory afterwards */
	bool tcp_peer; /* peer has an address (TCP) */
	struct sockaddr_storage peer;
	struct event *deadline, *admit;
	struct event *kick; /* move the answer out once evhttp enabled writing */
	struct event *wev;  /* the socket takes more of the answer */
	struct gate_conn *prev, *next;
};

struct gate_listener {
	struct daemon *d;
	struct evhttp *http;
	struct evconnlistener *lev;
	bool tcp;
	const char *name;		      /* "tcp", "unix", or the policy's */
	const struct e2b_gate_policy *policy; /* NULL: paddockd's API (bearer tokens, routes) */
	unsigned n;			      /* connections open */
	struct gate_conn *conns;
	bool full;	  /* accepting paused: n reached the cap */
	bool backing_off; /* accepting paused: accept() failed for want of fds */
	unsigned backoff_ms;
	struct event *resume;
	uint64_t refused[_R_MAX];
	/* the log: one line per LOG_EVERY_S at most, then how many were left out */
	double log_at;
	unsigned log_dropped;
};

struct gate {
	struct event *trim;
};

/*
 * The process's gated listeners: accept_error_cb() is called with the evhttp, not with
 * anything of ours, and finds its listener here. One paddockd, a few listeners.
 */
static struct gate_listener *registry[6];
static size_t n_registry;

static void flush_cb(evutil_socket_t fd, short what, void *arg);
static void out_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg);
static enum bufferevent_filter_result gate_out(struct evbuffer *src, struct evbuffer *dst,
					       ev_ssize_t limit, enum bufferevent_flush_mode mode,
					       void *ctx);

/* ---- small things ------------------------------------------------------------------------ */

static void gate_log(struct gate_listener *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void gate_log(struct gate_listener *l, const char *fmt, ...)
{
	double now = svc_mono_s();
	char msg[300];
	va_list ap;

	if (l->log_at > 0 && now - l->log_at < LOG_EVERY_S) {
		l->log_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->log_dropped)
		fprintf(stderr,
			"paddockd: %s listener: %s (and %u more like it in the last %d s, "
			"not logged)\n",
			l->name, msg, l->log_dropped, LOG_EVERY_S);
	else
		fprintf(stderr, "paddockd: %s listener: %s\n", l->name, msg);
	l->log_at = now;
	l->log_dropped = 0;
}

/* The evhttp connection of a gated bufferevent, or NULL once evhttp let it go. */
static struct evhttp_connection *evcon_of(struct gate_conn *c)
{
	void *arg = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, NULL, &arg);
	return arg;
}

static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	/* a large body's pages, freed between live allocations, go back to the system */
	(void)malloc_trim(0);
}

static void trim_later(struct daemon *d)
{
	struct gate *g = d->http->gate;
	struct timeval tv = { 0, 100000 };

	if (g && g->trim && !evtimer_pending(g->trim, NULL))
		evtimer_add(g->trim, &tv);
}

/* ---- deadline ---------------------------------------------------------------------------- */

static void close_conn(struct gate_conn *c)
{
	struct evhttp_connection *evcon = evcon_of(c);

	if (evcon)
		evhttp_connection_free(evcon); /* frees c, through the filter */
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gate_conn *c = arg;

	(void)fd;
	(void)what;
	if (c->state == G_HEAD) {
		c->l->refused[R_HEADER_TIMEOUT]++;
		gate_log(c->l, "closed a connection whose request head did not come within %u s",
			 c->l->d->http->http_limits.header_timeout_s);
	} else {
		c->l->refused[R_IDLE_TIMEOUT]++;
		gate_log(c->l, "closed a connection whose request body stopped for %d s",
			 IO_IDLE_S);
	}
	close_conn(c);
}

static bool in_body(const struct gate_conn *c)
{
	return c->state == G_BODY || c->state == G_CHUNK_SIZE || c->state == G_CHUNK_DATA ||
	       c->state == G_CHUNK_END || c->state == G_TRAILER;
}

/*
 * Armed while the connection waits for a head: nothing in flight (idle, the first request
 * too), or a head begun. Once armed it is not pushed back: the deadline is fixed. While a
 * body comes, it is IO_IDLE_S from the last bytes instead (evhttp's own timeouts are off:
 * COMPAT(libevent 2.1.12): a filter's timeout timer can outlive the filter).
 */
static void update_deadline(struct gate_conn *c)
{
	bool waiting = false;

	if (in_body(c)) {
		struct timeval tv = { .tv_sec = IO_IDLE_S };

		evtimer_add(c->deadline, &tv);
		return;
	}
	if (c->state == G_HEAD) {
		struct bufferevent *under = bufferevent_get_underlying(c->bev);
		size_t pending = under ? evbuffer_get_length(bufferevent_get_input(under)) : 0;

		waiting = c->completed >= c->passed || pending > 0;
	}
	if (!waiting) {
		evtimer_del(c->deadline);
	} else if (!evtimer_pending(c->deadline, NULL)) {
		struct timeval tv = { .tv_sec = c->l->d->http->http_limits.header_timeout_s };

		evtimer_add(c->deadline, &tv);
	}
}

/* ---- refusals ---------------------------------------------------------------------------- */

/*
 * Refuses the request whose head is being read: what the client sent and sends is dropped,
 * evhttp gets the stand-in, and pdd_http_gate_request() answers it with this.
 */
static void refuse(struct gate_conn *c, struct evbuffer *src, struct evbuffer *dst,
		   enum refused_reason why, int status, const char *code, const char *field,
		   const char *fmt, ...) __attribute__((format(printf, 8, 9)));

static void refuse(struct gate_conn *c, struct evbuffer *src, struct evbuffer *dst,
		   enum refused_reason why, int status, const char *code, const char *field,
		   const char *fmt, ...)
{
	va_list ap;

	c->refusal.status = status;
	snprintf(c->refusal.code, sizeof(c->refusal.code), "%s", code);
	snprintf(c->refusal.field, sizeof(c->refusal.field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(c->refusal.msg, sizeof(c->refusal.msg), fmt, ap);
	va_end(ap);
	c->l->refused[why]++;
	evbuffer_drain(src, evbuffer_get_length(src));
	evbuffer_add(dst, STAND_IN, strlen(STAND_IN));
	c->refused_at = ++c->passed;
	c->state = G_DISCARD;
	gate_log(c->l, "refused a request: %d %s", status, c->refusal.msg);
}

/*
 * Refuses the request whose body is being passed: evhttp gets the end of a chunked body now
 * (it has read whole chunks only), and the request is answered with the refusal.
 */
static void refuse_body(struct gate_conn *c, struct evbuffer *src, struct evbuffer *dst,
			enum refused_reason why, int status, const char *code, const char *msg)
{
	c->refusal.status = status;
	snprintf(c->refusal.code, sizeof(c->refusal.code), "%s", code);
	snprintf(c->refusal.field, sizeof(c->refusal.field), "body");
	snprintf(c->refusal.msg, sizeof(c->refusal.msg), "%s", msg);
	c->l->refused[why]++;
	evbuffer_drain(src, evbuffer_get_length(src));
	if (c->state == G_TRAILER)
		evbuffer_add(dst, "\r\n", 2);
	else
		evbuffer_add(dst, "0\r\n\r\n", 5);
	c->refused_at = c->passed;
	c->state = G_DISCARD;
	gate_log(c->l, "refused a request's body: %d %s", status, msg);
}

/* ---- a head ------------------------------------------------------------------------------ */

/* The route's body limit, from the path's segments decoded as http.c's handle() does. */
static uint64_t route_limit(struct daemon *d, const struct pdd_gate_head *h, const char **field)
{
	char path[512], *seg[8] = { 0 }, *save = NULL;
	size_t n = 0, len = h->target_len;
	const char *q = memchr(h->target, '?', h->target_len);
	uint64_t limit = PDD_MAX_BODY;

	*field = "body";
	if (q)
		len = (size_t)(q - h->target);
	if (len >= sizeof(path))
		return limit; /* no route of ours is that long */
	memcpy(path, h->target, len);
	path[len] = '\0';
	for (char *s = strtok_r(path, "/", &save); s && n < 8; s = strtok_r(NULL, "/", &save)) {
		size_t dl = 0;

		seg[n] = evhttp_uridecode(s, 0, &dl);
		if (!seg[n])
			break;
		n++;
	}
	if (n >= 4 && !strcmp(seg[0], "v1") && !strcmp(seg[1], "sandboxes")) {
		if (!strcmp(seg[3], "files") && n == 4 && h->method == PDD_M_PUT) {
			limit = d->http->max_upload;
			*field = "max_upload";
		} else if (!strcmp(seg[3], "processes") && n == 6 && !strcmp(seg[5], "stdin")) {
			limit = PDD_STDIN_WRITE_MAX;
		} else if (!strcmp(seg[3], "ports")) {
			limit = d->http->max_upload; /* what the service inside takes: an upload */
		}
	}
	for (size_t i = 0; i < n; i++)
		free(seg[i]);
	return limit;
}

/*
 * The head's end: an empty line after the request line. Searched from where the last call
 * stopped, so a head that comes a byte at a time costs its length once. Leading empty lines
 * are dropped (evhttp would refuse them). 1 and *ret_len when whole, 0 when not yet.
 */
static int find_head(struct gate_conn *c, struct evbuffer *src, size_t *ret_len)
{
	for (;;) {
		struct evbuffer_ptr p;
		size_t line;
		char cr = 0;

		if (evbuffer_ptr_set(src, &p, c->scan, EVBUFFER_PTR_SET) < 0)
			return 0;
		p = evbuffer_search(src, "\n", 1, &p);
		if (p.pos < 0) {
			c->scan = evbuffer_get_length(src);
			return 0;
		}
		line = (size_t)p.pos - c->line_start;
		if (line > 0) {
			struct evbuffer_ptr b;

			evbuffer_ptr_set(src, &b, (size_t)p.pos - 1, EVBUFFER_PTR_SET);
			evbuffer_copyout_from(src, &b, &cr, 1);
			if (cr == '\r')
				line--;
		}
		if (line == 0 && c->line_start == 0) {
			evbuffer_drain(src, (size_t)p.pos + 1); /* an empty line before the head */
			c->scan = 0;
			continue;
		}
		if (line == 0) {
			*ret_len = (size_t)p.pos + 1;
			return 1;
		}
		c->line_start = c->scan = (size_t)p.pos + 1;
	}
}

static bool console_file(const struct pdd_gate_head *h)
{
	const char *q = memchr(h->target, '?', h->target_len);
	size_t len = q ? (size_t)(q - h->target) : h->target_len;

	return (h->method == PDD_M_GET || h->method == PDD_M_HEAD) && !h->chunked &&
	       (!h->has_length || h->content_length == 0) && !h->upgrade &&
	       pdd_ui_path(h->target, len);
}

/* G_HEAD: 1 when the head was passed or refused, 0 when more is needed. */
static int read_head(struct gate_conn *c, struct evbuffer *src, struct evbuffer *dst)
{
	struct daemon *d = c->l->d;
	struct pdd_gate_head h;
	const char *field;
	uint64_t limit;
	size_t len = 0;

	if (!find_head(c, src, &len)) {
		if (evbuffer_get_length(src) > PDD_MAX_HEADERS) {
			refuse(c, src, dst, R_HEADERS, 413, "too_large", "headers",
			       "the request line and headers may have %u bytes", PDD_MAX_HEADERS);
			return 1;
		}
		return 0;
	}
	c->scan = c->line_start = 0;
	c->shape = 0;
	if (len > PDD_MAX_HEADERS) {
		refuse(c, src, dst, R_HEADERS, 413, "too_large", "headers",
		       "the request line and headers may have %u bytes", PDD_MAX_HEADERS);
		return 1;
	}
	const char *head = (const char *)evbuffer_pullup(src, (ev_ssize_t)len);

	if (!head) {
		refuse(c, src, dst, R_HEADERS, 413, "too_large", "headers",
		       "no memory for a head of %zu bytes", len);
		return 1;
	}
	if (pdd_gate_head_parse(head, len, &h) < 0) {
		refuse(c, src, dst, h.status == 413 ? R_HEADERS : R_MALFORMED, h.status, h.code,
		       h.field, "%s", h.msg);
		return 1;
	}
	if (c->l->policy) {
		const struct e2b_gate_policy *p = c->l->policy;
		struct pdd_gate_verdict v = { 0 };

		/* SECURITY: the listener's own rules, before a byte of the body is read */
		if (p->check(p->arg, &h, &v) < 0) {
			c->shape = v.shape;
			refuse(c, src, dst,
			       v.status == 401	 ? R_UNAUTHORIZED
			       : v.status == 413 ? R_TOO_LARGE
						 : R_MALFORMED,
			       v.status, "refused", NULL, "%s", v.msg);
			return 1;
		}
		c->shape = v.shape;
		limit = v.limit;
		field = "body";
		goto pass;
	}
	/*
	 * SECURITY: who it is, before a byte of its body is read. The console's files are
	 * no one's (api-ui.c): a bodiless GET or HEAD of /ui needs no token; http.c's routing
	 * gives a request without a tenant nothing else.
	 */
	if (c->l->tcp && !console_file(&h)) {
		char auth[300];

		if (!h.auth || h.auth_len >= sizeof(auth)) {
			auth[0] = '\0';
		} else {
			memcpy(auth, h.auth, h.auth_len);
			auth[h.auth_len] = '\0';
		}
		if (!pdd_http_bearer_tenant(d, auth)) {
			refuse(c, src, dst, R_UNAUTHORIZED, 401, "unauthorized", "Authorization",
			       "expected 'Authorization: Bearer <token>' with a known token");
			return 1;
		}
	}
	limit = route_limit(d, &h, &field);
pass:
	if (h.has_length && h.content_length > limit) {
		refuse(c, src, dst, R_TOO_LARGE, 413, "too_large", field,
		       "this request's body may have %llu bytes, Content-Length says %llu",
		       (unsigned long long)limit, (unsigned long long)h.content_length);
		return 1;
	}
	evbuffer_remove_buffer(src, dst, len);
	c->passed++;
	if (h.chunked) {
		c->state = G_CHUNK_SIZE;
		c->body = 0;
		c->limit = limit;
	} else if (h.has_length && h.content_length > 0) {
		c->state = G_BODY;
		c->left = h.content_length;
		c->big |= h.content_length >= BIG_BODY;
	} else if (h.method == PDD_M_GET && h.upgrade && h.conn_upgrade) {
		/* the ports endpoint may splice this connection to a service: raw from here */
		c->state = G_RAW;
		c->raw_at = c->passed;
	}
	return 1;
}

/* The next line of src ([0, *ret_len) with its LF), copied into line without CR LF. */
static bool take_line(struct evbuffer *src, char *line, size_t size, size_t *ret_len,
		      size_t *ret_text)
{
	struct evbuffer_ptr p = evbuffer_search(src, "\n", 1, NULL);
	size_t n;

	if (p.pos < 0 || (size_t)p.pos >= size)
		return false;
	n = (size_t)p.pos;
	evbuffer_copyout(src, line, n);
	if (n > 0 && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	*ret_len = (size_t)p.pos + 1;
	*ret_text = n;
	return true;
}

/* ---- the filter -------------------------------------------------------------------------- */

static enum bufferevent_filter_result gate_in(struct evbuffer *src, struct evbuffer *dst,
					      ev_ssize_t limit, enum bufferevent_flush_mode mode,
					      void *ctx)
{
	struct gate_conn *c = ctx;
	bool produced = false, more = true;

	(void)limit;
	(void)mode;
	while (more && evbuffer_get_length(src) > 0) {
		size_t have = evbuffer_get_length(src), n, text;
		char line[CHUNK_LINE_MAX + 2];
		uint64_t size;

		switch (c->state) {
		case G_RAW:
			evbuffer_add_buffer(dst, src);
			produced = true;
			break;
		case G_DISCARD:
			evbuffer_drain(src, have);
			break;
		case G_HEAD:
			more = read_head(c, src, dst) > 0;
			produced |= more;
			break;
		case G_BODY:
			n = have < c->left ? have : (size_t)c->left;
			evbuffer_remove_buffer(src, dst, n);
			c->left -= n;
			produced = true;
			if (c->left == 0)
				c->state = G_HEAD;
			break;
		case G_CHUNK_SIZE:
			if (!take_line(src, line, sizeof(line) - 1, &n, &text)) {
				if (have > CHUNK_LINE_MAX)
					refuse_body(c, src, dst, R_MALFORMED, 400, "malformed",
						    "a chunk-size line that does not end");
				more = have > CHUNK_LINE_MAX;
				produced |= more;
				break;
			}
			if (text == 0 || pdd_gate_chunk_size(line, text, &size) < 0) {
				refuse_body(c, src, dst, R_MALFORMED, 400, "malformed",
					    "expected a chunk size (hexadecimal digits)");
				produced = true;
				break;
			}
			if (size > c->limit - c->body) {
				char msg[120];

				snprintf(msg, sizeof(msg),
					 "this request's body may have %llu bytes",
					 (unsigned long long)c->limit);
				refuse_body(c, src, dst, R_TOO_LARGE, 413, "too_large", msg);
				produced = true;
				break;
			}
			evbuffer_remove_buffer(src, dst, n);
			produced = true;
			c->body += size;
			c->big |= c->body >= BIG_BODY;
			c->left = size;
			c->state = size ? G_CHUNK_DATA : G_TRAILER;
			c->trailer = 0;
			break;
		case G_CHUNK_DATA:
			n = have < c->left ? have : (size_t)c->left;
			evbuffer_remove_buffer(src, dst, n);
			c->left -= n;
			produced = true;
			if (c->left == 0)
				c->state = G_CHUNK_END;
			break;
		case G_CHUNK_END: {
			char end[2] = { 0, 0 };

			evbuffer_copyout(src, end, have < 2 ? have : 2);
			if (end[0] == '\n' || (end[0] == '\r' && end[1] == '\n')) {
				evbuffer_remove_buffer(src, dst, end[0] == '\n' ? 1 : 2);
				c->state = G_CHUNK_SIZE;
				produced = true;
			} else if (end[0] == '\r' && have < 2) {
				more = false;
			} else {
				refuse_body(c, src, dst, R_MALFORMED, 400, "malformed",
					    "expected a line end after a chunk's data");
				produced = true;
			}
			break;
		}
		case G_TRAILER:
			if (!take_line(src, line, sizeof(line) - 1, &n, &text) &&
			    have <= CHUNK_LINE_MAX) {
				more = false;
				break;
			}
			c->trailer += n;
			if (!n || c->trailer > TRAILER_MAX) {
				refuse_body(c, src, dst, R_MALFORMED, 400, "malformed",
					    "trailer lines too long");
				produced = true;
				break;
			}
			evbuffer_remove_buffer(src, dst, n);
			produced = true;
			if (text == 0)
				c->state = G_HEAD;
			break;
		}
	}
	update_deadline(c);
	return produced ? BEV_OK : BEV_NEED_MORE;
}

/* ---- the answer ---------------------------------------------------------------------------- */

/*
 * COMPAT(libevent 2.1.12): a filter's writes are the gate's own, straight to the socket. A
 * filter tells its user (evhttp) the answer was written once it moved it to the underlying
 * bufferevent, not onto the wire, and evhttp then frees a connection that asked to be closed
 * (and shuts it down for writing): what was still in the underlying buffer was lost. Here
 * the filter's output shrinks only by what the kernel took, so "written" means sent.
 */
static enum bufferevent_filter_result gate_out(struct evbuffer *src, struct evbuffer *dst,
					       ev_ssize_t limit, enum bufferevent_flush_mode mode,
					       void *ctx)
{
	struct gate_conn *c = ctx;
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	bool moved = false;

	(void)dst;
	(void)limit;
	(void)mode;
	while (evbuffer_get_length(src) > 0) {
		int n = fd >= 0 ? evbuffer_write(src, fd) : -1;

		if (n > 0) {
			moved = true;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* the rest when the socket takes more; an answer nobody reads ends */
			struct timeval tv = { .tv_sec = IO_IDLE_S };

			if (!c->wev)
				c->wev = event_new(bufferevent_get_base(c->bev), fd, EV_WRITE,
						   flush_cb, c);
			if (c->wev && (moved || !event_pending(c->wev, EV_WRITE, NULL)))
				event_add(c->wev, &tv);
			break;
		}
		/* the client is gone: what is left has nobody to go to; evhttp sees the EOF */
		evbuffer_drain(src, evbuffer_get_length(src));
		moved = true;
	}
	return moved ? BEV_OK : BEV_NEED_MORE;
}

/*
 * COMPAT(libevent 2.1.12): evhttp writes an answer and enables EV_WRITE after it
 * (evhttp_write_buffer()); a filter moves its output only when written to while EV_WRITE is
 * on, and enabling does not move it. So each write to it also schedules a flush, which runs
 * once evhttp has enabled writing; and the socket being writable again flushes too.
 */
static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gate_conn *c = arg;

	(void)fd;
	if (!evcon_of(c))
		return; /* evhttp let the connection go */
	if (fd >= 0 && (what & EV_TIMEOUT) && c->state == G_RAW) {
		/* a spliced stream paces itself (api-ports.c): its reader may be slow */
		event_add(c->wev, NULL);
		return;
	}
	if (fd >= 0 && (what & EV_TIMEOUT)) { /* c->wev: the socket took nothing that long */
		c->l->refused[R_IDLE_TIMEOUT]++;
		gate_log(c->l, "closed a connection that read nothing of its answer for %d s",
			 IO_IDLE_S);
		return close_conn(c);
	}
	/*
	 * COMPAT(libevent 2.1.12): once evhttp has writing enabled (a streamed answer, after
	 * its first piece), what it adds is written at once, from inside evbuffer_add(), and
	 * the write callback runs then, before evhttp_send_reply_end() has set the callback
	 * that completes the request (evhttp_send_done): the answer was all sent, the request
	 * never completed, and evhttp never read the connection's next request. This runs
	 * after evhttp returned: with nothing left to write, tell it so now (not on a spliced
	 * connection: it is no longer evhttp's, api-ports.c paces it).
	 */
	if (c->state != G_RAW && (bufferevent_get_enabled(c->bev) & EV_WRITE) &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		bufferevent_trigger(c->bev, EV_WRITE, 0);
		return;
	}
	bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
}

static void out_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct gate_conn *c = arg;

	(void)buf;
	if (info->n_added > 0)
		event_active(c->kick, EV_TIMEOUT, 0); /* once, however often it is called */
}

/* ---- connections ------------------------------------------------------------------------- */

static void listener_update(struct gate_listener *l)
{
	bool want = l->n < l->d->http->http_limits.max_conns;

	if (!l->lev)
		return;
	if (!want && !l->full) {
		l->full = true;
		evconnlistener_disable(l->lev);
		gate_log(l,
			 "%u connections open, the most allowed (--max-connections): accepting "
			 "pauses",
			 l->n);
	} else if (want && l->full) {
		l->full = false;
		if (!l->backing_off)
			evconnlistener_enable(l->lev);
	}
}

static void gate_conn_free(void *ctx)
{
	struct gate_conn *c = ctx;
	struct gate_listener *l = c->l;

	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->n--;
	if (c->big)
		trim_later(l->d);
	if (c->deadline)
		event_free(c->deadline);
	if (c->admit)
		event_free(c->admit);
	if (c->kick)
		event_free(c->kick);
	if (c->wev)
		event_free(c->wev);
	free(c);
	listener_update(l); /* nothing once the listener is gone (shutdown) */
}

static bool same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

/* A v4-mapped v6 address is its v4 address: one peer, whichever socket it came by. */
static void normalize_peer(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		struct sockaddr_in s4 = { .sin_family = AF_INET };

		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		memset(ss, 0, sizeof(*ss));
		memcpy(ss, &s4, sizeof(s4));
	}
}

/* After the accept: the peer's address, and the per-peer cap (TCP). */
static void admit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gate_conn *c = arg;
	struct gate_listener *l = c->l;
	socklen_t len = sizeof(c->peer);
	evutil_socket_t s = bufferevent_getfd(c->bev);
	unsigned same = 0;
	char addr[INET6_ADDRSTRLEN] = "?";

	(void)fd;
	(void)what;
	if (!l->tcp || !evcon_of(c) || s < 0 ||
	    getpeername(s, (struct sockaddr *)&c->peer, &len) < 0)
		return;
	normalize_peer(&c->peer);
	c->tcp_peer = c->peer.ss_family == AF_INET || c->peer.ss_family == AF_INET6;
	if (!c->tcp_peer)
		return;
	for (struct gate_conn *o = l->conns; o; o = o->next)
		same += o->tcp_peer && same_peer(&o->peer, &c->peer);
	if (same <= l->d->http->http_limits.max_per_peer)
		return;
	l->refused[R_PER_PEER]++;
	if (c->peer.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&c->peer)->sin_addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&c->peer)->sin6_addr, addr,
			  sizeof(addr));
	gate_log(l,
		 "closed a connection from %s, which has %u open, the most allowed per peer "
		 "(--max-connections-per-peer)",
		 addr, same - 1);
	close_conn(c);
}

/* evhttp_set_bevcb(): every accepted connection's bufferevent is a gate. */
static struct bufferevent *gate_bev(struct event_base *base, void *arg)
{
	struct gate_listener *l = arg;
	struct gate_conn *c = calloc(1, sizeof(*c));
	struct bufferevent *under = NULL, *bev = NULL;

	if (c) {
		c->deadline = evtimer_new(base, deadline_cb, c);
		c->admit = event_new(base, -1, 0, admit_cb, c);
		c->kick = event_new(base, -1, 0, flush_cb, c);
		under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	}
	if (under && c->deadline && c->admit && c->kick)
		bev = bufferevent_filter_new(under, gate_in, gate_out, BEV_OPT_CLOSE_ON_FREE,
					     gate_conn_free, c);
	if (!bev) {
		/* evhttp makes a bufferevent of its own: one connection goes ungated */
		gate_log(l, "out of memory: a connection is served without the gate");
		if (under)
			bufferevent_free(under);
		if (c && c->deadline)
			event_free(c->deadline);
		if (c && c->admit)
			event_free(c->admit);
		if (c && c->kick)
			event_free(c->kick);
		free(c);
		return NULL;
	}
	evbuffer_add_cb(bufferevent_get_output(bev), out_added, c);
	c->l = l;
	c->bev = bev;
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->n++;
	/* a successful accept: a back-off after EMFILE starts small again */
	l->backoff_ms = 0;
	listener_update(l);
	update_deadline(c); /* the first head has header_timeout_s from now */
	event_active(c->admit, 0, 0);
	return bev;
}

/* ---- accept errors ----------------------------------------------------------------------- */

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gate_listener *l = arg;

	(void)fd;
	(void)what;
	l->backing_off = false;
	if (!l->full)
		evconnlistener_enable(l->lev);
}

/*
 * accept() failed for something else than "try again": out of file descriptors, most likely.
 * The listening socket stays readable, and libevent would call accept() again at once, for
 * ever (4.86 M warnings in 20 s): accepting pauses instead, 50 ms doubling to 2 s.
 */
static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct gate_listener *l = NULL;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv;

	(void)arg; /* libevent hands the evhttp here, not ours: find it by its listener */
	for (size_t i = 0; i < n_registry && !l; i++)
		if (registry[i]->lev == lev)
			l = registry[i];
	if (!l)
		return;
	l->refused[R_ACCEPT_ERROR]++;
	l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (l->backoff_ms > BACKOFF_MAX_MS)
		l->backoff_ms = BACKOFF_MAX_MS;
	gate_log(l, "accept: %s: accepting pauses for %u ms", strerror(err), l->backoff_ms);
	evconnlistener_disable(lev);
	l->backing_off = true;
	tv.tv_sec = l->backoff_ms / 1000;
	tv.tv_usec = (l->backoff_ms % 1000) * 1000;
	evtimer_add(l->resume, &tv);
}

/* ---- set-up, requests, metrics ----------------------------------------------------------- */

static int gate_add(struct daemon *d, struct evhttp *http, bool tcp,
		    const struct e2b_gate_policy *policy)
{
	struct gate_listener *l;

	if (n_registry == sizeof(registry) / sizeof(registry[0]))
		return -ENOSPC;
	if (!d->http->gate) {
		d->http->gate = calloc(1, sizeof(*d->http->gate));
		if (!d->http->gate || !(d->http->gate->trim = evtimer_new(d->base, trim_cb, d)))
			return -ENOMEM;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->d = d;
	l->http = http;
	l->tcp = tcp;
	l->policy = policy;
	l->name = policy ? policy->name : tcp ? "tcp" : "unix";
	l->resume = evtimer_new(d->base, resume_cb, l);
	if (!l->resume) {
		free(l);
		return -ENOMEM;
	}
	registry[n_registry++] = l;
	evhttp_set_bevcb(http, gate_bev, l);
	/* the gate bounds heads and bodies first; evhttp's own bounds stay as a second wall */
	evhttp_set_max_headers_size(http, 2 * PDD_MAX_HEADERS);
	return 0;
}

int pdd_http_gate_add(struct daemon *d, struct evhttp *http, bool tcp)
{
	return gate_add(d, http, tcp, NULL);
}

int pdd_http_gate_add_policy(struct daemon *d, struct evhttp *http,
			     const struct e2b_gate_policy *policy)
{
	return gate_add(d, http, true, policy);
}

void pdd_http_gate_listening(struct daemon *d, struct evhttp *http, struct evconnlistener *lev)
{
	(void)d;
	for (size_t i = 0; i < n_registry; i++)
		if (registry[i]->http == http) {
			registry[i]->lev = lev;
			if (lev)
				evconnlistener_set_error_cb(lev, accept_error_cb);
		}
}

static struct gate_conn *conn_of(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	for (size_t i = 0; bev && i < n_registry; i++)
		for (struct gate_conn *c = registry[i]->conns; c; c = c->next)
			if (c->bev == bev)
				return c;
	return NULL;
}

static void request_done(struct evhttp_request *req, void *arg)
{
	struct gate_conn *c = arg;

	(void)req;
	c->completed++;
	if (c->big && c->completed >= c->passed) {
		c->big = false;
		trim_later(c->l->d);
	}
	update_deadline(c);
}

bool pdd_http_gate_request(struct daemon *d, struct evhttp_request *req)
{
	struct gate_conn *c = conn_of(req);
	uint64_t n;

	if (!c)
		return false;
	n = ++c->dispatched;
	evhttp_request_set_on_complete_cb(req, request_done, c);
	if (n == c->raw_at)
		/* an upgrade that gets no 101 is answered, and the connection ends with it */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	if (n != c->refused_at)
		return false;
	struct request r = { .d = d, .req = req };

	evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	if (c->l->policy) {
		c->l->policy->reply(c->l->policy->arg, req, c->shape, c->refusal.status,
				    c->refusal.msg);
		return true;
	}
	if (c->refusal.status == 401)
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
				  "Bearer");
	pdd_reply_error(&r, c->refusal.status, c->refusal.code,
			c->refusal.field[0] ? c->refusal.field : NULL, "%s", c->refusal.msg);
	return true;
}

void pdd_http_gate_metrics(struct daemon *d, struct evbuffer *out)
{
	(void)d;
	evbuffer_add_printf(out, "# TYPE paddock_http_connections_open gauge\n");
	for (size_t i = 0; i < n_registry; i++)
		evbuffer_add_printf(out, "paddock_http_connections_open{listener=\"%s\"} %u\n",
				    registry[i]->name, registry[i]->n);
	evbuffer_add_printf(out, "# TYPE paddock_http_refused_total counter\n");
	for (size_t i = 0; i < n_registry; i++)
		for (int k = 0; k < _R_MAX; k++)
			evbuffer_add_printf(
				out,
				"paddock_http_refused_total{listener=\"%s\",reason=\"%s\"}"
				" %llu\n",
				registry[i]->name, reason_names[k],
				(unsigned long long)registry[i]->refused[k]);
}

void pdd_http_gate_stop(struct daemon *d)
{
	for (size_t i = 0; i < n_registry; i++) {
		/* evhttp_free() freed its listening socket; its connections may still finalize */
		registry[i]->lev = NULL;
		if (registry[i]->resume)
			event_free(registry[i]->resume);
		registry[i]->resume = NULL;
	}
	if (d->http->gate) {
		if (d->http->gate->trim)
			event_free(d->http->gate->trim);
		free(d->http->gate);
		d->http->gate = NULL;
	}
}

void pdd_http_gate_free(struct daemon *d)
{
	(void)d;
	for (size_t i = 0; i < n_registry; i++)
		free(registry[i]);
	n_registry = 0;
}

bool pdd_http_gate_owns(struct evhttp_connection *evcon)
{
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	for (size_t i = 0; bev && i < n_registry; i++)
		for (struct gate_conn *c = registry[i]->conns; c; c = c->next)
			if (c->bev == bev)
				return true;
	return false;
}
