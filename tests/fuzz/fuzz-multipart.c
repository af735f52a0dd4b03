/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the multipart/form-data parser of envd's POST /files (src/e2b/multipart.c) with
 * what a client uploads. The input is "Content-Type value\n" then the body: the boundary
 * comes from the first line as the handler takes it, the body is split with it. Every part
 * must lie inside the body, there are at most FILES_MAX_PARTS, a refusal says why, and
 * e2b_header_param must answer any header value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x)) {                                                                        \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x);                    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t hlen = nl ? (size_t)(nl - data) : size;
	char *ct = malloc(hlen + 1), *boundary, why[160] = "";
	/* the body in its own allocation, so ASan sees any read past its end */
	size_t blen = nl ? size - hlen - 1 : 0;
	char *body = malloc(blen ? blen : 1);
	struct e2b_part *parts = NULL;
	size_t n = 0;

	if (!ct || !body)
		abort();
	memcpy(ct, data, hlen);
	ct[hlen] = '\0';
	if (blen)
		memcpy(body, nl + 1, blen);
	free(e2b_header_param(ct, strlen(ct), "name"));
	boundary = e2b_multipart_boundary(ct);
	if (boundary) {
		CHECK(strlen(boundary) >= 1 && strlen(boundary) <= FILES_MAX_BOUNDARY);
		if (e2b_multipart_parse(body, blen, boundary, &parts, &n, why, sizeof(why))) {
			CHECK(n <= FILES_MAX_PARTS);
			for (size_t i = 0; i < n; i++) {
				CHECK(parts[i].data >= body && parts[i].data <= body + blen);
				CHECK(parts[i].len <= (size_t)(body + blen - parts[i].data));
			}
			e2b_parts_free(parts, n);
		} else {
			CHECK(why[0] != '\0');
		}
		free(boundary);
	}
	free(body);
	free(ct);
	return 0;
}
