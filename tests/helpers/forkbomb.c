/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forkbomb: a probe the limit tests run inside sandboxes. It forks children that do nothing
 * but wait, until one of these stops it:
 *   - it has MAX_CHILDREN (10000) children,
 *   - MAX_SECONDS (10 s) have passed,
 *   - fork() has failed MAX_FAILS (100) times in a row (the pids limit is doing its job).
 * Then it prints one JSON line on stdout, kills and reaps every child, and exits 0:
 *
 *   {"forked":61,"fork_errors":100,"errno":"EAGAIN"}     (errno: the last failure, or null)
 *
 * Usage: forkbomb   (no arguments)
 *
 * SECURITY: it must stay harmless if it runs on the host by mistake, or in a sandbox whose
 * pids limit is not in force. The hard stops above bound it, and every child ends on its own:
 * it dies with its parent (PR_SET_PDEATHSIG) and, failing that, of an alarm after
 * CHILD_LIFE_S seconds, whatever happens to the parent. Children never fork. Standalone:
 * libc only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 10000
#define MAX_SECONDS  10.0
#define MAX_FAILS    100
#define CHILD_LIFE_S 15

static pid_t children[MAX_CHILDREN];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *errno_name(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

static void child(pid_t parent)
{
	(void)alarm(CHILD_LIFE_S); /* default action: terminate */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(0);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	pid_t self = getpid();
	double deadline = now() + MAX_SECONDS;
	int forked = 0, errors = 0, in_a_row = 0, last_errno = 0;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: forkbomb\n");
		return 2;
	}
	/* the result must reach the test even if whoever reads our output has gone */
	(void)signal(SIGPIPE, SIG_IGN);
	/* flush before forking, or every child would inherit (and could print) the buffer */
	(void)fflush(NULL);

	while (forked < MAX_CHILDREN && in_a_row < MAX_FAILS && now() < deadline) {
		pid_t pid = fork();

		if (pid == 0)
			child(self);
		if (pid < 0) {
			last_errno = errno;
			errors++;
			in_a_row++;
			/* so that "in a row" spans a moment, not a few microseconds */
			(void)usleep(1000);
			continue;
		}
		children[forked++] = pid;
		in_a_row = 0;
	}

	printf("{\"forked\":%d,\"fork_errors\":%d,\"errno\":", forked, errors);
	if (last_errno)
		printf("\"%s\"}\n", errno_name(last_errno));
	else
		printf("null}\n");
	(void)fflush(stdout);

	for (int i = 0; i < forked; i++)
		(void)kill(children[i], SIGKILL);
	for (int i = 0; i < forked; i++)
		while (waitpid(children[i], NULL, 0) < 0 && errno == EINTR)
			;
	return 0;
}
