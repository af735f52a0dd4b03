/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: a pooled sandbox's claim. A pooled init is made from a template and waits,
 * unconfined and before any code of the sandbox's has run, for PD_CTL_BIND: the claim's
 * workspace, hostname, disk size, view of the machine, environment, rlimits and secrets. It
 * binds them all, or fails the claim whole, then confines itself as every init does
 * (init-run.c) and answers BOUND. The claim comes from the supervisor, which init trusts; it
 * is parsed strictly all the same (pd_ctl_bind_parse()).
 */
#include "init-run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "error.h"
#include "init.h"
#include "landlock.h"
#include "proc-view.h"
#include "rootfs.h"
#include "util/cleanup.h"
#include "util/mount-api.h"

/*
 * The Landlock ruleset: the paths a command may write below, held by inode (landlock.c). A
 * claim with a workspace makes it again once the claim's tree is on /workspace.
 */
static int prepare_landlock(struct pd_init_state *st, paddock_error *err)
{
	int fd = -EBADF;
	int r;

	r = pd_landlock_prepare((const char *const *)st->conf->writable, &fd, err);
	if (r < 0)
		return r;
	pd_close(st->landlock_fd);
	st->landlock_fd = fd;
	return 0;
}

/*
 * A claim's limits.disk: the disk tmpfs takes the claim's size, as if it had been made with
 * it (rootfs.c made it with the template's). "/" is disk/root, a bind of the disk itself:
 * fspick() on it reconfigures the disk's superblock, which init's user namespace owns, and
 * tmpfs changes only the option given (shmem_reconfigure(), Linux 6.18, read 2026-12). A size
 * below what is in use already is refused (EINVAL): a pooled sandbox has written only its
 * /etc, as a cold one would have. Done unconfined, before pd_init_confine_self(): Landlock
 * and the seccomp filter forbid it afterwards, to init as to commands.
 */
static int resize_disk(const struct pd_init_state *st, uint64_t bytes, paddock_error *err)
{
	_cleanup_close_ int fs = -EBADF;
	struct statfs sf;
	char size[32];

	if (bytes == st->conf->disk_bytes)
		return 0;
	if (statfs("/", &sf) < 0)
		return pd_fail(err, errno, "statfs /");
	if (sf.f_type != TMPFS_MAGIC)
		return pd_fail(err, EIO, "the root is not the sandbox's disk");
	fs = fspick(AT_FDCWD, "/", FSPICK_CLOEXEC | FSPICK_NO_AUTOMOUNT | FSPICK_SYMLINK_NOFOLLOW);
	if (fs < 0)
		return pd_fail(err, errno, "fspick /");
	snprintf(size, sizeof(size), "%" PRIu64, bytes);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
		return pd_fail_field(err, errno, "limits.disk", "resize the disk to %s bytes",
				     size);
	return 0;
}

/*
 * A claim's limits in the sandbox's view of the machine (proc-view.h): the memory and CPUs
 * it shows, and the CPUs init (so every command) may run on. The uptime was the pooled
 * sandbox's from the start: its time namespace was entered when it was made.
 */
static int bind_proc_view(struct pd_init_state *st, const struct pd_ctl_bind *b, paddock_error *err)
{
	struct pd_proc_view v = {
		.memory_bytes = b->memory_bytes,
		.cpus = pd_proc_view_cpus((double)b->cpus_milli / 1000.0),
		.boot_time = (int64_t)time(NULL),
	};
	unsigned seed = st->conf->idmap.slot;
	int r;

	if (st->proc_view < 0)
		return 0;
	r = pd_proc_view_write(st->proc_view, &v, err);
	if (r < 0)
		return r;
	if (st->conf->idmap.rootless && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0;
	r = pd_proc_view_pin(v.cpus, seed);
	if (r < 0)
		return pd_fail(err, -r, "set the sandbox's CPU affinity");
	st->proc_view = pd_close(st->proc_view);
	return 0;
}

/*
 * A pooled sandbox's claim (PD_CTL_BIND): the workspace (the supervisor's tree, attached
 * where a cold build attaches it), hostname, environment, disk size, rlimits and secrets
 * (placeholders and the CA's certificate, written where a cold build writes it) of the claim
 * (its cgroup limits were written by the supervisor before it sent BIND), then the
 * confinement every sandbox has, then BOUND. Until the claim no command can exist (the
 * supervisor refuses them), so waiting unconfined costs nothing: no code of the sandbox's
 * has run yet. Sockets for the egress listeners are made meanwhile; anything else but
 * BIND, or EOF, ends init: an unclaimed sandbox just goes away. A BIND init cannot apply
 * whole ends it too (FAILED): nothing is half-bound.
 */
void pd_init_await_claim(struct pd_init_state *st)
{
	static char buf[PD_CTL_MAX_MSG];
	struct pd_ctl_bind_msg m;
	struct pd_ctl_ready bound = { 0 };
	struct stat ws;
	paddock_error err = { 0 };
	uint32_t type = 0;
	int tree = -EBADF;
	size_t nfds;
	ssize_t n;
	int r;

	for (;;) {
		int fd = -EBADF;

		nfds = 1;
		n = pd_ctl_recv(st->ctl, &type, buf, sizeof(buf), &fd, &nfds);
		tree = nfds > 0 ? fd : -EBADF;
		if (tree >= 0 && (n < 0 || type != PD_CTL_BIND))
			tree = pd_close(tree); /* only BIND carries one */
		if (n == -EINTR || n == -EAGAIN)
			continue;
		/* the egress listeners of a sandbox with network are made before its claim */
		if (n >= 0 && type == PD_CTL_SOCKET) {
			pd_init_handle_socket(st, buf, (size_t)n);
			continue;
		}
		break;
	}
	if (n < 0 || type != PD_CTL_BIND)
		_exit(0);
	r = pd_ctl_bind_parse(buf, (size_t)n, &m);
	if (r >= 0 && (m.hdr.workspace == PD_BIND_WORKSPACE_TREE) != (tree >= 0))
		r = -EPROTO;
	if (r < 0)
		r = pd_fail(&err, -r, "malformed claim");
	/* rootless (or no idmap): the claim's workspace, cloned as a cold init clones it */
	if (r >= 0 && m.hdr.workspace == PD_BIND_WORKSPACE_PATH) {
		if (st->host_tree < 0)
			r = pd_fail_field(&err, EOPNOTSUPP, "workspace",
					  "this pooled sandbox holds no host tree");
		else
			r = tree = pd_rootfs_clone_from_host(st->host_tree, m.workspace_path, &err);
		/* the directory the supervisor found at that path, or none (a mount since) */
		if (r >= 0 && (fstat(tree, &ws) < 0 || (uint64_t)ws.st_dev != m.hdr.workspace_dev ||
			       (uint64_t)ws.st_ino != m.hdr.workspace_ino))
			r = pd_fail_field(&err, EXDEV, "workspace",
					  "'%s' is another directory on the host than when this "
					  "sandbox was made",
					  PD_ESC(m.workspace_path));
	}
	/* first, as a cold build mounts it: what follows sees the claim's /workspace */
	if (r >= 0 && tree >= 0)
		r = pd_rootfs_attach_workspace(tree, &err);
	if (r >= 0 && tree >= 0 && st->landlock_fd >= 0)
		r = prepare_landlock(st, &err);
	tree = pd_close(tree);
	if (r >= 0 && sethostname(m.hostname, strlen(m.hostname)) < 0)
		r = pd_fail(&err, errno, "set hostname");
	if (r >= 0)
		r = resize_disk(st, m.hdr.disk_bytes, &err);
	if (r >= 0)
		r = bind_proc_view(st, &m.hdr, &err);
	/* after the resize: the CA's files count against the claim's disk, as at a cold build */
	if (r >= 0 && m.ca_pem)
		r = pd_rootfs_bind_ca(m.ca_pem, &st->conf->idmap, &err);
	if (r >= 0) {
		/* the claim's plan replaces the one join_cgroup() made from the template */
		st->rlimits = m.hdr.rlimits;
		st->bound_env = m.env;
		st->bound_secret_env = m.secret_env;
		st->bound_ca = m.ca_pem != NULL;
		r = pd_init_confine_self(st, &err);
	}
	if (r < 0)
		pd_init_fail(st->ctl, &err);
	bound.landlock_abi = st->landlock_abi;
	if (pd_ctl_send(st->ctl, PD_CTL_BOUND, &bound, sizeof(bound), NULL, 0) < 0)
		_exit(1);
	/*
	 * SECURITY: the host's tree is gone before init reads its next request, so before any
	 * command runs. After BOUND, not before: dissolving the clone of the host's whole
	 * mount tree takes ~0.2 ms, which the claim need not wait for.
	 */
	st->host_tree = pd_close(st->host_tree);
}
