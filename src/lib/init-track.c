/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: the commands it started (struct pd_init_tracked, init-run.h), from STARTED
 * until their end is reported. init reaps every process of the sandbox and reports EXITED
 * for the commands; it signals a command's process group and closes its stdin on request.
 * A supervisor that goes away and comes back (init-run.c waits for it) is told every
 * command still known, with its pipes and terminal, and gets back the record it left.
 * Runs in init: the requests come from the supervisor, which init trusts.
 */
#include "init-run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "util/cleanup.h"

/* Sends a message with a command's fds: its pty master, then its pipes, stdin first. */
int pd_init_send_with_fds(struct pd_init_state *st, uint32_t type, const void *msg, size_t len,
			  const struct pd_init_tracked *t)
{
	int fds[4];
	size_t n = 0;

	if (t->pty >= 0)
		fds[n++] = t->pty;
	for (int i = 0; i < 3; i++)
		if (t->keep[i] >= 0)
			fds[n++] = t->keep[i];
	return pd_ctl_send(st->ctl, type, msg, len, fds, n);
}

static void release_tracked(struct pd_init_state *st, size_t i)
{
	struct pd_init_tracked *t = &st->execs[i];

	t->pty = pd_close(t->pty);
	for (int k = 0; k < 3; k++)
		t->keep[k] = pd_close(t->keep[k]);
	st->execs[i] = st->execs[--st->n_execs];
}

/* The command a request names, or NULL (ended and reported meanwhile, or never ours). */
static struct pd_init_tracked *find_tracked(struct pd_init_state *st, uint64_t id)
{
	for (size_t i = 0; i < st->n_execs; i++)
		if (st->execs[i].id == id)
			return &st->execs[i];
	return NULL;
}

void pd_init_handle_signal(struct pd_init_state *st, const char *buf, size_t len)
{
	struct pd_ctl_signal s;
	struct pd_init_tracked *t;

	if (len < sizeof(s))
		return;
	memcpy(&s, buf, sizeof(s));
	t = find_tracked(st, s.id);
	/* the command leads its own session and process group */
	if (t && kill(-t->pid, s.sig) < 0)
		(void)kill(t->pid, s.sig);
}

void pd_init_handle_close_stdin(struct pd_init_state *st, const char *buf, size_t len)
{
	struct pd_ctl_id m;
	struct pd_init_tracked *t;

	if (len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	t = find_tracked(st, m.id);
	if (t) {
		t->keep[0] = pd_close(t->keep[0]);
		/* a later supervisor is told the command has no stdin pipe any more (resync) */
		t->flags &= ~PD_EXEC_PIPE_STDIN;
	}
}

/* Free space of the sandbox's disk (the tmpfs /tmp lives on), for the "disk" reason. */
static uint64_t disk_free(void)
{
	struct statfs sf;

	if (statfs("/tmp", &sf) < 0)
		return UINT64_MAX;
	return (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize;
}

void pd_init_reap(struct pd_init_state *st)
{
	struct signalfd_siginfo si;
	struct rusage ru;
	int status;
	pid_t pid;

	while (read(st->sigfd, &si, sizeof(si)) == sizeof(si))
		;
	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		for (size_t i = 0; i < st->n_execs; i++) {
			if (st->execs[i].pid != pid)
				continue;
			struct pd_ctl_exited x = {
				.id = st->execs[i].id,
				.status = status,
				.utime_us = ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
				.stime_us = ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
				.maxrss_kb = ru.ru_maxrss,
				.disk_free_bytes = disk_free(),
				.denied = st->denied_total,
			};
			/* nobody to tell: keep it (and its output) for the next supervisor */
			if (st->ctl < 0 ||
			    pd_ctl_send(st->ctl, PD_CTL_EXITED, &x, sizeof(x), NULL, 0) < 0) {
				st->execs[i].exited = true;
				st->execs[i].exit = x;
				break;
			}
			release_tracked(st, i);
			break;
		}
	}
}

/*
 * READY, with the sandbox's "/" for the supervisor's file access (fsops.c), held by fd, and
 * an image's writable layer for its snapshots (sandbox-snapshot.c), when it has one.
 */
int pd_init_send_ready(struct pd_init_state *st)
{
	struct pd_ctl_ready ready = { .landlock_abi = st->landlock_abi,
				      .flags = st->host_tree >= 0 ? PD_READY_HOST_TREE : 0 };
	int fds[2] = { open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), st->upper_fd };
	int r;

	if (fds[0] < 0)
		return -errno;
	r = pd_ctl_send(st->ctl, PD_CTL_READY, &ready, sizeof(ready), fds,
			st->upper_fd >= 0 ? 2 : 1);
	pd_close(fds[0]);
	return r;
}

/*
 * A new supervisor connected: tell it every command still known (running, or ended while
 * nobody listened), with their pipes and terminals, then READY.
 */
int pd_init_resync(struct pd_init_state *st)
{
	for (size_t i = 0; i < st->n_execs;) {
		struct pd_init_tracked *t = &st->execs[i];
		struct pd_ctl_exec_state s = { .id = t->id,
					       .pid = t->pid,
					       .flags = t->flags,
					       .exited = t->exited,
					       .exit = t->exit };
		int r = pd_init_send_with_fds(st, PD_CTL_EXEC_STATE, &s, sizeof(s), t);

		if (r < 0)
			return r;
		if (t->exited)
			release_tracked(st, i);
		else
			i++;
	}
	/* what the last supervisor recorded of the sandbox, for one that lost its records */
	if (st->record_fd >= 0) {
		int r = pd_ctl_send(st->ctl, PD_CTL_RECORD, NULL, 0, &st->record_fd, 1);

		if (r < 0)
			return r;
	}
	return pd_init_send_ready(st);
}

/* PD_CTL_RECORD: keep the supervisor's record (init never reads it), replacing the last. */
void pd_init_handle_record(struct pd_init_state *st, int *fds, size_t nfds)
{
	if (nfds != 1)
		return;
	pd_close(st->record_fd);
	st->record_fd = fds[0]; /* MSG_CMSG_CLOEXEC: no command inherits it */
	fds[0] = -EBADF;
}
