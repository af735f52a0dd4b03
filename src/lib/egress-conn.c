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
#include "egress-conn.h"

static void conn_io(evutil_socket_t fd, short what, void *arg);
static void conn_refuse(struct pd_egress_conn *c, const char *reason);
static void conn_resolve(struct pd_egress_conn *c);

/* ---- small pieces ----------------------------------------------------------------------- */

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

void pd_egress_conn_arm(struct event *ev, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	event_add(ev, timeout_ms > 0 ? &tv : NULL);
}

void pd_egress_conn_set_timer(struct pd_egress_conn *c, int timeout_ms)
{
	pd_egress_conn_arm(c->timer, timeout_ms);
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

void pd_egress_conn_set_rule(struct pd_egress_conn *c, const struct pd_egress_rule *rule)
{
	pd_egress_rule_text(c->eg, rule, c->rule, sizeof(c->rule));
}

/* The target as the client gave it: a name, or an address literal. */
void pd_egress_conn_set_target(struct pd_egress_conn *c, const char *host, uint16_t port)
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
			  pd_egress_via_to_string(c->via), "host",
			  c->kind == TARGET_NAME ? c->name : NULL, "address",
			  c->addr_text[0] ? c->addr_text : NULL, "port", (int)c->port, "decision",
			  !c->decided  ? "none"
			  : c->allowed ? "allow"
				       : "deny",
			  "rule", c->rule[0] ? c->rule : NULL, "reason", c->reason, "bytes_out",
			  (json_int_t)c->bytes_out, "bytes_in", (json_int_t)c->bytes_in,
			  "duration_ms", ms_since(&c->t0)));
}

void pd_egress_conn_close(struct pd_egress_conn *c)
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
	bool connected =
		c->st == ST_CONNECT || c->st == ST_CHECK || c->st == ST_PIPE || c->st == ST_BROKER;

	/* allowed by a person, once: while the policy would still ask about it, that stands */
	bool person =
		c->asked_ok && pd_egress_ask_wanted(p, c->kind == TARGET_NAME ? c->name : NULL,
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
			*ret_why = *ret_rule
					   ? "the network policy was replaced: a deny rule matches "
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
		pd_egress_conn_set_rule(c, rule);
		c->decided = true;
		c->allowed = false;
		c->reason = why;
		pd_egress_conn_close(c);
		closed++;
	}
	return closed;
}

void pd_egress_conn_free_all(struct pd_egress *eg)
{
	while (eg->conns) {
		if (!eg->conns->reason)
			eg->conns->reason = "the sandbox ended";
		pd_egress_conn_close(eg->conns);
	}
}

/* Best effort: the client's socket is ours, non-blocking, and the answer is small. */
void pd_egress_conn_send_client(struct pd_egress_conn *c, const void *buf, size_t len)
{
	(void)send(c->cfd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void pd_egress_conn_http_answer(struct pd_egress_conn *c, const char *status, const char *body)
{
	char msg[2048];
	int n;

	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: %s\r\n\r\n%s",
		     status, strlen(body), c->allowed ? "error" : "denied", body);
	if (n > 0)
		pd_egress_conn_send_client(c, msg,
					   (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
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

static void advice_text(const struct pd_egress_conn *c, enum advice a, const char *detail,
			char *buf, size_t size)
{
	char addr[PD_EGRESS_NAME_MAX + 16];

	addr_rule_text(c, addr, sizeof(addr));
	switch (a) {
	case ADVICE_ALLOW_NAME:
		snprintf(buf, size, "ask the operator to allow this destination (--allow %s:%u).",
			 c->name, c->port);
		return;
	case ADVICE_ALLOW_ADDR:
		snprintf(buf, size, "%sask the operator to allow this address (--allow %s).",
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
		snprintf(
			buf, size,
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

void pd_egress_conn_refuse_advice(struct pd_egress_conn *c, const char *reason, enum advice a,
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

		pd_egress_conn_send_client(c, rep,
					   pd_socks5_reply(0x02, rep)); /* not allowed by ruleset */
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
		pd_egress_conn_http_answer(c, "403 Forbidden", body);
	}
	/* TLS or unknown bytes, redirected: nothing it would understand; the close says it */
	pd_egress_conn_close(c);
}

/* A refusal by the policy: the advice follows from the rule that decided, and the target. */
static void conn_refuse(struct pd_egress_conn *c, const char *reason)
{
	enum advice a = strncmp(c->rule, "deny ", 5) == 0 ? ADVICE_DENIED
			: c->kind == TARGET_NAME	  ? ADVICE_ALLOW_NAME
							  : ADVICE_ALLOW_ADDR;

	pd_egress_conn_refuse_advice(c, reason, a, NULL);
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

		pd_egress_conn_send_client(c, rep, pd_socks5_reply(socks_rep, rep));
	} else if ((c->via == PD_VIA_PROXY && c->st != ST_CHECK && c->st != ST_PIPE) ||
		   (c->via == PD_VIA_TRANSPARENT && c->is_http && c->st != ST_PIPE)) {
		snprintf(body, sizeof(body), "paddock: could not reach %s: %s.\n", target, reason);
		pd_egress_conn_http_answer(c, status, body);
	}
	pd_egress_conn_close(c);
}

/* ---- deciding ------------------------------------------------------------------------------ */

static void conn_ask(struct pd_egress_conn *c);

void pd_egress_conn_decide(struct pd_egress_conn *c)
{
	const struct pd_egress_rule *rule = NULL;
	struct pd_egress *eg = c->eg;

	if (c->kind == TARGET_NAME) {
		if (streq(c->name, "invalid."))
			return pd_egress_conn_refuse_advice(
				c, "the host name is malformed", ADVICE_FIX_REQUEST,
				"name the host with letters, digits, '-' and '.'.");
		if (!pd_egress_allow_name(&eg->policy, c->name, c->port, &rule)) {
			pd_egress_conn_set_rule(c, rule);
			if (pd_egress_ask_wanted(&eg->policy, c->name, 0, NULL, c->port))
				return conn_ask(c);
			return conn_refuse(c, rule ? "a deny rule matches"
						   : "no allow rule matches the host and port");
		}
		pd_egress_conn_set_rule(c, rule);
		return conn_resolve(c);
	}
	if (c->kind == TARGET_ADDR) {
		if (!pd_egress_allow_addr(&eg->policy, c->addr_family, c->addr, c->port, false,
					  &rule)) {
			enum pd_addr_class k = pd_addr_classify(c->addr_family, c->addr);

			pd_egress_conn_set_rule(c, rule);
			if (rule)
				return conn_refuse(c, "a deny rule matches");
			if (pd_egress_ask_wanted(&eg->policy, NULL, c->addr_family, c->addr,
						 c->port))
				return conn_ask(c);
			return conn_refuse(
				c, k != PD_ADDR_PUBLIC
					   ? "the address is not public (loopback, private, "
					     "link-local or reserved) and no CIDR rule allows it"
					   : "no CIDR rule allows the address; name the host "
					     "instead");
		}
		pd_egress_conn_set_rule(c, rule);
		c->addrs.n = 1;
		c->addrs.a[0].family = c->addr_family;
		memcpy(c->addrs.a[0].addr, c->addr, 16);
		c->st = ST_RESOLVE;
		return conn_resolve(c);
	}
	return pd_egress_conn_refuse_advice(
		c, "no destination could be read from the connection", ADVICE_FIX_REQUEST,
		"name the destination (a TLS server name or an HTTP Host header).");
}

/* ---- asking a person ----------------------------------------------------------------------- */

static void on_hup(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress_conn *c = arg;

	(void)fd;
	(void)what;
	c->reason = "the client closed while a person was asked";
	pd_egress_conn_close(c);
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
		return pd_egress_conn_refuse_advice(c, c->why, ADVICE_ASK_BUSY, NULL);
	}
	if (r < 0) {
		c->reason = "out of memory";
		return pd_egress_conn_close(c);
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
			pd_egress_conn_decide(
				c); /* the policy in force decides, as for a new connection */
		} else if (p->answer != PADDOCK_ASK_DENY) {
			asked_go(c, p);
		} else if (p->timed_out) {
			snprintf(c->why, sizeof(c->why), "nobody answered within %g s",
				 (double)(p->expires_ms - p->asked_ms) / 1000);
			pd_egress_conn_refuse_advice(c, c->why, ADVICE_ASK_TIMEOUT, NULL);
		} else {
			snprintf(c->why, sizeof(c->why), "answered deny (by %.64s%s%.128s)", p->by,
				 p->who ? ": " : "", p->who ? p->who : "");
			pd_egress_conn_refuse_advice(c, c->why, ADVICE_ASK_DENIED, NULL);
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
			why = "it resolves only to addresses that are not public (loopback, "
			      "private, "
			      "link-local or reserved) and no CIDR rule allows them";
	}
	if (ok.n == 0) {
		c->addr_family = addrs->a[0].family;
		memcpy(c->addr, addrs->a[0].addr, 16);
		inet_ntop(addrs->a[0].family, addrs->a[0].addr, c->addr_text, sizeof(c->addr_text));
		if (deny) {
			pd_egress_conn_set_rule(c, deny);
			why = "a deny rule matches its address";
			return pd_egress_conn_refuse_advice(c, why, ADVICE_DENIED, NULL);
		}
		/* SECURITY: the name is allowed already; what is missing is the address */
		return pd_egress_conn_refuse_advice(c, why, ADVICE_NAME_PRIVATE, NULL);
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
	pd_egress_conn_set_timer(c, HEAD_TIMEOUT_S * 1000);
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
	pd_egress_conn_arm(c->u_wr, 0);
	pd_egress_conn_set_timer(c, CONNECT_TIMEOUT_S * 1000);
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
				pd_egress_conn_arm(d->dst_ev, 0);
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
				pd_egress_conn_arm(d->dst_ev, 0);
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
			pd_egress_conn_arm(d->src_ev, 0);
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
			c->reason =
				r == -EPIPE || r == -ECONNRESET ? "reset by a peer" : "i/o error";
		return pd_egress_conn_close(c);
	}
	pd_egress_conn_set_timer(c, IDLE_TIMEOUT_S * 1000);
}

void pd_egress_conn_pipe_start(struct pd_egress_conn *c, uint8_t *pre_up, size_t pre_up_len)
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
		return pd_egress_conn_close(c);
	}
	c->up.pre = pre_up;
	c->up.pre_len = pre_up_len;
	pipe_run(c);
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
			pre = pd_egress_rewrite_absolute(c, &pre_len);
			if (!pre)
				return conn_fail(c, 0, "502 Bad Gateway", "out of memory");
			if (pd_egress_broker_wanted(c, &tls))
				return pd_egress_broker_start(c, false, pre, pre_len);
			return pd_egress_conn_pipe_start(c, pre, pre_len);
		}
		pd_egress_conn_send_client(c, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
		memmove(c->buf, c->buf + c->head.head_len, c->len - c->head.head_len);
		c->len -= c->head.head_len;
		break;
	case PD_VIA_SOCKS: {
		uint8_t rep[10];

		pd_egress_conn_send_client(c, rep, pd_socks5_reply(0x00, rep));
		break;
	}
	case PD_VIA_TRANSPARENT:
	case PD_VIA_DNS:
	case PD_VIA_SINK:
	case _PD_VIA_MAX:
		if (c->len == 0)
			break; /* decided by its address: its first bytes are checked now */
		pre = pd_egress_take_rest(c, 0, &pre_len);
		if (pd_egress_broker_wanted(c, &tls))
			return pd_egress_broker_start(c, tls, pre, pre_len);
		return pd_egress_conn_pipe_start(c, pre, pre_len);
	}
	/* the first bytes decide, or the server's: whichever side speaks first */
	c->st = ST_CHECK;
	c->head_timer = c->maybe_timer = false;
	c->u_rd = event_new(c->eg->ctx->base, c->ufd, EV_READ, conn_io, c);
	if (!c->u_rd) {
		c->reason = "out of memory";
		return pd_egress_conn_close(c);
	}
	pd_egress_conn_arm(c->u_rd, 0);
	pd_egress_conn_set_timer(c, IDLE_TIMEOUT_S * 1000);
	pd_egress_check_first_bytes(c, false);
}

static void conn_io(evutil_socket_t fd, short what, void *arg)
{
	struct pd_egress_conn *c = arg;
	bool timeout = what & EV_TIMEOUT;
	ssize_t n;

	if (timeout && c->st != ST_CHECK && !(c->st == ST_HEAD && c->via == PD_VIA_TRANSPARENT)) {
		c->reason = c->st == ST_CONNECT	  ? "connect timed out"
			    : c->st == ST_PIPE	  ? "idle timeout"
			    : c->st == ST_RESOLVE ? "name resolution timed out"
						  : "timed out waiting for the request";
		if (c->st == ST_CONNECT)
			return connect_next(c);
		return pd_egress_conn_close(c);
	}
	switch (c->st) {
	case ST_HEAD:
	case ST_CHECK:
		if (c->st == ST_CHECK && !timeout && fd == c->ufd)
			return pd_egress_check_server_first(c);
		if (!timeout) {
			n = pd_egress_fill(c);
			if (n == -EAGAIN)
				return pd_egress_conn_arm(c->c_rd, 0);
			/* a client that closes before sending anything: its EOF goes through */
			if (n == 0 && c->st == ST_CHECK && c->len == 0)
				return pd_egress_conn_pipe_start(c, NULL, 0);
			if (n == 0 || (n < 0 && n != -E2BIG)) {
				c->reason = n != 0 ? "read error"
					    : c->st == ST_CHECK
						    ? "the client closed in the middle of "
						      "a request head or TLS hello"
						    : "the client closed before naming a "
						      "destination";
				return pd_egress_conn_close(c);
			}
		}
		if (c->st == ST_CHECK)
			return pd_egress_check_first_bytes(c, timeout);
		if (c->via == PD_VIA_PROXY)
			return pd_egress_head_proxy(c);
		if (c->via == PD_VIA_SOCKS)
			return pd_egress_head_socks(c);
		return pd_egress_peek_transparent(c, timeout || c->len >= BUF_MAX);
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
			int n = snprintf(
				msg, sizeof(msg),
				"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %zu\r\n"
				"Connection: close\r\n\r\n%s",
				sizeof(body) - 1, body);

			(void)send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (pd_events_wanted(eg->ctx))
			pd_emit(eg->ctx, PADDOCK_LEVEL_WARN, "egress.connection", eg->sandbox_id,
				NULL,
				json_pack("{s:s, s:s, s:s, s:I}", "via",
					  pd_egress_via_to_string(via), "decision", "deny",
					  "reason", "network.max_connections reached",
					  "max_connections", (json_int_t)eg->max_conns));
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
		return pd_egress_conn_close(c);
	}
	c->st = ST_HEAD;
	if (via == PD_VIA_TRANSPARENT) {
		if (original_dst(c) < 0) {
			c->reason = "no original destination";
			return pd_egress_conn_close(c);
		}
		pd_egress_conn_set_timer(c, PEEK_TIMEOUT_MS);
	} else {
		pd_egress_conn_set_timer(c, HEAD_TIMEOUT_S * 1000);
	}
	pd_egress_conn_arm(c->c_rd, 0);
}
