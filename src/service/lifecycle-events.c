/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's events: libpaddock's (the context's sink) and paddockd's own (svc_log_event), to
 * the JSON-lines log, the store (a sandbox's, once it has a row: until then they wait in
 * d->pending) and the followers of GET /v1/events and of the sandbox's events.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "lifecycle.h"

/* To the adapter's followers of every sandbox's events (GET /v1/events), if it has any. */
static void events_broadcast(struct daemon *d, const char *tenant, const char *sandbox, json_t *o)
{
	if (d->hooks && d->hooks->event)
		d->hooks->event(d, tenant, sandbox, o);
}

void svc_event_sink(const struct paddock_event *ev, void *userdata)
{
	struct daemon *d = userdata;
	json_t *o;
	const char *sid;
	paddock_error err = { 0 };
	size_t len = strlen(ev->json);

	/* one write per line, O_APPEND: lines from concurrent writers never interleave */
	if (d->event_log_fd >= 0) {
		char *line = malloc(len + 1);
		if (line) {
			memcpy(line, ev->json, len);
			line[len] = '\n';
			svc_event_log_write(d, line, len + 1);
			free(line);
		}
	}
	/*
	 * In one process the log is all: nobody reads a sandbox's events back (no API), so they
	 * are neither parsed nor stored (a run_command's two events cost 8% of its time).
	 */
	if (d->in_process)
		return;
	o = json_loads(ev->json, 0, NULL);
	sid = o ? json_string_value(json_object_get(o, "sandbox")) : NULL;
	if (!sid && o && ev->level != PADDOCK_LEVEL_DEBUG)
		events_broadcast(d, NULL, NULL, o); /* paddockd's own: the operator's */
	if (sid && ev->level != PADDOCK_LEVEL_DEBUG) {
		struct box *b = NULL, *gone = NULL;
		bool dying = false;

		for (b = d->boxes; b; b = b->next)
			if (strcmp(b->id, sid) == 0)
				break;
		for (struct box *x = d->dying; x && !b && !dying; x = x->next)
			if (strcmp(x->id, sid) == 0)
				gone = x, dying = true;
		/* a sandbox being created has no row yet: keep its first events until it has */
		if (!b && !dying && d->n_pending < sizeof(d->pending) / sizeof(d->pending[0])) {
			struct pending_event *pe = &d->pending[d->n_pending];

			pe->json = strdup(ev->json);
			if (pe->json) {
				snprintf(pe->sandbox, sizeof(pe->sandbox), "%s", sid);
				snprintf(pe->name, sizeof(pe->name), "%s", ev->name);
				pe->ts_ms = svc_now_ms();
				d->n_pending++;
			}
		} else if (b) {
			(void)paddock_store_add_event(d->store, b->id, svc_now_ms(), ev->name,
						      ev->json, NULL, &err);
		}
		if (b && d->hooks && d->hooks->box_event)
			d->hooks->box_event(b, o);
		/* one being created is told once it has a row, with its tenant (below) */
		if (o && (b || gone))
			events_broadcast(d, (b ? b : gone)->tenant, sid, o);
	}
	json_decref(o);
}

/*
 * Stores the events kept for `id` (now that it has a row), tells GET /v1/events of them
 * (`tenant`'s, or NULL: the operator's only), and drops every kept one.
 */
void svc_events_flush_pending(struct daemon *d, const char *id, const char *tenant)
{
	for (size_t i = 0; i < d->n_pending; i++) {
		struct pending_event *pe = &d->pending[i];

		if (strcmp(pe->sandbox, id) == 0) {
			json_t *o = json_loads(pe->json, 0, NULL);

			(void)paddock_store_add_event(d->store, id, pe->ts_ms, pe->name, pe->json,
						      NULL, NULL);
			if (o)
				events_broadcast(d, tenant, id, o);
			json_decref(o);
		}
		free(pe->json);
	}
	d->n_pending = 0;
}

/* `tenant`: whose GET /v1/events hears of it (NULL: the operator's only) */
void svc_log_event(struct daemon *d, const char *tenant, const char *event, const char *sandbox,
		   const char *fmt, ...)
{
	char line[512], ts[40], fields[320] = "";
	va_list ap;
	int n;

	bool followed = d->hooks && d->hooks->event;

	if (d->event_log_fd < 0 && !followed)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof(fields), fmt, ap);
	va_end(ap);
	svc_format_time(svc_now_ms(), ts, sizeof(ts));
	n = snprintf(line, sizeof(line),
		     "{\"ts\":\"%s\",\"level\":\"info\",\"event\":\"%s\",\"sandbox\":\"%s\"%s%s}\n",
		     ts, event, sandbox, fields[0] ? "," : "", fields);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	svc_event_log_write(d, line, (size_t)n);
	if (followed) {
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);

		if (o)
			events_broadcast(d, tenant, sandbox, o);
		json_decref(o);
	}
}
