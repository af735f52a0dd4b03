/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process table of a sandbox (service.h, "processes"): the commands started in it by a
 * typed request (struct svc_exec_req) from any adapter — paddockd's HTTP/JSON API, the E2B
 * endpoint — each recorded in the store, followed by listeners, adopted after a restart,
 * and listed after it ended (the newest PROC_ENDED_KEPT foreground and background ones).
 *
 * Each command's output and stdin are its exec session, kept by libpaddock (exec-io.c): a
 * foreground command's output whole up to the sandbox's limits.output (then the command ends
 * with reason "output"), a background one's newest bytes per stream (libpaddock's ring,
 * 1 MiB), read by offset (svc_proc_read()). Listeners get the output as it comes; one that
 * falls behind pauses the command's output rather than piling it up here.
 *
 * Trust: output is hostile bytes, handed on, never interpreted; a request's tag is checked.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define PROC_ENDED_KEPT	   64	      /* ended processes listed per sandbox, of each kind */
#define PROC_ARGV_MAX	   4096	      /* strings in a command line */
#define PROC_STREAM_BEHIND (4u << 20) /* unsent output a listener may have */

static const char *const stream_names[2] = { "stdout", "stderr" };

/* ---- the table ---------------------------------------------------------------------------- */

json_t *svc_proc_json(struct proc *p)
{
	return json_pack("{s:s,s:i,s:s?,s:O,s:b,s:b,s:s,s:o,s:o,s:O?}", "exec", p->exec_str, "pid",
			 p->pid, "tag", p->tag[0] ? p->tag : NULL, "argv", p->argv, "background",
			 p->background, "pty", p->pty, "state", p->exited ? "exited" : "running",
			 "started_at", svc_time_json(p->started_ms), "ended_at",
			 svc_time_json(p->ended_ms), "result", p->result);
}

struct proc *svc_proc_find(struct box *b, const char *key)
{
	char *end;
	long pid = strtol(key, &end, 10);
	bool numeric = *key && !*end;

	for (struct proc *p = b->procs; p; p = p->next) {
		if (numeric && p->pid == pid && !p->exited)
			return p;
		if (!numeric && p->tag[0] && strcmp(p->tag, key) == 0 && !p->exited)
			return p;
	}
	/* an ended one: the newest with that pid or tag */
	for (struct proc *p = b->procs; p; p = p->next)
		if ((numeric && p->pid == pid) ||
		    (!numeric && p->tag[0] && strcmp(p->tag, key) == 0))
			return p;
	return NULL;
}

void svc_proc_listen(struct proc *p, struct svc_proc_listener *l)
{
	l->next = p->listeners;
	p->listeners = l;
}

void svc_proc_unlisten(struct proc *p, struct svc_proc_listener *l)
{
	for (struct svc_proc_listener **pp = &p->listeners; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	l->next = NULL;
}

/* Every listener's last call: `gone` when the sandbox goes first. Each is unlinked before. */
static void end_listeners(struct proc *p, bool gone)
{
	while (p->listeners) {
		struct svc_proc_listener *l = p->listeners;

		p->listeners = l->next;
		l->next = NULL;
		l->ops->ended(l, p, gone);
	}
}

void svc_proc_free(struct proc *p)
{
	struct box *b = p->box;

	for (struct proc **pp = &b->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	b->n_procs--;
	end_listeners(p, true);
	if (p->ex)
		paddock_exec_set_callback(p->ex, NULL, NULL);
	if (p->session) {
		paddock_exec_set_output_callback(p->session, NULL, NULL);
		p->session = paddock_exec_unref(p->session);
	}
	if (p->resume_ev)
		event_free(p->resume_ev);
	free(p->pending_stdin);
	json_decref(p->argv);
	json_decref(p->result);
	json_decref(p->fe_info);
	free(p);
}

void svc_box_free_procs(struct box *b)
{
	while (b->procs)
		svc_proc_free(b->procs);
}

/*
 * The newest PROC_ENDED_KEPT ended foreground commands and as many background ones: a
 * background process's output is read after its end (by polling), so a burst of short
 * foreground commands, answered already, never pushes it out.
 */
static void prune_ended(struct box *b)
{
	unsigned ended[2] = { 0, 0 };
	struct proc *p, *next;

	for (p = b->procs; p; p = next) {
		next = p->next;
		if (p->exited && !p->listeners && ++ended[p->background] > PROC_ENDED_KEPT)
			svc_proc_free(p);
	}
}

static struct proc *proc_new(struct box *b)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->box = b;
	p->next = b->procs;
	b->procs = p;
	b->n_procs++;
	return p;
}

/* ---- output ------------------------------------------------------------------------------- */

size_t svc_proc_read(struct proc *p, int stream, uint64_t *from, struct evbuffer *into)
{
	char buf[65536];
	size_t n, all = 0;

	while (p->session &&
	       (n = paddock_exec_read_output(p->session, stream, from, buf, sizeof(buf))) > 0) {
		evbuffer_add(into, buf, n);
		all += n;
	}
	return all;
}

json_t *svc_proc_result_json(struct proc *p)
{
	json_t *o = json_pack("{s:s,s:i}", "exec", p->exec_str, "pid", p->pid);

	if (!o)
		return NULL;
	for (int i = 0; i < 2; i++) {
		struct evbuffer *b = evbuffer_new();
		uint64_t from = 0;
		size_t n = b ? svc_proc_read(p, i + 1, &from, b) : 0;

		svc_json_set_bytes(o, stream_names[i],
				   b ? (const char *)evbuffer_pullup(b, -1) : "", n);
		if (b)
			evbuffer_free(b);
	}
	json_object_set(o, "result", p->result ? p->result : json_null());
	return o;
}

/*
 * A listener that reads slower than the command writes: its unsent bytes would pile up in
 * the adapter. Reading the command's output stops instead (its pipe fills and it blocks on
 * write, as it would writing to a slow terminal) until the listener caught up.
 */
static bool listeners_behind(struct proc *p)
{
	for (struct svc_proc_listener *l = p->listeners; l; l = l->next)
		if (l->ops->backlog && l->ops->backlog(l) > PROC_STREAM_BEHIND)
			return true;
	return false;
}

static const struct timeval resume_tv = { 0, 20000 };

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	(void)fd;
	(void)what;
	if (listeners_behind(p)) {
		evtimer_add(p->resume_ev, &resume_tv);
		return;
	}
	paddock_exec_pause_output(p->session, false);
}

/* after a chunk: pause the output while a listener is behind */
static void pace(struct proc *p)
{
	if (!listeners_behind(p))
		return;
	if (!p->resume_ev)
		p->resume_ev = evtimer_new(p->box->d->base, resume_cb, p);
	if (!p->resume_ev)
		return;
	paddock_exec_pause_output(p->session, true);
	evtimer_add(p->resume_ev, &resume_tv);
}

/* libpaddock kept a chunk of output: to the listeners, as it comes */
static void on_output(paddock_exec *ex, int stream, const void *data, size_t n, void *userdata)
{
	struct proc *p = userdata;
	struct svc_proc_listener *l, *next;

	(void)ex;
	for (l = p->listeners; l; l = next) {
		next = l->next;
		if (l->ops->data)
			l->ops->data(l, p, stream - 1, data, n);
	}
	pace(p);
}

/* ---- start and end ------------------------------------------------------------------------ */

static const double exec_buckets[12] = { 0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
					 0.1,	0.25,  0.5,   1,    5,	   1e300 };

const double *svc_exec_buckets(void)
{
	return exec_buckets;
}

static void count_exec(struct daemon *d, const struct paddock_result *res, double seconds)
{
	if ((unsigned)res->reason < _PADDOCK_END_MAX)
		d->m.execs_by[res->reason]++;
	for (int i = 0; i < 12; i++)
		if (seconds <= exec_buckets[i])
			d->m.exec_buckets[i]++;
	d->m.exec_count++;
	d->m.exec_sum += seconds;
}

static void exec_done(paddock_exec *ex, const struct paddock_result *res, void *userdata)
{
	struct proc *p = userdata;
	struct daemon *d = p->box->d;
	paddock_error err = { 0 };
	char *json = NULL;

	(void)ex;
	p->ex = NULL;
	p->exited = true;
	p->ended_ms = svc_now_ms();
	/* output_truncated is libpaddock's: the stored copy and the answer are the same */
	if (paddock_result_to_json(res, &json, NULL) >= 0)
		p->result = json_loads(json, 0, NULL);
	count_exec(d, res, svc_mono_s() - p->t0);
	if (!d->in_process && paddock_store_end_exec(d->store, p->box->id, p->exec_id, p->ended_ms,
						     json ? json : "null", &err) < 0)
		fprintf(stderr, "paddockd: store: %s\n", err.msg);
	free(json);
	end_listeners(p, false);
	prune_ended(p->box);
}

static int record(struct proc *p, paddock_error *ret_err)
{
	paddock_error err = { 0 };
	char *argv;
	int r;

	if (p->box->d->in_process)
		return 0; /* nothing is adopted in one process: the table in memory is the record */
	argv = json_dumps(p->argv, JSON_COMPACT);
	struct paddock_store_exec row = {
		.sandbox_id = p->box->id,
		.exec_id = p->exec_id,
		.pid = p->pid,
		.tag = p->tag[0] ? p->tag : NULL,
		.argv_json = argv ? argv : "[]",
		.background = p->background,
		.pty = p->pty,
		.started_ms = p->started_ms,
	};

	r = paddock_store_put_exec(p->box->d->store, &row, &err);
	if (r < 0) {
		fprintf(stderr, "paddockd: store: %s\n", err.msg);
		if (ret_err)
			*ret_err = err;
	}
	free(argv);
	return r;
}

int svc_proc_write_stdin(struct proc *p, const char *data, size_t len, paddock_error *err)
{
	if (p->exited)
		return paddock_fail(err, ESRCH, "the process has ended");
	if (!p->session || !p->has_stdin)
		return paddock_fail(err, EBADF, "the process has no stdin to write");
	return paddock_exec_write_stdin(p->session, data, len, err);
}

void svc_proc_close_stdin(struct proc *p)
{
	if (!p->exited && p->session)
		(void)paddock_exec_close_stdin(p->session, NULL);
}

void svc_proc_kill(struct proc *p)
{
	if (p->ex)
		(void)paddock_exec_terminate(p->ex, PADDOCK_END_KILLED, NULL);
}

/*
 * The command runs but cannot be recorded (the store failed): nobody could find it again
 * after a restart, so it is ended, and each listener is told why (one waiting for its start
 * answers the error and leaves); the others get its end.
 */
static void unrecorded(struct proc *p, paddock_exec *ex, const paddock_error *cause)
{
	struct svc_proc_listener *l, *next;
	paddock_error err = { 0 };

	svc_store_error(&err, cause);
	for (l = p->listeners; l; l = next) {
		next = l->next;
		if (l->ops->unrecorded)
			l->ops->unrecorded(l, p, &err);
	}
	(void)paddock_exec_terminate(ex, PADDOCK_END_ERROR, NULL);
}

/* init forked the command: its session is libpaddock's; give it its stdin, tell who waits */
static void proc_started(paddock_exec *ex, void *userdata)
{
	struct proc *p = userdata;
	struct svc_proc_listener *l, *next;
	paddock_error err = { 0 };

	p->started = true;
	p->pid = paddock_exec_pid(ex);
	if (record(p, &err) < 0)
		return unrecorded(p, ex, &err);
	if (p->pending_stdin) {
		if (svc_proc_write_stdin(p, p->pending_stdin, p->pending_len, &err) < 0 &&
		    err.code != EPIPE)
			fprintf(stderr, "paddockd: stdin of %s: %s\n", p->exec_str, err.msg);
		free(p->pending_stdin);
		p->pending_stdin = NULL;
	}
	if (p->pending_close)
		(void)paddock_exec_close_stdin(ex, NULL);
	for (l = p->listeners; l; l = next) {
		next = l->next;
		if (l->ops->started)
			l->ops->started(l, p);
	}
}

bool svc_tag_valid(const char *t)
{
	size_t n = strlen(t);

	if (n < 1 || n > SVC_MAX_TAG)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-",
			    t[i]))
			return false;
	/* a tag is never all digits: those name pids */
	return strspn(t, "0123456789") != n;
}

int svc_exec_check(struct box *b, const struct svc_exec_req *q, paddock_error *err)
{
	size_t n = 0;

	while (q->argv && q->argv[n])
		n++;
	if (n < 1 || n > PROC_ARGV_MAX)
		return paddock_fail_field(err, EINVAL, "argv",
					  "expected an array of 1 to 4096 strings");
	for (size_t i = 0; q->env && q->env[i]; i++)
		if (q->env[i][0] == '=' || !strchr(q->env[i], '='))
			return paddock_fail_field(
				err, EINVAL, "env",
				"expected NAME: \"value\" pairs (NAME without '=')");
	if (q->cwd && q->cwd[0] != '/')
		return paddock_fail_field(err, EINVAL, "cwd", "expected an absolute path");
	/* more than a pipe holds would block: bounded to what fits */
	if (q->stdin_len > SVC_STDIN_REQUEST_MAX)
		return paddock_fail_field(err, EFBIG, "stdin",
					  "at most 65536 bytes of stdin in the request; write more "
					  "through a background process's stdin");
	if (q->pty && (q->rows > 1000 || q->cols > 1000))
		return paddock_fail_field(err, EINVAL, "pty",
					  "expected {\"rows\": 1..1000, \"cols\": 1..1000}");
	if (!q->tag || !q->tag[0])
		return 0;
	if (!svc_tag_valid(q->tag))
		return paddock_fail_field(err, EINVAL, "tag",
					  "expected 1 to 64 of [A-Za-z0-9_.-], not all digits");
	for (struct proc *p = b->procs; p; p = p->next)
		if (!p->exited && strcmp(p->tag, q->tag) == 0)
			return paddock_fail_field(err, EEXIST, "tag",
						  "a running process already has tag '%s'", q->tag);
	return 0;
}

/* -ESRCH (409) when b does not run, -EBUSY when paused, -EAGAIN (429) when its table is full */
static int check_box(struct box *b, paddock_error *err)
{
	int r;

	if (!b->sb || !paddock_sandbox_running(b->sb))
		return paddock_fail_field(err, ESRCH, "id", "the sandbox is not running");
	r = svc_box_check_not_paused(b, err);
	if (r < 0)
		return r;
	if (b->n_procs < SVC_MAX_PROCS)
		return 0;
	prune_ended(b);
	if (b->n_procs < SVC_MAX_PROCS)
		return 0;
	return paddock_fail(err, EAGAIN, "the sandbox has %d processes tracked", SVC_MAX_PROCS);
}

/* libpaddock's options for a request (borrowing its strings) */
static void exec_opts(const struct svc_exec_req *q, struct paddock_exec_opts *opts)
{
	/*
	 * timeout_s: absent, the sandbox's limits.timeout_s (libpaddock's default, 0) for a
	 * foreground command and none for a background one; 0, none.
	 */
	opts->timeout_s = q->timeout_s < 0    ? (q->background ? -1 : 0)
			  : q->timeout_s == 0 ? -1
					      : q->timeout_s;
	opts->argv = (const char **)q->argv;
	opts->env = (const char **)q->env;
	opts->cwd = q->cwd;
	/* the exec session: a foreground command's output whole (limits.output), else a ring */
	opts->capture = q->background ? PADDOCK_CAPTURE_RING : PADDOCK_CAPTURE_ALL;
	if (q->pty) {
		opts->pty_streams = 7;
		opts->pty_rows = (unsigned short)q->rows;
		opts->pty_cols = (unsigned short)q->cols;
	} else {
		opts->pipe_streams = (q->has_stdin || q->keep_stdin) ? 1 : 0;
	}
	opts->on_started = q->sync_start ? NULL : proc_started; /* NULL: libpaddock waits */
}

/* the process's own copies of what it keeps of the request */
static int proc_take(struct proc *p, const struct svc_exec_req *q, paddock_error *err)
{
	p->argv = json_array();
	for (size_t i = 0; p->argv && q->argv[i]; i++)
		if (json_array_append_new(p->argv, json_string(q->argv[i])) < 0)
			return paddock_fail_field(err, EINVAL, "argv",
						  "expected UTF-8 strings (item %zu)", i);
	if (!p->argv)
		return paddock_fail(err, ENOMEM, "out of memory");
	if (q->has_stdin && q->stdin_len) {
		p->pending_stdin = malloc(q->stdin_len);
		if (!p->pending_stdin)
			return paddock_fail(err, ENOMEM, "out of memory");
		memcpy(p->pending_stdin, q->stdin_data, q->stdin_len);
		p->pending_len = q->stdin_len;
	}
	p->pending_close = q->has_stdin && !q->keep_stdin && !q->pty;
	p->background = q->background;
	p->pty = q->pty;
	p->has_stdin = q->pty || q->has_stdin || q->keep_stdin;
	if (q->tag)
		snprintf(p->tag, sizeof(p->tag), "%s", q->tag);
	return 0;
}

int svc_exec_start(struct box *b, const struct svc_exec_req *q, struct proc **ret,
		   paddock_error *err)
{
	struct paddock_exec_opts opts = { .fds = { -1, -1, -1 } };
	paddock_exec *ex = NULL;
	struct proc *p;
	int r;

	r = check_box(b, err);
	if (r >= 0)
		r = svc_exec_check(b, q, err);
	if (r < 0)
		return r;
	p = proc_new(b);
	if (!p)
		return paddock_fail(err, ENOMEM, "out of memory");
	p->t0 = svc_mono_s();
	r = proc_take(p, q, err);
	if (r >= 0) {
		exec_opts(q, &opts);
		r = paddock_exec_start(b->sb, &opts, exec_done, p, &ex, err);
	}
	if (r < 0) {
		svc_proc_free(p);
		return r;
	}
	p->ex = ex;
	p->session = paddock_exec_ref(ex);
	paddock_exec_set_output_callback(ex, on_output, p);
	p->exec_id = paddock_exec_id(ex);
	snprintf(p->exec_str, sizeof(p->exec_str), "ex_%llu", (unsigned long long)p->exec_id);
	p->started_ms = svc_now_ms();
	*ret = p;
	if (q->sync_start)
		proc_started(ex, p); /* forked already: recorded now, stdin given */
	return 0;
}

/* ---- adopt -------------------------------------------------------------------------------- */

void svc_proc_adopt(struct box *b, paddock_exec *ex, const struct paddock_store_exec *row,
		    bool end_it)
{
	struct proc *p = proc_new(b);

	if (!p)
		return;
	p->argv = row && row->argv_json ? json_loads(row->argv_json, 0, NULL) : NULL;
	if (!p->argv)
		p->argv = json_array();
	p->exec_id = row ? row->exec_id : paddock_exec_id(ex);
	snprintf(p->exec_str, sizeof(p->exec_str), "ex_%llu", (unsigned long long)p->exec_id);
	p->pid = row ? row->pid : paddock_exec_pid(ex);
	p->background = row ? row->background : true;
	p->pty = row ? row->pty : paddock_exec_pty_streams(ex) != 0;
	p->started_ms = row ? row->started_ms : svc_now_ms();
	p->t0 = svc_mono_s();
	if (row && row->tag)
		snprintf(p->tag, sizeof(p->tag), "%s", row->tag);
	if (!ex) {
		/* ended while no paddockd listened, and its report went with the old one */
		p->exited = true;
		p->ended_ms = svc_now_ms();
		p->result = json_pack("{s:s,s:{s:s}}", "reason", "error", "error", "message",
				      "the command's report was lost when paddockd restarted");
		(void)paddock_store_end_exec(b->d->store, b->id, p->exec_id, p->ended_ms,
					     "{\"reason\":\"error\"}", NULL);
		return;
	}
	p->ex = ex;
	p->started = true;
	paddock_exec_set_callback(ex, exec_done, p);
	/* its pipes came back with init's report: a ring, as for any background command */
	if (paddock_exec_capture(ex, PADDOCK_CAPTURE_RING, 0, NULL) >= 0) {
		p->session = paddock_exec_ref(ex);
		p->has_stdin = true;
		paddock_exec_set_output_callback(ex, on_output, p);
	}
	if (!row && record(p, NULL) < 0)
		end_it = true; /* a command nobody can find again after a restart */
	/*
	 * Whoever waited for it in the foreground went with the old paddockd: it is ended, as
	 * when a client goes away (docs/api.md, Restarts), and its result says "killed".
	 */
	if (end_it && !p->exited)
		(void)paddock_exec_terminate(ex, PADDOCK_END_KILLED, NULL);
}
