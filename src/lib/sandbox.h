/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor's view of a sandbox: its init (held by pidfd), the control socket, the
 * execs in flight, and the timers that bound its life. Everything here lives in the
 * supervisor process and is driven by the context's libevent loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "paddock/paddock.h"
#include "cgroup.h"
#include "control.h" /* struct pd_ctl_exited */
#include "idmap.h"
#include "spec.h"

struct pd_ctl_exited;

struct event;
struct event_base;

struct paddock_ctx {
	struct event_base *base; /* borrowed */
	paddock_event_fn sink;
	void *sink_userdata;
	uint64_t next_exec_id;
	struct pd_resolver *resolver;	 /* egress name resolution, made on first use */
	char *resolve_hosts;		 /* paddock_ctx_set_resolve_hosts(), or NULL */
	char **upstream_ca;		 /* paddock_ctx_add_upstream_ca(): NULL-terminated */
	struct ssl_ctx_st *upstream_tls; /* verifies intercepted hosts; made on first use */
	char *image_store;		 /* paddock_ctx_set_image_store(), or NULL: the default */
	paddock_ask_fn ask_fn;		 /* paddock_ctx_set_ask_handler() */
	void *ask_userdata;
};

/* What libpaddock keeps of one output stream of a captured command (exec-io.c). */
struct pd_exec_stream {
	int fd;
	struct event *ev;
	struct evbuffer *buf; /* the kept bytes: offsets end - length .. end */
	uint64_t end;	      /* offset after the last byte kept */
	uint64_t read;	      /* bytes read from the pipe, kept or not */
};

/* Bytes of stdin that may wait for a command to read them. */
#define PD_EXEC_STDIN_MAX (1u << 20)

/* The exec session of a command whose I/O libpaddock handles (capture != NONE). */
struct pd_exec_io {
	enum paddock_capture mode;
	enum paddock_capture want; /* asked at start: set up when the command runs */
	uint64_t want_bytes;
	uint64_t limit; /* ALL: bytes of stdout and stderr kept together */
	size_t ring;	/* RING: bytes kept of each stream */
	uint64_t kept;	/* ALL: kept so far */
	bool truncated, paused;
	struct pd_exec_stream out[2];
	int in_fd;
	struct event *in_ev;
	struct evbuffer *in_q;
	bool in_closing; /* close once in_q is written */
	paddock_output_fn fn;
	void *userdata;
};

struct paddock_exec {
	paddock_sandbox *sb; /* NULL once delivered or its sandbox is gone (a reference kept it) */
	unsigned refs;	     /* the sandbox's (until delivered) and paddock_exec_ref()'s */
	struct pd_exec_io io;
	uint64_t id;
	char id_str[24]; /* "ex_<n>" for events */
	pid_t pid;	 /* inside the sandbox's pid namespace */
	int pty_fd;	 /* master, or -EBADF */
	struct timespec started;
	bool output_captured;
	unsigned pipe_streams, pty_streams;
	uint32_t flags;	   /* of the exec request */
	bool starting;	   /* sent, neither STARTED nor EXEC_ERROR yet */
	char *argv0, *cwd; /* for the error of a command that cannot start */
	void (*started_fn)(paddock_exec *ex, void *userdata);
	int fds[3]; /* the supervisor's pipe ends until taken, or -EBADF */
	struct event *timeout_ev;
	struct timeval timeout_left; /* while its sandbox is paused: what its timeout had left */
	bool timeout_held;	     /* ... and the timer is off meanwhile */
	bool forced;		     /* ended on purpose: forced_reason beats what the exit says */
	enum paddock_end_reason forced_reason;
	struct pd_cgroup_stats base; /* the cgroup's counters when the command started */
	uint64_t denied_base;	     /* the sandbox's denied calls when it started (STARTED) */
	char *limits_json;	     /* the report's "limits", built when it ends */
	paddock_exec_fn fn;
	void *userdata;
	bool done;		      /* result is final; callback pending or ran */
	struct paddock_result result; /* valid when done */
	/*
	 * Recovery: an end init reported before the record gave the sandbox its spec, which
	 * the report is made with (sandbox-adopt.c); pd_exec_exited() once the spec is there.
	 */
	bool exit_held;
	struct pd_ctl_exited held_exit;
	struct event *deliver;	   /* deferred callback */
	struct paddock_exec *next; /* sandbox's list */
};

enum pd_sandbox_state {
	PD_SB_STARTING,
	PD_SB_RUNNING,
	PD_SB_DEAD, /* init is gone; every exec finished */
};

struct paddock_sandbox {
	paddock_ctx *ctx;
	paddock_spec *spec; /* owned copy */
	char id[32];
	enum pd_sandbox_state state;
	enum paddock_end_reason death_reason; /* why init died: TIMEOUT or KILLED */
	struct pd_idmap idmap;
	pid_t init_pid; /* host pid of init, diagnostics */
	int pidfd;	/* init */
	int ctl;	/* control socket, supervisor end */
	int root_fd;	/* O_PATH of the sandbox's "/" (sent by init at READY), for file access */
	int upper_fd;	/* O_PATH of an image's writable layer (READY too), for snapshots */
	int landlock_abi;
	bool host_tree;	      /* pooled: init holds the host's tree (PD_READY_HOST_TREE) */
	struct pd_cgroup *cg; /* NULL: no cgroup (rootless); rlimits stand in */
	unsigned n_execs;     /* commands started so far */
	struct event *ctl_ev, *pidfd_ev, *oom_ev, *cpu_ev;
	paddock_exec *execs;
	char *reconnect_path; /* init listens here for a new supervisor; removed on free */
	char *record_raw;     /* what init kept (PD_CTL_RECORD at adoption), or NULL */
	char *record;	      /* the supervisor's record in it (paddock_sandbox_record()) */
	int orphan_timeout_s;
	bool spec_pooled; /* made with opts.pooled (spec->pooled: not claimed yet) */
	/* paddock_sandbox_create_async(): init is building the root; this says when it is done */
	struct event *launch_ev;
	paddock_create_fn create_fn;
	void *create_userdata;
	paddock_sandbox_fn exit_fn;
	void *exit_userdata;
	struct pd_socket_req *sockets; /* asked of init, answered in order */
	struct pd_egress *egress;      /* network.mode allowlist/open: the proxy; else NULL */
	struct pd_secrets *secrets;    /* values and placeholders; NULL without secrets */
	uint64_t denied_total;	       /* calls the seccomp filter denied, as init counts them */
	double denied_tokens;	       /* seccomp.denied events that may be emitted now */
	struct timespec denied_refill;
	uint64_t denied_unreported; /* denials reported by no event since the last one */
	struct pd_code *code;	    /* the code interpreter (code.c); NULL until first use */
	enum pd_pause {
		PD_PAUSE_NONE,
		PD_PAUSE_FREEZER,
		PD_PAUSE_STOP
	} paused;	   /* sandbox-pause.c */
	int image_lock;	   /* the image's record, flock'ed shared while the sandbox lives, or -1 */
	char image_id[72]; /* that image's id ("sha256:<hex>"), or "" (sandbox-snapshot.c) */
};

/* A socket asked of init (PD_CTL_SOCKET); fn NULL: a synchronous caller waits on `done`. */
struct pd_socket_req {
	int domain, type;
	paddock_socket_fn fn;
	void *userdata;
	bool done;
	int fd;
	paddock_error err;
	struct pd_socket_req *next;
};

/* -EBUSY, naming the state, while the sandbox is paused (sandbox-pause.c) */
int pd_sandbox_check_not_paused(const paddock_sandbox *sb, paddock_error *err);
/* The code interpreter's state goes; callers still waiting get ESRCH (code.c). */
void pd_code_free(paddock_sandbox *sb);
/* An adopted command that is the code server (PD_EXEC_CODE_SERVER) is code.c's again. */
void pd_code_adopt(paddock_sandbox *sb, paddock_exec *ex);
/* Registers the sandbox's fds and timers with the loop (create and adopt). */
int pd_sandbox_arm(paddock_sandbox *sb, paddock_error *err);
/*
 * A claim bound the spec's limits (sandbox-pool.c): the sandbox's timeout starts over with
 * the claim's, and the CPU time check looks again (it may end the sandbox).
 */
void pd_sandbox_limits_bound(paddock_sandbox *sb);
/* The sandbox's proxy and DNS filter when its network.mode is not none (egress-module.h). */
int pd_sandbox_egress_start(paddock_sandbox *sb, paddock_error *err);

/*
 * Reads the values of spec's secrets (the supervisor's env and files) and makes what the
 * sandbox may know of them: each NAME=placeholder and the certificate of its CA. A cold
 * create runs it before init exists, a claim of a pooled sandbox before PD_CTL_BIND. All
 * three out-parameters NULL without secrets; the caller owns them (the egress half's
 * secrets_free wipes the values). Nothing is kept on failure.
 */
int pd_sandbox_secrets_prepare(const paddock_spec *spec, struct pd_secrets **ret_secrets,
			       char ***ret_env, char **ret_ca_pem, paddock_error *err);
/* sandbox.c, for exec.c: init broke the protocol (the sandbox is killed); init's count of
 * denied calls; one message from init handled (its fds taken or left for the caller) */
void pd_sandbox_protocol_violation(paddock_sandbox *sb, const char *what);
void pd_sandbox_note_denied(paddock_sandbox *sb, uint64_t total);
void pd_sandbox_dispatch(paddock_sandbox *sb, uint32_t type, const void *buf, ssize_t n, int *fds,
			 size_t *nfds);
/* "cgroup-v1", "cgroup-v2", or NULL without a cgroup */
const char *pd_sandbox_cgroup_name(const paddock_sandbox *sb);

/* exec.c, for sandbox.c: init's reports of commands; the end of every command of a dead
 * sandbox; freeing one (unlinked from its sandbox) */
struct pd_ctl_started;
struct pd_ctl_exec_error;
void pd_exec_on_started(paddock_sandbox *sb, const struct pd_ctl_started *s, int *fds,
			size_t *nfds);
void pd_exec_on_exited(paddock_sandbox *sb, const struct pd_ctl_exited *x);
void pd_exec_on_error(paddock_sandbox *sb, struct pd_ctl_exec_error *e);
void pd_exec_finish(paddock_exec *ex);
void pd_exec_unlink_free(paddock_exec *ex);
/* Tells init to close its copy of the command's stdin. */
int pd_exec_send_close_stdin(paddock_exec *ex, paddock_error *err);

/* exec-io.c: the exec session (capture, stdin queue) */
void pd_exec_io_init(paddock_exec *ex);
/* the command ended: read what its pipes hold, close them; output_truncated into its result */
void pd_exec_io_end(paddock_exec *ex);
/* its sandbox lets go: no more events of the loop (what was kept stays readable) */
void pd_exec_io_release_events(paddock_exec *ex);
/* frees what the session holds (the exec's last reference went) */
void pd_exec_io_release(paddock_exec *ex);
int pd_exec_io_close_stdin(paddock_exec *ex);

/*
 * With "image": resolves it in the context's store and makes the supervisor's copy of the
 * spec ready for init (sandbox-image.c): its layer directories, the image's Env under the
 * spec's, its WorkingDir where the spec's cwd is the default; holds the image meanwhile.
 */
int pd_sandbox_image_prepare(paddock_sandbox *sb, paddock_error *err);
/*
 * An adopted sandbox's image (its handle's image_id) held again, as pd_sandbox_image_prepare()
 * holds it at create. Best effort: an image removed meanwhile is left so.
 */
void pd_sandbox_image_hold(paddock_sandbox *sb);
/* The image store of the sandboxes of ctx: its own, or the default one. */
int pd_sandbox_image_store_dir(const paddock_ctx *ctx, char *dir, size_t size, paddock_error *err);
/*
 * A snapshot's name checked and normalized as an image reference ("work" is
 * "docker.io/library/work:latest"); -EINVAL naming the field "name" (sandbox-snapshot.c).
 */
int pd_snapshot_name(const char *name, char *buf, size_t size, paddock_error *err);
/*
 * A claim of a pooled sandbox made from an image: a copy of the claim's spec with the
 * image's defaults applied as at a cold create (so its template, env and cwd match what a
 * cold sandbox of it would have). *ret_copy NULL without an image; the caller frees it.
 */
int pd_sandbox_image_claim_spec(const paddock_sandbox *sb, const paddock_spec *spec,
				paddock_spec **ret_copy, paddock_error *err);
/* A new exec object in the sandbox's list (not yet started). */
paddock_exec *pd_exec_new(paddock_sandbox *sb, uint64_t id, paddock_exec_fn fn, void *userdata);
/* paddock_exec_start() with PD_EXEC_* flags of the library's own (PD_EXEC_CODE_SERVER). */
int pd_exec_begin(paddock_sandbox *sb, const struct paddock_exec_opts *opts, uint32_t flags,
		  paddock_exec_fn fn, void *userdata, paddock_exec **ret_exec, paddock_error *err);
/* Gives an exec the fds init sent with STARTED or EXEC_STATE; false when they do not fit. */
bool pd_exec_assign_fds(paddock_exec *ex, uint32_t flags, int *fds, size_t nfds);
/* The exit report of a command (from EXITED or EXEC_STATE); -EPROTO when impossible. */
int pd_exec_exited(paddock_exec *ex, const struct pd_ctl_exited *x);
void pd_sandbox_make_id(char *buf, size_t size, const char *prefix);

static inline void paddock_sandbox_freep(paddock_sandbox **p)
{
	paddock_sandbox_free(*p);
}

/* The host directories the spec binds writable: the workspace and read-write binds. */
size_t pd_launch_writable_binds(const paddock_spec *spec);
/* limits.required names "disk" and the spec binds a host directory writable: refused. */
int pd_launch_check_disk(const paddock_spec *spec, paddock_error *err);

/* Created by launch.c: forks init into new namespaces and completes the handshake. */
int pd_launch(paddock_sandbox *sb, paddock_error *err);
/*
 * The same in two halves: begin forks init and hands it what it needs (sb->pidfd is set: a
 * free kills it); end takes init's READY (or its failure) once the control socket is
 * readable, waiting otherwise.
 */
int pd_launch_begin(paddock_sandbox *sb, paddock_error *err);
int pd_launch_end(paddock_sandbox *sb, paddock_error *err);
/*
 * The ready-made tree of a host directory for init (the workspace: index
 * PD_CTL_TREE_WORKSPACE, or binds[index]): idmapped, as root. *ret_fd is -EBADF where init
 * is to clone the source itself (no idmapping there, or rootless).
 */
int pd_launch_open_tree(const paddock_sandbox *sb, const char *source, int32_t index, int *ret_fd,
			paddock_error *err);
/* What the cgroup enforces of a spec's limits: memory, pids, CPU quota. */
void pd_launch_cgroup_limits(const paddock_spec *spec, struct pd_cgroup_limits *ret_limits);
