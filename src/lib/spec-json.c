/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A spec as JSON and as strings (docs/spec.md): read, every field checked and named when
 * wrong, set by name (paddock_spec_set()), and written back with its defaults. spec.c holds
 * the spec itself, its paths, environment and binds, and its validation.
 */
#include "spec.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <jansson.h>

#include "paddock/paddock.h"
#include "error.h"
#include "image-ref.h"
#include "util/cleanup.h"
#include "util/strv.h"

PD_DEFINE_CLEANUP(paddock_spec, paddock_spec_free)

/* ---- JSON in -------------------------------------------------------------------------- */

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "an unknown value";
}

/* A JSON string as a C string: jansson keeps "\u0000" (JSON_ALLOW_NUL), we refuse it. */
static int json_get_string(const char *field, const json_t *v, const char **ret, paddock_error *err)
{
	const char *s;

	if (!json_is_string(v))
		return pd_fail_field(err, EINVAL, field, "expected a string, got %s",
				     json_type_name(v));
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return pd_fail_field(
			err, EINVAL, field,
			"expected a string without NUL characters, got one at byte %zu", strlen(s));
	*ret = s;
	return 0;
}

typedef int (*load_fn)(paddock_spec *spec, json_t *v, const char *field, paddock_error *err);

/* A member of a JSON object: read by load, or, for a string field, given to set. */
struct json_field {
	const char *name;
	load_fn load;
	pd_spec_set_fn set;
};

/* "'timeout_s', 'disk'": the fields an object accepts, for a message. */
static const char *json_fields_join(const struct json_field *fields, size_t n, char *buf,
				    size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s'%s'", i > 0 ? ", " : "",
				      fields[i].name);
	return buf;
}

static int load_string(paddock_spec *spec, json_t *v, const char *field, pd_spec_set_fn set,
		       paddock_error *err)
{
	const char *s;
	int r;

	r = json_get_string(field, v, &s, err);
	if (r < 0)
		return r;
	return set(spec, field, s, err);
}

/* Applies each member of obj, in document order, with the loader its name selects. */
static int load_object(paddock_spec *spec, json_t *obj, const char *prefix,
		       const struct json_field *fields, size_t n, paddock_error *err)
{
	const char *key;
	json_t *v;
	int r;

	if (!json_is_object(obj))
		return pd_fail_field(err, EINVAL, prefix, "expected an object, got %s",
				     json_type_name(obj));
	json_object_foreach(obj, key, v)
	{
		const struct json_field *f = NULL;
		char field[PD_SPEC_FIELD_MAX], accepted[192];

		for (size_t i = 0; i < n && !f; i++)
			if (pd_spec_streq(fields[i].name, key))
				f = &fields[i];
		pd_spec_field_join(field, prefix, key);
		if (!f)
			return pd_fail_field(
				err, EINVAL, field, "unknown field '%s', expected one of %s",
				PD_ESC(key),
				json_fields_join(fields, n, accepted, sizeof(accepted)));
		if (f->load)
			r = f->load(spec, v, field, err);
		else
			r = load_string(spec, v, field, f->set, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A host path string, or null for "unset". */
static int load_optional_path(char **slot, json_t *v, const char *field, paddock_error *err)
{
	const char *path;
	int r;

	if (json_is_null(v)) {
		free(*slot);
		*slot = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return pd_fail_field(err, EINVAL, field, "expected a path string or null, got %s",
				     json_type_name(v));
	r = json_get_string(field, v, &path, err);
	if (r < 0)
		return r;
	return pd_spec_assign_path(slot, field, path, false, err);
}

static int load_rootfs(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	return load_optional_path(&spec->rootfs, v, field, err);
}

static int load_image(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *s;
	int r;

	if (json_is_null(v)) {
		free(spec->image);
		spec->image = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected an image reference string or null, got %s",
				     json_type_name(v));
	r = json_get_string(field, v, &s, err);
	if (r < 0)
		return r;
	return pd_spec_set_image(spec, field, s, err);
}

static int load_workspace(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	return load_optional_path(&spec->workspace, v, field, err);
}

static int load_env(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *key;
	json_t *m;
	int r;

	if (!json_is_object(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected an object of \"NAME\": \"VALUE\", got %s",
				     json_type_name(v));
	if (json_object_size(v) > PD_SPEC_MAX_ENV)
		return pd_fail_field(err, EINVAL, field, "expected at most %d variables, got %zu",
				     PD_SPEC_MAX_ENV, json_object_size(v));
	pd_spec_env_clear(spec);
	json_object_foreach(v, key, m)
	{
		_cleanup_free_ char *entry = NULL;
		char mfield[PD_SPEC_FIELD_MAX];
		const char *value;

		/* a name holding '=' would smuggle in another variable: checked before joining */
		r = pd_spec_check_env_name(key, strlen(key), err);
		if (r < 0)
			return r;
		r = json_get_string(pd_spec_field_join(mfield, field, key), m, &value, err);
		if (r < 0)
			return r;
		if (asprintf(&entry, "%s=%s", key, value) < 0) {
			entry = NULL;
			return pd_spec_oom(err);
		}
		r = pd_spec_env_put(spec, &entry, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_bind(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *source = NULL, *target = NULL, *key;
	char mfield[PD_SPEC_FIELD_MAX];
	bool readonly = false;
	json_t *m;
	int r;

	if (!json_is_object(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected an object with \"source\", got %s",
				     json_type_name(v));
	json_object_foreach(v, key, m)
	{
		pd_spec_field_join(mfield, field, key);
		if (pd_spec_streq(key, "source")) {
			r = json_get_string(mfield, m, &source, err);
		} else if (pd_spec_streq(key, "target")) {
			r = json_get_string(mfield, m, &target, err);
		} else if (pd_spec_streq(key, "readonly")) {
			if (!json_is_boolean(m))
				return pd_fail_field(err, EINVAL, mfield,
						     "expected true or false, got %s",
						     json_type_name(m));
			readonly = json_is_true(m);
			r = 0;
		} else {
			return pd_fail_field(err, EINVAL, mfield,
					     "unknown field '%s', expected one of 'source', "
					     "'target', 'readonly'",
					     PD_ESC(key));
		}
		if (r < 0)
			return r;
	}
	if (!source)
		return pd_fail_field(err, EINVAL, pd_spec_field_join(mfield, field, "source"),
				     "expected a host path, got nothing");
	return pd_spec_bind_add(spec, source, target, readonly, err);
}

static int load_binds(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	size_t i;
	json_t *m;
	int r;

	if (!json_is_array(v))
		return pd_fail_field(err, EINVAL, field, "expected an array, got %s",
				     json_type_name(v));
	if (json_array_size(v) > PD_SPEC_MAX_BINDS)
		return pd_fail_field(err, EINVAL, field, "expected at most %d binds, got %zu",
				     PD_SPEC_MAX_BINDS, json_array_size(v));
	pd_spec_binds_clear(spec);
	json_array_foreach(v, i, m)
	{
		char mfield[PD_SPEC_FIELD_MAX];

		snprintf(mfield, sizeof(mfield), "%s[%zu]", field, i);
		r = load_bind(spec, m, mfield, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_timeout(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	double t;
	int r;

	if (!json_is_number(v))
		return pd_fail_field(err, EINVAL, field, "expected a number of seconds, got %s",
				     json_type_name(v));
	t = json_number_value(v);
	r = pd_spec_check_timeout(field, t, err);
	if (r < 0)
		return r;
	spec->limits.timeout_s = t;
	return 0;
}

static int load_disk(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	uint64_t bytes;
	int r;

	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);

		if (n < 0)
			return pd_fail_field(
				err, EINVAL, field,
				"expected a size from 1M to 1T, got %" JSON_INTEGER_FORMAT, n);
		bytes = (uint64_t)n;
	} else if (json_is_string(v)) {
		const char *s;

		r = json_get_string(field, v, &s, err);
		if (r < 0)
			return r;
		if (pd_parse_size(s, &bytes) < 0)
			return pd_fail_field(err, EINVAL, field,
					     "expected a size such as '512M' or '1G', got '%s'",
					     PD_ESC(s));
	} else {
		return pd_fail_field(err, EINVAL, field,
				     "expected a size string such as '1G' or a byte count, got %s",
				     json_type_name(v));
	}
	r = pd_spec_check_disk(field, bytes, err);
	if (r < 0)
		return r;
	spec->limits.disk_bytes = bytes;
	return 0;
}

static const struct json_field limits_fields[] = {
	{ "timeout_s", load_timeout },
	{ "disk", load_disk },
};

static const struct json_field security_fields[] = {
	{ "landlock", .set = pd_spec_set_landlock },
};

/* timeout_s and disk here; the others by spec-limits.c's table. */
static int load_limits(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *key;
	json_t *m;
	int r;

	if (!json_is_object(v))
		return pd_fail_field(err, EINVAL, field, "expected an object, got %s",
				     json_type_name(v));
	json_object_foreach(v, key, m)
	{
		char sub[PD_SPEC_FIELD_MAX];
		bool done = false;

		pd_spec_field_join(sub, field, key);
		for (size_t i = 0; i < ELEMENTSOF(limits_fields); i++)
			if (pd_spec_streq(limits_fields[i].name, key)) {
				r = limits_fields[i].load(spec, m, sub, err);
				if (r < 0)
					return r;
				done = true;
			}
		if (done)
			continue;
		r = pd_spec_limit_load(spec, key, m, sub, err);
		if (r == -ENOENT)
			return pd_fail_field(err, EINVAL, sub,
					     "unknown field '%s', expected one of 'timeout_s', "
					     "'disk', 'memory', 'pids', 'cpus', 'cpu_time_s', "
					     "'file_size', 'nofile', 'output', 'required'",
					     PD_ESC(key));
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_security(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	return load_object(spec, v, field, security_fields, ELEMENTSOF(security_fields), err);
}

static int load_network(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	return pd_spec_network_load(spec, v, field, err);
}

static const struct json_field spec_fields[] = {
	{ "hostname", .set = pd_spec_set_hostname },
	{ "rootfs", load_rootfs },
	{ "image", load_image },
	{ "workspace", load_workspace },
	{ "cwd", .set = pd_spec_set_cwd },
	{ "user", .set = pd_spec_set_user },
	{ "env", load_env },
	{ "binds", load_binds },
	{ "limits", load_limits },
	{ "security", load_security },
	{ "network", load_network },
	{ "secrets", pd_spec_secrets_load },
};

/*
 * Whether brackets nest deeper than max. jansson allows 2048 levels and recurses for each;
 * a spec needs 3, so a deeper document is refused before jansson sees it. Strings are
 * skipped; on a malformed document the count may be off, and jansson refuses it anyway.
 */
static bool json_too_deep(const char *s, size_t len, unsigned max)
{
	bool in_string = false;
	unsigned depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				return true;
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return false;
}

/*
 * jansson's own wording quotes tokens ("'}' expected"), so its text is escaped but keeps
 * its single quotes. pd_escape() writes a backslash only to start an escape, so every
 * "\x27" in its output is an escaped quote.
 */
static const char *escape_keep_quotes(const char *s, char *buf, size_t size)
{
	char *o = buf;

	pd_escape(s, buf, size);
	for (const char *p = buf; *p;)
		if (strncmp(p, "\\x27", 4) == 0) {
			*o++ = '\'';
			p += 4;
		} else {
			*o++ = *p++;
		}
	*o = '\0';
	return buf;
}

/*
 * "what near 'token'": the token is a piece of the document, escaped on its own (quotes
 * too) inside quotes of ours.
 */
static int json_syntax_error(json_error_t *jerr, paddock_error *err)
{
	char *near = strstr(jerr->text, " near '");
	char what[128];
	size_t len;

	if (near) {
		*near = '\0';
		near += strlen(" near '");
		len = strlen(near);
		if (len > 0 && near[len - 1] == '\'')
			near[len - 1] = '\0';
	}
	escape_keep_quotes(jerr->text, what, sizeof(what));
	if (near)
		return pd_fail_field(err, EINVAL, "",
				     "invalid JSON at line %d, column %d: %s near '%s'", jerr->line,
				     jerr->column, what, PD_ESC(near));
	return pd_fail_field(err, EINVAL, "", "invalid JSON at line %d, column %d: %s", jerr->line,
			     jerr->column, what);
}

int paddock_spec_load_json(paddock_spec *spec, const char *json, size_t len, paddock_error *err)
{
	_cleanup_(paddock_spec_freep) paddock_spec *copy = NULL;
	_cleanup_(json_decrefp) json_t *root = NULL;
	paddock_spec tmp;
	json_error_t jerr;
	int r;

	if (!spec || (!json && len > 0))
		return pd_fail(err, EINVAL, "load spec: no spec or no JSON given");
	if (len > PD_SPEC_MAX_JSON)
		return pd_fail_field(err, EINVAL, "",
				     "expected a spec of at most %u bytes, got %zu bytes",
				     PD_SPEC_MAX_JSON, len);
	if (json_too_deep(json, len, PD_SPEC_MAX_JSON_DEPTH))
		return pd_fail_field(err, EINVAL, "", "expected JSON nested at most %d levels deep",
				     PD_SPEC_MAX_JSON_DEPTH);

	/* NUL is allowed here so that json_get_string() can refuse it naming the field */
	root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	/*
	 * jansson leaves the text empty when it cannot even start for lack of memory. Out of
	 * memory later in its lexer looks like a syntax error to it, and so to us: EINVAL.
	 */
	if (!root && (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0]))
		return pd_spec_oom(err);
	if (!root)
		return json_syntax_error(&jerr, err);
	if (!json_is_object(root))
		return pd_fail_field(err, EINVAL, "", "expected a JSON object, got %s",
				     json_type_name(root));

	r = pd_spec_dup(spec, &copy, err);
	if (r < 0)
		return r;
	r = load_object(copy, root, "", spec_fields, ELEMENTSOF(spec_fields), err);
	if (r < 0)
		return r;
	tmp = *spec;
	*spec = *copy;
	*copy = tmp; /* the old contents, freed on return */
	return 0;
}

/* ---- string setters ------------------------------------------------------------------- */

static int set_timeout(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	double t;
	int r;

	r = pd_parse_seconds(value, &t);
	if (r == -ENOMEM)
		return pd_spec_oom(err);
	if (r < 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected seconds such as '30' or '2.5', got '%s'",
				     PD_ESC(value));
	r = pd_spec_check_timeout(field, t, err);
	if (r < 0)
		return r;
	spec->limits.timeout_s = t;
	return 0;
}

static int set_disk(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	uint64_t bytes;
	int r;

	if (pd_parse_size(value, &bytes) < 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected a size such as '512M' or '1G', got '%s'",
				     PD_ESC(value));
	r = pd_spec_check_disk(field, bytes, err);
	if (r < 0)
		return r;
	spec->limits.disk_bytes = bytes;
	return 0;
}

static int set_env(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	_cleanup_free_ char *entry = NULL;

	(void)field; /* errors name "env" or "env.NAME" */
	entry = strdup(value);
	if (!entry)
		return pd_spec_oom(err);
	return pd_spec_env_put(spec, &entry, err);
}

/*
 * "SRC[:DST][:ro|:rw]". The last part is a mode only when it is exactly "ro" or "rw", so
 * "/data:ro" binds /data read-only at /data. Paths holding ':' cannot be given this way;
 * the JSON form takes any path.
 */
static int set_binds(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	_cleanup_free_ char *copy = NULL;
	char *parts[3], *p;
	bool readonly = false;
	size_t n = 1;

	for (const char *c = value; *c; c++)
		n += *c == ':';
	if (n > ELEMENTSOF(parts))
		return pd_fail_field(err, EINVAL, field, "expected SRC[:DST][:ro|:rw], got '%s'",
				     PD_ESC(value));
	copy = strdup(value);
	if (!copy)
		return pd_spec_oom(err);
	p = copy;
	for (size_t i = 0; i < n; i++)
		parts[i] = strsep(&p, ":");
	if (n >= 2 && (pd_spec_streq(parts[n - 1], "ro") || pd_spec_streq(parts[n - 1], "rw"))) {
		readonly = pd_spec_streq(parts[n - 1], "ro");
		n--;
	}
	if (n > 2)
		return pd_fail_field(
			err, EINVAL, field,
			"expected SRC[:DST][:ro|:rw], got '%s' (the mode must be 'ro' or 'rw')",
			PD_ESC(value));
	return pd_spec_bind_add(spec, parts[0], n == 2 ? parts[1] : NULL, readonly, err);
}

static const struct {
	const char *name;
	pd_spec_set_fn set;
} setters[] = {
	{ "hostname", pd_spec_set_hostname },
	{ "rootfs", pd_spec_set_rootfs },
	{ "image", pd_spec_set_image },
	{ "workspace", pd_spec_set_workspace },
	{ "cwd", pd_spec_set_cwd },
	{ "user", pd_spec_set_user },
	{ "env", set_env },
	{ "binds", set_binds },
	{ "limits.timeout_s", set_timeout },
	{ "limits.disk", set_disk },
	{ "security.landlock", pd_spec_set_landlock },
	{ "network.mode", NULL },
	{ "network.allow", NULL },
	{ "network.deny", NULL },
	{ "network.transparent", NULL },
	{ "network.max_connections", NULL },
	{ "secrets", NULL },
};

int paddock_spec_set(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	char accepted[512];
	size_t o = 0;

	if (!spec || !field || !value)
		return pd_fail(err, EINVAL, "set spec field: no spec, field or value given");
	for (size_t i = 0; i < ELEMENTSOF(setters); i++)
		if (pd_spec_streq(setters[i].name, field) && setters[i].set)
			return setters[i].set(spec, field, value, err);
	if (!strncmp(field, "network.", 8)) {
		int r = pd_spec_network_set(spec, field + 8, value, field, err);
		if (r != -ENOENT)
			return r;
	}
	if (pd_spec_streq(field, "secrets"))
		return pd_spec_secrets_set(spec, value, field, err);
	if (!strncmp(field, "limits.", 7)) {
		int r = pd_spec_limit_set(spec, field + 7, value, field, err);
		if (r != -ENOENT)
			return r;
	}

	accepted[0] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(setters) && o < sizeof(accepted); i++)
		o += (size_t)snprintf(accepted + o, sizeof(accepted) - o, "%s'%s'",
				      i > 0 ? ", " : "", setters[i].name);
	return pd_fail_field(err, EINVAL, PD_ESC(field), "unknown field '%s', expected one of %s",
			     PD_ESC(field), accepted);
}

/* ---- JSON out ------------------------------------------------------------------------- */

/* json_object_set_new() takes v even when it fails, and fails when v is NULL. */
static int put(json_t *obj, const char *key, json_t *v, paddock_error *err)
{
	if (json_object_set_new(obj, key, v) < 0)
		return pd_fail(err, ENOMEM, "build spec JSON");
	return 0;
}

/* A string, or null for NULL. Checked first: json_string() fails on bad UTF-8 too. */
static int put_string(json_t *obj, const char *key, const char *field, const char *s,
		      paddock_error *err)
{
	if (s && !pd_spec_utf8_valid(s))
		return pd_fail_field(err, EINVAL, field, "expected a UTF-8 string");
	return put(obj, key, s ? json_string(s) : json_null(), err);
}

/*
 * Whole seconds as an integer ("86400"), others as a real that jansson writes with 17
 * significant digits, which reads back as the same double.
 */
static json_t *timeout_to_json(double t)
{
	/* the range check first makes the cast defined; no floor(), so no libm */
	if (t >= 0 && t <= PD_SPEC_MAX_TIMEOUT_S && (double)(json_int_t)t == t)
		return json_integer((json_int_t)t);
	return json_real(t);
}

json_t *pd_spec_size_to_json(uint64_t bytes)
{
	static const char units[] = "TGMK";
	char buf[32];

	for (size_t i = 0; i < sizeof(units) - 1; i++) {
		unsigned shift = 10 * (unsigned)(4 - i);

		if (bytes > 0 && bytes % (UINT64_C(1) << shift) == 0) {
			snprintf(buf, sizeof(buf), "%" PRIu64 "%c", bytes >> shift, units[i]);
			return json_string(buf);
		}
	}
	return json_integer((json_int_t)bytes);
}

static int env_to_json(const paddock_spec *spec, json_t *obj, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *env = json_object();
	int r;

	if (!env)
		return pd_spec_oom(err);
	for (size_t i = 0; i < spec->n_env; i++) {
		const char *entry = spec->env[i], *eq = strchr(entry, '=');
		char name[PD_SPEC_ENV_NAME_MAX + 1];
		size_t len;

		if (!eq || (size_t)(eq - entry) > PD_SPEC_ENV_NAME_MAX)
			return pd_fail_field(err, EINVAL, "env",
					     "expected NAME=VALUE with a valid name in env[%zu]",
					     i);
		len = (size_t)(eq - entry);
		memcpy(name, entry, len);
		name[len] = '\0';
		r = put_string(env, name, "env", eq + 1, err);
		if (r < 0)
			return r;
	}
	return put(obj, "env", TAKE_PTR(env), err);
}

static int binds_to_json(const paddock_spec *spec, json_t *obj, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *binds = json_array();
	int r;

	if (!binds)
		return pd_spec_oom(err);
	for (size_t i = 0; i < spec->n_binds; i++) {
		_cleanup_(json_decrefp) json_t *b = json_object();
		char field[PD_SPEC_FIELD_MAX];

		if (!b)
			return pd_spec_oom(err);
		snprintf(field, sizeof(field), "binds[%zu]", i);
		r = put_string(b, "source", field, spec->binds[i].source, err);
		if (r < 0)
			return r;
		r = put_string(b, "target", field, spec->binds[i].target, err);
		if (r < 0)
			return r;
		r = put(b, "readonly", json_boolean(spec->binds[i].readonly), err);
		if (r < 0)
			return r;
		if (json_array_append_new(binds, TAKE_PTR(b)) < 0)
			return pd_spec_oom(err);
	}
	return put(obj, "binds", TAKE_PTR(binds), err);
}

/* A sub-object with one or two members; NULL values make it fail. */
static int put_section(json_t *obj, const char *key, const char *k1, json_t *v1, const char *k2,
		       json_t *v2, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *a = v1, *b = v2, *o = json_object();
	int r;

	if (!o || !a || (k2 && !b))
		return pd_spec_oom(err);
	r = put(o, k1, TAKE_PTR(a), err);
	if (r < 0)
		return r;
	if (k2) {
		r = put(o, k2, TAKE_PTR(b), err);
		if (r < 0)
			return r;
	}
	return put(obj, key, TAKE_PTR(o), err);
}

int paddock_spec_to_json(const paddock_spec *spec, char **ret_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	const char *landlock;
	char *s;
	int r;

	if (!spec || !ret_json)
		return pd_fail(err, EINVAL, "write spec JSON: no spec or result pointer given");
	landlock = pd_landlock_mode_to_string(spec->security.landlock);
	if (!landlock)
		return pd_fail_field(err, EINVAL, "security.landlock", "unknown mode %d",
				     (int)spec->security.landlock);
	/* JSON has no NaN or infinity, and jansson integers are signed */
	if (!isfinite(spec->limits.timeout_s))
		return pd_fail_field(err, EINVAL, "limits.timeout_s", "expected a finite number");
	if (spec->limits.disk_bytes > (uint64_t)INT64_MAX)
		return pd_spec_check_disk("limits.disk", spec->limits.disk_bytes, err);

	/* members in the order of docs/spec.md; jansson keeps insertion order */
	root = json_object();
	if (!root)
		return pd_spec_oom(err);
	r = put_string(root, "hostname", "hostname", spec->hostname, err);
	if (r < 0)
		return r;
	r = put_string(root, "rootfs", "rootfs", spec->rootfs, err);
	if (r < 0)
		return r;
	r = put_string(root, "image", "image", spec->image, err);
	if (r < 0)
		return r;
	r = put_string(root, "workspace", "workspace", spec->workspace, err);
	if (r < 0)
		return r;
	r = put_string(root, "cwd", "cwd", spec->cwd, err);
	if (r < 0)
		return r;
	if (!pd_user_to_string(spec->user))
		return pd_fail_field(err, EINVAL, "user", "unknown user %d", (int)spec->user);
	r = put_string(root, "user", "user", pd_user_to_string(spec->user), err);
	if (r < 0)
		return r;
	r = env_to_json(spec, root, err);
	if (r < 0)
		return r;
	r = binds_to_json(spec, root, err);
	if (r < 0)
		return r;
	r = put_section(root, "limits", "timeout_s", timeout_to_json(spec->limits.timeout_s),
			"disk", pd_spec_size_to_json(spec->limits.disk_bytes), err);
	if (r < 0)
		return r;
	r = pd_spec_limits_to_json(spec, json_object_get(root, "limits"), err);
	if (r < 0)
		return r;
	r = put_section(root, "security", "landlock", json_string(landlock), NULL, NULL, err);
	if (r < 0)
		return r;
	r = pd_spec_network_to_json(spec, root, err);
	if (r < 0)
		return r;
	r = pd_spec_secrets_to_json(spec, root, err);
	if (r < 0)
		return r;

	s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
	if (!s)
		return pd_spec_oom(err);
	*ret_json = s;
	return 0;
}
