/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The warm pool (`--pool N`): sandboxes made ahead of demand, per template (a spec but for
 * what a claim binds: paddock_spec_template_json()), claimed by a create whose spec has that
 * template (docs/api.md, "Warm pool"). The default template is warmed at start; a template
 * a create asked for is pooled from then on, up to `--pool-templates`, the least recently
 * used one giving way. Refilling makes one sandbox at a time, asynchronously: the loop serves
 * requests while init builds the root (paddock_sandbox_create_async()). It stops while the
 * machine is short of memory, and the pool gives sandboxes back then.
 *
 * A pooled sandbox has no tenant and no record: a paddockd that dies leaves none (their
 * inits end with the control socket; a reconnect socket left behind is swept at start).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "service.h"

#define PRESSURE_CHECK_MS  1000 /* how often the pool looks at MemAvailable */
#define REFILL_QUIET_MS	   20
#define REFILL_MAX_WAIT_MS 200

struct pooled {
	paddock_sandbox *sb;
	struct pooled *next;
};

struct pool_tmpl {
	char *key;		 /* the template's JSON */
	paddock_sandbox *making; /* being made, not ready yet (one at a time) */
	double making_t0;
	paddock_spec *spec; /* a spec with this template, to make more */
	struct pooled *ready;
	unsigned n_ready;
	uint64_t last_used; /* d->pool.clock at its last claim or miss */
	bool broken;	    /* making one failed: not refilled until it is asked for again */
	unsigned seq;	    /* its number in the metrics: 0 the default, then in order of asking */
	struct daemon *d;
	struct pool_tmpl *next;
};

static unsigned total_ready(struct daemon *d)
{
	unsigned n = 0;

	for (struct pool_tmpl *t = d->pool.templates; t; t = t->next)
		n += t->n_ready;
	return n;
}

/*
 * Memory pressure: MemAvailable under --pool-min-available (kB, or a share of MemTotal).
 * MemAvailable, not PSI: a pool of idle sandboxes is memory the machine could have, and
 * handing it back before reclaim stalls anything is the point; a stall (PSI) comes later.
 */
static bool memory_low(const struct daemon *d)
{
	unsigned long long total = 0, avail = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		(void)sscanf(line, "MemTotal: %llu kB", &total);
		(void)sscanf(line, "MemAvailable: %llu kB", &avail);
	}
	fclose(f);
	if (!total)
		return false;
	if (d->pool.min_avail_kb)
		return avail < d->pool.min_avail_kb;
	return avail * 100 < total * d->pool.min_avail_pct;
}

static void tmpl_free(struct pool_tmpl *t)
{
	paddock_sandbox_free(t->making); /* cancels it: its callback never comes */
	while (t->ready) {
		struct pooled *p = t->ready;

		t->ready = p->next;
		paddock_sandbox_free(p->sb);
		free(p);
	}
	paddock_spec_free(t->spec);
	free(t->key);
	free(t);
}

/*
 * Refilling starts once requests leave the loop alone for REFILL_QUIET_MS (each request
 * pushes it back), or REFILL_MAX_WAIT_MS after it was first wanted: the part of making a
 * sandbox that runs on the loop (clone, id maps, cgroup) then never delays a request that
 * is about to come, such as the exec that follows a create, and a steady stream of
 * requests still gets the pool refilled.
 */
static void schedule_refill(struct daemon *d)
{
	double now = svc_mono_s(), wait_ms;
	struct timeval tv;

	if (!d->pool.size || !d->pool.refill_ev || d->stopping)
		return;
	if (!d->pool.refill_wanted_s)
		d->pool.refill_wanted_s = now;
	wait_ms = REFILL_MAX_WAIT_MS - (now - d->pool.refill_wanted_s) * 1000;
	if (wait_ms > REFILL_QUIET_MS)
		wait_ms = REFILL_QUIET_MS;
	if (wait_ms < 0)
		wait_ms = 0;
	tv.tv_sec = 0;
	tv.tv_usec = (suseconds_t)(wait_ms * 1000);
	evtimer_add(d->pool.refill_ev, &tv);
}

void svc_pool_request(struct daemon *d)
{
	/* a request came: the refill waits for quiet (or its deadline) */
	if (d->pool.refill_wanted_s && d->pool.refill_ev &&
	    evtimer_pending(d->pool.refill_ev, NULL))
		schedule_refill(d);
}

static void made_cb(paddock_sandbox *sb, const paddock_error *err, void *userdata)
{
	struct pool_tmpl *t = userdata;
	struct daemon *d = t->d;
	struct pooled *p;

	t->making = NULL;
	d->pool.making = false;
	if (!sb) {
		fprintf(stderr, "paddockd: pool: %s\n", err ? err->msg : "create failed");
		t->broken = true; /* not refilled until it is asked for again */
	} else if (!(p = calloc(1, sizeof(*p)))) {
		paddock_sandbox_free(sb);
	} else {
		d->pool.m.refills++;
		d->pool.m.refill_s += svc_mono_s() - t->making_t0;
		p->sb = sb;
		p->next = t->ready;
		t->ready = p;
		t->n_ready++;
	}
	schedule_refill(d);
}

/* One more sandbox for the template that lacks most, one at a time, while any lacks. */
static void refill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct paddock_sandbox_opts opts = { .orphan_timeout_s = d->orphan_timeout_s,
					     .pooled = true };
	struct pool_tmpl *want = NULL;
	paddock_error err = { 0 };

	(void)fd;
	(void)what;
	d->pool.refill_wanted_s = 0;
	if (d->stopping || d->pool.making)
		return;
	for (struct pool_tmpl *t = d->pool.templates; t; t = t->next)
		if (!t->broken && t->n_ready < d->pool.size &&
		    (!want || t->n_ready < want->n_ready))
			want = t;
	if (!want || total_ready(d) >= d->pool.max)
		return;
	if (memory_low(d)) {
		/* make none while memory is short: the pressure check refills when it is back */
		d->pool.m.low_memory++;
		return;
	}
	opts.reconnect_dir = d->reconnect_dir;
	want->making_t0 = svc_mono_s();
	if (paddock_sandbox_create_async(d->ctx, want->spec, &opts, made_cb, want, &want->making,
					 &err) < 0) {
		fprintf(stderr, "paddockd: pool: %s\n", err.msg);
		want->broken = true;
		want->making = NULL;
		schedule_refill(d);
		return;
	}
	d->pool.making = true;
}

/* The template of key, made (pooled from now on) when `add`; NULL when none. */
static struct pool_tmpl *find_tmpl(struct daemon *d, const char *key, const paddock_spec *spec,
				   bool add)
{
	struct pool_tmpl *t, **pp, **lru = NULL;
	unsigned n = 0;

	for (t = d->pool.templates; t; t = t->next)
		if (!strcmp(t->key, key))
			return t;
	if (!add)
		return NULL;
	for (pp = &d->pool.templates; *pp; pp = &(*pp)->next, n++)
		if (!lru || (*pp)->last_used < (*lru)->last_used)
			lru = pp;
	if (n >= d->pool.max_templates && lru) {
		t = *lru;
		*lru = t->next;
		if (t->making)
			d->pool.making = false;
		tmpl_free(t);
		schedule_refill(d);
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->key = strdup(key))) {
		free(t);
		return NULL;
	}
	t->d = d;
	t->seq = d->pool.next_seq++;
	{
		paddock_error err = { 0 };
		char *json = NULL;

		/*
		 * A copy of the spec (paddock_spec has no public copy, its JSON is one) with the
		 * default limits: a claim binds its own, and the first create's (a tight
		 * cpu_time_s, say) must not shape every sandbox this template keeps ready.
		 * limits.required stays: it decides whether a sandbox can be made at all.
		 * No secrets: a pooled sandbox holds none, its claim reads the claim's
		 * (paddock_sandbox_claim()), and the template keeps no value given by value.
		 * SECURITY: no workspace: a claim binds its own, and a pooled sandbox must
		 * hold no tenant's host directory (the first create's).
		 */
		json_t *o = NULL, *lim;

		if (paddock_spec_to_json(spec, &json, &err) >= 0)
			o = json_loads(json, 0, NULL);
		free(json);
		json = NULL;
		json_object_del(o, "secrets");
		json_object_del(o, "workspace");
		lim = json_object_get(o, "limits");
		if (lim) {
			json_t *req = json_incref(json_object_get(lim, "required"));

			json_object_clear(lim);
			if (req)
				json_object_set_new(lim, "required", req);
		}
		json = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (!json || paddock_spec_new(&t->spec, &err) < 0 ||
		    paddock_spec_load_json(t->spec, json, strlen(json), &err) < 0) {
			free(json);
			paddock_spec_free(t->spec);
			free(t->key);
			free(t);
			return NULL;
		}
		free(json);
	}
	t->next = d->pool.templates;
	d->pool.templates = t;
	return t;
}

int svc_pool_claim(struct daemon *d, const paddock_spec *spec, paddock_sandbox **ret_sb)
{
	paddock_error err = { 0 };
	struct pool_tmpl *t;
	char *key = NULL;
	double t0 = svc_mono_s();
	int r = -ENOENT;

	if (!d->pool.size || paddock_spec_template_json(spec, &key, &err) < 0)
		return -ENOENT;
	t = find_tmpl(d, key, spec, true);
	free(key);
	if (!t)
		return -ENOENT;
	t->last_used = ++d->pool.clock;
	t->broken = false;
	while (t->ready) {
		struct pooled *p = t->ready;

		t->ready = p->next;
		t->n_ready--;
		r = paddock_sandbox_claim(p->sb, spec, &err);
		if (r >= 0) {
			*ret_sb = p->sb;
			free(p);
			break;
		}
		fprintf(stderr, "paddockd: pool: claim: %s\n", err.msg);
		/*
		 * A claim refused before anything was bound leaves the sandbox pooled and alive:
		 * the spec is at fault, not the sandbox. It goes back, and the create goes cold
		 * (to fail there with the error it deserves): one bad request must not empty
		 * the pool.
		 */
		if (paddock_sandbox_running(p->sb)) {
			p->next = t->ready;
			t->ready = p;
			t->n_ready++;
			break;
		}
		paddock_sandbox_free(p->sb);
		free(p);
		/*
		 * A pooled sandbox that died meanwhile: the next one. A claim that failed in
		 * init (after BIND: the sandbox is gone) would likely fail the same way in the
		 * next: the create goes cold rather than burn the pool.
		 */
		if (r != -ESRCH && r != -EPIPE)
			break;
	}
	if (r >= 0) {
		double s = svc_mono_s() - t0;

		d->pool.m.hits++;
		for (int i = 0; i < SVC_POOL_BUCKETS; i++)
			if (s <= svc_pool_buckets[i] || i == SVC_POOL_BUCKETS - 1)
				d->pool.m.claim_buckets[i]++;
		d->pool.m.claim_sum += s;
	} else {
		d->pool.m.misses++;
	}
	schedule_refill(d);
	return r >= 0 ? 0 : -ENOENT;
}

static void pool_shrink(struct daemon *d);

/*
 * Every PRESSURE_CHECK_MS: under pressure, half of the ready sandboxes (at least one) go
 * back each time, from the fullest template, so a pool of hundreds is gone within seconds;
 * once pressure is over, refilling resumes.
 */
static void pressure_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	unsigned n = total_ready(d);

	(void)fd;
	(void)what;
	if (d->stopping)
		return;
	if (!memory_low(d)) {
		/* a refill that stopped for pressure resumes (no claim may come to restart it) */
		for (struct pool_tmpl *t = d->pool.templates; t; t = t->next)
			if (!t->broken && t->n_ready < d->pool.size && n < d->pool.max) {
				schedule_refill(d);
				break;
			}
		return;
	}
	d->pool.m.low_memory++;
	for (unsigned k = (n + 1) / 2; k; k--) {
		pool_shrink(d);
		d->pool.m.given_back++;
	}
}

/* Gives one ready sandbox back (the fullest template's). */
static void pool_shrink(struct daemon *d)
{
	struct pool_tmpl *big = NULL;

	for (struct pool_tmpl *t = d->pool.templates; t; t = t->next)
		if (t->n_ready && (!big || t->n_ready > big->n_ready))
			big = t;
	if (big) {
		struct pooled *p = big->ready;

		big->ready = p->next;
		big->n_ready--;
		paddock_sandbox_free(p->sb);
		free(p);
	}
}

const double svc_pool_buckets[SVC_POOL_BUCKETS] = { 0.0005, 0.001, 0.002, 0.005, 0.01,
						    0.02,   0.05,  0.1,	  0.5,	 1 };

void svc_pool_each_template(struct daemon *d, void (*fn)(unsigned seq, unsigned ready, void *ud),
			    void *ud)
{
	for (struct pool_tmpl *t = d->pool.templates; t; t = t->next)
		fn(t->seq, t->n_ready, ud);
}

int svc_pool_start(struct daemon *d, paddock_error *err)
{
	paddock_spec *spec = NULL;
	char *key = NULL;
	int r;

	if (!d->pool.size)
		return 0;
	d->pool.refill_ev = evtimer_new(d->base, refill_cb, d);
	d->pool.pressure_ev = event_new(d->base, -1, EV_PERSIST, pressure_cb, d);
	if (!d->pool.refill_ev || !d->pool.pressure_ev ||
	    event_add(d->pool.pressure_ev,
		      &(struct timeval){ .tv_usec = PRESSURE_CHECK_MS % 1000 * 1000,
					 .tv_sec = PRESSURE_CHECK_MS / 1000 }) < 0)
		return paddock_fail(err, ENOMEM, "pool timer");
	/* the default template is the one most creates ask for: warm it now */
	r = paddock_spec_new(&spec, err);
	if (r >= 0)
		r = paddock_spec_template_json(spec, &key, err);
	if (r >= 0 && !find_tmpl(d, key, spec, true))
		r = paddock_fail(err, ENOMEM, "pool template");
	free(key);
	paddock_spec_free(spec);
	if (r < 0)
		return r;
	schedule_refill(d);
	return 0;
}

void svc_pool_stop(struct daemon *d)
{
	while (d->pool.templates) {
		struct pool_tmpl *t = d->pool.templates;

		d->pool.templates = t->next;
		tmpl_free(t);
	}
	if (d->pool.refill_ev)
		event_free(d->pool.refill_ev);
	d->pool.refill_ev = NULL;
	if (d->pool.pressure_ev)
		event_free(d->pool.pressure_ev);
	d->pool.pressure_ev = NULL;
}
