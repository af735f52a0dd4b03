/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTPS origin of bench/secrets.sh: one process, one thread, epoll, keep-alive.
 *
 *   tls-server [-r HOST=VALUE] CERT KEY ADDR PORT
 *
 * Answers every request (any method, any target) with 200 and a 3-byte body, on the same
 * connection until the client closes it (or sends Connection: close). With -r, a request
 * whose Host is HOST must carry "Authorization: Bearer VALUE" or gets a 403: the check that
 * the proxy really put the value in. ALPN http/1.1 is offered. On SIGTERM or SIGINT it
 * prints "tls-server handshakes=H requests=R forbidden=F" to stderr and exits 0.
 * Trusts its clients (a bench, not a server): a request head must fit in 8 KiB and a reply
 * that would block is finished by waiting for the socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define HEAD_MAX 8192

struct conn {
	int fd;
	SSL *ssl;
	bool counted; /* its handshake */
	size_t len;
	char buf[HEAD_MAX + 1];
};

static const char *want_host, *want_auth;
static unsigned long handshakes, requests, forbidden;

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	for (unsigned int i = 0; i < inlen;) {
		unsigned int n = in[i];

		if (n > inlen - i - 1)
			break;
		if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + n;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

/* The value of header NAME in the head (NUL-terminated, lines end in \r\n), or NULL;
 * *len its length. */
static const char *header(const char *head, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2, *end = strstr(line, "\r\n");

		if (!end)
			return NULL;
		if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			*len = (size_t)(end - v);
			return v;
		}
	}
	return NULL;
}

static int write_all(struct conn *c, const char *buf, int len)
{
	while (len > 0) {
		int n = SSL_write(c->ssl, buf, len);

		if (n > 0) {
			buf += n;
			len -= n;
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		struct pollfd p = { .fd = c->fd };

		if (e == SSL_ERROR_WANT_WRITE)
			p.events = POLLOUT;
		else if (e == SSL_ERROR_WANT_READ)
			p.events = POLLIN;
		else
			return -1;
		(void)poll(&p, 1, 1000);
	}
	return 0;
}

/* Answers the complete requests in c->buf; -1 to close the connection. */
static int answer(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
				 "Content-Length: 3\r\n\r\nok\n";
	static const char no[] = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				 "Content-Length: 3\r\n\r\nno\n";
	char *end;

	while ((end = strstr(c->buf, "\r\n\r\n"))) {
		size_t used = (size_t)(end + 4 - c->buf), hl, al;
		const char *host, *auth, *conn;
		bool good = true, close_after;

		end[2] = '\0'; /* the head, its last \r\n kept */
		requests++;
		if (want_host && (host = header(c->buf, "Host", &hl)) && hl == strlen(want_host) &&
		    strncasecmp(host, want_host, hl) == 0) {
			auth = header(c->buf, "Authorization", &al);
			good = auth && al == 7 + strlen(want_auth) &&
			       strncmp(auth, "Bearer ", 7) == 0 &&
			       memcmp(auth + 7, want_auth, al - 7) == 0;
		}
		if (!good)
			forbidden++;
		conn = header(c->buf, "Connection", &al);
		close_after = conn && al == 5 && strncasecmp(conn, "close", 5) == 0;
		if (write_all(c, good ? ok : no, (int)(good ? sizeof(ok) : sizeof(no)) - 1) < 0)
			return -1;
		if (close_after)
			return -1;
		c->len -= used;
		memmove(c->buf, c->buf + used, c->len + 1);
	}
	return 0;
}

/* Reads what there is; -1 to close the connection. */
static int serve(struct conn *c)
{
	for (;;) {
		int n;

		if (c->len >= HEAD_MAX)
			return -1;
		n = SSL_read(c->ssl, c->buf + c->len, (int)(HEAD_MAX - c->len));
		if (!c->counted && SSL_is_init_finished(c->ssl)) {
			c->counted = true;
			handshakes++;
		}
		if (n <= 0) {
			int e = SSL_get_error(c->ssl, n);

			return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
		}
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		if (answer(c) < 0)
			return -1;
	}
}

static void conn_free(struct conn *c)
{
	SSL_free(c->ssl);
	close(c->fd);
	free(c);
}

static void usage(void)
{
	fprintf(stderr, "usage: tls-server [-r HOST=VALUE] CERT KEY ADDR PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t stop;
	SSL_CTX *ctx;
	int one = 1, lfd, ep, sfd, opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		char *eq;

		if (opt != 'r' || !(eq = strchr(optarg, '=')))
			usage();
		*eq = '\0';
		want_host = optarg;
		want_auth = eq + 1;
	}
	argc -= optind;
	argv += optind;
	if (argc != 4 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		usage();
	sa.sin_port = htons((uint16_t)atoi(argv[3]));

	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, argv[0]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[1], SSL_FILETYPE_PEM) != 1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1024) < 0) {
		perror("listen");
		return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC);
	if (ep < 0 || sfd < 0)
		return 1;
	ev.data.ptr = &lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.ptr = &sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &sfd) {
				fprintf(stderr,
					"tls-server handshakes=%lu requests=%lu forbidden=%lu\n",
					handshakes, requests, forbidden);
				return 0;
			}
			if (evs[i].data.ptr == &lfd) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
					struct conn *c = calloc(1, sizeof(*c));

					(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
							 sizeof(one));
					if (!c || !(c->ssl = SSL_new(ctx))) {
						free(c);
						close(fd);
						continue;
					}
					c->fd = fd;
					SSL_set_fd(c->ssl, fd);
					SSL_set_accept_state(c->ssl);
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			struct conn *c = evs[i].data.ptr;

			if (serve(c) < 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				conn_free(c);
			}
		}
	}
}
