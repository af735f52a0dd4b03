/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"

static void test_fail_fills_code_and_message(void **state)
{
	paddock_error err = { 0 };

	(void)state;
	assert_int_equal(pd_fail(&err, ENOENT, "open '%s'", "x"), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(err.msg, "open 'x'");
	assert_string_equal(err.field, "");
	/* a negative errno is accepted too */
	assert_int_equal(pd_fail(&err, -EPERM, "m"), -EPERM);
	assert_int_equal(err.code, EPERM);
}

static void test_fail_field_and_prefix(void **state)
{
	paddock_error err = { 0 };
	char buf[512];

	(void)state;
	assert_int_equal(pd_fail_field(&err, EINVAL, "limits.disk", "expected a size"), -EINVAL);
	assert_string_equal(err.field, "limits.disk");
	pd_error_prefix(&err, "load spec");
	assert_string_equal(err.msg, "load spec: expected a size");
	assert_string_equal(err.field, "limits.disk");
	assert_string_equal(paddock_error_format(&err, buf, sizeof(buf)),
			    "load spec: expected a size: Invalid argument");
}

static void test_escape_hostile_strings(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(pd_escape("a\nb\x1b[31m", buf, sizeof(buf)), "a\\x0ab\\x1b[31m");
	assert_string_equal(pd_escape("it's", buf, sizeof(buf)), "it\\x27s");
	/* truncation keeps the buffer terminated and says so */
	pd_escape("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", buf, sizeof(buf));
	assert_true(strlen(buf) < sizeof(buf));
	assert_non_null(strstr(buf, "..."));
	assert_string_equal(pd_escape(NULL, buf, sizeof(buf)), "(null)");
}

static void test_errno_names(void **state)
{
	(void)state;
	assert_string_equal(paddock_errno_name(EINVAL), "EINVAL");
	assert_string_equal(paddock_errno_name(-ENOSPC), "ENOSPC");
	assert_string_equal(paddock_errno_name(99999), "E?");
}

/* The names a front end uses (paddock.h) are the library's own functions, errors and codecs */
static void test_public_names(void **state)
{
	paddock_error err = { 0 };
	uint64_t size = 0;
	double secs = 0;
	char *enc, *dec = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(paddock_fail_field(&err, 0, "limits.memory", "expected %s", "a size"),
			 -EINVAL);
	assert_string_equal(err.field, "limits.memory");
	paddock_error_prefix(&err, "create");
	assert_string_equal(err.msg, "create: expected a size");
	assert_int_equal(paddock_fail(&err, 0, "m"), -EIO);
	paddock_error_clear(&err);
	assert_int_equal(err.code, 0);
	assert_string_equal(PADDOCK_ESC("a\nb"), "a\\x0ab");
	assert_int_equal(paddock_errno_from_name("ENOENT"), ENOENT);
	assert_int_equal(paddock_errno_from_name(paddock_errno_name(EDQUOT)), EDQUOT);
	assert_int_equal(paddock_errno_from_name("E?"), 0);
	assert_int_equal(paddock_errno_from_name("enoent"), 0);
	assert_int_equal(paddock_errno_from_name(NULL), 0);

	assert_int_equal(paddock_parse_size("1.5G", &size), 0);
	assert_true(size == 1536ull << 20);
	assert_int_equal(paddock_parse_size("-1", &size), -EINVAL);
	assert_int_equal(paddock_parse_size("12q", &size), -EINVAL);
	assert_int_equal(paddock_parse_seconds("0.5", &secs), 0);
	assert_true(secs == 0.5);
	assert_int_equal(paddock_parse_seconds("0", &secs), -EINVAL);

	enc = paddock_base64_encode("\0\xff\x10", 3);
	assert_non_null(enc);
	assert_string_equal(enc, "AP8Q");
	assert_int_equal(paddock_base64_decode(enc, strlen(enc), &dec, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(dec, "\0\xff\x10", 3);
	free(dec);
	free(enc);
	assert_int_equal(paddock_base64_decode("A=P8", 4, &dec, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_fills_code_and_message),
		cmocka_unit_test(test_fail_field_and_prefix),
		cmocka_unit_test(test_escape_hostile_strings),
		cmocka_unit_test(test_errno_names),
		cmocka_unit_test(test_public_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
