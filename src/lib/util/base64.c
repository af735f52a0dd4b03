/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "paddock/paddock.h"
#include "util/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *pd_base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out, *o;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = alphabet[(v >> 18) & 63];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

int pd_base64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int pd_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	char *out = malloc(len / 4 * 3 + 4);
	uint32_t v = 0;
	size_t n = 0, chars = 0, pad = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		int d;

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		d = pd_base64_value(c);
		if (d < 0 || pad) /* a character after padding */
			goto bad;
		v = (v << 6) | (uint32_t)d;
		if (++chars % 4 == 0) {
			out[n++] = (char)(v >> 16);
			out[n++] = (char)(v >> 8);
			out[n++] = (char)v;
			v = 0;
		}
	}
	switch (chars % 4) {
	case 0:
		if (pad)
			goto bad;
		break;
	case 2: /* one byte, "xx==" or "xx" */
		if (pad != 0 && pad != 2)
			goto bad;
		out[n++] = (char)(v >> 4);
		break;
	case 3: /* two bytes, "xxx=" or "xxx" */
		if (pad != 0 && pad != 1)
			goto bad;
		out[n++] = (char)(v >> 10);
		out[n++] = (char)(v >> 2);
		break;
	default:
		goto bad;
	}
	out[n] = '\0';
	*ret = out;
	*ret_len = n;
	return 0;
bad:
	free(out);
	return -EINVAL;
}

/* The public names (paddock.h): the front ends' JSON carries bytes as base64 too */
extern __typeof__(pd_base64_encode) paddock_base64_encode
	__attribute__((alias("pd_base64_encode")));
extern __typeof__(pd_base64_value) paddock_base64_value __attribute__((alias("pd_base64_value")));
extern __typeof__(pd_base64_decode) paddock_base64_decode
	__attribute__((alias("pd_base64_decode")));
