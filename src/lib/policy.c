/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's policy over a spec someone less trusted wrote (include/paddock/policy.h):
 * host paths under the directories the operator allows, network.mode under a maximum, allow
 * rules covered by the operator's own, limits under the operator's, secrets only the
 * operator's. paddockd (for its TCP tenants) and `paddock mcp` (for its agent) both decide
 * here, on the parsed spec, so each rule has one implementation and one message.
 *
 * Trust: the policy's settings come from the operator (flags, config files) and are trusted;
 * the spec checked is not. Host paths are resolved as the calling process, which may be root:
 * an unresolvable path gets the same refusal as an outside one, so the answer does not tell
 * an API client which host paths exist.
 */
#include "paddock/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "egress-policy.h"
#include "error.h"
#include "spec.h"
#include "util/cleanup.h"

struct paddock_policy {
	char **roots; /* resolved directories host paths may be at or below */
	size_t n_roots;
	enum pd_net_mode max_mode;
	paddock_spec *ceiling;		     /* NULL: none */
	struct pd_egress_policy ceiling_net; /* the ceiling's rules, parsed once */
};

int paddock_policy_new(paddock_policy **ret_policy, paddock_error *err)
{
	paddock_policy *p;

	if (!ret_policy)
		return pd_fail(err, EINVAL, "paddock_policy_new: ret_policy is required");
	p = calloc(1, sizeof(*p));
	if (!p)
		return pd_fail(err, ENOMEM, "allocate policy");
	p->max_mode = PD_NET_OPEN;
	pd_egress_policy_init(&p->ceiling_net, PD_EGRESS_NONE);
	*ret_policy = p;
	return 0;
}

paddock_policy *paddock_policy_free(paddock_policy *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_roots; i++)
		free(p->roots[i]);
	free(p->roots);
	paddock_spec_free(p->ceiling);
	pd_egress_policy_release(&p->ceiling_net);
	free(p);
	return NULL;
}

static int add_root(paddock_policy *p, char *real, paddock_error *err)
{
	char **n = reallocarray(p->roots, p->n_roots + 1, sizeof(*n));

	if (!n) {
		free(real);
		return pd_fail(err, ENOMEM, "allocate policy");
	}
	p->roots = n;
	p->roots[p->n_roots++] = real;
	return 0;
}

int paddock_policy_dup(const paddock_policy *p, paddock_policy **ret_copy, paddock_error *err)
{
	paddock_policy *c = NULL;
	int r;

	if (!p || !ret_copy)
		return pd_fail(err, EINVAL, "paddock_policy_dup: arguments are required");
	r = paddock_policy_new(&c, err);
	for (size_t i = 0; r >= 0 && i < p->n_roots; i++) {
		char *s = strdup(p->roots[i]);

		r = s ? add_root(c, s, err) : pd_fail(err, ENOMEM, "allocate policy");
	}
	if (r >= 0)
		c->max_mode = p->max_mode;
	if (r >= 0 && p->ceiling)
		r = paddock_policy_set_ceiling(c, p->ceiling, err);
	if (r < 0) {
		paddock_policy_free(c);
		return r;
	}
	*ret_copy = c;
	return 0;
}

int paddock_policy_allow_host_path(paddock_policy *p, const char *dir, paddock_error *err)
{
	struct stat st;
	char *real;

	if (!p || !dir)
		return pd_fail(err, EINVAL,
			       "paddock_policy_allow_host_path: arguments are required");
	real = realpath(dir, NULL);
	if (!real)
		return pd_fail_field(err, errno, "allow-host-path", "resolve '%s'", PD_ESC(dir));
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(real);
		return pd_fail_field(err, ENOTDIR, "allow-host-path", "'%s' is not a directory",
				     PD_ESC(dir));
	}
	return add_root(p, real, err);
}

int paddock_policy_set_max_network(paddock_policy *p, const char *mode, paddock_error *err)
{
	int m;

	if (!p || !mode)
		return pd_fail(err, EINVAL,
			       "paddock_policy_set_max_network: arguments are required");
	m = pd_net_mode_from_string(mode);
	if (m < 0)
		return pd_fail_field(err, EINVAL, "max-network",
				     "expected one of 'none', 'allowlist', 'open', got '%s'",
				     PD_ESC(mode));
	p->max_mode = (enum pd_net_mode)m;
	return 0;
}

int paddock_policy_set_ceiling(paddock_policy *p, const paddock_spec *ceiling, paddock_error *err)
{
	struct pd_egress_policy net = { 0 };
	paddock_spec *copy = NULL;
	int r;

	if (!p || !ceiling)
		return pd_fail(err, EINVAL, "paddock_policy_set_ceiling: arguments are required");
	r = paddock_spec_validate(ceiling, err);
	if (r >= 0)
		r = pd_spec_dup(ceiling, &copy, err);
	if (r >= 0)
		r = pd_spec_network_policy(copy, &net, err);
	if (r < 0) {
		paddock_spec_free(copy);
		return r;
	}
	paddock_spec_free(p->ceiling);
	pd_egress_policy_release(&p->ceiling_net);
	p->ceiling = copy;
	p->ceiling_net = net;
	return 0;
}

/* ---- host paths ------------------------------------------------------------------------- */

/* `real` (resolved) is `root` or below it; "/" holds everything */
static bool at_or_below(const char *real, const char *root)
{
	size_t n = strlen(root);

	return !strncmp(real, root, n) && (real[n] == '/' || real[n] == '\0' || n == 1);
}

int paddock_policy_check_host_path(const paddock_policy *p, const char *path, const char *field,
				   char **ret_resolved, paddock_error *err)
{
	_cleanup_free_ char *real = NULL;

	if (!p || !path || !field)
		return pd_fail(err, EINVAL,
			       "paddock_policy_check_host_path: arguments are required");
	if (!p->n_roots)
		return pd_fail_field(err, EPERM, field, "the operator allows no host directory");
	if (path[0] != '/')
		return pd_fail_field(err, EINVAL, field, "expected an absolute host path");
	/*
	 * SECURITY: the resolved path is what is compared and what the caller should use: a
	 * symlink or ".." below an allowed directory cannot lead out of it. A sandbox that can
	 * write there could still swap a checked directory for a symlink before it is mounted
	 * (docs/security.md, "Known gap").
	 */
	real = realpath(path, NULL);
	for (size_t i = 0; real && i < p->n_roots; i++) {
		if (at_or_below(real, p->roots[i])) {
			if (ret_resolved)
				*ret_resolved = TAKE_PTR(real);
			return 0;
		}
	}
	return pd_fail_field(err, EPERM, field, "'%s' is not under a directory the operator allows",
			     PD_ESC(path));
}

/* A host path of the spec: the ceiling's own is allowed as it is, anything else is checked. */
static int check_path(const paddock_policy *p, const char *path, const char *ceiling_path,
		      const char *field, paddock_error *err)
{
	if (!path || (ceiling_path && !strcmp(path, ceiling_path)))
		return 0;
	return paddock_policy_check_host_path(p, path, field, NULL, err);
}

static int check_host_paths(const paddock_policy *p, const paddock_spec *spec, paddock_error *err)
{
	const paddock_spec *c = p->ceiling;
	int r;

	r = check_path(p, spec->workspace, c ? c->workspace : NULL, "workspace", err);
	if (r >= 0)
		r = check_path(p, spec->rootfs, c ? c->rootfs : NULL, "rootfs", err);
	for (size_t i = 0; r >= 0 && i < spec->n_binds; i++) {
		const struct pd_bind *b = &spec->binds[i];
		char field[PD_SPEC_FIELD_MAX];
		bool own = false;

		/* the ceiling's bind, or a read-only one of a source it binds */
		for (size_t j = 0; c && !own && j < c->n_binds; j++)
			own = !strcmp(b->source, c->binds[j].source) &&
			      (b->readonly || !c->binds[j].readonly);
		if (own)
			continue;
		snprintf(field, sizeof(field), "binds[%zu].source", i);
		r = paddock_policy_check_host_path(p, b->source, field, NULL, err);
	}
	return r;
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

static bool listed(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

/* One allow rule (or each rule of a preset) within the ceiling's. */
static int check_rule(const paddock_policy *p, const char *text, const char *field,
		      paddock_error *err)
{
	const char *const *preset = NULL;
	const char *one[2] = { text, NULL };
	struct pd_egress_rule r;
	int ret;

	/* the operator's own rule widens nothing, whatever it holds */
	if (listed(p->ceiling->network.allow, p->ceiling->network.n_allow, text))
		return 0;
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
		if (!covered(&p->ceiling_net, &r))
			return pd_fail_field(err, EPERM, field,
					     "'%s' is not allowed by the operator's network policy "
					     "(mode '%s')",
					     PD_ESC(*t),
					     pd_net_mode_to_string(p->ceiling->network.mode));
	}
	return 0;
}

static int check_network(const paddock_policy *p, const paddock_spec *spec, paddock_error *err)
{
	enum pd_net_mode max = p->max_mode;
	int r;

	if (p->ceiling && p->ceiling->network.mode < max)
		max = p->ceiling->network.mode;
	/* SECURITY: the operator's bound on egress holds whatever the rules say */
	if (spec->network.mode > max)
		return pd_fail_field(
			err, EPERM, "network.mode", "'%s' asked, the operator allows at most '%s'",
			pd_net_mode_to_string(spec->network.mode), pd_net_mode_to_string(max));
	if (!p->ceiling || spec->network.mode == PD_NET_NONE)
		return 0;
	for (size_t i = 0; i < spec->network.n_allow; i++) {
		char field[PD_SPEC_FIELD_MAX];

		snprintf(field, sizeof(field), "network.allow[%zu]", i);
		r = check_rule(p, spec->network.allow[i], field, err);
		if (r < 0)
			return r;
	}
	/* the allow rules were judged with the operator's deny rules: they must all stay */
	for (size_t i = 0; i < p->ceiling->network.n_deny; i++)
		if (!listed(spec->network.deny, spec->network.n_deny, p->ceiling->network.deny[i]))
			return pd_fail_field(err, EPERM, "network.deny",
					     "the operator's deny rule '%s' is missing",
					     PD_ESC(p->ceiling->network.deny[i]));
	return 0;
}

int paddock_policy_check_network(const paddock_policy *p, const paddock_spec *spec,
				 paddock_error *err)
{
	if (!p || !spec)
		return pd_fail(err, EINVAL, "paddock_policy_check_network: arguments are required");
	return check_network(p, spec, err);
}

/* ---- limits ----------------------------------------------------------------------------- */

/* Every limit: its paddock_spec_get_limit() name, its spec key, the unit messages give. */
static const struct {
	const char *name, *key, *unit;
} limit_fields[] = {
	{ "memory", "memory", "bytes" },       { "cpus", "cpus", "CPUs" },
	{ "pids", "pids", "processes" },       { "timeout", "timeout_s", "s" },
	{ "cpu_time", "cpu_time_s", "s CPU" }, { "disk", "disk", "bytes" },
	{ "file_size", "file_size", "bytes" }, { "nofile", "nofile", "files" },
	{ "output", "output", "bytes" },
};

/* Every limit is finite (spec-limits.c), so "at most the ceiling's" is a plain comparison. */
static int check_limits(const paddock_spec *ceiling, const paddock_spec *spec, paddock_error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(limit_fields); i++) {
		double asked, max;
		char field[PD_SPEC_FIELD_MAX];
		int r;

		r = paddock_spec_get_limit(spec, limit_fields[i].name, &asked, err);
		if (r >= 0)
			r = paddock_spec_get_limit(ceiling, limit_fields[i].name, &max, err);
		if (r < 0)
			return r;
		snprintf(field, sizeof(field), "limits.%s", limit_fields[i].key);
		if (asked > max)
			return pd_fail_field(err, EPERM, field,
					     "%.15g %s asked, the operator allows at most %.15g",
					     asked, limit_fields[i].unit, max);
	}
	return 0;
}

/* ---- secrets ---------------------------------------------------------------------------- */

/* SECURITY: the time taken must not tell how much of the operator's value was guessed */
static bool same_value(const struct pd_spec_secret *a, const struct pd_spec_secret *b)
{
	unsigned char d = 0;

	if (a->value_len != b->value_len)
		return false;
	for (size_t i = 0; i < a->value_len; i++)
		d |= a->value[i] ^ b->value[i];
	return d == 0;
}

static const struct pd_spec_secret *find_secret(const paddock_spec *c, const char *name)
{
	for (size_t i = 0; i < c->n_secrets; i++)
		if (!strcmp(c->secrets[i].name, name))
			return &c->secrets[i];
	return NULL;
}

/*
 * A secret is the operator's: the same name and source (its env, its files, its value are
 * what the proxy would send), to a subset of its hosts, in bodies only if it allows that.
 */
static int check_secrets(const paddock_spec *ceiling, const paddock_spec *spec, paddock_error *err)
{
	for (size_t i = 0; i < spec->n_secrets; i++) {
		const struct pd_spec_secret *s = &spec->secrets[i];
		const struct pd_spec_secret *o = find_secret(ceiling, s->name);
		char field[PD_SPEC_FIELD_MAX];

		snprintf(field, sizeof(field), "secrets[%zu]", i);
		if (!o || strcmp(o->source, s->source) || !same_value(o, s))
			return pd_fail_field(err, EPERM, field,
					     "'%s' is not a secret the operator bound",
					     PD_ESC(s->name));
		if (s->in_body && !o->in_body)
			return pd_fail_field(err, EPERM, field,
					     "the operator does not substitute '%s' in bodies",
					     PD_ESC(s->name));
		for (size_t j = 0; j < s->n_hosts; j++) {
			if (listed(o->hosts, o->n_hosts, s->hosts[j]))
				continue;
			snprintf(field, sizeof(field), "secrets[%zu].hosts[%zu]", i, j);
			return pd_fail_field(err, EPERM, field,
					     "the operator does not send '%s' to '%s'",
					     PD_ESC(s->name), PD_ESC(s->hosts[j]));
		}
	}
	return 0;
}

/* ---- the spec --------------------------------------------------------------------------- */

int paddock_policy_check(const paddock_policy *p, const paddock_spec *spec, paddock_error *err)
{
	int r;

	if (!p || !spec)
		return pd_fail(err, EINVAL, "paddock_policy_check: arguments are required");
	r = check_host_paths(p, spec, err);
	if (r >= 0)
		r = check_network(p, spec, err);
	if (r >= 0 && p->ceiling)
		r = check_limits(p->ceiling, spec, err);
	if (r >= 0 && p->ceiling)
		r = check_secrets(p->ceiling, spec, err);
	return r < 0 ? r : 0;
}
