/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers of paddockd: clocks, RFC 3339 times, and base64 for bytes that are not
 * UTF-8. base64 is written here because none of our libraries has it short of OpenSSL,
 * which paddock takes on only with the TLS work (secrets); it is 40 lines.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"

int64_t svc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double svc_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void svc_format_time(int64_t ms, char *buf, size_t size)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

json_t *svc_time_json(int64_t ms)
{
	char buf[40];

	if (ms <= 0)
		return json_null();
	svc_format_time(ms, buf, sizeof(buf));
	return json_string(buf);
}

void svc_json_set_bytes(json_t *o, const char *key, const void *data, size_t len)
{
	json_t *s = json_stringn(len ? data : "", len); /* NULL when not valid UTF-8 */
	char k[32];

	if (s) {
		json_object_set_new(o, key, s);
		return;
	}
	snprintf(k, sizeof(k), "%s_b64", key);
	char *b = paddock_base64_encode(data, len);
	json_object_set_new(o, k, b ? json_string(b) : json_null());
	free(b);
}

json_t *svc_json_text(const char *s)
{
	json_t *j;
	char *buf, *o;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	/* SECURITY: a name from inside that is not UTF-8: its odd bytes as \xNN, never dropped */
	buf = malloc(strlen(s) * 4 + 1);
	if (!buf)
		return json_null();
	o = buf;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x80)
			*o++ = (char)*p;
		else
			o += sprintf(o, "\\x%02x", *p);
	}
	*o = '\0';
	j = json_string(buf);
	free(buf);
	return j ? j : json_null();
}

bool svc_socket_path(const struct daemon *d, const char *id, char *buf, size_t size)
{
	int n;

	if (!d->reconnect_dir[0])
		return false; /* in_process: none */
	n = snprintf(buf, size, "%s/%s", d->reconnect_dir, id);
	return n > 0 && (size_t)n < size;
}
