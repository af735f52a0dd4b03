/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1/sandboxes/{id}/network: the egress policy of a live sandbox — read it with its
 * counters, or replace it ("install dependencies, then lock"); docs/api.md "Network".
 * And the per-sandbox egress counters of /metrics.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static const char *const net_modes[] = { "none", "allowlist", "open" };

int pd_max_network_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, net_modes[i]) == 0)
			return i;
	return -1;
}

int pd_check_max_network(struct daemon *d, const char *spec_json, paddock_error *err)
{
	json_t *spec = json_loads(spec_json, 0, NULL);
	const char *mode = json_string_value(json_object_get(json_object_get(spec, "network"),
							     "mode"));
	int m = pd_max_network_parse(mode), r = 0;

	/* SECURITY: the operator's bound on egress holds for every tenant, at create and PUT */
	if (m < 0 || m > d->max_net) {
		memset(err, 0, sizeof(*err));
		err->code = EPERM;
		snprintf(err->field, sizeof(err->field), "network.mode");
		snprintf(err->msg, sizeof(err->msg),
			 "this paddockd allows network.mode '%s' at most (--max-network); "
			 "'%s' was asked for",
			 net_modes[d->max_net], mode ? mode : "?");
		r = -EPERM;
	}
	json_decref(spec);
	return r;
}

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

static json_t *network_json(struct box *b)
{
	struct paddock_egress_stats st;
	json_t *spec = json_loads(b->spec_json, 0, NULL), *o;

	o = json_pack("{s:O?}", "network", spec ? json_object_get(spec, "network") : NULL);
	json_decref(spec);
	if (o && b->sb && paddock_sandbox_egress_stats(b->sb, &st, NULL) >= 0)
		json_object_set_new(o, "stats", stats_json(&st));
	return o;
}

/*
 * PUT replaces the policy: the mode is required and a rule list left out is empty, not the
 * old one, so the rules in force are exactly those sent. max_connections, a bound rather
 * than a rule, keeps its value unless given. Returns how many open connections the new
 * policy closed, or -errno.
 */
int pd_box_set_network(struct box *b, json_t *net, paddock_error *err)
{
	json_t *doc = json_pack("{s:O}", "network", net);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL, *spec_json = NULL;
	paddock_spec *spec = NULL;
	int k;

	/* the rest of the spec is the sandbox's own: only its network section changes */
	k = text ? paddock_spec_new(&spec, err) : dfail(err, ENOMEM, "network policy");
	if (k >= 0)
		k = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), err);
	if (k >= 0)
		k = paddock_spec_load_json(spec, text, strlen(text), err);
	if (k >= 0)
		k = paddock_spec_validate(spec, err);
	if (k >= 0)
		k = paddock_spec_to_json(spec, &spec_json, err);
	if (k >= 0)
		k = pd_check_max_network(b->d, spec_json, err);
	if (k >= 0)
		k = paddock_sandbox_set_network(b->sb, spec, err);
	if (k >= 0) {
		char *old = b->spec_json;

		b->spec_json = spec_json;
		spec_json = NULL;
		/* a restarted daemon re-adopts the sandbox with this policy */
		k = pd_box_persist(b, err);
		if (k < 0) {
			/* not recorded: the policy in force goes back to the one that is */
			spec_json = b->spec_json;
			b->spec_json = old;
			old = NULL;
			paddock_spec_free(spec);
			spec = NULL;
			if (paddock_spec_new(&spec, NULL) >= 0 &&
			    paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json),
						   NULL) >= 0)
				(void)paddock_sandbox_set_network(b->sb, spec, NULL);
		}
		free(old);
	}
	free(spec_json);
	free(text);
	json_decref(doc);
	paddock_spec_free(spec);
	return k;
}

static void put_network(struct request *r, struct box *b)
{
	static const char *const fields[] = { "mode", "allow", "deny", "max_connections", NULL };
	json_t *body = pd_body_object(r, false), *net = NULL, *v, *answer;
	paddock_error err = { 0 };
	int closed;

	if (!body)
		return;
	if (!pd_check_fields(r, body, fields))
		goto out;
	if (!json_is_string(json_object_get(body, "mode"))) {
		pd_reply_error(r, 400, "invalid", "network.mode",
			       "expected 'none', 'allowlist' or 'open' (the mode is required)");
		goto out;
	}
	if (!json_object_get(body, "allow"))
		json_object_set_new(body, "allow", json_array());
	if (!json_object_get(body, "deny"))
		json_object_set_new(body, "deny", json_array());
	net = json_pack("{s:O, s:O, s:O}", "mode", json_object_get(body, "mode"), "allow",
			json_object_get(body, "allow"), "deny", json_object_get(body, "deny"));
	v = json_object_get(body, "max_connections");
	if (net && v)
		json_object_set(net, "max_connections", v);
	closed = net ? pd_box_set_network(b, net, &err) : dfail(&err, ENOMEM, "network policy");
	if (closed < 0) {
		if (err.code == EPERM && strstr(err.msg, "--max-network"))
			pd_reply_paddock_error(r, &err); /* 403 */
		else if (err.code == EPERM)
			pd_reply_error(r, 409, "conflict", "network.mode", "%s", err.msg);
		else
			pd_reply_paddock_error(r, &err);
		goto out;
	}
	/* lock means lock: the connections the new policy refused were closed, and how many */
	answer = network_json(b);
	if (answer)
		json_object_set_new(answer, "connections_closed", json_integer(closed));
	pd_reply_json(r, 200, answer);
out:
	json_decref(net);
	json_decref(body);
}

void pd_api_network(struct request *r, struct box *b)
{
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pd_reply_error(r, 409, "conflict", "id", "the sandbox has stopped");
	if (r->method == EVHTTP_REQ_GET)
		return pd_reply_json(r, 200, network_json(b));
	if (r->method == EVHTTP_REQ_PUT)
		return put_network(r, b);
	pd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET or PUT");
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

void pd_metrics_egress(struct daemon *d, const char *tenant, struct evbuffer *out)
{
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		evbuffer_add_printf(out, "# TYPE %s %s\n", series[i].name, series[i].type);
		for (struct box *b = d->boxes; b; b = b->next) {
			struct paddock_egress_stats s;
			uint64_t v[2];

			if (!pd_metrics_shows(tenant, b) || !b->sb ||
			    paddock_sandbox_egress_stats(b->sb, &s, NULL) < 0)
				continue;
			series_values(i, &s, v);
			if (!series[i].label) {
				evbuffer_add_printf(out, "%s{sandbox=\"%s\"} %llu\n", series[i].name,
						    b->id, (unsigned long long)v[0]);
				continue;
			}
			evbuffer_add_printf(out,
					    "%s{sandbox=\"%s\",%s=\"%s\"} %llu\n"
					    "%s{sandbox=\"%s\",%s=\"%s\"} %llu\n",
					    series[i].name, b->id, series[i].label, series[i].first,
					    (unsigned long long)v[0], series[i].name, b->id,
					    series[i].label, series[i].second, (unsigned long long)v[1]);
		}
	}
}
