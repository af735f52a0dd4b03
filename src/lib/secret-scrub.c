/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The response side of the secret broker (secret-scrub.h). Runs in the supervisor on what a
 * server sends towards a sandbox. The server is trusted with the values bound to it, but
 * what it sends back is read as hostile: its framing decides where one body ends and the
 * next head begins, so it is parsed strictly and anything ambiguous is refused.
 *
 * Scrubbing is two passes over each stream, both bounded by the longest form: the first
 * replaces forms with their stand-ins' (leftmost, longest); the second only looks, and
 * stops the stream at a form the first pass's output still holds (a replacement that,
 * with the bytes around it, spells a form again). That cannot happen with a random
 * placeholder but is not ruled out by construction, and "cannot" is the promise. A form in
 * the first pass's output must overlap one of its replacements (bytes it left unchanged
 * hold none: it would have replaced it), so the second pass starts at a message's first
 * replacement, from the bytes just before it: a response with no value in it costs one.
 *
 * Determinism: as the request side, every decision depends on the bytes, not on how they
 * were split into feeds.
 */
#include "secret-scrub.h"

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
#include "util/base64.h"

#define MIN(a, b)	 ((a) < (b) ? (a) : (b))
#define MAX(a, b)	 ((a) > (b) ? (a) : (b))
#define FORMS_PER_SECRET 12 /* raw, base64 x 6, hex x 2, percent x 2, JSON */
#define CHUNK_LINE_MAX	 4096u
#define RECHUNK		 (16u << 10) /* a chunk's data goes out in pieces of at most this much */

/* ---- stand-ins ------------------------------------------------------------------------- */

static bool alpha(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static bool alnum(uint8_t c)
{
	return alpha(c) || digit(c);
}

/* RFC 3986: never percent-encoded */
static bool unreserved(uint8_t c)
{
	return alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* a JSON string escapes it with a backslash and one letter */
static bool json_short_escape(uint8_t c)
{
	return c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' ||
	       c == '\t';
}

void pd_secret_stand_in(const struct pd_secret *x, uint8_t *out)
{
	const uint8_t *v = x->value, *p = x->placeholder;
	size_t n = x->value_len;
	bool same = x->placeholder_len == n;

	/* the placeholder, when every form of it has the length of the value's */
	for (size_t i = 0; same && i < n; i++)
		same = alnum(v[i]) ? alnum(p[i]) : p[i] == v[i];
	if (same) {
		memcpy(out, p, n);
		return;
	}
	/* the value's shape by class: each form of it is as long as the value's */
	for (size_t i = 0; i < n; i++) {
		uint8_t c = v[i];

		out[i] = alpha(c)		? 'x'
			 : digit(c)		? '0'
			 : unreserved(c)	? '-'
			 : json_short_escape(c) ? '\\'
			 : c < 0x20		? 0x01
						: '*';
	}
}

/* ---- forms ----------------------------------------------------------------------------- */

enum form {
	FORM_RAW,
	FORM_B64,
	FORM_HEX_LOWER,
	FORM_HEX_UPPER,
	FORM_PCT_UPPER,
	FORM_PCT_LOWER,
	FORM_JSON,
};

static int hex_encode(const uint8_t *x, size_t n, bool upper, struct pd_wipebuf *out)
{
	const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		char o[2] = { d[x[i] >> 4], d[x[i] & 15] };
		int r = pd_wipebuf_add(out, o, 2);

		explicit_bzero(o, sizeof(o));
		if (r < 0)
			return r;
	}
	return 0;
}

static int pct_encode(const uint8_t *x, size_t n, bool upper, struct pd_wipebuf *out)
{
	const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		char o[3] = { '%', d[x[i] >> 4], d[x[i] & 15] };
		int r = unreserved(x[i]) ? pd_wipebuf_add(out, x + i, 1)
					 : pd_wipebuf_add(out, o, 3);

		explicit_bzero(o, sizeof(o));
		if (r < 0)
			return r;
	}
	return 0;
}

/* -EINVAL for a value that is not ASCII (an encoder may write \uXXXX for it, or not) */
static int json_encode(const uint8_t *x, size_t n, struct pd_wipebuf *out)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = x[i];
		char o[8];
		int k, r;

		if (c >= 0x80)
			return -EINVAL;
		if (json_short_escape(c)) {
			static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";

			o[0] = '\\';
			o[1] = to[strchr(from, c) - from];
			k = 2;
		} else if (c < 0x20) {
			k = snprintf(o, sizeof(o), "\\u%04x", c);
		} else {
			o[0] = (char)c;
			k = 1;
		}
		r = pd_wipebuf_add(out, o, (size_t)k);
		explicit_bzero(o, sizeof(o));
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The base64 characters x alone decides when it starts `align` bytes into a 3-byte group of
 * a longer text: bits 8*align .. 8*(align+n) of the encoding, whole characters only.
 */
static int b64_core(const uint8_t *x, size_t n, unsigned align, bool url, struct pd_wipebuf *out)
{
	struct pd_wipebuf in = { 0 }, enc = { 0 };
	size_t from = (8 * align + 5) / 6, to = (8 * (align + n)) / 6;
	static const uint8_t zero[2];
	int r;

	r = pd_wipebuf_add(&in, zero, align);
	if (r == 0)
		r = pd_wipebuf_add(&in, x, n);
	if (r == 0)
		r = pd_b64_encode(in.p, in.len, url, &enc);
	if (r == 0 && to > from)
		r = pd_wipebuf_add(out, enc.p + from, to - from);
	pd_wipebuf_release(&in);
	pd_wipebuf_release(&enc);
	return r;
}

/* Form `f` (variant: the base64 alignment, and URL alphabet from 3) of x into out. */
static int encode(enum form f, unsigned variant, const uint8_t *x, size_t n, struct pd_wipebuf *out)
{
	switch (f) {
	case FORM_RAW:
		return pd_wipebuf_add(out, x, n);
	case FORM_B64:
		return b64_core(x, n, variant % 3, variant >= 3, out);
	case FORM_HEX_LOWER:
	case FORM_HEX_UPPER:
		return hex_encode(x, n, f == FORM_HEX_UPPER, out);
	case FORM_PCT_UPPER:
	case FORM_PCT_LOWER:
		return pct_encode(x, n, f == FORM_PCT_UPPER, out);
	case FORM_JSON:
		return json_encode(x, n, out);
	}
	return -EINVAL;
}

/* ---- the scrubber ----------------------------------------------------------------------- */

struct pd_scrub {
	struct pd_patset ps;	  /* every form -> its stand-in's form */
	struct pd_patset raw;	  /* values -> stand-ins: for credentials */
	struct pd_wipebuf *bytes; /* patterns and replacements, in pairs; credentials last */
	size_t n_bytes, cap_bytes;
	size_t cred_base; /* the first credential's pattern in ps, and pair in bytes */
	size_t n_creds, next_cred;
	struct pd_stream replace, verify;
	struct evbuffer *mid; /* the first pass's output */
	/*
	 * The second pass starts at a message's first replacement: bytes the first pass wrote
	 * unchanged hold no form (it would have replaced it), so a form in its output must
	 * overlap a replacement. Until one, the output goes out as it is, and its last bytes
	 * are kept as the context the second pass starts from.
	 */
	bool verifying;
	uint8_t *ctx;
	size_t ctx_len, ctx_cap;
	int err;
};

/* Whether ps already has this pattern. */
static bool have_pattern(const struct pd_patset *ps, const uint8_t *p, size_t len)
{
	for (size_t k = 0; k < ps->n; k++)
		if (ps->pats[k].len == len && memcmp(ps->pats[k].p, p, len) == 0)
			return true;
	return false;
}

/*
 * One form of secret id: its value's and its stand-in's, kept in s->bytes, added to s->ps.
 * 1: added; 0: there is no such form, or it is too short, or already there.
 */
static int add_form(struct pd_scrub *s, size_t id, enum form f, unsigned variant,
		    const uint8_t *value, const uint8_t *stand, size_t n)
{
	struct pd_wipebuf *v = &s->bytes[s->n_bytes], *r = &s->bytes[s->n_bytes + 1];
	int k;

	assert(s->n_bytes + 2 <= s->cap_bytes);
	k = encode(f, variant, value, n, v);
	if (k == 0)
		k = encode(f, variant, stand, n, r);
	if (k == -EINVAL || (k == 0 && (v->len != r->len || v->len == 0 ||
					(f != FORM_RAW && v->len < PD_SCRUB_FORM_MIN) ||
					have_pattern(&s->ps, v->p, v->len)))) {
		/* no such form, or one too short or already there */
		pd_wipebuf_release(v);
		pd_wipebuf_release(r);
		return 0;
	}
	if (k < 0)
		return k;
	s->n_bytes += 2;
	k = pd_patset_add(&s->ps, &(struct pd_pat){ id, v->p, r->p, v->len, r->len });
	return k < 0 ? k : 1;
}

static int add_forms(struct pd_scrub *s, size_t id, const struct pd_secret *x)
{
	uint8_t *stand = malloc(x->value_len);
	int r;

	if (!stand)
		return -ENOMEM;
	pd_secret_stand_in(x, stand);
	r = add_form(s, id, FORM_RAW, 0, x->value, stand, x->value_len);
	if (r > 0) {
		const struct pd_wipebuf *raw_r = &s->bytes[s->n_bytes - 1];

		/* the raw pair, also for reading credentials (its replacement is kept) */
		r = pd_patset_add(&s->raw, &(struct pd_pat){ id, x->value, raw_r->p, x->value_len,
							     x->value_len });
	}
	/* SECURITY: every form a value bound here could have been sent in; one form, of the
	 * raw bytes, for the values of other hosts (nothing here sent them encoded) */
	for (unsigned variant = 0; r >= 0 && x->bound && variant < 6; variant++)
		r = add_form(s, id, FORM_B64, variant, x->value, stand, x->value_len);
	for (enum form f = FORM_HEX_LOWER; r >= 0 && x->bound && f <= FORM_JSON; f++)
		r = add_form(s, id, f, 0, x->value, stand, x->value_len);
	explicit_bzero(stand, x->value_len);
	free(stand);
	return r < 0 ? r : 0;
}

struct pd_scrub *pd_scrub_new(const struct pd_secret *secrets, size_t n)
{
	struct pd_scrub *s;
	size_t cap = n * FORMS_PER_SECRET + PD_SCRUB_CREDENTIALS_MAX;

	if (!pd_secrets_valid(secrets, n)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto oom;
	s->cap_bytes = 2 * cap;
	s->bytes = calloc(s->cap_bytes, sizeof(*s->bytes));
	s->mid = evbuffer_new();
	if (!s->bytes || !s->mid || pd_patset_init(&s->ps, cap) < 0 ||
	    pd_patset_init(&s->raw, n) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (add_forms(s, i, &secrets[i]) < 0)
			goto oom;
	s->cred_base = s->n_bytes;
	pd_stream_init(&s->replace, &s->ps, true);
	pd_stream_init(&s->verify, &s->ps, false);
	return s;
oom:
	pd_scrub_free(s);
	errno = ENOMEM;
	return NULL;
}

struct pd_scrub *pd_scrub_free(struct pd_scrub *s)
{
	if (!s)
		return NULL;
	pd_stream_release(&s->replace);
	pd_stream_release(&s->verify);
	if (s->ctx) {
		explicit_bzero(s->ctx, s->ctx_cap);
		free(s->ctx);
	}
	for (size_t i = 0; s->bytes && i < s->cap_bytes; i++)
		pd_wipebuf_release(&s->bytes[i]);
	free(s->bytes);
	pd_patset_release(&s->ps);
	pd_patset_release(&s->raw);
	if (s->mid)
		evbuffer_free(s->mid);
	free(s);
	return NULL;
}

/* A message ended: the next starts with neither pass holding anything. */
static void message_reset(struct pd_scrub *s)
{
	pd_stream_reset(&s->replace);
	pd_stream_reset(&s->verify);
	(void)evbuffer_drain(s->mid, evbuffer_get_length(s->mid));
	s->verifying = false;
	s->replace.replaced = 0;
	if (s->ctx)
		explicit_bzero(s->ctx, s->ctx_len);
	s->ctx_len = 0;
}

static int scrub_fail(struct pd_scrub *s, int r)
{
	s->err = r;
	message_reset(s);
	return r;
}

/* Keeps the last bytes of mid (after what ctx held) as the second pass's context. */
static int keep_context(struct pd_scrub *s)
{
	size_t want = s->ps.maxlen ? s->ps.maxlen - 1 : 0, n = evbuffer_get_length(s->mid), from;
	struct evbuffer_ptr at;

	if (want > s->ctx_cap) {
		/* the set grew (a credential): room for its longest pattern's context */
		uint8_t *c = malloc(want);

		if (!c)
			return -ENOMEM;
		if (s->ctx_len)
			memcpy(c, s->ctx, s->ctx_len);
		if (s->ctx) {
			explicit_bzero(s->ctx, s->ctx_cap);
			free(s->ctx);
		}
		s->ctx = c;
		s->ctx_cap = want;
	}
	if (n >= want) {
		from = n - want;
		s->ctx_len = 0;
	} else {
		/* the old context's last bytes, then all of mid */
		size_t keep = MIN(s->ctx_len, want - n);

		memmove(s->ctx, s->ctx + s->ctx_len - keep, keep);
		s->ctx_len = keep;
		from = 0;
	}
	if (n - from > 0) {
		if (evbuffer_ptr_set(s->mid, &at, from, EVBUFFER_PTR_SET) < 0 ||
		    evbuffer_copyout_from(s->mid, &at, s->ctx + s->ctx_len, n - from) < 0)
			return -ENOMEM;
		s->ctx_len += n - from;
	}
	return 0;
}

/* The second pass: what the first wrote goes out, unless a form is still in it. */
static int verify(struct pd_scrub *s, bool final, struct evbuffer *out)
{
	const struct pd_pat *p = NULL;
	int r;

	if (!s->verifying && s->replace.replaced == 0) {
		/* nothing replaced in this message yet: nothing to look at again */
		r = keep_context(s);
		if (r < 0 || evbuffer_add_buffer(out, s->mid) < 0)
			return scrub_fail(s, -ENOMEM);
		return 0;
	}
	if (!s->verifying) {
		/* the first replacement: look from the context before it on */
		s->verifying = true;
		r = pd_stream_set_context(&s->verify, s->ctx, s->ctx_len);
		if (r < 0)
			return scrub_fail(s, r);
	}
	while (evbuffer_get_length(s->mid) > 0) {
		struct evbuffer_iovec v;

		if (evbuffer_peek(s->mid, -1, NULL, &v, 1) < 1)
			return scrub_fail(s, -ENOMEM);
		r = pd_stream_run(&s->verify, v.iov_base, v.iov_len, false, out, &p);
		(void)evbuffer_drain(s->mid, v.iov_len);
		if (r < 0)
			return scrub_fail(s, r);
		if (r > 0)
			return scrub_fail(s, -EPERM);
	}
	if (!final || !s->verifying)
		return 0;
	r = pd_stream_run(&s->verify, NULL, 0, true, out, &p);
	if (r < 0)
		return scrub_fail(s, r);
	return r > 0 ? scrub_fail(s, -EPERM) : 0;
}

int pd_scrub_feed(struct pd_scrub *s, const uint8_t *in, size_t len, struct evbuffer *out)
{
	const struct pd_pat *p = NULL;
	int r;

	assert(s && out && (in || len == 0));
	if (s->err)
		return s->err;
	r = pd_stream_run(&s->replace, in, len, false, s->mid, &p);
	if (r < 0)
		return scrub_fail(s, r);
	return verify(s, false, out);
}

int pd_scrub_flush(struct pd_scrub *s, struct evbuffer *out)
{
	const struct pd_pat *p = NULL;
	int r;

	if (s->err)
		return s->err;
	r = pd_stream_run(&s->replace, NULL, 0, true, s->mid, &p);
	if (r < 0)
		return scrub_fail(s, r);
	r = verify(s, true, out);
	if (r == 0)
		message_reset(s);
	return r;
}

void pd_scrub_drop(struct pd_scrub *s)
{
	message_reset(s);
}

size_t pd_scrub_held(const struct pd_scrub *s)
{
	return s->replace.tail_len + s->verify.tail_len;
}

size_t pd_scrub_held_max(const struct pd_scrub *s)
{
	return s->ps.maxlen ? 2 * (s->ps.maxlen - 1) : 0;
}

int pd_scrub_add_credential(struct pd_scrub *s, const uint8_t *token, size_t len)
{
	struct pd_wipebuf shown = { 0 }, sent = { 0 }, shown_enc = { 0 };
	char *plain = NULL;
	size_t plain_len = 0, from = 0, pos, k;
	const struct pd_pat *p;
	int r;

	if (len < PD_SCRUB_FORM_MIN || have_pattern(&s->ps, token, len))
		return 0;
	r = pd_base64_decode((const char *)token, len, &plain, &plain_len);
	if (r < 0)
		return r;
	/* the same credentials with each value's stand-in */
	while (r == 0 &&
	       (p = pd_patset_find(&s->raw, (const uint8_t *)plain, plain_len, from, true, &pos))) {
		r = pd_wipebuf_add(&shown, plain + from, pos - from);
		if (r == 0)
			r = pd_wipebuf_add(&shown, p->rep, p->rep_len);
		from = pos + p->len;
	}
	if (r == 0)
		r = pd_wipebuf_add(&shown, plain + from, plain_len - from);
	explicit_bzero(plain, plain_len);
	free(plain);
	if (r == 0)
		r = pd_b64_encode(shown.p, shown.len, false, &shown_enc);
	if (r == 0)
		r = pd_wipebuf_add(&sent, token, len);
	pd_wipebuf_release(&shown);
	if (r < 0 || shown_enc.len != len || memcmp(shown_enc.p, token, len) == 0) {
		/* no value in it (or a form that is not canonical base64): nothing to scrub */
		pd_wipebuf_release(&sent);
		pd_wipebuf_release(&shown_enc);
		return r;
	}
	k = s->n_creds < PD_SCRUB_CREDENTIALS_MAX ? s->n_creds++ : s->next_cred;
	s->next_cred = (k + 1) % PD_SCRUB_CREDENTIALS_MAX;
	struct pd_pat pat = { SIZE_MAX, sent.p, shown_enc.p, len, len };
	struct pd_wipebuf *slot = &s->bytes[s->cred_base + 2 * k];

	if (s->cred_base / 2 + k < s->ps.n)
		pd_patset_set(&s->ps, s->cred_base / 2 + k, &pat);
	else
		r = pd_patset_add(&s->ps, &pat);
	pd_wipebuf_release(&slot[0]);
	pd_wipebuf_release(&slot[1]);
	slot[0] = sent;
	slot[1] = shown_enc;
	return r;
}

/* ---- HTTP/1.x responses ------------------------------------------------------------------ */

enum rstate {
	R_HEAD,
	R_LENGTH,     /* Content-Length: `remaining` bytes */
	R_CLOSE,      /* the body runs to the close */
	R_CHUNK_SIZE, /* a chunk-size line */
	R_CHUNK_DATA, /* `remaining` bytes of a chunk */
	R_CHUNK_END,  /* the CRLF after a chunk's data */
	R_TRAILERS,   /* the trailer section, up to its blank line */
};

struct pd_response {
	struct pd_scrub *scrub;
	int err;
	const char *why;
	enum rstate st;
	struct pd_wipebuf head;
	bool started;			       /* some of this response went out */
	bool pending[PD_RESPONSE_PENDING_MAX]; /* whether each request waiting was HEAD */
	size_t p_first, p_n;
	uint64_t remaining, chunk_off;
	/* a chunk-size line, or a trailer section */
	struct pd_chunk_line chunk; /* the chunk-size line being read */
	bool cr, line_empty;
	size_t line_bytes;
	struct evbuffer *tmp; /* a chunk's scrubbed data, before its size line */
};

struct pd_response *pd_response_new(const struct pd_secret *secrets, size_t n)
{
	struct pd_response *r = calloc(1, sizeof(*r));

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->scrub = pd_scrub_new(secrets, n);
	r->tmp = r->scrub ? evbuffer_new() : NULL;
	if (!r->tmp) {
		int e = r->scrub ? ENOMEM : errno;

		pd_response_free(r);
		errno = e;
		return NULL;
	}
	return r;
}

struct pd_response *pd_response_free(struct pd_response *r)
{
	if (!r)
		return NULL;
	pd_scrub_free(r->scrub);
	pd_wipebuf_release(&r->head);
	if (r->tmp)
		evbuffer_free(r->tmp);
	free(r);
	return NULL;
}

int pd_response_expect(struct pd_response *r, bool head)
{
	if (r->p_n >= PD_RESPONSE_PENDING_MAX)
		return -E2BIG;
	r->pending[(r->p_first + r->p_n++) % PD_RESPONSE_PENDING_MAX] = head;
	return 0;
}

int pd_response_add_credential(struct pd_response *r, const uint8_t *token, size_t len)
{
	return pd_scrub_add_credential(r->scrub, token, len);
}

bool pd_response_started(const struct pd_response *r)
{
	return r->started;
}

static int rfail(struct pd_response *r, int code, const char *why)
{
	r->err = -code;
	r->why = why;
	pd_scrub_drop(r->scrub);
	return -code;
}

/* What the scrubber said, as the response's error. */
static int scrub_result(struct pd_response *r, int k)
{
	if (k == -EPERM)
		return rfail(r, EPERM,
			     "a secret's value would have reached the sandbox in a form "
			     "the scrubber's own replacements completed");
	if (k < 0)
		return rfail(r, -k, "out of memory");
	return 0;
}

static bool is_chunked(const uint8_t *v, size_t len, void *ud)
{
	unsigned *n = ud;

	(*n)++;
	return pd_http_mem_caseeq(v, len, "chunked");
}

static bool is_identity(const uint8_t *v, size_t len, void *ud)
{
	(void)ud;
	return len == 0 || pd_http_mem_caseeq(v, len, "identity");
}

struct head_info {
	unsigned status;
	bool have_cl, have_te, chunked, coded;
	uint64_t content_length;
};

/* The head is whole: its status and framing, or why it cannot be read. */
static const char *head_parse(const struct pd_wipebuf *h, struct head_info *hi)
{
	const uint8_t *p = h->p, *end = h->p + h->len, *nl;
	bool first = true;

	*hi = (struct head_info){ 0 };
	if (memchr(p, '\0', h->len))
		return "a NUL in a response head";
	for (; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
		size_t len = (size_t)(nl - p), i = 0, e;

		if (len > 0 && p[len - 1] == '\r')
			len--;
		if (memchr(p, '\r', len))
			return "a CR not followed by LF in a response head";
		if (first) {
			/* "HTTP/1.x SSS reason" */
			first = false;
			if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
			    (p[7] != '0' && p[7] != '1') || p[8] != ' ' || !digit(p[9]) ||
			    !digit(p[10]) || !digit(p[11]) || (len > 12 && p[12] != ' '))
				return "not an HTTP/1.x status line";
			hi->status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
				     (unsigned)(p[11] - '0');
			continue;
		}
		if (len == 0)
			break; /* the blank line */
		if (pd_http_ows(p[0]))
			return "a folded header line (obs-fold) in a response";
		while (i < len && pd_http_tchar(p[i]))
			i++;
		if (i == 0 || i == len || p[i] != ':')
			return "a response header that is not 'Name: value'";
		e = i++;
		while (i < len && pd_http_ows(p[i]))
			i++;
		while (len > i && pd_http_ows(p[len - 1]))
			len--;
		if (pd_http_mem_caseeq(p, e, "content-length")) {
			uint64_t v = 0;

			if (!pd_http_content_length(p + i, len - i, &v))
				return "a Content-Length that is not digits only";
			if (hi->have_cl && v != hi->content_length)
				return "two Content-Lengths that differ";
			hi->have_cl = true;
			hi->content_length = v;
		} else if (pd_http_mem_caseeq(p, e, "transfer-encoding")) {
			unsigned n = 0;

			if (hi->have_te || !pd_http_each_element(p + i, len - i, is_chunked, &n) ||
			    n != 1)
				return "a transfer coding other than chunked";
			hi->have_te = hi->chunked = true;
		} else if (pd_http_mem_caseeq(p, e, "content-encoding")) {
			if (!pd_http_each_element(p + i, len - i, is_identity, NULL))
				hi->coded = true;
		}
	}
	if (hi->have_cl && hi->have_te)
		return "both Content-Length and Transfer-Encoding in a response";
	return NULL;
}

/* A message is over: the next head starts. */
static void message_end(struct pd_response *r)
{
	r->st = R_HEAD;
	r->started = false;
	pd_wipebuf_clear(&r->head);
}

/* Scrubs `in` as a whole (a head) into out. */
static int scrub_whole(struct pd_response *r, const uint8_t *in, size_t len, struct evbuffer *out)
{
	int k = pd_scrub_feed(r->scrub, in, len, out);

	if (k == 0)
		k = pd_scrub_flush(r->scrub, out);
	return scrub_result(r, k);
}

static int head_done(struct pd_response *r, struct evbuffer *out)
{
	struct head_info hi;
	const char *why = head_parse(&r->head, &hi);
	bool head_req = false, no_body;
	int k;

	if (why)
		return rfail(r, EPROTO, why);
	/* SECURITY: after a 101 the bytes are another protocol, never read here */
	if (hi.status == 101)
		return rfail(r, EPROTO, "a protocol switch (101)");
	if (hi.status >= 100 && hi.status < 200) {
		/* interim (100 Continue, 103): the final response to the request follows */
		k = scrub_whole(r, r->head.p, r->head.len, out);
		pd_wipebuf_clear(&r->head);
		return k;
	}
	if (r->p_n > 0) {
		head_req = r->pending[r->p_first];
		r->p_first = (r->p_first + 1) % PD_RESPONSE_PENDING_MAX;
		r->p_n--;
	}
	no_body = head_req || hi.status == 204 || hi.status == 304;
	/* SECURITY: a coded body (gzip, br) hides what is in it: it does not go through */
	if (!no_body && hi.coded)
		return rfail(r, EPROTO,
			     "a content coding other than identity: the body cannot be "
			     "checked for secrets");
	k = scrub_whole(r, r->head.p, r->head.len, out);
	if (k < 0)
		return k;
	r->started = true;
	pd_wipebuf_clear(&r->head);
	if (no_body || (hi.have_cl && hi.content_length == 0)) {
		message_end(r);
	} else if (hi.chunked) {
		r->st = R_CHUNK_SIZE;
		pd_chunk_line_reset(&r->chunk);
	} else if (hi.have_cl) {
		r->st = R_LENGTH;
		r->remaining = hi.content_length;
	} else {
		r->st = R_CLOSE;
	}
	return 0;
}

/* Bytes of a head, up to and including its next line end; the blank line ends it. */
static int head_bytes(struct pd_response *r, const uint8_t *in, size_t len, size_t *i,
		      struct evbuffer *out)
{
	static const char start[] = "HTTP/1.";
	const uint8_t *nl = memchr(in + *i, '\n', len - *i);
	size_t n = (nl ? (size_t)(nl - in) + 1 : len) - *i, have = r->head.len;

	/* a response starts "HTTP/1.": anything else is refused at its first byte */
	for (size_t k = 0; have + k < sizeof(start) - 1 && k < n; k++)
		if (in[*i + k] != (uint8_t)start[have + k])
			return rfail(r, EPROTO, "not an HTTP/1.x response");
	if (n > PD_RESPONSE_HEAD_MAX - have)
		return rfail(r, E2BIG, "a response head over the limit");
	if (pd_wipebuf_add(&r->head, in + *i, n) < 0)
		return rfail(r, ENOMEM, "out of memory");
	*i += n;
	n = r->head.len;
	/* the blank line: "\n\n" or "\n\r\n" */
	if (nl && n >= 2 &&
	    (r->head.p[n - 2] == '\n' ||
	     (n >= 3 && r->head.p[n - 2] == '\r' && r->head.p[n - 3] == '\n')))
		return head_done(r, out);
	return 0;
}

/* One byte of a chunk-size line (http-syntax.c); 1 when it ends. */
static int chunk_size_byte(struct pd_response *r, uint8_t c)
{
	const char *why;
	int k = pd_chunk_line_byte(&r->chunk, c, CHUNK_LINE_MAX, &why);

	return k < 0 ? rfail(r, EPROTO, why) : k;
}

/* The scrubbed data of a chunk, as a chunk of its own (when there is any). */
static int chunk_out(struct pd_response *r, struct evbuffer *out)
{
	size_t n = evbuffer_get_length(r->tmp);

	if (n == 0)
		return 0;
	if (evbuffer_add_printf(out, "%zx\r\n", n) < 0 || evbuffer_add_buffer(out, r->tmp) < 0 ||
	    evbuffer_add(out, "\r\n", 2) < 0)
		return rfail(r, ENOMEM, "out of memory");
	return 0;
}

/* Consumes from in[*i]; one state step. */
static int step(struct pd_response *r, const uint8_t *in, size_t len, size_t *i,
		struct evbuffer *out)
{
	size_t n;
	uint8_t c;
	int k;

	switch (r->st) {
	case R_HEAD:
		return head_bytes(r, in, len, i, out);
	case R_LENGTH:
		n = (size_t)MIN((uint64_t)(len - *i), r->remaining);
		k = scrub_result(r, pd_scrub_feed(r->scrub, in + *i, n, out));
		*i += n;
		r->remaining -= n;
		if (k == 0 && r->remaining == 0) {
			k = scrub_result(r, pd_scrub_flush(r->scrub, out));
			message_end(r);
		}
		return k;
	case R_CLOSE:
		n = len - *i;
		*i = len;
		return scrub_result(r, pd_scrub_feed(r->scrub, in + *i - n, n, out));
	case R_CHUNK_SIZE:
		k = chunk_size_byte(r, in[(*i)++]);
		if (k <= 0)
			return k;
		r->line_bytes = 0;
		r->cr = false;
		if (r->chunk.size == 0) {
			/* the last chunk: what the scrubber held back is the body's end */
			k = scrub_result(r, pd_scrub_flush(r->scrub, r->tmp));
			if (k == 0)
				k = chunk_out(r, out);
			r->line_empty = true;
			r->st = R_TRAILERS;
			return k;
		}
		r->remaining = r->chunk.size;
		r->chunk_off = 0;
		pd_chunk_line_reset(&r->chunk);
		r->st = R_CHUNK_DATA;
		return 0;
	case R_CHUNK_DATA:
		/*
		 * Out in pieces of RECHUNK input bytes at most, cut at fixed offsets of the
		 * chunk: what goes out then depends on the bytes only, not on how they came in.
		 */
		n = (size_t)MIN(MIN((uint64_t)(len - *i), r->remaining),
				RECHUNK - r->chunk_off % RECHUNK);
		k = scrub_result(r, pd_scrub_feed(r->scrub, in + *i, n, r->tmp));
		*i += n;
		r->remaining -= n;
		r->chunk_off += n;
		if (k == 0 && (r->remaining == 0 || r->chunk_off % RECHUNK == 0))
			k = chunk_out(r, out);
		if (r->remaining == 0) {
			r->cr = false;
			r->st = R_CHUNK_END;
		}
		return k;
	case R_CHUNK_END:
		c = in[(*i)++];
		if (c == '\r' && !r->cr) {
			r->cr = true;
			return 0;
		}
		if (c != '\n')
			return rfail(r, EPROTO, "chunk data not followed by CRLF");
		r->cr = false;
		r->st = R_CHUNK_SIZE;
		return 0;
	case R_TRAILERS:
		/* SECURITY: trailers are dropped, so nothing in them reaches the sandbox */
		c = in[(*i)++];
		if (++r->line_bytes > PD_RESPONSE_HEAD_MAX)
			return rfail(r, E2BIG, "a trailer section over the limit");
		if (c == '\r')
			return 0;
		if (c != '\n') {
			r->line_empty = false;
			return 0;
		}
		if (!r->line_empty) {
			r->line_empty = true;
			return 0;
		}
		if (evbuffer_add(out, "0\r\n\r\n", 5) < 0)
			return rfail(r, ENOMEM, "out of memory");
		r->line_bytes = 0;
		message_end(r);
		return 0;
	}
	return 0;
}

int pd_response_feed(struct pd_response *r, const uint8_t *in, size_t len, struct evbuffer *out,
		     const char **ret_why)
{
	size_t i = 0;
	int k;

	assert(r && out && (in || len == 0));
	k = r->err;
	while (k == 0 && i < len)
		k = step(r, in, len, &i, out);
	if (k < 0 && ret_why)
		*ret_why = r->why;
	return k;
}

int pd_response_end(struct pd_response *r, struct evbuffer *out, const char **ret_why)
{
	int k = r->err;

	if (k == 0) {
		switch (r->st) {
		case R_CLOSE:
			k = scrub_result(r, pd_scrub_flush(r->scrub, out));
			message_end(r);
			break;
		case R_HEAD:
			if (r->head.len > 0)
				k = rfail(r, EPROTO,
					  "the server closed in the middle of a response head");
			break;
		case R_LENGTH:
		case R_CHUNK_SIZE:
		case R_CHUNK_DATA:
		case R_CHUNK_END:
		case R_TRAILERS:
			/* cut short: the client sees that; what was held back stays here */
			pd_scrub_drop(r->scrub);
			message_end(r);
			break;
		}
	}
	if (k < 0 && ret_why)
		*ret_why = r->why;
	return k;
}
