/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock run [OPTIONS] -- CMD [ARG...]`: one command in a fresh sandbox, no daemon.
 *
 * The spec comes from --spec FILE, then each flag in order. The command gets the caller's
 * stdin/stdout/stderr as they are, except terminals: the sandbox never receives the caller's
 * terminal. An interactive caller (stdin is a terminal) gets a pty made inside the sandbox,
 * relayed from here with the caller's terminal in raw mode; a terminal on stdout or stderr
 * alone is fed through a pipe. Exit status: the command's, 128+N for signal N, 125 when
 * paddock failed, 126/127 when the command could not be run / found.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "paddock/image.h"
#include "paddock/paddock.h"
#include "ask-tty.h"
#include "cli.h"
#include "relay.h"
#include "spec-flags.h"

enum {
	OPT_REPORT = SPEC_OPT_END,
	OPT_PRINT_SPEC,
	OPT_LOG_FORMAT,
	OPT_RESOLVE_HOSTS,
	OPT_UPSTREAM_CA,
	OPT_IMAGE_STORE,
	OPT_PULL,
};

static const struct option options[] = {
	SPEC_LONG_OPTIONS,
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "print-spec", no_argument, NULL, OPT_PRINT_SPEC },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "resolve-hosts", required_argument, NULL, OPT_RESOLVE_HOSTS },
	{ "upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA },
	{ "image-store", required_argument, NULL, OPT_IMAGE_STORE },
	{ "pull", required_argument, NULL, OPT_PULL },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock run [OPTIONS] -- CMD [ARG...]\n"
	      "\n"
	      "Runs CMD in a fresh, fully isolated sandbox and exits with its status.\n"
	      "\n"
	      "  --spec FILE          JSON spec (docs/spec.md); the flags below override it\n"
	      "  --workspace DIR      host directory at /workspace, read-write\n"
	      "                       (default: a private directory, gone afterwards)\n"
	      "  --bind SRC[:DST]     bind a host path read-write (DST defaults to SRC)\n"
	      "  --ro-bind SRC[:DST]  bind a host path read-only\n"
	      "  --env NAME=VALUE     set a variable (the environment starts empty)\n"
	      "  --cwd DIR            working directory inside (default /workspace)\n"
	      "  --hostname NAME      hostname inside (default 'sandbox')\n"
	      "\n"
	      "limits (every one has a finite default; docs/spec.md):\n"
	      "  --timeout SECONDS    the command's timeout: it is ended, reason timeout (86400)\n"
	      "  --memory SIZE        memory, no swap (1G)\n"
	      "  --pids N             processes and threads (512)\n"
	      "  --cpus N             CPU quota, e.g. 0.5 or 2 (2)\n"
	      "  --cpu-time SECONDS   CPU time of the whole sandbox (3600)\n"
	      "  --disk SIZE          the sandbox's own disk: /usr layer, /tmp, home, private\n"
	      "                       workspace (1G); not what it writes to --workspace DIR or\n"
	      "                       --bind (the host's disk: only --file-size bounds that)\n"
	      "  --file-size SIZE     largest file a command may write (1G)\n"
	      "  --nofile N           open files per process (1024)\n"
	      "  --output-limit SIZE  capture stdout+stderr; past SIZE the rest is dropped and\n"
	      "                       the command ended, reason output (uncaptured without it)\n"
	      "  --require LIMITS     refuse to run unless these are enforced (memory,pids,...)\n"
	      "\n"
	      "network (docs/network.md):\n"
	      "  --net MODE           none (default: loopback only), allowlist, open, or ask:\n"
	      "                       an allowlist that asks on this terminal before a host no\n"
	      "                       rule names (denied without a terminal)\n"
	      "  --ask-timeout S      how long a connection waits for that answer (30)\n"
	      "  --allow RULE         allow a destination: pypi.org, *.example.com:443,\n"
	      "                       10.0.0.0/8:5432, preset:python-packages|npm|github\n"
	      "                       (implies --net allowlist)\n"
	      "  --deny RULE          refuse a destination; deny beats allow\n"
	      "  --no-transparent     only programs honouring HTTP(S)_PROXY get egress\n"
	      "  --secret NAME@HOST[,HOST...]\n"
	      "                       the sandbox gets a placeholder in $NAME; the proxy puts the\n"
	      "                       real value (this process's $NAME, or NAME=file:PATH@HOST)\n"
	      "                       into requests to HOST only (docs/secrets.md)\n"
	      "  --resolve-hosts FILE resolve names only from this hosts-style file (tests)\n"
	      "  --upstream-ca FILE   also trust this CA for hosts whose HTTPS a secret "
	      "intercepts\n"
	      "\n"
	      "images (docs/images.md):\n"
	      "  --image REF          the root is this image's layers, writable (pulled when\n"
	      "                       missing); CMD defaults to its Entrypoint and Cmd\n"
	      "  --user user|root     run as uid 1000 (default) or as root of the sandbox's own\n"
	      "                       user namespace (apt-get, dpkg; docs/images.md)\n"
	      "  --pull missing|never fetch a missing --image (default) or fail\n"
	      "  --image-store DIR    the image store (default: as 'paddock image' finds it)\n"
	      "\n"
	      "  --rootfs DIR         a directory tree to use as the read-only base\n"
	      "  --landlock MODE      auto (default) or required\n"
	      "  --report FILE        write the JSON result (docs/report.md) to FILE\n"
	      "  --print-spec         print the effective spec as JSON and exit\n"
	      "  --log-format FORMAT  text (default) or json: events on stderr\n"
	      "  -v, --verbose        print lifecycle events too, not only errors\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "Exit status: the command's; 128+N if killed by signal N; 125 if paddock failed;\n"
	      "126 if the command cannot be executed; 127 if it is not found.\n",
	      f);
}

static bool arg_json_log;
static const char *arg_resolve_hosts;
static const char *arg_upstream_ca[8];
static size_t arg_n_upstream_ca;
static bool arg_verbose;
static bool arg_capture; /* relay stdout/stderr through pipes and enforce limits.output */
static const char *arg_image_store;
static bool arg_pull = true;

static void die_error(const paddock_error *err)
{
	char buf[sizeof(err->msg) + 128];

	if (err->field[0] && err->code == EINVAL) /* bad input: the message says it all */
		fprintf(stderr, "paddock: %s: %s\n", err->field, err->msg);
	else if (err->field[0])
		fprintf(stderr, "paddock: %s: %s\n", err->field,
			paddock_error_format(err, buf, sizeof(buf)));
	else
		fprintf(stderr, "paddock: %s\n", paddock_error_format(err, buf, sizeof(buf)));
}

static void on_event(const struct paddock_event *ev, void *userdata)
{
	(void)userdata;
	if (arg_json_log)
		dprintf(STDERR_FILENO, "%s\n", ev->json);
	else
		dprintf(STDERR_FILENO, "paddock: %s %s\n", paddock_event_level_to_string(ev->level),
			ev->json);
}

static int load_spec_file(paddock_spec *spec, const char *path, paddock_error *err)
{
	char *buf = NULL;
	size_t n = 0;
	int r;

	r = spec_file_read(path, &buf, &n, err);
	if (r < 0)
		return r;
	r = paddock_spec_load_json(spec, buf, n, err);
	free(buf);
	if (r < 0) {
		char old[sizeof(err->msg)];
		memcpy(old, err->msg, sizeof(old));
		snprintf(err->msg, sizeof(err->msg), "spec '%.100s': %.250s", path, old);
	}
	return r;
}

/* ---- running ---------------------------------------------------------------------------- */

/* Forwarded to the command instead of ending paddock; SIGWINCH resizes the command's pty. */
static const int relayed_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH };
#define N_RELAYED_SIGNALS (sizeof(relayed_signals) / sizeof(relayed_signals[0]))

struct run {
	struct event_base *base;
	paddock_ctx *ctx;
	struct event *sigev[N_RELAYED_SIGNALS];
	paddock_exec *ex;
	struct paddock_result result;
	bool done;
	struct relay *relays[2];
	int pipe_rd[2]; /* read ends of the pipes feeding a terminal on stdout/stderr */
	bool raw;
	struct termios saved;
	paddock_sandbox *sb;
	bool want_report;
	char *report_json;
	struct ask_tty *ask; /* --net ask: the terminal answers (ask-tty.c) */
};

/*
 * --output-limit: libpaddock keeps the output (the exec session, as for every front end) and
 * ends the command with reason "output" past the limit; each chunk is written here as it
 * comes: a pty's to whichever of stdout and stderr is the terminal.
 */
static void on_output(paddock_exec *ex, int stream, const void *data, size_t len, void *userdata)
{
	struct run *run = userdata;
	int fd = stream == 2 ? STDERR_FILENO : STDOUT_FILENO;

	if (paddock_exec_pty_fd(ex) >= 0 && !isatty(STDOUT_FILENO))
		fd = STDERR_FILENO;
	(void)run;
	relay_write_all(fd, data, len);
}

static void on_exit_cb(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct run *run = userdata;

	struct paddock_result copy = *res;
	paddock_error err = { 0 };

	(void)ex;
	for (int i = 0; i < 2; i++)
		relay_drain(run->relays[i]);
	/* the result's strings live as long as this call: format the report now */
	if (run->want_report && paddock_result_to_json(&copy, &run->report_json, &err) < 0)
		die_error(&err);
	copy.limits_json = NULL;
	run->result = copy;
	run->done = true;
	run->ex = NULL;
	event_base_loopbreak(run->base);
}

static void on_signal(evutil_socket_t sig, short what, void *userdata)
{
	struct run *run = userdata;

	(void)what;
	if (!run->ex)
		return;
	if (sig == SIGWINCH) {
		struct winsize ws;
		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
			(void)paddock_exec_resize(run->ex, ws.ws_row, ws.ws_col, NULL);
		return;
	}
	(void)paddock_exec_signal(run->ex, (int)sig, NULL);
}

/* While a question is on the terminal, nothing moves between it and the sandbox. */
static void pause_io(bool paused, void *userdata)
{
	struct run *run = userdata;

	for (int i = 0; i < 2; i++)
		relay_pause(run->relays[i], paused);
	if (run->ex && arg_capture)
		paddock_exec_pause_output(run->ex, paused);
}

static void restore_terminal(struct run *run)
{
	run->ask = ask_tty_free(run->ask); /* a question on it ends first, then raw mode */
	if (run->raw)
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &run->saved);
	run->raw = false;
}

static int make_raw(struct run *run)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &run->saved) < 0)
		return -errno;
	t = run->saved;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
		return -errno;
	run->raw = true;
	return 0;
}

static int write_report(const char *path, const char *json)
{
	FILE *f;

	if (!json)
		return -1;
	f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "paddock: write report '%s': %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "%s\n", json);
	if (fclose(f) != 0) {
		fprintf(stderr, "paddock: write report '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The caller's stdin is a terminal: each stream that is one here gets a pty made inside the
 * sandbox, with the caller's window size and (when it is a plain name) TERM.
 */
static void plan_pty(struct paddock_exec_opts *opts, char *term, size_t size, const char **env)
{
	struct winsize ws = { 0 };
	const char *t = getenv("TERM");

	for (int i = 0; i < 3; i++)
		if (isatty(i))
			opts->pty_streams |= 1u << i;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
		opts->pty_rows = ws.ws_row;
		opts->pty_cols = ws.ws_col;
	}
	if (t && strlen(t) < 64 &&
	    strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789-+.") == strlen(t)) {
		snprintf(term, size, "TERM=%s", t);
		env[0] = term;
	}
}

/* A terminal on stdout or stderr alone is fed through a pipe, relayed from here. */
static int plan_pipes(struct run *run, struct paddock_exec_opts *opts, paddock_error *err)
{
	for (int i = 1; i < 3 && !arg_capture; i++) {
		int p[2];

		if (!isatty(i))
			continue;
		if (pipe2(p, O_CLOEXEC) < 0) {
			int r = -errno;

			snprintf(err->msg, sizeof(err->msg), "pipe");
			err->code = -r;
			return r;
		}
		run->pipe_rd[i - 1] = p[0];
		opts->fds[i] = p[1];
	}
	return 0;
}

/* SECURITY: the caller's terminal never enters the sandbox */
static int plan_stdio(struct run *run, struct paddock_exec_opts *opts, char *term, size_t size,
		      const char **env, paddock_error *err)
{
	if (isatty(STDIN_FILENO)) {
		plan_pty(opts, term, size, env);
		return 0;
	}
	return plan_pipes(run, opts, err);
}

/* The context: image store, name resolution, CAs, the terminal's questions, events. */
static int open_context(struct run *run, const char *image_dir, paddock_error *err)
{
	int r;

	r = paddock_ctx_new(run->base, &run->ctx, err);
	if (r >= 0 && image_dir)
		r = paddock_ctx_set_image_store(run->ctx, image_dir, err);
	if (r >= 0 && arg_resolve_hosts)
		r = paddock_ctx_set_resolve_hosts(run->ctx, arg_resolve_hosts, err);
	for (size_t i = 0; r >= 0 && i < arg_n_upstream_ca; i++)
		r = paddock_ctx_add_upstream_ca(run->ctx, arg_upstream_ca[i], err);
	if (r >= 0)
		r = ask_tty_new(run->base, run->ctx, pause_io, run, &run->ask);
	if (r < 0)
		return r;
	/* events cost a JSON document each: ask for them only when they are shown */
	if (arg_verbose || arg_json_log)
		paddock_ctx_set_event_sink(run->ctx, on_event, NULL);
	return 0;
}

static void watch_signals(struct run *run)
{
	for (size_t i = 0; i < N_RELAYED_SIGNALS; i++) {
		run->sigev[i] = evsignal_new(run->base, relayed_signals[i], on_signal, run);
		if (run->sigev[i])
			event_add(run->sigev[i], NULL);
	}
}

/* Relays the pty's master, or the pipes plan_pipes() made, to and from our stdio. */
static void start_relays(struct run *run)
{
	if (paddock_exec_pty_fd(run->ex) >= 0) {
		int master = paddock_exec_pty_fd(run->ex);
		int out = isatty(STDOUT_FILENO) ? STDOUT_FILENO : STDERR_FILENO;

		(void)make_raw(run);
		if (!arg_capture)
			run->relays[0] = relay_new(run->base, master, out);
		run->relays[1] = relay_new(run->base, STDIN_FILENO, master);
	} else {
		for (int i = 0; i < 2; i++)
			if (run->pipe_rd[i] >= 0)
				run->relays[i] = relay_new(run->base, run->pipe_rd[i], i + 1);
	}
}

static int start_command(struct run *run, struct paddock_exec_opts *opts, paddock_error *err)
{
	int r;

	/*
	 * Only an explicit --output-limit bounds the output (limits.output): an interactive
	 * session that prints a big file must not be ended by a default it never asked for.
	 * Then libpaddock captures it, as every front end's commands are.
	 */
	if (arg_capture)
		opts->capture = PADDOCK_CAPTURE_RELAY;
	r = paddock_exec_start(run->sb, opts, on_exit_cb, run, &run->ex, err);
	for (int i = 1; i < 3; i++)
		if (opts->fds[i] != i && opts->fds[i] >= 0)
			close(opts->fds[i]); /* the command has its own copy now */
	if (r < 0)
		return r;
	if (arg_capture)
		paddock_exec_set_output_callback(run->ex, on_output, run);
	start_relays(run);
	return 0;
}

/* Runs the event loop until the command has ended: 0, or -1 when the loop failed. */
static int wait_for_exit(struct run *run)
{
	while (!run->done)
		if (event_base_loop(run->base, EVLOOP_ONCE) < 0)
			break;
	restore_terminal(run);
	if (!run->done) {
		fprintf(stderr, "paddock: event loop failed\n");
		return -1;
	}
	return 0;
}

/*
 * Says why the command ended when it was not its own doing, writes --report, and returns
 * paddock's exit status.
 */
static int exit_status(struct run *run, const char *report)
{
	int status;

	if (run->result.reason == PADDOCK_END_ERROR)
		die_error(&run->result.error);
	else if (run->result.reason == PADDOCK_END_TIMEOUT)
		fprintf(stderr, "paddock: timed out (limits.timeout_s); the command was ended\n");
	else if (run->result.reason == PADDOCK_END_OUTPUT)
		fprintf(stderr, "paddock: output went over limits.output; the rest was dropped and "
				"the command was ended\n");
	status = paddock_result_exit_status(&run->result);
	if (report && write_report(report, run->report_json) < 0)
		status = PADDOCK_EXIT_FAILURE;
	return status;
}

static void run_release(struct run *run)
{
	for (int i = 0; i < 2; i++) {
		run->relays[i] = relay_free(run->relays[i]);
		if (run->pipe_rd[i] >= 0)
			close(run->pipe_rd[i]);
	}
	free(run->report_json);
	paddock_sandbox_free(run->sb);
	for (size_t i = 0; i < N_RELAYED_SIGNALS; i++)
		if (run->sigev[i])
			event_free(run->sigev[i]);
	paddock_ctx_free(run->ctx);
	event_base_free(run->base);
}

static int run_command(paddock_spec *spec, char **cmd, const char *report, const char *image_dir)
{
	struct run run = { .pipe_rd = { -1, -1 }, .want_report = report != NULL };
	struct paddock_exec_opts opts = { .argv = (const char *const *)cmd, .fds = { 0, 1, 2 } };
	paddock_error err = { 0 };
	const char *env[2] = { NULL, NULL };
	char term[128];
	int status = PADDOCK_EXIT_FAILURE, r;

	signal(SIGPIPE, SIG_IGN);
	run.base = event_base_new();
	if (!run.base) {
		fprintf(stderr, "paddock: cannot create event loop\n");
		return PADDOCK_EXIT_FAILURE;
	}
	r = open_context(&run, image_dir, &err);
	if (r >= 0) {
		watch_signals(&run);
		r = paddock_sandbox_create(run.ctx, spec, &run.sb, &err);
	}
	if (r >= 0)
		r = plan_stdio(&run, &opts, term, sizeof(term), env, &err);
	opts.env = env;
	if (r >= 0)
		r = start_command(&run, &opts, &err);
	if (r < 0) {
		restore_terminal(&run);
		die_error(&err);
	} else if (wait_for_exit(&run) == 0) {
		status = exit_status(&run, report);
	}
	run_release(&run);
	return status;
}

/* The spec's "image", or NULL: read back from its JSON, the front end's one view of it. */
static char *spec_image(const paddock_spec *spec)
{
	paddock_error err = { 0 };
	char *json = NULL, *image = NULL;
	json_t *root, *v;

	if (paddock_spec_to_json(spec, &json, &err) < 0)
		return NULL;
	root = json_loads(json, 0, NULL);
	free(json);
	v = json_object_get(root, "image");
	if (json_is_string(v))
		image = strdup(json_string_value(v));
	json_decref(root);
	return image;
}

/*
 * With --image: the store, the image pulled when missing (--pull missing), and the command:
 * the image's Entrypoint with CMD, or its Cmd without (*ret_argv NULL: CMD as given).
 */
static int image_command(const paddock_spec *spec, char **cmd, char *dir, size_t size,
			 char ***ret_argv, paddock_error *err)
{
	paddock_image_store *s = NULL;
	char *image = spec_image(spec);
	int r;

	*ret_argv = NULL;
	if (!image)
		return 0;
	r = cli_image_store_dir(arg_image_store, dir, size, err);
	if (r >= 0)
		r = paddock_image_store_open(dir, &s, err);
	if (r >= 0) {
		r = paddock_image_inspect(s, image, NULL, err);
		if (r == -ENOENT && arg_pull) {
			memset(err, 0, sizeof(*err));
			if (arg_verbose)
				fprintf(stderr, "paddock: pulling %s\n", image);
			r = paddock_image_pull(s, image, NULL, NULL, err);
		}
	}
	if (r >= 0)
		r = paddock_image_command(s, image, (const char *const *)cmd, ret_argv, err);
	paddock_image_store_free(s);
	free(image);
	return r;
}

/* How parsing the command line ended, when it did not end in a command to run. */
enum parse_outcome {
	PARSE_OK,
	PARSE_SPEC_ERROR, /* err says why */
	PARSE_FAILED,	  /* the message is printed */
	PARSE_HELP,	  /* usage is printed: exit 0 */
};

/* One of run's own flags (pass 2), after spec_flag_apply() left it alone. */
static enum parse_outcome apply_run_flag(int c, const char **report, bool *print_spec)
{
	switch (c) {
	case OPT_REPORT:
		*report = optarg;
		break;
	case OPT_PRINT_SPEC:
		*print_spec = true;
		break;
	case OPT_RESOLVE_HOSTS:
		arg_resolve_hosts = optarg;
		break;
	case OPT_IMAGE_STORE:
		arg_image_store = optarg;
		break;
	case OPT_PULL:
		if (strcmp(optarg, "missing") && strcmp(optarg, "never")) {
			fprintf(stderr,
				"paddock: --pull: expected 'missing' or 'never', got "
				"'%s'\n",
				optarg);
			return PARSE_FAILED;
		}
		arg_pull = !strcmp(optarg, "missing");
		break;
	case OPT_UPSTREAM_CA:
		if (arg_n_upstream_ca >= 8) {
			fprintf(stderr, "paddock: --upstream-ca: at most 8 files\n");
			return PARSE_FAILED;
		}
		arg_upstream_ca[arg_n_upstream_ca++] = optarg;
		break;
	case OPT_LOG_FORMAT:
		if (!strcmp(optarg, "json"))
			arg_json_log = true;
		else if (strcmp(optarg, "text")) {
			fprintf(stderr,
				"paddock: --log-format: expected 'text' or 'json', "
				"got '%s'\n",
				optarg);
			return PARSE_FAILED;
		}
		break;
	case 'v':
		arg_verbose = true;
		break;
	case 'h':
		usage(stdout);
		return PARSE_HELP;
	default:
		fprintf(stderr, "paddock: see 'paddock run --help'\n");
		return PARSE_FAILED;
	}
	return PARSE_OK;
}

static enum parse_outcome parse_options(int argc, char **argv, paddock_spec *spec,
					const char **report, bool *print_spec, paddock_error *err)
{
	int c, r;

	/* pass 1: the spec file, so flags in pass 2 override it whatever their order */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vh", options, NULL)) != -1)
		if (c == SPEC_OPT_SPEC && load_spec_file(spec, optarg, err) < 0)
			return PARSE_SPEC_ERROR;
	optind = 0;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "+vh", options, NULL)) != -1) {
		const char *field = NULL;
		enum parse_outcome o;

		if (c == SPEC_OPT_OUTPUT_LIMIT)
			arg_capture = true; /* relay stdout/stderr through pipes to enforce it */
		r = spec_flag_apply(spec, c, optarg, &field, err);
		if (r < 0)
			return PARSE_SPEC_ERROR;
		if (r > 0)
			continue;
		o = apply_run_flag(c, report, print_spec);
		if (o != PARSE_OK)
			return o;
	}
	return PARSE_OK;
}

static int print_spec_json(const paddock_spec *spec, paddock_error *err)
{
	char *json = NULL;
	int r;

	r = paddock_spec_to_json(spec, &json, err);
	if (r < 0)
		return r;
	printf("%s\n", json);
	free(json);
	return 0;
}

int cmd_run(int argc, char **argv)
{
	char image_dir[4096] = "";
	char **image_argv = NULL;
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;
	const char *report = NULL;
	bool print_spec = false;
	int r, status = PADDOCK_EXIT_FAILURE;

	if (paddock_spec_new(&spec, &err) < 0) {
		die_error(&err);
		return PADDOCK_EXIT_FAILURE;
	}
	switch (parse_options(argc, argv, spec, &report, &print_spec, &err)) {
	case PARSE_OK:
		break;
	case PARSE_SPEC_ERROR:
		goto fail;
	case PARSE_FAILED:
		goto out;
	case PARSE_HELP:
		status = 0;
		goto out;
	}
	if (paddock_spec_validate(spec, &err) < 0)
		goto fail;
	if (print_spec) {
		if (print_spec_json(spec, &err) < 0)
			goto fail;
		status = 0;
		goto out;
	}
	if (optind >= argc && !(image_argv = (char **)spec_image(spec))) {
		fprintf(stderr, "paddock: run: expected a command after the options (paddock run "
				"[OPTIONS] -- CMD [ARG...])\n");
		goto out;
	}
	free(image_argv); /* spec_image()'s answer, if it was asked */
	image_argv = NULL;
	r = image_command(spec, argv + optind, image_dir, sizeof(image_dir), &image_argv, &err);
	if (r < 0)
		goto fail;
	status = run_command(spec, image_argv ? image_argv : argv + optind, report,
			     image_dir[0] ? image_dir : NULL);
	goto out;
fail:
	die_error(&err);
out:
	if (image_argv)
		for (char **p = image_argv; *p; p++)
			free(*p);
	free(image_argv);
	paddock_spec_free(spec);
	return status;
}
