/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's policy over what an agent's create_sandbox may ask for (docs/mcp.md): the
 * operator's spec is each sandbox's default and its ceiling. An agent may narrow anything;
 * it may widen nothing. This file only merges the agent's arguments over the operator's spec;
 * libpaddock's policy engine (paddock/policy.h) decides, and every refusal names the field and
 * says what the operator allows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

void mcp_policy_release(struct mcp_policy *p)
{
	paddock_spec_free(p->spec);
	paddock_policy_free(p->engine);
	p->spec = NULL;
	p->engine = NULL;
}

int mcp_policy_allow_host_path(struct mcp_policy *p, const char *dir, paddock_error *err)
{
	int r;

	if (!p->engine) {
		r = paddock_policy_new(&p->engine, err);
		if (r < 0)
			return r;
	}
	return paddock_policy_allow_host_path(p->engine, dir, err);
}

/* ---- network ---------------------------------------------------------------------------- */

/*
 * The network section of the agent's sandbox: its mode and allow rules, or the operator's,
 * the operator's deny rules and its own. Whether it stays within the operator's is for the
 * policy to say, on the spec. Returns the JSON to load into the spec, or NULL with err filled.
 */
static json_t *network_section(json_t *op_net, json_t *net, paddock_error *err)
{
	json_t *mode = json_object_get(net, "mode"), *allow = json_object_get(net, "allow");
	json_t *deny = json_object_get(net, "deny"), *out;
	const char *m = json_string_value(json_object_get(op_net, "mode"));
	bool none;

	if (mode)
		m = json_string_value(mode);
	else if (allow)
		m = "allowlist";
	if (!m) {
		paddock_fail_field(err, EINVAL, "network.mode", "expected a string");
		return NULL;
	}
	none = !strcmp(m, "none");
	if (!allow)
		allow = json_object_get(op_net, "allow");
	out = json_pack("{s:s, s:o, s:o}", "mode", m, "allow",
			none ? json_array() : json_deep_copy(allow), "deny",
			none ? json_array() : json_deep_copy(json_object_get(op_net, "deny")));
	if (out && !none && deny)
		json_array_extend(json_object_get(out, "deny"), deny);
	if (!out)
		paddock_fail(err, ENOMEM, "network");
	return out;
}

/* ---- workspace -------------------------------------------------------------------------- */

/* The agent's workspace, resolved: the path the sandbox gets is the one checked. */
static int workspace_path(const paddock_policy *pol, bool any_dir, const char *path, char **ret,
			  paddock_error *err)
{
	int r = paddock_policy_check_host_path(pol, path, "workspace", ret, err);

	/* how an operator would allow one: the library does not know this front end's flags */
	if (r < 0 && !any_dir) {
		size_t n = strlen(err->msg);

		snprintf(err->msg + n, sizeof(err->msg) - n,
			 " (paddock mcp --allow-host-path DIR)");
	}
	return r;
}

/* ---- the spec --------------------------------------------------------------------------- */

/* The operator's network section, as the agent's is merged over it. */
static json_t *operator_network(const paddock_spec *op, paddock_error *err)
{
	json_t *root, *net;
	char *text = NULL;

	if (paddock_spec_to_json(op, &text, err) < 0)
		return NULL;
	root = json_loads(text, 0, NULL);
	free(text);
	net = json_incref(json_object_get(root, "network"));
	json_decref(root);
	if (!net)
		paddock_fail(err, ENOMEM, "network");
	return net;
}

/* The operator's policy for one create: its directories, its spec as the ceiling. */
static int engine(const struct mcp_policy *p, paddock_policy **ret, paddock_error *err)
{
	paddock_policy *pol = NULL;
	int r;

	r = p->engine ? paddock_policy_dup(p->engine, &pol, err) : paddock_policy_new(&pol, err);
	if (r >= 0)
		r = paddock_policy_set_ceiling(pol, p->spec, err);
	if (r < 0) {
		paddock_policy_free(pol);
		return r;
	}
	*ret = pol;
	return 0;
}

int mcp_policy_spec(const struct mcp_policy *p, json_t *args, paddock_spec **ret_spec,
		    paddock_error *err)
{
	json_t *net = json_object_get(args, "network"), *limits = json_object_get(args, "limits");
	json_t *env = json_object_get(args, "env"), *ws = json_object_get(args, "workspace");
	json_t *doc = json_object(), *v;
	paddock_policy *pol = NULL;
	paddock_spec *spec = NULL;
	const char *key;
	char *text = NULL, *real = NULL;
	int r = -ENOMEM;

	if (!doc)
		return paddock_fail(err, ENOMEM, "create_sandbox");
	r = engine(p, &pol, err);
	if (r >= 0)
		r = paddock_spec_dup(p->spec, &spec, err);
	if (r < 0)
		goto out;
	if (net) {
		json_t *op_net = operator_network(p->spec, err);
		json_t *section = op_net ? network_section(op_net, net, err) : NULL;

		json_decref(op_net);
		if (!section) {
			r = -err->code;
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
		r = workspace_path(pol, p->engine != NULL, json_string_value(ws), &real, err);
		if (r < 0)
			goto out;
		json_object_set_new(doc, "workspace", json_string(real));
	}
	text = json_dumps(doc, JSON_COMPACT);
	if (!text) {
		r = paddock_fail(err, ENOMEM, "create_sandbox");
		goto out;
	}
	r = paddock_spec_load_json(spec, text, strlen(text), err);
	if (r < 0)
		goto out;
	json_object_foreach(env, key, v)
	{
		char *kv;

		if (asprintf(&kv, "%s=%s", key, json_string_value(v)) < 0) {
			r = paddock_fail(err, ENOMEM, "env");
			goto out;
		}
		r = paddock_spec_set(spec, "env", kv, err);
		explicit_bzero(kv, strlen(kv));
		free(kv);
		if (r < 0)
			goto out;
	}
	r = paddock_policy_check(pol, spec, err);
	if (r < 0)
		goto out;
	r = paddock_spec_validate(spec, err);
	if (r < 0)
		goto out;
	*ret_spec = spec;
	spec = NULL;
out:
	paddock_policy_free(pol);
	paddock_spec_free(spec);
	json_decref(doc);
	free(text);
	free(real);
	return r;
}
