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

static void usage(void)
{
	fprintf(stderr, "usage: egress-client [-n N] [-w WARMUP] [-H NAME] [-l LABEL] "
			"direct|proxy ADDR PORT [PROXY_ADDR PROXY_PORT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *name = NULL, *label = NULL;
	struct sockaddr_in to;
	char req[512];
	int n = 1000, warmup = 20, failures = 0, opt, len;
	bool proxy;

	while ((opt = getopt(argc, argv, "n:w:H:l:")) != -1) {
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
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 3 || n < 1)
		usage();
	proxy = strcmp(argv[0], "proxy") == 0;
	if (!proxy && strcmp(argv[0], "direct") != 0)
		usage();
	if (!name)
		name = argv[1];
	if (!label)
		label = argv[0];
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
