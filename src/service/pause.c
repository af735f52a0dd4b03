/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause and resume of paddockd's sandboxes (docs/api.md "Pause and resume"): libpaddock
 * freezes the sandbox (paddock_sandbox_pause(): the cgroup freezer, or SIGSTOP rootless);
 * this file keeps paddockd's view in step with it and recorded, so a restarted paddockd
 * pauses again what was paused (adoption thaws: a frozen init could not answer it).
 *
 * Policy, in one place:
 *  - the TTL keeps running while paused (a paused sandbox still holds its memory and disk);
 *    the idle timeout does not (reaper_cb), and a resume counts as activity;
 *  - on_timeout "pause": the expiry of a running sandbox pauses it and keeps it paused
 *    SVC_PAUSED_KEEP_S more; the expiry of a paused one removes it;
 *  - while paused, a request that needs its processes (exec, ports, code) is answered 409
 *    naming the state at once; nothing is held waiting for a resume.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "service.h"

static bool box_live(const struct box *b)
{
	return !b->stopped && b->sb && paddock_sandbox_running(b->sb);
}

static void warn(const struct box *b, const char *what, const paddock_error *err)
{
	char buf[600];

	fprintf(stderr, "paddockd: sandbox %s: %s: %s\n", b->id, what,
		paddock_error_format(err, buf, sizeof(buf)));
}

static int not_live(struct box *b, paddock_error *err)
{
	int r = paddock_fail(err, ESRCH,
			     "sandbox '%s' is stopped: only a running sandbox can be paused "
			     "or resumed",
			     b->id);

	snprintf(err->field, sizeof(err->field), "state");
	return r;
}

int svc_box_pause(struct box *b, paddock_error *err)
{
	int r;

	if (!box_live(b))
		return not_live(b, err);
	if (b->paused)
		return 0;
	r = paddock_sandbox_pause(b->sb, err);
	if (r < 0)
		return r;
	b->paused = true;
	r = svc_box_persist(b, err);
	if (r < 0) {
		/* what cannot be recorded is undone: a restart would find it running */
		(void)paddock_sandbox_resume(b->sb, NULL);
		b->paused = false;
		svc_box_persist_or_warn(b); /* the record init keeps said paused a moment ago */
		return r;
	}
	return 0;
}

int svc_box_resume(struct box *b, paddock_error *err)
{
	int64_t active = b->last_active_ms;
	int r;

	if (!box_live(b))
		return not_live(b, err);
	if (!b->paused)
		return 0;
	r = paddock_sandbox_resume(b->sb, err);
	if (r < 0)
		return r;
	b->paused = false;
	svc_box_touch(b); /* the idle timeout starts again from the resume */
	r = svc_box_persist(b, err);
	if (r < 0) {
		(void)paddock_sandbox_pause(b->sb, NULL);
		b->paused = true;
		b->last_active_ms = active;
		svc_box_persist_or_warn(b);
		return r;
	}
	return 0;
}

void svc_box_repause(struct box *b)
{
	paddock_error err = { 0 };

	if (!b->paused || !box_live(b))
		return;
	if (paddock_sandbox_pause(b->sb, &err) >= 0)
		return;
	/* it runs, and is served as running: the store is told so */
	warn(b, "cannot pause it again after the restart, ignoring (it runs)", &err);
	b->paused = false;
	svc_box_persist_or_warn(b);
}

bool svc_box_pause_on_timeout(struct box *b)
{
	paddock_error err = { 0 };

	if (!b->pause_on_timeout || b->paused || !box_live(b))
		return false;
	if (paddock_sandbox_pause(b->sb, &err) < 0) {
		warn(b, "cannot pause it at the end of its TTL, removing it", &err);
		return false;
	}
	b->paused = true;
	b->expires_ms = svc_now_ms() + (int64_t)SVC_PAUSED_KEEP_S * 1000;
	/*
	 * Unrecorded, a restart finds it running and past its expiry: the reaper pauses it
	 * again then, so a warning is enough.
	 */
	svc_box_persist_or_warn(b);
	return true;
}

int svc_box_check_not_paused(const struct box *b, paddock_error *err)
{
	if (!b->paused)
		return 0;
	return paddock_fail_field(
		err, EBUSY, "state",
		"sandbox '%s' is paused: resume it first (POST /v1/sandboxes/%s/resume)", b->id,
		b->id);
}
