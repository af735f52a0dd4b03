/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.1 syntax both sides of a brokered exchange read (http-syntax.h). */
#include "http-syntax.h"

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

static int bad(const char **why, const char *what)
{
	*why = what;
	return -1;
}

int pd_chunk_line_byte(struct pd_chunk_line *l, uint8_t c, size_t max_bytes, const char **why)
{
	int d;

	if (++l->bytes > max_bytes)
		return bad(why, "a chunk size line over the limit");
	if (l->cr && c != '\n')
		return bad(why, "a CR not followed by LF in a chunk size line");
	l->cr = c == '\r';
	if (c == '\r')
		return 0;
	if (c == '\n')
		return l->digits ? 1 : bad(why, "a bad chunk size");
	switch (l->phase) {
	case PD_CHUNK_HEX:
		d = hexval(c);
		if (d >= 0) {
			if (++l->digits > 15)
				return bad(why, "a chunk size too large");
			l->size = l->size << 4 | (uint64_t)d;
			return 0;
		}
		if (l->digits == 0)
			return bad(why, "a bad chunk size");
		if (c == ';')
			l->phase = PD_CHUNK_EXT;
		else if (pd_http_ows(c))
			l->phase = PD_CHUNK_BWS;
		else
			return bad(why, "a bad chunk size");
		return 0;
	case PD_CHUNK_BWS:
		if (c == ';')
			l->phase = PD_CHUNK_EXT;
		else if (!pd_http_ows(c))
			return bad(why, "a bad chunk size");
		return 0;
	case PD_CHUNK_EXT:
		/* extensions are dropped, but a control byte is not HTTP */
		return pd_http_value_char(c) ? 0 : bad(why, "a control byte in a chunk extension");
	}
	return 0;
}

bool pd_http_content_length(const uint8_t *v, size_t len, uint64_t *ret)
{
	uint64_t x = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = x;
	return true;
}

bool pd_http_each_element(const uint8_t *v, size_t len,
			  bool (*fn)(const uint8_t *el, size_t el_len, void *ud), void *ud)
{
	size_t i = 0;

	for (;;) {
		size_t s = i, e;

		while (i < len && v[i] != ',')
			i++;
		e = i;
		while (s < e && pd_http_ows(v[s]))
			s++;
		while (e > s && pd_http_ows(v[e - 1]))
			e--;
		if (!fn(v + s, e - s, ud))
			return false;
		if (i == len)
			return true;
		i++;
	}
}
