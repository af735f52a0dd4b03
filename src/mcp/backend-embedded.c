/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded backend: the service core (src/service) in this process, as paddockd runs it
 * but kept in memory (d->in_process): the same lifecycle, process table, exec sessions,
 * events and pause the --connect backend reaches over paddockd's HTTP API, without a socket
 * or a state directory. Its sandboxes have no reconnect socket, so each one's init dies with
 * this process, even on SIGKILL: nothing outlives the session. Output is hostile bytes: it is
 * bounded as it is read and turned into text only on the way out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
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
#include "service.h"

/*
 * A background process of ours: a listener of the core's process while it runs, then its
 * session (referenced) and report, so its output stays readable however many commands end
 * after it (the core lists only the newest 64 ended), until its sandbox goes.
 */
struct bgproc {
	struct svc_proc_listener l;
	char tag[16];
	struct proc *p;	       /* NULL once ended */
	paddock_exec *session; /* its output (libpaddock's ring) */
	json_t *result;	       /* the report once ended */
	uint64_t since[2];     /* where the last bg_output() stopped */
	uint64_t dropped[2];   /* bytes never shown (the ring, or past `max`) */
	struct bgproc *next;
};

/* What this backend holds of one of the core's sandboxes. */
struct mbox {
	char id[32];
	mcp_ask_fn ask_fn; /* watch_asks() */
	void *ask_ud;
	unsigned long next_proc;
	struct bgproc *procs;
	struct mbox *next;
};

/* A foreground command a tool call waits for: a listener of the core's process. */
struct mcp_pending {
	struct svc_proc_listener l;
	struct proc *p;
	size_t cap; /* bytes of each stream shown in the tool's answer */
	mcp_exec_done_fn fn;
	void *userdata;
};

struct embedded {
	struct mcp_backend base;
	struct daemon d; /* the core, in_process */
	struct mbox *boxes;
};

static struct embedded *of_core(struct daemon *d)
{
	return (struct embedded *)((char *)d - offsetof(struct embedded, d));
}

static struct mbox *mbox_find(struct embedded *e, const char *id)
{
	for (struct mbox *m = e->boxes; m; m = m->next)
		if (!strcmp(m->id, id))
			return m;
	return NULL;
}

/* The core's sandbox `id`: -ENOENT unknown, -ESRCH ended (unless `ended_ok`). */
static int find_any(struct embedded *e, const char *id, bool ended_ok, struct box **ret,
		    paddock_error *err)
{
	struct box *b = svc_box_find(&e->d, SVC_LOCAL_TENANT, id);

	if (!b || !mbox_find(e, id))
		return paddock_fail_field(err, ENOENT, "sandbox_id", "no sandbox '%s'",
					  PADDOCK_ESC(id));
	if (!ended_ok && (!b->sb || !paddock_sandbox_running(b->sb)))
		return paddock_fail_field(err, ESRCH, "sandbox_id",
					  "the sandbox '%s' has ended (a limit or a "
					  "crash killed it); destroy it and make another",
					  PADDOCK_ESC(id));
	*ret = b;
	return 0;
}

static int find_box(struct embedded *e, const char *id, struct box **ret, paddock_error *err)
{
	return find_any(e, id, false, ret, err);
}

/* ---- commands --------------------------------------------------------------------------- */

/* The kept bytes of `stream` from *from to its end, at most `max` (the first ones) as text. */
static json_t *stream_text(paddock_exec *session, int stream, uint64_t *from, size_t max)
{
	uint64_t end = session ? paddock_exec_output_end(session, stream) : 0;
	size_t want = end > *from ? (end - *from < max ? (size_t)(end - *from) : max) : 0;
	char *buf = malloc(want + 1);
	size_t n = 0;
	json_t *text;

	if (!buf)
		return NULL;
	while (n < want) {
		size_t k = paddock_exec_read_output(session, stream, from, buf + n, want - n);

		if (k == 0)
			break;
		n += k;
	}
	text = mcp_json_text(buf, n);
	free(buf);
	return text;
}

/* run_command's answer (backend.h) from the core's ended process */
static json_t *fg_result(struct proc *p, size_t cap)
{
	paddock_exec *s = p->session;
	uint64_t from[2] = { 0, 0 }, kept[2], read[2];

	for (int i = 0; i < 2; i++) {
		kept[i] = s ? paddock_exec_output_end(s, i + 1) : 0;
		read[i] = s ? paddock_exec_output_read(s, i + 1) : 0;
	}
	return json_pack("{s:O?, s:O?, s:O?, s:o, s:o, s:b, s:b, s:I, s:I, s:O?}", "exit_code",
			 json_object_get(p->result, "exit_code"), "reason",
			 json_object_get(p->result, "reason"), "signal",
			 json_object_get(p->result, "signal"), "stdout",
			 stream_text(s, 1, &from[0], cap), "stderr",
			 stream_text(s, 2, &from[1], cap), "stdout_truncated",
			 kept[0] > cap || read[0] > kept[0], "stderr_truncated",
			 kept[1] > cap || read[1] > kept[1], "stdout_bytes", (json_int_t)read[0],
			 "stderr_bytes", (json_int_t)read[1], "report", p->result);
}

/* the core says the command ended (or its sandbox went): the tool call gets its answer */
static void fg_ended(struct svc_proc_listener *l, struct proc *p, bool gone)
{
	struct mcp_pending *m = (struct mcp_pending *)l;
	paddock_error err = { 0 };
	json_t *out = NULL;

	if (gone)
		paddock_fail_field(&err, ESRCH, "sandbox_id",
				   "the sandbox was destroyed while the command ran");
	else if (!(out = fg_result(p, m->cap)))
		paddock_fail(&err, ENOMEM, "the command's result");
	m->fn(out, &err, m->userdata);
	free(m);
}

static const struct svc_proc_listener_ops fg_ops = { .ended = fg_ended };

/* What the tool asked, as the core's request (its strings borrowed). */
static struct svc_exec_req core_req(const struct mcp_exec_req *req)
{
	return (struct svc_exec_req){
		.argv = req->argv,
		.env = req->env,
		.cwd = req->cwd,
		/* an empty stdin still gets a pipe, closed at once: EOF, as asked */
		.stdin_data = req->stdin_data,
		.stdin_len = req->stdin_len,
		.has_stdin = req->stdin_data != NULL,
		/* the tool's timeout_s, or none (tools.c applies the default and ceiling) */
		.timeout_s = req->timeout_s > 0 ? req->timeout_s : 0,
	};
}

/*
 * The core starts it with libpaddock's session: the output whole up to limits.output (past
 * it: reason "output"), the timeout, stdin then EOF; the answer comes from fg_ended().
 */
static int embedded_exec(struct mcp_backend *base, const char *id, const struct mcp_exec_req *req,
			 mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
			 paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct svc_exec_req q = core_req(req);
	struct mcp_pending *m;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m)
		return paddock_fail(err, ENOMEM, "allocate a command");
	r = svc_exec_start(b, &q, &m->p, err);
	if (r < 0) {
		free(m);
		return r;
	}
	m->l.ops = &fg_ops;
	m->cap = req->output_max;
	m->fn = fn;
	m->userdata = userdata;
	svc_proc_listen(m->p, &m->l);
	*ret_pending = m;
	return 0;
}

/* The call was cancelled: the command is killed, and nobody is told of its end. */
static void embedded_cancel(struct mcp_backend *base, struct mcp_pending *m)
{
	(void)base;
	if (!m)
		return;
	svc_proc_unlisten(m->p, &m->l);
	svc_proc_kill(m->p);
	free(m);
}

/* ---- background ------------------------------------------------------------------------- */

static void bg_ended(struct svc_proc_listener *l, struct proc *p, bool gone)
{
	struct bgproc *bp = (struct bgproc *)l;

	bp->p = NULL;
	bp->result = gone ? NULL : json_incref(p->result);
}

static const struct svc_proc_listener_ops bg_ops = { .ended = bg_ended };

static void bgproc_free(struct bgproc *bp)
{
	if (bp->p)
		svc_proc_unlisten(bp->p, &bp->l);
	paddock_exec_unref(bp->session);
	json_decref(bp->result);
	free(bp);
}

static int embedded_bg_start(struct mcp_backend *base, const char *id,
			     const struct mcp_exec_req *req, char **ret_proc, int *ret_pid,
			     paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct svc_exec_req q = core_req(req);
	struct bgproc *bp = calloc(1, sizeof(*bp));
	struct mbox *m = mbox_find(e, id);
	struct box *b;
	int r;

	if (!bp)
		return paddock_fail(err, ENOMEM, "start_process");
	r = find_box(e, id, &b, err);
	if (r >= 0) {
		snprintf(bp->tag, sizeof(bp->tag), "p%lu", ++m->next_proc);
		*ret_proc = strdup(bp->tag);
		if (!*ret_proc)
			r = paddock_fail(err, ENOMEM, "start_process");
	}
	q.background = true;
	q.tag = bp->tag;
	q.sync_start = true; /* the answer is its pid */
	if (r >= 0 && (r = svc_exec_start(b, &q, &bp->p, err)) < 0)
		free(*ret_proc);
	if (r < 0) {
		free(bp);
		return r;
	}
	bp->l.ops = &bg_ops;
	bp->session = paddock_exec_ref(bp->p->session);
	*ret_pid = bp->p->pid;
	svc_proc_listen(bp->p, &bp->l);
	bp->next = m->procs;
	m->procs = bp;
	return 0;
}

static int find_bg(struct embedded *e, const char *id, const char *tag, struct bgproc **ret,
		   paddock_error *err)
{
	struct box *b;
	int r = find_box(e, id, &b, err);

	if (r < 0)
		return r;
	for (struct bgproc *bp = mbox_find(e, id)->procs; bp; bp = bp->next)
		if (!strcmp(bp->tag, tag)) {
			*ret = bp;
			return 0;
		}
	return paddock_fail_field(err, ENOENT, "process_id", "no process '%s'", PADDOCK_ESC(tag));
}

/*
 * What came since the last call, at most the newest `max` bytes of each stream; what the
 * ring dropped meanwhile, or what is older than those `max`, counts as dropped.
 */
static json_t *bg_text(struct bgproc *bp, int i, size_t max)
{
	uint64_t end = paddock_exec_output_end(bp->session, i + 1);
	uint64_t from = bp->since[i], probe = from;
	char c;

	/* where the ring starts now: a read of one byte moves `probe` there */
	if (paddock_exec_read_output(bp->session, i + 1, &probe, &c, 1) > 0)
		probe--;
	if (probe > from) {
		bp->dropped[i] += probe - from;
		from = probe;
	}
	if (end - from > max) {
		bp->dropped[i] += end - from - max;
		from = end - max;
	}
	bp->since[i] = end;
	return stream_text(bp->session, i + 1, &from, max);
}

static int embedded_bg_output(struct mcp_backend *base, const char *id, const char *proc,
			      size_t max, json_t **ret, paddock_error *err)
{
	struct bgproc *bp;
	json_t *out, *text[2];
	int r = find_bg((struct embedded *)base, id, proc, &bp, err);

	if (r < 0)
		return r;
	for (int i = 0; i < 2; i++)
		text[i] = bg_text(bp, i, max);
	out = json_pack("{s:b, s:o, s:o, s:I, s:I, s:O?, s:O?, s:O?}", "running", bp->p != NULL,
			"stdout", text[0], "stderr", text[1], "stdout_dropped",
			(json_int_t)bp->dropped[0], "stderr_dropped", (json_int_t)bp->dropped[1],
			"exit_code", json_object_get(bp->result, "exit_code"), "reason",
			json_object_get(bp->result, "reason"), "report", bp->result);
	if (!out)
		return paddock_fail(err, ENOMEM, "read_process_output");
	*ret = out;
	return 0;
}

static int embedded_bg_signal(struct mcp_backend *base, const char *id, const char *proc, int sig,
			      paddock_error *err)
{
	struct bgproc *bp;
	int r = find_bg((struct embedded *)base, id, proc, &bp, err);

	if (r < 0)
		return r;
	if (!bp->p || !bp->p->ex)
		return paddock_fail_field(err, ESRCH, "process_id",
					  "process '%s' has already ended", PADDOCK_ESC(proc));
	return paddock_exec_signal(bp->p->ex, sig, err);
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

static int embedded_create(struct mcp_backend *base, const paddock_spec *spec, char **ret_id,
			   paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	_cleanup_free_ struct mbox *m = calloc(1, sizeof(*m));
	_cleanup_free_ char *sj = NULL;
	_cleanup_json_ json_t *body = NULL;
	struct box *b;
	int r;

	if (!m)
		return paddock_fail(err, ENOMEM, "allocate a sandbox");
	/* the core takes a create body, as paddockd's API does: the spec's own JSON */
	r = paddock_spec_to_json(spec, &sj, err);
	if (r >= 0 && !(body = json_loads(sj, 0, NULL)))
		r = paddock_fail(err, ENOMEM, "allocate a sandbox");
	if (r >= 0)
		r = svc_box_create(&e->d, SVC_LOCAL_TENANT, body, &b, err);
	if (r < 0)
		return r;
	*ret_id = strdup(b->id);
	if (!*ret_id) {
		svc_box_destroy(b, "deleted", NULL);
		return paddock_fail(err, ENOMEM, "allocate a sandbox");
	}
	snprintf(m->id, sizeof(m->id), "%s", b->id);
	m->next = e->boxes;
	e->boxes = TAKE_PTR(m);
	return 0;
}

static void mbox_free(struct embedded *e, struct mbox *m)
{
	for (struct mbox **pp = &e->boxes; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	while (m->procs) {
		struct bgproc *bp = m->procs;

		m->procs = bp->next;
		bgproc_free(bp);
	}
	free(m);
}

/* the core's hook: b goes (its processes' listeners were told): what we hold of it goes */
static void hook_release(struct box *b)
{
	struct embedded *e = of_core(b->d);
	struct mbox *m = mbox_find(e, b->id);

	if (m)
		mbox_free(e, m); /* its decisions end with it, unheard */
}

/* Ends it (SIGKILL, then the kernel's teardown, waited for here: d->in_process). */
static int embedded_destroy(struct mcp_backend *base, const char *id, paddock_error *err)
{
	struct box *b;
	int r = find_any((struct embedded *)base, id, true, &b, err);

	if (r < 0)
		return r;
	svc_box_destroy(b, "deleted", NULL);
	return 0;
}

static int embedded_set_paused(struct mcp_backend *base, const char *id, bool pause,
			       paddock_error *err)
{
	struct box *b;
	int r = find_box((struct embedded *)base, id, &b, err);

	if (r < 0)
		return r;
	return pause ? svc_box_pause(b, err) : svc_box_resume(b, err);
}

static void embedded_free(struct mcp_backend *base)
{
	struct embedded *e = (struct embedded *)base;

	if (!e)
		return;
	if (e->d.store) {
		e->d.stopping = true; /* each sandbox is ended and waited for now */
		svc_lifecycle_stop(&e->d);
	}
	svc_close(&e->d);
	paddock_ctx_free(e->d.ctx);
	while (e->boxes)
		mbox_free(e, e->boxes);
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

/* the core's hook (it kept an allow_always rule already): to the tool that follows b */
static void hook_ask(struct box *b, const struct paddock_ask *a)
{
	struct mbox *m = mbox_find(of_core(b->d), b->id);

	if (m && m->ask_fn) {
		struct mcp_ask ask = {
			.sandbox = m->id,
			.id = a->id,
			.host = a->host,
			.port = a->port,
			.rule = a->rule,
			.expires_ms = a->expires_ms,
			.decided = a->decided,
			.answer = a->decided ? paddock_ask_answer_to_string(a->answer) : NULL,
			.by = a->decided ? a->by : NULL,
		};

		m->ask_fn(&ask, m->ask_ud);
	}
}

static int embedded_watch_asks(struct mcp_backend *base, const char *id, mcp_ask_fn fn,
			       void *userdata, paddock_error *err)
{
	struct embedded *e = (struct embedded *)base;
	struct mbox *m;
	struct box *b;
	int r;

	r = find_box(e, id, &b, err);
	if (r < 0)
		return r;
	m = mbox_find(e, id);
	m->ask_fn = fn;
	m->ask_ud = userdata;
	/* none is pending yet (a sandbox is watched as it is made), or the loop tells it */
	return 0;
}

static int embedded_answer(struct mcp_backend *base, const char *id, uint64_t ask,
			   enum paddock_ask_answer answer, const char *who, paddock_error *err)
{
	struct box *b;
	int r;

	r = find_box((struct embedded *)base, id, &b, err);
	if (r < 0)
		return r;
	return paddock_sandbox_answer(b->sb, ask, answer, "mcp", who, err);
}

static const struct svc_hooks embedded_hooks = { .release_clients = hook_release,
						 .box_asked = hook_ask };

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

int mcp_backend_embedded_new(struct event_base *base, const char *resolve_hosts,
			     const char *upstream_ca, struct mcp_backend **ret, paddock_error *err)
{
	struct embedded *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return paddock_fail(err, ENOMEM, "allocate the embedded backend");
	e->base.ops = &embedded_ops;
	/* the core as paddockd's, in memory; the operator's policy is tools.c's (policy.c) */
	e->d = (struct daemon){ .base = base,
				.in_process = true,
				.destroy_on_exit = true,
				.max_net = 2,
				.max_templates = SVC_MAX_TEMPLATES,
				.max_sandboxes = SVC_MAX_SANDBOXES,
				.event_log_fd = -1,
				.state_fd = -1,
				.hooks = &embedded_hooks };
	r = paddock_ctx_new(base, &e->d.ctx, err);
	if (r >= 0 && resolve_hosts)
		r = paddock_ctx_set_resolve_hosts(e->d.ctx, resolve_hosts, err);
	if (r >= 0 && upstream_ca)
		r = paddock_ctx_add_upstream_ca(e->d.ctx, upstream_ca, err);
	if (r >= 0)
		r = svc_open(&e->d, err);
	if (r < 0) {
		embedded_free(&e->base);
		return r;
	}
	*ret = &e->base;
	return 0;
}

/* The core's event log is the operator's file: every event, one line each, never rotated. */
int mcp_backend_embedded_set_events(struct mcp_backend *b, FILE *f)
{
	struct embedded *e = (struct embedded *)b;
	int fd = f ? fcntl(fileno(f), F_DUPFD_CLOEXEC, 3) : -1;

	/* the operator asked for the record: no file to write it to is an error, not silence */
	if (f && fd < 0)
		return -errno;
	if (e->d.event_log_fd >= 0)
		close(e->d.event_log_fd);
	e->d.event_log_fd = fd;
	e->d.event_log_max = 0;
	return 0;
}
