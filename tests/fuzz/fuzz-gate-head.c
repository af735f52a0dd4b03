/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the head parser of paddockd's HTTP gate (src/daemon/http-head.c) with what any
 * client could send before it is authenticated, and its chunk-size lines. A head it accepts
 * must point inside the input; one it refuses must say what to answer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const char *p, size_t n, const uint8_t *data, size_t size)
{
	return p >= (const char *)data && p + n <= (const char *)data + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pdd_gate_head h;
	uint64_t chunk;

	if (size > (64u << 10) + 1024)
		return 0;
	if (pdd_gate_head_parse((const char *)data, size, &h) == 0) {
		if (!h.method || !inside(h.target, h.target_len, data, size) || h.target_len == 0 ||
		    h.target[0] != '/' || (h.auth && !inside(h.auth, h.auth_len, data, size)) ||
		    (h.has_length && h.chunked) || (h.minor != 0 && h.minor != 1))
			abort();
		/* the values the E2B listener's policy reads */
		const struct pdd_gate_value *v[] = { &h.host, &h.api_key, &h.access_token,
						     &h.sandbox_id, &h.sandbox_port };
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			if (v[i]->p && !inside(v[i]->p, v[i]->len, data, size))
				abort();
	} else if (h.status < 400 || h.status > 499 || !h.code || !h.msg || !h.field) {
		abort();
	}
	if (pdd_gate_chunk_size((const char *)data, size, &chunk) == 0 && chunk >> 60)
		abort();
	return 0;
}
