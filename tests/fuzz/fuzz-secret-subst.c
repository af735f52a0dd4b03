/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes secret substitution with what a sandbox could send on a proxied connection: any
 * bytes. The first byte picks the configuration (whether a bound secret substitutes in
 * bodies) and the points where the rest is split into feeds.
 *
 * Invariants: a placeholder of an unbound secret never reaches the output whole; feeding in
 * one piece or split gives the same output, status and use records; no use record holds a
 * value. The response side, on the same bytes, as a byte stream (pd_scrub) and as HTTP
 * responses (pd_response): no form of a bound value (raw, base64, hex, percent-encoded;
 * computed here independently), no unbound value and no Basic credentials built with a
 * value in its output, whether it ended well or not; the same output and status however
 * split; never more held back than it says.
 *
 * The secrets are chosen so the request side's invariants can be checked by a plain search:
 * placeholders are "${UPPER}" and values lower case, so neither can be made from pieces of
 * the other. The response side's stand-ins (of values shaped unlike their placeholders) are
 * x's, 0's and dashes, which base64 and hex forms can be made of: that it still holds is its
 * second pass's doing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "secret-scrub.h"
#include "secret-subst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S(v, p, bound, in_body)                                                                    \
	{                                                                                          \
#p, (const uint8_t *)(v), sizeof(v) - 1, (const uint8_t *)(p), sizeof(p) - 1,      \
			(bound), (in_body)                                                         \
	}

/* [2].in_body is switched by the first byte */
static const struct pd_secret secrets_streamed[] = {
	S("ghp-real-value-0", "${GH_TOKEN_0}", true, false),
	S("npm-real-1", "${NPM_TOK}", false, false),
	S("short-v", "${BODY_SECRET_LONG}", true, false),
	S("aws-secret-value-much-longer", "${A}", false, false),
};
static const struct pd_secret secrets_buffered[] = {
	S("ghp-real-value-0", "${GH_TOKEN_0}", true, false),
	S("npm-real-1", "${NPM_TOK}", false, false),
	S("short-v", "${BODY_SECRET_LONG}", true, true),
	S("aws-secret-value-much-longer", "${A}", false, false),
};
#define N_SECRETS 4
#define MAX_HEAD  1024
#define MAX_BODY  2048
#define MAX_VALUE 28

struct run {
	int r;
	size_t secret;
	uint8_t *out;
	size_t out_len;
	char log[4096];
	size_t log_len;
	const struct pd_secret *secrets;
	const uint8_t *in; /* the whole input */
	size_t in_len;
};

static void on_use(const struct pd_subst_use *use, const char *line, void *ud)
{
	struct run *run = ud;
	int n;

	if (use->secret >= N_SECRETS || !use->where || !line)
		abort();
	/* a value in the record only if the sandbox itself sent those bytes */
	for (size_t i = 0; i < N_SECRETS; i++)
		if (memmem(line, strlen(line), run->secrets[i].value, run->secrets[i].value_len) &&
		    !memmem(run->in, run->in_len, run->secrets[i].value, run->secrets[i].value_len))
			abort();
	if (run->log_len >= sizeof(run->log))
		return;
	n = snprintf(run->log + run->log_len, sizeof(run->log) - run->log_len, "%zu %s %s\n",
		     use->secret, use->where, line);
	if (n > 0)
		run->log_len = strlen(run->log);
}

/* The piece lengths for a seed: 1 to 16 bytes, from a small LCG; seed 0: one piece. */
static size_t next_cut(uint32_t *state, uint8_t seed)
{
	if (seed == 0)
		return SIZE_MAX;
	*state = *state * 1103515245u + 12345u;
	return 1 + (*state >> 16) % (1 + (seed & 15));
}

static void subst_run(const struct pd_secret *secrets, const uint8_t *in, size_t len, uint8_t seed,
		      struct run *run)
{
	struct pd_subst *s;
	struct evbuffer *out = evbuffer_new();
	uint32_t state = seed;
	size_t at = 0;

	memset(run, 0, sizeof(*run));
	run->secrets = secrets;
	run->in = in;
	run->in_len = len;
	s = pd_subst_new(secrets, N_SECRETS, MAX_HEAD, MAX_BODY, on_use, run);
	if (!s || !out)
		abort();
	do {
		size_t n = next_cut(&state, seed), secret = SIZE_MAX;
		const char *why = NULL;
		int r;

		if (n > len - at)
			n = len - at;
		r = pd_subst_feed(s, in + at, n, out, &secret, &why);
		if (r < 0 && !why)
			abort();
		if (r == -EPERM && secret >= N_SECRETS)
			abort();
		if (run->r != 0 && (r != run->r || (r == -EPERM && secret != run->secret)))
			abort(); /* errors are sticky */
		if (run->r == 0 && r < 0) {
			run->r = r;
			run->secret = secret;
		}
		at += n;
	} while (at < len);
	run->out_len = evbuffer_get_length(out);
	run->out = malloc(run->out_len + 1);
	if (!run->out || evbuffer_remove(out, run->out, run->out_len) != (int)run->out_len)
		abort();
	evbuffer_free(out);
	pd_subst_free(s);
}

static void check_subst(const struct pd_secret *secrets, const uint8_t *in, size_t len,
			uint8_t seed)
{
	struct run whole, split;

	subst_run(secrets, in, len, 0, &whole);
	subst_run(secrets, in, len, seed, &split);
	if (whole.r != split.r || (whole.r == -EPERM && whole.secret != split.secret) ||
	    whole.out_len != split.out_len || memcmp(whole.out, split.out, whole.out_len) != 0 ||
	    strcmp(whole.log, split.log) != 0)
		abort();
	/* SECURITY: the invariant the whole module is for */
	for (size_t i = 0; i < N_SECRETS; i++)
		if (!secrets[i].bound && memmem(whole.out, whole.out_len, secrets[i].placeholder,
						secrets[i].placeholder_len))
			abort();
	if (whole.r != 0 && whole.r != -EPERM && whole.r != -EPROTO && whole.r != -E2BIG)
		abort();
	free(whole.out);
	free(split.out);
}

/* ---- the response side ---- */

/* Every form of a value the response side promises to keep out (secret-scrub.h), written
 * here again, independently: raw; for a bound value base64 (both alphabets, three
 * alignments, the characters it alone decides), hex and percent-encoding (both cases). */
#define FORMS_MAX 16

struct forms {
	char f[FORMS_MAX][128];
	size_t len[FORMS_MAX], n;
};

static void form_add(struct forms *fs, const char *p, size_t len, bool derived)
{
	if (len == 0 || (derived && len < 8) || fs->n >= FORMS_MAX || len >= sizeof(fs->f[0]))
		return;
	memcpy(fs->f[fs->n], p, len);
	fs->len[fs->n++] = len;
}

static void forms_of(const struct pd_secret *x, struct forms *fs)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *v = x->value;
	size_t n = x->value_len;
	char buf[128];
	size_t k;

	fs->n = 0;
	form_add(fs, (const char *)v, n, false);
	if (!x->bound)
		return;
	for (unsigned url = 0; url < 2; url++) {
		for (unsigned a = 0; a < 3; a++) {
			/* bit i of the text is bit (i - 8a) of v: whole 6-bit groups inside */
			size_t from = (8 * a + 5) / 6, to = (8 * (a + n)) / 6;

			k = 0;
			for (size_t c = from; c < to; c++) {
				unsigned val = 0;

				for (unsigned b = 0; b < 6; b++) {
					size_t bitpos = 6 * c + b - 8 * a;

					val = val << 1 | ((v[bitpos / 8] >> (7 - bitpos % 8)) & 1);
				}
				buf[k] = b64[val];
				if (url && buf[k] == '+')
					buf[k] = '-';
				if (url && buf[k] == '/')
					buf[k] = '_';
				k++;
			}
			form_add(fs, buf, k, true);
		}
	}
	for (unsigned up = 0; up < 2; up++) {
		const char *d = up ? "0123456789ABCDEF" : "0123456789abcdef";

		k = 0;
		for (size_t i = 0; i < n; i++) {
			buf[k++] = d[v[i] >> 4];
			buf[k++] = d[v[i] & 15];
		}
		form_add(fs, buf, k, true);
		k = 0;
		for (size_t i = 0; i < n; i++) {
			uint8_t c = v[i];

			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
			    c == '~') {
				buf[k++] = (char)c;
			} else {
				buf[k++] = '%';
				buf[k++] = d[c >> 4];
				buf[k++] = d[c & 15];
			}
		}
		form_add(fs, buf, k, true);
	}
	/* the values here have nothing JSON escapes: their JSON form is the raw one */
}

/* "u:" value 0, as the broker builds Basic credentials */
static const char cred[] = "dTpnaHAtcmVhbC12YWx1ZS0w";

/* SECURITY: the invariant the response side is for */
static void no_form(const uint8_t *out, size_t len, const struct pd_secret *secrets)
{
	struct forms fs;

	for (size_t i = 0; i < N_SECRETS; i++) {
		forms_of(&secrets[i], &fs);
		for (size_t k = 0; k < fs.n; k++)
			if (memmem(out, len, fs.f[k], fs.len[k]))
				abort();
	}
	if (memmem(out, len, cred, sizeof(cred) - 1))
		abort();
}

/*
 * The same output however split; but when a form was stopped (-EPERM), the bytes before it
 * that came in an earlier feed went out already: one output is then the other's prefix,
 * at most a form's length apart (secret-scrub.h).
 */
static bool same_output(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len, int r)
{
	size_t n = a_len < b_len ? a_len : b_len;

	if (r != -EPERM)
		return a_len == b_len && memcmp(a, b, a_len) == 0;
	return memcmp(a, b, n) == 0 && (a_len > b_len ? a_len - b_len : b_len - a_len) < 128;
}

static uint8_t *drain_all(struct evbuffer *out, size_t *ret_len)
{
	uint8_t *r;

	*ret_len = evbuffer_get_length(out);
	r = malloc(*ret_len + 1);
	if (!r || evbuffer_remove(out, r, *ret_len) != (int)*ret_len)
		abort();
	evbuffer_free(out);
	return r;
}

static uint8_t *scrub_run(const uint8_t *in, size_t len, uint8_t seed, int *ret_r, size_t *ret_len)
{
	struct pd_scrub *s = pd_scrub_new(secrets_streamed, N_SECRETS);
	struct evbuffer *out = evbuffer_new();
	uint32_t state = seed;
	size_t at = 0;
	int k = 0;

	if (!s || !out || pd_scrub_add_credential(s, (const uint8_t *)cred, sizeof(cred) - 1) < 0)
		abort();
	do {
		size_t n = next_cut(&state, seed);

		if (n > len - at)
			n = len - at;
		k = pd_scrub_feed(s, in + at, n, out);
		if ((k < 0 && k != -EPERM) || pd_scrub_held(s) > pd_scrub_held_max(s))
			abort();
		at += n;
	} while (k == 0 && at < len);
	if (k == 0) {
		k = pd_scrub_flush(s, out);
		if ((k < 0 && k != -EPERM) || pd_scrub_held(s) != 0)
			abort();
	}
	*ret_r = k;
	pd_scrub_free(s);
	return drain_all(out, ret_len);
}

static void check_scrub(const uint8_t *in, size_t len, uint8_t seed)
{
	size_t a_len, b_len;
	int ra, rb;
	uint8_t *a = scrub_run(in, len, 0, &ra, &a_len), *b = scrub_run(in, len, seed, &rb, &b_len);

	if (ra != rb || !same_output(a, a_len, b, b_len, ra))
		abort();
	no_form(a, a_len, secrets_streamed);
	free(a);
	free(b);
}

/* The same bytes as a server's responses to four requests (bit i of heads: HEAD). */
static uint8_t *response_run(const uint8_t *in, size_t len, uint8_t seed, uint8_t heads, int *ret_r,
			     size_t *ret_len)
{
	struct pd_response *r = pd_response_new(secrets_streamed, N_SECRETS);
	struct evbuffer *out = evbuffer_new();
	uint32_t state = seed;
	size_t at = 0;
	int k = 0;

	if (!r || !out ||
	    pd_response_add_credential(r, (const uint8_t *)cred, sizeof(cred) - 1) < 0)
		abort();
	for (unsigned i = 0; i < 4; i++)
		if (pd_response_expect(r, heads & (1u << i)) < 0)
			abort();
	do {
		size_t n = next_cut(&state, seed);
		const char *why = NULL;

		if (n > len - at)
			n = len - at;
		k = pd_response_feed(r, in + at, n, out, &why);
		if (k < 0 && (!why || (k != -EPROTO && k != -EPERM && k != -E2BIG)))
			abort();
		at += n;
	} while (k == 0 && at < len);
	if (k == 0)
		k = pd_response_end(r, out, NULL);
	*ret_r = k;
	pd_response_free(r);
	return drain_all(out, ret_len);
}

static void check_response(const uint8_t *in, size_t len, uint8_t seed)
{
	size_t a_len, b_len;
	int ra, rb;
	uint8_t *a = response_run(in, len, 0, seed, &ra, &a_len);
	uint8_t *b = response_run(in, len, seed, seed, &rb, &b_len);

	if (ra != rb || !same_output(a, a_len, b, b_len, ra))
		abort();
	no_form(a, a_len, secrets_streamed);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t seed;

	if (size < 1 || size > 64 * 1024)
		return 0;
	seed = data[0];
	data++;
	size--;
	check_subst(seed & 0x80 ? secrets_buffered : secrets_streamed, data, size,
		    (uint8_t)(seed & 0x7f) | 1);
	check_scrub(data, size, (uint8_t)(seed & 0x7f) | 1);
	check_response(data, size, (uint8_t)(seed & 0x7f) | 1);
	return 0;
}
