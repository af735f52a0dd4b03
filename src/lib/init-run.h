/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of init's running half share (init-image.h links them into the init image):
 * init-run.c confines init, serves the control socket and starts each command;
 * init-track.c keeps the commands it started (reaping, signals, what a returning supervisor
 * is told); init-env.c builds a command's environment; init-denied.c answers the calls the
 * seccomp filter denies; init-claim.c binds a pooled sandbox's claim. One pd_init_state, a
 * static of pd_init_run(), is passed to all of them: init is single-threaded.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "control.h"
#include "init-conf.h"
#include "seccomp-bpf.h"

#define PD_INIT_MAX_EXECS 1024

/* DENIED messages: a burst of 20, then 10 a second; the total counts every denial. */
#define PD_INIT_DENIED_BURST 20.0
#define PD_INIT_DENIED_PER_S 10.0

/*
 * A command init started. init keeps its own copy of the supervisor's end of each pipe and
 * of the pty master until the command's end is reported: a supervisor that dies and comes
 * back (paddock_sandbox_adopt()) gets them again, and the command never sees its output
 * pipe break in between (it blocks when the pipe is full, as under a stopped reader).
 */
struct pd_init_tracked {
	uint64_t id;
	pid_t pid;
	uint32_t flags;
	int keep[3]; /* supervisor ends of the pipes: stdin write, stdout/stderr read; or -1 */
	int pty;     /* master, or -1 */
	bool exited; /* ended while no supervisor listened: `exit` waits to be reported */
	struct pd_ctl_exited exit;
};

struct pd_init_state {
	const struct pd_init_conf *conf;
	struct pd_ctl_rlimits rlimits; /* applied by each command's child */
	int ctl;
	int sigfd;
	int landlock_fd;
	int landlock_abi; /* in force for init and every command; 0: none */
	struct pd_seccomp_prog seccomp;
	char *child_stack; /* for commands' CLONE_VM children, CHILD_STACK_SIZE bytes */
	struct pd_init_tracked execs[PD_INIT_MAX_EXECS];
	size_t n_execs;
	int listen_fd;	  /* reconnect socket, or -1: the sandbox dies with its supervisor */
	int record_fd;	  /* the supervisor's record of the sandbox (a sealed memfd), or -1 */
	char **bound_env; /* a pooled sandbox's env, bound at its claim (replaces spec's) */
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

/* ---- init-run.c ---- */

/* Empty bounding set, Landlock, then seccomp, on init itself: commands inherit all three. */
int pd_init_confine_self(struct pd_init_state *st, paddock_error *err);
/* PD_CTL_SOCKET: answers with a socket of the sandbox's network namespace, or an errno. */
void pd_init_handle_socket(struct pd_init_state *st, const char *buf, size_t len);

/* ---- init-track.c ---- */

/* Sends a message with a command's fds: its pty master, then its pipes, stdin first. */
int pd_init_send_with_fds(struct pd_init_state *st, uint32_t type, const void *msg, size_t len,
			  const struct pd_init_tracked *t);
/* PD_CTL_SIGNAL and PD_CTL_CLOSE_STDIN, for a command still tracked (else ignored). */
void pd_init_handle_signal(struct pd_init_state *st, const char *buf, size_t len);
void pd_init_handle_close_stdin(struct pd_init_state *st, const char *buf, size_t len);
/* PD_CTL_RECORD: keeps the record the message carries (takes fds[0]). */
void pd_init_handle_record(struct pd_init_state *st, int *fds, size_t nfds);
/* Reaps every child that ended, and reports (or keeps, with no supervisor) the commands'. */
void pd_init_reap(struct pd_init_state *st);
/* PD_CTL_READY with the sandbox's "/" (and an image's writable layer). 0 or -errno. */
int pd_init_send_ready(struct pd_init_state *st);
/* Tells a new supervisor every command still tracked, the record, then READY. 0 or -errno. */
int pd_init_resync(struct pd_init_state *st);

/* ---- init-env.c ---- */

/* Whether env[0..n) sets the NAME of `kv` ("NAME=..."), and at which index. */
bool pd_init_env_has(char **env, size_t n, const char *kv, size_t *ret_idx);
/*
 * A command's environment: the sandbox's, then the request's `extra`. The array is the
 * caller's to free(); its strings are borrowed (from st and extra). NULL when out of memory.
 */
char **pd_init_build_env(const struct pd_init_state *st, char **extra);

/* ---- init-denied.c ---- */

/* Answers one call the seccomp filter denied, and reports it while the rate allows. */
void pd_init_answer_denied(struct pd_init_state *st);

/* ---- init-claim.c ---- */

/*
 * A pooled init's wait for its claim (PD_CTL_BIND), which it binds and confines itself for.
 * Returns once BOUND is sent; exits when the claim does not come or cannot be bound.
 */
void pd_init_await_claim(struct pd_init_state *st);
