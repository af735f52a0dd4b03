/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause and resume latency (bench/pause.sh): a sandbox with N busy processes, paused and
 * resumed ROUNDS times through libpaddock; beside it the kernel's own floor, the same write
 * to a bare freezer cgroup (v1 freezer.state, or v2 cgroup.freeze) holding as many busy
 * processes and nothing else. Prints one JSON line.
 *
 *   pause ROUNDS PROCS [FREEZER_DIR]
 *
 * FREEZER_DIR: an empty cgroup directory this program may use for the floor (made by the
 * script; skipped when absent or rootless).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "timing.h"

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
	return v[(int)((n - 1) * p)];
}

static void on_exit_cb(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	(void)ex;
	(void)res;
	(void)userdata;
}

static int write_file(const char *dir, const char *file, const char *value)
{
	char path[512];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, value, strlen(value)) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* Waits until `file` in dir starts with `want` (freezing is asynchronous). */
static void wait_for(const char *dir, const char *file, const char *want)
{
	char path[512], buf[256];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (strstr(buf, want))
			return;
		usleep(50);
	}
}

/* The floor: freeze and thaw a bare cgroup holding `procs` busy children. */
static int floor_rounds(const char *dir, int rounds, int procs, double *pause_s, double *resume_s)
{
	bool v2 = access(strcat(strcpy((char[512]){ 0 }, dir), "/cgroup.freeze"), F_OK) == 0;
	pid_t kids[64];
	char pid[24];

	for (int i = 0; i < procs; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			for (;;)
				;
		snprintf(pid, sizeof(pid), "%d", (int)kids[i]);
		if (write_file(dir, "cgroup.procs", pid) < 0)
			return -1;
	}
	for (int i = 0; i < rounds; i++) {
		double t0 = bench_now();

		write_file(dir, v2 ? "cgroup.freeze" : "freezer.state", v2 ? "1" : "FROZEN");
		wait_for(dir, v2 ? "cgroup.events" : "freezer.state", v2 ? "frozen 1" : "FROZEN");
		pause_s[i] = bench_now() - t0;
		t0 = bench_now();
		write_file(dir, v2 ? "cgroup.freeze" : "freezer.state", v2 ? "0" : "THAWED");
		wait_for(dir, v2 ? "cgroup.events" : "freezer.state", v2 ? "frozen 0" : "THAWED");
		resume_s[i] = bench_now() - t0;
	}
	for (int i = 0; i < procs; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200, procs = argc > 2 ? atoi(argv[2]) : 4;
	const char *floor_dir = argc > 3 ? argv[3] : NULL;
	const char *spin[] = { "sh", "-c", "while :; do :; done", NULL };
	struct event_base *base = event_base_new();
	double *p = calloc((size_t)rounds, sizeof(double)),
	       *r = calloc((size_t)rounds, sizeof(double));
	double *fp = calloc((size_t)rounds, sizeof(double)),
	       *fr = calloc((size_t)rounds, sizeof(double));
	paddock_ctx *ctx = NULL;
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	paddock_error err = { 0 };
	bool have_floor = false;

	if (rounds < 1 || procs < 1 || procs > 64 || !p || !r || !fp || !fr) {
		fprintf(stderr, "usage: pause ROUNDS PROCS(1-64) [FREEZER_DIR]\n");
		return 2;
	}
	if (paddock_ctx_new(base, &ctx, &err) < 0 || paddock_spec_new(&spec, &err) < 0 ||
	    paddock_sandbox_create(ctx, spec, &sb, &err) < 0) {
		fprintf(stderr, "pause: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < procs; i++) {
		struct paddock_exec_opts o = { .argv = spin,
					       .fds = { -1, -1, -1 },
					       .timeout_s = -1 };

		if (paddock_exec_start(sb, &o, on_exit_cb, NULL, NULL, &err) < 0) {
			fprintf(stderr, "pause: exec: %s\n", err.msg);
			return 1;
		}
	}
	for (int i = 0; i < rounds; i++) {
		double t0 = bench_now();

		if (paddock_sandbox_pause(sb, &err) < 0) {
			fprintf(stderr, "pause: %s\n", err.msg);
			return 1;
		}
		p[i] = bench_now() - t0;
		t0 = bench_now();
		if (paddock_sandbox_resume(sb, &err) < 0) {
			fprintf(stderr, "resume: %s\n", err.msg);
			return 1;
		}
		r[i] = bench_now() - t0;
	}
	paddock_sandbox_free(sb);
	if (floor_dir && floor_rounds(floor_dir, rounds, procs, fp, fr) == 0)
		have_floor = true;
	printf("{\"rounds\":%d,\"procs\":%d,\"pause_p50_ms\":%.3f,\"pause_p99_ms\":%.3f,"
	       "\"resume_p50_ms\":%.3f,\"resume_p99_ms\":%.3f",
	       rounds, procs, pct(p, rounds, .5) * 1e3, pct(p, rounds, .99) * 1e3,
	       pct(r, rounds, .5) * 1e3, pct(r, rounds, .99) * 1e3);
	if (have_floor)
		printf(",\"floor_pause_p50_ms\":%.3f,\"floor_resume_p50_ms\":%.3f",
		       pct(fp, rounds, .5) * 1e3, pct(fr, rounds, .5) * 1e3);
	printf("}\n");
	paddock_spec_free(spec);
	paddock_ctx_free(ctx);
	event_base_free(base);
	return 0;
}
