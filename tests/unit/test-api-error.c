/* SPDX-License-Identifier: Apache-2.0 */
/* paddockd's error answers as clients read them (src/client/api-error.c) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api-error.h"

static int answer(int status, const char *body, paddock_error *err, bool *named)
{
	return client_error_answer(status, "Reason", body, body ? strlen(body) : 0, err, named);
}

static void test_paddockd_answer(void **state)
{
	paddock_error err = { 0 };
	bool named = false;

	(void)state;
	assert_int_equal(answer(404,
				"{\"error\":{\"code\":\"not_found\",\"field\":\"id\","
				"\"message\":\"no sandbox 'x'\",\"errno\":\"ESRCH\"}}",
				&err, &named),
			 -ESRCH);
	assert_true(named);
	assert_int_equal(err.code, ESRCH);
	assert_string_equal(err.field, "id");
	assert_string_equal(err.msg, "no sandbox 'x'");
	/* no errno named: the status's */
	assert_int_equal(
		answer(409, "{\"error\":{\"code\":\"busy\",\"message\":\"m\"}}", &err, &named),
		-EBUSY);
	assert_false(named);
	assert_string_equal(err.field, "");
	/* an empty message: the code names it; an unknown errno name: the status's */
	assert_int_equal(answer(429, "{\"error\":{\"code\":\"too_many\",\"errno\":\"EWHAT\"}}",
				&err, &named),
			 -EAGAIN);
	assert_false(named);
	assert_string_equal(err.msg, "too_many");
}

static void test_not_paddockd(void **state)
{
	paddock_error err = { 0 };
	bool named = true;

	(void)state;
	assert_int_equal(answer(413, "<html>too big</html>", &err, &named), -EFBIG);
	assert_false(named);
	assert_string_equal(err.msg, "paddockd answered 413 Reason");
	assert_int_equal(answer(502, NULL, &err, NULL), -EIO);
	assert_int_equal(answer(418, "[1]", &err, NULL), -EPROTO);
	assert_int_equal(answer(400, "{\"error\":\"flat\"}", &err, NULL), -EINVAL);
	assert_string_equal(err.msg, "paddockd answered 400 Reason");
}

static void test_hostile_text_is_bounded(void **state)
{
	paddock_error err = { 0 };
	char body[4096];

	(void)state;
	/* a message far longer than the error holds is cut, terminated */
	snprintf(body, sizeof(body), "{\"error\":{\"message\":\"%03000d\"}}", 7);
	assert_int_equal(answer(400, body, &err, NULL), -EINVAL);
	assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
	/* a NUL escaped in it ends it: nothing past it is taken for the message */
	assert_int_equal(answer(400, "{\"error\":{\"message\":\"a\\u0000b\"}}", &err, NULL),
			 -EINVAL);
	assert_string_equal(err.msg, "a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paddockd_answer),
		cmocka_unit_test(test_not_paddockd),
		cmocka_unit_test(test_hostile_text_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
