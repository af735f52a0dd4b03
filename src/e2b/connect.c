/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Connect protocol's JSON codec for paddockd's E2B front end (see connect.h).
 *
 * Trust: request bodies and headers come from any client that reached the listener, before
 * anything else looked at them. Every length is checked against a limit before it is used,
 * nothing here allocates more than the body's size, and a refusal always comes with a code
 * and a sentence the client can act on.
 *
 * What the client accepts was checked against @connectrpc/connect 2.3.0, which the E2B JS
 * SDK's connect-web transport uses (2025): protocol-connect/http-status.js (statuses),
 * error-json.js (unary error body), end-stream.js (end-of-stream message), parse-timeout.js
 * (/^\d{1,10}$/).
 */
#include "connect.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include <event2/http.h>

#include "paddock/paddock.h"

#define HEADER_SIZE 5
#define MSG_MAX	    1024 /* bytes of an error message we send */

static const struct {
	const char *name;
	int status;
} codes[_E2B_CONNECT_CODE_MAX] = {
	[E2B_CONNECT_CANCELED] = { "canceled", 499 },
	[E2B_CONNECT_UNKNOWN] = { "unknown", 500 },
	[E2B_CONNECT_INVALID_ARGUMENT] = { "invalid_argument", 400 },
	[E2B_CONNECT_DEADLINE_EXCEEDED] = { "deadline_exceeded", 504 },
	[E2B_CONNECT_NOT_FOUND] = { "not_found", 404 },
	[E2B_CONNECT_ALREADY_EXISTS] = { "already_exists", 409 },
	[E2B_CONNECT_PERMISSION_DENIED] = { "permission_denied", 403 },
	[E2B_CONNECT_RESOURCE_EXHAUSTED] = { "resource_exhausted", 429 },
	[E2B_CONNECT_FAILED_PRECONDITION] = { "failed_precondition", 400 },
	[E2B_CONNECT_ABORTED] = { "aborted", 409 },
	[E2B_CONNECT_OUT_OF_RANGE] = { "out_of_range", 400 },
	[E2B_CONNECT_UNIMPLEMENTED] = { "unimplemented", 501 },
	[E2B_CONNECT_INTERNAL] = { "internal", 500 },
	[E2B_CONNECT_UNAVAILABLE] = { "unavailable", 503 },
	[E2B_CONNECT_DATA_LOSS] = { "data_loss", 500 },
	[E2B_CONNECT_UNAUTHENTICATED] = { "unauthenticated", 401 },
};

const char *e2b_connect_code_name(enum e2b_connect_code c)
{
	if ((unsigned)c >= _E2B_CONNECT_CODE_MAX)
		return codes[E2B_CONNECT_UNKNOWN].name;
	return codes[c].name;
}

int e2b_connect_code_http_status(enum e2b_connect_code c)
{
	if ((unsigned)c >= _E2B_CONNECT_CODE_MAX)
		return 500; /* what the protocol answers for unknown */
	return codes[c].status;
}

/*
 * The E2B SDK turns not_found into NotFoundError (FileNotFoundError for files),
 * invalid_argument into InvalidArgumentError, resource_exhausted into RateLimitError,
 * unavailable into a "sandbox timeout" TimeoutError, deadline_exceeded into TimeoutError;
 * the rest become a SandboxError naming the code (e2b js-sdk src/envd/rpc.ts). The choices
 * below follow google.rpc.Code's guidance: "rmdir of a non-empty directory" is its example
 * of failed_precondition.
 */
enum e2b_connect_code e2b_connect_code_from_errno(int e)
{
	if (e == INT_MIN)
		return E2B_CONNECT_INTERNAL;
	switch (e < 0 ? -e : e) {
	case 0:
		return E2B_CONNECT_UNKNOWN; /* no error given: nothing to go by */
	case ENOENT:
	case ESRCH:
		return E2B_CONNECT_NOT_FOUND;
	case EEXIST:
		return E2B_CONNECT_ALREADY_EXISTS;
	case EACCES:
	case EPERM:
	case EROFS:
		return E2B_CONNECT_PERMISSION_DENIED;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
	case E2BIG:
	case ENOEXEC:
		return E2B_CONNECT_INVALID_ARGUMENT;
	case ENOTEMPTY:
	case EBUSY:
	case ETXTBSY:
	case EXDEV:
		return E2B_CONNECT_FAILED_PRECONDITION;
	case ETIMEDOUT:
	case ETIME:
		return E2B_CONNECT_DEADLINE_EXCEEDED;
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case EAGAIN:
	case ENOMEM:
	case EFBIG:
	case EMSGSIZE:
		return E2B_CONNECT_RESOURCE_EXHAUSTED;
	case ERANGE:
	case EOVERFLOW:
		return E2B_CONNECT_OUT_OF_RANGE;
	case ECANCELED:
		return E2B_CONNECT_CANCELED;
	case ENOSYS:
	case EOPNOTSUPP:
		return E2B_CONNECT_UNIMPLEMENTED;
	case ECONNREFUSED:
	case ECONNRESET:
	case ENOTCONN:
	case EPIPE:
		return E2B_CONNECT_UNAVAILABLE;
	default:
		return E2B_CONNECT_INTERNAL;
	}
}

/* ---- envelopes ------------------------------------------------------------------------------ */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

long e2b_connect_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *ret_flags,
				const uint8_t **ret_payload, size_t *ret_plen)
{
	size_t plen;

	/*
	 * Both checks run as soon as their bytes are in, so a reader never buffers a bad
	 * envelope. 0x03 (a compressed end of stream) is refused with the unknown flags: we
	 * never negotiate compression, and only a server ends a stream.
	 */
	if (len >= 1 && buf[0] > E2B_CONNECT_FLAG_END)
		return -EPROTO;
	if (len < HEADER_SIZE)
		return 0;
	plen = be32(buf + 1);
	if (plen > max || plen > (size_t)LONG_MAX - HEADER_SIZE)
		return -EMSGSIZE;
	if (len - HEADER_SIZE < plen)
		return 0;
	if (ret_flags)
		*ret_flags = buf[0];
	if (ret_payload)
		*ret_payload = buf + HEADER_SIZE;
	if (ret_plen)
		*ret_plen = plen;
	return (long)(HEADER_SIZE + plen);
}

int e2b_connect_envelope_add(struct evbuffer *out, uint8_t flags, const void *payload, size_t plen)
{
	uint8_t h[HEADER_SIZE];

	if (plen > UINT32_MAX)
		return -EMSGSIZE;
	h[0] = flags;
	h[1] = (uint8_t)(plen >> 24);
	h[2] = (uint8_t)(plen >> 16);
	h[3] = (uint8_t)(plen >> 8);
	h[4] = (uint8_t)plen;
	if (evbuffer_add(out, h, sizeof(h)) < 0)
		return -ENOMEM;
	if (plen > 0 && evbuffer_add(out, payload, plen) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- requests ------------------------------------------------------------------------------- */

/*
 * What a message was instead of an object, for the error. Not libpaddock's twin in
 * spec-json.c: libpaddock's API takes and gives JSON as text, never jansson's json_t, so it has
 * none to share, and a copy in the core would still be a copy. The two also differ on purpose:
 * a spec field that wants a whole number says "an integer" to tell 1 from 1.5, while here any
 * number is refused alike and "a number" is enough.
 */
static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "an unknown JSON value";
}

static json_t *refuse(enum e2b_connect_code code, enum e2b_connect_code *ret_code, char *msg,
		      size_t msg_size, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static json_t *refuse(enum e2b_connect_code code, enum e2b_connect_code *ret_code, char *msg,
		      size_t msg_size, const char *fmt, ...)
{
	va_list ap;

	*ret_code = code;
	if (msg_size > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(msg, msg_size, fmt, ap); /* a truncated sentence is still useful */
		va_end(ap);
	}
	return NULL;
}

static json_t *decode_message(const uint8_t *p, size_t len, const char *what,
			      enum e2b_connect_code *ret_code, char *msg, size_t msg_size)
{
	json_error_t jerr;
	json_t *v;

	/* any value, so a scalar is refused by its type rather than as a syntax error */
	v = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!v)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "%s is not valid JSON (line %d, column %d): %s", what, jerr.line,
			      jerr.column, jerr.text);
	if (!json_is_object(v)) {
		const char *t = json_type_name(v);

		json_decref(v);
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "%s must be a JSON object, got %s", what, t);
	}
	return v;
}

static json_t *decode_envelope(const uint8_t *body, size_t len, enum e2b_connect_code *ret_code,
			       char *msg, size_t msg_size)
{
	const uint8_t *payload = NULL;
	uint8_t flags = 0;
	size_t plen = 0;
	long n;

	n = e2b_connect_envelope_parse(body, len, E2B_CONNECT_MAX_MESSAGE, &flags, &payload, &plen);
	if (n == -EPROTO)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "the request envelope's flags are 0x%02x: expected 0x00 (an "
			      "uncompressed message)",
			      body[0]);
	if (n == -EMSGSIZE)
		return refuse(E2B_CONNECT_RESOURCE_EXHAUSTED, ret_code, msg, msg_size,
			      "the request message is over the limit of %u bytes",
			      E2B_CONNECT_MAX_MESSAGE);
	if (n == 0 && len < HEADER_SIZE)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "expected one Connect envelope (5-byte header + JSON message), "
			      "got %zu bytes",
			      len);
	if (n == 0)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "the envelope announces a %" PRIu32
			      "-byte message but the body holds %zu",
			      be32(body + 1), len - HEADER_SIZE);
	if ((size_t)n != len)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "expected exactly one Connect envelope, found %zu more bytes after "
			      "it (client streaming needs HTTP/2)",
			      len - (size_t)n);
	if (flags & E2B_CONNECT_FLAG_END)
		return refuse(E2B_CONNECT_INVALID_ARGUMENT, ret_code, msg, msg_size,
			      "the request envelope has the end-of-stream flag (0x02), which only "
			      "a server sends");
	if (flags & E2B_CONNECT_FLAG_COMPRESSED)
		return refuse(E2B_CONNECT_UNIMPLEMENTED, ret_code, msg, msg_size,
			      "the request envelope is compressed (flag 0x01), but compression was "
			      "not negotiated: send it uncompressed");
	return decode_message(payload, plen, "the request message", ret_code, msg, msg_size);
}

json_t *e2b_connect_decode_request(const uint8_t *body, size_t len, bool streaming,
				   enum e2b_connect_code *ret_code, char *msg, size_t msg_size)
{
	assert(body || len == 0);
	assert(ret_code);
	if (streaming)
		return decode_envelope(body, len, ret_code, msg, msg_size);
	if (len > E2B_CONNECT_MAX_MESSAGE)
		return refuse(E2B_CONNECT_RESOURCE_EXHAUSTED, ret_code, msg, msg_size,
			      "the request body (%zu bytes) is over the limit of %u bytes", len,
			      E2B_CONNECT_MAX_MESSAGE);
	if (len > 0)
		return decode_message(body, len, "the request body", ret_code, msg, msg_size);
	/* an empty unary body is the message with every field at its default */
	json_t *v = json_object();

	if (!v)
		return refuse(E2B_CONNECT_RESOURCE_EXHAUSTED, ret_code, msg, msg_size,
			      "out of memory");
	return v;
}

double e2b_connect_parse_timeout(const char *header)
{
	uint64_t ms = 0;
	size_t n;

	if (!header)
		return 0;
	for (n = 0; header[n] >= '0' && header[n] <= '9'; n++) {
		if (n == 10)
			return -1;
		ms = ms * 10 + (uint64_t)(header[n] - '0');
	}
	if (n == 0 || header[n] != '\0')
		return -1;
	return (double)ms / 1000.0;
}

/* ---- protobuf JSON -------------------------------------------------------------------------- */

/* A JSON null is the field's default, as a missing field is (protobuf's JSON mapping). */
static bool is_default(const json_t *v)
{
	return !v || json_is_null(v);
}

/*
 * A JSON string a C string can stand for. jansson refuses "\u0000" unless asked
 * (JSON_ALLOW_NUL), but a NUL would silently cut a value short ("9\u00009" read as 9,
 * "/a\u0000/b" as "/a"), so refuse it here too.
 */
static bool is_c_string(const json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/*
 * An integer in a JSON string: an optional '-' (when `neg_ok`), then 1 or more digits,
 * nothing else (no space, '+', exponent or fraction), within [lo, hi].
 */
static bool parse_decimal(const json_t *str, bool neg_ok, int64_t lo, uint64_t hi, int64_t *ret)
{
	const char *s = json_string_value(str);
	bool neg = *s == '-';
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : hi, v = 0;
	const char *p = s + neg;

	if (!is_c_string(str) || (neg && !neg_ok))
		return false;
	if (*p == '\0')
		return false;
	for (; *p; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (*p < '0' || *p > '9' || v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (neg) {
		/* -(INT64_MAX + 1) has no positive int64 twin: build it from -(v - 1) - 1 */
		int64_t r = v == 0 ? 0 : -(int64_t)(v - 1) - 1;

		if (r < lo)
			return false;
		*ret = r;
	} else {
		*ret = (int64_t)v;
	}
	return true;
}

/* A JSON number (integer, or real with an integral value such as 1.0 or 1e3) in [lo, hi]. */
static bool number_in_range(const json_t *v, int64_t lo, int64_t hi, int64_t *ret)
{
	double d;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < lo || i > hi)
			return false;
		*ret = i;
		return true;
	}
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	/* 2^63 is exact as a double; INT64_MAX is not, so the top bound is exclusive */
	if (!isfinite(d) || d != trunc(d) || d < (double)lo || d >= 9223372036854775808.0 ||
	    (int64_t)d > hi)
		return false;
	*ret = (int64_t)d;
	return true;
}

bool e2b_pbjson_int64(json_t *v, int64_t *ret)
{
	int64_t r;

	if (is_default(v)) {
		*ret = 0;
		return true;
	}
	if (json_is_string(v)) {
		if (!parse_decimal(v, true, INT64_MIN, INT64_MAX, &r))
			return false;
	} else if (!number_in_range(v, INT64_MIN, INT64_MAX, &r)) {
		return false;
	}
	*ret = r;
	return true;
}

bool e2b_pbjson_uint32(json_t *v, uint32_t *ret)
{
	int64_t r;

	if (is_default(v)) {
		*ret = 0;
		return true;
	}
	if (json_is_string(v)) {
		if (!parse_decimal(v, false, 0, UINT32_MAX, &r))
			return false;
	} else if (!number_in_range(v, 0, UINT32_MAX, &r)) {
		return false;
	}
	*ret = (uint32_t)r;
	return true;
}

bool e2b_pbjson_bool(json_t *v, bool *ret)
{
	if (is_default(v)) {
		*ret = false;
		return true;
	}
	if (!json_is_boolean(v))
		return false;
	*ret = json_is_true(v);
	return true;
}

bool e2b_pbjson_string(json_t *v, const char **ret)
{
	if (is_default(v)) {
		*ret = "";
		return true;
	}
	if (!is_c_string(v))
		return false;
	*ret = json_string_value(v);
	return true;
}

/* Both alphabets: protobuf's JSON parsers accept standard and URL-safe base64. */
static int b64_value(unsigned char c)
{
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return paddock_base64_value(c);
}

/* Decodes s (len > 0) into out, which holds len / 4 * 3 + 2 bytes; -1 when malformed. */
static long b64_decode(const char *s, size_t len, uint8_t *out)
{
	size_t chars = len, n = 0;
	uint32_t acc = 0;

	/* padding: '=' or "==" at the end of a whole group of four */
	while (chars > 0 && s[chars - 1] == '=')
		chars--;
	if (len - chars > 2 || (chars < len && len % 4 != 0) || chars % 4 == 1)
		return -1;
	for (size_t i = 0; i < chars; i++) {
		int d = b64_value((unsigned char)s[i]);

		if (d < 0)
			return -1;
		acc = acc << 6 | (uint32_t)d;
		if (i % 4 == 3) {
			out[n++] = (uint8_t)(acc >> 16);
			out[n++] = (uint8_t)(acc >> 8);
			out[n++] = (uint8_t)acc;
			acc = 0;
		}
	}
	if (chars % 4 == 2) {
		out[n++] = (uint8_t)(acc >> 4);
	} else if (chars % 4 == 3) {
		out[n++] = (uint8_t)(acc >> 10);
		out[n++] = (uint8_t)(acc >> 2);
	}
	return (long)n;
}

bool e2b_pbjson_bytes(json_t *v, uint8_t **ret, size_t *ret_len)
{
	const char *s;
	size_t len;
	uint8_t *out;
	long n;

	if (is_default(v) || (json_is_string(v) && json_string_length(v) == 0)) {
		*ret = NULL;
		*ret_len = 0;
		return true;
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	len = json_string_length(v);
	out = malloc(len / 4 * 3 + 2);
	if (!out)
		return false;
	n = b64_decode(s, len, out);
	if (n <= 0) { /* only "" decodes to nothing, and it was answered above */
		free(out);
		return false;
	}
	*ret = out;
	*ret_len = (size_t)n;
	return true;
}

json_t *e2b_pbjson_bytes_new(const void *data, size_t len)
{
	char *s = paddock_base64_encode(data, len);
	json_t *v;

	if (!s)
		return NULL;
	v = json_string(s);
	free(s);
	return v;
}

/* google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z */
#define TIMESTAMP_MIN (-62135596800LL)
#define TIMESTAMP_MAX 253402300799LL

json_t *e2b_pbjson_timestamp_new(int64_t sec, long nsec)
{
	char buf[96], frac[16] = ""; /* room for any int, so the compiler sees no truncation */
	struct tm tm;
	time_t t;

	/*
	 * Clamped, not refused: a sandbox can give a file any mtime, and one file must not
	 * break a directory listing. Outside the range protobuf's parsers refuse the value.
	 */
	if (sec < TIMESTAMP_MIN) {
		sec = TIMESTAMP_MIN;
		nsec = 0;
	} else if (sec > TIMESTAMP_MAX) {
		sec = TIMESTAMP_MAX;
		nsec = 999999999;
	}
	if (nsec < 0)
		nsec = 0;
	else if (nsec > 999999999)
		nsec = 999999999;
	t = (time_t)sec;
	if ((int64_t)t != sec || !gmtime_r(&t, &tm)) /* a 32-bit time_t */
		return NULL;
	/* protobuf prints 0, 3, 6 or 9 digits: as few as the value needs */
	if (nsec % 1000000 == 0 && nsec != 0)
		(void)snprintf(frac, sizeof(frac), ".%03ld", nsec / 1000000);
	else if (nsec % 1000 == 0 && nsec != 0)
		(void)snprintf(frac, sizeof(frac), ".%06ld", nsec / 1000);
	else if (nsec != 0)
		(void)snprintf(frac, sizeof(frac), ".%09ld", nsec);
	(void)snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900,
		       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	return json_string(buf);
}

/* ---- answers -------------------------------------------------------------------------------- */

/*
 * The length of a valid UTF-8 sequence at s, 0 when there is none. A message may hold
 * bytes from a sandbox, or a sequence vsnprintf cut short, and jansson refuses a string
 * that is not UTF-8.
 */
static size_t utf8_seq(const unsigned char *s)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Replaces every byte that does not start a valid UTF-8 sequence with '?'. */
static void utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq(p);

		if (n == 0) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}

static void format_message(char *buf, size_t size, const char *fmt, va_list ap)
{
	buf[0] = '\0';
	if (fmt)
		(void)vsnprintf(buf, size, fmt, ap); /* truncation keeps a useful start */
	utf8_sanitize(buf);
}

/* {"code":..,"message":..}; the client takes a missing message as "". */
static json_t *error_json(enum e2b_connect_code code, const char *message)
{
	json_t *o = json_object();

	if (!o || json_object_set_new(o, "code", json_string(e2b_connect_code_name(code))) < 0 ||
	    (message[0] && json_object_set_new(o, "message", json_string(message)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int dump_to(const char *s, size_t size, void *data)
{
	return evbuffer_add(data, s, size);
}

/* The compact JSON of v appended to out: 0, or -1 when it cannot be encoded. */
static int dump_json(struct evbuffer *out, const json_t *v)
{
	return json_dump_callback(v, dump_to, out, JSON_COMPACT);
}

static void send_json(struct evhttp_request *req, int status, json_t *v)
{
	struct evbuffer *b = evbuffer_new();
	const char *reason = status == 200 ? "OK" : NULL; /* NULL: evhttp's phrase for it */

	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (b && v && dump_json(b, v) == 0) {
		evhttp_send_reply(req, status, reason, b);
	} else {
		/* out of memory: the status still tells the client what happened */
		evhttp_send_reply(req, 500, NULL, NULL);
	}
	if (b)
		evbuffer_free(b);
}

void e2b_connect_reply(struct evhttp_request *req, json_t *msg_take)
{
	assert(req);
	if (!msg_take) { /* the caller's json_pack() or json_object() ran out of memory */
		e2b_connect_reply_error(req, E2B_CONNECT_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	send_json(req, 200, msg_take);
	json_decref(msg_take);
}

void e2b_connect_reply_error(struct evhttp_request *req, enum e2b_connect_code code,
			     const char *fmt, ...)
{
	char message[MSG_MAX];
	json_t *e;
	va_list ap;

	assert(req);
	va_start(ap, fmt);
	format_message(message, sizeof(message), fmt, ap);
	va_end(ap);
	e = error_json(code, message);
	send_json(req, e2b_connect_code_http_status(code), e);
	json_decref(e);
}

void e2b_connect_stream_start(struct evhttp_request *req, bool *started)
{
	assert(req && started);
	if (*started)
		return;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/connect+json");
	evhttp_send_reply_start(req, 200, "OK");
	*started = true;
}

/* One envelope holding v's JSON as a chunk of the reply; -1 when it could not be built. */
static int send_envelope(struct evhttp_request *req, uint8_t flags, const json_t *v)
{
	struct evbuffer *b = evbuffer_new();
	uint8_t h[HEADER_SIZE] = { flags };
	size_t len;
	int r = -1;

	/* the JSON first, then its header in front: no copy of the message */
	if (!b || dump_json(b, v) < 0)
		goto out;
	len = evbuffer_get_length(b);
	if (len > UINT32_MAX)
		goto out;
	h[1] = (uint8_t)(len >> 24);
	h[2] = (uint8_t)(len >> 16);
	h[3] = (uint8_t)(len >> 8);
	h[4] = (uint8_t)len;
	if (evbuffer_prepend(b, h, sizeof(h)) < 0)
		goto out;
	evhttp_send_reply_chunk(req, b);
	r = 0;
out:
	if (b)
		evbuffer_free(b);
	return r;
}

void e2b_connect_stream_send(struct evhttp_request *req, bool *started, json_t *msg_take)
{
	assert(req && started);
	e2b_connect_stream_start(req, started);
	/*
	 * A message that cannot be encoded (out of memory) is dropped: the stream's end says
	 * whether the call succeeded, and the caller decides that.
	 */
	if (msg_take)
		(void)send_envelope(req, 0, msg_take);
	json_decref(msg_take);
}

static json_t *end_stream_json(int code, const char *message)
{
	json_t *e;

	if (code < 0)
		return json_object();
	e = error_json((enum e2b_connect_code)code, message);
	return e ? json_pack("{s:o}", "error", e) : NULL;
}

void e2b_connect_stream_end(struct evhttp_request *req, bool *started, int code, const char *fmt,
			    ...)
{
	static const uint8_t internal_end[] = "{\"error\":{\"code\":\"internal\","
					      "\"message\":\"out of memory\"}}";
	char message[MSG_MAX];
	json_t *end;
	va_list ap;

	assert(req && started);
	va_start(ap, fmt);
	format_message(message, sizeof(message), fmt, ap);
	va_end(ap);
	e2b_connect_stream_start(req, started);
	end = end_stream_json(code, message);
	if (!end || send_envelope(req, E2B_CONNECT_FLAG_END, end) < 0) {
		/* the end must go out, or the client takes the stream as cut short */
		struct evbuffer *b = evbuffer_new();

		if (b && e2b_connect_envelope_add(b, E2B_CONNECT_FLAG_END, internal_end,
						  sizeof(internal_end) - 1) == 0)
			evhttp_send_reply_chunk(req, b);
		if (b)
			evbuffer_free(b);
	}
	json_decref(end);
	evhttp_send_reply_end(req);
}
