/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Connect protocol (connectrpc.com/docs/protocol), JSON codec only, as E2B's envd speaks
 * it over HTTP/1.1: what paddockd's E2B front end needs to read requests and answer them.
 *
 *  - Unary: POST /<service>/<Method>, Content-Type application/json, the body one JSON
 *    message. Success: 200 + application/json message. Error: an HTTP status derived from
 *    the code + application/json {"code":"not_found","message":"..."}.
 *  - Server streaming: POST, Content-Type application/connect+json, the body one envelope.
 *    Answer: 200 + application/connect+json, envelopes of messages, then one end-of-stream
 *    envelope (flag 0x02) holding {} or {"error":{"code":..,"message":..}}. Errors found
 *    before the stream starts are still sent as 200 + end-of-stream (the protocol's rule).
 *  - Envelope: 1 flags byte (0x01 compressed, 0x02 end of stream), 4 bytes big-endian length,
 *    the payload.
 *
 * Everything here is pure (no I/O but the evhttp reply calls), bounded, and fuzzed
 * (tests/fuzz/fuzz-connect.c): request bodies come from untrusted clients.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct evhttp_request;
struct evbuffer;

#define E2B_CONNECT_FLAG_COMPRESSED 0x01u
#define E2B_CONNECT_FLAG_END	    0x02u
#define E2B_CONNECT_MAX_MESSAGE	    (4u << 20) /* bytes of one request message */

/* Connect error codes (the protocol's names, as on the wire). */
enum e2b_connect_code {
	E2B_CONNECT_CANCELED,
	E2B_CONNECT_UNKNOWN,
	E2B_CONNECT_INVALID_ARGUMENT,
	E2B_CONNECT_DEADLINE_EXCEEDED,
	E2B_CONNECT_NOT_FOUND,
	E2B_CONNECT_ALREADY_EXISTS,
	E2B_CONNECT_PERMISSION_DENIED,
	E2B_CONNECT_RESOURCE_EXHAUSTED,
	E2B_CONNECT_FAILED_PRECONDITION,
	E2B_CONNECT_ABORTED,
	E2B_CONNECT_OUT_OF_RANGE,
	E2B_CONNECT_UNIMPLEMENTED,
	E2B_CONNECT_INTERNAL,
	E2B_CONNECT_UNAVAILABLE,
	E2B_CONNECT_DATA_LOSS,
	E2B_CONNECT_UNAUTHENTICATED,
	_E2B_CONNECT_CODE_MAX,
};

/* "not_found" etc. */
const char *e2b_connect_code_name(enum e2b_connect_code c);
/* The HTTP status a unary error answers with (the protocol's table: not_found 404, ...). */
int e2b_connect_code_http_status(enum e2b_connect_code c);
/* An errno (positive or negative) as the code a client should see: ENOENT not_found, ... */
enum e2b_connect_code e2b_connect_code_from_errno(int e);

/*
 * One envelope at the start of buf: returns the bytes it takes (5 + payload), 0 when buf
 * holds only part of one, or -EMSGSIZE when its length is over max, -EPROTO for flags other
 * than 0x00/0x01/0x02 (compressed payloads are refused by the caller: we never negotiate
 * compression).
 */
long e2b_connect_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *ret_flags,
				const uint8_t **ret_payload, size_t *ret_plen);
/* Appends an envelope (flags, payload) to out. */
int e2b_connect_envelope_add(struct evbuffer *out, uint8_t flags, const void *payload, size_t plen);

/*
 * A request's message. `streaming`: the body must be exactly one uncompressed, not
 * end-of-stream envelope; else the body is the message. The message must be a JSON object
 * (an empty body is {} for unary). Returns the object, or NULL with *ret_code and msg (a
 * sentence naming what was wrong) filled.
 */
json_t *e2b_connect_decode_request(const uint8_t *body, size_t len, bool streaming,
				   enum e2b_connect_code *ret_code, char *msg, size_t msg_size);

/*
 * The timeout a client asked for with Connect-Timeout-Ms (1 to 10 digits, the protocol's
 * limit): seconds, 0 when the header is absent; -1 when it is malformed.
 */
double e2b_connect_parse_timeout(const char *header);

/*
 * Protobuf JSON helpers for the messages' scalar fields: proto3 JSON writes int64/uint64 as
 * strings and accepts numbers or strings; bytes are base64 (standard or URL-safe, padding
 * optional). Each returns false (and leaves *ret alone) when the value has the wrong type.
 * A missing field (NULL) or a JSON null is the proto3 default: 0, "", empty. A string
 * holding a NUL is refused (it would read as a shorter value).
 */
bool e2b_pbjson_int64(json_t *v, int64_t *ret);
bool e2b_pbjson_uint32(json_t *v, uint32_t *ret);
bool e2b_pbjson_bool(json_t *v, bool *ret);
bool e2b_pbjson_string(json_t *v, const char **ret);
/* *ret is malloc'ed (free it); an empty value gives NULL and *ret_len 0; false also when
 * out of memory */
bool e2b_pbjson_bytes(json_t *v, uint8_t **ret, size_t *ret_len);
/* a JSON string of the standard base64 of data */
json_t *e2b_pbjson_bytes_new(const void *data, size_t len);
/* a google.protobuf.Timestamp: RFC 3339 UTC with nanoseconds as needed ("...Z"), clamped
 * to its range (years 1 to 9999, nsec 0 to 999999999); NULL only when out of memory */
json_t *e2b_pbjson_timestamp_new(int64_t sec, long nsec);

/* ---- answers ---------------------------------------------------------------------------- */

/* Unary success: 200, application/json, the message (taken). */
void e2b_connect_reply(struct evhttp_request *req, json_t *msg_take);
/* Unary error: the code's HTTP status, application/json {"code","message"}. */
void e2b_connect_reply_error(struct evhttp_request *req, enum e2b_connect_code code,
			     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Server streaming. `*started` is the caller's record of whether the 200 went out: each call
 * sends it first when it did not (and sets it), so an error before any message is still a
 * 200 with an end-of-stream envelope, as the protocol wants.
 */
void e2b_connect_stream_start(struct evhttp_request *req, bool *started);
/* One message (taken) in an envelope. */
void e2b_connect_stream_send(struct evhttp_request *req, bool *started, json_t *msg_take);
/*
 * The end-of-stream envelope ({} when code < 0, else {"error":{"code","message"}}) and the
 * end of the reply (evhttp_send_reply_end).
 */
void e2b_connect_stream_end(struct evhttp_request *req, bool *started, int code, const char *fmt,
			    ...) __attribute__((format(printf, 4, 5)));
