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
#define streq(a, b)		(strcmp((a), (b)) == 0)
#define MAX_CONNECTIONS_LIMIT	65536
#define DEFAULT_ASK_TIMEOUT_S	30.0
#define ASK_TIMEOUT_MAX_S	3600.0
#define DEFAULT_ASK_MAX_PENDING 8
#define ASK_MAX_PENDING_LIMIT	64

static const char *const unlisted_names[_PD_NET_UNLISTED_MAX] = {
	[PD_NET_UNLISTED_DENY] = "deny",
	[PD_NET_UNLISTED_ASK] = "ask",
};

const char *pd_net_unlisted_to_string(enum pd_net_unlisted u)
{
	return (unsigned)u < _PD_NET_UNLISTED_MAX ? unlisted_names[u] : NULL;
}

int pd_net_unlisted_from_string(const char *s)
{
	for (int i = 0; s && i < _PD_NET_UNLISTED_MAX; i++)
		if (streq(s, unlisted_names[i]))
			return i;
	return -EINVAL;
}

static_assert((int)PD_NET_NONE == (int)PD_EGRESS_NONE &&
		      (int)PD_NET_ALLOWLIST == (int)PD_EGRESS_ALLOWLIST &&
		      (int)PD_NET_OPEN == (int)PD_EGRESS_OPEN,
	      "spec and egress modes differ");

void pd_spec_network_defaults(paddock_spec *spec)
{
	spec->network.mode = PD_NET_NONE;
	spec->network.transparent = true;
	spec->network.max_connections = DEFAULT_MAX_CONNECTIONS;
	spec->network.unlisted = PD_NET_UNLISTED_DENY;
	spec->network.ask_timeout_s = DEFAULT_ASK_TIMEOUT_S;
	spec->network.ask_max_pending = DEFAULT_ASK_MAX_PENDING;
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
	json_array_foreach(v, i, m)
	{
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

static int set_unlisted(paddock_spec *spec, const char *value, const char *field,
			paddock_error *err)
{
	int u = pd_net_unlisted_from_string(value);

	if (u < 0)
		return pd_fail_field(err, EINVAL, field, "expected 'deny' or 'ask', got '%s'",
				     PD_ESC(value));
	spec->network.unlisted = (enum pd_net_unlisted)u;
	return 0;
}

static int set_ask_timeout(paddock_spec *spec, double v, const char *field, paddock_error *err)
{
	if (!(v > 0 && v <= ASK_TIMEOUT_MAX_S))
		return pd_fail_field(err, EINVAL, field,
				     "expected seconds above 0 and at most %.0f (an hour)",
				     ASK_TIMEOUT_MAX_S);
	spec->network.ask_timeout_s = v;
	return 0;
}

static int set_ask_max_pending(paddock_spec *spec, long long n, const char *field,
			       paddock_error *err)
{
	if (n < 1 || n > ASK_MAX_PENDING_LIMIT)
		return pd_fail_field(err, EINVAL, field, "expected an integer from 1 to %d",
				     ASK_MAX_PENDING_LIMIT);
	spec->network.ask_max_pending = (unsigned)n;
	return 0;
}

static int set_mode(paddock_spec *spec, const char *value, const char *field, paddock_error *err)
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
	json_object_foreach(v, key, m)
	{
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
		} else if (streq(key, "unlisted")) {
			if (!json_is_string(m))
				return pd_fail_field(err, EINVAL, sub, "expected 'deny' or 'ask'");
			r = set_unlisted(spec, json_string_value(m), sub, err);
		} else if (streq(key, "ask_timeout_s")) {
			if (!json_is_number(m))
				return pd_fail_field(err, EINVAL, sub,
						     "expected seconds above 0 and at most %.0f",
						     ASK_TIMEOUT_MAX_S);
			r = set_ask_timeout(spec, json_number_value(m), sub, err);
		} else if (streq(key, "ask_max_pending")) {
			if (!json_is_integer(m))
				return pd_fail_field(err, EINVAL, sub,
						     "expected an integer from 1 to %d",
						     ASK_MAX_PENDING_LIMIT);
			r = set_ask_max_pending(spec, json_integer_value(m), sub, err);
		} else {
			return pd_fail_field(
				err, EINVAL, sub,
				"unknown field '%s', expected one of 'mode', 'allow', "
				"'deny', 'transparent', 'max_connections', 'unlisted', "
				"'ask_timeout_s', 'ask_max_pending'",
				PD_ESC(key));
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int pd_spec_network_set(paddock_spec *spec, const char *name, const char *value, const char *field,
			paddock_error *err)
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
	if (streq(name, "unlisted"))
		return set_unlisted(spec, value, field, err);
	if (streq(name, "ask_timeout_s")) {
		double v;

		if (pd_parse_seconds(value, &v) < 0)
			return pd_fail_field(err, EINVAL, field,
					     "expected seconds above 0 and at most %.0f, got '%s'",
					     ASK_TIMEOUT_MAX_S, PD_ESC(value));
		return set_ask_timeout(spec, v, field, err);
	}
	if (streq(name, "ask_max_pending")) {
		char *end;
		long long n;

		errno = 0;
		n = strtoll(value, &end, 10);
		if (errno || end == value || *end)
			return pd_fail_field(err, EINVAL, field,
					     "expected an integer from 1 to %d, got '%s'",
					     ASK_MAX_PENDING_LIMIT, PD_ESC(value));
		return set_ask_max_pending(spec, n, field, err);
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
	if (!pd_net_unlisted_to_string(spec->network.unlisted))
		return pd_fail_field(err, EINVAL, "network.unlisted", "unknown value %d",
				     (int)spec->network.unlisted);
	/* asking is about hosts an allowlist leaves out: 'open' has none, 'none' opens nothing */
	if (spec->network.unlisted == PD_NET_UNLISTED_ASK && spec->network.mode != PD_NET_ALLOWLIST)
		return pd_fail_field(err, EINVAL, "network.unlisted",
				     "'ask' needs network.mode 'allowlist' (mode '%s' %s)",
				     pd_net_mode_to_string(spec->network.mode),
				     spec->network.mode == PD_NET_OPEN
					     ? "allows every public host already"
					     : "has no egress to ask about");
	if (!(spec->network.ask_timeout_s > 0 && spec->network.ask_timeout_s <= ASK_TIMEOUT_MAX_S))
		return pd_fail_field(err, EINVAL, "network.ask_timeout_s",
				     "expected seconds above 0 and at most %.0f",
				     ASK_TIMEOUT_MAX_S);
	if (spec->network.ask_max_pending < 1 ||
	    spec->network.ask_max_pending > ASK_MAX_PENDING_LIMIT)
		return pd_fail_field(err, EINVAL, "network.ask_max_pending",
				     "expected an integer from 1 to %d", ASK_MAX_PENDING_LIMIT);
	return 0;
}

int pd_spec_network_policy(const paddock_spec *spec, struct pd_egress_policy *ret,
			   paddock_error *err)
{
	struct pd_egress_policy p;
	char field[64];
	int r;

	pd_egress_policy_init(&p, (enum pd_egress_mode)spec->network.mode);
	p.ask = spec->network.unlisted == PD_NET_UNLISTED_ASK &&
		spec->network.mode == PD_NET_ALLOWLIST;
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
	/* whole seconds as an integer ("30"), as limits.timeout_s is written */
	double t = spec->network.ask_timeout_s;
	json_t *timeout = t > 0 && t <= ASK_TIMEOUT_MAX_S && (double)(json_int_t)t == t
				  ? json_integer((json_int_t)t)
				  : json_real(t);

	o = json_pack("{s:s, s:o, s:o, s:b, s:I, s:s, s:o, s:I}", "mode", mode, "allow",
		      rules_to_json(spec->network.allow, spec->network.n_allow), "deny",
		      rules_to_json(spec->network.deny, spec->network.n_deny), "transparent",
		      spec->network.transparent, "max_connections",
		      (json_int_t)spec->network.max_connections, "unlisted",
		      pd_net_unlisted_to_string(spec->network.unlisted), "ask_timeout_s", timeout,
		      "ask_max_pending", (json_int_t)spec->network.ask_max_pending);
	if (!o || json_object_set_new(root, "network", o) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}

int pd_spec_network_add_allow(paddock_spec *spec, const char *rule, paddock_error *err)
{
	return rule_append(spec, false, rule, "network.allow", err);
}
