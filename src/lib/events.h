/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured events: the only way libpaddock tells the world what happened. Each event is
 * one JSON object, envelope first (ts, level, event, sandbox, exec), handed to the sink the
 * front end installed on the context. Field names are API: see docs/events.md.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "paddock/paddock.h"

/*
 * Emits `name` with `fields` (an object, stolen; may be NULL). sandbox_id and exec_id may
 * be NULL. Never fails visibly: an event that cannot be built is dropped.
 */
void pd_emit(paddock_ctx *ctx, enum paddock_event_level level, const char *name,
	     const char *sandbox_id, const char *exec_id, json_t *fields);

/* Whether anyone listens: callers skip building fields nobody will read. */
bool pd_events_wanted(const paddock_ctx *ctx);

/* Adds "errno" (symbolic) and "error" (message) of err to fields (an object). */
void pd_event_add_error(json_t *fields, const paddock_error *err);
