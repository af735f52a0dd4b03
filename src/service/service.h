/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service core (DESIGN.md, "Parts"): the set of sandboxes of a host and what happens to
 * them: lifecycle (create, adopt after a restart, recover, delete), TTLs and idle expiry,
 * pause and resume, stop and start, the warm pool, templates, the store's records (SQLite,
 * through paddock/store.h), events (the event log, the events of a sandbox) and metrics.
 * Typed requests in, results or a paddock_error out; no HTTP here: the core runs on a libevent
 * loop (event2/event.h) and never includes evhttp's headers.
 *
 * Adapters sit on it, parallel and thin: paddockd's HTTP/JSON API (src/daemon, daemon.h) and
 * the E2B endpoint (src/e2b). What the core needs of the clients an adapter holds (followers
 * of a sandbox's events, DELETE requests waiting, a process's watchers) goes through
 * struct svc_hooks and box_gone: the core calls no adapter by name.
 *
 * Trust: a request's tenant is the adapter's word; everything a sandbox produces (output,
 * file names, exit reports) is hostile and bounded.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "paddock/cleanup.h"
#include "paddock/paddock.h"
#include "paddock/store.h"

/* the core's cleanups (paddock/cleanup.h is the idiom) */
PADDOCK_DEFINE_CLEANUP(paddock_spec, paddock_spec_free)
#define _cleanup_json_ _cleanup_(json_decrefp)

struct event;
struct event_base;
struct evbuffer;
struct watcher;
struct file_watch;
struct finishing;
struct daemon;
struct box;
struct proc;

/*
 * What the core asks of the adapter that holds clients of its sandboxes (paddockd's HTTP:
 * watchers bound to requests). Each may be NULL (nothing held: a parser under test).
 */
struct svc_hooks {
	/* b's file watches and pending asks go (its processes went, each listener told) */
	void (*release_clients)(struct box *b);
	/* b left the API's view: its event followers' streams end */
	void (*box_unlinked)(struct box *b);
	/* a delete's waiter (svc_box_delete()'s `deleter`) waits for b to be gone */
	void (*deleter_wait)(struct box *b, void *deleter);
	/* nothing of b is left: its waiters are answered (b is freed next) */
	void (*box_freed)(struct box *b);
	/* an event of b (o: its JSON) to b's followers */
	void (*box_event)(struct box *b, json_t *o);
	/* a decision of b (network.unlisted "ask"), once asked and once ended, to its followers */
	void (*box_asked)(struct box *b, const struct paddock_ask *a);
	/* an event of `tenant`'s sandbox (NULL, NULL: the host's) to followers that may see it */
	void (*event)(struct daemon *d, const char *tenant, const char *sandbox, json_t *o);
};

#define SVC_MAX_TENANT	   64
#define SVC_LOCAL_TENANT   "local" /* every client of the unix socket; no token may name it */
#define SVC_MAX_TAG	   64
#define SVC_DEFAULT_TTL_S  1800
#define E2B_MAX_TTL_S	   86400
#define SVC_MAX_SANDBOXES  1024	       /* per tenant, by default (--max-sandboxes) */
#define SVC_MAX_TEMPLATES  1024	       /* per tenant, by default (--max-templates) */
#define SVC_MAX_PROCS	   256	       /* tracked processes per sandbox */
#define SVC_MAX_IDEM_KEY   255	       /* bytes of an Idempotency-Key */
#define SVC_IDEM_KEEP_S	   86400       /* how long a key is remembered */
#define SVC_EVENT_LOG_MAX  (64u << 20) /* events.jsonl rotates at this size... */
#define SVC_EVENT_LOG_KEEP 4	       /* ...keeping this many rotated files */
struct svc_proc_listener;
/* A command of a sandbox: the process table (box->procs) adapters' exec requests fill (proc.c). */
struct proc {
	struct box *box;
	paddock_exec *ex; /* NULL once ended */
	uint64_t exec_id;
	char exec_str[24];
	int pid;
	char tag[SVC_MAX_TAG + 1];
	json_t *argv;
	bool background, pty, exited;
	bool started;	     /* init forked it: pid and fds known */
	char *pending_stdin; /* the request's stdin, written once it runs */
	size_t pending_len;
	bool pending_close; /* then close stdin */
	int64_t started_ms, ended_ms;
	json_t *result; /* the report, once ended */
	/*
	 * The command's exec session (libpaddock keeps its output and queues its stdin): held
	 * by reference from the start, so its output stays readable after the end. NULL for a
	 * command whose report was lost across a restart.
	 */
	paddock_exec *session;
	bool has_stdin;		 /* stdin is a pipe the API may write (stdin, keep_stdin, pty) */
	struct event *resume_ev; /* output paused for a listener that is behind */
	struct svc_proc_listener *listeners;
	double t0;	 /* for the latency histogram */
	json_t *fe_info; /* what a front end recorded of it (E2B: its ProcessConfig) */
	struct proc *next;
};
struct box {
	struct daemon *d;
	paddock_sandbox *sb; /* NULL once stopped */
	char id[32];
	char tenant[SVC_MAX_TENANT + 1];
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
	struct watcher *watchers;     /* event followers */
	struct watcher *ask_watchers; /* followers of its pending decisions (api-network.c) */
	struct file_watch *file_watches;
	struct watcher *deleters; /* DELETE requests waiting for the sandbox to be gone */
	char removed_reason[16];  /* set when it is being torn down */
	/* the Idempotency-Key that made it, "" for none (kept in its record for recovery) */
	char idem_key[SVC_MAX_IDEM_KEY + 1];
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
struct metrics {
	uint64_t created, destroyed_by[8], execs_by[_PADDOCK_END_MAX];
	uint64_t exec_buckets[12], exec_count;
	double exec_sum;
};

#define SVC_POOL_BUCKETS 11
extern const double svc_pool_buckets[SVC_POOL_BUCKETS];

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
		uint64_t claim_buckets[SVC_POOL_BUCKETS];
	} m;
};

struct pdd_http;
struct daemon {
	struct event_base *base;
	/* paddockd's HTTP adapter (src/daemon/daemon.h): opaque here, the core never touches it */
	struct pdd_http *http;
	paddock_ctx *ctx;
	paddock_store *store;
	char state_dir[256];
	/* <state_dir>/s: the inits' reconnect sockets, one per sandbox id (svc_lifecycle_start) */
	char reconnect_dir[264];
	const char *image_store; /* --image-store or $PADDOCK_IMAGE_STORE; NULL: the default */
	/* host directories a TCP tenant's spec may name (workspace, binds, rootfs) */
	char **host_paths;
	size_t n_host_paths;
	int orphan_timeout_s;
	bool destroy_on_exit;
	/*
	 * A core for one process (`paddock mcp`, src/mcp/backend-embedded.c): the store in
	 * memory, no state directory, no event log but the one the adapter gives, sandboxes
	 * without a reconnect socket (each init dies with the process, even on SIGKILL) and
	 * without a TTL (they live until deleted or the core is closed).
	 */
	bool in_process;
	int max_net; /* the widest network.mode a client may ask for: 0 none, 1 allowlist, 2 open */
	unsigned max_templates; /* a tenant's own templates at most (api-templates.c) */
	unsigned max_sandboxes; /* a tenant's sandboxes at most (0: SVC_MAX_SANDBOXES) */
	bool stopping;
	int state_fd; /* the state directory, for the event log's files */
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
	struct metrics m;
	struct pool pool;
	/*
	 * Called as a sandbox goes, for an adapter on the daemon (src/e2b) to drop what it holds
	 * of it (file watchers): the daemon calls no adapter by name.
	 */
	void (*box_gone)(struct daemon *d, struct box *b);
	const struct svc_hooks *hooks; /* paddockd's HTTP adapter (src/daemon/http.c) */
	struct event *reaper_ev;
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
int svc_pool_start(struct daemon *d, paddock_error *err);
void svc_pool_stop(struct daemon *d);
/* A ready sandbox of spec's template, claimed for spec: 0, or -ENOENT (make one cold). */
int svc_pool_claim(struct daemon *d, const paddock_spec *spec, paddock_sandbox **ret_sb);
/* Every request: a refill waits until they leave the loop alone for a moment. */
void svc_pool_request(struct daemon *d);
/* Each pooled template: its number in the metrics and its ready sandboxes (d->pool.m: the rest). */
void svc_pool_each_template(struct daemon *d, void (*fn)(unsigned seq, unsigned ready, void *ud),
			    void *ud);

/* ---- processes (proc.c) ---- */
#define SVC_STDIN_REQUEST_MAX 65536 /* stdin in an exec request: what libpaddock queues at once */

/* A command to start, from any adapter; its strings are the caller's, for the call. */
struct svc_exec_req {
	const char *const *argv; /* 1 to 4096 strings, NULL-terminated */
	const char *const *env;	 /* "NAME=value", NULL-terminated; NULL: none */
	const char *cwd;	 /* absolute; NULL: the sandbox's */
	const char *stdin_data;	 /* written once it runs (then closed, but for keep_stdin, pty) */
	size_t stdin_len;	 /* at most SVC_STDIN_REQUEST_MAX */
	bool has_stdin, background, keep_stdin, pty;
	unsigned rows, cols; /* the pty's size, 0: init's default */
	/* < 0: absent (limits.timeout_s for a foreground command, none for a background one) */
	double timeout_s; /* 0: none */
	const char *tag;  /* NULL or "": none */
	/*
	 * svc_exec_start() returns once init forked it (pid known, listeners told), blocking
	 * the loop for the fork: for an adapter whose answer needs the pid at once (MCP's
	 * start_process); paddockd's never block.
	 */
	bool sync_start;
};

/*
 * Who follows a process: an adapter's client (paddockd's watchers, E2B's streams). Calls come
 * from the loop; a listener may unlisten itself inside any of them.
 */
struct svc_proc_listener_ops {
	void (*started)(struct svc_proc_listener *l, struct proc *p); /* pid known; may be NULL */
	/* it runs but could not be recorded (err names "store"): it is being ended */
	void (*unrecorded)(struct svc_proc_listener *l, struct proc *p, const paddock_error *err);
	/* output as it comes; stream 0 stdout, 1 stderr; NULL: read from the session later */
	void (*data)(struct svc_proc_listener *l, struct proc *p, int stream, const char *buf,
		     size_t n);
	/* the last call, l unlinked already: p ended (p->result), or `gone`: the sandbox went */
	void (*ended)(struct svc_proc_listener *l, struct proc *p, bool gone);
	/* bytes l's client has not taken yet (NULL: none); past 4 MiB the output waits for it */
	size_t (*backlog)(struct svc_proc_listener *l);
};
struct svc_proc_listener {
	const struct svc_proc_listener_ops *ops;
	struct svc_proc_listener *next;
};

/*
 * Starts a command as a process of b, recorded once init forked it (listeners attached
 * before the loop runs again hear its start). 0 and *ret, or -errno with err naming the
 * field and nothing started: -ESRCH the sandbox does not run, -EBUSY it is paused, -EINVAL a
 * bad request, -EEXIST a tag in use, -EFBIG too much stdin, -EAGAIN SVC_MAX_PROCS tracked.
 */
int svc_exec_start(struct box *b, const struct svc_exec_req *q, struct proc **ret,
		   paddock_error *err);
/* What q asks, checked against b: 0, -EINVAL, -EEXIST (a tag in use), -EFBIG (stdin). */
int svc_exec_check(struct box *b, const struct svc_exec_req *q, paddock_error *err);
/* 1 to 64 of [A-Za-z0-9_.-], not all digits (those name pids) */
bool svc_tag_valid(const char *tag);
void svc_proc_listen(struct proc *p, struct svc_proc_listener *l);
void svc_proc_unlisten(struct proc *p, struct svc_proc_listener *l);
/* A process by pid or tag: the running one, else the newest ended one; NULL: none. */
struct proc *svc_proc_find(struct box *b, const char *key);
void svc_proc_free(struct proc *p); /* listeners get ended(gone) */
void svc_box_free_procs(struct box *b);
/* A command of an adopted sandbox (ex NULL: recorded, but init no longer knows it). end_it:
 * kill it (a foreground command whose client is gone, one nobody was told of). */
void svc_proc_adopt(struct box *b, paddock_exec *ex, const struct paddock_store_exec *row,
		    bool end_it);
/* The process object: exec, pid, tag, argv, background, pty, state, times, result. */
json_t *svc_proc_json(struct proc *p);
/* A foreground exec's answer: exec, pid, stdout, stderr (kept whole), result. */
json_t *svc_proc_result_json(struct proc *p);
/* What libpaddock kept of stream (1, 2) from *from on, into `into`; *from advances. */
size_t svc_proc_read(struct proc *p, int stream, uint64_t *from, struct evbuffer *into);
/* Its stdin, all or nothing: 0, -EAGAIN (not read yet: nothing taken), -EPIPE, -EBADF (closed
 * or none), -ESRCH (ended). */
int svc_proc_write_stdin(struct proc *p, const char *data, size_t len, paddock_error *err);
void svc_proc_close_stdin(struct proc *p);
void svc_proc_kill(struct proc *p);   /* ends it, reason "killed" (its client went away) */
const double *svc_exec_buckets(void); /* the latency histogram's 12 bounds (metrics) */

/* ---- util ---- */
/* The reconnect socket of sandbox `id`: false when the path would not fit. */
bool svc_socket_path(const struct daemon *d, const char *id, char *buf, size_t size);
int64_t svc_now_ms(void);
double svc_mono_s(void);
void svc_format_time(int64_t ms, char *buf, size_t size); /* RFC 3339 UTC with ms */
json_t *svc_time_json(int64_t ms);			  /* string, or null for 0 */
/* a UTF-8 JSON string when the bytes are valid UTF-8, else base64 under key "<key>_b64" */
void svc_json_set_bytes(json_t *o, const char *key, const void *data, size_t len);
/* a JSON string of s; bytes that are not UTF-8 become \\xNN */
json_t *svc_json_text(const char *s);

/* ---- start and end (open.c) ---- */
/*
 * Starts the core on d (its loop, libpaddock context and state_dir made, the adapter's
 * hooks set): the event log, the store (a damaged one is moved aside and the live sandboxes
 * recovered), the sandboxes a previous run left adopted, the reaper and the pool.
 */
int svc_open(struct daemon *d, paddock_error *err);
/* The store and the event log closed (after svc_lifecycle_stop()). */
void svc_close(struct daemon *d);

/* ---- the event log (event-log.c) ---- */
int svc_event_log_open(struct daemon *d, paddock_error *err);
/* One line (with its '\n'), one write(); rotates the file once it is past the bound. */
void svc_event_log_write(struct daemon *d, const char *line, size_t len);
void svc_event_log_close(struct daemon *d);

/* ---- lifecycle (lifecycle.c, lifecycle-*.c: see lifecycle.h) ---- */
struct box *svc_box_find(struct daemon *d, const char *tenant, const char *id);
/*
 * Creates a sandbox from a create body and records it (the store's row, and the record its
 * init keeps) before it returns: "created" means kept. When it cannot be recorded the
 * sandbox is ended and err names the field "store" (answered 503: nothing changed). With
 * `key` (an Idempotency-Key), a create this tenant already made with that key and the same
 * body gets that sandbox again (*ret_replayed true); with another body, or once that
 * sandbox is gone, -EEXIST naming the field Idempotency-Key.
 */
int svc_box_create_keyed(struct daemon *d, const char *tenant, json_t *body, const char *key,
			 struct box **ret, bool *ret_replayed, paddock_error *err);
int svc_box_create(struct daemon *d, const char *tenant, json_t *body, struct box **ret,
		   paddock_error *err);
/* An Idempotency-Key header's value: 1 to 255 printable ASCII characters, no space. */
bool svc_idempotency_key_valid(const char *key);
/* A store failure as the API answers it: err gets the field "store" (503); returns -code. */
int svc_store_error(paddock_error *err, const paddock_error *cause);
/*
 * Removes a sandbox: at once from the API's view and the store; its processes are killed and
 * the kernel's teardown finishes off the loop's time. `deleter`: an adapter's waiter (paddockd:
 * its DELETE request, answered 204 once nothing of the sandbox is left) handed to
 * hooks->deleter_wait and hooks->box_freed; may be NULL.
 */
void svc_box_destroy(struct box *b, const char *reason, void *deleter);
/*
 * svc_box_destroy() for a request that must fail when the removal cannot be recorded: then
 * -errno (err names the field "store") and nothing changed, unless `force`.
 */
int svc_box_delete(struct box *b, const char *reason, void *deleter, bool force,
		   paddock_error *err);
void svc_box_touch(struct box *b);
json_t *svc_box_json(struct box *b);
/* "running", "paused" or "stopped": the state the API shows and the store keeps */
const char *svc_box_state(const struct box *b);

/* A line of paddockd's own in the event log; `tenant`: whose GET /v1/events hears of it. */
void svc_log_event(struct daemon *d, const char *tenant, const char *event, const char *sandbox,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The exit callback of a box's sandbox (its state becomes "stopped" when init dies). */
void svc_box_watch_exit(struct box *b);
/* Ends what clients hold of a box's processes: processes, file watches, pending decisions. */
void svc_box_release_clients(struct box *b);

/* ---- stop and start (stop.c) ---- */
/*
 * Stops a sandbox: its writable layer (and its own /workspace) kept as an image of the
 * store, then its processes ended; recorded. 0, also when it was stopped already; -EOPNOTSUPP
 * (field "image") for one on the host's /usr; -ESRCH (field "state") for one that ended on
 * its own; errors of the snapshot (the sandbox then runs on, nothing changed) or the store.
 */
int svc_box_stop(struct box *b, paddock_error *err);
/*
 * Starts a stopped sandbox again: a new sandbox with the same id and spec, on its kept image
 * (secrets read again). 0, also when it runs; -ESRCH (field "state") for one with nothing
 * kept; errors of the create (it then stays stopped).
 */
int svc_box_start(struct box *b, paddock_error *err);
/* Adoption of a row that says "stopped": its kept image, and no init left listening. */
void svc_box_adopt_stopped(struct box *b, const char *handle_json);
/*
 * Removes the images that kept b's states, once it is gone (any sandbox of an image: it may
 * have been stopped before a restart, which only the image store's names tell).
 */
void svc_box_forget_kept(struct box *b);
/* Removes every image that kept a state of sandbox `id` but `keep` (may be NULL). */
void svc_stop_forget_images(struct daemon *d, const char *id, const char *keep);
/* -EPERM (field "image") for a create naming a kept image: those are paddockd's own. */
int svc_stop_check_image(json_t *spec, paddock_error *err);
/* Whether an image name is among the kept states' (a snapshot may not take one). */
bool svc_stop_name_private(const char *name);
/* The image store paddockd uses (api-snapshots.c). */
struct paddock_image_store;
int svc_images_open(struct daemon *d, struct paddock_image_store **ret, paddock_error *err);

/* ---- the egress policy of a live sandbox (network.c) ---- */
/*
 * Replaces b's network section with `net` (a spec's "network" object; the rest of its spec
 * stays): the rules in force are exactly those given. Returns how many open connections the
 * new policy closed, or -errno with err naming the field: the spec's errors, -EPERM past
 * --max-network or a change libpaddock cannot make live, the store's (then nothing changed).
 */
int svc_box_set_network(struct box *b, json_t *net, paddock_error *err);
/*
 * The context's ask handler (svc_open() sets it; userdata: d): an allow_always answer's rule
 * is kept in the sandbox's spec and record (a restart re-adopts it with the rule), then the
 * adapter's hooks->box_asked hears of the decision.
 */
void svc_ask(paddock_sandbox *sb, const struct paddock_ask *a, void *userdata);

/* ---- pause and resume (pause.c) ---- */
/* How long a sandbox its timeout paused is kept paused before it is removed. */
#define SVC_PAUSED_KEEP_S E2B_MAX_TTL_S
/*
 * Pauses (resumes) a sandbox and records it: 0, also when it already was; -ESRCH for one
 * that is stopped or ending; -errno with err naming the field "store" when it cannot be
 * recorded (then the sandbox is as it was).
 */
int svc_box_pause(struct box *b, paddock_error *err);
int svc_box_resume(struct box *b, paddock_error *err);
/* An adopted sandbox the store says is paused (adoption thawed it) is paused again. */
void svc_box_repause(struct box *b);
/*
 * The reaper, at b's expiry: true when b's on_timeout is "pause" and it was paused now (kept
 * SVC_PAUSED_KEEP_S more); false: it is to be removed (already paused, or "kill").
 */
bool svc_box_pause_on_timeout(struct box *b);
/*
 * For a request that needs the sandbox's processes to answer (exec, ports, code): -EBUSY
 * naming the field "state" (409) when it is paused.
 */
int svc_box_check_not_paused(const struct box *b, paddock_error *err);
/*
 * Records a change of the box (its row, and the record its init keeps): -errno with err
 * naming the field "store" when it cannot; the caller undoes the change and fails.
 */
int svc_box_persist(struct box *b, paddock_error *err);
/* The same for a change nobody waits for: a failure is logged, not answered. */
void svc_box_persist_or_warn(struct box *b);
int svc_lifecycle_start(struct daemon *d, paddock_error *err);
void svc_lifecycle_stop(struct daemon *d);
void svc_event_sink(const struct paddock_event *ev, void *userdata);

/* the create body: spec fields plus ttl_s, idle_timeout_s, metadata (lifecycle.c) */
int svc_create_parse(struct daemon *d, const char *tenant, json_t *body, paddock_spec **ret_spec,
		     int64_t *ret_ttl, int64_t *ret_idle, paddock_error *err);
/* -EPERM (err names network.mode) when spec asks for more egress than --max-network. */
int svc_check_max_network(struct daemon *d, const paddock_spec *spec, paddock_error *err);
int svc_max_network_parse(const char *s); /* 0..2, or -1 */
bool svc_template_name_valid(const char *s);
/* What a listing of templates (svc_template_collect(), the store's callback) gathers. */
struct svc_template_found {
	json_t *list;		 /* GET /v1/templates: each row's JSON is appended */
	json_t *one;		 /* a lookup by name: the row's JSON */
	const char *skip_tenant; /* the operator's rows a tenant's own of the same name hide */
};
/* A template's row as the API shows it: name, spec, owner, created_at. */
json_t *svc_template_json(const struct paddock_store_template *t);
int svc_template_collect(const struct paddock_store_template *t, void *userdata);
/* The template `name` this tenant may use (its own first): 1 with *ret, 0 when none. */
int svc_template_lookup(struct daemon *d, const char *tenant, const char *name, json_t **ret,
			paddock_error *err);
/*
 * A create body naming "template": the template's spec (the tenant's own, else the
 * operator's) with the body's fields over it, in place; "template" itself goes. 0 when the
 * body names none; -ENOENT (field template) for an unknown one.
 */
int svc_template_apply(struct daemon *d, const char *tenant, json_t *body, paddock_error *err);
/* A copy of the spec of the template `name` the tenant may use, or NULL (none, or no memory). */
json_t *svc_template_spec(struct daemon *d, const char *tenant, const char *name);
