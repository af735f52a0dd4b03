/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1/sandboxes/{id}/ports/{port}/... : HTTP to a service the agent started on
 * 127.0.0.1:{port} inside the sandbox. The connection is a socket init made inside the
 * sandbox's network namespace (paddock_sandbox_socket()), connected from here: the sandbox
 * gets no route out, and nothing on the host is reachable through it.
 *
 * The request is forwarded as HTTP/1.0 with "Connection: close", so the service answers
 * without chunked encoding and ends its answer by closing. The answer streams: once its head
 * is in (within PORT_TIMEOUT_S), the body goes to the client as it comes, chunked, for as
 * long as it takes (an NDJSON stream of the code interpreter, server-sent events); a client
 * that reads slower than the service writes pauses the reading (STREAM_BUFFER_MAX). Evhttp's
 * client cannot be given a socket that is already connected (it resets the connection's fd
 * before dialling), hence this small forwarder.
 *
 * /v1/sandboxes/{id}/code/... is the same forwarder to the sandbox's code interpreter
 * (paddock_code_socket_async(): started on first use), docs/code.md.
 *
 * A GET with "Connection: Upgrade" (WebSocket, or any raw protocol) is forwarded as HTTP/1.1
 * with its Upgrade header; when the service answers 101, paddockd takes the client's
 * connection over from evhttp and splices the two sockets, bytes both ways, until either
 * side closes (bounded buffers, backpressure).
 *
 * Trust: the answer comes from inside the sandbox: its head is parsed with bounds, only
 * well-formed headers are passed on, hop-by-hop ones are dropped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

#define PORT_HEAD_MAX	  (64u << 10)
#define PORT_TIMEOUT_S	  30
#define CODE_TIMEOUT_S	  120 /* a context's kernel starts before its answer */
#define STREAM_BUFFER_MAX (1u << 20)

#define SPLICE_BUFFER_MAX (1u << 20)

struct forward {
	struct daemon *d;
	struct bufferevent *bev;
	struct watcher *w;
	struct watcher *list;
	bool upgrade;	  /* the client asked to switch protocols */
	bool asking;	  /* waiting for init's socket */
	bool client_gone; /* ... and the client left meanwhile */
	bool code;	  /* to the code interpreter (started on first use) */
	bool streaming;	  /* the head went to the client; the body follows as it comes */
	long port;
	char *request; /* the head to send (built while the request was at hand) */
	struct evbuffer *body;
};

static void forward_free(struct forward *f);

/* An upgraded connection: the client's (taken from evhttp) and the sandbox's, spliced. */
struct splice {
	struct evhttp_connection *evcon; /* owns the client's bufferevent */
	struct bufferevent *client, *sandbox;
};

static void splice_free(struct splice *s)
{
	bufferevent_free(s->sandbox);
	evhttp_connection_free(s->evcon); /* frees the client's bufferevent and the request */
	free(s);
}

static struct bufferevent *peer(struct splice *s, struct bufferevent *bev)
{
	return bev == s->client ? s->sandbox : s->client;
}

static void splice_read(struct bufferevent *bev, void *arg)
{
	struct splice *s = arg;
	struct bufferevent *to = peer(s, bev);

	evbuffer_add_buffer(bufferevent_get_output(to), bufferevent_get_input(bev));
	/* backpressure: stop reading until the other side has taken most of it */
	if (evbuffer_get_length(bufferevent_get_output(to)) > SPLICE_BUFFER_MAX)
		bufferevent_disable(bev, EV_READ);
}

static void splice_write(struct bufferevent *bev, void *arg)
{
	struct splice *s = arg;

	/* called when bev's output drained below its low watermark (0: empty) */
	bufferevent_enable(peer(s, bev), EV_READ);
}

static void splice_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		splice_free(arg);
}

/* The service switched protocols: hand the client its 101 and splice the sockets. */
static void start_splice(struct forward *f, struct evbuffer *head)
{
	struct evhttp_connection *evcon =
		f->w->req ? evhttp_request_get_connection(f->w->req) : NULL;
	struct bufferevent *client = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct splice *s = client ? calloc(1, sizeof(*s)) : NULL;

	if (!s) {
		forward_free(f);
		return;
	}
	pdd_watcher_detach(f->w);
	s->evcon = evcon;
	s->client = client;
	s->sandbox = f->bev;
	f->bev = NULL;
	forward_free(f);
	bufferevent_set_timeouts(s->client, NULL, NULL);
	bufferevent_set_timeouts(s->sandbox, NULL, NULL);
	bufferevent_setcb(s->client, splice_read, splice_write, splice_event, s);
	bufferevent_setcb(s->sandbox, splice_read, splice_write, splice_event, s);
	evbuffer_add_buffer(bufferevent_get_output(s->client), head);
	/* what either side sent already: the rest of the answer, early frames of the client */
	evbuffer_add_buffer(bufferevent_get_output(s->client), bufferevent_get_input(s->sandbox));
	evbuffer_add_buffer(bufferevent_get_output(s->sandbox), bufferevent_get_input(s->client));
	bufferevent_enable(s->client, EV_READ | EV_WRITE);
	bufferevent_enable(s->sandbox, EV_READ | EV_WRITE);
}

static void forward_free(struct forward *f)
{
	free(f->request);
	if (f->body)
		evbuffer_free(f->body);
	if (f->bev)
		bufferevent_free(f->bev);
	if (f->w)
		pdd_watcher_free(f->w, &f->list);
	free(f);
}

static bool hop_by_hop(const char *name)
{
	static const char *const hop[] = { "connection", "keep-alive",	     "transfer-encoding",
					   "upgrade",	 "proxy-connection", "te",
					   "trailer",	 "content-length",   NULL };

	for (const char *const *h = hop; *h; h++)
		if (strcasecmp(*h, name) == 0)
			return true;
	return false;
}

static void fail(struct forward *f, int status, const char *msg)
{
	pdd_watcher_detach(f->w);
	if (f->w->req) {
		pdd_http_reply_error(f->d, f->w->req, status,
				     status == 504 ? "timeout" : "bad_gateway", "port", "%s", msg);
		f->w->req = NULL;
	}
}

static void chunk_sent(struct evhttp_connection *evcon, void *arg)
{
	struct forward *f = arg;

	(void)evcon;
	/* the client took what was queued: read from the sandbox again */
	if (f->bev)
		bufferevent_enable(f->bev, EV_READ);
}

/* What the service sent of its body so far goes to the client. */
static void stream_body(struct forward *f)
{
	struct evbuffer *in = bufferevent_get_input(f->bev);
	struct evhttp_connection *evcon;

	if (!f->w->req || evbuffer_get_length(in) == 0)
		return;
	evhttp_send_reply_chunk_with_cb(f->w->req, in, chunk_sent, f);
	evcon = evhttp_request_get_connection(f->w->req);
	/* backpressure: a client that reads slowly pauses the service */
	if (evcon && evbuffer_get_length(bufferevent_get_output(
			     evhttp_connection_get_bufferevent(evcon))) > STREAM_BUFFER_MAX)
		bufferevent_disable(f->bev, EV_READ);
}

/* Parses the head of the service's answer and starts the reply; false: not all in yet. */
static bool relay_head(struct forward *f)
{
	struct evbuffer *in = bufferevent_get_input(f->bev);
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	struct evkeyvalq *out_h;
	char *head, *line, *save = NULL, reason[128] = "";
	int status = 0, at = 0;

	if (end.pos < 0) {
		if (evbuffer_get_length(in) > PORT_HEAD_MAX)
			fail(f, 502, "the answer from the sandbox has no end of its head");
		return false;
	}
	if ((size_t)end.pos > PORT_HEAD_MAX) {
		fail(f, 502, "the service in the sandbox sent no valid HTTP answer");
		return false;
	}
	head = malloc((size_t)end.pos + 1);
	if (!head) {
		fail(f, 500, "out of memory");
		return false;
	}
	evbuffer_remove(in, head, (size_t)end.pos);
	head[end.pos] = '\0';
	evbuffer_drain(in, 4);
	line = strtok_r(head, "\r\n", &save);
	if (!line || sscanf(line, "HTTP/1.%*1[01] %3d%n", &status, &at) != 1 || status < 100 ||
	    status > 599) {
		free(head);
		fail(f, 502, "the service in the sandbox sent no valid status line");
		return false;
	}
	/* its reason phrase, printable ASCII only (the code interpreter says why there) */
	for (size_t i = 0, j = 0; line[at] == ' ' && line[at + 1 + i] && j < sizeof(reason) - 1;
	     i++)
		if (line[at + 1 + i] >= 0x20 && line[at + 1 + i] < 0x7f)
			reason[j++] = line[at + 1 + i];
	if (!f->w->req) {
		free(head);
		return false;
	}
	out_h = evhttp_request_get_output_headers(f->w->req);
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		char *colon = strchr(line, ':');
		bool ok = colon && colon != line;

		for (char *c = line; ok && c < colon; c++)
			ok = *c > 0x20 && *c < 0x7f;
		if (!ok)
			continue; /* SECURITY: malformed header lines from inside are dropped */
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!hop_by_hop(line))
			evhttp_add_header(out_h, line, v);
	}
	free(head);
	f->d->http->http_by_class[status / 100]++;
	/* from here the client's connection is the clock: no timeout while the body comes */
	bufferevent_set_timeouts(f->bev, NULL, NULL);
	f->streaming = true;
	evhttp_send_reply_start(f->w->req, status, reason[0] ? reason : NULL);
	return true;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct forward *f = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (f->upgrade) {
		struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		char line[16] = "";
		struct evbuffer *head;

		if (end.pos < 0) {
			if (evbuffer_get_length(in) > PORT_HEAD_MAX) {
				fail(f, 502, "the answer from the sandbox has no end of its head");
				forward_free(f);
			}
			return;
		}
		evbuffer_copyout(in, line, sizeof(line) - 1);
		if (strncmp(line, "HTTP/1.1 101", 12) != 0) {
			fail(f, 502, "the service in the sandbox did not switch protocols");
			forward_free(f);
			return;
		}
		head = evbuffer_new();
		if (!head || evbuffer_remove_buffer(in, head, (size_t)end.pos + 4) < 0) {
			if (head)
				evbuffer_free(head);
			fail(f, 500, "out of memory");
			forward_free(f);
			return;
		}
		start_splice(f, head);
		evbuffer_free(head);
		return;
	}
	if (!f->streaming && !relay_head(f)) {
		if (!f->w->req)
			forward_free(f); /* failed: the client has its answer */
		return;
	}
	stream_body(f);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct forward *f = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if (f->streaming) {
		/* the service closed: the answer is whole (an error mid-way cuts it short) */
		if ((what & BEV_EVENT_EOF) && f->w->req) {
			stream_body(f);
			pdd_watcher_detach(f->w);
			evhttp_send_reply_end(f->w->req);
			f->w->req = NULL;
		}
		return forward_free(f);
	}
	if (what & BEV_EVENT_TIMEOUT)
		fail(f, 504, "the service in the sandbox did not answer in time");
	else if (what & BEV_EVENT_EOF) {
		if (relay_head(f)) {
			/* head and body came together with the close */
			stream_body(f);
			pdd_watcher_detach(f->w);
			evhttp_send_reply_end(f->w->req);
			f->w->req = NULL;
		} else if (f->w->req)
			fail(f, 502, "the service in the sandbox sent no whole HTTP answer");
	} else
		fail(f, 502, "nothing answers on that port in the sandbox");
	forward_free(f);
}

static void client_gone(struct watcher *w)
{
	struct forward *f = w->owner;

	/* evhttp is closing the client's connection; ours to the sandbox goes with it */
	if (f->asking) {
		f->client_gone = true; /* init's answer frees it */
		pdd_watcher_free(f->w, &f->list);
		f->w = NULL;
		return;
	}
	forward_free(f);
}

/* init made the socket in the sandbox's netns: connect it and send the request */
static void socket_cb(paddock_sandbox *sb, int fd, const paddock_error *err, void *userdata)
{
	struct forward *f = userdata;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)f->port) };
	struct timeval tv = { .tv_sec = f->code ? CODE_TIMEOUT_S : PORT_TIMEOUT_S };
	struct evbuffer *out;

	(void)sb;
	f->asking = false;
	if (f->client_gone) {
		if (fd >= 0)
			close(fd);
		return forward_free(f);
	}
	if (fd < 0) {
		pdd_watcher_detach(f->w);
		if (f->w->req && f->code) {
			int status =
				err->code == ENOENT || err->code == EIO || err->code == ETIMEDOUT
					? 503
					: 409;

			pdd_http_reply_error(f->d, f->w->req, status, "unavailable", "code", "%s",
					     err->msg);
			f->w->req = NULL;
		} else if (f->w->req) {
			pdd_http_reply_paddock_error(f->d, f->w->req, err);
			f->w->req = NULL;
		}
		return forward_free(f);
	}
	evutil_make_socket_nonblocking(fd);
	f->bev = bufferevent_socket_new(f->d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!f->bev) {
		close(fd);
		fail(f, 500, "out of memory");
		return forward_free(f);
	}
	bufferevent_setcb(f->bev, read_cb, NULL, event_cb, f);
	bufferevent_set_timeouts(f->bev, &tv, &tv);
	if (bufferevent_socket_connect(f->bev, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fail(f, 502, "nothing answers on that port in the sandbox");
		return forward_free(f);
	}
	out = bufferevent_get_output(f->bev);
	evbuffer_add(out, f->request, strlen(f->request));
	evbuffer_add_buffer(out, f->body);
	bufferevent_enable(f->bev, EV_READ | EV_WRITE);
}

void pdd_api_ports(struct request *r, struct box *b)
{
	const char *uri = evhttp_request_get_uri(r->req), *rest, *q;
	char *end;
	long port;

	if (r->n_seg < 5)
		return pdd_reply_error(r, 404, "not_found", "port", "expected /ports/{port}/...");
	port = strtol(r->seg[4], &end, 10);
	if (*end || port < 1 || port > 65535)
		return pdd_reply_error(r, 400, "invalid", "port",
				       "expected a port from 1 to 65535");
	/* the raw (still encoded) path after /ports/{port} */
	rest = strstr(uri, "/ports/");
	rest = rest ? strchr(rest + 7, '/') : NULL;
	q = strchr(uri, '?');
	if (!rest || (q && rest > q))
		rest = q ? q : "";
	pdd_port_forward(r->req, b, port, rest);
}

static void forward(struct evhttp_request *req, struct box *b, long port, const char *rest,
		    bool code);

void pdd_port_forward(struct evhttp_request *req, struct box *b, long port, const char *rest)
{
	forward(req, b, port, rest, false);
}

void pdd_code_forward(struct evhttp_request *req, struct box *b, const char *rest)
{
	forward(req, b, PADDOCK_CODE_PORT, rest, true);
}

/* /v1/sandboxes/{id}/code/...: the code interpreter's own protocol (docs/code.md) */
void pdd_api_code(struct request *r, struct box *b)
{
	const char *uri = evhttp_request_get_uri(r->req), *rest;

	rest = strstr(uri, "/code");
	rest = rest ? rest + 5 : "";
	if (rest[0] != '/' && rest[0] != '?')
		return pdd_reply_error(r, 404, "not_found", "path",
				       "expected /code/execute or /code/contexts[/{id}[/restart]]");
	pdd_code_forward(r->req, b, rest);
}

/* The head forwarded for a request (into out): HTTP/1.0 and close, or an upgrade's 1.1. */
static void forward_head(struct forward *f, struct evhttp_request *req, const char *method,
			 const char *rest, struct evbuffer *out)
{
	struct evkeyvalq *in_h = evhttp_request_get_input_headers(req);
	const char *up = evhttp_find_header(in_h, "Upgrade");
	const char *conn = evhttp_find_header(in_h, "Connection");

	f->upgrade = evhttp_request_get_command(req) == EVHTTP_REQ_GET && up && conn &&
		     strcasestr(conn, "upgrade");
	if (f->upgrade)
		evbuffer_add_printf(out,
				    "GET %s%s HTTP/1.1\r\nHost: 127.0.0.1:%ld\r\n"
				    "Connection: Upgrade\r\nUpgrade: %s\r\n",
				    rest[0] == '?' ? "/" : "", rest[0] ? rest : "/", f->port, up);
	else
		evbuffer_add_printf(out,
				    "%s %s%s HTTP/1.0\r\nHost: 127.0.0.1:%ld\r\n"
				    "Connection: close\r\n",
				    method, rest[0] == '?' ? "/" : "", rest[0] ? rest : "/",
				    f->port);
	for (struct evkeyval *h = in_h->tqh_first; h; h = h->next.tqe_next)
		/* SECURITY: credentials for paddockd (and its E2B front end) stay here */
		if (!hop_by_hop(h->key) && strcasecmp(h->key, "Host") != 0 &&
		    strcasecmp(h->key, "Authorization") != 0 &&
		    strcasecmp(h->key, "X-Access-Token") != 0 &&
		    strcasecmp(h->key, "X-API-Key") != 0)
			evbuffer_add_printf(out, "%s: %s\r\n", h->key, h->value);
	evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n",
			    evbuffer_get_length(evhttp_request_get_input_buffer(req)));
}

static const char *method_name(int m)
{
	switch (m) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	case EVHTTP_REQ_HEAD:
		return "HEAD";
	case EVHTTP_REQ_PATCH:
		return "PATCH";
	case EVHTTP_REQ_OPTIONS:
		return "OPTIONS";
	default:
		return NULL;
	}
}

static void forward(struct evhttp_request *req, struct box *b, long port, const char *rest,
		    bool code)
{
	const char *method = method_name((int)evhttp_request_get_command(req));
	struct daemon *d = b->d;
	paddock_error err = { 0 };
	struct evbuffer *out;
	struct forward *f;

	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pdd_http_reply_error(d, req, 409, "conflict", "id",
					    "the sandbox is not running");
	/* a new connection to a paused sandbox is refused, not held until a resume */
	if (svc_box_check_not_paused(b, &err) < 0)
		return pdd_http_reply_paddock_error(d, req, &err);
	if (!method)
		return pdd_http_reply_error(d, req, 405, "method_not_allowed", NULL,
					    "method not forwarded");
	f = calloc(1, sizeof(*f));
	out = evbuffer_new();
	if (!f || !out) {
		free(f);
		if (out)
			evbuffer_free(out);
		return pdd_http_reply_error(d, req, 500, "internal", NULL, "out of memory");
	}
	f->d = d;
	f->port = port;
	f->code = code;
	f->body = evbuffer_new();
	f->w = pdd_watcher_open(d, req, W_OUTPUT, f, &f->list);
	if (!f->body || !f->w) {
		evbuffer_free(out);
		forward_free(f);
		return pdd_http_reply_error(d, req, 500, "internal", NULL, "out of memory");
	}
	f->w->on_gone = client_gone;
	forward_head(f, req, method, rest, out);
	evbuffer_add_buffer(f->body, evhttp_request_get_input_buffer(req));
	f->request = calloc(1, evbuffer_get_length(out) + 1);
	if (f->request)
		evbuffer_remove(out, f->request, evbuffer_get_length(out));
	evbuffer_free(out);
	/* the socket comes from init, asynchronously: a busy sandbox delays only this request */
	f->asking = true;
	if (!f->request || (code ? paddock_code_socket_async(b->sb, socket_cb, f, &err)
				 : paddock_sandbox_socket_async(b->sb, AF_INET, SOCK_STREAM,
								socket_cb, f, &err)) < 0) {
		f->asking = false;
		pdd_watcher_detach(f->w);
		if (f->request)
			pdd_http_reply_paddock_error(d, req, &err);
		else
			pdd_http_reply_error(d, req, 500, "internal", NULL, "out of memory");
		f->w->req = NULL;
		forward_free(f);
	}
}
