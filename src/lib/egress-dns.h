/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DNS filter's wire format: a query from inside a sandbox is parsed (one question, no
 * compression in it, bounded), and the answer is built by the supervisor from its own
 * resolution: A/AAAA records for an allowed name, NXDOMAIN or REFUSED for the rest. The
 * sandbox's resolver never talks to a real server.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "egress-policy.h"

#define PD_DNS_MSG_MAX	      512 /* UDP without EDNS; answers are cut to fit, with TC */
#define PD_DNS_TYPE_A	      1
#define PD_DNS_TYPE_AAAA      28
#define PD_DNS_RCODE_NOERROR  0
#define PD_DNS_RCODE_FORMERR  1
#define PD_DNS_RCODE_SERVFAIL 2
#define PD_DNS_RCODE_NXDOMAIN 3
#define PD_DNS_RCODE_NOTIMP   4
#define PD_DNS_RCODE_REFUSED  5

struct pd_dns_query {
	uint16_t id;
	bool rd;			   /* recursion desired, echoed */
	char name[PD_EGRESS_NAME_MAX + 1]; /* normalised */
	uint16_t qtype, qclass;
	size_t question_len; /* bytes of the question section, for echoing it */
};

/*
 * Parses a query (QR=0, OPCODE 0, QDCOUNT 1, no answers). -EPROTO when it is none of that
 * (a FORMERR answer can still be made when at least the header was there: *ret_id).
 */
int pd_dns_query_parse(const uint8_t *msg, size_t len, struct pd_dns_query *ret_query,
		       uint16_t *ret_id);

/*
 * Builds the answer to `q` into out (at most `size`, which is capped at PD_DNS_MSG_MAX):
 * rcode, and for NOERROR the addresses (family AF_INET for A, AF_INET6 for AAAA; 4 or 16
 * bytes each) with `ttl`. Addresses that do not fit are dropped and TC is set. Returns the
 * length, or -ENOSPC.
 */
int pd_dns_answer_build(const struct pd_dns_query *q, int rcode, int family, const uint8_t *addrs,
			size_t n_addrs, uint32_t ttl, uint8_t *out, size_t size);
