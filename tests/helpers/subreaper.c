/* SPDX-License-Identifier: Apache-2.0 */
/*
 * subreaper: runs a test as a child subreaper, so that every process the test starts stays
 * below it however it detaches (a paddockd in the background, a sandbox's init whose
 * supervisor was killed: orphans come to the nearest subreaper, across pid namespaces).
 * When the test ends, whatever is left below is what the test leaked, and nothing else:
 * another suite, a developer's paddockd, a second checkout on the same machine are not.
 *
 *   subreaper GRACE_MS REPORT CMD [ARG...]
 *
 * Runs CMD, waits for it, then gives the processes left below up to GRACE_MS to end by
 * themselves (a sandbox's teardown finishes after its supervisor exits). Those still alive
 * are written to the file REPORT as "PID CMDLINE" lines (it is empty when nothing was
 * left), killed and reaped. Exit status: CMD's, or 3 when something was left behind (2 for
 * a usage error, 1 when CMD could not run).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/* Reaps whatever has ended; false when no child is left at all. */
static bool reap_some(void)
{
	for (;;) {
		pid_t p = waitpid(-1, NULL, WNOHANG);

		if (p > 0)
			continue;
		return !(p < 0 && errno == ECHILD);
	}
}

/* The parent pid of `pid`, from /proc/PID/stat (after the name, which may hold anything). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd, ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* Lists on `out` (if any), and with `kill_them` SIGKILLs, every process whose parent is us. */
static int children(FILE *out, bool kill_them)
{
	pid_t self = getpid();
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || parent_of((pid_t)pid) != self)
			continue;
		n++;
		if (out) {
			char path[64], cmd[512] = "";
			ssize_t len;
			int fd;

			snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			len = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
			if (fd >= 0)
				close(fd);
			for (ssize_t i = 0; i < len; i++)
				if (cmd[i] == '\0' || cmd[i] == '\n')
					cmd[i] = ' ';
			cmd[len > 0 ? len : 0] = '\0';
			fprintf(out, "%ld %s\n", pid, cmd);
		}
		if (kill_them)
			(void)kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	long grace, deadline;
	int status = 0, left;
	FILE *report;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: subreaper GRACE_MS REPORT CMD [ARG...]\n");
		return 2;
	}
	grace = strtol(argv[1], NULL, 10);
	report = fopen(argv[2], "we");
	if (!report) {
		perror(argv[2]);
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		perror("subreaper: prctl");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("subreaper: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		perror("subreaper: exec");
		_exit(1);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	deadline = now_ms() + grace;
	while (reap_some() && children(NULL, false) > 0 && now_ms() < deadline)
		usleep(20000);
	left = children(report, true);
	while (left > 0 && reap_some())
		usleep(10000);
	if (fclose(report) != 0)
		return 1;
	if (left > 0)
		return 3;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
