/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandboxes and their commands, as the supervisor sees them. A sandbox is its init (held by
 * pidfd) and the control socket; both are served by the context's libevent loop. Results
 * reach the caller through callbacks that always run from the loop (never from inside an
 * API call), so a callback may start another command or free the sandbox.
 *
 * Trust: every message from init is checked (type, size, exec id) before use; a protocol
 * violation kills the sandbox.
 */
#include "sandbox.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "egress.h"
#include "secrets.h"
#include "tls-ca.h"
#include "error.h"
#include "events.h"
#include "seccomp-bpf.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define EXEC_START_TIMEOUT_MS 30000

#define LAUNCH_ASYNC_TIMEOUT_S 30
#define POOL_NICE 19

static void kill_for(paddock_sandbox *sb, enum paddock_end_reason reason, const char *event,
		     json_t *fields);

/* ---- context -------------------------------------------------------------------------- */

int paddock_ctx_new(struct event_base *base, paddock_ctx **ret_ctx, paddock_error *err)
{
	paddock_ctx *ctx;

	if (!base || !ret_ctx)
		return pd_fail(err, EINVAL, "paddock_ctx_new: base and ret_ctx are required");
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return pd_fail(err, ENOMEM, "allocate context");
	ctx->base = base;
	ctx->next_exec_id = 1;
	*ret_ctx = ctx;
	return 0;
}

paddock_ctx *paddock_ctx_free(paddock_ctx *ctx)
{
	if (!ctx)
		return NULL;
	pd_resolver_free(ctx->resolver);
	free(ctx->resolve_hosts);
	pd_strv_free(ctx->upstream_ca);
	free(ctx->image_store);
	if (ctx->upstream_tls)
		SSL_CTX_free(ctx->upstream_tls);
	free(ctx);
	return NULL;
}

void paddock_ctx_set_event_sink(paddock_ctx *ctx, paddock_event_fn fn, void *userdata)
{
	if (!ctx)
		return;
	ctx->sink = fn;
	ctx->sink_userdata = userdata;
}

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
	json_object_set_new(o, "exit_code", res->exit_code >= 0 && res->signal == 0 &&
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

int paddock_result_to_json(const struct paddock_result *res, char **ret_json,
			   paddock_error *err)
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

static void exec_unlink_free(paddock_exec *ex)
{
	paddock_sandbox *sb = ex->sb;

	for (paddock_exec **pp = &sb->execs; *pp; pp = &(*pp)->next)
		if (*pp == ex) {
			*pp = ex->next;
			break;
		}
	if (ex->deliver)
		event_free(ex->deliver);
	if (ex->timeout_ev)
		event_free(ex->timeout_ev);
	ex->pty_fd = pd_close(ex->pty_fd);
	for (int i = 0; i < 3; i++)
		ex->fds[i] = pd_close(ex->fds[i]);
	free(ex->argv0);
	free(ex->cwd);
	free(ex->limits_json);
	free(ex);
}

static void deliver_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_exec *ex = arg;

	(void)fd;
	(void)what;
	if (ex->fn)
		ex->fn(ex, &ex->result, ex->userdata);
	exec_unlink_free(ex);
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

static const char *cgroup_name(const paddock_sandbox *sb)
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
	const char *cg = cgroup_name(sb);
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
		if (now.pids_peak)
			r->pids_peak = (int64_t)now.pids_peak;
		/* killed with the sandbox, the command left no rusage: the cgroup's counters tell */
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
static void finish(paddock_exec *ex)
{
	if (ex->done)
		return;
	ex->done = true;
	if (ex->timeout_ev)
		event_del(ex->timeout_ev);
	if (ex->forced && ex->result.reason != PADDOCK_END_ERROR)
		ex->result.reason = ex->forced_reason;
	ex->result.wall_s = since(&ex->started);
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

static void kill_init(paddock_sandbox *sb)
{
	if (sb->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
}

static void protocol_violation(paddock_sandbox *sb, const char *what)
{
	json_t *f = json_pack("{s:s}", "reason", what);

	pd_emit(sb->ctx, PADDOCK_LEVEL_ERROR, "sandbox.protocol_violation", sb->id, NULL, f);
	kill_init(sb);
}

static void on_exited(paddock_sandbox *sb, const struct pd_ctl_exited *x)
{
	paddock_exec *ex = find_exec(sb, x->id);

	if (!ex)
		return protocol_violation(sb, "exit report for an unknown command");
	if (pd_exec_exited(ex, x) < 0)
		return protocol_violation(sb, "exit report with an impossible status");
}

static void note_denied_total(paddock_sandbox *sb, uint64_t total);

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
	note_denied_total(ex->sb, x->denied);
	finish(ex);
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
		ex->result.exit_code = code == ENOENT ? PADDOCK_EXIT_NOT_FOUND
						      : PADDOCK_EXIT_CANNOT_EXEC;
		pd_fail_field(&ex->result.error, code, "argv", "%s '%s'", step_names[step],
			      PD_ESC(argv0));
	} else if (step == PD_STEP_CWD) {
		ex->result.exit_code = PADDOCK_EXIT_CANNOT_EXEC;
		pd_fail_field(&ex->result.error, code, "cwd", "%s '%s'", step_names[step],
			      PD_ESC(cwd));
	} else {
		pd_fail(&ex->result.error, code, "%s", step_names[step]);
	}
	finish(ex);
}

static paddock_exec *find_starting(paddock_sandbox *sb, uint64_t id)
{
	paddock_exec *ex = find_exec(sb, id);

	return ex && ex->starting ? ex : NULL;
}

/* init forked the command: its pid and fds (taken from fds: *nfds becomes 0) */
static void on_started(paddock_sandbox *sb, const struct pd_ctl_started *s, int *fds,
		       size_t *nfds)
{
	paddock_exec *ex = find_starting(sb, s->id);

	if (!ex)
		return protocol_violation(sb, "start report for an unknown command");
	if (!pd_exec_assign_fds(ex, ex->flags, fds, *nfds))
		return protocol_violation(sb, "start report with the wrong fds");
	*nfds = 0;
	ex->pid = s->pid;
	ex->starting = false;
	ex->denied_base = s->denied;
	note_denied_total(sb, s->denied);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "exec.started", sb->id, ex->id_str,
			json_pack("{s:s,s:i,s:b}", "argv0", ex->argv0 ? ex->argv0 : "", "pid",
				  (int)ex->pid, "pty", ex->pty_fd >= 0));
	if (ex->started_fn)
		ex->started_fn(ex, ex->userdata);
}

/*
 * init's count of denied calls. From inside, so only ever taken upwards, and never by more
 * than a sandbox could make in the time (a billion: a bound, not a measure).
 */
static void note_denied_total(paddock_sandbox *sb, uint64_t total)
{
	if (total > sb->denied_total && total - sb->denied_total < (1ULL << 30))
		sb->denied_total = total;
}

/* seccomp.denied events: a burst of 20, then 10 a second, per sandbox */
#define DENIED_EVENT_BURST 20.0
#define DENIED_EVENT_PER_S 10.0

static bool denied_event_allowed(paddock_sandbox *sb)
{
	struct timespec now;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (sb->denied_refill.tv_sec == 0 && sb->denied_refill.tv_nsec == 0)
		sb->denied_tokens = DENIED_EVENT_BURST;
	else {
		dt = (double)(now.tv_sec - sb->denied_refill.tv_sec) +
		     (double)(now.tv_nsec - sb->denied_refill.tv_nsec) / 1e9;
		sb->denied_tokens += dt * DENIED_EVENT_PER_S;
	}
	sb->denied_refill = now;
	if (sb->denied_tokens > DENIED_EVENT_BURST)
		sb->denied_tokens = DENIED_EVENT_BURST;
	if (sb->denied_tokens < 1.0)
		return false;
	sb->denied_tokens -= 1.0;
	return true;
}

/* A process name from inside: printable ASCII only, at most 15 characters. */
static void clean_comm(const char comm[16], char out[16])
{
	size_t i = 0;

	for (; i < 15 && comm[i]; i++)
		out[i] = comm[i] >= 0x20 && comm[i] < 0x7f ? comm[i] : '?';
	out[i] = '\0';
}

/* init answered a call the seccomp filter denied: on the record, as seccomp.denied. */
static void on_denied(paddock_sandbox *sb, const struct pd_ctl_denied *m)
{
	uint64_t before = sb->denied_total;
	const char *name = pd_seccomp_syscall_name(m->arch, m->nr);
	const char *arch = pd_seccomp_arch_name(m->arch, m->nr);
	char comm[16];

	note_denied_total(sb, m->total);
	/* init dropped some (its own rate); the count covers them, events do not */
	sb->denied_unreported += sb->denied_total > before ? sb->denied_total - before - 1 : 0;
	if (!pd_events_wanted(sb->ctx))
		return;
	if (!denied_event_allowed(sb)) {
		sb->denied_unreported++;
		return;
	}
	clean_comm(m->comm, comm);
	pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "seccomp.denied", sb->id, NULL,
		json_pack("{s:s,s:s,s:i,s:s,s:I,s:I}", "syscall", name ? name : "unknown",
			  "arch", arch ? arch : "unknown", "pid", m->pid > 0 ? (int)m->pid : 0,
			  "command", comm, "total", (json_int_t)sb->denied_total, "unreported",
			  (json_int_t)sb->denied_unreported));
	sb->denied_unreported = 0;
}

/* Completes the oldest socket request: fd >= 0, or fd -1 with err. */
static void socket_done(paddock_sandbox *sb, int fd, const paddock_error *err)
{
	struct pd_socket_req *q = sb->sockets;

	sb->sockets = q->next;
	if (!q->fn) {
		q->done = true;
		q->fd = fd;
		if (err)
			q->err = *err;
		return;
	}
	q->fn(sb, fd, err, q->userdata);
	free(q);
}

/* init's answer to the oldest socket request (fds taken: *nfds becomes 0) */
static void on_socket(paddock_sandbox *sb, const struct pd_ctl_socket_fd *m, int *fds,
		      size_t *nfds)
{
	struct pd_socket_req *q = sb->sockets;
	paddock_error e = { 0 };
	int v = 0;
	socklen_t len = sizeof(v);

	if (!q || *nfds > 1 || (*nfds == 0 && m->error <= 0))
		return protocol_violation(sb, "malformed socket reply");
	if (*nfds == 0) {
		pd_fail(&e, m->error < 4096 ? m->error : EIO, "make a socket in the sandbox");
		return socket_done(sb, -1, &e);
	}
	/* SECURITY: from inside: it must be the socket asked for */
	if (getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != q->domain ||
	    getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != q->type)
		return protocol_violation(sb, "init sent the wrong socket");
	*nfds = 0;
	socket_done(sb, fds[0], NULL);
}

/* Handles one message from init; fds it does not take are closed by the caller. */
static void dispatch(paddock_sandbox *sb, uint32_t type, const void *buf, ssize_t n, int *fds,
		     size_t *nfds)
{
	/* (an init of an earlier version, adopted, sends no seccomp count: it stays 0) */
	if (type == PD_CTL_EXITED &&
	    (n == (ssize_t)sizeof(struct pd_ctl_exited) || n == PD_CTL_EXITED_V0_SIZE)) {
		struct pd_ctl_exited x = { 0 };
		memcpy(&x, buf, (size_t)n);
		on_exited(sb, &x);
		return;
	}
	if (type == PD_CTL_STARTED &&
	    (n == (ssize_t)sizeof(struct pd_ctl_started) || n == PD_CTL_STARTED_V0_SIZE)) {
		struct pd_ctl_started s = { 0 };
		memcpy(&s, buf, (size_t)n);
		on_started(sb, &s, fds, nfds);
		return;
	}
	if (type == PD_CTL_DENIED && n == (ssize_t)sizeof(struct pd_ctl_denied)) {
		struct pd_ctl_denied m;
		memcpy(&m, buf, sizeof(m));
		on_denied(sb, &m);
		return;
	}
	if (type == PD_CTL_SOCKET_FD && n == (ssize_t)sizeof(struct pd_ctl_socket_fd)) {
		struct pd_ctl_socket_fd m;
		memcpy(&m, buf, sizeof(m));
		on_socket(sb, &m, fds, nfds);
		return;
	}
	if (type == PD_CTL_EXEC_ERROR && n == (ssize_t)sizeof(struct pd_ctl_exec_error)) {
		struct pd_ctl_exec_error e;
		paddock_exec *ex;

		memcpy(&e, buf, sizeof(e));
		ex = find_starting(sb, e.id);
		if (!ex)
			return protocol_violation(sb, "start error for an unknown command");
		e.error.msg[sizeof(e.error.msg) - 1] = '\0';
		on_exec_error(sb, ex, &e);
		return;
	}
	protocol_violation(sb, "unexpected message");
}

static void ctl_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;
	char buf[sizeof(struct pd_ctl_exec_error) + 64];

	(void)fd;
	(void)what;
	for (int i = 0; i < 64 && sb->state != PD_SB_DEAD; i++) {
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS; /* STARTED brings the command's pipes and pty */
		uint32_t type = 0;
		ssize_t n = pd_ctl_recv(sb->ctl, &type, buf, sizeof(buf), fds, &nfds);

		if (n == -EAGAIN)
			return;
		if (n < 0 || type == 0) {
			/* init is gone or broken; the pidfd event finishes the execs */
			event_del(sb->ctl_ev);
			if (n < 0 && n != -ECONNRESET)
				protocol_violation(sb, "malformed message");
			return;
		}
		dispatch(sb, type, buf, n, fds, &nfds);
		for (size_t k = 0; k < nfds; k++)
			pd_close(fds[k]);
	}
}

/*
 * Closes the egress listeners and connections (they hold the sandbox's netns alive) and
 * wipes the secrets' values. SECURITY: at death, not only when the object is freed.
 */
static void release_network(paddock_sandbox *sb)
{
	pd_egress_free(sb->egress);
	sb->egress = NULL;
	pd_secrets_free(sb->secrets);
	sb->secrets = NULL;
}

static void mark_dead(paddock_sandbox *sb)
{
	siginfo_t si;

	if (sb->state == PD_SB_DEAD)
		return;
	(void)waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED);
	sb->state = PD_SB_DEAD;
	if (sb->ctl_ev)
		event_del(sb->ctl_ev);
	if (sb->pidfd_ev)
		event_del(sb->pidfd_ev);
	if (sb->timeout_ev)
		event_del(sb->timeout_ev);
	if (sb->oom_ev)
		event_del(sb->oom_ev);
	if (sb->cpu_ev)
		event_del(sb->cpu_ev);
	/* its sockets hold the netns; its secrets are of no more use: both go now */
	release_network(sb);
	while (sb->sockets) {
		paddock_error e = { 0 };

		pd_fail(&e, ESRCH, "sandbox '%s' ended before init made the socket", sb->id);
		socket_done(sb, -1, &e);
	}
	for (paddock_exec *ex = sb->execs; ex; ex = ex->next) {
		if (ex->done)
			continue;
		ex->result.reason = sb->death_reason;
		ex->result.signal = SIGKILL;
		ex->result.exit_code = -1;
		finish(ex);
	}
}

static void pidfd_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;

	(void)fd;
	(void)what;
	/* drain exit reports init sent before it died, so results are exact */
	ctl_cb(sb->ctl, EV_READ, sb);
	mark_dead(sb);
	pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.exited", sb->id, NULL,
		json_pack("{s:s}", "reason", paddock_end_reason_to_string(sb->death_reason)));
	if (sb->exit_fn)
		sb->exit_fn(sb, sb->death_reason, sb->exit_userdata);
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;

	(void)fd;
	(void)what;
	kill_for(sb, PADDOCK_END_TIMEOUT, "sandbox.timeout",
		 json_pack("{s:f}", "timeout_s", sb->spec->limits.timeout_s));
}

/* The first limit to end a sandbox names the reason for everything still running. */
static void kill_for(paddock_sandbox *sb, enum paddock_end_reason reason, const char *event,
		     json_t *fields)
{
	if (sb->state == PD_SB_DEAD || sb->death_reason != PADDOCK_END_KILLED) {
		json_decref(fields);
		return;
	}
	sb->death_reason = reason;
	pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, event, sb->id, NULL, fields);
	kill_init(sb);
	if (sb->cg)
		(void)pd_cgroup_kill_all(sb->cg, NULL);
}

static void oom_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;
	struct pd_cgroup_stats st;

	(void)fd;
	(void)what;
	bool oom = pd_cgroup_oom_ack(sb->cg);

	if (pd_cgroup_stats(sb->cg, &st, NULL) < 0)
		st.oom_kills = 0;
	if (!oom && st.oom_kills == 0)
		return;
	/* SECURITY: an OOM kill takes one process; the limit takes the whole sandbox */
	kill_for(sb, PADDOCK_END_OOM, "sandbox.limit_hit",
		 json_pack("{s:s,s:I,s:I}", "limit", "memory", "value",
			   (json_int_t)sb->spec->limits.memory_bytes, "oom_kills",
			   (json_int_t)(st.oom_kills ? st.oom_kills : 1)));
}

/*
 * limits.cpu_time_s for the whole sandbox. No fd tells when a cgroup's CPU time passes a
 * mark, but it cannot grow faster than the CPU quota: check when the rest of the budget could
 * first be used up at full quota, and again until it is.
 */
static void arm_cpu_check(paddock_sandbox *sb, double used_s)
{
	double cpus = sb->spec->limits.cpus > 0 ? sb->spec->limits.cpus : 1;
	double wait = (sb->spec->limits.cpu_time_s - used_s) / cpus;
	struct timeval tv;

	if (wait < 0.02)
		wait = 0.02;
	tv.tv_sec = (time_t)wait;
	tv.tv_usec = (suseconds_t)((wait - (double)tv.tv_sec) * 1e6);
	(void)event_add(sb->cpu_ev, &tv);
}

static void cpu_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;
	struct pd_cgroup_stats st;
	double used;

	(void)fd;
	(void)what;
	if (pd_cgroup_stats(sb->cg, &st, NULL) < 0)
		return arm_cpu_check(sb, 0);
	used = (double)st.cpu_usage_us / 1e6;
	if (used < sb->spec->limits.cpu_time_s)
		return arm_cpu_check(sb, used);
	kill_for(sb, PADDOCK_END_CPU_TIME, "sandbox.limit_hit",
		 json_pack("{s:s,s:f,s:f}", "limit", "cpu_time", "value",
			   sb->spec->limits.cpu_time_s, "used_s", used));
}

static void arm_timeout(paddock_sandbox *sb)
{
	double t = sb->spec->limits.timeout_s;
	struct timeval tv = { .tv_sec = (time_t)t };

	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	(void)event_add(sb->timeout_ev, &tv); /* replaces a pending one */
}

void pd_sandbox_limits_bound(paddock_sandbox *sb)
{
	if (sb->timeout_ev && !sb->no_timeout)
		arm_timeout(sb);
	if (sb->cpu_ev)
		cpu_cb(-1, 0, sb);
}

int paddock_sandbox_kill(paddock_sandbox *sb, enum paddock_end_reason reason, paddock_error *err)
{
	if (!sb || (unsigned)reason >= _PADDOCK_END_MAX)
		return pd_fail(err, EINVAL, "paddock_sandbox_kill: bad arguments");
	kill_for(sb, reason, "sandbox.killed",
		 json_pack("{s:s}", "reason", paddock_end_reason_to_string(reason)));
	return 0;
}

/* ---- sandbox -------------------------------------------------------------------------- */

void pd_sandbox_make_id(char *buf, size_t size, const char *prefix)
{
	static const char alphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";
	unsigned char rnd[12];
	size_t o;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)((ts.tv_nsec >> (i % 8)) ^ getpid() ^ (int)i);
	}
	o = (size_t)snprintf(buf, size, "%s", prefix);
	for (size_t i = 0; i < sizeof(rnd) && o + 1 < size; i++)
		buf[o++] = alphabet[rnd[i] & 31];
	buf[o] = '\0';
}

int pd_sandbox_arm(paddock_sandbox *sb, paddock_error *err)
{
	paddock_ctx *ctx = sb->ctx;
	struct timeval tv;
	double t;

	if (fcntl(sb->ctl, F_SETFL, O_NONBLOCK) < 0)
		return pd_fail(err, errno, "set control socket non-blocking");
	sb->ctl_ev = event_new(ctx->base, sb->ctl, EV_READ | EV_PERSIST, ctl_cb, sb);
	sb->pidfd_ev = event_new(ctx->base, sb->pidfd, EV_READ, pidfd_cb, sb);
	sb->timeout_ev = evtimer_new(ctx->base, timeout_cb, sb);
	if (!sb->ctl_ev || !sb->pidfd_ev || !sb->timeout_ev)
		return pd_fail(err, ENOMEM, "allocate sandbox events");
	t = sb->spec->limits.timeout_s;
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	if (event_add(sb->ctl_ev, NULL) < 0 || event_add(sb->pidfd_ev, NULL) < 0 ||
	    (!sb->no_timeout && event_add(sb->timeout_ev, &tv) < 0))
		return pd_fail(err, EIO, "register sandbox events");
	if (sb->cg) {
		int ofd = pd_cgroup_oom_fd(sb->cg);

		if (ofd >= 0) {
			sb->oom_ev = event_new(ctx->base, ofd, EV_READ | EV_PERSIST, oom_cb, sb);
			if (!sb->oom_ev || event_add(sb->oom_ev, NULL) < 0)
				return pd_fail(err, ENOMEM, "watch for OOM kills");
		}
		sb->cpu_ev = evtimer_new(ctx->base, cpu_cb, sb);
		if (!sb->cpu_ev)
			return pd_fail(err, ENOMEM, "allocate CPU time check");
		arm_cpu_check(sb, 0);
	}
	sb->state = PD_SB_RUNNING;
	return 0;
}

int paddock_sandbox_create(paddock_ctx *ctx, const paddock_spec *spec,
			   paddock_sandbox **ret_sandbox, paddock_error *err)
{
	return paddock_sandbox_create_with(ctx, spec, NULL, ret_sandbox, err);
}

int pd_sandbox_secrets_prepare(const paddock_spec *spec, struct pd_secrets **ret_secrets,
			       char ***ret_env, char **ret_ca_pem, paddock_error *err)
{
	struct pd_secrets *s = NULL;
	_cleanup_strv_ char **env = NULL;
	_cleanup_free_ char *ca = NULL;
	int r;

	r = pd_secrets_new(spec, &s, err);
	if (r < 0)
		return r;
	if (s) {
		bool ok;

		env = calloc(s->n + 1, sizeof(char *));
		ca = strdup(s->ca_pem);
		ok = env && ca;
		for (size_t i = 0; ok && i < s->n; i++)
			if (asprintf(&env[i], "%s=%s", s->s[i].name, s->s[i].placeholder) < 0) {
				env[i] = NULL;
				ok = false;
			}
		if (!ok) {
			pd_secrets_free(s); /* SECURITY: wipes the values it read */
			return pd_fail(err, ENOMEM, "out of memory");
		}
	}
	*ret_secrets = s;
	*ret_env = TAKE_PTR(env);
	*ret_ca_pem = TAKE_PTR(ca);
	return 0;
}

/* The first half of a create: everything up to init building the root. */
static int create_begin(paddock_ctx *ctx, const paddock_spec *spec,
			const struct paddock_sandbox_opts *opts, paddock_sandbox **ret_sandbox,
			paddock_error *err)
{
	_cleanup_(paddock_sandbox_freep) paddock_sandbox *sb = NULL;
	int r;

	if (!ctx || !spec || !ret_sandbox)
		return pd_fail(err, EINVAL, "paddock_sandbox_create: arguments are required");
	r = paddock_spec_validate(spec, err);
	if (r < 0)
		return r;
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	sb->ctx = ctx;
	sb->pidfd = -EBADF;
	sb->ctl = -EBADF;
	sb->root_fd = -EBADF;
	sb->image_lock = -EBADF;
	sb->death_reason = PADDOCK_END_KILLED;
	pd_idmap_init(&sb->idmap);
	pd_sandbox_make_id(sb->id, sizeof(sb->id), "sb_");
	if (opts) {
		sb->no_timeout = opts->no_timeout;
		sb->spec_pooled = opts->pooled;
		sb->orphan_timeout_s = opts->orphan_timeout_s;
		if (opts->reconnect_dir) {
			if (strlen(opts->reconnect_dir) + 1 + strlen(sb->id) >= 108)
				return pd_fail_field(err, ENAMETOOLONG, "reconnect_dir",
						     "expected a directory path under %zu bytes",
						     107 - strlen(sb->id));
			if (asprintf(&sb->reconnect_path, "%s/%s", opts->reconnect_dir, sb->id) < 0)
				return pd_fail(err, ENOMEM, "allocate sandbox");
		}
	}
	r = pd_spec_dup(spec, &sb->spec, err);
	if (r < 0)
		return r;
	sb->spec->pooled = sb->spec_pooled;
	/*
	 * SECURITY: a pooled sandbox mounts no host directory while it waits: /workspace is its
	 * own until a claim binds the claim's workspace (or none) (paddock_sandbox_claim()).
	 */
	if (sb->spec_pooled) {
		free(sb->spec->workspace);
		sb->spec->workspace = NULL;
	}
	/*
	 * A pooled sandbox holds no secret while it waits: its claim reads the claim's values
	 * (paddock_sandbox_claim()), so none is read before the create that wants it.
	 */
	if (!sb->spec_pooled) {
		r = pd_sandbox_secrets_prepare(sb->spec, &sb->secrets, &sb->spec->secret_env,
					       &sb->spec->ca_pem, err);
		if (r < 0)
			return r;
	}
	r = pd_sandbox_image_prepare(sb, err);
	if (r < 0)
		return r;
	r = pd_launch_begin(sb, err);
	if (r < 0)
		return r;
	/*
	 * A pooled sandbox is made ahead of demand: its root is built at the lowest priority, so
	 * that it takes CPU only from idleness, never from commands already running. Its claim
	 * gives init the normal priority back (as root only: only root may raise it again).
	 */
	if (sb->spec_pooled && pd_idmap_host_root())
		(void)setpriority(PRIO_PROCESS, (id_t)sb->init_pid, POOL_NICE);
	*ret_sandbox = TAKE_PTR(sb);
	return 0;
}

/* The second half: init's READY, then the loop serves the sandbox. */
static int create_finish(paddock_sandbox *sb, paddock_error *err)
{
	int r = pd_launch_end(sb, err);

	if (r < 0) {
		json_t *f = json_object();
		pd_event_add_error(f, err);
		pd_emit(sb->ctx, PADDOCK_LEVEL_ERROR, "sandbox.create_failed", sb->id, NULL, f);
		return r;
	}
	r = pd_sandbox_arm(sb, err);
	if (r < 0)
		return r;
	r = pd_egress_start(sb, &sb->egress, err);
	if (r < 0)
		return r;
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.created", sb->id, NULL,
		json_pack("{s:s,s:b,s:I,s:i,s:s?,s:b}", "hostname", sb->spec->hostname, "rootless",
			  sb->idmap.rootless, "uid_base", (json_int_t)sb->idmap.outside_uid,
			  "landlock_abi", sb->landlock_abi, "cgroup", cgroup_name(sb), "pooled",
			  sb->spec->pooled));
	return 0;
}

int paddock_sandbox_create_with(paddock_ctx *ctx, const paddock_spec *spec,
				const struct paddock_sandbox_opts *opts,
				paddock_sandbox **ret_sandbox, paddock_error *err)
{
	paddock_sandbox *sb = NULL;
	int r = create_begin(ctx, spec, opts, &sb, err);

	if (r >= 0)
		r = create_finish(sb, err);
	if (r < 0) {
		paddock_sandbox_free(sb);
		return r;
	}
	*ret_sandbox = sb;
	return 0;
}

static void launch_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_sandbox *sb = arg;
	paddock_create_fn fn = sb->create_fn;
	void *userdata = sb->create_userdata;
	paddock_error err = { 0 };
	int r;

	(void)fd;
	event_free(sb->launch_ev);
	sb->launch_ev = NULL;
	sb->create_fn = NULL;
	if (what & EV_TIMEOUT)
		r = pd_fail(&err, ETIMEDOUT, "create sandbox: init did not get ready within %d s",
			    LAUNCH_ASYNC_TIMEOUT_S);
	else
		r = create_finish(sb, &err);
	if (r < 0) {
		paddock_sandbox_free(sb);
		sb = NULL;
	}
	fn(sb, r < 0 ? &err : NULL, userdata);
}

int paddock_sandbox_create_async(paddock_ctx *ctx, const paddock_spec *spec,
				 const struct paddock_sandbox_opts *opts, paddock_create_fn fn,
				 void *userdata, paddock_sandbox **ret_sandbox, paddock_error *err)
{
	const struct timeval tv = { LAUNCH_ASYNC_TIMEOUT_S, 0 };
	paddock_sandbox *sb = NULL;
	int r;

	if (!fn)
		return pd_fail(err, EINVAL, "paddock_sandbox_create_async: fn is required");
	r = create_begin(ctx, spec, opts, &sb, err);
	if (r < 0)
		return r;
	sb->launch_ev = event_new(ctx->base, sb->ctl, EV_READ, launch_cb, sb);
	if (!sb->launch_ev || event_add(sb->launch_ev, &tv) < 0) {
		paddock_sandbox_free(sb);
		return pd_fail(err, ENOMEM, "create sandbox");
	}
	sb->create_fn = fn;
	sb->create_userdata = userdata;
	*ret_sandbox = sb;
	return 0;
}

static void drop(paddock_sandbox *sb);

paddock_sandbox *paddock_sandbox_free(paddock_sandbox *sb)
{
	if (!sb)
		return NULL;
	if (sb->pidfd >= 0) {
		kill_init(sb);
		mark_dead(sb);
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.destroyed", sb->id, NULL, NULL);
	}
	if (sb->reconnect_path)
		(void)unlink(sb->reconnect_path); /* ENOENT: never made, or removed already */
	drop(sb);
	return NULL;
}

paddock_sandbox *paddock_sandbox_release(paddock_sandbox *sb)
{
	if (!sb)
		return NULL;
	if (sb->pidfd >= 0 && sb->state != PD_SB_DEAD)
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.released", sb->id, NULL, NULL);
	drop(sb);
	return NULL;
}

/* Frees what the supervisor holds of a sandbox; init lives on if it has somewhere to wait. */
static void drop(paddock_sandbox *sb)
{
	if (sb->launch_ev)
		event_free(sb->launch_ev); /* a create in progress: its callback never comes */
	release_network(sb);
	while (sb->sockets) {
		paddock_error e = { 0 };

		pd_fail(&e, ESRCH, "sandbox '%s' was released", sb->id);
		socket_done(sb, -1, &e);
	}
	while (sb->execs)
		exec_unlink_free(sb->execs);
	if (sb->ctl_ev)
		event_free(sb->ctl_ev);
	if (sb->pidfd_ev)
		event_free(sb->pidfd_ev);
	if (sb->timeout_ev)
		event_free(sb->timeout_ev);
	if (sb->oom_ev)
		event_free(sb->oom_ev);
	if (sb->cpu_ev)
		event_free(sb->cpu_ev);
	sb->cg = pd_cgroup_free(sb->cg);
	sb->ctl = pd_close(sb->ctl);
	sb->root_fd = pd_close(sb->root_fd);
	sb->pidfd = pd_close(sb->pidfd);
	pd_idmap_release(&sb->idmap);
	sb->image_lock = pd_close(sb->image_lock);
	paddock_spec_free(sb->spec);
	free(sb->reconnect_path);
	free(sb);
}

int paddock_sandbox_end(paddock_sandbox *sb, paddock_error *err)
{
	if (!sb)
		return pd_fail(err, EINVAL, "paddock_sandbox_end: sandbox is required");
	if (sb->state != PD_SB_DEAD)
		kill_init(sb);
	return 0;
}

bool paddock_sandbox_running(const paddock_sandbox *sb)
{
	return sb && sb->state == PD_SB_RUNNING;
}

void paddock_sandbox_set_exit_callback(paddock_sandbox *sb, paddock_sandbox_fn fn,
				       void *userdata)
{
	if (!sb)
		return;
	sb->exit_fn = fn;
	sb->exit_userdata = userdata;
}

int paddock_sandbox_usage(paddock_sandbox *sb, struct paddock_usage *ret_usage,
			  paddock_error *err)
{
	struct paddock_usage u = { 0 };
	struct pd_cgroup_stats st;

	if (!sb || !ret_usage)
		return pd_fail(err, EINVAL, "paddock_sandbox_usage: arguments are required");
	u.execs = sb->n_execs;
	u.seccomp_denied = sb->denied_total;
	if (sb->cg && sb->state == PD_SB_RUNNING && pd_cgroup_stats(sb->cg, &st, NULL) >= 0) {
		u.cgroup = true;
		u.memory_bytes = (int64_t)st.memory_current_bytes;
		u.memory_peak_bytes = (int64_t)st.memory_peak_bytes;
		u.cpu_s = (double)st.cpu_usage_us / 1e6;
		u.pids = (int64_t)st.pids_current;
	}
	*ret_usage = u;
	return 0;
}

uint64_t paddock_sandbox_seccomp_denied(const paddock_sandbox *sb)
{
	return sb ? sb->denied_total : 0;
}

paddock_exec *paddock_sandbox_exec_next(paddock_sandbox *sb, paddock_exec *prev)
{
	if (!sb)
		return NULL;
	return prev ? prev->next : sb->execs;
}

const char *paddock_sandbox_id(const paddock_sandbox *sb)
{
	return sb ? sb->id : NULL;
}

int paddock_gc(paddock_error *err)
{
	if (pd_cgroup_probe() == PD_CGROUP_NONE)
		return 0; /* nothing of ours can exist where we cannot write cgroups */
	return pd_cgroup_prune(err);
}

pid_t paddock_sandbox_init_pid(const paddock_sandbox *sb)
{
	return sb ? sb->init_pid : -1;
}

int paddock_sandbox_landlock_abi(const paddock_sandbox *sb)
{
	return sb ? sb->landlock_abi : 0;
}

/* ---- exec start ----------------------------------------------------------------------- */

paddock_exec *pd_exec_new(paddock_sandbox *sb, uint64_t id, paddock_exec_fn fn, void *userdata)
{
	paddock_exec *ex = calloc(1, sizeof(*ex));

	if (!ex)
		return NULL;
	ex->sb = sb;
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

		if (fstat(fds[i], &st) < 0 || (is_pty ? !S_ISCHR(st.st_mode) : !S_ISFIFO(st.st_mode)))
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
		     const char *const *env, char **ret_buf, size_t *ret_len, paddock_error *err)
{
	size_t len = sizeof(*hdr) + strlen(cwd) + 1;
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
	*ret_buf = buf;
	*ret_len = len;
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
			return pd_fail_field(err, EINVAL, "env",
					     "expected NAME=VALUE, got '%s'", PD_ESC(e));
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
		dispatch(sb, type, &msg, n, fds, &nfds);
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
	_cleanup_free_ char *buf = NULL;
	struct pd_ctl_exec hdr = { 0 };
	int fds[3];
	size_t nfds = 0, len = 0, argc = 0, envc = 0;
	paddock_exec *ex;
	int r;

	if (!sb || !opts)
		return pd_fail(err, EINVAL, "paddock_exec_start: arguments are required");
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	if (sb->spec->pooled)
		return pd_fail(err, EBUSY, "sandbox '%s' is pooled: claim it first", sb->id);
	r = check_opts(opts, &argc, &envc, err);
	if (r < 0)
		return r;
	hdr.id = sb->ctx->next_exec_id++;
	hdr.argc = (uint32_t)argc;
	hdr.envc = (uint32_t)envc;
	hdr.rows = opts->pty_rows;
	hdr.cols = opts->pty_cols;
	hdr.flags = opts->pty_streams & 7u;
	for (int i = 0; i < 3; i++) {
		if (hdr.flags & (1u << i))
			continue;
		if (opts->pipe_streams & (1u << i)) {
			hdr.flags |= PD_EXEC_PIPE_STDIN << i;
			continue;
		}
		if (opts->fds[i] < 0)
			continue;
		hdr.flags |= PD_EXEC_FD_STDIN << i;
		fds[nfds++] = opts->fds[i];
	}
	if (!(opts->timeout_s >= 0 && opts->timeout_s <= 1e7))
		return pd_fail_field(err, EINVAL, "timeout_s",
				     "expected seconds between 0 and 10000000");
	r = pack_exec(&hdr, opts->cwd ? opts->cwd : "", opts->argv, opts->env, &buf, &len, err);
	if (r < 0)
		return r;

	ex = pd_exec_new(sb, hdr.id, fn, userdata);
	if (!ex)
		return pd_fail(err, ENOMEM, "allocate exec");
	ex->output_captured = opts->output_captured;
	ex->flags = hdr.flags;
	ex->started_fn = opts->on_started;
	ex->argv0 = strdup(opts->argv[0]);
	ex->cwd = strdup(opts->cwd ? opts->cwd : sb->spec->cwd);
	if (!ex->argv0 || !ex->cwd) {
		exec_unlink_free(ex);
		return pd_fail(err, ENOMEM, "allocate exec");
	}
	/* the first command starts from the baselines pd_cgroup_open() took: zero */
	if (sb->n_execs++ > 0 && sb->cg)
		(void)pd_cgroup_stats(sb->cg, &ex->base, NULL);

	r = pd_ctl_send(sb->ctl, PD_CTL_EXEC, buf, len, fds, nfds);
	if (r < 0) {
		exec_unlink_free(ex);
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
			exec_unlink_free(ex);
			return r;
		}
	}
	if (!ex->done && opts->timeout_s > 0) {
		struct timeval tv = { .tv_sec = (time_t)opts->timeout_s };

		tv.tv_usec = (suseconds_t)((opts->timeout_s - (double)tv.tv_sec) * 1e6);
		ex->timeout_ev = evtimer_new(sb->ctx->base, exec_timeout_cb, ex);
		if (!ex->timeout_ev || evtimer_add(ex->timeout_ev, &tv) < 0) {
			(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
			return pd_fail(err, ENOMEM, "arm the command's timeout");
		}
	}
	if (ret_exec)
		*ret_exec = ex;
	return 0;
}

int paddock_exec_signal(paddock_exec *ex, int sig, paddock_error *err)
{
	struct pd_ctl_signal s;
	int r;

	if (!ex || sig <= 0 || sig >= _NSIG)
		return pd_fail_field(err, EINVAL, "signal", "expected a signal number, got %d", sig);
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

int paddock_exec_close_stdin(paddock_exec *ex, paddock_error *err)
{
	struct pd_ctl_id m;
	int r;

	if (!ex)
		return pd_fail(err, EINVAL, "paddock_exec_close_stdin: exec is required");
	ex->fds[0] = pd_close(ex->fds[0]);
	if (ex->done || ex->sb->state != PD_SB_RUNNING)
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

static int ask_socket(paddock_sandbox *sb, struct pd_socket_req *q, paddock_error *err)
{
	struct pd_ctl_socket req = { .domain = q->domain, .type = q->type };
	struct pd_socket_req **tail;
	int r;

	if ((q->domain != AF_INET && q->domain != AF_INET6) ||
	    (q->type != SOCK_STREAM && q->type != SOCK_DGRAM))
		return pd_fail(err, EAFNOSUPPORT,
			       "expected an AF_INET or AF_INET6 stream or datagram socket");
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	r = pd_ctl_send(sb->ctl, PD_CTL_SOCKET, &req, sizeof(req), NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "ask init for a socket");
	for (tail = &sb->sockets; *tail; tail = &(*tail)->next)
		;
	q->next = NULL;
	*tail = q;
	return 0;
}

int paddock_sandbox_socket_async(paddock_sandbox *sb, int domain, int type,
				 paddock_socket_fn fn, void *userdata, paddock_error *err)
{
	struct pd_socket_req *q;
	int r;

	if (!sb || !fn)
		return pd_fail(err, EINVAL, "paddock_sandbox_socket_async: arguments are required");
	q = calloc(1, sizeof(*q));
	if (!q)
		return pd_fail(err, ENOMEM, "allocate socket request");
	*q = (struct pd_socket_req){ .domain = domain, .type = type, .fn = fn,
				     .userdata = userdata, .fd = -1 };
	r = ask_socket(sb, q, err);
	if (r < 0)
		free(q);
	return r;
}

int paddock_sandbox_socket(paddock_sandbox *sb, int domain, int type, int *ret_fd,
			   paddock_error *err)
{
	struct pd_socket_req q = { .domain = domain, .type = type, .fd = -1 };
	int r;

	if (!sb || !ret_fd)
		return pd_fail(err, EINVAL, "paddock_sandbox_socket: arguments are required");
	r = ask_socket(sb, &q, err);
	if (r < 0)
		return r;
	while (!q.done) {
		union {
			struct pd_ctl_socket_fd s;
			struct pd_ctl_exited exited;
			struct pd_ctl_started started;
			struct pd_ctl_exec_error error;
		} msg;
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t mtype = 0;
		ssize_t n;

		n = pd_ctl_recv_wait(sb->ctl, EXEC_START_TIMEOUT_MS, &mtype, &msg, sizeof(msg), fds,
				     &nfds);
		if (n < 0 || mtype == 0) {
			/* the request cannot be answered any more: take it off the queue */
			for (struct pd_socket_req **pp = &sb->sockets; *pp; pp = &(*pp)->next)
				if (*pp == &q) {
					*pp = q.next;
					break;
				}
			for (size_t i = 0; i < nfds; i++)
				pd_close(fds[i]);
			if (n == -ETIMEDOUT)
				return pd_fail(err, ETIMEDOUT, "wait for a socket from init");
			return pd_fail(err, EPIPE, "the sandbox ended");
		}
		dispatch(sb, mtype, &msg, n, fds, &nfds);
		for (size_t i = 0; i < nfds; i++)
			pd_close(fds[i]);
	}
	if (q.fd < 0) {
		*err = q.err;
		return -(q.err.code ? q.err.code : EIO);
	}
	*ret_fd = q.fd;
	return 0;
}
