/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress resolver with a hosts file (the source tests and air-gapped hosts use): names
 * found, names absent, bad files refused with the line that is wrong. The system resolver
 * (evdns) is not exercised here: it would send queries off the machine.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "egress-policy.h"
#include "egress-resolve.h"

struct answer {
	bool called;
	int error;
	struct pd_addrs addrs;
};

static void on_answer(int error, const struct pd_addrs *addrs, void *userdata)
{
	struct answer *a = userdata;

	a->called = true;
	a->error = error;
	a->addrs = *addrs;
}

static char *write_hosts(const char *text)
{
	char *path = strdup("/tmp/pdtest-hosts.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_hosts_file(void **state)
{
	struct event_base *base = event_base_new();
	struct pd_resolver *r = NULL;
	paddock_error err = { 0 };
	struct answer a = { 0 };
	char *path =
		write_hosts("# a comment\n11.22.33.1 a.test B.Test. # trailing\n"
			    "2001:4860::1 a.test\n\n10.0.0.5 private.test\n11.22.33.1 a.test\n");
	char text[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(pd_resolver_new(base, path, &r, &err), 0);
	/* a file answer comes at once, before pd_resolve() returns */
	assert_null(pd_resolve(r, "A.TEST", on_answer, &a));
	assert_true(a.called);
	assert_int_equal(a.error, 0);
	assert_int_equal(a.addrs.n, 2); /* the repeated line adds nothing */
	assert_int_equal(a.addrs.a[0].family, AF_INET);
	inet_ntop(AF_INET, a.addrs.a[0].addr, text, sizeof(text));
	assert_string_equal(text, "11.22.33.1");
	assert_int_equal(a.addrs.a[1].family, AF_INET6);

	memset(&a, 0, sizeof(a));
	pd_resolve(r, "b.test", on_answer, &a);
	assert_int_equal(a.error, 0); /* names are normalised on both sides */

	memset(&a, 0, sizeof(a));
	pd_resolve(r, "nope.test", on_answer, &a);
	assert_true(a.called);
	assert_int_equal(a.error, -ENOENT); /* the file is the only source */

	memset(&a, 0, sizeof(a));
	pd_resolve(r, "bad name", on_answer, &a);
	assert_int_equal(a.error, -ENOENT);

	pd_resolver_free(r);
	unlink(path);
	free(path);
	event_base_free(base);
}

static void test_bad_files(void **state)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{ "11.22.33.1 ok.test\nnot-an-address x.test\n", ":2: expected an address" },
		{ "11.22.33.1 -bad-.test\n", ":1: bad name" },
		{ "300.1.1.1 x.test\n", ":1: expected an address" },
	};
	struct event_base *base = event_base_new();

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_resolver *r = NULL;
		paddock_error err = { 0 };
		char *path = write_hosts(cases[i].text);

		assert_int_equal(pd_resolver_new(base, path, &r, &err), -EINVAL);
		assert_null(r);
		if (!strstr(err.msg, cases[i].needle))
			fail_msg("message '%s' lacks '%s'", err.msg, cases[i].needle);
		unlink(path);
		free(path);
	}
	{
		struct pd_resolver *r = NULL;
		paddock_error err = { 0 };

		assert_int_equal(pd_resolver_new(base, "/nonexistent/hosts", &r, &err), -ENOENT);
		assert_non_null(strstr(err.msg, "/nonexistent/hosts"));
	}
	event_base_free(base);
}

/* The DNS filter's question: may this name be answered, whatever port comes next? */
static void test_allow_dns(void **state)
{
	struct pd_egress_policy p;
	const struct pd_egress_rule *rule;
	paddock_error err = { 0 };

	(void)state;
	pd_egress_policy_init(&p, PD_EGRESS_ALLOWLIST);
	assert_int_equal(pd_egress_policy_add(&p, "api.test:443", false, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "*.wild.test", false, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "no.wild.test", true, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "api.test:80", true, NULL, &err), 0);
	assert_true(pd_egress_allow_dns(&p, "api.test", &rule)); /* a port rule still resolves */
	assert_string_equal(rule->text, "api.test:443");
	assert_true(pd_egress_allow_dns(&p, "x.wild.test", &rule));
	assert_false(pd_egress_allow_dns(&p, "no.wild.test", &rule)); /* deny, every port */
	assert_non_null(rule);
	assert_false(pd_egress_allow_dns(&p, "other.test", &rule));
	assert_null(rule);
	assert_false(pd_egress_allow_dns(&p, "bad..name", &rule));
	p.mode = PD_EGRESS_OPEN;
	assert_true(pd_egress_allow_dns(&p, "other.test", &rule));
	pd_egress_policy_release(&p);

	/* and the addresses it answers: a CIDR rule with a port still makes one an answer */
	pd_egress_policy_init(&p, PD_EGRESS_ALLOWLIST);
	assert_int_equal(pd_egress_policy_add(&p, "10.0.0.5/32:5432", false, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "10.0.0.6/32:22", true, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "10.0.0.6/32", false, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "10.0.0.7", true, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "10.0.0.0/24:80", false, NULL, &err), 0);
	{
		const uint8_t five[4] = { 10, 0, 0, 5 }, six[4] = { 10, 0, 0, 6 },
			      seven[4] = { 10, 0, 0, 7 }, other[4] = { 10, 0, 1, 1 },
			      loop[4] = { 127, 0, 0, 1 }, pub[4] = { 11, 22, 33, 1 };

		assert_true(pd_egress_allow_addr_dns(&p, AF_INET, five, &rule));
		assert_string_equal(rule->text, "10.0.0.5/32:5432");
		/* the connection itself still needs the port */
		assert_false(pd_egress_allow_addr(&p, AF_INET, five, 80 + 1, true, &rule));
		/* a deny rule for one port leaves the others */
		assert_true(pd_egress_allow_addr_dns(&p, AF_INET, six, &rule));
		/* a deny rule for every port refuses, whatever allows it */
		assert_false(pd_egress_allow_addr_dns(&p, AF_INET, seven, &rule));
		assert_true(rule->deny);
		assert_false(pd_egress_allow_addr_dns(&p, AF_INET, other, &rule));
		assert_false(pd_egress_allow_addr_dns(&p, AF_INET, loop, &rule));
		assert_true(pd_egress_allow_addr_dns(&p, AF_INET, pub, &rule)); /* a public one */
		p.mode = PD_EGRESS_NONE;
		assert_false(pd_egress_allow_addr_dns(&p, AF_INET, five, &rule));
		p.mode = PD_EGRESS_ALLOWLIST;
	}
	p.mode = PD_EGRESS_NONE;
	assert_false(pd_egress_allow_dns(&p, "api.test", &rule));
	pd_egress_policy_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hosts_file),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_allow_dns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
