/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secret substitution on the egress proxy's HTTP/1.x streams (secret-subst.h). Runs in the
 * supervisor, outside the sandbox; every byte of a request comes from the sandbox and is
 * hostile, so this file does its own strict parsing rather than trust any hint in the data.
 *
 * Request side: a byte-at-a-time head reader (bounded by max_head), then the body framed
 * per RFC 9112 §6 — Content-Length, chunked, or none — tracked exactly, since the next
 * request's head is where the body ends. A head is checked whole before any of it goes out,
 * so a refused request leaves nothing upstream. Bodies either stream through (scanned for
 * placeholders of unbound secrets, holding back only a possible partial match) or, when a
 * bound secret has in_body, are buffered and substituted.
 *
 * The search machinery is secret-match.c's; the response side is secret-scrub.c.
 *
 * Determinism: every decision depends on the bytes, never on how they were split into
 * feeds — a partial match is held until it is decided — so a stream fed in any pieces gives
 * the same output and the same error (the fuzzer checks this).
 */
#include "secret-subst.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "http-syntax.h"
#include "secret-match.h"
#include "secret-scrub.h"
#include "util/base64.h"
#include "util/cleanup.h"

#define MIN(a, b)      ((a) < (b) ? (a) : (b))
#define MAX(a, b)      ((a) > (b) ? (a) : (b))
#define WHERE_NAME_MAX 64 /* of a header name in a "header NAME" use */

static void buf_releasep(struct pd_wipebuf *b)
{
	pd_wipebuf_release(b);
}
#define _cleanup_buf_ _cleanup_(buf_releasep)

/* Where rendered bytes go: an evbuffer, a buf, or nowhere (only counted). */
struct sink {
	struct evbuffer *ev;
	struct pd_wipebuf *b;
	size_t total;
};

static int sink_add(struct sink *k, const void *d, size_t n)
{
	k->total += n;
	if (n == 0)
		return 0;
	if (k->ev)
		return evbuffer_add(k->ev, d, n) < 0 ? -ENOMEM : 0;
	if (k->b)
		return pd_wipebuf_add(k->b, d, n);
	return 0;
}

static int sink_str(struct sink *k, const char *s)
{
	return sink_add(k, s, strlen(s));
}

/* ---- pattern sets ------------------------------------------------------------------- */

enum set {
	SET_UNBOUND, /* placeholders of unbound secrets: a leak */
	SET_BOUND,   /* placeholders of bound secrets -> values */
	SET_BODY,    /* placeholders of bound in_body secrets -> values */
};

static bool in_set(const struct pd_secret *x, enum set set)
{
	switch (set) {
	case SET_UNBOUND:
		return !x->bound;
	case SET_BOUND:
		return x->bound;
	case SET_BODY:
		return x->bound && x->in_body;
	}
	return false;
}

/* The placeholders of a set, each replaced by its value, in secret order. */
static int patset_init(struct pd_patset *ps, const struct pd_secret *secrets, size_t n,
		       enum set set)
{
	int r = pd_patset_init(ps, n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct pd_secret *x = &secrets[i];

		if (in_set(x, set))
			r = pd_patset_add(ps, &(struct pd_pat){ i, x->placeholder, x->value,
								x->placeholder_len, x->value_len });
	}
	return r;
}

/* ---- base64 (RFC 4648), strict: padded, no whitespace, zero pad bits ---------------- */

static int b64_decode(const uint8_t *in, size_t len, struct pd_wipebuf *out)
{
	if (len == 0 || len % 4 != 0)
		return -EPROTO;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int v[4];
		uint8_t o[3];
		size_t n = 3;

		for (size_t k = 0; k < 4; k++) {
			v[k] = pd_base64_value(in[i + k]);
			if (v[k] >= 0)
				continue;
			/* '=' only at the end: "x=" or "xx==" forms of the last quantum */
			if (!last || in[i + k] != '=' || k < 2 || (k == 2 && in[i + 3] != '='))
				return -EPROTO;
			v[k] = 0;
			n = MIN(n, k - 1);
		}
		if ((n == 1 && (v[1] & 0x0f)) || (n == 2 && (v[2] & 0x03)))
			return -EPROTO; /* non-zero pad bits: not the one encoding */
		o[0] = (uint8_t)(v[0] << 2 | v[1] >> 4);
		o[1] = (uint8_t)((v[1] & 0x0f) << 4 | v[2] >> 2);
		o[2] = (uint8_t)((v[2] & 0x03) << 6 | v[3]);
		if (pd_wipebuf_add(out, o, n) < 0)
			return -ENOMEM;
		explicit_bzero(o, sizeof(o));
	}
	return 0;
}

/* ---- HTTP syntax --------------------------------------------------------------------- */

static bool target_char(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

struct line {
	const uint8_t *p;
	size_t len;
};

/* The head is stored as lines ending in '\n' (CRs are not kept). */
static bool next_line(const struct pd_wipebuf *b, size_t *pos, struct line *l)
{
	const uint8_t *nl;

	if (*pos >= b->len)
		return false;
	nl = memchr(b->p + *pos, '\n', b->len - *pos);
	assert(nl);
	l->p = b->p + *pos;
	l->len = (size_t)(nl - l->p);
	*pos += l->len + 1;
	return true;
}

enum hdr {
	H_OTHER,
	H_CONTENT_LENGTH,
	H_TRANSFER_ENCODING,
	H_AUTHORIZATION,
	H_PROXY_AUTHORIZATION,
	H_PROXY_CONNECTION,
	H_UPGRADE,
	H_EXPECT,
	H_ACCEPT_ENCODING,
	H_TE,
};

struct header {
	const uint8_t *name, *value;
	size_t name_len, value_len;
	enum hdr kind;
};

static const char *header_split(const struct line *l, struct header *h)
{
	static const struct {
		const char *name;
		enum hdr kind;
	} known[] = {
		{ "content-length", H_CONTENT_LENGTH },
		{ "transfer-encoding", H_TRANSFER_ENCODING },
		{ "authorization", H_AUTHORIZATION },
		{ "proxy-authorization", H_PROXY_AUTHORIZATION },
		{ "proxy-connection", H_PROXY_CONNECTION },
		{ "upgrade", H_UPGRADE },
		{ "expect", H_EXPECT },
		{ "accept-encoding", H_ACCEPT_ENCODING },
		{ "te", H_TE },
	};
	size_t i = 0, e;

	if (l->len > 0 && pd_http_ows(l->p[0]))
		return "a folded header line (obs-fold)";
	while (i < l->len && pd_http_tchar(l->p[i]))
		i++;
	if (i == 0 || i == l->len || l->p[i] != ':')
		return "headers 'Name: value'";
	*h = (struct header){ .name = l->p, .name_len = i };
	for (size_t k = 0; k < ELEMENTSOF(known); k++)
		if (pd_http_mem_caseeq(l->p, i, known[k].name))
			h->kind = known[k].kind;
	for (size_t k = i + 1; k < l->len; k++)
		if (!pd_http_value_char(l->p[k]))
			return "a control byte in a header value";
	i++;
	e = l->len;
	while (i < e && pd_http_ows(l->p[i]))
		i++;
	while (e > i && pd_http_ows(l->p[e - 1]))
		e--;
	h->value = l->p + i;
	h->value_len = e - i;
	return NULL;
}

struct reqline {
	struct line method, target, version;
	bool http10;
};

static const char *reqline_split(const struct line *l, struct reqline *rl)
{
	size_t i = 0, t;

	while (i < l->len && pd_http_tchar(l->p[i]))
		i++;
	if (i == 0 || i == l->len || l->p[i] != ' ')
		return "not an HTTP/1.x request line";
	rl->method = (struct line){ l->p, i };
	t = ++i;
	while (i < l->len && target_char(l->p[i]))
		i++;
	if (i == t || i == l->len || l->p[i] != ' ')
		return "not an HTTP/1.x request line";
	rl->target = (struct line){ l->p + t, i - t };
	i++;
	rl->version = (struct line){ l->p + i, l->len - i };
	/* the version is case-sensitive (RFC 9112 §2.3) */
	if (rl->version.len != 8 || (memcmp(rl->version.p, "HTTP/1.1", 8) != 0 &&
				     memcmp(rl->version.p, "HTTP/1.0", 8) != 0))
		return "not HTTP/1.0 or HTTP/1.1";
	rl->http10 = rl->version.p[7] == '0';
	/*
	 * SECURITY: a tunnel's bytes after the 2xx are not HTTP, and we would not see it open.
	 * Any case: a lenient server could take "connect" for CONNECT.
	 */
	if (pd_http_mem_caseeq(rl->method.p, rl->method.len, "CONNECT"))
		return "CONNECT inside a proxied connection";
	return NULL;
}

static bool count_chunked(const uint8_t *v, size_t len, void *ud)
{
	unsigned *chunked = ud;

	(*chunked)++;
	return pd_http_mem_caseeq(v, len, "chunked");
}

/* Counts "chunked" in a Transfer-Encoding list; false for any other coding or empty element. */
static bool parse_transfer_encoding(const uint8_t *v, size_t len, unsigned *chunked)
{
	return pd_http_each_element(v, len, count_chunked, chunked);
}

/* ---- the request stream -------------------------------------------------------------- */

enum state {
	ST_HEAD,
	ST_BODY,       /* Content-Length: `remaining` bytes */
	ST_CHUNK_SIZE, /* a chunk-size line */
	ST_CHUNK_DATA, /* `remaining` bytes of a chunk */
	ST_CHUNK_END,  /* the CRLF after a chunk's data */
	ST_TRAILERS,   /* the trailer section, up to its blank line */
};

enum framing { FRAME_NONE, FRAME_LENGTH, FRAME_CHUNKED };

enum use_kind { USE_NONE, USE_REQUEST_LINE, USE_HEADER, USE_BASIC, USE_BODY };

struct use {
	enum use_kind kind;  /* where first substituted in this request */
	const uint8_t *name; /* USE_HEADER: the header's name, in the head buffer */
	size_t name_len;
};

struct pd_subst {
	const struct pd_secret *secrets;
	size_t n, max_head, max_body;
	pd_subst_use_fn fn;
	void *ud;
	struct pd_patset unbound, bound, body_set;
	bool *target_ok, *header_ok; /* may a secret's value go there */
	bool buffer_bodies;	     /* some bound secret has in_body */
	struct pd_response *resp;    /* the connection's response side, borrowed; or NULL */

	int err; /* sticky: -errno */
	size_t err_secret;
	const char *err_why;

	enum state state;
	/* head */
	struct pd_wipebuf head; /* lines ending in '\n', CRs dropped */
	size_t head_bytes;	/* as received, counted against max_head */
	bool cr;		/* the previous byte was a CR: only LF may follow */
	bool line1_done;
	bool line_empty; /* trailers: nothing on this line yet */
	/* the request */
	struct reqline rl;
	enum framing framing;
	uint64_t content_length, remaining;
	struct use *uses;
	/* the body */
	struct pd_wipebuf body;	    /* buffered (dechunked) body */
	struct pd_stream leak;	    /* streamed: placeholders of unbound secrets */
	struct pd_chunk_line chunk; /* the chunk-size line being read */
};

static int fail(struct pd_subst *s, int code, const char *why)
{
	s->err = -code;
	s->err_why = why;
	return -code;
}

static int fail_leak(struct pd_subst *s, size_t id)
{
	s->err_secret = id;
	return fail(s, EPERM, "a placeholder of a secret not bound to this host");
}

static void note_use(struct pd_subst *s, size_t id, enum use_kind kind, const struct header *h)
{
	struct use *u = &s->uses[id];

	if (u->kind != USE_NONE)
		return;
	u->kind = kind;
	if (h) {
		u->name = h->name;
		u->name_len = h->name_len;
	}
}

static bool value_all(const uint8_t *v, size_t len, bool (*ok)(uint8_t))
{
	for (size_t i = 0; i < len; i++)
		if (!ok(v[i]))
			return false;
	return true;
}

/* The engines (this one and secret-scrub.c) need nothing else checked. */
bool pd_secrets_valid(const struct pd_secret *secrets, size_t n)
{
	if (n > 0 && !secrets)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!secrets[i].value || secrets[i].value_len == 0 || !secrets[i].placeholder ||
		    secrets[i].placeholder_len == 0)
			return false;
	return true;
}

struct pd_subst *pd_subst_new(const struct pd_secret *secrets, size_t n, size_t max_head,
			      size_t max_body, pd_subst_use_fn fn, void *ud)
{
	struct pd_subst *s;

	if (max_head == 0 || !pd_secrets_valid(secrets, n)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	*s = (struct pd_subst){ .secrets = secrets,
				.n = n,
				.max_head = max_head,
				.max_body = max_body,
				.fn = fn,
				.ud = ud };
	s->target_ok = calloc(n ? n : 1, sizeof(*s->target_ok));
	s->header_ok = calloc(n ? n : 1, sizeof(*s->header_ok));
	s->uses = calloc(n ? n : 1, sizeof(*s->uses));
	if (!s->target_ok || !s->header_ok || !s->uses ||
	    patset_init(&s->unbound, secrets, n, SET_UNBOUND) < 0 ||
	    patset_init(&s->bound, secrets, n, SET_BOUND) < 0 ||
	    patset_init(&s->body_set, secrets, n, SET_BODY) < 0) {
		pd_subst_free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		s->target_ok[i] = value_all(secrets[i].value, secrets[i].value_len, target_char);
		s->header_ok[i] =
			value_all(secrets[i].value, secrets[i].value_len, pd_http_value_char);
	}
	pd_stream_init(&s->leak, &s->unbound, false);
	s->buffer_bodies = s->body_set.n > 0;
	return s;
}

struct pd_subst *pd_subst_free(struct pd_subst *s)
{
	if (!s)
		return NULL;
	pd_wipebuf_release(&s->head);
	pd_wipebuf_release(&s->body);
	pd_stream_release(&s->leak);
	pd_patset_release(&s->unbound);
	pd_patset_release(&s->bound);
	pd_patset_release(&s->body_set);
	free(s->target_ok);
	free(s->header_ok);
	free(s->uses);
	free(s);
	return NULL;
}

/*
 * Replaces every placeholder of `ps` in t (leftmost, longest) into k; notes the uses.
 * `ok`, if set: a value that may not go here fails the request.
 */
static int replace(struct pd_subst *s, const struct pd_patset *ps, const uint8_t *t, size_t len,
		   struct sink *k, const bool *ok, enum use_kind kind, const struct header *h)
{
	const struct pd_pat *p;
	size_t from = 0, pos;
	int r;

	if (len == 0)
		return 0; /* t may be NULL: an empty buffered body */
	while ((p = pd_patset_find(ps, t, len, from, true, &pos))) {
		if (ok && !ok[p->id])
			return fail(s, EPROTO,
				    kind == USE_REQUEST_LINE
					    ? "a secret's value cannot go in a request target"
					    : "a secret's value cannot go in a header value");
		note_use(s, p->id, kind, h);
		r = sink_add(k, t + from, pos - from);
		if (r < 0)
			return fail(s, -r, "out of memory");
		r = sink_add(k, p->rep, p->rep_len);
		if (r < 0)
			return fail(s, -r, "out of memory");
		from = pos + p->len;
	}
	r = sink_add(k, t + from, len - from);
	if (r < 0)
		return fail(s, -r, "out of memory");
	return 0;
}

/* "Basic" SP+ token68: returns 1 with the credentials' span, 0 for another scheme. */
static int basic_split(const struct header *h, const uint8_t **ret_scheme_end,
		       struct line *ret_cred)
{
	size_t i = 0, c;

	while (i < h->value_len && h->value[i] != ' ')
		i++;
	if (!pd_http_mem_caseeq(h->value, i, "basic"))
		return 0;
	*ret_scheme_end = h->value + i;
	while (i < h->value_len && h->value[i] == ' ')
		i++;
	c = i;
	*ret_cred = (struct line){ h->value + c, h->value_len - c };
	return 1;
}

/*
 * Authorization: Basic: the placeholders are inside the base64. Checks (sink NULL) or
 * renders the header's value into k. SECURITY: credentials that are not strict base64 are
 * refused, not passed on: a lenient decoder upstream could find a placeholder in them.
 */
static int basic_auth(struct pd_subst *s, const struct header *h, struct sink *k, bool render)
{
	_cleanup_buf_ struct pd_wipebuf plain = { 0 }, subst = { 0 }, enc = { 0 };
	const uint8_t *scheme_end;
	struct line cred;
	struct sink ks = { .b = &subst };
	const struct pd_pat *p;
	size_t pos;
	int r;

	if (basic_split(h, &scheme_end, &cred) == 0)
		return 0;
	r = b64_decode(cred.p, cred.len, &plain);
	if (r == -ENOMEM)
		return fail(s, ENOMEM, "out of memory");
	if (r < 0)
		return fail(s, EPROTO, "Authorization: Basic credentials that are not base64");
	if (!render) {
		p = pd_patset_find(&s->unbound, plain.p, plain.len, 0, false, &pos);
		if (p)
			return fail_leak(s, p->id);
	}
	r = replace(s, &s->bound, plain.p, plain.len, render ? &ks : &(struct sink){ 0 }, NULL,
		    USE_BASIC, NULL);
	if (r < 0 || !render)
		return r < 0 ? r : 1;
	r = pd_b64_encode(subst.p, subst.len, false, &enc);
	/* the credentials built here are scrubbed whole from what the server sends back */
	if (r == 0 && s->resp)
		r = pd_response_add_credential(s->resp, enc.p, enc.len);
	if (r < 0)
		return fail(s, ENOMEM, "out of memory");
	if (sink_add(k, h->value, (size_t)(scheme_end - h->value)) < 0 || sink_str(k, " ") < 0 ||
	    sink_add(k, enc.p, enc.len) < 0)
		return fail(s, ENOMEM, "out of memory");
	return 1;
}

static bool header_dropped(const struct pd_subst *s, enum hdr kind)
{
	switch (kind) {
	case H_PROXY_AUTHORIZATION:
	case H_PROXY_CONNECTION:
		return true; /* for the proxy, never forwarded */
	case H_UPGRADE:
		/* SECURITY: after a 101 the bytes are not HTTP and framing could not be tracked */
		return true;
	case H_CONTENT_LENGTH:
	case H_TRANSFER_ENCODING:
	case H_EXPECT:
		/* a buffered body goes with a new Content-Length; nothing waits for a 100 */
		return s->buffer_bodies && s->framing != FRAME_NONE;
	case H_ACCEPT_ENCODING:
	case H_TE:
		/* SECURITY: the response side reads identity bodies only (one added instead) */
		return s->resp != NULL;
	case H_OTHER:
	case H_AUTHORIZATION:
		return false;
	}
	return false;
}

/* The head is complete: everything that can refuse it, before any of it goes out. */
static int head_check(struct pd_subst *s)
{
	struct line l;
	struct header h;
	size_t pos = 0, at;
	unsigned chunked = 0;
	bool have_cl = false, have_te = false;
	const struct pd_pat *p;
	const char *why;
	int r;

	(void)next_line(&s->head, &pos, &l);
	why = reqline_split(&l, &s->rl);
	if (why)
		return fail(s, EPROTO, why);
	while (next_line(&s->head, &pos, &l)) {
		why = header_split(&l, &h);
		if (why)
			return fail(s, EPROTO, why);
		if (h.kind == H_CONTENT_LENGTH) {
			uint64_t v;

			if (!pd_http_content_length(h.value, h.value_len, &v))
				return fail(s, EPROTO, "a Content-Length that is not digits only");
			if (have_cl && v != s->content_length)
				return fail(s, EPROTO, "differing Content-Length headers");
			have_cl = true;
			s->content_length = v;
		} else if (h.kind == H_TRANSFER_ENCODING) {
			have_te = true;
			if (!parse_transfer_encoding(h.value, h.value_len, &chunked))
				return fail(s, EPROTO, "a Transfer-Encoding other than chunked");
		}
	}
	/* SECURITY: request smuggling — any framing two parsers could read differently */
	if (have_te && have_cl)
		return fail(s, EPROTO, "both Content-Length and Transfer-Encoding");
	if (have_te && chunked != 1)
		return fail(s, EPROTO, "a Transfer-Encoding other than chunked");
	if (have_te && s->rl.http10)
		return fail(s, EPROTO, "Transfer-Encoding in HTTP/1.0");
	s->framing = have_te ? FRAME_CHUNKED : have_cl ? FRAME_LENGTH : FRAME_NONE;

	/* SECURITY: anywhere in the head, even in a header we drop: fail closed */
	p = pd_patset_find(&s->unbound, s->head.p, s->head.len, 0, false, &at);
	if (p)
		return fail_leak(s, p->id);

	r = replace(s, &s->bound, s->rl.target.p, s->rl.target.len, &(struct sink){ 0 },
		    s->target_ok, USE_REQUEST_LINE, NULL);
	if (r < 0)
		return r;
	pos = 0;
	(void)next_line(&s->head, &pos, &l);
	while (next_line(&s->head, &pos, &l)) {
		(void)header_split(&l, &h);
		if (header_dropped(s, h.kind))
			continue;
		if (h.kind == H_AUTHORIZATION) {
			r = basic_auth(s, &h, NULL, false);
			if (r < 0)
				return r;
			if (r > 0)
				continue;
		}
		r = replace(s, &s->bound, h.value, h.value_len, &(struct sink){ 0 }, s->header_ok,
			    USE_HEADER, &h);
		if (r < 0)
			return r;
	}
	if (s->buffer_bodies && s->framing == FRAME_LENGTH && s->content_length > s->max_body)
		return fail(s, E2BIG, "a request body over the limit");
	return 0;
}

/* Writes the checked head to out; body_len: the buffered body's, with a framing. */
static int head_render(struct pd_subst *s, struct evbuffer *out, size_t body_len)
{
	struct sink k = { .ev = out };
	struct line l;
	struct header h;
	size_t pos = 0;
	int r;

	/* its response will come in this order: a response to HEAD has no body */
	if (s->resp &&
	    pd_response_expect(s->resp,
			       s->rl.method.len == 4 && memcmp(s->rl.method.p, "HEAD", 4) == 0) < 0)
		return fail(s, E2BIG, "too many requests waiting for their responses");
	if (sink_add(&k, s->rl.method.p, s->rl.method.len) < 0 || sink_str(&k, " ") < 0)
		return fail(s, ENOMEM, "out of memory");
	r = replace(s, &s->bound, s->rl.target.p, s->rl.target.len, &k, NULL, USE_REQUEST_LINE,
		    NULL);
	if (r < 0)
		return r;
	if (sink_str(&k, " ") < 0 || sink_add(&k, s->rl.version.p, s->rl.version.len) < 0 ||
	    sink_str(&k, "\r\n") < 0)
		return fail(s, ENOMEM, "out of memory");
	(void)next_line(&s->head, &pos, &l);
	while (next_line(&s->head, &pos, &l)) {
		(void)header_split(&l, &h);
		if (header_dropped(s, h.kind))
			continue;
		if (sink_add(&k, h.name, h.name_len) < 0 || sink_str(&k, ": ") < 0)
			return fail(s, ENOMEM, "out of memory");
		r = h.kind == H_AUTHORIZATION ? basic_auth(s, &h, &k, true) : 0;
		if (r == 0)
			r = replace(s, &s->bound, h.value, h.value_len, &k, NULL, USE_HEADER, &h);
		if (r < 0)
			return r;
		if (sink_str(&k, "\r\n") < 0)
			return fail(s, ENOMEM, "out of memory");
	}
	if (s->resp && sink_str(&k, "Accept-Encoding: identity\r\n") < 0)
		return fail(s, ENOMEM, "out of memory");
	if (s->buffer_bodies && s->framing != FRAME_NONE) {
		char cl[64];

		(void)snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", body_len);
		if (sink_str(&k, cl) < 0)
			return fail(s, ENOMEM, "out of memory");
	}
	if (sink_str(&k, "\r\n") < 0)
		return fail(s, ENOMEM, "out of memory");
	return 0;
}

static void report_uses(struct pd_subst *s)
{
	_cleanup_free_ char *line = NULL;
	bool oom = false, built = false;
	size_t tl = 0;

	if (!s->fn)
		return;
	while (tl < s->rl.target.len && s->rl.target.p[tl] != '?' && s->rl.target.p[tl] != '#')
		tl++;
	for (size_t i = 0; i < s->n; i++) {
		char where[sizeof("header ") + WHERE_NAME_MAX];
		struct use *u = &s->uses[i];

		if (u->kind == USE_NONE)
			continue;
		if (!line && !oom) {
			line = malloc(s->rl.method.len + tl + s->rl.version.len + 3);
			/* out of memory: the use is still recorded, without its request line */
			oom = !line;
		}
		if (line && !built) {
			size_t n = s->rl.method.len;

			built = true;
			memcpy(line, s->rl.method.p, s->rl.method.len);
			line[n++] = ' ';
			memcpy(line + n, s->rl.target.p, tl);
			n += tl;
			line[n++] = ' ';
			memcpy(line + n, s->rl.version.p, s->rl.version.len);
			line[n + s->rl.version.len] = '\0';
		}
		switch (u->kind) {
		case USE_HEADER:
			/* a header name is token characters only: safe to pass on */
			memcpy(where, "header ", 7);
			memcpy(where + 7, u->name, MIN(u->name_len, (size_t)WHERE_NAME_MAX));
			where[7 + MIN(u->name_len, (size_t)WHERE_NAME_MAX)] = '\0';
			break;
		case USE_REQUEST_LINE:
			strcpy(where, "request-line");
			break;
		case USE_BASIC:
			strcpy(where, "basic-auth");
			break;
		case USE_BODY:
			strcpy(where, "body");
			break;
		case USE_NONE:
			continue;
		}
		s->fn(&(const struct pd_subst_use){ .secret = i, .where = where },
		      line ? line : "(request line unknown: out of memory)", s->ud);
	}
}

/* Ready for the next request on the connection. */
static void request_reset(struct pd_subst *s)
{
	pd_wipebuf_clear(&s->head);
	pd_wipebuf_clear(&s->body);
	pd_stream_reset(&s->leak);
	memset(s->uses, 0, (s->n ? s->n : 1) * sizeof(*s->uses));
	s->rl = (struct reqline){ 0 };
	s->state = ST_HEAD;
	s->head_bytes = 0;
	s->cr = s->line1_done = false;
	s->framing = FRAME_NONE;
	s->content_length = s->remaining = 0;
}

/* A buffered body is complete: check it, then the request goes out whole. */
static int buffered_finish(struct pd_subst *s, struct evbuffer *out)
{
	struct sink count = { 0 }, k = { .ev = out };
	const struct pd_pat *p;
	size_t pos;
	int r;

	p = pd_patset_find(&s->unbound, s->body.p, s->body.len, 0, false, &pos);
	if (p)
		return fail_leak(s, p->id);
	r = replace(s, &s->body_set, s->body.p, s->body.len, &count, NULL, USE_BODY, NULL);
	if (r < 0)
		return r;
	r = head_render(s, out, count.total);
	if (r < 0)
		return r;
	r = replace(s, &s->body_set, s->body.p, s->body.len, &k, NULL, USE_BODY, NULL);
	if (r < 0)
		return r;
	report_uses(s);
	request_reset(s);
	return 0;
}

/* The streamed body's data is complete: decide what the leak scan held back. */
static int streamed_data_end(struct pd_subst *s, struct evbuffer *out)
{
	const struct pd_pat *p = NULL;
	int r = pd_stream_run(&s->leak, NULL, 0, true, out, &p);

	if (r < 0)
		return fail(s, -r, "out of memory");
	if (r > 0)
		return fail_leak(s, p->id);
	return 0;
}

static int request_end(struct pd_subst *s, struct evbuffer *out)
{
	if (s->buffer_bodies)
		return buffered_finish(s, out);
	if (s->framing == FRAME_CHUNKED && evbuffer_add(out, "0\r\n\r\n", 5) < 0)
		return fail(s, ENOMEM, "out of memory");
	request_reset(s);
	return 0;
}

static int head_done(struct pd_subst *s, struct evbuffer *out)
{
	int r = head_check(s);

	if (r < 0)
		return r;
	if (!s->buffer_bodies) {
		r = head_render(s, out, 0);
		if (r < 0)
			return r;
		report_uses(s);
	}
	switch (s->framing) {
	case FRAME_NONE:
		return request_end(s, out);
	case FRAME_LENGTH:
		if (s->content_length == 0)
			return request_end(s, out);
		s->remaining = s->content_length;
		s->state = ST_BODY;
		return 0;
	case FRAME_CHUNKED:
		s->state = ST_CHUNK_SIZE;
		pd_chunk_line_reset(&s->chunk);
		return 0;
	}
	return 0;
}

/* One byte of a head. Returns 1 when the blank line ends it. */
/*
 * The checks every byte of a head or a trailer section passes: the size bound, no NUL, a CR
 * only before LF. 1: a CR, consumed; 0: go on with c; <0: failed.
 */
static int field_byte(struct pd_subst *s, uint8_t c, bool trailer)
{
	if (++s->head_bytes > s->max_head)
		return fail(s, E2BIG,
			    trailer ? "a trailer section over the limit"
				    : "a request head over the limit");
	if (c == '\0')
		return fail(s, EPROTO,
			    trailer ? "a NUL in a trailer section" : "a NUL in a request head");
	if (s->cr && c != '\n')
		return fail(s, EPROTO,
			    trailer ? "a CR not followed by LF in a trailer section"
				    : "a CR not followed by LF in a request head");
	s->cr = c == '\r';
	return c == '\r';
}

static int head_byte(struct pd_subst *s, uint8_t c)
{
	int r = field_byte(s, c, false);

	if (r != 0)
		return r < 0 ? r : 0;
	if (c == '\n') {
		bool empty = s->head.len == 0 || s->head.p[s->head.len - 1] == '\n';

		if (empty && s->head.len == 0)
			return 0; /* empty lines before a request line are ignored (RFC 9112 §2.2)
				   */
		if (empty)
			return 1;
		s->line1_done = true;
	} else if (!s->line1_done && (c < 0x20 || c >= 0x7f)) {
		/* fail early on TLS or binary: a request line is visible ASCII and spaces */
		return fail(s, EPROTO, "not an HTTP/1.x request line");
	}
	if (pd_wipebuf_add(&s->head, &c, 1) < 0)
		return fail(s, ENOMEM, "out of memory");
	return 0;
}

/* One byte of a chunk-size line (http-syntax.c). Returns 1 when it ends. */
static int chunk_size_byte(struct pd_subst *s, uint8_t c)
{
	const char *why;
	int k = pd_chunk_line_byte(&s->chunk, c, PD_SUBST_CHUNK_LINE_MAX, &why);

	return k < 0 ? fail(s, EPROTO, why) : k;
}

static int body_data(struct pd_subst *s, const uint8_t *p, size_t n, struct evbuffer *out)
{
	const struct pd_pat *pat = NULL;
	int r;

	if (s->buffer_bodies) {
		if (n > s->max_body - s->body.len)
			return fail(s, E2BIG, "a request body over the limit");
		if (pd_wipebuf_add(&s->body, p, n) < 0)
			return fail(s, ENOMEM, "out of memory");
		return 0;
	}
	r = pd_stream_run(&s->leak, p, n, false, out, &pat);
	if (r < 0)
		return fail(s, -r, "out of memory");
	if (r > 0)
		return fail_leak(s, pat->id);
	return 0;
}

/* Consumes from in[*i]; one state step. */
static int step(struct pd_subst *s, const uint8_t *in, size_t len, size_t *i, struct evbuffer *out)
{
	size_t n;
	uint8_t c;
	int r;

	switch (s->state) {
	case ST_HEAD:
		r = head_byte(s, in[(*i)++]);
		if (r <= 0)
			return r;
		return head_done(s, out);
	case ST_BODY:
		n = (size_t)MIN((uint64_t)(len - *i), s->remaining);
		r = body_data(s, in + *i, n, out);
		if (r < 0)
			return r;
		*i += n;
		s->remaining -= n;
		if (s->remaining > 0)
			return 0;
		if (!s->buffer_bodies) {
			r = streamed_data_end(s, out);
			if (r < 0)
				return r;
		}
		return request_end(s, out);
	case ST_CHUNK_SIZE:
		r = chunk_size_byte(s, in[(*i)++]);
		if (r <= 0)
			return r;
		s->cr = false;
		if (s->chunk.size == 0) {
			if (!s->buffer_bodies) {
				r = streamed_data_end(s, out);
				if (r < 0)
					return r;
			}
			s->head_bytes = 0; /* trailers are bounded by max_head too */
			s->line_empty = true;
			s->state = ST_TRAILERS;
			return 0;
		}
		if (s->buffer_bodies) {
			if (s->chunk.size > s->max_body - s->body.len)
				return fail(s, E2BIG, "a request body over the limit");
		} else {
			char line[32];
			int k = snprintf(line, sizeof(line), "%" PRIx64 "\r\n", s->chunk.size);

			if (evbuffer_add(out, line, (size_t)k) < 0)
				return fail(s, ENOMEM, "out of memory");
		}
		s->remaining = s->chunk.size;
		pd_chunk_line_reset(&s->chunk);
		s->state = ST_CHUNK_DATA;
		return 0;
	case ST_CHUNK_DATA:
		n = (size_t)MIN((uint64_t)(len - *i), s->remaining);
		r = body_data(s, in + *i, n, out);
		if (r < 0)
			return r;
		*i += n;
		s->remaining -= n;
		if (s->remaining > 0)
			return 0;
		/* the chunk's bytes go out before its CRLF; the scan still sees across */
		if (!s->buffer_bodies && pd_stream_release_held(&s->leak, out) < 0)
			return fail(s, ENOMEM, "out of memory");
		s->cr = false;
		s->state = ST_CHUNK_END;
		return 0;
	case ST_CHUNK_END:
		c = in[(*i)++];
		if (c == '\r' && !s->cr) {
			s->cr = true;
			return 0;
		}
		if (c != '\n')
			return fail(s, EPROTO, "chunk data not followed by CRLF");
		if (!s->buffer_bodies && evbuffer_add(out, "\r\n", 2) < 0)
			return fail(s, ENOMEM, "out of memory");
		s->cr = false;
		s->state = ST_CHUNK_SIZE;
		return 0;
	case ST_TRAILERS:
		/* SECURITY: trailers are dropped, so nothing in them goes upstream */
		c = in[(*i)++];
		r = field_byte(s, c, true);
		if (r != 0)
			return r < 0 ? r : 0;
		if (c != '\n') {
			s->line_empty = false;
			return 0;
		}
		if (!s->line_empty) {
			s->line_empty = true;
			return 0;
		}
		s->cr = false;
		return request_end(s, out);
	}
	return 0;
}

int pd_subst_feed(struct pd_subst *s, const uint8_t *in, size_t len, struct evbuffer *out,
		  size_t *ret_secret, const char **ret_why)
{
	size_t i = 0;
	int r;

	assert(s && out && (in || len == 0));
	r = s->err;
	while (r == 0 && i < len)
		r = step(s, in, len, &i, out);
	if (r < 0) {
		if (ret_secret)
			*ret_secret = s->err_secret;
		if (ret_why)
			*ret_why = s->err_why;
	}
	return r;
}

void pd_subst_set_response(struct pd_subst *s, struct pd_response *r)
{
	s->resp = r;
}
