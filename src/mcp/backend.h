/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where `paddock mcp` gets its sandboxes: libpaddock in this process (backend-embedded.c,
 * the default) or a running paddockd (backend-daemon.c, `--connect SOCKET`). The tools
 * (tools.c) speak only this interface, so both behave alike to an agent.
 *
 * Every call runs on the server's event loop thread. Errors: -errno with err filled; the
 * err's field names the tool argument at fault where one is ("path", "process_id", ...).
 * Sandbox ids are the backend's own (paddock's sandbox id); process ids are strings the
 * backend makes, unique within its sandbox.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "paddock/paddock.h"

struct event_base;
struct http_conn;
struct http_response;
struct mcp_backend;
struct mcp_pending;

/* A command to run: argv, plus what the tool call asked for. */
struct mcp_exec_req {
	const char *const *argv; /* argv[0] non-empty */
	const char *const *env;	 /* NAME=VALUE over the sandbox's environment; may be NULL */
	const char *cwd;	 /* absolute; NULL: the sandbox's working directory */
	const char *stdin_data;	 /* foreground: bytes for stdin, then EOF; NULL: /dev/null */
	size_t stdin_len;
	double timeout_s;  /* > 0: the command ends with reason "timeout" after this */
	size_t output_max; /* bytes of each stream kept (the rest is counted and dropped) */
};

/*
 * An answer of the sandbox's code interpreter (docs/code.md): `conn` (the callee's to free)
 * positioned at the body of an answer whose head is `resp`, whatever its status; or NULL
 * with err filled when there is no answer (no such sandbox, the interpreter cannot start).
 */
typedef void (*mcp_code_fn)(struct http_conn *conn, const struct http_response *resp,
			    const paddock_error *err, void *userdata);

/*
 * The outcome of a foreground command, as the run_command tool returns it
 * (docs/mcp.md): {"exit_code": int|null, "reason": str, "signal": int|null,
 * "stdout": str, "stderr": str, "stdout_truncated": bool, "stderr_truncated": bool,
 * "stdout_bytes": int, "stderr_bytes": int, "report": {docs/report.md}}. Output that is not
 * valid UTF-8 has each bad byte replaced by U+FFFD. `result` is the callee's to keep
 * (a new reference) or NULL with err filled when the command could not be run at all.
 */
typedef void (*mcp_exec_done_fn)(json_t *result, const paddock_error *err, void *userdata);

/*
 * A decision one of the backend's sandboxes waits for (network.unlisted "ask",
 * docs/network.md): told once when it is asked, once more when it ends (decided).
 */
struct mcp_ask {
	const char *sandbox; /* the backend's sandbox id */
	uint64_t id;
	const char *host; /* a DNS name or an address: nothing else */
	uint16_t port;
	const char *rule;   /* what allow_always adds: "host:port" */
	int64_t expires_ms; /* when no answer denies it (ms since the epoch), 0: unknown */
	bool decided;
	const char *answer; /* once decided: "allow_once", "allow_always", "deny" */
	const char *by;	    /* once decided: who answered ("timeout", ...) */
};
typedef void (*mcp_ask_fn)(const struct mcp_ask *ask, void *userdata);

struct mcp_backend_ops {
	const char *name; /* "embedded", "paddockd" */

	/*
	 * Creates a sandbox from `spec` (already checked against the operator's policy). It
	 * lives until destroy() or the backend is freed: it has no wall-clock limit of its
	 * own; spec's limits.timeout_s is the default timeout of each command.
	 */
	int (*create)(struct mcp_backend *b, const paddock_spec *spec, char **ret_id,
		      paddock_error *err);
	/* Ends the sandbox and everything in it. -ENOENT for an unknown id. */
	int (*destroy)(struct mcp_backend *b, const char *id, paddock_error *err);
	/*
	 * Pauses (pause true) or resumes the sandbox's processes; 0 also when it already was
	 * so. While paused, commands and the code interpreter fail (-EBUSY, or paddockd's
	 * 409) and files still work. -ENOENT unknown, -ESRCH ended.
	 */
	int (*set_paused)(struct mcp_backend *b, const char *id, bool pause, paddock_error *err);

	/*
	 * Runs a command to its end; `fn` is called once, from the loop (never from inside
	 * this call). *ret_pending lets the caller cancel it (cancel(): the command is
	 * killed and `fn` is never called).
	 */
	int (*exec)(struct mcp_backend *b, const char *id, const struct mcp_exec_req *req,
		    mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
		    paddock_error *err);
	void (*cancel)(struct mcp_backend *b, struct mcp_pending *p);

	/* Files: paths are absolute, as the sandbox sees them (tools.c made them so). */
	/*
	 * Reads at most `max` bytes from `offset`; *ret_size: the file's whole size. Caller
	 * frees *ret_data. -EISDIR / -EINVAL (not a regular file), -ENOENT.
	 */
	int (*read_file)(struct mcp_backend *b, const char *id, const char *path, uint64_t offset,
			 size_t max, char **ret_data, size_t *ret_len, uint64_t *ret_size,
			 paddock_error *err);
	/* Writes the whole file atomically with `mode`, creating missing parent directories. */
	int (*write_file)(struct mcp_backend *b, const char *id, const char *path, const void *data,
			  size_t len, unsigned mode, paddock_error *err);
	/*
	 * The entries below `path` down to `depth` (1: its children), at most max_entries:
	 * -E2BIG beyond. *ret_entries: a JSON array of {"path", "name", "type" ("file", "dir",
	 * "symlink", "other"), "size", "mode" ("0644"), "mtime" (RFC 3339 UTC),
	 * "symlink_target" (string or null)}.
	 */
	int (*list_dir)(struct mcp_backend *b, const char *id, const char *path, unsigned depth,
			size_t max_entries, json_t **ret_entries, paddock_error *err);

	/*
	 * Background processes. start: the command runs on (stdin /dev/null, no timeout unless
	 * req->timeout_s); *ret_proc: its id (caller frees), *ret_pid its pid inside.
	 */
	int (*bg_start)(struct mcp_backend *b, const char *id, const struct mcp_exec_req *req,
			char **ret_proc, int *ret_pid, paddock_error *err);
	/*
	 * What the process wrote since the last bg_output() of it (at most `max` bytes per
	 * stream: the oldest beyond are dropped and counted), and its state: a JSON object
	 * {"running": bool, "stdout": str, "stderr": str, "stdout_dropped": int,
	 * "stderr_dropped": int, "exit_code": int|null, "reason": str|null, "report": obj|null}.
	 * -ENOENT (field "process_id") for an unknown process.
	 */
	int (*bg_output)(struct mcp_backend *b, const char *id, const char *proc, size_t max,
			 json_t **ret, paddock_error *err);
	/* Sends `sig` to the process (its process group). -ENOENT unknown, -ESRCH ended. */
	int (*bg_signal)(struct mcp_backend *b, const char *id, const char *proc, int sig,
			 paddock_error *err);

	/*
	 * One HTTP request to the sandbox's code interpreter (started on first use): `method`
	 * and `path` ("/execute", "/contexts") with a JSON body. `fn` gets the answer once its
	 * head is in, exactly once, maybe from inside this call; -errno (fn never called) when
	 * the request could not be made at all.
	 */
	int (*code_request)(struct mcp_backend *b, const char *id, const char *method,
			    const char *path, const char *body, size_t len, mcp_code_fn fn,
			    void *userdata, paddock_error *err);

	/*
	 * From now on `fn` hears of the sandbox's decisions, from the loop (those pending
	 * now too); fn NULL: no more. Nothing is heard after the sandbox is destroyed.
	 */
	int (*watch_asks)(struct mcp_backend *b, const char *id, mcp_ask_fn fn, void *userdata,
			  paddock_error *err);
	/* Answers decision `ask` of the sandbox; `who` is recorded. -ENOENT: not pending. */
	int (*answer)(struct mcp_backend *b, const char *id, uint64_t ask,
		      enum paddock_ask_answer answer, const char *who, paddock_error *err);

	/* Destroys every sandbox this backend created, then frees it. NULL is fine. */
	void (*free)(struct mcp_backend *b);
};

struct mcp_backend {
	const struct mcp_backend_ops *ops;
};

/* libpaddock in this process, on `base` (borrowed). */
int mcp_backend_embedded_new(struct event_base *base, const char *resolve_hosts,
			     const char *upstream_ca, struct mcp_backend **ret, paddock_error *err);
/* Every event of the embedded sandboxes (JSON lines, docs/events.md) to `f`; NULL: none. */
int mcp_backend_embedded_set_events(struct mcp_backend *b, FILE *f); /* 0, -errno */
/* paddockd at the unix socket `socket_path`; sandboxes get idle_timeout_s (0: none). */
int mcp_backend_daemon_new(struct event_base *base, const char *socket_path,
			   unsigned idle_timeout_s, struct mcp_backend **ret, paddock_error *err);

/* Helpers both backends use (backend-util.c). */
/* A JSON string of `len` bytes, each byte of invalid UTF-8 (and NUL) replaced by U+FFFD. */
json_t *mcp_json_text(const char *data, size_t len);
/* "2026-12-02T18:46:48.123Z" for nanoseconds since the epoch, into buf (>= 32 bytes). */
const char *mcp_rfc3339(int64_t ns, char *buf, size_t size);
