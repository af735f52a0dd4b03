/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the secret broker's two unit tests (test-secret-subst.c, test-secret-scrub.c) share:
 * two secrets, each with a placeholder of its value's length and shape, and a way to read
 * what came out. One copy, so that both sides of the broker are tested on the same values.
 * Include it after cmocka.h.
 */
#pragma once

#include <stdint.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "secret-subst.h"

#define GH_VALUE  "ghp_realvalue1234"
#define GH_PH	  "ghp_Xq9zPlaceHldr"
#define NPM_VALUE "npm_secretvalue99"
#define NPM_PH	  "npm_Zz8yPlaceHldr"

/* 0: a GitHub token bound to the host (every form), 1: an npm token not bound (raw only) */
static const struct pd_secret two[] = {
	{ "GITHUB_TOKEN", (const uint8_t *)GH_VALUE, sizeof(GH_VALUE) - 1, (const uint8_t *)GH_PH,
	  sizeof(GH_PH) - 1, true, false },
	{ "NPM_TOKEN", (const uint8_t *)NPM_VALUE, sizeof(NPM_VALUE) - 1, (const uint8_t *)NPM_PH,
	  sizeof(NPM_PH) - 1, false, false },
};

/* All of ev as a NUL-terminated string (free it), its length in *len. */
static inline char *drain(struct evbuffer *ev, size_t *len)
{
	char *s;

	*len = evbuffer_get_length(ev);
	s = malloc(*len + 1);
	assert_non_null(s);
	assert_int_equal(evbuffer_remove(ev, s, *len), (int)*len);
	s[*len] = '\0';
	return s;
}
