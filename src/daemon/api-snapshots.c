/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots and images (docs/api.md "Snapshots and images"):
 *   POST   /v1/sandboxes/{id}/snapshot  {"name", "include_workspace"?}  its layer as an image
 *   POST   /v1/sandboxes/{id}/fork      {"name"?, "include_workspace"?, ...}  snapshot+create
 *   GET    /v1/images                                   the store's images
 *   GET    /v1/images/{ref}    DELETE /v1/images/{ref}  one image (ref URL-encoded)
 *
 * libpaddock does the work (paddock_sandbox_snapshot(), the image store); this translates.
 * TODO: a snapshot runs on the request path, and paddockd's loop waits for it (its writing
 * of the layer: ~60 ms for 16 MiB of small files, more on a busy disk); it wants a worker
 * once layers get big, the sandbox staying paused until the worker is done.
 * The store is paddockd's, one for the host, not a tenant's: so these are the local
 * socket's (the operator's) only; a TCP tenant is refused until images have owners.
 */
#include <errno.h>
#include <event2/http.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/image.h"
#include "daemon.h"

static bool operator_only(struct request *r)
{
	if (!strcmp(r->tenant, "local"))
		return true;
	pdd_reply_error(r, 403, "forbidden", NULL,
			"snapshots and images are the local socket's: the image store is shared by "
			"every tenant");
	return false;
}

/* An image's description for the API: what a client of snapshots wants first, then the rest. */
static json_t *image_json(const char *text)
{
	json_t *rec = json_loads(text, 0, NULL), *out;
	json_t *names = json_object_get(rec, "names"), *snap = json_object_get(rec, "snapshot");

	if (!rec)
		return json_pack("{}");
	out = json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?,s:O?}", "id", json_object_get(rec, "id"), "name",
			json_array_get(names, 0), "names", names, "size",
			json_object_get(rec, "size"), "created_at", json_object_get(rec, "added"),
			"layers", json_object_get(rec, "layers"));
	if (out && snap)
		(void)json_object_update(out, snap); /* sandbox, layer, layer_size, base */
	json_decref(rec);
	return out;
}

/* A sandbox that can be snapshot now, or an answer saying why not. */
static bool live(struct request *r, struct box *b)
{
	if (b->removed_reason[0] || b->stopped || !b->sb || !paddock_sandbox_running(b->sb)) {
		pdd_reply_error(r, 409, "conflict", "id",
				"sandbox '%s' has ended or is ending: there is nothing to snapshot",
				b->id);
		return false;
	}
	return true;
}

/* A name a snapshot may take: not one of the kept states of stopped sandboxes (stop.c). */
static bool name_free(struct request *r, const char *name)
{
	if (!svc_stop_name_private(name))
		return true;
	pdd_reply_error(r, 400, "invalid", "name",
			"names under 'paddock-stopped/' are paddockd's, for stopped sandboxes");
	return false;
}

/* "include_workspace": absent, or a boolean; an answer when it is neither */
static bool include_workspace(struct request *r, json_t *body, bool *ret)
{
	json_t *v = json_object_get(body, "include_workspace");

	if (v && !json_is_boolean(v)) {
		pdd_reply_error(r, 400, "invalid", "include_workspace", "expected true or false");
		return false;
	}
	*ret = json_is_true(v);
	return true;
}

static int snapshot(struct box *b, const char *name, bool workspace, char **ret_json,
		    paddock_error *err)
{
	struct paddock_snapshot_opts o = { .workspace = workspace };
	int r = paddock_sandbox_snapshot(b->sb, name, &o, ret_json, err);

	if (r >= 0)
		svc_box_touch(b);
	return r;
}

static void post_snapshot(struct request *r, struct box *b)
{
	static const char *const fields[] = { "name", "include_workspace", NULL };
	json_t *body = pdd_body_object(r, false), *name;
	paddock_error err = { 0 };
	char *json = NULL;
	bool ws = false;

	if (!body)
		return;
	if (!pdd_check_fields(r, body, fields) || !include_workspace(r, body, &ws) || !live(r, b)) {
		json_decref(body);
		return;
	}
	name = json_object_get(body, "name");
	if (!json_is_string(name)) {
		json_decref(body);
		return pdd_reply_error(r, 400, "invalid", "name",
				       "expected a string such as 'work:1' ([DOMAIN/]PATH[:TAG])");
	}
	if (!name_free(r, json_string_value(name))) {
		json_decref(body);
		return;
	}
	if (snapshot(b, json_string_value(name), ws, &json, &err) < 0) {
		json_decref(body);
		return pdd_reply_paddock_error(r, &err);
	}
	json_decref(body);
	pdd_reply_json(r, 201, image_json(json));
	free(json);
}

/*
 * Fork: the parent's snapshot (named by the request, or "fork/<parent>:<ms>"), then a new
 * sandbox of the parent's spec with that image. Fields other than "name" and
 * "include_workspace" are the create body's (ttl_s, metadata, ...), over the parent's spec.
 */
static void post_fork(struct request *r, struct box *b)
{
	json_t *body = pdd_body_object(r, true), *spec, *name, *img, *sj;
	paddock_error err = { 0 };
	struct box *nb = NULL;
	char *json = NULL, def[64];
	const char *key;
	bool ws = false;
	json_t *v;

	if (!body)
		return;
	if (!include_workspace(r, body, &ws) || !live(r, b)) {
		json_decref(body);
		return;
	}
	name = json_object_get(body, "name");
	if (name && !json_is_string(name)) {
		json_decref(body);
		return pdd_reply_error(r, 400, "invalid", "name",
				       "expected a string such as 'work:1' ([DOMAIN/]PATH[:TAG])");
	}
	if (name && !name_free(r, json_string_value(name))) {
		json_decref(body);
		return;
	}
	snprintf(def, sizeof(def), "fork/%s:%lld", b->id, (long long)svc_now_ms());
	if (snapshot(b, name ? json_string_value(name) : def, ws, &json, &err) < 0) {
		json_decref(body);
		return pdd_reply_paddock_error(r, &err);
	}
	img = image_json(json);
	free(json);
	spec = json_loads(b->spec_json, 0, NULL);
	if (!spec || !json_is_object(spec)) {
		json_decref(spec);
		json_decref(body);
		json_decref(img);
		return pdd_reply_error(r, 500, "internal", NULL, "the parent's spec is unreadable");
	}
	/* the parent's TTL and idle timeout unless the request says otherwise: a copy of it */
	(void)json_object_set_new(spec, "ttl_s", json_integer(b->ttl_s));
	(void)json_object_set_new(spec, "idle_timeout_s", json_integer(b->idle_timeout_s));
	json_object_foreach(body, key,
			    v) if (strcmp(key, "name") && strcmp(key, "include_workspace"))(void)
		json_object_set(spec, key, v);
	(void)json_object_set(spec, "image", json_object_get(img, "id"));
	json_decref(body);
	if (svc_box_create(r->d, r->tenant, spec, &nb, &err) < 0) {
		json_decref(spec);
		char msg[sizeof(err.msg) + 64];

		/* the snapshot stays: the client may create from it, or remove it */
		snprintf(msg, sizeof(msg), "fork: create from the snapshot: %s", err.msg);
		snprintf(err.msg, sizeof(err.msg), "%.*s", (int)sizeof(err.msg) - 1, msg);
		json_decref(img);
		return pdd_reply_paddock_error(r, &err);
	}
	json_decref(spec);
	sj = svc_box_json(nb);
	(void)json_object_set_new(sj, "snapshot", img);
	pdd_reply_json(r, 201, sj);
}

void pdd_api_snapshots(struct request *r, struct box *b)
{
	if (!operator_only(r))
		return;
	if (r->method != EVHTTP_REQ_POST)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
	if (!strcmp(r->seg[3], "snapshot"))
		return post_snapshot(r, b);
	post_fork(r, b);
}

static void list_images(struct request *r, paddock_image_store *s)
{
	paddock_error err = { 0 };
	char *text = NULL;
	json_t *all, *out = json_array(), *v;
	size_t i;

	if (paddock_image_list(s, &text, &err) < 0) {
		json_decref(out);
		return pdd_reply_paddock_error(r, &err);
	}
	all = json_loads(text, 0, NULL);
	json_array_foreach(all, i, v)
	{
		char *one = json_dumps(v, 0);

		if (one)
			json_array_append_new(out, image_json(one));
		free(one);
	}
	json_decref(all);
	free(text);
	pdd_reply_json(r, 200, json_pack("{s:o}", "images", out));
}

void pdd_api_images(struct request *r)
{
	paddock_image_store *s = NULL;
	paddock_error err = { 0 };
	char *text = NULL;

	if (!operator_only(r))
		return;
	if (r->n_seg > 3)
		return pdd_reply_error(r, 404, "not_found", "path",
				       "no such route (URL-encode the '/' of a reference: %%2F)");
	if (svc_images_open(r->d, &s, &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	if (r->n_seg == 2) {
		if (r->method == EVHTTP_REQ_GET)
			list_images(r, s);
		else
			pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
	} else if (r->method == EVHTTP_REQ_GET) {
		if (paddock_image_inspect(s, r->seg[2], &text, &err) < 0)
			pdd_reply_paddock_error(r, &err);
		else
			pdd_reply_json(r, 200, image_json(text));
		free(text);
	} else if (r->method == EVHTTP_REQ_DELETE) {
		if (paddock_image_remove(s, r->seg[2], &err) < 0)
			pdd_reply_paddock_error(r, &err);
		else
			pdd_reply_empty(r, 204);
	} else {
		pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET or DELETE");
	}
	paddock_image_store_free(s);
}
