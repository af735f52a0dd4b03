/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The head of an HTTP/1.x request as the gate (http-gate.c) reads it, before evhttp does:
 * the request line and the headers that decide whether a body may follow and how it is
 * framed. No I/O and no allocation; fuzzed (tests/fuzz/fuzz-http-head.c).
 *
 * Trust: the bytes come from a client nobody has authenticated. The rules are evhttp's
 * (libevent 2.1.12, http.c) or stricter, so that a head the gate accepts is read by evhttp as
 * the gate read it: the gate finds the next request by the framing it parsed here, and a
 * request evhttp framed otherwise would pass the gate unseen.
 */
#include "http-gate.h"

#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	enum pdd_http_method m;
} methods[] = {
	{ "GET", PDD_M_GET },	      { "POST", PDD_M_POST }, { "PUT", PDD_M_PUT },
	{ "DELETE", PDD_M_DELETE },   { "HEAD", PDD_M_HEAD }, { "PATCH", PDD_M_PATCH },
	{ "OPTIONS", PDD_M_OPTIONS },
};

static int refuse(struct pdd_gate_head *h, int status, const char *code, const char *field,
		  const char *msg)
{
	h->status = status;
	h->code = code;
	h->field = field;
	h->msg = msg;
	return -1;
}

static int malformed(struct pdd_gate_head *h, const char *msg)
{
	return refuse(h, 400, "malformed", "request", msg);
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A line of the head: [start, start + len), without its CR LF. */
struct line {
	const char *p;
	size_t len;
};

/* The next line from *pos; false at the end of the buffer (no LF). */
static bool next_line(const char *buf, size_t n, size_t *pos, struct line *l)
{
	const char *lf = memchr(buf + *pos, '\n', n - *pos);

	if (!lf)
		return false;
	l->p = buf + *pos;
	l->len = (size_t)(lf - l->p);
	if (l->len > 0 && l->p[l->len - 1] == '\r')
		l->len--;
	*pos = (size_t)(lf - buf) + 1;
	return true;
}

static bool eq_ci(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && strncasecmp(p, s, n) == 0;
}

static void trim(const char **p, size_t *n)
{
	while (*n && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

static int request_line(const struct line *l, struct pdd_gate_head *h)
{
	const char *sp1 = memchr(l->p, ' ', l->len), *sp2;
	size_t mlen;

	if (!sp1)
		return malformed(h, "expected a request line 'METHOD /path HTTP/1.1'");
	mlen = (size_t)(sp1 - l->p);
	sp2 = memchr(sp1 + 1, ' ', l->len - mlen - 1);
	if (!sp2 || mlen == 0)
		return malformed(h, "expected a request line 'METHOD /path HTTP/1.1'");
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)l->p[i]))
			return malformed(h, "a method is a token");
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]) && !h->method; i++)
		if (strlen(methods[i].name) == mlen && memcmp(methods[i].name, l->p, mlen) == 0)
			h->method = methods[i].m;
	if (!h->method)
		return refuse(h, 405, "method_not_allowed", "method",
			      "expected GET, POST, PUT, DELETE, HEAD, PATCH or OPTIONS");
	h->target = sp1 + 1;
	h->target_len = (size_t)(sp2 - h->target);
	/* origin-form only: "/path?query", never "//authority" nor an absolute URI */
	if (h->target_len == 0 || h->target[0] != '/' || (h->target_len > 1 && h->target[1] == '/'))
		return malformed(h, "expected a request target '/path'");
	for (size_t i = 0; i < h->target_len; i++)
		if ((unsigned char)h->target[i] < 0x21 || (unsigned char)h->target[i] > 0x7e)
			return malformed(h, "the request target holds a byte that is not printable "
					    "ASCII (percent-encode it)");
	if ((size_t)(l->p + l->len - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return malformed(h, "expected HTTP/1.0 or HTTP/1.1");
	h->minor = sp2[8] - '0';
	return 0;
}

static int content_length(const char *v, size_t n, struct pdd_gate_head *h)
{
	uint64_t x = 0;

	if (h->has_length)
		return malformed(h, "more than one Content-Length");
	if (n == 0 || n > 18)
		return malformed(h, "Content-Length: expected a number of bytes");
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return malformed(h, "Content-Length: expected a number of bytes");
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	h->has_length = true;
	h->content_length = x;
	return 0;
}

/* Connection: a comma-separated list of tokens */
static void connection(const char *v, size_t n, struct pdd_gate_head *h)
{
	while (n) {
		const char *comma = memchr(v, ',', n);
		size_t k = comma ? (size_t)(comma - v) : n;
		const char *t = v;
		size_t tn = k;

		trim(&t, &tn);
		if (eq_ci(t, tn, "close"))
			h->conn_close = true;
		else if (eq_ci(t, tn, "upgrade"))
			h->conn_upgrade = true;
		v += comma ? k + 1 : k;
		n -= comma ? k + 1 : k;
	}
}

/* The headers a policy reads (struct pdd_gate_value fields of the head), by name. */
static struct pdd_gate_value *captured(struct pdd_gate_head *h, const char *name, size_t n)
{
	if (eq_ci(name, n, "Host"))
		return &h->host;
	if (eq_ci(name, n, "X-API-Key"))
		return &h->api_key;
	if (eq_ci(name, n, "X-Access-Token"))
		return &h->access_token;
	if (eq_ci(name, n, "E2b-Sandbox-Id"))
		return &h->sandbox_id;
	if (eq_ci(name, n, "E2b-Sandbox-Port"))
		return &h->sandbox_port;
	return NULL;
}

static int header_line(const struct line *l, struct pdd_gate_head *h)
{
	struct pdd_gate_value *cap;
	const char *colon, *v;
	size_t nlen, vlen;

	if (l->p[0] == ' ' || l->p[0] == '\t')
		return malformed(h, "a folded header line (obsolete line folding)");
	colon = memchr(l->p, ':', l->len);
	if (!colon || colon == l->p)
		return malformed(h, "expected header lines 'Name: value'");
	nlen = (size_t)(colon - l->p);
	for (size_t i = 0; i < nlen; i++)
		if (!is_tchar((unsigned char)l->p[i]))
			return malformed(h, "a header name is a token");
	v = colon + 1;
	vlen = l->len - nlen - 1;
	for (size_t i = 0; i < vlen; i++) {
		unsigned char c = (unsigned char)v[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return malformed(h, "a header value holds a control character");
	}
	trim(&v, &vlen);
	if (eq_ci(l->p, nlen, "Content-Length"))
		return content_length(v, vlen, h);
	if (eq_ci(l->p, nlen, "Transfer-Encoding")) {
		if (h->chunked || !eq_ci(v, vlen, "chunked"))
			return malformed(h, "Transfer-Encoding: only 'chunked' is understood");
		h->chunked = true;
	} else if (eq_ci(l->p, nlen, "Expect")) {
		if (h->expect_continue || !eq_ci(v, vlen, "100-continue"))
			return refuse(h, 417, "invalid", "Expect", "expected '100-continue'");
		h->expect_continue = true;
	} else if (eq_ci(l->p, nlen, "Authorization")) {
		if (h->auth)
			return malformed(h, "more than one Authorization");
		h->auth = v;
		h->auth_len = vlen;
	} else if (eq_ci(l->p, nlen, "Connection")) {
		connection(v, vlen, h);
	} else if (eq_ci(l->p, nlen, "Upgrade")) {
		h->upgrade = vlen > 0;
	} else if ((cap = captured(h, l->p, nlen))) {
		if (cap->p)
			return malformed(h, "a header that may come once came twice (Host, "
					    "X-API-Key, X-Access-Token, E2b-Sandbox-Id or -Port)");
		cap->p = v;
		cap->len = vlen;
	}
	return 0;
}

int pdd_gate_head_parse(const char *buf, size_t len, struct pdd_gate_head *h)
{
	struct line l;
	size_t pos = 0;
	bool first = true, ended = false;

	memset(h, 0, sizeof(*h));
	if (memchr(buf, '\0', len))
		return malformed(h, "the request head holds a NUL byte");
	while (!ended && next_line(buf, len, &pos, &l)) {
		int r;

		if (first) {
			r = request_line(&l, h);
			first = false;
		} else if (l.len == 0) {
			ended = true;
			continue;
		} else {
			r = header_line(&l, h);
		}
		if (r < 0)
			return r;
	}
	if (first || !ended || pos != len)
		return malformed(h, "the request head is incomplete");
	if (h->has_length && h->chunked)
		return malformed(h, "both Content-Length and Transfer-Encoding");
	/* an upgrade turns the connection into a raw stream right after its head */
	if (h->method == PDD_M_GET && h->upgrade && h->conn_upgrade &&
	    (h->chunked || h->content_length > 0))
		return malformed(h, "an upgrade request has no body");
	/* evhttp reads no body after HEAD: a body there would be read as the next request */
	if (h->method == PDD_M_HEAD && (h->chunked || h->content_length > 0))
		return malformed(h, "a HEAD request has no body");
	return 0;
}

int pdd_gate_chunk_size(const char *line, size_t len, uint64_t *ret_size)
{
	uint64_t x = 0;
	size_t i = 0;

	for (; i < len; i++) {
		char c = line[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (i >= 15)
			return -1; /* 2^60 bytes and more: no body here is that large */
		x = x * 16 + d;
	}
	if (i == 0)
		return -1;
	for (; i < len; i++)
		if (line[i] != ' ')
			return -1; /* no chunk extensions: evhttp would not read them either */
	*ret_size = x;
	return 0;
}
