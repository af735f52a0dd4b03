/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's policy over what an agent's create_sandbox may ask for (docs/mcp.md): the
 * operator's spec is each sandbox's default and its ceiling. An agent may narrow anything;
 * it may widen nothing. Every refusal names the field and says what the operator allows.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "egress-policy.h"
#include "error.h"
#include "mcp.h"
#include "spec.h"

void mcp_policy_release(struct mcp_policy *p)
{
	paddock_spec_free(p->spec);
	for (size_t i = 0; i < p->n_allow_host_paths; i++)
		free(p->allow_host_paths[i]);
	free(p->allow_host_paths);
	p->spec = NULL;
	p->allow_host_paths = NULL;
	p->n_allow_host_paths = 0;
}

int mcp_policy_allow_host_path(struct mcp_policy *p, const char *dir, paddock_error *err)
{
	char *real = realpath(dir, NULL), **n;
	struct stat st;

	if (!real)
		return pd_fail_field(err, errno, "allow-host-path", "resolve '%s'", PD_ESC(dir));
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(real);
		return pd_fail_field(err, ENOTDIR, "allow-host-path", "'%s' is not a directory",
				     PD_ESC(dir));
	}
	n = realloc(p->allow_host_paths, (p->n_allow_host_paths + 1) * sizeof(*n));
	if (!n) {
		free(real);
		return pd_fail(err, ENOMEM, "allow-host-path");
	}
	p->allow_host_paths = n;
	p->allow_host_paths[p->n_allow_host_paths++] = real;
	return 0;
}

/* ---- network ---------------------------------------------------------------------------- */

static bool port_covers(const struct pd_egress_rule *op, const struct pd_egress_rule *r)
{
	return op->port == 0 || op->port == r->port;
}

/* "a.b.c" is "c" or below it */
static bool name_at_or_below(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return !strcmp(name, suffix) ||
	       (n > s && name[n - s - 1] == '.' && !strcmp(name + n - s, suffix));
}

static bool cidr_covers(const struct pd_egress_rule *op, const struct pd_egress_rule *r)
{
	if (op->family != r->family || op->prefix > r->prefix)
		return false;
	for (unsigned bit = 0; bit < op->prefix; bit++) {
		unsigned byte = bit / 8, mask = 0x80u >> (bit % 8);

		if ((op->addr[byte] & mask) != (r->addr[byte] & mask))
			return false;
	}
	return true;
}

/*
 * Whether the operator's policy allows everything rule `r` would: a name the operator
 * allows on that port, a wildcard under an operator wildcard, an address range inside an
 * operator range. Addresses that are not public need a CIDR rule in any mode.
 */
static bool covered(const struct pd_egress_policy *op, const struct pd_egress_rule *r)
{
	const struct pd_egress_rule *rule;

	switch (r->kind) {
	case PD_EGRESS_NAME:
		return pd_egress_allow_name(op, r->name, r->port, &rule);
	case PD_EGRESS_WILDCARD:
		if (op->mode == PD_EGRESS_OPEN)
			return true;
		for (size_t i = 0; i < op->n_rules; i++) {
			const struct pd_egress_rule *o = &op->rules[i];

			if (!o->deny && o->kind == PD_EGRESS_WILDCARD && port_covers(o, r) &&
			    name_at_or_below(r->name, o->name))
				return true;
		}
		return false;
	case PD_EGRESS_CIDR:
		for (size_t i = 0; i < op->n_rules; i++) {
			const struct pd_egress_rule *o = &op->rules[i];

			if (!o->deny && o->kind == PD_EGRESS_CIDR && port_covers(o, r) &&
			    cidr_covers(o, r))
				return true;
		}
		return false;
	case _PD_EGRESS_RULE_KIND_MAX:
		break;
	}
	return false;
}

static int check_rule(const struct pd_egress_policy *op, const char *op_mode, const char *text,
		      const char *field, paddock_error *err)
{
	const char *const *preset = NULL;
	const char *one[2] = { text, NULL };
	struct pd_egress_rule r;
	int ret;

	if (!strncmp(text, "preset:", 7)) {
		preset = pd_egress_preset_rules(text + 7);
		if (!preset)
			return pd_fail_field(err, EINVAL, field, "unknown preset '%s'",
					     PD_ESC(text + 7));
	}
	for (const char *const *t = preset ? preset : one; *t; t++) {
		ret = pd_egress_rule_parse(*t, false, field, &r, err);
		if (ret < 0)
			return ret;
		if (!covered(op, &r))
			return pd_fail_field(err, EPERM, field,
					     "'%s' is not allowed by the operator's network policy "
					     "(mode '%s')",
					     PD_ESC(*t), op_mode);
	}
	return 0;
}

static json_t *strings(char **list, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(list[i]));
	return a;
}

/*
 * The network section of the agent's sandbox: its mode and allow rules within the operator's,
 * the operator's deny rules and its own. Returns the JSON to load into the spec, or NULL with
 * err filled.
 */
static json_t *network_section(const paddock_spec *op_spec, json_t *net, paddock_error *err)
{
	json_t *mode = json_object_get(net, "mode"), *allow = json_object_get(net, "allow");
	json_t *deny = json_object_get(net, "deny"), *out, *v;
	enum pd_net_mode m = op_spec->network.mode;
	struct pd_egress_policy op;
	size_t i;
	int r;

	if (mode) {
		const char *s = json_string_value(mode);

		m = !strcmp(s, "none")	 ? PD_NET_NONE
		    : !strcmp(s, "open") ? PD_NET_OPEN
					 : PD_NET_ALLOWLIST;
	} else if (allow) {
		m = PD_NET_ALLOWLIST;
	}
	if (m > op_spec->network.mode) {
		pd_fail_field(err, EPERM, "network.mode",
			      "'%s' asked, the operator allows at most '%s'",
			      pd_net_mode_to_string(m), pd_net_mode_to_string(op_spec->network.mode));
		return NULL;
	}
	if (pd_spec_network_policy(op_spec, &op, err) < 0)
		return NULL;
	json_array_foreach(allow, i, v) {
		char field[64];

		snprintf(field, sizeof(field), "network.allow[%zu]", i);
		r = check_rule(&op, pd_net_mode_to_string(op_spec->network.mode),
			       json_string_value(v), field, err);
		if (r < 0) {
			pd_egress_policy_release(&op);
			return NULL;
		}
	}
	pd_egress_policy_release(&op);
	out = json_pack("{s:s, s:o, s:o}", "mode", pd_net_mode_to_string(m), "allow",
			m == PD_NET_NONE ? json_array()
			: allow		 ? json_deep_copy(allow)
					 : strings(op_spec->network.allow, op_spec->network.n_allow),
			"deny", m == PD_NET_NONE ? json_array()
						 : strings(op_spec->network.deny, op_spec->network.n_deny));
	if (out && m != PD_NET_NONE && deny)
		json_array_extend(json_object_get(out, "deny"), deny);
	if (!out)
		pd_fail(err, ENOMEM, "network");
	return out;
}

/* ---- limits ----------------------------------------------------------------------------- */

/* create_sandbox's limits: argument name, spec limit name (paddock_spec_get_limit) */
static const struct {
	const char *arg, *limit, *unit;
} limit_args[] = {
	{ "memory", "memory", "bytes" },       { "cpus", "cpus", "CPUs" },
	{ "pids", "pids", "processes" },       { "timeout_s", "timeout", "s" },
	{ "cpu_time_s", "cpu_time", "s CPU" }, { "disk", "disk", "bytes" },
};

static int check_limits(const paddock_spec *op, const paddock_spec *spec, json_t *limits,
			paddock_error *err)
{
	for (size_t i = 0; i < sizeof(limit_args) / sizeof(limit_args[0]); i++) {
		double asked, max;
		char field[32];

		if (!json_object_get(limits, limit_args[i].arg))
			continue;
		snprintf(field, sizeof(field), "limits.%s", limit_args[i].arg);
		if (paddock_spec_get_limit(spec, limit_args[i].limit, &asked, err) < 0 ||
		    paddock_spec_get_limit(op, limit_args[i].limit, &max, err) < 0)
			return -EINVAL;
		if (asked > max)
			return pd_fail_field(err, EPERM, field,
					     "%.15g %s asked, the operator allows at most %.15g",
					     asked, limit_args[i].unit, max);
	}
	return 0;
}

/* ---- workspace -------------------------------------------------------------------------- */

static int workspace_path(const struct mcp_policy *p, const char *path, char **ret,
			  paddock_error *err)
{
	char *real;

	if (!p->n_allow_host_paths)
		return pd_fail_field(err, EPERM, "workspace",
				     "the operator allows no host directory (paddock mcp "
				     "--allow-host-path DIR)");
	if (path[0] != '/')
		return pd_fail_field(err, EINVAL, "workspace", "expected an absolute host path");
	real = realpath(path, NULL);
	if (!real)
		return pd_fail_field(err, errno, "workspace", "resolve '%s'", PD_ESC(path));
	for (size_t i = 0; i < p->n_allow_host_paths; i++) {
		const char *dir = p->allow_host_paths[i];
		size_t n = strlen(dir);

		if (!strncmp(real, dir, n) && (real[n] == '/' || real[n] == '\0' || n == 1)) {
			*ret = real;
			return 0;
		}
	}
	free(real);
	return pd_fail_field(err, EPERM, "workspace",
			     "'%s' is not under a directory the operator allows", PD_ESC(path));
}

/* ---- the spec --------------------------------------------------------------------------- */

int mcp_policy_spec(const struct mcp_policy *p, json_t *args, paddock_spec **ret_spec,
		    paddock_error *err)
{
	json_t *net = json_object_get(args, "network"), *limits = json_object_get(args, "limits");
	json_t *env = json_object_get(args, "env"), *ws = json_object_get(args, "workspace");
	json_t *doc = json_object(), *v;
	paddock_spec *spec = NULL;
	const char *key;
	char *text = NULL, *real = NULL;
	int r = -ENOMEM;

	if (!doc)
		return pd_fail(err, ENOMEM, "create_sandbox");
	r = pd_spec_dup(p->spec, &spec, err);
	if (r < 0)
		goto out;
	if (net) {
		json_t *section = network_section(p->spec, net, err);

		if (!section) {
			r = -EPERM;
			goto out;
		}
		json_object_set_new(doc, "network", section);
		/* secrets travel only with egress; a sandbox without network gets none */
		if (!strcmp(json_string_value(json_object_get(section, "mode")), "none"))
			json_object_set_new(doc, "secrets", json_array());
	}
	if (limits)
		json_object_set(doc, "limits", limits);
	if (ws) {
		r = workspace_path(p, json_string_value(ws), &real, err);
		if (r < 0)
			goto out;
		json_object_set_new(doc, "workspace", json_string(real));
	}
	text = json_dumps(doc, JSON_COMPACT);
	if (!text) {
		r = pd_fail(err, ENOMEM, "create_sandbox");
		goto out;
	}
	r = paddock_spec_load_json(spec, text, strlen(text), err);
	if (r < 0)
		goto out;
	json_object_foreach(env, key, v) {
		char *kv;

		if (asprintf(&kv, "%s=%s", key, json_string_value(v)) < 0) {
			r = pd_fail(err, ENOMEM, "env");
			goto out;
		}
		r = paddock_spec_set(spec, "env", kv, err);
		explicit_bzero(kv, strlen(kv));
		free(kv);
		if (r < 0)
			goto out;
	}
	r = check_limits(p->spec, spec, limits, err);
	if (r < 0)
		goto out;
	r = paddock_spec_validate(spec, err);
	if (r < 0)
		goto out;
	*ret_spec = spec;
	spec = NULL;
out:
	paddock_spec_free(spec);
	json_decref(doc);
	free(text);
	free(real);
	return r;
}
