/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One proxied connection of a sandbox, as egress-conn.c (its life: reading the destination,
 * deciding, connecting, piping) and egress-broker.c (the secret broker: an HTTP relay through
 * the substitution engine and the response scrubber) both see it. Private to the egress half.
 */
#pragma once

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

#define HEAD_TIMEOUT_S	  30	      /* to send a request head or SOCKS request */
#define PEEK_TIMEOUT_MS	  1000	      /* redirected: wait this long for a TLS hello or HTTP head */
#define MAYBE_TIMEOUT_MS  1000	      /* "ping": wait this long for a method's space, then relay */
#define CONNECT_TIMEOUT_S 10	      /* per address */
#define IDLE_TIMEOUT_S	  900	      /* no byte either way */
#define PIPE_SMALL	  (64u << 10) /* the kernel's default; every connection starts here */
#define PIPE_BIG	  (1u << 20)  /* a direction that fills its pipe grows to this, once */
#define PUMP_ROUNDS	  16	      /* chunks per direction per wakeup: fairness between conns */
#define BUF_MAX		  PD_HTTP_HEAD_MAX /* head, hello or peek: never more */
#define streq(a, b)	  (strcmp((a), (b)) == 0)

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
	bool head_timer;  /* a request head or TLS hello has started: HEAD_TIMEOUT_S to finish */
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
	struct pd_secret *view;	  /* the sandbox's secrets, bound or not to this host */
	bool intercepted, leaked;
	bool resp_refused; /* a response was not passed on (secret.response_refused) */
	size_t leak_idx;
};

/* What a refusal tells the client would help (egress-conn.c's advice_text()). */
enum advice {
	ADVICE_ALLOW_NAME,   /* no rule allows the name: --allow NAME:PORT */
	ADVICE_ALLOW_ADDR,   /* an address no CIDR rule allows: --allow ADDR:PORT */
	ADVICE_NAME_PRIVATE, /* the name is allowed, its address is not public */
	ADVICE_DENIED,	     /* a deny rule: nothing to ask for */
	ADVICE_NONE_MODE,    /* mode none: no rule helps */
	ADVICE_FIX_REQUEST,  /* the request itself is wrong: `detail` says how */
	ADVICE_ASK_DENIED,   /* a person was asked (network.unlisted "ask") and said no */
	ADVICE_ASK_TIMEOUT,  /* ... and nobody answered in time */
	ADVICE_ASK_BUSY,     /* too many decisions wait for a person already */
};

/* Closes and frees c, recording it (egress-conn.c). */
void pd_egress_conn_close(struct pd_egress_conn *c);
/* Whether c's first bytes go to the secret broker, and over TLS (egress-broker.c). */
bool pd_egress_broker_wanted(const struct pd_egress_conn *c, bool *ret_tls);
/* Relays c through the broker from here on; pre: bytes read already (egress-broker.c). */
void pd_egress_broker_start(struct pd_egress_conn *c, bool tls, uint8_t *pre, size_t pre_len);

/* Shared by egress-conn.c and egress-head.c (named for the file that defines them). */
void pd_egress_conn_arm(struct event *ev, int timeout_ms);
void pd_egress_conn_refuse_advice(struct pd_egress_conn *c, const char *reason, enum advice a,
				  const char *detail);
void pd_egress_conn_decide(struct pd_egress_conn *c);
void pd_egress_conn_http_answer(struct pd_egress_conn *c, const char *status, const char *body);
void pd_egress_conn_pipe_start(struct pd_egress_conn *c, uint8_t *pre_up, size_t pre_up_len);
void pd_egress_conn_send_client(struct pd_egress_conn *c, const void *buf, size_t len);
void pd_egress_conn_set_rule(struct pd_egress_conn *c, const struct pd_egress_rule *rule);
void pd_egress_conn_set_target(struct pd_egress_conn *c, const char *host, uint16_t port);
void pd_egress_conn_set_timer(struct pd_egress_conn *c, int timeout_ms);
ssize_t pd_egress_fill(struct pd_egress_conn *c);
void pd_egress_head_proxy(struct pd_egress_conn *c);
void pd_egress_head_socks(struct pd_egress_conn *c);
void pd_egress_peek_transparent(struct pd_egress_conn *c, bool timed_out);
void pd_egress_check_first_bytes(struct pd_egress_conn *c, bool timed_out);
void pd_egress_check_server_first(struct pd_egress_conn *c);
/* c's buffered bytes from `from` on, taken out of c (egress-head.c). */
uint8_t *pd_egress_take_rest(struct pd_egress_conn *c, size_t from, size_t *ret_len);
/* An absolute-form proxy request rewritten to origin form, with the rest (egress-head.c). */
uint8_t *pd_egress_rewrite_absolute(struct pd_egress_conn *c, size_t *ret_len);
