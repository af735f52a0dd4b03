/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small blocking HTTP/1.1 client for registries (image-http.c): one request per
 * connection, http or https (OpenSSL, the system's trust store, hostname checked),
 * Content-Length or chunked bodies, bounded heads, timeouts. Redirects are the caller's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paddock/paddock.h"

#define PD_HTTP_MAX_HEAD (64u << 10)

struct pd_http_opts {
	bool tls_no_verify;
	const char *ca_file;
	int timeout_ms; /* per connect, read or write; 0: 30 s */
};

struct pd_http_response {
	int status;
	char content_type[256];
	char location[4096];
	char www_authenticate[2048];
	char content_digest[80]; /* Docker-Content-Digest */
	int64_t content_length;	 /* -1 when not given */
	/* the body: into `body` (at most body_max bytes, NUL-terminated) or written to body_fd */
	char *body;
	size_t body_len;
};

/*
 * GET `url` (http:// or https://) with extra header lines ("Name: value", NULL-terminated),
 * reading the body into a buffer of at most `body_max` bytes (ret->body, caller frees) or,
 * with body_fd >= 0, writing it there (at most body_max bytes: more is EFBIG). Any status is
 * success here; errors are the connection's, the protocol's, or a limit's.
 */
int pd_http_get(const char *url, const char *const *headers, const struct pd_http_opts *opts,
		int body_fd, uint64_t body_max, struct pd_http_response *ret, paddock_error *err);

/* The parts of an absolute http(s) URL. -EINVAL for anything else. */
struct pd_url {
	bool tls;
	char host[256]; /* without brackets */
	char port[8];
	char path[4096]; /* with the query, starting with '/' */
};
int pd_url_parse(const char *url, struct pd_url *ret);

/* `base` with `ref` resolved against it (an absolute URL, or an absolute path). */
int pd_url_resolve(const char *base, const char *ref, char *out, size_t size);
