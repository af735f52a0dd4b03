/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane's sandbox lifecycle (docs/e2b.md): create, connect, pause, resume,
 * set the timeout, kill. Each is the paddockd call of the same meaning (svc_box_create(),
 * svc_box_pause(), svc_box_resume(), svc_box_start(), svc_box_persist(), svc_box_delete()) on the
 * tenant's own sandboxes; the spec parser judges what a create asks for.
 *
 * Trust: r->tenant is the API key's tenant (e2b.c); every request is untrusted (control.c).
 */
#include "e2b-control.h"

#include <errno.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_DEFAULT_S   300 /* ConnectSandboxV2.timeout's default */
#define CREATE_DEFAULT_V2_S 300 /* NewSandboxV2.timeout's default */

/* ---- create ------------------------------------------------------------------------------ */

/* the create fields paddock cannot honour, refused by name when they ask for something */
static bool check_unsupported(struct e2b_req *r, json_t *body)
{
	json_t *resume = json_object_get(body, "autoResume"),
	       *ap = json_object_get(body, "autoPause");

	if (ap && !json_is_null(ap) && !json_is_boolean(ap)) {
		e2b_reply_error(r, 400, "autoPause: expected true or false");
		return false;
	}
	if (json_is_true(json_object_get(resume, "enabled"))) {
		e2b_reply_error(r, 400,
				"autoResume: traffic does not resume a paused paddock sandbox; "
				"Sandbox.connect() does");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(body, "volumeMounts"))) {
		e2b_reply_error(r, 400,
				"volumeMounts: volumes are not supported by paddock (a "
				"template's spec can bind host directories)");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(body, "mcp"))) {
		e2b_reply_error(r, 400, "mcp: the MCP gateway is not supported by paddock");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(json_object_get(body, "iam"), "tokens"))) {
		e2b_reply_error(r, 400,
				"iam.tokens: workload identity tokens are not supported by "
				"paddock");
		return false;
	}
	return true;
}

/* metadata: string values, no reserved key, room for paddock's own entries */
static bool check_metadata(struct e2b_req *r, json_t *meta)
{
	const char *k;
	json_t *v;

	if (!meta || json_is_null(meta))
		return true;
	if (!json_is_object(meta)) {
		e2b_reply_error(r, 400, "metadata: expected an object of string values");
		return false;
	}
	if (json_object_size(meta) > META_MAX - 2) {
		e2b_reply_error(r, 400, "metadata: expected at most %d entries", META_MAX - 2);
		return false;
	}
	json_object_foreach(meta, k, v)
	{
		char e[72];

		if (e2b_ctl_reserved(k)) {
			e2b_reply_error(r, 400,
					"metadata.%s: keys starting '" RESERVED_PREFIX
					"' are reserved for paddock",
					e2b_ctl_esc(k, e, sizeof(e)));
			return false;
		}
		if (!json_is_string(v)) {
			e2b_reply_error(r, 400, "metadata.%s: expected a string",
					e2b_ctl_esc(k, e, sizeof(e)));
			return false;
		}
	}
	return true;
}

/* envVars over the template's env; false once the error is answered */
static bool merge_env(struct e2b_req *r, json_t *spec, json_t *env_vars)
{
	json_t *env = json_object_get(spec, "env"), *v;
	const char *k;

	if (!env_vars || json_is_null(env_vars))
		return true;
	if (!json_is_object(env_vars)) {
		e2b_reply_error(r, 400, "envVars: expected an object of string values");
		return false;
	}
	if (!json_is_object(env)) {
		env = json_object();
		json_object_set_new(spec, "env", env);
	}
	json_object_foreach(env_vars, k, v)
	{
		char e[72];

		if (!json_is_string(v)) {
			e2b_reply_error(r, 400, "envVars.%s: expected a string",
					e2b_ctl_esc(k, e, sizeof(e)));
			return false;
		}
		json_object_set(env, k, v); /* the spec parser judges the name */
	}
	return true;
}

void e2b_ctl_create(struct e2b_req *r, bool v2)
{
	json_t *body = e2b_ctl_body(r, true), *tmpl_v, *spec = NULL, *meta, *cmeta;
	struct netmap nm = { 0 };
	paddock_error err = { 0 };
	const char *tmpl;
	struct box *b = NULL;
	int64_t ttl;
	char e[72];
	int aia;

	if (!body)
		return;
	tmpl_v = json_object_get(body, "templateID");
	if (tmpl_v && !json_is_string(tmpl_v)) {
		e2b_reply_error(r, 400, "templateID: expected a template name");
		goto out;
	}
	tmpl = tmpl_v ? json_string_value(tmpl_v) : "base";
	/* --e2b-templates first, then the tenant's templates in paddockd (POST /v1/templates) */
	spec = json_is_object(json_object_get(r->e->templates, tmpl))
		       ? json_deep_copy(json_object_get(r->e->templates, tmpl))
		       : svc_template_spec(r->d, r->tenant, tmpl);
	if (!spec) {
		e2b_reply_error(r, 404, "template '%s' not found", e2b_ctl_esc(tmpl, e, sizeof(e)));
		goto out;
	}
	cmeta = json_object_get(body, "metadata");
	if (!e2b_ctl_seconds(r, body, "timeout", v2 ? CREATE_DEFAULT_V2_S : CREATE_DEFAULT_V1_S,
			     &ttl) ||
	    !check_unsupported(r, body) || !check_metadata(r, cmeta))
		goto out;
	if (!merge_env(r, spec, json_object_get(body, "envVars")) ||
	    !e2b_ctl_create_network(r, body, spec, &nm))
		goto out;
	/* envd's working directory, and so the code interpreter's contexts' (E2B's default) */
	if (!json_object_get(spec, "cwd"))
		json_object_set_new(spec, "cwd", json_string("/home/user"));
	meta = json_is_object(cmeta) ? json_deep_copy(cmeta) : json_object();
	json_object_set_new(meta, META_TEMPLATE, json_string(tmpl));
	aia = e2b_ctl_internet(r, body);
	if (aia >= 0)
		json_object_set_new(meta, META_INTERNET, json_string(aia ? "true" : "false"));
	json_object_set_new(spec, "metadata", meta);
	json_object_set_new(spec, "ttl_s", json_integer(ttl));
	/* paused with its memory whatever autoPauseMemory says: a freezer keeps it all */
	if (json_is_true(json_object_get(body, "autoPause")))
		json_object_set_new(spec, "on_timeout", json_string("pause"));
	if (svc_box_create(r->d, r->tenant, spec, &b, &err) < 0) {
		e2b_ctl_reply_paddock_error(r, &err, &nm);
		goto out;
	}
	e2b_reply_json(r, 201, e2b_ctl_sandbox_json(r->e, b));
out:
	json_decref(spec);
	json_decref(body);
}

/* ---- one sandbox ------------------------------------------------------------------------- */

/* As PUT /v1/sandboxes/{id}/ttl: recorded so a restart keeps it, or unchanged (503). */
static bool set_expiry(struct e2b_req *r, struct box *b, int64_t seconds)
{
	int64_t ttl = b->ttl_s, expires = b->expires_ms;
	paddock_error err = { 0 };

	b->ttl_s = seconds;
	b->expires_ms = svc_now_ms() + seconds * 1000;
	if (svc_box_persist(b, &err) < 0) {
		b->ttl_s = ttl;
		b->expires_ms = expires;
		e2b_ctl_reply_paddock_error(r, &err, NULL);
		return false;
	}
	return true;
}

/*
 * Resumes a paused sandbox, which then ends `t` seconds from now, as E2B's resume does
 * (a paused one's expiry was its time kept paused). False once the error is answered.
 */
static bool resume_for(struct e2b_req *r, struct box *b, int64_t t)
{
	paddock_error err = { 0 };

	if (svc_box_resume(b, &err) < 0) {
		e2b_ctl_reply_paddock_error(r, &err, NULL);
		return false;
	}
	return set_expiry(r, b, t);
}

/*
 * A sandbox stopped through paddockd's API (POST /v1/sandboxes/{id}/stop) is started, and
 * then ends `t` seconds from now, as a resumed one. False once the error is answered.
 */
static bool start_for(struct e2b_req *r, struct box *b, int64_t t)
{
	paddock_error err = { 0 };

	if (svc_box_start(b, &err) < 0) {
		e2b_ctl_reply_paddock_error(r, &err, NULL);
		return false;
	}
	return set_expiry(r, b, t);
}

/*
 * POST /v2/sandboxes/{id}/connect: a running sandbox's timeout only grows (200); a paused
 * one is resumed with the timeout (201, as E2B answers a resume); one stopped through
 * paddockd's API is started (201: E2B has no stop, only this way back).
 */
void e2b_ctl_connect(struct e2b_req *r, const char *id)
{
	json_t *body = e2b_ctl_body(r, true);
	bool resumed = false;
	struct box *b;
	int64_t t;

	if (!body)
		return;
	if (!e2b_ctl_seconds(r, body, "timeout", CONNECT_DEFAULT_S, &t))
		goto out;
	b = svc_box_find(r->d, r->tenant, id);
	if (b && b->stopped && b->kept_image[0]) {
		if (!start_for(r, b, t))
			goto out;
		e2b_reply_json(r, 201, e2b_ctl_sandbox_json(r->e, b));
		goto out;
	}
	b = e2b_ctl_find_live(r, id);
	if (!b)
		goto out;
	svc_box_touch(b);
	if (b->paused) {
		if (!resume_for(r, b, t))
			goto out;
		resumed = true;
	} else if (svc_now_ms() + t * 1000 > b->expires_ms && !set_expiry(r, b, t)) {
		goto out;
	}
	e2b_reply_json(r, resumed ? 201 : 200, e2b_ctl_sandbox_json(r->e, b));
out:
	json_decref(body);
}

/* POST /sandboxes/{id}/pause: 204; 409 when it is paused already (the SDK's false) */
void e2b_ctl_pause(struct e2b_req *r, const char *id)
{
	json_t *body = e2b_ctl_body(r, true);
	paddock_error err = { 0 };
	struct box *b;
	char e[72];

	if (!body)
		return;
	json_decref(body); /* "memory": false asks for less than a freezer keeps: all is kept */
	b = e2b_ctl_find_live(r, id);
	if (!b)
		return;
	if (b->paused)
		return e2b_reply_error(r, 409, "sandbox '%s' is already paused",
				       e2b_ctl_esc(id, e, sizeof(e)));
	if (svc_box_pause(b, &err) < 0)
		return e2b_ctl_reply_paddock_error(r, &err, NULL);
	e2b_ctl_reply_empty(r, 204);
}

/* POST /sandboxes/{id}/resume (E2B's older call): 201 with the sandbox; 409 when running */
void e2b_ctl_resume(struct e2b_req *r, const char *id)
{
	json_t *body = e2b_ctl_body(r, true);
	struct box *b;
	int64_t t;
	char e[72];

	if (!body)
		return;
	if (!e2b_ctl_seconds(r, body, "timeout", CREATE_DEFAULT_V1_S, &t))
		goto out;
	b = e2b_ctl_find_live(r, id);
	if (!b)
		goto out;
	if (!b->paused) {
		e2b_reply_error(r, 409, "sandbox '%s' is already running",
				e2b_ctl_esc(id, e, sizeof(e)));
		goto out;
	}
	if (resume_for(r, b, t))
		e2b_reply_json(r, 201, e2b_ctl_sandbox_json(r->e, b));
out:
	json_decref(body);
}

/* POST /sandboxes/{id}/timeout: the sandbox ends `timeout` seconds from now */
void e2b_ctl_set_timeout(struct e2b_req *r, const char *id)
{
	json_t *body = e2b_ctl_body(r, false);
	struct box *b;
	int64_t t;

	if (!body)
		return;
	if (!json_is_number(json_object_get(body, "timeout"))) {
		e2b_reply_error(r, 400, "timeout: expected whole seconds from 0 to %d",
				E2B_MAX_TTL_S);
		goto out;
	}
	if (!e2b_ctl_seconds(r, body, "timeout", 0, &t))
		goto out;
	b = e2b_ctl_find_live(r, id);
	if (!b)
		goto out;
	if (set_expiry(r, b, t))
		e2b_ctl_reply_empty(r, 204);
out:
	json_decref(body);
}

void e2b_ctl_kill(struct e2b_req *r, const char *id)
{
	struct box *b = svc_box_find(r->d, r->tenant, id);

	if (!b)
		return e2b_ctl_reply_not_found(r, id);
	paddock_error err = { 0 };

	/* 204 once init is killed; the kernel's teardown finishes off the request path */
	if (svc_box_delete(b, "deleted", NULL, false, &err) < 0)
		return e2b_ctl_reply_paddock_error(r, &err, NULL);
	e2b_ctl_reply_empty(r, 204);
}
