/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The response side of the secret broker (secret-scrub.h): every form of a value replaced
 * by the same form of its stand-in, the same length; a form the replacements complete
 * stops the stream; HTTP responses read strictly, de-chunked and re-chunked, what cannot be
 * checked refused. Every input is fed whole, byte by byte and split at every point (two
 * points for the scrubber): the output and the status must not change.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "secret-scrub.h"
#include "util/base64.h"
#include "secret-fixture.h"

/* ---- stand-ins ---------------------------------------------------------------------------- */

static void test_stand_in(void **state)
{
	const struct pd_secret shortv = { "S",	(const uint8_t *)"Ab9-._~!\"\n\x01\xc3",
					  12,	(const uint8_t *)"paddock_0123456789",
					  18,	true,
					  false };
	const struct pd_secret shape = {
		"T", (const uint8_t *)"sk-abc", 6, (const uint8_t *)"sk_xyz", 6, true, false
	};
	uint8_t out[32];

	(void)state;
	/* the placeholder, when it has the value's length and shape */
	pd_secret_stand_in(&two[0], out);
	assert_memory_equal(out, GH_PH, sizeof(GH_PH) - 1);
	/* else the value's shape by class: every form the same length as the value's */
	pd_secret_stand_in(&shortv, out);
	assert_memory_equal(out, "xx0----*\\\\\x01*", 12);
	pd_secret_stand_in(&shape, out); /* '-' is not '_': the shape differs */
	assert_memory_equal(out, "xx-xxx", 6);
}

/* ---- the scrubber ------------------------------------------------------------------------- */

static char *scrub(const struct pd_secret *sec, size_t n, const char *in, size_t len,
		   const size_t *cuts, size_t ncuts, int *ret_r)
{
	struct pd_scrub *s = pd_scrub_new(sec, n);
	struct evbuffer *out = evbuffer_new();
	size_t from = 0, got_len;
	int r = 0;

	assert_non_null(s);
	assert_non_null(out);
	for (size_t c = 0; c <= ncuts && r == 0; c++) {
		size_t to = c < ncuts ? cuts[c] : len;

		r = pd_scrub_feed(s, (const uint8_t *)in + from, to - from, out);
		assert_true(pd_scrub_held(s) <= pd_scrub_held_max(s));
		from = to;
	}
	if (r == 0)
		r = pd_scrub_flush(s, out);
	if (r == 0)
		assert_int_equal(pd_scrub_held(s), 0);
	*ret_r = r;
	pd_scrub_free(s);
	char *got = drain(out, &got_len);

	evbuffer_free(out);
	return got;
}

/* Whole, byte by byte, and at every pair of cut points: the same output and status. */
static void scrub_check(const struct pd_secret *sec, size_t n, const char *in, int r,
			const char *expected)
{
	size_t len = strlen(in);
	size_t *cuts = calloc(len + 1, sizeof(*cuts));
	char *got;
	int gr;

	assert_non_null(cuts);
	got = scrub(sec, n, in, len, NULL, 0, &gr);
	assert_int_equal(gr, r);
	assert_string_equal(got, expected);
	free(got);
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	got = scrub(sec, n, in, len, cuts, len > 0 ? len - 1 : 0, &gr);
	assert_int_equal(gr, r);
	assert_string_equal(got, expected);
	free(got);
	for (size_t i = 0; i <= len; i++) {
		for (size_t j = i; j <= len; j++) {
			size_t c2[2] = { i, j };

			got = scrub(sec, n, in, len, c2, 2, &gr);
			assert_int_equal(gr, r);
			assert_string_equal(got, expected);
			free(got);
		}
	}
	free(cuts);
}

static void test_scrub_raw(void **state)
{
	(void)state;
	scrub_check(two, 2, "{\"token\":\"" GH_VALUE "\",\"n\":\"" NPM_VALUE "\"}", 0,
		    "{\"token\":\"" GH_PH "\",\"n\":\"" NPM_PH "\"}");
	scrub_check(two, 2, "ghp_realvalue123 ghp_realvalue1234ghp_", 0,
		    "ghp_realvalue123 " GH_PH "ghp_");
	scrub_check(two, 2, "", 0, "");
	scrub_check(two, 0, "abc", 0, "abc");
}

/* Every form a bound value could have been sent in, in place, the same length. */
static void test_scrub_forms(void **state)
{
	(void)state;
	/* base64 of a longer text, at each of the three alignments: the characters the
	 * value alone decides */
	scrub_check(two, 2, "eyJrIjoiZ2hwX3JlYWx2YWx1ZTEyMzQifQ==", 0,
		    "eyJrIjoiZ2hwX1hxOXpQbGFjZUhsZHQifQ==");
	scrub_check(two, 2, "eHsiayI6ImdocF9yZWFsdmFsdWUxMjM0In0=", 0,
		    "eHsiayI6ImdocF9YcTl6UGxhY2VIbGRyIn0=");
	scrub_check(two, 2, "eHl7ImsiOiJnaHBfcmVhbHZhbHVlMTIzNCJ9", 0,
		    "eHl7ImsiOiJnaHBfWHE5elBsYWNlSGxkcCJ9");
	/* hex, both cases */
	scrub_check(two, 2, "x=6768705f7265616c76616c756531323334;", 0,
		    "x=6768705f5871397a506c616365486c6472;");
	scrub_check(two, 2, "6768705F7265616C76616C756531323334", 0,
		    "6768705F5871397A506C616365486C6472");
	/* an unbound value's encoded forms are not looked for (nothing here sent them) */
	scrub_check(two, 2, "6e706d5f73656372657476616c75653939", 0,
		    "6e706d5f73656372657476616c75653939");
}

/* Percent-encoding (both cases) and JSON escapes, for a value that has them. */
static void test_scrub_escapes(void **state)
{
#define V2 "sk-a+b/c=d?e&f \"q\"\\0123456789xyzXYZ"
#define P2 "sk-Q+r/S=t?U&v \"w\"\\9876543210abcABC"
	const struct pd_secret sec[] = {
		{ "K", (const uint8_t *)V2, sizeof(V2) - 1, (const uint8_t *)P2, sizeof(P2) - 1,
		  true, false },
	};

	(void)state;
	scrub_check(sec, 1, "q=sk-a%2Bb%2Fc%3Dd%3Fe%26f%20%22q%22%5C0123456789xyzXYZ&", 0,
		    "q=sk-Q%2Br%2FS%3Dt%3FU%26v%20%22w%22%5C9876543210abcABC&");
	scrub_check(sec, 1, "q=sk-a%2bb%2fc%3dd%3fe%26f%20%22q%22%5c0123456789xyzXYZ&", 0,
		    "q=sk-Q%2br%2fS%3dt%3fU%26v%20%22w%22%5c9876543210abcABC&");
	scrub_check(sec, 1, "{\"k\":\"sk-a+b/c=d?e&f \\\"q\\\"\\\\0123456789xyzXYZ\"}", 0,
		    "{\"k\":\"sk-Q+r/S=t?U&v \\\"w\\\"\\\\9876543210abcABC\"}");
#undef V2
#undef P2
}

/* The Basic credentials the broker built come back as the sandbox sent them. */
static void test_scrub_credential(void **state)
{
	/* "x-access-token:" GH_VALUE, and with GH_PH */
	const char *val_b64 = "eC1hY2Nlc3MtdG9rZW46Z2hwX3JlYWx2YWx1ZTEyMzQ=";
	const char *ph_b64 = "eC1hY2Nlc3MtdG9rZW46Z2hwX1hxOXpQbGFjZUhsZHI=";
	struct pd_scrub *s = pd_scrub_new(two, 2);
	struct evbuffer *out = evbuffer_new();
	char in[256], expected[256], *got;
	size_t len;

	(void)state;
	assert_non_null(s);
	assert_int_equal(pd_scrub_add_credential(s, (const uint8_t *)val_b64, strlen(val_b64)), 0);
	/* again, and one with no value in it: nothing changes */
	assert_int_equal(pd_scrub_add_credential(s, (const uint8_t *)val_b64, strlen(val_b64)), 0);
	assert_int_equal(pd_scrub_add_credential(s, (const uint8_t *)"dTpwYXNzd29yZA==", 16), 0);
	(void)snprintf(in, sizeof(in), "{\"Authorization\": \"Basic %s\"}", val_b64);
	(void)snprintf(expected, sizeof(expected), "{\"Authorization\": \"Basic %s\"}", ph_b64);
	assert_int_equal(pd_scrub_feed(s, (const uint8_t *)in, strlen(in), out), 0);
	assert_int_equal(pd_scrub_flush(s, out), 0);
	got = drain(out, &len);
	assert_string_equal(got, expected);
	free(got);
	/* more than are kept: the oldest goes, the newest stays */
	for (int i = 0; i < PD_SCRUB_CREDENTIALS_MAX + 2; i++) {
		char plain[64], *b64;

		(void)snprintf(plain, sizeof(plain), "user%02d:" GH_VALUE, i);
		b64 = pd_base64_encode(plain, strlen(plain));
		assert_int_equal(pd_scrub_add_credential(s, (const uint8_t *)b64, strlen(b64)), 0);
		free(b64);
	}
	evbuffer_free(out);
	pd_scrub_free(s);
}

/*
 * SECURITY: a replacement that completes a form with the bytes after it does not go out:
 * the stream stops before it.
 */
static void test_scrub_verify(void **state)
{
	const struct pd_secret sec[] = {
		{ "V", (const uint8_t *)"abcdefgh", 8, (const uint8_t *)"habcdefg", 8, false,
		  false },
	};

	const struct pd_secret back[] = {
		{ "W", (const uint8_t *)"abcdefgh", 8, (const uint8_t *)"efghxxxx", 8, false,
		  false },
	};
	const char *in = "zzzzzzzzzzzzabcdabcdefgh";
	size_t len = strlen(in);

	(void)state;
	/* "abcdefgh" + "h" -> "habcdefg" + "h", which holds "abcdefgh" again */
	scrub_check(sec, 1, "abcdefghh", -EPERM, "h");
	scrub_check(sec, 1, "xxabcdefghxx", 0, "xxhabcdefgxx");
	/*
	 * A form the replacement completes with bytes before it ("abcd" + "efgh..."): found
	 * whether those bytes came in the same feed or went out before (then at most the
	 * longest form's length less one of them is out: never the form).
	 */
	for (size_t i = 0; i <= len; i++) {
		char *got;
		int r;

		got = scrub(back, 1, in, len, &i, 1, &r);
		assert_int_equal(r, -EPERM);
		if (strncmp(got, "zzzzzzzzzzzzabcd", strlen(got)) != 0 || strlen(got) < 12)
			fail_msg("cut at %zu: got '%s'", i, got);
		free(got);
	}
}

/* ---- HTTP responses ------------------------------------------------------------------------ */

struct rres {
	int r;
	char *out;
	size_t out_len;
	bool started;
};

/* Feeds `in` to a response side expecting `heads` (one per request: whether it was HEAD). */
static void rrun(const char *heads, const char *in, size_t len, const size_t *cuts, size_t ncuts,
		 bool end, struct rres *res)
{
	struct pd_response *r = pd_response_new(two, 2);
	struct evbuffer *out = evbuffer_new();
	size_t from = 0;

	assert_non_null(r);
	memset(res, 0, sizeof(*res));
	for (const char *h = heads; *h; h++)
		assert_int_equal(pd_response_expect(r, *h == 'H'), 0);
	for (size_t c = 0; c <= ncuts && res->r == 0; c++) {
		size_t to = c < ncuts ? cuts[c] : len;
		const char *why = NULL;

		res->r = pd_response_feed(r, (const uint8_t *)in + from, to - from, out, &why);
		if (res->r < 0)
			assert_non_null(why);
		from = to;
	}
	if (res->r == 0 && end)
		res->r = pd_response_end(r, out, NULL);
	res->started = pd_response_started(r);
	res->out = drain(out, &res->out_len);
	evbuffer_free(out);
	pd_response_free(r);
}

static void rexpect(const char *heads, const char *in, bool end, int r, const char *out)
{
	size_t len = strlen(in);
	struct rres whole, other;

	rrun(heads, in, len, NULL, 0, end, &whole);
	assert_int_equal(whole.r, r);
	assert_string_equal(whole.out, out);
	for (size_t i = 0; i <= len; i++) {
		rrun(heads, in, len, &i, 1, end, &other);
		assert_int_equal(other.r, whole.r);
		assert_string_equal(other.out, whole.out);
		free(other.out);
	}
	{
		size_t *cuts = calloc(len + 1, sizeof(*cuts));

		assert_non_null(cuts);
		for (size_t i = 0; i < len; i++)
			cuts[i] = i + 1;
		rrun(heads, in, len, cuts, len > 0 ? len - 1 : 0, end, &other);
		assert_int_equal(other.r, whole.r);
		assert_string_equal(other.out, whole.out);
		free(other.out);
		free(cuts);
	}
	free(whole.out);
}

static void test_response_framing(void **state)
{
	(void)state;
	/* Content-Length: the same length, scrubbed; heads too */
	rexpect("GG",
		"HTTP/1.1 200 OK\r\nX-Echo: " GH_VALUE "\r\nContent-Length: 19\r\n\r\n"
		"[" GH_VALUE "]"
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		false, 0,
		"HTTP/1.1 200 OK\r\nX-Echo: " GH_PH "\r\nContent-Length: 19\r\n\r\n"
		"[" GH_PH "]"
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	/* a body that ends in what may start a value goes out whole at its end */
	rexpect("G", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nghp_", false, 0,
		"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nghp_");
	/* chunked, a value split over chunks: seen, and re-chunked; extensions and trailers
	 * dropped */
	rexpect("G",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		"5;ext=1\r\n[ghp_\r\nD\r\nrealvalue1234\r\n1\r\n]\r\n0\r\nX-T: " GH_VALUE
		"\r\n\r\n",
		false, 0,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1\r\n[\r\n11\r\n" GH_PH "\r\n1\r\n]\r\n0\r\n\r\n");
	/* a body to the close: its end is the server's close */
	rexpect("G", "HTTP/1.0 200 OK\r\n\r\n" GH_VALUE, true, 0, "HTTP/1.0 200 OK\r\n\r\n" GH_PH);
	/* no body: HEAD, 204, 304; interim 100 before the final response */
	rexpect("HGGG",
		"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nContent-Encoding: gzip\r\n\r\n"
		"HTTP/1.1 204 No Content\r\n\r\n"
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		false, 0,
		"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nContent-Encoding: gzip\r\n\r\n"
		"HTTP/1.1 204 No Content\r\n\r\n"
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	/* identity is no coding; LF line ends are read */
	rexpect("G", "HTTP/1.1 200 OK\nContent-Encoding: identity\nContent-Length: 2\n\nok", false,
		0, "HTTP/1.1 200 OK\nContent-Encoding: identity\nContent-Length: 2\n\nok");
	/* cut short: what was held back (a possible start of a value) stays */
	rexpect("G", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabcghp_", true, 0,
		"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc");
}

/* What cannot be checked is refused; before any of its response went out when it can be. */
static void test_response_refused(void **state)
{
	static const struct {
		const char *in;
		int r;
		bool started;
	} cases[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
		  -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nContent-Encoding: identity, br\r\n\r\n", -EPROTO, false },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", -EPROTO,
		  false },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		  -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -EPROTO,
		  false },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n", -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nX\r\n\r\n", -EPROTO, false },
		{ "HTTP/2 200\r\n\r\n", -EPROTO, false },
		{ "SSH-2.0-x\r\n", -EPROTO, false },
		{ "HTTP/1.1 2000 OK\r\n\r\n", -EPROTO, false },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", -EPROTO, true },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", -EPROTO,
		  true },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n",
		  -EPROTO, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rres res;

		rrun("G", cases[i].in, strlen(cases[i].in), NULL, 0, false, &res);
		if (res.r != cases[i].r || res.started != cases[i].started)
			fail_msg("case %zu: got %d started %d", i, res.r, res.started);
		if (!cases[i].started)
			assert_int_equal(res.out_len, 0); /* nothing of it went out */
		free(res.out);
	}
	/* a head over the limit */
	{
		size_t n = PD_RESPONSE_HEAD_MAX + 64;
		char *big = malloc(n + 1);
		struct rres res;

		assert_non_null(big);
		memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
		memset(big + 20, 'a', n - 20);
		big[n] = '\0';
		rrun("G", big, n, NULL, 0, false, &res);
		assert_int_equal(res.r, -E2BIG);
		free(res.out);
		free(big);
	}
	/* the server closes in the middle of a head: nothing of it went out */
	{
		struct rres res;

		rrun("G", "HTTP/1.1 200 OK\r\nContent-", 26, NULL, 0, true, &res);
		assert_int_equal(res.r, -EPROTO);
		assert_false(res.started);
		free(res.out);
	}
	/* too many requests waiting */
	{
		struct pd_response *r = pd_response_new(two, 2);

		assert_non_null(r);
		for (int i = 0; i < PD_RESPONSE_PENDING_MAX; i++)
			assert_int_equal(pd_response_expect(r, false), 0);
		assert_int_equal(pd_response_expect(r, false), -E2BIG);
		pd_response_free(r);
	}
}

/* A long chunk goes out in pieces cut at fixed offsets: the same however it comes in. */
static void test_response_long_chunk(void **state)
{
	size_t n = 40000, head;
	char *in = malloc(n + 256), *expected = malloc(n + 256);
	int k;

	(void)state;
	assert_non_null(in);
	assert_non_null(expected);
	k = snprintf(in, 256, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n", n);
	head = (size_t)k;
	memset(in + head, 'a', n);
	memcpy(in + head + n - 17, GH_VALUE, 17);
	memcpy(in + head + n, "\r\n0\r\n\r\n", 8);
	k = snprintf(expected, 256, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	{
		size_t o = (size_t)k;

		o += (size_t)sprintf(expected + o, "4000\r\n");
		memset(expected + o, 'a', 16384);
		o += 16384;
		o += (size_t)sprintf(expected + o, "\r\n4000\r\n");
		memset(expected + o, 'a', 16384);
		o += 16384;
		o += (size_t)sprintf(expected + o, "\r\n%zx\r\n", n - 32768);
		memset(expected + o, 'a', n - 32768 - 17);
		o += n - 32768 - 17;
		memcpy(expected + o, GH_PH, 17);
		o += 17;
		memcpy(expected + o, "\r\n0\r\n\r\n", 8);
	}
	{
		struct rres whole, split;
		size_t cuts[] = { head + 3, head + 16383, head + 16385, head + 20000,
				  head + n - 5 };

		rrun("G", in, strlen(in), NULL, 0, false, &whole);
		assert_int_equal(whole.r, 0);
		assert_string_equal(whole.out, expected);
		rrun("G", in, strlen(in), cuts, 5, false, &split);
		assert_string_equal(split.out, expected);
		free(whole.out);
		free(split.out);
	}
	free(in);
	free(expected);
}

static void test_new_invalid(void **state)
{
	const struct pd_secret empty[] = {
		{ "E", (const uint8_t *)"", 0, (const uint8_t *)"P", 1, true, false },
	};

	(void)state;
	assert_null(pd_scrub_new(empty, 1));
	assert_null(pd_response_new(empty, 1));
	assert_null(pd_scrub_free(NULL));
	assert_null(pd_response_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stand_in),
		cmocka_unit_test(test_scrub_raw),
		cmocka_unit_test(test_scrub_forms),
		cmocka_unit_test(test_scrub_escapes),
		cmocka_unit_test(test_scrub_credential),
		cmocka_unit_test(test_scrub_verify),
		cmocka_unit_test(test_response_framing),
		cmocka_unit_test(test_response_refused),
		cmocka_unit_test(test_response_long_chunk),
		cmocka_unit_test(test_new_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
