/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's HTTP client (image-http.h). Runs in the supervisor (`paddock image pull`,
 * or `paddock run --image` pulling what is missing), as its caller.
 *
 * Trust: the registry, and anything between us and it on plain http, is hostile: the
 * status line and headers are bounded (PD_HTTP_MAX_HEAD, 100 lines), bodies by what the
 * caller expects (a manifest's 4 MiB, a blob's descriptor size), chunk sizes checked, and
 * every read and write has a timeout. Blobs are verified by digest afterwards, so only
 * their sizes matter here. OpenSSL is included here, for https: the TLS of the registry
 * (trust store, hostname), nothing else of the image code sees it.
 */
#include "image-http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define MAX_HEADERS	   100
#define DEFAULT_TIMEOUT_MS 30000

struct conn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	int timeout_ms;
	char buf[16384]; /* read-ahead */
	size_t off, len;
};

int pd_url_parse(const char *url, struct pd_url *ret)
{
	struct pd_url u = { 0 };
	const char *p, *host, *host_end, *path;
	size_t n;

	if (!strncmp(url, "https://", 8)) {
		u.tls = true;
		p = url + 8;
	} else if (!strncmp(url, "http://", 7)) {
		p = url + 7;
	} else {
		return -EINVAL;
	}
	path = p + strcspn(p, "/?#");
	if (*path == '#')
		return -EINVAL;
	if (memchr(p, '@', (size_t)(path - p)))
		return -EINVAL; /* no credentials in URLs */
	host = p;
	if (*host == '[') {
		host_end = memchr(host, ']', (size_t)(path - host));
		if (!host_end)
			return -EINVAL;
		n = (size_t)(host_end - host - 1);
		if (n == 0 || n >= sizeof(u.host))
			return -EINVAL;
		memcpy(u.host, host + 1, n);
		p = host_end + 1;
	} else {
		host_end = memchr(host, ':', (size_t)(path - host));
		if (!host_end)
			host_end = path;
		n = (size_t)(host_end - host);
		if (n == 0 || n >= sizeof(u.host))
			return -EINVAL;
		memcpy(u.host, host, n);
		p = host_end;
	}
	for (size_t i = 0; u.host[i]; i++)
		if ((unsigned char)u.host[i] <= ' ' || u.host[i] == '/' || u.host[i] == '\\')
			return -EINVAL;
	if (*p == ':') {
		n = (size_t)(path - p - 1);
		if (n == 0 || n >= sizeof(u.port) || strspn(p + 1, "0123456789") < n)
			return -EINVAL;
		memcpy(u.port, p + 1, n);
	} else if (p != path) {
		return -EINVAL;
	} else {
		snprintf(u.port, sizeof(u.port), "%s", u.tls ? "443" : "80");
	}
	if (snprintf(u.path, sizeof(u.path), "%s%s", *path == '/' ? "" : "/", path) >=
	    (int)sizeof(u.path))
		return -EINVAL;
	for (size_t i = 0; u.path[i]; i++)
		if ((unsigned char)u.path[i] <= ' ' || u.path[i] == 0x7f)
			return -EINVAL; /* no header injection through a Location */
	*ret = u;
	return 0;
}

int pd_url_resolve(const char *base, const char *ref, char *out, size_t size)
{
	struct pd_url b;
	int n;

	if (!strncmp(ref, "http://", 7) || !strncmp(ref, "https://", 8))
		n = snprintf(out, size, "%s", ref);
	else if (ref[0] == '/' && ref[1] != '/' && pd_url_parse(base, &b) == 0)
		n = snprintf(out, size, "%s://%s%s%s:%s%s", b.tls ? "https" : "http",
			     strchr(b.host, ':') ? "[" : "", b.host, strchr(b.host, ':') ? "]" : "",
			     b.port, ref);
	else
		return -EINVAL;
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* ---- the connection ------------------------------------------------------------------------ */

static void conn_close(struct conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->ctx) {
		SSL_CTX_free(c->ctx);
		c->ctx = NULL;
	}
	c->fd = pd_close(c->fd);
}

static int wait_fd(struct conn *c, short events)
{
	struct pollfd p = { .fd = c->fd, .events = events };
	int r;

	do
		r = poll(&p, 1, c->timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int tcp_connect(struct conn *c, const struct pd_url *u, paddock_error *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	int r, last = ECONNREFUSED;

	r = getaddrinfo(u->host, u->port, &hints, &res);
	if (r != 0)
		return pd_fail(err, r == EAI_SYSTEM ? errno : EHOSTUNREACH, "resolve '%s': %s",
			       PD_ESC(u->host), gai_strerror(r));
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		socklen_t len = sizeof(r);
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				a->ai_protocol);

		if (fd < 0) {
			last = errno;
			continue;
		}
		c->fd = fd;
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last = errno;
			c->fd = pd_close(c->fd);
			continue;
		}
		r = wait_fd(c, POLLOUT);
		if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &len) == 0 && r == 0)
			break;
		last = r < 0 ? -r : r;
		c->fd = pd_close(c->fd);
	}
	freeaddrinfo(res);
	if (c->fd < 0)
		return pd_fail(err, last, "connect to '%s' port %s", PD_ESC(u->host), u->port);
	return 0;
}

static int tls_fail(paddock_error *err, int code, const char *what, const char *host)
{
	char buf[256];
	unsigned long e = ERR_get_error();

	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return pd_fail(err, code, "%s '%s': %s", what, PD_ESC(host), e ? buf : "failed");
}

static int tls_start(struct conn *c, const struct pd_url *u, const struct pd_http_opts *o,
		     paddock_error *err)
{
	int r;

	c->ctx = SSL_CTX_new(TLS_client_method());
	if (!c->ctx)
		return pd_fail(err, ENOMEM, "TLS context");
	(void)SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
	if (!o->tls_no_verify) {
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
		if (SSL_CTX_set_default_verify_paths(c->ctx) != 1)
			return tls_fail(err, EIO, "load the trust store for", u->host);
		if (o->ca_file && SSL_CTX_load_verify_locations(c->ctx, o->ca_file, NULL) != 1)
			return tls_fail(err, EINVAL, "load the CA file for", u->host);
	}
	c->ssl = SSL_new(c->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    SSL_set_tlsext_host_name(c->ssl, u->host) != 1 ||
	    (!o->tls_no_verify && SSL_set1_host(c->ssl, u->host) != 1))
		return tls_fail(err, EIO, "TLS setup for", u->host);
	for (;;) {
		r = SSL_connect(c->ssl);
		if (r == 1)
			return 0;
		switch (SSL_get_error(c->ssl, r)) {
		case SSL_ERROR_WANT_READ:
			r = wait_fd(c, POLLIN);
			break;
		case SSL_ERROR_WANT_WRITE:
			r = wait_fd(c, POLLOUT);
			break;
		default:
			return tls_fail(err, ECONNABORTED, "TLS handshake with", u->host);
		}
		if (r < 0)
			return pd_fail(err, -r, "TLS handshake with '%s'", PD_ESC(u->host));
	}
}

static ssize_t conn_read_raw(struct conn *c, void *buf, size_t len)
{
	for (;;) {
		ssize_t n;
		int r;

		if (c->ssl) {
			size_t got = 0;

			r = SSL_read_ex(c->ssl, buf, len, &got);
			if (r == 1)
				return (ssize_t)got;
			switch (SSL_get_error(c->ssl, r)) {
			case SSL_ERROR_ZERO_RETURN:
				return 0;
			case SSL_ERROR_WANT_READ:
				r = wait_fd(c, POLLIN);
				break;
			case SSL_ERROR_WANT_WRITE:
				r = wait_fd(c, POLLOUT);
				break;
			case SSL_ERROR_SYSCALL:
				/* EOF without close_notify: many servers end so; the framing checks
				 */
				ERR_clear_error();
				return 0;
			default:
				ERR_clear_error();
				return -EPROTO;
			}
			if (r < 0)
				return r;
			continue;
		}
		n = read(c->fd, buf, len);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = wait_fd(c, POLLIN);
		if (r < 0)
			return r;
	}
}

static int conn_write(struct conn *c, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n;
		int r;

		if (c->ssl) {
			size_t put = 0;

			r = SSL_write_ex(c->ssl, buf, len, &put);
			if (r == 1) {
				buf += put;
				len -= put;
				continue;
			}
			switch (SSL_get_error(c->ssl, r)) {
			case SSL_ERROR_WANT_READ:
				r = wait_fd(c, POLLIN);
				break;
			case SSL_ERROR_WANT_WRITE:
				r = wait_fd(c, POLLOUT);
				break;
			default:
				ERR_clear_error();
				return -EPIPE;
			}
			if (r < 0)
				return r;
			continue;
		}
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		r = wait_fd(c, POLLOUT);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Buffered reads: up to len bytes, at least one unless at EOF. */
static ssize_t conn_read(struct conn *c, void *buf, size_t len)
{
	size_t n;

	if (c->off == c->len) {
		ssize_t got = conn_read_raw(c, c->buf, sizeof(c->buf));

		if (got <= 0)
			return got;
		c->off = 0;
		c->len = (size_t)got;
	}
	n = c->len - c->off < len ? c->len - c->off : len;
	memcpy(buf, c->buf + c->off, n);
	c->off += n;
	return (ssize_t)n;
}

/* One line ending in CRLF (or LF), without it. -EPROTO past `max` or at EOF. */
static int read_line(struct conn *c, char *line, size_t max, size_t *used)
{
	size_t n = 0;

	for (;;) {
		char ch;
		ssize_t r = conn_read(c, &ch, 1);

		if (r < 0)
			return (int)r;
		if (r == 0)
			return -EPROTO;
		if (++*used > PD_HTTP_MAX_HEAD || n + 1 >= max)
			return -E2BIG;
		if (ch == '\n') {
			if (n > 0 && line[n - 1] == '\r')
				n--;
			line[n] = '\0';
			return 0;
		}
		line[n++] = ch;
	}
}

/* ---- the request ----------------------------------------------------------------------------- */

static void copy_header(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
}

static int read_head(struct conn *c, struct pd_http_response *resp, bool *chunked,
		     paddock_error *err)
{
	char line[8192];
	size_t used = 0;
	int r, minor;

	r = read_line(c, line, sizeof(line), &used);
	if (r < 0 || sscanf(line, "HTTP/1.%d %3d", &minor, &resp->status) != 2 ||
	    resp->status < 100 || resp->status > 599)
		return pd_fail(err, r == -ETIMEDOUT ? ETIMEDOUT : EPROTO,
			       "expected an HTTP/1.x status line");
	resp->content_length = -1;
	for (int i = 0;; i++) {
		char *colon, *v;

		r = read_line(c, line, sizeof(line), &used);
		if (r < 0)
			return pd_fail(err, -r, "read the response head");
		if (!line[0])
			break;
		if (i >= MAX_HEADERS)
			return pd_fail(err, E2BIG, "more than %d response headers", MAX_HEADERS);
		colon = strchr(line, ':');
		if (!colon)
			return pd_fail(err, EPROTO, "a malformed response header");
		*colon = '\0';
		for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
			;
		for (size_t k = strlen(v); k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'); k--)
			v[k - 1] = '\0';
		if (!strcasecmp(line, "Content-Length")) {
			char *end;
			long long n = strtoll(v, &end, 10);

			if (!v[0] || *end || n < 0 ||
			    (resp->content_length >= 0 && resp->content_length != n))
				return pd_fail(err, EPROTO, "a bad Content-Length");
			resp->content_length = n;
		} else if (!strcasecmp(line, "Transfer-Encoding")) {
			if (strcasecmp(v, "chunked"))
				return pd_fail(err, EPROTO, "transfer encoding '%s' not supported",
					       PD_ESC(v));
			*chunked = true;
		} else if (!strcasecmp(line, "Content-Type")) {
			copy_header(resp->content_type, sizeof(resp->content_type), v);
		} else if (!strcasecmp(line, "Location")) {
			copy_header(resp->location, sizeof(resp->location), v);
		} else if (!strcasecmp(line, "WWW-Authenticate")) {
			copy_header(resp->www_authenticate, sizeof(resp->www_authenticate), v);
		} else if (!strcasecmp(line, "Docker-Content-Digest")) {
			copy_header(resp->content_digest, sizeof(resp->content_digest), v);
		}
	}
	if (*chunked)
		resp->content_length = -1;
	return 0;
}

/* Body bytes to their place: the buffer or the fd. */
static int sink(struct pd_http_response *resp, int fd, uint64_t max, const char *data, size_t n,
		paddock_error *err)
{
	if (resp->body_len + n > max)
		return pd_fail(err, EFBIG, "response body larger than %llu bytes",
			       (unsigned long long)max);
	if (fd >= 0) {
		int r = pd_write_all(fd, data, n);

		if (r < 0)
			return pd_fail(err, -r, "write the download");
	} else {
		memcpy(resp->body + resp->body_len, data, n);
	}
	resp->body_len += n;
	return 0;
}

static int read_body(struct conn *c, struct pd_http_response *resp, bool chunked, int fd,
		     uint64_t max, paddock_error *err)
{
	char buf[65536];

	if (fd < 0) {
		resp->body = malloc(max + 1);
		if (!resp->body)
			return pd_fail(err, ENOMEM, "out of memory");
	}
	if (!chunked) {
		/* without a length: to the end of the connection (we asked for its close) */
		uint64_t left =
			resp->content_length >= 0 ? (uint64_t)resp->content_length : UINT64_MAX;

		if (resp->content_length >= 0 && (uint64_t)resp->content_length > max)
			return pd_fail(err, EFBIG, "response body of %lld bytes, more than %llu",
				       (long long)resp->content_length, (unsigned long long)max);
		while (left > 0) {
			ssize_t n = conn_read(c, buf, left < sizeof(buf) ? left : sizeof(buf));
			int r;

			if (n < 0)
				return pd_fail(err, (int)-n, "read the response body");
			if (n == 0) {
				if (resp->content_length >= 0)
					return pd_fail(err, EPROTO,
						       "the response body ended early");
				break;
			}
			r = sink(resp, fd, max, buf, (size_t)n, err);
			if (r < 0)
				return r;
			left -= (uint64_t)n;
		}
	} else {
		for (;;) {
			char line[128], *end;
			size_t used = 0;
			unsigned long long size;
			int r = read_line(c, line, sizeof(line), &used);

			if (r < 0)
				return pd_fail(err, -r, "read a chunk size");
			size = strtoull(line, &end, 16);
			if (end == line || (*end && *end != ';') || size > max)
				return pd_fail(err, EPROTO, "a bad chunk size");
			if (size == 0)
				break;
			while (size > 0) {
				ssize_t n =
					conn_read(c, buf, size < sizeof(buf) ? size : sizeof(buf));

				if (n <= 0)
					return pd_fail(err, n < 0 ? (int)-n : EPROTO,
						       "the response body ended early");
				r = sink(resp, fd, max, buf, (size_t)n, err);
				if (r < 0)
					return r;
				size -= (unsigned long long)n;
			}
			r = read_line(c, line, sizeof(line), &used);
			if (r < 0 || line[0])
				return pd_fail(err, EPROTO, "a chunk without its CRLF");
		}
		/* trailers, if any, up to the empty line */
		for (size_t used = 0;;) {
			char line[1024];
			int r = read_line(c, line, sizeof(line), &used);

			if (r < 0 || !line[0])
				break;
		}
	}
	if (fd < 0)
		resp->body[resp->body_len] = '\0';
	return 0;
}

int pd_http_get(const char *url, const char *const *headers, const struct pd_http_opts *opts,
		int body_fd, uint64_t body_max, struct pd_http_response *ret, paddock_error *err)
{
	struct conn c = { .fd = -EBADF };
	struct pd_http_response resp = { 0 };
	struct pd_url u;
	_cleanup_free_ char *req = NULL;
	bool chunked = false;
	size_t len = 0;
	FILE *f;
	int r;

	if (pd_url_parse(url, &u) < 0)
		return pd_fail(err, EINVAL, "not an http(s) URL: '%s'", PD_ESC(url));
	c.timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	f = open_memstream(&req, &len);
	if (!f)
		return pd_fail(err, ENOMEM, "out of memory");
	fprintf(f, "GET %s HTTP/1.1\r\nHost: %s%s%s", u.path, strchr(u.host, ':') ? "[" : "",
		u.host, strchr(u.host, ':') ? "]" : "");
	if (strcmp(u.port, u.tls ? "443" : "80"))
		fprintf(f, ":%s", u.port);
	fprintf(f, "\r\nUser-Agent: paddock\r\nConnection: close\r\n");
	for (const char *const *h = headers; h && *h; h++)
		fprintf(f, "%s\r\n", *h);
	fprintf(f, "\r\n");
	if (fclose(f) != 0)
		return pd_fail(err, ENOMEM, "out of memory");
	r = tcp_connect(&c, &u, err);
	if (r >= 0 && u.tls)
		r = tls_start(&c, &u, opts ? opts : &(struct pd_http_opts){ 0 }, err);
	if (r >= 0 && (r = conn_write(&c, req, len)) < 0)
		r = pd_fail(err, -r, "send the request to '%s'", PD_ESC(u.host));
	if (r >= 0)
		r = read_head(&c, &resp, &chunked, err);
	if (r >= 0 && resp.status >= 200 && resp.status < 300)
		r = read_body(&c, &resp, chunked, body_fd, body_max, err);
	else if (r >= 0 && read_body(&c, &resp, chunked, -1, 16384, &(paddock_error){ 0 }) < 0) {
		/* an error's body is only for its message: none, when it is odd */
		free(resp.body);
		resp.body = NULL;
		resp.body_len = 0;
	}
	conn_close(&c);
	if (r < 0) {
		free(resp.body);
		return r;
	}
	*ret = resp;
	return 0;
}
