/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's durable state in SQLite: the sandboxes it keeps alive between requests, their
 * execs and their events, so that after a crash or a `kill -9` the daemon can reopen the file
 * and re-adopt every sandbox from its reattach handle. The only file that includes sqlite3.h.
 *
 * Who trusts whom: the file belongs to paddockd (0600) and its path comes from the daemon's
 * own configuration, never from a client or a sandbox. What clients and sandboxes send
 * (ids, tags, argv, metadata, event lines) reaches SQLite only as bound parameters and is
 * stored byte for byte; the caller bounds its size.
 *
 * Durability: WAL with synchronous=NORMAL. A committed transaction survives the death of the
 * process (it is in the WAL, which the next open replays); a power cut may lose the last few,
 * which is fine since it also kills every sandbox. Each state change is one statement, which
 * SQLite runs as one transaction; paddock_store_begin() groups several.
 *
 * Statements are prepared once at open and cached in the struct. A walk (list_*) keeps its
 * statement busy while it calls back, and the callback may call into the store again: when
 * the cached statement is busy, a private one is prepared for that call (struct query).
 *
 * Schema changes: append a step to migrations[]; the version lives in PRAGMA user_version and
 * every missing step runs in one transaction at open. A file newer than this code is refused.
 */
#include "paddock/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "error.h"
#include "util/cleanup.h"

#define BUSY_TIMEOUT_MS 5000

/* migrations[i] takes the schema from version i to i + 1 */
static const char *const migrations[] = {
	"CREATE TABLE sandboxes ("
	"  id TEXT PRIMARY KEY NOT NULL,"
	"  tenant TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  spec_json TEXT NOT NULL,"
	"  metadata_json TEXT NOT NULL DEFAULT '{}',"
	"  handle_json TEXT,"
	"  created_ms INTEGER NOT NULL,"
	"  expires_ms INTEGER NOT NULL,"
	"  last_active_ms INTEGER NOT NULL,"
	"  ttl_s INTEGER NOT NULL,"
	"  idle_timeout_s INTEGER NOT NULL"
	");"
	/* the primary key is the (sandbox_id, exec_id) index */
	"CREATE TABLE execs ("
	"  sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,"
	"  exec_id INTEGER NOT NULL,"
	"  pid INTEGER NOT NULL,"
	"  tag TEXT,"
	"  argv_json TEXT NOT NULL,"
	"  background INTEGER NOT NULL,"
	"  pty INTEGER NOT NULL,"
	"  started_ms INTEGER NOT NULL,"
	"  ended_ms INTEGER NOT NULL DEFAULT 0,"
	"  result_json TEXT,"
	"  PRIMARY KEY (sandbox_id, exec_id)"
	") WITHOUT ROWID;"
	/* AUTOINCREMENT: a seq is never reused, even once the newest events are pruned */
	"CREATE TABLE events ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  sandbox_id TEXT REFERENCES sandboxes (id) ON DELETE CASCADE,"
	"  ts_ms INTEGER NOT NULL,"
	"  name TEXT NOT NULL,"
	"  json TEXT NOT NULL"
	");"
	"CREATE INDEX events_by_sandbox ON events (sandbox_id, seq);",
	/*
	 * 2: idempotency keys of creates. Not a child of sandboxes: a key outlives its sandbox
	 * (a retry after the sandbox is gone is told so, not given a new one) until pruned.
	 */
	"CREATE TABLE idempotency ("
	"  tenant TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  sandbox_id TEXT NOT NULL,"
	"  fingerprint TEXT NOT NULL,"
	"  created_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, key)"
	") WITHOUT ROWID;",
	/* 3: what a sandbox's timeout does: "kill" (every sandbox before), or "pause" */
	"ALTER TABLE sandboxes ADD COLUMN on_timeout TEXT NOT NULL DEFAULT 'kill';",
	/* 4: templates, a tenant's named specs (paddockd's /v1/templates) */
	"CREATE TABLE templates ("
	"  tenant TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  spec_json TEXT NOT NULL,"
	"  created_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, name)"
	") WITHOUT ROWID;",
};
#define SCHEMA_VERSION 4
_Static_assert(ELEMENTSOF(migrations) == SCHEMA_VERSION, "one migration per schema version");

enum stmt_id {
	STMT_PUT_SANDBOX,
	STMT_SET_STATE,
	STMT_SET_TIMES,
	STMT_DELETE_SANDBOX,
	STMT_LIST_SANDBOXES,
	STMT_PUT_EXEC,
	STMT_END_EXEC,
	STMT_LIST_EXECS,
	STMT_PRUNE_EXECS,
	STMT_ADD_EVENT,
	STMT_LIST_EVENTS,
	STMT_PRUNE_EVENTS,
	STMT_MAX_EXEC_ID,
	STMT_PUT_IDEMPOTENCY,
	STMT_GET_IDEMPOTENCY,
	STMT_PRUNE_IDEMPOTENCY,
	STMT_PUT_TEMPLATE,
	STMT_LIST_TEMPLATES,
	STMT_DELETE_TEMPLATE,
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	_STMT_MAX,
};

/* Parameters are numbered in the order the functions below bind them. */
static const char *const stmt_sql[_STMT_MAX] = {
	/* an upsert, not INSERT OR REPLACE: REPLACE deletes the row and the delete cascades */
	[STMT_PUT_SANDBOX] =
		"INSERT INTO sandboxes (id, tenant, state, spec_json, metadata_json, handle_json,"
		" created_ms, expires_ms, last_active_ms, ttl_s, idle_timeout_s, on_timeout)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
		" ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, state = excluded.state,"
		" spec_json = excluded.spec_json, metadata_json = excluded.metadata_json,"
		" handle_json = excluded.handle_json, created_ms = excluded.created_ms,"
		" expires_ms = excluded.expires_ms, last_active_ms = excluded.last_active_ms,"
		" ttl_s = excluded.ttl_s, idle_timeout_s = excluded.idle_timeout_s,"
		" on_timeout = excluded.on_timeout",
	[STMT_SET_STATE] = "UPDATE sandboxes SET state = ?2 WHERE id = ?1",
	[STMT_SET_TIMES] =
		"UPDATE sandboxes SET expires_ms = ?2, last_active_ms = ?3 WHERE id = ?1",
	[STMT_DELETE_SANDBOX] = "DELETE FROM sandboxes WHERE id = ?1",
	[STMT_LIST_SANDBOXES] =
		"SELECT id, tenant, state, spec_json, metadata_json, handle_json, created_ms,"
		" expires_ms, last_active_ms, ttl_s, idle_timeout_s, on_timeout,"
		" coalesce((SELECT max(seq) FROM events"
		"  WHERE events.sandbox_id = sandboxes.id), 0) + 1"
		" FROM sandboxes ORDER BY created_ms, id",
	[STMT_PUT_EXEC] =
		"INSERT INTO execs (sandbox_id, exec_id, pid, tag, argv_json, background, pty,"
		" started_ms, ended_ms, result_json)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
		" ON CONFLICT (sandbox_id, exec_id) DO UPDATE SET pid = excluded.pid,"
		" tag = excluded.tag, argv_json = excluded.argv_json,"
		" background = excluded.background, pty = excluded.pty,"
		" started_ms = excluded.started_ms, ended_ms = excluded.ended_ms,"
		" result_json = excluded.result_json",
	[STMT_END_EXEC] = "UPDATE execs SET ended_ms = ?3, result_json = ?4"
			  " WHERE sandbox_id = ?1 AND exec_id = ?2",
	[STMT_LIST_EXECS] = "SELECT sandbox_id, exec_id, pid, tag, argv_json, background, pty,"
			    " started_ms, ended_ms, result_json"
			    " FROM execs WHERE sandbox_id = ?1 ORDER BY exec_id",
	[STMT_PRUNE_EXECS] = "DELETE FROM execs WHERE sandbox_id = ?1 AND ended_ms != 0"
			     " AND exec_id NOT IN (SELECT exec_id FROM execs"
			     "  WHERE sandbox_id = ?1 AND ended_ms != 0"
			     "  ORDER BY ended_ms DESC, exec_id DESC LIMIT ?2)",
	/* the hot path: one INSERT; the seq comes from sqlite3_last_insert_rowid() */
	[STMT_ADD_EVENT] = "INSERT INTO events (sandbox_id, ts_ms, name, json)"
			   " VALUES (?1, ?2, ?3, ?4)",
	/* IS rather than =, so NULL selects the daemon-wide events; both use the index */
	[STMT_LIST_EVENTS] = "SELECT seq, json FROM events WHERE sandbox_id IS ?1 AND seq > ?2"
			     " ORDER BY seq LIMIT ?3",
	[STMT_PRUNE_EVENTS] = "DELETE FROM events WHERE sandbox_id IS ?1 AND seq <= ("
			      " SELECT seq FROM events WHERE sandbox_id IS ?1"
			      " ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
	[STMT_MAX_EXEC_ID] = "SELECT coalesce(max(exec_id), 0) FROM execs",
	/* a plain INSERT: a key already recorded is a constraint failure, -EEXIST */
	[STMT_PUT_IDEMPOTENCY] = "INSERT INTO idempotency (tenant, key, sandbox_id, fingerprint,"
				 " created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_GET_IDEMPOTENCY] = "SELECT tenant, key, sandbox_id, fingerprint, created_ms"
				 " FROM idempotency WHERE tenant = ?1 AND key = ?2",
	[STMT_PRUNE_IDEMPOTENCY] = "DELETE FROM idempotency WHERE created_ms < ?1",
	[STMT_PUT_TEMPLATE] = "INSERT INTO templates (tenant, name, spec_json, created_ms)"
			      " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant, name) DO UPDATE"
			      " SET spec_json = excluded.spec_json,"
			      " created_ms = excluded.created_ms",
	/* ?2 NULL: every template of the tenant */
	[STMT_LIST_TEMPLATES] = "SELECT tenant, name, spec_json, created_ms FROM templates"
				" WHERE tenant = ?1 AND (?2 IS NULL OR name = ?2) ORDER BY name",
	[STMT_DELETE_TEMPLATE] = "DELETE FROM templates WHERE tenant = ?1 AND name = ?2",
	/* IMMEDIATE: take the write lock now, not at the first write where it could fail */
	[STMT_BEGIN] = "BEGIN IMMEDIATE",
	[STMT_COMMIT] = "COMMIT",
	[STMT_ROLLBACK] = "ROLLBACK",
};

struct paddock_store {
	sqlite3 *db;
	sqlite3_stmt *stmts[_STMT_MAX];
};

PD_DEFINE_CLEANUP(paddock_store, paddock_store_free)
PD_DEFINE_CLEANUP(sqlite3_stmt, sqlite3_finalize)

static int errno_of(sqlite3 *db, int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return ENOMEM;
	case SQLITE_FULL:
		return ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return EBUSY;
	case SQLITE_READONLY:
		return EROFS;
	case SQLITE_TOOBIG:
		return EMSGSIZE;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return EUCLEAN; /* the file is damaged: not a failure to retry */
	case SQLITE_CANTOPEN:
	case SQLITE_IOERR: {
		int e = db ? sqlite3_system_errno(db) : 0;
		return e > 0 ? e : EIO;
	}
	default:
		return EIO;
	}
}

/* "<what>: <SQLite's message>", with the errno that fits rc. */
__attribute__((format(printf, 4, 5))) static int fail_db(sqlite3 *db, int rc, paddock_error *err,
							 const char *fmt, ...)
{
	char what[192];
	const char *msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* the connection's message, when it is about this failure */
	if (db && (sqlite3_errcode(db) & 0xff) == (rc & 0xff))
		msg = sqlite3_errmsg(db);
	else
		msg = sqlite3_errstr(rc);
	return pd_fail(err, errno_of(db, rc), "%s: %s", what, msg);
}

/* A walk's callback said stop: report it and hand its value back unchanged. */
static int stopped(paddock_error *err, int r, const char *what)
{
	(void)pd_fail(err, r > -4096 ? -r : EIO, "%s: stopped by the callback", what);
	return r;
}

/*
 * A statement for one call: the cached one, or, when a walk further up the stack is still
 * stepping the cached one, a private one. Reset and unbound when it leaves scope, so a cached
 * statement never holds a pointer to the caller's strings.
 */
struct query {
	sqlite3_stmt *s;
	bool owned;
};

static void query_donep(struct query *q)
{
	if (!q->s)
		return;
	if (q->owned) {
		(void)sqlite3_finalize(q->s);
	} else {
		(void)sqlite3_reset(q->s); /* returns the last step's error, already reported */
		(void)sqlite3_clear_bindings(q->s);
	}
	q->s = NULL;
}
#define _cleanup_query_ _cleanup_(query_donep)

static int query_get(paddock_store *st, enum stmt_id id, struct query *ret, paddock_error *err)
{
	sqlite3_stmt *s = st->stmts[id];
	int rc;

	if (!sqlite3_stmt_busy(s)) {
		*ret = (struct query){ .s = s };
		return 0;
	}
	rc = sqlite3_prepare_v2(st->db, stmt_sql[id], -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail_db(st->db, rc, err, "prepare statement");
	*ret = (struct query){ .s = s, .owned = true };
	return 0;
}

/*
 * Binds parameters 1, 2, ... in order; after the first failure the others are skipped and
 * rc keeps that failure. Strings are bound without a copy (SQLITE_STATIC): they are the
 * caller's, alive for the whole call, and query_donep() unbinds them before it returns.
 */
struct binder {
	sqlite3_stmt *s;
	int i;
	int rc;
};

static void bind_text(struct binder *b, const char *v)
{
	if (b->rc != SQLITE_OK)
		return;
	b->i++;
	if (v)
		b->rc = sqlite3_bind_text64(b->s, b->i, v, strlen(v), SQLITE_STATIC, SQLITE_UTF8);
	else
		b->rc = sqlite3_bind_null(b->s, b->i);
}

static void bind_int(struct binder *b, int64_t v)
{
	if (b->rc != SQLITE_OK)
		return;
	b->i++;
	b->rc = sqlite3_bind_int64(b->s, b->i, v);
}

/* Steps a bound statement: the bind failure, else what sqlite3_step() says. */
static int step(struct binder *b)
{
	if (b->rc != SQLITE_OK)
		return b->rc;
	return sqlite3_step(b->s);
}

/* A NOT NULL column: never NULL for the caller, even from a file edited by hand. */
static const char *col_text(sqlite3_stmt *s, int i)
{
	const char *v = (const char *)sqlite3_column_text(s, i);

	return v ? v : "";
}

static const char *col_text_or_null(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

/* ---- open ----------------------------------------------------------------------------- */

/*
 * Creates the file ourselves, so that it is 0600 whatever the umask, before SQLite opens it
 * by name (it needs the name for the -wal and -shm files beside it, which it creates with the
 * main file's mode). An existing file keeps its mode.
 */
static int create_file(const char *path, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	bool created = true;
	struct stat sb;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		created = false;
		fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0)
		return pd_fail(err, errno, "open '%s'", PD_ESC(path));
	if (fstat(fd, &sb) < 0)
		return pd_fail(err, errno, "stat '%s'", PD_ESC(path));
	if (!S_ISREG(sb.st_mode))
		return pd_fail(err, EINVAL, "'%s' is not a regular file", PD_ESC(path));
	if (created && fchmod(fd, 0600) < 0)
		return pd_fail(err, errno, "chmod '%s'", PD_ESC(path));
	return 0;
}

/* Runs SQL without parameters or rows (pragmas, DDL, our own constants only). */
static int exec_sql(sqlite3 *db, const char *sql, paddock_error *err)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return fail_db(db, rc, err, "%.64s", sql);
	return 0;
}

/* Runs a pragma that answers with a row; the caller reads its columns and finalizes it. */
static int pragma_query(sqlite3 *db, const char *sql, sqlite3_stmt **ret_stmt, paddock_error *err)
{
	_cleanup_(sqlite3_finalizep) sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail_db(db, rc, err, "%s", sql);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW)
		return fail_db(db, rc == SQLITE_DONE ? SQLITE_ERROR : rc, err, "%s", sql);
	*ret_stmt = TAKE_PTR(s);
	return 0;
}

static int set_journal_mode_wal(sqlite3 *db, paddock_error *err)
{
	_cleanup_(sqlite3_finalizep) sqlite3_stmt *s = NULL;
	int r;

	r = pragma_query(db, "PRAGMA journal_mode = WAL", &s, err);
	if (r < 0)
		return r;
	/* SQLite answers with the mode it kept, e.g. when the file system cannot do WAL */
	const char *mode = col_text(s, 0);
	if (strcmp(mode, "wal") != 0)
		return pd_fail(err, EOPNOTSUPP, "journal mode WAL refused, still '%s'",
			       PD_ESC(mode));
	return 0;
}

static int check_foreign_keys(sqlite3 *db, paddock_error *err)
{
	_cleanup_(sqlite3_finalizep) sqlite3_stmt *s = NULL;
	int r;

	r = pragma_query(db, "PRAGMA foreign_keys", &s, err);
	if (r < 0)
		return r;
	/* without them a deleted sandbox would leave its execs and events behind */
	if (sqlite3_column_int(s, 0) != 1)
		return pd_fail(err, EOPNOTSUPP, "SQLite without foreign key support");
	return 0;
}

static int read_version(sqlite3 *db, int *ret_version, paddock_error *err)
{
	_cleanup_(sqlite3_finalizep) sqlite3_stmt *s = NULL;
	int r;

	r = pragma_query(db, "PRAGMA user_version", &s, err);
	if (r < 0)
		return r;
	*ret_version = sqlite3_column_int(s, 0);
	return 0;
}

static int migrate_locked(sqlite3 *db, paddock_error *err)
{
	int version, r;

	r = read_version(db, &version, err);
	if (r < 0)
		return r;
	if (version < 0 || version > SCHEMA_VERSION)
		return pd_fail(err, EPROTO, "schema version %d, this libpaddock knows up to %d",
			       version, SCHEMA_VERSION);
	if (version == SCHEMA_VERSION)
		return 0;
	for (int i = version; i < SCHEMA_VERSION; i++) {
		r = exec_sql(db, migrations[i], err);
		if (r < 0) {
			pd_error_prefix(err, "migrate schema to version %d", i + 1);
			return r;
		}
	}
	return exec_sql(db, "PRAGMA user_version = " STRINGIFY(SCHEMA_VERSION), err);
}

/* One transaction, holding the write lock, so two openers never both migrate. */
static int migrate(sqlite3 *db, paddock_error *err)
{
	int r;

	r = exec_sql(db, "BEGIN IMMEDIATE", err);
	if (r < 0)
		return r;
	r = migrate_locked(db, err);
	if (r < 0) {
		(void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); /* err tells the story */
		return r;
	}
	return exec_sql(db, "COMMIT", err);
}

static int setup(paddock_store *st, const char *path, paddock_error *err)
{
	bool memory = strcmp(path, PADDOCK_STORE_MEMORY) == 0;
	int rc, r;

	r = memory ? 0 : create_file(path, err);
	if (r < 0)
		return r;
	rc = sqlite3_open_v2(path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX |
				     (memory ? SQLITE_OPEN_MEMORY : 0),
			     NULL);
	if (rc != SQLITE_OK)
		return fail_db(st->db, rc, err, "sqlite open");
	(void)sqlite3_extended_result_codes(st->db, 1); /* cannot fail on an open connection */
	(void)sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	/* no writes to sqlite_schema, no functions with side effects from the schema */
	(void)sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	(void)sqlite3_db_config(st->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);

	/* the first statement that reads the file: a file that is not a database fails here */
	r = memory ? 0 : set_journal_mode_wal(st->db, err);
	if (r < 0)
		return r;
	r = exec_sql(st->db, "PRAGMA synchronous = NORMAL", err);
	if (r < 0)
		return r;
	r = exec_sql(st->db, "PRAGMA foreign_keys = ON", err);
	if (r < 0)
		return r;
	r = check_foreign_keys(st->db, err);
	if (r < 0)
		return r;
	r = migrate(st->db, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < _STMT_MAX; i++) {
		rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&st->stmts[i], NULL);
		if (rc != SQLITE_OK)
			return fail_db(st->db, rc, err, "prepare statement %zu", i);
	}
	return 0;
}

int paddock_store_open(const char *path, paddock_store **ret_store, paddock_error *err)
{
	_cleanup_(paddock_store_freep) paddock_store *st = NULL;
	int r;

	if (!path || !*path || !ret_store)
		return pd_fail(err, EINVAL, "open store: no path");
	st = calloc(1, sizeof(*st));
	if (!st)
		return pd_fail(err, ENOMEM, "open store");
	r = setup(st, path, err);
	if (r < 0) {
		pd_error_prefix(err, "open store '%s'", PD_ESC(path));
		return r;
	}
	*ret_store = TAKE_PTR(st);
	return 0;
}

paddock_store *paddock_store_free(paddock_store *st)
{
	if (!st)
		return NULL;
	for (size_t i = 0; i < _STMT_MAX; i++)
		(void)sqlite3_finalize(st->stmts[i]); /* accepts NULL */
	/* rolls back an open transaction; _v2 so a stray statement cannot keep the file open */
	(void)sqlite3_close_v2(st->db);
	free(st);
	return NULL;
}

/* ---- sandboxes ------------------------------------------------------------------------ */

int paddock_store_put_sandbox(paddock_store *st, const struct paddock_store_sandbox *sb,
			      paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !sb || !sb->id || !sb->tenant || !sb->state || !sb->spec_json)
		return pd_fail(err, EINVAL, "put sandbox: id, tenant, state and spec are required");
	r = query_get(st, STMT_PUT_SANDBOX, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sb->id);
	bind_text(&b, sb->tenant);
	bind_text(&b, sb->state);
	bind_text(&b, sb->spec_json);
	bind_text(&b, sb->metadata_json ? sb->metadata_json : "{}");
	bind_text(&b, sb->handle_json);
	bind_int(&b, sb->created_ms);
	bind_int(&b, sb->expires_ms);
	bind_int(&b, sb->last_active_ms);
	bind_int(&b, sb->ttl_s);
	bind_int(&b, sb->idle_timeout_s);
	bind_text(&b, sb->on_timeout ? sb->on_timeout : "kill");
	rc = step(&b);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "put sandbox '%s'", PD_ESC(sb->id));
	return 0;
}

/* Runs an UPDATE or DELETE of one sandbox's row: -ENOENT when there was no row. */
static int change_sandbox(paddock_store *st, struct binder *b, const char *what, const char *id,
			  paddock_error *err)
{
	int rc = step(b);

	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "%s '%s'", what, PD_ESC(id));
	if (sqlite3_changes(st->db) == 0)
		return pd_fail(err, ENOENT, "%s: no sandbox '%s'", what, PD_ESC(id));
	return 0;
}

int paddock_store_set_state(paddock_store *st, const char *id, const char *state,
			    paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int r;

	if (!st || !id || !state)
		return pd_fail(err, EINVAL, "set sandbox state: id and state are required");
	r = query_get(st, STMT_SET_STATE, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, id);
	bind_text(&b, state);
	return change_sandbox(st, &b, "set sandbox state", id, err);
}

int paddock_store_set_times(paddock_store *st, const char *id, int64_t expires_ms,
			    int64_t last_active_ms, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int r;

	if (!st || !id)
		return pd_fail(err, EINVAL, "set sandbox times: id is required");
	r = query_get(st, STMT_SET_TIMES, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, id);
	bind_int(&b, expires_ms);
	bind_int(&b, last_active_ms);
	return change_sandbox(st, &b, "set sandbox times", id, err);
}

int paddock_store_delete_sandbox(paddock_store *st, const char *id, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int r;

	if (!st || !id)
		return pd_fail(err, EINVAL, "delete sandbox: id is required");
	r = query_get(st, STMT_DELETE_SANDBOX, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, id);
	return change_sandbox(st, &b, "delete sandbox", id, err);
}

int paddock_store_list_sandboxes(paddock_store *st,
				 int (*fn)(const struct paddock_store_sandbox *sb, void *userdata),
				 void *userdata, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int n = 0, rc, r;

	if (!st || !fn)
		return pd_fail(err, EINVAL, "list sandboxes: no store or callback");
	r = query_get(st, STMT_LIST_SANDBOXES, &q, err);
	if (r < 0)
		return r;
	while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
		const struct paddock_store_sandbox sb = {
			.id = col_text(q.s, 0),
			.tenant = col_text(q.s, 1),
			.state = col_text(q.s, 2),
			.spec_json = col_text(q.s, 3),
			.metadata_json = col_text(q.s, 4),
			.handle_json = col_text_or_null(q.s, 5),
			.created_ms = sqlite3_column_int64(q.s, 6),
			.expires_ms = sqlite3_column_int64(q.s, 7),
			.last_active_ms = sqlite3_column_int64(q.s, 8),
			.ttl_s = sqlite3_column_int64(q.s, 9),
			.idle_timeout_s = sqlite3_column_int64(q.s, 10),
			.on_timeout = col_text(q.s, 11),
			.next_seq = sqlite3_column_int64(q.s, 12),
		};
		r = fn(&sb, userdata);
		if (r < 0)
			return stopped(err, r, "list sandboxes");
		if (n < INT_MAX)
			n++;
	}
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "list sandboxes");
	return n;
}

/* ---- execs ---------------------------------------------------------------------------- */

int paddock_store_put_exec(paddock_store *st, const struct paddock_store_exec *ex,
			   paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !ex || !ex->sandbox_id || !ex->argv_json)
		return pd_fail(err, EINVAL, "put exec: sandbox id and argv are required");
	if (ex->exec_id > (uint64_t)INT64_MAX)
		return pd_fail(err, EINVAL, "put exec: exec id %" PRIu64 " out of range",
			       ex->exec_id);
	r = query_get(st, STMT_PUT_EXEC, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, ex->sandbox_id);
	bind_int(&b, (int64_t)ex->exec_id);
	bind_int(&b, ex->pid);
	bind_text(&b, ex->tag);
	bind_text(&b, ex->argv_json);
	bind_int(&b, ex->background);
	bind_int(&b, ex->pty);
	bind_int(&b, ex->started_ms);
	bind_int(&b, ex->ended_ms);
	bind_text(&b, ex->result_json);
	rc = step(&b);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return pd_fail(err, ENOENT, "put exec: no sandbox '%s'", PD_ESC(ex->sandbox_id));
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "put exec %" PRIu64 " of '%s'", ex->exec_id,
			       PD_ESC(ex->sandbox_id));
	return 0;
}

int paddock_store_end_exec(paddock_store *st, const char *sandbox_id, uint64_t exec_id,
			   int64_t ended_ms, const char *result_json, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !sandbox_id || !result_json || ended_ms <= 0)
		return pd_fail(err, EINVAL,
			       "end exec: sandbox id, end time and result are required");
	if (exec_id > (uint64_t)INT64_MAX)
		return pd_fail(err, ENOENT, "end exec: no exec %" PRIu64 " in '%s'", exec_id,
			       PD_ESC(sandbox_id));
	r = query_get(st, STMT_END_EXEC, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	bind_int(&b, (int64_t)exec_id);
	bind_int(&b, ended_ms);
	bind_text(&b, result_json);
	rc = step(&b);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "end exec %" PRIu64 " of '%s'", exec_id,
			       PD_ESC(sandbox_id));
	if (sqlite3_changes(st->db) == 0)
		return pd_fail(err, ENOENT, "end exec: no exec %" PRIu64 " in '%s'", exec_id,
			       PD_ESC(sandbox_id));
	return 0;
}

int paddock_store_list_execs(paddock_store *st, const char *sandbox_id,
			     int (*fn)(const struct paddock_store_exec *ex, void *userdata),
			     void *userdata, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int n = 0, rc, r;

	if (!st || !sandbox_id || !fn)
		return pd_fail(err, EINVAL, "list execs: no store, sandbox id or callback");
	r = query_get(st, STMT_LIST_EXECS, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	while ((rc = step(&b)) == SQLITE_ROW) {
		const struct paddock_store_exec ex = {
			.sandbox_id = col_text(q.s, 0),
			.exec_id = (uint64_t)sqlite3_column_int64(q.s, 1),
			.pid = sqlite3_column_int(q.s, 2),
			.tag = col_text_or_null(q.s, 3),
			.argv_json = col_text(q.s, 4),
			.background = sqlite3_column_int(q.s, 5) != 0,
			.pty = sqlite3_column_int(q.s, 6) != 0,
			.started_ms = sqlite3_column_int64(q.s, 7),
			.ended_ms = sqlite3_column_int64(q.s, 8),
			.result_json = col_text_or_null(q.s, 9),
		};
		r = fn(&ex, userdata);
		if (r < 0)
			return stopped(err, r, "list execs");
		if (n < INT_MAX)
			n++;
	}
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "list execs of '%s'", PD_ESC(sandbox_id));
	return n;
}

/* Runs a pruning DELETE: how many rows went. */
static int prune(paddock_store *st, struct binder *b, const char *what, const char *id,
		 paddock_error *err)
{
	int rc = step(b);

	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "%s of '%s'", what, PD_ESC(id));
	return sqlite3_changes(st->db);
}

int paddock_store_prune_execs(paddock_store *st, const char *sandbox_id, unsigned keep,
			      paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int r;

	if (!st || !sandbox_id)
		return pd_fail(err, EINVAL, "prune execs: sandbox id is required");
	r = query_get(st, STMT_PRUNE_EXECS, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	bind_int(&b, keep);
	return prune(st, &b, "prune execs", sandbox_id, err);
}

/* ---- events --------------------------------------------------------------------------- */

int paddock_store_add_event(paddock_store *st, const char *sandbox_id, int64_t ts_ms,
			    const char *name, const char *json, int64_t *ret_seq,
			    paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !name || !json)
		return pd_fail(err, EINVAL, "add event: name and json are required");
	r = query_get(st, STMT_ADD_EVENT, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	bind_int(&b, ts_ms);
	bind_text(&b, name);
	bind_text(&b, json);
	rc = step(&b);
	if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
		return pd_fail(err, ENOENT, "add event '%s': no sandbox '%s'", PD_ESC(name),
			       PD_ESC(sandbox_id));
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "add event '%s'", PD_ESC(name));
	if (ret_seq)
		*ret_seq = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int paddock_store_list_events(paddock_store *st, const char *sandbox_id, int64_t after_seq,
			      unsigned limit,
			      int (*fn)(int64_t seq, const char *json, void *userdata),
			      void *userdata, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int n = 0, rc, r;

	if (!st || !fn)
		return pd_fail(err, EINVAL, "list events: no store or callback");
	r = query_get(st, STMT_LIST_EVENTS, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	bind_int(&b, after_seq);
	bind_int(&b, limit);
	while ((rc = step(&b)) == SQLITE_ROW) {
		r = fn(sqlite3_column_int64(q.s, 0), col_text(q.s, 1), userdata);
		if (r < 0)
			return stopped(err, r, "list events");
		if (n < INT_MAX)
			n++;
	}
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "list events of '%s'", PD_ESC(sandbox_id));
	return n;
}

int paddock_store_prune_events(paddock_store *st, const char *sandbox_id, unsigned keep,
			       paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int r;

	if (!st)
		return pd_fail(err, EINVAL, "prune events: no store");
	r = query_get(st, STMT_PRUNE_EVENTS, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, sandbox_id);
	bind_int(&b, keep);
	return prune(st, &b, "prune events", sandbox_id, err);
}

/* ---- execs across sandboxes, idempotency keys, the file itself ------------------------- */

int paddock_store_max_exec_id(paddock_store *st, uint64_t *ret_id, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !ret_id)
		return pd_fail(err, EINVAL, "max exec id: no store");
	r = query_get(st, STMT_MAX_EXEC_ID, &q, err);
	if (r < 0)
		return r;
	rc = sqlite3_step(q.s);
	if (rc != SQLITE_ROW)
		return fail_db(st->db, rc == SQLITE_DONE ? SQLITE_ERROR : rc, err, "max exec id");
	*ret_id = (uint64_t)sqlite3_column_int64(q.s, 0);
	return 0;
}

int paddock_store_put_idempotency(paddock_store *st, const struct paddock_store_idempotency *k,
				  paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !k || !k->tenant || !k->key || !k->sandbox_id || !k->fingerprint)
		return pd_fail(err, EINVAL,
			       "put idempotency key: tenant, key, sandbox id and "
			       "fingerprint are required");
	r = query_get(st, STMT_PUT_IDEMPOTENCY, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, k->tenant);
	bind_text(&b, k->key);
	bind_text(&b, k->sandbox_id);
	bind_text(&b, k->fingerprint);
	bind_int(&b, k->created_ms);
	rc = step(&b);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return pd_fail(err, EEXIST, "idempotency key '%s' is recorded already",
			       PD_ESC(k->key));
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "put idempotency key '%s'", PD_ESC(k->key));
	return 0;
}

int paddock_store_get_idempotency(paddock_store *st, const char *tenant, const char *key,
				  int (*fn)(const struct paddock_store_idempotency *k,
					    void *userdata),
				  void *userdata, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !tenant || !key || !fn)
		return pd_fail(err, EINVAL,
			       "get idempotency key: tenant, key and callback are "
			       "required");
	r = query_get(st, STMT_GET_IDEMPOTENCY, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, tenant);
	bind_text(&b, key);
	rc = step(&b);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return fail_db(st->db, rc, err, "get idempotency key '%s'", PD_ESC(key));
	const struct paddock_store_idempotency k = {
		.tenant = col_text(q.s, 0),
		.key = col_text(q.s, 1),
		.sandbox_id = col_text(q.s, 2),
		.fingerprint = col_text(q.s, 3),
		.created_ms = sqlite3_column_int64(q.s, 4),
	};
	r = fn(&k, userdata);
	if (r < 0)
		return stopped(err, r, "get idempotency key");
	return 1;
}

int paddock_store_prune_idempotency(paddock_store *st, int64_t before_ms, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st)
		return pd_fail(err, EINVAL, "prune idempotency keys: no store");
	r = query_get(st, STMT_PRUNE_IDEMPOTENCY, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_int(&b, before_ms);
	rc = step(&b);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "prune idempotency keys");
	return sqlite3_changes(st->db);
}

/* ---- templates ------------------------------------------------------------------------ */

int paddock_store_put_template(paddock_store *st, const struct paddock_store_template *t,
			       paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !t || !t->tenant || !t->name || !t->spec_json)
		return pd_fail(err, EINVAL, "put template: tenant, name and spec are required");
	r = query_get(st, STMT_PUT_TEMPLATE, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, t->tenant);
	bind_text(&b, t->name);
	bind_text(&b, t->spec_json);
	bind_int(&b, t->created_ms);
	rc = step(&b);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "put template '%s'", PD_ESC(t->name));
	return 0;
}

int paddock_store_list_templates(paddock_store *st, const char *tenant, const char *name,
				 int (*fn)(const struct paddock_store_template *t, void *userdata),
				 void *userdata, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int n = 0, rc, r;

	if (!st || !tenant || !fn)
		return pd_fail(err, EINVAL,
			       "list templates: store, tenant and callback are required");
	r = query_get(st, STMT_LIST_TEMPLATES, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, tenant);
	bind_text(&b, name); /* NULL binds NULL */
	while ((rc = step(&b)) == SQLITE_ROW) {
		const struct paddock_store_template t = {
			.tenant = col_text(q.s, 0),
			.name = col_text(q.s, 1),
			.spec_json = col_text(q.s, 2),
			.created_ms = sqlite3_column_int64(q.s, 3),
		};
		r = fn(&t, userdata);
		if (r < 0)
			return stopped(err, r, "list templates");
		if (n < INT_MAX)
			n++;
	}
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "list templates");
	return n;
}

int paddock_store_delete_template(paddock_store *st, const char *tenant, const char *name,
				  paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	if (!st || !tenant || !name)
		return pd_fail(err, EINVAL, "delete template: tenant and name are required");
	r = query_get(st, STMT_DELETE_TEMPLATE, &q, err);
	if (r < 0)
		return r;
	struct binder b = { .s = q.s };
	bind_text(&b, tenant);
	bind_text(&b, name);
	rc = step(&b);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "delete template '%s'", PD_ESC(name));
	if (sqlite3_changes(st->db) == 0)
		return pd_fail_field(err, ENOENT, "name", "no template '%s'", PD_ESC(name));
	return 0;
}

int paddock_store_check(paddock_store *st, paddock_error *err)
{
	_cleanup_(sqlite3_finalizep) sqlite3_stmt *s = NULL;
	const char *verdict;
	int r;

	if (!st)
		return pd_fail(err, EINVAL, "check store: no store");
	/* the first row is "ok", or the first of the problems found */
	r = pragma_query(st->db, "PRAGMA quick_check(1)", &s, err);
	if (r < 0)
		return r;
	verdict = col_text(s, 0);
	if (strcmp(verdict, "ok") != 0)
		return pd_fail(err, EUCLEAN, "the store is damaged: %s", PD_ESC(verdict));
	return 0;
}

/* ---- transactions --------------------------------------------------------------------- */

static int run_tx_stmt(paddock_store *st, enum stmt_id id, const char *what, paddock_error *err)
{
	_cleanup_query_ struct query q = {};
	int rc, r;

	r = query_get(st, id, &q, err);
	if (r < 0)
		return r;
	rc = sqlite3_step(q.s);
	if (rc != SQLITE_DONE)
		return fail_db(st->db, rc, err, "%s", what);
	return 0;
}

int paddock_store_begin(paddock_store *st, paddock_error *err)
{
	if (!st)
		return pd_fail(err, EINVAL, "begin transaction: no store");
	if (!sqlite3_get_autocommit(st->db))
		return pd_fail(err, EALREADY, "begin transaction: one is already open");
	return run_tx_stmt(st, STMT_BEGIN, "begin transaction", err);
}

int paddock_store_commit(paddock_store *st, paddock_error *err)
{
	if (!st)
		return pd_fail(err, EINVAL, "commit: no store");
	/* SQLite also rolls back by itself after some errors (disk full, I/O, out of memory) */
	if (sqlite3_get_autocommit(st->db))
		return pd_fail(err, EINVAL, "commit: no transaction is open");
	return run_tx_stmt(st, STMT_COMMIT, "commit", err);
}

int paddock_store_rollback(paddock_store *st, paddock_error *err)
{
	if (!st)
		return pd_fail(err, EINVAL, "rollback: no store");
	if (sqlite3_get_autocommit(st->db))
		return 0;
	return run_tx_stmt(st, STMT_ROLLBACK, "rollback", err);
}
