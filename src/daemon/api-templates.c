/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Templates (docs/api.md, "Templates"): a tenant's named specs, kept in the store.
 *
 *   POST   /v1/templates          {"name": N, "spec": {...}}  201, 409 when N exists
 *   PUT    /v1/templates/{name}   {"spec": {...}}             200 (made or replaced)
 *   (a new one past the tenant's d->max_templates, --max-templates: 429)
 *   GET    /v1/templates          the tenant's, then the operator's it may use
 *   GET    /v1/templates/{name}
 *   DELETE /v1/templates/{name}   204
 *
 * A create names one with "template": its spec is the base and the request's own fields
 * override it, section by section (svc_template_apply()). A tenant sees and uses its own
 * templates and the operator's (those made on the unix socket); its own win on a name both
 * have. A spec is checked when it is stored (it must be one paddock can create) and again,
 * with the request's fields and the tenant's host-path and network ceilings, at each create.
 *
 * Trust: names and specs come from API clients: a name is a short word of [a-z0-9._-], a
 * spec is parsed by libpaddock's spec parser before it is stored, and nothing of a stored
 * template is trusted to be valid later (a create re-validates it).
 */
#include <errno.h>
#include <event2/http.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A spec that paddock can create, as JSON text (the caller frees it). */
static char *check_spec(struct request *r, json_t *spec)
{
	paddock_spec *s = NULL;
	paddock_error err = { 0 };
	char *text = json_dumps(spec, JSON_COMPACT);
	int k;

	if (!text) {
		pdd_reply_error(r, 500, "internal", "spec", "format the spec");
		return NULL;
	}
	k = paddock_spec_new(&s, &err);
	if (k >= 0)
		k = paddock_spec_load_json(s, text, strlen(text), &err);
	if (k >= 0)
		k = paddock_spec_validate(s, &err);
	/* the operator's network ceiling, on the spec with its defaults (as a create checks) */
	if (k >= 0)
		k = svc_check_max_network(r->d, s, &err);
	paddock_spec_free(s);
	if (k < 0) {
		if (err.field[0] && strncmp(err.field, "spec", 4) != 0) {
			char field[sizeof(err.field)];

			snprintf(field, sizeof(field), "spec.%.58s", err.field);
			snprintf(err.field, sizeof(err.field), "%s", field);
		}
		pdd_reply_paddock_error(r, &err);
		free(text);
		return NULL;
	}
	return text;
}

static int count_only(const struct paddock_store_template *t, void *userdata)
{
	(void)t;
	(void)userdata;
	return 0;
}

/*
 * Whether the tenant may have one template more: 0; -EAGAIN, answered 429 naming the bound,
 * when it has d->max_templates already (the store would grow without bound: a spec is up to
 * a body's 1 MiB); the store's -errno in err, unanswered.
 */
static int check_count(struct request *r, paddock_error *err)
{
	int n = paddock_store_list_templates(r->d->store, r->tenant, NULL, count_only, NULL, err);

	if (n < 0)
		return n;
	if ((unsigned)n < r->d->max_templates)
		return 0;
	pdd_reply_error(r, 429, "limit", "max_templates",
			"tenant '%s' has %d templates, the most allowed (max_templates %u): "
			"DELETE one first, or PUT over one it has",
			r->tenant, n, r->d->max_templates);
	return -EAGAIN;
}

static void put(struct request *r, const char *name, bool create)
{
	static const char *const post_fields[] = { "name", "spec", NULL };
	static const char *const put_fields[] = { "spec", NULL };
	json_t *body = pdd_body_object(r, false), *spec, *answer;
	paddock_error err = { 0 };
	char *text = NULL;
	int k;

	if (!body)
		return;
	if (!pdd_check_fields(r, body, create ? post_fields : put_fields))
		goto out;
	if (create)
		name = json_string_value(json_object_get(body, "name"));
	if (!svc_template_name_valid(name)) {
		pdd_reply_error(r, 400, "invalid", "name",
				"expected 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a "
				"letter or digit");
		goto out;
	}
	spec = json_object_get(body, "spec");
	if (!json_is_object(spec)) {
		pdd_reply_error(r, 400, "invalid", "spec", "expected a spec object (docs/spec.md)");
		goto out;
	}
	text = check_spec(r, spec);
	if (!text)
		goto out;
	k = paddock_store_list_templates(r->d->store, r->tenant, name, count_only, NULL, &err);
	if (k > 0 && create) {
		pdd_reply_error(r, 409, "conflict", "name",
				"template '%s' exists: PUT /v1/templates/%s replaces it", name,
				name);
		goto out;
	}
	/* a new one counts against the tenant's bound; one replaced does not */
	if (k == 0)
		k = check_count(r, &err);
	if (k < 0) {
		if (k != -EAGAIN) {
			paddock_error e = { 0 };

			svc_store_error(&e, &err);
			pdd_reply_paddock_error(r, &e);
		}
		goto out;
	}
	struct paddock_store_template t = {
		.tenant = r->tenant, .name = name, .spec_json = text, .created_ms = now_ms()
	};

	k = paddock_store_put_template(r->d->store, &t, &err);
	if (k < 0) {
		paddock_error e = { 0 };

		svc_store_error(&e, &err);
		pdd_reply_paddock_error(r, &e);
		goto out;
	}
	answer = svc_template_json(&t);
	pdd_reply_json(r, create ? 201 : 200, answer);
out:
	free(text);
	json_decref(body);
}

void pdd_api_templates(struct request *r)
{
	const char *name = r->n_seg == 3 ? r->seg[2] : NULL;
	paddock_error err = { 0 };
	json_t *one = NULL;
	int k;

	if (r->n_seg > 3)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	if (name && !svc_template_name_valid(name))
		return pdd_reply_error(r, 404, "not_found", "name", "no such template");
	if (!name && r->method == EVHTTP_REQ_POST)
		return put(r, NULL, true);
	if (name && r->method == EVHTTP_REQ_PUT)
		return put(r, name, false);
	if (!name && r->method == EVHTTP_REQ_GET) {
		struct svc_template_found f = { .list = json_array() };

		k = f.list ? paddock_store_list_templates(r->d->store, r->tenant, NULL,
							  svc_template_collect, &f, &err)
			   : paddock_fail(&err, ENOMEM, "templates");
		if (k >= 0 && strcmp(r->tenant, SVC_LOCAL_TENANT) != 0)
			k = paddock_store_list_templates(r->d->store, SVC_LOCAL_TENANT, NULL,
							 svc_template_collect, &f, &err);
		if (k < 0) {
			json_decref(f.list);
			return pdd_reply_paddock_error(r, &err);
		}
		return pdd_reply_json(r, 200, json_pack("{s:o}", "templates", f.list));
	}
	if (name && r->method == EVHTTP_REQ_GET) {
		k = svc_template_lookup(r->d, r->tenant, name, &one, &err);
		if (k < 0)
			return pdd_reply_paddock_error(r, &err);
		if (k == 0)
			return pdd_reply_error(r, 404, "not_found", "name", "no template '%s'",
					       name);
		return pdd_reply_json(r, 200, one);
	}
	if (name && r->method == EVHTTP_REQ_DELETE) {
		/* a tenant deletes its own only: the operator's are not its to remove */
		k = paddock_store_delete_template(r->d->store, r->tenant, name, &err);
		if (k < 0)
			return pdd_reply_paddock_error(r, &err);
		return pdd_reply_empty(r, 204);
	}
	pdd_reply_error(r, 405, "method_not_allowed", NULL,
			name ? "expected GET, PUT or DELETE" : "expected GET or POST");
}
