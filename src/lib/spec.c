/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox spec: defaults, JSON in and out, string setters for flags, validation.
 *
 * Who trusts whom: a spec comes from a client (an API request, an MCP tool call, a command
 * line, a file the user names) and is hostile until paddock_spec_validate() accepted it. It
 * runs in the supervisor, before any sandbox exists, so nothing here touches the system:
 * it only parses and checks strings. Parsing is bounded before jansson sees a byte (size,
 * nesting depth) and every list has a count and byte limit.
 *
 * A failed call leaves the spec as it was. paddock_spec_load_json() applies the document to
 * a copy and swaps it in at the end; paddock_spec_set() checks and allocates everything it
 * needs before the first write. Every error names the field at fault by its dotted path
 * ("binds[2].target"), so the client can point at it; untrusted strings are escaped.
 *
 * Every string kept in a spec is valid UTF-8 without NUL bytes, so paddock_spec_to_json()
 * can always write it and load(to_json(spec)) gives the same spec back.
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

#define DEFAULT_HOSTNAME "sandbox"
#define DEFAULT_CWD "/workspace"
#define WORKSPACE_TARGET "/workspace" /* where "workspace" is bound */
#define DEFAULT_TIMEOUT_S 86400.0
#define DEFAULT_DISK_BYTES (UINT64_C(1) << 30)

#define MIN_DISK_BYTES (UINT64_C(1) << 20)
#define MAX_DISK_BYTES (UINT64_C(1) << 40)
#define MAX_ENV_NAME 255

/* Size of paddock_error.field: room for "binds[63].readonly" and most dotted paths. */
#define FIELD_MAX 64
static_assert(FIELD_MAX == sizeof(((paddock_error *)0)->field), "FIELD_MAX out of date");

PD_DEFINE_CLEANUP(paddock_spec, paddock_spec_free)

static const char *const landlock_mode_table[_PD_LANDLOCK_MAX] = {
	[PD_LANDLOCK_AUTO] = "auto",
	[PD_LANDLOCK_REQUIRED] = "required",
};

static const char *const net_mode_table[_PD_NET_MAX] = {
	[PD_NET_NONE] = "none",
	[PD_NET_ALLOWLIST] = "allowlist",
	[PD_NET_OPEN] = "open",
};

static const char *const user_table[_PD_USER_MAX] = {
	[PD_USER_USER] = "user",
	[PD_USER_ROOT] = "root",
};

static int table_lookup(const char *const *table, size_t n, const char *s)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (table[i] && strcmp(table[i], s) == 0)
			return (int)i;
	return -EINVAL;
}

/* "'auto', 'required'": the accepted values, for a message. */
static const char *table_join(const char *const *table, size_t n, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s'%s'", i > 0 ? ", " : "", table[i]);
	return buf;
}

const char *pd_landlock_mode_to_string(enum pd_landlock_mode m)
{
	if ((unsigned)m >= _PD_LANDLOCK_MAX)
		return NULL;
	return landlock_mode_table[m];
}

int pd_landlock_mode_from_string(const char *s)
{
	return table_lookup(landlock_mode_table, _PD_LANDLOCK_MAX, s);
}

const char *pd_net_mode_to_string(enum pd_net_mode m)
{
	if ((unsigned)m >= _PD_NET_MAX)
		return NULL;
	return net_mode_table[m];
}

int pd_net_mode_from_string(const char *s)
{
	return table_lookup(net_mode_table, _PD_NET_MAX, s);
}

const char *pd_user_to_string(enum pd_user u)
{
	if ((unsigned)u >= _PD_USER_MAX)
		return NULL;
	return user_table[u];
}

int pd_user_from_string(const char *s)
{
	return table_lookup(user_table, _PD_USER_MAX, s);
}

static int oom(paddock_error *err)
{
	return pd_fail(err, ENOMEM, "allocate spec");
}

static bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char to_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * UTF-8 as RFC 3629 (and jansson) defines it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. A string jansson cannot encode could not be written back by to_json.
 */
static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned n;
		uint32_t cp;

		if (*p < 0x80) {
			p++;
			continue;
		}
		if (*p >= 0xc2 && *p <= 0xdf) {
			n = 1;
			cp = *p & 0x1f;
		} else if (*p >= 0xe0 && *p <= 0xef) {
			n = 2;
			cp = *p & 0x0f;
		} else if (*p >= 0xf0 && *p <= 0xf4) {
			n = 3;
			cp = *p & 0x07;
		} else {
			return false;
		}
		/* stops at the terminating NUL, which is no continuation byte */
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

/* "prefix.key", or "key" at the top level; the key is escaped, it comes from the client. */
static const char *field_join(char buf[static FIELD_MAX], const char *prefix, const char *key)
{
	/* a long hostile key is cut: the field only has to point at the place */
	if (snprintf(buf, FIELD_MAX, "%s%s%s", prefix, *prefix ? "." : "", PD_ESC(key)) >= FIELD_MAX)
		buf[FIELD_MAX - 1] = '\0';
	return buf;
}

/* ---- paths ---------------------------------------------------------------------------- */

/* Sets a field from its string form; field names it in errors. */
typedef int (*set_fn)(paddock_spec *spec, const char *field, const char *value,
		      paddock_error *err);

/* Absolute, bounded, UTF-8, and no "." or ".." component. */
static int check_path(const char *field, const char *path, paddock_error *err)
{
	size_t len = strlen(path);

	if (path[0] != '/')
		return pd_fail_field(err, EINVAL, field, "expected an absolute path, got '%s'",
				     PD_ESC(path));
	if (len > PD_SPEC_MAX_PATH)
		return pd_fail_field(err, EINVAL, field,
				     "expected a path of at most %d bytes, got %zu bytes",
				     PD_SPEC_MAX_PATH, len);
	if (!utf8_valid(path))
		return pd_fail_field(err, EINVAL, field, "expected a UTF-8 path, got '%s'",
				     PD_ESC(path));
	for (const char *p = path; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return pd_fail_field(err, EINVAL, field,
					     "expected a path without '.' or '..' components, got '%s'",
					     PD_ESC(path));
		p += n;
	}
	return 0;
}

/* A copy of an absolute path without repeated or trailing slashes: "//a//b/" -> "/a/b". */
static char *path_normalize(const char *path)
{
	char *out = malloc(strlen(path) + 1), *o = out;

	if (!out)
		return NULL;
	for (const char *p = path; *p; p++)
		if (*p != '/' || o == out || o[-1] != '/')
			*o++ = *p;
	if (o > out + 1 && o[-1] == '/')
		o--;
	*o = '\0';
	return out;
}

static bool path_is_normalized(const char *path)
{
	size_t len = strlen(path);

	return !strstr(path, "//") && (len <= 1 || path[len - 1] != '/');
}

static bool path_startswith(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * SECURITY: paddock builds /proc, /dev and /sys itself, with masks; a bind over or under
 * them could undo a mask or hand the sandbox a host device. `target` is normalised.
 */
static int check_bind_target(const char *field, const char *target, paddock_error *err)
{
	static const char *const reserved[] = { "/proc", "/dev", "/sys" };

	if (streq(target, "/"))
		return pd_fail_field(err, EINVAL, field,
				     "expected a bind target other than '/', got '/'");
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (path_startswith(target, reserved[i]))
			return pd_fail_field(err, EINVAL, field,
					     "expected a bind target outside /proc, /dev and /sys, got '%s'",
					     PD_ESC(target));
	return 0;
}

/* Checks path, then replaces *slot with a copy of it (normalised when asked). */
static int assign_path(char **slot, const char *field, const char *path, bool normalize,
		       paddock_error *err)
{
	char *copy;
	int r;

	r = check_path(field, path, err);
	if (r < 0)
		return r;
	copy = normalize ? path_normalize(path) : strdup(path);
	if (!copy)
		return oom(err);
	free(*slot);
	*slot = copy;
	return 0;
}

static int set_rootfs(paddock_spec *spec, const char *field, const char *value,
		      paddock_error *err)
{
	return assign_path(&spec->rootfs, field, value, false, err);
}

/* An image of the store: a reference, an id ("sha256:..."), or 12+ hex digits of one. */
static int check_image(const char *field, const char *value, paddock_error *err)
{
	struct pd_image_ref ref;
	size_t n = strlen(value);

	if (n >= 12 && n <= PD_DIGEST_HEX && strspn(value, "0123456789abcdef") == n)
		return 0;
	if (pd_digest_valid(value))
		return 0;
	return pd_image_ref_parse(value, field, &ref, err);
}

static int set_image(paddock_spec *spec, const char *field, const char *value,
		     paddock_error *err)
{
	char *copy;
	int r;

	r = check_image(field, value, err);
	if (r < 0)
		return r;
	copy = strdup(value);
	if (!copy)
		return oom(err);
	free(spec->image);
	spec->image = copy;
	return 0;
}

static int set_user(paddock_spec *spec, const char *field, const char *value,
		    paddock_error *err)
{
	char accepted[64];
	int u = pd_user_from_string(value);

	if (u < 0)
		return pd_fail_field(err, EINVAL, field, "expected one of %s, got '%s'",
				     table_join(user_table, _PD_USER_MAX, accepted, sizeof(accepted)),
				     PD_ESC(value));
	spec->user = (enum pd_user)u;
	return 0;
}

static int set_workspace(paddock_spec *spec, const char *field, const char *value,
			 paddock_error *err)
{
	return assign_path(&spec->workspace, field, value, false, err);
}

static int set_cwd(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	return assign_path(&spec->cwd, field, value, true, err);
}

/* ---- scalar fields -------------------------------------------------------------------- */

/* RFC 1123 label: 1..63 of [A-Za-z0-9-], not starting or ending with '-'. */
static int check_hostname(const char *field, const char *s, paddock_error *err)
{
	size_t len;

	if (!s)
		return pd_fail_field(err, EINVAL, field, "expected a hostname, got nothing");
	len = strlen(s);
	if (len == 0 || len > PD_SPEC_MAX_HOSTNAME)
		return pd_fail_field(err, EINVAL, field,
				     "expected a hostname of 1 to %d characters, got %zu",
				     PD_SPEC_MAX_HOSTNAME, len);
	for (size_t i = 0; i < len; i++)
		if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '-')
			return pd_fail_field(err, EINVAL, field,
					     "expected a hostname of letters, digits and '-', got '%s'",
					     PD_ESC(s));
	if (s[0] == '-' || s[len - 1] == '-')
		return pd_fail_field(err, EINVAL, field,
				     "expected a hostname not starting or ending with '-', got '%s'",
				     PD_ESC(s));
	return 0;
}

static int set_hostname(paddock_spec *spec, const char *field, const char *s,
			paddock_error *err)
{
	char *copy;
	int r;

	r = check_hostname(field, s, err);
	if (r < 0)
		return r;
	copy = strdup(s);
	if (!copy)
		return oom(err);
	free(spec->hostname);
	spec->hostname = copy;
	return 0;
}

static int check_timeout(const char *field, double t, paddock_error *err)
{
	/* written so that NaN fails too */
	if (!(t > 0 && t <= PD_SPEC_MAX_TIMEOUT_S))
		return pd_fail_field(err, EINVAL, field,
				     "expected seconds greater than 0 and at most %.0f, got %g",
				     PD_SPEC_MAX_TIMEOUT_S, t);
	return 0;
}

static int check_disk(const char *field, uint64_t bytes, paddock_error *err)
{
	if (bytes < MIN_DISK_BYTES || bytes > MAX_DISK_BYTES)
		return pd_fail_field(err, EINVAL, field,
				     "expected a size from 1M to 1T, got %" PRIu64 " bytes", bytes);
	return 0;
}

static int set_landlock(paddock_spec *spec, const char *field, const char *s,
			paddock_error *err)
{
	char accepted[64];
	int m = pd_landlock_mode_from_string(s);

	if (m < 0)
		return pd_fail_field(err, EINVAL, field, "expected one of %s, got '%s'",
				     table_join(landlock_mode_table, _PD_LANDLOCK_MAX, accepted,
						sizeof(accepted)),
				     PD_ESC(s));
	spec->security.landlock = (enum pd_landlock_mode)m;
	return 0;
}

/* ---- env ------------------------------------------------------------------------------ */

/* NAME is what a POSIX shell accepts, so every program in the sandbox can read it. */
static int check_env_name(const char *name, size_t len, paddock_error *err)
{
	char copy[MAX_ENV_NAME + 1];
	bool ok = len > 0;

	if (len > MAX_ENV_NAME)
		return pd_fail_field(err, EINVAL, "env",
				     "expected a variable name of at most %d bytes, got %zu bytes",
				     MAX_ENV_NAME, len);
	for (size_t i = 0; i < len; i++)
		if (!(is_alpha(name[i]) || name[i] == '_' || (i > 0 && is_digit(name[i]))))
			ok = false;
	if (!ok) {
		memcpy(copy, name, len);
		copy[len] = '\0';
		return pd_fail_field(err, EINVAL, "env",
				     "expected a variable name matching [A-Za-z_][A-Za-z0-9_]*, got '%s'",
				     PD_ESC(copy));
	}
	return 0;
}

/* Checks one "NAME=VALUE" entry; returns the length of NAME. */
static int check_env_entry(const char *entry, paddock_error *err)
{
	const char *eq = strchr(entry, '=');
	char name[MAX_ENV_NAME + 1], field[FIELD_MAX];
	size_t len;
	int r;

	if (!eq)
		return pd_fail_field(err, EINVAL, "env", "expected NAME=VALUE, got '%s'",
				     PD_ESC(entry));
	len = (size_t)(eq - entry);
	r = check_env_name(entry, len, err);
	if (r < 0)
		return r;
	memcpy(name, entry, len);
	name[len] = '\0';
	/* values are not echoed: one may be a credential */
	if (!utf8_valid(eq + 1))
		return pd_fail_field(err, EINVAL, field_join(field, "env", name),
				     "expected a UTF-8 value");
	return (int)len;
}

/* The index of the entry named by the first name_len bytes of entry, or -1. */
static ssize_t env_find(const paddock_spec *spec, const char *entry, size_t name_len)
{
	for (size_t i = 0; i < spec->n_env; i++)
		if (strncmp(spec->env[i], entry, name_len + 1) == 0)
			return (ssize_t)i;
	return -1;
}

static size_t env_bytes(const paddock_spec *spec)
{
	size_t bytes = 0;

	for (size_t i = 0; i < spec->n_env; i++)
		bytes += strlen(spec->env[i]);
	return bytes;
}

/*
 * Takes *entry ("NAME=VALUE") on success: replaces the variable of that name in place, or
 * appends it.
 */
static int env_put(paddock_spec *spec, char **entry, paddock_error *err)
{
	size_t name_len, bytes;
	ssize_t i;
	char **v;
	int r;

	r = check_env_entry(*entry, err);
	if (r < 0)
		return r;
	name_len = (size_t)r;
	i = env_find(spec, *entry, name_len);
	bytes = env_bytes(spec) - (i >= 0 ? strlen(spec->env[i]) : 0) + strlen(*entry);
	if (bytes > PD_SPEC_MAX_ENV_BYTES)
		return pd_fail_field(err, EINVAL, "env",
				     "expected at most %u bytes of variables in all, got %zu",
				     PD_SPEC_MAX_ENV_BYTES, bytes);
	if (i >= 0) {
		free(spec->env[i]);
		spec->env[i] = TAKE_PTR(*entry);
		return 0;
	}
	if (spec->n_env >= PD_SPEC_MAX_ENV)
		return pd_fail_field(err, EINVAL, "env", "expected at most %d variables",
				     PD_SPEC_MAX_ENV);
	v = reallocarray(spec->env, spec->n_env + 2, sizeof(*v));
	if (!v)
		return oom(err);
	spec->env = v;
	v[spec->n_env++] = TAKE_PTR(*entry);
	v[spec->n_env] = NULL;
	return 0;
}

/* Empties the list but keeps the array, so this cannot fail. */
static void env_clear(paddock_spec *spec)
{
	for (size_t i = 0; i < spec->n_env; i++) {
		free(spec->env[i]);
		spec->env[i] = NULL;
	}
	spec->n_env = 0;
}

/* ---- binds ---------------------------------------------------------------------------- */

/* Checks a bind and appends it as binds[n_binds]; target NULL means the source path. */
static int bind_add(paddock_spec *spec, const char *source, const char *target, bool readonly,
		    paddock_error *err)
{
	_cleanup_free_ char *src = NULL, *dst = NULL;
	size_t i = spec->n_binds;
	char field[FIELD_MAX];
	struct pd_bind *b;
	int r;

	if (i >= PD_SPEC_MAX_BINDS)
		return pd_fail_field(err, EINVAL, "binds", "expected at most %d binds",
				     PD_SPEC_MAX_BINDS);
	snprintf(field, sizeof(field), "binds[%zu].source", i);
	r = assign_path(&src, field, source, false, err);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "binds[%zu].target", i);
	r = assign_path(&dst, field, target ? target : source, true, err);
	if (r < 0)
		return r;
	r = check_bind_target(field, dst, err);
	if (r < 0)
		return r;
	b = reallocarray(spec->binds, i + 1, sizeof(*b));
	if (!b)
		return oom(err);
	spec->binds = b;
	b[i] = (struct pd_bind){ .source = TAKE_PTR(src), .target = TAKE_PTR(dst),
				 .readonly = readonly };
	spec->n_binds++;
	return 0;
}

static void binds_clear(paddock_spec *spec)
{
	for (size_t i = 0; i < spec->n_binds; i++) {
		free(spec->binds[i].source);
		free(spec->binds[i].target);
	}
	free(spec->binds);
	spec->binds = NULL;
	spec->n_binds = 0;
}

/* ---- new, free, dup ------------------------------------------------------------------- */

int paddock_spec_new(paddock_spec **ret_spec, paddock_error *err)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;

	if (!ret_spec)
		return pd_fail(err, EINVAL, "no spec pointer given");
	spec = calloc(1, sizeof(*spec));
	if (!spec)
		return oom(err);
	spec->hostname = strdup(DEFAULT_HOSTNAME);
	spec->cwd = strdup(DEFAULT_CWD);
	spec->env = calloc(1, sizeof(*spec->env));
	if (!spec->hostname || !spec->cwd || !spec->env)
		return oom(err);
	spec->limits.timeout_s = DEFAULT_TIMEOUT_S;
	spec->limits.disk_bytes = DEFAULT_DISK_BYTES;
	pd_spec_limits_defaults(spec);
	spec->security.landlock = PD_LANDLOCK_AUTO;
	pd_spec_network_defaults(spec);
	*ret_spec = TAKE_PTR(spec);
	return 0;
}

paddock_spec *paddock_spec_free(paddock_spec *spec)
{
	if (!spec)
		return NULL;
	free(spec->hostname);
	free(spec->rootfs);
	free(spec->image);
	pd_strv_free(spec->image_layers);
	free(spec->workspace);
	free(spec->cwd);
	pd_strv_free(spec->env);
	binds_clear(spec);
	pd_spec_network_clear(spec);
	pd_spec_secrets_clear(spec);
	pd_strv_free(spec->secret_env);
	free(spec->ca_pem);
	pd_spec_oci_clear(spec);
	free(spec);
	return NULL;
}

static int strdup_or_null(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int pd_spec_dup(const paddock_spec *spec, paddock_spec **ret_copy, paddock_error *err)
{
	_cleanup_(paddock_spec_freep) paddock_spec *c = NULL;

	assert(spec);
	assert(ret_copy);

	c = calloc(1, sizeof(*c));
	if (!c)
		return oom(err);
	c->limits = spec->limits;
	c->security = spec->security;
	c->user = spec->user;
	if (pd_spec_network_copy(c, spec) < 0 || pd_spec_secrets_copy(c, spec) < 0 ||
	    pd_spec_oci_copy(c, spec) < 0)
		return oom(err);
	if (strdup_or_null(spec->hostname, &c->hostname) < 0 ||
	    strdup_or_null(spec->rootfs, &c->rootfs) < 0 ||
	    strdup_or_null(spec->image, &c->image) < 0 ||
	    strdup_or_null(spec->workspace, &c->workspace) < 0 ||
	    strdup_or_null(spec->cwd, &c->cwd) < 0)
		return oom(err);

	/* counts are set as entries arrive, so paddock_spec_free() can undo a partial copy */
	c->env = calloc(spec->n_env + 1, sizeof(*c->env));
	if (!c->env)
		return oom(err);
	for (size_t i = 0; i < spec->n_env; i++) {
		c->env[i] = strdup(spec->env[i]);
		if (!c->env[i])
			return oom(err);
		c->n_env++;
	}
	if (spec->n_binds > 0) {
		c->binds = calloc(spec->n_binds, sizeof(*c->binds));
		if (!c->binds)
			return oom(err);
		c->n_binds = spec->n_binds;
	}
	for (size_t i = 0; i < spec->n_binds; i++) {
		c->binds[i].readonly = spec->binds[i].readonly;
		if (strdup_or_null(spec->binds[i].source, &c->binds[i].source) < 0 ||
		    strdup_or_null(spec->binds[i].target, &c->binds[i].target) < 0)
			return oom(err);
	}
	*ret_copy = TAKE_PTR(c);
	return 0;
}

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
static int json_get_string(const char *field, const json_t *v, const char **ret,
			   paddock_error *err)
{
	const char *s;

	if (!json_is_string(v))
		return pd_fail_field(err, EINVAL, field, "expected a string, got %s",
				     json_type_name(v));
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected a string without NUL characters, got one at byte %zu",
				     strlen(s));
	*ret = s;
	return 0;
}

typedef int (*load_fn)(paddock_spec *spec, json_t *v, const char *field, paddock_error *err);

/* A member of a JSON object: read by load, or, for a string field, given to set. */
struct json_field {
	const char *name;
	load_fn load;
	set_fn set;
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

static int load_string(paddock_spec *spec, json_t *v, const char *field, set_fn set,
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
	json_object_foreach(obj, key, v) {
		const struct json_field *f = NULL;
		char field[FIELD_MAX], accepted[192];

		for (size_t i = 0; i < n && !f; i++)
			if (streq(fields[i].name, key))
				f = &fields[i];
		field_join(field, prefix, key);
		if (!f)
			return pd_fail_field(err, EINVAL, field,
					     "unknown field '%s', expected one of %s", PD_ESC(key),
					     json_fields_join(fields, n, accepted,
							      sizeof(accepted)));
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
	return assign_path(slot, field, path, false, err);
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
	return set_image(spec, field, s, err);
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
		return pd_fail_field(err, EINVAL, field,
				     "expected at most %d variables, got %zu", PD_SPEC_MAX_ENV,
				     json_object_size(v));
	env_clear(spec);
	json_object_foreach(v, key, m) {
		_cleanup_free_ char *entry = NULL;
		char mfield[FIELD_MAX];
		const char *value;

		/* a name holding '=' would smuggle in another variable: checked before joining */
		r = check_env_name(key, strlen(key), err);
		if (r < 0)
			return r;
		r = json_get_string(field_join(mfield, field, key), m, &value, err);
		if (r < 0)
			return r;
		if (asprintf(&entry, "%s=%s", key, value) < 0) {
			entry = NULL;
			return oom(err);
		}
		r = env_put(spec, &entry, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_bind(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *source = NULL, *target = NULL, *key;
	char mfield[FIELD_MAX];
	bool readonly = false;
	json_t *m;
	int r;

	if (!json_is_object(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected an object with \"source\", got %s",
				     json_type_name(v));
	json_object_foreach(v, key, m) {
		field_join(mfield, field, key);
		if (streq(key, "source")) {
			r = json_get_string(mfield, m, &source, err);
		} else if (streq(key, "target")) {
			r = json_get_string(mfield, m, &target, err);
		} else if (streq(key, "readonly")) {
			if (!json_is_boolean(m))
				return pd_fail_field(err, EINVAL, mfield,
						     "expected true or false, got %s",
						     json_type_name(m));
			readonly = json_is_true(m);
			r = 0;
		} else {
			return pd_fail_field(err, EINVAL, mfield,
					     "unknown field '%s', expected one of 'source', 'target', 'readonly'",
					     PD_ESC(key));
		}
		if (r < 0)
			return r;
	}
	if (!source)
		return pd_fail_field(err, EINVAL, field_join(mfield, field, "source"),
				     "expected a host path, got nothing");
	return bind_add(spec, source, target, readonly, err);
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
	binds_clear(spec);
	json_array_foreach(v, i, m) {
		char mfield[FIELD_MAX];

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
	r = check_timeout(field, t, err);
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
			return pd_fail_field(err, EINVAL, field,
					     "expected a size from 1M to 1T, got %" JSON_INTEGER_FORMAT,
					     n);
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
	r = check_disk(field, bytes, err);
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
	{ "landlock", .set = set_landlock },
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
	json_object_foreach(v, key, m) {
		char sub[FIELD_MAX];
		bool done = false;

		field_join(sub, field, key);
		for (size_t i = 0; i < ELEMENTSOF(limits_fields); i++)
			if (streq(limits_fields[i].name, key)) {
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
	{ "hostname", .set = set_hostname },
	{ "rootfs", load_rootfs },
	{ "image", load_image },
	{ "workspace", load_workspace },
	{ "cwd", .set = set_cwd },
	{ "user", .set = set_user },
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
	return pd_fail_field(err, EINVAL, "", "invalid JSON at line %d, column %d: %s",
			     jerr->line, jerr->column, what);
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
		return pd_fail_field(err, EINVAL, "",
				     "expected JSON nested at most %d levels deep",
				     PD_SPEC_MAX_JSON_DEPTH);

	/* NUL is allowed here so that json_get_string() can refuse it naming the field */
	root = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	/*
	 * jansson leaves the text empty when it cannot even start for lack of memory. Out of
	 * memory later in its lexer looks like a syntax error to it, and so to us: EINVAL.
	 */
	if (!root && (json_error_code(&jerr) == json_error_out_of_memory || !jerr.text[0]))
		return oom(err);
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

static int set_timeout(paddock_spec *spec, const char *field, const char *value,
		       paddock_error *err)
{
	double t;
	int r;

	r = pd_parse_seconds(value, &t);
	if (r == -ENOMEM)
		return oom(err);
	if (r < 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected seconds such as '30' or '2.5', got '%s'",
				     PD_ESC(value));
	r = check_timeout(field, t, err);
	if (r < 0)
		return r;
	spec->limits.timeout_s = t;
	return 0;
}

static int set_disk(paddock_spec *spec, const char *field, const char *value,
		    paddock_error *err)
{
	uint64_t bytes;
	int r;

	if (pd_parse_size(value, &bytes) < 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected a size such as '512M' or '1G', got '%s'",
				     PD_ESC(value));
	r = check_disk(field, bytes, err);
	if (r < 0)
		return r;
	spec->limits.disk_bytes = bytes;
	return 0;
}

static int set_env(paddock_spec *spec, const char *field, const char *value,
		   paddock_error *err)
{
	_cleanup_free_ char *entry = NULL;

	(void)field; /* errors name "env" or "env.NAME" */
	entry = strdup(value);
	if (!entry)
		return oom(err);
	return env_put(spec, &entry, err);
}

/*
 * "SRC[:DST][:ro|:rw]". The last part is a mode only when it is exactly "ro" or "rw", so
 * "/data:ro" binds /data read-only at /data. Paths holding ':' cannot be given this way;
 * the JSON form takes any path.
 */
static int set_binds(paddock_spec *spec, const char *field, const char *value,
		     paddock_error *err)
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
		return oom(err);
	p = copy;
	for (size_t i = 0; i < n; i++)
		parts[i] = strsep(&p, ":");
	if (n >= 2 && (streq(parts[n - 1], "ro") || streq(parts[n - 1], "rw"))) {
		readonly = streq(parts[n - 1], "ro");
		n--;
	}
	if (n > 2)
		return pd_fail_field(err, EINVAL, field,
				     "expected SRC[:DST][:ro|:rw], got '%s' (the mode must be 'ro' or 'rw')",
				     PD_ESC(value));
	return bind_add(spec, parts[0], n == 2 ? parts[1] : NULL, readonly, err);
}

static const struct {
	const char *name;
	set_fn set;
} setters[] = {
	{ "hostname", set_hostname },
	{ "rootfs", set_rootfs },
	{ "image", set_image },
	{ "workspace", set_workspace },
	{ "cwd", set_cwd },
	{ "user", set_user },
	{ "env", set_env },
	{ "binds", set_binds },
	{ "limits.timeout_s", set_timeout },
	{ "limits.disk", set_disk },
	{ "security.landlock", set_landlock },
	{ "network.mode", NULL },
	{ "network.allow", NULL },
	{ "network.deny", NULL },
	{ "network.transparent", NULL },
	{ "network.max_connections", NULL },
	{ "secrets", NULL },
};

int paddock_spec_set(paddock_spec *spec, const char *field, const char *value,
		     paddock_error *err)
{
	char accepted[512];
	size_t o = 0;

	if (!spec || !field || !value)
		return pd_fail(err, EINVAL, "set spec field: no spec, field or value given");
	for (size_t i = 0; i < ELEMENTSOF(setters); i++)
		if (streq(setters[i].name, field) && setters[i].set)
			return setters[i].set(spec, field, value, err);
	if (!strncmp(field, "network.", 8)) {
		int r = pd_spec_network_set(spec, field + 8, value, field, err);
		if (r != -ENOENT)
			return r;
	}
	if (streq(field, "secrets"))
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

/* ---- validation ----------------------------------------------------------------------- */

static int check_normalized(const char *field, const char *path, paddock_error *err)
{
	if (!path_is_normalized(path))
		return pd_fail_field(err, EINVAL, field,
				     "expected a path without repeated or trailing '/', got '%s'",
				     PD_ESC(path));
	return 0;
}

static int validate_env(const paddock_spec *spec, paddock_error *err)
{
	size_t bytes = 0;
	int r;

	if (!spec->env || spec->n_env > PD_SPEC_MAX_ENV || spec->env[spec->n_env])
		return pd_fail_field(err, EINVAL, "env", "expected at most %d variables",
				     PD_SPEC_MAX_ENV);
	for (size_t i = 0; i < spec->n_env; i++) {
		r = check_env_entry(spec->env[i], err);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (strncmp(spec->env[j], spec->env[i], (size_t)r + 1) == 0)
				return pd_fail_field(err, EINVAL, "env",
						     "expected unique names, got env[%zu] and env[%zu] with one name",
						     j, i);
		bytes += strlen(spec->env[i]);
	}
	if (bytes > PD_SPEC_MAX_ENV_BYTES)
		return pd_fail_field(err, EINVAL, "env",
				     "expected at most %u bytes of variables in all, got %zu",
				     PD_SPEC_MAX_ENV_BYTES, bytes);
	return 0;
}

static int validate_binds(const paddock_spec *spec, paddock_error *err)
{
	int r;

	if (spec->n_binds > PD_SPEC_MAX_BINDS)
		return pd_fail_field(err, EINVAL, "binds", "expected at most %d binds, got %zu",
				     PD_SPEC_MAX_BINDS, spec->n_binds);
	for (size_t i = 0; i < spec->n_binds; i++) {
		const struct pd_bind *b = &spec->binds[i];
		char field[FIELD_MAX];

		snprintf(field, sizeof(field), "binds[%zu].source", i);
		if (!b->source)
			return pd_fail_field(err, EINVAL, field,
					     "expected a host path, got nothing");
		r = check_path(field, b->source, err);
		if (r < 0)
			return r;

		snprintf(field, sizeof(field), "binds[%zu].target", i);
		if (!b->target)
			return pd_fail_field(err, EINVAL, field,
					     "expected a sandbox path, got nothing");
		r = check_path(field, b->target, err);
		if (r < 0)
			return r;
		r = check_normalized(field, b->target, err);
		if (r < 0)
			return r;
		r = check_bind_target(field, b->target, err);
		if (r < 0)
			return r;

		/* two mounts on one target: the first would be hidden, and which is unclear */
		for (size_t j = 0; j < i; j++)
			if (streq(spec->binds[j].target, b->target))
				return pd_fail_field(err, EINVAL, field,
						     "expected a target no other bind uses, got '%s' (also binds[%zu].target)",
						     PD_ESC(b->target), j);
		if (spec->workspace && streq(b->target, WORKSPACE_TARGET))
			return pd_fail_field(err, EINVAL, field,
					     "expected a target other than '" WORKSPACE_TARGET
					     "', which \"workspace\" binds");
	}
	return 0;
}

int paddock_spec_validate(const paddock_spec *spec, paddock_error *err)
{
	int r;

	if (!spec)
		return pd_fail(err, EINVAL, "validate spec: no spec given");

	r = check_hostname("hostname", spec->hostname, err);
	if (r < 0)
		return r;
	if (spec->rootfs) {
		r = check_path("rootfs", spec->rootfs, err);
		if (r < 0)
			return r;
	}
	if (spec->image) {
		r = check_image("image", spec->image, err);
		if (r < 0)
			return r;
		if (spec->rootfs)
			return pd_fail_field(err, EINVAL, "image",
					     "expected either \"image\" or \"rootfs\", got both");
	}
	if (!pd_user_to_string(spec->user))
		return pd_fail_field(err, EINVAL, "user", "unknown user %d", (int)spec->user);
	if (spec->workspace) {
		r = check_path("workspace", spec->workspace, err);
		if (r < 0)
			return r;
	}
	if (!spec->cwd)
		return pd_fail_field(err, EINVAL, "cwd", "expected a path, got nothing");
	r = check_path("cwd", spec->cwd, err);
	if (r < 0)
		return r;
	r = check_normalized("cwd", spec->cwd, err);
	if (r < 0)
		return r;
	r = validate_env(spec, err);
	if (r < 0)
		return r;
	r = validate_binds(spec, err);
	if (r < 0)
		return r;
	r = check_timeout("limits.timeout_s", spec->limits.timeout_s, err);
	if (r < 0)
		return r;
	r = check_disk("limits.disk", spec->limits.disk_bytes, err);
	if (r < 0)
		return r;
	r = pd_spec_limits_validate(spec, err);
	if (r < 0)
		return r;
	if (!pd_landlock_mode_to_string(spec->security.landlock))
		return pd_fail_field(err, EINVAL, "security.landlock", "unknown mode %d",
				     (int)spec->security.landlock);
	r = pd_spec_network_validate(spec, err);
	if (r < 0)
		return r;
	r = pd_spec_oci_validate(spec, err);
	if (r < 0)
		return r;
	return pd_spec_secrets_validate(spec, err);
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
	if (s && !utf8_valid(s))
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
		return oom(err);
	for (size_t i = 0; i < spec->n_env; i++) {
		const char *entry = spec->env[i], *eq = strchr(entry, '=');
		char name[MAX_ENV_NAME + 1];
		size_t len;

		if (!eq || (size_t)(eq - entry) > MAX_ENV_NAME)
			return pd_fail_field(err, EINVAL, "env",
					     "expected NAME=VALUE with a valid name in env[%zu]", i);
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
		return oom(err);
	for (size_t i = 0; i < spec->n_binds; i++) {
		_cleanup_(json_decrefp) json_t *b = json_object();
		char field[FIELD_MAX];

		if (!b)
			return oom(err);
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
			return oom(err);
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
		return oom(err);
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
		return check_disk("limits.disk", spec->limits.disk_bytes, err);

	/* members in the order of docs/spec.md; jansson keeps insertion order */
	root = json_object();
	if (!root)
		return oom(err);
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
		return oom(err);
	*ret_json = s;
	return 0;
}

/* ---- size and seconds ----------------------------------------------------------------- */

/* At most this many digits after the point, so fraction × 2^40 cannot overflow. */
#define SIZE_MAX_FRACTION_DIGITS 6

int pd_parse_size(const char *s, uint64_t *ret)
{
	static const char units[] = "kmgt";
	uint64_t whole = 0, frac = 0, frac_div = 1, mult = 1, bytes;
	bool has_frac = false;
	const char *p = s, *u;

	if (!s || !ret || !is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole))
			return -EINVAL;
	if (*p == '.') {
		has_frac = true;
		if (!is_digit(*++p))
			return -EINVAL;
		for (unsigned digits = 0; is_digit(*p); p++, digits++) {
			if (digits == SIZE_MAX_FRACTION_DIGITS)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_div *= 10;
		}
	}
	u = *p ? strchr(units, to_lower(*p)) : NULL;
	if (u) {
		mult = UINT64_C(1) << (10 * (unsigned)(u - units + 1));
		p++;
		if (to_lower(*p) == 'i' && to_lower(p[1]) == 'b')
			p++;
	}
	if (to_lower(*p) == 'b')
		p++;
	if (*p != '\0' || (has_frac && mult == 1))
		return -EINVAL;
	if (__builtin_mul_overflow(whole, mult, &bytes) ||
	    __builtin_add_overflow(bytes, frac * mult / frac_div, &bytes))
		return -EINVAL;
	*ret = bytes;
	return 0;
}

int pd_parse_seconds(const char *s, double *ret)
{
	const char *p = s;
	locale_t c_locale;
	char *end;
	double v;

	if (!s || !ret || !is_digit(*p))
		return -EINVAL;
	while (is_digit(*p))
		p++;
	if (*p == '.') {
		if (!is_digit(*++p))
			return -EINVAL;
		while (is_digit(*p))
			p++;
	}
	if (*p != '\0')
		return -EINVAL;

	/* strtod() follows LC_NUMERIC, and a front end may have set a locale with ',' */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c_locale == (locale_t)0)
		return -ENOMEM;
	errno = 0;
	v = strtod_l(s, &end, c_locale);
	freelocale(c_locale);
	if (errno == ERANGE || end != p || !isfinite(v) || !(v > 0))
		return -EINVAL;
	*ret = v;
	return 0;
}
