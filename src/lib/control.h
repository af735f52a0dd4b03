/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control protocol between a supervisor and a sandbox's init: one SOCK_SEQPACKET
 * socketpair, one message per datagram, fds by SCM_RIGHTS. Each message starts with a
 * fixed header; payloads are fixed structs, plus a packed string area for exec requests.
 *
 * Trust: messages from init are hostile (init runs inside the sandbox's namespaces, and a
 * kernel bug or a future change could let sandbox code speak for it). The supervisor checks
 * every length, type, id and string before use, and never trusts a pid from init as a host
 * pid. Messages from the supervisor are trusted by init.
 */
#pragma once

#include <stdint.h>
#include <sys/resource.h>

#include "paddock/paddock.h"

#define PD_CTL_MAX_MSG	(128u << 10) /* bytes in one message, header included */
#define PD_CTL_MAX_FDS	5
#define PD_CTL_MAX_ARGS 4096

enum pd_ctl_type {
	PD_CTL_GO = 1,	    /* S->I: id maps are written, go on */
	PD_CTL_READY,	    /* I->S: root built, waiting for commands (pd_ctl_ready), "/" fd,
			       and an image's writable layer (its overlay upper, O_PATH) */
	PD_CTL_FAILED,	    /* I->S: setup failed (paddock_error); init exits */
	PD_CTL_EXEC,	    /* S->I: run a command (pd_ctl_exec + strings), fds 0..2 */
	PD_CTL_STARTED,	    /* I->S: forked and exec'ed (pd_ctl_started), pty master fd */
	PD_CTL_EXEC_ERROR,  /* I->S: could not start (pd_ctl_exec_error) */
	PD_CTL_EXITED,	    /* I->S: a command ended (pd_ctl_exited) */
	PD_CTL_SIGNAL,	    /* S->I: signal a command's process group (pd_ctl_signal) */
	PD_CTL_RESIZE,	    /* S->I: pty window size (pd_ctl_resize) */
	PD_CTL_CGROUP,	    /* S->I: init is in its cgroup, or has none (pd_ctl_cgroup) */
	PD_CTL_TREE,	    /* S->I, before GO: a ready mount tree for a bind (pd_ctl_tree), fd */
	PD_CTL_HOLD,	    /* S->I, before GO: an fd for init to keep (pd_ctl_hold) */
	PD_CTL_CLOSE_STDIN, /* S->I: close init's copy of a command's stdin pipe (pd_ctl_id) */
	PD_CTL_SOCKET,	    /* S->I: make a socket in the sandbox's netns (pd_ctl_socket) */
	PD_CTL_SOCKET_FD,   /* I->S: the socket (pd_ctl_socket_fd), fd unless error */
	PD_CTL_EXEC_STATE,  /* I->S, on reconnect, before READY: a command (pd_ctl_exec_state), fds
			     */
	PD_CTL_BIND,	 /* S->I, to a pooled init: what the claim binds (pd_ctl_bind + strings) */
	PD_CTL_BOUND,	 /* I->S: bound and confined (pd_ctl_ready), or FAILED */
	PD_CTL_DENIED,	 /* I->S: the seccomp filter denied a call (pd_ctl_denied) */
	PD_CTL_STOP_ALL, /* S->I: SIGSTOP (stop 1) or SIGCONT (0) to every process but init
			    (pd_ctl_stop_all): pause without a freezer (rootless) */
	/*
	 * S->I: keep this record for the next supervisor (no payload; a sealed memfd), replacing
	 * the one kept. I->S, on reconnect, after the EXEC_STATEs and before READY: the record
	 * kept, when there is one. Its content is the supervisor's (sandbox-adopt.c).
	 */
	PD_CTL_RECORD,
	_PD_CTL_MAX,
};

struct pd_ctl_hdr {
	uint32_t type;
	uint32_t len; /* payload bytes after the header */
};

#define PD_CTL_TREE_WORKSPACE (-1)
/* layer i of the spec's image (bottom first): PD_CTL_TREE_LAYER(0) - index */
#define PD_CTL_TREE_LAYER(i) (-1000 - (int32_t)(i))

struct pd_ctl_tree {
	int32_t index; /* PD_CTL_TREE_WORKSPACE, PD_CTL_TREE_LAYER(i), or a spec->binds index */
};

enum pd_ctl_hold_kind {
	PD_HOLD_LOCK = 1, /* the id slot's lock: held for as long as init lives */
	PD_HOLD_LISTEN,	  /* a listening socket a restarted supervisor reconnects to */
};

struct pd_ctl_hold {
	int32_t kind;
	int32_t orphan_timeout_s; /* PD_HOLD_LISTEN: exit when nobody reconnects by then */
};

struct pd_ctl_id {
	uint64_t id;
};

struct pd_ctl_socket {
	int32_t domain, type; /* AF_INET/AF_INET6/AF_UNIX, SOCK_STREAM/SOCK_DGRAM */
};

struct pd_ctl_socket_fd {
	int32_t error; /* positive errno, 0 with the socket attached */
};

struct pd_ctl_cgroup {
	int32_t enforced; /* memory and pids are enforced by a cgroup: no rlimit stand-ins */
};

struct pd_ctl_ready {
	int32_t landlock_abi; /* 0 when commands run without Landlock */
	uint32_t flags;	      /* PD_READY_*; absent (a 4-byte READY) from older inits */
};

/* a pooled init holds a clone of the host's mount tree: a claim may name a workspace by path */
#define PD_READY_HOST_TREE 1u

/* One resource limit every command starts with (setrlimit()'s resource, soft, hard). */
struct pd_ctl_rlimit {
	int32_t resource; /* FSIZE, NOFILE, CPU, CORE (always), DATA, NPROC (RLIMIT_*) */
	uint32_t pad;
	uint64_t soft, hard;
};

/* At most one of each resource above. */
#define PD_CTL_MAX_RLIMITS 6

/* The rlimits of every command: made by pd_init_plan_rlimits() (init.h). */
struct pd_ctl_rlimits {
	uint32_t n;
	uint32_t pad;
	struct pd_ctl_rlimit r[PD_CTL_MAX_RLIMITS];
};

/*
 * The claim of a pooled sandbox: what differs between claims of one template. The cgroup's
 * limits are not in it: the supervisor writes them before it sends this.
 */
struct pd_ctl_bind {
	uint32_t envc;
	uint32_t secretc;      /* the secrets' NAME=placeholder, at most PD_CTL_MAX_SECRETS */
	uint32_t workspace;    /* PD_BIND_WORKSPACE_* */
	uint32_t cpus_milli;   /* limits.cpus x 1000: the /proc view's CPUs, affinity */
	uint64_t disk_bytes;   /* limits.disk: the size of the disk tmpfs */
	uint64_t memory_bytes; /* limits.memory: the /proc view's memory */
	/* PD_BIND_WORKSPACE_PATH: the directory the supervisor found there (0 otherwise) */
	uint64_t workspace_dev, workspace_ino;
	struct pd_ctl_rlimits rlimits; /* the claim's plan, as a cold init would make it */
				       /*
					* then: hostname\0, env[0]\0 ... env[envc-1]\0 (the spec's "env", NAME=VALUE),
					* secret_env[0]\0 ... secret_env[secretc-1]\0 (NAME=placeholder), with
					* PD_BIND_WORKSPACE_PATH the workspace's absolute host path\0, ca_pem\0 (the sandbox's
					* CA certificate; empty without secrets, and only then)
					*/
};

enum {
	PD_BIND_WORKSPACE_NONE = 0,
	PD_BIND_WORKSPACE_TREE = 1, /* its tree comes with the message (an fd, idmapped) */
	PD_BIND_WORKSPACE_PATH = 2, /* init clones it from the host tree it holds (rootless) */
};

/* The secrets a claim may bind (PD_SECRETS_MAX) and the size of its CA's certificate (PEM). */
#define PD_CTL_MAX_SECRETS 32
#define PD_CTL_MAX_CA_PEM  8192

/*
 * PD_CTL_BIND as init reads it: pointers into the message; env and secret_env allocated
 * (free() each alone, not what they point to).
 */
struct pd_ctl_bind_msg {
	struct pd_ctl_bind hdr;
	const char *hostname;
	char **env;		    /* NULL-terminated, envc entries */
	char **secret_env;	    /* NULL-terminated, secretc entries */
	const char *ca_pem;	    /* NULL without secrets */
	const char *workspace_path; /* with PD_BIND_WORKSPACE_PATH only */
};

/* What a claim binds besides its header: borrowed strings, for pd_ctl_bind_pack(). */
struct pd_ctl_bind_strings {
	const char *hostname;
	char *const *env;
	size_t envc;
	char *const *secret_env;    /* NAME=placeholder; NULL or NULL-terminated */
	const char *ca_pem;	    /* NULL without secrets */
	const char *workspace_path; /* with PD_BIND_WORKSPACE_PATH: absolute */
};

#define PD_EXEC_PTY_STDIN  (1u << 0)
#define PD_EXEC_PTY_STDOUT (1u << 1)
#define PD_EXEC_PTY_STDERR (1u << 2)
/* which of stdin/out/err come as fds (in order); the others are /dev/null */
#define PD_EXEC_FD_STDIN  (1u << 4)
#define PD_EXEC_FD_STDOUT (1u << 5)
#define PD_EXEC_FD_STDERR (1u << 6)
/* init makes a pipe for the stream and keeps the supervisor's end until the command ends */
#define PD_EXEC_PIPE_STDIN  (1u << 8)
#define PD_EXEC_PIPE_STDOUT (1u << 9)
#define PD_EXEC_PIPE_STDERR (1u << 10)
/* stdin (a terminal, given as an fd) becomes the command's controlling terminal */
#define PD_EXEC_CTTY (1u << 12)
/* the command runs as pd_ctl_exec's uid and gid (mapped ids of a sandbox that is not root's) */
#define PD_EXEC_USER (1u << 13)
/* a command's own seccomp filter: at most this many bytes (4096 instructions) */
#define PD_EXEC_FILTER_MAX (4096u * 8)
/*
 * The library's own code interpreter server (code.c), not a front end's command: a supervisor
 * that adopts the sandbox gives it back to code.c and lists it to no front end. init keeps
 * the flags of a command and reports them (pd_ctl_exec_state), and ignores this one.
 */
#define PD_EXEC_CODE_SERVER (1u << 16)

struct pd_ctl_exec {
	uint64_t id;
	uint32_t flags;
	uint16_t rows, cols;
	uint32_t argc;
	uint32_t envc;
	uint32_t uid, gid; /* with PD_EXEC_USER: the command's ids instead of the sandbox user's */
	/* bytes of a seccomp program (struct sock_filter[]) after the strings, loaded by the
	 * command on top of the sandbox's filter before it execs; 0: none */
	uint32_t filter_len;
	uint32_t pad;
	/* then: cwd\0 (may be empty: the spec's), argv[0]\0 ... argv[argc-1]\0, env...,
	 * and filter_len bytes of the command's own filter */
};

/* fds attached: the pty master first when there is one, then the pipes, stdin first */
struct pd_ctl_started {
	uint64_t id;
	int32_t pid;
	int32_t pad;
	uint64_t denied; /* calls the seccomp filter denied in the sandbox so far */
};
/* what a STARTED of an init before `denied` holds (a restarted supervisor adopts those) */
#define PD_CTL_STARTED_V0_SIZE 16

struct pd_ctl_exec_error {
	uint64_t id;
	int32_t step; /* enum pd_exec_step: which pre-exec step failed */
	paddock_error error;
};

struct pd_ctl_exited {
	uint64_t id;
	int32_t status; /* as from wait4() */
	int32_t pad;
	int64_t utime_us, stime_us;
	int64_t maxrss_kb;
	uint64_t disk_free_bytes; /* of the sandbox's disk tmpfs when the command ended */
	uint64_t denied;	  /* calls the seccomp filter denied in the sandbox so far */
};
#define PD_CTL_EXITED_V0_SIZE 48

/* a command that was running when the supervisor went away; fds as with STARTED */
struct pd_ctl_exec_state {
	uint64_t id;
	int32_t pid;
	uint32_t flags; /* of its exec request */
	int32_t exited; /* ended while nobody listened: `exit` is its report */
	int32_t pad;
	struct pd_ctl_exited exit;
};

/*
 * A call the seccomp filter denied (init answered it with the rule's errno). init sends at
 * most a burst of 20 and 10 a second; `dropped` counts those it did not send since the last
 * one, `total` every denial of the sandbox. All of it is the sandbox's word: the name, the
 * pid and the counts are checked and bounded by the supervisor, never trusted.
 */
struct pd_ctl_denied {
	uint32_t arch;	  /* AUDIT_ARCH_* as the filter saw it */
	int32_t nr;	  /* the syscall number (x32: with bit 30) */
	int32_t pid;	  /* the caller in the sandbox's pid namespace */
	uint32_t dropped; /* denials not reported since the last message */
	uint64_t total;	  /* denials in the sandbox since it started */
	char comm[16];	  /* the caller's name (/proc/PID/comm), NUL-padded, maybe unterminated */
};

struct pd_ctl_signal {
	uint64_t id;
	int32_t sig;
};

struct pd_ctl_stop_all {
	uint32_t stop;
};

struct pd_ctl_resize {
	uint64_t id;
	uint16_t rows, cols;
};

enum pd_exec_step {
	PD_STEP_SETUP,	/* fds, terminal, session */
	PD_STEP_LIMITS, /* rlimits */
	PD_STEP_LANDLOCK,
	PD_STEP_PRIVS, /* uid/gid, capabilities, no_new_privs */
	PD_STEP_CWD,
	PD_STEP_SECCOMP,
	PD_STEP_EXECVE,
	_PD_STEP_MAX,
};

/*
 * Packs PD_CTL_BIND: the header (envc and secretc are set here), then hostname, env, the
 * secrets' env and the CA. *ret_buf is malloc'ed. -E2BIG when it exceeds one message,
 * -EINVAL when the secrets are more than PD_CTL_MAX_SECRETS, or a CA without them (or
 * them without a CA), or a CA larger than PD_CTL_MAX_CA_PEM; -ENOMEM.
 */
int pd_ctl_bind_pack(const struct pd_ctl_bind *hdr, const struct pd_ctl_bind_strings *s,
		     char **ret_buf, size_t *ret_len);

/*
 * Parses PD_CTL_BIND strictly (init's side): every string terminated and the last one ending
 * the message, a hostname of at most 64 bytes, at most PD_CTL_MAX_ARGS variables each with a
 * '=', at most PD_CTL_MAX_SECRETS secret variables each with a name and a '=', a CA of at
 * most PD_CTL_MAX_CA_PEM bytes of printable ASCII and newlines, present exactly when there
 * are secrets, with PD_BIND_WORKSPACE_PATH an absolute path shorter than PATH_MAX (and
 * none, and no device and inode, otherwise), a disk size, and an rlimit plan of known
 * resources, each at most once, soft <= hard, with RLIMIT_FSIZE, RLIMIT_NOFILE and
 * RLIMIT_CPU present. 0, or -EPROTO / -ENOMEM.
 * On success free ret->env and ret->secret_env.
 */
int pd_ctl_bind_parse(const char *buf, size_t len, struct pd_ctl_bind_msg *ret);

/*
 * Sends one message with optional fds. Blocking; retries EINTR. 0 or -errno.
 */
int pd_ctl_send(int sock, uint32_t type, const void *payload, size_t len, const int *fds,
		size_t nfds);

/*
 * Receives one message into buf (at least sizeof(struct pd_ctl_hdr) + PD_CTL_MAX_MSG is not
 * required: a message longer than size is an error). fds received are close-on-exec and
 * returned in fds (*nfds in: capacity, out: count); surplus fds are closed. Returns the payload
 * length, 0 with *type = 0 on EOF, -EAGAIN when nonblocking and empty, -EPROTO on a
 * malformed message (and closes any fds it carried).
 */
ssize_t pd_ctl_recv(int sock, uint32_t *type, void *buf, size_t size, int *fds, size_t *nfds);

/*
 * pd_ctl_recv() that waits up to timeout_ms for a message (also on a non-blocking socket):
 * -ETIMEDOUT when none came.
 */
ssize_t pd_ctl_recv_wait(int sock, int timeout_ms, uint32_t *type, void *buf, size_t size, int *fds,
			 size_t *nfds);
