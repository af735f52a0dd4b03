/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate in front of paddockd's HTTP server (http-gate.c): what evhttp 2.1 does not do
 * before it reads a request whole. For every connection it reads the request's head itself
 * (http-head.c, bounded), authenticates it and checks the body against the route's limit
 * before evhttp sees a byte of the body, frames bodies (Content-Length, chunked) so that it
 * finds the next head, answers what it refuses as the API's JSON, and closes connections
 * whose head does not come in time. Per listener: a cap on connections, and on TCP per peer
 * address; accept() backs off when the process is out of file descriptors.
 *
 * Trust: every byte here comes from a client that has not been authenticated yet.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct evconnlistener;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;
struct evbuffer;

/* ---- the head of a request (http-head.c: pure, fuzzed by tests/fuzz/fuzz-http-head.c) --- */

enum pdd_http_method {
	PDD_M_GET = 1,
	PDD_M_POST,
	PDD_M_PUT,
	PDD_M_DELETE,
	PDD_M_HEAD,
	PDD_M_PATCH,
	PDD_M_OPTIONS,
};

/* A header's value, into the parsed buffer (not terminated), or p NULL when absent. */
struct pdd_gate_value {
	const char *p;
	size_t len;
};

struct pdd_gate_head {
	enum pdd_http_method method;
	const char *target; /* the request target, into the parsed buffer (not terminated) */
	size_t target_len;
	int minor;	  /* HTTP/1.minor */
	const char *auth; /* Authorization's value, into the buffer, or NULL */
	size_t auth_len;
	/*
	 * What the E2B listener authenticates and routes by (e2b-gate.c). Each at most once:
	 * evhttp would read the first of two, a policy might have checked the other.
	 */
	struct pdd_gate_value host, api_key, access_token, sandbox_id, sandbox_port;
	uint64_t content_length;
	bool has_length, chunked, expect_continue, upgrade, conn_upgrade, conn_close;
	/* when the head is refused: what to answer */
	int status;
	const char *code, *field, *msg;
};

/*
 * Parses a complete head: the request line, header lines, the empty line (each line ends
 * with LF or CRLF). Stricter than evhttp wherever the two could read a request differently:
 * no control bytes, no folded lines, no duplicate or malformed Content-Length, no
 * Transfer-Encoding but chunked and not with a Content-Length, only the methods paddockd
 * serves. 0, or -1 with h->status, code, field and msg set.
 */
int pdd_gate_head_parse(const char *buf, size_t len, struct pdd_gate_head *h);

/*
 * A chunk-size line of a chunked body, without its line end: hex digits, then only spaces
 * (what evhttp reads the same way). 0 and the size, or -1.
 */
int pdd_gate_chunk_size(const char *line, size_t len, uint64_t *ret_size);

/* ---- the gate (http-gate.c) --------------------------------------------------------------- */

/* struct pdd_http_limits (daemon.h): kept in struct pdd_http, paddockd's beside the core. */
/*
 * Puts the gate in front of `http` (before it accepts anything): `tcp` listeners
 * authenticate by bearer token at the head. Returns 0 or -ENOMEM.
 */
int pdd_http_gate_add(struct daemon *d, struct evhttp *http, bool tcp);

/* What a listener's own policy says of a head. */
struct pdd_gate_verdict {
	uint64_t limit; /* passed: the bytes its body may have */
	int shape;	/* passed or refused: how the policy answers this route's errors */
	int status;	/* refused: 401, 413, ... and why */
	char msg[200];
};

/*
 * A TCP listener with rules of its own (the E2B listener, e2b.c): at each head `check`
 * decides, from the head alone, whether the request may go on and how large its body may be;
 * `reply` answers a refusal (the gate's own too: a malformed head, a body over the limit,
 * shape 0 then unless the head was passed) in the shape the listener's clients parse.
 */
struct e2b_gate_policy {
	const char *name; /* the listener in logs and metrics */
	/* SECURITY: 0 to pass (v->limit, v->shape), -1 to refuse (v->status, v->msg) */
	int (*check)(void *arg, const struct pdd_gate_head *h, struct pdd_gate_verdict *v);
	void (*reply)(void *arg, struct evhttp_request *req, int shape, int status,
		      const char *msg);
	void *arg;
};

/* As pdd_http_gate_add() for a TCP listener, under `policy` (borrowed: it outlives `http`). */
int pdd_http_gate_add_policy(struct daemon *d, struct evhttp *http,
			     const struct e2b_gate_policy *policy);
/*
 * The listening socket evhttp made for it (accept back-off hooks into its listener); NULL
 * before evhttp_free() of a listener that goes before the others (it frees the socket first).
 */
void pdd_http_gate_listening(struct daemon *d, struct evhttp *http, struct evconnlistener *lev);
/*
 * Called first for every request evhttp dispatches: true when the gate refused it at its head
 * (the refusal is answered here, as the API's JSON, and the connection closes after it).
 * Also keeps count of the connection's requests for its header deadline.
 */
bool pdd_http_gate_request(struct daemon *d, struct evhttp_request *req);
/* Whether the connection is one of the gate's (they have no evhttp timeouts). */
bool pdd_http_gate_owns(struct evhttp_connection *evcon);
/* /metrics: connections open and refused, per listener. */
void pdd_http_gate_metrics(struct daemon *d, struct evbuffer *out);
/* After evhttp_free(): the gate lets go of the listening sockets and its timers. */
void pdd_http_gate_stop(struct daemon *d);
/* After event_base_free() (which finishes freeing the connections): frees the listeners. */
void pdd_http_gate_free(struct daemon *d);
