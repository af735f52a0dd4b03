/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sustained use: runs one command RUNS times in a row (fork, exec, wait; nothing else in
 * between), times each run, and compares the first WINDOW runs with the last WINDOW: a
 * p50 that grows over the runs means something piles up (cgroups, mounts, ids, fds).
 *
 *   churn RUNS WINDOW CMD [ARG...]
 *
 * Prints a table: p50/p90 of the first and last windows and their ratio, and failures (runs
 * that did not exit 0) in each window and in all. Progress goes to stderr every 10% of the
 * runs. Exit status 1 when any run failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

/* Runs argv once; returns its wall time and counts a failure when it did not exit 0. */
static double run_once(char **argv, int *failures)
{
	double t0 = bench_now();
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		(*failures)++;
	return bench_now() - t0;
}

/* p50 and p90 of n samples, in ms; sorts a copy */
static void percentiles(const double *s, int n, double *p50, double *p90)
{
	double *c = calloc((size_t)n, sizeof(*c));

	if (!c) {
		perror("calloc");
		exit(1);
	}
	memcpy(c, s, (size_t)n * sizeof(*c));
	qsort(c, (size_t)n, sizeof(*c), bench_cmp_double);
	*p50 = c[n / 2] * 1e3;
	*p90 = c[(n * 9) / 10] * 1e3;
	free(c);
}

int main(int argc, char **argv)
{
	int runs, window, fail_first = 0, fail_last = 0, fail_mid = 0;
	double *samples, f50, f90, l50, l90, t0;
	char first[32], last[32];

	if (argc < 4 || (runs = atoi(argv[1])) < 2 || (window = atoi(argv[2])) < 1) {
		fprintf(stderr,
			"usage: churn RUNS WINDOW CMD [ARG...]   (RUNS >= 2, WINDOW >= 1)\n");
		return 2;
	}
	if (window > runs / 2)
		window = runs / 2;
	samples = calloc((size_t)runs, sizeof(*samples));
	if (!samples) {
		perror("calloc");
		return 1;
	}
	t0 = bench_now();
	for (int i = 0; i < runs; i++) {
		int *failures = &fail_mid;

		if (i < window)
			failures = &fail_first;
		else if (i >= runs - window)
			failures = &fail_last;
		samples[i] = run_once(argv + 3, failures);
		if (i == 4 && fail_first == 5) {
			fprintf(stderr, "churn: the first 5 runs failed; stopping\n");
			return 1;
		}
		if (runs >= 10 && (i + 1) % (runs / 10) == 0)
			fprintf(stderr, "churn: %d/%d runs, %.1f s\n", i + 1, runs,
				bench_now() - t0);
	}
	percentiles(samples, window, &f50, &f90);
	percentiles(samples + runs - window, window, &l50, &l90);
	snprintf(first, sizeof(first), "first %d", window);
	snprintf(last, sizeof(last), "last %d", window);
	printf("%-20s %10s %10s %10s\n", "runs", "p50 ms", "p90 ms", "failures");
	printf("%-20s %10.3f %10.3f %10d\n", first, f50, f90, fail_first);
	printf("%-20s %10.3f %10.3f %10d\n", last, l50, l90, fail_last);
	printf("%-20s %10.2f %10.2f %10s\n", "last / first", l50 / f50, l90 / f90, "-");
	printf("# %d runs in %.1f s, %d failed\n", runs, bench_now() - t0,
	       fail_first + fail_mid + fail_last);
	free(samples);
	return fail_first + fail_mid + fail_last ? 1 : 0;
}
