/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1/sandboxes/{id}/network: the egress policy of a live sandbox — read it with its
 * counters, or replace it ("install dependencies, then lock"); docs/api.md "Network".
 * /v1/sandboxes/{id}/network/pending and .../decisions: what a sandbox whose policy asks
 * (network.unlisted "ask") waits for a person to decide, and the answers. And the
 * per-sandbox egress counters of /metrics.
 *
 * Trust: an answer comes from an API client of the sandbox's own tenant, and is recorded
 * with that tenant; the sandbox itself has no route to this API (docs/network.md).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "paddock/policy.h"

static json_t *stats_json(const struct paddock_egress_stats *s)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "connections_allowed",
			 (json_int_t)s->connections_allowed, "connections_denied",
			 (json_int_t)s->connections_denied, "connections_active",
			 (json_int_t)s->connections_active, "bytes_out", (json_int_t)s->bytes_out,
			 "bytes_in", (json_int_t)s->bytes_in, "dns_allowed",
			 (json_int_t)s->dns_allowed, "dns_denied", (json_int_t)s->dns_denied,
			 "udp_dropped", (json_int_t)s->udp_dropped);
}

static json_t *ask_stats_json(const struct paddock_ask_stats *s)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pending", (json_int_t)s->pending,
			 "asked", (json_int_t)s->asked, "allowed_once", (json_int_t)s->allowed_once,
			 "allowed_always", (json_int_t)s->allowed_always, "denied",
			 (json_int_t)s->denied, "timed_out", (json_int_t)s->timed_out,
			 "refused_busy", (json_int_t)s->refused_busy);
}

static json_t *network_json(struct box *b)
{
	struct paddock_egress_stats st;
	struct paddock_ask_stats as;
	json_t *spec = json_loads(b->spec_json, 0, NULL), *o;

	o = json_pack("{s:O?}", "network", spec ? json_object_get(spec, "network") : NULL);
	json_decref(spec);
	if (o && b->sb && paddock_sandbox_egress_stats(b->sb, &st, NULL) >= 0)
		json_object_set_new(o, "stats", stats_json(&st));
	if (o && b->sb && paddock_sandbox_ask_stats(b->sb, &as, NULL) >= 0)
		json_object_set_new(o, "asks", ask_stats_json(&as));
	return o;
}

static void put_network(struct request *r, struct box *b)
{
	static const char *const fields[] = {
		"mode",		 "allow",	    "deny", "max_connections", "unlisted",
		"ask_timeout_s", "ask_max_pending", NULL
	};
	json_t *body = pdd_body_object(r, false), *net = NULL, *v, *answer;
	paddock_error err = { 0 };
	int closed;

	if (!body)
		return;
	if (!pdd_check_fields(r, body, fields))
		goto out;
	if (!json_is_string(json_object_get(body, "mode"))) {
		pdd_reply_error(r, 400, "invalid", "network.mode",
				"expected 'none', 'allowlist' or 'open' (the mode is required)");
		goto out;
	}
	if (!json_object_get(body, "allow"))
		json_object_set_new(body, "allow", json_array());
	if (!json_object_get(body, "deny"))
		json_object_set_new(body, "deny", json_array());
	net = json_pack("{s:O, s:O, s:O}", "mode", json_object_get(body, "mode"), "allow",
			json_object_get(body, "allow"), "deny", json_object_get(body, "deny"));
	/* bounds keep their values unless given; what decides (unlisted) is replaced */
	for (const char *const *k = (const char *const[]){ "max_connections", "ask_timeout_s",
							   "ask_max_pending", NULL };
	     net && *k; k++)
		if ((v = json_object_get(body, *k)))
			json_object_set(net, *k, v);
	v = json_object_get(body, "unlisted");
	if (net)
		json_object_set_new(net, "unlisted", v ? json_incref(v) : json_string("deny"));
	closed = net ? svc_box_set_network(b, net, &err)
		     : paddock_fail(&err, ENOMEM, "network policy");
	if (closed < 0) {
		if (err.code == EPERM && strstr(err.msg, "--max-network"))
			pdd_reply_paddock_error(r, &err); /* 403 */
		else if (err.code == EPERM)
			pdd_reply_error(r, 409, "conflict", "network.mode", "%s", err.msg);
		else
			pdd_reply_paddock_error(r, &err);
		goto out;
	}
	/* lock means lock: the connections the new policy refused were closed, and how many */
	answer = network_json(b);
	if (answer)
		json_object_set_new(answer, "connections_closed", json_integer(closed));
	pdd_reply_json(r, 200, answer);
out:
	json_decref(net);
	json_decref(body);
}

void pdd_api_network(struct request *r, struct box *b)
{
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pdd_reply_error(r, 409, "conflict", "id", "the sandbox has stopped");
	if (r->method == EVHTTP_REQ_GET)
		return pdd_reply_json(r, 200, network_json(b));
	if (r->method == EVHTTP_REQ_PUT)
		return put_network(r, b);
	pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET or PUT");
}

/* ---- asking a person: pending decisions ----------------------------------------------------- */

#define ASKS_MAX 64 /* network.ask_max_pending's ceiling: every pending decision fits */
#define WHO_MAX	 128

/* A decision as the API shows it: "answer", "by" and "who" are null while it is pending. */
static json_t *decision_json(const struct paddock_ask *a)
{
	return json_pack("{s:I, s:s, s:i, s:s, s:s, s:i, s:o, s:o, s:s?, s:s?, s:s?, s:b}", "id",
			 (json_int_t)a->id, "host", a->host, "port", (int)a->port, "rule", a->rule,
			 "via", a->via, "connections", (int)a->connections, "asked_at",
			 svc_time_json(a->asked_ms), "expires_at", svc_time_json(a->expires_ms),
			 "answer", a->decided ? paddock_ask_answer_to_string(a->answer) : NULL,
			 "by", a->decided ? a->by : NULL, "who", a->decided ? a->who : NULL,
			 "timed_out", a->decided && a->timed_out);
}

/* the core's hook (svc_hooks.box_asked): a decision of b, asked or ended, to its followers */
void pdd_network_asked(struct box *b, const struct paddock_ask *a)
{
	for (struct watcher *w = b->ask_watchers; w; w = w->next)
		pdd_stream_line(w, decision_json(a));
}

static void ask_follower_gone(struct watcher *w)
{
	struct box *b = w->owner;

	pdd_watcher_free(w, &b->ask_watchers);
}

void pdd_network_release(struct box *b)
{
	while (b->ask_watchers) {
		pdd_stream_end(b->ask_watchers);
		pdd_watcher_free(b->ask_watchers, &b->ask_watchers);
	}
}

static void get_pending(struct request *r, struct box *b)
{
	const struct paddock_ask *asks[ASKS_MAX];
	size_t n = paddock_sandbox_asks(b->sb, asks, ASKS_MAX);
	const char *follow = pdd_query(r, "follow");
	struct watcher *w;
	json_t *list;

	if (follow && strcmp(follow, "0") != 0 && strcmp(follow, "1") != 0)
		return pdd_reply_error(r, 400, "invalid", "follow", "expected 1 or 0");
	if (!follow || strcmp(follow, "1") != 0) {
		list = json_array();
		for (size_t i = 0; list && i < n; i++)
			json_array_append_new(list, decision_json(asks[i]));
		return pdd_reply_json(r, 200, json_pack("{s:o*}", "pending", list));
	}
	/* each decision as it is asked and again when it ends; those pending now first */
	w = pdd_watcher_new(r, W_EVENTS, b, &b->ask_watchers);
	if (!w)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	w->on_gone = ask_follower_gone;
	pdd_http_no_delay(r->req);
	pdd_stream_start(w, "application/x-ndjson");
	for (size_t i = 0; i < n; i++)
		pdd_stream_line(w, decision_json(asks[i]));
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

bool pdd_decision_parse(struct request *r, json_t *body, struct decision_req *q)
{
	static const char *const fields[] = { "id", "answer", "who", NULL };
	json_t *id = json_object_get(body, "id"), *answer = json_object_get(body, "answer");
	json_t *who = json_object_get(body, "who");
	int a;

	if (json_is_null(who))
		who = NULL; /* as if not given */

	if (!pdd_check_fields(r, body, fields))
		return false;
	if (!json_is_integer(id) || json_integer_value(id) < 1) {
		pdd_reply_error(r, 400, "invalid", "id",
				"expected the id of a pending decision (GET .../network/pending)");
		return false;
	}
	a = json_is_string(answer) ? paddock_ask_answer_from_string(json_string_value(answer))
				   : -EINVAL;
	if (a < 0) {
		pdd_reply_error(r, 400, "invalid", "answer",
				"expected 'allow_once', 'allow_always' or 'deny'");
		return false;
	}
	if (who && (!json_is_string(who) || json_string_length(who) > WHO_MAX ||
		    strlen(json_string_value(who)) != json_string_length(who) ||
		    !printable(json_string_value(who)))) {
		pdd_reply_error(r, 400, "invalid", "who",
				"expected printable ASCII of at most %d bytes: who answers",
				WHO_MAX);
		return false;
	}
	q->id = (uint64_t)json_integer_value(id);
	q->answer = (enum paddock_ask_answer)a;
	q->who = who ? json_string_value(who) : NULL;
	return true;
}

/* POST .../network/decisions {"id": N, "answer": "allow_once"|"allow_always"|"deny", "who"} */
static void post_decision(struct request *r, struct box *b)
{
	json_t *body = pdd_body_object(r, false), *out = NULL;
	const struct paddock_ask *asks[ASKS_MAX];
	struct decision_req q;
	paddock_error err = { 0 };
	char by[8 + SVC_MAX_TENANT];
	size_t n;
	int k;

	if (!body)
		return;
	if (!pdd_decision_parse(r, body, &q))
		goto out;
	/* the answer as it will be recorded, made before the decision is gone */
	n = paddock_sandbox_asks(b->sb, asks, ASKS_MAX);
	for (size_t i = 0; i < n && !out; i++)
		if (asks[i]->id == q.id)
			out = decision_json(asks[i]);
	/* SECURITY: recorded with the tenant whose token made the request */
	snprintf(by, sizeof(by), "api:%s", r->tenant);
	k = paddock_sandbox_answer(b->sb, q.id, q.answer, by, q.who, &err);
	if (k < 0) {
		if (err.code == ENOSPC)
			pdd_reply_error(r, 409, "conflict", err.field, "%s", err.msg);
		else
			pdd_reply_paddock_error(r, &err);
		goto out;
	}
	if (out) {
		json_object_set_new(out, "answer",
				    json_string(paddock_ask_answer_to_string(q.answer)));
		json_object_set_new(out, "by", json_string(by));
		json_object_set_new(out, "who", q.who ? json_string(q.who) : json_null());
	}
	pdd_reply_json(r, 200, out);
	out = NULL;
out:
	json_decref(out);
	json_decref(body);
}

void pdd_api_network_asks(struct request *r, struct box *b)
{
	if (strcmp(r->seg[4], "pending") != 0 && strcmp(r->seg[4], "decisions") != 0)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pdd_reply_error(r, 409, "conflict", "id", "the sandbox has stopped");
	if (strcmp(r->seg[4], "pending") == 0) {
		if (r->method != EVHTTP_REQ_GET)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
		return get_pending(r, b);
	}
	if (r->method != EVHTTP_REQ_POST)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
	post_decision(r, b);
}

/* paddock_egress_asks_total{answer} and paddock_egress_asks_pending, per sandbox */
static void metrics_asks(struct daemon *d, const char *tenant, struct evbuffer *out)
{
	static const char *const answers[] = { "allow_once", "allow_always", "deny", "timeout",
					       "busy" };

	evbuffer_add_printf(out, "# TYPE paddock_egress_asks_total counter\n");
	for (struct box *b = d->boxes; b; b = b->next) {
		struct paddock_ask_stats s;

		if (!pdd_metrics_shows(tenant, b) || !b->sb ||
		    paddock_sandbox_ask_stats(b->sb, &s, NULL) < 0)
			continue;
		const uint64_t v[] = { s.allowed_once, s.allowed_always, s.denied, s.timed_out,
				       s.refused_busy };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			evbuffer_add_printf(
				out,
				"paddock_egress_asks_total{sandbox=\"%s\",answer=\"%s\"} "
				"%llu\n",
				b->id, answers[i], (unsigned long long)v[i]);
	}
	evbuffer_add_printf(out, "# TYPE paddock_egress_asks_pending gauge\n");
	for (struct box *b = d->boxes; b; b = b->next) {
		struct paddock_ask_stats s;

		if (pdd_metrics_shows(tenant, b) && b->sb &&
		    paddock_sandbox_ask_stats(b->sb, &s, NULL) >= 0)
			evbuffer_add_printf(out,
					    "paddock_egress_asks_pending{sandbox=\"%s\"} %llu\n",
					    b->id, (unsigned long long)s.pending);
	}
}

/* One series: its name, type, and the label of its two values (NULL: one value). */
static const struct {
	const char *name, *type, *label, *first, *second;
} series[] = {
	{ "paddock_egress_connections_total", "counter", "decision", "allow", "deny" },
	{ "paddock_egress_bytes_total", "counter", "direction", "out", "in" },
	{ "paddock_egress_dns_queries_total", "counter", "decision", "allow", "deny" },
	{ "paddock_egress_udp_dropped_total", "counter", NULL, NULL, NULL },
	{ "paddock_egress_connections_active", "gauge", NULL, NULL, NULL },
};

static void series_values(size_t i, const struct paddock_egress_stats *s, uint64_t v[2])
{
	const uint64_t all[][2] = {
		{ s->connections_allowed, s->connections_denied },
		{ s->bytes_out, s->bytes_in },
		{ s->dns_allowed, s->dns_denied },
		{ s->udp_dropped, 0 },
		{ s->connections_active, 0 },
	};

	v[0] = all[i][0];
	v[1] = all[i][1];
}

void pdd_metrics_egress(struct daemon *d, const char *tenant, struct evbuffer *out)
{
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		evbuffer_add_printf(out, "# TYPE %s %s\n", series[i].name, series[i].type);
		for (struct box *b = d->boxes; b; b = b->next) {
			struct paddock_egress_stats s;
			uint64_t v[2];

			if (!pdd_metrics_shows(tenant, b) || !b->sb ||
			    paddock_sandbox_egress_stats(b->sb, &s, NULL) < 0)
				continue;
			series_values(i, &s, v);
			if (!series[i].label) {
				evbuffer_add_printf(out, "%s{sandbox=\"%s\"} %llu\n",
						    series[i].name, b->id,
						    (unsigned long long)v[0]);
				continue;
			}
			evbuffer_add_printf(out,
					    "%s{sandbox=\"%s\",%s=\"%s\"} %llu\n"
					    "%s{sandbox=\"%s\",%s=\"%s\"} %llu\n",
					    series[i].name, b->id, series[i].label, series[i].first,
					    (unsigned long long)v[0], series[i].name, b->id,
					    series[i].label, series[i].second,
					    (unsigned long long)v[1]);
		}
	}
	metrics_asks(d, tenant, out);
}
