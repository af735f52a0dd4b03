/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The secret broker's search machinery (secret-subst.c, secret-scrub.c): sets of byte
 * patterns, each with its replacement, searched in a buffer or over a stream fed in pieces;
 * and byte buffers that wipe what they held. No I/O, no policy: what the patterns are and
 * what a match means is the caller's.
 *
 * A stream search decides each position from the bytes alone, never from how they were
 * split into feeds: a position where a pattern may still match is held back (fewer than the
 * longest pattern's length) until it is decided. Patterns and replacements are borrowed:
 * they must outlive the set. Held-back bytes are wiped when they go.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* ---- byte buffers that wipe what they held ------------------------------------------ */

struct pd_wipebuf {
	uint8_t *p;
	size_t len, cap;
};

/* Appends; never realloc()s, so no copy is left in freed memory. 0 or -ENOMEM. */
int pd_wipebuf_add(struct pd_wipebuf *b, const void *d, size_t n);
/* Wipes the content, keeps the memory. */
void pd_wipebuf_clear(struct pd_wipebuf *b);
/* Wipes and frees; the buffer is empty after. */
void pd_wipebuf_release(struct pd_wipebuf *b);

/* ---- pattern sets --------------------------------------------------------------------- */

struct pd_pat {
	size_t id;		/* the caller's: which secret */
	const uint8_t *p, *rep; /* the pattern and what replaces it */
	size_t len, rep_len;
};

struct pd_patset {
	struct pd_pat *pats; /* in the order added: the earlier wins a tie */
	size_t n, cap, maxlen;
	uint8_t first[32]; /* bitmap of the patterns' first bytes */
	uint8_t *pairs;	   /* bitmap of their first two bytes (8 KiB): the quick skip */
};

/* An empty set with room for `cap` patterns. 0 or -ENOMEM. */
int pd_patset_init(struct pd_patset *ps, size_t cap);
/* Adds a pattern (len >= 1; borrowed); -ENOSPC when full. */
int pd_patset_add(struct pd_patset *ps, const struct pd_pat *pat);
/* Puts a pattern in place of pattern k (< n); the bitmaps keep the old one's bits. */
void pd_patset_set(struct pd_patset *ps, size_t k, const struct pd_pat *pat);
void pd_patset_release(struct pd_patset *ps);

/*
 * The leftmost occurrence in t[from, len) of a pattern; at that position the longest (or
 * the shortest) that matches, the earlier on a tie. NULL when none.
 */
const struct pd_pat *pd_patset_find(const struct pd_patset *ps, const uint8_t *t, size_t len,
				    size_t from, bool longest, size_t *ret_pos);

/* ---- streams ------------------------------------------------------------------------- */

/*
 * A search over a stream. `tail` holds the bytes from the first position not yet decided:
 * one where a pattern matches what has arrived so far but needs more — so fewer than the
 * set's maxlen bytes. tail_emitted of them (a prefix) were already written out: a chunk
 * boundary forces them out but they still count for a match across it.
 */
struct pd_stream {
	const struct pd_patset *ps; /* borrowed; it may grow between runs */
	bool replace;		    /* replace matches; else stop at the first */
	uint8_t *tail;
	size_t tail_len, tail_emitted, tail_cap;
	uint64_t replaced; /* how many matches it replaced so far */
};

void pd_stream_init(struct pd_stream *st, const struct pd_patset *ps, bool replace);
/* Forgets (and wipes) what is held back. */
void pd_stream_reset(struct pd_stream *st);
void pd_stream_release(struct pd_stream *st);

/*
 * Scans what is held back, then `in`. At each position, in order: a replacing stream
 * replaces the longest pattern that matches there, or holds back if a longer one may still
 * match; a stopping stream stops at the shortest pattern that matches there (returns 1,
 * *ret its pattern, with everything before it written out, nothing held back), or holds back
 * if one may still match. `final`: no more bytes follow, nothing is held back. 0, 1, or
 * -ENOMEM.
 */
int pd_stream_run(struct pd_stream *st, const uint8_t *in, size_t len, bool final,
		  struct evbuffer *out, const struct pd_pat **ret);
/* Writes out what is held back without deciding it: it still counts for a match. */
int pd_stream_release_held(struct pd_stream *st, struct evbuffer *out);
/*
 * Makes `ctx` (at most the set's maxlen - 1 bytes, already written out) what the stream
 * holds back: matches that begin there and end in what is fed next are found. For a stream
 * that did not see the bytes before, when only what follows them needs looking at.
 */
int pd_stream_set_context(struct pd_stream *st, const uint8_t *ctx, size_t len);

/* ---- encodings ------------------------------------------------------------------------ */

/* Base64 (RFC 4648) of in, padded, the standard alphabet or the URL one, appended to out. */
int pd_b64_encode(const uint8_t *in, size_t len, bool url, struct pd_wipebuf *out);
