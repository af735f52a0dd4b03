/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks a tool's arguments against the very inputSchema tools/list publishes, so what an
 * agent is told and what is enforced cannot drift apart. The subset of JSON Schema the
 * tools use: type (one or a list), properties, required, additionalProperties: false,
 * items, enum, minimum, maximum, minLength, maxLength, maxItems,
 * maxProperties. Unknown keywords are ignored, as the standard says. No string may hold a
 * NUL byte (the parser already refuses \u0000): every one ends up in a C string.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"

static bool is_type(json_t *v, const char *type)
{
	if (!strcmp(type, "object"))
		return json_is_object(v);
	if (!strcmp(type, "array"))
		return json_is_array(v);
	if (!strcmp(type, "string"))
		return json_is_string(v);
	if (!strcmp(type, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(type, "null"))
		return json_is_null(v);
	if (!strcmp(type, "number"))
		return json_is_number(v);
	if (!strcmp(type, "integer"))
		return json_is_integer(v) ||
		       (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
			fabs(json_real_value(v)) < 9007199254740992.0);
	return false;
}

/* "a string or an integer" for the message */
static void type_names(json_t *type, char *buf, size_t size)
{
	size_t i, n = json_is_array(type) ? json_array_size(type) : 1;
	int off = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *t =
			json_string_value(json_is_array(type) ? json_array_get(type, i) : type);

		off += snprintf(buf + off, size - (size_t)off, "%s%s%s",
				i == 0	     ? ""
				: i + 1 == n ? " or "
					     : ", ",
				t && (t[0] == 'a' || t[0] == 'i' || t[0] == 'o') ? "an " : "a ",
				t ? t : "?");
		if ((size_t)off >= size)
			return;
	}
}

static bool type_ok(json_t *v, json_t *type)
{
	size_t i;
	json_t *t;

	if (json_is_string(type))
		return is_type(v, json_string_value(type));
	json_array_foreach(type, i, t) if (json_is_string(t) &&
					   is_type(v, json_string_value(t))) return true;
	return false;
}

static int check(json_t *schema, json_t *v, char *field, size_t size, paddock_error *err);

static int check_object(json_t *schema, json_t *v, char *field, size_t size, paddock_error *err)
{
	json_t *props = json_object_get(schema, "properties"),
	       *req = json_object_get(schema, "required");
	json_t *addl = json_object_get(schema, "additionalProperties"), *m;
	size_t len = strlen(field), i;
	const char *key;
	int r;

	json_array_foreach(req, i, m)
	{
		if (!json_is_string(m) || json_object_get(v, json_string_value(m)))
			continue;
		snprintf(field + len, size - len, "%s%s", len ? "." : "", json_string_value(m));
		r = paddock_fail_field(err, EINVAL, field, "is required");
		field[len] = '\0';
		return r;
	}
	json_object_foreach(v, key, m)
	{
		json_t *sub = props ? json_object_get(props, key) : NULL;

		snprintf(field + len, size - len, "%s%s", len ? "." : "", key);
		if (!sub && json_is_object(addl))
			sub = addl;
		if (!sub && json_is_false(addl)) {
			char known[256] = "";
			const char *k;
			json_t *unused;
			int off = 0;

			json_object_foreach(props, k, unused)
			{
				off += snprintf(known + off, sizeof(known) - (size_t)off, "%s'%s'",
						off ? ", " : "", k);
				if ((size_t)off >= sizeof(known))
					break;
			}
			r = paddock_fail_field(err, EINVAL, field,
					       "unknown argument; expected one of %s", known);
			field[len] = '\0';
			return r;
		}
		r = sub ? check(sub, m, field, size, err) : 0;
		field[len] = '\0';
		if (r < 0)
			return r;
	}
	m = json_object_get(schema, "maxProperties");
	if (json_is_integer(m) && json_object_size(v) > (size_t)json_integer_value(m))
		return paddock_fail_field(err, EINVAL, len ? field : "arguments",
					  "expected at most %lld entries",
					  (long long)json_integer_value(m));
	return 0;
}

static int check_array(json_t *schema, json_t *v, char *field, size_t size, paddock_error *err)
{
	json_t *items = json_object_get(schema, "items"),
	       *max = json_object_get(schema, "maxItems");
	size_t len = strlen(field), i;
	json_t *m;
	int r;

	if (json_is_integer(max) && json_array_size(v) > (size_t)json_integer_value(max))
		return paddock_fail_field(err, EINVAL, field, "expected at most %lld items",
					  (long long)json_integer_value(max));
	if (!json_is_object(items))
		return 0;
	json_array_foreach(v, i, m)
	{
		snprintf(field + len, size - len, "[%zu]", i);
		r = check(items, m, field, size, err);
		field[len] = '\0';
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_scalar(json_t *schema, json_t *v, const char *field, paddock_error *err)
{
	json_t *e = json_object_get(schema, "enum"), *m;
	size_t i;

	if (json_is_array(e)) {
		bool found = false;

		json_array_foreach(e, i, m) found = found || json_equal(m, v);
		if (!found) {
			char *list = json_dumps(e, JSON_COMPACT);
			int r = paddock_fail_field(err, EINVAL, field, "expected one of %s",
						   list ? list : "the listed values");

			free(list);
			return r;
		}
	}
	if (json_is_number(v)) {
		double x = json_number_value(v);

		m = json_object_get(schema, "minimum");
		if (json_is_number(m) && x < json_number_value(m))
			return paddock_fail_field(err, EINVAL, field, "expected at least %g",
						  json_number_value(m));
		m = json_object_get(schema, "maximum");
		if (json_is_number(m) && x > json_number_value(m))
			return paddock_fail_field(err, EINVAL, field, "expected at most %g",
						  json_number_value(m));
	}
	if (json_is_string(v)) {
		size_t n = json_string_length(v);

		if (strlen(json_string_value(v)) != n)
			return paddock_fail_field(err, EINVAL, field, "a string holds a NUL byte");
		m = json_object_get(schema, "minLength");
		if (json_is_integer(m) && n < (size_t)json_integer_value(m))
			return paddock_fail_field(err, EINVAL, field,
						  "expected at least %lld characters",
						  (long long)json_integer_value(m));
		m = json_object_get(schema, "maxLength");
		/* bytes, not characters: stricter for non-ASCII, never looser */
		if (json_is_integer(m) && n > (size_t)json_integer_value(m))
			return paddock_fail_field(err, EINVAL, field, "expected at most %lld bytes",
						  (long long)json_integer_value(m));
	}
	return 0;
}

static int check(json_t *schema, json_t *v, char *field, size_t size, paddock_error *err)
{
	json_t *type = json_object_get(schema, "type");

	if (type && !type_ok(v, type)) {
		char names[96];

		type_names(type, names, sizeof(names));
		return paddock_fail_field(err, EINVAL, field[0] ? field : "arguments",
					  "expected %s", names);
	}
	if (json_is_object(v))
		return check_object(schema, v, field, size, err);
	if (json_is_array(v))
		return check_array(schema, v, field, size, err);
	return check_scalar(schema, v, field[0] ? field : "arguments", err);
}

int mcp_schema_check(json_t *schema, json_t *value, paddock_error *err)
{
	char field[sizeof(err->field)] = "";

	return check(schema, value, field, sizeof(field), err);
}
