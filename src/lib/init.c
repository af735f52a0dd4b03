/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, building: PID 1 of a sandbox, from clone3() to its exec into the init image.
 *
 * Theory of operation. The supervisor clone3()s this process into new namespaces, writes its
 * id maps and says GO over the control socket. init then takes its sandbox identity, ties
 * its life to the supervisor's (PR_SET_PDEATHSIG, and EOF on the socket), builds the root
 * filesystem, joins its cgroup and prepares the Landlock ruleset, all with the spec and the
 * supervisor's code (it is still a copy of the supervisor's process). Then it execs the init
 * image (init-image.c: a small static executable) with what the running sandbox needs
 * (init-conf.h), which confines itself and serves (init-run.c). An idle sandbox so costs the
 * image's few pages: a process forked from the supervisor and left waiting would keep, page
 * by page, a private copy of everything the supervisor changed since the fork.
 */
#include "init.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "cgroup.h"
#include "control.h"
#include "error.h"
#include "init-conf.h"
#include "landlock.h"
#include "netns-egress.h"
#include "proc-view.h"
#include "rootfs.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/strv.h"

#define CTL_FD	 PD_INIT_CTL_FD
#define IMAGE_FD 4

/* What init holds while it builds the sandbox; what it keeps goes into a pd_init_conf. */
struct build_state {
	const paddock_spec *spec;
	const struct pd_idmap *idmap;
	int ctl;
	int image;	      /* the init image, close-on-exec: execveat() reads it */
	int lock_fd;	      /* the id slot's lock, held for the sandbox's life */
	int listen_fd;	      /* reconnect socket, or -1: the sandbox dies with its supervisor */
	int orphan_timeout_s; /* without a supervisor for this long, the sandbox ends */
	int landlock_fd;
	char **writable;		  /* the paths Landlock leaves writable */
	struct pd_rootfs_sources sources; /* host trees to bind, some sent ready-made */
	int host_tree;			  /* pooled: the host's tree, for a claim's workspace */
	int proc_view;			  /* pooled: the /proc view's directory, for the claim */
	int upper_fd;			  /* an image's writable layer, for snapshots */
	struct pd_ctl_rlimits rlimits;
	int last_cap;
};

/*
 * clone3(CLONE_CLEAR_SIGHAND) reset every handled signal; what the supervisor ignores stays
 * ignored (and would be inherited by commands across exec, the image's too):
 * /proc/self/status says which.
 */
static void reset_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	unsigned long long ignored = ~0ULL;
	char buf[2048];
	const char *p;
	sigset_t none;
	int fd;
	ssize_t n = -1;

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = pd_read_full(fd, buf, sizeof(buf) - 1);
		pd_close(fd);
	}
	if (n > 0) {
		buf[n] = '\0';
		p = strstr(buf, "\nSigIgn:");
		if (p)
			ignored = strtoull(p + 9, NULL, 16);
	}
	/* without the status file, reset everything */
	for (int sig = 1; sig < _NSIG && sig <= 64; sig++)
		if (ignored & (1ULL << (sig - 1)))
			(void)sigaction(sig, &sa, NULL); /* EINVAL for KILL, STOP, the RT gaps */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Only the control socket (CTL_FD) and the image (IMAGE_FD) stay open; 0, 1, 2 are /dev/null. */
static int isolate_fds(int ctl, int image, paddock_error *err)
{
	int null;

	/* first above both targets, so that neither dup3() below clobbers the other's source */
	ctl = fcntl(ctl, F_DUPFD_CLOEXEC, IMAGE_FD + 1);
	image = ctl < 0 ? -1 : fcntl(image, F_DUPFD_CLOEXEC, IMAGE_FD + 1);
	if (ctl < 0 || image < 0)
		return pd_fail(err, errno, "move control socket and init image");
	if (dup3(ctl, CTL_FD, O_CLOEXEC) < 0 || dup3(image, IMAGE_FD, O_CLOEXEC) < 0)
		return pd_fail(err, errno, "move control socket and init image");
	if (close_range(IMAGE_FD + 1, ~0U, 0) < 0)
		return pd_fail(err, errno, "close inherited fds");
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return pd_fail(err, errno, "open /dev/null");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(null, fd) < 0)
			return pd_fail(err, errno, "redirect fd %d", fd);
	if (null > 2)
		pd_close(null);
	return 0;
}

/*
 * Before GO the supervisor may send ready-made trees (idmapped binds and workspace, made
 * with host privileges init lacks); they go into `sources`, the rest init clones itself.
 */
static int wait_go(struct build_state *st, int ctl, const paddock_spec *spec,
		   struct pd_rootfs_sources *sources, paddock_error *err)
{
	for (;;) {
		union {
			struct pd_ctl_tree t;
			struct pd_ctl_hold h;
		} m;
		struct pd_ctl_tree t;
		uint32_t type = 0;
		int fd = -EBADF;
		size_t nfds = 1;
		ssize_t n = pd_ctl_recv(ctl, &type, &m, sizeof(m), &fd, &nfds);

		if (n < 0)
			return pd_fail(err, (int)n, "receive go");
		if (type == PD_CTL_GO)
			return 0;
		if (type == PD_CTL_HOLD && n == (ssize_t)sizeof(m.h) && nfds == 1) {
			if (m.h.kind == PD_HOLD_LOCK && st->lock_fd < 0) {
				st->lock_fd = fd;
			} else if (m.h.kind == PD_HOLD_LISTEN && st->listen_fd < 0) {
				/* SO_PEERCRED/SO_PEERPIDFD of a connection name who called listen()
				 */
				if (listen(fd, 4) < 0) {
					pd_close(fd);
					return pd_fail(err, errno, "listen for a supervisor");
				}
				st->listen_fd = fd;
				st->orphan_timeout_s = m.h.orphan_timeout_s;
			} else {
				pd_close(fd);
			}
			continue;
		}
		memcpy(&t, &m, sizeof(t));
		if (type != PD_CTL_TREE)
			_exit(0); /* the supervisor gave up on us */
		if (n != (ssize_t)sizeof(t) || nfds != 1) {
			pd_close(fd);
			return pd_fail(err, EPROTO, "malformed tree message");
		}
		if (t.index <= PD_CTL_TREE_LAYER(0) &&
		    (size_t)(PD_CTL_TREE_LAYER(0) - t.index) < sources->n_layers) {
			size_t i = (size_t)(PD_CTL_TREE_LAYER(0) - t.index);

			pd_close(sources->layer_fds[i]);
			sources->layer_fds[i] = fd;
		} else if (t.index == PD_CTL_TREE_WORKSPACE && spec->workspace) {
			pd_close(sources->workspace_fd);
			sources->workspace_fd = fd;
		} else if (t.index >= 0 && (size_t)t.index < sources->n_binds) {
			pd_close(sources->bind_fds[t.index]);
			sources->bind_fds[t.index] = fd;
		} else {
			pd_close(fd);
		}
	}
}

static int become_init_identity(const struct pd_idmap *m, paddock_error *err)
{
	if (!m->rootless && setgroups(0, NULL) < 0)
		return pd_fail(err, errno, "setgroups");
	if (setresgid(m->init_gid, m->init_gid, m->init_gid) < 0)
		return pd_fail(err, errno, "setresgid %u", (unsigned)m->init_gid);
	if (setresuid(m->init_uid, m->init_uid, m->init_uid) < 0)
		return pd_fail(err, errno, "setresuid %u", (unsigned)m->init_uid);
	return 0;
}

static int loopback_up(paddock_error *err)
{
	_cleanup_close_ int s = -EBADF;
	struct ifreq ifr = { 0 };

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return pd_fail(err, errno, "socket for loopback");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return pd_fail(err, errno, "get flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return pd_fail(err, errno, "bring lo up");
	return 0;
}

static void add_rlimit(struct pd_ctl_rlimits *rl, int resource, uint64_t soft, uint64_t hard)
{
	assert(rl->n < PD_CTL_MAX_RLIMITS);
	rl->r[rl->n++] = (struct pd_ctl_rlimit){ .resource = resource, .soft = soft, .hard = hard };
}

/*
 * Per-process limits every command starts with. file_size and nofile exist only as rlimits;
 * core dumps are off.
 * cpu_time is also enforced for the whole sandbox by the supervisor when it has a cgroup;
 * the rlimit (SIGXCPU at the limit, SIGKILL a second later) bounds each process everywhere.
 * Without a cgroup, RLIMIT_DATA and RLIMIT_NPROC stand in for memory and pids: weaker (per
 * process, not per sandbox, for DATA), and the report says so. RLIMIT_DATA, not RLIMIT_AS:
 * it counts private writable memory (heap, anonymous mappings) and not address space that is
 * only reserved, which V8 reserves by the gigabyte for WebAssembly (node's fetch failed
 * under RLIMIT_AS at any ordinary --memory).
 */
void pd_init_plan_rlimits(const paddock_spec *spec, bool cgroup_limits,
			  struct pd_ctl_rlimits *ret_plan)
{
	const typeof(spec->limits) *l = &spec->limits;
	uint64_t cpu = (uint64_t)l->cpu_time_s + ((double)(uint64_t)l->cpu_time_s < l->cpu_time_s);
	struct pd_ctl_rlimits rl = { 0 };

	add_rlimit(&rl, RLIMIT_FSIZE, l->file_size_bytes, l->file_size_bytes);
	add_rlimit(&rl, RLIMIT_NOFILE, l->nofile, l->nofile);
	add_rlimit(&rl, RLIMIT_CPU, cpu ? cpu : 1, (cpu ? cpu : 1) + 1);
	/*
	 * SECURITY: no core files, ever. The caller's hard limit would pass through otherwise: a
	 * crash wrote a core into a bound host workspace (outside limits.disk), and where the
	 * host's core_pattern is a pipe, a root helper (systemd-coredump, apport) would read what
	 * the sandbox controls. 0/0: no command can raise it again.
	 */
	add_rlimit(&rl, RLIMIT_CORE, 0, 0);
	if (!cgroup_limits) {
		add_rlimit(&rl, RLIMIT_DATA, l->memory_bytes, l->memory_bytes);
		add_rlimit(&rl, RLIMIT_NPROC, l->pids, l->pids);
	}
	*ret_plan = rl;
}

/*
 * The supervisor sets up the sandbox's cgroup while init builds the root, and says when init
 * is in it (or that there is none: rootless). Only then does init take a cgroup namespace
 * rooted there, so commands see their cgroup as "/", and plan the rlimits that stand in
 * when no cgroup enforces memory and pids.
 */
static int join_cgroup(struct build_state *st, paddock_error *err)
{
	struct pd_ctl_cgroup msg;
	uint32_t type = 0;
	int fds[PD_CTL_MAX_FDS];
	size_t nfds = PD_CTL_MAX_FDS;
	ssize_t n = pd_ctl_recv(st->ctl, &type, &msg, sizeof(msg), fds, &nfds);
	int r = 0;

	if (n < 0)
		return pd_fail(err, (int)n, "receive cgroup");
	if (type == 0)
		_exit(0); /* the supervisor gave up on us */
	if (type != PD_CTL_CGROUP || n != (ssize_t)sizeof(msg) || (msg.enforced != 0) != (nfds > 0))
		r = pd_fail(err, EPROTO, "expected the cgroup message, got %u", type);
	/* by itself, with the supervisor's files (cgroup.h: joining from inside) */
	else if (msg.enforced)
		r = pd_cgroup_join_self(fds, nfds, err);
	for (size_t i = 0; i < nfds; i++)
		pd_close(fds[i]);
	if (r < 0)
		return r;
	/* without a cgroup of its own, the one clone3 made (rooted at the invoker's) stays */
	if (msg.enforced && unshare(CLONE_NEWCGROUP) < 0)
		return pd_fail(err, errno, "new cgroup namespace");
	pd_init_plan_rlimits(st->spec, msg.enforced != 0, &st->rlimits);
	return 0;
}

/*
 * The Landlock ruleset: the paths a command may write below, held by inode (landlock.c).
 * Without Landlock in this kernel, none (unless the spec requires it).
 */
static int prepare_landlock(struct build_state *st, paddock_error *err)
{
	int r;

	r = pd_rootfs_writable_paths(st->spec, &st->writable, err);
	if (r < 0)
		return r;
	if (pd_landlock_abi() > 0)
		return pd_landlock_prepare((const char *const *)st->writable, &st->landlock_fd,
					   err);
	if (st->spec->security.landlock == PD_LANDLOCK_REQUIRED)
		return pd_fail_field(err, EOPNOTSUPP, "security.landlock",
				     "landlock is required but this kernel does not offer it");
	return 0;
}

/*
 * The sandbox's own boot clock: a time namespace whose CLOCK_BOOTTIME starts at zero, so
 * /proc/uptime, /proc/stat's btime and every process's start in /proc/PID/stat count from
 * the sandbox's start, not the host's (and say nothing of how long the host has been up).
 * init enters it at its exec into the image (a time namespace is entered by the children
 * and the next exec of the process that made it); the offset is written before, while init
 * is still dumpable with the ids it was made with (a change of ids makes it non-dumpable,
 * and a non-dumpable process's /proc files belong to the host's root). Only the
 * boot clock moves: CLOCK_MONOTONIC is the host's, as the supervisor's timers expect.
 * COMPAT(kernel 5.6): without time namespaces, the host's uptime shows through.
 */
/* When this process started, in clock ticks of the boot clock (/proc/self/stat's 22nd). */
static int start_ticks(unsigned long long *ret)
{
	char buf[1024];
	const char *p;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = pd_read_full(fd, buf, sizeof(buf) - 1);
	pd_close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* after the name, which may hold anything: field 3 (state) is the first after ") " */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", ret) != 1)
		return -EIO;
	return 0;
}

static int own_clock(paddock_error *err)
{
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	char line[64];
	int r;

	if (unshare(CLONE_NEWTIME) < 0) {
		if (errno == EINVAL)
			return 0;
		return pd_fail(err, errno, "new time namespace");
	}
	/*
	 * The sandbox boots with init: its clock starts at init's start (whole seconds, down),
	 * so that no process of it, init included, seems to have started before its boot.
	 */
	r = start_ticks(&ticks);
	if (r < 0 || hz <= 0)
		return pd_fail(err, r < 0 ? -r : EIO, "read init's start time");
	snprintf(line, sizeof(line), "boottime %lld 0\n", -(long long)(ticks / (unsigned long)hz));
	if (pd_write_control(AT_FDCWD, "/proc/self/timens_offsets", line) < 0)
		return pd_fail(err, errno, "set the sandbox's boot clock");
	return 0;
}

/*
 * As many CPUs as the quota amounts to, for the tools that count CPUs by affinity (nproc,
 * Go, os.process_cpu_count()); /proc/stat and cpuinfo say the same (proc-view.h). As root
 * the slot spreads sandboxes over the machine, rootless a random start.
 */
static int pin_cpus(const struct build_state *st, unsigned cpus, paddock_error *err)
{
	unsigned seed = st->idmap->slot;
	int r;

	if (st->idmap->rootless && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0;
	r = pd_proc_view_pin(cpus, seed);
	if (r < 0)
		return pd_fail(err, -r, "set the sandbox's CPU affinity");
	return 0;
}

static int setup(struct build_state *st, paddock_error *err)
{
	int r;

	/* probed by the supervisor before it made us (pd_launch_begin()): a copy of its cache */
	st->sources.lxcfs = st->idmap->rootless ? NULL : pd_rootfs_lxcfs();
	r = pd_rootfs_open_sources(st->spec, &st->sources, err);
	if (r < 0)
		return r;
	/* while init is still dumpable: its /proc files are its own (timens_offsets) */
	r = own_clock(err);
	if (r >= 0)
		r = become_init_identity(st->idmap, err);
	if (r >= 0)
		r = pd_init_bind_lifetime(st->ctl, st->listen_fd >= 0, err);
	if (r >= 0 && sethostname(st->spec->hostname, strlen(st->spec->hostname)) < 0)
		r = pd_fail(err, errno, "set hostname");
	/* a joined network namespace (oci.h) is its owner's: its loopback is theirs to raise */
	if (r >= 0 && !st->spec->netns_path)
		r = loopback_up(err);
	/* before the root is built: libnftables is loaded from the host's files (netns-egress.h) */
	if (r >= 0 && st->spec->network.mode != PD_NET_NONE)
		r = pd_netns_egress_setup(st->spec->network.transparent, err);
	st->sources.want_host_tree = st->spec->pooled;
	if (r >= 0)
		r = pd_rootfs_build(st->spec, st->idmap, &st->sources, err);
	st->host_tree = TAKE_FD(st->sources.host_tree);
	st->proc_view = TAKE_FD(st->sources.proc_view_fd);
	st->upper_fd = TAKE_FD(st->sources.upper_fd);
	pd_rootfs_sources_release(&st->sources);
	if (r < 0)
		return r;
	r = join_cgroup(st, err);
	if (r >= 0)
		r = pin_cpus(st, pd_proc_view_cpus(st->spec->limits.cpus), err);
	if (r < 0)
		return r;
	st->last_cap = pd_caps_last_cap();
	return prepare_landlock(st, err);
}

/* An fd the init image keeps: open across the exec. */
static int keep_open(int fd)
{
	if (fd >= 0 && fcntl(fd, F_SETFD, 0) < 0)
		return -errno;
	return 0;
}

/*
 * Into the init image, with what the running sandbox needs: fds by number (kept open across
 * the exec, every other fd is close-on-exec), the rest packed into a memfd named in argv.
 * Rootless, init's capabilities ride along as ambient ones: it is not root in its user
 * namespace, and an exec would drop them (the image clears the ambient set at once). Returns
 * only on failure.
 */
static int exec_image(struct build_state *st, paddock_error *err)
{
	const paddock_spec *spec = st->spec;
	struct pd_init_conf c = {
		.flags = (spec->pooled ? PD_INIT_POOLED : 0) |
			 (spec->network.mode != PD_NET_NONE ? PD_INIT_EGRESS : 0) |
			 (spec->ca_pem ? PD_INIT_CA : 0) |
			 (spec->user == PD_USER_ROOT ? PD_INIT_ROOT : 0),
		.idmap = *st->idmap,
		.rlimits = st->rlimits,
		.disk_bytes = spec->limits.disk_bytes,
		.ctl = st->ctl,
		.lock_fd = st->lock_fd,
		.listen_fd = st->listen_fd,
		.orphan_timeout_s = st->orphan_timeout_s,
		.landlock_fd = st->landlock_fd,
		.host_tree = st->host_tree,
		.proc_view = st->proc_view,
		.upper_fd = st->upper_fd,
		.last_cap = st->last_cap,
		.cwd = spec->cwd,
		.env = spec->env,
		.secret_env = spec->secret_env,
		.writable = st->writable,
	};
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int conf = -EBADF;
	char arg[16];
	char *argv[] = { "paddock-init", arg, NULL };
	char *envp[] = { NULL };
	size_t len;
	int r;

	r = pd_init_conf_pack(&c, &buf, &len);
	if (r < 0)
		return pd_fail(err, -r, "pack the init image's configuration");
	conf = memfd_create("paddock-init-conf", MFD_CLOEXEC);
	if (conf < 0)
		return pd_fail(err, errno, "memfd for the init image's configuration");
	r = pd_write_all(conf, buf, len);
	if (r >= 0 && lseek(conf, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0)
		return pd_fail(err, -r, "write the init image's configuration");
	const int keep[] = { st->ctl,	    st->lock_fd,   st->listen_fd, st->landlock_fd,
			     st->host_tree, st->proc_view, st->upper_fd,  conf };
	for (size_t i = 0; i < ELEMENTSOF(keep); i++)
		if ((r = keep_open(keep[i])) < 0)
			return pd_fail(err, -r, "keep fd %d open across exec", keep[i]);
	/* uid 0 in its user namespace keeps them by itself: the kernel's rule for root's exec */
	r = st->idmap->init_uid != 0 ? pd_caps_keep_across_exec(st->last_cap) : 0;
	if (r < 0)
		return pd_fail(err, -r, "keep init's capabilities across exec");
	snprintf(arg, sizeof(arg), "%d", conf);
	execveat(st->image, "", argv, envp, AT_EMPTY_PATH);
	return pd_fail(err, errno, "exec the init image");
}

_Noreturn void pd_init_main(const paddock_spec *spec, const struct pd_idmap *idmap, int ctl,
			    int image)
{
	struct build_state st = {
		.spec = spec,
		.idmap = idmap,
		.lock_fd = -EBADF,
		.listen_fd = -EBADF,
		.landlock_fd = -EBADF,
		.host_tree = -EBADF,
		.proc_view = -EBADF,
		.upper_fd = -EBADF,
	};
	paddock_error err = { 0 };
	int r;

	reset_signals();
	/* "paddock-init" in ps, and never matched by a `pkill paddockd` meant for the daemon */
	(void)prctl(PR_SET_NAME, "paddock-init", 0, 0, 0);
	umask(0);
	r = isolate_fds(ctl, image, &err);
	if (r < 0)
		pd_init_fail(ctl, &err);
	st.ctl = CTL_FD;
	st.image = IMAGE_FD;
	r = pd_rootfs_sources_prepare(spec, &st.sources, &err);
	if (r >= 0)
		r = wait_go(&st, st.ctl, spec, &st.sources, &err);
	if (r >= 0)
		r = setup(&st, &err);
	if (r >= 0)
		r = exec_image(&st, &err);
	pd_init_fail(st.ctl, &err);
}
