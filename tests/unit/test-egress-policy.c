/* SPDX-License-Identifier: Apache-2.0 */
/* The egress policy: rule parsing, name and address decisions, address classes. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "egress-policy.h"

static enum pd_addr_class classify(const char *text)
{
	uint8_t a[16];

	if (inet_pton(AF_INET, text, a) == 1)
		return pd_addr_classify(AF_INET, a);
	assert_int_equal(inet_pton(AF_INET6, text, a), 1);
	return pd_addr_classify(AF_INET6, a);
}

static void test_address_classes(void **state)
{
	static const struct {
		const char *addr;
		enum pd_addr_class c;
	} cases[] = {
		{ "8.8.8.8", PD_ADDR_PUBLIC },
		{ "1.1.1.1", PD_ADDR_PUBLIC },
		{ "127.0.0.1", PD_ADDR_LOOPBACK },
		{ "127.255.255.254", PD_ADDR_LOOPBACK },
		{ "10.1.2.3", PD_ADDR_PRIVATE },
		{ "172.16.0.1", PD_ADDR_PRIVATE },
		{ "172.31.255.255", PD_ADDR_PRIVATE },
		{ "172.32.0.1", PD_ADDR_PUBLIC },
		{ "192.168.1.1", PD_ADDR_PRIVATE },
		{ "169.254.169.254", PD_ADDR_LINK_LOCAL },
		{ "100.64.0.1", PD_ADDR_CGNAT },
		{ "100.128.0.1", PD_ADDR_PUBLIC },
		{ "224.0.0.1", PD_ADDR_MULTICAST },
		{ "255.255.255.255", PD_ADDR_RESERVED },
		{ "0.0.0.0", PD_ADDR_UNSPECIFIED },
		{ "0.1.2.3", PD_ADDR_UNSPECIFIED },
		{ "192.0.2.1", PD_ADDR_RESERVED },
		{ "198.18.0.1", PD_ADDR_RESERVED },
		{ "2606:4700::1111", PD_ADDR_PUBLIC },
		{ "::1", PD_ADDR_LOOPBACK },
		{ "::", PD_ADDR_UNSPECIFIED },
		{ "fd00::1", PD_ADDR_PRIVATE },
		{ "fe80::1", PD_ADDR_LINK_LOCAL },
		{ "ff02::1", PD_ADDR_MULTICAST },
		{ "2001:db8::1", PD_ADDR_RESERVED },
		/* IPv4 in IPv6 clothing is judged as the IPv4 address */
		{ "::ffff:127.0.0.1", PD_ADDR_LOOPBACK },
		{ "::ffff:169.254.169.254", PD_ADDR_LINK_LOCAL },
		{ "::ffff:8.8.8.8", PD_ADDR_PUBLIC },
		{ "64:ff9b::10.0.0.1", PD_ADDR_PRIVATE },
		{ "::127.0.0.1", PD_ADDR_LOOPBACK },
		{ "2002:7f00:1::", PD_ADDR_RESERVED },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum pd_addr_class got = classify(cases[i].addr);

		if (got != cases[i].c)
			fail_msg("%s: expected %s, got %s", cases[i].addr,
				 pd_addr_class_to_string(cases[i].c), pd_addr_class_to_string(got));
	}
}

static void test_rule_forms(void **state)
{
	struct pd_egress_rule r;
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(pd_egress_rule_parse("PyPI.org.", false, NULL, &r, &err), 0);
	assert_int_equal(r.kind, PD_EGRESS_NAME);
	assert_string_equal(r.name, "pypi.org");
	assert_int_equal(r.port, 0);
	assert_string_equal(r.text, "PyPI.org.");

	assert_int_equal(pd_egress_rule_parse("*.githubusercontent.com:443", true, NULL, &r, &err),
			 0);
	assert_int_equal(r.kind, PD_EGRESS_WILDCARD);
	assert_string_equal(r.name, "githubusercontent.com");
	assert_int_equal(r.port, 443);
	assert_true(r.deny);

	assert_int_equal(pd_egress_rule_parse("10.1.2.77/24:5432", false, NULL, &r, &err), 0);
	assert_int_equal(r.kind, PD_EGRESS_CIDR);
	assert_int_equal(r.family, AF_INET);
	assert_int_equal(r.prefix, 24);
	assert_int_equal(r.port, 5432);
	assert_int_equal(r.addr[3], 0); /* host bits cleared */

	assert_int_equal(pd_egress_rule_parse("1.2.3.4", false, NULL, &r, &err), 0);
	assert_int_equal(r.prefix, 32);
	assert_int_equal(pd_egress_rule_parse("fd00::/8", false, NULL, &r, &err), 0);
	assert_int_equal(r.family, AF_INET6);
	assert_int_equal(r.prefix, 8);
	assert_int_equal(pd_egress_rule_parse("[::1]:8080", false, NULL, &r, &err), 0);
	assert_int_equal(r.prefix, 128);
	assert_int_equal(r.port, 8080);
	assert_int_equal(pd_egress_rule_parse("[fd00::]/8:80", false, NULL, &r, &err), 0);
	assert_int_equal(r.prefix, 8);
	assert_int_equal(r.port, 80);
}

static void test_bad_rules(void **state)
{
	static const char *const bad[] = {
		"",
		"*",
		"*.",
		"a..b",
		"-",
		"exa mple.com",
		"example.com:0",
		"example.com:65536",
		"example.com:http",
		"10.0.0.0/33",
		"10.0.0.0/",
		"/8",
		"[::1",
		"[::1]x",
		"[1.2.3.4]",
		"::1/129",
		"a/8",
		"ex\"ample.com",
		"xn--\x01.com",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", /* 64 */
	};
	struct pd_egress_rule r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		paddock_error err = { 0 };
		int rc = pd_egress_rule_parse(bad[i], false, "network.allow[2]", &r, &err);

		if (rc != -EINVAL)
			fail_msg("'%s' should be refused, got %d", bad[i], rc);
		assert_string_equal(err.field, "network.allow[2]");
	}
}

/* A CIDR allow rule for every address is refused, pointing at open mode; a deny is fine. */
static void test_everything_rules(void **state)
{
	static const char *const all[] = { "0.0.0.0/0",	    "::/0",	 "[::]/0",
					   "0.0.0.0/0:443", "1.2.3.4/0", "[::]/0:80" };
	struct pd_egress_rule r;

	(void)state;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		paddock_error err = { 0 };

		if (pd_egress_rule_parse(all[i], false, "network.allow[0]", &r, &err) != -EINVAL)
			fail_msg("'%s' should be refused as an allow rule", all[i]);
		assert_string_equal(err.field, "network.allow[0]");
		assert_non_null(strstr(err.msg, "--net open"));
		assert_non_null(strstr(err.msg, "169.254.169.254"));
		assert_int_equal(pd_egress_rule_parse(all[i], true, NULL, &r, &err), 0);
		assert_int_equal(r.prefix, 0);
	}
	/* anything narrower is a range like any other */
	assert_int_equal(pd_egress_rule_parse("0.0.0.0/1", false, NULL, &r, &(paddock_error){ 0 }),
			 0);
}

static struct pd_egress_policy policy(enum pd_egress_mode mode, const char *const *allow,
				      const char *const *deny)
{
	struct pd_egress_policy p;
	paddock_error err = { 0 };

	pd_egress_policy_init(&p, mode);
	for (; allow && *allow; allow++)
		assert_int_equal(pd_egress_policy_add(&p, *allow, false, NULL, &err), 0);
	for (; deny && *deny; deny++)
		assert_int_equal(pd_egress_policy_add(&p, *deny, true, NULL, &err), 0);
	return p;
}

static bool name_ok(const struct pd_egress_policy *p, const char *name, uint16_t port)
{
	const struct pd_egress_rule *r;

	return pd_egress_allow_name(p, name, port, &r);
}

static bool addr_ok(const struct pd_egress_policy *p, const char *text, uint16_t port,
		    bool name_allowed)
{
	const struct pd_egress_rule *r;
	uint8_t a[16];

	if (inet_pton(AF_INET, text, a) == 1)
		return pd_egress_allow_addr(p, AF_INET, a, port, name_allowed, &r);
	assert_int_equal(inet_pton(AF_INET6, text, a), 1);
	return pd_egress_allow_addr(p, AF_INET6, a, port, name_allowed, &r);
}

static void test_names(void **state)
{
	const char *const allow[] = { "pypi.org", "*.example.com:443", "api.test", NULL };
	const char *const deny[] = { "evil.example.com", NULL };
	struct pd_egress_policy p = policy(PD_EGRESS_ALLOWLIST, allow, deny);
	const struct pd_egress_rule *r;

	(void)state;
	assert_true(name_ok(&p, "pypi.org", 443));
	assert_true(name_ok(&p, "PYPI.ORG.", 80));
	assert_false(name_ok(&p, "pypi.org.evil.net", 443));
	assert_false(name_ok(&p, "notpypi.org", 443));
	assert_true(name_ok(&p, "a.example.com", 443));
	assert_true(name_ok(&p, "a.b.example.com", 443));
	assert_false(name_ok(&p, "a.example.com", 80)); /* the port is part of the rule */
	assert_false(name_ok(&p, "example.com", 443));	/* a wildcard is strictly below */
	assert_false(name_ok(&p, "xexample.com", 443));
	/* deny beats allow, and names the rule */
	assert_false(pd_egress_allow_name(&p, "evil.example.com", 443, &r));
	assert_non_null(r);
	assert_true(r->deny);
	assert_string_equal(r->text, "evil.example.com");
	assert_true(pd_egress_allow_name(&p, "api.test", 8080, &r));
	assert_string_equal(r->text, "api.test");
	/* malformed names from inside are refused */
	assert_false(name_ok(&p, "pypi.org\r\nX: y", 443));
	assert_false(name_ok(&p, "", 443));
	assert_false(name_ok(&p, "..", 443));
	pd_egress_policy_release(&p);

	p = policy(PD_EGRESS_NONE, allow, NULL);
	assert_false(name_ok(&p, "pypi.org", 443)); /* none has no egress, rules or not */
	pd_egress_policy_release(&p);
	p = policy(PD_EGRESS_OPEN, NULL, deny);
	assert_true(name_ok(&p, "anything.net", 443));
	assert_false(name_ok(&p, "evil.example.com", 443));
	pd_egress_policy_release(&p);
}

static void test_addresses(void **state)
{
	const char *const allow[] = { "pypi.org", "10.1.2.0/24:5432", "[fd00::]/8", NULL };
	const char *const deny[] = { "10.1.2.66", NULL };
	struct pd_egress_policy p = policy(PD_EGRESS_ALLOWLIST, allow, deny);

	(void)state;
	/* a public address of an allowed name */
	assert_true(addr_ok(&p, "151.101.0.223", 443, true));
	/* ... but not as a literal nobody allowed */
	assert_false(addr_ok(&p, "151.101.0.223", 443, false));
	/* SECURITY: an allowed name that resolves somewhere private is refused (rebinding) */
	assert_false(addr_ok(&p, "127.0.0.1", 443, true));
	assert_false(addr_ok(&p, "169.254.169.254", 80, true));
	assert_false(addr_ok(&p, "10.0.0.1", 443, true));
	assert_false(addr_ok(&p, "100.64.1.1", 443, true));
	assert_false(addr_ok(&p, "0.0.0.0", 443, true));
	assert_false(addr_ok(&p, "::ffff:127.0.0.1", 443, true));
	assert_false(addr_ok(&p, "::ffff:169.254.169.254", 80, true));
	assert_false(addr_ok(&p, "fe80::1", 443, true));
	/* a CIDR rule opens exactly its range and port */
	assert_true(addr_ok(&p, "10.1.2.3", 5432, false));
	assert_false(addr_ok(&p, "10.1.2.3", 5433, false));
	assert_false(addr_ok(&p, "10.1.3.3", 5432, false));
	assert_true(addr_ok(&p, "::ffff:10.1.2.3", 5432, false)); /* the same address */
	assert_true(addr_ok(&p, "fd12::5", 22, false));
	/* deny beats allow */
	assert_false(addr_ok(&p, "10.1.2.66", 5432, false));
	/* names that are address literals follow the address rules */
	assert_true(name_ok(&p, "10.1.2.3", 5432));
	assert_false(name_ok(&p, "127.0.0.1", 80));
	pd_egress_policy_release(&p);

	p = policy(PD_EGRESS_OPEN, NULL, NULL);
	assert_true(addr_ok(&p, "8.8.8.8", 53, false));
	assert_false(addr_ok(&p, "192.168.0.1", 80, true)); /* open is public only */
	assert_false(addr_ok(&p, "169.254.169.254", 80, true));
	pd_egress_policy_release(&p);
	p = policy(PD_EGRESS_NONE, NULL, NULL);
	assert_false(addr_ok(&p, "8.8.8.8", 53, true));
	pd_egress_policy_release(&p);
}

static bool ask(const struct pd_egress_policy *p, const char *name, const char *addr, uint16_t port)
{
	uint8_t a[16] = { 0 };
	int family = AF_INET;

	if (addr && inet_pton(AF_INET, addr, a) != 1) {
		assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
		family = AF_INET6;
	}
	return pd_egress_ask_wanted(p, name, family, addr ? a : NULL, port);
}

/* network.unlisted "ask": only what no rule names, only what could be public. */
static void test_ask(void **state)
{
	const char *const allow[] = { "pypi.org", "*.example.com:443", "10.1.2.0/24", NULL };
	const char *const deny[] = { "evil.example.com", "203.0.113.0/24", NULL };
	struct pd_egress_policy p = policy(PD_EGRESS_ALLOWLIST, allow, deny);

	(void)state;
	assert_false(ask(&p, "api.unlisted.net", NULL, 443)); /* the policy does not ask */
	p.ask = true;
	assert_true(ask(&p, "api.unlisted.net", NULL, 443));
	assert_true(ask(&p, "API.Unlisted.NET.", NULL, 443));
	assert_false(ask(&p, "pypi.org", NULL, 443));	      /* allowed by a rule */
	assert_false(ask(&p, "evil.example.com", NULL, 443)); /* denied by a rule */
	assert_true(ask(&p, "a.example.com", NULL, 80));      /* the rule is for 443 only */
	/* never a name that cannot be a public host, never a malformed one */
	assert_false(ask(&p, "localhost", NULL, 80));
	assert_false(ask(&p, "db.localhost", NULL, 80));
	assert_false(ask(&p, "metadata", NULL, 80));
	assert_false(ask(&p, "bad name.net", NULL, 80));
	/* addresses: public ones no rule names; a name that is an address is one */
	assert_true(ask(&p, NULL, "93.184.216.34", 443));
	assert_true(ask(&p, "93.184.216.34", NULL, 443));
	assert_true(ask(&p, NULL, "2606:2800:220:1::1", 443));
	/* SECURITY: a person never opens the SSRF wall */
	assert_false(ask(&p, NULL, "127.0.0.1", 80));
	assert_false(ask(&p, NULL, "169.254.169.254", 80));
	assert_false(ask(&p, NULL, "10.9.9.9", 80));
	assert_false(ask(&p, NULL, "::ffff:10.9.9.9", 80));
	assert_false(ask(&p, "127.0.0.1", NULL, 80));
	assert_false(ask(&p, NULL, "10.1.2.3", 80));	/* allowed by a CIDR rule */
	assert_false(ask(&p, NULL, "203.0.113.7", 80)); /* denied by one (and reserved) */
	pd_egress_policy_release(&p);

	/* open allows every public host, none has no egress: neither asks */
	p = policy(PD_EGRESS_OPEN, NULL, NULL);
	p.ask = true;
	assert_false(ask(&p, "api.unlisted.net", NULL, 443));
	pd_egress_policy_release(&p);
	p = policy(PD_EGRESS_NONE, NULL, NULL);
	p.ask = true;
	assert_false(ask(&p, "api.unlisted.net", NULL, 443));
	pd_egress_policy_release(&p);
}

static void test_presets_and_bounds(void **state)
{
	struct pd_egress_policy p;
	paddock_error err = { 0 };

	(void)state;
	pd_egress_policy_init(&p, PD_EGRESS_ALLOWLIST);
	for (const char *const *n = pd_egress_presets; *n; n++) {
		char text[64];

		snprintf(text, sizeof(text), "preset:%s", *n);
		assert_int_equal(pd_egress_policy_add(&p, text, false, NULL, &err), 0);
	}
	assert_true(name_ok(&p, "files.pythonhosted.org", 443));
	assert_true(name_ok(&p, "registry.npmjs.org", 443));
	assert_true(name_ok(&p, "raw.githubusercontent.com", 443));
	assert_false(name_ok(&p, "github.com", 22)); /* presets are HTTPS only */
	assert_int_equal(pd_egress_policy_add(&p, "preset:nope", false, "network.allow[0]", &err),
			 -EINVAL);
	assert_string_equal(err.field, "network.allow[0]");
	size_t before = p.n_rules;
	assert_int_equal(pd_egress_policy_add(&p, "bad rule", false, NULL, &err), -EINVAL);
	assert_int_equal(p.n_rules, before); /* a refused rule changes nothing */
	while (p.n_rules < PD_EGRESS_RULES_MAX)
		assert_int_equal(pd_egress_policy_add(&p, "a.test", false, NULL, &err), 0);
	assert_int_equal(pd_egress_policy_add(&p, "a.test", false, NULL, &err), -E2BIG);
	pd_egress_policy_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_classes),
		cmocka_unit_test(test_rule_forms),
		cmocka_unit_test(test_bad_rules),
		cmocka_unit_test(test_everything_rules),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_presets_and_bounds),
		cmocka_unit_test(test_ask),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
