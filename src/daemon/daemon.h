/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd: sandboxes as a service, the HTTP/JSON adapter on the service core (service.h, which
 * owns the sandboxes, their records in SQLite, TTLs, the pool, events). One libevent loop
 * serves the HTTP API (evhttp on a unix socket, optionally TCP with bearer tokens), every
 * sandbox's control socket and timers (libpaddock), command output, and the core's reaper.
 * What is here is HTTP's: requests, watchers bound to them, replies, the routes, the gate.
 *
 * Trust: API clients are untrusted apart from the tenant their token names; everything a
 * sandbox produces (output, file names, exit reports) is hostile and bounded.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "http-gate.h"
#include "paddock/paddock.h"
#include "paddock/store.h"
#include "service.h"

struct event;
struct event_base;
struct evbuffer;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;

#define PDD_MAX_BODY	      (1u << 20)  /* JSON request bodies */
#define PDD_MAX_HEADERS	      (64u << 10) /* the request line and headers */
#define PDD_STDIN_WRITE_MAX   65536	  /* a body of POST .../stdin */
#define PDD_MAX_CONNECTIONS   1024	  /* per listener (--max-connections) */
#define PDD_MAX_PER_PEER      128	  /* per TCP peer address (--max-connections-per-peer) */
#define PDD_HEADER_TIMEOUT_S  20	  /* a head must be whole this long after the wait began */
#define PDD_STREAM_BEHIND_MAX (1u << 20)  /* unsent bytes an events follower may have */

struct daemon;
struct box;
struct proc;

/* A client following a stream (exec stream, process output, events), or waiting. */
struct watcher {
	struct evhttp_request *req;
	struct evhttp_connection *evcon;
	struct watcher *next;
	struct event *timer; /* wait: the deadline */
	struct event *hup;   /* the client hung up while we had nothing to send */
	int kind;	     /* enum watcher_kind */
	bool streaming;	     /* the 200 and its headers went out: lines follow */
	void *owner;	     /* struct proc * or struct box * */
	/* the client went away (evhttp frees its request): unlink and free the watcher */
	void (*on_gone)(struct watcher *w);
	/* W_HOOK: another front end (src/e2b) formats the process's events itself */
	const struct watcher_ops *ops;
	void *ctx;
	/* GET /v1/events: whose events it may see, and the one sandbox asked for ("": all) */
	const char *tenant;
	char sandbox[32];
	bool behind; /* an events follower too far behind: closing, its lines are dropped */
	/*
	 * GET …/events: the stored events go out a page at a time, the next once the client
	 * took the last (api-events.c); live ones wait in the store meanwhile.
	 */
	bool replaying, replay_follow, replay_pumping, replay_again;
	int64_t replay_seq;   /* the last stored event sent */
	unsigned replay_sent; /* how many, up to EVENTS_REPLAY_MAX */
	paddock_store *replay_store;
	/* a process's watcher listens to it (api-exec.c); owner is the struct proc * */
	struct svc_proc_listener listener;
};

struct proc;
/*
 * A process's events for a W_HOOK watcher. `ended` is the last call: it answers w->req (and
 * sets it NULL); the watcher is freed after it returns.
 */
struct watcher_ops {
	void (*started)(struct watcher *w, struct proc *p); /* pid known */
	void (*data)(struct watcher *w, struct proc *p, int stream, const char *buf, size_t n);
	void (*ended)(struct watcher *w, struct proc *p); /* p->result is the report */
};

enum watcher_kind {
	W_OUTPUT, /* NDJSON output then exit of a process */
	W_WAIT,	  /* one JSON answer when the process ends (or the deadline) */
	W_RESULT, /* foreground exec: one JSON answer with stdout, stderr, result */
	W_EVENTS, /* NDJSON events of a sandbox */
	W_START,  /* background exec: the process object once it runs (or could not) */
	W_HOOK,	  /* the process's start, output and end, through watcher->ops */
};

struct tenant_token {
	char tenant[SVC_MAX_TENANT + 1];
	char token[256];
};

/* The bounds paddockd's gate puts on its listeners (http-gate.c). */
struct pdd_http_limits {
	unsigned max_conns;    /* per listener */
	unsigned max_per_peer; /* per peer address, TCP only */
	unsigned header_timeout_s;
};

/* paddockd's HTTP adapter: what it keeps beside the core (d->http; the core never reads it). */
struct pdd_http {
	struct evhttp *http_unix, *http_tcp;
	struct pdd_http_limits http_limits;
	struct gate *gate; /* http-gate.c */
	char socket_path[108];
	uint64_t max_upload;
	struct watcher *event_watchers; /* GET /v1/events?follow=1: every sandbox's events */
	uint64_t stream_behind_max;	/* --stream-backlog-max: PDD_STREAM_BEHIND_MAX */
	struct tenant_token *tokens;
	size_t n_tokens;
	struct e2b *e2b; /* the E2B front end (src/e2b), NULL without --e2b */
	struct event *sig_ev[3];
	uint64_t http_by_class[6]; /* answers by status class (metrics) */
	uint64_t streams_dropped;  /* events followers closed for reading too slowly */
};

int pdd_http_listen_tcp(struct daemon *d, const char *addr, unsigned short port,
			paddock_error *err);

/* ---- http (http.c) ---- */
struct request {
	struct daemon *d;
	struct evhttp_request *req;
	const char *tenant;
	char *path;   /* decoded path */
	char *seg[8]; /* path segments */
	size_t n_seg;
	struct evkeyvalq *query; /* parsed query */
	int method;		 /* EVHTTP_REQ_* */
	int status; /* the status answered (also when req is NULL: parsers under test) */
};

/*
 * Answers in paddockd's JSON: a body, or {"error":{"code","field","message"[,"errno"]}}. The
 * pdd_http_ ones answer an evhttp request directly (a forwarder, a stream, another front end's
 * request); the pdd_reply_ ones a routed request, and keep the status in r->status.
 */
void pdd_http_reply_json(struct daemon *d, struct evhttp_request *req, int status,
			 json_t *body_take);
void pdd_http_reply_error(struct daemon *d, struct evhttp_request *req, int status,
			  const char *code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void pdd_http_reply_paddock_error(struct daemon *d, struct evhttp_request *req,
				  const paddock_error *err);
/*
 * The HTTP status paddockd answers a paddock_error with (400 EINVAL, 404 ENOENT, 409
 * EEXIST/ESRCH/EBUSY, 413 EFBIG, 429 EAGAIN, 503 the field "store", ...), and in *ret_code
 * (may be NULL) the API's name for it ("invalid", "not_found", ...). Another front end maps
 * the status to its own wire format.
 */
int pdd_http_status(const paddock_error *err, const char **ret_code);
void pdd_reply_json(struct request *r, int status, json_t *body_take);
void pdd_reply_error(struct request *r, int status, const char *code, const char *field,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void pdd_reply_paddock_error(struct request *r, const paddock_error *err);
void pdd_reply_empty(struct request *r, int status);
/*
 * A request's body as a JSON object (an empty body is {} when empty_ok), or NULL with err
 * naming the field "body": EFBIG past PDD_MAX_BODY (413), EBADMSG when it is not a JSON
 * object (400 "malformed").
 */
json_t *pdd_json_body(struct evhttp_request *req, bool empty_ok, paddock_error *err);
/* pdd_json_body() for a routed request: the error is answered, NULL returned. */
json_t *pdd_body_object(struct request *r, bool empty_ok);
/* Refuses fields not in the NULL-terminated list: -EINVAL, err names the field (400). */
int pdd_json_check_fields(json_t *o, const char *const *allowed, paddock_error *err);
/* pdd_json_check_fields() for a routed request: replies 400 and returns false. */
bool pdd_check_fields(struct request *r, json_t *o, const char *const *allowed);
const char *pdd_query(struct request *r, const char *key);
/* sb_ and 12 characters of [a-z2-9] but l, o: what paddock makes (anything else is 404) */
bool pdd_sandbox_id_valid(const char *s);
int pdd_http_setup(struct daemon *d, paddock_error *err);
/* paddockd's side of the core's hooks (http.c): d->hooks, set before the core runs. */
extern const struct svc_hooks pdd_service_hooks;
/*
 * TCP_NODELAY on a request's connection: streams send small pieces one after another, and
 * without it each one after the first waits for the client's delayed ACK (40 ms on Linux).
 */
void pdd_http_no_delay(struct evhttp_request *req);
void pdd_http_stop(struct daemon *d);
/* The tenant a TCP request's Authorization header names ("Bearer <token>"), or NULL. */
const char *pdd_http_bearer_tenant(struct daemon *d, const char *authorization);

/* NDJSON streaming to a watcher */
void pdd_stream_start(struct watcher *w, const char *content_type);
void pdd_stream_line(struct watcher *w, json_t *o_take);
void pdd_stream_end(struct watcher *w);
/*
 * An event line to a follower, unless it is more than d->stream_behind_max unsent bytes
 * behind: then it is closed instead (deferred to the loop, so a caller walking a list of
 * followers may go on) and counted; a client that reads too slowly cannot make paddockd
 * hold its events without bound. It reconnects and reads the stored events again.
 */
void pdd_stream_event(struct daemon *d, struct watcher *w, json_t *o_take);
/* A client of req waits for `owner` (kind: enum watcher_kind), linked into *list. */
struct watcher *pdd_watcher_open(struct daemon *d, struct evhttp_request *req, int kind,
				 void *owner, struct watcher **list);
struct watcher *pdd_watcher_new(struct request *r, int kind, void *owner, struct watcher **list);
void pdd_watcher_free(struct watcher *w, struct watcher **list);
/*
 * Before a watcher's final answer: evhttp may free the connection from inside the reply
 * (a client that asked to close), and its close callback must not find the watcher then.
 */
void pdd_watcher_detach(struct watcher *w);

/* ---- processes (api-exec.c; the table is the core's, proc.c) ---- */
/* An exec body, parsed: the core's request and what it borrows from. */
struct exec_req {
	struct svc_exec_req q;
	bool stream; /* answer as NDJSON lines as it runs */
	json_t *argv;
	const char **argv_c;
	char **env_c;
	char *stdin_data; /* stdin_b64's bytes */
};
/*
 * An exec body, checked, into q (pdd_exec_req_release() it either way): 0, or -errno with err
 * naming the field: -EINVAL (400), -ENOMEM. The core checks the rest (svc_exec_start()).
 */
int pdd_exec_parse(json_t *body, struct exec_req *q, paddock_error *err);
void pdd_exec_req_release(struct exec_req *q);
/* An exec body parsed and started in b (svc_exec_start()): 0 and *ret (and whether the body
 * asked to stream), or -errno with err naming the field and nothing started. */
int pdd_exec_body_start(struct box *b, json_t *body, struct proc **ret, bool *ret_stream,
			paddock_error *err);
/*
 * A W_HOOK watcher for req on a process (a route that formats its events itself: POST
 * /v1/run, E2B's Start and Connect); the caller sets its on_gone. NULL: no memory.
 */
struct watcher *pdd_proc_hook(struct evhttp_request *req, struct proc *p,
			      const struct watcher_ops *ops, void *ctx);
/* A hook's client went away: the watcher leaves the process and is freed. */
void pdd_proc_unhook(struct watcher *w);
/* Whether a request waits for one answer from p (a foreground exec, a wait). */
bool pdd_proc_waited_for(struct proc *p);

/* ---- routes ---- */
void pdd_api_sandboxes(struct request *r);
void pdd_api_exec(struct request *r, struct box *b);
void pdd_api_run(struct request *r); /* POST /v1/run (api-run.c) */
/* POST /v1/sandboxes/{id}/snapshot|fork; /v1/images[/{ref}] (api-snapshots.c) */
void pdd_api_snapshots(struct request *r, struct box *b);
void pdd_api_images(struct request *r);
void pdd_api_processes(struct request *r, struct box *b);
void pdd_api_files(struct request *r, struct box *b);
/* ends the file watches of a sandbox (destroy, shutdown) */
void pdd_files_release(struct box *b);
void pdd_api_events(struct request *r, struct box *b);
/* GET /v1/events[?follow=1&sandbox=ID]: the live events of the tenant's sandboxes */
void pdd_api_events_all(struct request *r);
/*
 * An event of a sandbox of `tenant` (NULL: paddockd's own, or a sandbox whose tenant is
 * unknown: the operator's only) to the followers of GET /v1/events that may see it.
 */
void pdd_events_broadcast(struct daemon *d, const char *tenant, const char *sandbox, json_t *o);
/* Ends every GET /v1/events follower (shutdown). */
void pdd_events_release(struct daemon *d);
/* The web console's files (api-ui.c): GET /ui, /ui/<name> */
void pdd_api_ui(struct request *r);
/* Whether a request path (or target, up to '?') is the console's: answered without a token. */
bool pdd_ui_path(const char *path, size_t len);
void pdd_api_ports(struct request *r, struct box *b);
/*
 * Forwards req to 127.0.0.1:port inside the sandbox and answers req with what the service
 * answers (or paddockd's JSON error); `target` is the raw (encoded) path and query to ask
 * for there. The E2B front end's `{port}-{id}` Hosts use it too.
 */
void pdd_port_forward(struct evhttp_request *req, struct box *b, long port, const char *target);
/* The same to the sandbox's code interpreter, started on first use (docs/code.md). */
void pdd_code_forward(struct evhttp_request *req, struct box *b, const char *target);
void pdd_api_code(struct request *r, struct box *b);
void pdd_api_metrics(struct request *r);
void pdd_api_network(struct request *r, struct box *b);
/*
 * Whether /metrics asked by `tenant` lists sandbox b's series: a TCP tenant sees its own
 * sandboxes only; the unix socket's (the operator's) sees every sandbox.
 */
bool pdd_metrics_shows(const char *tenant, const struct box *b);
/* ---- templates (api-templates.c) ---- */
void pdd_api_templates(struct request *r);

/*
 * Pending decisions (network.unlisted "ask", docs/api.md): GET .../network/pending (?follow=1
 * streams them) and POST .../network/decisions (api-network.c).
 */
void pdd_api_network_asks(struct request *r, struct box *b);
/* A decisions body, checked: false when it is not one (the error is answered on r). */
struct decision_req {
	uint64_t id;
	enum paddock_ask_answer answer;
	const char *who; /* borrowed from the body, or NULL */
};
bool pdd_decision_parse(struct request *r, json_t *body, struct decision_req *q);
/* The core's ask hook: a decision of b, asked or ended, to its followers (GET …/pending). */
void pdd_network_asked(struct box *b, const struct paddock_ask *a);
/* Ends the follow streams of a box that goes (lifecycle-delete.c: svc_box_unlink()). */
void pdd_network_release(struct box *b);
/* The per-sandbox egress counters of /metrics, of the sandboxes `tenant` sees (api-network.c). */
void pdd_metrics_egress(struct daemon *d, const char *tenant, struct evbuffer *out);
