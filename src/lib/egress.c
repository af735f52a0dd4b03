/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's egress: its listeners, policy and counters, the DNS filter and the UDP sink
 * (egress.h). TCP connections are egress-conn.c's.
 */
#include "egress.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "egress-dns.h"
#include "egress-ports.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "spec.h"
#include "tls-ca.h"
#include "util/strv.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define MIN(a, b)	     ((a) < (b) ? (a) : (b))
#define DNS_PENDING_MAX	     64 /* queries being resolved at once, per sandbox */
#define DNS_TTL_S	     30 /* what the sandbox is told; the pin lives longer */
#define DATAGRAMS_PER_WAKEUP 32 /* then back to the loop, so one sandbox cannot hog it */
#define SINK_EVENTS_PER_S    10
#define ANSWERS_MAX	     512 /* remembered per sandbox, oldest replaced first */

static const char *const via_names[_PD_VIA_MAX] = {
	[PD_VIA_PROXY] = "proxy", [PD_VIA_SOCKS] = "socks5", [PD_VIA_TRANSPARENT] = "transparent",
	[PD_VIA_DNS] = "dns",	  [PD_VIA_SINK] = "udp",
};

const char *pd_egress_via_to_string(enum pd_egress_via v)
{
	return (unsigned)v < _PD_VIA_MAX ? via_names[v] : "?";
}

static const struct listener {
	int family, type;
	uint16_t port;
	enum pd_egress_via via;
	bool transparent_only; /* only reachable through the redirect */
	bool optional;	       /* IPv6: a kernel without it still gets the rest */
} listeners[] = {
	{ AF_INET, SOCK_STREAM, PD_EGRESS_PROXY_PORT, PD_VIA_PROXY, false, false },
	{ AF_INET, SOCK_STREAM, PD_EGRESS_SOCKS_PORT, PD_VIA_SOCKS, false, false },
	{ AF_INET, SOCK_DGRAM, PD_EGRESS_DNS_PORT, PD_VIA_DNS, false, false },
	{ AF_INET6, SOCK_DGRAM, PD_EGRESS_DNS_PORT, PD_VIA_DNS, false, true },
	{ AF_INET, SOCK_STREAM, PD_EGRESS_TRANSPARENT_PORT, PD_VIA_TRANSPARENT, true, false },
	{ AF_INET6, SOCK_STREAM, PD_EGRESS_TRANSPARENT_PORT, PD_VIA_TRANSPARENT, true, true },
	{ AF_INET, SOCK_DGRAM, PD_EGRESS_UDP_SINK_PORT, PD_VIA_SINK, true, false },
	{ AF_INET6, SOCK_DGRAM, PD_EGRESS_UDP_SINK_PORT, PD_VIA_SINK, true, true },
};
static_assert(sizeof(listeners) / sizeof(listeners[0]) <= PD_EGRESS_LISTENERS,
	      "PD_EGRESS_LISTENERS too small");

void pd_egress_rule_text(const struct pd_egress *eg, const struct pd_egress_rule *rule, char *buf,
			 size_t size)
{
	if (rule)
		snprintf(buf, size, "%s%s", rule->deny ? "deny " : "", rule->text);
	else
		snprintf(buf, size, "mode %s",
			 eg->policy.mode == PD_EGRESS_OPEN	  ? "open"
			 : eg->policy.mode == PD_EGRESS_ALLOWLIST ? "allowlist"
								  : "none");
}

/* ---- resolver ------------------------------------------------------------------------- */

struct pd_resolver *pd_egress_resolver(paddock_ctx *ctx, paddock_error *err)
{
	if (!ctx->resolver &&
	    pd_resolver_new(ctx->base, ctx->resolve_hosts, &ctx->resolver, err) < 0)
		return NULL;
	return ctx->resolver;
}

struct ssl_ctx_st *pd_egress_upstream_tls(paddock_ctx *ctx, paddock_error *err)
{
	if (!ctx->upstream_tls)
		ctx->upstream_tls =
			pd_tls_upstream_ctx_new((const char *const *)ctx->upstream_ca, err);
	return ctx->upstream_tls;
}

/* ---- DNS filter ----------------------------------------------------------------------- */

struct pd_egress_dnsq {
	struct pd_egress *eg;
	int fd;
	struct sockaddr_storage from;
	socklen_t fromlen;
	struct pd_dns_query q;
	char rule[sizeof(((struct pd_egress_rule *)0)->text) + 8];
	struct pd_resolve_req *req;
	struct pd_egress_dnsq *next, *prev;
};

static const char *qtype_name(uint16_t t, char buf[static 8])
{
	if (t == PD_DNS_TYPE_A)
		return "A";
	if (t == PD_DNS_TYPE_AAAA)
		return "AAAA";
	snprintf(buf, 8, "%u", t);
	return buf;
}

static void dns_send(int fd, const struct sockaddr_storage *to, socklen_t tolen, const uint8_t *msg,
		     int len)
{
	/* UDP to our own sandbox's loopback: a full buffer drops it, as the network would */
	if (len > 0)
		(void)sendto(fd, msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL,
			     (const struct sockaddr *)to, tolen);
}

static void dns_record(struct pd_egress *eg, const struct pd_dns_query *q, bool allowed,
		       const char *rule, int rcode, json_t *answers, const char *why)
{
	char tb[8];

	if (allowed)
		eg->stats.dns_allowed++;
	else
		eg->stats.dns_denied++;
	if (!pd_events_wanted(eg->ctx)) {
		json_decref(answers);
		return;
	}
	pd_emit(eg->ctx, allowed ? PADDOCK_LEVEL_INFO : PADDOCK_LEVEL_WARN, "egress.dns",
		eg->sandbox_id, NULL,
		json_pack("{s:s, s:s, s:s, s:s?, s:i, s:o?, s:s?}", "name", q->name, "type",
			  qtype_name(q->qtype, tb), "decision", allowed ? "allow" : "deny", "rule",
			  rule && *rule ? rule : NULL, "rcode", rcode, "answers", answers, "reason",
			  why));
}

static void answer_remember(struct pd_egress *eg, int family, const uint8_t *addr, const char *name)
{
	struct pd_egress_answer *a;
	size_t len = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < eg->n_answers; i++) {
		a = &eg->answers[i];
		if (a->family == family && memcmp(a->addr, addr, len) == 0) {
			snprintf(a->name, sizeof(a->name), "%s", name);
			return;
		}
	}
	if (!eg->answers) {
		eg->answers = calloc(ANSWERS_MAX, sizeof(*eg->answers));
		if (!eg->answers)
			return;
	}
	if (eg->n_answers < ANSWERS_MAX) {
		a = &eg->answers[eg->n_answers++];
	} else {
		a = &eg->answers[eg->next_answer];
		eg->next_answer = (eg->next_answer + 1) % ANSWERS_MAX;
	}
	a->family = family;
	memset(a->addr, 0, sizeof(a->addr));
	memcpy(a->addr, addr, len);
	snprintf(a->name, sizeof(a->name), "%s", name);
}

const char *pd_egress_name_for_addr(const struct pd_egress *eg, int family, const uint8_t *addr)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < eg->n_answers; i++)
		if (eg->answers[i].family == family && memcmp(eg->answers[i].addr, addr, len) == 0)
			return eg->answers[i].name;
	return NULL;
}

static void dnsq_free(struct pd_egress_dnsq *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else
		d->eg->dnsqs = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->eg->n_dnsqs--;
	free(d);
}

static void on_dns_resolved(int error, const struct pd_addrs *addrs, void *userdata)
{
	struct pd_egress_dnsq *d = userdata;
	struct pd_egress *eg = d->eg;
	int family = d->q.qtype == PD_DNS_TYPE_A ? AF_INET : AF_INET6;
	uint8_t out[PD_DNS_MSG_MAX], buf[PD_RESOLVE_ADDRS_MAX * 16];
	json_t *answers = json_array();
	size_t n = 0, hidden = 0;
	int len, rcode = PD_DNS_RCODE_NOERROR;

	d->req = NULL;
	for (size_t i = 0; error == 0 && i < addrs->n; i++) {
		const struct pd_egress_rule *rule;
		char text[INET6_ADDRSTRLEN];

		/* SECURITY: a name may resolve anywhere; the sandbox learns only what it may reach
		 */
		if (!pd_egress_allow_addr_dns(&eg->policy, addrs->a[i].family, addrs->a[i].addr,
					      &rule)) {
			hidden++;
			continue;
		}
		if (addrs->a[i].family != family)
			continue;
		memcpy(buf + n * (family == AF_INET ? 4 : 16), addrs->a[i].addr,
		       family == AF_INET ? 4 : 16);
		n++;
		answer_remember(eg, family, addrs->a[i].addr, d->q.name);
		if (answers && inet_ntop(family, addrs->a[i].addr, text, sizeof(text)))
			json_array_append_new(answers, json_string(text));
	}
	if (error == -EAGAIN)
		rcode = PD_DNS_RCODE_SERVFAIL;
	else if (error < 0 || (n == 0 && hidden > 0 && hidden == addrs->n))
		rcode = PD_DNS_RCODE_NXDOMAIN;
	len = pd_dns_answer_build(&d->q, rcode, family, buf, rcode ? 0 : n, DNS_TTL_S, out,
				  sizeof(out));
	dns_send(d->fd, &d->from, d->fromlen, out, len);
	dns_record(eg, &d->q, rcode == PD_DNS_RCODE_NOERROR || error == -EAGAIN, d->rule, rcode,
		   answers,
		   error == -ENOENT   ? "the name does not exist"
		   : error == -EAGAIN ? "resolution failed for now"
		   : rcode == PD_DNS_RCODE_NXDOMAIN
			   ? "the name resolves only to addresses the policy refuses (private, "
			     "loopback, link-local...)"
			   : NULL);
	dnsq_free(d);
}

static void dns_one(struct pd_egress *eg, int fd, const uint8_t *msg, size_t len,
		    const struct sockaddr_storage *from, socklen_t fromlen)
{
	const struct pd_egress_rule *rule;
	char rtext[sizeof(rule->text) + 8];
	struct pd_resolve_req *req;
	struct pd_egress_dnsq *d;
	struct pd_dns_query q;
	struct pd_resolver *res;
	uint8_t out[PD_DNS_MSG_MAX];
	uint16_t id = 0;
	int r, n;

	r = pd_dns_query_parse(msg, len, &q, &id);
	if (r < 0) {
		/* a header at least: tell the client, so it does not retry into silence */
		if (len >= 12) {
			struct pd_dns_query bare = { .id = id };

			n = pd_dns_answer_build(&bare, PD_DNS_RCODE_FORMERR, AF_INET, NULL, 0, 0,
						out, sizeof(out));
			dns_send(fd, from, fromlen, out, n);
		}
		eg->stats.dns_denied++;
		return;
	}
	if (!pd_egress_allow_dns(&eg->policy, q.name, &rule)) {
		n = pd_dns_answer_build(&q, PD_DNS_RCODE_NXDOMAIN, AF_INET, NULL, 0, 0, out,
					sizeof(out));
		dns_send(fd, from, fromlen, out, n);
		pd_egress_rule_text(eg, rule, rtext, sizeof(rtext));
		dns_record(eg, &q, false, rtext, PD_DNS_RCODE_NXDOMAIN, NULL,
			   rule ? "a deny rule matches the name"
				: "no allow rule matches the name");
		return;
	}
	pd_egress_rule_text(eg, rule, rtext, sizeof(rtext));
	if (q.qtype != PD_DNS_TYPE_A && q.qtype != PD_DNS_TYPE_AAAA) {
		/* an allowed name has no other records here (MX, TXT, HTTPS...): "no data" */
		n = pd_dns_answer_build(&q, PD_DNS_RCODE_NOERROR, AF_INET, NULL, 0, 0, out,
					sizeof(out));
		dns_send(fd, from, fromlen, out, n);
		dns_record(eg, &q, true, rtext, PD_DNS_RCODE_NOERROR, NULL,
			   "only A and AAAA records are answered");
		return;
	}
	res = pd_egress_resolver(eg->ctx, NULL);
	if (!res || eg->n_dnsqs >= DNS_PENDING_MAX) {
		n = pd_dns_answer_build(&q, PD_DNS_RCODE_SERVFAIL, AF_INET, NULL, 0, 0, out,
					sizeof(out));
		dns_send(fd, from, fromlen, out, n);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return;
	d->eg = eg;
	d->fd = fd;
	memcpy(&d->from, from, fromlen);
	d->fromlen = fromlen;
	d->q = q;
	snprintf(d->rule, sizeof(d->rule), "%s", rtext);
	d->next = eg->dnsqs;
	if (eg->dnsqs)
		eg->dnsqs->prev = d;
	eg->dnsqs = d;
	eg->n_dnsqs++;
	/* an answer at once (cache, hosts file) has run on_dns_resolved and freed d already */
	req = pd_resolve(res, q.name, on_dns_resolved, d);
	if (req)
		d->req = req;
}

static void sink_record(struct pd_egress *eg, size_t bytes, const struct sockaddr_storage *from)
{
	struct timespec ts;
	uint16_t sport = 0;

	eg->stats.udp_dropped++;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if ((uint64_t)ts.tv_sec != eg->sink_window_s) {
		eg->sink_window_s = (uint64_t)ts.tv_sec;
		eg->sink_events_in_window = 0;
	}
	if (eg->sink_events_in_window++ >= SINK_EVENTS_PER_S || !pd_events_wanted(eg->ctx))
		return;
	if (from->ss_family == AF_INET)
		sport = ntohs(((const struct sockaddr_in *)from)->sin_port);
	else if (from->ss_family == AF_INET6)
		sport = ntohs(((const struct sockaddr_in6 *)from)->sin6_port);
	pd_emit(eg->ctx, PADDOCK_LEVEL_WARN, "egress.udp_dropped", eg->sandbox_id, NULL,
		json_pack("{s:I, s:i, s:I, s:s}", "bytes", (json_int_t)bytes, "source_port",
			  (int)sport, "dropped_total", (json_int_t)eg->stats.udp_dropped, "reason",
			  "UDP other than DNS leaves no sandbox"));
}

static void on_datagram(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress *eg = arg;
	enum pd_egress_via via = PD_VIA_DNS;

	(void)what;
	for (size_t i = 0; i < eg->n_listeners; i++)
		if (eg->listen_fd[i] == fd)
			via = eg->listen_via[i];
	for (int k = 0; k < DATAGRAMS_PER_WAKEUP; k++) {
		uint8_t msg[PD_DNS_MSG_MAX + 1];
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t n;

		n = recvfrom(fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			return; /* EAGAIN, or an ICMP error queued for a reply of ours */
		if (via == PD_VIA_SINK)
			sink_record(eg, (size_t)n, &from);
		else if ((size_t)n <= PD_DNS_MSG_MAX)
			dns_one(eg, fd, msg, (size_t)n, &from, fromlen);
		else
			eg->stats.dns_denied++; /* bigger than a query can be: dropped */
	}
}

/* ---- listeners ------------------------------------------------------------------------ */

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress *eg = arg;
	enum pd_egress_via via = PD_VIA_PROXY;
	int family = AF_INET;

	(void)what;
	for (size_t i = 0; i < eg->n_listeners; i++)
		if (eg->listen_fd[i] == fd) {
			via = eg->listen_via[i];
			family = listeners[i].family;
		}
	for (int k = 0; k < 16; k++) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;

		if (c < 0)
			return;
		/*
		 * A proxy's small writes (a 200, a TLS handshake flight) must not wait for the
		 * peer's delayed ACK: without this, half of new intercepted connections stalled
		 * 40 ms (bench/secrets.sh).
		 */
		(void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pd_egress_conn_new(eg, c, via, family);
	}
}

static int bind_listener(int fd, const struct listener *l, paddock_error *err)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1;

	/* SO_REUSEADDR: a supervisor that re-adopts the sandbox binds the same ports again */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return pd_fail(err, errno, "set SO_REUSEADDR on an egress listener");
	if (l->family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		return pd_fail(err, errno, "set IPV6_V6ONLY on an egress listener");
	if (l->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(l->port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(l->port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return pd_fail(err, errno, "bind the egress %s listener to %s port %u",
			       pd_egress_via_to_string(l->via),
			       l->family == AF_INET ? "127.0.0.1" : "[::1]", l->port);
	if (l->type == SOCK_STREAM && listen(fd, 512) < 0)
		return pd_fail(err, errno, "listen on egress port %u", l->port);
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return pd_fail(err, errno, "make an egress listener non-blocking");
	return 0;
}

int pd_egress_start(paddock_sandbox *sb, struct pd_egress **ret, paddock_error *err)
{
	_cleanup_free_ struct pd_egress *eg = NULL;
	int r;

	*ret = NULL;
	if (sb->spec->network.mode == PD_NET_NONE)
		return 0;
	eg = calloc(1, sizeof(*eg));
	if (!eg)
		return pd_fail(err, ENOMEM, "out of memory");
	eg->sb = sb;
	eg->ctx = sb->ctx;
	eg->sandbox_id = sb->id;
	eg->max_conns = sb->spec->network.max_connections;
	eg->secrets = sb->secrets;
	r = pd_spec_network_policy(sb->spec, &eg->policy, err);
	if (r < 0)
		return r;
	pd_egress_ask_setup(eg, sb->spec);
	if (!pd_egress_resolver(sb->ctx, err)) {
		pd_egress_policy_release(&eg->policy);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(listeners) / sizeof(listeners[0]); i++) {
		const struct listener *l = &listeners[i];
		paddock_error e = { 0 };
		int fd = -1;

		if (l->transparent_only && !sb->spec->network.transparent)
			continue;
		r = paddock_sandbox_socket(sb, l->family, l->type, &fd, &e);
		if (r >= 0)
			r = bind_listener(fd, l, &e);
		if (r < 0) {
			pd_close(fd);
			/* no IPv6 in this kernel or netns: the IPv4 listeners serve alone */
			if (l->optional && (e.code == EAFNOSUPPORT || e.code == EADDRNOTAVAIL))
				continue;
			*err = e;
			eg->sb = NULL;
			pd_egress_free(TAKE_PTR(eg));
			return r;
		}
		eg->listen_fd[eg->n_listeners] = fd;
		eg->listen_via[eg->n_listeners] = l->via;
		eg->listen_ev[eg->n_listeners] =
			event_new(sb->ctx->base, fd, EV_READ | EV_PERSIST,
				  l->type == SOCK_STREAM ? on_accept : on_datagram, eg);
		eg->n_listeners++;
		if (!eg->listen_ev[eg->n_listeners - 1] ||
		    event_add(eg->listen_ev[eg->n_listeners - 1], NULL) < 0) {
			pd_egress_free(TAKE_PTR(eg));
			return pd_fail(err, ENOMEM, "serve the egress listeners");
		}
	}
	*ret = TAKE_PTR(eg);
	return 0;
}

unsigned pd_egress_set_policy(struct pd_egress *eg, struct pd_egress_policy *policy)
{
	unsigned closed;

	pd_egress_policy_release(&eg->policy);
	eg->policy = *policy;
	memset(policy, 0, sizeof(*policy));
	closed = pd_egress_conn_recheck(eg);
	/* decisions the new policy makes itself end, and their connections follow it */
	pd_egress_ask_recheck(eg);
	return closed;
}

void pd_egress_free(struct pd_egress *eg)
{
	if (!eg)
		return;
	pd_egress_conn_free_all(eg);
	pd_egress_ask_free_all(eg);
	while (eg->dnsqs) {
		pd_resolve_cancel(eg->dnsqs->req);
		dnsq_free(eg->dnsqs);
	}
	for (size_t i = 0; i < eg->n_listeners; i++) {
		if (eg->listen_ev[i])
			event_free(eg->listen_ev[i]);
		pd_close(eg->listen_fd[i]);
	}
	pd_egress_policy_release(&eg->policy);
	free(eg->answers);
	free(eg);
}
