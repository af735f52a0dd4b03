/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands in a sandbox, as the supervisor sees them: start (an EXEC request to init), the
 * reports init sends for them (STARTED, EXEC_ERROR, EXITED), the accounting of each result
 * and its delivery from the loop, and the exec API of include/paddock/paddock.h. What a
 * command reads and writes, when libpaddock handles it, is exec-io.c.
 *
 * Trust: init's reports are hostile input: their ids, pids, fds and statuses are checked
 * (sandbox.c dispatches only well-sized messages); a violation kills the sandbox.
 */
#include "sandbox.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "error.h"
#include "events.h"
#include "util/cleanup.h"

#define EXEC_START_TIMEOUT_MS 30000

/* ---- results -------------------------------------------------------------------------- */

static const char *const end_reasons[_PADDOCK_END_MAX] = {
	[PADDOCK_END_EXITED] = "exited",   [PADDOCK_END_SIGNALED] = "signaled",
	[PADDOCK_END_TIMEOUT] = "timeout", [PADDOCK_END_KILLED] = "killed",
	[PADDOCK_END_ERROR] = "error",	   [PADDOCK_END_CPU_TIME] = "cpu_time",
	[PADDOCK_END_OOM] = "oom",	   [PADDOCK_END_PIDS] = "pids",
	[PADDOCK_END_DISK] = "disk",	   [PADDOCK_END_OUTPUT] = "output",
};

const char *paddock_end_reason_to_string(enum paddock_end_reason r)
{
	if ((unsigned)r >= _PADDOCK_END_MAX)
		return NULL;
	return end_reasons[r];
}

int paddock_result_exit_status(const struct paddock_result *res)
{
	if (!res)
		return PADDOCK_EXIT_FAILURE;
	switch (res->reason) {
	case PADDOCK_END_EXITED:
		return res->exit_code;
	case PADDOCK_END_SIGNALED:
	case PADDOCK_END_TIMEOUT:
	case PADDOCK_END_KILLED:
	case PADDOCK_END_CPU_TIME:
	case PADDOCK_END_OOM:
	case PADDOCK_END_PIDS:
	case PADDOCK_END_DISK:
	case PADDOCK_END_OUTPUT:
		/* a limit that ended the command leaves its own exit code when it had one */
		if (res->exit_code >= 0 && res->signal == 0)
			return res->exit_code;
		return 128 + (res->signal > 0 ? res->signal : SIGKILL);
	case PADDOCK_END_ERROR:
		return res->exit_code > 0 ? res->exit_code : PADDOCK_EXIT_FAILURE;
	case _PADDOCK_END_MAX:
		break;
	}
	return PADDOCK_EXIT_FAILURE;
}

static json_t *result_json(const struct paddock_result *res)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "reason", json_string(paddock_end_reason_to_string(res->reason)));
	json_object_set_new(o, "exit_code",
			    res->exit_code >= 0 && res->signal == 0 &&
					    res->reason != PADDOCK_END_ERROR
				    ? json_integer(res->exit_code)
				    : json_null());
	json_object_set_new(o, "signal", res->signal ? json_integer(res->signal) : json_null());
	json_object_set_new(o, "exit_status", json_integer(paddock_result_exit_status(res)));
	json_object_set_new(o, "wall_s", json_real(res->wall_s));
	json_object_set_new(o, "cpu_user_s", json_real(res->cpu_user_s));
	json_object_set_new(o, "cpu_sys_s", json_real(res->cpu_sys_s));
	json_object_set_new(o, "peak_rss_bytes", json_integer(res->peak_rss_bytes));
	json_object_set_new(o, "peak_memory_bytes", json_integer(res->peak_memory_bytes));
	json_object_set_new(o, "oom_kills", json_integer(res->oom_kills));
	json_object_set_new(o, "pids_peak",
			    res->pids_peak >= 0 ? json_integer(res->pids_peak) : json_null());
	json_object_set_new(o, "seccomp_denied", json_integer(res->seccomp_denied));
	json_object_set_new(o, "output_truncated", json_boolean(res->output_truncated));
	json_object_set_new(o, "disk_full", json_boolean(res->disk_full));
	if (res->limits_json) {
		json_t *l = json_loads(res->limits_json, 0, NULL);
		if (l)
			json_object_set_new(o, "limits", l);
	}
	if (res->reason == PADDOCK_END_ERROR) {
		json_t *e = json_object();
		json_object_set_new(e, "code", json_string(paddock_errno_name(res->error.code)));
		json_object_set_new(e, "field", json_string(res->error.field));
		json_object_set_new(e, "message", json_string(res->error.msg));
		json_object_set_new(o, "error", e);
	}
	return o;
}

int paddock_result_to_json(const struct paddock_result *res, char **ret_json, paddock_error *err)
{
	json_t *o;
	char *s;

	if (!res || !ret_json)
		return pd_fail(err, EINVAL, "paddock_result_to_json: arguments are required");
	o = result_json(res);
	if (!o)
		return pd_fail(err, ENOMEM, "build result");
	s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	json_decref(o);
	if (!s)
		return pd_fail(err, ENOMEM, "format result");
	*ret_json = s;
	return 0;
}

/* ---- execs ---------------------------------------------------------------------------- */

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

paddock_exec *paddock_exec_ref(paddock_exec *ex)
{
	if (ex)
		ex->refs++;
	return ex;
}

paddock_exec *paddock_exec_unref(paddock_exec *ex)
{
	if (!ex || --ex->refs > 0)
		return NULL;
	pd_exec_io_release(ex);
	ex->pty_fd = pd_close(ex->pty_fd);
	for (int i = 0; i < 3; i++)
		ex->fds[i] = pd_close(ex->fds[i]);
	free(ex->argv0);
	free(ex->cwd);
	free(ex->limits_json);
	free(ex);
	return NULL;
}

const struct paddock_result *paddock_exec_result(const paddock_exec *ex)
{
	return ex && ex->done ? &ex->result : NULL;
}

/*
 * The sandbox lets go of the exec: delivered, or the sandbox is freed (its callback then
 * never comes). A reference taken with paddock_exec_ref() keeps what is left of it, with no
 * sandbox and no events of the loop.
 */
void pd_exec_unlink_free(paddock_exec *ex)
{
	paddock_sandbox *sb = ex->sb;

	for (paddock_exec **pp = &sb->execs; *pp; pp = &(*pp)->next)
		if (*pp == ex) {
			*pp = ex->next;
			break;
		}
	ex->sb = NULL;
	if (ex->deliver)
		event_free(ex->deliver);
	ex->deliver = NULL;
	if (ex->timeout_ev)
		event_free(ex->timeout_ev);
	ex->timeout_ev = NULL;
	if (!ex->done)
		ex->done = true; /* its sandbox is gone: nothing more will happen to it */
	pd_exec_io_release_events(ex);
	paddock_exec_unref(ex);
}

static void deliver_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_exec *ex = arg;

	(void)fd;
	(void)what;
	if (ex->fn)
		ex->fn(ex, &ex->result, ex->userdata);
	pd_exec_unlink_free(ex);
}

static void emit_exit(paddock_exec *ex)
{
	if (!pd_events_wanted(ex->sb->ctx))
		return;
	json_t *f = result_json(&ex->result);
	enum paddock_event_level lvl =
		ex->result.reason == PADDOCK_END_ERROR ? PADDOCK_LEVEL_ERROR : PADDOCK_LEVEL_INFO;

	if (f) {
		json_object_del(f, "error");
		pd_event_add_error(f, &ex->result.error);
	}
	pd_emit(ex->sb->ctx, lvl,
		ex->result.reason == PADDOCK_END_ERROR ? "exec.failed" : "exec.exited", ex->sb->id,
		ex->id_str, f);
}

const char *pd_sandbox_cgroup_name(const paddock_sandbox *sb)
{
	if (!sb->cg)
		return NULL;
	return pd_cgroup_version(sb->cg) == PD_CGROUP_V2 ? "cgroup-v2" : "cgroup-v1";
}

/* The report's "limits": each limit's value and what enforced it (docs/report.md). */
static char *limits_json(const paddock_exec *ex)
{
	const paddock_sandbox *sb = ex->sb;
	const typeof(sb->spec->limits) *l = &sb->spec->limits;
	const char *cg = pd_sandbox_cgroup_name(sb);
	json_t *o = json_pack(
		"{s:{s:I,s:s},s:{s:I,s:s},s:{s:f,s:s},s:{s:f,s:s},s:{s:f,s:s},s:{s:I,s:s},"
		"s:{s:I,s:s},s:{s:I,s:s},s:{s:I,s:s},s:{s:i,s:s},s:{s:I,s:s,s:I}}",
		"memory", "value", (json_int_t)l->memory_bytes, "enforced_by", cg ? cg : "rlimit",
		"pids", "value", (json_int_t)l->pids, "enforced_by", cg ? cg : "rlimit", "cpus",
		"value", l->cpus, "enforced_by", cg ? cg : "none", "cpu_time", "value",
		l->cpu_time_s, "enforced_by", cg ? cg : "rlimit", "timeout", "value", l->timeout_s,
		"enforced_by", "timer", "disk", "value", (json_int_t)l->disk_bytes, "enforced_by",
		"tmpfs", "file_size", "value", (json_int_t)l->file_size_bytes, "enforced_by",
		"rlimit", "nofile", "value", (json_int_t)l->nofile, "enforced_by", "rlimit",
		"output", "value", (json_int_t)l->output_bytes, "enforced_by",
		ex->output_captured ? "relay" : "none", "core", "value", 0, "enforced_by", "rlimit",
		"disk_binds", "value", (json_int_t)l->disk_bytes, "enforced_by", "none",
		"writable_binds", (json_int_t)pd_launch_writable_binds(sb->spec));
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(o);
	return s;
}

static bool failed(const struct paddock_result *r)
{
	return r->signal != 0 || (r->exit_code != 0 && r->reason == PADDOCK_END_EXITED);
}

/*
 * The accounting of a command that ended, and the limit that ended it when one did: the
 * sandbox's own death reason first (timeout, oom, cpu_time, output), then what the counters
 * show for a command that failed (the OOM killer acted, forks were refused, the disk filled,
 * its CPU rlimit struck).
 */
static void account(paddock_exec *ex)
{
	paddock_sandbox *sb = ex->sb;
	struct paddock_result *r = &ex->result;
	struct pd_cgroup_stats now;

	r->peak_memory_bytes = r->peak_rss_bytes;
	r->pids_peak = -1;
	r->seccomp_denied = sb->denied_total >= ex->denied_base
				    ? (int64_t)(sb->denied_total - ex->denied_base)
				    : 0;
	if (sb->cg && pd_cgroup_stats(sb->cg, &now, NULL) >= 0) {
		r->peak_memory_bytes = (int64_t)now.memory_peak_bytes;
		r->oom_kills = (int64_t)(now.oom_kills - ex->base.oom_kills);
		/*
		 * v1 signals the OOM before the killer counts its kill (v1_oom_ack()): a command
		 * that ended for an OOM the event proved was killed by it, counted or not yet
		 */
		if (r->reason == PADDOCK_END_OOM && r->oom_kills == 0)
			r->oom_kills = 1;
		if (now.pids_peak)
			r->pids_peak = (int64_t)now.pids_peak;
		/* killed with the sandbox, the command left no rusage: the cgroup's counters tell
		 */
		if (r->signal == SIGKILL && r->cpu_user_s + r->cpu_sys_s == 0) {
			r->cpu_user_s = (double)(now.cpu_user_us - ex->base.cpu_user_us) / 1e6;
			r->cpu_sys_s = (double)(now.cpu_system_us - ex->base.cpu_system_us) / 1e6;
		}
		if (r->reason == PADDOCK_END_EXITED || r->reason == PADDOCK_END_SIGNALED) {
			if (r->oom_kills > 0 && failed(r))
				r->reason = PADDOCK_END_OOM;
			else if (now.pids_max_hits > ex->base.pids_max_hits && failed(r))
				r->reason = PADDOCK_END_PIDS;
		}
	}
	if ((r->reason == PADDOCK_END_EXITED || r->reason == PADDOCK_END_SIGNALED) &&
	    (r->signal == SIGXCPU ||
	     (r->signal == SIGKILL && r->cpu_user_s + r->cpu_sys_s >= sb->spec->limits.cpu_time_s)))
		r->reason = PADDOCK_END_CPU_TIME;
	if ((r->reason == PADDOCK_END_EXITED || r->reason == PADDOCK_END_SIGNALED) &&
	    r->disk_full && failed(r))
		r->reason = PADDOCK_END_DISK;
	ex->limits_json = limits_json(ex);
	r->limits_json = ex->limits_json;
}

/* Makes the result final and schedules the callback from the loop. */
void pd_exec_finish(paddock_exec *ex)
{
	if (ex->done)
		return;
	ex->done = true;
	if (ex->timeout_ev)
		event_del(ex->timeout_ev);
	if (ex->forced && ex->result.reason != PADDOCK_END_ERROR)
		ex->result.reason = ex->forced_reason;
	ex->result.wall_s = since(&ex->started);
	/* what its pipes hold is read before the result is final (output_truncated) */
	pd_exec_io_end(ex);
	if (ex->result.reason != PADDOCK_END_ERROR)
		account(ex);
	emit_exit(ex);
	event_active(ex->deliver, 0, 0);
}

static paddock_exec *find_exec(paddock_sandbox *sb, uint64_t id)
{
	for (paddock_exec *ex = sb->execs; ex; ex = ex->next)
		if (ex->id == id && !ex->done)
			return ex;
	return NULL;
}

void pd_exec_on_exited(paddock_sandbox *sb, const struct pd_ctl_exited *x)
{
	paddock_exec *ex = find_exec(sb, x->id);

	if (!ex)
		return pd_sandbox_protocol_violation(sb, "exit report for an unknown command");
	if (pd_exec_exited(ex, x) < 0)
		return pd_sandbox_protocol_violation(sb, "exit report with an impossible status");
}

int pd_exec_exited(paddock_exec *ex, const struct pd_ctl_exited *x)
{
	if (WIFEXITED(x->status)) {
		ex->result.reason = PADDOCK_END_EXITED;
		ex->result.exit_code = WEXITSTATUS(x->status);
	} else if (WIFSIGNALED(x->status)) {
		ex->result.reason = PADDOCK_END_SIGNALED;
		ex->result.signal = WTERMSIG(x->status);
	} else {
		return -EPROTO;
	}
	ex->result.cpu_user_s = (double)(x->utime_us > 0 ? x->utime_us : 0) / 1e6;
	ex->result.cpu_sys_s = (double)(x->stime_us > 0 ? x->stime_us : 0) / 1e6;
	ex->result.peak_rss_bytes = x->maxrss_kb > 0 ? x->maxrss_kb * 1024 : 0;
	/* tmpfs hands out whole pages: "full" is less than a block per thousand left */
	ex->result.disk_full = x->disk_free_bytes < 65536 ||
			       x->disk_free_bytes < ex->sb->spec->limits.disk_bytes / 1000;
	pd_sandbox_note_denied(ex->sb, x->denied);
	pd_exec_finish(ex);
	return 0;
}

static const char *const step_names[_PD_STEP_MAX] = {
	[PD_STEP_SETUP] = "set up the command",
	[PD_STEP_LIMITS] = "apply limits",
	[PD_STEP_LANDLOCK] = "enforce landlock",
	[PD_STEP_PRIVS] = "drop privileges",
	[PD_STEP_CWD] = "change to the working directory",
	[PD_STEP_SECCOMP] = "load the seccomp filter",
	[PD_STEP_EXECVE] = "execute",
};

static void on_exec_error(paddock_sandbox *sb, paddock_exec *ex, struct pd_ctl_exec_error *e)
{
	const char *argv0 = ex->argv0 ? ex->argv0 : "", *cwd = ex->cwd ? ex->cwd : "";

	int code = e->error.code > 0 && e->error.code < 4096 ? e->error.code : EIO;
	unsigned step = (unsigned)e->step < _PD_STEP_MAX ? (unsigned)e->step : PD_STEP_SETUP;

	(void)sb;
	ex->starting = false;
	ex->result.reason = PADDOCK_END_ERROR;
	ex->result.exit_code = PADDOCK_EXIT_FAILURE;
	if (step == PD_STEP_EXECVE) {
		ex->result.exit_code =
			code == ENOENT ? PADDOCK_EXIT_NOT_FOUND : PADDOCK_EXIT_CANNOT_EXEC;
		pd_fail_field(&ex->result.error, code, "argv", "%s '%s'", step_names[step],
			      PD_ESC(argv0));
	} else if (step == PD_STEP_CWD) {
		ex->result.exit_code = PADDOCK_EXIT_CANNOT_EXEC;
		pd_fail_field(&ex->result.error, code, "cwd", "%s '%s'", step_names[step],
			      PD_ESC(cwd));
	} else {
		pd_fail(&ex->result.error, code, "%s", step_names[step]);
	}
	pd_exec_finish(ex);
}

static paddock_exec *find_starting(paddock_sandbox *sb, uint64_t id)
{
	paddock_exec *ex = find_exec(sb, id);

	return ex && ex->starting ? ex : NULL;
}

void pd_exec_on_error(paddock_sandbox *sb, struct pd_ctl_exec_error *e)
{
	paddock_exec *ex = find_starting(sb, e->id);

	if (!ex)
		return pd_sandbox_protocol_violation(sb, "start error for an unknown command");
	e->error.msg[sizeof(e->error.msg) - 1] = '\0';
	on_exec_error(sb, ex, e);
}

/* init forked the command: its pid and fds (taken from fds: *nfds becomes 0) */
void pd_exec_on_started(paddock_sandbox *sb, const struct pd_ctl_started *s, int *fds, size_t *nfds)
{
	paddock_exec *ex = find_starting(sb, s->id);

	if (!ex)
		return pd_sandbox_protocol_violation(sb, "start report for an unknown command");
	if (!pd_exec_assign_fds(ex, ex->flags, fds, *nfds))
		return pd_sandbox_protocol_violation(sb, "start report with the wrong fds");
	*nfds = 0;
	ex->pid = s->pid;
	ex->starting = false;
	ex->denied_base = s->denied;
	pd_sandbox_note_denied(sb, s->denied);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "exec.started", sb->id, ex->id_str,
			json_pack("{s:s,s:i,s:b}", "argv0", ex->argv0 ? ex->argv0 : "", "pid",
				  (int)ex->pid, "pty", ex->pty_fd >= 0));
	/* the session the request asked for, before anyone hears the command runs */
	if (ex->io.want != PADDOCK_CAPTURE_NONE &&
	    paddock_exec_capture(ex, ex->io.want, ex->io.want_bytes, NULL) < 0)
		(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
	if (ex->started_fn)
		ex->started_fn(ex, ex->userdata);
}

/* ---- exec start ----------------------------------------------------------------------- */

paddock_exec *pd_exec_new(paddock_sandbox *sb, uint64_t id, paddock_exec_fn fn, void *userdata)
{
	paddock_exec *ex = calloc(1, sizeof(*ex));

	if (!ex)
		return NULL;
	ex->sb = sb;
	ex->refs = 1; /* the sandbox's, until the exec is delivered */
	pd_exec_io_init(ex);
	ex->id = id;
	ex->pty_fd = -EBADF;
	for (int i = 0; i < 3; i++)
		ex->fds[i] = -EBADF;
	ex->fn = fn;
	ex->userdata = userdata;
	ex->result.exit_code = -1;
	snprintf(ex->id_str, sizeof(ex->id_str), "ex_%llu", (unsigned long long)id);
	clock_gettime(CLOCK_MONOTONIC, &ex->started);
	ex->deliver = event_new(sb->ctx->base, -1, 0, deliver_cb, ex);
	if (!ex->deliver) {
		free(ex);
		return NULL;
	}
	ex->next = sb->execs;
	sb->execs = ex;
	return ex;
}

/*
 * The fds that come with STARTED or EXEC_STATE: the pty master when the command has a
 * terminal, then one pipe end per piped stream. SECURITY: they come from inside: each must
 * be what the request asked for (a character device, a pipe), or none is taken.
 */
bool pd_exec_assign_fds(paddock_exec *ex, uint32_t flags, int *fds, size_t nfds)
{
	unsigned pty = flags & 7u, pipes = (flags >> 8) & 7u & ~pty;
	size_t want = (pty ? 1 : 0) + (size_t)__builtin_popcount(pipes), k = 0;
	struct stat st;

	if (nfds != want)
		return false;
	for (size_t i = 0; i < nfds; i++) {
		bool is_pty = pty && i == 0;

		if (fstat(fds[i], &st) < 0 ||
		    (is_pty ? !S_ISCHR(st.st_mode) : !S_ISFIFO(st.st_mode)))
			return false;
	}
	ex->pty_streams = pty;
	ex->pipe_streams = pipes;
	if (pty)
		ex->pty_fd = fds[k++];
	for (int i = 0; i < 3; i++)
		if (pipes & (1u << i)) {
			ex->fds[i] = fds[k++];
			(void)fcntl(ex->fds[i], F_SETFL, O_NONBLOCK);
		}
	return true;
}

static void exec_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_exec *ex = arg;

	(void)fd;
	(void)what;
	if (pd_events_wanted(ex->sb->ctx))
		pd_emit(ex->sb->ctx, PADDOCK_LEVEL_INFO, "exec.timeout", ex->sb->id, ex->id_str,
			NULL);
	(void)paddock_exec_terminate(ex, PADDOCK_END_TIMEOUT, NULL);
}

/* Packs cwd, argv and env after the header into a malloc'ed message. */
static int pack_exec(const struct pd_ctl_exec *hdr, const char *cwd, const char *const *argv,
		     const char *const *env, const void *filter, char **ret_buf, size_t *ret_len,
		     paddock_error *err)
{
	size_t len = sizeof(*hdr) + strlen(cwd) + 1 + hdr->filter_len;
	char *buf, *p;

	for (size_t i = 0; i < hdr->argc; i++)
		len += strlen(argv[i]) + 1;
	for (size_t i = 0; i < hdr->envc; i++)
		len += strlen(env[i]) + 1;
	if (len > PD_CTL_MAX_MSG - sizeof(struct pd_ctl_hdr))
		return pd_fail_field(err, E2BIG, "argv",
				     "command line and environment exceed %u bytes",
				     PD_CTL_MAX_MSG / 1024 * 1024);
	buf = malloc(len);
	if (!buf)
		return pd_fail(err, ENOMEM, "allocate exec request");
	memcpy(buf, hdr, sizeof(*hdr));
	p = buf + sizeof(*hdr);
	p = stpcpy(p, cwd) + 1;
	for (size_t i = 0; i < hdr->argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	for (size_t i = 0; i < hdr->envc; i++)
		p = stpcpy(p, env[i]) + 1;
	if (hdr->filter_len)
		memcpy(p, filter, hdr->filter_len);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/*
 * SECURITY: a command's own ids must exist in the sandbox's user namespace (an unmapped id
 * would fail at setresuid(), after the fork) and never be the sandbox's root by this path:
 * root's commands keep capabilities (PD_CAPS_ROOT), these never do.
 */
static int check_user(const paddock_sandbox *sb, uint32_t uid, uint32_t gid, paddock_error *err)
{
	if (sb->idmap.root_user)
		return pd_fail_field(err, EINVAL, "user",
				     "a sandbox of user \"root\" runs every command as uid 0");
	if (uid == 0 || gid == 0)
		return pd_fail_field(err, EINVAL, "user",
				     "uid/gid 0 is root: make the sandbox's user \"root\" instead");
	if (sb->idmap.rootless ? (uid != PD_SANDBOX_UID || gid != PD_SANDBOX_GID)
			       : (uid >= PD_IDMAP_RANGE || gid >= PD_IDMAP_RANGE))
		return pd_fail_field(err, EINVAL, "user",
				     "uid/gid %u:%u does not exist in this sandbox (%s)", uid, gid,
				     sb->idmap.rootless ? "rootless, only 1000:1000 does"
							: "ids below 65536 do");
	return 0;
}

static int check_opts(const struct paddock_exec_opts *o, size_t *ret_argc, size_t *ret_envc,
		      paddock_error *err)
{
	size_t argc = 0, envc = 0;

	if (!o->argv || !o->argv[0] || !o->argv[0][0])
		return pd_fail_field(err, EINVAL, "argv", "expected a non-empty command");
	while (o->argv[argc])
		argc++;
	if (argc > PD_CTL_MAX_ARGS)
		return pd_fail_field(err, E2BIG, "argv", "expected at most %d arguments, got %zu",
				     PD_CTL_MAX_ARGS, argc);
	for (; o->env && o->env[envc]; envc++) {
		const char *e = o->env[envc], *eq = strchr(e, '=');
		if (!eq || eq == e)
			return pd_fail_field(err, EINVAL, "env", "expected NAME=VALUE, got '%s'",
					     PD_ESC(e));
	}
	if (envc > PD_CTL_MAX_ARGS)
		return pd_fail_field(err, E2BIG, "env", "expected at most %d variables",
				     PD_CTL_MAX_ARGS);
	if (o->cwd && o->cwd[0] != '/')
		return pd_fail_field(err, EINVAL, "cwd", "expected an absolute path, got '%s'",
				     PD_ESC(o->cwd));
	*ret_argc = argc;
	*ret_envc = envc;
	return 0;
}

/* Waits for init's answer to `ex`, dispatching whatever else arrives meanwhile. */
static int await_start(paddock_sandbox *sb, paddock_exec *ex, paddock_error *err)
{
	while (ex->starting) {
		union {
			struct pd_ctl_started started;
			struct pd_ctl_exec_error error;
			struct pd_ctl_exited exited;
		} msg;
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t type = 0;
		ssize_t n;

		n = pd_ctl_recv_wait(sb->ctl, EXEC_START_TIMEOUT_MS, &type, &msg, sizeof(msg), fds,
				     &nfds);
		if (n == -ETIMEDOUT)
			return pd_fail(err, ETIMEDOUT, "wait for the command to start");
		if (n < 0 || type == 0) {
			for (size_t i = 0; i < nfds; i++)
				pd_close(fds[i]);
			return pd_fail(err, EPIPE, "the sandbox ended before the command started");
		}
		pd_sandbox_dispatch(sb, type, &msg, n, fds, &nfds);
		for (size_t i = 0; i < nfds; i++)
			pd_close(fds[i]);
		if (sb->state == PD_SB_DEAD || sb->pidfd < 0)
			return pd_fail(err, EPIPE, "the sandbox ended before the command started");
	}
	return 0;
}

int paddock_exec_start(paddock_sandbox *sb, const struct paddock_exec_opts *opts,
		       paddock_exec_fn fn, void *userdata, paddock_exec **ret_exec,
		       paddock_error *err)
{
	return pd_exec_begin(sb, opts, 0, fn, userdata, ret_exec, err);
}

/*
 * The command's stdin, stdout and stderr: a pty stream, a pipe of init's (captured or asked
 * for), or the caller's fd, passed in `fds`.
 */
static void plan_streams(const struct paddock_exec_opts *opts, struct pd_ctl_exec *hdr,
			 int fds[static 3], size_t *nfds)
{
	for (int i = 0; i < 3; i++) {
		if (hdr->flags & (1u << i))
			continue;
		/* captured: libpaddock reads stdout and stderr from pipes of init's */
		if ((opts->pipe_streams & (1u << i)) ||
		    (opts->capture != PADDOCK_CAPTURE_NONE && i > 0)) {
			hdr->flags |= PD_EXEC_PIPE_STDIN << i;
			continue;
		}
		if (opts->fds[i] < 0)
			continue;
		hdr->flags |= PD_EXEC_FD_STDIN << i;
		fds[(*nfds)++] = opts->fds[i];
	}
	if (opts->ctty && (hdr->flags & PD_EXEC_FD_STDIN))
		hdr->flags |= PD_EXEC_CTTY;
}

/* The EXEC message's header from `opts`, checked; takes the next exec id even on failure. */
static int fill_exec_header(paddock_sandbox *sb, const struct paddock_exec_opts *opts,
			    uint32_t flags, size_t argc, size_t envc, struct pd_ctl_exec *hdr,
			    int fds[static 3], size_t *nfds, paddock_error *err)
{
	int r;

	hdr->id = sb->ctx->next_exec_id++;
	hdr->argc = (uint32_t)argc;
	hdr->envc = (uint32_t)envc;
	hdr->rows = opts->pty_rows;
	hdr->cols = opts->pty_cols;
	hdr->flags = (opts->pty_streams & 7u) | (flags & PD_EXEC_CODE_SERVER);
	if ((unsigned)opts->capture >= _PADDOCK_CAPTURE_MAX)
		return pd_fail_field(err, EINVAL, "capture", "unknown capture mode %d",
				     (int)opts->capture);
	plan_streams(opts, hdr, fds, nfds);
	if (opts->user_set) {
		r = check_user(sb, opts->uid, opts->gid, err);
		if (r < 0)
			return r;
		hdr->flags |= PD_EXEC_USER;
		hdr->uid = opts->uid;
		hdr->gid = opts->gid;
	}
	if (!(opts->timeout_s <= 1e7)) /* NaN too */
		return pd_fail_field(err, EINVAL, "timeout_s", "expected seconds up to 10000000");
	if (opts->filter_len) {
		if (!opts->filter || opts->filter_len % 8 || opts->filter_len > PD_EXEC_FILTER_MAX)
			return pd_fail_field(
				err, EINVAL, "filter",
				"expected a seccomp program of at most 4096 instructions");
		hdr->filter_len = (uint32_t)opts->filter_len;
	}
	return 0;
}

/* The exec object for `hdr`, linked into `sb`; pd_exec_unlink_free() undoes it. */
static int exec_new(paddock_sandbox *sb, const struct paddock_exec_opts *opts,
		    const struct pd_ctl_exec *hdr, paddock_exec_fn fn, void *userdata,
		    paddock_exec **ret_exec, paddock_error *err)
{
	paddock_exec *ex;

	ex = pd_exec_new(sb, hdr->id, fn, userdata);
	if (!ex)
		return pd_fail(err, ENOMEM, "allocate exec");
	ex->output_captured = opts->capture != PADDOCK_CAPTURE_NONE;
	ex->io.want = opts->capture;
	ex->io.want_bytes = opts->capture_bytes;
	ex->flags = hdr->flags;
	ex->started_fn = opts->on_started;
	ex->argv0 = strdup(opts->argv[0]);
	ex->cwd = strdup(opts->cwd ? opts->cwd : sb->spec->cwd);
	if (!ex->argv0 || !ex->cwd) {
		pd_exec_unlink_free(ex);
		return pd_fail(err, ENOMEM, "allocate exec");
	}
	*ret_exec = ex;
	return 0;
}

/* one meaning of limits.timeout_s for every front end: each command's wall clock */
static int arm_timeout(paddock_sandbox *sb, paddock_exec *ex, double timeout_s, paddock_error *err)
{
	double timeout = timeout_s == 0 ? sb->spec->limits.timeout_s : timeout_s;

	if (!ex->done && timeout > 0) {
		struct timeval tv = { .tv_sec = (time_t)timeout };

		tv.tv_usec = (suseconds_t)((timeout - (double)tv.tv_sec) * 1e6);
		ex->timeout_ev = evtimer_new(sb->ctx->base, exec_timeout_cb, ex);
		if (!ex->timeout_ev || evtimer_add(ex->timeout_ev, &tv) < 0) {
			(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
			return pd_fail(err, ENOMEM, "arm the command's timeout");
		}
	}
	return 0;
}

int pd_exec_begin(paddock_sandbox *sb, const struct paddock_exec_opts *opts, uint32_t flags,
		  paddock_exec_fn fn, void *userdata, paddock_exec **ret_exec, paddock_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct pd_ctl_exec hdr = { 0 };
	int fds[3];
	size_t nfds = 0, len = 0, argc = 0, envc = 0;
	paddock_exec *ex = NULL;
	int r;

	if (!sb || !opts)
		return pd_fail(err, EINVAL, "paddock_exec_start: arguments are required");
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	if (sb->spec->pooled)
		return pd_fail(err, EBUSY, "sandbox '%s' is pooled: claim it first", sb->id);
	if (pd_sandbox_check_not_paused(sb, err) < 0)
		return -EBUSY;
	r = check_opts(opts, &argc, &envc, err);
	if (r < 0)
		return r;
	r = fill_exec_header(sb, opts, flags, argc, envc, &hdr, fds, &nfds, err);
	if (r < 0)
		return r;
	r = pack_exec(&hdr, opts->cwd ? opts->cwd : "", opts->argv, opts->env, opts->filter, &buf,
		      &len, err);
	if (r < 0)
		return r;

	r = exec_new(sb, opts, &hdr, fn, userdata, &ex, err);
	if (r < 0)
		return r;
	/* the first command starts from the baselines pd_cgroup_open() took: zero */
	if (sb->n_execs++ > 0 && sb->cg)
		(void)pd_cgroup_stats(sb->cg, &ex->base, NULL);

	r = pd_ctl_send(sb->ctl, PD_CTL_EXEC, buf, len, fds, nfds);
	if (r < 0) {
		pd_exec_unlink_free(ex);
		return pd_fail(err, r, "send command to the sandbox");
	}
	ex->starting = true;
	/*
	 * Asynchronous: STARTED or EXEC_ERROR arrive through ctl_cb. A supervisor serving many
	 * sandboxes must not wait here: init may be slow to fork when its sandbox has used up
	 * its CPU quota or is short of memory.
	 */
	if (!opts->on_started) {
		r = await_start(sb, ex, err);
		if (r < 0) {
			pd_exec_unlink_free(ex);
			return r;
		}
	}
	r = arm_timeout(sb, ex, opts->timeout_s, err);
	if (r < 0)
		return r;
	if (ret_exec)
		*ret_exec = ex;
	return 0;
}

int paddock_exec_signal(paddock_exec *ex, int sig, paddock_error *err)
{
	struct pd_ctl_signal s;
	int r;

	if (!ex || sig <= 0 || sig >= _NSIG)
		return pd_fail_field(err, EINVAL, "signal", "expected a signal number, got %d",
				     sig);
	if (ex->done || ex->sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "command '%s' has ended", ex->id_str);
	s = (struct pd_ctl_signal){ .id = ex->id, .sig = sig };
	r = pd_ctl_send(ex->sb->ctl, PD_CTL_SIGNAL, &s, sizeof(s), NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "send signal");
	return 0;
}

int paddock_exec_pty_fd(const paddock_exec *ex)
{
	return ex && ex->pty_fd >= 0 ? ex->pty_fd : -1;
}

int paddock_exec_resize(paddock_exec *ex, unsigned short rows, unsigned short cols,
			paddock_error *err)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	if (!ex || ex->pty_fd < 0)
		return pd_fail(err, ENOTTY, "command has no terminal");
	if (ioctl(ex->pty_fd, TIOCSWINSZ, &ws) < 0)
		return pd_fail(err, errno, "resize terminal");
	return 0;
}

pid_t paddock_exec_pid(const paddock_exec *ex)
{
	return ex ? ex->pid : -1;
}

uint64_t paddock_exec_id(const paddock_exec *ex)
{
	return ex ? ex->id : 0;
}

unsigned paddock_exec_pipe_streams(const paddock_exec *ex)
{
	return ex ? ex->pipe_streams : 0;
}

unsigned paddock_exec_pty_streams(const paddock_exec *ex)
{
	return ex ? ex->pty_streams : 0;
}

int paddock_exec_take_fd(paddock_exec *ex, int fd)
{
	int r;

	if (!ex || fd < 0 || fd > 2)
		return -1;
	if (ex->pty_streams & (1u << fd))
		return ex->pty_fd >= 0 ? fcntl(ex->pty_fd, F_DUPFD_CLOEXEC, 3) : -1;
	r = TAKE_FD(ex->fds[fd]);
	return r >= 0 ? r : -1;
}

int pd_exec_send_close_stdin(paddock_exec *ex, paddock_error *err)
{
	struct pd_ctl_id m;
	int r;

	if (ex->done || !ex->sb || ex->sb->state != PD_SB_RUNNING)
		return 0;
	m.id = ex->id;
	r = pd_ctl_send(ex->sb->ctl, PD_CTL_CLOSE_STDIN, &m, sizeof(m), NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "close stdin");
	return 0;
}

int paddock_exec_close_stdin(paddock_exec *ex, paddock_error *err)
{
	struct pd_ctl_id m;
	int r;

	if (!ex)
		return pd_fail(err, EINVAL, "paddock_exec_close_stdin: exec is required");
	/* the session's queue is written first */
	if (ex->io.mode != PADDOCK_CAPTURE_NONE)
		return pd_exec_io_close_stdin(ex);
	ex->fds[0] = pd_close(ex->fds[0]);
	if (ex->done || !ex->sb || ex->sb->state != PD_SB_RUNNING)
		return 0;
	m.id = ex->id;
	r = pd_ctl_send(ex->sb->ctl, PD_CTL_CLOSE_STDIN, &m, sizeof(m), NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "close stdin");
	return 0;
}

void paddock_exec_set_callback(paddock_exec *ex, paddock_exec_fn fn, void *userdata)
{
	if (!ex)
		return;
	ex->fn = fn;
	ex->userdata = userdata;
}

int paddock_exec_terminate(paddock_exec *ex, enum paddock_end_reason reason, paddock_error *err)
{
	if (!ex || (unsigned)reason >= _PADDOCK_END_MAX)
		return pd_fail(err, EINVAL, "paddock_exec_terminate: bad arguments");
	if (ex->done)
		return 0;
	if (!ex->forced) {
		ex->forced = true;
		ex->forced_reason = reason;
	}
	return paddock_exec_signal(ex, SIGKILL, err);
}
