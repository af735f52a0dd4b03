/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd: sandboxes as a service. One libevent loop serves the HTTP API (evhttp on a unix
 * socket, optionally TCP with bearer tokens), every sandbox's control socket and timers
 * (libpaddock), command output, and the TTL reaper. State that must survive a crash lives in
 * SQLite (paddock/store.h); a restarted paddockd adopts the sandboxes it finds there.
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

struct event;
struct event_base;
struct evbuffer;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;

#define PDD_MAX_TENANT 64
#define PDD_LOCAL_TENANT "local" /* every client of the unix socket; no token may name it */
#define PDD_MAX_TAG 64
#define PDD_MAX_BODY (1u << 20)	      /* JSON request bodies */
#define PDD_MAX_HEADERS (64u << 10)    /* the request line and headers */
#define PDD_STDIN_WRITE_MAX 65536      /* a body of POST .../stdin */
#define PDD_MAX_CONNECTIONS 1024	      /* per listener (--max-connections) */
#define PDD_MAX_PER_PEER 128	      /* per TCP peer address (--max-connections-per-peer) */
#define PDD_HEADER_TIMEOUT_S 20	      /* a head must be whole this long after the wait began */
#define PDD_DEFAULT_TTL_S 1800
#define E2B_MAX_TTL_S 86400
#define PDD_MAX_SANDBOXES 1024	      /* per tenant */
#define PDD_MAX_TEMPLATES 1024	      /* per tenant, by default (--max-templates) */
#define PDD_MAX_PROCS 256	      /* tracked processes per sandbox */
#define PDD_MAX_IDEM_KEY 255	      /* bytes of an Idempotency-Key */
#define PDD_IDEM_KEEP_S 86400	      /* how long a key is remembered */
#define PDD_EVENT_LOG_MAX (64u << 20)  /* events.jsonl rotates at this size... */
#define PDD_EVENT_LOG_KEEP 4	      /* ...keeping this many rotated files */
#define PDD_STREAM_BEHIND_MAX (1u << 20) /* unsent bytes an events follower may have */

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
	int64_t replay_seq; /* the last stored event sent */
	unsigned replay_sent; /* how many, up to EVENTS_REPLAY_MAX */
	paddock_store *replay_store;
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

struct proc {
	struct box *box;
	paddock_exec *ex; /* NULL once ended */
	uint64_t exec_id;
	char exec_str[24];
	int pid;
	char tag[PDD_MAX_TAG + 1];
	json_t *argv;
	bool background, pty, exited;
	bool started;	       /* init forked it: pid and fds known */
	char *pending_stdin;   /* the request's stdin, written once it runs */
	size_t pending_len;
	bool pending_close;    /* then close stdin */
	int64_t started_ms, ended_ms;
	json_t *result;		 /* the report, once ended */
	/*
	 * The command's exec session (libpaddock keeps its output and queues its stdin): held
	 * by reference from the start, so its output stays readable after the end. NULL for a
	 * command whose report was lost across a restart.
	 */
	paddock_exec *session;
	bool has_stdin;		 /* stdin is a pipe the API may write (stdin, keep_stdin, pty) */
	struct event *resume_ev; /* output paused for a client that is behind */
	struct watcher *watchers;
	double t0;		  /* for the latency histogram */
	json_t *fe_info;	  /* what a front end recorded of it (E2B: its ProcessConfig) */
	struct proc *next;
};

struct box {
	struct daemon *d;
	paddock_sandbox *sb; /* NULL once stopped */
	char id[32];
	char tenant[PDD_MAX_TENANT + 1];
	char *spec_json;
	json_t *metadata;
	int64_t created_ms, expires_ms, last_active_ms;
	int64_t ttl_s, idle_timeout_s;
	double exec_timeout_s; /* limits.timeout_s: each command's default timeout */
	double output_limit;   /* limits.output: a foreground command's captured bytes */
	bool stopped;
	/*
	 * Paused (pause.c): what the store and the sandbox's record say, and, but for the
	 * moment of an adoption (which thaws), what libpaddock says.
	 */
	bool paused;
	bool pause_on_timeout; /* on_timeout "pause": the TTL pauses it rather than ending it */
	struct proc *procs;
	unsigned n_procs;
	struct watcher *watchers; /* event followers */
	struct watcher *ask_watchers; /* followers of its pending decisions (api-network.c) */
	struct file_watch *file_watches;
	struct watcher *deleters; /* DELETE requests waiting for the sandbox to be gone */
	char removed_reason[16];  /* set when it is being torn down */
	/* the Idempotency-Key that made it, "" for none (kept in its record for recovery) */
	char idem_key[PDD_MAX_IDEM_KEY + 1];
	char idem_fp[17];
	int64_t idem_ms;
	bool recovered; /* rebuilt from its init's record: its commands' past is unknown */
	/*
	 * Stopped by POST .../stop (stop.c): the image in the store that keeps its writable
	 * state, which its start runs from ("" for none: it ended on its own, nothing kept).
	 */
	char kept_image[160];
	struct box *next;
};

struct tenant_token {
	char tenant[PDD_MAX_TENANT + 1];
	char token[256];
};

struct metrics {
	uint64_t created, destroyed_by[8], execs_by[_PADDOCK_END_MAX], http_by_class[6];
	uint64_t exec_buckets[12], exec_count;
	uint64_t streams_dropped; /* events followers closed for reading too slowly */
	double exec_sum;
};

#define PDD_POOL_BUCKETS 11
extern const double pdd_pool_buckets[PDD_POOL_BUCKETS];

struct pool_tmpl;

/* the warm pool (pool.c) */
struct pool {
	unsigned size;		/* ready sandboxes kept per template; 0: no pool */
	unsigned max;		/* ready sandboxes in all */
	unsigned max_templates; /* templates pooled at once */
	uint64_t clock;		/* for least-recently-used templates */
	unsigned next_seq;	/* templates' numbers in the metrics */
	bool making;		/* a sandbox is being made for a template */
	double refill_wanted_s; /* when the pool first lacked one, 0: it does not */
	struct pool_tmpl *templates;
	struct event *refill_ev;
	struct event *pressure_ev; /* the memory check, every PDD_POOL_PRESSURE_MS */
	/* --pool-min-available: MemAvailable below this is pressure (kB, or % of MemTotal) */
	uint64_t min_avail_kb;
	unsigned min_avail_pct;
	struct {
		uint64_t hits, misses, refills, low_memory, given_back;
		double refill_s, claim_sum;
		uint64_t claim_buckets[PDD_POOL_BUCKETS];
	} m;
};

struct daemon {
	struct event_base *base;
	paddock_ctx *ctx;
	paddock_store *store;
	struct evhttp *http_unix, *http_tcp;
	struct pdd_http_limits http_limits;
	struct gate *gate; /* http-gate.c */
	char state_dir[256];
	const char *image_store; /* --image-store or $PADDOCK_IMAGE_STORE; NULL: the default */
	/* host directories a TCP tenant's spec may name (workspace, binds, rootfs) */
	char **host_paths;
	size_t n_host_paths;
	char socket_path[108];
	uint64_t max_upload;
	int orphan_timeout_s;
	bool destroy_on_exit;
	int max_net; /* the widest network.mode a client may ask for: 0 none, 1 allowlist, 2 open */
	unsigned max_templates; /* a tenant's own templates at most (api-templates.c) */
	bool stopping;
	int state_fd;	      /* the state directory, for the event log's files */
	int event_log_fd;
	uint64_t event_log_size, event_log_max; /* bytes in events.jsonl, and when it rotates */
	unsigned event_log_keep;		/* rotated files kept: events.jsonl.1 ... .N */
	/*
	 * The store was damaged (moved aside to store_moved) or missing at start: the live
	 * sandboxes' records were rebuilt from what their inits kept.
	 */
	bool store_rebuilt, store_fresh;
	char store_moved[320];
	struct finishing *finishing; /* "deleting" rows whose teardown a restart interrupted */
	struct box *boxes;
	struct box *dying; /* torn down: init killed, waiting for the kernel to finish */
	struct watcher *event_watchers; /* GET /v1/events?follow=1: every sandbox's events */
	uint64_t stream_behind_max; /* --stream-backlog-max: PDD_STREAM_BEHIND_MAX */
	struct tenant_token *tokens;
	size_t n_tokens;
	struct metrics m;
	struct pool pool;
	struct e2b *e2b; /* the E2B front end (src/e2b), NULL without --e2b */
	/*
	 * Called as a sandbox goes, for an adapter on the daemon (src/e2b) to drop what it holds
	 * of it (file watchers): the daemon calls no adapter by name.
	 */
	void (*box_gone)(struct daemon *d, struct box *b);
	struct event *reaper_ev, *sig_ev[3];
	uint64_t reaper_ticks;
	/* events of a sandbox being created, before its row exists (the store's foreign key) */
	struct pending_event {
		char sandbox[32];
		char name[48];
		char *json;
		int64_t ts_ms;
	} pending[8];
	size_t n_pending;
};

/* ---- warm pool (pool.c) ---- */
int pdd_pool_start(struct daemon *d, paddock_error *err);
void pdd_pool_stop(struct daemon *d);
/* A ready sandbox of spec's template, claimed for spec: 0, or -ENOENT (make one cold). */
int pdd_pool_claim(struct daemon *d, const paddock_spec *spec, paddock_sandbox **ret_sb);
/* Every request: a refill waits until they leave the loop alone for a moment. */
void pdd_pool_request(struct daemon *d);
struct evbuffer;
void pdd_pool_metrics(struct daemon *d, struct evbuffer *b);

/* ---- util ---- */
int64_t pdd_now_ms(void);
double pdd_mono_s(void);
void pdd_format_time(int64_t ms, char *buf, size_t size); /* RFC 3339 UTC with ms */
json_t *pdd_time_json(int64_t ms);		       /* string, or null for 0 */
/* a UTF-8 JSON string when the bytes are valid UTF-8, else base64 under key "<key>_b64" */
void pdd_json_set_bytes(json_t *o, const char *key, const void *data, size_t len);
/* a JSON string of s; bytes that are not UTF-8 become \\xNN */
json_t *pdd_json_text(const char *s);

int pdd_http_listen_tcp(struct daemon *d, const char *addr, unsigned short port, paddock_error *err);

/* ---- http (http.c) ---- */
struct request {
	struct daemon *d;
	struct evhttp_request *req;
	const char *tenant;
	char *path;		/* decoded path */
	char *seg[8];		/* path segments */
	size_t n_seg;
	struct evkeyvalq *query; /* parsed query */
	int method;		/* EVHTTP_REQ_* */
	int status;		/* the status answered (also when req is NULL: parsers under test) */
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
struct watcher *pdd_watcher_new(struct request *r, int kind, void *owner,
			       struct watcher **list);
void pdd_watcher_free(struct watcher *w, struct watcher **list);
/*
 * Before a watcher's final answer: evhttp may free the connection from inside the reply
 * (a client that asked to close), and its close callback must not find the watcher then.
 */
void pdd_watcher_detach(struct watcher *w);

/* ---- the event log (event-log.c) ---- */
int pdd_event_log_open(struct daemon *d, paddock_error *err);
/* One line (with its '\n'), one write(); rotates the file once it is past the bound. */
void pdd_event_log_write(struct daemon *d, const char *line, size_t len);
void pdd_event_log_close(struct daemon *d);

/* ---- lifecycle (lifecycle.c, lifecycle-*.c: see lifecycle.h) ---- */
struct box *pdd_box_find(struct daemon *d, const char *tenant, const char *id);
/*
 * Creates a sandbox from a create body and records it (the store's row, and the record its
 * init keeps) before it returns: "created" means kept. When it cannot be recorded the
 * sandbox is ended and err names the field "store" (answered 503: nothing changed). With
 * `key` (an Idempotency-Key), a create this tenant already made with that key and the same
 * body gets that sandbox again (*ret_replayed true); with another body, or once that
 * sandbox is gone, -EEXIST naming the field Idempotency-Key.
 */
int pdd_box_create_keyed(struct daemon *d, const char *tenant, json_t *body, const char *key,
			struct box **ret, bool *ret_replayed, paddock_error *err);
int pdd_box_create(struct daemon *d, const char *tenant, json_t *body, struct box **ret,
		  paddock_error *err);
/* An Idempotency-Key header's value: 1 to 255 printable ASCII characters, no space. */
bool pdd_idempotency_key_valid(const char *key);
/* A store failure as the API answers it: err gets the field "store" (503); returns -code. */
int pdd_store_error(paddock_error *err, const paddock_error *cause);
/*
 * Removes a sandbox: at once from the API's view and the store; its processes are killed and
 * the kernel's teardown finishes off the loop's time. `deleter`: a DELETE request answered
 * 204 once nothing of the sandbox is left (may be NULL).
 */
void pdd_box_destroy(struct box *b, const char *reason, struct request *deleter);
/*
 * pdd_box_destroy() for a request that must fail when the removal cannot be recorded: then
 * -errno (err names the field "store") and nothing changed, unless `force`.
 */
int pdd_box_delete(struct box *b, const char *reason, struct request *deleter, bool force,
		  paddock_error *err);
void pdd_box_touch(struct box *b);
json_t *pdd_box_json(struct box *b);
/* "running", "paused" or "stopped": the state the API shows and the store keeps */
const char *pdd_box_state(const struct box *b);

/* A line of paddockd's own in the event log; `tenant`: whose GET /v1/events hears of it. */
void pdd_log_event(struct daemon *d, const char *tenant, const char *event, const char *sandbox,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The exit callback of a box's sandbox (its state becomes "stopped" when init dies). */
void pdd_box_watch_exit(struct box *b);
/* Ends what clients hold of a box's processes: processes, file watches, pending decisions. */
void pdd_box_release_clients(struct box *b);

/* ---- stop and start (stop.c) ---- */
/*
 * Stops a sandbox: its writable layer (and its own /workspace) kept as an image of the
 * store, then its processes ended; recorded. 0, also when it was stopped already; -EOPNOTSUPP
 * (field "image") for one on the host's /usr; -ESRCH (field "state") for one that ended on
 * its own; errors of the snapshot (the sandbox then runs on, nothing changed) or the store.
 */
int pdd_box_stop(struct box *b, paddock_error *err);
/*
 * Starts a stopped sandbox again: a new sandbox with the same id and spec, on its kept image
 * (secrets read again). 0, also when it runs; -ESRCH (field "state") for one with nothing
 * kept; errors of the create (it then stays stopped).
 */
int pdd_box_start(struct box *b, paddock_error *err);
/* Adoption of a row that says "stopped": its kept image, and no init left listening. */
void pdd_box_adopt_stopped(struct box *b, const char *handle_json);
/*
 * Removes the images that kept b's states, once it is gone (any sandbox of an image: it may
 * have been stopped before a restart, which only the image store's names tell).
 */
void pdd_box_forget_kept(struct box *b);
/* Removes every image that kept a state of sandbox `id` but `keep` (may be NULL). */
void pdd_stop_forget_images(struct daemon *d, const char *id, const char *keep);
/* -EPERM (field "image") for a create naming a kept image: those are paddockd's own. */
int pdd_stop_check_image(json_t *spec, paddock_error *err);
/* Whether an image name is among the kept states' (a snapshot may not take one). */
bool pdd_stop_name_private(const char *name);
/* The image store paddockd uses (api-snapshots.c). */
struct paddock_image_store;
int pdd_images_open(struct daemon *d, struct paddock_image_store **ret, paddock_error *err);

/* ---- pause and resume (pause.c) ---- */
/* How long a sandbox its timeout paused is kept paused before it is removed. */
#define PDD_PAUSED_KEEP_S E2B_MAX_TTL_S
/*
 * Pauses (resumes) a sandbox and records it: 0, also when it already was; -ESRCH for one
 * that is stopped or ending; -errno with err naming the field "store" when it cannot be
 * recorded (then the sandbox is as it was).
 */
int pdd_box_pause(struct box *b, paddock_error *err);
int pdd_box_resume(struct box *b, paddock_error *err);
/* An adopted sandbox the store says is paused (adoption thawed it) is paused again. */
void pdd_box_repause(struct box *b);
/*
 * The reaper, at b's expiry: true when b's on_timeout is "pause" and it was paused now (kept
 * PDD_PAUSED_KEEP_S more); false: it is to be removed (already paused, or "kill").
 */
bool pdd_box_pause_on_timeout(struct box *b);
/*
 * For a request that needs the sandbox's processes to answer (exec, ports, code): -EBUSY
 * naming the field "state" (409) when it is paused.
 */
int pdd_box_check_not_paused(const struct box *b, paddock_error *err);
/*
 * Records a change of the box (its row, and the record its init keeps): -errno with err
 * naming the field "store" when it cannot; the caller undoes the change and fails.
 */
int pdd_box_persist(struct box *b, paddock_error *err);
/* The same for a change nobody waits for: a failure is logged, not answered. */
void pdd_box_persist_or_warn(struct box *b);
int pdd_lifecycle_start(struct daemon *d, paddock_error *err);
void pdd_lifecycle_stop(struct daemon *d);
void pdd_event_sink(const struct paddock_event *ev, void *userdata);

/* ---- processes (api-exec.c) ---- */
struct proc *pdd_proc_find(struct box *b, const char *key);
void pdd_proc_free(struct proc *p);
/*
 * A command of an adopted sandbox (ex NULL: recorded, but init no longer knows it). end_it:
 * kill it (a foreground command whose client is gone, one nobody was told of).
 */
void pdd_proc_adopt(struct box *b, paddock_exec *ex, const struct paddock_store_exec *row,
		   bool end_it);
json_t *pdd_proc_json(struct proc *p);

/* An exec request, parsed and checked (api-exec.c). */
struct exec_req {
	json_t *argv;
	const char **argv_c;
	const char **env_c;
	const char *cwd;
	char *stdin_data;
	size_t stdin_len;
	bool has_stdin, stream, background, keep_stdin, pty;
	double timeout_s;
	const char *tag;
	unsigned rows, cols;
};

/*
 * Starts the command an exec body asks for (the body of POST .../exec) as a process of b,
 * whose answer goes to req: paddockd's (a 201 with the pid, the stream, or the result), or
 * with `ops`, a W_HOOK watcher's (the front end answers req from ops). 0 and *ret_proc (may
 * be NULL), or -errno with err filled and nothing started; pdd_http_status() gives the
 * status paddockd answers it with (400 a bad body, 409 a sandbox not running or paused or a
 * tag in use, 413 too much stdin, 429 too many processes, ...).
 */
int pdd_exec_start(struct evhttp_request *req, struct box *b, json_t *body,
		  const struct watcher_ops *ops, void *ctx, struct proc **ret_proc,
		  paddock_error *err);
/* A running process's stdin: 0, -EAGAIN (the queue is full: nothing taken), -EPIPE, -EBADF
 * (closed or none), -ESRCH (ended). */
int pdd_proc_write_stdin(struct proc *p, const char *data, size_t len);
void pdd_proc_close_stdin(struct proc *p);
/* A foreground exec's answer: exec, pid, stdout, stderr (kept whole), result. */
json_t *pdd_proc_result_json(struct proc *p);
/* Attaches a W_HOOK watcher for req to a process (re-attach: E2B's Connect); NULL: no memory. */
struct watcher *pdd_proc_hook(struct evhttp_request *req, struct proc *p,
			     const struct watcher_ops *ops, void *ctx);
/*
 * An exec body, checked, into q (pdd_exec_req_release() it either way): 0, or -errno with err
 * naming the field: -EINVAL (400), -EEXIST for a tag in use (409), -EFBIG for stdin over
 * 64 KiB (413), -ENOMEM.
 */
int pdd_exec_parse(struct box *b, json_t *body, struct exec_req *q, paddock_error *err);
void pdd_exec_req_release(struct exec_req *q);
/* the create body: spec fields plus ttl_s, idle_timeout_s, metadata (lifecycle.c) */
int pdd_create_parse(struct daemon *d, const char *tenant, json_t *body, paddock_spec **ret_spec,
		    int64_t *ret_ttl, int64_t *ret_idle, paddock_error *err);

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
void pdd_events_broadcast(struct daemon *d, const char *tenant, const char *sandbox,
			 json_t *o);
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
 * Replaces a live sandbox's network section with `net` ({"mode", "allow", "deny", ...}):
 * validated as a spec, bounded by --max-network (-EPERM naming it), applied to the
 * sandbox's proxy at once (-EPERM for a sandbox made without egress), persisted.
 */
int pdd_box_set_network(struct box *b, json_t *net, paddock_error *err);
/* -EPERM (err names network.mode) when spec_json asks for more egress than --max-network. */
int pdd_check_max_network(struct daemon *d, const char *spec_json, paddock_error *err);
int pdd_max_network_parse(const char *s); /* 0..2, or -1 */
/*
 * Whether /metrics asked by `tenant` lists sandbox b's series: a TCP tenant sees its own
 * sandboxes only; the unix socket's (the operator's) sees every sandbox.
 */
bool pdd_metrics_shows(const char *tenant, const struct box *b);
/* ---- templates (api-templates.c) ---- */
void pdd_api_templates(struct request *r);
bool pdd_template_name_valid(const char *s);
/*
 * A create body naming "template": the template's spec (the tenant's own, else the
 * operator's) with the body's fields over it, in place; "template" itself goes. 0 when the
 * body names none; -ENOENT (field template) for an unknown one.
 */
int pdd_template_apply(struct daemon *d, const char *tenant, json_t *body, paddock_error *err);
/* A copy of the spec of the template `name` the tenant may use, or NULL (none, or no memory). */
json_t *pdd_template_spec(struct daemon *d, const char *tenant, const char *name);

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
/* The context's ask handler: streams decisions to followers, keeps allow_always's rule. */
void pdd_network_ask(paddock_sandbox *sb, const struct paddock_ask *ask, void *userdata);
/* Ends the follow streams of a box that goes (lifecycle-delete.c: pdd_box_unlink()). */
void pdd_network_release(struct box *b);
/* The per-sandbox egress counters of /metrics, of the sandboxes `tenant` sees (api-network.c). */
void pdd_metrics_egress(struct daemon *d, const char *tenant, struct evbuffer *out);
void pdd_metrics_exec(struct daemon *d, const struct paddock_result *res, double seconds);
