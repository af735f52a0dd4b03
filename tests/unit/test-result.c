/* SPDX-License-Identifier: Apache-2.0 */
/* The result report: exit statuses by reason, and the JSON a front end writes. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "paddock/paddock.h"

static void test_exit_status(void **state)
{
	struct paddock_result r = { .reason = PADDOCK_END_EXITED, .exit_code = 3 };

	(void)state;
	assert_int_equal(paddock_result_exit_status(&r), 3);
	r = (struct paddock_result){ .reason = PADDOCK_END_SIGNALED,
				     .exit_code = -1,
				     .signal = SIGTERM };
	assert_int_equal(paddock_result_exit_status(&r), 143);
	r = (struct paddock_result){ .reason = PADDOCK_END_TIMEOUT,
				     .exit_code = -1,
				     .signal = SIGKILL };
	assert_int_equal(paddock_result_exit_status(&r), 137);
	/* a limit that ended a command which still returned keeps its code */
	r = (struct paddock_result){ .reason = PADDOCK_END_PIDS, .exit_code = 1 };
	assert_int_equal(paddock_result_exit_status(&r), 1);
	r = (struct paddock_result){ .reason = PADDOCK_END_ERROR, .exit_code = 127 };
	assert_int_equal(paddock_result_exit_status(&r), 127);
	r = (struct paddock_result){ .reason = PADDOCK_END_ERROR, .exit_code = -1 };
	assert_int_equal(paddock_result_exit_status(&r), PADDOCK_EXIT_FAILURE);
	assert_int_equal(paddock_result_exit_status(NULL), PADDOCK_EXIT_FAILURE);
}

static void test_reason_strings_are_stable(void **state)
{
	static const char *const want[] = { "exited",	"signaled", "timeout", "killed", "error",
					    "cpu_time", "oom",	    "pids",    "disk",	 "output" };

	(void)state;
	for (int i = 0; i < _PADDOCK_END_MAX; i++)
		assert_string_equal(paddock_end_reason_to_string((enum paddock_end_reason)i),
				    want[i]);
	assert_null(paddock_end_reason_to_string(_PADDOCK_END_MAX));
}

static void test_json(void **state)
{
	struct paddock_result r = {
		.reason = PADDOCK_END_OOM,
		.exit_code = -1,
		.signal = SIGKILL,
		.wall_s = 1.5,
		.peak_memory_bytes = 268435456,
		.oom_kills = 2,
		.pids_peak = -1,
		.output_truncated = true,
		.limits_json = "{\"memory\":{\"value\":268435456,\"enforced_by\":\"cgroup-v1\"}}",
	};
	paddock_error err = { 0 };
	char *s = NULL;
	json_t *o;

	(void)state;
	assert_int_equal(paddock_result_to_json(&r, &s, &err), 0);
	o = json_loads(s, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "reason")), "oom");
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), SIGKILL);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_status")), 137);
	assert_int_equal(json_integer_value(json_object_get(o, "oom_kills")), 2);
	assert_true(json_is_null(json_object_get(o, "pids_peak")));
	assert_true(json_is_true(json_object_get(o, "output_truncated")));
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(o, "limits"), "memory"), "enforced_by")),
		"cgroup-v1");
	json_decref(o);
	free(s);
	assert_int_equal(paddock_result_to_json(NULL, &s, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_reason_strings_are_stable),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
