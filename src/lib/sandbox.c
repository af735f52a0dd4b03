/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandboxes, as the supervisor sees them (their commands: exec.c). A sandbox is its init (held by
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
#include "egress-module.h"
#include "egress.h"
#include "error.h"
#include "secrets.h"
#include "events.h"
#include "seccomp-bpf.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define EXEC_START_TIMEOUT_MS 30000

#define LAUNCH_ASYNC_TIMEOUT_S 30
#define POOL_NICE	       19

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

void paddock_ctx_reserve_exec_ids(paddock_ctx *ctx, uint64_t used)
{
	if (ctx && used < UINT64_MAX && ctx->next_exec_id <= used)
		ctx->next_exec_id = used + 1;
}

paddock_ctx *paddock_ctx_free(paddock_ctx *ctx)
{
	if (!ctx)
		return NULL;
	if (ctx->resolver || ctx->upstream_tls) {
		const struct pd_egress_ops *eg;

		/* made by the egress half: it is loaded */
		if (pd_egress_ops(&eg, NULL) >= 0) {
			eg->resolver_free(ctx->resolver);
			eg->upstream_tls_free(ctx->upstream_tls);
		}
	}
	free(ctx->resolve_hosts);
	pd_strv_free(ctx->upstream_ca);
	free(ctx->image_store);
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

static void kill_init(paddock_sandbox *sb)
{
	if (sb->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	/* a frozen task takes its SIGKILL only once thawed (sandbox-pause.c) */
	if (sb->paused == PD_PAUSE_FREEZER && sb->cg)
		(void)pd_cgroup_freeze(sb->cg, false, NULL);
}

void pd_sandbox_protocol_violation(paddock_sandbox *sb, const char *what)
{
	json_t *f = json_pack("{s:s}", "reason", what);

	pd_emit(sb->ctx, PADDOCK_LEVEL_ERROR, "sandbox.protocol_violation", sb->id, NULL, f);
	kill_init(sb);
}

/*
 * init's count of denied calls. From inside, so only ever taken upwards, and never by more
 * than a sandbox could make in the time (a billion: a bound, not a measure).
 */
void pd_sandbox_note_denied(paddock_sandbox *sb, uint64_t total)
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

	pd_sandbox_note_denied(sb, m->total);
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
		json_pack("{s:s,s:s,s:i,s:s,s:I,s:I}", "syscall", name ? name : "unknown", "arch",
			  arch ? arch : "unknown", "pid", m->pid > 0 ? (int)m->pid : 0, "command",
			  comm, "total", (json_int_t)sb->denied_total, "unreported",
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
static void on_socket(paddock_sandbox *sb, const struct pd_ctl_socket_fd *m, int *fds, size_t *nfds)
{
	struct pd_socket_req *q = sb->sockets;
	paddock_error e = { 0 };
	int v = 0;
	socklen_t len = sizeof(v);

	if (!q || *nfds > 1 || (*nfds == 0 && m->error <= 0))
		return pd_sandbox_protocol_violation(sb, "malformed socket reply");
	if (*nfds == 0) {
		pd_fail(&e, m->error < 4096 ? m->error : EIO, "make a socket in the sandbox");
		return socket_done(sb, -1, &e);
	}
	/* SECURITY: from inside: it must be the socket asked for */
	if (getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != q->domain ||
	    getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != q->type)
		return pd_sandbox_protocol_violation(sb, "init sent the wrong socket");
	*nfds = 0;
	socket_done(sb, fds[0], NULL);
}

/* Handles one message from init; fds it does not take are closed by the caller. */
void pd_sandbox_dispatch(paddock_sandbox *sb, uint32_t type, const void *buf, ssize_t n, int *fds,
			 size_t *nfds)
{
	/* (an init of an earlier version, adopted, sends no seccomp count: it stays 0) */
	if (type == PD_CTL_EXITED &&
	    (n == (ssize_t)sizeof(struct pd_ctl_exited) || n == PD_CTL_EXITED_V0_SIZE)) {
		struct pd_ctl_exited x = { 0 };
		memcpy(&x, buf, (size_t)n);
		pd_exec_on_exited(sb, &x);
		return;
	}
	if (type == PD_CTL_STARTED &&
	    (n == (ssize_t)sizeof(struct pd_ctl_started) || n == PD_CTL_STARTED_V0_SIZE)) {
		struct pd_ctl_started s = { 0 };
		memcpy(&s, buf, (size_t)n);
		pd_exec_on_started(sb, &s, fds, nfds);
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

		memcpy(&e, buf, sizeof(e));
		pd_exec_on_error(sb, &e);
		return;
	}
	pd_sandbox_protocol_violation(sb, "unexpected message");
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
				pd_sandbox_protocol_violation(sb, "malformed message");
			return;
		}
		pd_sandbox_dispatch(sb, type, buf, n, fds, &nfds);
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
	const struct pd_egress_ops *eg;

	/* made by the egress half: it is loaded */
	if ((sb->egress || sb->secrets) && pd_egress_ops(&eg, NULL) >= 0) {
		eg->free(sb->egress);
		eg->secrets_free(sb->secrets);
	}
	sb->egress = NULL;
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
		pd_exec_finish(ex);
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

void pd_sandbox_limits_bound(paddock_sandbox *sb)
{
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

	if (fcntl(sb->ctl, F_SETFL, O_NONBLOCK) < 0)
		return pd_fail(err, errno, "set control socket non-blocking");
	sb->ctl_ev = event_new(ctx->base, sb->ctl, EV_READ | EV_PERSIST, ctl_cb, sb);
	sb->pidfd_ev = event_new(ctx->base, sb->pidfd, EV_READ, pidfd_cb, sb);
	if (!sb->ctl_ev || !sb->pidfd_ev)
		return pd_fail(err, ENOMEM, "allocate sandbox events");
	/*
	 * No wall clock of the sandbox's own: limits.timeout_s is each command's (exec.c), for
	 * every front end; a sandbox lives as long as its supervisor keeps it (paddockd: its TTL).
	 */
	if (event_add(sb->ctl_ev, NULL) < 0 || event_add(sb->pidfd_ev, NULL) < 0)
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
	const struct pd_egress_ops *eg;
	struct pd_secrets *s = NULL;
	_cleanup_strv_ char **env = NULL;
	_cleanup_free_ char *ca = NULL;
	int r;

	if (spec->n_secrets == 0) {
		/* the egress half is not needed */
		*ret_secrets = NULL;
		*ret_env = NULL;
		*ret_ca_pem = NULL;
		return 0;
	}
	r = pd_egress_ops(&eg, err);
	if (r < 0)
		return r;
	r = eg->secrets_new(spec, &s, err);
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
			eg->secrets_free(s); /* SECURITY: wipes the values it read */
			return pd_fail(err, ENOMEM, "out of memory");
		}
	}
	*ret_secrets = s;
	*ret_env = TAKE_PTR(env);
	*ret_ca_pem = TAKE_PTR(ca);
	return 0;
}

int pd_sandbox_egress_start(paddock_sandbox *sb, paddock_error *err)
{
	const struct pd_egress_ops *eg;
	int r;

	if (sb->spec->network.mode == PD_NET_NONE)
		return 0; /* loopback only: no proxy, and the egress half is not needed */
	r = pd_egress_ops(&eg, err);
	if (r < 0)
		return r;
	return eg->start(sb, &sb->egress, err);
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
	sb->upper_fd = -EBADF;
	sb->image_lock = -EBADF;
	sb->death_reason = PADDOCK_END_KILLED;
	pd_idmap_init(&sb->idmap);
	pd_sandbox_make_id(sb->id, sizeof(sb->id), "sb_");
	if (opts && opts->id) {
		/* the form pd_sandbox_make_id() makes: it names a socket file and a cgroup */
		if (strlen(opts->id) != 15 || strncmp(opts->id, "sb_", 3) != 0 ||
		    strspn(opts->id + 3, "abcdefghijkmnpqrstuvwxyz23456789") != 12)
			return pd_fail_field(err, EINVAL, "id",
					     "expected an id such as 'sb_k2q7m3x9abcd', got '%s'",
					     PD_ESC(opts->id));
		snprintf(sb->id, sizeof(sb->id), "%s", opts->id);
	}
	if (opts) {
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
	/* a sandbox with egress needs the egress half: found now, before anything is made */
	if (sb->spec->network.mode != PD_NET_NONE) {
		const struct pd_egress_ops *eg;

		r = pd_egress_ops(&eg, err);
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
	r = pd_sandbox_egress_start(sb, err);
	if (r < 0)
		return r;
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.created", sb->id, NULL,
			json_pack("{s:s,s:b,s:I,s:i,s:s?,s:b}", "hostname", sb->spec->hostname,
				  "rootless", sb->idmap.rootless, "uid_base",
				  (json_int_t)sb->idmap.outside_uid, "landlock_abi",
				  sb->landlock_abi, "cgroup", pd_sandbox_cgroup_name(sb), "pooled",
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
	pd_code_free(sb);
	while (sb->execs)
		pd_exec_unlink_free(sb->execs);
	if (sb->ctl_ev)
		event_free(sb->ctl_ev);
	if (sb->pidfd_ev)
		event_free(sb->pidfd_ev);
	if (sb->oom_ev)
		event_free(sb->oom_ev);
	if (sb->cpu_ev)
		event_free(sb->cpu_ev);
	sb->cg = pd_cgroup_free(sb->cg);
	sb->ctl = pd_close(sb->ctl);
	sb->root_fd = pd_close(sb->root_fd);
	sb->upper_fd = pd_close(sb->upper_fd);
	sb->pidfd = pd_close(sb->pidfd);
	pd_idmap_release(&sb->idmap);
	sb->image_lock = pd_close(sb->image_lock);
	paddock_spec_free(sb->spec);
	free(sb->reconnect_path);
	free(sb->record_raw);
	free(sb->record);
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

void paddock_sandbox_set_exit_callback(paddock_sandbox *sb, paddock_sandbox_fn fn, void *userdata)
{
	if (!sb)
		return;
	sb->exit_fn = fn;
	sb->exit_userdata = userdata;
}

int paddock_sandbox_usage(paddock_sandbox *sb, struct paddock_usage *ret_usage, paddock_error *err)
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
	paddock_exec *ex;

	if (!sb)
		return NULL;
	/* the library's own commands (the code server) are no front end's */
	for (ex = prev ? prev->next : sb->execs; ex && (ex->flags & PD_EXEC_CODE_SERVER);
	     ex = ex->next)
		;
	return ex;
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
	if (pd_sandbox_check_not_paused(sb, err) < 0)
		return -EBUSY;
	r = pd_ctl_send(sb->ctl, PD_CTL_SOCKET, &req, sizeof(req), NULL, 0);
	if (r < 0)
		return pd_fail(err, r, "ask init for a socket");
	for (tail = &sb->sockets; *tail; tail = &(*tail)->next)
		;
	q->next = NULL;
	*tail = q;
	return 0;
}

int paddock_sandbox_socket_async(paddock_sandbox *sb, int domain, int type, paddock_socket_fn fn,
				 void *userdata, paddock_error *err)
{
	struct pd_socket_req *q;
	int r;

	if (!sb || !fn)
		return pd_fail(err, EINVAL, "paddock_sandbox_socket_async: arguments are required");
	q = calloc(1, sizeof(*q));
	if (!q)
		return pd_fail(err, ENOMEM, "allocate socket request");
	*q = (struct pd_socket_req){
		.domain = domain, .type = type, .fn = fn, .userdata = userdata, .fd = -1
	};
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
		pd_sandbox_dispatch(sb, mtype, &msg, n, fds, &nfds);
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
