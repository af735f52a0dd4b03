/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/run: one command in a fresh sandbox, which is deleted once the command ended, in
 * one request (docs/api.md "Run"). The shape agents use for one-off code: one round trip
 * where create + exec + delete take three. Nothing of its own: the sandbox is made as
 * POST /v1/sandboxes makes one (from the warm pool when one of its template waits), the
 * command runs as a foreground POST .../exec runs, the answer is that exec's (stdout, stderr,
 * result) with the sandbox's id, and the sandbox goes as DELETE removes one, its teardown off
 * the request path.
 *
 *   {"sandbox": {create body}, "exec": {exec body}}     "exec" is required
 *
 * A client that goes away ends the command and the sandbox with it. Background, streamed,
 * pty and keep_stdin commands are refused: they outlive the answer, and the sandbox does not.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static const char *const run_fields[] = { "sandbox", "exec", NULL };
static const char *const refused[] = { "background", "stream", "pty", "keep_stdin" };

struct run {
	struct daemon *d;
	char tenant[SVC_MAX_TENANT + 1];
	char id[32];
};

/* Deferred: never from inside the process's own callbacks, which still use the box. */
static void remove_cb(evutil_socket_t fd, short what, void *arg)
{
	struct run *run = arg;
	struct box *b = svc_box_find(run->d, run->tenant, run->id);

	(void)fd;
	(void)what;
	if (b)
		svc_box_destroy(b, "run", NULL);
	free(run);
}

static void remove_later(struct run *run)
{
	if (event_base_once(run->d->base, -1, EV_TIMEOUT, remove_cb, run, NULL) < 0)
		free(run); /* out of memory: the sandbox's TTL ends it */
}

static void run_started(struct watcher *w, struct proc *p)
{
	(void)w;
	(void)p;
}

static void run_data(struct watcher *w, struct proc *p, int stream, const char *buf, size_t n)
{
	/* libpaddock keeps it (the exec session): the answer reads it at the end */
	(void)w;
	(void)p;
	(void)stream;
	(void)buf;
	(void)n;
}

static void run_ended(struct watcher *w, struct proc *p)
{
	struct run *run = w->ctx;
	json_t *o = svc_proc_result_json(p);

	if (w->req && o) {
		struct request r = { .d = p->box->d, .req = w->req };

		json_object_set_new(o, "sandbox", json_string(run->id));
		pdd_watcher_detach(w);
		pdd_reply_json(&r, 200, o);
		w->req = NULL;
	} else {
		json_decref(o);
	}
	w->ctx = NULL;
	remove_later(run);
}

/* The client went away: its command ends (run_ended() then removes the sandbox). */
static void run_gone(struct watcher *w)
{
	svc_proc_kill(w->owner);
}

static const struct watcher_ops run_ops = {
	.started = run_started,
	.data = run_data,
	.ended = run_ended,
};

/* The exec body's command in b, its answer to req through run_ops */
static int start(struct evhttp_request *req, struct box *b, json_t *exec, struct run *run,
		 paddock_error *err)
{
	struct proc *p = NULL;
	struct watcher *w;
	int r;

	r = pdd_exec_body_start(b, exec, &p, NULL, err);
	if (r < 0)
		return r;
	w = pdd_proc_hook(req, p, &run_ops, run);
	if (!w) {
		svc_proc_kill(p);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	w->on_gone = run_gone;
	return 0;
}

void pdd_api_run(struct request *r)
{
	paddock_error err = { 0 };
	json_t *body, *create, *exec;
	struct box *b = NULL;
	struct run *run;

	if (r->method != EVHTTP_REQ_POST)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
	body = pdd_body_object(r, false);
	if (!body)
		return;
	if (!pdd_check_fields(r, body, run_fields))
		goto out;
	create = json_object_get(body, "sandbox");
	exec = json_object_get(body, "exec");
	if (create && !json_is_object(create)) {
		pdd_reply_error(r, 400, "invalid", "sandbox", "expected an object (a create body)");
		goto out;
	}
	if (!json_is_object(exec)) {
		pdd_reply_error(r, 400, "invalid", "exec", "expected an object (an exec body)");
		goto out;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (json_is_true(json_object_get(exec, refused[i]))) {
			pdd_reply_error(r, 400, "invalid", refused[i],
					"a run's command ends before its answer: '%s' is for a "
					"sandbox of your own (POST /v1/sandboxes)",
					refused[i]);
			goto out;
		}
	run = calloc(1, sizeof(*run));
	if (!run) {
		pdd_reply_error(r, 500, "internal", NULL, "out of memory");
		goto out;
	}
	run->d = r->d;
	snprintf(run->tenant, sizeof(run->tenant), "%s", r->tenant);
	if (create)
		json_incref(create);
	else
		create = json_object();
	if (svc_box_create(r->d, r->tenant, create, &b, &err) < 0) {
		json_decref(create);
		free(run);
		pdd_reply_paddock_error(r, &err);
		goto out;
	}
	json_decref(create);
	snprintf(run->id, sizeof(run->id), "%s", b->id);
	if (start(r->req, b, exec, run, &err) < 0) {
		/* a bad exec body, or init refused: the sandbox goes unused */
		pdd_reply_paddock_error(r, &err);
		remove_later(run);
	}
out:
	json_decref(body);
}
