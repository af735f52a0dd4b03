/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The origin server of bench/egress.sh: HTTP/1.1, one request per connection, then close.
 *
 *   egress-server ADDR PORT
 *
 *   GET /bytes/N   Content-Length: N and N bytes ('x'), sent with send(2) from a 1 MiB
 *                  buffer (measured on loopback: ~1.3x faster than sendfile(2) from a memfd,
 *                  whose pages the receiver still has to copy)
 *   GET /          a tiny body, answered in the accepting process (the latency case)
 *
 * A download gets a child of its own (fork), so a slow client holds up nobody; the tiny
 * answer is written before the next accept. Trusts its clients: a bench, not a server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static char bytes[CHUNK];

/* Reads until the end of the head; 0 and the request target in path, or -1. */
static int read_head(int fd, char path[static 1024])
{
	char buf[4096];
	size_t len = 0;

	while (len < sizeof(buf) - 1) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	return sscanf(buf, "GET %1023s HTTP/1.", path) == 1 ? 0 : -1;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void send_bytes(int fd, unsigned long long total)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
			 "Content-Length: %llu\r\nConnection: close\r\n\r\n",
			 total);

	if (send_all(fd, head, (size_t)n) < 0)
		return;
	while (total > 0) {
		size_t want = total < CHUNK ? (size_t)total : CHUNK;
		ssize_t sent = send(fd, bytes, want, MSG_NOSIGNAL);

		if (sent < 0 && errno == EINTR)
			continue;
		if (sent <= 0)
			return;
		total -= (unsigned long long)sent;
	}
}

static void serve(int lfd, int fd)
{
	static const char tiny[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 3\r\nConnection: close\r\n\r\nok\n";
	char path[1024];
	unsigned long long n;

	if (read_head(fd, path) < 0)
		return;
	if (sscanf(path, "/bytes/%llu", &n) == 1) {
		pid_t pid = fork();

		if (pid == 0) {
			close(lfd);
			send_bytes(fd, n);
			shutdown(fd, SHUT_WR);
			_exit(0);
		}
		return;
	}
	(void)send_all(fd, tiny, sizeof(tiny) - 1);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timeval tv = { 5, 0 };
	int one = 1, lfd;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: egress-server ADDR PORT\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	signal(SIGCHLD, SIG_IGN); /* download children reap themselves */
	memset(bytes, 'x', sizeof(bytes));
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1024) < 0) {
		perror("listen");
		return 1;
	}
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("accept");
			return 1;
		}
		/* a client that connects and says nothing holds the loop up 5 s at most */
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		serve(lfd, fd);
		close(fd);
	}
}
