/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: PID 1 of a sandbox once its root is built (init.c builds it, then execs the
 * init image with a pd_init_conf: init-conf.h). It confines itself, reports READY (a pooled
 * init first waits for its claim, PD_CTL_BIND, and binds it), and from then on is a fork
 * server: each EXEC request becomes a child that walks the pre-exec checklist (exec_child())
 * and execs; init reports STARTED or the step that failed, reaps every process of the
 * sandbox, and reports EXITED for the commands. It also answers the calls the seccomp filter
 * denies (user notifications, seccomp.c) with their errno and reports them (DENIED).
 *
 * Trust: init trusts the supervisor. Everything else in the sandbox is hostile: init is
 * non-dumpable (no ptrace, no /proc/1/mem, no fd peeking from commands even when they share
 * its uid rootless), commands drop every capability, and the kernel discards signals sent to
 * a namespace's init from inside it unless init handles them (it handles none). When init
 * exits, the kernel kills everything else in the pid namespace.
 *
 * This file, and only what it calls, is linked into the static init image: no spec, no
 * libraries but libc. No stdio and no logging here: failures travel as paddock_error
 * messages.
 */
#include "init.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/magic.h>
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
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "control.h"
#include "egress-ports.h"
#include "error.h"
#include "init-conf.h"
#include "landlock.h"
#include "netns-egress.h"
#include "proc-view.h"
#include "rootfs.h"
#include "seccomp-bpf.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/mount-api.h"
#include "util/strv.h"

#define INIT_MAX_EXECS 1024
#define CHILD_STACK_SIZE (256u << 10)

/*
 * The command's child runs on its own stack inside init's memory (CLONE_VM); ASan's stack
 * bookkeeping cannot follow that switch and warns at every noreturn call, on the command's
 * stderr. The child's few functions are left uninstrumented.
 */
#define CHILD_CODE __attribute__((no_sanitize("address")))

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/home/user",
	"USER=user",
	"LOGNAME=user",
	"SHELL=/bin/bash",
	"LANG=C.UTF-8",
	NULL,
};

/* With "user": "root", these replace their names in base_env. */
static const char *const root_env[] = {
	"HOME=/root",
	"USER=root",
	"LOGNAME=root",
	NULL,
};

/*
 * A command init started. init keeps its own copy of the supervisor's end of each pipe and
 * of the pty master until the command's end is reported: a supervisor that dies and comes
 * back (paddock_sandbox_adopt()) gets them again, and the command never sees its output
 * pipe break in between (it blocks when the pipe is full, as under a stopped reader).
 */
struct tracked {
	uint64_t id;
	pid_t pid;
	uint32_t flags;
	int keep[3]; /* supervisor ends of the pipes: stdin write, stdout/stderr read; or -1 */
	int pty;     /* master, or -1 */
	bool exited; /* ended while no supervisor listened: `exit` waits to be reported */
	struct pd_ctl_exited exit;
};

struct init_state {
	const struct pd_init_conf *conf;
	struct pd_ctl_rlimits rlimits; /* applied by each command's child */
	int ctl;
	int sigfd;
	int landlock_fd;
	int landlock_abi; /* in force for init and every command; 0: none */
	struct pd_seccomp_prog seccomp;
	char *child_stack; /* for commands' CLONE_VM children, CHILD_STACK_SIZE bytes */
	struct tracked execs[INIT_MAX_EXECS];
	size_t n_execs;
	int listen_fd;		 /* reconnect socket, or -1: the sandbox dies with its supervisor */
	int record_fd;		 /* the supervisor's record of the sandbox (a sealed memfd), or -1 */
	char **bound_env;	 /* a pooled sandbox's env, bound at its claim (replaces spec's) */
	char **bound_secret_env; /* its secrets' NAME=placeholder, bound at its claim */
	bool bound_ca;		 /* its claim wrote the sandbox's CA into /etc/paddock */
	int host_tree;		 /* pooled: the host's tree, for a claim's workspace by path */
	int proc_view;		 /* pooled: the /proc view's directory, rewritten at the claim */
	int upper_fd;		 /* an image's writable layer (O_PATH), sent with READY, or -1 */
	bool bounding_empty;	 /* the capability bounding set is empty */
	int notify_fd;		 /* the seccomp filter's listener: denied calls wait here */
	uint64_t denied_total;	 /* denied calls answered */
	uint32_t denied_dropped; /* ...not reported since the last DENIED (rate, or no one) */
	double denied_tokens;	 /* DENIED messages init may send now */
	struct timespec denied_refill;
};

/* DENIED messages: a burst of 20, then 10 a second; the total counts every denial. */
#define DENIED_BURST 20.0
#define DENIED_PER_S 10.0

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
static int empty_bounding_set(struct init_state *st, paddock_error *err)
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

static int confine_self(struct init_state *st, paddock_error *err)
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
	 * the filter denies waits for init's answer (answer_denied()): init, and the children
	 * it runs code in before their exec (exec_child()), must never make one, or they would
	 * wait for themselves.
	 */
	r = pd_seccomp_load(&st->seccomp, &st->notify_fd);
	if (r < 0)
		return pd_fail(err, r, "load seccomp filter");
	return 0;
}

/*
 * The Landlock ruleset: the paths a command may write below, held by inode (landlock.c). A
 * claim with a workspace makes it again once the claim's tree is on /workspace.
 */
static int prepare_landlock(struct init_state *st, paddock_error *err)
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

/* ---- one command ---------------------------------------------------------------------- */

struct child_plan {
	const struct init_state *st;
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

CHILD_CODE _Noreturn static void child_fail(const struct child_plan *p, enum pd_exec_step step, int code,
				 const char *what)
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
 * init (confine_self()). Runs in a CLONE_VM|CLONE_VFORK child on its own stack, sharing
 * init's memory while init waits: only raw syscalls and stack variables here. None the
 * seccomp policy denies: the call would wait for init to answer it, and init waits for us.
 */
CHILD_CODE static int exec_child(void *arg)
{
	const struct child_plan *p = arg;
	const struct init_state *st = p->st;
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

static bool env_has(char **env, size_t n, const char *kv, size_t *ret_idx)
{
	size_t kl = strcspn(kv, "=");

	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], kv, kl) && env[i][kl] == '=') {
			*ret_idx = i;
			return true;
		}
	return false;
}

/*
 * With egress, the proxy in every spelling tools read (curl reads only the lowercase
 * http_proxy; Go, Python and Node read either). socks5h: the proxy resolves the name.
 */
static const char *const egress_env[] = {
	"http_proxy=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"HTTP_PROXY=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"https_proxy=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"HTTPS_PROXY=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"all_proxy=socks5h://127.0.0.1:" STRINGIFY(PD_EGRESS_SOCKS_PORT),
	"ALL_PROXY=socks5h://127.0.0.1:" STRINGIFY(PD_EGRESS_SOCKS_PORT),
	"no_proxy=localhost,127.0.0.1,::1",
	"NO_PROXY=localhost,127.0.0.1,::1",
	NULL,
};

/* With secrets, every TLS stack's way to a CA bundle leads to one that trusts the sandbox's CA. */
static const char *const ca_env[] = {
	"SSL_CERT_FILE=" PD_CA_BUNDLE_PATH,	"REQUESTS_CA_BUNDLE=" PD_CA_BUNDLE_PATH,
	"CURL_CA_BUNDLE=" PD_CA_BUNDLE_PATH,	"GIT_SSL_CAINFO=" PD_CA_BUNDLE_PATH,
	"NODE_EXTRA_CA_CERTS=" PD_CA_CERT_PATH, "PIP_CERT=" PD_CA_BUNDLE_PATH,
	NULL,
};

/*
 * base, egress, CA, the secrets' placeholders, the spec's, then the request's; a later NAME
 * replaces an earlier one (the spec cannot name a secret: validated).
 */
static char **build_env(const struct init_state *st, char **extra)
{
	size_t cap = ELEMENTSOF(base_env) + ELEMENTSOF(root_env) + ELEMENTSOF(egress_env) +
		     ELEMENTSOF(ca_env) +
		     pd_strv_length(st->conf->secret_env) + pd_strv_length(st->bound_secret_env) +
		     pd_strv_length(st->conf->env) + pd_strv_length(st->bound_env) +
		     pd_strv_length(extra) + 1,
	       n = 0;
	char **env = calloc(cap, sizeof(char *));
	const char *const *lists[7] = { base_env,
					st->conf->idmap.root_user ? root_env : NULL,
					(st->conf->flags & PD_INIT_EGRESS) ? egress_env : NULL,
					(st->conf->flags & PD_INIT_CA) || st->bound_ca ? ca_env : NULL,
					(const char *const *)(st->bound_secret_env
								      ? st->bound_secret_env
								      : st->conf->secret_env),
					(const char *const *)(st->bound_env ? st->bound_env
									     : st->conf->env),
					(const char *const *)extra };

	if (!env)
		return NULL;
	for (int l = 0; l < 7; l++)
		for (const char *const *e = lists[l]; e && *e; e++) {
			size_t idx;

			if (!strchr(*e, '='))
				continue;
			if (env_has(env, n, *e, &idx))
				env[idx] = (char *)*e;
			else
				env[n++] = (char *)*e;
		}
	return env;
}

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

/* Sends a message with a command's fds: its pty master, then its pipes, stdin first. */
static int send_with_fds(struct init_state *st, uint32_t type, const void *msg, size_t len,
			 const struct tracked *t)
{
	int fds[4];
	size_t n = 0;

	if (t->pty >= 0)
		fds[n++] = t->pty;
	for (int i = 0; i < 3; i++)
		if (t->keep[i] >= 0)
			fds[n++] = t->keep[i];
	return pd_ctl_send(st->ctl, type, msg, len, fds, n);
}

static void release_tracked(struct init_state *st, size_t i)
{
	struct tracked *t = &st->execs[i];

	t->pty = pd_close(t->pty);
	for (int k = 0; k < 3; k++)
		t->keep[k] = pd_close(t->keep[k]);
	st->execs[i] = st->execs[--st->n_execs];
}

static void reply_error(struct init_state *st, uint64_t id, enum pd_exec_step step, int code,
			const char *msg)
{
	struct pd_ctl_exec_error e = { .id = id, .step = step };

	e.error.code = code < 0 ? -code : code;
	snprintf(e.error.msg, sizeof(e.error.msg), "%s", msg);
	(void)pd_ctl_send(st->ctl, PD_CTL_EXEC_ERROR, &e, sizeof(e), NULL, 0);
}

static void handle_exec(struct init_state *st, const char *buf, size_t len, int *fds,
			size_t nfds)
{
	struct pd_ctl_exec req;
	_cleanup_free_ char **argv = NULL, **extra = NULL, **envp = NULL;
	_cleanup_close_ int master = -EBADF, slave = -EBADF;
	_cleanup_(close_pipes) int pipes[3][2] = { { -EBADF, -EBADF }, { -EBADF, -EBADF },
						   { -EBADF, -EBADF } };
	int pipefd[2] = { -EBADF, -EBADF };
	struct child_plan p = { .st = st, .pty_slave = -1, .fds = { -1, -1, -1 } };
	struct pd_ctl_exec_error e;
	const char *pos, *end = buf + len, *cwd;
	size_t k = 0, idx;
	ssize_t n;
	pid_t pid;
	int r;

	if (len < sizeof(req))
		return reply_error(st, 0, PD_STEP_SETUP, EPROTO, "malformed exec request");
	memcpy(&req, buf, sizeof(req));
	pos = buf + sizeof(req);
	cwd = pos;
	if (!memchr(pos, '\0', (size_t)(end - pos)))
		return reply_error(st, req.id, PD_STEP_SETUP, EPROTO, "malformed exec request");
	pos += strlen(pos) + 1;
	if (pd_strv_unpack(&pos, end, req.argc, PD_CTL_MAX_ARGS, NULL, &argv) < 0 ||
	    pd_strv_unpack(&pos, end, req.envc, PD_CTL_MAX_ARGS, NULL, &extra) < 0 ||
	    req.argc == 0 || !argv[0][0])
		return reply_error(st, req.id, PD_STEP_SETUP, EPROTO, "malformed exec request");
	/* what is left is the command's own filter, exactly as long as the header says */
	if ((size_t)(end - pos) != req.filter_len || req.filter_len % sizeof(struct sock_filter) ||
	    req.filter_len > PD_EXEC_FILTER_MAX)
		return reply_error(st, req.id, PD_STEP_SETUP, EPROTO, "malformed exec request");
	p.filter = (struct sock_fprog){
		.len = (unsigned short)(req.filter_len / sizeof(struct sock_filter)),
		.filter = (struct sock_filter *)(uintptr_t)pos,
	};
	if (st->n_execs >= INIT_MAX_EXECS)
		return reply_error(st, req.id, PD_STEP_SETUP, EAGAIN, "too many commands running");
	envp = build_env(st, extra);
	if (!envp)
		return reply_error(st, req.id, PD_STEP_SETUP, ENOMEM, "build environment");
	for (int i = 0; i < 3; i++)
		if ((req.flags & (PD_EXEC_FD_STDIN << i)) && k < nfds)
			p.fds[i] = fds[k++];
	for (int i = 0; i < 3; i++) {
		if (!(req.flags & (PD_EXEC_PIPE_STDIN << i)) || (req.flags & (1u << i)))
			continue;
		if (pipe2(pipes[i], O_CLOEXEC) < 0)
			return reply_error(st, req.id, PD_STEP_SETUP, errno, "pipe");
		/* the command reads stdin's read end [0] and writes the others' write end [1] */
		p.fds[i] = pipes[i][i == 0 ? 0 : 1];
	}
	if (req.flags & (PD_EXEC_PTY_STDIN | PD_EXEC_PTY_STDOUT | PD_EXEC_PTY_STDERR)) {
		r = open_pty(&req, &st->conf->idmap, &master, &slave);
		if (r < 0)
			return reply_error(st, req.id, PD_STEP_SETUP, r, "open a pseudo-terminal");
		p.pty_slave = slave;
		p.pty_streams = req.flags & 7u;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return reply_error(st, req.id, PD_STEP_SETUP, errno, "pipe");
	p.ctty = (req.flags & PD_EXEC_CTTY) != 0;
	/* the supervisor checked the ids exist here (exec.c); the sandbox user's otherwise */
	p.uid = (req.flags & PD_EXEC_USER) ? req.uid : PD_SANDBOX_UID;
	p.gid = (req.flags & PD_EXEC_USER) ? req.gid : PD_SANDBOX_GID;
	p.argv = argv;
	p.envp = envp;
	p.cwd = cwd[0] ? cwd : st->conf->cwd;
	p.errpipe = pipefd[1];
	p.path = env_has(envp, pd_strv_length(envp), "PATH=", &idx) ? envp[idx] + 5 : NULL;

	/*
	 * posix_spawn's trick: the child borrows init's memory (no page tables to copy, nothing
	 * to tear down at exec) and init sleeps until it has exec'ed or failed.
	 */
	pid = clone(exec_child, st->child_stack + CHILD_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD,
		    &p);
	if (pid < 0) {
		r = -errno;
		pd_close(pipefd[0]);
		pd_close(pipefd[1]);
		return reply_error(st, req.id, PD_STEP_SETUP, r, "spawn");
	}
	pd_close(pipefd[1]);
	slave = pd_close(slave);
	/* EOF means execve() succeeded (the pipe is close-on-exec); a record means a step failed */
	n = pd_read_full(pipefd[0], &e, sizeof(e));
	pd_close(pipefd[0]);
	if (n == (ssize_t)sizeof(e)) {
		(void)waitpid(pid, NULL, 0);
		e.id = req.id;
		e.error.msg[sizeof(e.error.msg) - 1] = '\0';
		(void)pd_ctl_send(st->ctl, PD_CTL_EXEC_ERROR, &e, sizeof(e), NULL, 0);
		return;
	}
	struct tracked *t = &st->execs[st->n_execs++];
	*t = (struct tracked){ .id = req.id, .pid = pid, .flags = req.flags, .pty = -1,
			       .keep = { -1, -1, -1 } };
	t->pty = TAKE_FD(master);
	for (int i = 0; i < 3; i++) {
		int child_end = i == 0 ? 0 : 1;

		if (pipes[i][0] < 0)
			continue;
		pipes[i][child_end] = pd_close(pipes[i][child_end]);
		t->keep[i] = TAKE_FD(pipes[i][1 - child_end]);
	}
	struct pd_ctl_started s = { .id = req.id, .pid = pid, .denied = st->denied_total };
	send_with_fds(st, PD_CTL_STARTED, &s, sizeof(s), t);
}

/* The command a request names, or NULL (ended and reported meanwhile, or never ours). */
static struct tracked *find_tracked(struct init_state *st, uint64_t id)
{
	for (size_t i = 0; i < st->n_execs; i++)
		if (st->execs[i].id == id)
			return &st->execs[i];
	return NULL;
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

static void handle_signal(struct init_state *st, const char *buf, size_t len)
{
	struct pd_ctl_signal s;
	struct tracked *t;

	if (len < sizeof(s))
		return;
	memcpy(&s, buf, sizeof(s));
	t = find_tracked(st, s.id);
	/* the command leads its own session and process group */
	if (t && kill(-t->pid, s.sig) < 0)
		(void)kill(t->pid, s.sig);
}

static void handle_close_stdin(struct init_state *st, const char *buf, size_t len)
{
	struct pd_ctl_id m;
	struct tracked *t;

	if (len < sizeof(m))
		return;
	memcpy(&m, buf, sizeof(m));
	t = find_tracked(st, m.id);
	if (t) {
		t->keep[0] = pd_close(t->keep[0]);
		/* a later supervisor is told the command has no stdin pipe any more (resync) */
		t->flags &= ~PD_EXEC_PIPE_STDIN;
	}
}

/* A socket in the sandbox's network namespace, for the supervisor to connect or listen on. */
static void handle_socket(struct init_state *st, const char *buf, size_t len)
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

/* Free space of the sandbox's disk (the tmpfs /tmp lives on), for the "disk" reason. */
static uint64_t disk_free(void)
{
	struct statfs sf;

	if (statfs("/tmp", &sf) < 0)
		return UINT64_MAX;
	return (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize;
}

/* ---- denied calls ---------------------------------------------------------------------- */

static bool take_denied_token(struct init_state *st)
{
	struct timespec now;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (double)(now.tv_sec - st->denied_refill.tv_sec) +
	     (double)(now.tv_nsec - st->denied_refill.tv_nsec) / 1e9;
	st->denied_refill = now;
	st->denied_tokens += dt * DENIED_PER_S;
	if (st->denied_tokens > DENIED_BURST)
		st->denied_tokens = DENIED_BURST;
	if (st->denied_tokens < 1.0)
		return false;
	st->denied_tokens -= 1.0;
	return true;
}

/* The caller's name, as /proc/PID/comm says (the sandbox's /proc), or empty. */
static void read_comm(int32_t pid, char comm[16])
{
	char path[32], buf[17];
	ssize_t n;
	int fd;

	memset(comm, 0, 16);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	pd_close(fd);
	if (n <= 0)
		return;
	if (buf[n - 1] == '\n')
		n--;
	memcpy(comm, buf, (size_t)(n > 16 ? 16 : n));
}

/*
 * One call the seccomp filter denied: answer it with the rule's errno, count it, and report
 * it while the rate allows (with the caller's name, read before the answer lets the caller
 * go on, and kept only if the notification was still pending then: its pid was still its).
 */
static void answer_denied(struct init_state *st)
{
	struct pd_seccomp_denial d;
	struct pd_ctl_denied m = { 0 };
	bool report;

	if (pd_seccomp_receive(st->notify_fd, &d) < 0)
		return; /* the caller was killed meanwhile: nothing happened */
	st->denied_total++;
	report = st->ctl >= 0 && take_denied_token(st);
	if (report) {
		m = (struct pd_ctl_denied){ .arch = d.arch, .nr = d.nr, .pid = d.pid,
					    .dropped = st->denied_dropped,
					    .total = st->denied_total };
		read_comm(d.pid, m.comm);
		if (!pd_seccomp_still_waiting(st->notify_fd, d.id))
			memset(m.comm, 0, sizeof(m.comm));
	}
	(void)pd_seccomp_answer(st->notify_fd, &d);
	if (report && pd_ctl_send(st->ctl, PD_CTL_DENIED, &m, sizeof(m), NULL, 0) == 0)
		st->denied_dropped = 0;
	else if (st->denied_dropped < UINT32_MAX)
		st->denied_dropped++;
}

static void reap(struct init_state *st)
{
	struct signalfd_siginfo si;
	struct rusage ru;
	int status;
	pid_t pid;

	while (read(st->sigfd, &si, sizeof(si)) == sizeof(si))
		;
	while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		for (size_t i = 0; i < st->n_execs; i++) {
			if (st->execs[i].pid != pid)
				continue;
			struct pd_ctl_exited x = {
				.id = st->execs[i].id,
				.status = status,
				.utime_us = ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
				.stime_us = ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
				.maxrss_kb = ru.ru_maxrss,
				.disk_free_bytes = disk_free(),
				.denied = st->denied_total,
			};
			/* nobody to tell: keep it (and its output) for the next supervisor */
			if (st->ctl < 0 ||
			    pd_ctl_send(st->ctl, PD_CTL_EXITED, &x, sizeof(x), NULL, 0) < 0) {
				st->execs[i].exited = true;
				st->execs[i].exit = x;
				break;
			}
			release_tracked(st, i);
			break;
		}
	}
}

/*
 * READY, with the sandbox's "/" for the supervisor's file access (fsops.c), held by fd, and
 * an image's writable layer for its snapshots (sandbox-snapshot.c), when it has one.
 */
static int send_ready(struct init_state *st)
{
	struct pd_ctl_ready ready = { .landlock_abi = st->landlock_abi,
				      .flags = st->host_tree >= 0 ? PD_READY_HOST_TREE : 0 };
	int fds[2] = { open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), st->upper_fd };
	int r;

	if (fds[0] < 0)
		return -errno;
	r = pd_ctl_send(st->ctl, PD_CTL_READY, &ready, sizeof(ready), fds, st->upper_fd >= 0 ? 2 : 1);
	pd_close(fds[0]);
	return r;
}

/*
 * A new supervisor connected: tell it every command still known (running, or ended while
 * nobody listened), with their pipes and terminals, then READY.
 */
static int resync(struct init_state *st)
{
	for (size_t i = 0; i < st->n_execs;) {
		struct tracked *t = &st->execs[i];
		struct pd_ctl_exec_state s = { .id = t->id, .pid = t->pid, .flags = t->flags,
					       .exited = t->exited, .exit = t->exit };
		int r = send_with_fds(st, PD_CTL_EXEC_STATE, &s, sizeof(s), t);

		if (r < 0)
			return r;
		if (t->exited)
			release_tracked(st, i);
		else
			i++;
	}
	/* what the last supervisor recorded of the sandbox, for one that lost its records */
	if (st->record_fd >= 0) {
		int r = pd_ctl_send(st->ctl, PD_CTL_RECORD, NULL, 0, &st->record_fd, 1);

		if (r < 0)
			return r;
	}
	return send_ready(st);
}

/* PD_CTL_RECORD: keep the supervisor's record (init never reads it), replacing the last. */
static void handle_record(struct init_state *st, int *fds, size_t nfds)
{
	if (nfds != 1)
		return;
	pd_close(st->record_fd);
	st->record_fd = fds[0]; /* MSG_CMSG_CLOEXEC: no command inherits it */
	fds[0] = -EBADF;
}

/*
 * The supervisor is gone. With a reconnect socket, the sandbox lives on: init keeps reaping
 * and waits for the next supervisor, up to orphan_timeout_s; without one, or then, it exits
 * and the kernel ends everything in the sandbox. The socket sits in the supervisor's state
 * directory (mode 0700, not reachable from inside the sandbox's mount namespace).
 */
static void await_supervisor(struct init_state *st)
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
			answer_denied(st);
		if (p[1].revents & POLLIN)
			reap(st);
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(st->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		st->ctl = fd;
		if (resync(st) == 0)
			return;
		st->ctl = pd_close(st->ctl);
	}
}

_Noreturn static void serve(struct init_state *st)
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
			answer_denied(st);
		if (p[1].revents & POLLIN)
			reap(st);
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
			handle_signal(st, buf, (size_t)n);
			break;
		case PD_CTL_CLOSE_STDIN:
			handle_close_stdin(st, buf, (size_t)n);
			break;
		case PD_CTL_SOCKET:
			handle_socket(st, buf, (size_t)n);
			break;
		case PD_CTL_STOP_ALL:
			handle_stop_all(buf, (size_t)n);
			break;
		case PD_CTL_RECORD:
			handle_record(st, fds, nfds);
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
 * A claim's limits.disk: the disk tmpfs takes the claim's size, as if it had been made with
 * it (rootfs.c made it with the template's). "/" is disk/root, a bind of the disk itself:
 * fspick() on it reconfigures the disk's superblock, which init's user namespace owns, and
 * tmpfs changes only the option given (shmem_reconfigure(), Linux 6.18, read 2026-12). A size
 * below what is in use already is refused (EINVAL): a pooled sandbox has written only its
 * /etc, as a cold one would have. Done unconfined, before confine_self(): Landlock and the
 * seccomp filter forbid it afterwards, to init as to commands.
 */
static int resize_disk(const struct init_state *st, uint64_t bytes, paddock_error *err)
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
static int bind_proc_view(struct init_state *st, const struct pd_ctl_bind *b,
			  paddock_error *err)
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
static void await_claim(struct init_state *st)
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
			handle_socket(st, buf, (size_t)n);
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
		r = confine_self(st, &err);
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

/*
 * Commands start from what is left after setup: the signals, and the memory init's own
 * children share (the stack they run on until they exec).
 */
static int prepare_commands(struct init_state *st, paddock_error *err)
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
	static struct init_state st;
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
	st.denied_tokens = DENIED_BURST;
	clock_gettime(CLOCK_MONOTONIC, &st.denied_refill);

	/* "paddock-init" in ps, and never matched by a `pkill paddockd` meant for the daemon */
	(void)prctl(PR_SET_NAME, "paddock-init", 0, 0, 0);
	/* open across the exec only: nothing init starts may inherit one (commands close all) */
	const int kept[] = { conf->ctl, conf->lock_fd, conf->listen_fd, conf->landlock_fd,
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
						    : confine_self(&st, &err);
	if (r >= 0)
		r = prepare_commands(&st, &err);
	if (r < 0)
		pd_init_fail(st.ctl, &err);
	if (send_ready(&st) < 0)
		_exit(1);
	if (conf->flags & PD_INIT_POOLED)
		await_claim(&st);
	serve(&st);
}
