/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP/1.1 client `paddock` uses to talk to paddockd over its unix socket.
 *
 * Written by hand because neither ready-made client fits: libevent 2.1's evhttp client can
 * only dial TCP (evhttp_connection_base_new() takes a host and a port; there is no way to
 * hand it a connected AF_UNIX socket), and libcurl, which can, is not among our
 * dependencies. What the CLI needs is small: one request per connection, a body from memory
 * or streamed from an fd, and an answer read as a whole, incrementally, or line by line
 * (NDJSON).
 *
 * Trust: paddockd is trusted to speak HTTP, but what it relays comes from sandboxes, so the
 * answer is parsed as hostile input all the same: the header block is at most HTTP_HEAD_MAX
 * bytes, each header, chunk-size and trailer line at most HTTP_LINE_MAX, NDJSON lines at
 * most what the caller allows, numbers are checked for overflow, and anything malformed or
 * cut short is -EPROTO rather than a guess.
 */
#include "client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RBUF_SIZE  (HTTP_HEAD_MAX + 1024)
#define SEND_CHUNK 65536

enum body_state {
	BODY_NONE,	 /* before the head is read */
	BODY_LENGTH,	 /* Content-Length: `left` bytes to go */
	BODY_UNTIL_EOF,	 /* neither length nor chunked: until the peer closes */
	BODY_CHUNK_SIZE, /* expecting a chunk-size line */
	BODY_CHUNK_DATA, /* `left` bytes of the current chunk to go */
	BODY_CHUNK_CRLF, /* the CRLF after a chunk's data */
	BODY_TRAILER,	 /* trailer lines until an empty one */
	BODY_DONE,
};

struct http_conn {
	int fd;
	bool nonblocking;
	int send_errno;	 /* the peer stopped reading our request (EPIPE, ECONNRESET) */
	bool have_early; /* `early` is the final answer, given before the request's body */
	struct http_response early;
	enum body_state state;
	uint64_t left;
	size_t trailer_bytes;
	/* bytes received and not yet consumed: rbuf[rpos, rlen) */
	char rbuf[RBUF_SIZE];
	size_t rpos, rlen;
	/* the NDJSON line being assembled */
	char *line;
	size_t line_len, line_cap;
	size_t line_scanned; /* line[0, line_scanned) holds no "\n" */
	size_t line_used;    /* the line returned last time, with its "\n", to drop */
};

__attribute__((format(printf, 3, 4))) static int fail(paddock_error *err, int code, const char *fmt,
						      ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		err->field[0] = '\0';
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

void http_put_encoded(FILE *f, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9');

		if (alnum || strchr("-._~", *p) || (keep_slash && *p == '/'))
			fputc(*p, f);
		else
			fprintf(f, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

int http_conn_new_fd(int fd, struct http_conn **ret_conn, paddock_error *err)
{
	struct http_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(fd);
		return fail(err, ENOMEM, "allocate connection");
	}
	c->fd = fd;
	*ret_conn = c;
	return 0;
}

int http_connect_unix(const char *path, struct http_conn **ret_conn, paddock_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return fail(err, ENAMETOOLONG, "socket path is longer than %zu bytes",
			    sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(err, errno, "socket");
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		close(fd);
		return fail(err, e, "connect");
	}
	return http_conn_new_fd(fd, ret_conn, err);
}

struct http_conn *http_conn_free(struct http_conn *c)
{
	if (!c)
		return NULL;
	if (c->fd >= 0)
		close(c->fd);
	free(c->line);
	free(c);
	return NULL;
}

int http_conn_fd(const struct http_conn *c)
{
	return c->fd;
}

void http_conn_set_nonblocking(struct http_conn *c, bool nonblocking)
{
	c->nonblocking = nonblocking;
}

/* ---- sending -------------------------------------------------------------------------- */

/*
 * The one write-everything loop: send(MSG_NOSIGNAL) for the socket to paddockd, so a peer
 * that stopped reading is -EPIPE and not a SIGPIPE; plain write() for anything else (files,
 * pipes, a terminal), where send() would be -ENOTSOCK.
 */
static int put_all(int fd, const void *buf, size_t n, bool is_socket)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = is_socket ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* 0, or -errno with EPIPE/ECONNRESET meaning the peer stopped reading. */
static int send_all(int fd, const void *buf, size_t n)
{
	return put_all(fd, buf, n, true);
}

int http_write_all(int fd, const void *buf, size_t n)
{
	return put_all(fd, buf, n, false);
}

static ssize_t read_some(int fd, void *buf, size_t n)
{
	for (;;) {
		ssize_t r = read(fd, buf, n);
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -errno : r;
	}
}

/* A request target goes on the request line as is: refuse what would break the line. */
static bool target_ok(const char *t)
{
	if (t[0] != '/')
		return false;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

/* Sends the body read from req->body_fd: body_fd_len bytes, or chunks until EOF. */
static int send_fd_body(struct http_conn *c, const struct http_request *req, paddock_error *err)
{
	/* room for "<hex>\r\n" before the data and "\r\n" after it: one send per chunk */
	enum { PRE = 16 };
	char *buf = malloc(PRE + SEND_CHUNK + 2);
	bool chunked = req->body_fd_len < 0;
	uint64_t left = chunked ? 0 : (uint64_t)req->body_fd_len;
	int r = 0;

	if (!buf)
		return fail(err, ENOMEM, "allocate send buffer");
	while (chunked || left > 0) {
		size_t want = !chunked && left < SEND_CHUNK ? (size_t)left : SEND_CHUNK;
		ssize_t n = read_some(req->body_fd, buf + PRE, want);
		char head[PRE];
		int hl;

		if (n < 0) {
			free(buf);
			return fail(err, (int)-n, "read the request body");
		}
		if (!chunked) {
			if (n == 0) {
				free(buf);
				return fail(err, EIO,
					    "the request body ended %" PRIu64 " bytes early (the "
					    "file shrank while being sent)",
					    left);
			}
			r = send_all(c->fd, buf + PRE, (size_t)n);
			left -= (uint64_t)n;
		} else if (n == 0) {
			r = send_all(c->fd, "0\r\n\r\n", 5); /* the last chunk, no trailers */
			break;
		} else {
			hl = snprintf(head, sizeof(head), "%zx\r\n", (size_t)n);
			memcpy(buf + PRE - hl, head, (size_t)hl);
			memcpy(buf + PRE + n, "\r\n", 2);
			r = send_all(c->fd, buf + PRE - hl, (size_t)hl + (size_t)n + 2);
		}
		if (r < 0)
			break;
	}
	free(buf);
	if (r == -EPIPE || r == -ECONNRESET) {
		c->send_errno = -r;
		return 0;
	}
	if (r < 0)
		return fail(err, -r, "send the request body");
	return 0;
}

static int read_head(struct http_conn *c, struct http_response *resp, paddock_error *err);

/*
 * After "Expect: 100-continue": paddockd answers 100 (send the body) or at once with the
 * final answer (e.g. 413), which is kept for http_read_response(). A server that says
 * nothing within a second gets the body anyway (RFC 9110 10.1.1).
 */
static int await_continue(struct http_conn *c, bool *ret_send_body, paddock_error *err)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int r;

	*ret_send_body = true;
	do
		r = poll(&pfd, 1, 1000);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return 0;
	r = read_head(c, &c->early, err);
	if (r < 0)
		return r;
	if (c->early.status == 100)
		return 0;
	c->have_early = true;
	*ret_send_body = false;
	return 0;
}

int http_send_request(struct http_conn *c, const struct http_request *req, paddock_error *err)
{
	bool has_body = req->body_fd >= 0 ? req->body_fd_len != 0 : req->body && req->body_len > 0;
	bool send_body = true;
	char *head = NULL;
	size_t len;
	FILE *f;
	int r;

	if (!target_ok(req->target))
		return fail(err, EINVAL, "bad request target");
	if (req->range && strpbrk(req->range, "\r\n"))
		return fail(err, EINVAL, "bad Range header");
	f = open_memstream(&head, &len);
	if (!f)
		return fail(err, ENOMEM, "allocate the request");
	fprintf(f,
		"%s %s HTTP/1.1\r\nHost: paddockd\r\nConnection: close\r\n"
		"User-Agent: paddock/%s\r\n",
		req->method, req->target, PADDOCK_VERSION);
	if (req->content_type)
		fprintf(f, "Content-Type: %s\r\n", req->content_type);
	if (req->range)
		fprintf(f, "Range: %s\r\n", req->range);
	if (req->body_fd >= 0 && req->body_fd_len < 0)
		fputs("Transfer-Encoding: chunked\r\n", f);
	else
		fprintf(f, "Content-Length: %" PRIu64 "\r\n",
			req->body_fd >= 0 ? (uint64_t)req->body_fd_len
					  : (uint64_t)(req->body ? req->body_len : 0));
	if (req->expect_continue && has_body)
		fputs("Expect: 100-continue\r\n", f);
	fputs("\r\n", f);
	if (fclose(f) != 0) {
		free(head);
		return fail(err, ENOMEM, "allocate the request");
	}
	r = send_all(c->fd, head, len);
	free(head);
	if (r == 0 && req->expect_continue && has_body) {
		r = await_continue(c, &send_body, err);
		if (r < 0)
			return r;
	}
	if (r == 0 && send_body && req->body_fd < 0 && has_body)
		r = send_all(c->fd, req->body, req->body_len);
	if (r == -EPIPE || r == -ECONNRESET) {
		c->send_errno = -r;
		return 0;
	}
	if (r < 0)
		return fail(err, -r, "send the request");
	if (send_body && req->body_fd >= 0)
		return send_fd_body(c, req, err);
	return 0;
}

/* ---- receiving ------------------------------------------------------------------------ */

/* Receives more bytes into rbuf: > 0, 0 at EOF, -EAGAIN when non-blocking, -errno. */
static ssize_t fill(struct http_conn *c)
{
	ssize_t n;

	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->rlen == sizeof(c->rbuf))
		return -ENOBUFS; /* callers bound what they wait for below the buffer's size */
	do
		n = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen,
			 c->nonblocking ? MSG_DONTWAIT : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	c->rlen += (size_t)n;
	return n;
}

static size_t buffered(const struct http_conn *c)
{
	return c->rlen - c->rpos;
}

/*
 * The next line in rbuf, at most HTTP_LINE_MAX bytes: 1 with the line and its length (without
 * "\r\n", which is consumed), or a negative fill() error; EOF before the line is -EPROTO.
 */
static int next_line(struct http_conn *c, const char *what, char **ret_line, size_t *ret_len,
		     paddock_error *err)
{
	for (;;) {
		char *start = c->rbuf + c->rpos;
		char *nl = memchr(start, '\n', buffered(c));
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - start);
			if (len > HTTP_LINE_MAX)
				return fail(err, EPROTO, "%s longer than %d bytes", what,
					    HTTP_LINE_MAX);
			c->rpos += len + 1;
			if (len > 0 && start[len - 1] == '\r')
				len--;
			start[len] = '\0';
			*ret_line = start;
			*ret_len = len;
			return 1;
		}
		if (buffered(c) > HTTP_LINE_MAX)
			return fail(err, EPROTO, "%s longer than %d bytes", what, HTTP_LINE_MAX);
		n = fill(c);
		if (n == 0)
			return fail(err, EPROTO, "the connection closed in the middle of the %s",
				    what);
		if (n == -EAGAIN)
			return -EAGAIN;
		if (n < 0)
			return fail(err, (int)-n, "receive the answer");
	}
}

static bool is_token_char(unsigned char ch)
{
	return ch > ' ' && ch < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", ch);
}

static char *trim(char *s, size_t *len)
{
	while (*len > 0 && (*s == ' ' || *s == '\t'))
		s++, (*len)--;
	while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t'))
		(*len)--;
	s[*len] = '\0';
	return s;
}

/* A Content-Length value: digits only, no sign, no overflow. */
static int parse_length(const char *v, int64_t *ret)
{
	int64_t n = 0;

	if (!*v)
		return -EPROTO;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > (INT64_MAX - 9) / 10)
			return -EPROTO;
		n = n * 10 + (*v - '0');
	}
	*ret = n;
	return 0;
}

static int parse_header(struct http_response *resp, char *line, size_t len, paddock_error *err)
{
	char *colon = memchr(line, ':', len), *value;
	size_t vlen;

	if (line[0] == ' ' || line[0] == '\t')
		return fail(err, EPROTO, "folded header lines are not accepted");
	if (!colon || colon == line)
		return fail(err, EPROTO, "malformed header line");
	for (char *p = line; p < colon; p++)
		if (!is_token_char((unsigned char)*p))
			return fail(err, EPROTO, "malformed header name");
	*colon = '\0';
	vlen = len - (size_t)(colon + 1 - line);
	value = trim(colon + 1, &vlen);
	for (size_t i = 0; i < vlen; i++)
		if ((unsigned char)value[i] < ' ' && value[i] != '\t')
			return fail(err, EPROTO, "control character in header '%s'", line);

	if (!strcasecmp(line, "Content-Length")) {
		int64_t n;
		if (parse_length(value, &n) < 0)
			return fail(err, EPROTO, "bad Content-Length");
		if (resp->content_length >= 0 && resp->content_length != n)
			return fail(err, EPROTO, "conflicting Content-Length headers");
		resp->content_length = n;
	} else if (!strcasecmp(line, "Transfer-Encoding")) {
		/* the only coding paddockd uses; anything else we could not decode */
		if (strcasecmp(value, "chunked") || resp->chunked)
			return fail(err, EPROTO, "unsupported Transfer-Encoding");
		resp->chunked = true;
	} else if (!strcasecmp(line, "Content-Type")) {
		snprintf(resp->content_type, sizeof(resp->content_type), "%s", value);
	} else if (!strcasecmp(line, "Content-Range")) {
		snprintf(resp->content_range, sizeof(resp->content_range), "%s", value);
	}
	return 0;
}

/* "HTTP/1.x NNN reason" */
static int parse_status_line(const char *line, struct http_response *resp)
{
	size_t n = 0;

	if (strncmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
		return -EPROTO;
	for (int i = 9; i < 12; i++)
		if (line[i] < '0' || line[i] > '9')
			return -EPROTO;
	if (line[12] != '\0' && line[12] != ' ')
		return -EPROTO;
	resp->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	for (const char *p = line[12] ? line + 13 : ""; *p && n < sizeof(resp->reason) - 1; p++)
		if ((unsigned char)*p >= ' ' && *p != 0x7f)
			resp->reason[n++] = *p;
	resp->reason[n] = '\0';
	return resp->status >= 100 && resp->status <= 599 ? 0 : -EPROTO;
}

static int read_head(struct http_conn *c, struct http_response *resp, paddock_error *err)
{
	size_t total = 0;
	bool first = true;

	*resp = (struct http_response){ .content_length = -1 };
	for (;;) {
		char *line;
		size_t len;
		int r;

		r = next_line(c, first ? "status line" : "header line", &line, &len, err);
		if (r < 0)
			return r;
		total += len + 2;
		if (total > HTTP_HEAD_MAX)
			return fail(err, EPROTO, "answer headers longer than %d bytes",
				    HTTP_HEAD_MAX);
		if (first) {
			if (parse_status_line(line, resp) < 0)
				return fail(err, EPROTO, "malformed status line");
			first = false;
			continue;
		}
		if (len == 0)
			return 0;
		r = parse_header(resp, line, len, err);
		if (r < 0)
			return r;
	}
}

int http_read_response(struct http_conn *c, struct http_response *ret_resp, paddock_error *err)
{
	struct http_response resp;
	bool saved = c->nonblocking;
	int r = 0;

	c->nonblocking = false;
	if (c->have_early) /* the answer came before the body was sent */
		resp = c->early;
	else
		do
			r = read_head(c, &resp, err);
		while (r == 0 && resp.status >= 100 && resp.status < 200 && resp.status != 101);
	c->nonblocking = saved;
	if (r < 0) {
		if (c->send_errno) {
			char old[sizeof(err->msg)];
			memcpy(old, err->msg, sizeof(old));
			return fail(err, c->send_errno,
				    "paddockd stopped reading the request (%.300s)", old);
		}
		return r;
	}
	if (resp.status == 101)
		return fail(err, EPROTO, "unexpected protocol switch");
	/* RFC 9112 6.3: a chunked coding overrides Content-Length */
	if (resp.status == 204 || resp.status == 304)
		c->state = BODY_DONE;
	else if (resp.chunked)
		c->state = BODY_CHUNK_SIZE;
	else if (resp.content_length >= 0)
		c->state = BODY_LENGTH, c->left = (uint64_t)resp.content_length;
	else
		c->state = BODY_UNTIL_EOF;
	*ret_resp = resp;
	return 0;
}

/* A chunk-size line: hex digits, then maybe ";extensions" (ignored). */
static int parse_chunk_size(const char *line, uint64_t *ret)
{
	uint64_t n = 0;
	int digits = 0;

	for (; *line; line++, digits++) {
		int d;
		if (*line >= '0' && *line <= '9')
			d = *line - '0';
		else if (*line >= 'a' && *line <= 'f')
			d = *line - 'a' + 10;
		else if (*line >= 'A' && *line <= 'F')
			d = *line - 'A' + 10;
		else
			break;
		if (digits >= 15) /* bounded well below overflow */
			return -EPROTO;
		n = n * 16 + (uint64_t)d;
	}
	while (*line == ' ' || *line == '\t')
		line++;
	if (digits == 0 || (*line && *line != ';'))
		return -EPROTO;
	*ret = n;
	return 0;
}

/* Copies up to `size` of the bytes at hand (receiving when none are): > 0, or fill()'s. */
static ssize_t take(struct http_conn *c, void *buf, size_t size, uint64_t limit)
{
	size_t n;

	if (buffered(c) == 0) {
		ssize_t r = fill(c);
		if (r <= 0)
			return r;
	}
	n = buffered(c);
	if (n > size)
		n = size;
	if (n > limit)
		n = (size_t)limit;
	memcpy(buf, c->rbuf + c->rpos, n);
	c->rpos += n;
	return (ssize_t)n;
}

ssize_t http_read_body(struct http_conn *c, void *buf, size_t size, paddock_error *err)
{
	for (;;) {
		char *line;
		size_t len;
		ssize_t n;
		int r;

		switch (c->state) {
		case BODY_NONE:
			return fail(err, EINVAL, "no answer head read yet");
		case BODY_DONE:
			return 0;
		case BODY_LENGTH:
		case BODY_CHUNK_DATA:
			if (c->left == 0) {
				c->state = c->state == BODY_LENGTH ? BODY_DONE : BODY_CHUNK_CRLF;
				continue;
			}
			if (size == 0)
				return 0;
			n = take(c, buf, size, c->left);
			if (n == 0)
				return fail(err, EPROTO,
					    "the connection closed before the end of "
					    "the answer");
			if (n == -EAGAIN)
				return n;
			if (n < 0)
				return fail(err, (int)-n, "receive the answer");
			c->left -= (uint64_t)n;
			return n;
		case BODY_UNTIL_EOF:
			if (size == 0)
				return 0;
			n = take(c, buf, size, UINT64_MAX);
			if (n == 0)
				c->state = BODY_DONE;
			if (n >= 0 || n == -EAGAIN)
				return n;
			return fail(err, (int)-n, "receive the answer");
		case BODY_CHUNK_SIZE:
			r = next_line(c, "chunk-size line", &line, &len, err);
			if (r < 0)
				return r;
			if (parse_chunk_size(line, &c->left) < 0)
				return fail(err, EPROTO, "malformed chunk-size line");
			c->state = c->left ? BODY_CHUNK_DATA : BODY_TRAILER;
			continue;
		case BODY_CHUNK_CRLF:
			r = next_line(c, "chunk end", &line, &len, err);
			if (r < 0)
				return r;
			if (len != 0)
				return fail(err, EPROTO, "chunk data longer than its size");
			c->state = BODY_CHUNK_SIZE;
			continue;
		case BODY_TRAILER:
			r = next_line(c, "trailer line", &line, &len, err);
			if (r < 0)
				return r;
			c->trailer_bytes += len + 2;
			if (c->trailer_bytes > HTTP_HEAD_MAX)
				return fail(err, EPROTO, "trailers longer than %d bytes",
					    HTTP_HEAD_MAX);
			if (len == 0)
				c->state = BODY_DONE;
			continue;
		}
		return fail(err, EINVAL, "bad body state");
	}
}

int http_read_body_all(struct http_conn *c, size_t max, char **ret_body, size_t *ret_len,
		       paddock_error *err)
{
	size_t len = 0, cap = 4096;
	char *body = malloc(cap);
	bool saved = c->nonblocking;
	ssize_t n;

	if (!body)
		return fail(err, ENOMEM, "allocate the answer");
	c->nonblocking = false;
	for (;;) {
		if (cap - len < 2) {
			char *p;
			if (cap > max + 1) {
				free(body);
				c->nonblocking = saved;
				return fail(err, EFBIG, "answer larger than %zu bytes", max);
			}
			cap = cap * 2 > max + 2 ? max + 2 : cap * 2;
			p = realloc(body, cap);
			if (!p) {
				free(body);
				c->nonblocking = saved;
				return fail(err, ENOMEM, "allocate the answer");
			}
			body = p;
		}
		n = http_read_body(c, body + len, cap - len - 1, err);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(body);
			c->nonblocking = saved;
			return fail(err, EFBIG, "answer larger than %zu bytes", max);
		}
	}
	c->nonblocking = saved;
	if (n < 0) {
		free(body);
		return (int)n;
	}
	body[len] = '\0';
	*ret_body = body;
	*ret_len = len;
	return 0;
}

int http_read_line(struct http_conn *c, size_t max_line, const char **ret_line, size_t *ret_len,
		   paddock_error *err)
{
	size_t len;

	/* drop the line returned last time; what followed it stays */
	if (c->line_used > 0) {
		memmove(c->line, c->line + c->line_used, c->line_len - c->line_used);
		c->line_len -= c->line_used;
		c->line_used = 0;
		c->line_scanned = 0;
	}
	for (;;) {
		char *nl = c->line_len > c->line_scanned ? memchr(c->line + c->line_scanned, '\n',
								  c->line_len - c->line_scanned)
							 : NULL;
		ssize_t n;

		if (nl) {
			len = (size_t)(nl - c->line);
			c->line_used = len + 1;
			if (len > max_line)
				return fail(err, EMSGSIZE, "answer line longer than %zu bytes",
					    max_line);
			if (len > 0 && c->line[len - 1] == '\r')
				len--;
			break;
		}
		c->line_scanned = c->line_len;
		if (c->line_len > max_line)
			return fail(err, EMSGSIZE, "answer line longer than %zu bytes", max_line);
		if (c->line_cap - c->line_len < SEND_CHUNK + 1) {
			/* line_len <= max_line here, so this stays below 2 * (max_line + 64 KiB) */
			size_t cap = c->line_cap * 2 > c->line_len + SEND_CHUNK + 1
					     ? c->line_cap * 2
					     : c->line_len + SEND_CHUNK + 1;
			char *p = realloc(c->line, cap);
			if (!p)
				return fail(err, ENOMEM, "allocate an answer line");
			c->line = p;
			c->line_cap = cap;
		}
		n = http_read_body(c, c->line + c->line_len, c->line_cap - c->line_len - 1, err);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			if (c->line_len == 0)
				return 0;
			/* a last line without "\n" */
			len = c->line_len;
			c->line_used = len;
			break;
		}
		c->line_len += (size_t)n;
	}
	c->line[len] = '\0';
	*ret_line = c->line;
	*ret_len = len;
	return 1;
}
