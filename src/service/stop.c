/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stop and start of paddockd's sandboxes (docs/api.md "Stop and start"). A stop keeps what
 * the sandbox wrote and ends its processes; a start runs it again, same id and spec, on what
 * was kept. Memory is not kept: no checkpoint of processes (CRIU) works on this host.
 *
 * The kept state is a snapshot (libpaddock's paddock_sandbox_snapshot(): the writable layer,
 * /home/user and its own /workspace included, as a layer on the sandbox's image) named
 * "paddock-stopped/<id>:<ms>" in paddockd's image store: on disk, sized by what was written,
 * surviving restarts and reboots, and removed with the sandbox. The store's row says
 * "stopped" and its handle names that image; a start is a create from it with the id given
 * back (the box, and so the id, is the same: no other box can hold it meanwhile).
 *
 * Policy, in one place:
 *  - stop of a stopped sandbox and start of a running (or paused) one answer 200, as pause;
 *  - a sandbox on the host's /usr has no image to put a layer on: refused (field "image");
 *  - a sandbox that ended on its own (init died) kept nothing: start is refused;
 *  - the TTL keeps running while stopped (POST .../ttl extends it); the idle timeout waits.
 *
 * TODO: a stop runs on the request path, as a snapshot does (api-snapshots.c): the loop waits
 * for the layer's writing and then for init's end (a few ms, more for a big layer).
 *
 * Trust: the layer is the sandbox's and hostile; the snapshot code reads it frozen, by fd.
 * The kept images are paddockd's: no create may name one (svc_stop_check_image()), or a
 * tenant could read another's stopped sandbox.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paddock/image.h"
#include "service.h"

#define KEPT_PREFIX "paddock-stopped/"

/* err, just filled, names the field "state" */
static int state_field(paddock_error *err, int r)
{
	snprintf(err->field, sizeof(err->field), "state");
	return r;
}

int svc_stop_check_image(json_t *spec, paddock_error *err)
{
	const char *img = json_string_value(json_object_get(spec, "image"));
	int r;

	if (!img || !strstr(img, KEPT_PREFIX))
		return 0;
	r = paddock_fail(err, EPERM,
			 "'%.200s' is the kept state of a stopped sandbox, paddockd's own: "
			 "start that sandbox (POST /v1/sandboxes/ID/start) or snapshot it",
			 img);
	snprintf(err->field, sizeof(err->field), "image");
	return r;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

bool svc_stop_name_private(const char *name)
{
	return name && strstr(name, KEPT_PREFIX);
}

/* Whether the image description `rec` has a name of the kept states of `id`, but `keep`. */
static bool kept_of(json_t *rec, const char *id, const char *keep)
{
	char pat[64];
	json_t *v;
	size_t i;

	snprintf(pat, sizeof(pat), KEPT_PREFIX "%s:", id);
	json_array_foreach(json_object_get(rec, "names"), i, v)
	{
		const char *n = json_string_value(v);

		if (n && strstr(n, pat) && !(keep && ends_with(n, keep)))
			return true;
	}
	return false;
}

void svc_stop_forget_images(struct daemon *d, const char *id, const char *keep)
{
	paddock_image_store *s = NULL;
	paddock_error err = { 0 };
	char *text = NULL;
	json_t *all, *rec;
	size_t i;

	if (svc_images_open(d, &s, &err) < 0 || paddock_image_list(s, &text, &err) < 0) {
		paddock_image_store_free(s);
		return; /* no store, nothing kept in it */
	}
	all = json_loads(text, 0, NULL);
	free(text);
	json_array_foreach(all, i, rec)
	{
		const char *img = json_string_value(json_object_get(rec, "id"));
		char buf[600];

		if (!img || !kept_of(rec, id, keep))
			continue;
		if (paddock_image_remove(s, img, &err) < 0)
			fprintf(stderr,
				"paddockd: sandbox %s: cannot remove its kept image %s, "
				"ignoring: %s\n",
				id, img, paddock_error_format(&err, buf, sizeof(buf)));
	}
	json_decref(all);
	paddock_image_store_free(s);
}

void svc_box_forget_kept(struct box *b)
{
	json_t *spec = json_loads(b->spec_json ? b->spec_json : "", 0, NULL);
	bool image = json_is_string(json_object_get(spec, "image"));

	json_decref(spec);
	/* only a sandbox of an image can have been stopped: the others cost no store listing */
	if (image || b->kept_image[0])
		svc_stop_forget_images(b->d, b->id, NULL);
}

/*
 * An init still listening at the sandbox's reconnect socket, though the store says stopped
 * (paddockd died between recording the stop and ending it): ended, and the socket goes, so
 * a start finds the id free.
 */
static void end_leftover_init(struct box *b)
{
	char path[300];

	if (!svc_socket_path(b->d, b->id, path, sizeof(path)))
		return;
	(void)paddock_orphan_end(path, NULL, NULL); /* the kernel's pidfd: libpaddock's */
	(void)unlink(path);
}

void svc_box_adopt_stopped(struct box *b, const char *handle_json)
{
	json_t *h = handle_json ? json_loads(handle_json, 0, NULL) : NULL;
	const char *img = json_string_value(json_object_get(h, "kept_image"));

	if (img && strlen(img) < sizeof(b->kept_image))
		snprintf(b->kept_image, sizeof(b->kept_image), "%s", img);
	json_decref(h);
	end_leftover_init(b);
}

/* Whether the box's spec names an image, and a host directory as its workspace. */
static int spec_shape(struct box *b, bool *ret_image, bool *ret_host_ws, paddock_error *err)
{
	json_t *spec = json_loads(b->spec_json, 0, NULL);

	if (!spec)
		return paddock_fail(err, EIO, "the spec of sandbox '%s' is unreadable", b->id);
	*ret_image = json_is_string(json_object_get(spec, "image"));
	*ret_host_ws = json_is_string(json_object_get(spec, "workspace"));
	json_decref(spec);
	return 0;
}

/* The processes' records: ended by the stop, so a later adoption finds none running. */
static void end_exec_rows(struct box *b)
{
	int64_t now = svc_now_ms();

	for (struct proc *p = b->procs; p; p = p->next)
		if (!p->exited)
			(void)paddock_store_end_exec(b->d->store, b->id, p->exec_id, now,
						     "{\"exit_code\":null,\"signal\":9,"
						     "\"reason\":\"stopped\"}",
						     NULL);
}

int svc_box_stop(struct box *b, paddock_error *err)
{
	struct paddock_snapshot_opts o = { 0 };
	char name[sizeof(b->kept_image)], prev[sizeof(b->kept_image)];
	bool image = false, host_ws = false, was_paused;
	char *json = NULL;
	int r;

	if (b->stopped && b->kept_image[0])
		return 0;
	if (b->stopped || !b->sb || !paddock_sandbox_running(b->sb))
		return state_field(err, paddock_fail(err, ESRCH,
						     "sandbox '%s' has ended on its own (its "
						     "init died): there is nothing to stop",
						     b->id));
	r = spec_shape(b, &image, &host_ws, err);
	if (r < 0)
		return r;
	if (!image) {
		r = paddock_fail(
			err, EOPNOTSUPP,
			"sandbox '%s' runs on the host's /usr (or a rootfs "
			"directory), not an image: a stop keeps its writable layer as a layer on "
			"its image (create it with an image to stop it)",
			b->id);
		snprintf(err->field, sizeof(err->field), "image");
		return r;
	}
	/* a host directory as /workspace stays where it is; the sandbox's own is kept */
	o.workspace = !host_ws;
	snprintf(name, sizeof(name), KEPT_PREFIX "%s:%lld", b->id, (long long)svc_now_ms());
	/* frozen from the snapshot to the end: nothing written after it is lost unseen */
	was_paused = b->paused;
	r = paddock_sandbox_pause(b->sb, err);
	if (r < 0)
		return r;
	r = paddock_sandbox_snapshot(b->sb, name, &o, &json, err);
	if (r < 0) {
		/* the store is as it was (the snapshot code sees to it): the sandbox runs on */
		if (!was_paused)
			(void)paddock_sandbox_resume(b->sb, NULL);
		return r;
	}
	free(json);
	snprintf(prev, sizeof(prev), "%s", b->kept_image);
	snprintf(b->kept_image, sizeof(b->kept_image), "%s", name);
	b->stopped = true;
	b->paused = false;
	/* the store first: a restart must find it stopped (and ends an init left running) */
	r = svc_box_persist(b, err);
	if (r < 0) {
		b->stopped = false;
		b->paused = was_paused;
		snprintf(b->kept_image, sizeof(b->kept_image), "%s", prev);
		if (!was_paused)
			(void)paddock_sandbox_resume(b->sb, NULL);
		svc_box_persist_or_warn(b); /* init's record said stopped a moment ago */
		svc_stop_forget_images(b->d, b->id, prev[0] ? prev : NULL); /* the new one */
		return r;
	}
	end_exec_rows(b);
	svc_box_release_clients(b);
	paddock_sandbox_set_exit_callback(b->sb, NULL, NULL);
	b->sb = paddock_sandbox_free(b->sb); /* SIGKILL, and wait: nothing of it is left */
	/* the kept states before this one: the new one has their layers */
	svc_stop_forget_images(b->d, b->id, name);
	svc_log_event(b->d, b->tenant, "sandbox.stopped", b->id, "\"image\":\"%s\"", name);
	return 0;
}

/* The spec to start from: the box's own, on the kept image. */
static int start_spec(struct box *b, paddock_spec **ret, paddock_error *err)
{
	json_t *spec = json_loads(b->spec_json, 0, NULL);
	paddock_spec *ps = NULL;
	char *text;
	int r;

	if (!spec || json_object_set_new(spec, "image", json_string(b->kept_image)) < 0) {
		json_decref(spec);
		return paddock_fail(err, EIO, "the spec of sandbox '%s' is unreadable", b->id);
	}
	text = json_dumps(spec, JSON_COMPACT);
	json_decref(spec);
	if (!text)
		return paddock_fail(err, ENOMEM, "format spec");
	r = paddock_spec_new(&ps, err);
	if (r >= 0)
		r = paddock_spec_load_json(ps, text, strlen(text), err);
	/* the operator may have narrowed --max-network since the create */
	if (r >= 0)
		r = svc_check_max_network(b->d, ps, err);
	free(text);
	if (r < 0) {
		paddock_spec_free(ps);
		return r;
	}
	*ret = ps;
	return 0;
}

/* SECURITY: one sandbox per id; a box being torn down may still hold it (its socket, cgroup) */
static bool id_free(struct box *b)
{
	for (struct box *x = b->d->boxes; x; x = x->next)
		if (x != b && strcmp(x->id, b->id) == 0)
			return false;
	for (struct box *x = b->d->dying; x; x = x->next)
		if (strcmp(x->id, b->id) == 0)
			return false;
	return true;
}

int svc_box_start(struct box *b, paddock_error *err)
{
	struct paddock_sandbox_opts opts = { .orphan_timeout_s = b->d->orphan_timeout_s,
					     .id = b->id };
	paddock_spec *spec = NULL;
	paddock_sandbox *sb = NULL;
	int64_t active = b->last_active_ms;
	int r;

	if (!b->stopped)
		return 0;
	if (!b->kept_image[0])
		return state_field(err, paddock_fail(err, ESRCH,
						     "sandbox '%s' ended on its own (its init "
						     "died): nothing of it was kept to start again",
						     b->id));
	if (!id_free(b))
		return state_field(err, paddock_fail(err, EBUSY,
						     "sandbox '%s' is still being torn down: "
						     "retry",
						     b->id));
	r = start_spec(b, &spec, err);
	if (r < 0)
		return r;
	opts.reconnect_dir = b->d->reconnect_dir;
	/* never the warm pool: a pooled sandbox has an id of its own */
	r = paddock_sandbox_create_with(b->d->ctx, spec, &opts, &sb, err);
	paddock_spec_free(spec);
	if (r < 0)
		return r;
	b->sb = sb;
	b->stopped = false;
	b->paused = false;
	svc_box_touch(b);
	r = svc_box_persist(b, err);
	if (r < 0) {
		/* unrecorded, a restart would not know it runs: ended, it stays stopped */
		b->sb = paddock_sandbox_free(sb);
		b->stopped = true;
		b->last_active_ms = active;
		return r;
	}
	svc_box_watch_exit(b);
	svc_log_event(b->d, b->tenant, "sandbox.started", b->id, "\"image\":\"%s\"", b->kept_image);
	return 0;
}

/* The image store paddockd uses: --image-store, or libpaddock's default. */
int svc_images_open(struct daemon *d, paddock_image_store **ret, paddock_error *err)
{
	char dir[PATH_MAX];
	int r = 0;

	if (d->image_store)
		snprintf(dir, sizeof(dir), "%s", d->image_store);
	else
		r = paddock_image_store_default_dir(dir, sizeof(dir), err);
	if (r >= 0)
		r = paddock_image_store_open(dir, ret, err);
	return r;
}
