/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asking a person (network.unlisted "ask", docs/network.md): a connection to a destination
 * no rule names is held while a decision is pending for that host and port; a person
 * answers (allow once, allow for this sandbox, deny) through whatever the front end offers
 * (paddockd's API, MCP elicitation, the terminal of `paddock run`), or the decision's time
 * runs out, which denies it.
 *
 * Trust: the destination comes from inside the sandbox. It reaches the person only as a
 * normalised DNS name (letters, digits, '-', '.') or an address printed by inet_ntop(), and
 * a person is asked only about destinations that could be public (egress-policy.c's
 * pd_egress_ask_wanted()): no answer opens loopback, private or metadata addresses. The
 * sandbox has no way to answer: answers come through paddock_sandbox_answer(), which only
 * the supervisor's front ends call, never through anything the sandbox can reach (its
 * listeners are the proxy, the DNS filter and the UDP sink, and none of them answers).
 * Every decision is bounded in time (network.ask_timeout_s) and in number
 * (network.ask_max_pending); held connections count against network.max_connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egress.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "spec.h"

#define BY_MAX	64
#define WHO_MAX 128

struct pd_egress_ask {
	struct pd_egress *eg;
	struct pd_egress_ask *next, *prev;
	bool is_name;
	int family;
	uint8_t addr[16];
	char host[PD_EGRESS_NAME_MAX + 1];
	char rule[PD_EGRESS_NAME_MAX + 16];
	bool notified; /* the handler was told it is pending */
	struct timespec t0;
	struct event *timer;
	char by[BY_MAX + 1], who[WHO_MAX + 1];
	struct paddock_ask pub;
};

const struct paddock_ask *pd_egress_ask_info(const struct pd_egress_ask *a)
{
	return &a->pub;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- telling the front end ------------------------------------------------------------------ */

/*
 * From the loop, never from inside the connection that made the decision (a handler may
 * answer at once, and the answer moves that connection on). Each pending decision the
 * handler has not seen is shown once; a handler may end any decision, so the walk starts
 * again after each call.
 */
static void on_notify(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress *eg = arg;
	paddock_ctx *ctx = eg->ctx;
	bool again = true;

	(void)fd;
	(void)what;
	while (again) {
		again = false;
		for (struct pd_egress_ask *a = eg->asks; a; a = a->next) {
			if (a->notified)
				continue;
			a->notified = true;
			if (ctx->ask_fn) {
				ctx->ask_fn(eg->sb, &a->pub, ctx->ask_userdata);
				again = true;
				break;
			}
		}
	}
}

static void tell(struct pd_egress_ask *a)
{
	struct pd_egress *eg = a->eg;

	if (!eg->ask_notify) {
		eg->ask_notify = event_new(eg->ctx->base, -1, 0, on_notify, eg);
		if (!eg->ask_notify)
			return; /* nobody is told: the decision times out, or the API answers it */
	}
	event_active(eg->ask_notify, EV_TIMEOUT, 0);
}

/* ---- ending a decision ------------------------------------------------------------------ */

static void unlink_ask(struct pd_egress_ask *a)
{
	struct pd_egress *eg = a->eg;

	if (a->prev)
		a->prev->next = a->next;
	else
		eg->asks = a->next;
	if (a->next)
		a->next->prev = a->prev;
	else
		eg->asks_tail = a->prev;
	a->next = a->prev = NULL;
	eg->n_asks--;
	eg->ask_stats.pending = eg->n_asks;
}

static void record_answer(struct pd_egress_ask *a)
{
	struct pd_egress *eg = a->eg;
	const struct paddock_ask *p = &a->pub;
	json_t *o;

	if (!pd_events_wanted(eg->ctx))
		return;
	o = json_pack("{s:I, s:s, s:i, s:s, s:s, s:s?, s:b, s:i, s:f}", "id", (json_int_t)p->id,
		      "host", p->host, "port", (int)p->port, "answer",
		      paddock_ask_answer_to_string(p->answer), "by", p->by, "who", p->who,
		      "timed_out", p->timed_out, "connections", (int)p->connections, "waited_ms",
		      ms_since(&a->t0));
	if (o && p->answer == PADDOCK_ASK_ALLOW_ALWAYS)
		json_object_set_new(o, "rule", json_string(p->rule));
	pd_emit(eg->ctx, p->answer == PADDOCK_ASK_DENY ? PADDOCK_LEVEL_WARN : PADDOCK_LEVEL_INFO,
		"egress.answered", eg->sandbox_id, NULL, o);
}

/*
 * The decision ends: recorded, its connections move on (or, with `again`, are decided anew
 * by the policy in force), the handler is told, and it is freed.
 */
static void ask_end(struct pd_egress_ask *a, enum paddock_ask_answer answer, bool timed_out,
		    const char *by, const char *who, bool again)
{
	struct pd_egress *eg = a->eg;
	paddock_ctx *ctx = eg->ctx;

	/* unlinked first: a connection decided again that asks makes a new decision */
	unlink_ask(a);
	event_del(a->timer);
	snprintf(a->by, sizeof(a->by), "%s", by);
	if (who)
		snprintf(a->who, sizeof(a->who), "%s", who);
	a->pub.decided = true;
	a->pub.answer = answer;
	a->pub.timed_out = timed_out;
	a->pub.by = a->by;
	a->pub.who = who ? a->who : NULL;
	if (timed_out)
		eg->ask_stats.timed_out++;
	else if (strcmp(by, "policy") != 0 && strcmp(by, "sandbox") != 0)
		(*(answer == PADDOCK_ASK_ALLOW_ONCE	? &eg->ask_stats.allowed_once
		   : answer == PADDOCK_ASK_ALLOW_ALWAYS ? &eg->ask_stats.allowed_always
							: &eg->ask_stats.denied))++;
	record_answer(a);
	pd_egress_conn_asked(eg, a, again);
	if (a->notified && ctx->ask_fn)
		ctx->ask_fn(eg->sb, &a->pub, ctx->ask_userdata);
	event_free(a->timer);
	free(a);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	/* SECURITY: no answer is a no */
	ask_end(arg, PADDOCK_ASK_DENY, true, "timeout", NULL, false);
}

/* ---- holding ------------------------------------------------------------------------------ */

static void rule_for(const struct pd_egress_ask *a, uint16_t port, char *buf, size_t size)
{
	if (!a->is_name && a->family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", a->host, port);
	else
		snprintf(buf, size, "%s:%u", a->host, port);
}

int pd_egress_ask_hold(struct pd_egress *eg, const char *host, bool name, int family,
		       const uint8_t *addr, uint16_t port, enum pd_egress_via via,
		       struct pd_egress_ask **ret)
{
	struct pd_egress_ask probe = { .is_name = name, .family = family }, *a;
	struct timeval tv;
	char rule[sizeof(probe.rule)];

	snprintf(probe.host, sizeof(probe.host), "%s", host);
	rule_for(&probe, port, rule, sizeof(rule));
	/* one decision per destination: a second connection to it waits for the same answer */
	for (a = eg->asks; a; a = a->next)
		if (strcmp(a->rule, rule) == 0) {
			a->pub.connections++;
			*ret = a;
			return 0;
		}
	if (eg->n_asks >= eg->ask_max_pending) {
		eg->ask_stats.refused_busy++;
		return -EBUSY;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	*a = probe;
	a->eg = eg;
	if (!name)
		memcpy(a->addr, addr, family == AF_INET ? 4 : 16);
	snprintf(a->rule, sizeof(a->rule), "%s", rule);
	a->timer = evtimer_new(eg->ctx->base, on_timeout, a);
	if (!a->timer) {
		free(a);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &a->t0);
	a->pub = (struct paddock_ask){
		.id = ++eg->next_ask_id,
		.sandbox = eg->sandbox_id,
		.host = a->host,
		.port = port,
		.rule = a->rule,
		.via = pd_egress_via_to_string(via),
		.connections = 1,
		.asked_ms = now_ms(),
	};
	a->pub.expires_ms = a->pub.asked_ms + (int64_t)(eg->ask_timeout_s * 1000);
	tv.tv_sec = (time_t)eg->ask_timeout_s;
	tv.tv_usec = (suseconds_t)((eg->ask_timeout_s - (double)tv.tv_sec) * 1e6);
	evtimer_add(a->timer, &tv);
	a->prev = eg->asks_tail;
	if (eg->asks_tail)
		eg->asks_tail->next = a;
	else
		eg->asks = a;
	eg->asks_tail = a;
	eg->n_asks++;
	eg->ask_stats.asked++;
	eg->ask_stats.pending = eg->n_asks;
	if (pd_events_wanted(eg->ctx))
		pd_emit(eg->ctx, PADDOCK_LEVEL_INFO, "egress.asked", eg->sandbox_id, NULL,
			json_pack("{s:I, s:s, s:i, s:s, s:s, s:f, s:i}", "id",
				  (json_int_t)a->pub.id, "host", a->host, "port", (int)port, "via",
				  a->pub.via, "rule", a->rule, "timeout_s", eg->ask_timeout_s,
				  "pending", (int)eg->n_asks));
	tell(a);
	*ret = a;
	return 0;
}

void pd_egress_ask_drop(struct pd_egress_ask *a)
{
	/* the decision stays: an answer still counts (allow_always adds its rule for next time) */
	if (a && a->pub.connections > 0)
		a->pub.connections--;
}

void pd_egress_ask_recheck(struct pd_egress *eg)
{
	for (struct pd_egress_ask *a = eg->asks, *next; a; a = next) {
		const struct pd_egress_rule *rule;
		bool allowed;

		next = a->next;
		if (pd_egress_ask_wanted(&eg->policy, a->is_name ? a->host : NULL, a->family,
					 a->addr, a->pub.port))
			continue;
		/* the policy decides it now (a rule names it, or it no longer asks) */
		allowed = a->is_name
				  ? pd_egress_allow_name(&eg->policy, a->host, a->pub.port, &rule)
				  : pd_egress_allow_addr(&eg->policy, a->family, a->addr,
							 a->pub.port, false, &rule);
		ask_end(a, allowed ? PADDOCK_ASK_ALLOW_ONCE : PADDOCK_ASK_DENY, false, "policy",
			NULL, true);
	}
}

void pd_egress_ask_free_all(struct pd_egress *eg)
{
	while (eg->asks)
		ask_end(eg->asks, PADDOCK_ASK_DENY, false, "sandbox", NULL, false);
	if (eg->ask_notify)
		event_free(eg->ask_notify);
	eg->ask_notify = NULL;
}

void pd_egress_ask_setup(struct pd_egress *eg, const paddock_spec *spec)
{
	eg->ask_timeout_s = spec->network.ask_timeout_s;
	eg->ask_max_pending = spec->network.ask_max_pending;
	/*
	 * Ids grow and are not reused by a supervisor that restarts and adopts the sandbox
	 * (its decisions are gone then): they start from the time in milliseconds.
	 */
	if (!eg->next_ask_id)
		eg->next_ask_id = (uint64_t)now_ms();
}

/* ---- what the public API calls (egress-api.c, through the table) ------------------------- */

size_t pd_egress_asks(const struct pd_egress *eg, const struct paddock_ask **ret, size_t max)
{
	size_t n = 0;

	for (const struct pd_egress_ask *a = eg->asks; a && n < max; a = a->next)
		ret[n++] = &a->pub;
	return n;
}

static bool printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= max || s[n] < 0x20 || s[n] > 0x7e)
			return false;
	return true;
}

/* Adds the decision's rule to the policy and the sandbox's spec, both or neither. */
static int add_rule(struct pd_egress *eg, struct pd_egress_ask *a, paddock_error *err)
{
	paddock_spec *spec = eg->sb->spec;
	int r;

	if (spec->network.n_allow >= PD_EGRESS_RULES_MAX)
		return pd_fail_field(err, ENOSPC, "answer",
				     "the sandbox has %d allow rules already: allow once instead",
				     PD_EGRESS_RULES_MAX);
	r = pd_egress_policy_add(&eg->policy, a->rule, false, "network.allow", err);
	if (r < 0)
		return r;
	r = pd_spec_network_add_allow(spec, a->rule, err);
	if (r < 0) {
		eg->policy.n_rules--; /* the rule just added, and nothing else */
		return r;
	}
	return 0;
}

int pd_egress_answer(struct pd_egress *eg, uint64_t id, enum paddock_ask_answer answer,
		     const char *by, const char *who, paddock_error *err)
{
	paddock_sandbox *sb = eg->sb;
	struct pd_egress_ask *a;
	int r;

	if (!by || !*by || (unsigned)answer >= _PADDOCK_ASK_MAX)
		return pd_fail(err, EINVAL, "paddock_sandbox_answer: arguments are required");
	if (!printable(by, BY_MAX))
		return pd_fail_field(err, EINVAL, "by",
				     "expected printable ASCII of at most %d bytes", BY_MAX);
	if (who && !printable(who, WHO_MAX))
		return pd_fail_field(err, EINVAL, "who",
				     "expected printable ASCII of at most %d bytes", WHO_MAX);
	for (a = eg->asks; a; a = a->next)
		if (a->pub.id == id)
			break;
	if (!a)
		return pd_fail_field(err, ENOENT, "id",
				     "no decision %llu is pending in sandbox '%s' (answered, timed "
				     "out, or never asked)",
				     (unsigned long long)id, sb->id);
	if (answer == PADDOCK_ASK_ALLOW_ALWAYS) {
		r = add_rule(eg, a, err);
		if (r < 0)
			return r;
	}
	/* allow_always: the rule decides its connections, as it will decide the next ones */
	ask_end(a, answer, false, by, who, answer == PADDOCK_ASK_ALLOW_ALWAYS);
	return 0;
}
