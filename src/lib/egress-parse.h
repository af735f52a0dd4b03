/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the egress proxy reads from a sandbox before it decides anything: the head of an
 * HTTP request (CONNECT, absolute-form, or origin-form with Host), the server name of a
 * TLS ClientHello, and a SOCKS5 greeting and request. All input is hostile: every length is
 * checked against what is there and against a bound, and nothing is copied without both.
 *
 * Every parser takes what has arrived so far: -EAGAIN means "not enough yet" (read more, up
 * to the bound), any other error is final.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress-policy.h"

#define PD_HTTP_HEAD_MAX    (32u << 10) /* request line and headers */
#define PD_HTTP_HEADERS_MAX 100
#define PD_TLS_HELLO_MAX    (16u << 10) /* a ClientHello, over however many records */

enum pd_http_form {
	PD_HTTP_CONNECT,  /* CONNECT host:port */
	PD_HTTP_ABSOLUTE, /* GET http://host[:port]/path */
	PD_HTTP_ORIGIN,	  /* GET /path, with Host: (transparent mode) */
};

struct pd_http_head {
	enum pd_http_form form;
	char method[16];
	char host[PD_EGRESS_NAME_MAX + 1];	  /* as the target says it (a name or an address) */
	uint16_t port;				  /* the target's, or 80 */
	char host_header[PD_EGRESS_NAME_MAX + 1]; /* Host:'s name, "" when absent */
	uint16_t host_header_port;		  /* Host:'s port, 0 when absent */
	size_t target_offset, target_len;	  /* the request target within the buffer */
	size_t head_len;			  /* bytes up to and including the blank line */
};

/*
 * Parses an HTTP/1.x request head. -EAGAIN: no blank line yet (and less than
 * PD_HTTP_HEAD_MAX); -E2BIG: head too big or too many headers; -EPROTO: malformed, with a
 * reason in *ret_why (static text). Only "http://" targets are absolute-form; a Host header
 * is required for origin-form, and at most one is allowed.
 */
int pd_http_head_parse(const char *buf, size_t len, struct pd_http_head *ret_head,
		       const char **ret_why);

/*
 * Whether the first bytes of a stream are an HTTP/1.x request, as the secret broker reads one
 * (secret-subst.h: a method of token characters, any case): 0: they start with a complete,
 * well-formed request line ("METHOD TARGET HTTP/1.x", CRLF or LF, after any empty lines);
 * 1: a request line has begun (a method and its space) but is not complete; -EAGAIN: only
 * token characters so far, which may be a method or a word of another protocol ("ping");
 * -EPROTO: they cannot be one (binary, a text protocol's own line). Decided from the first
 * byte that rules it out, so a protocol that is not HTTP is told apart at once.
 */
int pd_http_request_line_check(const uint8_t *buf, size_t len);

/*
 * The server name of a TLS ClientHello at the start of `buf` (TLS records, type 22).
 * 0 with the name normalised into `name`; -ENOENT: a ClientHello without a server name;
 * -EAGAIN: incomplete; -EPROTO: not TLS or malformed (*ret_why says how).
 */
int pd_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t size, const char **ret_why);

/* ---- SOCKS5 (RFC 1928), no authentication ---- */

#define PD_SOCKS5_CMD_CONNECT	    1 /* the only command paddock serves */
#define PD_SOCKS5_CMD_BIND	    2
#define PD_SOCKS5_CMD_UDP_ASSOCIATE 3

#define PD_SOCKS5_ATYP_IPV4   1
#define PD_SOCKS5_ATYP_DOMAIN 3
#define PD_SOCKS5_ATYP_IPV6   4

/* REP values of a reply */
#define PD_SOCKS5_REP_OK	       0x00
#define PD_SOCKS5_REP_FAILURE	       0x01
#define PD_SOCKS5_REP_NOT_ALLOWED      0x02 /* connection not allowed by ruleset */
#define PD_SOCKS5_REP_NET_UNREACHABLE  0x03
#define PD_SOCKS5_REP_HOST_UNREACHABLE 0x04
#define PD_SOCKS5_REP_REFUSED	       0x05
#define PD_SOCKS5_REP_TTL_EXPIRED      0x06
#define PD_SOCKS5_REP_CMD_UNSUPPORTED  0x07
#define PD_SOCKS5_REP_ATYP_UNSUPPORTED 0x08

#define PD_SOCKS5_METHOD_NOAUTH		 0x00
#define PD_SOCKS5_METHOD_NONE_ACCEPTABLE 0xff
#define PD_SOCKS5_REQUEST_MAX		 (4 + 1 + PD_EGRESS_NAME_MAX + 2) /* the longest request */
#define PD_SOCKS5_REPLY_LEN		 10

/*
 * The greeting: VER=5, NMETHODS (at least 1), METHODS. 0: *ret_len = the bytes it takes
 * (2 + NMETHODS; what follows is not read) and *ret_noauth = whether method 0x00 (no
 * authentication) was offered. -EAGAIN: incomplete; -EPROTO: not SOCKS5 or no methods, with
 * a reason in *ret_why (static text). The answer, VER=5 and the method chosen (0x00, or 0xff
 * for none), is the caller's to send.
 */
int pd_socks5_greeting_parse(const uint8_t *buf, size_t len, size_t *ret_len, bool *ret_noauth,
			     const char **ret_why);

struct pd_socks5_request {
	uint8_t cmd;  /* PD_SOCKS5_CMD_*: BIND and UDP ASSOCIATE parse, the caller refuses them
		       * with PD_SOCKS5_REP_CMD_UNSUPPORTED */
	uint8_t atyp; /* PD_SOCKS5_ATYP_* */
	/*
	 * ATYP domain: the name as given, not normalised, but checked: 1..PD_EGRESS_NAME_MAX
	 * bytes of visible ASCII (no NUL, no space, no control byte). ATYP IPv4/IPv6: the
	 * address in text form (inet_ntop).
	 */
	char host[PD_EGRESS_NAME_MAX + 1];
	uint8_t addr[16]; /* ATYP IPv4/IPv6: the address, network order; zero for a domain */
	int family;	  /* AF_INET, AF_INET6, or AF_UNSPEC for a domain */
	uint16_t port;	  /* host order; 0 is returned as is, the caller decides */
	size_t len;	  /* bytes the request takes; what follows is not read */
};

/*
 * A request: VER=5, CMD, RSV=0, ATYP, DST.ADDR, DST.PORT. 0 with *ret filled; -EAGAIN:
 * incomplete (never more than PD_SOCKS5_REQUEST_MAX bytes are needed); -EPROTO: malformed,
 * an unknown command or address type, or a domain name that is empty, too long or not
 * visible ASCII, with a reason in *ret_why (static text). Each byte is judged as soon as it
 * is there, so a bad one is final however short the input.
 */
int pd_socks5_request_parse(const uint8_t *buf, size_t len, struct pd_socks5_request *ret,
			    const char **ret_why);

/*
 * Builds a reply into out: VER=5, REP=rep, RSV=0, ATYP=IPv4, BND.ADDR=0.0.0.0, BND.PORT=0
 * (paddock does not reveal the address it connects from). Returns its length, 10.
 */
size_t pd_socks5_reply(uint8_t rep, uint8_t out[PD_SOCKS5_REPLY_LEN]);
