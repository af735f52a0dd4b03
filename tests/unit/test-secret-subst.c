/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secret substitution (secret-subst.h): placeholders replaced in heads and bodies, leaks
 * refused, framing tracked across keep-alive requests, the link to the response side.
 * Every input is fed in one piece, byte by byte, and split at every point: the output,
 * the status and the use records must not change.
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
#include "secret-subst.h"
#include "secret-fixture.h"

struct result {
	int r;
	size_t secret;
	const char *why;
	char *out;
	size_t out_len;
	char log[2048];
};

static void on_use(const struct pd_subst_use *use, const char *line, void *ud)
{
	struct result *res = ud;
	size_t n = strlen(res->log);

	/* SECURITY: no value ever reaches the record */
	assert_null(strstr(line, GH_VALUE));
	assert_null(strstr(line, NPM_VALUE));
	(void)snprintf(res->log + n, sizeof(res->log) - n, "%zu|%s|%s\n", use->secret, use->where,
		       line);
}

struct setup {
	const struct pd_secret *secrets;
	size_t n, max_head, max_body;
};

/* Feeds `in` cut at the given points (ascending). */
static void run(const struct setup *su, const char *in, size_t len, const size_t *cuts,
		size_t ncuts, struct result *res)
{
	struct pd_subst *s;
	struct evbuffer *out = evbuffer_new();
	size_t from = 0;

	memset(res, 0, sizeof(*res));
	s = pd_subst_new(su->secrets, su->n, su->max_head, su->max_body, on_use, res);
	assert_non_null(s);
	assert_non_null(out);
	for (size_t c = 0; c <= ncuts; c++) {
		size_t to = c < ncuts ? cuts[c] : len;
		size_t secret = SIZE_MAX;
		const char *why = NULL;
		int r = pd_subst_feed(s, (const uint8_t *)in + from, to - from, out, &secret, &why);

		if (r < 0) {
			assert_non_null(why);
			if (res->r == 0) {
				res->r = r;
				res->secret = secret;
				res->why = why;
			}
			/* sticky: the same error again, nothing more written */
			assert_int_equal(r, res->r);
			assert_int_equal(secret, res->secret);
		}
		from = to;
	}
	res->out = drain(out, &res->out_len);
	evbuffer_free(out);
	pd_subst_free(s);
}

static void same(const struct result *a, const struct result *b)
{
	assert_int_equal(a->r, b->r);
	if (a->r == -EPERM)
		assert_int_equal(a->secret, b->secret);
	assert_int_equal(a->out_len, b->out_len);
	assert_memory_equal(a->out, b->out, a->out_len);
	assert_string_equal(a->log, b->log);
}

/*
 * Runs `in` whole, byte by byte and split at every point; all must agree. Returns the
 * whole run's result (free ->out).
 */
static void check(const struct setup *su, const char *in, struct result *whole)
{
	size_t len = strlen(in);
	size_t *cuts = calloc(len + 1, sizeof(*cuts));
	struct result other;

	assert_non_null(cuts);
	run(su, in, len, NULL, 0, whole);
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	run(su, in, len, cuts, len > 0 ? len - 1 : 0, &other);
	same(whole, &other);
	free(other.out);
	for (size_t i = 0; i <= len; i++) {
		run(su, in, len, &i, 1, &other);
		same(whole, &other);
		free(other.out);
	}
	free(cuts);
}

static void expect(const struct setup *su, const char *in, int r, const char *out, const char *log)
{
	struct result res;

	check(su, in, &res);
	assert_int_equal(res.r, r);
	assert_string_equal(res.out, out);
	if (log)
		assert_string_equal(res.log, log);
	free(res.out);
}

static const struct setup dflt = { two, 2, 4096, 4096 };

static void test_request_line(void **state)
{
	(void)state;
	expect(&dflt,
	       "GET /repos/" GH_PH "/x?token=" GH_PH "&a=" GH_PH " HTTP/1.1\r\n"
	       "Host: api.github.com\r\n\r\n",
	       0,
	       "GET /repos/" GH_VALUE "/x?token=" GH_VALUE "&a=" GH_VALUE " HTTP/1.1\r\n"
	       "Host: api.github.com\r\n\r\n",
	       "0|request-line|GET /repos/" GH_PH "/x HTTP/1.1\n");
	/* nothing to replace: passes, normalised (CRLF, one space after the colon) */
	expect(&dflt, "GET http://h/a?q HTTP/1.0\nHost:h  \nX-A:\tb c\t\n\n", 0,
	       "GET http://h/a?q HTTP/1.0\r\nHost: h\r\nX-A: b c\r\n\r\n", "");
}

static void test_headers(void **state)
{
	(void)state;
	expect(&dflt,
	       "POST /graphql HTTP/1.1\r\nHost: api.github.com\r\n"
	       "Authorization: Bearer " GH_PH "\r\nX-Other: " GH_PH "," GH_PH "\r\n"
	       "Content-Length: 0\r\n\r\n",
	       0,
	       "POST /graphql HTTP/1.1\r\nHost: api.github.com\r\n"
	       "Authorization: Bearer " GH_VALUE "\r\nX-Other: " GH_VALUE "," GH_VALUE "\r\n"
	       "Content-Length: 0\r\n\r\n",
	       "0|header Authorization|POST /graphql HTTP/1.1\n");
}

static void test_basic_auth(void **state)
{
	/* "x-access-token:" GH_PH and "x-access-token:" GH_VALUE */
	const char *ph_b64 = "eC1hY2Nlc3MtdG9rZW46Z2hwX1hxOXpQbGFjZUhsZHI=";
	const char *val_b64 = "eC1hY2Nlc3MtdG9rZW46Z2hwX3JlYWx2YWx1ZTEyMzQ=";
	/* "u:" NPM_PH */
	const char *npm_b64 = "dTpucG1fWno4eVBsYWNlSGxkcg==";
	char in[512], out[512];

	(void)state;
	(void)snprintf(in, sizeof(in),
		       "GET /o/r.git/info/refs HTTP/1.1\r\nHost: github.com\r\n"
		       "authorization: bAsIc   %s\r\n\r\n",
		       ph_b64);
	(void)snprintf(out, sizeof(out),
		       "GET /o/r.git/info/refs HTTP/1.1\r\nHost: github.com\r\n"
		       "authorization: bAsIc %s\r\n\r\n",
		       val_b64);
	expect(&dflt, in, 0, out, "0|basic-auth|GET /o/r.git/info/refs HTTP/1.1\n");

	(void)snprintf(in, sizeof(in), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n",
		       npm_b64);
	expect(&dflt, in, -EPERM, "", "");
	/* not strict base64: no padding, bad pad bits, whitespace inside */
	expect(&dflt, "GET / HTTP/1.1\r\nAuthorization: Basic dTp4\r\n\r\n", 0,
	       "GET / HTTP/1.1\r\nAuthorization: Basic dTp4\r\n\r\n", "");
	expect(&dflt, "GET / HTTP/1.1\r\nAuthorization: Basic dTp\r\n\r\n", -EPROTO, "", NULL);
	expect(&dflt, "GET / HTTP/1.1\r\nAuthorization: Basic dTr=\r\n\r\n", -EPROTO, "", NULL);
	expect(&dflt, "GET / HTTP/1.1\r\nAuthorization: Basic dT p4\r\n\r\n", -EPROTO, "", NULL);
	expect(&dflt, "GET / HTTP/1.1\r\nAuthorization: Basic\r\n\r\n", -EPROTO, "", NULL);
}

static void test_proxy_headers_dropped(void **state)
{
	(void)state;
	expect(&dflt,
	       "GET http://h/ HTTP/1.1\r\nProxy-Authorization: Basic dTp4\r\nHost: h\r\n"
	       "proxy-connection: keep-alive\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	       0, "GET http://h/ HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n\r\n", "");
}

static void test_unbound_in_head(void **state)
{
	struct result res;

	(void)state;
	/* the first request goes; the second, with a leak, leaves nothing */
	check(&dflt,
	      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
	      "GET /b?x=" GH_PH " HTTP/1.1\r\nHost: h\r\nX-Npm: a" NPM_PH "b\r\n\r\n"
	      "GET /c HTTP/1.1\r\nHost: h\r\n\r\n",
	      &res);
	assert_int_equal(res.r, -EPERM);
	assert_int_equal(res.secret, 1);
	assert_string_equal(res.out, "GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_string_equal(res.log, "");
	free(res.out);

	/* in a header name, in the target, in a header that would be dropped: all refused */
	expect(&dflt, "GET / HTTP/1.1\r\n" NPM_PH ": 1\r\n\r\n", -EPERM, "", "");
	expect(&dflt, "GET /" NPM_PH " HTTP/1.1\r\n\r\n", -EPERM, "", "");
	expect(&dflt, "GET / HTTP/1.1\r\nProxy-Authorization: " NPM_PH "\r\n\r\n", -EPERM, "", "");
}

static void test_keepalive_length(void **state)
{
	(void)state;
	/* the body is not a head: its placeholder stays, it is not read as a request */
	expect(&dflt,
	       "POST /a HTTP/1.1\r\nContent-Length: 38\r\n\r\nGET /x HTTP/1.1\r\n" GH_PH "\r\n"
	       "\r\nPUT /b?" GH_PH " HTTP/1.1\r\nContent-Length: 003\r\nContent-Length: 3\r\n\r\n"
	       "xyz",
	       0,
	       "POST /a HTTP/1.1\r\nContent-Length: 38\r\n\r\nGET /x HTTP/1.1\r\n" GH_PH "\r\n"
	       "\r\nPUT /b?" GH_VALUE
	       " HTTP/1.1\r\nContent-Length: 003\r\nContent-Length: 3\r\n\r\n"
	       "xyz",
	       "0|request-line|PUT /b HTTP/1.1\n");
}

static void test_chunked_streamed(void **state)
{
	(void)state;
	expect(&dflt,
	       "POST /up HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
	       "5;ext=\"1\"\r\nhello\r\n006 \r\n world\n0\r\nX-Trailer: " GH_PH "\r\n\r\n"
	       "GET / HTTP/1.1\r\n\r\n",
	       0,
	       "POST /up HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
	       "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
	       "GET / HTTP/1.1\r\n\r\n",
	       "");
}

static void test_in_body(void **state)
{
	const struct pd_secret sec[] = {
		{ "GITHUB_TOKEN", (const uint8_t *)GH_VALUE, sizeof(GH_VALUE) - 1,
		  (const uint8_t *)"PH", 2, true, true },
		two[1],
	};
	const struct setup su = { sec, 2, 4096, 64 };

	(void)state;
	expect(&su,
	       "POST /a HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n"
	       "{\"t\":\"PH\"}\n",
	       0, "POST /a HTTP/1.1\r\nContent-Length: 26\r\n\r\n{\"t\":\"" GH_VALUE "\"}\n",
	       "0|body|POST /a HTTP/1.1\n");
	/* chunked: dechunked, a placeholder across chunks found, trailers dropped */
	expect(&su,
	       "POST /b?q=1 HTTP/1.1\r\nX: PH\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "3\r\nab"
	       "P\r\n2\r\nH.\r\n0\r\nT: 1\r\n\r\n"
	       "GET / HTTP/1.1\r\n\r\n",
	       0,
	       "POST /b?q=1 HTTP/1.1\r\nX: " GH_VALUE "\r\nContent-Length: 20\r\n\r\n"
	       "ab" GH_VALUE "."
	       "GET / HTTP/1.1\r\n\r\n",
	       "0|header X|POST /b HTTP/1.1\n");
	/* an unbound placeholder in a buffered body: nothing of the request goes */
	expect(&su,
	       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "4\r\nnpm_\r\nd\r\nZz8yPlaceHldr\r\n0\r\n\r\n",
	       -EPERM, "", "");
}

static void test_too_big(void **state)
{
	const struct pd_secret sec[] = {
		{ "T", (const uint8_t *)"v", 1, (const uint8_t *)"PH", 2, true, true },
	};
	const struct setup small_head = { two, 2, 32, 4096 };
	const struct setup small_body = { sec, 1, 4096, 4 };

	(void)state;
	expect(&small_head, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0,
	       "GET / HTTP/1.1\r\nHost: h\r\n\r\n", "");
	expect(&small_head, "GET / HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\n", -E2BIG, "", NULL);
	expect(&small_head, "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n",
	       -E2BIG, "", NULL);
	expect(&small_body, "POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nPHPH", 0,
	       "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nvv", "0|body|POST / HTTP/1.1\n");
	expect(&small_body, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", -E2BIG, "", NULL);
	expect(&small_body, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n3\r\n",
	       -E2BIG, "", NULL);
	/* streamed bodies have no limit */
	expect(&dflt, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n12345", 0,
	       "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n12345", "");
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
		"chunked\r\n\r\n",
		"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nX : a\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\x01\r\n\r\n",
		"GET / HTTP/2\r\n\r\n",
		"GET  / HTTP/1.1\r\n\r\n",
		"GET / http/1.1\r\n\r\n",
		"connect h:443 HTTP/1.1\r\n\r\n",
		"\x16\x03\x01",
	};

	/* after a chunked head, which went out already */
	static const char *const bad_chunk[] = {
		"x\r\n",
		"\r\n",
		"-1\r\n",
		" 1\r\n",
		"1 x\r\n",
		"1;a\x01\r\n",
		"10000000000000000\r\n",
		"1\r\nab\r\n",
		"1\rx\n",
		"0\r\nT: 1\rx",
	};
	const char *head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	char in[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(&dflt, bad[i], -EPROTO, "", "");
	for (size_t i = 0; i < sizeof(bad_chunk) / sizeof(bad_chunk[0]); i++) {
		(void)snprintf(in, sizeof(in), "%s%s", head, bad_chunk[i]);
		expect(&dflt, in, -EPROTO,
		       strncmp(bad_chunk[i], "1\r\n", 3) == 0
			       ? "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na"
			       : head,
		       "");
	}
	/* a NUL: strlen would stop at it, so fed directly */
	{
		struct pd_subst *s = pd_subst_new(two, 2, 4096, 4096, NULL, NULL);
		struct evbuffer *out = evbuffer_new();
		const char *why = NULL;

		assert_int_equal(pd_subst_feed(s, (const uint8_t *)"GET /\0", 6, out, NULL, &why),
				 -EPROTO);
		assert_non_null(why);
		assert_int_equal(evbuffer_get_length(out), 0);
		evbuffer_free(out);
		pd_subst_free(s);
	}
}

static void test_unbound_in_streamed_body(void **state)
{
	(void)state;
	/* Content-Length: out has the request up to the placeholder */
	expect(&dflt,
	       "POST /a HTTP/1.1\r\nContent-Length: 40\r\n\r\nabc" NPM_PH "defghijklmnopqrstuvw",
	       -EPERM, "POST /a HTTP/1.1\r\nContent-Length: 40\r\n\r\nabc", "");
	/* across chunks: each chunk's bytes are out, the placeholder never whole */
	expect(&dflt,
	       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "6\r\nabnpm_\r\n3\r\nZz8\r\n10\r\nyPlaceHldr123456\r\n0\r\n\r\n",
	       -EPERM,
	       "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "6\r\nabnpm_\r\n3\r\nZz8\r\n10\r\n",
	       "");
	/* a partial placeholder at the end of a body is flushed with it */
	expect(&dflt, "POST /a HTTP/1.1\r\nContent-Length: 6\r\n\r\nabnpm_GET / HTTP/1.1\r\n\r\n",
	       0, "POST /a HTTP/1.1\r\nContent-Length: 6\r\n\r\nabnpm_GET / HTTP/1.1\r\n\r\n", "");
	/* a bound placeholder in a body without in_body passes unchanged */
	expect(&dflt, "POST /a HTTP/1.1\r\nContent-Length: 17\r\n\r\n" GH_PH, 0,
	       "POST /a HTTP/1.1\r\nContent-Length: 17\r\n\r\n" GH_PH, "");
}

static void test_different_lengths(void **state)
{
	const struct pd_secret sec[] = {
		{ "LONG", (const uint8_t *)"a-much-longer-real-value", 24, (const uint8_t *)"$L", 2,
		  true, true },
		{ "SHORT", (const uint8_t *)"s", 1, (const uint8_t *)"$SHORTPH", 8, true, false },
		{ "PREFIX", (const uint8_t *)"p", 1, (const uint8_t *)"$SHORT", 6, true, false },
	};
	const struct setup su = { sec, 3, 4096, 4096 };

	(void)state;
	/* the longest placeholder wins where two match */
	expect(&su, "POST /$L/$SHORTPH/$SHORT HTTP/1.1\r\nContent-Length: 8\r\n\r\n$L$SHORT", 0,
	       "POST /a-much-longer-real-value/s/p HTTP/1.1\r\nContent-Length: 30\r\n\r\n"
	       "a-much-longer-real-value$SHORT",
	       "0|request-line|POST /$L/$SHORTPH/$SHORT HTTP/1.1\n"
	       "1|request-line|POST /$L/$SHORTPH/$SHORT HTTP/1.1\n"
	       "2|request-line|POST /$L/$SHORTPH/$SHORT HTTP/1.1\n");
}

static void test_value_not_allowed(void **state)
{
	const struct pd_secret sec[] = {
		{ "SP", (const uint8_t *)"a b", 3, (const uint8_t *)"PH1", 3, true, false },
		{ "NL", (const uint8_t *)"a\r\nX: 1", 7, (const uint8_t *)"PH2", 3, true, false },
	};
	const struct setup su = { sec, 2, 4096, 4096 };

	(void)state;
	expect(&su, "GET /PH1 HTTP/1.1\r\n\r\n", -EPROTO, "", "");
	expect(&su, "GET / HTTP/1.1\r\nX: PH1\r\n\r\n", 0, "GET / HTTP/1.1\r\nX: a b\r\n\r\n",
	       "0|header X|GET / HTTP/1.1\n");
	/* SECURITY: a value cannot add a header */
	expect(&su, "GET / HTTP/1.1\r\nX: PH2\r\n\r\n", -EPROTO, "", "");
}

static void test_use_records(void **state)
{
	const struct pd_secret sec[] = {
		two[0],
		{ "B", (const uint8_t *)"bv", 2, (const uint8_t *)"BPH", 3, true, true },
	};
	const struct setup su = { sec, 2, 4096, 4096 };

	(void)state;
	/* once per request and secret, the first place it was used, query stripped */
	expect(&su,
	       "GET /x?" GH_PH " HTTP/1.1\r\nA: " GH_PH "\r\nB: BPH\r\n\r\n"
	       "POST http://h/p#f HTTP/1.1\r\nContent-Length: 3\r\n\r\nBPH"
	       "GET /z?BPH HTTP/1.1\r\n\r\n",
	       0,
	       "GET /x?" GH_VALUE " HTTP/1.1\r\nA: " GH_VALUE "\r\nB: bv\r\n\r\n"
	       "POST http://h/p#f HTTP/1.1\r\nContent-Length: 2\r\n\r\nbv"
	       "GET /z?bv HTTP/1.1\r\n\r\n",
	       "0|request-line|GET /x HTTP/1.1\n1|header B|GET /x HTTP/1.1\n"
	       "1|body|POST http://h/p HTTP/1.1\n"
	       "1|request-line|GET /z HTTP/1.1\n");
}

/* Linked to a response side: identity responses asked for, requests and credentials told. */
static void test_response_link(void **state)
{
	/* "u:" GH_VALUE: the credentials the broker builds */
	const char *val_b64 = "dTpnaHBfcmVhbHZhbHVlMTIzNA==";
	struct pd_response *resp = pd_response_new(two, 2);
	struct pd_subst *s = pd_subst_new(two, 2, 4096, 4096, NULL, NULL);
	struct evbuffer *out = evbuffer_new(), *back = evbuffer_new();
	const char *in = "HEAD /a HTTP/1.1\r\nAccept-Encoding: gzip, br\r\nTE: trailers\r\n"
			 "Authorization: Basic dTpnaHBfWHE5elBsYWNlSGxkcg==\r\n\r\n"
			 "GET /b HTTP/1.1\r\n\r\n";
	char *got, expected[512];
	size_t len;

	(void)state;
	assert_non_null(resp);
	assert_non_null(s);
	pd_subst_set_response(s, resp);
	assert_int_equal(pd_subst_feed(s, (const uint8_t *)in, strlen(in), out, NULL, NULL), 0);
	got = drain(out, &len);
	(void)snprintf(expected, sizeof(expected),
		       "HEAD /a HTTP/1.1\r\nAuthorization: Basic %s\r\n"
		       "Accept-Encoding: identity\r\n\r\n"
		       "GET /b HTTP/1.1\r\nAccept-Encoding: identity\r\n\r\n",
		       val_b64);
	assert_string_equal(got, expected);
	free(got);
	/* the response to HEAD has no body, the next one has; the credentials come back as
	 * the sandbox sent them */
	in = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
	     "HTTP/1.1 200 OK\r\nContent-Length: 28\r\n\r\ndTpnaHBfcmVhbHZhbHVlMTIzNA==";
	assert_int_equal(pd_response_feed(resp, (const uint8_t *)in, strlen(in), back, NULL), 0);
	got = drain(back, &len);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
				 "HTTP/1.1 200 OK\r\nContent-Length: 28\r\n\r\n"
				 "dTpnaHBfWHE5elBsYWNlSGxkcg==");
	free(got);
	evbuffer_free(out);
	evbuffer_free(back);
	pd_subst_free(s);
	pd_response_free(resp);
}

static void test_new_invalid(void **state)
{
	const struct pd_secret empty[] = {
		{ "E", (const uint8_t *)"", 0, (const uint8_t *)"P", 1, true, false },
	};

	(void)state;
	assert_null(pd_subst_new(empty, 1, 4096, 4096, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(pd_subst_new(two, 2, 0, 4096, NULL, NULL));
	assert_null(pd_subst_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_line),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_basic_auth),
		cmocka_unit_test(test_proxy_headers_dropped),
		cmocka_unit_test(test_unbound_in_head),
		cmocka_unit_test(test_keepalive_length),
		cmocka_unit_test(test_chunked_streamed),
		cmocka_unit_test(test_in_body),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unbound_in_streamed_body),
		cmocka_unit_test(test_different_lengths),
		cmocka_unit_test(test_value_not_allowed),
		cmocka_unit_test(test_use_records),
		cmocka_unit_test(test_response_link),
		cmocka_unit_test(test_new_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
