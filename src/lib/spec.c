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

#define DEFAULT_HOSTNAME   "sandbox"
#define DEFAULT_CWD	   "/workspace"
#define WORKSPACE_TARGET   "/workspace" /* where "workspace" is bound */
#define DEFAULT_TIMEOUT_S  86400.0
#define DEFAULT_DISK_BYTES (UINT64_C(1) << 30)

#define MIN_DISK_BYTES (UINT64_C(1) << 20)
#define MAX_DISK_BYTES (UINT64_C(1) << 40)

/* Size of paddock_error.field: room for "binds[63].readonly" and most dotted paths. */
static_assert(PD_SPEC_FIELD_MAX == sizeof(((paddock_error *)0)->field),
	      "PD_SPEC_FIELD_MAX out of date");

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

int pd_spec_oom(paddock_error *err)
{
	return pd_fail(err, ENOMEM, "allocate spec");
}

bool pd_spec_streq(const char *a, const char *b)
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
bool pd_spec_utf8_valid(const char *s)
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
const char *pd_spec_field_join(char buf[static PD_SPEC_FIELD_MAX], const char *prefix,
			       const char *key)
{
	/* a long hostile key is cut: the field only has to point at the place */
	if (snprintf(buf, PD_SPEC_FIELD_MAX, "%s%s%s", prefix, *prefix ? "." : "", PD_ESC(key)) >=
	    PD_SPEC_FIELD_MAX)
		buf[PD_SPEC_FIELD_MAX - 1] = '\0';
	return buf;
}

/* ---- paths ---------------------------------------------------------------------------- */

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
	if (!pd_spec_utf8_valid(path))
		return pd_fail_field(err, EINVAL, field, "expected a UTF-8 path, got '%s'",
				     PD_ESC(path));
	for (const char *p = path; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return pd_fail_field(
				err, EINVAL, field,
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

	if (pd_spec_streq(target, "/"))
		return pd_fail_field(err, EINVAL, field,
				     "expected a bind target other than '/', got '/'");
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (path_startswith(target, reserved[i]))
			return pd_fail_field(
				err, EINVAL, field,
				"expected a bind target outside /proc, /dev and /sys, got '%s'",
				PD_ESC(target));
	return 0;
}

/* Checks path, then replaces *slot with a copy of it (normalised when asked). */
int pd_spec_assign_path(char **slot, const char *field, const char *path, bool normalize,
			paddock_error *err)
{
	char *copy;
	int r;

	r = check_path(field, path, err);
	if (r < 0)
		return r;
	copy = normalize ? path_normalize(path) : strdup(path);
	if (!copy)
		return pd_spec_oom(err);
	free(*slot);
	*slot = copy;
	return 0;
}

int pd_spec_set_rootfs(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	return pd_spec_assign_path(&spec->rootfs, field, value, false, err);
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

int pd_spec_set_image(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	char *copy;
	int r;

	r = check_image(field, value, err);
	if (r < 0)
		return r;
	copy = strdup(value);
	if (!copy)
		return pd_spec_oom(err);
	free(spec->image);
	spec->image = copy;
	return 0;
}

int pd_spec_set_user(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	char accepted[64];
	int u = pd_user_from_string(value);

	if (u < 0)
		return pd_fail_field(
			err, EINVAL, field, "expected one of %s, got '%s'",
			table_join(user_table, _PD_USER_MAX, accepted, sizeof(accepted)),
			PD_ESC(value));
	spec->user = (enum pd_user)u;
	return 0;
}

int pd_spec_set_workspace(paddock_spec *spec, const char *field, const char *value,
			  paddock_error *err)
{
	return pd_spec_assign_path(&spec->workspace, field, value, false, err);
}

int pd_spec_set_cwd(paddock_spec *spec, const char *field, const char *value, paddock_error *err)
{
	return pd_spec_assign_path(&spec->cwd, field, value, true, err);
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
			return pd_fail_field(
				err, EINVAL, field,
				"expected a hostname of letters, digits and '-', got '%s'",
				PD_ESC(s));
	if (s[0] == '-' || s[len - 1] == '-')
		return pd_fail_field(
			err, EINVAL, field,
			"expected a hostname not starting or ending with '-', got '%s'", PD_ESC(s));
	return 0;
}

int pd_spec_set_hostname(paddock_spec *spec, const char *field, const char *s, paddock_error *err)
{
	char *copy;
	int r;

	r = check_hostname(field, s, err);
	if (r < 0)
		return r;
	copy = strdup(s);
	if (!copy)
		return pd_spec_oom(err);
	free(spec->hostname);
	spec->hostname = copy;
	return 0;
}

int pd_spec_check_timeout(const char *field, double t, paddock_error *err)
{
	/* written so that NaN fails too */
	if (!(t > 0 && t <= PD_SPEC_MAX_TIMEOUT_S))
		return pd_fail_field(err, EINVAL, field,
				     "expected seconds greater than 0 and at most %.0f, got %g",
				     PD_SPEC_MAX_TIMEOUT_S, t);
	return 0;
}

int pd_spec_check_disk(const char *field, uint64_t bytes, paddock_error *err)
{
	if (bytes < MIN_DISK_BYTES || bytes > MAX_DISK_BYTES)
		return pd_fail_field(err, EINVAL, field,
				     "expected a size from 1M to 1T, got %" PRIu64 " bytes", bytes);
	return 0;
}

int pd_spec_set_landlock(paddock_spec *spec, const char *field, const char *s, paddock_error *err)
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
int pd_spec_check_env_name(const char *name, size_t len, paddock_error *err)
{
	char copy[PD_SPEC_ENV_NAME_MAX + 1];
	bool ok = len > 0;

	if (len > PD_SPEC_ENV_NAME_MAX)
		return pd_fail_field(err, EINVAL, "env",
				     "expected a variable name of at most %d bytes, got %zu bytes",
				     PD_SPEC_ENV_NAME_MAX, len);
	for (size_t i = 0; i < len; i++)
		if (!(is_alpha(name[i]) || name[i] == '_' || (i > 0 && is_digit(name[i]))))
			ok = false;
	if (!ok) {
		memcpy(copy, name, len);
		copy[len] = '\0';
		return pd_fail_field(
			err, EINVAL, "env",
			"expected a variable name matching [A-Za-z_][A-Za-z0-9_]*, got '%s'",
			PD_ESC(copy));
	}
	return 0;
}

/* Checks one "NAME=VALUE" entry; returns the length of NAME. */
static int check_env_entry(const char *entry, paddock_error *err)
{
	const char *eq = strchr(entry, '=');
	char name[PD_SPEC_ENV_NAME_MAX + 1], field[PD_SPEC_FIELD_MAX];
	size_t len;
	int r;

	if (!eq)
		return pd_fail_field(err, EINVAL, "env", "expected NAME=VALUE, got '%s'",
				     PD_ESC(entry));
	len = (size_t)(eq - entry);
	r = pd_spec_check_env_name(entry, len, err);
	if (r < 0)
		return r;
	memcpy(name, entry, len);
	name[len] = '\0';
	/* values are not echoed: one may be a credential */
	if (!pd_spec_utf8_valid(eq + 1))
		return pd_fail_field(err, EINVAL, pd_spec_field_join(field, "env", name),
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
int pd_spec_env_put(paddock_spec *spec, char **entry, paddock_error *err)
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
		return pd_spec_oom(err);
	spec->env = v;
	v[spec->n_env++] = TAKE_PTR(*entry);
	v[spec->n_env] = NULL;
	return 0;
}

/* Empties the list but keeps the array, so this cannot fail. */
void pd_spec_env_clear(paddock_spec *spec)
{
	for (size_t i = 0; i < spec->n_env; i++) {
		free(spec->env[i]);
		spec->env[i] = NULL;
	}
	spec->n_env = 0;
}

/* ---- binds ---------------------------------------------------------------------------- */

/* Checks a bind and appends it as binds[n_binds]; target NULL means the source path. */
int pd_spec_bind_add(paddock_spec *spec, const char *source, const char *target, bool readonly,
		     paddock_error *err)
{
	_cleanup_free_ char *src = NULL, *dst = NULL;
	size_t i = spec->n_binds;
	char field[PD_SPEC_FIELD_MAX];
	struct pd_bind *b;
	int r;

	if (i >= PD_SPEC_MAX_BINDS)
		return pd_fail_field(err, EINVAL, "binds", "expected at most %d binds",
				     PD_SPEC_MAX_BINDS);
	snprintf(field, sizeof(field), "binds[%zu].source", i);
	r = pd_spec_assign_path(&src, field, source, false, err);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "binds[%zu].target", i);
	r = pd_spec_assign_path(&dst, field, target ? target : source, true, err);
	if (r < 0)
		return r;
	r = check_bind_target(field, dst, err);
	if (r < 0)
		return r;
	b = reallocarray(spec->binds, i + 1, sizeof(*b));
	if (!b)
		return pd_spec_oom(err);
	spec->binds = b;
	b[i] = (struct pd_bind){ .source = TAKE_PTR(src),
				 .target = TAKE_PTR(dst),
				 .readonly = readonly };
	spec->n_binds++;
	return 0;
}

void pd_spec_binds_clear(paddock_spec *spec)
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
		return pd_spec_oom(err);
	spec->hostname = strdup(DEFAULT_HOSTNAME);
	spec->cwd = strdup(DEFAULT_CWD);
	spec->env = calloc(1, sizeof(*spec->env));
	if (!spec->hostname || !spec->cwd || !spec->env)
		return pd_spec_oom(err);
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
	pd_spec_binds_clear(spec);
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
		return pd_spec_oom(err);
	c->limits = spec->limits;
	c->security = spec->security;
	c->user = spec->user;
	if (pd_spec_network_copy(c, spec) < 0 || pd_spec_secrets_copy(c, spec) < 0 ||
	    pd_spec_oci_copy(c, spec) < 0)
		return pd_spec_oom(err);
	if (strdup_or_null(spec->hostname, &c->hostname) < 0 ||
	    strdup_or_null(spec->rootfs, &c->rootfs) < 0 ||
	    strdup_or_null(spec->image, &c->image) < 0 ||
	    strdup_or_null(spec->workspace, &c->workspace) < 0 ||
	    strdup_or_null(spec->cwd, &c->cwd) < 0)
		return pd_spec_oom(err);

	/* counts are set as entries arrive, so paddock_spec_free() can undo a partial copy */
	c->env = calloc(spec->n_env + 1, sizeof(*c->env));
	if (!c->env)
		return pd_spec_oom(err);
	for (size_t i = 0; i < spec->n_env; i++) {
		c->env[i] = strdup(spec->env[i]);
		if (!c->env[i])
			return pd_spec_oom(err);
		c->n_env++;
	}
	if (spec->n_binds > 0) {
		c->binds = calloc(spec->n_binds, sizeof(*c->binds));
		if (!c->binds)
			return pd_spec_oom(err);
		c->n_binds = spec->n_binds;
	}
	for (size_t i = 0; i < spec->n_binds; i++) {
		c->binds[i].readonly = spec->binds[i].readonly;
		if (strdup_or_null(spec->binds[i].source, &c->binds[i].source) < 0 ||
		    strdup_or_null(spec->binds[i].target, &c->binds[i].target) < 0)
			return pd_spec_oom(err);
	}
	*ret_copy = TAKE_PTR(c);
	return 0;
}

int paddock_spec_dup(const paddock_spec *spec, paddock_spec **ret_copy, paddock_error *err)
{
	if (!spec || !ret_copy)
		return pd_fail(err, EINVAL, "paddock_spec_dup: arguments are required");
	return pd_spec_dup(spec, ret_copy, err);
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
						     "expected unique names, got env[%zu] and "
						     "env[%zu] with one name",
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
		char field[PD_SPEC_FIELD_MAX];

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
			if (pd_spec_streq(spec->binds[j].target, b->target))
				return pd_fail_field(err, EINVAL, field,
						     "expected a target no other bind uses, got "
						     "'%s' (also binds[%zu].target)",
						     PD_ESC(b->target), j);
		if (spec->workspace && pd_spec_streq(b->target, WORKSPACE_TARGET))
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
	r = pd_spec_check_timeout("limits.timeout_s", spec->limits.timeout_s, err);
	if (r < 0)
		return r;
	r = pd_spec_check_disk("limits.disk", spec->limits.disk_bytes, err);
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

/* The public names (paddock.h) of the two parsers above */
extern __typeof__(pd_parse_size) paddock_parse_size __attribute__((alias("pd_parse_size")));
extern __typeof__(pd_parse_seconds) paddock_parse_seconds
	__attribute__((alias("pd_parse_seconds")));
