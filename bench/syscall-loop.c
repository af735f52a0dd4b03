/* SPDX-License-Identifier: Apache-2.0 */
/*
 * syscall-loop: the cost of one system call where it runs, for bench/seccomp.sh.
 *   syscall-loop allowed N   N x getppid(): the path every allowed call takes
 *   syscall-loop denied N    N x mount() with arguments the kernel would refuse anyway
 * Prints one line: {"what":"allowed","calls":N,"ns_per_call":X}. Harmless anywhere: the
 * mount call names a path below /dev/null, which can never exist.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n;
	double t0, t1;
	int denied;

	if (argc != 3 || (strcmp(argv[1], "allowed") && strcmp(argv[1], "denied"))) {
		fprintf(stderr, "usage: syscall-loop allowed|denied N\n");
		return 2;
	}
	denied = !strcmp(argv[1], "denied");
	n = strtol(argv[2], NULL, 10);
	if (n <= 0)
		return 2;
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (denied)
			(void)syscall(SYS_mount, NULL, "/dev/null/paddock-bench", NULL, 0, NULL);
		else
			(void)syscall(SYS_getppid);
	}
	t1 = now_ns();
	printf("{\"what\":\"%s\",\"calls\":%ld,\"ns_per_call\":%.1f}\n", argv[1], n,
	       (t1 - t0) / (double)n);
	return 0;
}
