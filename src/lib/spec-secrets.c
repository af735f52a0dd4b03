/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec's "secrets": credentials a sandbox may use but never sees (docs/secrets.md).
 * A secret names the variable the sandbox gets (holding a placeholder), where the real value
 * comes from, and the hosts the value may be sent to. The spec keeps the source, never a
 * value read from it; a value given directly (through paddockd's API) is kept here only
 * until the sandbox is made, never written out (paddock_spec_to_json() says "value"), and
 * wiped when the spec is freed.
 */
#include "spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress-policy.h"
#include "error.h"
#include "util/cleanup.h"

#define streq(a, b) (strcmp((a), (b)) == 0)

static void secret_clear(struct pd_spec_secret *s)
{
	free(s->name);
	free(s->source);
	if (s->value) {
		explicit_bzero(s->value, s->value_len);
		free(s->value);
	}
	for (size_t i = 0; i < s->n_hosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	memset(s, 0, sizeof(*s));
}

void pd_spec_secrets_clear(paddock_spec *spec)
{
	for (size_t i = 0; i < spec->n_secrets; i++)
		secret_clear(&spec->secrets[i]);
	free(spec->secrets);
	spec->secrets = NULL;
	spec->n_secrets = 0;
}

static int secret_copy(struct pd_spec_secret *d, const struct pd_spec_secret *s)
{
	memset(d, 0, sizeof(*d));
	d->in_body = s->in_body;
	d->name = strdup(s->name);
	d->source = strdup(s->source);
	if (!d->name || !d->source)
		return -ENOMEM;
	if (s->value) {
		d->value = malloc(s->value_len + 1);
		if (!d->value)
			return -ENOMEM;
		memcpy(d->value, s->value, s->value_len);
		d->value[s->value_len] = 0;
		d->value_len = s->value_len;
	}
	d->hosts = calloc(s->n_hosts ? s->n_hosts : 1, sizeof(char *));
	if (!d->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_hosts; i++) {
		d->hosts[i] = strdup(s->hosts[i]);
		if (!d->hosts[i])
			return -ENOMEM;
		d->n_hosts++;
	}
	return 0;
}

int pd_spec_secrets_copy(paddock_spec *dst, const paddock_spec *src)
{
	dst->secrets = NULL;
	dst->n_secrets = 0;
	if (src->n_secrets == 0)
		return 0;
	dst->secrets = calloc(src->n_secrets, sizeof(*dst->secrets));
	if (!dst->secrets)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_secrets; i++) {
		int r = secret_copy(&dst->secrets[i], &src->secrets[i]);

		dst->n_secrets++; /* counted even when partial, so clear() frees it */
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_name(const char *name, const char *field, paddock_error *err)
{
	size_t n = strlen(name);
	bool ok = n > 0 && n <= PD_SECRET_NAME_MAX;

	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];

		ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
		     (i > 0 && c >= '0' && c <= '9');
	}
	if (!ok)
		return pd_fail_field(
			err, EINVAL, field,
			"expected a variable name matching [A-Za-z_][A-Za-z0-9_]* of at "
			"most %d bytes, got '%s'",
			PD_SECRET_NAME_MAX, PD_ESC(name));
	return 0;
}

/* "env:VAR" or "file:/abs/path"; "value" is set by load, not accepted as a source text. */
static int check_source(const char *src, const char *field, paddock_error *err)
{
	if (!strncmp(src, "env:", 4))
		return check_name(src + 4, field, err);
	if (!strncmp(src, "file:", 5) && src[5] == '/' && strlen(src) < 5 + PD_SPEC_MAX_PATH &&
	    !strstr(src, "/../") && !strstr(src, "/./") && !strstr(src, "//") &&
	    strcmp(src + strlen(src) - 3, "/..") != 0 && strcmp(src + strlen(src) - 2, "/.") != 0)
		return 0;
	return pd_fail_field(err, EINVAL, field,
			     "expected 'env:VARIABLE' or 'file:/absolute/path' (without . or .. "
			     "components), got '%s'",
			     PD_ESC(src));
}

/* A host a secret may go to: a name or "*.suffix", as egress rules spell them, no port. */
static int check_host(const char *host, const char *field, paddock_error *err)
{
	struct pd_egress_rule rule;
	int r;

	r = pd_egress_rule_parse(host, false, field, &rule, err);
	if (r < 0)
		return r;
	if (rule.kind == PD_EGRESS_CIDR || rule.port != 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected a host name or '*.domain' without a port, got '%s'",
				     PD_ESC(host));
	return 0;
}

static int secret_append(paddock_spec *spec, struct pd_spec_secret *s, const char *field,
			 paddock_error *err)
{
	struct pd_spec_secret *v;

	if (spec->n_secrets >= PD_SECRETS_MAX) {
		secret_clear(s);
		return pd_fail_field(err, EINVAL, field, "expected at most %d secrets",
				     PD_SECRETS_MAX);
	}
	for (size_t i = 0; i < spec->n_secrets; i++)
		if (streq(spec->secrets[i].name, s->name)) {
			pd_fail_field(err, EINVAL, field, "secret '%s' is given twice",
				      PD_ESC(s->name));
			secret_clear(s);
			return -EINVAL;
		}
	v = realloc(spec->secrets, (spec->n_secrets + 1) * sizeof(*v));
	if (!v) {
		secret_clear(s);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	spec->secrets = v;
	spec->secrets[spec->n_secrets++] = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

static int hosts_add(struct pd_spec_secret *s, const char *host, const char *field,
		     paddock_error *err)
{
	char **v;
	int r;

	if (s->n_hosts >= PD_SECRET_HOSTS_MAX)
		return pd_fail_field(err, EINVAL, field, "expected at most %d hosts",
				     PD_SECRET_HOSTS_MAX);
	r = check_host(host, field, err);
	if (r < 0)
		return r;
	v = realloc(s->hosts, (s->n_hosts + 1) * sizeof(*v));
	if (!v)
		return pd_fail(err, ENOMEM, "out of memory");
	s->hosts = v;
	s->hosts[s->n_hosts] = strdup(host);
	if (!s->hosts[s->n_hosts])
		return pd_fail(err, ENOMEM, "out of memory");
	s->n_hosts++;
	return 0;
}

static int load_one(paddock_spec *spec, json_t *o, const char *field, paddock_error *err)
{
	struct pd_spec_secret s = { 0 };
	char sub[64];
	const char *key;
	json_t *m;
	int r = 0;

	if (!json_is_object(o))
		return pd_fail_field(err, EINVAL, field,
				     "expected an object {\"name\", \"source\" or \"value\", "
				     "\"hosts\"}");
	json_object_foreach(o, key, m)
	{
		snprintf(sub, sizeof(sub), "%.40s.%.16s", field, key);
		if (streq(key, "name") || streq(key, "source")) {
			if (!json_is_string(m) ||
			    strlen(json_string_value(m)) != json_string_length(m))
				r = pd_fail_field(err, EINVAL, sub, "expected a string");
			else if (streq(key, "name") &&
				 (r = check_name(json_string_value(m), sub, err)) >= 0)
				r = (s.name = strdup(json_string_value(m))) ? 0 : -ENOMEM;
			else if (streq(key, "source") &&
				 /* "value": an effective spec read back (a restarted paddockd) */
				 (streq(json_string_value(m), "value") ||
				  (r = check_source(json_string_value(m), sub, err)) >= 0))
				r = (s.source = strdup(json_string_value(m))) ? 0 : -ENOMEM;
		} else if (streq(key, "value")) {
			size_t n = json_string_length(m);

			if (!json_is_string(m) || n == 0 || n > PD_SECRET_VALUE_MAX ||
			    strlen(json_string_value(m)) != n)
				r = pd_fail_field(err, EINVAL, sub,
						  "expected a non-empty string of at most %d bytes "
						  "without NUL",
						  PD_SECRET_VALUE_MAX);
			else if ((s.value = malloc(n + 1))) {
				memcpy(s.value, json_string_value(m), n + 1);
				s.value_len = n;
			} else {
				r = -ENOMEM;
			}
		} else if (streq(key, "hosts")) {
			size_t i;
			json_t *h;

			if (!json_is_array(m) || json_array_size(m) == 0)
				r = pd_fail_field(err, EINVAL, sub,
						  "expected a non-empty array of host names");
			json_array_foreach(m, i, h)
			{
				char hf[64];

				if (r < 0)
					break;
				snprintf(hf, sizeof(hf), "%.40s[%zu]", sub, i);
				if (!json_is_string(h))
					r = pd_fail_field(err, EINVAL, hf, "expected a host name");
				else
					r = hosts_add(&s, json_string_value(h), hf, err);
			}
		} else if (streq(key, "in_body")) {
			if (!json_is_boolean(m))
				r = pd_fail_field(err, EINVAL, sub, "expected true or false");
			s.in_body = json_is_true(m);
		} else {
			r = pd_fail_field(err, EINVAL, sub,
					  "unknown field '%s', expected one of 'name', 'source', "
					  "'value', 'hosts', 'in_body'",
					  PD_ESC(key));
		}
		if (r == -ENOMEM)
			r = pd_fail(err, ENOMEM, "out of memory");
		if (r < 0) {
			secret_clear(&s);
			return r;
		}
	}
	if (!s.name || !s.n_hosts || (s.value && s.source) || (!s.value && !s.source)) {
		secret_clear(&s);
		return pd_fail_field(err, EINVAL, field,
				     "expected \"name\", \"hosts\", and one of \"source\" "
				     "(env:VAR, file:PATH) or \"value\"");
	}
	if (s.value && !(s.source = strdup("value"))) {
		secret_clear(&s);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	return secret_append(spec, &s, field, err);
}

int pd_spec_secrets_load(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	size_t i;
	json_t *m;
	int r;

	if (!json_is_array(v))
		return pd_fail_field(err, EINVAL, field, "expected an array of secrets");
	/* the array replaces the list; the caller works on a copy of the spec */
	pd_spec_secrets_clear(spec);
	json_array_foreach(v, i, m)
	{
		char sub[64];

		snprintf(sub, sizeof(sub), "%.40s[%zu]", field, i);
		r = load_one(spec, m, sub, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "NAME@host[,host...]" (from the supervisor's $NAME) or "NAME=env:VAR@..." / "NAME=file:PATH@..."
 */
int pd_spec_secrets_set(paddock_spec *spec, const char *text, const char *field, paddock_error *err)
{
	_cleanup_free_ char *copy = strdup(text);
	struct pd_spec_secret s = { 0 };
	char *at, *eq, *hosts, *save = NULL, *h;
	int r;

	if (!copy)
		return pd_fail(err, ENOMEM, "out of memory");
	at = strrchr(copy, '@');
	if (!at || !at[1])
		return pd_fail_field(
			err, EINVAL, field,
			"expected NAME@host[,host...] or NAME=file:PATH@host, got '%s'",
			PD_ESC(text));
	*at = '\0';
	hosts = at + 1;
	eq = strchr(copy, '=');
	if (eq)
		*eq = '\0';
	r = check_name(copy, field, err);
	if (r >= 0 && eq)
		r = check_source(eq + 1, field, err);
	if (r < 0)
		return r;
	s.name = strdup(copy);
	if (eq)
		s.source = strdup(eq + 1);
	else if (asprintf(&s.source, "env:%s", copy) < 0)
		s.source = NULL;
	if (!s.name || !s.source) {
		secret_clear(&s);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	for (h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
		r = hosts_add(&s, h, field, err);
		if (r < 0) {
			secret_clear(&s);
			return r;
		}
	}
	if (s.n_hosts == 0) {
		secret_clear(&s);
		return pd_fail_field(err, EINVAL, field, "expected at least one host after '@'");
	}
	return secret_append(spec, &s, field, err);
}

int pd_spec_secrets_validate(const paddock_spec *spec, paddock_error *err)
{
	if (spec->n_secrets > 0 && spec->network.mode == PD_NET_NONE)
		return pd_fail_field(err, EINVAL, "secrets",
				     "secrets need egress: set network.mode 'allowlist' or 'open' "
				     "(with --allow for the secret's hosts)");
	for (size_t i = 0; i < spec->n_secrets; i++) {
		size_t n = strlen(spec->secrets[i].name);

		for (size_t j = 0; j < spec->n_env; j++)
			if (!strncmp(spec->env[j], spec->secrets[i].name, n) &&
			    spec->env[j][n] == '=')
				return pd_fail_field(err, EINVAL, "env",
						     "'%s' is also a secret: the sandbox gets its "
						     "placeholder there",
						     PD_ESC(spec->secrets[i].name));
	}
	return 0;
}

int pd_spec_secrets_to_json(const paddock_spec *spec, json_t *root, paddock_error *err)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < spec->n_secrets; i++) {
		const struct pd_spec_secret *s = &spec->secrets[i];
		json_t *hosts = json_array(), *o;

		for (size_t j = 0; hosts && j < s->n_hosts; j++)
			json_array_append_new(hosts, json_string(s->hosts[j]));
		/* SECURITY: the source, never a value */
		o = json_pack("{s:s, s:s, s:o, s:b}", "name", s->name, "source", s->source, "hosts",
			      hosts, "in_body", s->in_body);
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	if (!a || json_object_set_new(root, "secrets", a) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* ---- reading the values, in the supervisor --------------------------------------------- */

static int read_file_value(const char *path, uint8_t **ret, size_t *ret_len, const char *field,
			   paddock_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	uint8_t *buf;
	ssize_t n;

	if (fd < 0)
		return pd_fail_field(err, EINVAL, field, "cannot open the secret's file '%s': %s",
				     PD_ESC(path), strerror(errno));
	buf = malloc(PD_SECRET_VALUE_MAX + 2);
	if (!buf)
		return pd_fail(err, ENOMEM, "out of memory");
	n = read(fd, buf, PD_SECRET_VALUE_MAX + 1);
	if (n < 0 || n > PD_SECRET_VALUE_MAX) {
		int e = n < 0 ? errno : EFBIG;

		explicit_bzero(buf, PD_SECRET_VALUE_MAX + 2);
		free(buf);
		return pd_fail_field(err, e, field,
				     "cannot read the secret's file '%s' (at most %d bytes)",
				     PD_ESC(path), PD_SECRET_VALUE_MAX);
	}
	/* a file written by an editor or `echo` ends in a newline that is not the secret's */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = 0;
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

int pd_spec_secret_value(const struct pd_spec_secret *s, const char *field, uint8_t **ret,
			 size_t *ret_len, paddock_error *err)
{
	int r;

	*ret = NULL;
	*ret_len = 0;
	if (s->value) {
		*ret = malloc(s->value_len + 1);
		if (!*ret)
			return pd_fail(err, ENOMEM, "out of memory");
		memcpy(*ret, s->value, s->value_len + 1);
		*ret_len = s->value_len;
	} else if (streq(s->source, "value")) {
		return pd_fail_field(err, EINVAL, field,
				     "secret '%s' was given by value, which is never kept: give it "
				     "again",
				     PD_ESC(s->name));
	} else if (!strncmp(s->source, "env:", 4)) {
		const char *v = getenv(s->source + 4);

		if (!v || !*v)
			return pd_fail_field(
				err, EINVAL, field,
				"the supervisor's environment has no variable '%s' for "
				"secret '%s'",
				PD_ESC(s->source + 4), PD_ESC(s->name));
		if (strlen(v) > PD_SECRET_VALUE_MAX)
			return pd_fail_field(err, EFBIG, field, "secret '%s': longer than %d bytes",
					     PD_ESC(s->name), PD_SECRET_VALUE_MAX);
		*ret = (uint8_t *)strdup(v);
		if (!*ret)
			return pd_fail(err, ENOMEM, "out of memory");
		*ret_len = strlen(v);
	} else {
		r = read_file_value(s->source + 5, ret, ret_len, field, err);
		if (r < 0)
			return r;
	}
	if (*ret_len == 0) {
		free(*ret);
		*ret = NULL;
		return pd_fail_field(err, EINVAL, field, "secret '%s' is empty", PD_ESC(s->name));
	}
	return 0;
}

int paddock_spec_secret_value(const paddock_spec *spec, const char *name, uint8_t **ret_value,
			      size_t *ret_len, paddock_error *err)
{
	char field[48];

	if (!spec || !name || !ret_value || !ret_len)
		return pd_fail(err, EINVAL, "paddock_spec_secret_value: NULL argument");
	for (size_t i = 0; i < spec->n_secrets; i++) {
		if (!streq(spec->secrets[i].name, name))
			continue;
		snprintf(field, sizeof(field), "secrets[%zu].source", i);
		return pd_spec_secret_value(&spec->secrets[i], field, ret_value, ret_len, err);
	}
	return pd_fail_field(err, ENOENT, "secrets", "the spec has no secret '%s'", PD_ESC(name));
}
