/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reaper: once a second, sandboxes past their TTL are removed (or paused, on_timeout
 * "pause"), idle ones past their idle timeout removed; Idempotency-Keys older than a day go.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "lifecycle.h"

#define REAPER_PERIOD_S 1

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	int64_t now = svc_now_ms();
	struct box *b, *next;

	(void)fd;
	(void)what;
	/* Idempotency-Keys are remembered for a day (docs/api.md) */
	if (++d->reaper_ticks % 60 == 1) {
		paddock_error err = { 0 };

		if (paddock_store_prune_idempotency(d->store, now - SVC_IDEM_KEEP_S * 1000LL,
						    &err) < 0)
			svc_store_warn(d, &err);
	}
	for (b = d->boxes; b; b = next) {
		next = b->next;
		/* a command still running is activity, however long it runs without a request */
		for (struct proc *p = b->procs; p; p = p->next)
			if (!p->exited)
				b->last_active_ms = now;
		if (b->expires_ms && now >= b->expires_ms) { /* 0: none (in_process) */
			if (!svc_box_pause_on_timeout(b))
				svc_box_destroy(b, "ttl", NULL);
		} else if (b->idle_timeout_s > 0 && !b->paused && !b->stopped &&
			   now - b->last_active_ms >= b->idle_timeout_s * 1000) {
			/* a paused sandbox is idle by intent: its idle timeout waits for the resume
			 */
			svc_box_destroy(b, "idle", NULL);
		}
	}
}

int svc_reaper_start(struct daemon *d, paddock_error *err)
{
	struct timeval tv = { .tv_sec = REAPER_PERIOD_S };

	d->reaper_ev = event_new(d->base, -1, EV_PERSIST, reaper_cb, d);
	if (!d->reaper_ev || event_add(d->reaper_ev, &tv) < 0)
		return paddock_fail(err, ENOMEM, "reaper timer");
	return 0;
}

void svc_reaper_stop(struct daemon *d)
{
	if (d->reaper_ev)
		event_free(d->reaper_ev);
	d->reaper_ev = NULL;
}
