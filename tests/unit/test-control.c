/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control protocol's packed messages (control.h): PD_CTL_BIND round-trips, and init's
 * parser refuses every malformed one, so a claim is applied whole or not at all.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "control.h"
#include "init.h"
#include "spec.h"

/* A plan as pd_init_plan_rlimits() makes it for the default spec, with or without a cgroup. */
static struct pd_ctl_bind default_bind(bool cgroup)
{
	struct pd_ctl_bind h = { .disk_bytes = 1u << 30,
				 .memory_bytes = 1u << 30,
				 .cpus_milli = 2000 };
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };

	assert_int_equal(paddock_spec_new(&spec, &err), 0);
	pd_init_plan_rlimits(spec, cgroup, &h.rlimits);
	paddock_spec_free(spec);
	return h;
}

static void test_plan(void **state)
{
	struct pd_ctl_bind with = default_bind(true), without = default_bind(false);

	(void)state;
	assert_int_equal(with.rlimits.n, 4);
	assert_int_equal(with.rlimits.r[0].resource, RLIMIT_FSIZE);
	assert_int_equal(with.rlimits.r[1].resource, RLIMIT_NOFILE);
	assert_int_equal(with.rlimits.r[2].resource, RLIMIT_CPU);
	/* cpu_time_s 3600: SIGXCPU at 3600 s, SIGKILL a second later */
	assert_int_equal(with.rlimits.r[2].soft, 3600);
	assert_int_equal(with.rlimits.r[2].hard, 3601);
	/* no core files, and no raising the limit */
	assert_int_equal(with.rlimits.r[3].resource, RLIMIT_CORE);
	assert_int_equal(with.rlimits.r[3].soft, 0);
	assert_int_equal(with.rlimits.r[3].hard, 0);
	/* without a cgroup, DATA and NPROC stand in for memory and pids */
	assert_int_equal(without.rlimits.n, 6);
	assert_int_equal(without.rlimits.r[4].resource, RLIMIT_DATA);
	assert_int_equal(without.rlimits.r[4].soft, 1u << 30);
	assert_int_equal(without.rlimits.r[5].resource, RLIMIT_NPROC);
	assert_int_equal(without.rlimits.r[5].soft, 512);
}

/* Packs a claim without secrets. */
static int pack(const struct pd_ctl_bind *h, const char *hostname, char *const *env, size_t envc,
		char **ret_buf, size_t *ret_len)
{
	struct pd_ctl_bind_strings s = { .hostname = hostname, .env = env, .envc = envc };

	return pd_ctl_bind_pack(h, &s, ret_buf, ret_len);
}

#define TEST_CA "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

static void test_bind_round_trip(void **state)
{
	struct pd_ctl_bind h = default_bind(false);
	char *env[] = { "A=1", "EMPTY=", "B=two words", NULL };
	struct pd_ctl_bind_msg m;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pack(&h, "box", env, 3, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), 0);
	assert_string_equal(m.hostname, "box");
	assert_int_equal(m.hdr.envc, 3);
	assert_string_equal(m.env[0], "A=1");
	assert_string_equal(m.env[1], "EMPTY=");
	assert_string_equal(m.env[2], "B=two words");
	assert_null(m.env[3]);
	assert_int_equal(m.hdr.disk_bytes, 1u << 30);
	assert_memory_equal(&m.hdr.rlimits, &h.rlimits, sizeof(h.rlimits));
	/* no secrets: none bound, no CA */
	assert_int_equal(m.hdr.secretc, 0);
	assert_null(m.secret_env[0]);
	assert_null(m.ca_pem);
	free(m.env);
	free(m.secret_env);
	free(buf);

	/* no variables at all */
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), 0);
	assert_null(m.env[0]);
	assert_int_equal(m.hdr.workspace, 0);
	free(m.env);
	free(m.secret_env);
	free(buf);

	/* with the workspace's tree: the fd travels beside; nothing reserved */
	h.workspace = 1;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), 0);
	assert_int_equal(m.hdr.workspace, 1);
	free(m.env);
	free(m.secret_env);
	free(buf);
	/* by path (rootless): an absolute path, exactly with PD_BIND_WORKSPACE_PATH */
	h.workspace = PD_BIND_WORKSPACE_PATH;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), -EINVAL);
	{
		struct pd_ctl_bind_strings s = { .hostname = "box", .workspace_path = "/srv/ws" };
		char *env1[] = { "A=1", NULL };

		h.workspace_dev = 8;
		h.workspace_ino = 1234;
		assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), 0);
		assert_int_equal(pd_ctl_bind_parse(buf, len, &m), 0);
		assert_int_equal(m.hdr.workspace, PD_BIND_WORKSPACE_PATH);
		assert_string_equal(m.workspace_path, "/srv/ws");
		assert_int_equal(m.hdr.workspace_dev, 8);
		assert_int_equal(m.hdr.workspace_ino, 1234);
		h.workspace_dev = 0;
		h.workspace_ino = 0;
		assert_null(m.ca_pem);
		free(m.env);
		free(m.secret_env);
		/* the path is a string of its own: without the flag it is no CA */
		h.workspace = PD_BIND_WORKSPACE_NONE;
		memcpy(buf, &h, sizeof(h));
		assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
		free(buf);
		/* a relative path is refused on both sides */
		h.workspace = PD_BIND_WORKSPACE_PATH;
		s.workspace_path = "srv/ws";
		assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
		s.workspace_path = "/srv/ws";
		s.env = env1;
		s.envc = 1;
		assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), 0);
		*(char *)memmem(buf, len, "/srv/ws", 7) = 'x';
		assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
		free(buf);
		/* a device and inode go with a path only */
		h.workspace = PD_BIND_WORKSPACE_TREE;
		h.workspace_ino = 42;
		assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
		assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
		free(buf);
		h.workspace_ino = 0;
		/* a path without the flag is refused when packing */
		h.workspace = PD_BIND_WORKSPACE_TREE;
		assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
	}
	h.workspace = 3;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), -EINVAL);
	h.workspace = 0;
	/* the /proc view's limits: none, or beyond what a spec allows */
	h.cpus_milli = 0;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
	free(buf);
	h.cpus_milli = 1024001;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
	free(buf);
	h.cpus_milli = 500;
	h.memory_bytes = 0;
	assert_int_equal(pack(&h, "box", NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), -EPROTO);
	free(buf);
}

static void test_bind_secrets_round_trip(void **state)
{
	struct pd_ctl_bind h = default_bind(false);
	char *env[] = { "A=1", NULL };
	char *sec[] = { "TOKEN=ghp_placeholder", "KEY=paddock_x", NULL };
	struct pd_ctl_bind_strings s = {
		.hostname = "box", .env = env, .envc = 1, .secret_env = sec, .ca_pem = TEST_CA
	};
	struct pd_ctl_bind_msg m;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &m), 0);
	assert_string_equal(m.hostname, "box");
	assert_int_equal(m.hdr.envc, 1);
	assert_string_equal(m.env[0], "A=1");
	assert_null(m.env[1]);
	assert_int_equal(m.hdr.secretc, 2);
	assert_string_equal(m.secret_env[0], "TOKEN=ghp_placeholder");
	assert_string_equal(m.secret_env[1], "KEY=paddock_x");
	assert_null(m.secret_env[2]);
	assert_string_equal(m.ca_pem, TEST_CA);
	free(m.env);
	free(m.secret_env);
	free(buf);
}

/* The packer refuses what the parser would: secrets without a CA, a CA without secrets... */
static void test_bind_secrets_pack_refused(void **state)
{
	struct pd_ctl_bind h = default_bind(false);
	char *sec[PD_CTL_MAX_SECRETS + 2] = { "T=p", NULL };
	struct pd_ctl_bind_strings s = { .hostname = "box", .secret_env = sec };
	char big_ca[PD_CTL_MAX_CA_PEM + 2];
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
	s.secret_env = NULL;
	s.ca_pem = TEST_CA;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
	/* ...a CA larger than a certificate gets, more secrets than a spec has */
	memset(big_ca, 'A', sizeof(big_ca) - 1);
	big_ca[sizeof(big_ca) - 1] = '\0';
	s.secret_env = sec;
	s.ca_pem = big_ca;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
	for (size_t i = 0; i <= PD_CTL_MAX_SECRETS; i++)
		sec[i] = "T=p";
	sec[PD_CTL_MAX_SECRETS + 1] = NULL;
	s.ca_pem = TEST_CA;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), -EINVAL);
	sec[PD_CTL_MAX_SECRETS] = NULL;
	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), 0);
	free(buf);
}

/* Packs h with hostname "box", one variable and one secret, then lets `mutate` spoil it. */
static int parse_mutated_secrets(void (*mutate)(char *buf, size_t *len))
{
	struct pd_ctl_bind h = default_bind(false);
	char *env[] = { "A=1", NULL };
	char *sec[] = { "T=p", NULL };
	struct pd_ctl_bind_strings s = {
		.hostname = "box", .env = env, .envc = 1, .secret_env = sec, .ca_pem = TEST_CA
	};
	struct pd_ctl_bind_msg m;
	char big[PD_CTL_MAX_CA_PEM + 512];
	char *buf = NULL;
	size_t len = 0;
	int r;

	assert_int_equal(pd_ctl_bind_pack(&h, &s, &buf, &len), 0);
	assert_true(len + 8 <= sizeof(big));
	memcpy(big, buf, len);
	free(buf);
	if (mutate)
		mutate(big, &len);
	r = pd_ctl_bind_parse(big, len, &m);
	if (r == 0) {
		free(m.env);
		free(m.secret_env);
	}
	return r;
}

/* offset of the secret "T=p" in a message parse_mutated_secrets() packs */
#define SECRET_AT (sizeof(struct pd_ctl_bind) + sizeof("box") + sizeof("A=1"))

static void secret_no_name(char *buf, size_t *len)
{
	(void)len;
	buf[SECRET_AT] = '='; /* "T=p" -> "==p" */
}

static void secret_no_equals(char *buf, size_t *len)
{
	(void)len;
	buf[SECRET_AT + 1] = '-';
}

static void no_secret_count(char *buf, size_t *len)
{
	(void)len;
	/* "T=p" becomes a CA, and the CA trailing bytes */
	((struct pd_ctl_bind *)(void *)buf)->secretc = 0;
}

static void too_many_secrets(char *buf, size_t *len)
{
	(void)len;
	((struct pd_ctl_bind *)(void *)buf)->secretc = PD_CTL_MAX_SECRETS + 1;
}

static void ca_control_char(char *buf, size_t *len)
{
	buf[*len - 3] = '\x1b';
}

static void ca_dropped(char *buf, size_t *len)
{
	/* secrets, but an empty CA */
	*len = SECRET_AT + sizeof("T=p") + 1;
	buf[*len - 1] = '\0';
}

static void ca_too_big(char *buf, size_t *len)
{
	size_t at = SECRET_AT + sizeof("T=p");

	memset(buf + at, 'A', PD_CTL_MAX_CA_PEM + 1);
	buf[at + PD_CTL_MAX_CA_PEM + 1] = '\0';
	*len = at + PD_CTL_MAX_CA_PEM + 2;
}

static void ca_exactly_max(char *buf, size_t *len)
{
	size_t at = SECRET_AT + sizeof("T=p");

	memset(buf + at, 'A', PD_CTL_MAX_CA_PEM);
	buf[at + PD_CTL_MAX_CA_PEM] = '\0';
	*len = at + PD_CTL_MAX_CA_PEM + 1;
}

static void cut_last_byte(char *buf, size_t *len);
static void add_trailing(char *buf, size_t *len);

static void test_bind_secrets_refused(void **state)
{
	(void)state;
	assert_int_equal(parse_mutated_secrets(NULL), 0);
	assert_int_equal(parse_mutated_secrets(cut_last_byte), -EPROTO);
	assert_int_equal(parse_mutated_secrets(add_trailing), -EPROTO);
	assert_int_equal(parse_mutated_secrets(secret_no_name), -EPROTO);
	assert_int_equal(parse_mutated_secrets(secret_no_equals), -EPROTO);
	assert_int_equal(parse_mutated_secrets(no_secret_count), -EPROTO);
	assert_int_equal(parse_mutated_secrets(too_many_secrets), -EPROTO);
	assert_int_equal(parse_mutated_secrets(ca_control_char), -EPROTO);
	assert_int_equal(parse_mutated_secrets(ca_dropped), -EPROTO);
	assert_int_equal(parse_mutated_secrets(ca_too_big), -EPROTO);
	assert_int_equal(parse_mutated_secrets(ca_exactly_max), 0);
}

/* Packs h with hostname "box" and one variable, then lets `mutate` spoil it. */
static int parse_mutated(struct pd_ctl_bind h, void (*mutate)(char *buf, size_t *len))
{
	char *env[] = { "A=1", NULL };
	struct pd_ctl_bind_msg m;
	char big[512];
	char *buf = NULL;
	size_t len = 0;
	int r;

	assert_int_equal(pack(&h, "box", env, 1, &buf, &len), 0);
	assert_true(len + 8 <= sizeof(big));
	memcpy(big, buf, len);
	free(buf);
	if (mutate)
		mutate(big, &len);
	r = pd_ctl_bind_parse(big, len, &m);
	if (r == 0) {
		free(m.env);
		free(m.secret_env);
	}
	return r;
}

static void cut_last_byte(char *buf, size_t *len)
{
	(void)buf;
	(*len)--;
}

static void add_trailing(char *buf, size_t *len)
{
	buf[(*len)++] = 'x';
}

static void drop_equals(char *buf, size_t *len)
{
	buf[*len - 4] = '-'; /* "A=1" -> "A-1" (the empty CA ends the message) */
}

static void empty_hostname(char *buf, size_t *len)
{
	(void)len;
	buf[sizeof(struct pd_ctl_bind)] = '\0';
}

static void more_env(char *buf, size_t *len)
{
	(void)len;
	((struct pd_ctl_bind *)(void *)buf)->envc = 2;
}

static void test_bind_refused(void **state)
{
	struct pd_ctl_bind good = default_bind(false), h;
	char host[80];
	char *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(parse_mutated(good, NULL), 0);
	/* strings: cut short, trailing bytes, a variable without '=', hostname empty, envc off */
	assert_int_equal(parse_mutated(good, cut_last_byte), -EPROTO);
	assert_int_equal(parse_mutated(good, add_trailing), -EPROTO);
	assert_int_equal(parse_mutated(good, drop_equals), -EPROTO);
	assert_int_equal(parse_mutated(good, empty_hostname), -EPROTO);
	assert_int_equal(parse_mutated(good, more_env), -EPROTO);
	/* shorter than the header */
	assert_int_equal(pd_ctl_bind_parse((const char *)&good, sizeof(good) - 1,
					   &(struct pd_ctl_bind_msg){ 0 }),
			 -EPROTO);
	/* a hostname longer than the kernel takes */
	memset(host, 'h', 65);
	host[65] = '\0';
	assert_int_equal(pack(&good, host, NULL, 0, &buf, &len), 0);
	assert_int_equal(pd_ctl_bind_parse(buf, len, &(struct pd_ctl_bind_msg){ 0 }), -EPROTO);
	free(buf);

	/* the disk: none, or beyond what a size can be */
	h = good;
	h.disk_bytes = 0;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	h.disk_bytes = (uint64_t)INT64_MAX + 1;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);

	/* the plan: too many, a resource init does not set, twice, soft above hard */
	h = good;
	h.rlimits.n = PD_CTL_MAX_RLIMITS + 1;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	h = good;
	h.rlimits.r[5].resource = RLIMIT_AS;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	h = good;
	h.rlimits.r[5].resource = RLIMIT_DATA;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	/* ...core files allowed */
	h = good;
	h.rlimits.r[3].hard = 1;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	h = good;
	h.rlimits.r[1].soft = h.rlimits.r[1].hard + 1;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	/* ...or without a limit every command has (cpu time here) */
	h = good;
	h.rlimits.r[2] = h.rlimits.r[5];
	h.rlimits.n = 5;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	/* ...or without the core limit */
	h = good;
	h.rlimits.r[3] = h.rlimits.r[5];
	h.rlimits.n = 5;
	assert_int_equal(parse_mutated(h, NULL), -EPROTO);
	/* DATA and NPROC are optional: a sandbox with a cgroup has neither */
	h = good;
	h.rlimits.n = 4;
	assert_int_equal(parse_mutated(h, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_bind_round_trip),
		cmocka_unit_test(test_bind_refused),
		cmocka_unit_test(test_bind_secrets_round_trip),
		cmocka_unit_test(test_bind_secrets_pack_refused),
		cmocka_unit_test(test_bind_secrets_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
