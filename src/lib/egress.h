/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's egress, served by its supervisor (DESIGN.md: Network). Listening sockets live
 * inside the sandbox's netns (init makes them; egress-ports.h has their addresses); this
 * process accepts on them and decides every connection and DNS query outside the sandbox:
 *
 *   egress.c       listeners, policy, counters, the DNS filter and the UDP sink
 *   egress-conn.c  one proxied TCP connection: HTTP proxy (CONNECT and absolute-form),
 *                  SOCKS5 and transparent (SO_ORIGINAL_DST + SNI/Host), then splice(2)
 *   egress-resolve.c  the supervisor's own name resolution, pinned
 *
 * Trust: everything read from these sockets is hostile. Every buffer is bounded, every
 * connection counted against network.max_connections, every phase has a timeout.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "egress-policy.h"
#include "egress-resolve.h"
#include "paddock/paddock.h"

struct event;
struct pd_secrets;
struct ssl_ctx_st;

enum pd_egress_via {
	PD_VIA_PROXY,	    /* HTTP proxy port: CONNECT or absolute-form */
	PD_VIA_SOCKS,	    /* SOCKS5 port */
	PD_VIA_TRANSPARENT, /* redirected by the sandbox's nftables rules */
	PD_VIA_DNS,	    /* the DNS filter (UDP) */
	PD_VIA_SINK,	    /* redirected UDP other than DNS: recorded, dropped */
	_PD_VIA_MAX,
};

const char *pd_egress_via_to_string(enum pd_egress_via v);

#define PD_EGRESS_LISTENERS 8

struct pd_egress_conn;
struct pd_egress_dnsq;
struct pd_egress_ask;

struct pd_egress {
	paddock_sandbox *sb;
	paddock_ctx *ctx;
	const char *sandbox_id;
	struct pd_egress_policy policy;
	unsigned max_conns;
	struct pd_secrets *secrets; /* the sandbox's, borrowed; NULL without secrets */
	int listen_fd[PD_EGRESS_LISTENERS];
	enum pd_egress_via listen_via[PD_EGRESS_LISTENERS];
	struct event *listen_ev[PD_EGRESS_LISTENERS];
	size_t n_listeners;
	struct pd_egress_conn *conns;
	struct pd_egress_dnsq *dnsqs;
	unsigned n_dnsqs;
	struct paddock_egress_stats stats;
	/* addresses the DNS filter answered, and for which name: a redirected connection that
	 * carries no name of its own (ssh, a database protocol) is decided by this one */
	struct pd_egress_answer {
		int family;
		uint8_t addr[16];
		char name[PD_EGRESS_NAME_MAX + 1];
	} * answers;
	size_t n_answers, next_answer;
	/* UDP sink events are rate limited: at most a few per second, the rest counted */
	uint64_t sink_window_s;
	unsigned sink_events_in_window;
	/* decisions a person is asked for (egress-ask.c), oldest first */
	struct pd_egress_ask *asks, *asks_tail;
	unsigned n_asks;
	uint64_t next_ask_id;
	double ask_timeout_s;
	unsigned ask_max_pending;
	struct event *ask_notify; /* tells the context's handler of new decisions, from the loop */
	struct paddock_ask_stats ask_stats;
};

/* Asks init for the listening sockets, binds and serves them. Called at create and adopt. */
int pd_egress_start(paddock_sandbox *sb, struct pd_egress **ret, paddock_error *err);
/* Closes listeners and every connection (each recorded); NULL is fine. */
void pd_egress_free(struct pd_egress *eg);
/*
 * Replaces the policy (taken over); new connections and queries follow it at once, and the
 * connections open that it refuses are closed (each recorded). Returns how many.
 */
unsigned pd_egress_set_policy(struct pd_egress *eg, struct pd_egress_policy *policy);

/*
 * How events and 403s name what decided: the rule as written ("deny " before a deny rule),
 * or "mode open" / "mode allowlist" when no rule matched and the mode decided.
 */
void pd_egress_rule_text(const struct pd_egress *eg, const struct pd_egress_rule *rule, char *buf,
			 size_t size);

/* The name the DNS filter gave this address to most recently, or NULL. */
const char *pd_egress_name_for_addr(const struct pd_egress *eg, int family, const uint8_t *addr);

/* The context's upstream TLS context for interceptions (egress.c), made on first use. */
struct ssl_ctx_st *pd_egress_upstream_tls(paddock_ctx *ctx, paddock_error *err);

/* The context's resolver, made on first use (egress.c). */
struct pd_resolver *pd_egress_resolver(paddock_ctx *ctx, paddock_error *err);

/*
 * egress-ask.c: decisions a person makes (network.unlisted "ask"). A connection the policy
 * wants asked about is held for the decision pending for its destination (one is made if
 * none is): 0, or -EBUSY when ask_max_pending decisions wait already (the connection is
 * refused), -ENOMEM. `host` is the destination's name or address text, `name` says which.
 */
int pd_egress_ask_hold(struct pd_egress *eg, const char *host, bool name, int family,
		       const uint8_t *addr, uint16_t port, enum pd_egress_via via,
		       struct pd_egress_ask **ret);
/* A held connection went away before the decision (its client closed). */
void pd_egress_ask_drop(struct pd_egress_ask *a);
/* The decision as the public API shows it. */
const struct paddock_ask *pd_egress_ask_info(const struct pd_egress_ask *a);
/* The policy changed: decisions it no longer asks about end ("policy"), theirs decided again. */
void pd_egress_ask_recheck(struct pd_egress *eg);
/* Ends every decision (by "sandbox"); the connections are the caller's to close. */
void pd_egress_ask_free_all(struct pd_egress *eg);
/* The ask settings of a spec (network.ask_timeout_s, ask_max_pending) take effect. */
void pd_egress_ask_setup(struct pd_egress *eg, const paddock_spec *spec);
/* The decisions pending, oldest first, at most max (paddock_sandbox_asks()). */
size_t pd_egress_asks(const struct pd_egress *eg, const struct paddock_ask **ret, size_t max);
/* A person's answer to decision id (paddock_sandbox_answer()). */
int pd_egress_answer(struct pd_egress *eg, uint64_t id, enum paddock_ask_answer answer,
		     const char *by, const char *who, paddock_error *err);

/*
 * egress-conn.c: decision `a` ended. Each connection held for it goes ahead (allowed once),
 * is refused (denied, timed out), or with `again` is decided anew by the policy in force (a
 * rule was added, the policy was replaced).
 */
void pd_egress_conn_asked(struct pd_egress *eg, struct pd_egress_ask *a, bool again);

/* egress-conn.c: serves an accepted TCP connection (fd taken over). */
void pd_egress_conn_new(struct pd_egress *eg, int fd, enum pd_egress_via via, int family);
void pd_egress_conn_free_all(struct pd_egress *eg);
/* Decides every open connection again under eg->policy; closes those it refuses: how many. */
unsigned pd_egress_conn_recheck(struct pd_egress *eg);
