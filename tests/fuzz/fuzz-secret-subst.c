/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes secret substitution with what a sandbox could send on a proxied connection: any
 * bytes. The first byte picks the configuration (whether a bound secret substitutes in
 * bodies) and the points where the rest is split into feeds.
 *
 * Invariants: a placeholder of an unbound secret never reaches the output whole; feeding in
 * one piece or split gives the same output, status and use records; no use record holds a
 * value. The scrubber, on the same bytes: no value in its output, the same output however
 * split, never more held back than the longest value minus one.
 *
 * The secrets are chosen so these can be checked by a plain search: placeholders are
 * "${UPPER}" and values lower case, so neither can be made from pieces of the other.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "secret-subst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S(v, p, bound, in_body)                                                            \
	{ #p, (const uint8_t *)(v), sizeof(v) - 1, (const uint8_t *)(p), sizeof(p) - 1,    \
	  (bound), (in_body) }

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
#define MAX_HEAD 1024
#define MAX_BODY 2048
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

static void subst_run(const struct pd_secret *secrets, const uint8_t *in, size_t len,
		      uint8_t seed, struct run *run)
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

static uint8_t *scrub_run(const uint8_t *in, size_t len, uint8_t seed, size_t *ret_len)
{
	struct pd_scrub *s = pd_scrub_new(secrets_streamed, N_SECRETS);
	struct evbuffer *out = evbuffer_new();
	uint32_t state = seed;
	size_t at = 0;
	uint8_t *r;

	if (!s || !out)
		abort();
	do {
		size_t n = next_cut(&state, seed);

		if (n > len - at)
			n = len - at;
		if (pd_scrub_feed(s, in + at, n, out) < 0 || pd_scrub_held(s) > MAX_VALUE - 1)
			abort();
		at += n;
	} while (at < len);
	if (pd_scrub_flush(s, out) < 0 || pd_scrub_held(s) != 0)
		abort();
	*ret_len = evbuffer_get_length(out);
	r = malloc(*ret_len + 1);
	if (!r || evbuffer_remove(out, r, *ret_len) != (int)*ret_len)
		abort();
	evbuffer_free(out);
	pd_scrub_free(s);
	return r;
}

static void check_scrub(const uint8_t *in, size_t len, uint8_t seed)
{
	size_t a_len, b_len;
	uint8_t *a = scrub_run(in, len, 0, &a_len), *b = scrub_run(in, len, seed, &b_len);

	if (a_len != b_len || memcmp(a, b, a_len) != 0)
		abort();
	for (size_t i = 0; i < N_SECRETS; i++)
		if (memmem(a, a_len, secrets_streamed[i].value, secrets_streamed[i].value_len))
			abort();
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
	return 0;
}
