/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multipart/form-data (RFC 7578) as envd's POST /files takes it: a body split into parts
 * whose data point into the body. Hand-written because neither libevent nor any library we
 * use parses multipart; it is bounded and fuzzed (tests/fuzz/fuzz-multipart.c): the body is
 * a client's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define FILES_MAX_PARTS	      1000	 /* parts of one multipart body */
#define FILES_MAX_PART_HEADER (8u << 10) /* bytes of one part's headers */
#define FILES_MAX_BOUNDARY    70	 /* RFC 2046 */

struct e2b_part {
	char *name, *filename; /* form field name, filename parameter (NULL: none) */
	const char *data;      /* into the body */
	size_t len;
};

/*
 * Splits body into parts. false with why filled when it is not well formed or over the
 * limits; else *ret (free with e2b_parts_free) and *ret_n.
 */
bool e2b_multipart_parse(const char *body, size_t len, const char *boundary, struct e2b_part **ret,
			 size_t *ret_n, char *why, size_t why_size);
void e2b_parts_free(struct e2b_part *parts, size_t n);
/* The boundary parameter of a multipart Content-Type (1 to 70 bytes), malloc'ed, or NULL. */
char *e2b_multipart_boundary(const char *ct);
/* A parameter of a header value ("form-data; name=\"file\"; filename=\"a b\""), malloc'ed. */
char *e2b_header_param(const char *v, size_t vlen, const char *key);
