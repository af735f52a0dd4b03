/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launching a sandbox: clone3() into new user, mount, pid, net, ipc, uts and cgroup
 * namespaces with a pidfd, write the child's id maps from outside, say GO, set up the cgroup
 * and move init into it while init builds its root, say CGROUP, and wait for init's READY
 * (or the error it hit). Runs in the supervisor; the child continues in
 * pd_init_main() and never returns here.
 *
 * The supervisor must be single-threaded when it clones (the child runs on a copy of its
 * memory and may allocate).
 */
#include <errno.h>
#include <linux/sched.h>
#include <poll.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "error.h"
#include "init.h"
#include "init-image.h"
#include "rootfs.h"
#include "sandbox.h"
#include "util/cleanup.h"

#define LAUNCH_READY_TIMEOUT_MS 30000

/*
 * A sandbox that joins a network namespace (include/paddock/oci.h: a Kubernetes pod's) is
 * cloned from inside it (`netns` >= 0): init, in a user namespace of its own, could not
 * setns() into a namespace the host's user namespace owns. The supervisor enters it for the
 * clone and goes back to `home` at once (single-threaded: nothing else of ours runs then).
 */
static pid_t clone_init(int netns, int home, int *ret_pidfd)
{
	struct clone_args args = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
			 CLONE_NEWCGROUP | CLONE_PIDFD | CLONE_CLEAR_SIGHAND |
			 (netns < 0 ? CLONE_NEWNET : 0),
		.pidfd = (uint64_t)(uintptr_t)ret_pidfd,
		.exit_signal = SIGCHLD,
	};
	pid_t pid;
	int e;

	if (netns >= 0 && setns(netns, CLONE_NEWNET) < 0)
		return -1;
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	e = errno;
	/* SECURITY: the supervisor never stays in a namespace a sandbox shares */
	if (netns >= 0 && pid != 0 && setns(home, CLONE_NEWNET) < 0)
		abort();
	errno = e;
	return pid;
}

static int open_netns(const char *path, int *ret_netns, int *ret_home, paddock_error *err)
{
	_cleanup_close_ int netns = -EBADF, home = -EBADF;

	netns = open(path, O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return pd_fail_field(err, errno, "linux.namespaces.network.path", "open '%s'",
				     PD_ESC(path));
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		return pd_fail(err, errno, "open this process's network namespace");
	*ret_netns = TAKE_FD(netns);
	*ret_home = TAKE_FD(home);
	return 0;
}

void pd_launch_cgroup_limits(const paddock_spec *spec, struct pd_cgroup_limits *ret_limits)
{
	*ret_limits = (struct pd_cgroup_limits){
		.memory_bytes = spec->limits.memory_bytes,
		.pids = spec->limits.pids,
		.cpus = spec->limits.cpus,
	};
}

/* Takes the slot's cgroup as root; rootless, or where cgroups cannot be written, none. */
static int open_cgroup(paddock_sandbox *sb, paddock_error *err)
{
	const typeof(sb->spec->limits) *l = &sb->spec->limits;
	struct pd_cgroup_limits lim;
	paddock_error why = { 0 };
	int r;

	pd_launch_cgroup_limits(sb->spec, &lim);
	if (sb->idmap.rootless || pd_cgroup_probe() == PD_CGROUP_NONE)
		r = -EACCES;
	else
		r = pd_cgroup_open(sb->idmap.slot, &lim, &sb->cg, &why);
	if (r >= 0)
		return 0;
	sb->cg = NULL;
	/* SECURITY: nothing the spec requires goes unenforced; cpus has no stand-in */
	if (l->required & (1u << PD_LIMIT_CPUS))
		return pd_fail_field(err, EOPNOTSUPP, "limits.required",
				     "limit 'cpus' is required but no cgroup can be used here (%s)",
				     why.msg[0] ? why.msg : "rootless, no delegated cgroup");
	return 0;
}

size_t pd_launch_writable_binds(const paddock_spec *spec)
{
	size_t n = spec->workspace ? 1 : 0;

	for (size_t i = 0; i < spec->n_binds; i++)
		n += !spec->binds[i].readonly;
	return n;
}

/*
 * limits.disk is the size of the sandbox's tmpfs; what it writes through a writable host bind
 * lands on the host's filesystem, where nothing here bounds it (but limits.file_size, per
 * file). Project quotas could (ext4, xfs), on a kernel built with them: this project's
 * machines have neither CONFIG_QUOTA nor CONFIG_XFS_QUOTA, so no code of paddock's sets one,
 * untested. The report says "none" for them (disk_binds); a spec that requires disk is
 * refused when it binds a host directory writable.
 */
int pd_launch_check_disk(const paddock_spec *spec, paddock_error *err)
{
	size_t n = pd_launch_writable_binds(spec);

	if (n == 0 || !(spec->limits.required & (1u << PD_LIMIT_DISK)))
		return 0;
	return pd_fail_field(err, EOPNOTSUPP, "limits.required",
			     "limit 'disk' is required, but it bounds only the sandbox's own disk: "
			     "nothing bounds what it writes through its %zu writable host "
			     "director%s (workspace, read-write binds); bind them read-only or "
			     "leave 'disk' out of limits.required",
			     n, n == 1 ? "y" : "ies");
}

/* Waits for READY or FAILED; anything else from a fresh init is a protocol error. */
static int await_ready(paddock_sandbox *sb, paddock_error *err)
{
	struct pollfd p = { .fd = sb->ctl, .events = POLLIN };
	union {
		struct pd_ctl_ready ready;
		paddock_error error;
	} msg;
	uint32_t type = 0;
	int fds[PD_CTL_MAX_FDS];
	size_t nfds = PD_CTL_MAX_FDS;
	ssize_t n;
	int r;

	do
		r = poll(&p, 1, LAUNCH_READY_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return pd_fail(err, errno, "wait for init");
	if (r == 0)
		return pd_fail(err, ETIMEDOUT, "init did not get ready within %d s",
			       LAUNCH_READY_TIMEOUT_MS / 1000);
	n = pd_ctl_recv(sb->ctl, &type, &msg, sizeof(msg), fds, &nfds);
	/* READY carries the root fd, and an image's writable layer; anything else sends none */
	if (n >= 0 && type == PD_CTL_READY && (nfds == 1 || nfds == 2)) {
		struct stat st;

		if (fstat(fds[0], &st) == 0 && S_ISDIR(st.st_mode)) {
			sb->root_fd = fds[0];
			fds[0] = -EBADF;
		}
		if (nfds == 2 && fstat(fds[1], &st) == 0 && S_ISDIR(st.st_mode)) {
			sb->upper_fd = fds[1];
			fds[1] = -EBADF;
		}
	}
	for (size_t i = 0; i < nfds; i++)
		pd_close(fds[i]);
	if (n < 0)
		return pd_fail(err, (int)n, "receive from init");
	if (type == 0)
		return pd_fail(err, EPIPE, "init exited during setup");
	if (type == PD_CTL_FAILED && n == (ssize_t)sizeof(msg.error)) {
		/* SECURITY: strings from inside are bounded before use */
		*err = msg.error;
		err->field[sizeof(err->field) - 1] = '\0';
		err->msg[sizeof(err->msg) - 1] = '\0';
		if (err->code <= 0 || err->code > 4095)
			err->code = EIO;
		return -err->code;
	}
	if (type != PD_CTL_READY || n != (ssize_t)sizeof(msg.ready) || sb->root_fd < 0)
		return pd_fail(err, EPROTO, "unexpected message %u from init", type);
	sb->landlock_abi = msg.ready.landlock_abi > 0 && msg.ready.landlock_abi < 64
				   ? msg.ready.landlock_abi
				   : 0;
	sb->host_tree = sb->spec->pooled && (msg.ready.flags & PD_READY_HOST_TREE);
	return 0;
}

/*
 * init closed the socket under us (EPIPE): did it fail first, and say why? Whatever it sent
 * before it exited is already queued, so nothing is waited for.
 */
static int init_failure(paddock_sandbox *sb, paddock_error *err)
{
	struct pollfd p = { .fd = sb->ctl, .events = POLLIN };
	paddock_error ierr = { 0 };

	if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
		return 0;
	if (await_ready(sb, &ierr) >= 0 || ierr.code == EPROTO || ierr.code == EPIPE)
		return 0;
	*err = ierr;
	return -ierr.code;
}

/*
 * As root, host directories the sandbox writes to (the workspace, read-write binds) go to
 * init as idmapped trees: the directory's owner is the sandbox user inside, and what the
 * sandbox creates belongs to that owner on the host. Where a filesystem cannot idmap (or
 * the source is not a directory, or rootless), init binds it as it is: *ret_fd is -EBADF.
 */
int pd_launch_open_tree(const paddock_sandbox *sb, const char *source, int32_t index, int *ret_fd,
			paddock_error *err)
{
	paddock_error why = { 0 };
	int tree = -EBADF;
	int r;

	r = pd_idmap_mount_tree(&sb->idmap, source, &tree, &why);
	if (r < 0) {
		if (why.code == EOPNOTSUPP || why.code == ENOTDIR) {
			*ret_fd = -EBADF;
			return 0;
		}
		*err = why;
		if (index >= 0)
			snprintf(err->field, sizeof(err->field), "binds[%d].source", (int)index);
		return r;
	}
	*ret_fd = tree;
	return 0;
}

static int send_tree(paddock_sandbox *sb, const char *source, int32_t index, paddock_error *err)
{
	_cleanup_close_ int tree = -EBADF;
	struct pd_ctl_tree t = { .index = index };
	int r;

	r = pd_launch_open_tree(sb, source, index, &tree, err);
	if (r < 0 || tree < 0)
		return r;
	if (pd_ctl_send(sb->ctl, PD_CTL_TREE, &t, sizeof(t), &tree, 1) < 0)
		return pd_fail(err, EPIPE, "send a mount to init");
	return 0;
}

/*
 * A sandbox meant to outlive its supervisor: init keeps the id slot's lock (so no other
 * sandbox takes its uids or cgroup while nobody supervises it) and a listening socket at
 * reconnect_path, where a restarted supervisor finds it (paddock_sandbox_adopt()).
 */
static int send_holds(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_close_ int lfd = -EBADF;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pd_ctl_hold h = { .kind = PD_HOLD_LOCK };
	mode_t old;
	int r;

	if (sb->idmap.lock_fd >= 0 &&
	    pd_ctl_send(sb->ctl, PD_CTL_HOLD, &h, sizeof(h), &sb->idmap.lock_fd, 1) < 0)
		return pd_fail(err, EPIPE, "hand the slot lock to init");
	/* init's copy holds the slot now: one fd less per sandbox in a supervisor of thousands */
	sb->idmap.lock_fd = pd_close(sb->idmap.lock_fd);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return pd_fail(err, errno, "socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb->reconnect_path);
	(void)unlink(sa.sun_path); /* a stale one of a sandbox that is gone */
	old = umask(0077);
	r = bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0)
		return pd_fail_field(err, errno, "reconnect_path", "bind '%s'", sb->reconnect_path);
	/* init calls listen(): the kernel then names init, not us, as the peer of whoever connects
	 */
	h = (struct pd_ctl_hold){ .kind = PD_HOLD_LISTEN,
				  .orphan_timeout_s = sb->orphan_timeout_s };
	if (pd_ctl_send(sb->ctl, PD_CTL_HOLD, &h, sizeof(h), &lfd, 1) < 0)
		return pd_fail(err, EPIPE, "hand the reconnect socket to init");
	return 0;
}

/* As root, the image's layers, bottom first, as idmapped trees (rootless, init opens them). */
static int send_layers(paddock_sandbox *sb, paddock_error *err)
{
	char **layers = sb->spec->image_layers;

	if (sb->idmap.rootless)
		return 0;
	for (size_t i = 0; layers && layers[i]; i++) {
		_cleanup_close_ int tree = -EBADF;
		struct pd_ctl_tree t = { .index = PD_CTL_TREE_LAYER(i) };

		tree = pd_idmap_layer_tree(&sb->idmap, sb->init_pid, layers[i], err);
		if (tree < 0)
			return tree;
		if (pd_ctl_send(sb->ctl, PD_CTL_TREE, &t, sizeof(t), &tree, 1) < 0)
			return pd_fail(err, EPIPE, "send a layer to init");
	}
	return 0;
}

static int send_go(paddock_sandbox *sb, paddock_error *err)
{
	const paddock_spec *spec = sb->spec;
	int r;

	r = send_layers(sb, err);
	if (r < 0)
		return r;
	if (sb->reconnect_path) {
		r = send_holds(sb, err);
		if (r < 0)
			return r;
	}

	if (!sb->idmap.rootless) {
		if (spec->workspace) {
			r = send_tree(sb, spec->workspace, PD_CTL_TREE_WORKSPACE, err);
			if (r < 0)
				return r;
		}
		for (size_t i = 0; i < spec->n_binds; i++) {
			if (spec->binds[i].readonly)
				continue;
			r = send_tree(sb, spec->binds[i].source, (int32_t)i, err);
			if (r < 0)
				return r;
		}
	}
	if (pd_ctl_send(sb->ctl, PD_CTL_GO, NULL, 0, NULL, 0) < 0)
		return pd_fail(err, EPIPE, "start init");
	return 0;
}

/*
 * Tells init its cgroup: the files it joins it with by itself (cgroup.h, "joining from
 * inside": no RCU grace period on the create's critical path), or none (rootless, or no
 * cgroup to use: rlimits stand in). init joins before it confines itself, so before any
 * command exists.
 */
static int send_cgroup(paddock_sandbox *sb, paddock_error *err)
{
	struct pd_ctl_cgroup msg = { .enforced = sb->cg != NULL };
	int fds[PD_CGROUP_JOIN_MAX];
	int n = 0, r = 0;

	if (sb->cg) {
		n = pd_cgroup_join_fds(sb->cg, fds, err);
		if (n < 0)
			return n;
	}
	if (pd_ctl_send(sb->ctl, PD_CTL_CGROUP, &msg, sizeof(msg), fds, (size_t)n) < 0)
		r = pd_fail(err, EPIPE, "tell init its cgroup");
	for (int i = 0; i < n; i++)
		pd_close(fds[i]);
	return r;
}

int pd_launch_begin(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_pidfd_ int pidfd = -EBADF;
	_cleanup_close_ int child_end = -EBADF, netns = -EBADF, home = -EBADF;
	int sv[2];
	pid_t pid;
	int image, r;

	r = pd_launch_check_disk(sb->spec, err);
	if (r < 0)
		return r;
	image = pd_init_image_fd(err);
	if (image < 0)
		return image;
	/* probed here, once per process: init is a copy of us and finds the answer cached */
	if (!sb->idmap.rootless && pd_idmap_host_root())
		(void)pd_rootfs_lxcfs();
	r = pd_idmap_acquire(&sb->idmap, sb->spec->user == PD_USER_ROOT, err);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return pd_fail(err, errno, "socketpair");
	sb->ctl = sv[0];
	child_end = sv[1];

	if (sb->spec->netns_path) {
		r = open_netns(sb->spec->netns_path, &netns, &home, err);
		if (r < 0)
			return r;
	}
	pid = clone_init(netns, home, &pidfd);
	if (pid < 0) {
		r = errno;
		if (r == ENOSPC || r == EUSERS)
			return pd_fail(err, r,
				       "clone into new namespaces: namespace limit reached");
		if (r == EPERM)
			return pd_fail(err, r,
				       "clone into new namespaces: user namespaces are not allowed "
				       "for this user (see docs/security.md)");
		return pd_fail(err, r, "clone into new namespaces");
	}
	if (pid == 0) {
		pd_close(sv[0]);
		pd_init_main(sb->spec, &sb->idmap, child_end, image);
	}
	child_end = pd_close(child_end);
	sb->init_pid = pid;

	r = pd_idmap_write(&sb->idmap, pid, err);
	if (r >= 0)
		r = send_go(sb, err);
	/*
	 * The cgroup is set up while init builds the root, off the critical path: init joins
	 * it before any command exists, and waits for this message before it confines itself.
	 */
	if (r >= 0)
		r = open_cgroup(sb, err);
	if (r >= 0)
		r = send_cgroup(sb, err);
	if (r < 0 && (r == -EPIPE || r == -ESRCH) && init_failure(sb, err) < 0)
		r = -err->code; /* init's own reason beats the broken pipe it left us */
	if (r < 0) {
		pd_error_prefix(err, "create sandbox");
		return r; /* the cleanup kills and reaps init */
	}
	/* from here on, freeing the sandbox kills and reaps init */
	sb->pidfd = TAKE_FD(pidfd);
	return 0;
}

int pd_launch_end(paddock_sandbox *sb, paddock_error *err)
{
	int r = await_ready(sb, err);

	if (r < 0)
		pd_error_prefix(err, "create sandbox");
	return r;
}

int pd_launch(paddock_sandbox *sb, paddock_error *err)
{
	int r = pd_launch_begin(sb, err);

	return r < 0 ? r : pd_launch_end(sb, err);
}
