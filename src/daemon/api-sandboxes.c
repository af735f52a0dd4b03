/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /v1/sandboxes: create, list, get, delete, extend the TTL, pause and resume, stop and start
 * (docs/api.md "Sandboxes", "Pause and resume", "Stop and start").
 */
#include <errno.h>
#include <event2/http.h>
#include <string.h>

#include "daemon.h"

static void create(struct request *r)
{
	paddock_error err = { 0 };
	struct box *b = NULL;
	const char *key = r->req ? evhttp_find_header(evhttp_request_get_input_headers(r->req),
						      "Idempotency-Key")
				 : NULL;
	bool replayed = false;
	json_t *body;

	if (key && !svc_idempotency_key_valid(key))
		return pdd_reply_error(r, 400, "invalid", "Idempotency-Key",
				       "expected 1 to %d printable ASCII characters without spaces",
				       SVC_MAX_IDEM_KEY);
	body = pdd_body_object(r, true);
	if (!body)
		return;
	if (svc_box_create_keyed(r->d, r->tenant, body, key, &b, &replayed, &err) < 0) {
		json_decref(body);
		return pdd_reply_paddock_error(r, &err);
	}
	json_decref(body);
	/* a retry gets what the first create got: the same sandbox, and says it is a replay */
	if (replayed)
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Idempotent-Replayed",
				  "true");
	pdd_reply_json(r, 201, svc_box_json(b));
}

static void list(struct request *r)
{
	json_t *a = json_array();

	for (struct box *b = r->d->boxes; b; b = b->next)
		if (strcmp(b->tenant, r->tenant) == 0)
			json_array_append_new(a, svc_box_json(b));
	pdd_reply_json(r, 200, json_pack("{s:o}", "sandboxes", a));
}

static void set_ttl(struct request *r, struct box *b)
{
	static const char *const fields[] = { "ttl_s", NULL };
	json_t *body = pdd_body_object(r, false), *v;

	if (!body)
		return;
	if (!pdd_check_fields(r, body, fields)) {
		json_decref(body);
		return;
	}
	v = json_object_get(body, "ttl_s");
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > E2B_MAX_TTL_S) {
		json_decref(body);
		return pdd_reply_error(r, 400, "invalid", "ttl_s",
				       "expected whole seconds from 1 to %d", E2B_MAX_TTL_S);
	}
	int64_t ttl = b->ttl_s, expires = b->expires_ms;
	paddock_error err = { 0 };

	b->ttl_s = json_integer_value(v);
	b->expires_ms = svc_now_ms() + b->ttl_s * 1000;
	json_decref(body);
	if (svc_box_persist(b, &err) < 0) {
		b->ttl_s = ttl; /* a restart would bring the old expiry back: keep it now too */
		b->expires_ms = expires;
		return pdd_reply_paddock_error(r, &err);
	}
	pdd_reply_json(r, 200, svc_box_json(b));
}

/* POST .../pause and .../resume: idempotent, 200 with the sandbox either way */
static void pause_resume(struct request *r, struct box *b, bool pause)
{
	static const char *const no_fields[] = { NULL };
	json_t *body = pdd_body_object(r, true); /* none, or {} */
	paddock_error err = { 0 };
	bool ok = body && pdd_check_fields(r, body, no_fields);

	json_decref(body);
	if (!ok)
		return;
	if ((pause ? svc_box_pause(b, &err) : svc_box_resume(b, &err)) < 0) {
		/* the freezer did not settle in time (a task stuck in the kernel): undone, retry */
		if (err.code == ETIMEDOUT)
			return pdd_reply_error(r, 503, "unavailable", "state",
					       "%s; nothing changed, a retry may work", err.msg);
		return pdd_reply_paddock_error(r, &err);
	}
	pdd_reply_json(r, 200, svc_box_json(b));
}

/* POST .../stop and .../start: idempotent, 200 with the sandbox either way */
static void stop_start(struct request *r, struct box *b, bool stop)
{
	static const char *const no_fields[] = { NULL };
	json_t *body = pdd_body_object(r, true); /* none, or {} */
	paddock_error err = { 0 };
	bool ok = body && pdd_check_fields(r, body, no_fields);

	json_decref(body);
	if (!ok)
		return;
	if ((stop ? svc_box_stop(b, &err) : svc_box_start(b, &err)) < 0) {
		/* the sandbox's state forbids it (not a request the server cannot do): 409 */
		if (err.code == ESRCH || (err.code == EOPNOTSUPP && !strcmp(err.field, "image")))
			return pdd_reply_error(r, 409, "conflict", err.field[0] ? err.field : NULL,
					       "%s", err.msg);
		return pdd_reply_paddock_error(r, &err);
	}
	pdd_reply_json(r, 200, svc_box_json(b));
}

void pdd_api_sandboxes(struct request *r)
{
	struct box *b;

	if (r->n_seg == 2) {
		if (r->method == EVHTTP_REQ_POST)
			return create(r);
		if (r->method == EVHTTP_REQ_GET)
			return list(r);
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET or POST");
	}
	b = svc_box_find(r->d, r->tenant, r->seg[2]);
	if (r->n_seg == 4) {
		if (r->method != EVHTTP_REQ_POST)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
		if (strcmp(r->seg[3], "pause") == 0 || strcmp(r->seg[3], "resume") == 0)
			return pause_resume(r, b, strcmp(r->seg[3], "pause") == 0);
		if (strcmp(r->seg[3], "stop") == 0 || strcmp(r->seg[3], "start") == 0)
			return stop_start(r, b, strcmp(r->seg[3], "stop") == 0);
		return set_ttl(r, b);
	}
	if (r->method == EVHTTP_REQ_GET)
		return pdd_reply_json(r, 200, svc_box_json(b));
	if (r->method == EVHTTP_REQ_DELETE) {
		const char *wait = pdd_query(r, "wait");

		if (wait && strcmp(wait, "0") && strcmp(wait, "1"))
			return pdd_reply_error(r, 400, "invalid", "wait", "expected 0 or 1");
		/*
		 * Teardown is off the request path: 204 once init is killed (nothing of the
		 * sandbox can run again, its id is gone); ?wait=1 answers once every process of
		 * it has exited, as the kernel finishes.
		 */
		paddock_error err = { 0 };
		bool waiting = wait && !strcmp(wait, "1");

		/* a removal the store cannot record fails: the sandbox stays, a retry may work */
		if (svc_box_delete(b, "deleted", waiting ? r : NULL, false, &err) < 0)
			return pdd_reply_paddock_error(r, &err);
		if (!waiting)
			pdd_reply_empty(r, 204);
		return;
	}
	pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET or DELETE");
}
