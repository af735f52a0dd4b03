/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpuburn: a probe the limit tests run inside sandboxes. It spins on THREADS threads until
 * the process has used SECONDS of CPU time (CLOCK_PROCESS_CPUTIME_ID, all threads together),
 * then prints one JSON line on stdout and exits 0:
 *
 *   {"cpu_s":1.002,"wall_s":0.503}
 *
 * Usage: cpuburn SECONDS [THREADS]     (SECONDS 0: until killed; THREADS 1..64, default 1)
 *
 * The spinning is arithmetic in user space; the clock is read only every few milliseconds,
 * so nearly all the time is user time, as with a real busy program.
 *
 * Bounded, in case it runs on the host by mistake: it stops after MAX_WALL_S (300 s) of wall
 * time whatever SECONDS says, and then reports as usual with "capped":true. Exit status 2:
 * bad arguments. Standalone: libc only (threads are in glibc's libc since 2.34).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define MAX_SECONDS 3600.0
#define MAX_WALL_S  300.0

static atomic_bool stop;
/* the spin loop's result is stored here, so the compiler cannot drop the work */
static atomic_ulong sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About a millisecond of work on a current core. */
static void spin(void)
{
	unsigned long x = atomic_load_explicit(&sink, memory_order_relaxed) | 1;

	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	atomic_store_explicit(&sink, x, memory_order_relaxed);
}

static void *burner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		spin();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds, wall0 = clock_s(CLOCK_MONOTONIC), cpu, wall;
	long threads = 1;
	pthread_t tids[MAX_THREADS];
	bool capped = false;
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: cpuburn SECONDS [THREADS]\n");
		return 2;
	}
	errno = 0;
	seconds = strtod(argv[1], &end);
	if (errno != 0 || end == argv[1] || *end != '\0' ||
	    !(seconds >= 0 && seconds <= MAX_SECONDS)) {
		fprintf(stderr, "cpuburn: SECONDS must be 0..%.0f, got '%s'\n", MAX_SECONDS,
			argv[1]);
		return 2;
	}
	if (argc == 3) {
		errno = 0;
		threads = strtol(argv[2], &end, 10);
		if (errno != 0 || end == argv[2] || *end != '\0' || threads < 1 ||
		    threads > MAX_THREADS) {
			fprintf(stderr, "cpuburn: THREADS must be 1..%d, got '%s'\n", MAX_THREADS,
				argv[2]);
			return 2;
		}
	}

	/* the main thread burns too: THREADS - 1 more */
	for (long i = 1; i < threads; i++) {
		int r = pthread_create(&tids[i], NULL, burner, NULL);

		if (r != 0) {
			fprintf(stderr, "cpuburn: pthread_create: %s\n", strerror(r));
			return 1;
		}
	}
	for (;;) {
		spin();
		cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		wall = clock_s(CLOCK_MONOTONIC) - wall0;
		if (seconds > 0 && cpu >= seconds)
			break;
		if (wall >= MAX_WALL_S) {
			capped = true;
			break;
		}
	}
	atomic_store(&stop, true);
	for (long i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	printf("{\"cpu_s\":%.3f,\"wall_s\":%.3f%s}\n", cpu, wall, capped ? ",\"capped\":true" : "");
	return fflush(stdout) == 0 ? 0 : 1;
}
