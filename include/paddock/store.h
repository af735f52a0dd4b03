/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: paddockd's durable state (sandboxes, their execs, events) in one SQLite file.
 *
 * Everything the daemon needs to re-adopt its sandboxes after a crash or a `kill -9` lives
 * here. Each function that changes state is one transaction of its own, durable once it has
 * returned (WAL, synchronous=NORMAL: a process crash loses nothing committed, a power cut
 * can lose the last transactions but never corrupts the file); paddock_store_begin() and
 * paddock_store_commit() group several changes into one.
 *
 * A store is used from one thread at a time. Strings are stored byte for byte as given, so
 * the caller bounds what a client or a sandbox sends; the *_json strings are stored as text,
 * not parsed. Every function returns >= 0 on success and -errno on failure with `err`
 * filled: -EINVAL for a missing argument, -ENOENT for an unknown sandbox or exec, and for
 * SQLite's own failures -ENOMEM, -ENOSPC (disk full), -EBUSY (locked by another process
 * beyond the 5 s busy timeout), -EROFS, -EUCLEAN for a damaged file (corrupt, or not a
 * database: nothing a retry mends), the errno of a failed system call for an I/O error, or
 * -EIO for the rest, with SQLite's message in err->msg.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct paddock_store paddock_store;

/*
 * Opens the store at `path`, creating it (mode 0600, whatever the umask) when missing, and
 * migrates its schema to this version of libpaddock in one transaction. An existing file
 * keeps its mode. A path whose last component is a symlink is refused (-ELOOP); a file that
 * is not a SQLite database fails with -EUCLEAN ("file is not a database"); a schema newer
 * than this libpaddock understands fails with -EPROTO and leaves the file untouched.
 */
PADDOCK_API int paddock_store_open(const char *path, paddock_store **ret_store, paddock_error *err);
/*
 * The path of a store kept in this process's memory only, gone when it is freed: for a core
 * whose sandboxes die with its process (`paddock mcp`), which has nothing to keep on disk.
 */
#define PADDOCK_STORE_MEMORY ":memory:"
/* Closes the store, rolling back an open transaction. Accepts NULL; returns NULL. */
PADDOCK_API paddock_store *paddock_store_free(paddock_store *st);

/* ---- sandboxes ------------------------------------------------------------------------ */

struct paddock_store_sandbox {
	const char *id; /* "sb_..." primary key */
	const char *tenant;
	const char *state;	   /* "running", "paused", "stopped", "deleting" */
	const char *spec_json;	   /* effective spec */
	const char *metadata_json; /* object; NULL is stored as "{}" */
	const char *handle_json;   /* opaque reattach handle from libpaddock; may be NULL */
	int64_t created_ms, expires_ms, last_active_ms; /* unix epoch ms */
	int64_t ttl_s, idle_timeout_s;
	const char *on_timeout; /* "kill" or "pause"; NULL is stored as "kill" */
	int64_t next_seq;	/* not stored by put: reading side only, see list_sandboxes */
};

/*
 * Inserts the sandbox, or replaces every stored field of the row with the same id. Its execs
 * and events are kept (this is an update, not a delete and insert). id, tenant, state and
 * spec_json are required (-EINVAL).
 */
PADDOCK_API int paddock_store_put_sandbox(paddock_store *st, const struct paddock_store_sandbox *sb,
					  paddock_error *err);
/* Sets the state of sandbox `id`: -ENOENT when there is no such sandbox. */
PADDOCK_API int paddock_store_set_state(paddock_store *st, const char *id, const char *state,
					paddock_error *err);
/* Sets the expiry and last activity of sandbox `id`: -ENOENT when there is none. */
PADDOCK_API int paddock_store_set_times(paddock_store *st, const char *id, int64_t expires_ms,
					int64_t last_active_ms, paddock_error *err);
/*
 * Deletes sandbox `id` and, in the same transaction, its execs and events: -ENOENT when
 * there is no such sandbox.
 */
PADDOCK_API int paddock_store_delete_sandbox(paddock_store *st, const char *id, paddock_error *err);
/*
 * Calls fn for every sandbox, ordered by created_ms (then id). The struct and its strings
 * are valid during the callback only. next_seq is one more than the seq of the sandbox's
 * newest stored event (1 when it has none): every event it has is below next_seq, every
 * event added later is at or above it, so next_seq - 1 is the `after_seq` that lists only
 * new events. fn may call the other store functions. A callback returning < 0 stops the walk
 * and that value is returned (err then says so); otherwise the number of sandboxes walked.
 */
PADDOCK_API int paddock_store_list_sandboxes(paddock_store *st,
					     int (*fn)(const struct paddock_store_sandbox *sb,
						       void *userdata),
					     void *userdata, paddock_error *err);

/* ---- execs ---------------------------------------------------------------------------- */

struct paddock_store_exec {
	const char *sandbox_id;
	uint64_t exec_id;      /* unique within the sandbox, at most INT64_MAX */
	int32_t pid;	       /* inside the sandbox */
	const char *tag;       /* may be NULL */
	const char *argv_json; /* array */
	bool background, pty;
	int64_t started_ms, ended_ms; /* ended_ms 0 while running */
	const char *result_json;      /* NULL while running */
};

/*
 * Inserts the exec, or replaces the one with the same (sandbox_id, exec_id). sandbox_id and
 * argv_json are required; -ENOENT when the sandbox is not stored, -EINVAL when exec_id is
 * above INT64_MAX.
 */
PADDOCK_API int paddock_store_put_exec(paddock_store *st, const struct paddock_store_exec *ex,
				       paddock_error *err);
/*
 * Records the end of an exec: ended_ms (> 0) and result_json (required). -ENOENT when there
 * is no such exec.
 */
PADDOCK_API int paddock_store_end_exec(paddock_store *st, const char *sandbox_id, uint64_t exec_id,
				       int64_t ended_ms, const char *result_json,
				       paddock_error *err);
/*
 * Calls fn for every exec of sandbox `sandbox_id`, ordered by exec_id; valid during the
 * callback only. An unknown sandbox has no execs. Stops and returns like
 * paddock_store_list_sandboxes(); otherwise returns the number of execs walked.
 */
PADDOCK_API int paddock_store_list_execs(paddock_store *st, const char *sandbox_id,
					 int (*fn)(const struct paddock_store_exec *ex,
						   void *userdata),
					 void *userdata, paddock_error *err);
/*
 * Keeps the `keep` most recently ended execs of a sandbox (by ended_ms, then exec_id) and
 * deletes the older ended ones; running execs are never pruned. Returns how many were
 * deleted.
 */
PADDOCK_API int paddock_store_prune_execs(paddock_store *st, const char *sandbox_id, unsigned keep,
					  paddock_error *err);

/* ---- events --------------------------------------------------------------------------- */

/*
 * Appends an event (`json` is the whole event line, `name` its "noun.verb"). sandbox_id is
 * NULL for a daemon-wide event; otherwise the sandbox must be stored (-ENOENT), and its
 * events go when it is deleted. seq numbers increase across the whole store and are never
 * reused, even after pruning; the new one goes to *ret_seq when ret_seq is not NULL.
 * One INSERT, meant for the hot path.
 */
PADDOCK_API int paddock_store_add_event(paddock_store *st, const char *sandbox_id, int64_t ts_ms,
					const char *name, const char *json, int64_t *ret_seq,
					paddock_error *err);
/*
 * Calls fn for at most `limit` events of sandbox `sandbox_id` (NULL: the daemon-wide events)
 * with seq > after_seq, oldest first; `json` is valid during the callback only. Stops and
 * returns like paddock_store_list_sandboxes(); otherwise returns the number of events
 * walked.
 */
PADDOCK_API int paddock_store_list_events(paddock_store *st, const char *sandbox_id,
					  int64_t after_seq, unsigned limit,
					  int (*fn)(int64_t seq, const char *json, void *userdata),
					  void *userdata, paddock_error *err);
/*
 * Keeps the `keep` newest events of sandbox `sandbox_id` (NULL: of the daemon-wide events)
 * and deletes the older ones. Returns how many were deleted.
 */
PADDOCK_API int paddock_store_prune_events(paddock_store *st, const char *sandbox_id, unsigned keep,
					   paddock_error *err);

/* The highest exec id stored, of any sandbox (0 when none): a restart hands out ids above. */
PADDOCK_API int paddock_store_max_exec_id(paddock_store *st, uint64_t *ret_id, paddock_error *err);

/* ---- idempotency keys ------------------------------------------------------------------ */

/* A create's Idempotency-Key: which sandbox it made, for which request (a fingerprint). */
struct paddock_store_idempotency {
	const char *tenant;
	const char *key;
	const char *sandbox_id; /* not a reference: the key is kept after the sandbox is gone */
	const char *fingerprint;
	int64_t created_ms;
};

/* Records a key: -EEXIST when (tenant, key) is recorded already. Every string is required. */
PADDOCK_API int paddock_store_put_idempotency(paddock_store *st,
					      const struct paddock_store_idempotency *k,
					      paddock_error *err);
/*
 * Looks (tenant, key) up: 1 with fn called once with the row (valid during the call only), 0
 * when it is not recorded. A callback returning < 0 is handed back as for the walks.
 */
PADDOCK_API int
paddock_store_get_idempotency(paddock_store *st, const char *tenant, const char *key,
			      int (*fn)(const struct paddock_store_idempotency *k, void *userdata),
			      void *userdata, paddock_error *err);
/* Deletes the keys recorded before before_ms: how many went. */
PADDOCK_API int paddock_store_prune_idempotency(paddock_store *st, int64_t before_ms,
						paddock_error *err);

/* ---- templates (paddockd's named specs) ------------------------------------------------ */

struct paddock_store_template {
	const char *tenant;
	const char *name;
	const char *spec_json;
	int64_t created_ms;
};

/* Records a template, replacing the tenant's template of that name. Every string is required. */
PADDOCK_API int paddock_store_put_template(paddock_store *st,
					   const struct paddock_store_template *t,
					   paddock_error *err);
/*
 * Calls fn for each template of `tenant` (name NULL) or the one named, by name: how many, or
 * a callback's < 0 handed back as for the walks. Rows are valid during the call only.
 */
PADDOCK_API int
paddock_store_list_templates(paddock_store *st, const char *tenant, const char *name,
			     int (*fn)(const struct paddock_store_template *t, void *userdata),
			     void *userdata, paddock_error *err);
/* Deletes a template: -ENOENT (field name) when the tenant has none of that name. */
PADDOCK_API int paddock_store_delete_template(paddock_store *st, const char *tenant,
					      const char *name, paddock_error *err);

/*
 * Checks the file's structure (PRAGMA quick_check, which reads every page: for start-up, not
 * the hot path): 0, or -EUCLEAN naming the first problem found.
 */
PADDOCK_API int paddock_store_check(paddock_store *st, paddock_error *err);

/* ---- transactions --------------------------------------------------------------------- */

/*
 * Starts a transaction that holds the write lock until paddock_store_commit() or
 * paddock_store_rollback(): the changes in between become durable together or not at all.
 * No nesting: -EALREADY when a transaction is already open.
 */
PADDOCK_API int paddock_store_begin(paddock_store *st, paddock_error *err);
/*
 * Commits the open transaction; -EINVAL when none is open. When the commit fails the
 * transaction stays open: roll it back.
 */
PADDOCK_API int paddock_store_commit(paddock_store *st, paddock_error *err);
/* Rolls the open transaction back; does nothing (and returns 0) when none is open. */
PADDOCK_API int paddock_store_rollback(paddock_store *st, paddock_error *err);

#ifdef __cplusplus
}
#endif
