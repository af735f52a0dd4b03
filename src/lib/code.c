/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter (docs/code.md): a server inside the sandbox, on 127.0.0.1:49999 of its
 * own network namespace, that runs code in Jupyter kernels (contexts) and answers in the
 * protocol of E2B's code interpreter. Its program is code-server.py, which libpaddock carries
 * (embed-text.py makes it a C string); it runs as a command of the sandbox, like any other:
 * as the sandbox user, under every limit, isolation layer and egress rule.
 *
 * It starts on first use: paddock_code_socket_async() starts it unless it runs, waits for
 * the line it prints once its port takes connections, then hands each waiting caller a
 * socket init made in the sandbox's network namespace (paddock_sandbox_socket_async()). A
 * server that ends (killed from inside, OOM) is started again by the next use; one that does
 * not get ready within CODE_START_S is killed and its waiters told why, with the last of what
 * it wrote on stderr.
 *
 * Trust: the server runs beside the sandbox's own code, which can kill it, replace it on the
 * port, or talk to it: nothing it says is trusted here. Its ready line only says "try now";
 * what it prints is bounded (RING) and quoted back, escaped, in errors.
 */
#include "sandbox.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "control.h"
#include "error.h"

#define CODE_START_S   60   /* python3, jupyter_client and the first bind */
#define CODE_LOG_BYTES 8192 /* what is kept of the server's output: the end of a failure */
#define READY_LINE     "paddock-code-server ready "
#define LINE_MAX_KEPT  128

/* code-server.py, made a string at build time (embed-text.py) */
extern const char pd_code_server_py[];
extern const size_t pd_code_server_py_len;

struct code_waiter {
	paddock_socket_fn fn;
	void *userdata;
	struct code_waiter *next;
};

struct pd_code {
	paddock_sandbox *sb;
	paddock_exec *ex;    /* the server's command; NULL when none runs */
	bool ready;	     /* it printed its ready line */
	struct event *timer; /* CODE_START_S until ready */
	struct code_waiter *waiting;
	char line[LINE_MAX_KEPT];
	size_t line_len;
	bool line_done;
};

/* Hands each waiter its socket (ready) or the error; the list is empty after. */
static void release_waiters(struct pd_code *c, const paddock_error *why)
{
	struct code_waiter *w;

	while ((w = c->waiting)) {
		paddock_error err = { 0 };

		c->waiting = w->next;
		if (!why && paddock_sandbox_socket_async(c->sb, AF_INET, SOCK_STREAM, w->fn,
							 w->userdata, &err) == 0) {
			free(w);
			continue;
		}
		w->fn(c->sb, -1, why ? why : &err, w->userdata);
		free(w);
	}
}

/* The end of what the server wrote on stderr, for an error message. */
static void server_log(paddock_exec *ex, char *buf, size_t size)
{
	uint64_t end = paddock_exec_output_end(ex, 2);
	uint64_t from = end > size - 1 ? end - (size - 1) : 0;
	size_t n = paddock_exec_read_output(ex, 2, &from, buf, size - 1);

	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
}

static void stop_timer(struct pd_code *c)
{
	if (c->timer) {
		event_free(c->timer);
		c->timer = NULL;
	}
}

static void server_output(paddock_exec *ex, int stream, const void *data, size_t len,
			  void *userdata)
{
	struct pd_code *c = userdata;
	const char *p = data;

	(void)ex;
	if (stream != 1 || c->line_done)
		return;
	/* the first line of stdout only: after it, the server's output is the kernels' noise */
	for (size_t i = 0; i < len && !c->line_done; i++) {
		if (p[i] == '\n')
			c->line_done = true;
		else if (c->line_len < sizeof(c->line) - 1)
			c->line[c->line_len++] = p[i];
	}
	if (!c->line_done)
		return;
	c->line[c->line_len] = '\0';
	if (strncmp(c->line, READY_LINE, strlen(READY_LINE)) != 0)
		return; /* not ready: its end or the timer says why */
	c->ready = true;
	stop_timer(c);
	release_waiters(c, NULL);
}

static void server_exited(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct pd_code *c = userdata;
	paddock_error err = { 0 };
	char log[120]; /* the last line or two: PD_ESC() keeps 128 */

	stop_timer(c);
	if (!c->ready) {
		if (res->reason == PADDOCK_END_ERROR) {
			err = res->error;
			pd_error_prefix(&err, "start the code interpreter (python3 with "
					      "jupyter_client and ipykernel)");
		} else {
			char how[48];

			if (res->reason == PADDOCK_END_EXITED)
				snprintf(how, sizeof(how), "exit status %d", res->exit_code);
			else
				snprintf(how, sizeof(how), "%s",
					 paddock_end_reason_to_string(res->reason));
			server_log(ex, log, sizeof(log));
			pd_fail_field(&err, res->reason == PADDOCK_END_OOM ? ENOMEM : EIO, "code",
				      "the code interpreter ended before it was ready (%s)%s%s",
				      how, log[0] ? ": " : "", PD_ESC(log));
		}
		release_waiters(c, &err);
	}
	/* a server that ended after it was ready is started again by the next use */
	c->ex = NULL;
	c->ready = false;
	c->line_len = 0;
	c->line_done = false;
}

static void start_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pd_code *c = arg;
	paddock_error err = { 0 };
	char log[120]; /* the last line or two: PD_ESC() keeps 128 */

	(void)fd;
	(void)what;
	stop_timer(c);
	server_log(c->ex, log, sizeof(log));
	pd_fail_field(&err, ETIMEDOUT, "code", "the code interpreter was not ready within %d s%s%s",
		      CODE_START_S, log[0] ? ": " : "", PD_ESC(log));
	(void)paddock_exec_terminate(c->ex, PADDOCK_END_TIMEOUT, NULL);
	release_waiters(c, &err);
}

/* It runs: its program goes to its stdin (python3 -), then EOF. */
static void server_started(paddock_exec *ex, void *userdata)
{
	paddock_error err = { 0 };

	(void)userdata;
	if (paddock_exec_write_stdin(ex, pd_code_server_py, pd_code_server_py_len, &err) < 0 ||
	    paddock_exec_close_stdin(ex, &err) < 0)
		(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL); /* its end says */
}

static struct pd_code *code_state(paddock_sandbox *sb, paddock_error *err)
{
	if (!sb->code) {
		sb->code = calloc(1, sizeof(*sb->code));
		if (!sb->code) {
			pd_fail(err, ENOMEM, "code interpreter");
			return NULL;
		}
		sb->code->sb = sb;
	}
	return sb->code;
}

int paddock_code_start(paddock_sandbox *sb, paddock_error *err)
{
	static const char *const argv[] = { "python3", "-I", "-", PADDOCK_CODE_PORT_STR, NULL };
	struct paddock_exec_opts opts = {
		.argv = argv,
		.fds = { -1, -1, -1 },
		.pipe_streams = 1u << 0, /* the program comes on stdin: ps shows no 20 kB argv */
		.timeout_s = -1,
		.capture = PADDOCK_CAPTURE_RING,
		.capture_bytes = CODE_LOG_BYTES,
		.on_started = server_started,
	};
	struct timeval tv = { .tv_sec = CODE_START_S };
	struct pd_code *c;
	paddock_exec *ex;
	int r;

	if (!sb)
		return pd_fail(err, EINVAL, "paddock_code_start: a sandbox is required");
	if (!paddock_sandbox_running(sb))
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	c = code_state(sb, err);
	if (!c)
		return -ENOMEM;
	if (c->ex)
		return 0;
	c->timer = evtimer_new(sb->ctx->base, start_timeout, c);
	if (!c->timer)
		return pd_fail(err, ENOMEM, "code interpreter timer");
	r = pd_exec_begin(sb, &opts, PD_EXEC_CODE_SERVER, server_exited, c, &ex, err);
	if (r < 0) {
		stop_timer(c);
		pd_error_prefix(err, "start the code interpreter");
		return r;
	}
	c->ex = ex;
	c->ready = false;
	c->line_len = 0;
	c->line_done = false;
	paddock_exec_set_output_callback(ex, server_output, c);
	evtimer_add(c->timer, &tv);
	return 0;
}

int paddock_code_socket_async(paddock_sandbox *sb, paddock_socket_fn fn, void *userdata,
			      paddock_error *err)
{
	struct code_waiter *w, **tail;
	struct pd_code *c;
	int r;

	if (!sb || !fn)
		return pd_fail(err, EINVAL, "paddock_code_socket_async: arguments are required");
	r = paddock_code_start(sb, err);
	if (r < 0)
		return r;
	c = sb->code;
	if (c->ready)
		return paddock_sandbox_socket_async(sb, AF_INET, SOCK_STREAM, fn, userdata, err);
	w = calloc(1, sizeof(*w));
	if (!w)
		return pd_fail(err, ENOMEM, "code interpreter waiter");
	w->fn = fn;
	w->userdata = userdata;
	for (tail = &c->waiting; *tail; tail = &(*tail)->next)
		;
	*tail = w;
	return 0;
}

/*
 * A supervisor that adopts the sandbox (sandbox-adopt.c) finds the server still running, its
 * kernels and their variables with it: it is this sandbox's server again. It was ready
 * (its port is bound) unless it ends soon, which server_exited() handles as any end.
 */
void pd_code_adopt(paddock_sandbox *sb, paddock_exec *ex)
{
	paddock_error err = { 0 };
	struct pd_code *c = code_state(sb, &err);

	if (!c || c->ex) {
		(void)paddock_exec_terminate(ex, PADDOCK_END_KILLED, NULL); /* one server only */
		return;
	}
	c->ex = ex;
	c->ready = true;
	c->line_done = true;
	paddock_exec_set_callback(ex, server_exited, c);
	/* its output is read again, or a full pipe would stop it */
	(void)paddock_exec_capture(ex, PADDOCK_CAPTURE_RING, CODE_LOG_BYTES, NULL);
}

bool paddock_code_running(const paddock_sandbox *sb)
{
	return sb && sb->code && sb->code->ex;
}

int paddock_code_stop(paddock_sandbox *sb, paddock_error *err)
{
	if (!sb || !sb->code || !sb->code->ex)
		return 0;
	return paddock_exec_terminate(sb->code->ex, PADDOCK_END_KILLED, err);
}

void pd_code_free(paddock_sandbox *sb)
{
	struct pd_code *c = sb->code;
	paddock_error err = { 0 };

	if (!c)
		return;
	pd_fail(&err, ESRCH, "sandbox '%s' is gone", sb->id);
	stop_timer(c);
	release_waiters(c, &err);
	if (c->ex)
		paddock_exec_set_output_callback(c->ex, NULL, NULL);
	if (c->ex)
		paddock_exec_set_callback(c->ex, NULL, NULL);
	free(c);
	sb->code = NULL;
}
