/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock exec [OPTIONS] ID [--] CMD [ARG...]`: a command in a sandbox of paddockd.
 *
 * Four ways, by flag:
 * - default: POST .../exec with stream:true; the NDJSON events' stdout and stderr are
 *   written to ours as they come, and we exit with the command's exit status. Our stdin,
 *   unless it is a terminal or /dev/null, goes along in the request when it holds at most
 *   STDIN_INLINE_MAX bytes (paddockd's limit); past that, the command is attached instead.
 * - -i and/or -t ("attached"): the command starts in the background (keep_stdin with -i, a
 *   pty with -t), we follow GET .../processes/{pid}/output?follow=1 and send what we read
 *   from stdin as it comes, one short POST .../stdin per STDIN_CHUNK, retried while paddockd
 *   answers 429 (the command is not reading). With -it and a terminal on stdin, the
 *   terminal is in raw mode until we exit, whatever the path (signals included); with -t its
 *   size goes along on SIGWINCH.
 * - -d: started in the background; prints the pid.
 * - --json: one JSON answer (stdout, stderr, result), printed as it is.
 *
 * One process, one poll() loop over the output stream, a signalfd and stdin. SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT are forwarded to the command (POST .../signal); a second one makes us
 * exit at once with 128+N. The output comes from a sandbox: it is copied, never interpreted,
 * and the NDJSON lines carrying it are bounded (API_LINE_MAX) and decoded by the client
 * library (exec-stream.h), as for `paddock mcp --connect`.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"
#include "exec-stream.h"

/* the most stdin paddockd takes inside an exec request */
#define STDIN_INLINE_MAX 65536
/*
 * One POST .../stdin. PIPE_BUF: paddockd writes it to a non-blocking pipe, where a write of
 * at most PIPE_BUF bytes is all or nothing, so a 429 means none of it went in and the retry
 * cannot duplicate bytes.
 */
#define STDIN_CHUNK  4096
#define RETRY_MAX_MS 500

enum {
	OPT_ENV = 0x100,
	OPT_CWD,
	OPT_TIMEOUT,
	OPT_TAG,
	OPT_NO_STDIN,
};

static const struct option options[] = {
	{ "interactive", no_argument, NULL, 'i' },
	{ "tty", no_argument, NULL, 't' },
	{ "detach", no_argument, NULL, 'd' },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "cwd", required_argument, NULL, OPT_CWD },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "no-stdin", no_argument, NULL, OPT_NO_STDIN },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock exec [OPTIONS] ID [--] CMD [ARG...]\n"
	      "\n"
	      "Runs CMD (PATH is searched) in the sandbox ID and exits with its status. Its\n"
	      "stdout and stderr are written to ours as they come. Our stdin, unless it is a\n"
	      "terminal or /dev/null, is given to it (read to its end: it must end).\n"
	      "Options come before ID.\n"
	      "\n"
	      "  -i, --interactive    send our stdin as it comes (not read to the end first)\n"
	      "  -t, --tty            run it on a pseudo-terminal; with -i, a terminal on our\n"
	      "                       stdin is in raw mode meanwhile (-it: a shell)\n"
	      "  -d, --detach         start it in the background and print its pid\n"
	      "      --tag NAME       name the background process (-d, -i, -t), [A-Za-z0-9_.-]\n"
	      "      --env NAME=VALUE add a variable (repeatable)\n"
	      "      --cwd DIR        working directory (default: the sandbox's, /workspace)\n"
	      "      --timeout SECONDS  kill it after this long (default: the sandbox's\n"
	      "                       limits.timeout_s; 0: none, background only)\n"
	      "      --no-stdin       give it an empty stdin whatever ours is\n"
	      "                       (-d and --json take at most 64 KiB of "
	      "stdin)\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the command; a second one\n"
	      "makes paddock exit at once with 128+N (the command may go on).\n"
	      "\n"
	      "Output: the command's stdout and stderr, as they are. With -d: its pid and a\n"
	      "newline (--json: the process object). With --json (not -i, -t): paddockd's whole\n"
	      "answer, {\"exec\",\"pid\",\"stdout\",\"stderr\",\"result\"}, once it has ended.\n"
	      "Exit status: the command's (docs/report.md exit_status): its exit code, 128+N if\n"
	      "killed by signal N, 126 if it cannot be executed, 127 if it is not found; 0 with\n"
	      "-d; 1 if paddockd refused the request; 125 if paddock failed.\n",
	      f);
}

/* ---- the caller's terminal ------------------------------------------------------------ */

static struct termios saved_termios;
static bool terminal_raw;

static void restore_terminal(void)
{
	if (terminal_raw)
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
	terminal_raw = false;
}

static void make_raw(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return;
	t = saved_termios;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0)
		terminal_raw = true;
}

static void window_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws = { 0 };

	*rows = 24;
	*cols = 80;
	if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 ||
	     ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) &&
	    ws.ws_row > 0 && ws.ws_col > 0) {
		/* paddockd takes 1..1000 */
		*rows = ws.ws_row > 1000 ? 1000 : ws.ws_row;
		*cols = ws.ws_col > 1000 ? 1000 : ws.ws_col;
	}
}

/* ---- stdin read to the end ------------------------------------------------------------ */

/* Whether our stdin has something to give: not closed, not a terminal, not /dev/null. */
static bool stdin_has_data(void)
{
	struct stat st;

	if (fstat(STDIN_FILENO, &st) < 0 || isatty(STDIN_FILENO))
		return false;
	return !(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
}

/*
 * Reads our stdin up to its end, or until it holds more than fits in a request: then
 * *ret_more is set and the rest is to be streamed. Returns 0 or 125 (printed).
 */
static int read_stdin(char **ret_buf, size_t *ret_len, bool *ret_more)
{
	char *buf = api_oom(malloc(STDIN_INLINE_MAX + 1));
	size_t len = 0;

	while (len <= STDIN_INLINE_MAX) {
		ssize_t n = read(STDIN_FILENO, buf + len, STDIN_INLINE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return api_failf("read stdin: %s", strerror(errno));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_buf = buf;
	*ret_len = len;
	*ret_more = len > STDIN_INLINE_MAX;
	return 0;
}

/* ---- following the output ------------------------------------------------------------- */

struct session {
	struct api *api;
	const char *id;
	json_int_t pid; /* -1 until known */
	char pid_s[24];
	struct http_conn *out;
	int sfd;
	bool tty;
	bool stdin_open; /* stdin is forwarded and has not ended */
	/* read from stdin, not yet taken by paddockd: pend[pend_off, pend_len) */
	char *pend;
	size_t pend_off, pend_len;
	int retry_ms; /* paddockd said 429: try again after this long */
	bool stdout_gone, stderr_gone;
	int forwarded;	/* signals passed on */
	bool exited;	/* the exit event came */
	json_t *result; /* its result */
};

static void write_all(int fd, bool *gone, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0 && !*gone) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* our stdout came to us non-blocking: wait for room */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (w <= 0) {
			*gone = true; /* the reader went away: drop the rest */
			return;
		}
		p += w;
		len -= (size_t)w;
	}
}

static void handle_event(struct session *s, const struct exec_event *ev)
{
	switch (ev->type) {
	case EXEC_EVENT_START:
		if (ev->pid >= 0 && s->pid < 0) {
			s->pid = ev->pid;
			snprintf(s->pid_s, sizeof(s->pid_s), "%" JSON_INTEGER_FORMAT, s->pid);
		}
		break;
	case EXEC_EVENT_STDOUT:
		write_all(STDOUT_FILENO, &s->stdout_gone, ev->data, ev->len);
		break;
	case EXEC_EVENT_STDERR:
		write_all(STDERR_FILENO, &s->stderr_gone, ev->data, ev->len);
		break;
	case EXEC_EVENT_EXIT:
		s->exited = true;
		if (ev->result)
			s->result = json_incref(ev->result);
		break;
	case EXEC_EVENT_OTHER: /* newer than us, and nothing we must act on */
	case _EXEC_EVENT_MAX:
		break;
	}
}

/* A short request about the process (.../WHAT[/SUB]), errors not shown: 0 on success. */
static int process_post(struct session *s, const char *what, const char *sub, const json_t *body)
{
	struct api quiet = *s->api;
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", s->id, "processes", s->pid_s, what, sub);
	int r;

	quiet.quiet_status = -1;
	r = api_call(&quiet, "POST", url, body, &reply);
	api_reply_release(&reply);
	free(url);
	return r;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT:
		return "INT";
	case SIGTERM:
		return "TERM";
	case SIGHUP:
		return "HUP";
	case SIGQUIT:
		return "QUIT";
	default:
		return "KILL";
	}
}

/* Returns -1 to go on, or the status to exit with now. */
static int handle_signal(struct session *s)
{
	struct signalfd_siginfo si;
	json_t *body;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return -1;
	if (si.ssi_signo == SIGWINCH) {
		unsigned rows, cols;
		if (!s->tty || s->pid < 0)
			return -1;
		window_size(&rows, &cols);
		body = api_oom(
			json_pack("{s:I,s:I}", "rows", (json_int_t)rows, "cols", (json_int_t)cols));
		(void)process_post(s, "resize", NULL, body); /* a lost resize only looks odd */
		json_decref(body);
		return -1;
	}
	if (s->pid < 0 || s->forwarded > 0) {
		restore_terminal();
		return 128 + (int)si.ssi_signo;
	}
	s->forwarded++;
	body = api_oom(json_pack("{s:s}", "signal", signal_name((int)si.ssi_signo)));
	(void)process_post(s, "signal", NULL, body); /* it may have ended meanwhile */
	json_decref(body);
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Sends the next STDIN_CHUNK of what is pending. A 429 leaves it pending, to be tried again
 * later; a 409 (the process ended, or its stdin is closed) drops stdin. Returns 0 or 125.
 */
static int send_stdin(struct session *s)
{
	size_t n = s->pend_len - s->pend_off;
	struct http_request req = {
		.method = "POST",
		.content_type = "application/octet-stream",
		.body = s->pend + s->pend_off,
		.body_len = n < STDIN_CHUNK ? n : STDIN_CHUNK,
		.body_fd = -1,
	};
	struct api quiet = *s->api;
	struct http_conn *c = NULL;
	struct http_response resp;
	char *url = API_URL("sandboxes", s->id, "processes", s->pid_s, "stdin");
	int r;

	req.target = url;
	quiet.quiet_status = -1; /* 409: it ended, its exit is on the way; 429: see below */
	r = api_open(&quiet, &req, &c, &resp);
	http_conn_free(c);
	free(url);
	if (r == PADDOCK_EXIT_FAILURE)
		return r;
	if (r == 0) {
		s->pend_off += req.body_len;
		s->retry_ms = 0;
	} else if (quiet.last_status == 429) {
		s->retry_ms = s->retry_ms ? s->retry_ms * 2 : 10;
		if (s->retry_ms > RETRY_MAX_MS)
			s->retry_ms = RETRY_MAX_MS;
		return 0;
	} else {
		s->stdin_open = false; /* it will not take more */
		s->pend_off = s->pend_len;
	}
	if (s->pend_off == s->pend_len)
		s->pend_off = s->pend_len = 0;
	return 0;
}

/* What stdin has now becomes pending; its end closes the process's stdin. */
static int read_more_stdin(struct session *s)
{
	ssize_t n;

	if (!s->pend)
		s->pend = api_oom(malloc(STDIN_CHUNK));
	n = read(STDIN_FILENO, s->pend, STDIN_CHUNK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n > 0) {
		s->pend_off = 0;
		s->pend_len = (size_t)n;
		return send_stdin(s);
	}
	/* EOF, or an error such as EIO from a terminal that went away */
	s->stdin_open = false;
	if (process_post(s, "stdin", "close", NULL) == PADDOCK_EXIT_FAILURE)
		return PADDOCK_EXIT_FAILURE;
	return 0;
}

/* The process's result, waiting for its end up to 5 minutes at a time. */
static int wait_result(struct session *s)
{
	for (;;) {
		struct api_reply reply = { 0 };
		char *url = API_URL("sandboxes", s->id, "processes", s->pid_s, "wait");
		json_t *result;
		int r;

		api_url_query(&url, "timeout_s", "300");
		r = api_call(s->api, "POST", url, NULL, &reply);
		free(url);
		if (r != 0)
			return r;
		result = json_object_get(reply.json, "result");
		if (json_is_object(result)) {
			s->result = json_incref(result);
			api_reply_release(&reply);
			return 0;
		}
		if (strcmp(api_str(reply.json, "state", ""), "running")) {
			api_reply_release(&reply);
			return api_failf("paddockd gave no result for process %s", s->pid_s);
		}
		api_reply_release(&reply);
	}
}

/* Why the command ended, when it was not simply its own doing. */
static void explain(const json_t *result)
{
	const char *reason = api_str(result, "reason", "");

	if (!strcmp(reason, "error")) {
		const json_t *e = json_object_get(result, "error");
		const char *code = api_str(e, "code", ""), *field = api_str(e, "field", "");
		fputs("paddock: ", stderr);
		api_fput_escaped(stderr, api_str(e, "message", "the command could not be started"));
		if (*code) {
			fputs(": ", stderr);
			api_fput_escaped(stderr, code);
		}
		if (*field) {
			fputs(" (field: ", stderr);
			api_fput_escaped(stderr, field);
			fputc(')', stderr);
		}
		fputc('\n', stderr);
	} else if (!strcmp(reason, "timeout")) {
		fputs("paddock: timed out (timeout_s)\n", stderr);
	} else if (!strcmp(reason, "output")) {
		fputs("paddock: output went over limits.output; the rest was dropped\n", stderr);
	} else if (!strcmp(reason, "oom")) {
		fputs("paddock: out of memory (limits.memory)\n", stderr);
	} else if (!strcmp(reason, "cpu_time")) {
		fputs("paddock: CPU time ran out (limits.cpu_time_s)\n", stderr);
	} else if (!strcmp(reason, "killed")) {
		fputs("paddock: the sandbox was deleted while the command ran\n", stderr);
	}
}

static int exit_status(const json_t *result)
{
	json_t *st = json_object_get(result, "exit_status");

	explain(result);
	if (!json_is_integer(st) || json_integer_value(st) < 0 || json_integer_value(st) > 255)
		return api_failf("paddockd's result has no exit status");
	return (int)json_integer_value(st);
}

static int follow(struct session *s)
{
	paddock_error err = { 0 };
	int64_t retry_at = 0;

	http_conn_set_nonblocking(s->out, true);
	for (;;) {
		bool pending = s->pend_len > 0;
		struct pollfd pfd[3] = {
			{ .fd = http_conn_fd(s->out), .events = POLLIN },
			{ .fd = s->sfd, .events = POLLIN },
			{ .fd = s->stdin_open && !pending ? STDIN_FILENO : -1, .events = POLLIN },
		};
		int timeout = -1;
		struct exec_event ev;
		int r;

		/* everything already received first: poll() cannot see what is buffered */
		while ((r = exec_stream_next(s->out, API_LINE_MAX, &ev, &err)) > 0) {
			handle_event(s, &ev);
			exec_event_release(&ev);
			if (s->exited)
				return 0;
		}
		if (r == 0)
			return 0; /* the stream ended */
		if (r != -EAGAIN) {
			restore_terminal();
			return api_fail("read the output", &err);
		}
		if (pending) {
			int64_t now = now_ms();
			if (retry_at == 0)
				retry_at = now + s->retry_ms;
			timeout = retry_at > now ? (int)(retry_at - now) : 0;
		}
		if (poll(pfd, 3, timeout) < 0) {
			if (errno == EINTR)
				continue;
			restore_terminal();
			return api_failf("poll: %s", strerror(errno));
		}
		if (pfd[1].revents & POLLIN) {
			r = handle_signal(s);
			if (r >= 0)
				return r;
		}
		r = 0;
		if (pending && now_ms() >= retry_at) {
			retry_at = 0;
			r = send_stdin(s);
			if (s->pend_len > 0)
				retry_at = now_ms() + s->retry_ms;
		} else if (!pending && pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = read_more_stdin(s);
			if (s->pend_len > 0)
				retry_at = now_ms() + s->retry_ms;
		}
		if (r != 0) {
			restore_terminal();
			return r;
		}
	}
}

/* Follows the events until the command's exit; returns the status to exit with. */
static int run_session(struct session *s)
{
	int r = follow(s);

	s->out = http_conn_free(s->out);
	restore_terminal();
	/* no exit event, or one without a result: ask for it (^C may end the wait) */
	if (r == 0 && !s->result) {
		sigset_t mask;

		if (s->pid < 0)
			return api_failf("paddockd ended the output before the command started");
		sigemptyset(&mask);
		sigaddset(&mask, SIGINT);
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGHUP);
		sigaddset(&mask, SIGQUIT);
		(void)sigprocmask(SIG_UNBLOCK, &mask, NULL);
		r = wait_result(s);
	}
	if (r != 0)
		return r;
	return exit_status(s->result);
}

static int open_signalfd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* ---- the four ways -------------------------------------------------------------------- */

struct exec_opts {
	bool interactive, tty, detach, no_stdin;
	const char *tag;
};

/* POST .../exec with stream:true: the response is the event stream. */
static int exec_stream(struct api *api, const char *id, json_t *body)
{
	struct session s = { .api = api, .id = id, .pid = -1, .sfd = -1 };
	char *text, *url;
	struct http_request req = { .method = "POST",
				    .content_type = "application/json",
				    .body_fd = -1 };
	struct http_response resp;
	int r;

	api_set(body, "stream", json_true());
	text = api_oom(json_dumps(body, JSON_COMPACT));
	url = API_URL("sandboxes", id, "exec");
	req.target = url;
	req.body = text;
	req.body_len = strlen(text);
	s.sfd = open_signalfd();
	if (s.sfd < 0) {
		free(text);
		free(url);
		return api_failf("signalfd: %s", strerror(-s.sfd));
	}
	r = api_open(api, &req, &s.out, &resp);
	free(text);
	free(url);
	if (r == 0)
		r = run_session(&s);
	close(s.sfd);
	json_decref(s.result);
	http_conn_free(s.out);
	return r;
}

/*
 * background:true, then the output followed: -i, -t, or stdin too large for a request, of
 * which `prefix` (taken, may be NULL) was read already.
 */
static int exec_attached(struct api *api, const char *id, json_t *body, const struct exec_opts *o,
			 char *prefix, size_t prefix_len)
{
	struct session s = { .api = api,
			     .id = id,
			     .pid = -1,
			     .sfd = -1,
			     .tty = o->tty,
			     .pend = prefix,
			     .pend_len = prefix_len };
	struct api_reply reply = { 0 };
	struct http_request req = { .method = "GET", .body_fd = -1 };
	struct http_response resp;
	json_t *pid;
	char *url;
	int r;

	api_set(body, "background", json_true());
	if (o->interactive || prefix)
		api_set(body, "keep_stdin", json_true());
	if (o->tty) {
		unsigned rows, cols;
		window_size(&rows, &cols);
		api_set(body, "pty",
			api_oom(json_pack("{s:I,s:I}", "rows", (json_int_t)rows, "cols",
					  (json_int_t)cols)));
	}
	s.sfd = open_signalfd();
	if (s.sfd < 0) {
		free(prefix);
		return api_failf("signalfd: %s", strerror(-s.sfd));
	}
	url = API_URL("sandboxes", id, "exec");
	r = api_call(api, "POST", url, body, &reply);
	free(url);
	if (r != 0)
		goto out;
	pid = json_object_get(reply.json, "pid");
	if (!json_is_integer(pid)) {
		r = api_failf("paddockd's answer has no pid");
		goto out;
	}
	s.pid = json_integer_value(pid);
	snprintf(s.pid_s, sizeof(s.pid_s), "%" JSON_INTEGER_FORMAT, s.pid);

	url = API_URL("sandboxes", id, "processes", s.pid_s, "output");
	api_url_query(&url, "follow", "1");
	req.target = url;
	r = api_open(api, &req, &s.out, &resp);
	free(url);
	if (r != 0)
		goto out;
	s.stdin_open = o->interactive || prefix;
	/* raw only when what is typed goes to the command (-it): else ^C must stay ours */
	if (o->tty && o->interactive && isatty(STDIN_FILENO)) {
		atexit(restore_terminal);
		make_raw();
	}
	r = run_session(&s);
out:
	restore_terminal();
	api_reply_release(&reply);
	json_decref(s.result);
	http_conn_free(s.out);
	free(s.pend);
	close(s.sfd);
	return r;
}

static int exec_detached(struct api *api, const char *id, json_t *body)
{
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", id, "exec");
	json_t *pid;
	int r;

	api_set(body, "background", json_true());
	r = api_call(api, "POST", url, body, &reply);
	free(url);
	if (r != 0)
		return r;
	pid = json_object_get(reply.json, "pid");
	if (api->json)
		r = api_print_raw(&reply);
	else if (!json_is_integer(pid))
		r = api_failf("paddockd's answer has no pid");
	else
		printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(pid));
	api_reply_release(&reply);
	return r;
}

/* --json: the whole answer once the command has ended. */
static int exec_json(struct api *api, const char *id, json_t *body)
{
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", id, "exec");
	json_t *st;
	int r;

	api->answer_max = 256u << 20; /* output up to limits.output, escaped */
	r = api_call(api, "POST", url, body, &reply);
	free(url);
	if (r != 0)
		return r;
	r = api_print_raw(&reply);
	st = json_object_get(json_object_get(reply.json, "result"), "exit_status");
	if (r == 0)
		r = json_is_integer(st) ? (int)json_integer_value(st) : PADDOCK_EXIT_FAILURE;
	api_reply_release(&reply);
	return r;
}

/* TERM for a pty, when ours is a plain name: curses programs need it. */
static void add_term(json_t *env)
{
	const char *t = getenv("TERM");

	if (json_object_get(env, "TERM") || !t || !*t || strlen(t) >= 64 ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789-+.") != strlen(t))
		return;
	api_set(env, "TERM", api_oom(json_string(t)));
}

/* ---- the command line ----------------------------------------------------------------- */

/* --env NAME=VALUE into the request's env: API_PARSE_GO, or 125 (printed). */
static int parse_env(json_t *env, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *name;

	if (!eq || eq == arg)
		return api_failf("--env: expected NAME=VALUE, got '%s'", arg);
	name = api_oom(strndup(arg, (size_t)(eq - arg)));
	api_set(env, name, api_oom(json_string(eq + 1)));
	free(name);
	return API_PARSE_GO;
}

/* One option (its argument in optarg): API_PARSE_GO, else the status to exit with. */
static int parse_option(int c, struct api *api, struct exec_opts *o, json_t *body, json_t *env)
{
	double timeout;

	if (api_option(api, c, optarg))
		return API_PARSE_GO;
	switch (c) {
	case 'i':
		o->interactive = true;
		break;
	case 't':
		o->tty = true;
		break;
	case 'd':
		o->detach = true;
		break;
	case OPT_TAG:
		o->tag = optarg;
		break;
	case OPT_NO_STDIN:
		o->no_stdin = true;
		break;
	case OPT_ENV:
		return parse_env(env, optarg);
	case OPT_CWD:
		api_set(body, "cwd", api_oom(json_string(optarg)));
		break;
	case OPT_TIMEOUT:
		if (api_parse_seconds(optarg, &timeout) < 0)
			return api_failf("--timeout: expected a number of seconds such as '30', "
					 "got '%s'",
					 optarg);
		api_set(body, "timeout_s", api_seconds_json(timeout));
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		fprintf(stderr, "paddock: see 'paddock exec --help'\n");
		return PADDOCK_EXIT_FAILURE;
	}
	return API_PARSE_GO;
}

/*
 * The options (into api, o, and the request's body and env) and the sandbox id; optind is
 * left at the command. API_PARSE_GO to go on, else the status to exit with (printed; 0
 * after --help).
 */
static int parse_args(int argc, char **argv, struct api *api, struct exec_opts *o, json_t *body,
		      json_t *env, const char **ret_id)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "+itdh", options, NULL)) != -1) {
		r = parse_option(c, api, o, body, env);
		if (r != API_PARSE_GO)
			return r;
	}
	if (optind >= argc)
		return api_failf("exec: expected a sandbox id and a command (paddock exec "
				 "[OPTIONS] ID [--] CMD [ARG...])");
	*ret_id = argv[optind++];
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc)
		return api_failf("exec: expected a command after the sandbox id");
	if (o->detach && (o->interactive || o->tty))
		return api_failf("exec: -d cannot be combined with -i or -t");
	if (api->json && (o->interactive || o->tty))
		return api_failf("exec: --json cannot be combined with -i or -t");
	if (o->tag && !(o->detach || o->interactive || o->tty))
		return api_failf("exec: --tag names a background process: use it with -d, -i or "
				 "-t");
	return API_PARSE_GO;
}

/* The request's argv (the `n` words at `cmd`), its env (TERM added for a pty) and tag. */
static void build_request(json_t *body, json_t *env, const struct exec_opts *o, char **cmd, int n)
{
	json_t *args = api_oom(json_array());

	api_set(body, "argv", args);
	for (int i = 0; i < n; i++)
		if (json_array_append_new(args, api_oom(json_string(cmd[i]))) < 0)
			api_oom(NULL);
	if (o->tty)
		add_term(env);
	if (json_object_size(env) > 0)
		api_set(body, "env", json_incref(env));
	if (o->tag)
		api_set(body, "tag", api_oom(json_string(o->tag)));
}

/*
 * Our stdin, unless -i sends it as it comes or there is nothing to give: what fits goes in
 * the request (stdin_b64); more than that is left in *ret_prefix (to free, with its length
 * in *ret_len) for an attached command to be sent. 0, or the status to exit with (printed).
 */
static int take_stdin(const struct api *api, const struct exec_opts *o, json_t *body,
		      char **ret_prefix, size_t *ret_len)
{
	char *in = NULL;
	size_t len = 0;
	bool more = false;
	int r;

	if (o->interactive || o->no_stdin || !stdin_has_data())
		return 0;
	r = read_stdin(&in, &len, &more);
	if (r != 0)
		return r;
	if (more && (o->detach || api->json)) {
		free(in);
		return api_failf("exec: stdin holds more than 64 KiB, more than -d and --json can "
				 "send: use -i, or 'paddock cp' it in first");
	}
	if (more) {
		*ret_prefix = in;
		*ret_len = len;
		return 0;
	}
	if (len > 0) {
		char *b64 = api_oom(paddock_base64_encode(in, len));
		api_set(body, "stdin_b64", api_oom(json_string(b64)));
		free(b64);
	}
	free(in);
	return 0;
}

/* One of the four ways, by flag; `prefix` (taken) is stdin a request could not hold. */
static int run(struct api *api, const char *id, json_t *body, const struct exec_opts *o,
	       char *prefix, size_t prefix_len)
{
	signal(SIGPIPE, SIG_IGN);
	if (o->detach) /* no prefix then: take_stdin() refuses one for -d (and --json) */
		return exec_detached(api, id, body);
	if (o->interactive || o->tty || prefix)
		return exec_attached(api, id, body, o, prefix, prefix_len);
	if (api->json)
		return exec_json(api, id, body);
	return exec_stream(api, id, body);
}

int cmd_exec(int argc, char **argv)
{
	struct api api = { 0 };
	struct exec_opts o = { 0 };
	json_t *body = api_oom(json_object()), *env = api_oom(json_object());
	char *prefix = NULL;
	size_t prefix_len = 0;
	const char *id = NULL;
	int status;

	status = parse_args(argc, argv, &api, &o, body, env, &id);
	if (status != API_PARSE_GO)
		goto out;
	build_request(body, env, &o, argv + optind, argc - optind);
	status = take_stdin(&api, &o, body, &prefix, &prefix_len);
	if (status == 0)
		status = run(&api, id, body, &o, prefix, prefix_len);
out:
	json_decref(env);
	json_decref(body);
	return status;
}
