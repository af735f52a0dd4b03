/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small blocking HTTP/1.1 client over a unix socket, for talking to paddockd. One request
 * per connection (`Connection: close`). What comes back is bounded: the header block, each
 * header line, chunk-size lines and NDJSON lines all have limits, and a malformed answer is
 * an error, never a guess. See client.c for why this is not libevent's or libcurl's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "paddock/paddock.h"

#define HTTP_HEAD_MAX (64 * 1024) /* status line + headers (+ chunked trailers) */
#define HTTP_LINE_MAX (8 * 1024)  /* one header, trailer or chunk-size line */

struct http_conn;

/*
 * Connects to the unix socket at `path`. -ENAMETOOLONG when the path does not fit a
 * sockaddr_un; otherwise connect()'s errno (ENOENT, ECONNREFUSED, EACCES, ...).
 */
int http_connect_unix(const char *path, struct http_conn **ret_conn, paddock_error *err);
/*
 * A connection over a connected stream socket `fd`, taken (closed on failure too). For
 * http_connect_unix() and for tests and fuzzers over a socketpair.
 */
int http_conn_new_fd(int fd, struct http_conn **ret_conn, paddock_error *err);
struct http_conn *http_conn_free(struct http_conn *c);
/* The socket, for poll(); owned by the connection. */
int http_conn_fd(const struct http_conn *c);
/*
 * In non-blocking mode the body readers return -EAGAIN instead of waiting for the socket;
 * whatever was decoded so far is kept, so the call can simply be repeated once poll() says
 * the socket is readable. Bytes may already be buffered: call the reader until -EAGAIN
 * before polling again.
 */
void http_conn_set_nonblocking(struct http_conn *c, bool nonblocking);

/*
 * Writes `s` percent-encoded for a request target (http_request.target): every byte but
 * RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~), and '/' when keep_slash is set.
 */
void http_put_encoded(FILE *f, const char *s, bool keep_slash);

struct http_request {
	const char *method;	  /* "GET", "POST", ... */
	const char *target;	  /* origin-form, already percent-encoded: "/v1/...?a=b" */
	const char *content_type; /* NULL: no Content-Type */
	/* the body: `body_len` bytes at `body` (Content-Length; none when body is NULL) ... */
	const void *body;
	size_t body_len;
	/*
	 * ... or, when body_fd >= 0, read from that fd (borrowed): exactly body_fd_len bytes
	 * with Content-Length, or until EOF with chunked transfer-coding when body_fd_len < 0.
	 */
	int body_fd;
	int64_t body_fd_len;
	/*
	 * Send "Expect: 100-continue" and wait (up to a second) for paddockd's go-ahead before
	 * the body, so an upload it refuses (413) is not sent in vain.
	 */
	bool expect_continue;
	/* NULL: none; else a Range header's value, "bytes=0-1023" (no CR or LF) */
	const char *range;
};

/*
 * Sends a request. When the peer stops reading in the middle of the body (it may answer
 * early, e.g. 413), this still returns 0 and the error is reported by http_read_response()
 * only if no answer can be read. A body fd that ends before body_fd_len is -EIO.
 */
int http_send_request(struct http_conn *c, const struct http_request *req, paddock_error *err);

struct http_response {
	int status;		/* 200..599 (1xx answers are skipped) */
	char reason[64];	/* the reason phrase, truncated, control characters dropped */
	char content_type[128]; /* "" when absent; truncated when longer */
	char content_range[80]; /* "" when absent; truncated when longer */
	int64_t content_length; /* -1 when absent */
	bool chunked;
};

/*
 * Writes all `n` bytes of `buf` to `fd` (a file, a pipe, stdout: where a body read with
 * http_read_body() goes), retrying short writes and EINTR. 0, or -errno. A plain write():
 * a reader that went away raises SIGPIPE as for any other program, unless it is ignored.
 */
int http_write_all(int fd, const void *buf, size_t n);

/* Reads the status line and the headers (always blocking). -EPROTO for a malformed answer. */
int http_read_response(struct http_conn *c, struct http_response *ret_resp, paddock_error *err);

/*
 * Reads up to `size` bytes of the decoded body: > 0 a count, 0 at its end, -EAGAIN (only in
 * non-blocking mode), or -errno (-EPROTO when the answer is malformed or cut short).
 */
ssize_t http_read_body(struct http_conn *c, void *buf, size_t size, paddock_error *err);

/*
 * Reads the whole body, at most `max` bytes (-EFBIG beyond), blocking. The caller frees
 * *ret_body, which is NUL-terminated (the NUL is not counted in *ret_len).
 */
int http_read_body_all(struct http_conn *c, size_t max, char **ret_body, size_t *ret_len,
		       paddock_error *err);

/*
 * The next line of an NDJSON body, without its "\n" (nor a "\r" before it), NUL-terminated.
 * Returns 1 and sets *ret_line (owned by the connection, valid until the next call), 0 at the
 * end of the body, -EAGAIN in non-blocking mode when no whole line is there yet, -EMSGSIZE
 * when a line is longer than max_line, or -errno. A last line without "\n" still counts.
 */
int http_read_line(struct http_conn *c, size_t max_line, const char **ret_line, size_t *ret_len,
		   paddock_error *err);
