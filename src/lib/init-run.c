/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: PID 1 of a sandbox once its root is built (init.c builds it, then execs the
 * init image with a pd_init_conf: init-conf.h). It confines itself, reports READY (a pooled
 * init first waits for its claim, PD_CTL_BIND, and binds it: init-claim.c), and from then on
 * is a fork server: each EXEC request becomes a child that walks the pre-exec checklist
 * (exec_child()) and execs; init reports STARTED or the step that failed, reaps every process
 * of the sandbox, and reports EXITED for the commands (init-track.c). It also answers the
 * calls the seccomp filter denies (user notifications, seccomp.c) with their errno and
 * reports them (DENIED: init-denied.c).
 *
 * Trust: init trusts the supervisor. Everything else in the sandbox is hostile: init is
 * non-dumpable (no ptrace, no /proc/1/mem, no fd peeking from commands even when they share
 * its uid rootless), commands drop every capability, and the kernel discards signals sent to
 * a namespace's init from inside it unless init handles them (it handles none). When init
 * exits, the kernel kills everything else in the pid namespace.
 *
 * This file and the others of init-run.h, and only what they call, are linked into the static
 * init image: no spec, no libraries but libc. No stdio and no logging here: failures travel
 * as paddock_error messages.
 */
#include "init.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "control.h"
#include "error.h"
#include "init-conf.h"
#include "init-run.h"
#include "landlock.h"
#include "seccomp-bpf.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/mount-api.h" /* close_range() */
#include "util/strv.h"

#define CHILD_STACK_SIZE (256u << 10)

/*
 * The command's child runs on its own stack inside init's memory (CLONE_VM); ASan's stack
 * bookkeeping cannot follow that switch and warns at every noreturn call, on the command's
 * stderr. The child's few functions are left uninstrumented.
 */
#define CHILD_CODE __attribute__((no_sanitize("address")))

_Noreturn void pd_init_fail(int ctl, paddock_error *err)
{
	(void)pd_ctl_send(ctl, PD_CTL_FAILED, err, sizeof(*err), NULL, 0);
	_exit(1);
}

/*
 * Ties init's life to the supervisor's. Must come after the last credential change (which
 * clears the parent-death signal), and again after the exec into the init image (which makes
 * init dumpable again); the poll closes the race with a supervisor that died before prctl().
 */
int pd_init_bind_lifetime(int ctl, bool outlive, paddock_error *err)
{
	struct pollfd p = { .fd = ctl, .events = POLLRDHUP };

	/* a sandbox with a reconnect socket waits for its supervisor's return instead */
	if (!outlive && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return pd_fail(err, errno, "set parent-death signal");
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
		_exit(0);
	/* SECURITY: no ptrace, no /proc/1/{mem,fd,environ} for anything in the sandbox */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return pd_fail(err, errno, "make init non-dumpable");
	return 0;
}

/*
 * init takes the sandbox's policy itself, once: empty bounding set, Landlock, seccomp. Every
 * command is init's child and inherits all three, so no exec pays for them again (loading a
 * 457-instruction filter costs ~0.2 ms per exec, the bounding set ~40 syscalls). init needs
 * nothing the policy denies once the root is built: it only forks, changes ids, opens
 * /dev/pts/ptmx, signals and reaps. It keeps its capabilities inside its own namespaces
 * (CAP_SYS_ADMIN lets it install both without no_new_privs); commands drop them.
 */
static int empty_bounding_set(struct pd_init_state *st, paddock_error *err)
{
	int r;

	if (st->bounding_empty)
		return 0;
	/* root commands keep PD_CAPS_ROOT, over the sandbox's namespaces only (caps.h) */
	r = st->conf->idmap.root_user ? pd_caps_limit_bounding(st->conf->last_cap, PD_CAPS_ROOT)
				      : pd_caps_drop_bounding(st->conf->last_cap);
	if (r < 0)
		return pd_fail(err, r, "empty the capability bounding set");
	st->bounding_empty = true;
	return 0;
}

int pd_init_confine_self(struct pd_init_state *st, paddock_error *err)
{
	int r;

	r = empty_bounding_set(st, err);
	if (r < 0)
		return r;
	if (st->landlock_fd >= 0) {
		r = pd_landlock_apply(st->landlock_fd);
		if (r < 0)
			return pd_fail(err, r, "enforce landlock");
		st->landlock_fd = pd_close(st->landlock_fd);
		st->landlock_abi = pd_landlock_abi();
	}
	/*
	 * SECURITY: last, like before an exec: from here on init itself is filtered too. A call
	 * the filter denies waits for init's answer (pd_init_answer_denied()): init, and the
	 * children it runs code in before their exec (exec_child()), must never make one, or
	 * they would wait for themselves.
	 */
	r = pd_seccomp_load(&st->seccomp, &st->notify_fd);
	if (r < 0)
		return pd_fail(err, r, "load seccomp filter");
	return 0;
}

/* ---- one command ---------------------------------------------------------------------- */

struct child_plan {
	const struct pd_init_state *st;
	char *const *argv;
	char *const *envp;
	const char *cwd;
	const char *path; /* PATH value from envp */
	int fds[3];	  /* -1: /dev/null */
	int pty_slave;	  /* -1: none */
	unsigned pty_streams;
	bool ctty; /* fds[0] is a terminal to take as the controlling one (PD_EXEC_CTTY) */
	uid_t uid; /* who the command runs as, unless the sandbox's user is root */
	gid_t gid;
	struct sock_fprog filter; /* the command's own seccomp filter (len 0: none) */
	int errpipe;
};

CHILD_CODE _Noreturn static void child_fail(const struct child_plan *p, enum pd_exec_step step,
					    int code, const char *what)
{
	struct pd_ctl_exec_error e = { .step = step };

	e.error.code = code < 0 ? -code : code;
	/* async-signal-safe: no printf family here */
	strncpy(e.error.msg, what, sizeof(e.error.msg) - 1);
	(void)pd_write_all(p->errpipe, &e, sizeof(e));
	_exit(PADDOCK_EXIT_CANNOT_EXEC);
}

CHILD_CODE static int setup_stdio(const struct child_plan *p)
{
	int moved[3];
	int null = -1;

	if (setsid() < 0)
		return -errno;
	if (p->pty_slave >= 0 && ioctl(p->pty_slave, TIOCSCTTY, 0) < 0)
		return -errno;
	if (p->pty_slave < 0 && p->ctty && p->fds[0] >= 0 && ioctl(p->fds[0], TIOCSCTTY, 0) < 0)
		return -errno;
	/* move everything above 2 first so dup2() into 0..2 never clobbers a source */
	for (int i = 0; i < 3; i++) {
		int src = (p->pty_streams & (1u << i)) ? p->pty_slave : p->fds[i];

		if (src < 0) {
			if (null < 0) {
				null = open("/dev/null", O_RDWR | O_CLOEXEC);
				if (null < 0)
					return -errno;
			}
			src = null;
		}
		moved[i] = fcntl(src, F_DUPFD_CLOEXEC, 10);
		if (moved[i] < 0)
			return -errno;
	}
	for (int i = 0; i < 3; i++)
		if (dup2(moved[i], i) < 0)
			return -errno;
	/* every other fd closes at exec: the errpipe and the Landlock ruleset are still needed */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	return 0;
}

CHILD_CODE static void exec_path(const struct child_plan *p, int *ret_errno)
{
	const char *file = p->argv[0];
	char buf[PATH_MAX];
	int seen_eacces = 0;
	const char *s;

	if (strchr(file, '/')) {
		execve(file, p->argv, p->envp);
		*ret_errno = errno;
		return;
	}
	s = p->path ? p->path : "/usr/bin:/bin";
	for (;;) {
		const char *e = strchrnul(s, ':');
		size_t dl = (size_t)(e - s), fl = strlen(file);

		if (dl + fl + 2 <= sizeof(buf)) {
			memcpy(buf, dl ? s : ".", dl ? dl : 1);
			size_t o = dl ? dl : 1;
			buf[o] = '/';
			memcpy(buf + o + 1, file, fl + 1);
			execve(buf, p->argv, p->envp);
			if (errno == EACCES)
				seen_eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP &&
				 errno != ENAMETOOLONG) {
				*ret_errno = errno;
				return;
			}
		}
		if (!*e)
			break;
		s = e + 1;
	}
	*ret_errno = seen_eacces ? EACCES : ENOENT;
}

/*
 * The pre-exec checklist, top to bottom. The first failure is reported with its step and
 * ends the child. Bounding set, Landlock and seccomp are already in force: inherited from
 * init (pd_init_confine_self()). Runs in a CLONE_VM|CLONE_VFORK child on its own stack,
 * sharing init's memory while init waits: only raw syscalls and stack variables here. None
 * the seccomp policy denies: the call would wait for init to answer it, and init waits for us.
 */
CHILD_CODE static int exec_child(void *arg)
{
	const struct child_plan *p = arg;
	const struct pd_init_state *st = p->st;
	sigset_t none;
	int r, e = 0;

	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		child_fail(p, PD_STEP_SETUP, errno, "unblock signals");
	umask(022);
	r = setup_stdio(p);
	if (r < 0)
		child_fail(p, PD_STEP_SETUP, r, "set up stdio and session");
	for (uint32_t i = 0; i < st->rlimits.n; i++) {
		const struct pd_ctl_rlimit *l = &st->rlimits.r[i];
		struct rlimit v = { .rlim_cur = l->soft, .rlim_max = l->hard };

		if (syscall(SYS_prlimit64, 0, l->resource, &v, NULL) < 0)
			child_fail(p, PD_STEP_LIMITS, errno, "set resource limits");
	}
	if (st->conf->idmap.root_user)
		r = pd_caps_become_root(!st->conf->idmap.rootless);
	else
		r = pd_caps_drop_to_user(p->uid, p->gid, !st->conf->idmap.rootless);
	if (r < 0)
		child_fail(p, PD_STEP_PRIVS, r, "drop privileges");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(p, PD_STEP_PRIVS, errno, "set no_new_privs");
	if (chdir(p->cwd) < 0)
		child_fail(p, PD_STEP_CWD, errno, "change to the working directory");
	/* the command's own filter, on top of the sandbox's (which allows seccomp()): it narrows */
	if (p->filter.len && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->filter) < 0)
		child_fail(p, PD_STEP_SECCOMP, errno, "load the command's seccomp filter");
	exec_path(p, &e);
	child_fail(p, PD_STEP_EXECVE, e, "execute the command");
}

/* ---- requests ------------------------------------------------------------------------- */

static int open_pty(const struct pd_ctl_exec *req, const struct pd_idmap *m, int *ret_master,
		    int *ret_slave)
{
	_cleanup_close_ int master = -EBADF, slave = -EBADF;
	struct winsize ws = { .ws_row = req->rows ? req->rows : 24,
			      .ws_col = req->cols ? req->cols : 80 };
	int unlock = 0;

	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return -errno;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return -errno;
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return -errno;
	(void)ioctl(master, TIOCSWINSZ, &ws); /* a default size is still usable */
	/* the command, not init, owns its terminal */
	if (fchown(slave, pd_idmap_user_uid(m),
		   m->rootless || m->root_user ? pd_idmap_user_gid(m) : 5) < 0)
		return -errno;
	*ret_master = TAKE_FD(master);
	*ret_slave = TAKE_FD(slave);
	return 0;
}

static void close_pipes(int (*pipes)[3][2])
{
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			(*pipes)[i][j] = pd_close((*pipes)[i][j]);
}

static void reply_error(struct pd_init_state *st, uint64_t id, enum pd_exec_step step, int code,
			const char *msg)
{
	struct pd_ctl_exec_error e = { .id = id, .step = step };

	e.error.code = code < 0 ? -code : code;
	snprintf(e.error.msg, sizeof(e.error.msg), "%s", msg);
	(void)pd_ctl_send(st->ctl, PD_CTL_EXEC_ERROR, &e, sizeof(e), NULL, 0);
}

/*
 * The request after its header: the cwd, argv, the extra environment and the command's own
 * filter. `cwd` and the filter point into the request.
 */
static int unpack_exec(const struct pd_ctl_exec *req, const char *pos, const char *end,
		       const char **ret_cwd, char ***ret_argv, char ***ret_extra,
		       struct sock_fprog *ret_filter)
{
	_cleanup_free_ char **argv = NULL, **extra = NULL;
	const char *cwd = pos;

	if (!memchr(pos, '\0', (size_t)(end - pos)))
		return -EPROTO;
	pos += strlen(pos) + 1;
	if (pd_strv_unpack(&pos, end, req->argc, PD_CTL_MAX_ARGS, NULL, &argv) < 0 ||
	    pd_strv_unpack(&pos, end, req->envc, PD_CTL_MAX_ARGS, NULL, &extra) < 0 ||
	    req->argc == 0 || !argv[0][0])
		return -EPROTO;
	/* what is left is the command's own filter, exactly as long as the header says */
	if ((size_t)(end - pos) != req->filter_len ||
	    req->filter_len % sizeof(struct sock_filter) || req->filter_len > PD_EXEC_FILTER_MAX)
		return -EPROTO;
	*ret_cwd = cwd;
	*ret_argv = TAKE_PTR(argv);
	*ret_extra = TAKE_PTR(extra);
	*ret_filter = (struct sock_fprog){
		.len = (unsigned short)(req->filter_len / sizeof(struct sock_filter)),
		.filter = (struct sock_filter *)(uintptr_t)pos,
	};
	return 0;
}

/*
 * The command's stdin, stdout and stderr: the supervisor's fds (borrowed), pipes of init's,
 * or a new pseudo-terminal. On failure this replies EXEC_ERROR itself; what it opened is the
 * caller's to close either way.
 */
static int open_streams(struct pd_init_state *st, const struct pd_ctl_exec *req, int *fds,
			size_t nfds, struct child_plan *p, int pipes[3][2], int *master, int *slave)
{
	size_t k = 0;
	int r;

	for (int i = 0; i < 3; i++)
		if ((req->flags & (PD_EXEC_FD_STDIN << i)) && k < nfds)
			p->fds[i] = fds[k++];
	for (int i = 0; i < 3; i++) {
		if (!(req->flags & (PD_EXEC_PIPE_STDIN << i)) || (req->flags & (1u << i)))
			continue;
		if (pipe2(pipes[i], O_CLOEXEC) < 0) {
			r = -errno;
			reply_error(st, req->id, PD_STEP_SETUP, r, "pipe");
			return r;
		}
		/* the command reads stdin's read end [0] and writes the others' write end [1] */
		p->fds[i] = pipes[i][i == 0 ? 0 : 1];
	}
	if (req->flags & (PD_EXEC_PTY_STDIN | PD_EXEC_PTY_STDOUT | PD_EXEC_PTY_STDERR)) {
		r = open_pty(req, &st->conf->idmap, master, slave);
		if (r < 0) {
			reply_error(st, req->id, PD_STEP_SETUP, r, "open a pseudo-terminal");
			return r;
		}
		p->pty_slave = *slave;
		p->pty_streams = req->flags & 7u;
	}
	return 0;
}

/* Who the command runs as, where, and with which argv, environment and PATH. */
static void plan_command(struct child_plan *p, const struct pd_init_state *st,
			 const struct pd_ctl_exec *req, char **argv, char **envp, const char *cwd)
{
	size_t idx;

	p->ctty = (req->flags & PD_EXEC_CTTY) != 0;
	/* the supervisor checked the ids exist here (exec.c); the sandbox user's otherwise */
	p->uid = (req->flags & PD_EXEC_USER) ? req->uid : PD_SANDBOX_UID;
	p->gid = (req->flags & PD_EXEC_USER) ? req->gid : PD_SANDBOX_GID;
	p->argv = argv;
	p->envp = envp;
	p->cwd = cwd[0] ? cwd : st->conf->cwd;
	p->path = pd_init_env_has(envp, pd_strv_length(envp), "PATH=", &idx) ? envp[idx] + 5 : NULL;
}

/*
 * Starts the command: returns its pid once it has exec'ed. When it could not be started
 * this replies EXEC_ERROR (the failed step's, from the child) and returns -1. Closes the
 * pty's slave end, which the command holds from then on.
 */
static pid_t spawn(struct pd_init_state *st, uint64_t id, struct child_plan *p, int *slave)
{
	int pipefd[2] = { -EBADF, -EBADF };
	struct pd_ctl_exec_error e;
	ssize_t n;
	pid_t pid;
	int r;

	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		reply_error(st, id, PD_STEP_SETUP, errno, "pipe");
		return -1;
	}
	p->errpipe = pipefd[1];
	/*
	 * posix_spawn's trick: the child borrows init's memory (no page tables to copy, nothing
	 * to tear down at exec) and init sleeps until it has exec'ed or failed.
	 */
	pid = clone(exec_child, st->child_stack + CHILD_STACK_SIZE,
		    CLONE_VM | CLONE_VFORK | SIGCHLD, p);
	if (pid < 0) {
		r = -errno;
		pd_close(pipefd[0]);
		pd_close(pipefd[1]);
		reply_error(st, id, PD_STEP_SETUP, r, "spawn");
		return -1;
	}
	pd_close(pipefd[1]);
	*slave = pd_close(*slave);
	/* EOF means execve() succeeded (the pipe is close-on-exec); a record means a step failed */
	n = pd_read_full(pipefd[0], &e, sizeof(e));
	pd_close(pipefd[0]);
	if (n == (ssize_t)sizeof(e)) {
		(void)waitpid(pid, NULL, 0);
		e.id = id;
		e.error.msg[sizeof(e.error.msg) - 1] = '\0';
		(void)pd_ctl_send(st->ctl, PD_CTL_EXEC_ERROR, &e, sizeof(e), NULL, 0);
		return -1;
	}
	return pid;
}

/* Tracks the started command, keeps init's ends of its pty and pipes, and reports STARTED. */
static void track_started(struct pd_init_state *st, const struct pd_ctl_exec *req, pid_t pid,
			  int *master, int pipes[3][2])
{
	struct pd_init_tracked *t = &st->execs[st->n_execs++];

	*t = (struct pd_init_tracked){
		.id = req->id, .pid = pid, .flags = req->flags, .pty = -1, .keep = { -1, -1, -1 }
	};
	t->pty = TAKE_FD(*master);
	for (int i = 0; i < 3; i++) {
		int child_end = i == 0 ? 0 : 1;

		if (pipes[i][0] < 0)
			continue;
		pipes[i][child_end] = pd_close(pipes[i][child_end]);
		t->keep[i] = TAKE_FD(pipes[i][1 - child_end]);
	}
	struct pd_ctl_started s = { .id = req->id, .pid = pid, .denied = st->denied_total };
	pd_init_send_with_fds(st, PD_CTL_STARTED, &s, sizeof(s), t);
}

static void handle_exec(struct pd_init_state *st, const char *buf, size_t len, int *fds,
			size_t nfds)
{
	struct pd_ctl_exec req;
	_cleanup_free_ char **argv = NULL, **extra = NULL, **envp = NULL;
	_cleanup_close_ int master = -EBADF, slave = -EBADF;
	_cleanup_(close_pipes) int pipes[3][2] = { { -EBADF, -EBADF },
						   { -EBADF, -EBADF },
						   { -EBADF, -EBADF } };
	struct child_plan p = { .st = st, .pty_slave = -1, .fds = { -1, -1, -1 } };
	const char *cwd;
	pid_t pid;

	if (len < sizeof(req))
		return reply_error(st, 0, PD_STEP_SETUP, EPROTO, "malformed exec request");
	memcpy(&req, buf, sizeof(req));
	if (unpack_exec(&req, buf + sizeof(req), buf + len, &cwd, &argv, &extra, &p.filter) < 0)
		return reply_error(st, req.id, PD_STEP_SETUP, EPROTO, "malformed exec request");
	if (st->n_execs >= PD_INIT_MAX_EXECS)
		return reply_error(st, req.id, PD_STEP_SETUP, EAGAIN, "too many commands running");
	envp = pd_init_build_env(st, extra);
	if (!envp)
		return reply_error(st, req.id, PD_STEP_SETUP, ENOMEM, "build environment");
	if (open_streams(st, &req, fds, nfds, &p, pipes, &master, &slave) < 0)
		return;
	plan_command(&p, st, &req, argv, envp, cwd);
	pid = spawn(st, req.id, &p, &slave);
	if (pid < 0)
		return;
	track_started(st, &req, pid, &master, pipes);
}

/*
 * Pause without a freezer: init is pid 1 of the sandbox's pid namespace, and kill(-1) reaches
 * every process of it but init itself. A stopped process is seen stopped (its parent can be
 * told, WUNTRACED): the freezer's pause is invisible, this one is not (docs/api.md).
 */
static void handle_stop_all(const char *buf, size_t len)
{
	struct pd_ctl_stop_all m;

	if (len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	(void)kill(-1, m.stop ? SIGSTOP : SIGCONT);
}

/* A socket in the sandbox's network namespace, for the supervisor to connect or listen on. */
void pd_init_handle_socket(struct pd_init_state *st, const char *buf, size_t len)
{
	struct pd_ctl_socket m;
	struct pd_ctl_socket_fd reply = { 0 };
	int fd = -EBADF;

	if (len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	if ((m.domain != AF_INET && m.domain != AF_INET6) ||
	    (m.type != SOCK_STREAM && m.type != SOCK_DGRAM))
		reply.error = EAFNOSUPPORT;
	else if ((fd = socket(m.domain, m.type | SOCK_CLOEXEC, 0)) < 0)
		reply.error = errno;
	(void)pd_ctl_send(st->ctl, PD_CTL_SOCKET_FD, &reply, sizeof(reply), fd >= 0 ? &fd : NULL,
			  fd >= 0 ? 1 : 0);
	pd_close(fd);
}

/*
 * The supervisor is gone. With a reconnect socket, the sandbox lives on: init keeps reaping
 * and waits for the next supervisor, up to orphan_timeout_s; without one, or then, it exits
 * and the kernel ends everything in the sandbox. The socket sits in the supervisor's state
 * directory (mode 0700, not reachable from inside the sandbox's mount namespace).
 */
static void await_supervisor(struct pd_init_state *st)
{
	struct timespec deadline, now;

	st->ctl = pd_close(st->ctl);
	if (st->listen_fd < 0)
		_exit(0);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += st->conf->orphan_timeout_s > 0 ? st->conf->orphan_timeout_s : 3600;
	for (;;) {
		struct pollfd p[3] = {
			{ .fd = st->listen_fd, .events = POLLIN },
			{ .fd = st->sigfd, .events = POLLIN },
			{ .fd = st->notify_fd, .events = POLLIN },
		};
		long left_ms;
		int fd;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left_ms = (deadline.tv_sec - now.tv_sec) * 1000 +
			  (deadline.tv_nsec - now.tv_nsec) / 1000000;
		if (left_ms <= 0)
			_exit(0);
		if (poll(p, 3, left_ms > INT32_MAX ? INT32_MAX : (int)left_ms) < 0 &&
		    errno != EINTR)
			_exit(1);
		/* nobody to tell, but the callers wait for their answer all the same */
		if (p[2].revents & POLLIN)
			pd_init_answer_denied(st);
		if (p[1].revents & POLLIN)
			pd_init_reap(st);
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(st->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		st->ctl = fd;
		if (pd_init_resync(st) == 0)
			return;
		st->ctl = pd_close(st->ctl);
	}
}

_Noreturn static void serve(struct pd_init_state *st)
{
	static char buf[PD_CTL_MAX_MSG];

	for (;;) {
		struct pollfd p[3] = {
			{ .fd = st->ctl, .events = POLLIN },
			{ .fd = st->sigfd, .events = POLLIN },
			{ .fd = st->notify_fd, .events = POLLIN },
		};
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t type = 0;
		ssize_t n;

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		/* before reaping: a command's last denial is counted in its exit report */
		if (p[2].revents & POLLIN)
			pd_init_answer_denied(st);
		if (p[1].revents & POLLIN)
			pd_init_reap(st);
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = pd_ctl_recv(st->ctl, &type, buf, sizeof(buf), fds, &nfds);
		if (n == -EAGAIN || n == -EINTR)
			continue;
		if (n < 0 || type == 0) {
			await_supervisor(st); /* or exit: the sandbox goes with us */
			continue;
		}
		switch ((enum pd_ctl_type)type) {
		case PD_CTL_EXEC:
			handle_exec(st, buf, (size_t)n, fds, nfds);
			break;
		case PD_CTL_SIGNAL:
			pd_init_handle_signal(st, buf, (size_t)n);
			break;
		case PD_CTL_CLOSE_STDIN:
			pd_init_handle_close_stdin(st, buf, (size_t)n);
			break;
		case PD_CTL_SOCKET:
			pd_init_handle_socket(st, buf, (size_t)n);
			break;
		case PD_CTL_STOP_ALL:
			handle_stop_all(buf, (size_t)n);
			break;
		case PD_CTL_RECORD:
			pd_init_handle_record(st, fds, nfds);
			break;
		case PD_CTL_HOLD:
		case PD_CTL_SOCKET_FD:
		case PD_CTL_EXEC_STATE:
		case PD_CTL_GO:
		case PD_CTL_READY:
		case PD_CTL_FAILED:
		case PD_CTL_STARTED:
		case PD_CTL_EXEC_ERROR:
		case PD_CTL_EXITED:
		case PD_CTL_RESIZE:
		case PD_CTL_CGROUP:
		case PD_CTL_TREE:
		case PD_CTL_BIND:
		case PD_CTL_BOUND:
		case PD_CTL_DENIED:
		case _PD_CTL_MAX:
			break;
		}
		for (size_t i = 0; i < nfds; i++)
			pd_close(fds[i]);
	}
}

/*
 * Commands start from what is left after setup: the signals, and the memory init's own
 * children share (the stack they run on until they exec).
 */
static int prepare_commands(struct pd_init_state *st, paddock_error *err)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
		return pd_fail(err, errno, "block SIGCHLD");
	st->sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (st->sigfd < 0)
		return pd_fail(err, errno, "signalfd");
	st->child_stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (st->child_stack == MAP_FAILED)
		return pd_fail(err, errno, "allocate a stack for commands");
	return 0;
}

_Noreturn void pd_init_run(const struct pd_init_conf *conf)
{
	/*
	 * Static, not on the stack: the table of commands is ~90 KiB, and an idle sandbox's
	 * memory is its init's. Here only the pages init touches are its own (the rest of
	 * .bss stays the kernel's zero page); on the stack, zeroing it would dirty them all.
	 */
	static struct pd_init_state st;
	paddock_error err = { 0 };
	int r;

	st.conf = conf;
	st.ctl = conf->ctl;
	st.rlimits = conf->rlimits;
	st.sigfd = -EBADF;
	st.landlock_fd = conf->landlock_fd;
	st.listen_fd = conf->listen_fd;
	st.record_fd = -EBADF;
	st.host_tree = conf->host_tree;
	st.proc_view = conf->proc_view;
	st.upper_fd = conf->upper_fd;
	st.notify_fd = -EBADF;
	st.denied_tokens = PD_INIT_DENIED_BURST;
	clock_gettime(CLOCK_MONOTONIC, &st.denied_refill);

	/* "paddock-init" in ps, and never matched by a `pkill paddockd` meant for the daemon */
	(void)prctl(PR_SET_NAME, "paddock-init", 0, 0, 0);
	/* open across the exec only: nothing init starts may inherit one (commands close all) */
	const int kept[] = { conf->ctl,	      conf->lock_fd,   conf->listen_fd, conf->landlock_fd,
			     conf->host_tree, conf->proc_view, conf->upper_fd };
	for (size_t i = 0; i < ELEMENTSOF(kept); i++)
		if (kept[i] >= 0)
			(void)fcntl(kept[i], F_SETFD, FD_CLOEXEC);
	r = pd_init_bind_lifetime(st.ctl, st.listen_fd >= 0, &err);
	/* the exec kept init's capabilities as ambient ones (init.c): nothing inherits them */
	if (r >= 0 && (r = pd_caps_clear_inherited()) < 0)
		r = pd_fail(&err, -r, "clear the inheritable capabilities");
	if (r >= 0)
		r = pd_seccomp_build(&st.seccomp, &err);
	/*
	 * A pooled init confines itself at its claim: hostname and more are bound first. The
	 * bounding set goes now all the same (nothing a claim binds needs it: init's own
	 * capabilities stay), ~40 system calls off the claim.
	 */
	if (r >= 0)
		r = (conf->flags & PD_INIT_POOLED) ? empty_bounding_set(&st, &err)
						   : pd_init_confine_self(&st, &err);
	if (r >= 0)
		r = prepare_commands(&st, &err);
	if (r < 0)
		pd_init_fail(st.ctl, &err);
	if (pd_init_send_ready(&st) < 0)
		_exit(1);
	if (conf->flags & PD_INIT_POOLED)
		pd_init_await_claim(&st);
	serve(&st);
}
