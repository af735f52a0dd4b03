/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause and resume (paddock_sandbox_pause()): every process of the sandbox stops where it is
 * and uses no CPU until resumed; its memory, files, sockets and network policy stay.
 *
 * With a cgroup that can freeze (v2's cgroup.freeze; v1's freezer hierarchy), the kernel
 * freezes every task, init included, invisibly to them. Without one (rootless: no cgroup),
 * init sends SIGSTOP to every other process of the sandbox's pid namespace, and SIGCONT at
 * resume: a process can see that it was stopped (its parent, with WUNTRACED), and one that
 * had stopped itself is continued too. Each command's timeout is held meanwhile: a paused
 * command's wall clock does not run.
 *
 * While paused, nothing that needs init's answer is asked of it (a frozen init answers
 * nothing): commands and sockets are refused with EBUSY naming the state; signals and stdin
 * wait in the control socket until the resume.
 */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "control.h"
#include "error.h"
#include "events.h"

static void hold_timeouts(paddock_sandbox *sb)
{
	struct timeval now, at;

	event_base_gettimeofday_cached(sb->ctx->base, &now);
	for (paddock_exec *ex = sb->execs; ex; ex = ex->next) {
		if (ex->done || !ex->timeout_ev || !event_pending(ex->timeout_ev, EV_TIMEOUT, &at))
			continue;
		if (timercmp(&at, &now, >))
			timersub(&at, &now, &ex->timeout_left);
		else
			timerclear(&ex->timeout_left);
		event_del(ex->timeout_ev);
		ex->timeout_held = true;
	}
}

static void release_timeouts(paddock_sandbox *sb)
{
	for (paddock_exec *ex = sb->execs; ex; ex = ex->next) {
		if (!ex->timeout_held)
			continue;
		ex->timeout_held = false;
		if (!ex->done && ex->timeout_ev)
			(void)evtimer_add(ex->timeout_ev, &ex->timeout_left);
	}
}

static int stop_all(paddock_sandbox *sb, bool stop, paddock_error *err)
{
	struct pd_ctl_stop_all m = { .stop = stop };
	int r = pd_ctl_send(sb->ctl, PD_CTL_STOP_ALL, &m, sizeof(m), NULL, 0);

	return r < 0 ? pd_fail(err, r, "ask init to %s the sandbox", stop ? "stop" : "continue")
		     : 0;
}

#define STOP_WAIT_MS	 5000
#define BLOCKED_GRACE_MS 50

/*
 * Whether every process of the sandbox but init is stopped (or gone): one scan of /proc.
 * *ret_blocked: how many are in an uninterruptible wait ('D') instead, which stop when it
 * ends (a vfork()'s parent waits so until its child, stopped itself, has exec'd).
 */
static bool all_stopped(paddock_sandbox *sb, unsigned *ret_blocked, char *running, size_t size)
{
	char path[64], want[64], link[64], stat[512];
	bool all = true;
	struct dirent *de;

	*ret_blocked = 0;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)sb->init_pid);
	n = readlink(path, want, sizeof(want) - 1);
	if (n <= 0)
		return true; /* init is gone: nothing runs */
	want[n] = '\0';
	d = opendir("/proc");
	while (all && d && (de = readdir(d))) {
		FILE *f;
		char *rp;

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == sb->init_pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/ns/pid", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0 || (size_t)n != strlen(want) || memcmp(link, want, (size_t)n) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/stat", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* gone meanwhile */
		n = (ssize_t)fread(stat, 1, sizeof(stat) - 1, f);
		fclose(f);
		stat[n > 0 ? n : 0] = '\0';
		/* the state follows the command's name, which may hold ')' itself */
		rp = strrchr(stat, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'D') {
			(*ret_blocked)++;
		} else if (rp && rp[1] == ' ' && !strchr("TtZX", rp[2])) {
			all = false;
			snprintf(running, size, "%.16s (%c)", de->d_name, rp[2]);
		}
	}
	if (d)
		closedir(d);
	return all;
}

/*
 * SIGSTOP takes effect when each process next leaves the kernel (a call in progress, such
 * as a rename, still completes): the pause is done once every one is stopped, as the
 * freezer's is once the cgroup is FROZEN. -ETIMEDOUT when that takes over STOP_WAIT_MS.
 */
static int wait_stopped(paddock_sandbox *sb, paddock_error *err)
{
	struct timespec t0, now;
	char running[32] = "";
	unsigned blocked;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool stopped = all_stopped(sb, &blocked, running, sizeof(running));

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		/* one in an uninterruptible wait gets BLOCKED_GRACE_MS to finish it, then counts */
		if (stopped && (blocked == 0 || ms > BLOCKED_GRACE_MS))
			return 0;
		if (ms > STOP_WAIT_MS)
			return pd_fail_field(
				err, ETIMEDOUT, "state",
				"the processes of sandbox '%s' did not all stop within "
				"%d ms (host pid %s)",
				sb->id, STOP_WAIT_MS, running);
		usleep(1000);
	}
}

int paddock_sandbox_pause(paddock_sandbox *sb, paddock_error *err)
{
	int r = -ENOTSUP;

	if (!sb)
		return pd_fail(err, EINVAL, "paddock_sandbox_pause: a sandbox is required");
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	if (sb->spec->pooled)
		return pd_fail(err, EBUSY, "sandbox '%s' is pooled: claim it first", sb->id);
	if (sb->paused)
		return 0;
	if (sb->cg) {
		paddock_error ferr = { 0 };

		r = pd_cgroup_freeze(sb->cg, true, &ferr);
		if (r < 0 && r != -ENOTSUP) {
			(void)pd_cgroup_freeze(sb->cg, false, NULL);
			*err = ferr;
			return r;
		}
	}
	if (r == 0) {
		sb->paused = PD_PAUSE_FREEZER;
	} else {
		r = stop_all(sb, true, err);
		if (r >= 0)
			r = wait_stopped(sb, err);
		if (r < 0) {
			(void)stop_all(sb, false, NULL); /* nothing changed: all go on */
			return r;
		}
		sb->paused = PD_PAUSE_STOP;
	}
	hold_timeouts(sb);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.paused", sb->id, NULL,
			json_pack("{s:s}", "by",
				  sb->paused == PD_PAUSE_FREEZER ? "freezer" : "sigstop"));
	return 0;
}

int paddock_sandbox_resume(paddock_sandbox *sb, paddock_error *err)
{
	int r;

	if (!sb)
		return pd_fail(err, EINVAL, "paddock_sandbox_resume: a sandbox is required");
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	if (!sb->paused)
		return 0;
	r = sb->paused == PD_PAUSE_FREEZER ? pd_cgroup_freeze(sb->cg, false, err)
					   : stop_all(sb, false, err);
	if (r < 0)
		return r;
	sb->paused = PD_PAUSE_NONE;
	release_timeouts(sb);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.resumed", sb->id, NULL, NULL);
	return 0;
}

bool paddock_sandbox_paused(const paddock_sandbox *sb)
{
	return sb && sb->paused != PD_PAUSE_NONE;
}

int pd_sandbox_check_not_paused(const paddock_sandbox *sb, paddock_error *err)
{
	if (sb->paused)
		return pd_fail(err, EBUSY, "sandbox '%s' is paused: resume it first", sb->id);
	return 0;
}
