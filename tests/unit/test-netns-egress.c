/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transparent egress redirection, tested for real. Each test forks a child that unshares a
 * user and a network namespace (no privilege needed, and nothing can leave: the new netns
 * has only lo), brings lo up and calls pd_netns_egress_setup() as init does, then connects
 * and sends to public addresses and checks where that arrives. The child stops at its
 * first failed check and writes it to a pipe; the parent asserts on the exit status and
 * shows that text.
 *
 * Without user namespaces the tests skip, unless PADDOCK_TEST_MUST_WORK=1.
 */
/* <net/if.h> before the uapi headers, which then leave struct ifreq and IFF_* to it */
#include <net/if.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "egress-ports.h"
#include "netns-egress.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define CHILD_SKIP   77
#define WAIT_MS	     2000
#define PUBLIC4	     "93.184.216.34"
#define PUBLIC6	     "2606:2800:220:1::1"
#define DNS4	     "8.8.8.8"
#define DNS6	     "2001:4860:4860::8888"
#define SERVICE_PORT 18080 /* a sandbox's own service on loopback */

static bool must_work(void)
{
	const char *v = secure_getenv("PADDOCK_TEST_MUST_WORK");

	return v && strcmp(v, "1") == 0;
}

/* ---- in the child ---------------------------------------------------------------------- */

static int report_fd = -1;

/* Writes "line N: what" to the parent and exits with `status`; never returns. */
__attribute__((format(printf, 3, 4))) _Noreturn static void child_exit(int status, int line,
								       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	int n = snprintf(msg, sizeof(msg), "line %d: ", line);
	va_start(ap, fmt);
	(void)vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	(void)pd_write_all(report_fd, msg, strlen(msg)); /* the parent reads to EOF */
	_exit(status);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		int e_ = errno;                                                                    \
		if (!(cond))                                                                       \
			child_exit(1, __LINE__, "failed: %s (errno %d %s)", #cond, e_,             \
				   strerror(e_));                                                  \
	} while (0)

/* Fails unless `call` returned -1 with errno `want`. */
#define CHECK_ERRNO(call, want)                                                                    \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = (long)(call);                                                            \
		int e_ = errno;                                                                    \
		if (r_ != -1 || e_ != (want))                                                      \
			child_exit(1, __LINE__, "%s: got %ld errno %d %s, want -1 %s", #call, r_,  \
				   e_, strerror(e_), strerror(want));                              \
	} while (0)

static void write_file(const char *path, const char *text)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
}

/* New user and net namespaces, mapping our ids to 0 as the sandbox's do, and lo up. */
static void enter_netns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
		int e = errno;
		if (e == EPERM || e == EINVAL || e == ENOSPC || e == EUSERS)
			child_exit(CHILD_SKIP, __LINE__, "unshare: %s", strerror(e));
		child_exit(1, __LINE__, "unshare: %s", strerror(e));
	}
	write_file("/proc/self/setgroups", "deny");
	(void)snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	(void)snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	write_file("/proc/self/gid_map", map);

	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	CHECK(s >= 0);
	(void)snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
}

static void setup_transparent(void)
{
	paddock_error err = { 0 };
	int r = pd_netns_egress_setup(true, &err);

	if (r < 0)
		child_exit(1, __LINE__, "pd_netns_egress_setup(true): %d %s", r, err.msg);
	CHECK(err.code == 0);
}

static socklen_t make_addr(const char *ip, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		CHECK(inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	CHECK(inet_pton(AF_INET, ip, &s4->sin_addr) == 1);
	return sizeof(*s4);
}

static int bound(int type, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(ip, port, &ss);
	int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&ss, len) == 0);
	if (type == SOCK_STREAM)
		CHECK(listen(fd, 8) == 0);
	return fd;
}

static int connect_to(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(ip, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = WAIT_MS / 1000 };

	CHECK(fd >= 0);
	/* a SYN nobody answers ends as EINPROGRESS, not as the child's alarm */
	CHECK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;
		(void)close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, ms);

	CHECK(n >= 0);
	return n == 1;
}

static int accept_one(int listener)
{
	CHECK(readable(listener, WAIT_MS));
	int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	CHECK(fd >= 0);
	return fd;
}

/* Both directions carry data: replies come back to the client's source address. */
static void exchange(int client, int server)
{
	char buf[8] = { 0 };

	CHECK(write(client, "ping", 4) == 4);
	CHECK(readable(server, WAIT_MS));
	CHECK(read(server, buf, sizeof(buf)) == 4 && memcmp(buf, "ping", 4) == 0);
	CHECK(write(server, "pong", 4) == 4);
	CHECK(readable(client, WAIT_MS));
	CHECK(read(client, buf, sizeof(buf)) == 4 && memcmp(buf, "pong", 4) == 0);
}

static void tcp_v4_redirected(void)
{
	_cleanup_close_ int l = bound(SOCK_STREAM, "127.0.0.1", PD_EGRESS_TRANSPARENT_PORT);
	_cleanup_close_ int c = connect_to(PUBLIC4, 443);
	CHECK(c >= 0);
	_cleanup_close_ int a = accept_one(l);

	struct sockaddr_in dst = { 0 }, src = { 0 };
	socklen_t len = sizeof(dst);
	char ip[INET_ADDRSTRLEN];
	CHECK(getsockopt(a, SOL_IP, SO_ORIGINAL_DST, &dst, &len) == 0);
	CHECK(inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof(ip)));
	if (strcmp(ip, PUBLIC4) != 0 || ntohs(dst.sin_port) != 443)
		child_exit(1, __LINE__, "SO_ORIGINAL_DST %s:%u, want " PUBLIC4 ":443", ip,
			   ntohs(dst.sin_port));
	len = sizeof(src);
	CHECK(getsockname(c, (struct sockaddr *)&src, &len) == 0);
	CHECK(src.sin_addr.s_addr == htonl(INADDR_LOOPBACK)); /* the route's src */
	exchange(c, a);
}

static void tcp_v6_redirected(void)
{
	_cleanup_close_ int l = bound(SOCK_STREAM, "::1", PD_EGRESS_TRANSPARENT_PORT);
	_cleanup_close_ int c = connect_to(PUBLIC6, 443);
	CHECK(c >= 0);
	_cleanup_close_ int a = accept_one(l);

	struct sockaddr_in6 dst = { 0 }, src = { 0 };
	socklen_t len = sizeof(dst);
	char ip[INET6_ADDRSTRLEN];
	CHECK(getsockopt(a, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) == 0);
	CHECK(inet_ntop(AF_INET6, &dst.sin6_addr, ip, sizeof(ip)));
	if (strcmp(ip, PUBLIC6) != 0 || ntohs(dst.sin6_port) != 443)
		child_exit(1, __LINE__, "IP6T_SO_ORIGINAL_DST [%s]:%u, want [" PUBLIC6 "]:443", ip,
			   ntohs(dst.sin6_port));
	len = sizeof(src);
	CHECK(getsockname(c, (struct sockaddr *)&src, &len) == 0);
	CHECK(IN6_IS_ADDR_LOOPBACK(&src.sin6_addr));
	exchange(c, a);
}

static void loopback_untouched(void)
{
	_cleanup_close_ int t4 = bound(SOCK_STREAM, "127.0.0.1", PD_EGRESS_TRANSPARENT_PORT);
	_cleanup_close_ int t6 = bound(SOCK_STREAM, "::1", PD_EGRESS_TRANSPARENT_PORT);
	_cleanup_close_ int s4 = bound(SOCK_STREAM, "127.0.0.1", SERVICE_PORT);
	_cleanup_close_ int s6 = bound(SOCK_STREAM, "::1", SERVICE_PORT);

	_cleanup_close_ int c4 = connect_to("127.0.0.1", SERVICE_PORT);
	CHECK(c4 >= 0);
	_cleanup_close_ int a4 = accept_one(s4);
	exchange(c4, a4);
	_cleanup_close_ int c6 = connect_to("::1", SERVICE_PORT);
	CHECK(c6 >= 0);
	_cleanup_close_ int a6 = accept_one(s6);
	exchange(c6, a6);
	/* no listener: refused, not redirected; 127.0.0.2 is loopback too, not "public" */
	CHECK_ERRNO(connect_to("127.0.0.1", SERVICE_PORT + 1), ECONNREFUSED);
	CHECK_ERRNO(connect_to("127.0.0.2", SERVICE_PORT), ECONNREFUSED);
	CHECK_ERRNO(connect_to("::1", SERVICE_PORT + 1), ECONNREFUSED);
	CHECK(!readable(t4, 0));
	CHECK(!readable(t6, 0));
}

static void send_to(int fd, const char *ip, uint16_t port, const char *text)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(ip, port, &ss);

	if (sendto(fd, text, strlen(text), 0, (struct sockaddr *)&ss, len) != (ssize_t)strlen(text))
		child_exit(1, __LINE__, "sendto %s port %u: %s", ip, port, strerror(errno));
}

static void expect_datagram(int fd, const char *want)
{
	char buf[64] = { 0 };

	if (!readable(fd, WAIT_MS))
		child_exit(1, __LINE__, "datagram '%s' did not arrive", want);
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	CHECK(n >= 0);
	if (strcmp(buf, want) != 0)
		child_exit(1, __LINE__, "got datagram '%s', want '%s'", buf, want);
}

static void udp_redirected(void)
{
	_cleanup_close_ int dns = bound(SOCK_DGRAM, "127.0.0.1", PD_EGRESS_DNS_PORT);
	_cleanup_close_ int sink4 = bound(SOCK_DGRAM, "127.0.0.1", PD_EGRESS_UDP_SINK_PORT);
	_cleanup_close_ int sink6 = bound(SOCK_DGRAM, "::1", PD_EGRESS_UDP_SINK_PORT);
	_cleanup_close_ int u4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	_cleanup_close_ int u6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(u4 >= 0 && u6 >= 0);

	send_to(u4, DNS4, 53, "dns4");
	expect_datagram(dns, "dns4");
	send_to(u4, DNS4, 9999, "udp4");
	expect_datagram(sink4, "udp4");
	/* IPv6 DNS goes to the sink: the DNS filter listens on IPv4 only */
	send_to(u6, DNS6, 53, "dns6");
	expect_datagram(sink6, "dns6");
	send_to(u6, DNS6, 9999, "udp6");
	expect_datagram(sink6, "udp6");
	CHECK(!readable(dns, 0));
	CHECK(!readable(sink4, 0));
	CHECK(!readable(sink6, 0));
}

static uint16_t inet_checksum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* A raw socket of `proto` (we hold CAP_NET_RAW in the netns) sends `len` bytes to ip. */
static ssize_t raw_send(int family, int proto, const char *ip, const void *data, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = make_addr(ip, 0, &ss);
	_cleanup_close_ int fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, proto);

	CHECK(fd >= 0);
	return sendto(fd, data, len, 0, (struct sockaddr *)&ss, sl);
}

static void others_dropped(void)
{
	struct icmphdr echo = { .type = ICMP_ECHO, .un.echo.id = htons(7) };
	echo.checksum = inet_checksum(&echo, sizeof(echo));
	/* ICMPv6 echo request; the kernel fills in the checksum of a raw ICMPv6 socket */
	const uint8_t echo6[8] = { 128, 0, 0, 0, 0, 7, 0, 1 };

	CHECK(raw_send(AF_INET, IPPROTO_ICMP, "127.0.0.1", &echo, sizeof(echo)) ==
	      (ssize_t)sizeof(echo));
	CHECK_ERRNO(raw_send(AF_INET, IPPROTO_ICMP, DNS4, &echo, sizeof(echo)), EPERM);
	CHECK(raw_send(AF_INET6, IPPROTO_ICMPV6, "::1", echo6, sizeof(echo6)) ==
	      (ssize_t)sizeof(echo6));
	CHECK_ERRNO(raw_send(AF_INET6, IPPROTO_ICMPV6, DNS6, echo6, sizeof(echo6)), EPERM);
	/* any other protocol: 253 is reserved for experiments (RFC 3692) */
	CHECK(raw_send(AF_INET, 253, "127.0.0.1", "x", 1) == 1);
	CHECK_ERRNO(raw_send(AF_INET, 253, DNS4, "x", 1), EPERM);
	CHECK_ERRNO(raw_send(AF_INET6, 253, DNS6, "x", 1), EPERM);

	/* UDP-Lite is not UDP: to port 53 it is dropped, not sent to the DNS filter */
	_cleanup_close_ int lite = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDPLITE);
	if (lite >= 0) {
		struct sockaddr_storage ss;
		socklen_t sl = make_addr(DNS4, 53, &ss);
		CHECK_ERRNO(sendto(lite, "x", 1, 0, (struct sockaddr *)&ss, sl), EPERM);
	}
}

static void not_transparent(void)
{
	paddock_error err = { 0 };

	CHECK(pd_netns_egress_setup(false, &err) == 0);
	CHECK(err.code == 0);
	CHECK_ERRNO(connect_to(PUBLIC4, 443), ENETUNREACH);
	CHECK_ERRNO(connect_to(PUBLIC6, 443), ENETUNREACH);
	_cleanup_close_ int u4 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t sl = make_addr(DNS4, 53, &ss);
	CHECK(u4 >= 0);
	CHECK_ERRNO(sendto(u4, "x", 1, 0, (struct sockaddr *)&ss, sl), ENETUNREACH);
}

static void setup_twice(void)
{
	paddock_error err = { 0 };

	int r = pd_netns_egress_setup(true, &err);
	if (r != -EEXIST || err.code != EEXIST || !strstr(err.msg, "add route"))
		child_exit(1, __LINE__, "second setup: %d code %d '%s', want -EEXIST 'add route'",
			   r, err.code, err.msg);
	/* the first setup's redirect still stands */
	tcp_v4_redirected();
}

/* ---- in the parent --------------------------------------------------------------------- */

/* Runs `fn` in a child in fresh namespaces, after transparent setup if asked. */
static void run_in_netns(void (*fn)(void), bool transparent)
{
	char msg[600] = { 0 };
	int p[2], status;

	assert_return_code(pipe2(p, O_CLOEXEC), errno);
	(void)fflush(NULL); /* the child must not write our buffered output again */
	pid_t pid = fork();
	assert_return_code(pid, errno);
	if (pid == 0) {
		(void)close(p[0]);
		report_fd = p[1];
		alarm(30); /* a hang fails the test instead of stalling it */
		enter_netns();
		if (transparent)
			setup_transparent();
		fn();
		exit(0); /* not _exit(): the leak checker of a sanitizer build runs at exit */
	}
	(void)close(p[1]);
	ssize_t n = pd_read_full(p[0], msg, sizeof(msg) - 1);
	(void)close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (n > 0)
		msg[n] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_SKIP) {
		if (must_work())
			fail_msg("no user namespace (%s) and PADDOCK_TEST_MUST_WORK=1", msg);
		print_message("skipping: %s\n", msg);
		skip();
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child %s %d: %s", WIFEXITED(status) ? "exited" : "killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), msg);
}

static void test_tcp_v4_redirected(void **state)
{
	(void)state;
	run_in_netns(tcp_v4_redirected, true);
}

static void test_tcp_v6_redirected(void **state)
{
	(void)state;
	run_in_netns(tcp_v6_redirected, true);
}

static void test_loopback_untouched(void **state)
{
	(void)state;
	run_in_netns(loopback_untouched, true);
}

static void test_udp_redirected(void **state)
{
	(void)state;
	run_in_netns(udp_redirected, true);
}

static void test_others_dropped(void **state)
{
	(void)state;
	run_in_netns(others_dropped, true);
}

static void test_not_transparent(void **state)
{
	(void)state;
	run_in_netns(not_transparent, false);
}

static void test_setup_twice(void **state)
{
	(void)state;
	run_in_netns(setup_twice, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_v4_redirected),  cmocka_unit_test(test_tcp_v6_redirected),
		cmocka_unit_test(test_loopback_untouched), cmocka_unit_test(test_udp_redirected),
		cmocka_unit_test(test_others_dropped),	   cmocka_unit_test(test_not_transparent),
		cmocka_unit_test(test_setup_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
