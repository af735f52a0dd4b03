/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memhog: a probe the limit tests run inside sandboxes. It allocates memory in steps and
 * writes to every page, so the memory is really charged (resident), not only reserved:
 *
 *   memhog MIB [STEP_MIB] [--hold]      (STEP_MIB defaults to 16)
 *
 * Progress goes to stderr, one line per step ("memhog: 48 MiB"), so a test can tell how far
 * it got even when the OOM killer ends it. The result is one JSON line on stdout:
 *
 *   {"allocated_mib":256}                      reached MIB: exit 0 (or, with --hold, sleep
 *                                              60 s first, holding the memory)
 *   {"allocated_mib":240,"error":"ENOMEM"}     malloc failed (RLIMIT_DATA): exit 3
 *
 * Exit status 2: bad arguments. Under a cgroup memory limit the kernel kills it with SIGKILL
 * instead, and it prints nothing on stdout.
 *
 * Bounded, in case it runs on the host by mistake: MIB is at most 4096 and --hold lasts 60 s.
 * Nothing on the result path allocates (the line is formatted on the stack and written with
 * write()), so it still reports when the heap is exhausted. Standalone: libc only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_MIB	    4096L
#define DEFAULT_MIB 16L
#define HOLD_S	    60
#define MIB	    (1024L * 1024L)

/* Every block stays reachable until exit, so no store to it is dead. */
static char *blocks[MAX_MIB];

static void put(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

__attribute__((format(printf, 2, 3))) static void say(int fd, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);

	if (n > 0)
		put(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static bool parse_mib(const char *s, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > max)
		return false;
	*ret = v;
	return true;
}

static void hold(void)
{
	struct timespec left = { .tv_sec = HOLD_S, .tv_nsec = 0 };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	long want = 0, step = DEFAULT_MIB, done = 0, page = sysconf(_SC_PAGESIZE);
	int npos = 0, nblocks = 0;
	bool arg_hold = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--hold") == 0) {
			arg_hold = true;
		} else if (npos == 0 && parse_mib(argv[i], MAX_MIB, &want)) {
			npos++;
		} else if (npos == 1 && parse_mib(argv[i], MAX_MIB, &step)) {
			npos++;
		} else {
			fprintf(stderr,
				"usage: memhog MIB [STEP_MIB] [--hold]   (1 <= MIB <= %ld)\n",
				MAX_MIB);
			return 2;
		}
	}
	if (npos == 0) {
		fprintf(stderr, "usage: memhog MIB [STEP_MIB] [--hold]\n");
		return 2;
	}
	if (page <= 0)
		page = 4096;

	while (done < want) {
		long n = want - done < step ? want - done : step;
		char *p = malloc((size_t)(n * MIB));

		if (!p) {
			say(STDOUT_FILENO, "{\"allocated_mib\":%ld,\"error\":\"ENOMEM\"}\n", done);
			return 3;
		}
		/* one write per page makes it resident; the value is arbitrary but not zero */
		for (long off = 0; off < n * MIB; off += page)
			((volatile char *)p)[off] = (char)0xa5;
		blocks[nblocks++] = p;
		done += n;
		say(STDERR_FILENO, "memhog: %ld MiB\n", done);
	}
	say(STDOUT_FILENO, "{\"allocated_mib\":%ld}\n", done);
	if (arg_hold)
		hold();
	return 0;
}
