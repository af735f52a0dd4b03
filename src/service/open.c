/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The core's start and end (service.h, svc_open()): the event log, the store at
 * <state-dir>/paddockd.db (checked; a damaged one moved aside and the live sandboxes
 * recovered from their own records), libpaddock's events into both, then the sandboxes a
 * previous run left (lifecycle-adopt.c), the reaper and the pool; for a core of one process
 * (d->in_process) only the store, in memory, the reaper and the pool. An adapter's program
 * (paddockd's main.c) makes the loop and libpaddock's context, and sets its hooks before.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

/*
 * A damaged store is kept for inspection as paddockd.db.damaged-<UTC time> (with its WAL,
 * which may hold the newest changes) and a new one is started: lifecycle-recover.c then
 * rebuilds the records of the live sandboxes from what their inits keep, and says what it
 * could not.
 */
static int store_move_aside(struct daemon *d, const char *path, const paddock_error *why,
			    paddock_error *err)
{
	char moved[sizeof(d->store_moved)], from[320], to[340], buf[600];
	struct tm tm;
	time_t now = time(NULL);

	d->store = paddock_store_free(d->store);
	gmtime_r(&now, &tm);
	snprintf(moved, sizeof(moved), "%s.damaged-%04d%02d%02dT%02d%02d%02dZ", path,
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (rename(path, moved) < 0)
		return paddock_fail(err, errno, "move the damaged store '%s' aside", path);
	snprintf(from, sizeof(from), "%s-wal", path);
	snprintf(to, sizeof(to), "%s-wal", moved);
	(void)rename(from, to); /* ENOENT: no WAL */
	snprintf(from, sizeof(from), "%s-shm", path);
	(void)unlink(from); /* the WAL's index: rebuilt from the WAL by whoever opens it */
	d->store_rebuilt = true;
	snprintf(d->store_moved, sizeof(d->store_moved), "%s", moved);
	fprintf(stderr,
		"paddockd: the store is damaged (%s): kept as '%s'; starting a new one "
		"and recovering the live sandboxes from their own records\n",
		paddock_error_format(why, buf, sizeof(buf)), moved);
	return paddock_store_open(path, &d->store, err);
}

/* The store at <state-dir>/paddockd.db, checked; a damaged one is moved aside. */
static int open_store(struct daemon *d, paddock_error *err)
{
	char path[300];
	int r;

	snprintf(path, sizeof(path), "%s/paddockd.db", d->state_dir);
	/* none yet, but sandboxes of an earlier one may be there: recovered from their records */
	d->store_fresh = access(path, F_OK) < 0 && errno == ENOENT;
	r = paddock_store_open(path, &d->store, err);
	if (r >= 0)
		r = paddock_store_check(d->store, err);
	if (r != -EUCLEAN)
		return r;
	return store_move_aside(d, path, err, err);
}

int svc_open(struct daemon *d, paddock_error *err)
{
	int r;

	paddock_ctx_set_ask_handler(d->ctx, svc_ask, d);

	if (d->in_process) {
		/* nothing on disk: the sandboxes end with the process, and so does their record */
		r = paddock_store_open(PADDOCK_STORE_MEMORY, &d->store, err);
		if (r < 0)
			return r;
		paddock_ctx_set_event_sink(d->ctx, svc_event_sink, d);
		return svc_lifecycle_start(d, err);
	}
	r = svc_event_log_open(d, err);
	if (r >= 0)
		r = open_store(d, err);
	if (r < 0)
		return r;
	paddock_ctx_set_event_sink(d->ctx, svc_event_sink, d);
	r = svc_lifecycle_start(d, err);
	if (r == -EUCLEAN && !d->store_rebuilt) {
		/* damage quick_check did not see, found by the walk (which adopted nothing) */
		paddock_error why = *err;
		char path[300];

		memset(err, 0, sizeof(*err));
		snprintf(path, sizeof(path), "%s/paddockd.db", d->state_dir);
		r = store_move_aside(d, path, &why, err);
		if (r >= 0)
			r = svc_lifecycle_start(d, err);
	}
	return r;
}

void svc_close(struct daemon *d)
{
	d->store = paddock_store_free(d->store);
	svc_event_log_close(d);
}
