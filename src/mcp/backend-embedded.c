/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded backend: sandboxes made by libpaddock in this process, served from its event
 * loop. They have no reconnect directory, so each one's init dies with this process, even
 * on SIGKILL: nothing outlives the session. Output is hostile bytes: it is bounded as it
 * is read and turned into text only on the way out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "backend.h"
#include "client.h"

struct box;

/*
 * A command: foreground (a tool call waits for it) or background (followed later). Its
 * output and stdin are libpaddock's exec session (held by reference until freed here):
 * libpaddock applies limits.output and the timeout, the same for every front end.
 */
struct mcp_pending {
	struct box *box;
	paddock_exec *ex;      /* NULL once it ended */
	paddock_exec *session; /* referenced: the output stays readable after the end */
	bool background, cancelled;
	char id[24];
	int pid;
	size_t cap;	  /* foreground: bytes of each stream shown in the tool's answer */
	char *stdin_data; /* foreground: the call's stdin, written once it runs */
	size_t stdin_len;
	uint64_t since[2];   /* background: where the last bg_output() stopped */
	uint64_t dropped[2]; /* background: bytes never shown (the ring, or past `max`) */
	json_t *result;	     /* the report once it ended */
	mcp_exec_done_fn fn;
	void *userdata;
	struct mcp_pending *next;
};

struct box {
	struct embedded *e;
	paddock_sandbox *sb;
	char *id;
	bool ended;
	struct mcp_pending *cmds;
	unsigned long next_bg;
	mcp_ask_fn ask_fn; /* watch_asks() */
	void *ask_ud;
	struct box *next;
};

struct embedded {
	struct mcp_backend base;
	struct event_base *evbase;
	paddock_ctx *ctx;
	struct box *boxes;
};

static int find_box(struct embedded *e, const char *id, struct box **ret, paddock_error *err)
{
	for (struct box *b = e->boxes; b; b = b->next)
		if (!strcmp(b->id, id)) {
			if (b->ended)
				return paddock_fail_field(
					err, ESRCH, "sandbox_id",
					"the sandbox '%s' has ended (a limit or a "
					"crash killed it); destroy it and make another",
					PADDOCK_ESC(id));
			*ret = b;
			return 0;
		}
	return paddock_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s'", PADDOCK_ESC(id));
}

/* ---- commands --------------------------------------------------------------------------- */

static void cmd_unlink(struct mcp_pending *p)
{
	for (struct mcp_pending **pp = &p->box->cmds; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
}

static void cmd_free(struct mcp_pending *p)
{
	cmd_unlink(p);
	if (p->ex)
		paddock_exec_set_callback(p->ex, NULL, NULL);
	paddock_exec_unref(p->session);
	json_decref(p->result);
	free(p->stdin_data);
	free(p);
}

/* The kept bytes of `stream` from *from to its end, at most `max` (the first ones) as text. */
static json_t *stream_text(struct mcp_pending *p, int stream, uint64_t *from, size_t max)
{
	uint64_t end = paddock_exec_output_end(p->session, stream);
	size_t want = end - *from < max ? (size_t)(end - *from) : max;
	char *buf = malloc(want + 1);
	size_t n = 0;
	json_t *text;

	if (!buf)
		return NULL;
	while (n < want) {
		size_t k = paddock_exec_read_output(p->session, stream, from, buf + n, want - n);

		if (k == 0)
			break;
		n += k;
	}
	text = mcp_json_text(buf, n);
	free(buf);
	return text;
}

static void exited(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct mcp_pending *p = userdata;
	paddock_error err = { 0 };
	char *report = NULL;
	uint64_t from[2] = { 0, 0 }, kept[2];
	json_t *out;

	(void)ex;
	p->ex = NULL;
	/* output_truncated is libpaddock's (limits.output), as for every front end */
	if (paddock_result_to_json(res, &report, &err) >= 0)
		p->result = json_loads(report, 0, NULL);
	free(report);
	if (p->background)
		return; /* kept for bg_output() */
	if (p->cancelled || !p->fn) {
		cmd_free(p);
		return;
	}
	for (int i = 0; i < 2; i++)
		kept[i] = paddock_exec_output_end(p->session, i + 1);
	out = json_pack(
		"{s:O?, s:s, s:O?, s:o, s:o, s:b, s:b, s:I, s:I, s:O?}", "exit_code",
		json_object_get(p->result, "exit_code"), "reason",
		paddock_end_reason_to_string(res->reason), "signal",
		json_object_get(p->result, "signal"), "stdout", stream_text(p, 1, &from[0], p->cap),
		"stderr", stream_text(p, 2, &from[1], p->cap), "stdout_truncated",
		kept[0] > p->cap || paddock_exec_output_read(p->session, 1) > kept[0],
		"stderr_truncated",
		kept[1] > p->cap || paddock_exec_output_read(p->session, 2) > kept[1],
		"stdout_bytes", (json_int_t)paddock_exec_output_read(p->session, 1), "stderr_bytes",
		(json_int_t)paddock_exec_output_read(p->session, 2), "report", p->result);
	if (!out)
		paddock_fail(&err, ENOMEM, "the command's result");
	p->fn(out, &err, p->userdata);
	cmd_free(p);
}

static int cmd_new(struct box *b, const struct mcp_exec_req *req, bool background,
		   struct mcp_pending **ret, paddock_error *err)
{
	struct mcp_pending *p = calloc(1, sizeof(*p));

	if (!p)
		return paddock_fail(err, ENOMEM, "allocate a command");
	p->box = b;
	p->background = background;
	p->cap = req->output_max;
	p->next = b->cmds;
	b->cmds = p;
	*ret = p;
	return 0;
}

/* A foreground command runs: its stdin, when the call gave some, queued, then EOF. */
static void fg_started(paddock_exec *ex, void *userdata)
{
	struct mcp_pending *p = userdata;
	paddock_error err = { 0 };

	p->pid = paddock_exec_pid(ex);
	if (!p->stdin_data)
		return;
	if (p->stdin_len && paddock_exec_write_stdin(ex, p->stdin_data, p->stdin_len, &err) < 0 &&
	    err.code != EPIPE)
		(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
	(void)paddock_exec_close_stdin(ex, NULL);
	free(p->stdin_data);
	p->stdin_data = NULL;
}

/*
 * Starts the command with libpaddock's session: a foreground one's output whole up to
 * limits.output (past it: reason "output"), a background one's in a ring. A foreground one
 * starts without waiting (fg_started()), a background one's pid is the answer.
 */
static int start(struct box *b, struct mcp_pending *p, const struct mcp_exec_req *req,
		 paddock_error *err)
{
	struct paddock_exec_opts opts = {
		.argv = req->argv,
		.env = req->env,
		.cwd = req->cwd,
		.fds = { -1, -1, -1 },
		.pipe_streams = req->stdin_data ? 1u : 0,
		/* the tool's timeout_s, or none (tools.c applies the default and ceiling) */
		.timeout_s = req->timeout_s > 0 ? req->timeout_s : -1,
		.capture = p->background ? PADDOCK_CAPTURE_RING : PADDOCK_CAPTURE_ALL,
		.on_started = p->background ? NULL : fg_started,
	};
	int r;

	if (req->stdin_data) {
		/* an empty stdin still gets a pipe, closed at once: EOF, as asked */
		p->stdin_data = malloc(req->stdin_len + 1);
		if (!p->stdin_data)
			return paddock_fail(err, ENOMEM, "stdin");
		memcpy(p->stdin_data, req->stdin_data, req->stdin_len);
		p->stdin_len = req->stdin_len;
	}
	r = paddock_exec_start(b->sb, &opts, exited, p, &p->ex, err);
	if (r < 0)
		return r;
	p->session = paddock_exec_ref(p->ex);
	if (p->background)
		p->pid = paddock_exec_pid(p->ex);
	return 0;
}

static int embedded_exec(struct mcp_backend *base, const char *id, const struct mcp_exec_req *req,
			 mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
			 paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct mcp_pending *p = NULL;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	r = cmd_new(b, req, false, &p, err);
	if (r < 0)
		return r;
	p->fn = fn;
	p->userdata = userdata;
	r = start(b, p, req, err);
	if (r < 0) {
		/* started and then failed: exited() frees it; never started: here */
		if (!p->session)
			cmd_free(p);
		else
			p->fn = NULL;
		return r;
	}
	*ret_pending = p;
	return 0;
}

static void embedded_cancel(struct mcp_backend *base, struct mcp_pending *p)
{
	(void)base;
	if (!p)
		return;
	p->cancelled = true;
	p->fn = NULL;
	if (p->ex)
		(void)paddock_exec_terminate(p->ex, PADDOCK_END_KILLED, NULL);
	else
		cmd_free(p);
	/* else exited() frees it when the kill is reported */
}

/* ---- background ------------------------------------------------------------------------- */

static int embedded_bg_start(struct mcp_backend *base, const char *id,
			     const struct mcp_exec_req *req, char **ret_proc, int *ret_pid,
			     paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct mcp_pending *p = NULL;
	struct box *b;
	char *proc;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	r = cmd_new(b, req, true, &p, err);
	if (r < 0)
		return r;
	snprintf(p->id, sizeof(p->id), "b%lu", ++b->next_bg);
	proc = strdup(p->id);
	r = proc ? start(b, p, req, err) : paddock_fail(err, ENOMEM, "start_process");
	if (r < 0) {
		free(proc);
		if (!p->session)
			cmd_free(p);
		return r;
	}
	*ret_proc = proc;
	*ret_pid = p->pid;
	return 0;
}

static int find_bg(struct embedded *e, const char *id, const char *proc, struct mcp_pending **ret,
		   paddock_error *err)
{
	struct box *b;
	int r = find_box(e, id, &b, err);

	if (r < 0)
		return r;
	for (struct mcp_pending *p = b->cmds; p; p = p->next)
		if (p->background && !strcmp(p->id, proc)) {
			*ret = p;
			return 0;
		}
	return paddock_fail_field(err, ENOENT, "process_id", "no process '%s'", PADDOCK_ESC(proc));
}

/*
 * What came since the last call, at most the newest `max` bytes of each stream; what the
 * ring dropped meanwhile, or what is older than those `max`, counts as dropped.
 */
static json_t *bg_text(struct mcp_pending *p, int i, size_t max)
{
	uint64_t end = paddock_exec_output_end(p->session, i + 1), from = p->since[i];
	uint64_t probe = from;
	char c;

	/* where the ring starts now: a read of one byte moves `probe` there */
	if (paddock_exec_read_output(p->session, i + 1, &probe, &c, 1) > 0)
		probe--;
	if (probe > from) {
		p->dropped[i] += probe - from;
		from = probe;
	}
	if (end - from > max) {
		p->dropped[i] += end - from - max;
		from = end - max;
	}
	p->since[i] = end;
	return stream_text(p, i + 1, &from, max);
}

static int embedded_bg_output(struct mcp_backend *base, const char *id, const char *proc,
			      size_t max, json_t **ret, paddock_error *err)
{
	struct mcp_pending *p;
	json_t *out, *text[2];
	int r = find_bg((struct embedded *)base, id, proc, &p, err);

	if (r < 0)
		return r;
	for (int i = 0; i < 2; i++)
		text[i] = bg_text(p, i, max);
	out = json_pack("{s:b, s:o, s:o, s:I, s:I, s:O?, s:O?, s:O?}", "running", p->ex != NULL,
			"stdout", text[0], "stderr", text[1], "stdout_dropped",
			(json_int_t)p->dropped[0], "stderr_dropped", (json_int_t)p->dropped[1],
			"exit_code",
			p->result ? json_object_get(p->result, "exit_code") : json_null(), "reason",
			p->result ? json_object_get(p->result, "reason") : json_null(), "report",
			p->result ? p->result : json_null());
	if (!out)
		return paddock_fail(err, ENOMEM, "read_process_output");
	*ret = out;
	return 0;
}

static int embedded_bg_signal(struct mcp_backend *base, const char *id, const char *proc, int sig,
			      paddock_error *err)
{
	struct mcp_pending *p;
	int r = find_bg((struct embedded *)base, id, proc, &p, err);

	if (r < 0)
		return r;
	if (!p->ex)
		return paddock_fail_field(err, ESRCH, "process_id",
					  "process '%s' has already ended", PADDOCK_ESC(proc));
	return paddock_exec_signal(p->ex, sig, err);
}

/* ---- files ------------------------------------------------------------------------------ */

static int embedded_read_file(struct mcp_backend *base, const char *id, const char *path,
			      uint64_t offset, size_t max, char **ret_data, size_t *ret_len,
			      uint64_t *ret_size, paddock_error *err)
{
	struct box *b;
	uint64_t size;
	size_t len = 0;
	char *data;
	int fd, r;

	r = find_box((struct embedded *)base, id, &b, err);
	if (r < 0)
		return r;
	r = paddock_sandbox_open_read(b->sb, path, offset, &fd, &size, err);
	if (r < 0)
		return r;
	if (size - offset < max)
		max = (size_t)(size - offset);
	data = malloc(max + 1);
	if (!data) {
		close(fd);
		return paddock_fail(err, ENOMEM, "read '%s'", PADDOCK_ESC(path));
	}
	while (len < max) {
		ssize_t n = read(fd, data + len, max - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = paddock_fail_field(err, errno, "path", "read '%s'", PADDOCK_ESC(path));
			close(fd);
			free(data);
			return r;
		}
		if (n == 0)
			break; /* it shrank meanwhile */
		len += (size_t)n;
	}
	close(fd);
	data[len] = '\0';
	*ret_data = data;
	*ret_len = len;
	*ret_size = size;
	return 0;
}

static int embedded_write_file(struct mcp_backend *base, const char *id, const char *path,
			       const void *data, size_t len, unsigned mode, paddock_error *err)
{
	paddock_file_writer *w = NULL;
	struct box *b;
	size_t off = 0;
	int r;

	r = find_box((struct embedded *)base, id, &b, err);
	if (r < 0)
		return r;
	r = paddock_sandbox_open_write(b->sb, path, mode, true, &w, err);
	if (r < 0)
		return r;
	while (off < len) {
		ssize_t n = write(paddock_file_writer_fd(w), (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* ENOSPC, EFBIG: the sandbox's disk and file size limits */
			r = paddock_fail_field(err, errno, "content", "write '%s'",
					       PADDOCK_ESC(path));
			paddock_file_writer_free(w);
			return r;
		}
		off += (size_t)n;
	}
	r = paddock_file_writer_commit(w, err);
	paddock_file_writer_free(w);
	return r;
}

static int embedded_list_dir(struct mcp_backend *base, const char *id, const char *path,
			     unsigned depth, size_t max_entries, json_t **ret_entries,
			     paddock_error *err)
{
	struct paddock_file_info *infos = NULL;
	json_t *list = NULL;
	struct box *b;
	size_t n = 0;
	int r;

	r = find_box((struct embedded *)base, id, &b, err);
	if (r < 0)
		return r;
	r = paddock_sandbox_list_dir(b->sb, path, depth, max_entries, &infos, &n, err);
	if (r < 0)
		return r;
	list = json_array();
	for (size_t i = 0; list && i < n; i++) {
		const struct paddock_file_info *f = &infos[i];
		char mode[8], mtime[40];

		snprintf(mode, sizeof(mode), "%04o", f->mode & 07777);
		/* names are the sandbox's: any bytes; shown as text */
		if (json_array_append_new(
			    list,
			    json_pack("{s:o, s:o, s:s, s:I, s:s, s:s, s:o}", "path",
				      mcp_json_text(f->path, strlen(f->path)), "name",
				      mcp_json_text(f->name, strlen(f->name)), "type",
				      paddock_file_type_to_string(f->type), "size",
				      (json_int_t)f->size, "mode", mode, "mtime",
				      mcp_rfc3339(f->mtime_ns, mtime, sizeof(mtime)),
				      "symlink_target",
				      f->symlink_target ? mcp_json_text(f->symlink_target,
									strlen(f->symlink_target))
							: json_null())) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	paddock_file_infos_free(infos, n);
	if (!list)
		return paddock_fail(err, ENOMEM, "list '%s'", PADDOCK_ESC(path));
	*ret_entries = list;
	return 0;
}

/* ---- sandboxes -------------------------------------------------------------------------- */

static void box_exited(paddock_sandbox *sb, enum paddock_end_reason reason, void *userdata)
{
	struct box *b = userdata;

	(void)sb;
	(void)reason;
	b->ended = true;
}

static int embedded_create(struct mcp_backend *base, const paddock_spec *spec, char **ret_id,
			   paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	/* no reconnect directory: the sandbox dies with this process */
	const struct paddock_sandbox_opts opts = { 0 };
	struct box *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return paddock_fail(err, ENOMEM, "allocate a sandbox");
	r = paddock_sandbox_create_with(e->ctx, spec, &opts, &b->sb, err);
	if (r < 0) {
		free(b);
		return r;
	}
	b->e = e;
	b->id = strdup(paddock_sandbox_id(b->sb));
	*ret_id = strdup(paddock_sandbox_id(b->sb));
	if (!b->id || !*ret_id) {
		free(b->id);
		free(*ret_id);
		paddock_sandbox_free(b->sb);
		free(b);
		return paddock_fail(err, ENOMEM, "allocate a sandbox");
	}
	paddock_sandbox_set_exit_callback(b->sb, box_exited, b);
	b->next = e->boxes;
	e->boxes = b;
	return 0;
}

static void box_free(struct embedded *e, struct box *b)
{
	for (struct box **pp = &e->boxes; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	b->ask_fn = NULL; /* its decisions end with it, unheard */
	/* its commands' callbacks will not come: a waiting call learns the sandbox is gone */
	while (b->cmds) {
		struct mcp_pending *p = b->cmds;
		paddock_error err = { 0 };

		p->ex = NULL;
		if (p->fn && !p->cancelled) {
			paddock_fail_field(&err, ESRCH, "sandbox_id",
					   "the sandbox was destroyed while the command ran");
			p->fn(NULL, &err, p->userdata);
		}
		cmd_free(p);
	}
	paddock_sandbox_free(b->sb);
	free(b->id);
	free(b);
}

static int embedded_destroy(struct mcp_backend *base, const char *id, paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;

	for (struct box *b = e->boxes; b; b = b->next)
		if (!strcmp(b->id, id)) {
			box_free(e, b);
			return 0;
		}
	return paddock_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s'", PADDOCK_ESC(id));
}

static int embedded_set_paused(struct mcp_backend *base, const char *id, bool pause,
			       paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct box *b;
	int r = find_box(e, id, &b, err);

	if (r < 0)
		return r;
	return pause ? paddock_sandbox_pause(b->sb, err) : paddock_sandbox_resume(b->sb, err);
}

static void embedded_free(struct mcp_backend *base)
{
	struct embedded *e = (struct embedded *)base;

	if (!e)
		return;
	while (e->boxes)
		box_free(e, e->boxes);
	paddock_ctx_free(e->ctx);
	free(e);
}

/* ---- the code interpreter ------------------------------------------------------------------ */

#define CODE_HEAD_TIMEOUT_S 120 /* a context's kernel starts before its answer's head */

struct code_req {
	char *method, *path, *body;
	size_t len;
	mcp_code_fn fn;
	void *userdata;
};

/* The sandbox made the socket: connect it to the interpreter, send, read the head. */
static void code_socket(paddock_sandbox *sb, int fd, const paddock_error *why, void *userdata)
{
	struct code_req *q = userdata;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(PADDOCK_CODE_PORT) };
	struct timeval tv = { .tv_sec = CODE_HEAD_TIMEOUT_S };
	struct http_request req = { .method = q->method,
				    .target = q->path,
				    .content_type = "application/json",
				    .body = q->body,
				    .body_len = q->len,
				    .body_fd = -1 };
	struct http_response resp;
	struct http_conn *c = NULL;
	paddock_error err = { 0 };

	(void)sb;
	if (fd < 0) {
		q->fn(NULL, NULL, why, q->userdata);
		goto out;
	}
	/* in the sandbox's network namespace: only its own loopback is there to reach */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		paddock_fail_field(&err, errno, "code", "connect to the code interpreter");
		close(fd);
		q->fn(NULL, NULL, &err, q->userdata);
		goto out;
	}
	if (http_conn_new_fd(fd, &c, &err) < 0 || http_send_request(c, &req, &err) < 0 ||
	    http_read_response(c, &resp, &err) < 0) {
		http_conn_free(c);
		paddock_error_prefix(&err, "the code interpreter");
		q->fn(NULL, NULL, &err, q->userdata);
		goto out;
	}
	q->fn(c, &resp, NULL, q->userdata);
out:
	free(q->method);
	free(q->path);
	free(q->body);
	free(q);
}

static int embedded_code_request(struct mcp_backend *base, const char *id, const char *method,
				 const char *path, const char *body, size_t len, mcp_code_fn fn,
				 void *userdata, paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct code_req *q;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	q = calloc(1, sizeof(*q));
	if (!q || !(q->method = strdup(method)) || !(q->path = strdup(path)) ||
	    !(q->body = malloc(len + 1))) {
		if (q) {
			free(q->method);
			free(q->path);
		}
		free(q);
		return paddock_fail(err, ENOMEM, "code request");
	}
	memcpy(q->body, body, len);
	q->len = len;
	q->fn = fn;
	q->userdata = userdata;
	r = paddock_code_socket_async(b->sb, code_socket, q, err);
	if (r < 0) {
		free(q->method);
		free(q->path);
		free(q->body);
		free(q);
	}
	return r;
}

/* ---- asking a person --------------------------------------------------------------------- */

static void on_ask(paddock_sandbox *sb, const struct paddock_ask *a, void *userdata)
{
	struct embedded *e = userdata;

	for (struct box *b = e->boxes; b; b = b->next)
		if (b->sb == sb && b->ask_fn) {
			struct mcp_ask m = {
				.sandbox = b->id,
				.id = a->id,
				.host = a->host,
				.port = a->port,
				.rule = a->rule,
				.expires_ms = a->expires_ms,
				.decided = a->decided,
				.answer =
					a->decided ? paddock_ask_answer_to_string(a->answer) : NULL,
				.by = a->decided ? a->by : NULL,
			};

			b->ask_fn(&m, b->ask_ud);
			return;
		}
}

static int embedded_watch_asks(struct mcp_backend *base, const char *id, mcp_ask_fn fn,
			       void *userdata, paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	b->ask_fn = fn;
	b->ask_ud = userdata;
	/* none is pending yet (a sandbox is watched as it is made), or the loop tells it */
	return 0;
}

static int embedded_answer(struct mcp_backend *base, const char *id, uint64_t ask,
			   enum paddock_ask_answer answer, const char *who, paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	return paddock_sandbox_answer(b->sb, ask, answer, "mcp", who, err);
}

static const struct mcp_backend_ops embedded_ops = {
	.name = "embedded",
	.create = embedded_create,
	.destroy = embedded_destroy,
	.set_paused = embedded_set_paused,
	.exec = embedded_exec,
	.cancel = embedded_cancel,
	.read_file = embedded_read_file,
	.write_file = embedded_write_file,
	.list_dir = embedded_list_dir,
	.bg_start = embedded_bg_start,
	.bg_output = embedded_bg_output,
	.bg_signal = embedded_bg_signal,
	.code_request = embedded_code_request,
	.watch_asks = embedded_watch_asks,
	.answer = embedded_answer,
	.free = embedded_free,
};

static void log_event(const struct paddock_event *ev, void *userdata)
{
	FILE *f = userdata;

	/* the record of every decision (egress, limits) for the operator: stderr or a file */
	fprintf(f, "%s\n", ev->json);
	fflush(f);
}

int mcp_backend_embedded_new(struct event_base *base, const char *resolve_hosts,
			     const char *upstream_ca, struct mcp_backend **ret, paddock_error *err)
{
	struct embedded *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return paddock_fail(err, ENOMEM, "allocate the embedded backend");
	e->base.ops = &embedded_ops;
	e->evbase = base;
	r = paddock_ctx_new(base, &e->ctx, err);
	if (r >= 0)
		paddock_ctx_set_ask_handler(e->ctx, on_ask, e);
	if (r >= 0 && resolve_hosts)
		r = paddock_ctx_set_resolve_hosts(e->ctx, resolve_hosts, err);
	if (r >= 0 && upstream_ca)
		r = paddock_ctx_add_upstream_ca(e->ctx, upstream_ca, err);
	if (r < 0) {
		paddock_ctx_free(e->ctx);
		free(e);
		return r;
	}
	*ret = &e->base;
	return 0;
}

void mcp_backend_embedded_set_events(struct mcp_backend *b, FILE *f)
{
	struct embedded *e = (struct embedded *)b;

	paddock_ctx_set_event_sink(e->ctx, f ? log_event : NULL, f);
}
