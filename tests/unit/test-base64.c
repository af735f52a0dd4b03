/* SPDX-License-Identifier: Apache-2.0 */
/* util/base64: what every front end decodes from clients (stdin_b64, write_file content). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/base64.h"

static void round_trip(void **state)
{
	unsigned char all[256];

	(void)state;
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	for (size_t len = 0; len <= sizeof(all); len++) {
		char *enc = pd_base64_encode(all, len), *dec = NULL;
		size_t n = 0;

		assert_non_null(enc);
		assert_int_equal(strlen(enc), (len + 2) / 3 * 4);
		assert_int_equal(pd_base64_decode(enc, strlen(enc), &dec, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, all, len);
		free(enc);
		free(dec);
	}
}

static void known(void **state)
{
	char *enc = pd_base64_encode("\x00\x01\xff\xfe", 4), *dec = NULL;
	size_t n;

	(void)state;
	assert_string_equal(enc, "AAH//g==");
	free(enc);
	/* unpadded and wrapped forms decode too */
	assert_int_equal(pd_base64_decode("AAH//g", 6, &dec, &n), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(dec, "\x00\x01\xff\xfe", 4);
	free(dec);
	assert_int_equal(pd_base64_decode("aGVs\nbG8=\r\n", 11, &dec, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(dec, "hello", 5);
	free(dec);
}

static void refused(void **state)
{
	static const char *const bad[] = {
		"a",	       /* one character is not a byte */
		"abcde",       /* nor is a fifth */
		"ab=c",	       /* a character after padding */
		"ab===",       /* too much padding */
		"abc==",       /* padding that does not fit */
		"=abc",	       /* padding first */
		"ab-_",	       /* the URL alphabet */
		"ab\x01c",     /* a control character */
		"abc\xc3\xa9", /* not ASCII */
		"====",	       /* padding alone */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *dec = (char *)0x1;
		size_t n = 7;

		assert_int_equal(pd_base64_decode(bad[i], strlen(bad[i]), &dec, &n), -EINVAL);
		assert_ptr_equal(dec, (char *)0x1); /* nothing given back */
		assert_int_equal(n, 7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(known),
		cmocka_unit_test(refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
