/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reconnect sockets nobody takes over. A sandbox created with a reconnect_dir has its init
 * listen at `<reconnect_dir>/<sandbox id>` (launch.c, init.c) for a supervisor that died;
 * sandbox-adopt.c takes over those a restarted supervisor has records of. What is left is
 * ended here: a sandbox a crash left between its launch and its supervisor's record of it,
 * or one whose teardown a crash interrupted. Its init is killed through a pidfd the kernel
 * gives for the peer of a connection (SO_PEERPIDFD), never through a pid read from a file;
 * the kernel takes every process of the sandbox with its init.
 *
 * Trust: the directory is the supervisor's own (only it can reach it); whoever listens there
 * is an init of its sandboxes, or the socket is stale.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "cgroup.h"
#include "error.h"
#include "util/cleanup.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* how long a sweep waits, in all, for the inits it killed to be gone */
#define SWEEP_WAIT_MS 5000

PD_DEFINE_CLEANUP(DIR, closedir)

/*
 * A sandbox paused before its supervisor died is frozen, init with it; on cgroup v1 a frozen
 * task takes its SIGKILL only once thawed, so the kill would wait for ever and the slot stay
 * taken. The slot is the kernel's word (/proc/PID/cgroup of the socket's peer, pinned by our
 * connection), and only a slot of paddock's own hierarchy is thawed, as recover does.
 */
static void thaw_slot_of(pid_t pid)
{
	struct pd_cgroup *cg = NULL;
	unsigned slot;

	if (pd_cgroup_probe() == PD_CGROUP_NONE || pd_cgroup_freezer_slot(pid, &slot) < 0)
		return; /* rootless, or no freezer: nothing was frozen */
	if (pd_cgroup_adopt(slot, &cg, NULL) < 0)
		return;
	(void)pd_cgroup_freeze(cg, false, NULL);
	pd_cgroup_free(cg);
}

int paddock_orphan_end(const char *socket_path, int *ret_pidfd, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF, pidfd = -EBADF;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(pidfd), len_cred = sizeof(struct ucred);
	struct ucred cred;

	if (!socket_path)
		return pd_fail(err, EINVAL, "paddock_orphan_end: a socket path is required");
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return pd_fail(err, ENAMETOOLONG, "reconnect socket '%s'", PD_ESC(socket_path));
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pd_fail(err, errno, "socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ECONNREFUSED || errno == ENOENT)
			return 0; /* nobody listens: its sandbox has ended */
		return pd_fail(err, errno, "connect to '%s'", PD_ESC(socket_path));
	}
	/* the listener's pid is pinned by its socket while our connection holds it */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len_cred) < 0)
		return pd_fail(err, errno, "peer credentials at '%s'", PD_ESC(socket_path));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		/* COMPAT(kernel 6.5): no SO_PEERPIDFD */
		pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
		if (pidfd < 0)
			return pd_fail(err, errno, "pidfd of the init at '%s'",
				       PD_ESC(socket_path));
	}
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return pd_fail(err, errno, "kill the init at '%s'", PD_ESC(socket_path));
	thaw_slot_of(cred.pid);
	if (ret_pidfd)
		*ret_pidfd = TAKE_FD(pidfd);
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits until each pidfd reads as ready (its init, and so every process of its sandbox, is
 * gone), up to SWEEP_WAIT_MS in all; closes them.
 */
static void wait_gone(struct pollfd *p, size_t n)
{
	int64_t deadline = now_ms() + SWEEP_WAIT_MS;
	size_t left = n;

	while (left > 0) {
		int64_t wait = deadline - now_ms();
		int r;

		if (wait <= 0)
			break; /* killed all the same: the kernel finishes without us */
		r = poll(p, n, (int)wait);
		if (r < 0 && errno != EINTR)
			break;
		for (size_t i = 0; r > 0 && i < n; i++)
			if (p[i].fd >= 0 && p[i].revents) {
				p[i].fd = pd_close(p[i].fd);
				left--;
			}
	}
	for (size_t i = 0; i < n; i++)
		if (p[i].fd >= 0)
			(void)pd_close(p[i].fd);
}

int paddock_sweep_orphans(const char *reconnect_dir, paddock_orphan_fn keep,
			  paddock_orphan_ended_fn ended, void *userdata, paddock_error *err)
{
	_cleanup_(closedirp) DIR *dh = NULL;
	_cleanup_free_ struct pollfd *gone = NULL;
	paddock_error first = { 0 };
	size_t n_gone = 0;
	int n_ended = 0;
	struct dirent *de;

	if (!reconnect_dir || !keep)
		return pd_fail(err, EINVAL, "paddock_sweep_orphans: arguments are required");
	dh = opendir(reconnect_dir);
	if (!dh)
		return pd_fail(err, errno, "open '%s'", PD_ESC(reconnect_dir));
	while ((de = readdir(dh))) {
		char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
		paddock_error e = { 0 };
		int pidfd = -EBADF, r;

		if (de->d_name[0] == '.')
			continue;
		/* too long to be a socket's path: nothing of a sandbox's */
		if (snprintf(path, sizeof(path), "%s/%s", reconnect_dir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		if (keep(de->d_name, path, userdata))
			continue;
		r = paddock_orphan_end(path, &pidfd, &e);
		if (r < 0) {
			/* its socket stays: a later sweep tries again (init ends by its timeout) */
			if (!first.code) {
				first = e;
				pd_error_prefix(&first, "end sandbox '%s'", PD_ESC(de->d_name));
			}
			continue;
		}
		if (r > 0) {
			struct pollfd *p = reallocarray(gone, n_gone + 1, sizeof(*p));

			if (p) {
				gone = p;
				gone[n_gone++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
			} else {
				(void)pd_close(pidfd); /* killed all the same; not waited for */
			}
			n_ended++;
			if (ended)
				ended(de->d_name, userdata);
		}
		(void)unlinkat(dirfd(dh), de->d_name, 0); /* ENOENT: init removed it as it died */
	}
	wait_gone(gone, n_gone);
	if (first.code) {
		if (err)
			*err = first;
		return -first.code;
	}
	return n_ended;
}
