/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pattern search for the secret broker (secret-match.h). Runs in the supervisor on bytes
 * from the sandbox and from servers: every buffer is bounded by the patterns' lengths.
 *
 * The quick skip: most positions of real traffic start no pattern. A bitmap of every
 * pattern's first two bytes (and of first bytes, for the last position of a feed) rejects
 * them with one lookup, so the cost per byte hardly grows with the number of patterns.
 */
#include "secret-match.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#define MIN(a, b)   ((a) < (b) ? (a) : (b))
#define MAX(a, b)   ((a) > (b) ? (a) : (b))
#define PAIRS_BYTES (65536 / 8)

/* ---- byte buffers that wipe what they held ------------------------------------------ */

void pd_wipebuf_release(struct pd_wipebuf *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	*b = (struct pd_wipebuf){ 0 };
}

void pd_wipebuf_clear(struct pd_wipebuf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->len);
	b->len = 0;
}

/* SECURITY: never realloc(): it could leave a copy of substituted data in freed memory. */
int pd_wipebuf_add(struct pd_wipebuf *b, const void *d, size_t n)
{
	if (n > b->cap - b->len) {
		size_t cap = MAX(MAX(b->cap * 2, (size_t)256), b->len + n);
		uint8_t *p;

		if (b->len + n < b->len)
			return -ENOMEM;
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		if (b->len)
			memcpy(p, b->p, b->len);
		if (b->p) {
			explicit_bzero(b->p, b->cap);
			free(b->p);
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

/* ---- pattern sets ------------------------------------------------------------------- */

static bool bit(const uint8_t *map, size_t i)
{
	return map[i >> 3] & (1u << (i & 7));
}

static void set_bit(uint8_t *map, size_t i)
{
	map[i >> 3] |= (uint8_t)(1u << (i & 7));
}

int pd_patset_init(struct pd_patset *ps, size_t cap)
{
	*ps = (struct pd_patset){ .cap = cap };
	ps->pats = calloc(cap ? cap : 1, sizeof(*ps->pats));
	ps->pairs = calloc(1, PAIRS_BYTES);
	if (!ps->pats || !ps->pairs) {
		pd_patset_release(ps);
		return -ENOMEM;
	}
	return 0;
}

static void mark(struct pd_patset *ps, const struct pd_pat *pat)
{
	set_bit(ps->first, pat->p[0]);
	if (pat->len == 1) {
		/* any second byte */
		for (size_t c = 0; c < 256; c++)
			set_bit(ps->pairs, (size_t)pat->p[0] << 8 | c);
	} else {
		set_bit(ps->pairs, (size_t)pat->p[0] << 8 | pat->p[1]);
	}
	ps->maxlen = MAX(ps->maxlen, pat->len);
}

int pd_patset_add(struct pd_patset *ps, const struct pd_pat *pat)
{
	assert(pat->len > 0);
	if (ps->n >= ps->cap)
		return -ENOSPC;
	ps->pats[ps->n++] = *pat;
	mark(ps, pat);
	return 0;
}

void pd_patset_set(struct pd_patset *ps, size_t k, const struct pd_pat *pat)
{
	assert(k < ps->n && pat->len > 0);
	ps->pats[k] = *pat;
	mark(ps, pat);
}

void pd_patset_release(struct pd_patset *ps)
{
	free(ps->pats);
	free(ps->pairs);
	*ps = (struct pd_patset){ 0 };
}

const struct pd_pat *pd_patset_find(const struct pd_patset *ps, const uint8_t *t, size_t len,
				    size_t from, bool longest, size_t *ret_pos)
{
	if (ps->n == 0)
		return NULL;
	for (size_t i = from; i < len; i++) {
		const struct pd_pat *best = NULL;

		if (i + 1 < len ? !bit(ps->pairs, (size_t)t[i] << 8 | t[i + 1])
				: !bit(ps->first, t[i]))
			continue;
		for (size_t k = 0; k < ps->n; k++) {
			const struct pd_pat *p = &ps->pats[k];

			if (p->len > len - i || memcmp(t + i, p->p, p->len) != 0)
				continue;
			if (!best || (longest ? p->len > best->len : p->len < best->len))
				best = p;
		}
		if (best) {
			*ret_pos = i;
			return best;
		}
	}
	return NULL;
}

/* ---- streaming search --------------------------------------------------------------- */

/* What was held back followed by what was fed, seen as one sequence. */
struct view {
	const uint8_t *a, *b;
	size_t alen, blen;
};

static uint8_t view_at(const struct view *v, size_t i)
{
	return i < v->alen ? v->a[i] : v->b[i - v->alen];
}

static bool view_eq(const struct view *v, size_t i, const uint8_t *p, size_t len)
{
	if (i < v->alen) {
		size_t k = MIN(len, v->alen - i);

		if (memcmp(v->a + i, p, k) != 0)
			return false;
		p += k;
		len -= k;
		i = v->alen;
	}
	return len == 0 || memcmp(v->b + (i - v->alen), p, len) == 0;
}

static int view_emit(const struct view *v, size_t from, size_t to, struct evbuffer *out)
{
	if (from >= to)
		return 0;
	if (from < v->alen) {
		size_t e = MIN(to, v->alen);

		if (evbuffer_add(out, v->a + from, e - from) < 0)
			return -ENOMEM;
		from = e;
	}
	if (from < to && evbuffer_add(out, v->b + (from - v->alen), to - from) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * The next position at or after i where a pattern may start (total when none): the quick
 * skip. A position with one byte left is judged by its first byte alone.
 */
static size_t next_candidate(const struct pd_patset *ps, const struct view *v, size_t i,
			     size_t total)
{
	for (; i < v->alen && i < total; i++) {
		if (i + 1 < total ? bit(ps->pairs, (size_t)view_at(v, i) << 8 | view_at(v, i + 1))
				  : bit(ps->first, view_at(v, i)))
			return i;
	}
	if (i >= total)
		return total;
	/* in the fed bytes: a tight loop over one array */
	const uint8_t *b = v->b;
	size_t j = i - v->alen, n = v->blen;

	while (j + 1 < n && !bit(ps->pairs, (size_t)b[j] << 8 | b[j + 1]))
		j++;
	if (j + 1 == n && !bit(ps->first, b[j]))
		return total;
	return j + v->alen;
}

void pd_stream_init(struct pd_stream *st, const struct pd_patset *ps, bool replace)
{
	*st = (struct pd_stream){ .ps = ps, .replace = replace };
}

void pd_stream_reset(struct pd_stream *st)
{
	if (st->tail)
		explicit_bzero(st->tail, st->tail_len);
	st->tail_len = st->tail_emitted = 0;
}

void pd_stream_release(struct pd_stream *st)
{
	pd_stream_reset(st);
	if (st->tail)
		explicit_bzero(st->tail, st->tail_cap);
	free(st->tail);
	st->tail = NULL;
	st->tail_cap = 0;
}

/* Room for what may be held back: the set may have grown since the last run. */
static int tail_room(struct pd_stream *st)
{
	size_t need = MAX(st->ps->maxlen, (size_t)1);
	uint8_t *t;

	if (st->tail_cap >= need)
		return 0;
	t = malloc(need);
	if (!t)
		return -ENOMEM;
	if (st->tail_len)
		memcpy(t, st->tail, st->tail_len);
	if (st->tail) {
		explicit_bzero(st->tail, st->tail_cap);
		free(st->tail);
	}
	st->tail = t;
	st->tail_cap = need;
	return 0;
}

int pd_stream_run(struct pd_stream *st, const uint8_t *in, size_t len, bool final,
		  struct evbuffer *out, const struct pd_pat **ret)
{
	const struct pd_patset *ps = st->ps;
	size_t total, i = 0, done, keep;
	struct view v;
	int r;

	r = tail_room(st);
	if (r < 0)
		return r;
	v = (struct view){ st->tail, in, st->tail_len, len };
	total = st->tail_len + len;
	done = st->tail_emitted;
	while (i < total) {
		const struct pd_pat *best = NULL;
		size_t undecided = 0; /* the longest pattern that may still match at i */

		if (ps->n == 0) {
			i = total;
			break;
		}
		i = next_candidate(ps, &v, i, total);
		if (i >= total)
			break;
		for (size_t k = 0; k < ps->n; k++) {
			const struct pd_pat *p = &ps->pats[k];
			size_t avail = total - i;

			if (p->len <= avail) {
				if (view_eq(&v, i, p->p, p->len) &&
				    (!best ||
				     (st->replace ? p->len > best->len : p->len < best->len)))
					best = p;
			} else if (!final && view_eq(&v, i, p->p, avail)) {
				undecided = MAX(undecided, p->len);
			}
		}
		if (st->replace) {
			if (undecided > (best ? best->len : 0))
				break;
			if (best) {
				r = view_emit(&v, done, i, out);
				if (r < 0)
					return r;
				if (evbuffer_add(out, best->rep, best->rep_len) < 0)
					return -ENOMEM;
				st->replaced++;
				i += best->len;
				done = i;
				continue;
			}
		} else {
			if (best) {
				r = view_emit(&v, done, i, out);
				if (r < 0)
					return r;
				pd_stream_reset(st);
				*ret = best;
				return 1;
			}
			if (undecided)
				break;
		}
		i++;
	}
	r = view_emit(&v, done, i, out);
	if (r < 0)
		return r;
	done = MAX(done, i);

	/* keep the undecided rest: tail[i..] then in[..], or a suffix of in */
	keep = total - i;
	assert(keep < MAX(ps->maxlen, (size_t)1) || keep == 0);
	if (i < st->tail_len) {
		memmove(st->tail, st->tail + i, st->tail_len - i);
		if (len)
			memcpy(st->tail + (st->tail_len - i), in, len);
	} else if (keep) {
		memcpy(st->tail, in + (i - st->tail_len), keep);
	}
	if (st->tail_len > keep) /* the tail held parts of values */
		explicit_bzero(st->tail + keep, st->tail_len - keep);
	st->tail_len = keep;
	st->tail_emitted = done - i;
	return 0;
}

int pd_stream_release_held(struct pd_stream *st, struct evbuffer *out)
{
	if (st->tail_emitted < st->tail_len &&
	    evbuffer_add(out, st->tail + st->tail_emitted, st->tail_len - st->tail_emitted) < 0)
		return -ENOMEM;
	st->tail_emitted = st->tail_len;
	return 0;
}

int pd_stream_set_context(struct pd_stream *st, const uint8_t *ctx, size_t len)
{
	int r = tail_room(st);

	if (r < 0)
		return r;
	assert(len < MAX(st->ps->maxlen, (size_t)1));
	pd_stream_reset(st);
	if (len)
		memcpy(st->tail, ctx, len);
	st->tail_len = st->tail_emitted = len;
	return 0;
}

/* ---- encodings ------------------------------------------------------------------------ */

int pd_b64_encode(const uint8_t *in, size_t len, bool url, struct pd_wipebuf *out)
{
	static const char std[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char urlsafe[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *a = url ? urlsafe : std;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t x = (uint32_t)in[i] << 16;
		size_t n = MIN(len - i, (size_t)3);
		char o[4];
		int r;

		if (n > 1)
			x |= (uint32_t)in[i + 1] << 8;
		if (n > 2)
			x |= in[i + 2];
		o[0] = a[x >> 18 & 63];
		o[1] = a[x >> 12 & 63];
		o[2] = n > 1 ? a[x >> 6 & 63] : '=';
		o[3] = n > 2 ? a[x & 63] : '=';
		x = 0;
		r = pd_wipebuf_add(out, o, 4);
		explicit_bzero(o, sizeof(o));
		if (r < 0)
			return r;
	}
	return 0;
}
