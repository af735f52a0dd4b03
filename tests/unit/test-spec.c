/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the sandbox spec: defaults, JSON in and out, string setters, validation and
 * the size and seconds parsers. Every refused input is checked for EINVAL, for the exact
 * field it names, and for leaving the spec unchanged.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "paddock/paddock.h"
#include "egress-policy.h"
#include "spec.h"
#include "util/cleanup.h"

PD_DEFINE_CLEANUP(paddock_spec, paddock_spec_free)

#define FULL_JSON                                                                                  \
	"{\"hostname\": \"box-1\", \"rootfs\": \"/srv/images/debian\","                            \
	" \"workspace\": \"/home/me/project\", \"cwd\": \"/workspace//src/\","                     \
	" \"env\": {\"LANG\": \"C.UTF-8\", \"PATH\": \"/usr/bin:/bin\", \"EMPTY\": \"\"},"         \
	" \"binds\": [{\"source\": \"/data\", \"target\": \"/mnt//data/\", \"readonly\": true},"   \
	" {\"source\": \"/opt/tools\"}],"                                                          \
	" \"limits\": {\"timeout_s\": 2.5, \"disk\": \"1.5G\"},"                                   \
	" \"security\": {\"landlock\": \"required\"}, \"network\": {\"mode\": \"none\"}}"

static paddock_spec *new_spec(void)
{
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	assert_non_null(spec);
	return spec;
}

static void load_ok(paddock_spec *spec, const char *json)
{
	paddock_error err = { 0 };
	int r = paddock_spec_load_json(spec, json, strlen(json), &err);

	if (r < 0)
		print_error("load '%s': field '%s': %s\n", json, err.field, err.msg);
	assert_int_equal(r, 0);
}

static void set_ok(paddock_spec *spec, const char *field, const char *value)
{
	paddock_error err = { 0 };
	int r = paddock_spec_set(spec, field, value, &err);

	if (r < 0)
		print_error("set %s='%s': field '%s': %s\n", field, value, err.field, err.msg);
	assert_int_equal(r, 0);
}

static char *to_json(const paddock_spec *spec)
{
	paddock_error err = { 0 };
	char *s = NULL;

	assert_int_equal(paddock_spec_to_json(spec, &s, &err), 0);
	assert_non_null(s);
	return s;
}

static paddock_spec *full_spec(void)
{
	paddock_spec *spec = new_spec();

	load_ok(spec, FULL_JSON);
	return spec;
}

static void test_defaults(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	paddock_error err = { 0 };

	(void)state;
	assert_string_equal(spec->hostname, "sandbox");
	assert_null(spec->rootfs);
	assert_null(spec->workspace);
	assert_string_equal(spec->cwd, "/workspace");
	assert_non_null(spec->env);
	assert_null(spec->env[0]);
	assert_int_equal(spec->n_env, 0);
	assert_int_equal(spec->n_binds, 0);
	assert_true(spec->limits.timeout_s == 86400.0);
	assert_int_equal(spec->limits.disk_bytes, UINT64_C(1) << 30);
	assert_int_equal(spec->security.landlock, PD_LANDLOCK_AUTO);
	assert_int_equal(spec->network.mode, PD_NET_NONE);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
}

static void test_defaults_json(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	_cleanup_free_ char *json = NULL;

	(void)state;
	json = to_json(spec);
	assert_string_equal(json, "{\n"
				  "  \"hostname\": \"sandbox\",\n"
				  "  \"rootfs\": null,\n"
				  "  \"image\": null,\n"
				  "  \"workspace\": null,\n"
				  "  \"cwd\": \"/workspace\",\n"
				  "  \"user\": \"user\",\n"
				  "  \"env\": {},\n"
				  "  \"binds\": [],\n"
				  "  \"limits\": {\n"
				  "    \"timeout_s\": 86400,\n"
				  "    \"disk\": \"1G\",\n"
				  "    \"memory\": \"1G\",\n"
				  "    \"pids\": 512,\n"
				  "    \"cpus\": 2,\n"
				  "    \"cpu_time_s\": 3600,\n"
				  "    \"file_size\": \"1G\",\n"
				  "    \"nofile\": 1024,\n"
				  "    \"output\": \"16M\",\n"
				  "    \"required\": []\n"
				  "  },\n"
				  "  \"security\": {\n"
				  "    \"landlock\": \"auto\"\n"
				  "  },\n"
				  "  \"network\": {\n"
				  "    \"mode\": \"none\",\n"
				  "    \"allow\": [],\n"
				  "    \"deny\": [],\n"
				  "    \"transparent\": true,\n"
				  "    \"max_connections\": 256,\n"
				  "    \"unlisted\": \"deny\",\n"
				  "    \"ask_timeout_s\": 30,\n"
				  "    \"ask_max_pending\": 8\n"
				  "  },\n"
				  "  \"secrets\": []\n"
				  "}");
}

static void test_full_json(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = full_spec();
	paddock_error err = { 0 };

	(void)state;
	assert_string_equal(spec->hostname, "box-1");
	assert_string_equal(spec->rootfs, "/srv/images/debian");
	assert_string_equal(spec->workspace, "/home/me/project");
	assert_string_equal(spec->cwd, "/workspace/src");
	assert_int_equal(spec->n_env, 3);
	assert_string_equal(spec->env[0], "LANG=C.UTF-8");
	assert_string_equal(spec->env[1], "PATH=/usr/bin:/bin");
	assert_string_equal(spec->env[2], "EMPTY=");
	assert_null(spec->env[3]);
	assert_int_equal(spec->n_binds, 2);
	assert_string_equal(spec->binds[0].source, "/data");
	assert_string_equal(spec->binds[0].target, "/mnt/data");
	assert_true(spec->binds[0].readonly);
	assert_string_equal(spec->binds[1].source, "/opt/tools");
	assert_string_equal(spec->binds[1].target, "/opt/tools");
	assert_false(spec->binds[1].readonly);
	assert_true(spec->limits.timeout_s == 2.5);
	assert_int_equal(spec->limits.disk_bytes, UINT64_C(1536) << 20);
	assert_int_equal(spec->security.landlock, PD_LANDLOCK_REQUIRED);
	assert_int_equal(spec->network.mode, PD_NET_NONE);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
}

/* Fields absent from a document keep their value; env and binds are replaced whole. */
static void test_partial_load(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = full_spec();

	(void)state;
	load_ok(spec, "{\"env\": {\"ONLY\": \"1\"}, \"binds\": [], \"rootfs\": null}");
	assert_string_equal(spec->hostname, "box-1");
	assert_null(spec->rootfs);
	assert_string_equal(spec->workspace, "/home/me/project");
	assert_int_equal(spec->n_env, 1);
	assert_string_equal(spec->env[0], "ONLY=1");
	assert_null(spec->env[1]);
	assert_int_equal(spec->n_binds, 0);
	assert_int_equal(spec->limits.disk_bytes, UINT64_C(1536) << 20);

	load_ok(spec, "{}");
	load_ok(spec, "  {\"limits\": {\"disk\": 1048576}}\n");
	assert_int_equal(spec->limits.disk_bytes, UINT64_C(1) << 20);
	load_ok(spec, "{\"limits\": {\"timeout_s\": 60}}");
	assert_true(spec->limits.timeout_s == 60.0);
	assert_string_equal(spec->hostname, "box-1");
}

static void assert_round_trip(const paddock_spec *spec)
{
	_cleanup_(paddock_spec_freep) paddock_spec *again = new_spec();
	_cleanup_free_ char *a = to_json(spec), *b = NULL;

	load_ok(again, a);
	b = to_json(again);
	assert_string_equal(a, b);
}

static void test_round_trip(void **state)
{
	static const char *const docs[] = {
		"{}",
		FULL_JSON,
		"{\"limits\": {\"timeout_s\": 0.1, \"disk\": 1048577}}",
		"{\"limits\": {\"timeout_s\": 2592000, \"disk\": \"1T\"}}",
		"{\"limits\": {\"timeout_s\": 1e-300, \"disk\": \"1.000001G\"}}",
		"{\"limits\": {\"timeout_s\": 86399.999999999985, \"disk\": \"1025K\"}}",
		"{\"env\": {\"U\": \"caf\\u00e9 \\ud83d\\ude00 \\n\\t\\\"'\"}}",
		"{\"binds\": [{\"source\": \"/a:b\", \"target\": \"/x y\"}]}",
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		load_ok(spec, docs[i]);
		assert_round_trip(spec);
	}
}

static void test_disk_to_json(void **state)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
		{ "\"1G\"", "\"1G\"" },	       { "\"1.5G\"", "\"1536M\"" },
		{ "1099511627776", "\"1T\"" }, { "1048577", "1048577" },
		{ "\"1025K\"", "\"1025K\"" },  { "\"2048K\"", "\"2M\"" },
		{ "\"1048577b\"", "1048577" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
		_cleanup_(json_decrefp) json_t *root = NULL;
		_cleanup_free_ char *doc = NULL, *json = NULL, *disk = NULL;

		assert_true(asprintf(&doc, "{\"limits\": {\"disk\": %s}}", cases[i].in) > 0);
		load_ok(spec, doc);
		json = to_json(spec);
		root = json_loads(json, 0, NULL);
		assert_non_null(root);
		disk = json_dumps(json_object_get(json_object_get(root, "limits"), "disk"),
				  JSON_ENCODE_ANY);
		assert_string_equal(disk, cases[i].out);
	}
}

static void test_dup(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = full_spec(), *copy = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(pd_spec_dup(spec, &copy, &err), 0);
	a = to_json(spec);
	b = to_json(copy);
	assert_string_equal(a, b);
	set_ok(copy, "env", "LANG=de_DE.UTF-8");
	set_ok(copy, "binds", "/x");
	c = to_json(spec);
	assert_string_equal(a, c);
}

struct bad_case {
	const char *json;
	const char *field;
};

static void assert_load_fails(paddock_spec *spec, const char *json, size_t len, const char *field)
{
	_cleanup_free_ char *before = to_json(spec), *after = NULL;
	paddock_error err = { 0 };
	int r;

	r = paddock_spec_load_json(spec, json, len, &err);
	if (r != -EINVAL || strcmp(err.field, field) != 0)
		print_error("load '%.200s': r=%d field '%s': %s\n", json, r, err.field, err.msg);
	assert_int_equal(r, -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_string_equal(err.field, field);
	assert_true(err.msg[0] != '\0');
	after = to_json(spec);
	assert_string_equal(before, after);
}

static void test_bad_json(void **state)
{
	static const struct bad_case cases[] = {
		/* not a spec document */
		{ "", "" },
		{ "{", "" },
		{ "[]", "" },
		{ "\"sandbox\"", "" },
		{ "null", "" },
		{ "{} {}", "" },
		{ "{\"hostname\": \"a\", \"hostname\": \"b\"}", "" },
		{ "{\"limits\": {\"disk\": \"1G\", \"disk\": \"2G\"}}", "" },
		{ "{\"hostname\": \"\xff\"}", "" },
		{ "{\"hostname\": \"\xc0\xaf\"}", "" },
		{ "{\"limits\": {\"timeout_s\": 1e999}}", "" },
		{ "{\"limits\": {\"disk\": 99999999999999999999}}", "" },
		{ "{\"env\": {\"A\\u0000B\": \"x\"}}", "" },
		{ "{\"binds\": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]}", "" },
		/* unknown fields */
		{ "{\"bogus\": 1}", "bogus" },
		{ "{\"Hostname\": \"x\"}", "Hostname" },
		{ "{\"limits\": {\"bogus\": 1}}", "limits.bogus" },
		{ "{\"limits\": {\"memory\": \"1X\"}}", "limits.memory" },
		{ "{\"limits\": {\"pids\": 1.5}}", "limits.pids" },
		{ "{\"limits\": {\"pids\": 0}}", "limits.pids" },
		{ "{\"limits\": {\"cpus\": 0}}", "limits.cpus" },
		{ "{\"limits\": {\"cpus\": \"1\"}}", "limits.cpus" },
		{ "{\"limits\": {\"cpu_time_s\": -1}}", "limits.cpu_time_s" },
		{ "{\"limits\": {\"nofile\": 3}}", "limits.nofile" },
		{ "{\"limits\": {\"output\": \"1\"}}", "limits.output" },
		{ "{\"limits\": {\"required\": [\"bogus\"]}}", "limits.required" },
		{ "{\"limits\": {\"required\": \"memory\"}}", "limits.required" },
		{ "{\"security\": {\"seccomp\": true}}", "security.seccomp" },
		{ "{\"network\": {\"colour\": []}}", "network.colour" },
		{ "{\"network\": {\"allow\": \"pypi.org\"}}", "network.allow" },
		{ "{\"network\": {\"allow\": [1]}}", "network.allow[0]" },
		{ "{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"ok.org\", \"bad host\"]}}",
		  "network.allow[1]" },
		{ "{\"network\": {\"mode\": \"open\", \"deny\": [\"10.0.0.0/33\"]}}",
		  "network.deny[0]" },
		{ "{\"network\": {\"mode\": \"open\", \"allow\": [\"preset:nope\"]}}",
		  "network.allow[0]" },
		{ "{\"network\": {\"transparent\": \"yes\"}}", "network.transparent" },
		{ "{\"network\": {\"max_connections\": 0}}", "network.max_connections" },
		{ "{\"network\": {\"max_connections\": 1.5}}", "network.max_connections" },
		{ "{\"binds\": [{\"source\": \"/a\", \"mode\": \"ro\"}]}", "binds[0].mode" },
		{ "{\"a\\nb\": 1}", "a\\x0ab" },
		/* wrong types */
		{ "{\"hostname\": 5}", "hostname" },
		{ "{\"hostname\": null}", "hostname" },
		{ "{\"rootfs\": 1}", "rootfs" },
		{ "{\"workspace\": false}", "workspace" },
		{ "{\"cwd\": null}", "cwd" },
		{ "{\"env\": []}", "env" },
		{ "{\"env\": {\"A\": 1}}", "env.A" },
		{ "{\"env\": {\"A\": null}}", "env.A" },
		{ "{\"binds\": {}}", "binds" },
		{ "{\"binds\": [\"/a\"]}", "binds[0]" },
		{ "{\"binds\": [{\"source\": 1}]}", "binds[0].source" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": null}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"readonly\": \"yes\"}]}",
		  "binds[0].readonly" },
		{ "{\"binds\": [{\"source\": \"/a\", \"readonly\": 1}]}", "binds[0].readonly" },
		{ "{\"limits\": []}", "limits" },
		{ "{\"limits\": {\"timeout_s\": \"10\"}}", "limits.timeout_s" },
		{ "{\"limits\": {\"disk\": 1.5}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": true}}", "limits.disk" },
		{ "{\"security\": \"required\"}", "security" },
		{ "{\"security\": {\"landlock\": true}}", "security.landlock" },
		{ "{\"network\": \"none\"}", "network" },
		{ "{\"network\": {\"mode\": null}}", "network.mode" },
		/* NUL inside strings */
		{ "{\"hostname\": \"a\\u0000b\"}", "hostname" },
		{ "{\"cwd\": \"/a\\u0000b\"}", "cwd" },
		{ "{\"env\": {\"A\": \"x\\u0000y\"}}", "env.A" },
		{ "{\"binds\": [{\"source\": \"/a\\u0000\"}]}", "binds[0].source" },
		/* hostname */
		{ "{\"hostname\": \"\"}", "hostname" },
		{ "{\"hostname\": \"-box\"}", "hostname" },
		{ "{\"hostname\": \"box-\"}", "hostname" },
		{ "{\"hostname\": \"a_b\"}", "hostname" },
		{ "{\"hostname\": \"a.b\"}", "hostname" },
		{ "{\"hostname\": \"b\\u00f6x\"}", "hostname" },
		{ "{\"hostname\": "
		  "\"a234567890123456789012345678901234567890123456789012345678901234\"}",
		  "hostname" },
		/* paths */
		{ "{\"rootfs\": \"images/debian\"}", "rootfs" },
		{ "{\"rootfs\": \"\"}", "rootfs" },
		{ "{\"workspace\": \"/a/../etc\"}", "workspace" },
		{ "{\"workspace\": \"/a/.\"}", "workspace" },
		{ "{\"cwd\": \"workspace\"}", "cwd" },
		{ "{\"cwd\": \"/./x\"}", "cwd" },
		/* binds */
		{ "{\"binds\": [{\"target\": \"/x\"}]}", "binds[0].source" },
		{ "{\"binds\": [{\"source\": \"data\"}]}", "binds[0].source" },
		{ "{\"binds\": [{\"source\": \"/a/..\"}]}", "binds[0].source" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/proc\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/proc/sys\"}]}",
		  "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"//proc/\"}]}",
		  "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/dev\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/dev/shm\"}]}",
		  "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/sys/fs\"}]}",
		  "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"///\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"x\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/x/../proc\"}]}",
		  "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/proc\"}]}", "binds[0].target" },
		{ "{\"binds\": [{\"source\": \"/a\"}, {\"source\": \"/b\", \"target\": \"/dev\"}]}",
		  "binds[1].target" },
		/* env */
		{ "{\"env\": {\"1A\": \"x\"}}", "env" },
		{ "{\"env\": {\"\": \"x\"}}", "env" },
		{ "{\"env\": {\"A-B\": \"x\"}}", "env" },
		{ "{\"env\": {\"A=B\": \"x\"}}", "env" },
		/* limits */
		{ "{\"limits\": {\"timeout_s\": 0}}", "limits.timeout_s" },
		{ "{\"limits\": {\"timeout_s\": -1}}", "limits.timeout_s" },
		{ "{\"limits\": {\"timeout_s\": 2592000.5}}", "limits.timeout_s" },
		{ "{\"limits\": {\"timeout_s\": 1e300}}", "limits.timeout_s" },
		{ "{\"limits\": {\"disk\": \"1X\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"-1G\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"1e999\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"1023K\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"1.0000001T\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": \"2T\"}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": -1}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": 0}}", "limits.disk" },
		{ "{\"limits\": {\"disk\": 1048575}}", "limits.disk" },
		/* enums */
		{ "{\"security\": {\"landlock\": \"off\"}}", "security.landlock" },
		{ "{\"security\": {\"landlock\": \"AUTO\"}}", "security.landlock" },
		{ "{\"network\": {\"mode\": \"host\"}}", "network.mode" },
		{ "{\"network\": {\"mode\": \"\"}}", "network.mode" },
		/* the first bad field wins, and nothing before it sticks */
		{ "{\"hostname\": \"changed\", \"limits\": {\"disk\": \"bad\"}}", "limits.disk" },
		{ "{\"env\": {\"NEW\": \"1\"}, \"binds\": [{\"source\": \"/b\"}], \"cwd\": \"x\"}",
		  "cwd" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = full_spec();

		assert_load_fails(spec, cases[i].json, strlen(cases[i].json), cases[i].field);
	}
}

static void test_bad_json_messages(void **state)
{
	static const struct {
		const char *json;
		const char *needle;
	} cases[] = {
		{ "{\"hostname\": }", "line 1, column 14" },
		{ "{\n\"a\": 1,\n\"a\": 2}", "line 3" },
		{ "{\"network\": {\"mode\": \"host\"}}",
		  "expected one of 'none', 'allowlist', 'open', got 'host'" },
		{ "{\"security\": {\"landlock\": \"x\"}}", "'auto', 'required'" },
		{ "{\"limits\": {\"bogus\": 1}}", "unknown field 'bogus'" },
		{ "{\"limits\": {\"bogus\": 1}}", "'timeout_s', 'disk'" },
		{ "{\"hostname\": 5}", "expected a string, got an integer" },
		{ "{\"binds\": [{\"source\": \"/a\", \"target\": \"/proc\"}]}", "'/proc'" },
		{ "{\"limits\": {\"disk\": \"1X\"}}", "got '1X'" },
		{ "{\"hostname\": \"bad\\u001b[31m\"}", "bad\\x1b[31m" },
		{ "{\"hostname\": \"x\"", "'}' expected near end of file" },
		{ "{\"a\": 1,\"a\": 2}", "duplicate object key near '\"a\"'" },
		{ "{\"hostname\": \"x\" \"it's\"}", "expected near '\"it\\x27s\"'" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
		paddock_error err = { 0 };

		assert_int_equal(
			paddock_spec_load_json(spec, cases[i].json, strlen(cases[i].json), &err),
			-EINVAL);
		if (!strstr(err.msg, cases[i].needle))
			print_error("message '%s' lacks '%s'\n", err.msg, cases[i].needle);
		assert_non_null(strstr(err.msg, cases[i].needle));
	}
}

/* head, then n items "<pre><i><post>" separated by commas, then tail */
static char *repeat_json(const char *head, const char *pre, const char *post, size_t n,
			 const char *tail)
{
	size_t size = strlen(head) + strlen(tail) + n * (strlen(pre) + strlen(post) + 24) + 1;
	size_t o = 0;
	char *s = malloc(size);

	assert_non_null(s);
	o += (size_t)snprintf(s + o, size - o, "%s", head);
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, size - o, "%s%s%zu%s", i > 0 ? "," : "", pre, i, post);
	snprintf(s + o, size - o, "%s", tail);
	return s;
}

static void test_limits_json(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = full_spec();
	_cleanup_free_ char *binds_ok = NULL, *binds_bad = NULL, *env_ok = NULL, *env_bad = NULL,
			    *env_big = NULL, *deep = NULL, *huge = NULL;

	(void)state;
	binds_ok =
		repeat_json("{\"binds\": [", "{\"source\": \"/b", "\"}", PD_SPEC_MAX_BINDS, "]}");
	binds_bad = repeat_json("{\"binds\": [", "{\"source\": \"/b", "\"}", PD_SPEC_MAX_BINDS + 1,
				"]}");
	env_ok = repeat_json("{\"env\": {", "\"V", "\": \"x\"", PD_SPEC_MAX_ENV, "}}");
	env_bad = repeat_json("{\"env\": {", "\"V", "\": \"x\"", PD_SPEC_MAX_ENV + 1, "}}");

	assert_load_fails(spec, binds_bad, strlen(binds_bad), "binds");
	assert_load_fails(spec, env_bad, strlen(env_bad), "env");

	/* 5 variables of ~30K: the fifth goes over 128K */
	env_big = malloc(5 * 30010 + 64);
	assert_non_null(env_big);
	strcpy(env_big, "{\"env\": {");
	for (int i = 0; i < 5; i++) {
		size_t o = strlen(env_big);

		o += (size_t)sprintf(env_big + o, "%s\"B%d\": \"", i > 0 ? "," : "", i);
		memset(env_big + o, 'x', 30000);
		strcpy(env_big + o + 30000, "\"");
	}
	strcat(env_big, "}}");
	assert_load_fails(spec, env_big, strlen(env_big), "env");

	deep = malloc(2 * 100 + 1);
	assert_non_null(deep);
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	deep[200] = '\0';
	assert_load_fails(spec, deep, strlen(deep), "");
	deep[0] = '{';
	assert_load_fails(spec, deep, strlen(deep), "");

	/* size is checked before anything is read, so the bytes need not be JSON */
	huge = calloc(1, PD_SPEC_MAX_JSON + 2);
	assert_non_null(huge);
	memset(huge, ' ', PD_SPEC_MAX_JSON + 1);
	huge[0] = '{';
	assert_load_fails(spec, huge, PD_SPEC_MAX_JSON + 1, "");

	/* a NUL byte in the document itself */
	assert_load_fails(spec, "{\"hostname\": \"a\0b\"}", 19, "");

	load_ok(spec, binds_ok);
	assert_int_equal(spec->n_binds, PD_SPEC_MAX_BINDS);
	load_ok(spec, env_ok);
	assert_int_equal(spec->n_env, PD_SPEC_MAX_ENV);
	assert_null(spec->env[PD_SPEC_MAX_ENV]);
	assert_round_trip(spec);
}

static void assert_set_fails(paddock_spec *spec, const char *field, const char *value,
			     const char *ret_field)
{
	_cleanup_free_ char *before = to_json(spec), *after = NULL;
	paddock_error err = { 0 };
	int r;

	r = paddock_spec_set(spec, field, value, &err);
	if (r != -EINVAL || strcmp(err.field, ret_field) != 0)
		print_error("set %s='%s': r=%d field '%s': %s\n", field, value, r, err.field,
			    err.msg);
	assert_int_equal(r, -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_string_equal(err.field, ret_field);
	after = to_json(spec);
	assert_string_equal(before, after);
}

static void test_set(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	paddock_error err = { 0 };

	(void)state;
	set_ok(spec, "hostname", "worker-7");
	assert_string_equal(spec->hostname, "worker-7");
	set_ok(spec, "rootfs", "/srv/rootfs/");
	assert_string_equal(spec->rootfs, "/srv/rootfs/");
	set_ok(spec, "workspace", "/home/me/proj");
	assert_string_equal(spec->workspace, "/home/me/proj");
	set_ok(spec, "cwd", "//workspace///sub//");
	assert_string_equal(spec->cwd, "/workspace/sub");
	set_ok(spec, "cwd", "/");
	assert_string_equal(spec->cwd, "/");
	set_ok(spec, "limits.timeout_s", "2.5");
	assert_true(spec->limits.timeout_s == 2.5);
	set_ok(spec, "limits.timeout_s", "2592000");
	assert_true(spec->limits.timeout_s == 2592000.0);
	set_ok(spec, "limits.disk", "512M");
	assert_int_equal(spec->limits.disk_bytes, UINT64_C(512) << 20);
	set_ok(spec, "security.landlock", "required");
	assert_int_equal(spec->security.landlock, PD_LANDLOCK_REQUIRED);
	set_ok(spec, "security.landlock", "auto");
	assert_int_equal(spec->security.landlock, PD_LANDLOCK_AUTO);
	set_ok(spec, "network.mode", "none");
	assert_int_equal(spec->network.mode, PD_NET_NONE);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
	assert_round_trip(spec);
}

static void test_set_env(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

	(void)state;
	set_ok(spec, "env", "A=1");
	set_ok(spec, "env", "B=two=2");
	set_ok(spec, "env", "C=");
	set_ok(spec, "env", "AB=3");
	set_ok(spec, "env", "A=replaced");
	assert_int_equal(spec->n_env, 4);
	assert_string_equal(spec->env[0], "A=replaced");
	assert_string_equal(spec->env[1], "B=two=2");
	assert_string_equal(spec->env[2], "C=");
	assert_string_equal(spec->env[3], "AB=3");
	assert_null(spec->env[4]);

	assert_set_fails(spec, "env", "NOEQUALS", "env");
	assert_set_fails(spec, "env", "=x", "env");
	assert_set_fails(spec, "env", "1A=x", "env");
	assert_set_fails(spec, "env", "A B=x", "env");
	assert_set_fails(spec, "env", "A=\xff", "env.A");
	{
		/* a value may be a credential: messages never show it */
		paddock_error err = { 0 };

		assert_int_equal(paddock_spec_set(spec, "env", "A=s3cret\xff", &err), -EINVAL);
		assert_null(strstr(err.msg, "s3cret"));
	}
	assert_round_trip(spec);
}

static void test_set_env_limits(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	_cleanup_free_ char *big = malloc(PD_SPEC_MAX_ENV_BYTES + 8);
	char entry[32];

	(void)state;
	for (int i = 0; i < PD_SPEC_MAX_ENV; i++) {
		snprintf(entry, sizeof(entry), "V%d=%d", i, i);
		set_ok(spec, "env", entry);
	}
	assert_set_fails(spec, "env", "ONE_MORE=1", "env");
	set_ok(spec, "env", "V7=replacing is fine at the limit");
	assert_string_equal(spec->env[7], "V7=replacing is fine at the limit");

	assert_non_null(big);
	memcpy(big, "BIG=", 4);
	memset(big + 4, 'x', PD_SPEC_MAX_ENV_BYTES);
	big[4 + PD_SPEC_MAX_ENV_BYTES] = '\0';
	assert_set_fails(spec, "env", big, "env");
}

static void test_set_binds(void **state)
{
	static const struct {
		const char *value;
		const char *source;
		const char *target;
		bool readonly;
	} cases[] = {
		{ "/src", "/src", "/src", false },
		{ "/src/", "/src/", "/src", false },
		{ "/src:/dst", "/src", "/dst", false },
		{ "/src:/dst:ro", "/src", "/dst", true },
		{ "/src:/dst:rw", "/src", "/dst", false },
		{ "/src:ro", "/src", "/src", true },
		{ "/src:rw", "/src", "/src", false },
		{ "/src://dst//x/", "/src", "/dst/x", false },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		set_ok(spec, "binds", "/first");
		set_ok(spec, "binds", cases[i].value);
		assert_int_equal(spec->n_binds, 2);
		assert_string_equal(spec->binds[1].source, cases[i].source);
		assert_string_equal(spec->binds[1].target, cases[i].target);
		assert_int_equal(spec->binds[1].readonly, cases[i].readonly);
		assert_round_trip(spec);
	}
}

static void test_set_errors(void **state)
{
	static const struct {
		const char *field;
		const char *value;
		const char *ret_field;
	} cases[] = {
		{ "bogus", "1", "bogus" },
		{ "limits", "1", "limits" },
		{ "limits.memory", "1X", "limits.memory" },
		{ "limits.bogus", "1", "limits.bogus" },
		{ "limits.pids", "-1", "limits.pids" },
		{ "limits.pids", "12x", "limits.pids" },
		{ "limits.cpus", "0", "limits.cpus" },
		{ "limits.required", "memory,bogus", "limits.required" },
		{ "", "x", "" },
		{ "hostname", "", "hostname" },
		{ "hostname", "a b", "hostname" },
		{ "hostname", "-a", "hostname" },
		{ "rootfs", "relative", "rootfs" },
		{ "rootfs", "", "rootfs" },
		{ "workspace", "/a/../b", "workspace" },
		{ "workspace", "/\xc3\x28", "workspace" },
		{ "cwd", "./x", "cwd" },
		{ "limits.timeout_s", "", "limits.timeout_s" },
		{ "limits.timeout_s", "0", "limits.timeout_s" },
		{ "limits.timeout_s", "1s", "limits.timeout_s" },
		{ "limits.timeout_s", "2592001", "limits.timeout_s" },
		{ "limits.disk", "1X", "limits.disk" },
		{ "limits.disk", "1K", "limits.disk" },
		{ "limits.disk", "1025G", "limits.disk" },
		{ "security.landlock", "off", "security.landlock" },
		{ "network.mode", "host", "network.mode" },
		{ "binds", "", "binds[1].source" },
		{ "binds", "src", "binds[1].source" },
		{ "binds", "/src:dst", "binds[1].target" },
		{ "binds", "/src:", "binds[1].target" },
		{ "binds", "/src:/proc", "binds[1].target" },
		{ "binds", "/src:/dev/null:ro", "binds[1].target" },
		{ "binds", "/sys:ro", "binds[1].target" },
		{ "binds", "/src:/", "binds[1].target" },
		{ "binds", "/src:/dst:rx", "binds" },
		{ "binds", "/src:/dst:ro:ro", "binds" },
		{ "binds", "/a:/b:/c", "binds" },
		{ "binds", "ro", "binds[1].source" },
		{ "binds", ":ro", "binds[1].source" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		set_ok(spec, "binds", "/first");
		assert_set_fails(spec, cases[i].field, cases[i].value, cases[i].ret_field);
	}
}

static void test_set_binds_limit(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	char value[32];

	(void)state;
	for (int i = 0; i < PD_SPEC_MAX_BINDS; i++) {
		snprintf(value, sizeof(value), "/src%d", i);
		set_ok(spec, "binds", value);
	}
	assert_set_fails(spec, "binds", "/one-more", "binds");
}

static void assert_validate_fails(const paddock_spec *spec, const char *field)
{
	paddock_error err = { 0 };
	int r = paddock_spec_validate(spec, &err);

	if (r != -EINVAL || strcmp(err.field, field) != 0)
		print_error("validate: r=%d field '%s': %s\n", r, err.field, err.msg);
	assert_int_equal(r, -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_string_equal(err.field, field);
}

static void test_validate(void **state)
{
	paddock_error err = { 0 };

	(void)state;
	{
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		/* duplicates pass the per-field checks of load; validate refuses the later one */
		load_ok(spec, "{\"binds\": [{\"source\": \"/a\", \"target\": \"/x\"},"
			      " {\"source\": \"/b\", \"target\": \"/y\"},"
			      " {\"source\": \"/c\", \"target\": \"/x/\"}]}");
		assert_validate_fails(spec, "binds[2].target");
		assert_round_trip(spec);
	}
	{
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		set_ok(spec, "binds", "/a:/workspace");
		assert_int_equal(paddock_spec_validate(spec, &err), 0);
		set_ok(spec, "workspace", "/home/me");
		assert_validate_fails(spec, "binds[0].target");
	}
	{
		/* fields set behind the parser's back are checked too */
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		spec->limits.timeout_s = NAN;
		assert_validate_fails(spec, "limits.timeout_s");
		spec->limits.timeout_s = 1;
		spec->limits.disk_bytes = 0;
		assert_validate_fails(spec, "limits.disk");
		spec->limits.disk_bytes = UINT64_C(1) << 30;
		spec->network.mode = _PD_NET_MAX;
		assert_validate_fails(spec, "network.mode");
		spec->network.mode = PD_NET_NONE;
		spec->security.landlock = _PD_LANDLOCK_MAX;
		assert_validate_fails(spec, "security.landlock");
		spec->security.landlock = PD_LANDLOCK_AUTO;
		free(spec->cwd);
		spec->cwd = strdup("/a//b");
		assert_validate_fails(spec, "cwd");
		free(spec->hostname);
		spec->hostname = NULL;
		assert_validate_fails(spec, "hostname");
	}
	{
		_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();

		set_ok(spec, "env", "A=1");
		set_ok(spec, "env", "B=2");
		spec->env[1][0] = 'A';
		assert_validate_fails(spec, "env");
	}
}

/* The network section: rules kept as written, checked when given, refused under "none". */
static void test_network(void **state)
{
	paddock_spec *spec = new_spec();
	paddock_error err = { 0 };
	char *json = NULL;

	(void)state;
	set_ok(spec, "network.allow", "pypi.org");
	assert_int_equal(spec->network.mode, PD_NET_ALLOWLIST); /* implied by a rule */
	set_ok(spec, "network.allow", "*.githubusercontent.com:443");
	set_ok(spec, "network.allow", "preset:npm");
	set_ok(spec, "network.deny", "evil.pypi.org");
	set_ok(spec, "network.transparent", "false");
	set_ok(spec, "network.max_connections", "16");
	assert_int_equal(spec->network.n_allow, 3);
	assert_int_equal(spec->network.n_deny, 1);
	assert_false(spec->network.transparent);
	assert_int_equal(spec->network.max_connections, 16);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
	assert_round_trip(spec);
	assert_int_equal(paddock_spec_to_json(spec, &json, &err), 0);
	assert_non_null(strstr(json, "\"preset:npm\""));
	free(json);

	/* a JSON array replaces the rules; a bad rule leaves the spec as it was */
	assert_int_not_equal(
		paddock_spec_load_json(spec, "{\"network\": {\"allow\": [\"a.org\", \"-x\"]}}",
				       strlen("{\"network\": {\"allow\": [\"a.org\", \"-x\"]}}"),
				       &err),
		0);
	assert_int_equal(spec->network.n_allow, 3);
	assert_int_equal(paddock_spec_load_json(spec, "{\"network\": {\"allow\": [\"a.org\"]}}",
						strlen("{\"network\": {\"allow\": [\"a.org\"]}}"),
						&err),
			 0);
	assert_int_equal(spec->network.n_allow, 1);

	/* rules under mode none would do nothing: refused, naming the field */
	set_ok(spec, "network.mode", "none");
	assert_validate_fails(spec, "network.allow");
	assert_int_not_equal(paddock_spec_set(spec, "network.allow", "a b", &err), 0);
	assert_string_equal(err.field, "network.allow");
	assert_int_not_equal(paddock_spec_set(spec, "network.max_connections", "-1", &err), 0);
	assert_int_not_equal(paddock_spec_set(spec, "network.transparent", "maybe", &err), 0);
	assert_int_not_equal(paddock_spec_set(spec, "network.colour", "red", &err), 0);
	paddock_spec_free(spec);
}

/* network.unlisted "ask": allowlist only; its time and pending bound are checked by field. */
static void test_network_ask(void **state)
{
	static const char doc[] = "{\"network\": {\"mode\": \"allowlist\", \"unlisted\": \"ask\","
				  " \"ask_timeout_s\": 2.5, \"ask_max_pending\": 3}}";
	paddock_spec *spec = new_spec();
	struct pd_egress_policy p;
	paddock_error err = { 0 };

	(void)state;
	load_ok(spec, doc);
	assert_int_equal(spec->network.unlisted, PD_NET_UNLISTED_ASK);
	assert_true(spec->network.ask_timeout_s == 2.5);
	assert_int_equal(spec->network.ask_max_pending, 3);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
	assert_round_trip(spec);
	assert_int_equal(pd_spec_network_policy(spec, &p, &err), 0);
	assert_true(p.ask);
	pd_egress_policy_release(&p);

	/* from strings, as the flags give them */
	set_ok(spec, "network.ask_timeout_s", "10");
	set_ok(spec, "network.ask_max_pending", "64");
	set_ok(spec, "network.unlisted", "deny");
	assert_int_equal(paddock_spec_validate(spec, &err), 0);

	/* bad values name their field and change nothing */
	assert_int_not_equal(paddock_spec_set(spec, "network.unlisted", "maybe", &err), 0);
	assert_string_equal(err.field, "network.unlisted");
	assert_int_not_equal(paddock_spec_set(spec, "network.ask_timeout_s", "0", &err), 0);
	assert_string_equal(err.field, "network.ask_timeout_s");
	assert_int_not_equal(paddock_spec_set(spec, "network.ask_timeout_s", "3601", &err), 0);
	assert_int_not_equal(paddock_spec_set(spec, "network.ask_max_pending", "65", &err), 0);
	assert_string_equal(err.field, "network.ask_max_pending");
	assert_int_not_equal(paddock_spec_set(spec, "network.ask_max_pending", "0", &err), 0);
	assert_int_not_equal(paddock_spec_load_json(spec, "{\"network\": {\"unlisted\": 1}}",
						    strlen("{\"network\": {\"unlisted\": 1}}"),
						    &err),
			     0);
	assert_string_equal(err.field, "network.unlisted");
	assert_true(spec->network.ask_timeout_s == 10);
	assert_int_equal(spec->network.ask_max_pending, 64);

	/* asking is about an allowlist's unlisted hosts: refused with open or none */
	set_ok(spec, "network.unlisted", "ask");
	set_ok(spec, "network.mode", "open");
	assert_validate_fails(spec, "network.unlisted");
	set_ok(spec, "network.mode", "none");
	assert_validate_fails(spec, "network.unlisted");
	paddock_spec_free(spec);
}

/* Secrets: the source is kept, a value never written out; bad ones name their field. */
static void test_secrets(void **state)
{
	static const char doc[] =
		"{\"network\": {\"allow\": [\"api.test\"]}, \"secrets\": ["
		"{\"name\": \"TOKEN\", \"value\": \"s3cr3t-value-123\", \"hosts\": [\"api.test\"]},"
		"{\"name\": \"KEY\", \"source\": \"file:/run/key\", \"hosts\": [\"*.api.test\"],"
		" \"in_body\": true}]}";
	paddock_spec *spec = new_spec(), *copy = NULL;
	paddock_error err = { 0 };
	char *json = NULL;

	(void)state;
	load_ok(spec, doc);
	assert_int_equal(spec->n_secrets, 2);
	assert_int_equal(paddock_spec_validate(spec, &err), 0);
	assert_int_equal(paddock_spec_to_json(spec, &json, &err), 0);
	assert_null(strstr(json, "s3cr3t")); /* SECURITY: never written out */
	assert_non_null(strstr(json, "\"source\": \"value\""));
	assert_non_null(strstr(json, "\"source\": \"file:/run/key\""));
	free(json);
	assert_int_equal(pd_spec_dup(spec, &copy, &err), 0);
	assert_int_equal(copy->secrets[0].value_len, strlen("s3cr3t-value-123"));
	paddock_spec_free(copy);
	set_ok(spec, "secrets", "GH_TOKEN@api.test,*.gh.test");
	set_ok(spec, "secrets", "OAI=file:/etc/key@api.test");
	assert_string_equal(spec->secrets[2].source, "env:GH_TOKEN");
	assert_int_equal(spec->secrets[2].n_hosts, 2);

	static const struct {
		const char *text, *field;
	} bad[] = {
		{ "NOHOST", "secrets" },
		{ "1BAD@api.test", "secrets" },
		{ "X=file:rel@api.test", "secrets" },
		{ "X=http:x@api.test", "secrets" },
		{ "X@api.test:443", "secrets" },
		{ "X@10.0.0.0/8", "secrets" },
		{ "TOKEN@api.test", "secrets" }, /* given twice */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(paddock_spec_set(spec, "secrets", bad[i].text, &err), -EINVAL);
		assert_string_equal(err.field, bad[i].field);
	}
	static const struct {
		const char *json, *field;
	} badj[] = {
		{ "{\"secrets\": {}}", "secrets" },
		{ "{\"secrets\": [{\"name\": \"A\", \"hosts\": [\"a.test\"]}]}", "secrets[0]" },
		{ "{\"secrets\": [{\"name\": \"A\", \"value\": \"v\", \"source\": \"env:A\", "
		  "\"hosts\": [\"a.test\"]}]}",
		  "secrets[0]" },
		{ "{\"secrets\": [{\"name\": \"A\", \"value\": \"v\", \"hosts\": []}]}",
		  "secrets[0].hosts" },
		{ "{\"secrets\": [{\"name\": \"A\", \"value\": \"\", \"hosts\": [\"a.test\"]}]}",
		  "secrets[0].value" },
		{ "{\"secrets\": [{\"name\": \"A\", \"value\": \"v\", \"hosts\": [\"a.test\"], "
		  "\"colour\": 1}]}",
		  "secrets[0].colour" },
	};
	for (size_t i = 0; i < sizeof(badj) / sizeof(badj[0]); i++) {
		assert_int_equal(
			paddock_spec_load_json(spec, badj[i].json, strlen(badj[i].json), &err),
			-EINVAL);
		assert_string_equal(err.field, badj[i].field);
	}
	assert_int_equal(spec->n_secrets, 4); /* a refused document changed nothing */

	/* secrets need egress; a secret's name is not also an env entry */
	paddock_spec *none = new_spec();
	set_ok(none, "secrets", "A@a.test");
	assert_validate_fails(none, "secrets");
	set_ok(none, "network.allow", "a.test");
	set_ok(none, "env", "A=1");
	assert_validate_fails(none, "env");
	paddock_spec_free(none);
	paddock_spec_free(spec);
}

static void test_null_args(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	paddock_error err = { 0 };
	char *json = NULL;

	(void)state;
	assert_null(paddock_spec_free(NULL));
	assert_int_equal(paddock_spec_new(NULL, &err), -EINVAL);
	assert_int_equal(paddock_spec_load_json(NULL, "{}", 2, &err), -EINVAL);
	assert_int_equal(paddock_spec_load_json(spec, NULL, 2, &err), -EINVAL);
	assert_int_equal(paddock_spec_set(NULL, "hostname", "x", &err), -EINVAL);
	assert_int_equal(paddock_spec_set(spec, NULL, "x", &err), -EINVAL);
	assert_int_equal(paddock_spec_set(spec, "hostname", NULL, &err), -EINVAL);
	assert_int_equal(paddock_spec_validate(NULL, &err), -EINVAL);
	assert_int_equal(paddock_spec_to_json(NULL, &json, &err), -EINVAL);
	assert_int_equal(paddock_spec_to_json(spec, NULL, &err), -EINVAL);
	assert_null(json);
	/* a NULL err is allowed */
	assert_int_equal(paddock_spec_set(spec, "hostname", "", NULL), -EINVAL);
	/* a bounded, non-terminated buffer is read only up to len */
	assert_int_equal(paddock_spec_load_json(spec, "{}garbage", 2, &err), 0);
}

static void test_enums(void **state)
{
	(void)state;
	assert_string_equal(pd_landlock_mode_to_string(PD_LANDLOCK_AUTO), "auto");
	assert_string_equal(pd_landlock_mode_to_string(PD_LANDLOCK_REQUIRED), "required");
	assert_null(pd_landlock_mode_to_string(_PD_LANDLOCK_MAX));
	assert_int_equal(pd_landlock_mode_from_string("auto"), PD_LANDLOCK_AUTO);
	assert_int_equal(pd_landlock_mode_from_string("required"), PD_LANDLOCK_REQUIRED);
	assert_int_equal(pd_landlock_mode_from_string("Auto"), -EINVAL);
	assert_int_equal(pd_landlock_mode_from_string(NULL), -EINVAL);
	assert_string_equal(pd_net_mode_to_string(PD_NET_NONE), "none");
	assert_null(pd_net_mode_to_string(_PD_NET_MAX));
	assert_int_equal(pd_net_mode_from_string("none"), PD_NET_NONE);
	assert_int_equal(pd_net_mode_from_string("host"), -EINVAL);
}

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t bytes;
	} cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "4096B", 0, 4096 },
		{ "64k", 0, 64 << 10 },
		{ "64K", 0, 64 << 10 },
		{ "64KB", 0, 64 << 10 },
		{ "64kib", 0, 64 << 10 },
		{ "64KiB", 0, 64 << 10 },
		{ "512M", 0, UINT64_C(512) << 20 },
		{ "512m", 0, UINT64_C(512) << 20 },
		{ "1G", 0, UINT64_C(1) << 30 },
		{ "1GiB", 0, UINT64_C(1) << 30 },
		{ "1.5G", 0, UINT64_C(3) << 29 },
		{ "0.5K", 0, 512 },
		{ "1.1K", 0, 1126 }, /* 1126.4: truncated to whole bytes */
		{ "1.000001T", 0, (UINT64_C(1) << 40) + 1099511 },
		{ "2T", 0, UINT64_C(2) << 40 },
		{ "16777215T", 0, UINT64_C(16777215) << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1X", -EINVAL, 0 },
		{ "1e999", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
		{ "1.G", -EINVAL, 0 },
		{ ".5G", -EINVAL, 0 },
		{ "1.0000001G", -EINVAL, 0 },
		{ "1iB", -EINVAL, 0 },
		{ "1Gi", -EINVAL, 0 },
		{ "1GBB", -EINVAL, 0 },
		{ "1KM", -EINVAL, 0 },
		{ "K", -EINVAL, 0 },
		{ "16777216T", -EINVAL, 0 },
		{ "18446744073709551616", -EINVAL, 0 },
		{ "99999999999999999999999", -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t bytes = 7;
		int r = pd_parse_size(cases[i].s, &bytes);

		if (r != cases[i].r)
			print_error("pd_parse_size('%s') = %d\n", cases[i].s, r);
		assert_int_equal(r, cases[i].r);
		assert_int_equal(bytes, r == 0 ? cases[i].bytes : 7);
	}
	assert_int_equal(pd_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_parse_seconds(void **state)
{
	static const struct {
		const char *s;
		int r;
		double v;
	} cases[] = {
		{ "2", 0, 2.0 },       { "0.5", 0, 0.5 },      { "86400", 0, 86400.0 },
		{ "2.50", 0, 2.5 },    { "007", 0, 7.0 },      { "0.001", 0, 0.001 },
		{ "", -EINVAL, 0 },    { "abc", -EINVAL, 0 },  { "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },  { "0", -EINVAL, 0 },    { "0.0", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 }, { "nan", -EINVAL, 0 },  { "1s", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 }, { "0x10", -EINVAL, 0 }, { ".5", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },  { " 1", -EINVAL, 0 },   { "1,5", -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		double v = -7;
		int r = pd_parse_seconds(cases[i].s, &v);

		if (r != cases[i].r)
			print_error("pd_parse_seconds('%s') = %d\n", cases[i].s, r);
		assert_int_equal(r, cases[i].r);
		assert_true(v == (r == 0 ? cases[i].v : -7));
	}
}

static void test_parse_seconds_huge(void **state)
{
	char s[400];
	double v;

	(void)state;
	/* 1 followed by 399 zeros overflows a double */
	memset(s, '0', sizeof(s) - 1);
	s[0] = '1';
	s[sizeof(s) - 1] = '\0';
	assert_int_equal(pd_parse_seconds(s, &v), -EINVAL);
	/* 0.000…1 underflows */
	s[0] = '0';
	s[1] = '.';
	s[sizeof(s) - 2] = '1';
	assert_int_equal(pd_parse_seconds(s, &v), -EINVAL);
}

static void test_limits(void **state)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = new_spec();
	_cleanup_(paddock_spec_freep) paddock_spec *again = new_spec();
	_cleanup_free_ char *json = NULL, *json2 = NULL;
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(spec->limits.memory_bytes, UINT64_C(1) << 30);
	assert_int_equal(spec->limits.pids, 512);
	assert_true(spec->limits.cpus == 2.0);
	assert_int_equal(paddock_spec_set(spec, "limits.memory", "256M", &err), 0);
	assert_int_equal(spec->limits.memory_bytes, UINT64_C(256) << 20);
	assert_int_equal(paddock_spec_set(spec, "limits.pids", "64", &err), 0);
	assert_int_equal(spec->limits.pids, 64);
	assert_int_equal(paddock_spec_set(spec, "limits.cpus", "0.5", &err), 0);
	assert_true(spec->limits.cpus == 0.5);
	assert_int_equal(paddock_spec_set(spec, "limits.cpu_time_s", "1.5", &err), 0);
	assert_true(spec->limits.cpu_time_s == 1.5);
	assert_int_equal(paddock_spec_set(spec, "limits.file_size", "1M", &err), 0);
	assert_int_equal(spec->limits.file_size_bytes, UINT64_C(1) << 20);
	assert_int_equal(paddock_spec_set(spec, "limits.nofile", "64", &err), 0);
	assert_int_equal(paddock_spec_set(spec, "limits.output", "1M", &err), 0);
	assert_int_equal(paddock_spec_set(spec, "limits.required", "memory,pids", &err), 0);
	assert_int_equal(spec->limits.required, (1u << PD_LIMIT_MEMORY) | (1u << PD_LIMIT_PIDS));
	/* a refused value leaves the old one */
	assert_int_equal(paddock_spec_set(spec, "limits.pids", "0", &err), -EINVAL);
	assert_string_equal(err.field, "limits.pids");
	assert_int_equal(spec->limits.pids, 64);
	/* the JSON form round-trips, "required" included */
	json = to_json(spec);
	assert_non_null(strstr(json, "\"required\": [\n      \"memory\",\n      \"pids\"\n    ]"));
	load_ok(again, json);
	json2 = to_json(again);
	assert_string_equal(json, json2);
	/* sizes load from integers too */
	load_ok(again, "{\"limits\": {\"memory\": 8388608, \"cpus\": 1}}");
	assert_int_equal(again->limits.memory_bytes, UINT64_C(8) << 20);
	assert_true(again->limits.cpus == 1.0);
}

static char *template_of(const char *json)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	paddock_error err = { 0 };
	char *t = NULL;

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	if (paddock_spec_load_json(spec, json, strlen(json), &err) < 0)
		fail_msg("%s: %s", json, err.msg);
	assert_int_equal(paddock_spec_template_json(spec, &t, &err), 0);
	return t;
}

/*
 * What a claim binds is not in the template: every limit but `required`, the network rules,
 * the secrets (sandbox-pool.c).
 */
static void test_template(void **state)
{
	_cleanup_free_ char *def = template_of("{}");
	_cleanup_free_ char *limits = template_of(
		"{\"hostname\": \"other\", \"env\": {\"A\": \"1\"}, "
		"\"limits\": {\"memory\": \"64M\", \"pids\": 8, \"cpus\": 0.25, \"cpu_time_s\": 3, "
		"\"file_size\": \"1M\", \"nofile\": 64, \"disk\": \"8M\", \"timeout_s\": 9, "
		"\"output\": \"4K\"}}");
	_cleanup_free_ char *required = template_of("{\"limits\": {\"required\": [\"cpus\"]}}");
	_cleanup_free_ char *cwd = template_of("{\"cwd\": \"/tmp\"}");
	/* secrets are bound at the claim; they need egress, and none versus egress stays */
	_cleanup_free_ char *egress = template_of("{\"network\": {\"allow\": [\"a.test\"]}}");
	_cleanup_free_ char *secrets = template_of(
		"{\"network\": {\"allow\": [\"b.test\"]}, \"secrets\": [{\"name\": \"K\", "
		"\"value\": \"v\", \"hosts\": [\"b.test\"]}]}");

	(void)state;
	assert_string_equal(secrets, egress);
	assert_null(strstr(secrets, "secrets"));
	assert_string_not_equal(egress, def);
	assert_string_equal(limits, def);
	assert_null(strstr(def, "\"memory\""));
	assert_non_null(strstr(def, "\"limits\":{\"required\":[]}"));
	assert_string_not_equal(required, def);
	assert_string_not_equal(cwd, def);
}

/* A client reads a secret's value by name, from where its source says, at the time it asks */
static void test_secret_value_by_name(void **state)
{
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };
	uint8_t *v = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	assert_int_equal(
		paddock_spec_set(spec, "secrets", "TOKEN=env:PD_TEST_TOKEN@api.example", &err), 0);
	assert_int_equal(
		paddock_spec_set(spec, "secrets", "OTHER=env:PD_TEST_EMPTY@x.example", &err), 0);
	setenv("PD_TEST_TOKEN", "s3cret", 1);
	assert_int_equal(paddock_spec_secret_value(spec, "TOKEN", &v, &n, &err), 0);
	assert_int_equal(n, 6);
	assert_memory_equal(v, "s3cret", 7);
	free(v);
	assert_int_equal(paddock_spec_secret_value(spec, "NOPE", &v, &n, &err), -ENOENT);
	assert_string_equal(err.field, "secrets");
	unsetenv("PD_TEST_EMPTY");
	assert_int_equal(paddock_spec_secret_value(spec, "OTHER", &v, &n, &err), -EINVAL);
	assert_string_equal(err.field, "secrets[1].source");
	assert_null(v);
	assert_int_equal(paddock_spec_secret_value(spec, NULL, &v, &n, &err), -EINVAL);
	unsetenv("PD_TEST_TOKEN");
	paddock_spec_free(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),       cmocka_unit_test(test_defaults_json),
		cmocka_unit_test(test_limits),	       cmocka_unit_test(test_full_json),
		cmocka_unit_test(test_partial_load),   cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_disk_to_json),   cmocka_unit_test(test_dup),
		cmocka_unit_test(test_bad_json),       cmocka_unit_test(test_bad_json_messages),
		cmocka_unit_test(test_limits_json),    cmocka_unit_test(test_set),
		cmocka_unit_test(test_network),	       cmocka_unit_test(test_network_ask),
		cmocka_unit_test(test_secrets),	       cmocka_unit_test(test_set_env),
		cmocka_unit_test(test_set_env_limits), cmocka_unit_test(test_set_binds),
		cmocka_unit_test(test_set_errors),     cmocka_unit_test(test_set_binds_limit),
		cmocka_unit_test(test_validate),       cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_enums),	       cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_seconds),  cmocka_unit_test(test_parse_seconds_huge),
		cmocka_unit_test(test_template),       cmocka_unit_test(test_secret_value_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
