/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DNS messages of the DNS filter (egress-dns.h), RFC 1035 wire format. Written by hand:
 * libevent's evdns can serve queries, but it reads them with its own socket and answers
 * through its own callbacks; the filter needs the question as data it decides on (from a
 * socket made inside the sandbox's netns) and answers only from the supervisor's own
 * resolution. Queries are small and strict: one question, no compression pointers in it,
 * labels of at most 63 bytes, names of at most 253.
 *
 * Trust: every query comes from inside a sandbox.
 */
#include "egress-dns.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int pd_dns_query_parse(const uint8_t *msg, size_t len, struct pd_dns_query *ret_query,
		       uint16_t *ret_id)
{
	struct pd_dns_query q = { 0 };
	char raw[PD_EGRESS_NAME_MAX + 2];
	size_t off = 12, n = 0;
	uint16_t flags;

	if (len < 12 || len > PD_DNS_MSG_MAX)
		return -EPROTO;
	q.id = be16(msg);
	*ret_id = q.id;
	flags = be16(msg + 2);
	if ((flags & 0x8000) || ((flags >> 11) & 0xf) != 0)
		return -EPROTO; /* a response, or not a standard query */
	q.rd = flags & 0x0100;
	/* one question, nothing else (an EDNS OPT record in ARCOUNT is tolerated) */
	if (be16(msg + 4) != 1 || be16(msg + 6) != 0 || be16(msg + 8) != 0 || be16(msg + 10) > 1)
		return -EPROTO;
	for (;;) {
		unsigned l;

		if (off >= len)
			return -EPROTO;
		l = msg[off++];
		if (l == 0)
			break;
		if (l > 63 || off + l > len)
			return -EPROTO; /* 0xc0: a compression pointer, not in a question */
		if (n + l + 1 > PD_EGRESS_NAME_MAX + 1)
			return -EPROTO;
		if (n)
			raw[n++] = '.';
		for (unsigned i = 0; i < l; i++) {
			char c = (char)msg[off + i];

			if (c == '.' || c == '\0')
				return -EPROTO; /* a label that would change the name's meaning */
			raw[n++] = c;
		}
		off += l;
	}
	raw[n] = '\0';
	if (n == 0 || pd_egress_name_normalise(raw, q.name, sizeof(q.name)) < 0)
		return -EPROTO;
	if (off + 4 > len)
		return -EPROTO;
	q.qtype = be16(msg + off);
	q.qclass = be16(msg + off + 2);
	q.question_len = off + 4 - 12;
	*ret_query = q;
	return 0;
}

/* The question section, rebuilt from the parsed query (never copied from the input). */
static size_t put_question(const struct pd_dns_query *q, uint8_t *out)
{
	size_t o = 0;
	const char *label = q->name;

	while (*label) {
		const char *dot = strchr(label, '.');
		size_t l = dot ? (size_t)(dot - label) : strlen(label);

		out[o++] = (uint8_t)l;
		memcpy(out + o, label, l);
		o += l;
		label += l + (dot ? 1 : 0);
	}
	out[o++] = 0;
	put16(out + o, q->qtype);
	put16(out + o + 2, q->qclass);
	return o + 4;
}

int pd_dns_answer_build(const struct pd_dns_query *q, int rcode, int family, const uint8_t *addrs,
			size_t n_addrs, uint32_t ttl, uint8_t *out, size_t size)
{
	size_t alen = family == AF_INET ? 4 : 16, o, count = 0;
	uint16_t flags = 0x8000 | 0x0080 | (uint16_t)(rcode & 0xf); /* QR, RA */
	uint16_t type = family == AF_INET ? PD_DNS_TYPE_A : PD_DNS_TYPE_AAAA;

	if (size > PD_DNS_MSG_MAX)
		size = PD_DNS_MSG_MAX;
	/* header + question: the name is at most 253 + 2 bytes, so 12 + 259 always fits 512 */
	if (size < 12 + strlen(q->name) + 2 + 4)
		return -ENOSPC;
	if (q->rd)
		flags |= 0x0100;
	memset(out, 0, 12);
	put16(out, q->id);
	put16(out + 4, 1);
	o = 12 + put_question(q, out + 12);
	if (rcode == PD_DNS_RCODE_NOERROR && (family == AF_INET || family == AF_INET6) &&
	    q->qtype == type) {
		for (size_t i = 0; i < n_addrs; i++) {
			if (o + 12 + alen > size) {
				flags |= 0x0200; /* TC: the rest did not fit */
				break;
			}
			put16(out + o, 0xc00c); /* the name: a pointer to the question's */
			put16(out + o + 2, type);
			put16(out + o + 4, 1); /* IN */
			out[o + 6] = (uint8_t)(ttl >> 24);
			out[o + 7] = (uint8_t)(ttl >> 16);
			out[o + 8] = (uint8_t)(ttl >> 8);
			out[o + 9] = (uint8_t)ttl;
			put16(out + o + 10, (uint16_t)alen);
			memcpy(out + o + 12, addrs + i * alen, alen);
			o += 12 + alen;
			count++;
		}
	}
	put16(out + 2, flags);
	put16(out + 6, (uint16_t)count);
	return (int)o;
}
