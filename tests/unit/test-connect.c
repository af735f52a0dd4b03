/* SPDX-License-Identifier: Apache-2.0 */
/*
 * e2b/connect: the Connect codec the E2B front end reads untrusted requests with, and the
 * answers the E2B SDK's connect-web client parses (checked on a loopback evhttp server).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "connect.h"

#define N(a) (sizeof(a) - 1) /* bytes of a string literal, without its NUL */

/* ---- envelopes ------------------------------------------------------------------------------ */

static void envelope_complete(void **state)
{
	static const uint8_t buf[] = "\x00\x00\x00\x00\x02{}\x02\x00\x00\x00\x00";
	const uint8_t *payload = NULL;
	uint8_t flags = 0xff;
	size_t plen = 99;

	(void)state;
	assert_int_equal(e2b_connect_envelope_parse(buf, N(buf), 100, &flags, &payload, &plen), 7);
	assert_int_equal(flags, 0);
	assert_ptr_equal(payload, buf + 5);
	assert_int_equal(plen, 2);
	/* the second one: end of stream, empty */
	assert_int_equal(
		e2b_connect_envelope_parse(buf + 7, N(buf) - 7, 100, &flags, &payload, &plen), 5);
	assert_int_equal(flags, E2B_CONNECT_FLAG_END);
	assert_int_equal(plen, 0);
	/* a length exactly at the limit is allowed */
	assert_int_equal(e2b_connect_envelope_parse(buf, N(buf), 2, NULL, NULL, NULL), 7);
	/* compressed is a flag the parser knows; the caller refuses it */
	assert_int_equal(e2b_connect_envelope_parse((const uint8_t *)"\x01\0\0\0\0", 5, 0, &flags,
						    NULL, NULL),
			 5);
	assert_int_equal(flags, E2B_CONNECT_FLAG_COMPRESSED);
}

static void envelope_partial(void **state)
{
	static const uint8_t buf[] = "\x00\x00\x00\x00\x03{}}";
	const uint8_t *payload = (const uint8_t *)0x1;
	uint8_t flags = 0x7f;
	size_t plen = 99;

	(void)state;
	for (size_t len = 0; len < N(buf); len++)
		assert_int_equal(e2b_connect_envelope_parse(buf, len, 100, &flags, &payload, &plen),
				 0);
	/* nothing written when nothing was found */
	assert_int_equal(flags, 0x7f);
	assert_ptr_equal(payload, (const uint8_t *)0x1);
	assert_int_equal(plen, 99);
}

static void envelope_refused(void **state)
{
	static const uint8_t big[] = "\x00\xff\xff\xff\xff";
	static const uint8_t over[] = "\x00\x00\x00\x01\x01";
	static const uint8_t flags_bad[] = { 0x03, 0x04, 0x80, 0xff, 0x10 };

	(void)state;
	/* the length is judged as soon as the header is in, before any payload */
	assert_int_equal(
		e2b_connect_envelope_parse(big, 5, E2B_CONNECT_MAX_MESSAGE, NULL, NULL, NULL),
		-EMSGSIZE);
	assert_int_equal(e2b_connect_envelope_parse(over, 5, 256, NULL, NULL, NULL), -EMSGSIZE);
	assert_int_equal(e2b_connect_envelope_parse(over, 5, 257, NULL, NULL, NULL), 0);
	for (size_t i = 0; i < sizeof(flags_bad); i++) {
		uint8_t b[6] = { flags_bad[i], 0, 0, 0, 1, '1' };

		assert_int_equal(e2b_connect_envelope_parse(b, sizeof(b), 10, NULL, NULL, NULL),
				 -EPROTO);
		/* one byte is enough to know */
		assert_int_equal(e2b_connect_envelope_parse(b, 1, 10, NULL, NULL, NULL), -EPROTO);
	}
}

static void envelope_add(void **state)
{
	struct evbuffer *b = evbuffer_new();
	const uint8_t *payload;
	uint8_t flags, *p;
	size_t plen;

	(void)state;
	assert_non_null(b);
	assert_int_equal(e2b_connect_envelope_add(b, 0, "{\"a\":1}", 7), 0);
	assert_int_equal(e2b_connect_envelope_add(b, E2B_CONNECT_FLAG_END, NULL, 0), 0);
	assert_int_equal(evbuffer_get_length(b), 17);
	p = evbuffer_pullup(b, -1);
	assert_memory_equal(p, "\x00\x00\x00\x00\x07{\"a\":1}\x02\x00\x00\x00\x00", 17);
	assert_int_equal(e2b_connect_envelope_parse(p, 17, 100, &flags, &payload, &plen), 12);
	assert_memory_equal(payload, "{\"a\":1}", 7);
	evbuffer_free(b);
}

/* ---- requests ------------------------------------------------------------------------------- */

/* Decodes and expects a refusal with `code` and a message holding `needle`. */
static void expect_refused(const void *body, size_t len, bool streaming, enum e2b_connect_code code,
			   const char *needle)
{
	enum e2b_connect_code got = _E2B_CONNECT_CODE_MAX;
	char msg[256] = "";
	json_t *v = e2b_connect_decode_request(body, len, streaming, &got, msg, sizeof(msg));

	assert_null(v);
	assert_string_equal(e2b_connect_code_name(got), e2b_connect_code_name(code));
	if (!strstr(msg, needle))
		fail_msg("message '%s' does not say '%s'", msg, needle);
}

static void expect_object(const void *body, size_t len, bool streaming, const char *key,
			  json_int_t value)
{
	enum e2b_connect_code code = _E2B_CONNECT_CODE_MAX;
	char msg[256] = "";
	json_t *v = e2b_connect_decode_request(body, len, streaming, &code, msg, sizeof(msg));

	if (!v)
		fail_msg("refused (%s): %s", e2b_connect_code_name(code), msg);
	assert_true(json_is_object(v));
	if (key)
		assert_int_equal(json_integer_value(json_object_get(v, key)), value);
	else
		assert_int_equal(json_object_size(v), 0);
	json_decref(v);
}

static void decode_streaming(void **state)
{
	static const uint8_t ok[] = "\x00\x00\x00\x00\x07{\"a\":1}";
	static const uint8_t two[] = "\x00\x00\x00\x00\x02{}\x00\x00\x00\x00\x02{}";
	uint8_t big[5] = { 0, 0, 0x40, 0, 1 }; /* 4 MiB + 1 */

	(void)state;
	expect_object(ok, N(ok), true, "a", 1);
	expect_refused("", 0, true, E2B_CONNECT_INVALID_ARGUMENT, "got 0 bytes");
	expect_refused(ok, 3, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "expected one Connect envelope (5-byte header + JSON message), got 3 bytes");
	expect_refused(ok, N(ok) - 1, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "announces a 7-byte message but the body holds 6");
	expect_refused(two, N(two), true, E2B_CONNECT_INVALID_ARGUMENT, "found 7 more bytes");
	expect_refused("\x00\x00\x00\x00\x02{}x", 8, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "found 1 more bytes");
	expect_refused("\x02\x00\x00\x00\x02{}", 7, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "end-of-stream");
	expect_refused("\x01\x00\x00\x00\x02{}", 7, true, E2B_CONNECT_UNIMPLEMENTED,
		       "compression was not negotiated");
	expect_refused("\x03\x00\x00\x00\x02{}", 7, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "flags are 0x03");
	expect_refused("\x80", 1, true, E2B_CONNECT_INVALID_ARGUMENT, "flags are 0x80");
	expect_refused(big, sizeof(big), true, E2B_CONNECT_RESOURCE_EXHAUSTED, "4194304 bytes");
	/* an empty payload is not a JSON object (connect-go says the same) */
	expect_refused("\x00\x00\x00\x00\x00", 5, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "not valid JSON");
	expect_refused("\x00\x00\x00\x00\x02[]", 7, true, E2B_CONNECT_INVALID_ARGUMENT,
		       "must be a JSON object, got an array");
}

static void decode_unary(void **state)
{
	uint8_t *huge;

	(void)state;
	expect_object("", 0, false, NULL, 0);
	expect_object(NULL, 0, false, NULL, 0);
	expect_object("{\"pid\":42}", 10, false, "pid", 42);
	expect_object(" {} \n", 5, false, NULL, 0);
	expect_refused("[]", 2, false, E2B_CONNECT_INVALID_ARGUMENT,
		       "the request body must be a JSON object, got an array");
	expect_refused("\"x\"", 3, false, E2B_CONNECT_INVALID_ARGUMENT, "got a string");
	expect_refused("1", 1, false, E2B_CONNECT_INVALID_ARGUMENT, "got a number");
	expect_refused("null", 4, false, E2B_CONNECT_INVALID_ARGUMENT, "got null");
	expect_refused("{", 1, false, E2B_CONNECT_INVALID_ARGUMENT, "not valid JSON");
	expect_refused("{} {}", 5, false, E2B_CONNECT_INVALID_ARGUMENT, "not valid JSON");
	expect_refused("{\"a\":1,\"a\":2}", 13, false, E2B_CONNECT_INVALID_ARGUMENT, "duplicate");
	/* the body is not NUL-terminated: the length is what counts */
	expect_object("{}garbage", 2, false, NULL, 0);
	/* over the limit: refused before it is parsed */
	huge = malloc(E2B_CONNECT_MAX_MESSAGE + 1);
	assert_non_null(huge);
	memset(huge, ' ', E2B_CONNECT_MAX_MESSAGE + 1);
	huge[0] = '{';
	huge[E2B_CONNECT_MAX_MESSAGE] = '}';
	expect_refused(huge, E2B_CONNECT_MAX_MESSAGE + 1, false, E2B_CONNECT_RESOURCE_EXHAUSTED,
		       "over the limit of 4194304 bytes");
	huge[E2B_CONNECT_MAX_MESSAGE - 1] = '}';
	expect_object(huge, E2B_CONNECT_MAX_MESSAGE, false, NULL, 0);
	free(huge);
}

static void decode_small_msg(void **state)
{
	enum e2b_connect_code code;
	char msg[8];

	(void)state;
	/* a short buffer gets a truncated, terminated sentence */
	assert_null(e2b_connect_decode_request((const uint8_t *)"[]", 2, false, &code, msg,
					       sizeof(msg)));
	assert_int_equal(strlen(msg), sizeof(msg) - 1);
	assert_int_equal(code, E2B_CONNECT_INVALID_ARGUMENT);
	assert_null(e2b_connect_decode_request((const uint8_t *)"[]", 2, false, &code, NULL, 0));
	assert_int_equal(code, E2B_CONNECT_INVALID_ARGUMENT);
}

static void timeout_header(void **state)
{
	static const char *const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1a", "0x10", "1.5", "12345678901", "１", "1\n",
	};

	(void)state;
	assert_true(e2b_connect_parse_timeout(NULL) == 0);
	assert_true(e2b_connect_parse_timeout("1500") == 1.5);
	assert_true(e2b_connect_parse_timeout("1") == 0.001);
	assert_true(e2b_connect_parse_timeout("0") == 0);
	assert_true(e2b_connect_parse_timeout("0000000001") == 0.001);
	assert_true(e2b_connect_parse_timeout("9999999999") == 9999999.999);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (e2b_connect_parse_timeout(bad[i]) != -1)
			fail_msg("'%s' was accepted", bad[i]);
}

/* ---- protobuf JSON -------------------------------------------------------------------------- */

/* e2b_pbjson_int64 of the JSON text s: true and *ret, or false with *ret untouched. */
static bool int64_of(const char *s, int64_t *ret)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
	bool ok;

	assert_non_null(v);
	ok = e2b_pbjson_int64(v, ret);
	json_decref(v);
	return ok;
}

static bool uint32_of(const char *s, uint32_t *ret)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
	bool ok;

	assert_non_null(v);
	ok = e2b_pbjson_uint32(v, ret);
	json_decref(v);
	return ok;
}

static void pbjson_int64(void **state)
{
	static const struct {
		const char *json;
		int64_t value;
	} good[] = {
		{ "0", 0 },
		{ "42", 42 },
		{ "-42", -42 },
		{ "\"42\"", 42 },
		{ "\"-42\"", -42 },
		{ "\"007\"", 7 },
		{ "\"-0\"", 0 },
		{ "\"9223372036854775807\"", INT64_MAX },
		{ "\"-9223372036854775808\"", INT64_MIN },
		{ "9223372036854775807", INT64_MAX },
		{ "-9223372036854775808", INT64_MIN },
		{ "1.0", 1 },
		{ "1e3", 1000 },
		{ "-2.0", -2 },
		{ "-9.2233720368547758e18", INT64_MIN },
		{ "null", 0 },
	};
	static const char *const bad[] = {
		"\"9223372036854775808\"",
		"\"-9223372036854775809\"",
		"\"99999999999999999999\"",
		"\"\"",
		"\"-\"",
		"\"+1\"",
		"\" 1\"",
		"\"1 \"",
		"\"1e3\"",
		"\"1.0\"",
		"\"0x10\"",
		"\"--1\"",
		"1.5",
		"9.3e18",
		"-9.3e18",
		"9.2233720368547758e18",
		"true",
		"[]",
		"{}",
	};
	int64_t r;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		r = 12345;
		if (!int64_of(good[i].json, &r))
			fail_msg("%s refused", good[i].json);
		assert_int_equal(r, good[i].value);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = 12345;
		if (int64_of(bad[i], &r))
			fail_msg("%s accepted as %lld", bad[i], (long long)r);
		assert_int_equal(r, 12345);
	}
	r = 12345;
	assert_true(e2b_pbjson_int64(NULL, &r));
	assert_int_equal(r, 0);
}

/* "9\u00009" must not read as 9, nor "/a\u0000/b" as "/a" (found by fuzz-connect) */
static void pbjson_embedded_nul(void **state)
{
	json_t *num = json_stringn("9\0"
				   "9",
				   3),
	       *path = json_stringn("/a\0/b", 5);
	const char *s = "kept";
	int64_t i = 5;
	uint32_t u = 5;

	(void)state;
	assert_non_null(num);
	assert_non_null(path);
	assert_false(e2b_pbjson_int64(num, &i));
	assert_int_equal(i, 5);
	assert_false(e2b_pbjson_uint32(num, &u));
	assert_int_equal(u, 5);
	assert_false(e2b_pbjson_string(path, &s));
	assert_string_equal(s, "kept");
	json_decref(num);
	json_decref(path);
}

static void pbjson_uint32(void **state)
{
	static const char *const bad[] = {
		"\"4294967296\"", "4294967296", "-1",		"\"-1\"", "\"-0\"",  "\"\"",
		"\"+1\"",	  "0.5",	"4294967296.0", "false",  "\"1e2\"",
	};
	uint32_t r;

	(void)state;
	assert_true(uint32_of("4294967295", &r));
	assert_int_equal(r, UINT32_MAX);
	assert_true(uint32_of("\"4294967295\"", &r));
	assert_int_equal(r, UINT32_MAX);
	assert_true(uint32_of("\"17\"", &r));
	assert_int_equal(r, 17);
	assert_true(uint32_of("2.0", &r));
	assert_int_equal(r, 2);
	assert_true(uint32_of("-0.0", &r));
	assert_int_equal(r, 0);
	r = 5;
	assert_true(uint32_of("null", &r));
	assert_int_equal(r, 0);
	r = 5;
	assert_true(e2b_pbjson_uint32(NULL, &r));
	assert_int_equal(r, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = 12345;
		if (uint32_of(bad[i], &r))
			fail_msg("%s accepted as %u", bad[i], r);
		assert_int_equal(r, 12345);
	}
}

static void pbjson_bool_string(void **state)
{
	json_t *t = json_true(), *f = json_false(), *s = json_string("hi"), *n = json_null(),
	       *i = json_integer(1), *str_true = json_string("true");
	const char *str = NULL;
	bool b = false;

	(void)state;
	assert_true(e2b_pbjson_bool(t, &b));
	assert_true(b);
	assert_true(e2b_pbjson_bool(f, &b));
	assert_false(b);
	b = true;
	assert_true(e2b_pbjson_bool(NULL, &b));
	assert_false(b);
	b = true;
	assert_true(e2b_pbjson_bool(n, &b));
	assert_false(b);
	b = true;
	assert_false(e2b_pbjson_bool(i, &b));
	assert_false(e2b_pbjson_bool(str_true, &b));
	assert_true(b);

	assert_true(e2b_pbjson_string(s, &str));
	assert_string_equal(str, "hi");
	assert_true(e2b_pbjson_string(NULL, &str));
	assert_string_equal(str, "");
	str = NULL;
	assert_true(e2b_pbjson_string(n, &str));
	assert_string_equal(str, "");
	str = "kept";
	assert_false(e2b_pbjson_string(i, &str));
	assert_false(e2b_pbjson_string(t, &str));
	assert_string_equal(str, "kept");
	json_decref(t);
	json_decref(f);
	json_decref(s);
	json_decref(n);
	json_decref(i);
	json_decref(str_true);
}

static void expect_bytes(const char *b64, const void *want, size_t want_len)
{
	json_t *v = json_string(b64);
	uint8_t *got = NULL;
	size_t len = 99;

	assert_non_null(v);
	if (!e2b_pbjson_bytes(v, &got, &len))
		fail_msg("'%s' refused", b64);
	assert_int_equal(len, want_len);
	if (want_len == 0)
		assert_null(got);
	else
		assert_memory_equal(got, want, want_len);
	free(got);
	json_decref(v);
}

static void pbjson_bytes(void **state)
{
	static const char *const bad[] = {
		"a",	       "abcde",	     "ab=c",	 "ab===", "abc==",    "a===",
		"=",	       "====",	     " aGk",	 "aGk\n", "aG k",     "ab*d",
		"abc\xc3\xa9", "aGVsbG8=\t", "aGVs=bG8", "YQ=",	  "YQ==YQ==",
	};
	json_t *i = json_integer(3), *n = json_null();
	uint8_t *got = (uint8_t *)0x1;
	size_t len = 7;

	(void)state;
	expect_bytes("aGVsbG8=", "hello", 5);
	expect_bytes("aGVsbG8", "hello", 5);
	expect_bytes("AAH//g==", "\x00\x01\xff\xfe", 4);
	expect_bytes("AAH__g", "\x00\x01\xff\xfe", 4);
	expect_bytes("AAH__g==", "\x00\x01\xff\xfe", 4);
	expect_bytes("-_8", "\xfb\xff", 2);
	expect_bytes("-_8=", "\xfb\xff", 2);
	expect_bytes("+/+/", "\xfb\xff\xbf", 3);
	expect_bytes("YQ", "a", 1);
	expect_bytes("YQ==", "a", 1);
	expect_bytes("", NULL, 0);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		json_t *v = json_string(bad[k]);

		assert_non_null(v);
		if (e2b_pbjson_bytes(v, &got, &len))
			fail_msg("'%s' accepted", bad[k]);
		json_decref(v);
	}
	assert_false(e2b_pbjson_bytes(i, &got, &len));
	assert_ptr_equal(got, (uint8_t *)0x1);
	assert_int_equal(len, 7);
	assert_true(e2b_pbjson_bytes(NULL, &got, &len));
	assert_null(got);
	assert_int_equal(len, 0);
	got = (uint8_t *)0x1;
	assert_true(e2b_pbjson_bytes(n, &got, &len));
	assert_null(got);
	json_decref(i);
	json_decref(n);
}

static void pbjson_bytes_new(void **state)
{
	json_t *v = e2b_pbjson_bytes_new("\x00\x01\xff\xfe", 4), *e = e2b_pbjson_bytes_new("", 0);
	uint8_t *back = NULL;
	size_t len = 0;

	(void)state;
	assert_string_equal(json_string_value(v), "AAH//g==");
	assert_string_equal(json_string_value(e), "");
	assert_true(e2b_pbjson_bytes(v, &back, &len));
	assert_int_equal(len, 4);
	assert_memory_equal(back, "\x00\x01\xff\xfe", 4);
	free(back);
	json_decref(v);
	json_decref(e);
}

static void expect_timestamp(int64_t sec, long nsec, const char *want)
{
	json_t *v = e2b_pbjson_timestamp_new(sec, nsec);

	if (!v)
		fail_msg("(%lld, %ld) refused", (long long)sec, nsec);
	assert_string_equal(json_string_value(v), want);
	json_decref(v);
}

static void pbjson_timestamp(void **state)
{
	(void)state;
	expect_timestamp(0, 0, "1970-01-01T00:00:00Z");
	expect_timestamp(1704164645, 0, "2024-01-02T03:04:05Z");
	expect_timestamp(1704164645, 500000000, "2024-01-02T03:04:05.500Z");
	expect_timestamp(1704164645, 1000, "2024-01-02T03:04:05.000001Z");
	expect_timestamp(1704164645, 120000, "2024-01-02T03:04:05.000120Z");
	expect_timestamp(1704164645, 1, "2024-01-02T03:04:05.000000001Z");
	expect_timestamp(1704164645, 123456789, "2024-01-02T03:04:05.123456789Z");
	expect_timestamp(1704164645, 999999999, "2024-01-02T03:04:05.999999999Z");
	expect_timestamp(-1, 0, "1969-12-31T23:59:59Z");
	expect_timestamp(-62135596800LL, 0, "0001-01-01T00:00:00Z");
	expect_timestamp(253402300799LL, 0, "9999-12-31T23:59:59Z");
	/* clamped: a sandbox's file can have any mtime, and a listing must still work */
	expect_timestamp(-62135596801LL, 0, "0001-01-01T00:00:00Z");
	expect_timestamp(INT64_MIN, 5, "0001-01-01T00:00:00Z");
	expect_timestamp(253402300800LL, 0, "9999-12-31T23:59:59.999999999Z");
	expect_timestamp(INT64_MAX, 0, "9999-12-31T23:59:59.999999999Z");
	expect_timestamp(0, -1, "1970-01-01T00:00:00Z");
	expect_timestamp(0, 1000000000, "1970-01-01T00:00:00.999999999Z");
}

/* ---- codes ---------------------------------------------------------------------------------- */

static void code_table(void **state)
{
	static const struct {
		enum e2b_connect_code code;
		const char *name;
		int status;
	} want[] = {
		{ E2B_CONNECT_CANCELED, "canceled", 499 },
		{ E2B_CONNECT_UNKNOWN, "unknown", 500 },
		{ E2B_CONNECT_INVALID_ARGUMENT, "invalid_argument", 400 },
		{ E2B_CONNECT_DEADLINE_EXCEEDED, "deadline_exceeded", 504 },
		{ E2B_CONNECT_NOT_FOUND, "not_found", 404 },
		{ E2B_CONNECT_ALREADY_EXISTS, "already_exists", 409 },
		{ E2B_CONNECT_PERMISSION_DENIED, "permission_denied", 403 },
		{ E2B_CONNECT_RESOURCE_EXHAUSTED, "resource_exhausted", 429 },
		{ E2B_CONNECT_FAILED_PRECONDITION, "failed_precondition", 400 },
		{ E2B_CONNECT_ABORTED, "aborted", 409 },
		{ E2B_CONNECT_OUT_OF_RANGE, "out_of_range", 400 },
		{ E2B_CONNECT_UNIMPLEMENTED, "unimplemented", 501 },
		{ E2B_CONNECT_INTERNAL, "internal", 500 },
		{ E2B_CONNECT_UNAVAILABLE, "unavailable", 503 },
		{ E2B_CONNECT_DATA_LOSS, "data_loss", 500 },
		{ E2B_CONNECT_UNAUTHENTICATED, "unauthenticated", 401 },
	};

	(void)state;
	assert_int_equal(sizeof(want) / sizeof(want[0]), _E2B_CONNECT_CODE_MAX);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(want[i].code, i); /* the table above is in enum order */
		assert_string_equal(e2b_connect_code_name(want[i].code), want[i].name);
		assert_int_equal(e2b_connect_code_http_status(want[i].code), want[i].status);
	}
	/* out of range: the protocol's unknown */
	assert_string_equal(e2b_connect_code_name(_E2B_CONNECT_CODE_MAX), "unknown");
	assert_int_equal(e2b_connect_code_http_status(_E2B_CONNECT_CODE_MAX), 500);
	assert_string_equal(e2b_connect_code_name((enum e2b_connect_code) - 1), "unknown");
	assert_int_equal(e2b_connect_code_http_status((enum e2b_connect_code) - 1), 500);
}

static void code_errno(void **state)
{
	static const struct {
		int e;
		enum e2b_connect_code code;
	} want[] = {
		{ ENOENT, E2B_CONNECT_NOT_FOUND },
		{ ESRCH, E2B_CONNECT_NOT_FOUND },
		{ EEXIST, E2B_CONNECT_ALREADY_EXISTS },
		{ EACCES, E2B_CONNECT_PERMISSION_DENIED },
		{ EPERM, E2B_CONNECT_PERMISSION_DENIED },
		{ EROFS, E2B_CONNECT_PERMISSION_DENIED },
		{ EINVAL, E2B_CONNECT_INVALID_ARGUMENT },
		{ ENAMETOOLONG, E2B_CONNECT_INVALID_ARGUMENT },
		{ ENOTDIR, E2B_CONNECT_INVALID_ARGUMENT },
		{ EISDIR, E2B_CONNECT_INVALID_ARGUMENT },
		{ ELOOP, E2B_CONNECT_INVALID_ARGUMENT },
		{ E2BIG, E2B_CONNECT_INVALID_ARGUMENT },
		{ ENOEXEC, E2B_CONNECT_INVALID_ARGUMENT },
		{ ENOTEMPTY, E2B_CONNECT_FAILED_PRECONDITION },
		{ EBUSY, E2B_CONNECT_FAILED_PRECONDITION },
		{ ETXTBSY, E2B_CONNECT_FAILED_PRECONDITION },
		{ EXDEV, E2B_CONNECT_FAILED_PRECONDITION },
		{ ETIMEDOUT, E2B_CONNECT_DEADLINE_EXCEEDED },
		{ ETIME, E2B_CONNECT_DEADLINE_EXCEEDED },
		{ ENOSPC, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ EDQUOT, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ EMFILE, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ ENFILE, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ EAGAIN, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ ENOMEM, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ EFBIG, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ EMSGSIZE, E2B_CONNECT_RESOURCE_EXHAUSTED },
		{ ERANGE, E2B_CONNECT_OUT_OF_RANGE },
		{ EOVERFLOW, E2B_CONNECT_OUT_OF_RANGE },
		{ ECANCELED, E2B_CONNECT_CANCELED },
		{ ENOSYS, E2B_CONNECT_UNIMPLEMENTED },
		{ EOPNOTSUPP, E2B_CONNECT_UNIMPLEMENTED },
		{ ECONNREFUSED, E2B_CONNECT_UNAVAILABLE },
		{ ECONNRESET, E2B_CONNECT_UNAVAILABLE },
		{ ENOTCONN, E2B_CONNECT_UNAVAILABLE },
		{ EPIPE, E2B_CONNECT_UNAVAILABLE },
		{ EIO, E2B_CONNECT_INTERNAL },
		{ EBADF, E2B_CONNECT_INTERNAL },
		{ 4095, E2B_CONNECT_INTERNAL },
		{ 0, E2B_CONNECT_UNKNOWN },
		{ INT_MAX, E2B_CONNECT_INTERNAL },
		{ INT_MIN, E2B_CONNECT_INTERNAL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int e = want[i].e;

		if (e2b_connect_code_from_errno(e) != want[i].code)
			fail_msg("errno %d: %s, expected %s", e,
				 e2b_connect_code_name(e2b_connect_code_from_errno(e)),
				 e2b_connect_code_name(want[i].code));
		if (e != INT_MIN)
			assert_int_equal(e2b_connect_code_from_errno(-e), want[i].code);
	}
}

/* ---- answers, on a loopback evhttp server --------------------------------------------------- */

struct response {
	struct event_base *base;
	int status;
	char type[64];
	uint8_t body[4096];
	size_t len;
	bool done;
};

typedef void answer_fn(struct evhttp_request *req);

static void on_request(struct evhttp_request *req, void *arg)
{
	answer_fn *answer = (answer_fn *)(uintptr_t)arg;

	answer(req);
}

static void on_response(struct evhttp_request *req, void *arg)
{
	struct response *r = arg;

	r->done = true;
	event_base_loopbreak(r->base);
	if (!req)
		return;
	r->status = evhttp_request_get_response_code(req);
	const char *t = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	snprintf(r->type, sizeof(r->type), "%s", t ? t : "");
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	r->len = evbuffer_get_length(in);
	assert_true(r->len <= sizeof(r->body));
	evbuffer_remove(in, r->body, r->len);
}

/* Serves one POST with `answer` and fills *r with what a client received. */
static void exchange(answer_fn *answer, struct response *r)
{
	struct event_base *base = event_base_new();
	struct evhttp *http = evhttp_new(base);
	struct evhttp_bound_socket *sock;
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	struct evhttp_connection *conn;
	struct evhttp_request *req;

	assert_non_null(base);
	assert_non_null(http);
	memset(r, 0, sizeof(*r));
	r->base = base;
	evhttp_set_gencb(http, on_request, (void *)(uintptr_t)answer);
	sock = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	if (!sock)
		skip(); /* no loopback here */
	assert_int_equal(
		getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&sa, &salen), 0);
	conn = evhttp_connection_base_new(base, NULL, "127.0.0.1", ntohs(sa.sin_port));
	assert_non_null(conn);
	req = evhttp_request_new(on_response, r);
	assert_non_null(req);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host", "127.0.0.1");
	assert_int_equal(evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/rpc"), 0);
	while (!r->done)
		assert_true(event_base_dispatch(base) >= 0);
	evhttp_connection_free(conn);
	evhttp_free(http);
	event_base_free(base);
	assert_true(r->status != 0);
}

/* The payload of the envelope at *off in r's body, with its flags; moves *off past it. */
static json_t *next_envelope(const struct response *r, size_t *off, uint8_t *ret_flags)
{
	const uint8_t *payload;
	size_t plen;
	long n;

	n = e2b_connect_envelope_parse(r->body + *off, r->len - *off, sizeof(r->body), ret_flags,
				       &payload, &plen);
	assert_true(n > 0);
	*off += (size_t)n;
	return json_loadb((const char *)payload, plen, 0, NULL);
}

static void body_is_from(const struct response *r, size_t off, const char *want)
{
	assert_int_equal(r->len - off, strlen(want));
	assert_memory_equal(r->body + off, want, r->len - off);
}

static void body_is(const struct response *r, const char *want)
{
	body_is_from(r, 0, want);
}

static void answer_unary(struct evhttp_request *req)
{
	e2b_connect_reply(req, json_pack("{s:i}", "pid", 7));
}

static void answer_unary_error(struct evhttp_request *req)
{
	e2b_connect_reply_error(req, E2B_CONNECT_NOT_FOUND, "file '%s' not found", "/x");
}

static void answer_bad_utf8(struct evhttp_request *req)
{
	e2b_connect_reply_error(req, E2B_CONNECT_INVALID_ARGUMENT, "name '%s'", "a\xff\xc3");
}

static void answer_stream(struct evhttp_request *req)
{
	bool started = false;

	e2b_connect_stream_send(req, &started, json_pack("{s:i}", "n", 1));
	assert_true(started);
	e2b_connect_stream_send(req, &started, json_pack("{s:i}", "n", 2));
	e2b_connect_stream_end(req, &started, -1, NULL);
}

static void answer_stream_error(struct evhttp_request *req)
{
	bool started = false;

	/* an error before any message is still a 200 and an end-of-stream */
	e2b_connect_stream_end(req, &started, E2B_CONNECT_DEADLINE_EXCEEDED, "ran for %d s", 3);
	assert_true(started);
}

static void replies(void **state)
{
	struct response r;
	size_t off = 0;
	uint8_t flags;
	json_t *m;

	(void)state;
	exchange(answer_unary, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.type, "application/json");
	body_is(&r, "{\"pid\":7}");

	exchange(answer_unary_error, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.type, "application/json");
	body_is(&r, "{\"code\":\"not_found\",\"message\":\"file '/x' not found\"}");

	exchange(answer_bad_utf8, &r);
	assert_int_equal(r.status, 400);
	body_is(&r, "{\"code\":\"invalid_argument\",\"message\":\"name 'a?\?'\"}");

	exchange(answer_stream, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.type, "application/connect+json");
	for (int n = 1; n <= 2; n++) {
		m = next_envelope(&r, &off, &flags);
		assert_int_equal(flags, 0);
		assert_int_equal(json_integer_value(json_object_get(m, "n")), n);
		json_decref(m);
	}
	m = next_envelope(&r, &off, &flags);
	assert_int_equal(flags, E2B_CONNECT_FLAG_END);
	assert_int_equal(json_object_size(m), 0);
	json_decref(m);
	assert_int_equal(off, r.len);

	off = 0;
	exchange(answer_stream_error, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.type, "application/connect+json");
	m = next_envelope(&r, &off, &flags);
	assert_int_equal(off, r.len); /* one envelope, nothing else */
	assert_int_equal(flags, E2B_CONNECT_FLAG_END);
	assert_memory_equal(r.body, "\x02\x00\x00\x00\x3e", 5);
	body_is_from(&r, 5,
		     "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"ran for 3 s\"}}");
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(envelope_complete),   cmocka_unit_test(envelope_partial),
		cmocka_unit_test(envelope_refused),    cmocka_unit_test(envelope_add),
		cmocka_unit_test(decode_streaming),    cmocka_unit_test(decode_unary),
		cmocka_unit_test(decode_small_msg),    cmocka_unit_test(timeout_header),
		cmocka_unit_test(pbjson_int64),	       cmocka_unit_test(pbjson_uint32),
		cmocka_unit_test(pbjson_embedded_nul), cmocka_unit_test(pbjson_bool_string),
		cmocka_unit_test(pbjson_bytes),	       cmocka_unit_test(pbjson_bytes_new),
		cmocka_unit_test(pbjson_timestamp),    cmocka_unit_test(code_table),
		cmocka_unit_test(code_errno),	       cmocka_unit_test(replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
