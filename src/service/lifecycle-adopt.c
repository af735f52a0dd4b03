/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's start and stop. At start, every sandbox the store says is live is adopted with
 * its processes (paddock_sandbox_adopt()), or, when that cannot be, ended and forgotten; a
 * teardown a restart interrupted ("deleting") is finished; then the reconnect sockets no row
 * names are swept (lifecycle-recover.c). At SIGTERM the sandboxes are released for the next
 * start (or destroyed, --destroy-on-exit).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"
#include "lifecycle.h"

/* A stored row, copied out of the walk (adoption starts only once the walk has ended). */
struct row_copy {
	struct paddock_store_sandbox row;
	char *strings[7];
};

struct rows {
	struct row_copy *v;
	size_t n;
};

static int collect(const struct paddock_store_sandbox *row, void *userdata)
{
	struct rows *a = userdata;
	struct row_copy *v = reallocarray(a->v, a->n + 1, sizeof(*v)), *c;
	const char *src[7] = { row->id,	       row->tenant,	   row->state,
			       row->spec_json, row->metadata_json, row->handle_json,
			       row->on_timeout };

	if (!v)
		return -ENOMEM;
	a->v = v;
	c = &v[a->n++];
	memset(c, 0, sizeof(*c));
	c->row = *row;
	for (int i = 0; i < 7; i++)
		if (src[i] && !(c->strings[i] = strdup(src[i])))
			return -ENOMEM;
	c->row.id = c->strings[0];
	c->row.tenant = c->strings[1];
	c->row.state = c->strings[2];
	c->row.spec_json = c->strings[3];
	c->row.metadata_json = c->strings[4];
	c->row.handle_json = c->strings[5];
	c->row.on_timeout = c->strings[6];
	return 0;
}

static void rows_free(struct rows *a)
{
	for (size_t i = 0; i < a->n; i++)
		for (int k = 0; k < 7; k++)
			free(a->v[i].strings[k]);
	free(a->v);
}

static int adopt_exec_row(const struct paddock_store_exec *row, void *userdata)
{
	struct box *b = userdata;
	paddock_exec *ex;

	for (ex = b->sb ? paddock_sandbox_exec_next(b->sb, NULL) : NULL; ex;
	     ex = paddock_sandbox_exec_next(b->sb, ex))
		if (paddock_exec_id(ex) == row->exec_id)
			break;
	if (row->result_json && row->ended_ms > 0)
		return 0; /* ended and recorded: history, not a process to follow */
	/*
	 * A foreground command's client went with the old paddockd: killed, as when a client
	 * goes away (its result says so); a background one is followed on.
	 */
	svc_proc_adopt(b, ex, row, !row->background);
	return 0;
}

/*
 * A "deleting" row: a DELETE (or TTL) was answered and the sandbox killed, but paddockd died
 * before the kernel finished and the teardown was logged. Finished now: killed again if its
 * init still listens, and once it is gone the events it would have had are logged, the row
 * and the socket go.
 */
struct finishing {
	struct daemon *d;
	char id[32];
	int pidfd;
	struct event *ev;
	struct finishing *next;
};

static void finished(struct finishing *f)
{
	struct daemon *d = f->d;

	svc_log_event(d, NULL, "sandbox.exited", f->id,
		      "\"reason\":\"killed\",\"after_restart\":true");
	svc_log_event(d, NULL, "sandbox.destroyed", f->id, "\"after_restart\":true");
	svc_box_forget(d, f->id);
	svc_stop_forget_images(d, f->id, NULL);
	for (struct finishing **pp = &d->finishing; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->ev)
		event_free(f->ev);
	if (f->pidfd >= 0)
		close(f->pidfd);
	free(f);
}

static void finishing_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	finished(arg);
}

bool svc_lifecycle_finishing(struct daemon *d, const char *id)
{
	for (struct finishing *f = d->finishing; f; f = f->next)
		if (strcmp(f->id, id) == 0)
			return true;
	return false;
}

static int finish_deleting(struct daemon *d, const char *id)
{
	struct finishing *f = calloc(1, sizeof(*f));
	char path[300];

	if (!f)
		return -ENOMEM;
	f->d = d;
	snprintf(f->id, sizeof(f->id), "%s", id);
	(void)svc_socket_path(d, id, path, sizeof(path));
	f->next = d->finishing;
	d->finishing = f;
	f->pidfd = -EBADF;
	if (paddock_orphan_end(path, &f->pidfd, NULL) > 0) {
		/* the pidfd reads as ready once init, and so every process of it, is gone */
		f->ev = event_new(d->base, f->pidfd, EV_READ, finishing_cb, f);
		if (f->ev && event_add(f->ev, NULL) == 0)
			return 0;
	}
	finished(f);
	return 0;
}

static int adopt_row(struct daemon *d, const struct paddock_store_sandbox *row)
{
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };
	struct box *b;
	int r;

	if (strcmp(row->state, "deleting") == 0)
		return finish_deleting(d, row->id);
	b = svc_box_new(d, row->id, row->tenant);
	if (!b)
		return -ENOMEM;
	b->spec_json = strdup(row->spec_json);
	b->metadata = json_loads(row->metadata_json, 0, NULL);
	if (!b->metadata)
		b->metadata = json_object();
	b->created_ms = row->created_ms;
	b->expires_ms = row->expires_ms;
	b->last_active_ms = row->last_active_ms;
	b->ttl_s = row->ttl_s;
	b->idle_timeout_s = row->idle_timeout_s;
	b->pause_on_timeout = row->on_timeout && strcmp(row->on_timeout, "pause") == 0;
	/* adoption thaws a paused sandbox: adopt_all() pauses it again (svc_box_repause()) */
	b->paused = strcmp(row->state, "paused") == 0;
	b->stopped = !b->paused && strcmp(row->state, "running") != 0;
	r = paddock_spec_new(&spec, &err);
	if (r >= 0 && b->spec_json)
		r = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), &err);
	if (r >= 0) {
		(void)paddock_spec_get_limit(spec, "timeout", &b->exec_timeout_s, NULL);
		(void)paddock_spec_get_limit(spec, "output", &b->output_limit, NULL);
	}
	if (r >= 0 && !b->stopped)
		r = paddock_sandbox_adopt(d->ctx, spec, row->handle_json, &b->sb, &err);
	if (b->stopped)
		svc_box_adopt_stopped(b, row->handle_json);
	paddock_spec_free(spec);
	svc_box_link(b);
	if (r < 0) {
		char buf[600];
		/* SECURITY: what cannot be supervised is ended (adopt killed it) and forgotten */
		fprintf(stderr, "paddockd: sandbox %s cannot be adopted, removing it: %s\n",
			row->id, paddock_error_format(&err, buf, sizeof(buf)));
		svc_box_destroy(b, "adopt_failed", NULL);
		return 0;
	}
	if (b->sb)
		svc_box_watch_exit(b);
	return 0;
}

/* The commands init knows of b that the records do not (or no records at all). */
void svc_box_adopt_unknown_execs(struct box *b)
{
	for (paddock_exec *ex = paddock_sandbox_exec_next(b->sb, NULL); ex;
	     ex = paddock_sandbox_exec_next(b->sb, ex)) {
		bool known = false;

		for (struct proc *p = b->procs; p; p = p->next)
			known |= p->exec_id == paddock_exec_id(ex);
		/*
		 * Started, never recorded (paddockd died in between): nobody was told it runs,
		 * so it is ended. A recovered sandbox's commands are all unrecorded: followed on,
		 * as background commands, since nothing says which had a client waiting.
		 */
		if (!known)
			svc_proc_adopt(b, ex, NULL, !b->recovered);
	}
}

static int adopt_all(struct daemon *d, paddock_error *err)
{
	struct rows a = { 0 };
	int r;

	/* the whole walk first: a store that turns out damaged half-way has adopted nothing */
	r = paddock_store_list_sandboxes(d->store, collect, &a, err);
	for (size_t i = 0; r >= 0 && i < a.n; i++)
		r = adopt_row(d, &a.v[i].row);
	rows_free(&a);
	if (r < 0)
		return r;
	for (struct box *b = d->boxes; b; b = b->next) {
		paddock_error e = { 0 };

		if (!b->sb)
			continue;
		if (paddock_store_list_execs(d->store, b->id, adopt_exec_row, b, &e) < 0) {
			svc_store_warn(d, &e);
			b->recovered = true; /* its commands' records are unreadable */
		}
		svc_box_adopt_unknown_execs(b);
		/* last: a command ended above is ended by a signal, which a pause would hold */
		svc_box_repause(b);
	}
	return 0;
}

int svc_lifecycle_start(struct daemon *d, paddock_error *err)
{
	uint64_t max_exec = 0;
	int r;

	if (d->in_process) {
		r = svc_reaper_start(d, err); /* nothing to adopt: its sandboxes died with it */
		return r < 0 ? r : svc_pool_start(d, err);
	}
	snprintf(d->reconnect_dir, sizeof(d->reconnect_dir), "%s/s", d->state_dir);
	if (mkdir(d->reconnect_dir, 0700) < 0 && errno != EEXIST)
		return paddock_fail(err, errno, "mkdir '%s'", d->reconnect_dir);
	/* a new command never takes the id of one the store remembers */
	r = paddock_store_max_exec_id(d->store, &max_exec, err);
	if (r < 0)
		return r;
	paddock_ctx_reserve_exec_ids(d->ctx, max_exec);
	r = adopt_all(d, err);
	if (r < 0)
		return r;
	svc_lifecycle_sweep_orphans(d, d->reconnect_dir);
	r = svc_reaper_start(d, err);
	if (r < 0)
		return r;
	return svc_pool_start(d, err);
}

/* SIGTERM: sandboxes stay for the next paddockd, unless told to destroy them. */
void svc_lifecycle_stop(struct daemon *d)
{
	svc_pool_stop(d); /* pooled sandboxes have no tenant to keep them for: they end */
	while (d->boxes) {
		struct box *b = d->boxes;

		if (d->destroy_on_exit) {
			svc_box_destroy(b, "shutdown", NULL);
			continue;
		}
		svc_box_persist_or_warn(b);
		svc_box_unlink(b);
		if (b->sb)
			paddock_sandbox_release(b->sb);
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
	}
	svc_box_finish_dying(d);
	/* a teardown not finished yet: the next start finishes it (the row says "deleting") */
	while (d->finishing) {
		struct finishing *f = d->finishing;

		d->finishing = f->next;
		if (f->ev)
			event_free(f->ev);
		if (f->pidfd >= 0)
			close(f->pidfd);
		free(f);
	}
	svc_reaper_stop(d);
	svc_events_flush_pending(d, "", NULL);
}
