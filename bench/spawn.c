/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Times whole commands side by side: each round runs every command once (fork, exec, wait),
 * in a rotating order so drift and noise fall on all of them alike. Prints p50/p90 per command,
 * each p50 as a ratio of the first command's (the baseline), and as one of the command
 * named $SPAWN_VS (default "bwrap") when there is one.
 *
 *   spawn ROUNDS NAME=CMDLINE [NAME=CMDLINE...]     (CMDLINE split on spaces)
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

#define MAX_CMDS 8
#define MAX_ARGS 64

struct cmd {
	char *name;
	char *argv[MAX_ARGS];
	double *samples;
	int failures;
};

static double run_once(struct cmd *c)
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
		execvp(c->argv[0], c->argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		c->failures++;
	return bench_now() - t0;
}

int main(int argc, char **argv)
{
	struct cmd cmds[MAX_CMDS] = { 0 };
	int n = 0, rounds;

	if (argc < 3) {
		fprintf(stderr, "usage: spawn ROUNDS NAME=CMDLINE...\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	for (int i = 2; i < argc && n < MAX_CMDS; i++, n++) {
		char *eq = strchr(argv[i], '=');
		int k = 0;

		if (!eq)
			return 2;
		*eq = '\0';
		cmds[n].name = argv[i];
		for (char *tok = strtok(eq + 1, " "); tok && k < MAX_ARGS - 1;
		     tok = strtok(NULL, " "))
			cmds[n].argv[k++] = tok;
		cmds[n].samples = calloc((size_t)rounds, sizeof(double));
	}
	/* warm-up: caches, page cache, lazily created kernel objects */
	for (int i = 0; i < n; i++)
		for (int w = 0; w < 5; w++)
			run_once(&cmds[i]);
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < n; j++) {
			struct cmd *c = &cmds[(r + j) % n];
			c->samples[r] = run_once(c);
		}
	/* the second ratio: to the command $SPAWN_VS names (default "bwrap"), when it ran */
	const char *vs_name = getenv("SPAWN_VS") ? getenv("SPAWN_VS") : "bwrap";
	double p50s[MAX_CMDS];
	int vs = -1;

	for (int i = 0; i < n; i++) {
		qsort(cmds[i].samples, (size_t)rounds, sizeof(double), bench_cmp_double);
		p50s[i] = cmds[i].samples[rounds / 2] * 1e3;
		if (!strcmp(cmds[i].name, vs_name))
			vs = i;
	}
	char first_col[16], vs_col[16];

	snprintf(first_col, sizeof(first_col), "x %.6s", cmds[0].name);
	snprintf(vs_col, sizeof(vs_col), "x %.6s", vs_name);
	printf("%-10s %10s %10s %8s", "command", "p50 ms", "p90 ms", first_col);
	if (vs >= 0)
		printf(" %8s", vs_col);
	printf(" %9s\n", "failures");
	for (int i = 0; i < n; i++) {
		printf("%-10s %10.3f %10.3f %8.2f", cmds[i].name, p50s[i],
		       cmds[i].samples[(rounds * 9) / 10] * 1e3, p50s[i] / p50s[0]);
		if (vs >= 0)
			printf(" %8.2f", p50s[i] / p50s[vs]);
		printf(" %9d\n", cmds[i].failures);
	}
	return 0;
}
