/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd side by side with bare fork+exec and bubblewrap, interleaved in one run:
 *   bare       fork + exec /bin/true + wait
 *   floor      unshare -Umnpiu -C --fork /bin/true: the kernel's floor for a sandbox
 *   exec       POST /v1/sandboxes/{id}/exec {"argv":["/bin/true"]} in a live sandbox
 *              (one keep-alive connection, the answer read whole)
 *   run        POST /v1/run: create + exec /bin/true + delete in one request
 *   lifecycle  create + exec /bin/true + delete, through the API (three requests)
 *   bwrap      a bubblewrap cold start running /bin/true (when given)
 * Prints p50/p99 and each p50 as a multiple of bare, of the floor and of bwrap.
 *
 *   api SOCKET ROUNDS [BWRAP CMDLINE...]
 *
 * With COLD_SOCKET set (bench/pool.sh): SOCKET is a paddockd with a warm pool, and
 * "lifecycle" is also measured on the paddockd at COLD_SOCKET, which has none ("cold").
 * With SEQUENCE=N: N create + exec + delete in a row, and the p50 of the first and last
 * 200; with CLIENTS=K: K processes doing create + exec + delete for 5 s, and the rate.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timing.h"

static int conn = -1, cold_conn = -1;
static const char *sock_path, *cold_path;
static int *use_conn = &conn;		   /* the connection request() uses */
static const char **use_path = &sock_path; /* and its socket */

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/* One request on the keep-alive connection; the body into buf (NUL-terminated). */
static int request(const char *method, const char *path, const char *body, char *buf, size_t size)
{
	char req[1024], head[8192];
	size_t have = 0, blen = body ? strlen(body) : 0;
	long clen = -1;
	int status = 0;
	char *end;

	if (*use_conn < 0)
		*use_conn = dial(*use_path);
	int fd = *use_conn;
	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n%s",
		 method, path, blen, body ? body : "");
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		perror("write");
		exit(1);
	}
	for (;;) {
		ssize_t n = read(fd, head + have, sizeof(head) - 1 - have);
		if (n <= 0) {
			fprintf(stderr, "read: connection closed\n");
			exit(1);
		}
		have += (size_t)n;
		head[have] = '\0';
		if ((end = strstr(head, "\r\n\r\n")))
			break;
	}
	sscanf(head, "HTTP/1.1 %d", &status);
	char *cl = strcasestr(head, "Content-Length:");
	if (cl && cl < end)
		clen = strtol(cl + 15, NULL, 10);
	if (status == 204)
		clen = 0;
	size_t got = have - (size_t)(end + 4 - head);
	if (clen < 0 || (size_t)clen >= size) {
		fprintf(stderr, "unexpected answer: %.200s\n", head);
		exit(1);
	}
	memcpy(buf, end + 4, got);
	while (got < (size_t)clen) {
		ssize_t n = read(fd, buf + got, (size_t)clen - got);
		if (n <= 0) {
			fprintf(stderr, "read body: closed\n");
			exit(1);
		}
		got += (size_t)n;
	}
	buf[clen] = '\0';
	return status;
}

static char *create(char *buf, size_t size)
{
	static char id[64];
	char *p;

	if (request("POST", "/v1/sandboxes", "{\"ttl_s\":3600}", buf, size) != 201 ||
	    !(p = strstr(buf, "\"id\":\""))) {
		fprintf(stderr, "create failed: %.300s\n", buf);
		exit(1);
	}
	snprintf(id, sizeof(id), "%.15s", p + 6);
	return id;
}

static double run_bare(char **argv)
{
	double t0 = bench_now();
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s failed\n", argv[0]);
		exit(1);
	}
	return bench_now() - t0;
}

static double run_exec(const char *id, char *buf, size_t size)
{
	char path[128];
	double t0 = bench_now();

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	if (request("POST", path, "{\"argv\":[\"/bin/true\"]}", buf, size) != 200 ||
	    !strstr(buf, "\"exit_code\":0")) {
		fprintf(stderr, "exec failed: %.300s\n", buf);
		exit(1);
	}
	return bench_now() - t0;
}

static double run_lifecycle(char *buf, size_t size)
{
	char path[128];
	double t0 = bench_now();
	char *id = create(buf, size);

	run_exec(id, buf, size);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	if (request("DELETE", path, NULL, buf, size) != 204) {
		fprintf(stderr, "delete failed\n");
		exit(1);
	}
	return bench_now() - t0;
}

/* the lifecycle on the paddockd without a pool */
static double run_cold(char *buf, size_t size)
{
	double t;

	use_conn = &cold_conn;
	use_path = &cold_path;
	t = run_lifecycle(buf, size);
	use_conn = &conn;
	use_path = &sock_path;
	return t;
}

static double p50_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
	return v[n / 2];
}

/* N lifecycles in a row: do the last 200 start as fast as the first 200? */
static void sequence(int n, char *buf, size_t size)
{
	double *v = calloc((size_t)n, sizeof(double));

	for (int i = 0; i < n; i++)
		v[i] = run_lifecycle(buf, size);
	printf("sequence of %d: p50 of the first 200 %.3f ms, of the last 200 %.3f ms\n", n,
	       p50_of(v, 200) * 1e3, p50_of(v + n - 200, 200) * 1e3);
	free(v);
}

/* K clients, each its own connection, for `secs` seconds: lifecycles per second */
static void clients(int k, double secs, char *buf, size_t size)
{
	int pipes[64][2];
	long total = 0;

	for (int c = 0; c < k; c++) {
		if (pipe(pipes[c]) < 0)
			exit(1);
		if (fork() == 0) {
			long done = 0;
			double end = bench_now() + secs;

			conn = -1;
			while (bench_now() < end) {
				run_lifecycle(buf, size);
				done++;
			}
			if (write(pipes[c][1], &done, sizeof(done)) != sizeof(done))
				_exit(1);
			_exit(0);
		}
		close(pipes[c][1]);
	}
	for (int c = 0; c < k; c++) {
		long done = 0;

		if (read(pipes[c][0], &done, sizeof(done)) == sizeof(done))
			total += done;
		close(pipes[c][0]);
		wait(NULL);
	}
	printf("%d client%s: %.1f create+exec+delete per second\n", k, k == 1 ? "" : "s",
	       (double)total / secs);
}

/* POST /v1/run: the one-request create + exec + delete */
static double run_run(char *buf, size_t size)
{
	double t0 = bench_now();

	if (request("POST", "/v1/run", "{\"exec\":{\"argv\":[\"/bin/true\"]}}", buf, size) != 200 ||
	    !strstr(buf, "\"exit_code\":0")) {
		fprintf(stderr, "run failed: %.300s\n", buf);
		exit(1);
	}
	return bench_now() - t0;
}

enum { C_BARE, C_FLOOR, C_EXEC, C_RUN, C_LIFECYCLE, C_BWRAP, C_COLD, C_MAX };

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	static char *bare[] = { "/bin/true", NULL };
	/* the kernel's floor: the namespaces and one process in them, nothing else */
	static char *floor_cmd[] = { "unshare", "-Umnpiu", "-C", "--fork", "/bin/true", NULL };
	static const char *const names[C_MAX] = { "bare",      "floor", "exec", "run",
						  "lifecycle", "bwrap", "cold" };
	bool on[C_MAX] = { true, true, true, true, true, false, false };
	int rounds, cases[C_MAX], n = 0;
	double *s[C_MAX];
	char *id, path[128];

	if (argc < 3) {
		fprintf(stderr, "usage: api SOCKET ROUNDS [BWRAP CMDLINE...]\n");
		return 2;
	}
	sock_path = argv[1];
	rounds = atoi(argv[2]);
	cold_path = getenv("COLD_SOCKET");
	if (getenv("SEQUENCE")) {
		sequence(atoi(getenv("SEQUENCE")), buf, sizeof(buf));
		return 0;
	}
	if (getenv("CLIENTS")) {
		clients(atoi(getenv("CLIENTS")), 5.0, buf, sizeof(buf));
		return 0;
	}
	on[C_BWRAP] = argc > 3;
	on[C_COLD] = cold_path != NULL;
	for (int i = 0; i < C_MAX; i++)
		if (on[i]) {
			cases[n++] = i;
			s[i] = calloc((size_t)rounds, sizeof(double));
		}
	id = strdup(create(buf, sizeof(buf)));
	for (int w = 0; w < 10; w++) {
		run_bare(bare);
		run_exec(id, buf, sizeof(buf));
	}
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < n; j++) {
			int k = cases[(r + j) % n];
			s[k][r] = k == C_BARE	     ? run_bare(bare)
				  : k == C_FLOOR     ? run_bare(floor_cmd)
				  : k == C_EXEC	     ? run_exec(id, buf, sizeof(buf))
				  : k == C_RUN	     ? run_run(buf, sizeof(buf))
				  : k == C_LIFECYCLE ? run_lifecycle(buf, sizeof(buf))
				  : k == C_BWRAP     ? run_bare(argv + 3)
						     : run_cold(buf, sizeof(buf));
		}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	request("DELETE", path, NULL, buf, sizeof(buf));
	double p50[C_MAX];
	for (int j = 0; j < n; j++) {
		int i = cases[j];

		qsort(s[i], (size_t)rounds, sizeof(double), bench_cmp_double);
		p50[i] = s[i][rounds / 2] * 1e3;
	}
	printf("%-10s %10s %10s %8s %8s %8s\n", "what", "p50 ms", "p99 ms", "x bare", "x floor",
	       on[C_BWRAP] ? "x bwrap" : "");
	for (int j = 0; j < n; j++) {
		int i = cases[j];

		printf("%-10s %10.3f %10.3f %8.2f %8.2f", names[i], p50[i],
		       s[i][(rounds * 99) / 100] * 1e3, p50[i] / p50[C_BARE],
		       p50[i] / p50[C_FLOOR]);
		if (on[C_BWRAP])
			printf(" %8.2f", p50[i] / p50[C_BWRAP]);
		printf("\n");
	}
	return 0;
}
