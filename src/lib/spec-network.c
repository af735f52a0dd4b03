/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec's "network" section: the egress mode, allow and deny rules (egress-policy.h
 * gives their syntax), transparent redirection and the per-sandbox connection cap. Rules are
 * kept as written, so the effective spec shows what the user gave ("preset:npm" stays one
 * rule); pd_spec_network_policy() turns them into the policy the proxy decides with.
 */
#include "spec.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-policy.h"
#include "error.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define DEFAULT_MAX_CONNECTIONS 256
#define streq(a, b) (strcmp((a), (b)) == 0)
#define MAX_CONNECTIONS_LIMIT 65536

static_assert((int)PD_NET_NONE == (int)PD_EGRESS_NONE &&
		      (int)PD_NET_ALLOWLIST == (int)PD_EGRESS_ALLOWLIST &&
		      (int)PD_NET_OPEN == (int)PD_EGRESS_OPEN,
	      "spec and egress modes differ");

void pd_spec_network_defaults(paddock_spec *spec)
{
	spec->network.mode = PD_NET_NONE;
	spec->network.transparent = true;
	spec->network.max_connections = DEFAULT_MAX_CONNECTIONS;
}

static void rules_free(char ***v, size_t *n)
{
	for (size_t i = 0; *v && i < *n; i++)
		free((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

void pd_spec_network_clear(paddock_spec *spec)
{
	rules_free(&spec->network.allow, &spec->network.n_allow);
	rules_free(&spec->network.deny, &spec->network.n_deny);
}

static int rules_copy(char **src, size_t n, char ***ret, size_t *ret_n)
{
	if (n == 0)
		return 0;
	*ret = calloc(n, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*ret)[i] = strdup(src[i]);
		if (!(*ret)[i])
			return -ENOMEM;
		(*ret_n)++; /* counted as they arrive, so a partial copy is freed */
	}
	return 0;
}

int pd_spec_network_copy(paddock_spec *dst, const paddock_spec *src)
{
	dst->network = src->network;
	dst->network.allow = dst->network.deny = NULL;
	dst->network.n_allow = dst->network.n_deny = 0;
	if (rules_copy(src->network.allow, src->network.n_allow, &dst->network.allow,
		       &dst->network.n_allow) < 0 ||
	    rules_copy(src->network.deny, src->network.n_deny, &dst->network.deny,
		       &dst->network.n_deny) < 0)
		return -ENOMEM;
	return 0;
}

/* Checks one rule (or preset) as the proxy will read it. */
static int check_rule(const char *text, bool deny, const char *field, paddock_error *err)
{
	struct pd_egress_policy p;
	int r;

	pd_egress_policy_init(&p, PD_EGRESS_ALLOWLIST);
	r = pd_egress_policy_add(&p, text, deny, field, err);
	pd_egress_policy_release(&p);
	return r;
}

static int rule_append(paddock_spec *spec, bool deny, const char *text, const char *field,
		       paddock_error *err)
{
	char ***v = deny ? &spec->network.deny : &spec->network.allow;
	size_t *n = deny ? &spec->network.n_deny : &spec->network.n_allow;
	_cleanup_free_ char *copy = NULL;
	char **nv;
	int r;

	if (*n >= PD_EGRESS_RULES_MAX)
		return pd_fail_field(err, EINVAL, field, "expected at most %d rules",
				     PD_EGRESS_RULES_MAX);
	r = check_rule(text, deny, field, err);
	if (r < 0)
		return r;
	copy = strdup(text);
	nv = copy ? realloc(*v, (*n + 1) * sizeof(**v)) : NULL;
	if (!nv)
		return pd_fail(err, ENOMEM, "out of memory");
	*v = nv;
	(*v)[(*n)++] = TAKE_PTR(copy);
	return 0;
}

static int parse_bool(const char *s, bool *ret)
{
	if (streq(s, "true") || streq(s, "1") || streq(s, "yes")) {
		*ret = true;
		return 0;
	}
	if (streq(s, "false") || streq(s, "0") || streq(s, "no")) {
		*ret = false;
		return 0;
	}
	return -EINVAL;
}

static int load_rules(paddock_spec *spec, bool deny, json_t *v, const char *field,
		      paddock_error *err)
{
	char ***list = deny ? &spec->network.deny : &spec->network.allow;
	size_t *n = deny ? &spec->network.n_deny : &spec->network.n_allow;
	size_t i;
	json_t *m;
	int r;

	if (!json_is_array(v))
		return pd_fail_field(err, EINVAL, field,
				     "expected an array of rules such as [\"pypi.org\", "
				     "\"*.example.com:443\", \"10.0.0.0/8\"]");
	/* the array replaces the rules; the caller works on a copy of the spec */
	rules_free(list, n);
	json_array_foreach(v, i, m) {
		char sub[64];

		/* a field name is at most 63 bytes: the error struct's size */
		if (snprintf(sub, sizeof(sub), "%.40s[%zu]", field, i) < 0)
			sub[0] = '\0';
		if (!json_is_string(m) || strlen(json_string_value(m)) != json_string_length(m))
			return pd_fail_field(err, EINVAL, sub, "expected a rule as a string");
		r = rule_append(spec, deny, json_string_value(m), sub, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int load_max_connections(paddock_spec *spec, json_t *v, const char *field,
				paddock_error *err)
{
	json_int_t n;

	if (!json_is_integer(v) || (n = json_integer_value(v)) < 1 || n > MAX_CONNECTIONS_LIMIT)
		return pd_fail_field(err, EINVAL, field, "expected an integer from 1 to %d",
				     MAX_CONNECTIONS_LIMIT);
	spec->network.max_connections = (unsigned)n;
	return 0;
}

static int set_mode(paddock_spec *spec, const char *value, const char *field,
		    paddock_error *err)
{
	int m = pd_net_mode_from_string(value);

	if (m < 0)
		return pd_fail_field(err, EINVAL, field,
				     "expected one of 'none', 'allowlist', 'open', got '%s'",
				     PD_ESC(value));
	spec->network.mode = (enum pd_net_mode)m;
	return 0;
}

int pd_spec_network_load(paddock_spec *spec, json_t *v, const char *field, paddock_error *err)
{
	const char *key;
	json_t *m;
	int r;

	if (!json_is_object(v))
		return pd_fail_field(err, EINVAL, field, "expected an object");
	/* allow rules without a mode ask for an allowlist, as with --allow */
	if (json_object_get(v, "allow") && !json_object_get(v, "mode") &&
	    spec->network.mode == PD_NET_NONE)
		spec->network.mode = PD_NET_ALLOWLIST;
	json_object_foreach(v, key, m) {
		char sub[64];

		snprintf(sub, sizeof(sub), "%.20s.%.40s", field, key);
		if (streq(key, "mode")) {
			if (!json_is_string(m))
				return pd_fail_field(err, EINVAL, sub,
						     "expected 'none', 'allowlist' or 'open'");
			r = set_mode(spec, json_string_value(m), sub, err);
		} else if (streq(key, "allow") || streq(key, "deny")) {
			r = load_rules(spec, streq(key, "deny"), m, sub, err);
		} else if (streq(key, "transparent")) {
			if (!json_is_boolean(m))
				return pd_fail_field(err, EINVAL, sub, "expected true or false");
			spec->network.transparent = json_is_true(m);
			r = 0;
		} else if (streq(key, "max_connections")) {
			r = load_max_connections(spec, m, sub, err);
		} else {
			return pd_fail_field(err, EINVAL, sub,
					     "unknown field '%s', expected one of 'mode', 'allow', "
					     "'deny', 'transparent', 'max_connections'",
					     PD_ESC(key));
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int pd_spec_network_set(paddock_spec *spec, const char *name, const char *value,
			const char *field, paddock_error *err)
{
	if (streq(name, "mode"))
		return set_mode(spec, value, field, err);
	if (streq(name, "allow") || streq(name, "deny")) {
		int r = rule_append(spec, streq(name, "deny"), value, field, err);

		/* a rule alone asks for an allowlist: under "none" it would do nothing */
		if (r >= 0 && streq(name, "allow") && spec->network.mode == PD_NET_NONE)
			spec->network.mode = PD_NET_ALLOWLIST;
		return r;
	}
	if (streq(name, "transparent")) {
		bool b;

		if (parse_bool(value, &b) < 0)
			return pd_fail_field(err, EINVAL, field, "expected true or false, got '%s'",
					     PD_ESC(value));
		spec->network.transparent = b;
		return 0;
	}
	if (streq(name, "max_connections")) {
		char *end;
		unsigned long n;

		errno = 0;
		n = strtoul(value, &end, 10);
		if (errno || end == value || *end || value[0] == '-' || n < 1 ||
		    n > MAX_CONNECTIONS_LIMIT)
			return pd_fail_field(err, EINVAL, field,
					     "expected an integer from 1 to %d, got '%s'",
					     MAX_CONNECTIONS_LIMIT, PD_ESC(value));
		spec->network.max_connections = (unsigned)n;
		return 0;
	}
	return -ENOENT;
}

int pd_spec_network_validate(const paddock_spec *spec, paddock_error *err)
{
	if (!pd_net_mode_to_string(spec->network.mode))
		return pd_fail_field(err, EINVAL, "network.mode", "unknown mode %d",
				     (int)spec->network.mode);
	/* a rule under "none" would do nothing: say so rather than let it look effective */
	if (spec->network.mode == PD_NET_NONE && spec->network.n_allow > 0)
		return pd_fail_field(err, EINVAL, "network.allow",
				     "rules need network.mode 'allowlist' or 'open'; 'none' allows "
				     "no egress at all");
	if (spec->network.mode == PD_NET_NONE && spec->network.n_deny > 0)
		return pd_fail_field(err, EINVAL, "network.deny",
				     "rules need network.mode 'allowlist' or 'open'; 'none' allows "
				     "no egress at all");
	if (spec->network.max_connections < 1 ||
	    spec->network.max_connections > MAX_CONNECTIONS_LIMIT)
		return pd_fail_field(err, EINVAL, "network.max_connections",
				     "expected an integer from 1 to %d", MAX_CONNECTIONS_LIMIT);
	return 0;
}

int pd_spec_network_policy(const paddock_spec *spec, struct pd_egress_policy *ret,
			   paddock_error *err)
{
	struct pd_egress_policy p;
	char field[64];
	int r;

	pd_egress_policy_init(&p, (enum pd_egress_mode)spec->network.mode);
	for (int deny = 0; deny <= 1; deny++) {
		char **v = deny ? spec->network.deny : spec->network.allow;
		size_t n = deny ? spec->network.n_deny : spec->network.n_allow;

		for (size_t i = 0; i < n; i++) {
			snprintf(field, sizeof(field), "network.%s[%zu]", deny ? "deny" : "allow",
				 i);
			r = pd_egress_policy_add(&p, v[i], deny, field, err);
			if (r < 0) {
				pd_egress_policy_release(&p);
				return r;
			}
		}
	}
	*ret = p;
	return 0;
}

static json_t *rules_to_json(char **v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int pd_spec_network_to_json(const paddock_spec *spec, json_t *root, paddock_error *err)
{
	const char *mode = pd_net_mode_to_string(spec->network.mode);
	json_t *o;

	if (!mode)
		return pd_fail_field(err, EINVAL, "network.mode", "unknown mode %d",
				     (int)spec->network.mode);
	o = json_pack("{s:s, s:o, s:o, s:b, s:I}", "mode", mode, "allow",
		      rules_to_json(spec->network.allow, spec->network.n_allow), "deny",
		      rules_to_json(spec->network.deny, spec->network.n_deny), "transparent",
		      spec->network.transparent, "max_connections",
		      (json_int_t)spec->network.max_connections);
	if (!o || json_object_set_new(root, "network", o) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}
