/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: the calls the seccomp filter denies. The filter makes such a call wait on
 * init's listener (user notifications, seccomp.c); init answers it with the rule's errno and
 * reports it to the supervisor (DENIED), at a bounded rate: a command that loops on a denied
 * call must not flood the control socket. The caller is hostile: what init reads of it
 * (/proc/PID/comm) is bounded, and kept only while the call was still pending.
 */
#include "init-run.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "seccomp-bpf.h"
#include "util/cleanup.h"

static bool take_denied_token(struct pd_init_state *st)
{
	struct timespec now;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (double)(now.tv_sec - st->denied_refill.tv_sec) +
	     (double)(now.tv_nsec - st->denied_refill.tv_nsec) / 1e9;
	st->denied_refill = now;
	st->denied_tokens += dt * PD_INIT_DENIED_PER_S;
	if (st->denied_tokens > PD_INIT_DENIED_BURST)
		st->denied_tokens = PD_INIT_DENIED_BURST;
	if (st->denied_tokens < 1.0)
		return false;
	st->denied_tokens -= 1.0;
	return true;
}

/* The caller's name, as /proc/PID/comm says (the sandbox's /proc), or empty. */
static void read_comm(int32_t pid, char comm[16])
{
	char path[32], buf[17];
	ssize_t n;
	int fd;

	memset(comm, 0, 16);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	pd_close(fd);
	if (n <= 0)
		return;
	if (buf[n - 1] == '\n')
		n--;
	memcpy(comm, buf, (size_t)(n > 16 ? 16 : n));
}

/*
 * One call the seccomp filter denied: answer it with the rule's errno, count it, and report
 * it while the rate allows (with the caller's name, read before the answer lets the caller
 * go on, and kept only if the notification was still pending then: its pid was still its).
 */
void pd_init_answer_denied(struct pd_init_state *st)
{
	struct pd_seccomp_denial d;
	struct pd_ctl_denied m = { 0 };
	bool report;

	if (pd_seccomp_receive(st->notify_fd, &d) < 0)
		return; /* the caller was killed meanwhile: nothing happened */
	st->denied_total++;
	report = st->ctl >= 0 && take_denied_token(st);
	if (report) {
		m = (struct pd_ctl_denied){ .arch = d.arch,
					    .nr = d.nr,
					    .pid = d.pid,
					    .dropped = st->denied_dropped,
					    .total = st->denied_total };
		read_comm(d.pid, m.comm);
		if (!pd_seccomp_still_waiting(st->notify_fd, d.id))
			memset(m.comm, 0, sizeof(m.comm));
	}
	(void)pd_seccomp_answer(st->notify_fd, &d);
	if (report && pd_ctl_send(st->ctl, PD_CTL_DENIED, &m, sizeof(m), NULL, 0) == 0)
		st->denied_dropped = 0;
	else if (st->denied_dropped < UINT32_MAX)
		st->denied_dropped++;
}
