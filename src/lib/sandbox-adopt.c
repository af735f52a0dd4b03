/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandboxes that outlive their supervisor. A sandbox created with a reconnect_path keeps
 * running when its supervisor dies: its init holds the id slot's lock and listens on that
 * path (launch.c, init.c). A restarted supervisor calls paddock_sandbox_adopt() with the
 * handle it stored: it connects, gets init's pidfd from the kernel (SO_PEERPIDFD, never a
 * pid from a file), receives every command init still knows with its pipes and terminal,
 * then READY with the root fd, and takes the cgroup back without touching its members.
 *
 * Trust: the handle is the supervisor's own record (its state directory). What init sends
 * is checked like any other message from inside (sandbox.c).
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "util/cleanup.h"

#define ADOPT_TIMEOUT_MS 5000
#define HANDLE_VERSION 1

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif


int paddock_sandbox_handle(const paddock_sandbox *sb, char **ret_json, paddock_error *err)
{
	json_t *o;
	char *s;

	if (!sb || !ret_json)
		return pd_fail(err, EINVAL, "paddock_sandbox_handle: arguments are required");
	if (!sb->reconnect_path)
		return pd_fail(err, EINVAL, "sandbox '%s' was created without a reconnect directory",
			       sb->id);
	o = json_pack("{s:i,s:s,s:s,s:b,s:I,s:I,s:i,s:b,s:i}", "v", HANDLE_VERSION, "id", sb->id,
		      "socket", sb->reconnect_path, "rootless", sb->idmap.rootless, "uid",
		      (json_int_t)sb->idmap.outside_uid, "gid", (json_int_t)sb->idmap.outside_gid,
		      /* no sandbox has a wall clock of its own now; earlier readers want it */
		      "slot", (int)sb->idmap.slot, "no_timeout", 1,
		      "orphan_timeout_s", sb->orphan_timeout_s);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return pd_fail(err, ENOMEM, "format handle");
	*ret_json = s;
	return 0;
}

static int parse_handle(paddock_sandbox *sb, const char *handle_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *o = NULL;
	const char *id = NULL, *path = NULL;
	json_int_t uid = 0, gid = 0;
	int v = 0, rootless = 0, slot = 0, no_timeout = 0, orphan = 0;
	json_error_t jerr;

	o = json_loads(handle_json, 0, &jerr);
	if (!o || json_unpack_ex(o, &jerr, 0, "{s:i,s:s,s:s,s:b,s:I,s:I,s:i,s?b,s:i}", "v", &v,
				 "id", &id, "socket", &path, "rootless", &rootless, "uid", &uid,
				 "gid", &gid, "slot", &slot, "no_timeout", &no_timeout,
				 "orphan_timeout_s", &orphan) < 0)
		return pd_fail_field(err, EINVAL, "handle", "malformed sandbox handle: %s",
				     jerr.text);
	if (v != HANDLE_VERSION || strlen(id) >= sizeof(sb->id) || strncmp(id, "sb_", 3) != 0 ||
	    strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path) || slot < 0 ||
	    slot >= (json_int_t)PD_IDMAP_SLOTS ||
	    uid < 0 || gid < 0 || uid > UINT32_MAX || gid > UINT32_MAX)
		return pd_fail_field(err, EINVAL, "handle", "unsupported sandbox handle");
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->reconnect_path = strdup(path);
	if (!sb->reconnect_path)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	sb->idmap.rootless = rootless;
	sb->idmap.outside_uid = (uid_t)uid;
	sb->idmap.outside_gid = (gid_t)gid;
	sb->idmap.slot = (unsigned)slot;
	sb->idmap.init_uid = rootless ? PD_SANDBOX_UID : 0;
	sb->idmap.init_gid = rootless ? PD_SANDBOX_GID : 0;
	pd_idmap_own_slot(&sb->idmap);
	(void)no_timeout; /* read and ignored: a sandbox has no wall clock of its own now */
	sb->orphan_timeout_s = orphan;
	return 0;
}

/* Connects to init and takes its pidfd from the kernel's view of the peer. */
static int connect_init(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int pidfd = -EBADF;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pd_fail(err, errno, "socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb->reconnect_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return pd_fail(err, errno, "connect to the init of '%s'", sb->id);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return pd_fail(err, errno, "peer credentials");
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		/* COMPAT(kernel 6.5): no SO_PEERPIDFD; the listener's pid is pinned by its socket */
		pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
		if (pidfd < 0)
			return pd_fail(err, errno, "pidfd of the init of '%s'", sb->id);
	}
	sb->pidfd = pidfd;
	sb->init_pid = cred.pid;
	sb->ctl = TAKE_FD(fd);
	return 0;
}

static int adopt_exec(paddock_sandbox *sb, const struct pd_ctl_exec_state *s, int *fds,
		      size_t nfds, paddock_error *err)
{
	paddock_exec *ex;

	for (ex = sb->execs; ex; ex = ex->next)
		if (ex->id == s->id)
			return pd_fail(err, EPROTO, "init reported command %llu twice",
				       (unsigned long long)s->id);
	ex = pd_exec_new(sb, s->id, NULL, NULL);
	if (!ex)
		return pd_fail(err, ENOMEM, "allocate exec");
	/*
	 * COMPAT(paddock 0.1 inits): an init of before kept the stdin flag of a command whose
	 * stdin was closed and sends one fd fewer: the missing one can only be stdin's
	 */
	if (!pd_exec_assign_fds(ex, s->flags, fds, nfds) &&
	    (!(s->flags & PD_EXEC_PIPE_STDIN) ||
	     !pd_exec_assign_fds(ex, s->flags & ~PD_EXEC_PIPE_STDIN, fds, nfds)))
		return pd_fail(err, EPROTO, "init sent the wrong fds for command %llu",
			       (unsigned long long)s->id);
	ex->pid = s->pid;
	ex->output_captured = s->flags & (PD_EXEC_PIPE_STDOUT | PD_EXEC_PIPE_STDERR);
	/* exec ids stay unique in the sandbox across supervisors */
	if (sb->ctx->next_exec_id <= s->id)
		sb->ctx->next_exec_id = s->id + 1;
	sb->n_execs++;
	if (s->exited) {
		struct pd_ctl_exited x = s->exit;

		x.id = s->id;
		if (pd_exec_exited(ex, &x) < 0)
			return pd_fail(err, EPROTO, "impossible exit status from init");
	}
	return 0;
}

/* EXEC_STATE for each command init knows, then READY with the root fd. */
static int resync(paddock_sandbox *sb, paddock_error *err)
{
	for (;;) {
		union {
			struct pd_ctl_exec_state state;
			struct pd_ctl_ready ready;
		} msg;
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t type = 0;
		ssize_t n;
		int r;

		memset(&msg, 0, sizeof(msg));
		n = pd_ctl_recv_wait(sb->ctl, ADOPT_TIMEOUT_MS, &type, &msg, sizeof(msg), fds, &nfds);
		if (n < 0 || type == 0)
			return pd_fail(err, n < 0 ? (int)-n : EPIPE, "receive from init");
		/* an init of an earlier version sends no seccomp count at the end: it stays 0 */
		if (type == PD_CTL_EXEC_STATE &&
		    (n == (ssize_t)sizeof(msg.state) ||
		     n == (ssize_t)(sizeof(msg.state) - sizeof(msg.state.exit.denied)))) {
			r = adopt_exec(sb, &msg.state, fds, nfds, err);
			if (r < 0) {
				for (size_t i = 0; i < nfds; i++)
					pd_close(fds[i]);
				return r;
			}
			continue;
		}
		/* an init of the previous version sends landlock_abi alone */
		if (type == PD_CTL_READY && nfds == 1 &&
		    (n == (ssize_t)sizeof(msg.ready) || n == (ssize_t)sizeof(int32_t))) {
			struct stat st;

			if (fstat(fds[0], &st) < 0 || !S_ISDIR(st.st_mode)) {
				pd_close(fds[0]);
				return pd_fail(err, EPROTO, "init sent no root directory");
			}
			sb->root_fd = fds[0];
			sb->landlock_abi = msg.ready.landlock_abi > 0 && msg.ready.landlock_abi < 64
						   ? msg.ready.landlock_abi
						   : 0;
			return 0;
		}
		for (size_t i = 0; i < nfds; i++)
			pd_close(fds[i]);
		return pd_fail(err, EPROTO, "unexpected message %u from init", type);
	}
}

int paddock_sandbox_adopt(paddock_ctx *ctx, const paddock_spec *spec, const char *handle_json,
			  paddock_sandbox **ret_sandbox, paddock_error *err)
{
	_cleanup_(paddock_sandbox_freep) paddock_sandbox *sb = NULL;
	int r;

	if (!ctx || !spec || !handle_json || !ret_sandbox)
		return pd_fail(err, EINVAL, "paddock_sandbox_adopt: arguments are required");
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
	r = parse_handle(sb, handle_json, err);
	if (r < 0)
		return r;
	r = pd_spec_dup(spec, &sb->spec, err);
	if (r >= 0 && sb->spec->user == PD_USER_ROOT) {
		/* rootless, such a sandbox's invoker is its uid 0 (pd_idmap_acquire()) */
		sb->idmap.root_user = true;
		if (sb->idmap.rootless)
			sb->idmap.init_uid = sb->idmap.init_gid = 0;
	}
	if (r >= 0)
		r = connect_init(sb, err);
	if (r >= 0)
		r = resync(sb, err);
	if (r >= 0 && !sb->idmap.rootless && pd_cgroup_probe() != PD_CGROUP_NONE)
		r = pd_cgroup_adopt(sb->idmap.slot, &sb->cg, err);
	if (r >= 0)
		r = pd_sandbox_arm(sb, err);
	/* the listeners died with the old supervisor: ask init for new ones, same ports */
	if (r >= 0)
		r = pd_sandbox_egress_start(sb, err);
	if (r < 0) {
		pd_error_prefix(err, "adopt sandbox '%s'", sb->id);
		/* SECURITY: what cannot be supervised is ended, never left running unwatched */
		if (sb->pidfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		return r;
	}
	pd_emit(ctx, PADDOCK_LEVEL_INFO, "sandbox.adopted", sb->id, NULL,
		json_pack("{s:i}", "commands", (int)sb->n_execs));
	*ret_sandbox = TAKE_PTR(sb);
	return 0;
}
