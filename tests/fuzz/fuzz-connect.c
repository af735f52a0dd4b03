/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the Connect codec of the E2B front end (src/e2b/connect.c) with what a hostile
 * client sends. The first byte is the mode: bit 0 picks streaming or unary decoding, bit 4
 * a small envelope limit; the rest is the input, fed to every parser:
 *  - e2b_connect_envelope_parse, envelope after envelope;
 *  - e2b_connect_decode_request, then every pbjson helper on each field it decoded;
 *  - e2b_connect_parse_timeout on a NUL-terminated copy;
 *  - e2b_pbjson_bytes / int64 / uint32 on a JSON string holding the input, checked against
 *    a re-encoding and strtoll();
 *  - e2b_pbjson_timestamp_new and e2b_connect_code_from_errno on numbers taken from it.
 * A parser must answer every input, keep its results inside the input, and never leak.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x);                    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void envelopes(const uint8_t *in, size_t n, size_t max)
{
	size_t off = 0;

	while (off < n) {
		const uint8_t *payload = NULL;
		uint8_t flags = 0xff;
		size_t plen = SIZE_MAX;
		long r =
			e2b_connect_envelope_parse(in + off, n - off, max, &flags, &payload, &plen);

		CHECK(r == 0 || r == -EPROTO || r == -EMSGSIZE || (r >= 5 && (size_t)r <= n - off));
		if (r <= 0) {
			/* nothing was written */
			CHECK(flags == 0xff && payload == NULL && plen == SIZE_MAX);
			return;
		}
		CHECK(flags <= E2B_CONNECT_FLAG_END);
		CHECK(payload == in + off + 5 && plen == (size_t)r - 5 && plen <= max);
		off += (size_t)r;
	}
}

/* Every helper on v: each either fills its result or refuses, and never both. */
static void field(json_t *v)
{
	const char *s = NULL;
	uint8_t *bytes = (uint8_t *)&s;
	size_t blen = SIZE_MAX;
	int64_t i = 1;
	uint32_t u = 1;
	bool b = true;

	if (!e2b_pbjson_int64(v, &i))
		CHECK(i == 1);
	if (!e2b_pbjson_uint32(v, &u))
		CHECK(u == 1);
	if (e2b_pbjson_bool(v, &b))
		CHECK(b == json_is_true(v));
	if (e2b_pbjson_string(v, &s))
		CHECK(s != NULL);
	if (e2b_pbjson_bytes(v, &bytes, &blen)) {
		CHECK((bytes == NULL) == (blen == 0));
		free(bytes);
	} else {
		CHECK(bytes == (uint8_t *)&s && blen == SIZE_MAX);
	}
}

static void decode(const uint8_t *in, size_t n, bool streaming)
{
	enum e2b_connect_code code = _E2B_CONNECT_CODE_MAX;
	char msg[128];
	const char *key;
	json_t *v, *f;

	memset(msg, 0, sizeof(msg));
	v = e2b_connect_decode_request(in, n, streaming, &code, msg, sizeof(msg));
	if (!v) {
		/* a refusal always has a code and a sentence */
		CHECK(code < _E2B_CONNECT_CODE_MAX && msg[0] != '\0' &&
		      msg[sizeof(msg) - 1] == '\0');
		return;
	}
	CHECK(json_is_object(v) && code == _E2B_CONNECT_CODE_MAX);
	CHECK(!streaming || (n >= 5 && in[0] == 0));
	json_object_foreach(v, key, f)
	{
		field(f);
	}
	json_decref(v);
}

static void timeout(const uint8_t *in, size_t n)
{
	char s[16];
	double t;

	n = n < sizeof(s) - 1 ? n : sizeof(s) - 1;
	memcpy(s, in, n);
	s[n] = '\0';
	t = e2b_connect_parse_timeout(s);
	if (t == -1)
		return;
	/* accepted: 1 to 10 digits, nothing else */
	CHECK(t >= 0 && t <= 9999999.999);
	CHECK(strlen(s) >= 1 && strlen(s) <= 10 && strspn(s, "0123456789") == strlen(s));
}

/* A decoded value re-encodes to a string that decodes to the same bytes. */
static void bytes_round_trip(json_t *v)
{
	uint8_t *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	json_t *again;

	if (!e2b_pbjson_bytes(v, &a, &alen))
		return;
	CHECK(alen <= json_string_length(v) / 4 * 3 + 2);
	again = e2b_pbjson_bytes_new(a, alen);
	CHECK(again != NULL);
	CHECK(e2b_pbjson_bytes(again, &b, &blen));
	CHECK(alen == blen && (alen == 0 || memcmp(a, b, alen) == 0));
	json_decref(again);
	free(a);
	free(b);
}

/* An optional '-', then digits only: what both integer helpers accept in a string. */
static bool plain_integer(const char *s, size_t n)
{
	size_t neg = s[0] == '-';

	return strlen(s) == n && n > neg && strspn(s + neg, "0123456789") == n - neg;
}

/* The integer helpers agree with strtoll() on strings. */
static void integers(json_t *v, const char *s, size_t n)
{
	bool plain = plain_integer(s, n);
	int64_t i = 0;
	uint32_t u = 0;
	long long ll;
	bool in_range;

	errno = 0;
	ll = strtoll(s, NULL, 10);
	in_range = plain && errno == 0;
	CHECK(e2b_pbjson_int64(v, &i) == in_range);
	CHECK(!in_range || i == ll);
	in_range = in_range && s[0] != '-' && ll <= UINT32_MAX;
	CHECK(e2b_pbjson_uint32(v, &u) == in_range);
	CHECK(!in_range || u == ll);
}

static void numbers(const uint8_t *in, size_t n)
{
	int64_t sec = 0;
	int32_t nsec = 0, e = 0;
	json_t *t;

	if (n < 16)
		return;
	memcpy(&sec, in, 8);
	memcpy(&nsec, in + 8, 4);
	memcpy(&e, in + 12, 4);
	CHECK(e2b_connect_code_from_errno(e) < _E2B_CONNECT_CODE_MAX);
	/* keep most of them in range, or nothing but clamping gets tested */
	if (in[0] & 1)
		sec %= 253402300799LL;
	t = e2b_pbjson_timestamp_new(sec, nsec);
	CHECK(t != NULL); /* out of range is clamped */
	const char *s = json_string_value(t);
	size_t len = strlen(s);

	CHECK(len == 20 || len == 24 || len == 27 || len == 30);
	CHECK(s[len - 1] == 'Z' && s[4] == '-' && s[7] == '-' && s[10] == 'T');
	if (sec >= -62135596800LL && sec <= 253402300799LL && nsec >= 0 && nsec <= 999999999)
		CHECK((len == 20) == (nsec == 0));
	json_decref(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	json_t *s;
	char *copy;

	if (size < 1 || size > (1u << 20))
		return 0;
	envelopes(in, n, data[0] & 0x10 ? 64 : E2B_CONNECT_MAX_MESSAGE);
	decode(in, n, data[0] & 1);
	timeout(in, n);
	numbers(in, n);

	copy = malloc(n + 1);
	CHECK(copy != NULL);
	memcpy(copy, in, n);
	copy[n] = '\0';
	/* _nocheck: a hostile string may hold anything, NUL and invalid UTF-8 included */
	s = json_stringn_nocheck(copy, n);
	CHECK(s != NULL);
	bytes_round_trip(s);
	integers(s, copy, n);
	json_decref(s);
	free(copy);
	return 0;
}
