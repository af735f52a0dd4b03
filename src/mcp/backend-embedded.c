/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded backend: sandboxes made by libpaddock in this process, served from its event
 * loop. They have no reconnect directory, so each one's init dies with this process, even
 * on SIGKILL: nothing outlives the session. Output is hostile bytes: it is bounded as it
 * is read and turned into text only on the way out.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "backend.h"
#include "error.h"

#define RING_BYTES (1u << 20) /* kept of each stream of a background process */
#define READ_CHUNK 65536

struct box;

/* One stream of a command's output: its pipe and what was kept of it. */
struct stream {
	int fd;
	struct event *ev;
	struct evbuffer *buf;
	uint64_t total;	  /* bytes the command wrote */
	uint64_t dropped; /* bytes not kept (foreground: past the cap; background: the ring) */
};

/* A command: foreground (a tool call waits for it) or background (followed later). */
struct mcp_pending {
	struct box *box;
	paddock_exec *ex; /* NULL once it ended */
	bool background, cancelled;
	char id[24];
	int pid;
	size_t cap; /* foreground: bytes kept of each stream */
	struct stream out[2];
	/* stdin (foreground): what is left to write */
	int stdin_fd;
	struct event *stdin_ev;
	char *stdin_data;
	size_t stdin_len, stdin_off;
	json_t *result; /* the report once it ended */
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
				return pd_fail_field(err, ESRCH, "sandbox_id",
						     "the sandbox '%s' has ended (a limit or a "
						     "crash killed it); destroy it and make another",
						     PD_ESC(id));
			*ret = b;
			return 0;
		}
	return pd_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s'", PD_ESC(id));
}

/* ---- commands --------------------------------------------------------------------------- */

static void stream_close(struct stream *s)
{
	if (s->ev)
		event_free(s->ev);
	if (s->fd >= 0)
		close(s->fd);
	s->ev = NULL;
	s->fd = -1;
}

static void stdin_close(struct mcp_pending *p)
{
	if (p->stdin_ev)
		event_free(p->stdin_ev);
	if (p->stdin_fd >= 0)
		close(p->stdin_fd);
	p->stdin_ev = NULL;
	p->stdin_fd = -1;
	free(p->stdin_data);
	p->stdin_data = NULL;
}

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
	for (int i = 0; i < 2; i++) {
		stream_close(&p->out[i]);
		if (p->out[i].buf)
			evbuffer_free(p->out[i].buf);
	}
	stdin_close(p);
	json_decref(p->result);
	free(p);
}

/* Keeps what the bounds allow of `n` new bytes. */
static void keep(struct mcp_pending *p, struct stream *s, const char *data, size_t n)
{
	s->total += n;
	if (p->background) {
		size_t have;

		evbuffer_add(s->buf, data, n);
		have = evbuffer_get_length(s->buf);
		if (have > RING_BYTES) {
			evbuffer_drain(s->buf, have - RING_BYTES);
			s->dropped += have - RING_BYTES;
		}
		return;
	}
	size_t room = p->cap - evbuffer_get_length(s->buf);

	evbuffer_add(s->buf, data, n < room ? n : room);
	if (n > room)
		s->dropped += n - room;
}

/* Reads what is there now; EOF or an error closes the stream. */
static void drain(struct mcp_pending *p, struct stream *s)
{
	char buf[READ_CHUNK];

	for (int rounds = 0; s->fd >= 0 && rounds < 16; rounds++) {
		ssize_t n = read(s->fd, buf, sizeof(buf));

		if (n > 0) {
			keep(p, s, buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		stream_close(s);
	}
}

static void out_cb(evutil_socket_t fd, short what, void *data)
{
	struct mcp_pending *p = data;

	(void)what;
	drain(p, p->out[0].fd == fd ? &p->out[0] : &p->out[1]);
}

static void stdin_cb(evutil_socket_t fd, short what, void *data)
{
	struct mcp_pending *p = data;

	(void)what;
	while (p->stdin_off < p->stdin_len) {
		ssize_t n = write(fd, p->stdin_data + p->stdin_off, p->stdin_len - p->stdin_off);

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break; /* EPIPE: the command does not read it all; that is its business */
		p->stdin_off += (size_t)n;
	}
	stdin_close(p); /* EOF */
	(void)paddock_exec_close_stdin(p->ex, NULL);
}

static int watch(struct mcp_pending *p, struct stream *s, int fd)
{
	s->fd = fd;
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	s->ev = event_new(p->box->e->evbase, fd, EV_READ | EV_PERSIST, out_cb, p);
	if (!s->ev || event_add(s->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static void started(paddock_exec *ex, void *userdata)
{
	struct mcp_pending *p = userdata;

	p->pid = paddock_exec_pid(ex);
	for (int i = 0; i < 2; i++)
		if (watch(p, &p->out[i], paddock_exec_take_fd(ex, i + 1)) < 0)
			goto fail;
	if (!p->stdin_data)
		return;
	p->stdin_fd = paddock_exec_take_fd(ex, 0);
	if (p->stdin_fd < 0 || fcntl(p->stdin_fd, F_SETFL, fcntl(p->stdin_fd, F_GETFL) | O_NONBLOCK) < 0)
		goto fail;
	p->stdin_ev = event_new(p->box->e->evbase, p->stdin_fd, EV_WRITE | EV_PERSIST, stdin_cb, p);
	if (!p->stdin_ev || event_add(p->stdin_ev, NULL) < 0)
		goto fail;
	return;
fail:
	(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
}

static json_t *stream_text(struct stream *s, size_t max)
{
	size_t have = evbuffer_get_length(s->buf);
	json_t *text;

	if (have > max) { /* only the newest `max` bytes */
		evbuffer_drain(s->buf, have - max);
		s->dropped += have - max;
		have = max;
	}
	text = mcp_json_text((const char *)evbuffer_pullup(s->buf, -1), have);
	evbuffer_drain(s->buf, have);
	return text;
}

static void exited(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct mcp_pending *p = userdata;
	paddock_error err = { 0 };
	char *report = NULL;
	json_t *out;

	(void)ex;
	p->ex = NULL;
	/* the command is gone: what it wrote is in the pipes; a child still holding them is
	 * not waited for */
	for (int i = 0; i < 2; i++) {
		drain(p, &p->out[i]);
		stream_close(&p->out[i]);
	}
	stdin_close(p);
	if (paddock_result_to_json(res, &report, &err) >= 0)
		p->result = json_loads(report, 0, NULL);
	free(report);
	if (p->result && (p->out[0].dropped || p->out[1].dropped) && !p->background)
		json_object_set_new(p->result, "output_truncated", json_true());
	if (p->background)
		return; /* kept for bg_output() */
	if (p->cancelled || !p->fn) {
		cmd_free(p);
		return;
	}
	out = json_pack("{s:O?, s:s, s:O?, s:o, s:o, s:b, s:b, s:I, s:I, s:O?}", "exit_code",
			json_object_get(p->result, "exit_code"), "reason",
			paddock_end_reason_to_string(res->reason), "signal",
			json_object_get(p->result, "signal"), "stdout",
			stream_text(&p->out[0], p->cap), "stderr", stream_text(&p->out[1], p->cap),
			"stdout_truncated", p->out[0].dropped > 0, "stderr_truncated",
			p->out[1].dropped > 0, "stdout_bytes", (json_int_t)p->out[0].total,
			"stderr_bytes", (json_int_t)p->out[1].total, "report", p->result);
	if (!out)
		pd_fail(&err, ENOMEM, "the command's result");
	p->fn(out, &err, p->userdata);
	cmd_free(p);
}

static int cmd_new(struct box *b, const struct mcp_exec_req *req, bool background,
		   struct mcp_pending **ret, paddock_error *err)
{
	struct mcp_pending *p = calloc(1, sizeof(*p));

	if (!p)
		return pd_fail(err, ENOMEM, "allocate a command");
	p->box = b;
	p->background = background;
	p->cap = req->output_max;
	p->stdin_fd = -1;
	for (int i = 0; i < 2; i++) {
		p->out[i].fd = -1;
		p->out[i].buf = evbuffer_new();
		if (!p->out[i].buf) {
			cmd_free(p);
			return pd_fail(err, ENOMEM, "allocate a command");
		}
	}
	p->next = b->cmds;
	b->cmds = p;
	*ret = p;
	return 0;
}

static int start(struct box *b, struct mcp_pending *p, const struct mcp_exec_req *req,
		 paddock_error *err)
{
	struct paddock_exec_opts opts = {
		.argv = req->argv,
		.env = req->env,
		.cwd = req->cwd,
		.fds = { -1, -1, -1 },
		.pipe_streams = (1u << 1) | (1u << 2) | (p->stdin_data ? 1u : 0),
		.timeout_s = req->timeout_s,
		/* foreground: started() takes the pipes; background: taken below */
		.on_started = p->background ? NULL : started,
	};

	return paddock_exec_start(b->sb, &opts, exited, p, &p->ex, err);
}

static int embedded_exec(struct mcp_backend *base, const char *id, const struct mcp_exec_req *req,
			 mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
			 paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct mcp_pending *p;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	r = cmd_new(b, req, false, &p, err);
	if (r < 0)
		return r;
	if (req->stdin_data) {
		/* an empty stdin still gets a pipe, closed at once: EOF, as asked */
		p->stdin_data = malloc(req->stdin_len + 1);
		if (!p->stdin_data) {
			cmd_free(p);
			return pd_fail(err, ENOMEM, "stdin");
		}
		memcpy(p->stdin_data, req->stdin_data, req->stdin_len);
		p->stdin_len = req->stdin_len;
	}
	p->fn = fn;
	p->userdata = userdata;
	r = start(b, p, req, err);
	if (r < 0) {
		cmd_free(p);
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
	struct mcp_pending *p;
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
	r = proc ? start(b, p, req, err) : pd_fail(err, ENOMEM, "start_process");
	if (r < 0) {
		free(proc);
		cmd_free(p);
		return r;
	}
	/* a synchronous start: it runs (or already ended, then p->ex is NULL) */
	if (p->ex) {
		p->pid = paddock_exec_pid(p->ex);
		for (int i = 0; i < 2; i++)
			if (watch(p, &p->out[i], paddock_exec_take_fd(p->ex, i + 1)) < 0) {
				(void)paddock_exec_terminate(p->ex, PADDOCK_END_ERROR, NULL);
				break;
			}
	}
	*ret_proc = proc;
	*ret_pid = p->pid;
	return 0;
}

static int find_bg(struct embedded *e, const char *id, const char *proc,
		   struct mcp_pending **ret, paddock_error *err)
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
	return pd_fail_field(err, ENOENT, "process_id", "no process '%s'", PD_ESC(proc));
}

static int embedded_bg_output(struct mcp_backend *base, const char *id, const char *proc,
			      size_t max, json_t **ret, paddock_error *err)
{
	struct mcp_pending *p;
	json_t *out;
	int r = find_bg((struct embedded *)base, id, proc, &p, err);

	if (r < 0)
		return r;
	/* what the pipes hold now counts too: the reader may not have run since */
	for (int i = 0; i < 2; i++)
		drain(p, &p->out[i]);
	out = json_pack("{s:b, s:o, s:o, s:I, s:I, s:O?, s:O?, s:O?}", "running", p->ex != NULL,
			"stdout", stream_text(&p->out[0], max), "stderr",
			stream_text(&p->out[1], max), "stdout_dropped",
			(json_int_t)p->out[0].dropped, "stderr_dropped",
			(json_int_t)p->out[1].dropped, "exit_code",
			p->result ? json_object_get(p->result, "exit_code") : json_null(), "reason",
			p->result ? json_object_get(p->result, "reason") : json_null(), "report",
			p->result ? p->result : json_null());
	if (!out)
		return pd_fail(err, ENOMEM, "read_process_output");
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
		return pd_fail_field(err, ESRCH, "process_id", "process '%s' has already ended",
				     PD_ESC(proc));
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
		return pd_fail(err, ENOMEM, "read '%s'", PD_ESC(path));
	}
	while (len < max) {
		ssize_t n = read(fd, data + len, max - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = pd_fail_field(err, errno, "path", "read '%s'", PD_ESC(path));
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
			r = pd_fail_field(err, errno, "content", "write '%s'", PD_ESC(path));
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
		if (json_array_append_new(list, json_pack(
			    "{s:o, s:o, s:s, s:I, s:s, s:s, s:o}", "path",
			    mcp_json_text(f->path, strlen(f->path)), "name",
			    mcp_json_text(f->name, strlen(f->name)), "type",
			    paddock_file_type_to_string(f->type), "size", (json_int_t)f->size,
			    "mode", mode, "mtime", mcp_rfc3339(f->mtime_ns, mtime, sizeof(mtime)),
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
		return pd_fail(err, ENOMEM, "list '%s'", PD_ESC(path));
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
	const struct paddock_sandbox_opts opts = { .no_timeout = true };
	struct box *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return pd_fail(err, ENOMEM, "allocate a sandbox");
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
		return pd_fail(err, ENOMEM, "allocate a sandbox");
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
	/* its commands' callbacks will not come: a waiting call learns the sandbox is gone */
	while (b->cmds) {
		struct mcp_pending *p = b->cmds;
		paddock_error err = { 0 };

		p->ex = NULL;
		if (p->fn && !p->cancelled) {
			pd_fail_field(&err, ESRCH, "sandbox_id",
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
	return pd_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s'", PD_ESC(id));
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

static const struct mcp_backend_ops embedded_ops = {
	.name = "embedded",
	.create = embedded_create,
	.destroy = embedded_destroy,
	.exec = embedded_exec,
	.cancel = embedded_cancel,
	.read_file = embedded_read_file,
	.write_file = embedded_write_file,
	.list_dir = embedded_list_dir,
	.bg_start = embedded_bg_start,
	.bg_output = embedded_bg_output,
	.bg_signal = embedded_bg_signal,
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
			     const char *upstream_ca, struct mcp_backend **ret,
			     paddock_error *err)
{
	struct embedded *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return pd_fail(err, ENOMEM, "allocate the embedded backend");
	e->base.ops = &embedded_ops;
	e->evbase = base;
	r = paddock_ctx_new(base, &e->ctx, err);
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
