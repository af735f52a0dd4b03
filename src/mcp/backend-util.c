/* SPDX-License-Identifier: Apache-2.0 */
/* What both backends need to turn a sandbox's bytes into JSON for an agent. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len;

	if (p[0] < 0x80)
		return p[0] ? 1 : 0; /* NUL is replaced too: agents choke on it */
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0; /* overlong, out of range, or a surrogate */
	return len;
}

json_t *mcp_json_text(const char *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;
	char *buf, *o;
	json_t *s;

	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	buf = malloc(len * 3 + 1); /* each byte at most one U+FFFD (3 bytes) */
	if (!buf)
		return NULL;
	o = buf;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (n) {
			memcpy(o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	s = json_stringn(buf, (size_t)(o - buf));
	free(buf);
	return s;
}

const char *mcp_rfc3339(int64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns < 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, size, "1970-01-01T00:00:00Z");
		return buf;
	}
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000 / 1000000));
	return buf;
}
