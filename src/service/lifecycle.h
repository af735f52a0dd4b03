/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of paddockd's sandbox lifecycle share among themselves and nobody else:
 * lifecycle.c (records, create), lifecycle-events.c, lifecycle-delete.c, lifecycle-ttl.c,
 * lifecycle-adopt.c (start and stop) and lifecycle-recover.c (reconnect sockets the store
 * does not know). The rest of the core and its adapters use service.h.
 */
#pragma once

#include "service.h"

/* lifecycle.c */
/* A store failure nobody waits for: logged (stderr), ignored. */
void svc_store_warn(struct daemon *d, const paddock_error *err);
/* A box of nothing yet: id, tenant, d; NULL when out of memory. Not linked. */
struct box *svc_box_new(struct daemon *d, const char *id, const char *tenant);
/* Makes the box visible to the API (d->boxes). */
void svc_box_link(struct box *b);
/* The new box's row and its Idempotency-Key, together or not at all. */
int svc_box_store_new(struct box *b, paddock_error *err);
/* A create body's "metadata": an object of at most 32 bounded strings (-EINVAL naming it). */
int svc_check_metadata(json_t *m, paddock_error *err);

/* lifecycle-events.c */
/*
 * Stores the events kept for `id` (now that it has a row), tells GET /v1/events of them
 * (`tenant`'s, or NULL: the operator's only), and drops every kept one.
 */
void svc_events_flush_pending(struct daemon *d, const char *id, const char *tenant);

/* lifecycle-delete.c */
/* Unlinks a box and ends what clients hold of it: processes, file watches, event streams. */
void svc_box_unlink(struct box *b);
/* The sandbox `id` is gone: its row and its reconnect socket go. */
void svc_box_forget(struct daemon *d, const char *id);
/* Waits for every sandbox being torn down (shutdown). */
void svc_box_finish_dying(struct daemon *d);

/* lifecycle-ttl.c: the reaper's timer */
int svc_reaper_start(struct daemon *d, paddock_error *err);
void svc_reaper_stop(struct daemon *d);

/* lifecycle-adopt.c */
/* The commands init knows of b that the records do not (or no records at all). */
void svc_box_adopt_unknown_execs(struct box *b);
/* Whether `id` is a "deleting" row whose teardown this start is finishing. */
bool svc_lifecycle_finishing(struct daemon *d, const char *id);

/* lifecycle-recover.c */
/*
 * The reconnect sockets in `dir` that neither a box nor a finishing row names: recovered
 * (a damaged or missing store) or ended, through libpaddock's paddock_sweep_orphans().
 */
void svc_lifecycle_sweep_orphans(struct daemon *d, const char *dir);
