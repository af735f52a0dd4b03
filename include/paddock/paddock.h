/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: the public API of paddock, an agent sandbox for Linux.
 *
 * Every front end (`paddock run`, `paddockd`, `paddock mcp`) uses only what this header
 * declares. Fallible functions return an int: >= 0 on success, -errno on failure, with the
 * caller's paddock_error filled. libpaddock never prints and never exits; it reports what
 * happened through the event sink installed on the context.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PADDOCK_API __attribute__((visibility("default")))

/* Exit statuses of `paddock run`, following docker and podman. */
#define PADDOCK_EXIT_FAILURE	 125 /* paddock itself failed */
#define PADDOCK_EXIT_CANNOT_EXEC 126
#define PADDOCK_EXIT_NOT_FOUND	 127

typedef struct paddock_error {
	int code;	/* positive errno value; 0 means no error */
	char field[64]; /* spec or request field at fault, e.g. "limits.memory"; "" if none */
	char msg[384];	/* "what failed 'subject'", context added on the way out */
} paddock_error;

/* Formats "msg: strerror(code)" into buf; returns buf. */
PADDOCK_API const char *paddock_error_format(const paddock_error *err, char *buf, size_t size);
/* The symbolic name of an errno value ("EINVAL"), or "E?" when unknown. */
PADDOCK_API const char *paddock_errno_name(int code);
/* The inverse: "ENOENT" -> ENOENT; 0 for NULL or a name not in the table. */
PADDOCK_API int paddock_errno_from_name(const char *name);

/*
 * Filling an error, for front ends that report their own failures in the library's form.
 * Both return -code (a code of 0 becomes EIO, resp. EINVAL with a field), so
 * "return paddock_fail(...)" is the whole error path. err may be NULL.
 */
PADDOCK_API int paddock_fail(paddock_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
PADDOCK_API int paddock_fail_field(paddock_error *err, int code, const char *field, const char *fmt,
				   ...) __attribute__((format(printf, 4, 5)));
/* "prefix: <old message>"; keeps code and field. */
PADDOCK_API void paddock_error_prefix(paddock_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
PADDOCK_API void paddock_error_clear(paddock_error *err);
/*
 * An untrusted string made fit for a message: printable ASCII kept, everything else as \xNN,
 * cut to `size` (ending "..." when cut). Returns buf. PADDOCK_ESC uses a buffer of its own
 * that lives until the end of the enclosing block.
 */
PADDOCK_API const char *paddock_escape(const char *s, char *buf, size_t size);
#define PADDOCK_ESC(s) paddock_escape((s), (char[128]){ 0 }, 128)

/* ---- small codecs the front ends share with the library ------------------------------- */

/* Base64 (RFC 4648, standard alphabet, padded) of `len` bytes; NULL when out of memory. */
PADDOCK_API char *paddock_base64_encode(const void *data, size_t len);
/* The value (0..63) of a character of the standard alphabet, -1 for any other. */
PADDOCK_API int paddock_base64_value(unsigned char c);
/*
 * Decodes `len` characters (whitespace ignored, '=' only at the end): -EINVAL for anything
 * else, -ENOMEM. Caller frees *ret (NUL-terminated, the NUL not counted in *ret_len).
 */
PADDOCK_API int paddock_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
/*
 * A size as the spec writes it: "512M", "1G", "4096", "1.5G" (binary units K M G T, an
 * optional "B" or "iB"); negatives, overflow and trailing garbage are -EINVAL.
 */
PADDOCK_API int paddock_parse_size(const char *s, uint64_t *ret);
/* Seconds as a decimal number, "2", "0.5"; > 0 and finite. -EINVAL on bad input. */
PADDOCK_API int paddock_parse_seconds(const char *s, double *ret);

typedef struct paddock_ctx paddock_ctx;
typedef struct paddock_spec paddock_spec;
typedef struct paddock_sandbox paddock_sandbox;
typedef struct paddock_exec paddock_exec;
struct event_base;

/* ---- events --------------------------------------------------------------------------- */

enum paddock_event_level {
	PADDOCK_LEVEL_DEBUG,
	PADDOCK_LEVEL_INFO,
	PADDOCK_LEVEL_WARN,
	PADDOCK_LEVEL_ERROR,
	_PADDOCK_LEVEL_MAX,
};

PADDOCK_API const char *paddock_event_level_to_string(enum paddock_event_level level);

/*
 * One structured event. `json` is the complete JSON line (no trailing newline), envelope
 * first: ts, level, event, sandbox, exec, then the event's own fields. See docs/events.md.
 * The pointers are valid only during the callback.
 */
struct paddock_event {
	enum paddock_event_level level;
	const char *name; /* "sandbox.created", "exec.exited", ... */
	const char *json;
};

typedef void (*paddock_event_fn)(const struct paddock_event *ev, void *userdata);

/* ---- context -------------------------------------------------------------------------- */

/*
 * A context owns the process-wide pieces: the event loop the sandboxes' timers and fds are
 * served from (borrowed; it must outlive the context) and the event sink.
 */
PADDOCK_API int paddock_ctx_new(struct event_base *base, paddock_ctx **ret_ctx, paddock_error *err);
PADDOCK_API paddock_ctx *paddock_ctx_free(paddock_ctx *ctx);
PADDOCK_API void paddock_ctx_set_event_sink(paddock_ctx *ctx, paddock_event_fn fn, void *userdata);
/*
 * Exec ids the context hands out from now on are above `used` (a supervisor that restarts
 * tells it the highest id its records hold, so a new command never takes an earlier one's
 * id). Ids only grow: a lower `used` than before changes nothing.
 */
PADDOCK_API void paddock_ctx_reserve_exec_ids(paddock_ctx *ctx, uint64_t used);

/* ---- spec ----------------------------------------------------------------------------- */

/* A new spec holding every default (docs/spec.md). */
PADDOCK_API int paddock_spec_new(paddock_spec **ret_spec, paddock_error *err);
PADDOCK_API paddock_spec *paddock_spec_free(paddock_spec *spec);

/*
 * Applies a JSON document over the spec: each field present replaces the current value.
 * Unknown fields and wrong types are errors naming the field. On error the spec is unchanged.
 */
PADDOCK_API int paddock_spec_load_json(paddock_spec *spec, const char *json, size_t len,
				       paddock_error *err);

/*
 * Sets one field from its string form, as a command-line flag gives it: ("hostname", "box"),
 * ("limits.timeout_s", "2.5"), ("env", "NAME=VALUE") appends, ("binds", "SRC:DST[:ro]")
 * appends. On error the spec is unchanged.
 */
PADDOCK_API int paddock_spec_set(paddock_spec *spec, const char *field, const char *value,
				 paddock_error *err);

/*
 * The value of limit `name` ("memory", "output", "timeout", ... as in the report's
 * "limits"): bytes, seconds, a count or CPUs. -EINVAL when the name is unknown.
 */
PADDOCK_API int paddock_spec_get_limit(const paddock_spec *spec, const char *name,
				       double *ret_value, paddock_error *err);

/*
 * A deep copy, secrets' values included (paddock_spec_to_json() never writes those, so a copy
 * through JSON would lose them). Caller frees *ret_copy.
 */
PADDOCK_API int paddock_spec_dup(const paddock_spec *spec, paddock_spec **ret_copy,
				 paddock_error *err);
/*
 * The value of the spec's secret `name`, read now from where its source says (this process's
 * environment or a file, or the value given), for a client that hands it to paddockd by value.
 * -ENOENT when the spec has no such secret; errors name "secrets[i].source". Caller wipes
 * (explicit_bzero) and frees *ret_value (NUL-terminated, the NUL not counted).
 */
PADDOCK_API int paddock_spec_secret_value(const paddock_spec *spec, const char *name,
					  uint8_t **ret_value, size_t *ret_len, paddock_error *err);

/* Checks cross-field rules; the create call does it again. */
PADDOCK_API int paddock_spec_validate(const paddock_spec *spec, paddock_error *err);

/* The effective spec as JSON (every field, defaults included). Caller frees *ret_json. */
PADDOCK_API int paddock_spec_to_json(const paddock_spec *spec, char **ret_json, paddock_error *err);

/* ---- sandbox -------------------------------------------------------------------------- */

/* Why an exec ended: a stable string in reports and the API. */
enum paddock_end_reason {
	PADDOCK_END_EXITED,
	PADDOCK_END_SIGNALED,
	PADDOCK_END_TIMEOUT,
	PADDOCK_END_KILLED,   /* the sandbox was destroyed while the command ran */
	PADDOCK_END_ERROR,    /* the command could not be started */
	PADDOCK_END_CPU_TIME, /* limits.cpu_time_s was used up */
	PADDOCK_END_OOM,      /* the memory limit was hit and the OOM killer acted */
	PADDOCK_END_PIDS,     /* the command failed after forks were refused by limits.pids */
	PADDOCK_END_DISK,     /* the command failed with the sandbox's disk full */
	PADDOCK_END_OUTPUT,   /* captured output went over limits.output */
	_PADDOCK_END_MAX,
};

PADDOCK_API const char *paddock_end_reason_to_string(enum paddock_end_reason r);

/*
 * Creates a sandbox: namespaces, root filesystem, init as PID 1 waiting for commands.
 * Returns when init is ready (or failed). The spec is copied; the caller keeps its own.
 * A sandbox has no wall clock of its own: limits.timeout_s is each command's timeout.
 */
PADDOCK_API int paddock_sandbox_create(paddock_ctx *ctx, const paddock_spec *spec,
				       paddock_sandbox **ret_sandbox, paddock_error *err);

/* How a front end that serves many sandboxes (paddockd) wants one created. */
struct paddock_sandbox_opts {
	/*
	 * A directory only the supervisor can reach, where the sandbox's init listens (on a
	 * unix socket named by the sandbox's id) for a supervisor that died and restarted: the
	 * sandbox then outlives its supervisor, and paddock_sandbox_adopt() takes it over
	 * again. NULL: the sandbox dies with its supervisor.
	 */
	const char *reconnect_dir;
	/* with reconnect_dir: how long init waits for a supervisor before it ends (0: 1 hour) */
	int orphan_timeout_s;
	/*
	 * A pooled sandbox, made ahead of demand: namespaces, root and cgroup are made, and init
	 * waits for paddock_sandbox_claim(). No command starts before the claim (-EBUSY). It is
	 * made without the spec's workspace (its /workspace is private until a claim binds one).
	 */
	bool pooled;
	/*
	 * The sandbox's id ("sb_" and 12 of [a-z2-9] but l, o), NULL: a new random one. For a
	 * supervisor that starts again a sandbox it stopped (paddockd's start): it must make
	 * sure no other sandbox of its has that id. -EINVAL (field "id") for another form.
	 */
	const char *id;
};

/* paddock_sandbox_create() with options; opts may be NULL. */
PADDOCK_API int paddock_sandbox_create_with(paddock_ctx *ctx, const paddock_spec *spec,
					    const struct paddock_sandbox_opts *opts,
					    paddock_sandbox **ret_sandbox, paddock_error *err);

/*
 * paddock_sandbox_create_with() without waiting for init to build the root: returns once init
 * is on its way (*ret_sandbox is the sandbox being made, for paddock_sandbox_free() to
 * cancel it: then fn is never called); `fn` is called from the loop when it is ready, with
 * the same sandbox, or with NULL and why not (the sandbox is freed then). For a supervisor
 * that must not wait on sandboxes being made (a warm pool's refill).
 */
typedef void (*paddock_create_fn)(paddock_sandbox *sb, const paddock_error *err, void *userdata);
PADDOCK_API int paddock_sandbox_create_async(paddock_ctx *ctx, const paddock_spec *spec,
					     const struct paddock_sandbox_opts *opts,
					     paddock_create_fn fn, void *userdata,
					     paddock_sandbox **ret_sandbox, paddock_error *err);

/*
 * The template of a spec: its JSON without the fields a claim binds (hostname, env, every
 * limit but limits.required, secrets, workspace, network.allow, network.deny and what
 * network.unlisted asks (its time and bound too), and network.mode as "egress" for both
 * allowlist and open), keys sorted. Two specs with the
 * same template can claim each other's pooled sandboxes. Caller frees.
 */
PADDOCK_API int paddock_spec_template_json(const paddock_spec *spec, char **ret_json,
					   paddock_error *err);

/*
 * Takes a pooled sandbox (made with opts.pooled) for `spec`, which must have its template:
 * binds the spec's hostname, environment, limits (cgroup values, rlimits, disk size),
 * secrets, workspace and network policy, then init confines itself as in a sandbox made
 * cold; from then on the sandbox is the same as one made from `spec`. -EINVAL when the
 * template differs or the sandbox was claimed already; -EOPNOTSUPP (field "workspace") for
 * a workspace a cold create would have init clone itself (rootless, or no idmapped mounts
 * there). An error before init is told of the claim (a limit the cgroup refuses, such as
 * memory below what is in use) leaves the sandbox pooled with its own limits, or kills it
 * when they cannot be written back; an error after kills it.
 */
PADDOCK_API int paddock_sandbox_claim(paddock_sandbox *sb, const paddock_spec *spec,
				      paddock_error *err);

/*
 * What a restarted supervisor needs to take a sandbox over again (created with a
 * reconnect_dir), as an opaque JSON string to keep with the sandbox's spec. Caller frees.
 */
PADDOCK_API int paddock_sandbox_handle(const paddock_sandbox *sb, char **ret_json,
				       paddock_error *err);

/*
 * Takes over a live sandbox whose supervisor died: reconnects to its init, gets its root,
 * its cgroup and the commands it still runs (paddock_sandbox_exec_next(); those that ended
 * meanwhile deliver their results as soon as a callback is set and the loop runs). `spec`
 * must be the sandbox's own. -ECONNREFUSED/-ENOENT when the sandbox is gone.
 */
PADDOCK_API int paddock_sandbox_adopt(paddock_ctx *ctx, const paddock_spec *spec,
				      const char *handle_json, paddock_sandbox **ret_sandbox,
				      paddock_error *err);

/*
 * The supervisor's own record of a sandbox (created with a reconnect_dir), kept by its init
 * for whoever takes the sandbox over next: a string of at most PADDOCK_RECORD_MAX bytes,
 * replacing the one kept before. libpaddock keeps the sandbox's handle and effective spec
 * beside it, so paddock_sandbox_recover() can take the sandbox over from its init alone when
 * the supervisor's store is lost. -EINVAL without a reconnect_dir, -ESRCH when init is gone.
 */
#define PADDOCK_RECORD_MAX (1u << 20)
PADDOCK_API int paddock_sandbox_set_record(paddock_sandbox *sb, const char *record,
					   paddock_error *err);
/*
 * The record init handed back when this sandbox was adopted or recovered (what the last
 * supervisor set), or NULL. Valid while sb is. It comes from inside the sandbox's
 * namespaces: parse it as untrusted input.
 */
PADDOCK_API const char *paddock_sandbox_record(const paddock_sandbox *sb);
/*
 * Takes over the sandbox whose init listens at `socket_path` (a reconnect socket) from what
 * its init kept alone, as paddock_sandbox_adopt() does from the supervisor's records: for a
 * supervisor whose store is lost. The handle and spec come from inside and are checked: the
 * handle must name this socket, init's uid and gid maps (the kernel's) must be the handle's,
 * the spec must parse. On any failure the sandbox is killed, as adopt does; -ENODATA when
 * init keeps no record.
 */
PADDOCK_API int paddock_sandbox_recover(paddock_ctx *ctx, const char *socket_path,
					paddock_sandbox **ret_sandbox, paddock_error *err);

/*
 * Ends the sandbox whose init listens at `socket_path` (a reconnect socket) without taking it
 * over: SIGKILL through init's pidfd, which the kernel gives for the peer of a connection
 * (never a pid from a file); the kernel takes every process of the sandbox with its init. A
 * paused (frozen) sandbox is thawed after the kill, so the kill lands (cgroup v1).
 * Returns 1 when an init was killed: then *ret_pidfd (if not NULL; the caller closes it) is
 * its pidfd, which reads as ready once the sandbox is gone. Returns 0 when nobody listens
 * there (a socket its sandbox left), -errno on failure. Does not remove the socket file.
 */
PADDOCK_API int paddock_orphan_end(const char *socket_path, int *ret_pidfd, paddock_error *err);

/*
 * Whether a supervisor keeps the sandbox `id` whose reconnect socket is at `socket_path`:
 * true for one it holds (adopted, recovered) or ends itself; false for an orphan.
 */
typedef bool (*paddock_orphan_fn)(const char *id, const char *socket_path, void *userdata);
/* Called for an orphan whose init was still listening, once it has been killed. */
typedef void (*paddock_orphan_ended_fn)(const char *id, void *userdata);
/*
 * Sweeps a reconnect_dir when a supervisor starts, after it has adopted what its records
 * name: calls `keep` for each socket in it (names starting with '.' are skipped). An orphan
 * (`keep` false) is ended as by paddock_orphan_end(), `ended` (may be NULL) is told when an
 * init was still listening, and its socket is removed. Returns once every init it killed is
 * gone, or after 5 s in all (the kernel finishes without it). Returns how many inits it
 * killed; -errno when the directory cannot be read. An orphan that cannot be ended does not
 * stop the sweep; its socket stays (its init ends at its orphan timeout, or the next sweep
 * ends it) and the first such failure is returned, as -errno, once the sweep is done.
 * Calls `keep` from inside the walk: it may adopt or recover the sandbox at `socket_path`.
 */
PADDOCK_API int paddock_sweep_orphans(const char *reconnect_dir, paddock_orphan_fn keep,
				      paddock_orphan_ended_fn ended, void *userdata,
				      paddock_error *err);

/*
 * Lets go of a sandbox without ending it (a supervisor shutting down that a successor
 * will adopt): closes every fd and frees the memory; commands keep running. A sandbox
 * without a reconnect_dir ends. Accepts NULL; returns NULL.
 */
PADDOCK_API paddock_sandbox *paddock_sandbox_release(paddock_sandbox *sb);

/*
 * Ends the sandbox without waiting: SIGKILL to its init (the kernel takes every process of
 * the sandbox with it). The exit callback runs from the loop once init is gone; after that,
 * paddock_sandbox_free() returns at once. For a supervisor that must not wait on the kernel
 * tearing a large sandbox down.
 */
PADDOCK_API int paddock_sandbox_end(paddock_sandbox *sb, paddock_error *err);

/* Whether init is alive. */
PADDOCK_API bool paddock_sandbox_running(const paddock_sandbox *sb);

/* Called from the loop once, when the sandbox's init has died (a limit, a kill, a crash). */
typedef void (*paddock_sandbox_fn)(paddock_sandbox *sb, enum paddock_end_reason reason,
				   void *userdata);
PADDOCK_API void paddock_sandbox_set_exit_callback(paddock_sandbox *sb, paddock_sandbox_fn fn,
						   void *userdata);

/* Resource use so far (from the cgroup; zeros where there is none). */
struct paddock_usage {
	int64_t memory_bytes;
	int64_t memory_peak_bytes;
	double cpu_s;
	int64_t pids;
	unsigned execs;		 /* commands started */
	bool cgroup;		 /* the numbers come from a cgroup */
	uint64_t seccomp_denied; /* calls the seccomp filter denied (seccomp.denied events) */
};
PADDOCK_API int paddock_sandbox_usage(paddock_sandbox *sb, struct paddock_usage *ret_usage,
				      paddock_error *err);
/* Calls the seccomp filter denied in the sandbox so far (cheap: no cgroup is read). */
PADDOCK_API uint64_t paddock_sandbox_seccomp_denied(const paddock_sandbox *sb);

/*
 * A new socket (AF_INET or AF_INET6, SOCK_STREAM or SOCK_DGRAM) made inside the sandbox's
 * network namespace, for the caller to connect to the sandbox's own services (or listen
 * on) from outside, without opening the sandbox's network. Close-on-exec; caller closes.
 */
PADDOCK_API int paddock_sandbox_socket(paddock_sandbox *sb, int domain, int type, int *ret_fd,
				       paddock_error *err);

/*
 * paddock_sandbox_socket() without waiting: `fn` gets the socket (the caller owns it) or, with
 * fd -1, why not; from the loop, or from paddock_sandbox_free() (ESRCH) for a request
 * still pending then.
 */
typedef void (*paddock_socket_fn)(paddock_sandbox *sb, int fd, const paddock_error *err,
				  void *userdata);
PADDOCK_API int paddock_sandbox_socket_async(paddock_sandbox *sb, int domain, int type,
					     paddock_socket_fn fn, void *userdata,
					     paddock_error *err);

/*
 * Pause: every process of the sandbox stops where it is (the cgroup freezer, invisible to
 * them; rootless, SIGSTOP from init, which they can notice) and uses no CPU until resumed;
 * memory, files, sockets and policy stay, and each command's timeout is held. While paused,
 * commands and sockets are refused (EBUSY). Both return once it is done; repeating is a no-op.
 */
PADDOCK_API int paddock_sandbox_pause(paddock_sandbox *sb, paddock_error *err);
PADDOCK_API int paddock_sandbox_resume(paddock_sandbox *sb, paddock_error *err);
PADDOCK_API bool paddock_sandbox_paused(const paddock_sandbox *sb);

/* ---- network egress (docs/network.md) ---------------------------------------------------- */

/* What a sandbox's egress did so far: connections, queries, bytes. */
struct paddock_egress_stats {
	uint64_t connections_allowed, connections_denied;
	uint64_t connections_active;
	uint64_t bytes_out, bytes_in; /* sandbox to destination, destination to sandbox */
	uint64_t dns_allowed, dns_denied;
	uint64_t udp_dropped; /* datagrams other than DNS */
};

/*
 * The sandbox's egress counters. -ENOENT (err filled) when the sandbox has no egress:
 * network.mode "none".
 */
PADDOCK_API int paddock_sandbox_egress_stats(const paddock_sandbox *sb,
					     struct paddock_egress_stats *ret_stats,
					     paddock_error *err);

/*
 * Replaces the network policy of a live sandbox with `from`'s network section (mode "none",
 * "allowlist" or "open"; rules). New connections and DNS queries follow it at once, and so
 * do those already open: each one the new policy refuses (its host and port, and the address
 * it was connected to) is closed and recorded. Returns how many were closed (>= 0). A sandbox
 * created with mode "none" has no egress to change: -EPERM. On error nothing changes.
 */
PADDOCK_API int paddock_sandbox_set_network(paddock_sandbox *sb, const paddock_spec *from,
					    paddock_error *err);

/*
 * Names are resolved (for every sandbox of ctx that has egress) only from this hosts-style
 * file ("ADDRESS NAME..." per line), not the system's resolver: for tests and air-gapped
 * hosts. Call before the first sandbox with egress. The addresses still face the policy.
 */
PADDOCK_API int paddock_ctx_set_resolve_hosts(paddock_ctx *ctx, const char *path,
					      paddock_error *err);

/*
 * HTTPS the proxy intercepts (hosts a secret is bound to) is re-encrypted to the real host
 * and verified against the system's trust store and each CA file (PEM) added here: an
 * internal CA, or a test's. Call before the first sandbox with secrets.
 */
PADDOCK_API int paddock_ctx_add_upstream_ca(paddock_ctx *ctx, const char *path, paddock_error *err);

/* ---- asking a person: network.unlisted "ask" (docs/network.md) ------------------------ */

/*
 * A sandbox whose policy says network.unlisted "ask" holds a connection to a destination no
 * rule names, and asks: a *decision* is pending for that host and port (connections to the
 * same destination wait for the same decision) until it is answered or its time
 * (network.ask_timeout_s) runs out, which denies it. At most network.ask_max_pending
 * decisions wait at once; a connection beyond them is refused at once.
 */
enum paddock_ask_answer {
	PADDOCK_ASK_ALLOW_ONCE, /* the connections waiting now go ahead; the next ones ask again */
	PADDOCK_ASK_ALLOW_ALWAYS, /* as once, and an allow rule "host:port" joins the policy */
	PADDOCK_ASK_DENY,	  /* the connections waiting now are refused (403) */
	_PADDOCK_ASK_MAX,
};

/* "allow_once", "allow_always", "deny": the API's words */
PADDOCK_API const char *paddock_ask_answer_to_string(enum paddock_ask_answer a);
/* -EINVAL when unknown */
PADDOCK_API int paddock_ask_answer_from_string(const char *s);

/* One decision. Its strings live as long as the decision (or the callback, once decided). */
struct paddock_ask {
	uint64_t id;	     /* unique within its sandbox, never reused */
	const char *sandbox; /* the sandbox's id */
	/*
	 * The destination: a DNS name (letters, digits, '-' and '.' only: what a sandbox sent,
	 * normalised, never other text) or an IP address.
	 */
	const char *host;
	uint16_t port;
	const char *rule;     /* the rule PADDOCK_ASK_ALLOW_ALWAYS adds: "api.example.com:443" */
	const char *via;      /* how the first connection came: "proxy", "socks5", "transparent" */
	unsigned connections; /* held waiting for the answer now */
	int64_t asked_ms;     /* when it was asked (ms since the epoch) */
	int64_t expires_ms;   /* when it is denied if nobody answers */
	/* once decided: */
	bool decided;
	enum paddock_ask_answer answer;
	bool timed_out;	 /* nobody answered in time (answer DENY) */
	const char *by;	 /* who answered: the caller's word ("api", "terminal", "mcp"), or
			  * "timeout", "policy" (a new policy decided it), "sandbox" (it ended) */
	const char *who; /* more about who, as the answerer gave it, or NULL */
};

/*
 * Called from the loop when a decision is asked (ask->decided false) and once more when it
 * ends, however it ends (decided true): answered, timed out, decided by a new policy, or the
 * sandbox ending (also from paddock_sandbox_free()). The handler may answer at once
 * (paddock_sandbox_answer() from the first call), or later. One handler per context.
 */
typedef void (*paddock_ask_fn)(paddock_sandbox *sb, const struct paddock_ask *ask, void *userdata);
PADDOCK_API void paddock_ctx_set_ask_handler(paddock_ctx *ctx, paddock_ask_fn fn, void *userdata);

/* The decisions pending now, oldest first: up to `max` pointers into ret; returns how many. */
PADDOCK_API size_t paddock_sandbox_asks(const paddock_sandbox *sb, const struct paddock_ask **ret,
					size_t max);

/*
 * Answers pending decision `id`: its connections go ahead or are refused at once, and the
 * answer is recorded (event egress.answered) with `by` (required: the channel, e.g. "api")
 * and `who` (may be NULL); both printable ASCII, at most 64 and 128 bytes. -ENOENT (field
 * "id") when no such decision is pending (answered, timed out, never asked); -ENOSPC for
 * ALLOW_ALWAYS when network.allow is full (nothing changes; allow once instead).
 */
PADDOCK_API int paddock_sandbox_answer(paddock_sandbox *sb, uint64_t id,
				       enum paddock_ask_answer answer, const char *by,
				       const char *who, paddock_error *err);

/* What a sandbox asked so far. */
struct paddock_ask_stats {
	uint64_t asked;			       /* decisions asked */
	uint64_t allowed_once, allowed_always; /* answered so */
	uint64_t denied;		       /* answered deny */
	uint64_t timed_out;		       /* nobody answered in time */
	uint64_t refused_busy;		       /* connections refused: too many pending */
	uint64_t pending;		       /* decisions waiting now */
};
/* -ENOENT when the sandbox has no egress. */
PADDOCK_API int paddock_sandbox_ask_stats(const paddock_sandbox *sb,
					  struct paddock_ask_stats *ret_stats, paddock_error *err);

/* Walks the sandbox's commands that have not been delivered yet: NULL starts, NULL ends. */
PADDOCK_API paddock_exec *paddock_sandbox_exec_next(paddock_sandbox *sb, paddock_exec *prev);

/*
 * Kills every process of the sandbox and releases it: after this returns no process,
 * mount, namespace or fd of the sandbox remains. Execs still pending are released without
 * their callbacks (the caller is tearing down). Accepts NULL; returns NULL.
 */
PADDOCK_API paddock_sandbox *paddock_sandbox_free(paddock_sandbox *sb);

PADDOCK_API const char *paddock_sandbox_id(const paddock_sandbox *sb);
/* The host pid of the sandbox's init, for diagnostics only (hold no pid for long). */
PADDOCK_API pid_t paddock_sandbox_init_pid(const paddock_sandbox *sb);
/* Whether Landlock is in force for the commands of this sandbox, and its ABI (0: none). */
PADDOCK_API int paddock_sandbox_landlock_abi(const paddock_sandbox *sb);

/*
 * Kills every process of the sandbox now, for `reason` (e.g. PADDOCK_END_OUTPUT when a front
 * end's output limit was hit). Running execs end with that reason; the sandbox stays to be
 * freed. Idempotent: the first reason wins.
 */
PADDOCK_API int paddock_sandbox_kill(paddock_sandbox *sb, enum paddock_end_reason reason,
				     paddock_error *err);

/*
 * Removes the idle cgroups paddock keeps for reuse (paddock/<slot> below each hierarchy),
 * leaving those of live sandboxes. Returns how many were removed, or -errno. For operators
 * (`paddock gc`) and tests; sandboxes never need it.
 */
PADDOCK_API int paddock_gc(paddock_error *err);

/*
 * True when this process is root of the host (euid 0 in the initial user namespace, with
 * root's capabilities): sandboxes then get id ranges and cgroups of their own. Root of a
 * user namespace (`unshare -r`, nested containers) is not, and runs rootless, as any other
 * user does. Front ends use it to pick root's defaults (state directory, socket path).
 */
PADDOCK_API bool paddock_host_root(void);

/* ---- files: include/paddock/files.h ------------------------------------------------ */

/* ---- exec ----------------------------------------------------------------------------- */

struct paddock_result {
	enum paddock_end_reason reason;
	int exit_code;	   /* when reason is EXITED, else -1 */
	int signal;	   /* when the command was killed by a signal, else 0 */
	double wall_s;	   /* from the request to the exit report */
	double cpu_user_s; /* of the command and its waited-for children */
	double cpu_sys_s;
	int64_t peak_rss_bytes; /* largest RSS of the command or a waited-for child */
	/* from the sandbox's cgroup when it has one, else peak_rss_bytes */
	int64_t peak_memory_bytes;
	int64_t oom_kills;	/* OOM kills in the sandbox while the command ran (cgroup only) */
	int64_t pids_peak;	/* most processes at once, -1 when the kernel does not say */
	int64_t seccomp_denied; /* calls the seccomp filter denied in the sandbox meanwhile */
	bool output_truncated;	/* output went over the limit and the rest was dropped */
	bool disk_full;		/* the sandbox's disk had no space left when it ended */
	/* how each limit was enforced, as JSON (see docs/report.md); owned by the library */
	const char *limits_json;
	paddock_error error; /* when reason is ERROR: why it could not start */
};

/*
 * The exit status `paddock run` uses for a result: the exit code, 128+N for signal N,
 * 126/127 when the command could not be executed or found, 125 for other errors.
 */
PADDOCK_API int paddock_result_exit_status(const struct paddock_result *res);
/* The result as a JSON object (docs/report.md). Caller frees *ret_json. */
PADDOCK_API int paddock_result_to_json(const struct paddock_result *res, char **ret_json,
				       paddock_error *err);

/*
 * What libpaddock keeps of a command's output (paddock_exec_opts.capture): the exec session,
 * one behaviour for every front end (docs/architecture.md, "The exec session").
 */
enum paddock_capture {
	PADDOCK_CAPTURE_NONE = 0, /* the caller's fds, or the pipes it takes (pipe_streams) */
	/*
	 * stdout and stderr whole, together up to an output limit (limits.output unless the
	 * request says less); past it the rest is dropped, the command ends with reason
	 * "output" and its result says output_truncated.
	 */
	PADDOCK_CAPTURE_ALL,
	/* the newest bytes of each stream (1 MiB unless asked); nothing ends the command */
	PADDOCK_CAPTURE_RING,
	/*
	 * as ALL, but nothing is kept: each chunk goes to the output callback as it is read
	 * (`paddock run --output-limit` relays it to the terminal)
	 */
	PADDOCK_CAPTURE_RELAY,
	_PADDOCK_CAPTURE_MAX,
};

struct paddock_exec_opts {
	const char *const *argv; /* required, argv[0] non-empty; PATH is searched */
	const char *const *env;	 /* NAME=VALUE added over the spec's environment; may be NULL */
	const char *cwd;	 /* NULL: the spec's cwd */
	/*
	 * The command's stdin, stdout and stderr: fds of the caller, dup'ed into the command
	 * (the caller keeps its own). -1 means /dev/null. Ignored for the streams a pty serves.
	 */
	int fds[3];
	/*
	 * Give the command a new pseudo-terminal inside the sandbox as controlling terminal,
	 * on every stream whose pty_streams bit (1 << fd) is set. The master side is available
	 * from paddock_exec_pty_fd(); the caller relays it.
	 */
	unsigned pty_streams;
	unsigned short pty_rows, pty_cols;
	/*
	 * Streams (bit 1 << fd) served by a pipe init makes: the caller takes its end with
	 * paddock_exec_take_fd(). init keeps a copy for a supervisor that restarts, so the
	 * command's stdin sees EOF only after paddock_exec_close_stdin().
	 */
	unsigned pipe_streams;
	/*
	 * Ends the command (its process group) with reason "timeout" after this many seconds;
	 * 0: the spec's limits.timeout_s (every command's wall clock, for every front end);
	 * negative: never (a background process that runs until it is stopped).
	 */
	double timeout_s;
	/*
	 * libpaddock reads the command's output itself and keeps it (enum paddock_capture):
	 * stdout and stderr are pipes (or the pty) it reads, stdin a queue it writes
	 * (paddock_exec_write_stdin()) when pipe_streams has bit 0 or a pty serves stdin, else
	 * /dev/null. capture_bytes: ALL's output limit (0: limits.output), RING's bytes kept of
	 * each stream (0: 1 MiB). The exec can outlive its end: paddock_exec_ref().
	 */
	enum paddock_capture capture;
	uint64_t capture_bytes;
	/*
	 * Asynchronous start: paddock_exec_start() returns once the request is sent, and this
	 * is called from the loop (with the exec's userdata) when the command runs: its pid and
	 * fds are known from then on; take them here: a short command can end, and its exec be
	 * freed, within the same turn of the loop. A command that cannot start never gets it; it
	 * ends through the exit callback with reason "error". NULL: paddock_exec_start() waits
	 * (up to 30 s).
	 */
	void (*on_started)(paddock_exec *ex, void *userdata);
	/*
	 * fds[0] is a terminal of the sandbox (paddock_sandbox_open_pty(), include/paddock/
	 * oci.h): it becomes the command's controlling terminal, as a pty_streams one does.
	 */
	bool ctty;
	/*
	 * With user_set, the command runs as uid/gid (ids inside the sandbox) instead of the
	 * sandbox user 1000, without capabilities as the sandbox user: an OCI container's
	 * process.user (a Kubernetes pod's pause container is 65535). As root any id below 65536
	 * (the sandbox's range); rootless only 1000 exists. Refused (field "user") in a sandbox
	 * whose spec's user is "root": its commands are uid 0.
	 */
	bool user_set;
	uint32_t uid, gid;
	/*
	 * A seccomp program (struct sock_filter[], filter_len bytes, at most 4096 instructions)
	 * the command loads on top of the sandbox's own filter, after no_new_privs and right
	 * before its exec: it can only narrow (an OCI container's linux.seccomp). Borrowed for
	 * the call. Its own notifications cannot be: the sandbox's filter has the listener.
	 */
	const void *filter;
	size_t filter_len;
};

/* Called once when the exec ends; `res` is valid during the call. */
typedef void (*paddock_exec_fn)(paddock_exec *ex, const struct paddock_result *res, void *userdata);

/*
 * Starts a command in the sandbox. Returns once init has forked it (or refused), or at once
 * with opts->on_started; the callback runs from the event loop when it ends. The exec belongs to
 * the sandbox: it is freed after its callback returns, or with the sandbox.
 */
PADDOCK_API int paddock_exec_start(paddock_sandbox *sb, const struct paddock_exec_opts *opts,
				   paddock_exec_fn fn, void *userdata, paddock_exec **ret_exec,
				   paddock_error *err);

/* Sends a signal to the command (its process group). */
PADDOCK_API int paddock_exec_signal(paddock_exec *ex, int sig, paddock_error *err);
/* The pty master, owned by the exec, or -1 when the exec has no pty. */
PADDOCK_API int paddock_exec_pty_fd(const paddock_exec *ex);
PADDOCK_API int paddock_exec_resize(paddock_exec *ex, unsigned short rows, unsigned short cols,
				    paddock_error *err);
/* The command's pid inside the sandbox. */
PADDOCK_API pid_t paddock_exec_pid(const paddock_exec *ex);
/* The command's id, unique in its sandbox, also after the sandbox was adopted. */
PADDOCK_API uint64_t paddock_exec_id(const paddock_exec *ex);
/* The pipe_streams and pty_streams the command was started with. */
PADDOCK_API unsigned paddock_exec_pipe_streams(const paddock_exec *ex);
PADDOCK_API unsigned paddock_exec_pty_streams(const paddock_exec *ex);
/*
 * Takes the caller's end of stream `fd`'s pipe (stdin: the write end; stdout, stderr: the
 * read end) or, for a pty stream, a duplicate of the master; the caller closes it. -1 when
 * there is none or it was taken.
 */
PADDOCK_API int paddock_exec_take_fd(paddock_exec *ex, int fd);
/* Closes init's copy of the stdin pipe (and the exec's, if not taken): stdin reaches EOF. */
PADDOCK_API int paddock_exec_close_stdin(paddock_exec *ex, paddock_error *err);
/* Replaces the callback (for commands of an adopted sandbox). */
PADDOCK_API void paddock_exec_set_callback(paddock_exec *ex, paddock_exec_fn fn, void *userdata);
/* Kills the command's process group now; its result says `reason` (e.g. OUTPUT). */
PADDOCK_API int paddock_exec_terminate(paddock_exec *ex, enum paddock_end_reason reason,
				       paddock_error *err);

/* ---- the exec session: a command's output and stdin, kept by libpaddock ---------------- */

/*
 * An exec belongs to its sandbox and is freed after its exit callback returns. A reference
 * keeps it (its output, its result) readable after that, and after its sandbox is freed;
 * everything else on such an exec fails with ESRCH. unref returns NULL.
 */
PADDOCK_API paddock_exec *paddock_exec_ref(paddock_exec *ex);
PADDOCK_API paddock_exec *paddock_exec_unref(paddock_exec *ex);
/* The result once the command ended (valid while the exec is), else NULL. */
PADDOCK_API const struct paddock_result *paddock_exec_result(const paddock_exec *ex);

/*
 * Captures a command that was started without (one of an adopted sandbox, whose pipes init
 * kept): as paddock_exec_opts.capture would have. -EBUSY when captured already.
 */
PADDOCK_API int paddock_exec_capture(paddock_exec *ex, enum paddock_capture mode, uint64_t bytes,
				     paddock_error *err);
/*
 * Called with every chunk of output kept, as it is read: stream 1 (stdout, or the pty) or 2
 * (stderr). The callback may pause the output or drop its reference.
 */
typedef void (*paddock_output_fn)(paddock_exec *ex, int stream, const void *data, size_t len,
				  void *userdata);
PADDOCK_API void paddock_exec_set_output_callback(paddock_exec *ex, paddock_output_fn fn,
						  void *userdata);
/*
 * Copies up to `size` kept bytes of `stream` from offset *from (counted from the stream's
 * first byte kept) into buf and advances *from; returns how many. When a ring dropped the
 * bytes at *from, *from moves to the oldest still kept first: the caller sees the jump.
 */
PADDOCK_API size_t paddock_exec_read_output(const paddock_exec *ex, int stream, uint64_t *from,
					    void *buf, size_t size);
/* The offset after the last byte kept of `stream`; and all the command wrote to it. */
PADDOCK_API uint64_t paddock_exec_output_end(const paddock_exec *ex, int stream);
PADDOCK_API uint64_t paddock_exec_output_read(const paddock_exec *ex, int stream);
/*
 * Stops (or resumes) reading the output, for a reader that fell behind: the command blocks
 * on its full pipe meanwhile, as on a slow terminal.
 */
PADDOCK_API void paddock_exec_pause_output(paddock_exec *ex, bool paused);
/*
 * Queues bytes for the command's stdin, written as it reads: all or nothing, at most 1 MiB
 * waiting (-EAGAIN, field "stdin", beyond: nothing was taken); -EPIPE once stdin is closed.
 * paddock_exec_close_stdin() gives EOF once the queue has been read.
 */
PADDOCK_API int paddock_exec_write_stdin(paddock_exec *ex, const void *data, size_t len,
					 paddock_error *err);

/* ---- the code interpreter (docs/code.md) ------------------------------------------------ */

/*
 * A server inside the sandbox that runs code in Jupyter kernels (contexts: Python, bash) and
 * keeps their state between runs; it speaks E2B's code-interpreter protocol on
 * 127.0.0.1:PADDOCK_CODE_PORT of the sandbox's network namespace. It runs as a command of the
 * sandbox (the sandbox user, every limit and rule) and needs python3 with ipykernel and
 * jupyter_client in the sandbox's root.
 */
#define PADDOCK_CODE_PORT     49999
#define PADDOCK_CODE_PORT_STR "49999"

/* Starts the server unless it runs or is starting; returns without waiting for it. */
PADDOCK_API int paddock_code_start(paddock_sandbox *sb, paddock_error *err);
/*
 * Once the server takes connections (started first if need be), `fn` gets a socket made in
 * the sandbox's network namespace: connect it to 127.0.0.1:PADDOCK_CODE_PORT. fd -1 with why
 * when the server cannot start (ENOENT: no python3; EIO: it ended, with the end of its
 * stderr; ETIMEDOUT) or the sandbox ends. From the loop, or from paddock_sandbox_free().
 */
PADDOCK_API int paddock_code_socket_async(paddock_sandbox *sb, paddock_socket_fn fn, void *userdata,
					  paddock_error *err);
/* Whether the server runs (or is starting). */
PADDOCK_API bool paddock_code_running(const paddock_sandbox *sb);
/* Ends the server and every context it holds; the next use starts a new one. */
PADDOCK_API int paddock_code_stop(paddock_sandbox *sb, paddock_error *err);

#ifdef __cplusplus
}
#endif

/* the file API is declared apart, for the front ends that need it */
#include "paddock/files.h"
