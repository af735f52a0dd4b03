/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DNS filter's messages, checked against glibc's resolver library: queries made by
 * res_mkquery() are parsed, and answers are read back with ns_initparse()/ns_parserr().
 */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <resolv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "egress-dns.h"

static int make_query(const char *name, int type, uint8_t *buf, size_t size)
{
	int n = res_mkquery(ns_o_query, name, ns_c_in, type, NULL, 0, NULL, buf, (int)size);

	assert_true(n > 12);
	return n;
}

static void test_parse_real_queries(void **state)
{
	uint8_t buf[PD_DNS_MSG_MAX];
	struct pd_dns_query q;
	uint16_t id = 0;
	int n;

	(void)state;
	n = make_query("Files.PythonHosted.org.", ns_t_a, buf, sizeof(buf));
	assert_int_equal(pd_dns_query_parse(buf, (size_t)n, &q, &id), 0);
	assert_string_equal(q.name, "files.pythonhosted.org");
	assert_int_equal(q.qtype, PD_DNS_TYPE_A);
	assert_int_equal(q.qclass, 1);
	assert_int_equal(q.id, id);
	assert_int_equal(q.id, (buf[0] << 8) | buf[1]);
	n = make_query("ipv6.test", ns_t_aaaa, buf, sizeof(buf));
	assert_int_equal(pd_dns_query_parse(buf, (size_t)n, &q, &id), 0);
	assert_int_equal(q.qtype, PD_DNS_TYPE_AAAA);
}

static void test_refused_queries(void **state)
{
	uint8_t buf[PD_DNS_MSG_MAX], bad[PD_DNS_MSG_MAX];
	struct pd_dns_query q;
	uint16_t id;
	int n;

	(void)state;
	n = make_query("a.test", ns_t_a, buf, sizeof(buf));
	assert_int_equal(pd_dns_query_parse(buf, 11, &q, &id), -EPROTO); /* short */
	for (int k = 12; k < n; k++)
		assert_int_equal(pd_dns_query_parse(buf, (size_t)k, &q, &id), -EPROTO);
	memcpy(bad, buf, (size_t)n);
	bad[2] |= 0x80; /* a response */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
	assert_int_equal(id, (buf[0] << 8) | buf[1]); /* the id, for a FORMERR */
	memcpy(bad, buf, (size_t)n);
	bad[5] = 2; /* two questions */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
	memcpy(bad, buf, (size_t)n);
	bad[12] = 0xc0; /* a compression pointer in the question */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
	memcpy(bad, buf, (size_t)n);
	bad[13] = '.'; /* "a.test" as labels "." and "test": a dot inside a label */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
	memcpy(bad, buf, (size_t)n);
	bad[13] = 0; /* a NUL inside a label */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
	memcpy(bad, buf, (size_t)n);
	bad[12] = 64; /* a label over 63 */
	assert_int_equal(pd_dns_query_parse(bad, (size_t)n, &q, &id), -EPROTO);
}

static void test_answers_read_back(void **state)
{
	uint8_t qbuf[PD_DNS_MSG_MAX], out[PD_DNS_MSG_MAX],
		addrs[2][4] = { { 93, 184, 216, 34 }, { 1, 2, 3, 4 } };
	struct pd_dns_query q;
	ns_msg msg;
	ns_rr rr;
	uint16_t id;
	int n;

	(void)state;
	n = make_query("example.test", ns_t_a, qbuf, sizeof(qbuf));
	assert_int_equal(pd_dns_query_parse(qbuf, (size_t)n, &q, &id), 0);
	n = pd_dns_answer_build(&q, PD_DNS_RCODE_NOERROR, AF_INET, &addrs[0][0], 2, 30, out,
				sizeof(out));
	assert_true(n > 0);
	assert_int_equal(ns_initparse(out, n, &msg), 0);
	assert_int_equal(ns_msg_id(msg), q.id);
	assert_int_equal(ns_msg_getflag(msg, ns_f_qr), 1);
	assert_int_equal(ns_msg_getflag(msg, ns_f_rcode), ns_r_noerror);
	assert_int_equal(ns_msg_count(msg, ns_s_an), 2);
	assert_int_equal(ns_parserr(&msg, ns_s_an, 1, &rr), 0);
	assert_string_equal(ns_rr_name(rr), "example.test");
	assert_int_equal(ns_rr_type(rr), ns_t_a);
	assert_int_equal(ns_rr_ttl(rr), 30);
	assert_int_equal(ns_rr_rdlen(rr), 4);
	assert_memory_equal(ns_rr_rdata(rr), addrs[1], 4);

	n = pd_dns_answer_build(&q, PD_DNS_RCODE_NXDOMAIN, AF_INET, NULL, 0, 0, out, sizeof(out));
	assert_int_equal(ns_initparse(out, n, &msg), 0);
	assert_int_equal(ns_msg_getflag(msg, ns_f_rcode), ns_r_nxdomain);
	assert_int_equal(ns_msg_count(msg, ns_s_an), 0);
	assert_int_equal(ns_msg_count(msg, ns_s_qd), 1);

	/* an AAAA query answered with A records gets none (NODATA) */
	n = make_query("example.test", ns_t_aaaa, qbuf, sizeof(qbuf));
	assert_int_equal(pd_dns_query_parse(qbuf, (size_t)n, &q, &id), 0);
	n = pd_dns_answer_build(&q, PD_DNS_RCODE_NOERROR, AF_INET, &addrs[0][0], 2, 30, out,
				sizeof(out));
	assert_int_equal(ns_initparse(out, n, &msg), 0);
	assert_int_equal(ns_msg_count(msg, ns_s_an), 0);
}

static void test_truncation(void **state)
{
	uint8_t qbuf[PD_DNS_MSG_MAX], out[PD_DNS_MSG_MAX], addrs[64 * 16];
	struct pd_dns_query q;
	ns_msg msg;
	uint16_t id;
	int n;

	(void)state;
	memset(addrs, 0x20, sizeof(addrs));
	n = make_query("many.test", ns_t_aaaa, qbuf, sizeof(qbuf));
	assert_int_equal(pd_dns_query_parse(qbuf, (size_t)n, &q, &id), 0);
	n = pd_dns_answer_build(&q, PD_DNS_RCODE_NOERROR, AF_INET6, addrs, 64, 60, out,
				sizeof(out));
	assert_true(n > 0 && n <= PD_DNS_MSG_MAX);
	assert_int_equal(ns_initparse(out, n, &msg), 0);
	assert_int_equal(ns_msg_getflag(msg, ns_f_tc), 1);
	assert_true(ns_msg_count(msg, ns_s_an) > 10 && ns_msg_count(msg, ns_s_an) < 64);
	assert_int_equal(pd_dns_answer_build(&q, 0, AF_INET6, addrs, 1, 60, out, 12), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_real_queries),
		cmocka_unit_test(test_refused_queries),
		cmocka_unit_test(test_answers_read_back),
		cmocka_unit_test(test_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
