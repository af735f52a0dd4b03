/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One proxied TCP connection of a sandbox (egress.h). Its life:
 *
 *   HEAD     read what names the destination: an HTTP request head (proxy port), a SOCKS5
 *            greeting and request (socks port), or, redirected, SO_ORIGINAL_DST plus a peek
 *            at the first bytes for a TLS server name or an HTTP Host (transparent)
 *   decide   the policy on the name, then on every address the supervisor resolved for it
 *   ASK      network.unlisted "ask", and no rule names the destination: held while a person
 *            is asked (egress-ask.c); allowed once it goes on, else it is refused
 *   RESOLVE  pd_resolve(): the supervisor's own answer, pinned
 *   CONNECT  non-blocking connect to each allowed address in turn
 *   CHECK    a tunnel (CONNECT, SOCKS), or a redirected connection that showed nothing
 *            before its address decided: the first bytes through it are read before any
 *            goes on. TLS or HTTP must name the same host (a tunnel opened for one name
 *            carries no other) and, with secrets, HTTP goes to the broker; bytes that can be
 *            neither (ssh, a database) are relayed at once, and so is everything when the
 *            server speaks first. A head that starts but never completes is not relayed.
 *   PIPE     splice(2) both ways through a pipe each, until both sides are done
 *
 * Why splice and not bufferevents: the proxy sits on every byte an agent downloads;
 * splice moves pages between the sockets without copying them through this process (the
 * throughput bench in bench/egress.sh compares it with a direct download).
 *
 * A refusal answers in the client's own protocol: HTTP 403 with a body an agent can read,
 * a SOCKS5 "not allowed" reply, or (TLS, redirected) a closed connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "egress-parse.h"
#include "egress.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "secret-scrub.h"
#include "secret-subst.h"
#include "secrets.h"
#include "tls-ca.h"
#include "tls-mitm.h"
#include "util/cleanup.h"

#define HEAD_TIMEOUT_S 30	/* to send a request head or SOCKS request */
#define PEEK_TIMEOUT_MS 1000	/* redirected: wait this long for a TLS hello or HTTP head */
#define MAYBE_TIMEOUT_MS 1000	/* "ping": wait this long for a method's space, then relay */
#define CONNECT_TIMEOUT_S 10	/* per address */
#define IDLE_TIMEOUT_S 900	/* no byte either way */
#define PIPE_SMALL (64u << 10) /* the kernel's default; every connection starts here */
#define PIPE_BIG (1u << 20)	/* a direction that fills its pipe grows to this, once */
#define PUMP_ROUNDS 16		/* chunks per direction per wakeup: fairness between conns */
#define BUF_MAX PD_HTTP_HEAD_MAX /* head, hello or peek: never more */
#define streq(a, b) (strcmp((a), (b)) == 0)

enum state { ST_HEAD, ST_ASK, ST_RESOLVE, ST_CONNECT, ST_CHECK, ST_PIPE, ST_BROKER };

#define BROKER_BODY_MAX (1u << 20) /* a request body buffered to substitute in it */

enum target_kind { TARGET_NONE, TARGET_NAME, TARGET_ADDR };

struct dir {
	int src, dst;
	int pipe[2];
	size_t in_pipe, pipe_size;
	bool grown; /* asked for PIPE_BIG once, granted or not */
	bool eof, done;
	uint8_t *pre; /* sent to dst before anything spliced: a rewritten head, peeked bytes */
	size_t pre_len, pre_off;
	uint64_t *count;
	struct event *src_ev, *dst_ev;
};

struct pd_egress_conn {
	struct pd_egress *eg;
	struct pd_egress_conn *next, *prev;
	enum pd_egress_via via;
	enum state st;
	int family; /* of the listener */
	int cfd, ufd;
	struct event *c_rd, *c_wr, *u_rd, *u_wr, *timer;
	uint8_t *buf;
	size_t len;
	int socks_step; /* 0: greeting, 1: request */
	/* what the first bytes through the connection are (not the proxy request itself) */
	bool is_tls, is_http, absolute;
	bool head_timer; /* a request head or TLS hello has started: HEAD_TIMEOUT_S to finish */
	bool maybe_timer; /* token characters only: MAYBE_TIMEOUT_MS to become a request line */
	struct pd_http_head head;
	/* the destination */
	enum target_kind kind;
	char name[PD_EGRESS_NAME_MAX + 1];
	uint16_t port;
	int addr_family;
	uint8_t addr[16];
	struct pd_addrs addrs;
	size_t next_addr;
	struct pd_resolve_req *req;
	char rule[sizeof(((struct pd_egress_rule *)0)->text) + 8];
	char addr_text[INET6_ADDRSTRLEN];
	bool decided, allowed;
	const char *reason;
	/* a person's decision: pending (ST_ASK, with hup watching for the client's close) */
	struct pd_egress_ask *ask;
	struct event *hup;
	bool asked_ok; /* allowed once by a person: no rule says so */
	char why[224]; /* a reason made for this connection (c->reason may point here) */
	struct dir up, down;
	uint64_t bytes_out, bytes_in;
	struct timespec t0;
	/* the secret broker (ST_BROKER): an HTTP relay through the substitution engine */
	struct pd_mitm *mitm;
	struct pd_subst *subst;
	struct pd_response *resp; /* intercepted HTTPS: what the server sends back, checked */
	struct pd_secret *view; /* the sandbox's secrets, bound or not to this host */
	bool intercepted, leaked;
	bool resp_refused; /* a response was not passed on (secret.response_refused) */
	size_t leak_idx;
};

static void conn_io(evutil_socket_t fd, short what, void *arg);
static void conn_close(struct pd_egress_conn *c);
static void conn_refuse(struct pd_egress_conn *c, const char *reason);
static void conn_resolve(struct pd_egress_conn *c);
static bool broker_wanted(const struct pd_egress_conn *c, bool *ret_tls);
static void broker_start(struct pd_egress_conn *c, bool tls, uint8_t *pre, size_t pre_len);

/* ---- small pieces ----------------------------------------------------------------------- */

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void arm(struct event *ev, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	event_add(ev, timeout_ms > 0 ? &tv : NULL);
}

static void set_timer(struct pd_egress_conn *c, int timeout_ms)
{
	arm(c->timer, timeout_ms);
}

static void target_text(const struct pd_egress_conn *c, char *buf, size_t size)
{
	if (c->kind == TARGET_NAME)
		snprintf(buf, size, "%s:%u", c->name, c->port);
	else if (c->addr_family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", c->addr_text, c->port);
	else
		snprintf(buf, size, "%s:%u", c->addr_text, c->port);
}

static void set_rule(struct pd_egress_conn *c, const struct pd_egress_rule *rule)
{
	pd_egress_rule_text(c->eg, rule, c->rule, sizeof(c->rule));
}

/* The target as the client gave it: a name, or an address literal. */
static void set_target(struct pd_egress_conn *c, const char *host, uint16_t port)
{
	c->port = port;
	if (inet_pton(AF_INET, host, c->addr) == 1) {
		c->kind = TARGET_ADDR;
		c->addr_family = AF_INET;
	} else if (inet_pton(AF_INET6, host, c->addr) == 1) {
		c->kind = TARGET_ADDR;
		c->addr_family = AF_INET6;
	} else {
		c->kind = TARGET_NAME;
		if (pd_egress_name_normalise(host, c->name, sizeof(c->name)) < 0)
			snprintf(c->name, sizeof(c->name), "%s", "invalid.");
		return;
	}
	inet_ntop(c->addr_family, c->addr, c->addr_text, sizeof(c->addr_text));
}

/* ---- the record --------------------------------------------------------------------------- */

static void record(struct pd_egress_conn *c)
{
	struct pd_egress *eg = c->eg;

	if (!pd_events_wanted(eg->ctx))
		return;
	pd_emit(eg->ctx, c->allowed ? PADDOCK_LEVEL_INFO : PADDOCK_LEVEL_WARN, "egress.connection",
		eg->sandbox_id, NULL,
		json_pack("{s:s, s:s?, s:s?, s:i, s:s, s:s?, s:s?, s:I, s:I, s:f}", "via",
			  pd_egress_via_to_string(c->via),
			  "host", c->kind == TARGET_NAME ? c->name : NULL, "address",
			  c->addr_text[0] ? c->addr_text : NULL, "port", (int)c->port, "decision",
			  !c->decided ? "none" : c->allowed ? "allow" : "deny", "rule",
			  c->rule[0] ? c->rule : NULL, "reason", c->reason, "bytes_out",
			  (json_int_t)c->bytes_out, "bytes_in", (json_int_t)c->bytes_in,
			  "duration_ms", ms_since(&c->t0)));
}

static void conn_close(struct pd_egress_conn *c)
{
	struct pd_egress *eg = c->eg;

	if (c->mitm) {
		uint64_t from_client, from_upstream;

		pd_mitm_counts(c->mitm, &from_client, &from_upstream);
		c->bytes_out += from_client;
		c->bytes_in += from_upstream;
	}
	record(c);
	if (c->req)
		pd_resolve_cancel(c->req);
	pd_egress_ask_drop(c->ask);
	if (c->hup)
		event_free(c->hup);
	if (c->prev)
		c->prev->next = c->next;
	else
		eg->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	eg->stats.connections_active--;
	struct event *evs[] = { c->c_rd, c->c_wr, c->u_rd, c->u_wr, c->timer };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (evs[i])
			event_free(evs[i]);
	if (c->mitm) {
		/* closed from outside (a policy change, the sandbox's end): what it carried */
		eg->stats.bytes_out += c->bytes_out;
		eg->stats.bytes_in += c->bytes_in;
	}
	pd_mitm_free(c->mitm);
	pd_subst_free(c->subst);
	pd_response_free(c->resp);
	free(c->view);
	pd_close(c->cfd);
	pd_close(c->ufd);
	for (int i = 0; i < 2; i++) {
		pd_close(c->up.pipe[i]);
		pd_close(c->down.pipe[i]);
	}
	free(c->up.pre);
	free(c->down.pre);
	free(c->buf);
	free(c);
}

/*
 * Decides an open connection again, under the policy now in force: its name (as the client
 * named it) on its port, and the address it was connected to. *ret_rule: the deciding rule.
 */
static bool still_allowed(struct pd_egress_conn *c, const struct pd_egress_rule **ret_rule,
			  const char **ret_why)
{
	const struct pd_egress_policy *p = &c->eg->policy;
	bool connected = c->st == ST_CONNECT || c->st == ST_CHECK || c->st == ST_PIPE ||
			 c->st == ST_BROKER;

	/* allowed by a person, once: while the policy would still ask about it, that stands */
	bool person = c->asked_ok && pd_egress_ask_wanted(p, c->kind == TARGET_NAME ? c->name : NULL,
							  c->addr_family, c->addr, c->port);

	*ret_rule = NULL;
	if (c->kind == TARGET_NAME && !person &&
	    !pd_egress_allow_name(p, c->name, c->port, ret_rule)) {
		*ret_why = *ret_rule ? "the network policy was replaced: a deny rule matches"
				     : "the network policy was replaced: no allow rule matches the "
				       "host and port";
		return false;
	}
	if (c->kind == TARGET_ADDR || (connected && c->next_addr > 0)) {
		size_t k = c->next_addr > 0 ? c->next_addr - 1 : 0;
		const struct pd_egress_rule *name_rule = *ret_rule;

		if (!pd_egress_allow_addr(p, c->addrs.a[k].family, c->addrs.a[k].addr, c->port,
					  c->kind == TARGET_NAME || person, ret_rule)) {
			*ret_why = *ret_rule ? "the network policy was replaced: a deny rule matches "
					       "its address"
					     : "the network policy was replaced: its address is not "
					       "allowed";
			return false;
		}
		if (!*ret_rule)
			*ret_rule = name_rule;
	}
	return true;
}

unsigned pd_egress_conn_recheck(struct pd_egress *eg)
{
	unsigned closed = 0;

	for (struct pd_egress_conn *c = eg->conns, *next; c; c = next) {
		const struct pd_egress_rule *rule;
		const char *why;

		next = c->next;
		/* not decided yet: they are, under the new policy */
		if (c->st == ST_HEAD || (!c->allowed && c->st != ST_RESOLVE) ||
		    still_allowed(c, &rule, &why))
			continue;
		/* SECURITY: lock means lock: what the policy refuses now is closed now */
		set_rule(c, rule);
		c->decided = true;
		c->allowed = false;
		c->reason = why;
		conn_close(c);
		closed++;
	}
	return closed;
}

void pd_egress_conn_free_all(struct pd_egress *eg)
{
	while (eg->conns) {
		if (!eg->conns->reason)
			eg->conns->reason = "the sandbox ended";
		conn_close(eg->conns);
	}
}

/* Best effort: the client's socket is ours, non-blocking, and the answer is small. */
static void send_client(struct pd_egress_conn *c, const void *buf, size_t len)
{
	(void)send(c->cfd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void http_answer(struct pd_egress_conn *c, const char *status, const char *body)
{
	char msg[2048];
	int n;

	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: %s\r\n\r\n%s",
		     status, strlen(body), c->allowed ? "error" : "denied", body);
	if (n > 0)
		send_client(c, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* ---- refusing ------------------------------------------------------------------------------ */

/* The narrowest rule that would allow this connection's address: "10.0.0.5:80", "[fd00::1]:22". */
static void addr_rule_text(const struct pd_egress_conn *c, char *buf, size_t size)
{
	if (c->addr_family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", c->addr_text, c->port);
	else
		snprintf(buf, size, "%s:%u", c->addr_text, c->port);
}

/*
 * What an agent can do about a refusal, said truthfully: the rule that would allow exactly
 * this destination (with its port: a rule without one opens every port of the host), or
 * why no rule would help.
 */
enum advice {
	ADVICE_ALLOW_NAME,    /* no rule allows the name: --allow NAME:PORT */
	ADVICE_ALLOW_ADDR,    /* an address no CIDR rule allows: --allow ADDR:PORT */
	ADVICE_NAME_PRIVATE,  /* the name is allowed, its address is not public */
	ADVICE_DENIED,	      /* a deny rule: nothing to ask for */
	ADVICE_NONE_MODE,     /* mode none: no rule helps */
	ADVICE_FIX_REQUEST,   /* the request itself is wrong: `detail` says how */
	ADVICE_ASK_DENIED,    /* a person was asked (network.unlisted "ask") and said no */
	ADVICE_ASK_TIMEOUT,   /* ... and nobody answered in time */
	ADVICE_ASK_BUSY,      /* too many decisions wait for a person already */
};

static void advice_text(const struct pd_egress_conn *c, enum advice a, const char *detail,
			char *buf, size_t size)
{
	char addr[PD_EGRESS_NAME_MAX + 16];

	addr_rule_text(c, addr, sizeof(addr));
	switch (a) {
	case ADVICE_ALLOW_NAME:
		snprintf(buf, size,
			 "ask the operator to allow this destination (--allow %s:%u).", c->name,
			 c->port);
		return;
	case ADVICE_ALLOW_ADDR:
		snprintf(buf, size,
			 "%sask the operator to allow this address (--allow %s).",
			 pd_addr_classify(c->addr_family, c->addr) == PD_ADDR_PUBLIC
				 ? "name the host instead of its address, or "
				 : "",
			 addr);
		return;
	case ADVICE_NAME_PRIVATE:
		snprintf(buf, size,
			 "%s is allowed, but it resolves to %s, which is not public (loopback, "
			 "private, link-local or reserved); if that destination is intended, ask "
			 "the operator to allow the address too (--allow %s).",
			 c->name, c->addr_text, addr);
		return;
	case ADVICE_DENIED:
		snprintf(buf, size, "the operator denies this destination.");
		return;
	case ADVICE_NONE_MODE:
		snprintf(buf, size,
			 "this sandbox has no egress now (network mode none): no rule opens "
			 "anything until the operator changes the mode.");
		return;
	case ADVICE_FIX_REQUEST:
		snprintf(buf, size, "%s", detail);
		return;
	case ADVICE_ASK_DENIED:
		snprintf(buf, size,
			 "the answer was no: do not try this destination again unless the user "
			 "asks for it.");
		return;
	case ADVICE_ASK_TIMEOUT:
		if (c->kind == TARGET_NAME)
			snprintf(addr, sizeof(addr), "%s:%u", c->name, c->port);
		snprintf(buf, size,
			 "this sandbox asks a person before it reaches a host no rule names, and no "
			 "answer in time is a no: ask the user to allow it (--allow %s), or try "
			 "again when someone can answer.",
			 addr);
		return;
	case ADVICE_ASK_BUSY:
		snprintf(buf, size,
			 "other destinations are waiting for a person's answer already: wait for "
			 "those answers, then try again.");
		return;
	}
}

static void conn_refuse_advice(struct pd_egress_conn *c, const char *reason, enum advice a,
			       const char *detail)
{
	char target[PD_EGRESS_NAME_MAX + 16], body[1536], advice[768];

	c->decided = true;
	c->allowed = false;
	c->reason = reason;
	c->eg->stats.connections_denied++;
	target_text(c, target, sizeof(target));
	if (c->eg->policy.mode == PD_EGRESS_NONE && a != ADVICE_FIX_REQUEST) {
		a = ADVICE_NONE_MODE;
		c->reason = reason = "this sandbox's network mode is none";
	}
	if (c->via == PD_VIA_SOCKS) {
		uint8_t rep[10];

		send_client(c, rep, pd_socks5_reply(0x02, rep)); /* not allowed by ruleset */
	} else if (c->via == PD_VIA_PROXY || c->is_http) {
		/*
		 * Agents read this: name the host and the rule, and say other routes are closed
		 * too, so the next step is asking for access rather than tunnelling around it.
		 */
		advice_text(c, a, detail, advice, sizeof(advice));
		snprintf(body, sizeof(body),
			 "paddock: egress to %s is blocked by this sandbox's network policy "
			 "(%s%s%s).\nOther routes (direct connections, other ports, DNS, other "
			 "proxies or tunnels) are blocked as well; %s\n",
			 target, reason, c->rule[0] ? "; " : "", c->rule, advice);
		http_answer(c, "403 Forbidden", body);
	}
	/* TLS or unknown bytes, redirected: nothing it would understand; the close says it */
	conn_close(c);
}

/* A refusal by the policy: the advice follows from the rule that decided, and the target. */
static void conn_refuse(struct pd_egress_conn *c, const char *reason)
{
	enum advice a = strncmp(c->rule, "deny ", 5) == 0 ? ADVICE_DENIED
			: c->kind == TARGET_NAME	   ? ADVICE_ALLOW_NAME
							   : ADVICE_ALLOW_ADDR;

	conn_refuse_advice(c, reason, a, NULL);
}

/* A failure after the decision allowed it: upstream unreachable, name unknown. */
static void conn_fail(struct pd_egress_conn *c, uint8_t socks_rep, const char *status,
		      const char *reason)
{
	char target[PD_EGRESS_NAME_MAX + 16], body[1024];

	c->reason = reason;
	target_text(c, target, sizeof(target));
	if (c->via == PD_VIA_SOCKS && c->st != ST_CHECK && c->st != ST_PIPE) {
		uint8_t rep[10];

		send_client(c, rep, pd_socks5_reply(socks_rep, rep));
	} else if ((c->via == PD_VIA_PROXY && c->st != ST_CHECK && c->st != ST_PIPE) ||
		   (c->via == PD_VIA_TRANSPARENT && c->is_http && c->st != ST_PIPE)) {
		snprintf(body, sizeof(body), "paddock: could not reach %s: %s.\n", target, reason);
		http_answer(c, status, body);
	}
	conn_close(c);
}

/* ---- deciding ------------------------------------------------------------------------------ */

static void conn_ask(struct pd_egress_conn *c);

static void decide(struct pd_egress_conn *c)
{
	const struct pd_egress_rule *rule = NULL;
	struct pd_egress *eg = c->eg;

	if (c->kind == TARGET_NAME) {
		if (streq(c->name, "invalid."))
			return conn_refuse_advice(c, "the host name is malformed", ADVICE_FIX_REQUEST,
						  "name the host with letters, digits, '-' and '.'.");
		if (!pd_egress_allow_name(&eg->policy, c->name, c->port, &rule)) {
			set_rule(c, rule);
			if (pd_egress_ask_wanted(&eg->policy, c->name, 0, NULL, c->port))
				return conn_ask(c);
			return conn_refuse(c, rule ? "a deny rule matches"
						   : "no allow rule matches the host and port");
		}
		set_rule(c, rule);
		return conn_resolve(c);
	}
	if (c->kind == TARGET_ADDR) {
		if (!pd_egress_allow_addr(&eg->policy, c->addr_family, c->addr, c->port, false,
					  &rule)) {
			enum pd_addr_class k = pd_addr_classify(c->addr_family, c->addr);

			set_rule(c, rule);
			if (rule)
				return conn_refuse(c, "a deny rule matches");
			if (pd_egress_ask_wanted(&eg->policy, NULL, c->addr_family, c->addr, c->port))
				return conn_ask(c);
			return conn_refuse(c, k != PD_ADDR_PUBLIC
						      ? "the address is not public (loopback, private, "
							"link-local or reserved) and no CIDR rule allows it"
						      : "no CIDR rule allows the address; name the host "
							"instead");
		}
		set_rule(c, rule);
		c->addrs.n = 1;
		c->addrs.a[0].family = c->addr_family;
		memcpy(c->addrs.a[0].addr, c->addr, 16);
		c->st = ST_RESOLVE;
		return conn_resolve(c);
	}
	return conn_refuse_advice(c, "no destination could be read from the connection",
				  ADVICE_FIX_REQUEST,
				  "name the destination (a TLS server name or an HTTP Host header).");
}

/* ---- asking a person ----------------------------------------------------------------------- */

static void on_hup(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress_conn *c = arg;

	(void)fd;
	(void)what;
	c->reason = "the client closed while a person was asked";
	conn_close(c);
}

/* network.unlisted "ask": held until the decision on its destination (egress-ask.c). */
static void conn_ask(struct pd_egress_conn *c)
{
	struct pd_egress *eg = c->eg;
	int r;

	snprintf(c->rule, sizeof(c->rule), "ask");
	r = pd_egress_ask_hold(eg, c->kind == TARGET_NAME ? c->name : c->addr_text,
			       c->kind == TARGET_NAME, c->addr_family, c->addr, c->port, c->via,
			       &c->ask);
	if (r == -EBUSY) {
		snprintf(c->why, sizeof(c->why),
			 "%u destinations wait for a person's answer already "
			 "(network.ask_max_pending)",
			 eg->ask_max_pending);
		return conn_refuse_advice(c, c->why, ADVICE_ASK_BUSY, NULL);
	}
	if (r < 0) {
		c->reason = "out of memory";
		return conn_close(c);
	}
	/* the decision's own timer bounds the wait; a client that gives up is let go at once */
	c->st = ST_ASK;
	event_del(c->timer);
	event_del(c->c_rd);
	c->hup = event_new(eg->ctx->base, c->cfd, EV_CLOSED, on_hup, c);
	if (c->hup)
		event_add(c->hup, NULL);
}

/* Allowed once by a person: on to the resolution and the connect, as an allowed one goes. */
static void asked_go(struct pd_egress_conn *c, const struct paddock_ask *p)
{
	c->asked_ok = true;
	snprintf(c->rule, sizeof(c->rule), "ask: %s by %.40s",
		 paddock_ask_answer_to_string(p->answer), p->by);
	if (c->kind == TARGET_ADDR) {
		c->addrs.n = 1;
		c->addrs.a[0].family = c->addr_family;
		memcpy(c->addrs.a[0].addr, c->addr, 16);
	}
	c->st = ST_RESOLVE;
	conn_resolve(c);
}

void pd_egress_conn_asked(struct pd_egress *eg, struct pd_egress_ask *a, bool again)
{
	const struct paddock_ask *p = pd_egress_ask_info(a);

	/* each step below moves or closes its own connection only: the next stays valid */
	for (struct pd_egress_conn *c = eg->conns, *next; c; c = next) {
		next = c->next;
		if (c->ask != a)
			continue;
		c->ask = NULL;
		if (c->hup) {
			event_free(c->hup);
			c->hup = NULL;
		}
		c->st = ST_HEAD;
		if (again) {
			decide(c); /* the policy in force decides, as for a new connection */
		} else if (p->answer != PADDOCK_ASK_DENY) {
			asked_go(c, p);
		} else if (p->timed_out) {
			snprintf(c->why, sizeof(c->why), "nobody answered within %g s",
				 (double)(p->expires_ms - p->asked_ms) / 1000);
			conn_refuse_advice(c, c->why, ADVICE_ASK_TIMEOUT, NULL);
		} else {
			snprintf(c->why, sizeof(c->why), "answered deny (by %.64s%s%.128s)", p->by,
				 p->who ? ": " : "", p->who ? p->who : "");
			conn_refuse_advice(c, c->why, ADVICE_ASK_DENIED, NULL);
		}
	}
}

/* ---- connecting ---------------------------------------------------------------------------- */

static void connect_next(struct pd_egress_conn *c);

static void on_resolved(int error, const struct pd_addrs *addrs, void *userdata)
{
	struct pd_egress_conn *c = userdata;
	struct pd_addrs ok = { 0 };
	const char *why = NULL;

	c->req = NULL;
	if (error == -ENOENT)
		return conn_fail(c, 0x04, "502 Bad Gateway", "the name does not resolve");
	if (error < 0)
		return conn_fail(c, 0x04, "502 Bad Gateway", "name resolution failed");
	const struct pd_egress_rule *deny = NULL;

	for (size_t i = 0; i < addrs->n; i++) {
		const struct pd_egress_rule *rule;

		/* SECURITY: the name was allowed; each address it resolved to must be too */
		if (pd_egress_allow_addr(&c->eg->policy, addrs->a[i].family, addrs->a[i].addr,
					 c->port, true, &rule))
			ok.a[ok.n++] = addrs->a[i];
		else if (rule && rule->deny)
			deny = rule;
		else
			why = "it resolves only to addresses that are not public (loopback, private, "
			      "link-local or reserved) and no CIDR rule allows them";
	}
	if (ok.n == 0) {
		c->addr_family = addrs->a[0].family;
		memcpy(c->addr, addrs->a[0].addr, 16);
		inet_ntop(addrs->a[0].family, addrs->a[0].addr, c->addr_text, sizeof(c->addr_text));
		if (deny) {
			set_rule(c, deny);
			why = "a deny rule matches its address";
			return conn_refuse_advice(c, why, ADVICE_DENIED, NULL);
		}
		/* SECURITY: the name is allowed already; what is missing is the address */
		return conn_refuse_advice(c, why, ADVICE_NAME_PRIVATE, NULL);
	}
	c->addrs = ok;
	c->next_addr = 0;
	connect_next(c);
}

static void conn_resolve(struct pd_egress_conn *c)
{
	struct pd_resolve_req *req;
	struct pd_resolver *res;

	c->st = ST_RESOLVE;
	if (c->kind == TARGET_ADDR) {
		c->next_addr = 0;
		return connect_next(c);
	}
	res = pd_egress_resolver(c->eg->ctx, NULL);
	if (!res)
		return conn_fail(c, 0x01, "502 Bad Gateway", "no resolver");
	set_timer(c, HEAD_TIMEOUT_S * 1000);
	/* an answer at once (cache, hosts file) has run on_resolved, which may have freed c */
	req = pd_resolve(res, c->name, on_resolved, c);
	if (req)
		c->req = req;
}

static void connect_next(struct pd_egress_conn *c)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd;

	c->decided = true;
	c->allowed = true;
	if (c->ufd >= 0) {
		event_free(c->u_wr);
		c->u_wr = NULL;
		c->ufd = pd_close(c->ufd);
	}
	if (c->next_addr >= c->addrs.n)
		return conn_fail(c, 0x05, "502 Bad Gateway",
				 c->reason ? c->reason : "connection refused");
	const int fam = c->addrs.a[c->next_addr].family;
	const uint8_t *a = c->addrs.a[c->next_addr].addr;

	c->next_addr++;
	inet_ntop(fam, a, c->addr_text, sizeof(c->addr_text));
	if (fam == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(c->port);
		memcpy(&s4->sin_addr, a, 4);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(c->port);
		memcpy(&s6->sin6_addr, a, 16);
		len = sizeof(*s6);
	}
	fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return conn_fail(c, 0x01, "502 Bad Gateway", "no socket for the connection");
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int)); /* as egress.c */
	c->ufd = fd;
	c->st = ST_CONNECT;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		c->reason = strerror(errno);
		return connect_next(c);
	}
	c->u_wr = event_new(c->eg->ctx->base, fd, EV_WRITE, conn_io, c);
	if (!c->u_wr)
		return conn_fail(c, 0x01, "502 Bad Gateway", "out of memory");
	arm(c->u_wr, 0);
	set_timer(c, CONNECT_TIMEOUT_S * 1000);
}

/* ---- the pipe ------------------------------------------------------------------------------ */

static int dir_setup(struct pd_egress_conn *c, struct dir *d, int src, int dst, uint64_t *count,
		     struct event *src_ev, struct event *dst_ev)
{
	d->src = src;
	d->dst = dst;
	d->count = count;
	d->src_ev = src_ev;
	d->dst_ev = dst_ev;
	d->pipe_size = PIPE_SMALL;
	(void)c;
	return pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0 ? -errno : 0;
}

/* Moves what it can from d->src to d->dst; -errno on a broken connection. */
static int dir_pump(struct pd_egress *eg, struct dir *d, bool up)
{
	for (int round = 0; round < PUMP_ROUNDS; round++) {
		ssize_t n;

		if (d->pre_off < d->pre_len) {
			n = send(d->dst, d->pre + d->pre_off, d->pre_len - d->pre_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno != EAGAIN)
					return -errno;
				arm(d->dst_ev, 0);
				return 0;
			}
			d->pre_off += (size_t)n;
			*d->count += (uint64_t)n;
			if (up)
				eg->stats.bytes_out += (uint64_t)n;
			else
				eg->stats.bytes_in += (uint64_t)n;
			continue;
		}
		if (d->in_pipe > 0) {
			n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0) {
				if (errno != EAGAIN)
					return -errno;
				arm(d->dst_ev, 0);
				return 0;
			}
			d->in_pipe -= (size_t)n;
			*d->count += (uint64_t)n;
			if (up)
				eg->stats.bytes_out += (uint64_t)n;
			else
				eg->stats.bytes_in += (uint64_t)n;
			continue;
		}
		if (d->eof) {
			if (!d->done) {
				(void)shutdown(d->dst, SHUT_WR);
				d->done = true;
			}
			return 0;
		}
		n = splice(d->src, NULL, d->pipe[1], NULL, d->pipe_size,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		/*
		 * A bulk transfer fills the pipe: give it 1 MiB, so each wakeup moves 16× more
		 * (the supervisor's CPU per GiB falls 2-3×, bench/egress.sh). Only busy
		 * directions grow, so a connection holds at most 2 MiB of pipe; an unprivileged
		 * supervisor past pipe-user-pages-soft keeps the small pipe (EPERM), which works.
		 */
		if (n > 0 && (size_t)n == d->pipe_size && !d->grown) {
			int sz = fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_BIG);

			d->grown = true;
			if (sz > 0)
				d->pipe_size = (size_t)sz;
		}
		if (n == 0) {
			d->eof = true;
			continue;
		}
		if (n < 0) {
			if (errno != EAGAIN)
				return -errno;
			arm(d->src_ev, 0);
			return 0;
		}
		d->in_pipe += (size_t)n;
	}
	/* more to move: come back after the loop has served the others */
	event_active(d->src_ev, EV_READ, 0);
	return 0;
}

static void pipe_run(struct pd_egress_conn *c)
{
	int r;

	r = dir_pump(c->eg, &c->up, true);
	if (r >= 0)
		r = dir_pump(c->eg, &c->down, false);
	if (r < 0 || (c->up.done && c->down.done)) {
		if (r < 0 && !c->reason)
			c->reason = r == -EPIPE || r == -ECONNRESET ? "reset by a peer" : "i/o error";
		return conn_close(c);
	}
	set_timer(c, IDLE_TIMEOUT_S * 1000);
}

static void pipe_start(struct pd_egress_conn *c, uint8_t *pre_up, size_t pre_up_len)
{
	/* counted here, once every check has passed: a tunnel refused after CONNECT is a denial */
	c->eg->stats.connections_allowed++;
	c->st = ST_PIPE;
	if (!c->u_rd)
		c->u_rd = event_new(c->eg->ctx->base, c->ufd, EV_READ, conn_io, c);
	if (!c->u_wr)
		c->u_wr = event_new(c->eg->ctx->base, c->ufd, EV_WRITE, conn_io, c);
	if (!c->u_rd || !c->u_wr ||
	    dir_setup(c, &c->up, c->cfd, c->ufd, &c->bytes_out, c->c_rd, c->u_wr) < 0 ||
	    dir_setup(c, &c->down, c->ufd, c->cfd, &c->bytes_in, c->u_rd, c->c_wr) < 0) {
		free(pre_up);
		c->reason = "out of pipes";
		return conn_close(c);
	}
	c->up.pre = pre_up;
	c->up.pre_len = pre_up_len;
	pipe_run(c);
}

/* ---- reading what names the destination ------------------------------------------------------ */

/* Reads what is there into c->buf (at most BUF_MAX); 0 on EOF, -EAGAIN, -errno, or bytes. */
static ssize_t fill(struct pd_egress_conn *c)
{
	ssize_t n;

	if (!c->buf) {
		c->buf = malloc(BUF_MAX);
		if (!c->buf)
			return -ENOMEM;
	}
	if (c->len >= BUF_MAX)
		return -E2BIG;
	n = recv(c->cfd, c->buf + c->len, BUF_MAX - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : -errno;
	c->len += (size_t)n;
	return n;
}

/* Takes bytes [from, len) of c->buf as what goes upstream first. */
static uint8_t *take_rest(struct pd_egress_conn *c, size_t from, size_t *ret_len)
{
	uint8_t *p;

	*ret_len = c->len > from ? c->len - from : 0;
	if (*ret_len == 0)
		return NULL;
	p = malloc(*ret_len);
	if (p)
		memcpy(p, c->buf + from, *ret_len);
	else
		*ret_len = 0;
	return p;
}

static bool header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/*
 * An absolute-form request as it goes to the origin: "GET /path HTTP/1.1", without the
 * proxy's own headers, with Connection: close (one request per tunnel: the next request
 * on this connection could name another host, and must be decided again).
 */
static uint8_t *rewrite_absolute(struct pd_egress_conn *c, size_t *ret_len)
{
	const char *b = (const char *)c->buf, *t = b + c->head.target_offset, *path, *p, *end;
	size_t tl = c->head.target_len, cap = c->head.head_len + 64, o = 0;
	const char *line_end = memchr(b, '\n', c->head.head_len);
	uint8_t *out;

	/* the path: after "http://authority" */
	path = memmem(t, tl, "://", 3);
	path = path ? memchr(path + 3, '/', (size_t)(t + tl - (path + 3))) : NULL;
	out = malloc(cap + (c->len - c->head.head_len));
	if (!out || !line_end)
		return free(out), NULL;
	o += (size_t)snprintf((char *)out, cap, "%.*s ", (int)strlen(c->head.method),
			      c->head.method);
	if (path) {
		memcpy(out + o, path, (size_t)(t + tl - path));
		o += (size_t)(t + tl - path);
	} else {
		out[o++] = '/';
	}
	/* " HTTP/1.x" and the rest of the request line */
	memcpy(out + o, t + tl, (size_t)(line_end + 1 - (t + tl)));
	o += (size_t)(line_end + 1 - (t + tl));
	end = b + c->head.head_len;
	for (p = line_end + 1; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		size_t content = ll;

		while (content > 0 && (p[content - 1] == '\n' || p[content - 1] == '\r'))
			content--;
		if (content == 0) {
			o += (size_t)snprintf((char *)out + o, cap - o, "Connection: close\r\n\r\n");
			break;
		}
		if (!header_is(p, content, "proxy-connection") &&
		    !header_is(p, content, "proxy-authorization") &&
		    !header_is(p, content, "connection") && !header_is(p, content, "keep-alive")) {
			memcpy(out + o, p, ll);
			o += ll;
		}
		p += ll;
	}
	/* the start of a body, if the client sent it with the head */
	memcpy(out + o, c->buf + c->head.head_len, c->len - c->head.head_len);
	o += c->len - c->head.head_len;
	*ret_len = o;
	return out;
}

static void head_proxy(struct pd_egress_conn *c)
{
	const char *why = NULL;
	int r;

	r = pd_http_head_parse((const char *)c->buf, c->len, &c->head, &why);
	if (r == -EAGAIN)
		return arm(c->c_rd, 0);
	if (r == -E2BIG) {
		c->reason = "request head too large";
		http_answer(c, "431 Request Header Fields Too Large",
			    "paddock: the request head is larger than the proxy takes.\n");
		return conn_close(c);
	}
	if (r < 0) {
		char body[512];

		/* say what is wrong with it: the proxy read it as HTTP and found this */
		c->reason = why ? why : "a malformed request";
		snprintf(body, sizeof(body),
			 "paddock: the proxy cannot read this request: expected %s.\n",
			 why ? why : "an HTTP/1.x request");
		http_answer(c, "400 Bad Request", body);
		return conn_close(c);
	}
	if (c->head.form == PD_HTTP_ORIGIN) {
		c->reason = "not a proxy request";
		http_answer(c, "400 Bad Request",
			    "paddock: this is an HTTP proxy: send CONNECT host:port or an "
			    "absolute http:// URL.\n");
		return conn_close(c);
	}
	set_target(c, c->head.host, c->head.port);
	c->absolute = c->head.form == PD_HTTP_ABSOLUTE;
	/* SECURITY: the Host header must name the host the request goes to */
	if (c->absolute && c->head.host_header[0] &&
	    (strcasecmp(c->head.host_header, c->head.host) != 0 ||
	     (c->head.host_header_port && c->head.host_header_port != c->head.port)))
		return conn_refuse_advice(c, "the Host header names another host than the request",
					  ADVICE_FIX_REQUEST,
					  "send a Host header that names the URL's host and port.");
	decide(c);
}

static void head_socks(struct pd_egress_conn *c)
{
	const char *why = NULL;
	size_t used;
	bool noauth;
	int r;

	if (c->socks_step == 0) {
		uint8_t ok[2] = { 5, 0 };

		r = pd_socks5_greeting_parse(c->buf, c->len, &used, &noauth, &why);
		if (r == -EAGAIN)
			return arm(c->c_rd, 0);
		if (r < 0 || !noauth) {
			uint8_t no[2] = { 5, 0xff };

			if (r == 0)
				send_client(c, no, 2);
			c->reason = r < 0 ? why : "the client offers no method without authentication";
			return conn_close(c);
		}
		send_client(c, ok, 2);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->socks_step = 1;
	}
	struct pd_socks5_request q;

	r = pd_socks5_request_parse(c->buf, c->len, &q, &why);
	if (r == -EAGAIN)
		return arm(c->c_rd, 0);
	if (r < 0) {
		uint8_t rep[10];

		send_client(c, rep, pd_socks5_reply(0x01, rep));
		c->reason = why;
		return conn_close(c);
	}
	if (q.cmd != 1) {
		uint8_t rep[10];

		send_client(c, rep, pd_socks5_reply(0x07, rep)); /* command not supported */
		c->reason = "only the SOCKS5 CONNECT command is served";
		return conn_close(c);
	}
	memmove(c->buf, c->buf + q.len, c->len - q.len);
	c->len -= q.len;
	set_target(c, q.host, q.port);
	decide(c);
}

enum sniff {
	SNIFF_MAYBE, /* token characters that may be a method or another protocol's word */
	SNIFF_MORE,  /* a TLS hello or an HTTP request head has begun: read the rest */
	SNIFF_TLS,   /* a TLS ClientHello (with a server name, or none) */
	SNIFF_HTTP,  /* an HTTP request (with a Host, when its head parses) */
	SNIFF_OTHER, /* neither: another protocol */
};

/*
 * What the first bytes from the client are. `name`: the TLS server name or the Host they
 * carry, "" when none. A request line decides HTTP as the broker reads it
 * (pd_http_request_line_check), so a text protocol's line or binary bytes are another
 * protocol at once, without waiting.
 */
static enum sniff sniff(struct pd_egress_conn *c, char *name, size_t size)
{
	const char *why;
	int r;

	name[0] = '\0';
	if (c->len == 0)
		return SNIFF_MAYBE;
	if (c->buf[0] == 0x16) { /* a TLS handshake record */
		c->is_tls = true;
		r = pd_tls_sni_parse(c->buf, c->len, name, size, &why);
		if (r == -EAGAIN && c->len < PD_TLS_HELLO_MAX)
			return SNIFF_MORE;
		if (r < 0)
			name[0] = '\0';
		return SNIFF_TLS;
	}
	r = pd_http_request_line_check(c->buf, c->len);
	if (r == -EPROTO)
		return SNIFF_OTHER;
	if (r == -EAGAIN)
		return SNIFF_MAYBE; /* at most 32 token characters: never near BUF_MAX */
	/* a request line longer than a head may be is still HTTP: the broker refuses it */
	if (r == 1 && c->len < BUF_MAX)
		return SNIFF_MORE;
	c->is_http = true;
	r = pd_http_head_parse((const char *)c->buf, c->len, &c->head, &why);
	if (r == -EAGAIN && c->len < BUF_MAX)
		return SNIFF_MORE;
	if (r == 0)
		snprintf(name, size, "%s",
			 c->head.form == PD_HTTP_ORIGIN ? c->head.host_header : c->head.host);
	return SNIFF_HTTP;
}

/*
 * The client's first bytes are not known yet (SNIFF_MAYBE or SNIFF_MORE): read on, or give
 * up waiting. SECURITY: bytes that began a request head ("METHOD ") or a TLS hello are never
 * relayed unread: the head gets HEAD_TIMEOUT_S to complete, then the connection closes (a
 * leak check must not time out into a pass). Token characters alone ("ping") get
 * MAYBE_TIMEOUT_MS, then are another protocol's. 1: read on; 0: relay them as they are;
 * -1: closed.
 */
static int wait_for_more(struct pd_egress_conn *c, enum sniff k, bool timed_out)
{
	if (k == SNIFF_MORE) {
		if (timed_out && c->head_timer) {
			c->reason = "timed out waiting for the rest of the request head or TLS hello";
			conn_close(c);
			return -1;
		}
		if (!c->head_timer) {
			c->head_timer = true;
			set_timer(c, HEAD_TIMEOUT_S * 1000);
		}
	} else if (timed_out && c->maybe_timer) {
		return 0;
	} else if (!c->maybe_timer) {
		c->maybe_timer = true;
		set_timer(c, MAYBE_TIMEOUT_MS);
	}
	arm(c->c_rd, 0);
	return 1;
}

static void peek_transparent(struct pd_egress_conn *c, bool timed_out)
{
	char name[PD_EGRESS_NAME_MAX + 1];

	enum sniff k = sniff(c, name, sizeof(name));

	if (k == SNIFF_MORE || (k == SNIFF_MAYBE && c->len > 0)) {
		if (wait_for_more(c, k, timed_out) != 0)
			return;
		/* a word of another protocol ("ping"): its address decides */
	} else if (k == SNIFF_MAYBE) {
		if (!timed_out)
			return arm(c->c_rd, 0);
		/*
		 * Nothing yet: a protocol whose server speaks first, or a slow client. The
		 * address decides now; whatever the client sends later is checked after the
		 * connect (ST_CHECK), as a tunnel's first bytes are.
		 */
	}
	/*
	 * The name the client asked for decides (TLS server name, Host); without one, the name
	 * the DNS filter answered this address for (ssh, git://, databases); the bare address
	 * only when neither exists.
	 */
	if (!name[0]) {
		const char *answered = pd_egress_name_for_addr(c->eg, c->addr_family, c->addr);

		if (answered)
			snprintf(name, sizeof(name), "%s", answered);
	}
	if (name[0]) {
		uint8_t lit[16];

		if (inet_pton(AF_INET, name, lit) != 1 && inet_pton(AF_INET6, name, lit) != 1)
			set_target(c, name, c->port);
	}
	decide(c);
}

/* The first bytes named another host than the connection was decided for. 0: go on. */
static int check_name(struct pd_egress_conn *c, const char *name)
{
	char norm[PD_EGRESS_NAME_MAX + 1];
	const struct pd_egress_rule *rule;
	uint8_t lit[16];

	if (!name[0] || inet_pton(AF_INET, name, lit) == 1 || inet_pton(AF_INET6, name, lit) == 1)
		return 0;
	if (pd_egress_name_normalise(name, norm, sizeof(norm)) == 0 && c->kind == TARGET_NAME &&
	    streq(norm, c->name))
		return 0;
	if (c->via == PD_VIA_TRANSPARENT && pd_egress_name_normalise(name, norm, sizeof(norm)) == 0) {
		/*
		 * Redirected, decided by its address before it named anything: the name it names
		 * now decides, as it would have at once (another name of a shared address).
		 */
		if (pd_egress_allow_name(&c->eg->policy, norm, c->port, &rule)) {
			set_target(c, norm, c->port);
			set_rule(c, rule);
			return 0;
		}
		c->allowed = false;
		set_rule(c, rule);
		c->eg->stats.connections_denied++;
		c->reason = rule ? "a deny rule matches the name it sent late"
				 : "no allow rule matches the name it sent late";
		conn_close(c);
		return -1;
	}
	if (c->kind != TARGET_NAME)
		return 0; /* a tunnel to an address: the address was decided */
	c->allowed = false;
	c->rule[0] = '\0'; /* the rule allowed the host; the tunnel's contents are refused */
	c->eg->stats.connections_denied++;
	c->reason = c->is_tls ? "the TLS server name differs from the tunnel's host"
			      : "the Host header differs from the tunnel's host";
	conn_close(c);
	return -1;
}

/*
 * CHECK: the first bytes through a tunnel, or through a redirected connection that showed
 * none before it was decided. Nothing goes on before they are known.
 */
static void check_first_bytes(struct pd_egress_conn *c, bool timed_out)
{
	char name[PD_EGRESS_NAME_MAX + 1];
	uint8_t *pre;
	size_t pre_len;
	bool tls;

	enum sniff k = sniff(c, name, sizeof(name));

	if (k == SNIFF_MORE || (k == SNIFF_MAYBE && c->len > 0)) {
		if (wait_for_more(c, k, timed_out) != 0)
			return;
	} else if (k == SNIFF_MAYBE) {
		if (timed_out) {
			c->reason = "idle timeout";
			return conn_close(c);
		}
		return arm(c->c_rd, 0);
	}
	if (check_name(c, name) < 0)
		return;
	pre = take_rest(c, 0, &pre_len);
	if (broker_wanted(c, &tls))
		return broker_start(c, tls, pre, pre_len);
	pipe_start(c, pre, pre_len);
}

/*
 * CHECK, and the server spoke first (ssh, SMTP, MySQL): not a request; relay at once. Bytes
 * of the client's that began a head or hello still decide.
 */
static void check_server_first(struct pd_egress_conn *c)
{
	char name[PD_EGRESS_NAME_MAX + 1];
	uint8_t *pre;
	size_t pre_len;

	/* the client may have spoken at the same moment: its bytes, if any, still decide */
	if (c->len == 0 && fill(c) > 0 && sniff(c, name, sizeof(name)) != SNIFF_MAYBE)
		return check_first_bytes(c, false);
	if (c->len > 0 && sniff(c, name, sizeof(name)) != SNIFF_MAYBE)
		return; /* the client's bytes decide; more of them are on their way */
	pre = take_rest(c, 0, &pre_len);
	pipe_start(c, pre, pre_len);
}

/* ---- the secret broker -------------------------------------------------------------------- */

static const char *secret_host(const struct pd_egress_conn *c)
{
	return c->kind == TARGET_NAME ? c->name : c->addr_text;
}

static void on_secret_use(const struct pd_subst_use *use, const char *request_line, void *ud)
{
	struct pd_egress_conn *c = ud;
	const struct pd_secret_rt *rt = &c->eg->secrets->s[use->secret];

	if (!pd_events_wanted(c->eg->ctx))
		return;
	/* SECURITY: the name and a fingerprint; the request line holds placeholders only */
	pd_emit(c->eg->ctx, PADDOCK_LEVEL_INFO, "secret.used", c->eg->sandbox_id, NULL,
		json_pack("{s:s, s:s, s:s, s:s, s:s}", "secret", rt->name, "fingerprint",
			  rt->fingerprint, "host", secret_host(c), "where", use->where, "request",
			  request_line));
}

/* The secret is bound to this host, but this is plain HTTP: its value goes over TLS only. */
static bool plain_to_bound(const struct pd_egress_conn *c, size_t idx)
{
	return !c->intercepted && c->kind == TARGET_NAME &&
	       pd_secret_bound(&c->eg->secrets->s[idx], c->name);
}

static void leak_blocked(struct pd_egress_conn *c, size_t idx)
{
	const struct pd_secret_rt *rt = &c->eg->secrets->s[idx];
	bool plain = plain_to_bound(c, idx);
	const char *ev_reason =
		plain ? "its placeholder was sent over plain HTTP; its value goes to its hosts "
			"over HTTPS only"
		      : "its placeholder was sent to a host the secret is not bound to";

	c->allowed = false;
	c->reason = plain ? "a secret's placeholder was sent over plain HTTP (its value goes to "
			    "its hosts over HTTPS only)"
			  : "a secret's placeholder was sent to a host it is not bound to";
	c->eg->stats.connections_denied++;
	if (pd_events_wanted(c->eg->ctx))
		pd_emit(c->eg->ctx, PADDOCK_LEVEL_WARN, "secret.leak_blocked", c->eg->sandbox_id,
			NULL,
			json_pack("{s:s, s:s, s:s, s:s}", "secret", rt->name, "fingerprint",
				  rt->fingerprint, "host", secret_host(c), "reason", ev_reason));
}

/* Feeds every byte of `in` through fn; drains it. */
static int feed_all(struct evbuffer *in, int (*fn)(struct pd_egress_conn *, const uint8_t *,
						   size_t, struct evbuffer *),
		    struct pd_egress_conn *c, struct evbuffer *out)
{
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		int r;

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			return -1;
		r = fn(c, v.iov_base, v.iov_len, out);
		evbuffer_drain(in, v.iov_len);
		if (r < 0)
			return r;
	}
	return 0;
}

static int subst_chunk(struct pd_egress_conn *c, const uint8_t *p, size_t n, struct evbuffer *out)
{
	const char *why = NULL;
	size_t idx = 0;
	int r = pd_subst_feed(c->subst, p, n, out, &idx, &why);

	if (r == -EPERM) {
		c->leak_idx = idx;
		leak_blocked(c, idx);
	}
	else if (r < 0 && !c->reason)
		c->reason = why ? why : "the request cannot be brokered";
	return r;
}


static int broker_client_data(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	char body[1024], msg[1536];
	int n, r;

	if (c->leaked) {
		evbuffer_drain(in, evbuffer_get_length(in)); /* the answer is on its way */
		return 0;
	}
	r = feed_all(in, subst_chunk, c, out);
	if (r != -EPERM || !c->mitm)
		return r < 0 ? -1 : 0;
	/* a leak: the request went nowhere; say so in HTTP, naming the secret */
	c->leaked = true;
	if (plain_to_bound(c, c->leak_idx))
		snprintf(body, sizeof(body),
			 "paddock: blocked: the request carries the placeholder of secret %s over "
			 "plain HTTP; its value goes to %s over HTTPS only: use https://%s/.\n",
			 c->eg->secrets->s[c->leak_idx].name, secret_host(c), secret_host(c));
	else
		snprintf(body, sizeof(body),
			 "paddock: blocked: the request carries the placeholder of secret %s, "
			 "which may go only to its own hosts, not %s.\n",
			 c->eg->secrets->s[c->leak_idx].name, secret_host(c));
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "secret-blocked\r\n\r\n%s",
		     strlen(body), body);
	evbuffer_drain(in, evbuffer_get_length(in));
	pd_mitm_answer(c->mitm, msg, (size_t)n, c->reason);
	return 0;
}

/*
 * A response the broker will not pass on: answered with a 502 in its place when none of it
 * went out yet, else the connection is cut. Returns what the data callback returns.
 */
static int response_refused(struct pd_egress_conn *c, const char *why)
{
	bool answered = c->mitm && !pd_response_started(c->resp);
	char body[1024], msg[1536];
	int n;

	c->reason = why;
	c->resp_refused = true;
	if (pd_events_wanted(c->eg->ctx))
		pd_emit(c->eg->ctx, PADDOCK_LEVEL_WARN, "secret.response_refused",
			c->eg->sandbox_id, NULL,
			json_pack("{s:s, s:s, s:s}", "host", secret_host(c), "reason", why,
				  "outcome", answered ? "answered 502" : "connection cut"));
	if (!answered)
		return -1;
	snprintf(body, sizeof(body),
		 "paddock: the response from %s was not passed on: %s. Responses on a connection "
		 "that carries a secret are checked for its value before the sandbox sees them.\n",
		 secret_host(c), why);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "response-refused\r\n\r\n%s",
		     strlen(body), body);
	pd_mitm_answer(c->mitm, msg, (size_t)n, why);
	return 0;
}

static int response_chunk(struct pd_egress_conn *c, const uint8_t *p, size_t n,
			  struct evbuffer *out)
{
	const char *why = NULL;
	int r = pd_response_feed(c->resp, p, n, out, &why);

	if (r < 0)
		return response_refused(c, why) < 0 ? -1 : -EAGAIN;
	return 0;
}

static int broker_upstream_data(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	int r;

	if (!c->resp) /* plain HTTP: no value went out on it, nothing of one can come back */
		return evbuffer_add_buffer(out, in) < 0 ? -1 : 0;
	if (c->resp_refused) {
		evbuffer_drain(in, evbuffer_get_length(in)); /* answered: the rest goes nowhere */
		return 0;
	}
	r = feed_all(in, response_chunk, c, out);
	if (r == -EAGAIN) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return 0;
	}
	return r < 0 ? -1 : 0;
}

static int broker_upstream_eof(struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	const char *why = NULL;

	if (c->resp && !c->resp_refused && pd_response_end(c->resp, out, &why) < 0)
		return response_refused(c, why);
	return 0;
}

/* The real server's TLS failed (an untrusted certificate, another name): a 502 that says so. */
static void broker_upstream_failed(const char *reason, void *ud)
{
	struct pd_egress_conn *c = ud;
	char body[1024], msg[1536];
	int n;

	snprintf(body, sizeof(body),
		 "paddock: could not reach %s securely: %s. Nothing was sent to it (a secret "
		 "goes only to a server whose certificate verifies for its name).\n",
		 secret_host(c), reason);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "upstream-tls-failed\r\n\r\n%s",
		     strlen(body), body);
	pd_mitm_answer(c->mitm, msg, (size_t)n, reason);
}

static void broker_closed(const char *reason, uint64_t from_client, uint64_t from_upstream,
			  void *ud)
{
	struct pd_egress_conn *c = ud;
	static char why[160];

	c->mitm = NULL; /* freed by the library */
	c->bytes_out += from_client;
	c->bytes_in += from_upstream;
	c->eg->stats.bytes_out += from_client;
	c->eg->stats.bytes_in += from_upstream;
	/* an ordinary end is no reason; the text lives for the call only */
	if (!c->reason && strcmp(reason, "client closed") != 0 &&
	    strcmp(reason, "upstream closed") != 0) {
		snprintf(why, sizeof(why), "%s", reason);
		c->reason = why;
	}
	if (!c->leaked)
		c->eg->stats.connections_allowed++;
	conn_close(c);
}

static const struct pd_mitm_ops broker_ops = {
	.client_data = broker_client_data,
	.upstream_data = broker_upstream_data,
	.upstream_eof = broker_upstream_eof,
	.upstream_failed = broker_upstream_failed,
	.closed = broker_closed,
};

/*
 * Takes the connection over for the secret broker: HTTPS to a host a secret is bound to is
 * intercepted (a leaf from the sandbox's CA towards the sandbox, verified TLS upstream), and
 * plain HTTP of a sandbox with secrets is relayed through the same engine, so placeholders
 * are replaced for bound hosts and stopped for any other. `pre` (taken) goes first.
 */
static void broker_start(struct pd_egress_conn *c, bool tls, uint8_t *pre, size_t pre_len)
{
	struct pd_secrets *s = c->eg->secrets;
	paddock_error err = { 0 };
	SSL_CTX *sctx = NULL, *uctx;
	SSL *ussl = NULL;
	int r;

	c->view = calloc(s->n, sizeof(*c->view));
	if (!c->view) {
		free(pre);
		c->reason = "out of memory";
		return conn_close(c);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct pd_secret_rt *rt = &s->s[i];

		c->view[i] = (struct pd_secret){
			.name = rt->name,
			.value = rt->value,
			.value_len = rt->value_len,
			.placeholder = (const uint8_t *)rt->placeholder,
			.placeholder_len = rt->placeholder_len,
			/* SECURITY: a value goes over TLS only, never in clear (plain HTTP
			 * to a bound host gets a 403 saying so: broker_client_data) */
			.bound = tls && c->kind == TARGET_NAME && pd_secret_bound(rt, c->name),
			.in_body = rt->in_body,
		};
	}
	c->subst = pd_subst_new(c->view, s->n, PD_HTTP_HEAD_MAX, BROKER_BODY_MAX, on_secret_use, c);
	if (tls) {
		/* the only connections a value goes out on: what comes back is checked */
		c->resp = pd_response_new(c->view, s->n);
		if (c->resp && c->subst)
			pd_subst_set_response(c->subst, c->resp);
	}
	if (!c->subst || (tls && !c->resp)) {
		free(pre);
		c->reason = "out of memory";
		return conn_close(c);
	}
	if (tls) {
		sctx = pd_ca_server_ctx(s->ca, c->name, &err);
		uctx = sctx ? pd_egress_upstream_tls(c->eg->ctx, &err) : NULL;
		ussl = uctx ? pd_tls_client_ssl(uctx, c->name, &err) : NULL;
		if (!ussl) {
			free(pre);
			c->reason = "the interception cannot be set up";
			return conn_close(c);
		}
	}
	/* the relay owns both sockets from here; our own events on them go */
	struct event **evs[] = { &c->c_rd, &c->c_wr, &c->u_rd, &c->u_wr };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (*evs[i]) {
			event_free(*evs[i]);
			*evs[i] = NULL;
		}
	event_del(c->timer);
	c->st = ST_BROKER;
	c->intercepted = tls; /* counted allowed when it ends, unless a leak ended it */
	r = pd_mitm_start(c->eg->ctx->base, sctx, ussl, c->cfd, c->ufd, pre, pre_len, &broker_ops,
			  c, &c->mitm, &err);
	free(pre);
	c->cfd = c->ufd = -EBADF; /* taken over, even on failure */
	if (r < 0) {
		c->mitm = NULL;
		c->reason = "the interception cannot start";
		return conn_close(c);
	}
}

/* Whether this connection goes through the broker, and how. */
static bool broker_wanted(const struct pd_egress_conn *c, bool *ret_tls)
{
	if (!c->eg->secrets)
		return false;
	*ret_tls = c->is_tls;
	if (c->is_tls)
		return c->kind == TARGET_NAME && pd_secrets_any_bound(c->eg->secrets, c->name);
	return c->is_http || c->absolute;
}

/* ---- events ------------------------------------------------------------------------------ */

static void on_connected(struct pd_egress_conn *c)
{
	int e = 0;
	socklen_t el = sizeof(e);
	uint8_t *pre;
	size_t pre_len;
	bool tls;

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		c->reason = strerror(e);
		return connect_next(c);
	}
	c->reason = NULL;
	switch (c->via) {
	case PD_VIA_PROXY:
		if (c->absolute) {
			pre = rewrite_absolute(c, &pre_len);
			if (!pre)
				return conn_fail(c, 0, "502 Bad Gateway", "out of memory");
			if (broker_wanted(c, &tls))
				return broker_start(c, false, pre, pre_len);
			return pipe_start(c, pre, pre_len);
		}
		send_client(c, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
		memmove(c->buf, c->buf + c->head.head_len, c->len - c->head.head_len);
		c->len -= c->head.head_len;
		break;
	case PD_VIA_SOCKS: {
		uint8_t rep[10];

		send_client(c, rep, pd_socks5_reply(0x00, rep));
		break;
	}
	case PD_VIA_TRANSPARENT:
	case PD_VIA_DNS:
	case PD_VIA_SINK:
	case _PD_VIA_MAX:
		if (c->len == 0)
			break; /* decided by its address: its first bytes are checked now */
		pre = take_rest(c, 0, &pre_len);
		if (broker_wanted(c, &tls))
			return broker_start(c, tls, pre, pre_len);
		return pipe_start(c, pre, pre_len);
	}
	/* the first bytes decide, or the server's: whichever side speaks first */
	c->st = ST_CHECK;
	c->head_timer = c->maybe_timer = false;
	c->u_rd = event_new(c->eg->ctx->base, c->ufd, EV_READ, conn_io, c);
	if (!c->u_rd) {
		c->reason = "out of memory";
		return conn_close(c);
	}
	arm(c->u_rd, 0);
	set_timer(c, IDLE_TIMEOUT_S * 1000);
	check_first_bytes(c, false);
}

static void conn_io(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress_conn *c = arg;
	bool timeout = what & EV_TIMEOUT;
	ssize_t n;

	if (timeout && c->st != ST_CHECK && !(c->st == ST_HEAD && c->via == PD_VIA_TRANSPARENT)) {
		c->reason = c->st == ST_CONNECT ? "connect timed out"
			    : c->st == ST_PIPE	 ? "idle timeout"
			    : c->st == ST_RESOLVE ? "name resolution timed out"
						 : "timed out waiting for the request";
		if (c->st == ST_CONNECT)
			return connect_next(c);
		return conn_close(c);
	}
	switch (c->st) {
	case ST_HEAD:
	case ST_CHECK:
		if (c->st == ST_CHECK && !timeout && fd == c->ufd)
			return check_server_first(c);
		if (!timeout) {
			n = fill(c);
			if (n == -EAGAIN)
				return arm(c->c_rd, 0);
			/* a client that closes before sending anything: its EOF goes through */
			if (n == 0 && c->st == ST_CHECK && c->len == 0)
				return pipe_start(c, NULL, 0);
			if (n == 0 || (n < 0 && n != -E2BIG)) {
				c->reason = n != 0		? "read error"
					    : c->st == ST_CHECK ? "the client closed in the middle of "
								  "a request head or TLS hello"
								: "the client closed before naming a "
								  "destination";
				return conn_close(c);
			}
		}
		if (c->st == ST_CHECK)
			return check_first_bytes(c, timeout);
		if (c->via == PD_VIA_PROXY)
			return head_proxy(c);
		if (c->via == PD_VIA_SOCKS)
			return head_socks(c);
		return peek_transparent(c, timeout || c->len >= BUF_MAX);
	case ST_ASK:
	case ST_RESOLVE:
		return;
	case ST_CONNECT:
		/*
		 * Only the upstream socket's writability says the connect is done; the client's
		 * read event may still be pending from the peek (it is served again at PIPE).
		 */
		if (fd != c->ufd || !(what & EV_WRITE))
			return;
		return on_connected(c);
	case ST_PIPE:
		return pipe_run(c);
	case ST_BROKER:
		return; /* the relay has the sockets */
	}
}

/* The destination a redirected connection was headed for, from the connection tracker. */
static int original_dst(struct pd_egress_conn *c)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);

	if (c->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (getsockopt(c->cfd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &len) < 0)
			return -errno;
		c->addr_family = AF_INET6;
		memcpy(c->addr, &s6->sin6_addr, 16);
		c->port = ntohs(s6->sin6_port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		if (getsockopt(c->cfd, SOL_IP, SO_ORIGINAL_DST, &ss, &len) < 0)
			return -errno;
		c->addr_family = AF_INET;
		memcpy(c->addr, &s4->sin_addr, 4);
		c->port = ntohs(s4->sin_port);
	}
	c->kind = TARGET_ADDR;
	inet_ntop(c->addr_family, c->addr, c->addr_text, sizeof(c->addr_text));
	return 0;
}

void pd_egress_conn_new(struct pd_egress *eg, int fd, enum pd_egress_via via, int family)
{
	struct pd_egress_conn *c;
	struct event_base *base = eg->ctx->base;

	if (eg->stats.connections_active >= eg->max_conns) {
		/* over the cap: refused before a byte is read, and counted */
		eg->stats.connections_denied++;
		if (via == PD_VIA_PROXY) {
			static const char body[] = "paddock: too many connections open in this "
						   "sandbox (network.max_connections).\n";
			char msg[256];
			int n = snprintf(msg, sizeof(msg),
					 "HTTP/1.1 503 Service Unavailable\r\nContent-Length: %zu\r\n"
					 "Connection: close\r\n\r\n%s",
					 sizeof(body) - 1, body);

			(void)send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (pd_events_wanted(eg->ctx))
			pd_emit(eg->ctx, PADDOCK_LEVEL_WARN, "egress.connection", eg->sandbox_id, NULL,
				json_pack("{s:s, s:s, s:s, s:I}", "via", pd_egress_via_to_string(via),
					  "decision", "deny", "reason",
					  "network.max_connections reached", "max_connections",
					  (json_int_t)eg->max_conns));
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->eg = eg;
	c->via = via;
	c->family = family;
	c->cfd = fd;
	c->ufd = -EBADF;
	c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -EBADF;
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	c->c_rd = event_new(base, fd, EV_READ, conn_io, c);
	c->c_wr = event_new(base, fd, EV_WRITE, conn_io, c);
	c->timer = evtimer_new(base, conn_io, c);
	c->next = eg->conns;
	if (eg->conns)
		eg->conns->prev = c;
	eg->conns = c;
	eg->stats.connections_active++;
	if (!c->c_rd || !c->c_wr || !c->timer) {
		c->reason = "out of memory";
		return conn_close(c);
	}
	c->st = ST_HEAD;
	if (via == PD_VIA_TRANSPARENT) {
		if (original_dst(c) < 0) {
			c->reason = "no original destination";
			return conn_close(c);
		}
		set_timer(c, PEEK_TIMEOUT_MS);
	} else {
		set_timer(c, HEAD_TIMEOUT_S * 1000);
	}
	arm(c->c_rd, 0);
}
