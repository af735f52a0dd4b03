/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the egress proxy reads from a sandbox before it decides anything: the head of an
 * HTTP request (CONNECT, absolute-form, or origin-form with Host) and the server name of a
 * TLS ClientHello. Both inputs are hostile: every length is checked against what is there
 * and against a bound, and nothing is copied without both.
 *
 * Both parsers take what has arrived so far: -EAGAIN means "not enough yet" (read more, up
 * to the bound), any other error is final.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "egress-policy.h"

#define PD_HTTP_HEAD_MAX (32u << 10) /* request line and headers */
#define PD_HTTP_HEADERS_MAX 100
#define PD_TLS_HELLO_MAX (16u << 10) /* a ClientHello, over however many records */

enum pd_http_form {
	PD_HTTP_CONNECT,  /* CONNECT host:port */
	PD_HTTP_ABSOLUTE, /* GET http://host[:port]/path */
	PD_HTTP_ORIGIN,	  /* GET /path, with Host: (transparent mode) */
};

struct pd_http_head {
	enum pd_http_form form;
	char method[16];
	char host[PD_EGRESS_NAME_MAX + 1]; /* as the target says it (a name or an address) */
	uint16_t port;			    /* the target's, or 80 */
	char host_header[PD_EGRESS_NAME_MAX + 1]; /* Host:'s name, "" when absent */
	uint16_t host_header_port;		   /* Host:'s port, 0 when absent */
	size_t target_offset, target_len; /* the request target within the buffer */
	size_t head_len;		  /* bytes up to and including the blank line */
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
 * The server name of a TLS ClientHello at the start of `buf` (TLS records, type 22).
 * 0 with the name normalised into `name`; -ENOENT: a ClientHello without a server name;
 * -EAGAIN: incomplete; -EPROTO: not TLS or malformed (*ret_why says how).
 */
int pd_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t size,
		     const char **ret_why);
