/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddock-oci: the OCI runtime command line (runc's, as Docker, Podman and containerd call
 * it) on libpaddock. docs/oci.md is the user's view.
 *
 * Processes. `create` forks a supervisor and returns once it holds the container: a paddock
 * sandbox whose init waits for commands, the engine's stdio (or a terminal) kept for the
 * container's process. The supervisor is what the pid file names: it outlives `create`
 * (the engine, a child subreaper, inherits it) and exits with the container's process's
 * status, as runc's init does. Every later command (`start`, `kill`, `exec`, `state`, ...)
 * reaches it over a unix socket in the container's state directory (--root/ID), so it is
 * re-attachable by anyone who may read that directory (root's 0700 by default).
 *
 * Trust: config.json and the annotations come from the engine (trusted as to which host
 * paths to use, checked as to form: every refusal names the field). The supervisor's
 * socket is reachable only through the 0700 state directory. Nothing the container says
 * steers the supervisor but through libpaddock, which treats it as hostile.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "paddock/paddock.h"

#define OCI_ROOT_DEFAULT "/run/paddock-oci"
#define OCI_ID_MAX	 128
#define OCI_MSG_MAX	 (256u << 10) /* one request or reply between a command and a supervisor */

/* Global options (main.c). */
extern const char *arg_root;
extern const char *arg_log;
extern bool arg_log_json;
extern bool arg_systemd_cgroup;
extern bool arg_debug;
/* the egress proxy's name resolution and upstream trust (paddock_ctx_*): operator settings */
extern const char *arg_resolve_hosts;
extern const char *arg_upstream_ca[8];

/* Logging (main.c): to --log (text or JSON lines) and, for errors, to stderr too. */
__attribute__((format(printf, 2, 3))) void oci_log(const char *level, const char *fmt, ...);
#define oci_warn(...) oci_log("warning", __VA_ARGS__)
#define oci_debug(...)                                                                             \
	do {                                                                                       \
		if (arg_debug)                                                                     \
			oci_log("debug", __VA_ARGS__);                                             \
	} while (0)
/* Logs err as an error (stderr too) and returns 1, the exit status runc uses. */
int oci_fail(const paddock_error *err);
__attribute__((format(printf, 1, 2))) int oci_failf(const char *fmt, ...);
/* Fills err (code, field: "" for none, message) and returns -code: how the parsers and
 * the state code fail, the message then logged once by whoever handles it. */
__attribute__((format(printf, 4, 5))) int oci_error(paddock_error *err, int code, const char *field,
						    const char *fmt, ...);

/* ---- the bundle (config.c) ------------------------------------------------------------ */

struct oci_hook {
	char *path;
	char **args; /* NULL-terminated; args[0] as given, or path */
	char **env;
	int timeout_s; /* 0: none given (hooks.c bounds it anyway) */
};

enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	_OCI_HOOK_MAX,
};

struct oci_hooks {
	struct oci_hook *h[_OCI_HOOK_MAX];
	size_t n[_OCI_HOOK_MAX];
};

/* A process, of config.json or of `exec --process`. */
struct oci_process {
	char **args;
	char **env;
	char *cwd;
	bool terminal;
	unsigned short rows, cols;
	uint32_t uid, gid;
};

struct oci_bundle {
	char *dir;	   /* the bundle, absolute */
	char *rootfs;	   /* root.path, absolute, resolved */
	char *config_json; /* as read, for hooks and state */
	paddock_spec *spec;
	struct oci_process process;
	struct oci_hooks hooks;
	json_t *annotations; /* the config's, or an empty object */
	void *filter;	     /* linux.seccomp compiled (seccomp.c), or NULL */
	size_t filter_len;
	char *netns;		/* linux.namespaces' network path, joined by the container */
	char *supervisor_netns; /* ...or, with egress, where the supervisor's proxy lives */
};

/* Reads DIR/config.json and maps it onto a paddock spec: each field honoured or refused. */
int oci_bundle_load(const char *dir, struct oci_bundle *ret, paddock_error *err);
void oci_bundle_release(struct oci_bundle *b);
/* A process object (config.json's "process", or exec's --process file); `field` prefixes. */
int oci_process_load(json_t *obj, const char *field, struct oci_process *ret, paddock_error *err);
void oci_process_release(struct oci_process *p);
/* Reads a JSON file of at most `max` bytes. */
int oci_read_json(const char *path, size_t max, json_t **ret, char **ret_text, paddock_error *err);

/* linux.seccomp as a BPF program for paddock_exec_opts.filter (seccomp.c); NULL: none. */
int oci_seccomp_compile(json_t *seccomp, void **ret_prog, size_t *ret_len, paddock_error *err);

/* The annotations dev.paddock.* (annotations.c) applied to spec; others are left alone. */
int oci_annotations_apply(json_t *annotations, const struct oci_process *p, paddock_spec *spec,
			  paddock_error *err);

/* ---- hooks (hooks.c) ------------------------------------------------------------------ */

/* Runs each hook of `kind` with the state JSON on its stdin; the first failure stops. */
int oci_hooks_run(const struct oci_hooks *hooks, enum oci_hook_kind kind, const char *state_json,
		  paddock_error *err);
void oci_hooks_release(struct oci_hooks *hooks);
int oci_hooks_load(json_t *obj, struct oci_hooks *ret, paddock_error *err);

/* ---- state (state.c) ------------------------------------------------------------------ */

enum oci_status {
	OCI_CREATING,
	OCI_CREATED,
	OCI_RUNNING,
	OCI_PAUSED,
	OCI_STOPPED,
	_OCI_STATUS_MAX,
};
const char *oci_status_to_string(enum oci_status s);

struct oci_state {
	char id[OCI_ID_MAX + 1];
	enum oci_status status;
	pid_t pid;		  /* the supervisor (the pid file's) */
	unsigned long long start; /* its start time (/proc/PID/stat), against pid reuse */
	pid_t init_pid;		  /* the sandbox's init: the container's namespaces */
	int exit_status;	  /* once stopped: as the engine reaps it (code, or 128+signal) */
	char *bundle;
	char *created; /* RFC 3339 */
	json_t *annotations;
	json_t *hooks; /* config.json's "hooks", kept for delete's poststop */
};

/* Checks an id: [A-Za-z0-9][A-Za-z0-9_.-]*, at most OCI_ID_MAX. */
int oci_check_id(const char *id, paddock_error *err);
/* <root>/<id> into buf. */
int oci_state_dir(const char *id, char *buf, size_t size, paddock_error *err);
/* Makes the state directory (and --root), refusing an id in use: -EEXIST. */
int oci_state_mkdir(const char *id, paddock_error *err);
/* Reads <root>/<id>/state.json; a supervisor that is gone makes the status "stopped". */
int oci_state_load(const char *id, struct oci_state *ret, paddock_error *err);
/* Writes it atomically. */
int oci_state_save(const struct oci_state *st, paddock_error *err);
void oci_state_release(struct oci_state *st);
/* The OCI state document (runtime spec "state"). Caller frees. */
char *oci_state_json(const struct oci_state *st);
/* Removes the state directory. */
int oci_state_remove(const char *id, paddock_error *err);
/* Whether the supervisor of st is alive (same pid, same start time). */
bool oci_state_alive(const struct oci_state *st);
/* Start time of pid (field 22 of /proc/PID/stat), 0 when gone. */
unsigned long long oci_proc_start(pid_t pid);
/* Now as RFC 3339 UTC with nanoseconds. */
void oci_now_rfc3339(char *buf, size_t size);

/* ---- the supervisor's socket (wire.c) ------------------------------------------------- */

struct sockaddr_un;
/* The socket's address, through an fd of the state directory (*ret_dirfd: close it after). */
int oci_sock_addr(const char *id, struct sockaddr_un *sa, int *ret_dirfd, paddock_error *err);
/* Connects to the supervisor of id; -ECONNREFUSED/-ENOENT when it is gone. */
int oci_wire_connect(const char *id, int *ret_fd, paddock_error *err);
/* One JSON message with up to 3 fds. */
int oci_wire_send(int fd, json_t *msg, const int *fds, size_t nfds, paddock_error *err);
/* Receives one message (fds: capacity in, count out); a message {"error":...} is returned
 * as that error. timeout_ms < 0: none. */
int oci_wire_recv(int fd, int timeout_ms, json_t **ret, int *fds, size_t *nfds, paddock_error *err);
/* Sends a request and waits for its answer (timeout 30 s). */
int oci_wire_call(const char *id, json_t *req, const int *fds, size_t nfds, json_t **ret,
		  paddock_error *err);
/* {"error": {"code": "EINVAL", "errno": 22, "field": ..., "message": ...}} */
json_t *oci_wire_error(const paddock_error *err);

/* ---- the supervisor (supervisor.c) ---------------------------------------------------- */

struct oci_create_opts {
	const char *id;
	const char *console_socket; /* with process.terminal */
	bool foreground;	    /* `run`: no new session, signals come from the caller */
	int ready_fd;		    /* written "ok\n" or an error message, then closed */
};

/* The supervisor's life: make the sandbox, serve, exit with the container's status. */
_Noreturn void oci_supervise(struct oci_bundle *b, const struct oci_create_opts *o);

/* Sends fd over the console socket at path (runc's --console-socket protocol). */
int oci_send_console(const char *path, int fd, paddock_error *err);

/* ---- options create, run and exec share (options.c) ----------------------------------- */

enum {
	OCI_OPT_PID_FILE = 0x100, /* past any short option's letter */
	OCI_OPT_CONSOLE_SOCKET,
	OCI_OPT_PRESERVE_FDS,
	OCI_OPT_IGNORED, /* runc's options that change nothing for a paddock container */
};

/* The shared entries of a command's option table; its own follow (OCI_OPT_IGNORED ones too). */
#define OCI_LAUNCH_LONG_OPTIONS                                                                    \
	{ "pid-file", required_argument, NULL, OCI_OPT_PID_FILE },                                 \
		{ "console-socket", required_argument, NULL, OCI_OPT_CONSOLE_SOCKET },             \
		{ "detach", no_argument, NULL, 'd' },                                              \
	{                                                                                          \
		"preserve-fds", required_argument, NULL, OCI_OPT_PRESERVE_FDS                      \
	}

struct oci_launch_args {
	const char *pid_file, *console_socket;
	bool detach;
};

/* Takes getopt's option c if it is a shared one (or OCI_OPT_IGNORED): 1 when taken, 0 when
 * it is not a shared option, -1 when refused (logged: the command exits 1). */
int oci_launch_option(struct oci_launch_args *a, int c, const char *arg);

/* ---- commands ------------------------------------------------------------------------- */

int cmd_create(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_events(int argc, char **argv);

/* A signal by number or name ("9", "KILL", "SIGKILL"); -EINVAL when unknown. */
int oci_parse_signal(const char *s);
/* Writes pid to path (the engine's --pid-file), atomically. */
int oci_write_pid_file(const char *path, pid_t pid, paddock_error *err);
