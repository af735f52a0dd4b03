/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events of a sandbox (from the store, then live), every sandbox's live events (GET
 * /v1/events: what the web console follows), and the daemon's metrics (Prometheus text).
 * Followers are bounded: one that reads too slowly is closed (pdd_stream_event).
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/*
 * A sandbox's stored events, oldest first: at most EVENTS_REPLAY_MAX (the newest of a
 * longer past are not sent), REPLAY_PAGE at a time. The next page is read from the store
 * once the client took the last one (evhttp's chunk callback): a client that reads nothing
 * makes paddockd hold one page, not the whole past (a follower's live events are bounded by
 * --stream-backlog-max, pdd_stream_event).
 */
#define EVENTS_REPLAY_MAX 10000
#define REPLAY_PAGE	  64

struct page {
	struct watcher *w;
	struct evbuffer *out;
	unsigned n;
};

static int add_stored(int64_t seq, const char *json, void *userdata)
{
	struct page *pg = userdata;

	pg->w->replay_seq = seq;
	pg->n++;
	evbuffer_add(pg->out, json, strlen(json));
	evbuffer_add(pg->out, "\n", 1);
	return 0;
}

static void follower_gone(struct watcher *w)
{
	struct box *b = w->owner;

	pdd_watcher_free(w, &b->watchers);
}

static void replay_pump(struct evhttp_connection *evcon, void *arg);

/* One page of the replay; true when the replay is over (w may be freed then). */
static bool replay_page(struct watcher *w)
{
	struct box *b = w->owner;
	struct page pg = { .w = w, .out = evbuffer_new() };
	unsigned want = EVENTS_REPLAY_MAX - w->replay_sent;
	paddock_error err = { 0 };
	bool last;

	if (want > REPLAY_PAGE)
		want = REPLAY_PAGE;
	if (pg.out && want > 0)
		(void)paddock_store_list_events(w->replay_store, b->id, w->replay_seq, want,
						add_stored, &pg, &err);
	w->replay_sent += pg.n;
	last = !pg.out || pg.n < want || w->replay_sent >= EVENTS_REPLAY_MAX;
	/* the last page goes with no callback: evhttp keeps a connection's until replaced */
	if (pg.n > 0)
		evhttp_send_reply_chunk_with_cb(w->req, pg.out, last ? NULL : replay_pump, w);
	if (pg.out)
		evbuffer_free(pg.out);
	if (!last)
		return false;
	w->replaying = false;
	if (!w->replay_follow) {
		pdd_stream_end(w);
		pdd_watcher_free(w, &b->watchers);
	}
	return true;
}

/*
 * COMPAT(libevent 2.1.12): behind the HTTP gate a chunk may be written from inside
 * evhttp_send_reply_chunk_with_cb(), and evhttp calls this (the connection's write callback)
 * from there: a call while a page is being sent only asks for one more round. Called again
 * once a replay is over (the callback stays until replaced) it does nothing.
 */
static void replay_pump(struct evhttp_connection *evcon, void *arg)
{
	struct watcher *w = arg;

	(void)evcon;
	if (!w->replaying || !w->req)
		return;
	if (w->replay_pumping) {
		w->replay_again = true;
		return;
	}
	w->replay_pumping = true;
	do {
		w->replay_again = false;
		if (replay_page(w))
			return;
	} while (w->replay_again);
	w->replay_pumping = false;
}

void pdd_api_events(struct request *r, struct box *b)
{
	const char *follow = pdd_query(r, "follow");
	struct watcher *w;

	if (r->method != EVHTTP_REQ_GET)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
	w = pdd_watcher_new(r, W_EVENTS, b, &b->watchers);
	if (!w)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	w->on_gone = follower_gone;
	w->replay_store = r->d->store;
	w->replaying = true;
	w->replay_follow = follow && strcmp(follow, "1") == 0;
	pdd_stream_start(w, "application/x-ndjson");
	replay_pump(NULL, w);
}

static void all_follower_gone(struct watcher *w)
{
	struct daemon *d = w->owner;

	pdd_watcher_free(w, &d->http->event_watchers);
}

/*
 * Live only: a sandbox's past is at its own events route (the store keeps it per sandbox);
 * this one says what happens from now on, across the tenant's sandboxes.
 */
void pdd_api_events_all(struct request *r)
{
	const char *follow = pdd_query(r, "follow"), *sandbox = pdd_query(r, "sandbox");
	struct watcher *w;

	if (r->method != EVHTTP_REQ_GET)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
	if (!follow || strcmp(follow, "1") != 0)
		return pdd_reply_error(r, 400, "invalid", "follow",
				       "expected follow=1 (this route streams live events; a "
				       "sandbox's stored ones are at /v1/sandboxes/{id}/events)");
	if (sandbox && !pdd_sandbox_id_valid(sandbox))
		return pdd_reply_error(r, 400, "invalid", "sandbox",
				       "expected a sandbox id (sb_ and 12 characters)");
	w = pdd_watcher_new(r, W_EVENTS, r->d, &r->d->http->event_watchers);
	if (!w)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	w->on_gone = all_follower_gone;
	w->tenant = r->tenant;
	snprintf(w->sandbox, sizeof(w->sandbox), "%s", sandbox ? sandbox : "");
	pdd_http_no_delay(r->req);
	pdd_stream_start(w, "application/x-ndjson");
}

void pdd_events_broadcast(struct daemon *d, const char *tenant, const char *sandbox, json_t *o)
{
	for (struct watcher *w = d->http->event_watchers; w; w = w->next) {
		/* SECURITY: a tenant sees its own sandboxes' events; the operator every one */
		if (strcmp(w->tenant, SVC_LOCAL_TENANT) != 0 &&
		    (!tenant || strcmp(w->tenant, tenant) != 0))
			continue;
		if (w->sandbox[0] && (!sandbox || strcmp(w->sandbox, sandbox) != 0))
			continue;
		pdd_stream_event(d, w, json_incref(o));
	}
}

void pdd_events_release(struct daemon *d)
{
	while (d->http->event_watchers) {
		pdd_stream_end(d->http->event_watchers);
		pdd_watcher_free(d->http->event_watchers, &d->http->event_watchers);
	}
}

bool pdd_metrics_shows(const char *tenant, const struct box *b)
{
	/* SECURITY: a tenant's metrics name no other tenant's sandbox */
	return strcmp(tenant, SVC_LOCAL_TENANT) == 0 || strcmp(tenant, b->tenant) == 0;
}

static void pool_ready(unsigned seq, unsigned ready, void *ud)
{
	evbuffer_add_printf(ud, "paddock_pool_ready{template=\"%u\"} %u\n", seq, ready);
}

/* The warm pool's (the core's counters, d->pool.m) in Prometheus' text format. */
static void pool_metrics(struct daemon *d, struct evbuffer *b)
{
	const struct pool *p = &d->pool;

	evbuffer_add_printf(b, "# TYPE paddock_pool_ready gauge\n");
	svc_pool_each_template(d, pool_ready, b);
	evbuffer_add_printf(
		b,
		"# TYPE paddock_pool_hits_total counter\npaddock_pool_hits_total %llu\n"
		"# TYPE paddock_pool_misses_total counter\npaddock_pool_misses_total "
		"%llu\n# TYPE paddock_pool_low_memory_total counter\n"
		"paddock_pool_low_memory_total %llu\n"
		"# TYPE paddock_pool_given_back_total counter\n"
		"paddock_pool_given_back_total %llu\n"
		"# TYPE paddock_pool_refill_seconds summary\n"
		"paddock_pool_refill_seconds_sum %.6f\npaddock_pool_refill_seconds_count "
		"%llu\n# TYPE paddock_pool_claim_seconds histogram\n",
		(unsigned long long)p->m.hits, (unsigned long long)p->m.misses,
		(unsigned long long)p->m.low_memory, (unsigned long long)p->m.given_back,
		p->m.refill_s, (unsigned long long)p->m.refills);
	for (unsigned i = 0; i < SVC_POOL_BUCKETS; i++) {
		char le[32];

		if (i == SVC_POOL_BUCKETS - 1)
			snprintf(le, sizeof(le), "+Inf");
		else
			snprintf(le, sizeof(le), "%g", svc_pool_buckets[i]);
		evbuffer_add_printf(b, "paddock_pool_claim_seconds_bucket{le=\"%s\"} %llu\n", le,
				    (unsigned long long)p->m.claim_buckets[i]);
	}
	evbuffer_add_printf(b,
			    "paddock_pool_claim_seconds_sum %.6f\n"
			    "paddock_pool_claim_seconds_count %llu\n",
			    p->m.claim_sum, (unsigned long long)p->m.hits);
}

void pdd_api_metrics(struct request *r)
{
	static const char *const destroyed[4] = { "deleted", "ttl", "idle", "other" };
	struct daemon *d = r->d;
	struct evbuffer *b = evbuffer_new();
	unsigned live = 0, paused = 0;

	if (!b)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	for (struct box *x = d->boxes; x; x = x->next) {
		live++;
		paused += x->paused;
	}
	evbuffer_add_printf(b, "# TYPE paddock_sandboxes_live gauge\npaddock_sandboxes_live %u\n",
			    live);
	evbuffer_add_printf(b,
			    "# TYPE paddock_sandboxes_paused gauge\n"
			    "paddock_sandboxes_paused %u\n",
			    paused);
	evbuffer_add_printf(b,
			    "# TYPE paddock_sandboxes_created_total counter\n"
			    "paddock_sandboxes_created_total %llu\n",
			    (unsigned long long)d->m.created);
	evbuffer_add_printf(b, "# TYPE paddock_sandboxes_destroyed_total counter\n");
	for (int i = 0; i < 4; i++)
		evbuffer_add_printf(b, "paddock_sandboxes_destroyed_total{reason=\"%s\"} %llu\n",
				    destroyed[i], (unsigned long long)d->m.destroyed_by[i]);
	evbuffer_add_printf(b, "# TYPE paddock_exec_total counter\n");
	for (int i = 0; i < _PADDOCK_END_MAX; i++)
		evbuffer_add_printf(b, "paddock_exec_total{reason=\"%s\"} %llu\n",
				    paddock_end_reason_to_string((enum paddock_end_reason)i),
				    (unsigned long long)d->m.execs_by[i]);
	evbuffer_add_printf(b, "# TYPE paddock_exec_seconds histogram\n");
	for (int i = 0; i < 12; i++) {
		if (i == 11)
			evbuffer_add_printf(b, "paddock_exec_seconds_bucket{le=\"+Inf\"} %llu\n",
					    (unsigned long long)d->m.exec_buckets[i]);
		else
			evbuffer_add_printf(b, "paddock_exec_seconds_bucket{le=\"%g\"} %llu\n",
					    svc_exec_buckets()[i],
					    (unsigned long long)d->m.exec_buckets[i]);
	}
	evbuffer_add_printf(b, "paddock_exec_seconds_sum %.6f\npaddock_exec_seconds_count %llu\n",
			    d->m.exec_sum, (unsigned long long)d->m.exec_count);
	evbuffer_add_printf(b, "# TYPE paddock_http_requests_total counter\n");
	for (int i = 1; i < 6; i++)
		evbuffer_add_printf(b, "paddock_http_requests_total{code=\"%dxx\"} %llu\n", i,
				    (unsigned long long)d->http->http_by_class[i]);
	evbuffer_add_printf(b, "# TYPE paddock_seccomp_denied_total counter\n");
	for (struct box *x = d->boxes; x; x = x->next)
		if (x->sb && pdd_metrics_shows(r->tenant, x))
			evbuffer_add_printf(
				b, "paddock_seccomp_denied_total{sandbox=\"%s\"} %llu\n", x->id,
				(unsigned long long)paddock_sandbox_seccomp_denied(x->sb));
	pdd_metrics_egress(d, r->tenant, b);
	pool_metrics(d, b);
	pdd_http_gate_metrics(d, b);
	evbuffer_add_printf(b,
			    "# TYPE paddock_http_streams_dropped_total counter\n"
			    "paddock_http_streams_dropped_total %llu\n",
			    (unsigned long long)d->http->streams_dropped);
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
			  "text/plain; version=0.0.4");
	d->http->http_by_class[2]++;
	evhttp_send_reply(r->req, 200, "OK", b);
	evbuffer_free(b);
}
