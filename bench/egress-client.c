/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The latency client of bench/egress.sh: N connections one after another, each a whole
 * HTTP/1.1 exchange (connect, one GET with Connection: close, read to EOF, close), timed
 * with CLOCK_MONOTONIC from before connect() to after the EOF.
 *
 *   egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] direct ADDR PORT
 *   egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] proxy  ADDR PORT PROXY_ADDR PROXY_PORT
 *
 * direct: connects to ADDR:PORT and sends "GET / HTTP/1.1" with Host: NAME. Inside a
 * sandbox with transparent egress this is the transparent case: the redirect does the rest.
 * proxy: connects to PROXY_ADDR:PROXY_PORT and sends "GET http://NAME:PORT/ HTTP/1.1".
 *
 * Prints one line: LABEL n=N p50=MS p99=MS mean=MS max=MS failures=F
 * A connection fails if it errs or the answer does not start with "HTTP/1.1 200".
 *
 *   egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] [-c CAFILE] [-a HEADER] [-k]
 *                 tls ADDR PORT [PROXY_ADDR PROXY_PORT]
 *
 * tls (bench/secrets.sh): HTTPS to NAME (SNI, verified: the default trust store, which
 * follows $SSL_CERT_FILE, plus CAFILE), at ADDR:PORT, or through the HTTP proxy at
 * PROXY_ADDR:PROXY_PORT by "CONNECT NAME:PORT". Each request is "GET / HTTP/1.1" with Host:
 * NAME and HEADER (a whole line, e.g. "Authorization: Bearer ..."), if given; the answer
 * is read to the end of its Content-Length body. Without -k: N connections one after
 * another, each connect, handshake (no session resumption), one request, close; timed from
 * before connect() to the end of the body. With -k: one connection, N requests on it one
 * after another, each timed from the write to the end of its body; the line then also has
 * rps=R (N over the time of all N) and hs=MS, the connection's set-up (connect, CONNECT,
 * handshake). The line also has slow=S: the samples over 30 ms (where a delayed ACK's 40 ms
 * shows). A request fails if it errs or its answer is not a 200; with -k, a connection
 * that breaks fails all the rest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "timing.h"

static int addr_parse(const char *addr, const char *port, struct sockaddr_in *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->sin_family = AF_INET;
	ret->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, addr, &ret->sin_addr) == 1 ? 0 : -1;
}

/* One exchange; 0 if the answer was a 200, -1 otherwise. */
static int exchange(const struct sockaddr_in *to, const char *req, size_t req_len)
{
	char buf[4096], head[12];
	size_t got = 0;
	int one = 1, r = -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0)
		goto out;
	if (send(fd, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len)
		goto out;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		/* keep the first bytes: the status line */
		for (ssize_t i = 0; i < n && got < sizeof(head); i++)
			head[got++] = buf[i];
	}
	if (got == sizeof(head) && memcmp(head, "HTTP/1.1 200", sizeof(head)) == 0)
		r = 0;
out:
	close(fd);
	return r;
}

/* ---- tls ---- */

struct tls_opts {
	SSL_CTX *ctx;
	const char *name, *port;
	const struct sockaddr_in *proxy; /* NULL: direct */
	const char *req;
	int req_len;
};

static int read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* Through the proxy: CONNECT, and its answer read byte by byte up to the end of its head
 * (a 200 has no body), so that no TLS byte is consumed here. */
static int proxy_connect(int fd, const struct tls_opts *o)
{
	char req[600], head[1024];
	size_t got = 0;
	int len = snprintf(req, sizeof(req), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n",
			   o->name, o->port, o->name, o->port);

	if (len < 0 || (size_t)len >= sizeof(req) ||
	    send(fd, req, (size_t)len, MSG_NOSIGNAL) != len)
		return -1;
	while (got < sizeof(head) - 1) {
		if (read_all(fd, head + got, 1) < 0)
			return -1;
		got++;
		if (got >= 4 && memcmp(head + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[got] = '\0';
	return strncmp(head, "HTTP/1.1 200", 12) == 0 || strncmp(head, "HTTP/1.0 200", 12) == 0
		       ? 0
		       : -1;
}

/* A connected, handshaken TLS connection to NAME, or NULL. */
static SSL *tls_open(const struct sockaddr_in *to, const struct tls_opts *o)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	SSL *ssl;

	if (fd < 0)
		return NULL;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)(o->proxy ? o->proxy : to), sizeof(*to)) < 0 ||
	    (o->proxy && proxy_connect(fd, o) < 0)) {
		close(fd);
		return NULL;
	}
	ssl = SSL_new(o->ctx);
	if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_set_tlsext_host_name(ssl, o->name) != 1 ||
	    SSL_set1_host(ssl, o->name) != 1 || SSL_connect(ssl) != 1) {
		static bool told;

		if (!told) {
			told = true;
			fprintf(stderr, "egress-client: TLS to %s: ", o->name);
			ERR_print_errors_fp(stderr);
			fputc('\n', stderr);
		}
		ERR_clear_error();
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

static void tls_close(SSL *ssl)
{
	int fd = SSL_get_fd(ssl);

	(void)SSL_shutdown(ssl); /* sends close_notify; does not wait for the peer's */
	SSL_free(ssl);
	close(fd);
}

/* One request on ssl, its answer read to the end of the body: 0 if it was a 200, -1 if it
 * was not, -2 if the connection broke. */
static int tls_exchange(SSL *ssl, const struct tls_opts *o)
{
	char buf[8192];
	size_t got = 0;
	const char *end, *cl;
	long body;
	int status;

	if (SSL_write(ssl, o->req, o->req_len) != o->req_len)
		return -2;
	for (;;) {
		int n = SSL_read(ssl, buf + got, (int)(sizeof(buf) - 1 - got));

		if (n <= 0)
			return -2;
		got += (size_t)n;
		buf[got] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
		if (got == sizeof(buf) - 1)
			return -2;
	}
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (!cl || cl > end)
		return -2; /* the server always sends one */
	body = strtol(cl + 17, NULL, 10);
	status = strncmp(buf, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
	for (long have = (long)(buf + got - (end + 4)); have < body;) {
		int n = SSL_read(ssl, buf, (int)sizeof(buf));

		if (n <= 0)
			return -2;
		have += n;
	}
	return status;
}

static int tls_main(int n, int warmup, bool keep, const char *label, const char *cafile,
		    struct tls_opts *o, const struct sockaddr_in *to)
{
	double *samples = calloc((size_t)n, sizeof(*samples));
	double sum = 0, hs = 0, total = 0;
	int failures = 0, done = 0;

	o->ctx = SSL_CTX_new(TLS_client_method());
	if (!samples || !o->ctx || SSL_CTX_set_default_verify_paths(o->ctx) != 1 ||
	    (cafile && SSL_CTX_load_verify_file(o->ctx, cafile) != 1)) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	SSL_CTX_set_verify(o->ctx, SSL_VERIFY_PEER, NULL);
	/* a fresh connection is a full handshake every time, as from a new process */
	SSL_CTX_set_session_cache_mode(o->ctx, SSL_SESS_CACHE_OFF);
	(void)SSL_CTX_set_alpn_protos(o->ctx, (const unsigned char *)"\x08http/1.1", 9);

	if (keep) {
		double t0 = bench_now(), t1;
		SSL *ssl = tls_open(to, o);

		hs = (bench_now() - t0) * 1e3;
		for (int i = 0; ssl && i < warmup; i++)
			if (tls_exchange(ssl, o) == -2)
				break;
		t0 = bench_now();
		for (; ssl && done < n; done++) {
			int r;

			t1 = bench_now();
			r = tls_exchange(ssl, o);
			samples[done] = (bench_now() - t1) * 1e3;
			sum += samples[done];
			if (r == -2) {
				fprintf(stderr,
					"egress-client: %s: the connection broke after %d "
					"requests\n",
					label, done);
				break;
			}
			if (r < 0)
				failures++;
		}
		total = bench_now() - t0;
		failures += n - done;
		if (ssl)
			tls_close(ssl);
	} else {
		for (int i = 0; i < warmup + n; i++) {
			double t0 = bench_now();
			SSL *ssl = tls_open(to, o);
			int r = ssl ? tls_exchange(ssl, o) : -2;
			double ms = (bench_now() - t0) * 1e3;

			if (ssl)
				tls_close(ssl);
			if (i < warmup)
				continue;
			samples[done++] = ms;
			sum += ms;
			if (r < 0)
				failures++;
		}
	}
	if (done == 0) {
		printf("%s n=0 failures=%d\n", label, failures);
		return 1;
	}
	qsort(samples, (size_t)done, sizeof(*samples), bench_cmp_double);
	printf("%s n=%d p50=%.4f p99=%.4f mean=%.4f max=%.4f failures=%d", label, done,
	       samples[done / 2], samples[(done * 99) / 100], sum / done, samples[done - 1],
	       failures);
	int slow = 0;

	for (int i = 0; i < done; i++)
		slow += samples[i] > 30.0;
	printf(" slow=%d", slow);
	if (keep)
		printf(" rps=%.1f hs=%.4f", done / total, hs);
	printf("\n");
	free(samples);
	SSL_CTX_free(o->ctx);
	return failures == n ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] "
			"direct|proxy ADDR PORT [PROXY_ADDR PROXY_PORT]\n"
			"       egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] [-c CAFILE] "
			"[-a HEADER] [-k] tls ADDR PORT [PROXY_ADDR PROXY_PORT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *name = NULL, *label = NULL, *cafile = NULL, *extra = NULL;
	struct sockaddr_in to, via;
	char req[8192];
	int n = 1000, warmup = 20, failures = 0, opt, len;
	bool proxy, keep = false;

	while ((opt = getopt(argc, argv, "n:w:H:l:c:a:k")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'H':
			name = optarg;
			break;
		case 'l':
			label = optarg;
			break;
		case 'c':
			cafile = optarg;
			break;
		case 'a':
			extra = optarg;
			break;
		case 'k':
			keep = true;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 3 || n < 1)
		usage();
	if (!name)
		name = argv[1];
	if (!label)
		label = argv[0];
	if (strcmp(argv[0], "tls") == 0) {
		struct tls_opts o = { .name = name, .port = argv[2] };

		if ((argc != 3 && argc != 5) || addr_parse(argv[1], argv[2], &to) < 0 ||
		    (argc == 5 && addr_parse(argv[3], argv[4], &via) < 0))
			usage();
		if (argc == 5)
			o.proxy = &via;
		len = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n%s%s\r\n", name,
			       extra ? extra : "", extra ? "\r\n" : "");
		if (len < 0 || (size_t)len >= sizeof(req))
			usage();
		o.req = req;
		o.req_len = len;
		return tls_main(n, warmup, keep, label, cafile, &o, &to);
	}
	proxy = strcmp(argv[0], "proxy") == 0;
	if (!proxy && strcmp(argv[0], "direct") != 0)
		usage();
	if (proxy) {
		if (argc != 5 || addr_parse(argv[3], argv[4], &to) < 0)
			usage();
		len = snprintf(req, sizeof(req),
			       "GET http://%s:%s/ HTTP/1.1\r\nHost: %s:%s\r\n"
			       "Connection: close\r\n\r\n",
			       name, argv[2], name, argv[2]);
	} else {
		if (argc != 3 || addr_parse(argv[1], argv[2], &to) < 0)
			usage();
		len = snprintf(req, sizeof(req),
			       "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", name);
	}
	if (len < 0 || (size_t)len >= sizeof(req))
		usage();

	double *samples = calloc((size_t)n, sizeof(*samples));
	double sum = 0;

	if (!samples)
		return 1;
	for (int i = 0; i < warmup; i++)
		(void)exchange(&to, req, (size_t)len);
	for (int i = 0; i < n; i++) {
		double t0 = bench_now();

		if (exchange(&to, req, (size_t)len) < 0)
			failures++;
		samples[i] = (bench_now() - t0) * 1e3;
		sum += samples[i];
	}
	qsort(samples, (size_t)n, sizeof(*samples), bench_cmp_double);
	printf("%s n=%d p50=%.4f p99=%.4f mean=%.4f max=%.4f failures=%d\n", label, n,
	       samples[n / 2], samples[(n * 99) / 100], sum / n, samples[n - 1], failures);
	free(samples);
	return failures == n ? 1 : 0;
}
