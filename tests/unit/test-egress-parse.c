/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress proxy's parsers: HTTP request heads, the server name of a ClientHello, and
 * SOCKS5 greetings and requests.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "egress-parse.h"

static int parse(const char *text, struct pd_http_head *h)
{
	const char *why = NULL;
	int r = pd_http_head_parse(text, strlen(text), h, &why);

	if (r == -EPROTO)
		assert_non_null(why);
	return r;
}

static void test_http_forms(void **state)
{
	struct pd_http_head h;
	const char *req;

	(void)state;
	req = "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\nextra";
	assert_int_equal(parse(req, &h), 0);
	assert_int_equal(h.form, PD_HTTP_CONNECT);
	assert_string_equal(h.host, "pypi.org");
	assert_int_equal(h.port, 443);
	assert_int_equal(h.head_len, strlen(req) - 5);

	assert_int_equal(parse("GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n"
			       "User-Agent: x\r\n\r\n",
			       &h),
			 0);
	assert_int_equal(h.form, PD_HTTP_ABSOLUTE);
	assert_string_equal(h.host, "example.com");
	assert_int_equal(h.port, 80);
	assert_string_equal(h.host_header, "example.com");
	assert_int_equal(h.host_header_port, 0); /* none given: not "80" */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", &h), 0);
	assert_int_equal(h.port, 80);
	assert_int_equal(h.host_header_port, 0);

	req = "POST /upload HTTP/1.0\r\nhOsT:  api.test:8080 \r\n\r\n";
	assert_int_equal(parse(req, &h), 0);
	assert_int_equal(h.form, PD_HTTP_ORIGIN);
	assert_string_equal(h.host, "api.test");
	assert_int_equal(h.port, 8080);
	assert_int_equal(h.target_len, 7);
	assert_memory_equal(req + h.target_offset, "/upload", 7);

	assert_int_equal(parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", &h), 0);
	assert_string_equal(h.host, "::1");
	assert_int_equal(h.port, 8443);
	assert_int_equal(parse("GET http://10.0.0.1:81/ HTTP/1.1\r\n\r\n", &h), 0);
	assert_string_equal(h.host, "10.0.0.1");
	assert_int_equal(h.port, 81);
}

/* Is it HTTP? Decided at the first byte that says no, so other protocols pass at once. */
static void test_http_request_line_check(void **state)
{
	static const struct {
		const char *in;
		int r;
	} cases[] = {
		{ "GET / HTTP/1.1\r\n", 0 },
		{ "get /x?y HTTP/1.0\n", 0 }, /* any case, LF: as the broker reads it */
		{ "\r\n\r\nPOST /a HTTP/1.1\r\nHost: x", 0 },
		{ "", -EAGAIN },
		{ "G", -EAGAIN },
		{ "ping", -EAGAIN },
		{ "GET ", 1 },
		{ "GET /a", 1 },
		{ "GET /a HTTP/1.", 1 },
		{ "GET /a HTTP/1.1\r", 1 },
		{ "\r", -EAGAIN },
		{ "SSH-2.0-OpenSSH_9.2\r\n", -EPROTO }, /* a client banner: no space */
		{ "SET k v\r\n", -EPROTO },		/* a text protocol's line */
		{ "PING\r\n", -EPROTO },
		{ "\xff\x01\x02binary", -EPROTO }, /* binary */
		{ "\x16\x03\x01", -EPROTO },	   /* TLS */
		{ "GET  / HTTP/1.1\r\n", -EPROTO },
		{ "GET / HTTP/2.0\r\n", -EPROTO },
		{ "GET / HTTP/1.1x", -EPROTO },
		{ "GET / HTTP/1.1\rx", -EPROTO },
		{ "\rx", -EPROTO },
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA / HTTP/1.1\r\n", -EPROTO }, /* 33 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = pd_http_request_line_check((const uint8_t *)cases[i].in,
						   strlen(cases[i].in));

		if (r != cases[i].r)
			fail_msg("'%s': expected %d, got %d", cases[i].in, cases[i].r, r);
	}
	/* NUL bytes count */
	assert_int_equal(pd_http_request_line_check((const uint8_t *)"\0\0\0", 3), -EPROTO);
}

static void test_http_incomplete_and_bounds(void **state)
{
	struct pd_http_head h;
	char *big;

	(void)state;
	assert_int_equal(parse("CONNECT a.test:443 HTTP/1.1\r\nHost: a", &h), -EAGAIN);
	assert_int_equal(parse("", &h), -EAGAIN);
	big = malloc(PD_HTTP_HEAD_MAX + 64);
	assert_non_null(big);
	strcpy(big, "GET / HTTP/1.1\r\nHost: a.test\r\nX: ");
	memset(big + strlen(big), 'a', PD_HTTP_HEAD_MAX);
	big[PD_HTTP_HEAD_MAX + 10] = '\0';
	assert_int_equal(parse(big, &h), -E2BIG);
	/* too many headers */
	size_t o = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a.test\r\n");
	for (int i = 0; i < PD_HTTP_HEADERS_MAX + 1; i++)
		o += (size_t)sprintf(big + o, "X-%d: y\r\n", i);
	strcpy(big + o, "\r\n");
	assert_int_equal(parse(big, &h), -E2BIG);
	free(big);
}

static void test_http_refused(void **state)
{
	static const char *const bad[] = {
		"GET / HTTP/1.1\nHost: a.test\n\n",			  /* bare LF */
		"GET / HTTP/1.1\r\nHost: a.test\nX: y\r\n\r\n",		  /* a bare LF inside */
		"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", /* two Hosts */
		"GET / HTTP/1.1\r\n\r\n",				  /* origin-form, no Host */
		"GET http://a.test@evil.test/ HTTP/1.1\r\n\r\n",	  /* credentials */
		"GET https://a.test/ HTTP/1.1\r\n\r\n",			  /* https: use CONNECT */
		"CONNECT a.test HTTP/1.1\r\n\r\n",			  /* no port */
		"CONNECT a.test:0 HTTP/1.1\r\n\r\n",
		"CONNECT a.test:99999 HTTP/1.1\r\n\r\n",
		"get / HTTP/1.1\r\nHost: a.test\r\n\r\n", /* lower-case method */
		"GET / HTTP/2.0\r\nHost: a.test\r\n\r\n",
		"GET  / HTTP/1.1\r\nHost: a.test\r\n\r\n",		/* two spaces */
		"GET / HTTP/1.1\r\nHost: a.test\r\n X: folded\r\n\r\n", /* obs-fold */
		"GET / HTTP/1.1\r\nHost: a.test\r\nBad Name: v\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a.test\r\nX: a\x01b\r\n\r\n", /* control char */
		"GET / HTTP/1.1\r\nHost: a_.-test\r\n\r\n",	       /* label ends with - */
		"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n",
		"GET \x7f HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n\0", /* fine: NUL after */
	};
	struct pd_http_head h;

	(void)state;
	for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i], &h);

		if (r != -EPROTO)
			fail_msg("case %zu should be refused, got %d", i, r);
	}
	assert_int_equal(parse(bad[sizeof(bad) / sizeof(bad[0]) - 1], &h), 0);
}

/* A ClientHello record with `sni` (NULL: no server_name extension), as a client sends it. */
static size_t client_hello(uint8_t *out, const char *sni, bool other_ext_first)
{
	uint8_t body[1024];
	size_t b = 0, ext_start, n;

	body[b++] = 3, body[b++] = 3;			  /* legacy_version */
	memset(body + b, 0x42, 32), b += 32;		  /* random */
	body[b++] = 32, memset(body + b, 7, 32), b += 32; /* session id */
	body[b++] = 0, body[b++] = 4;			  /* cipher suites */
	body[b++] = 0x13, body[b++] = 0x01, body[b++] = 0x13, body[b++] = 0x02;
	body[b++] = 1, body[b++] = 0; /* compression: null */
	ext_start = b;
	b += 2;
	if (other_ext_first) { /* supported_versions: TLS 1.3 */
		uint8_t e[] = { 0, 43, 0, 3, 2, 3, 4 };
		memcpy(body + b, e, sizeof(e)), b += sizeof(e);
	}
	if (sni) {
		n = strlen(sni);
		body[b++] = 0, body[b++] = 0; /* server_name */
		body[b++] = (uint8_t)((n + 5) >> 8), body[b++] = (uint8_t)(n + 5);
		body[b++] = (uint8_t)((n + 3) >> 8), body[b++] = (uint8_t)(n + 3);
		body[b++] = 0;
		body[b++] = (uint8_t)(n >> 8), body[b++] = (uint8_t)n;
		memcpy(body + b, sni, n), b += n;
	}
	body[ext_start] = (uint8_t)((b - ext_start - 2) >> 8);
	body[ext_start + 1] = (uint8_t)(b - ext_start - 2);
	/* record header, handshake header */
	out[0] = 22, out[1] = 3, out[2] = 1;
	out[3] = (uint8_t)((b + 4) >> 8), out[4] = (uint8_t)(b + 4);
	out[5] = 1, out[6] = 0, out[7] = (uint8_t)(b >> 8), out[8] = (uint8_t)b;
	memcpy(out + 9, body, b);
	return b + 9;
}

static int sni(const uint8_t *buf, size_t len, char *name)
{
	const char *why = NULL;
	int r = pd_tls_sni_parse(buf, len, name, PD_EGRESS_NAME_MAX + 1, &why);

	if (r == -EPROTO)
		assert_non_null(why);
	return r;
}

static void test_sni(void **state)
{
	uint8_t rec[2048], split[2048];
	char name[PD_EGRESS_NAME_MAX + 1];
	size_t n;

	(void)state;
	n = client_hello(rec, "Files.PythonHosted.org", true);
	assert_int_equal(sni(rec, n, name), 0);
	assert_string_equal(name, "files.pythonhosted.org");
	/* every prefix is incomplete, never an error */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(sni(rec, k, name), -EAGAIN);
	/* the same handshake split over two records */
	size_t first = 40, payload = n - 5;
	memcpy(split, rec, 5);
	split[3] = 0, split[4] = (uint8_t)first;
	memcpy(split + 5, rec + 5, first);
	split[5 + first] = 22, split[6 + first] = 3, split[7 + first] = 1;
	split[8 + first] = (uint8_t)((payload - first) >> 8);
	split[9 + first] = (uint8_t)(payload - first);
	memcpy(split + 10 + first, rec + 5 + first, payload - first);
	assert_int_equal(sni(split, n + 5, name), 0);
	assert_string_equal(name, "files.pythonhosted.org");

	n = client_hello(rec, NULL, true);
	assert_int_equal(sni(rec, n, name), -ENOENT);
	n = client_hello(rec, "bad name!", false);
	assert_int_equal(sni(rec, n, name), -EPROTO);
	/* not TLS: an HTTP request on port 443 */
	assert_int_equal(sni((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, name), -EPROTO);
	/* lengths that lie */
	n = client_hello(rec, "a.test", false);
	rec[9 + 2 + 32] = 200; /* session id longer than the body */
	assert_int_equal(sni(rec, n, name), -EPROTO);
	n = client_hello(rec, "a.test", false);
	rec[3] = 0xff, rec[4] = 0xff; /* a record over 16 KiB */
	assert_int_equal(sni(rec, n, name), -EPROTO);
	n = client_hello(rec, "a.test", false);
	rec[5] = 2; /* a ServerHello */
	assert_int_equal(sni(rec, n, name), -EPROTO);
}

/* a ClientHello as OpenSSL (through Python's ssl module) really sends it */
static void test_sni_real_client(void **state)
{
	const char *src = getenv("PADDOCK_SOURCE_DIR");
	char path[4096], name[PD_EGRESS_NAME_MAX + 1];
	uint8_t buf[4096];
	FILE *f;
	size_t n;

	(void)state;
	if (!src)
		skip();
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/tls-sni/python-clienthello", src);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(sni(buf, n, name), 0);
	assert_string_equal(name, "files.pythonhosted.org");
}

static int greeting(const uint8_t *buf, size_t len, size_t *ret_len, bool *ret_noauth)
{
	const char *why = NULL;
	int r = pd_socks5_greeting_parse(buf, len, ret_len, ret_noauth, &why);

	if (r == -EPROTO)
		assert_non_null(why);
	return r;
}

static void test_socks5_greeting(void **state)
{
	static const uint8_t noauth[] = { 5, 2, 0x02, 0x00, 0xaa }; /* 0xaa: the request's */
	static const uint8_t userpass[] = { 5, 1, 0x02 };
	static const uint8_t v4[] = { 4, 1, 0x00 };
	static const uint8_t none[] = { 5, 0, 0x00 };
	size_t n = 99;
	bool ok = false;

	(void)state;
	assert_int_equal(greeting(noauth, sizeof(noauth), &n, &ok), 0);
	assert_int_equal(n, 4);
	assert_true(ok);
	for (size_t k = 0; k < 4; k++)
		assert_int_equal(greeting(noauth, k, &n, &ok), -EAGAIN);
	assert_int_equal(greeting(userpass, sizeof(userpass), &n, &ok), 0);
	assert_int_equal(n, 3);
	assert_false(ok);
	for (size_t k = 0; k < sizeof(userpass); k++)
		assert_int_equal(greeting(userpass, k, &n, &ok), -EAGAIN);
	/* wrong version and no methods are final from the first byte that shows it */
	assert_int_equal(greeting(v4, sizeof(v4), &n, &ok), -EPROTO);
	assert_int_equal(greeting(v4, 1, &n, &ok), -EPROTO);
	assert_int_equal(greeting(none, 2, &n, &ok), -EPROTO);
	assert_int_equal(greeting(none, sizeof(none), &n, &ok), -EPROTO);
	/* out-parameters untouched on failure */
	assert_int_equal(n, 3);
	assert_false(ok);
}

static int request(const uint8_t *buf, size_t len, struct pd_socks5_request *q)
{
	const char *why = NULL;
	int r = pd_socks5_request_parse(buf, len, q, &why);

	if (r == -EPROTO)
		assert_non_null(why);
	return r;
}

/* every proper prefix of a valid request is incomplete, never an error */
static void assert_prefixes_incomplete(const uint8_t *buf, size_t len)
{
	struct pd_socks5_request q;

	for (size_t k = 0; k < len; k++) {
		int r = request(buf, k, &q);

		if (r != -EAGAIN)
			fail_msg("prefix of %zu bytes: expected -EAGAIN, got %d", k, r);
	}
}

static void test_socks5_request(void **state)
{
	static const uint8_t v4[] = { 5, 1, 0, 1, 11, 22, 33, 1, 0x01, 0xbb, 0xee };
	static const uint8_t name[] = {
		5, 1, 0, 3, 8, 'P', 'y', 'P', 'I', '.', 'o', 'r', 'g', 0, 80
	};
	static const uint8_t v6[] = { 5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0,	   0,
				      0, 0, 0, 0, 0,	0,    0,    0,	  1, 0x1f, 0x90 };
	static const uint8_t bind[] = { 5, 2, 0, 1, 0, 0, 0, 0, 0, 0 };
	static const uint8_t udp[] = { 5, 3, 0, 1, 0, 0, 0, 0, 0, 0 };
	struct pd_socks5_request q;

	(void)state;
	assert_int_equal(request(v4, sizeof(v4), &q), 0);
	assert_int_equal(q.cmd, PD_SOCKS5_CMD_CONNECT);
	assert_int_equal(q.atyp, PD_SOCKS5_ATYP_IPV4);
	assert_int_equal(q.family, AF_INET);
	assert_string_equal(q.host, "11.22.33.1");
	assert_memory_equal(q.addr, v4 + 4, 4);
	assert_int_equal(q.port, 443);
	assert_int_equal(q.len, sizeof(v4) - 1); /* the trailing byte is not its */
	assert_prefixes_incomplete(v4, sizeof(v4) - 1);

	assert_int_equal(request(name, sizeof(name), &q), 0);
	assert_int_equal(q.atyp, PD_SOCKS5_ATYP_DOMAIN);
	assert_int_equal(q.family, AF_UNSPEC);
	assert_string_equal(q.host, "PyPI.org"); /* as given: the caller normalises */
	assert_int_equal(q.port, 80);
	assert_int_equal(q.len, sizeof(name));
	assert_prefixes_incomplete(name, sizeof(name));

	assert_int_equal(request(v6, sizeof(v6), &q), 0);
	assert_int_equal(q.atyp, PD_SOCKS5_ATYP_IPV6);
	assert_int_equal(q.family, AF_INET6);
	assert_string_equal(q.host, "2001:db8::1");
	assert_memory_equal(q.addr, v6 + 4, 16);
	assert_int_equal(q.port, 8080);
	assert_int_equal(q.len, sizeof(v6));
	assert_prefixes_incomplete(v6, sizeof(v6));

	/* BIND and UDP ASSOCIATE parse: refusing them (reply 7) is the caller's */
	assert_int_equal(request(bind, sizeof(bind), &q), 0);
	assert_int_equal(q.cmd, PD_SOCKS5_CMD_BIND);
	assert_string_equal(q.host, "0.0.0.0");
	assert_int_equal(q.port, 0); /* port 0 too */
	assert_int_equal(request(udp, sizeof(udp), &q), 0);
	assert_int_equal(q.cmd, PD_SOCKS5_CMD_UDP_ASSOCIATE);
}

static void test_socks5_domain_bounds(void **state)
{
	uint8_t buf[PD_SOCKS5_REQUEST_MAX + 16];
	struct pd_socks5_request q;

	(void)state;
	/* the longest name allowed, then one byte more */
	buf[0] = 5, buf[1] = 1, buf[2] = 0, buf[3] = 3, buf[4] = PD_EGRESS_NAME_MAX;
	memset(buf + 5, 'a', PD_EGRESS_NAME_MAX);
	buf[5 + PD_EGRESS_NAME_MAX] = 0x01, buf[6 + PD_EGRESS_NAME_MAX] = 0xbb;
	assert_int_equal(request(buf, PD_SOCKS5_REQUEST_MAX, &q), 0);
	assert_int_equal(q.len, PD_SOCKS5_REQUEST_MAX);
	assert_int_equal(strlen(q.host), PD_EGRESS_NAME_MAX);
	assert_int_equal(q.port, 443);
	buf[4] = PD_EGRESS_NAME_MAX + 1;
	memset(buf + 5, 'a', sizeof(buf) - 5);
	assert_int_equal(request(buf, sizeof(buf), &q), -EPROTO);
	assert_int_equal(request(buf, 5, &q), -EPROTO); /* known from the length byte */
	buf[4] = 255;
	assert_int_equal(request(buf, sizeof(buf), &q), -EPROTO);
}

static void test_socks5_refused(void **state)
{
	static const struct {
		uint8_t b[24];
		size_t len;
	} bad[] = {
		{ { 4, 1, 0, 1, 1, 2, 3, 4, 0, 80 }, 10 },	   /* SOCKS4 */
		{ { 5, 0, 0, 1, 1, 2, 3, 4, 0, 80 }, 10 },	   /* command 0 */
		{ { 5, 4, 0, 1, 1, 2, 3, 4, 0, 80 }, 10 },	   /* command 4 */
		{ { 5, 1, 1, 1, 1, 2, 3, 4, 0, 80 }, 10 },	   /* reserved byte */
		{ { 5, 1, 0, 2, 1, 2, 3, 4, 0, 80 }, 10 },	   /* ATYP 2 */
		{ { 5, 1, 0, 0 }, 4 },				   /* ATYP 0 */
		{ { 5, 1, 0, 5, 1, 2, 3, 4, 0, 80 }, 10 },	   /* ATYP 5 */
		{ { 5, 1, 0, 3, 0, 0, 80 }, 7 },		   /* empty name */
		{ { 5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80 }, 10 },	   /* NUL inside */
		{ { 5, 1, 0, 3, 3, 'a', 0 }, 7 },		   /* ... known early */
		{ { 5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80 }, 10 },   /* space */
		{ { 5, 1, 0, 3, 3, 'a', '\n', 'b', 0, 80 }, 10 },  /* control byte */
		{ { 5, 1, 0, 3, 3, 'a', 0x7f, 'b', 0, 80 }, 10 },  /* DEL */
		{ { 5, 1, 0, 3, 3, 'a', 0xc3, 0xa9, 0, 80 }, 10 }, /* not ASCII */
	};
	struct pd_socks5_request q;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = request(bad[i].b, bad[i].len, &q);

		if (r != -EPROTO)
			fail_msg("case %zu should be refused, got %d", i, r);
	}
}

static void test_socks5_reply(void **state)
{
	static const uint8_t want[] = { 5, 7, 0, 1, 0, 0, 0, 0, 0, 0 };
	uint8_t out[PD_SOCKS5_REPLY_LEN];

	(void)state;
	memset(out, 0xaa, sizeof(out));
	assert_int_equal(pd_socks5_reply(PD_SOCKS5_REP_CMD_UNSUPPORTED, out), 10);
	assert_memory_equal(out, want, sizeof(want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_forms),
		cmocka_unit_test(test_http_request_line_check),
		cmocka_unit_test(test_http_incomplete_and_bounds),
		cmocka_unit_test(test_http_refused),
		cmocka_unit_test(test_sni),
		cmocka_unit_test(test_sni_real_client),
		cmocka_unit_test(test_socks5_greeting),
		cmocka_unit_test(test_socks5_request),
		cmocka_unit_test(test_socks5_domain_bounds),
		cmocka_unit_test(test_socks5_refused),
		cmocka_unit_test(test_socks5_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
