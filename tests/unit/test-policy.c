/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's policy (include/paddock/policy.h): host paths, the network ceiling, the
 * limits ceiling, secrets and bad input. Every refusal is checked for its field.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "paddock/policy.h"

/* A scratch tree: allowed/{sub, escape -> ../outside}, outside/, a-file */
static char tmp[] = "/tmp/test-policy-XXXXXX";

static const char *path(const char *rel)
{
	static char buf[4][PATH_MAX];
	static unsigned next;
	char *b = buf[next++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", tmp, rel);
	return b;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmp))
		return -1;
	if (mkdir(path("allowed"), 0700) < 0 || mkdir(path("allowed/sub"), 0700) < 0 ||
	    mkdir(path("outside"), 0700) < 0 || symlink("../outside", path("allowed/escape")) < 0)
		return -1;
	FILE *f = fopen(path("a-file"), "we");

	if (!f)
		return -1;
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	(void)unlink(path("allowed/escape"));
	(void)unlink(path("a-file"));
	(void)rmdir(path("allowed/sub"));
	(void)rmdir(path("allowed"));
	(void)rmdir(path("outside"));
	(void)rmdir(tmp);
	return 0;
}

static paddock_spec *spec_from(const char *json)
{
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	if (json && paddock_spec_load_json(spec, json, strlen(json), &err) < 0)
		fail_msg("spec %s: %s: %s", json, err.field, err.msg);
	return spec;
}

/* Checks `spec` (freed) and expects `code` with `field`, or 0 when field is NULL. */
static void check_spec(const paddock_policy *p, paddock_spec *spec, int code, const char *field)
{
	paddock_error err = { 0 };
	int r = paddock_policy_check(p, spec, &err);

	paddock_spec_free(spec);
	if (!field) {
		if (r != 0)
			fail_msg("expected the spec to pass, got %s: %s", err.field, err.msg);
		return;
	}
	assert_int_equal(r, -code);
	assert_int_equal(err.code, code);
	assert_string_equal(err.field, field);
}

static void check_path(const paddock_policy *p, const char *host_path, int code, const char *field)
{
	paddock_error err = { 0 };
	char *real = NULL;
	int r = paddock_policy_check_host_path(p, host_path, field, &real, &err);

	if (code == 0) {
		char *want = realpath(host_path, NULL);

		if (r != 0)
			fail_msg("'%s': expected it allowed, got %s", host_path, err.msg);
		assert_non_null(want);
		assert_string_equal(real, want);
		free(want);
		free(real);
		return;
	}
	assert_int_equal(r, -code);
	assert_null(real);
	assert_string_equal(err.field, field);
}

static void test_host_paths(void **state)
{
	paddock_error err = { 0 };
	paddock_policy *p = NULL;
	char json[1024];

	(void)state;
	assert_int_equal(paddock_policy_new(&p, &err), 0);
	/* a new policy allows no host path at all */
	check_path(p, path("allowed"), EPERM, "workspace");

	assert_int_equal(paddock_policy_allow_host_path(p, path("allowed"), &err), 0);
	check_path(p, path("allowed"), 0, "workspace");
	check_path(p, path("allowed/sub"), 0, "workspace");
	check_path(p, path("allowed//sub/."), 0, "workspace");
	check_path(p, path("outside"), EPERM, "workspace");
	check_path(p, path("allowed/escape"), EPERM, "binds[0].source");
	check_path(p, path("allowed/../outside"), EPERM, "rootfs");
	check_path(p, path("allowed/sub/../../outside"), EPERM, "rootfs");
	/* a name that only starts like the allowed directory is not below it */
	check_path(p, path("allowed-not"), EPERM, "workspace");
	/* unresolvable: the same refusal as outside, no existence oracle */
	check_path(p, path("allowed/no-such"), EPERM, "workspace");
	check_path(p, "allowed", EINVAL, "workspace");
	check_path(p, "", EINVAL, "workspace");

	assert_int_equal(
		paddock_policy_check_host_path(p, path("outside"), "workspace", NULL, &err),
		-EPERM);
	assert_non_null(strstr(err.msg, "is not under a directory the operator allows"));

	/* the same rule through the spec: each host path field by name */
	snprintf(json, sizeof(json), "{\"workspace\": \"%s\"}", path("allowed/sub"));
	check_spec(p, spec_from(json), 0, NULL);
	snprintf(json, sizeof(json),
		 "{\"binds\": [{\"source\": \"%s\", \"target\": \"/a\"},"
		 " {\"source\": \"%s\", \"target\": \"/b\"},"
		 " {\"source\": \"%s\", \"target\": \"/c\"}]}",
		 path("allowed"), path("allowed/sub"), path("allowed/escape"));
	check_spec(p, spec_from(json), EPERM, "binds[2].source");
	/* the spec parser refuses ".." in rootfs already; a symlink is the way out to try */
	snprintf(json, sizeof(json), "{\"rootfs\": \"%s\"}", path("allowed/escape"));
	check_spec(p, spec_from(json), EPERM, "rootfs");
	snprintf(json, sizeof(json), "{\"workspace\": \"%s\"}", path("outside"));
	check_spec(p, spec_from(json), EPERM, "workspace");
	check_spec(p, spec_from(NULL), 0, NULL);
	paddock_policy_free(p);

	/* "/" allows every path */
	assert_int_equal(paddock_policy_new(&p, &err), 0);
	assert_int_equal(paddock_policy_allow_host_path(p, "/", &err), 0);
	check_path(p, path("outside"), 0, "workspace");
	paddock_policy_free(p);
}

static void test_host_path_roots(void **state)
{
	paddock_error err = { 0 };
	paddock_policy *p = NULL;

	(void)state;
	assert_int_equal(paddock_policy_new(&p, &err), 0);
	assert_int_equal(paddock_policy_allow_host_path(p, path("no-such"), &err), -ENOENT);
	assert_string_equal(err.field, "allow-host-path");
	assert_int_equal(paddock_policy_allow_host_path(p, path("a-file"), &err), -ENOTDIR);
	assert_string_equal(err.field, "allow-host-path");
	/* a root given through a symlink is the directory it names */
	assert_int_equal(paddock_policy_allow_host_path(p, path("allowed/escape"), &err), 0);
	check_path(p, path("outside"), 0, "workspace");
	check_path(p, path("allowed/sub"), EPERM, "workspace");
	paddock_policy_free(p);
}

static void test_max_network(void **state)
{
	paddock_error err = { 0 };
	paddock_policy *p = NULL;

	(void)state;
	assert_int_equal(paddock_policy_new(&p, &err), 0);
	check_spec(p, spec_from("{\"network\": {\"mode\": \"open\"}}"), 0, NULL);
	assert_int_equal(paddock_policy_set_max_network(p, "sometimes", &err), -EINVAL);
	assert_int_equal(paddock_policy_set_max_network(p, "allowlist", &err), 0);
	check_spec(p, spec_from("{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"a\"]}}"), 0,
		   NULL);

	paddock_spec *spec = spec_from("{\"network\": {\"mode\": \"open\"}}");

	assert_int_equal(paddock_policy_check(p, spec, &err), -EPERM);
	assert_string_equal(err.field, "network.mode");
	assert_string_equal(err.msg, "'open' asked, the operator allows at most 'allowlist'");
	paddock_spec_free(spec);

	assert_int_equal(paddock_policy_set_max_network(p, "none", &err), 0);
	check_spec(p, spec_from("{\"network\": {\"mode\": \"allowlist\"}}"), EPERM, "network.mode");
	check_spec(p, spec_from(NULL), 0, NULL);

	/* the network section alone: a host path is not its business */
	spec = spec_from("{\"workspace\": \"/tmp\"}");
	assert_int_equal(paddock_policy_check_network(p, spec, &err), 0);
	assert_int_equal(paddock_policy_check(p, spec, &err), -EPERM);
	assert_string_equal(err.field, "workspace");
	paddock_spec_free(spec);
	spec = spec_from("{\"workspace\": \"/tmp\", \"network\": {\"mode\": \"open\"}}");
	assert_int_equal(paddock_policy_check_network(p, spec, &err), -EPERM);
	assert_string_equal(err.field, "network.mode");
	paddock_spec_free(spec);
	paddock_policy_free(p);
}

static paddock_policy *ceiling_policy(const char *json)
{
	paddock_error err = { 0 };
	paddock_policy *p = NULL;
	paddock_spec *c = spec_from(json);

	assert_int_equal(paddock_policy_new(&p, &err), 0);
	if (paddock_policy_set_ceiling(p, c, &err) < 0)
		fail_msg("ceiling: %s: %s", err.field, err.msg);
	paddock_spec_free(c);
	return p;
}

#define OPERATOR_NET                                                                               \
	"{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"pypi.org\", \"*.example.com\", "    \
	"\"10.0.0.0/8:5432\", \"api.test:443\"], \"deny\": [\"bad.example.com\"]}}"

/* A spec asking for `rule` with the operator's deny rule kept. */
static paddock_spec *asking(const char *rule)
{
	char json[512];

	snprintf(json, sizeof(json),
		 "{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"pypi.org\", \"%s\"], "
		 "\"deny\": [\"bad.example.com\"]}}",
		 rule);
	return spec_from(json);
}

static void test_network_ceiling(void **state)
{
	static const struct {
		const char *rule;
		bool ok;
	} cases[] = {
		/* names: the operator's policy decides, wildcards included */
		{ "pypi.org:443", true },
		{ "files.example.com", true },
		{ "a.b.example.com:8080", true },
		{ "bad.example.com", false },
		{ "evilexample.com", false },
		{ "example.com", false },
		{ "api.test:443", true },
		{ "api.test:80", false },
		/* wildcards only under an operator wildcard, on a port it covers */
		{ "*.x.example.com", true },
		{ "*.example.com:443", true },
		{ "*.evilexample.com", false },
		{ "*.com", false },
		/* CIDR: inside an operator range, on its port */
		{ "10.1.2.0/24:5432", true },
		{ "10.1.2.3:5432", true },
		{ "10.1.2.0/24:22", false },
		{ "10.1.2.0/24", false },
		{ "10.0.0.0/7:5432", false },
		{ "11.0.0.0/24:5432", false },
		{ "[fd00::]/8:5432", false },
		{ "169.254.169.254:80", false },
	};
	paddock_policy *p = ceiling_policy(OPERATOR_NET);
	paddock_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		paddock_spec *spec = asking(cases[i].rule);
		int r = paddock_policy_check(p, spec, &err);

		paddock_spec_free(spec);
		if (cases[i].ok && r != 0)
			fail_msg("'%s': expected it covered, got %s: %s", cases[i].rule, err.field,
				 err.msg);
		if (!cases[i].ok && (r != -EPERM || strcmp(err.field, "network.allow[1]")))
			fail_msg("'%s': expected network.allow[1] refused, got %d %s",
				 cases[i].rule, r, err.field);
	}
	/* the operator's own rules, verbatim, whatever they hold */
	check_spec(p, spec_from(OPERATOR_NET), 0, NULL);
	/* its deny rules stay */
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\", \"allow\": "
			     "[\"*.example.com\"]}}"),
		   EPERM, "network.deny");
	/* and its mode is the ceiling */
	check_spec(p, spec_from("{\"network\": {\"mode\": \"open\"}}"), EPERM, "network.mode");
	check_spec(p, spec_from("{\"network\": {\"mode\": \"none\"}}"), 0, NULL);
	/* a preset is judged rule by rule */
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\", \"allow\": "
			     "[\"preset:npm\"], \"deny\": [\"bad.example.com\"]}}"),
		   EPERM, "network.allow[0]");
	paddock_policy_free(p);

	/* under an open operator, names and wildcards are public anyway; addresses are not */
	p = ceiling_policy("{\"network\": {\"mode\": \"open\"}}");
	check_spec(p, asking("*.anything.test"), 0, NULL);
	check_spec(p, asking("10.0.0.1:80"), EPERM, "network.allow[1]");
	paddock_policy_free(p);
}

static void test_limits_ceiling(void **state)
{
	paddock_policy *p = ceiling_policy(
		"{\"limits\": {\"memory\": \"256M\", \"timeout_s\": 60, \"pids\": 64}}");
	paddock_spec *spec = spec_from("{\"limits\": {\"memory\": \"512M\"}}");
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(paddock_policy_check(p, spec, &err), -EPERM);
	assert_string_equal(err.field, "limits.memory");
	assert_string_equal(err.msg,
			    "536870912 bytes asked, the operator allows at most 268435456");
	paddock_spec_free(spec);
	check_spec(p, spec_from("{\"limits\": {\"memory\": \"256M\", \"timeout_s\": 60}}"), EPERM,
		   "limits.pids"); /* the default 512 is above the operator's 64 */
	check_spec(p,
		   spec_from("{\"limits\": {\"memory\": \"128M\", \"timeout_s\": 61, "
			     "\"pids\": 8}}"),
		   EPERM, "limits.timeout_s");
	check_spec(p,
		   spec_from("{\"limits\": {\"memory\": \"128M\", \"timeout_s\": 30, "
			     "\"pids\": 8}}"),
		   0, NULL);
	paddock_policy_free(p);
}

static void test_secrets(void **state)
{
	paddock_policy *p = ceiling_policy(
		"{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"api.test\"]}, "
		"\"secrets\": [{\"name\": \"TOKEN\", \"source\": \"env:TOKEN\", "
		"\"hosts\": [\"api.test\", \"b.test\"]}]}");

	(void)state;
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\"}, \"secrets\": [{\"name\": "
			     "\"TOKEN\", \"source\": \"env:TOKEN\", \"hosts\": [\"b.test\"]}]}"),
		   0, NULL);
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\"}, \"secrets\": [{\"name\": "
			     "\"TOKEN\", \"source\": \"env:HOME\", \"hosts\": [\"b.test\"]}]}"),
		   EPERM, "secrets[0]");
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\"}, \"secrets\": [{\"name\": "
			     "\"TOKEN\", \"source\": \"env:TOKEN\", \"hosts\": [\"b.test\", "
			     "\"evil.test\"]}]}"),
		   EPERM, "secrets[0].hosts[1]");
	check_spec(p,
		   spec_from("{\"network\": {\"mode\": \"allowlist\"}, \"secrets\": [{\"name\": "
			     "\"OTHER\", \"value\": \"x\", \"hosts\": [\"api.test\"]}]}"),
		   EPERM, "secrets[0]");
	paddock_policy_free(p);
}

static void test_dup(void **state)
{
	paddock_policy *p = ceiling_policy("{\"limits\": {\"memory\": \"256M\"}}"), *c = NULL;
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(paddock_policy_allow_host_path(p, path("allowed"), &err), 0);
	assert_int_equal(paddock_policy_set_max_network(p, "none", &err), 0);
	assert_int_equal(paddock_policy_dup(p, &c, &err), 0);
	paddock_policy_free(p);
	check_path(c, path("allowed/sub"), 0, "workspace");
	check_spec(c, spec_from("{\"limits\": {\"memory\": \"1G\"}}"), EPERM, "limits.memory");
	check_spec(c, spec_from("{\"network\": {\"mode\": \"open\"}}"), EPERM, "network.mode");
	paddock_policy_free(c);
}

static void test_bad_input(void **state)
{
	paddock_policy *p = NULL, *c = NULL;
	paddock_error err = { 0 };
	paddock_spec *spec = spec_from(NULL);
	char *real = NULL;

	(void)state;
	assert_int_equal(paddock_policy_new(NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_new(&p, &err), 0);
	assert_int_equal(paddock_policy_check(NULL, spec, &err), -EINVAL);
	assert_int_equal(paddock_policy_check(p, NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_check_network(NULL, spec, &err), -EINVAL);
	assert_int_equal(paddock_policy_check_network(p, NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_check_host_path(p, NULL, "workspace", &real, &err),
			 -EINVAL);
	assert_int_equal(paddock_policy_check_host_path(p, "/", NULL, &real, &err), -EINVAL);
	assert_null(real);
	assert_int_equal(paddock_policy_allow_host_path(p, NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_allow_host_path(p, "", &err), -ENOENT);
	assert_string_equal(err.field, "allow-host-path");
	assert_int_equal(paddock_policy_set_max_network(p, NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_set_max_network(p, "", &err), -EINVAL);
	assert_string_equal(err.field, "max-network");
	assert_int_equal(paddock_policy_set_ceiling(p, NULL, &err), -EINVAL);
	assert_int_equal(paddock_policy_dup(NULL, &c, &err), -EINVAL);
	assert_null(c);
	assert_null(paddock_policy_free(NULL));
	/* failed setters changed nothing: the policy still refuses every host path */
	assert_int_equal(paddock_policy_check_host_path(p, "/", "workspace", &real, &err), -EPERM);
	assert_string_equal(err.msg, "the operator allows no host directory");
	paddock_policy_free(p);
	paddock_spec_free(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_paths),
		cmocka_unit_test(test_host_path_roots),
		cmocka_unit_test(test_max_network),
		cmocka_unit_test(test_network_ceiling),
		cmocka_unit_test(test_limits_ceiling),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
