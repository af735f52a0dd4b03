/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the spec parser. The input is a JSON document for paddock_spec_load_json() on a
 * fresh spec. Whatever it accepts must come back out of paddock_spec_to_json() as a
 * document that loads again and writes out identically: a spec the daemon stored must read
 * back as the same spec.
 *
 * An input holding a NUL byte is also split into "FIELD\0VALUE" for paddock_spec_set(),
 * the path command-line flags take, with the same round trip after it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "spec.h"
#include "util/cleanup.h"

PD_DEFINE_CLEANUP(paddock_spec, paddock_spec_free)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Out of memory is the only excuse for a failure here. */
static void check(int r, const paddock_error *err)
{
	if (r < 0 && r != -ENOMEM)
		abort();
	if (r < 0 && err->code != ENOMEM)
		abort();
}

static void round_trip(const paddock_spec *spec)
{
	_cleanup_(paddock_spec_freep) paddock_spec *again = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL;
	paddock_error err = { 0 };
	int r;

	/* the result does not matter, only that it does not crash */
	(void)paddock_spec_validate(spec, &err);

	r = paddock_spec_to_json(spec, &a, &err);
	check(r, &err);
	if (r < 0)
		return;
	r = paddock_spec_new(&again, &err);
	check(r, &err);
	if (r < 0)
		return;
	r = paddock_spec_load_json(again, a, strlen(a), &err);
	check(r, &err);
	if (r < 0)
		return;
	r = paddock_spec_to_json(again, &b, &err);
	check(r, &err);
	if (r < 0)
		return;
	if (strcmp(a, b) != 0)
		abort();
}

static void fuzz_json(const uint8_t *data, size_t size)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	paddock_error err = { 0 };

	if (paddock_spec_new(&spec, &err) < 0)
		return;
	if (paddock_spec_load_json(spec, (const char *)data, size, &err) < 0) {
		/* a refusal always says why */
		if (err.code == 0 || err.msg[0] == '\0')
			abort();
		return;
	}
	round_trip(spec);
}

static void fuzz_set(const uint8_t *data, size_t size)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	_cleanup_free_ char *field = NULL, *value = NULL;
	const uint8_t *nul = memchr(data, '\0', size);
	paddock_error err = { 0 };

	if (!nul)
		return;
	field = strndup((const char *)data, (size_t)(nul - data));
	value = strndup((const char *)nul + 1, size - (size_t)(nul - data) - 1);
	if (!field || !value || paddock_spec_new(&spec, &err) < 0)
		return;
	if (paddock_spec_set(spec, field, value, &err) < 0) {
		if (err.code == 0 || err.msg[0] == '\0')
			abort();
		return;
	}
	round_trip(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_json(data, size);
	fuzz_set(data, size);
	return 0;
}
