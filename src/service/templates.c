/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Templates (docs/api.md, "Templates"): a tenant's named specs, kept in the store, and what a
 * create that names one gets: the template's spec (the tenant's own, else the operator's)
 * with the request's fields over it. The API on them is paddockd's (api-templates.c).
 *
 * Trust: names and specs come from API clients: nothing of a stored template is trusted to be
 * valid later (a create re-validates it).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

#define TEMPLATE_NAME_MAX 63

bool svc_template_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > TEMPLATE_NAME_MAX ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

json_t *svc_template_json(const struct paddock_store_template *t)
{
	json_t *spec = json_loads(t->spec_json, 0, NULL);

	return json_pack("{s:s,s:o,s:s,s:I}", "name", t->name, "spec", spec ? spec : json_object(),
			 "owner", strcmp(t->tenant, SVC_LOCAL_TENANT) == 0 ? "operator" : "tenant",
			 "created_at", (json_int_t)(t->created_ms / 1000));
}

int svc_template_collect(const struct paddock_store_template *t, void *userdata)
{
	struct svc_template_found *f = userdata;
	json_t *o = svc_template_json(t);

	if (!o)
		return -ENOMEM;
	if (f->list) {
		/* the operator's templates a tenant's own of the same name hide */
		size_t i;
		json_t *v;

		json_array_foreach(
			f->list, i,
			v) if (strcmp(json_string_value(json_object_get(v, "name")), t->name) == 0)
		{
			json_decref(o);
			return 0;
		}
		return json_array_append_new(f->list, o) < 0 ? -ENOMEM : 0;
	}
	json_decref(f->one);
	f->one = o;
	return 0;
}

/* The template `name` this tenant may use (its own first): 1 with *ret, 0 when none. */
int svc_template_lookup(struct daemon *d, const char *tenant, const char *name, json_t **ret,
			paddock_error *err)
{
	struct svc_template_found f = { 0 };
	int r;

	*ret = NULL;
	r = paddock_store_list_templates(d->store, tenant, name, svc_template_collect, &f, err);
	if (r == 0 && strcmp(tenant, SVC_LOCAL_TENANT) != 0)
		r = paddock_store_list_templates(d->store, SVC_LOCAL_TENANT, name,
						 svc_template_collect, &f, err);
	if (r < 0) {
		json_decref(f.one);
		return r;
	}
	*ret = f.one;
	return f.one ? 1 : 0;
}

/*
 * The request's fields over the template's spec: a section the request gives replaces the
 * template's, but for objects (limits, network, env, ...) whose members are replaced one by
 * one, so {"limits": {"memory": "1G"}} keeps the template's other limits.
 */
static int merge_over(json_t *base, json_t *body)
{
	const char *k;
	json_t *v;

	json_object_foreach(body, k, v)
	{
		json_t *b = json_object_get(base, k);

		if (json_is_object(v) && json_is_object(b)) {
			if (json_object_update(b, v) < 0)
				return -ENOMEM;
		} else if (json_object_set(base, k, v) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

json_t *svc_template_spec(struct daemon *d, const char *tenant, const char *name)
{
	paddock_error err = { 0 };
	json_t *t = NULL, *spec = NULL;

	if (!svc_template_name_valid(name) || svc_template_lookup(d, tenant, name, &t, &err) <= 0)
		return NULL;
	spec = json_deep_copy(json_object_get(t, "spec"));
	json_decref(t);
	return spec;
}

/* The create's field "template" at fault. */
int svc_template_apply(struct daemon *d, const char *tenant, json_t *body, paddock_error *err)
{
	json_t *name = json_object_get(body, "template"), *t = NULL, *spec;
	paddock_error cause = { 0 };
	int r;

	if (!name)
		return 0;
	if (!json_is_string(name) || !svc_template_name_valid(json_string_value(name)))
		return paddock_fail_field(err, EINVAL, "template",
					  "expected a template's name (1 to 63 of a-z, 0-9, "
					  "'.', '_', '-', starting with a letter or digit)");
	r = svc_template_lookup(d, tenant, json_string_value(name), &t, &cause);
	if (r < 0)
		return svc_store_error(err, &cause);
	if (r == 0)
		return paddock_fail_field(err, ENOENT, "template",
					  "no template '%s' (GET /v1/templates lists those "
					  "you may use)",
					  json_string_value(name));
	spec = json_deep_copy(json_object_get(t, "spec"));
	json_decref(t);
	if (!spec)
		return paddock_fail(err, ENOMEM, "template");
	json_object_del(body, "template");
	r = merge_over(spec, body);
	if (r >= 0)
		r = json_object_update(body, spec) < 0 ? -ENOMEM : 0;
	json_decref(spec);
	return r < 0 ? paddock_fail(err, ENOMEM, "template") : 0;
}
