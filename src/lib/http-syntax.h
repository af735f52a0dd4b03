/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/1.1 syntax the egress half reads on both sides of a brokered exchange: the request
 * (secret-subst.c) and the response (secret-scrub.c). One reading of a chunk-size line and
 * of the byte classes, so the two sides cannot come to frame the same bytes differently.
 *
 * Trust: every byte comes from the sandbox (requests) or from a server (responses).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static inline bool pd_http_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* a token character (RFC 9110 tchar) */
static inline bool pd_http_tchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

/* a field value: no control byte but HTAB (obs-text, >= 0x80, is allowed) */
static inline bool pd_http_value_char(uint8_t c)
{
	return (c >= 0x20 || c == '\t') && c != 0x7f;
}

static inline bool pd_http_mem_caseeq(const uint8_t *p, size_t len, const char *s)
{
	return len == strlen(s) && strncasecmp((const char *)p, s, len) == 0;
}

/* digits only, no sign, no list: what RFC 9112 §6.3 leaves no doubt about */
bool pd_http_content_length(const uint8_t *v, size_t len, uint64_t *ret);

/*
 * Calls fn on each element of a comma-separated list (a field value), trimmed of
 * whitespace; false as soon as fn says no.
 */
bool pd_http_each_element(const uint8_t *v, size_t len,
			  bool (*fn)(const uint8_t *el, size_t el_len, void *ud), void *ud);

/*
 * A chunk-size line being read: hex digits (at most 15: under 2^60, so no sum overflows
 * later), optional whitespace, optional extensions after ';' (dropped; no control byte),
 * CRLF or LF. Zero it (or pd_chunk_line_reset()) before each line.
 */
struct pd_chunk_line {
	size_t bytes;
	bool cr;
	enum { PD_CHUNK_HEX, PD_CHUNK_BWS, PD_CHUNK_EXT } phase;
	unsigned digits;
	uint64_t size;
};

static inline void pd_chunk_line_reset(struct pd_chunk_line *l)
{
	memset(l, 0, sizeof(*l));
}

/*
 * One byte of the line: 0 for more, 1 when the line ended (l->size is the chunk's size),
 * -1 with *why when it is not a chunk-size line, or longer than max_bytes.
 */
int pd_chunk_line_byte(struct pd_chunk_line *l, uint8_t c, size_t max_bytes, const char **why);
