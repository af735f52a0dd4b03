/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's egress configuration onto paddock's network section (docs/e2b.md): the create's
 * allow_internet_access and network.allowOut/denyOut, and PUT /sandboxes/{id}/network,
 * which replaces them on a live sandbox through svc_box_set_network() (bounded by
 * --max-network there). What E2B's network has and paddock does not is refused by name.
 *
 * Trust: r->tenant is the API key's tenant (e2b.c); every request is untrusted (control.c).
 */
#include "e2b-control.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool e2b_ctl_all_traffic(const char *s)
{
	return s && (strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "::/0") == 0);
}

/* ---- what a request asks for --------------------------------------------------------------- */

/* A list of strings (absent or null: NULL). False once the error is answered. */
static bool string_list(struct e2b_req *r, json_t *o, const char *key, const char *field,
			json_t **ret)
{
	json_t *v = json_object_get(o, key), *m;
	size_t i;

	*ret = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_array(v))
		goto bad;
	json_array_foreach(v, i, m) if (!json_is_string(m)) goto bad;
	*ret = v;
	return true;
bad:
	e2b_reply_error(r, 400, "%s: expected an array of CIDR blocks, addresses or host names",
			field);
	return false;
}

/* what the field holds asks for something: true, a non-empty array or object, a string */
bool e2b_ctl_asks(json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return false;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	if (json_is_object(v))
		return json_object_size(v) > 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	return true;
}

/*
 * The parts of E2B's network configuration paddock has no counterpart for: refused when
 * they ask for something, so that no one believes in a protection that is not there.
 */
static bool check_network_extras(struct e2b_req *r, json_t *net)
{
	json_t *apt = json_object_get(net, "allowPublicTraffic");

	if (e2b_ctl_asks(json_object_get(net, "egressProxy"))) {
		e2b_reply_error(r, 400,
				"network.egressProxy: a SOCKS5 egress proxy is not supported "
				"by paddock");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(net, "rules"))) {
		e2b_reply_error(r, 400,
				"network.rules: request transforms are not supported by "
				"paddock (a template's spec can bind secrets to hosts)");
		return false;
	}
	if (json_is_false(apt)) {
		e2b_reply_error(r, 400,
				"network.allowPublicTraffic: paddock's sandbox URLs take no "
				"traffic token; false is not supported");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(net, "maskRequestHost"))) {
		e2b_reply_error(r, 400, "network.maskRequestHost: not supported by paddock");
		return false;
	}
	if (e2b_ctl_asks(json_object_get(net, "httpsPorts"))) {
		e2b_reply_error(r, 400,
				"network.httpsPorts: paddock reaches a sandbox's ports over "
				"plain HTTP only");
		return false;
	}
	return true;
}

/*
 * E2B's egress model onto paddock's. E2B: traffic is allowed unless denyOut matches it, and
 * an allowOut match beats a deny; allow_internet_access false is denyOut ["0.0.0.0/0"].
 * paddock: a mode and rules where deny beats allow. So:
 *  - allowOut holds "all traffic": open (public addresses), allowOut's other entries as
 *    allow rules (a CIDR opens a private range), no deny rules (allow beats them all);
 *  - all traffic denied: allowOut's entries as an allowlist, or none when there are none;
 *  - else: open, allowOut as allow rules and denyOut as deny rules. Here paddock's deny
 *    beats an allow that E2B would let through (docs/e2b.md): stricter, never wider.
 * aia: allow_internet_access, -1 when absent. Returns {"mode", "allow", "deny"}; the lists
 * are recorded in nm for error messages.
 */
static json_t *map_network(int aia, json_t *allow_out, json_t *deny_out, struct netmap *nm)
{
	json_t *allow = json_array(), *deny = json_array(), *v, *o;
	bool allow_all = false, deny_all = aia == 0;
	const char *mode;
	size_t i;

	json_array_foreach(allow_out, i, v)
	{
		if (e2b_ctl_all_traffic(json_string_value(v)))
			allow_all = true;
		else
			json_array_append(allow, v);
	}
	json_array_foreach(deny_out, i, v) deny_all |= e2b_ctl_all_traffic(json_string_value(v));
	if (allow_all)
		mode = "open";
	else if (deny_all)
		mode = json_array_size(allow) ? "allowlist" : "none";
	else
		mode = "open";
	if (!allow_all && !deny_all && deny_out)
		json_array_extend(deny, deny_out);
	o = json_pack("{s:s,s:o,s:o}", "mode", mode, "allow", allow, "deny", deny);
	nm->allow_out = allow_out;
	nm->deny_out = deny_out;
	return o;
}

/* allow_internet_access: 1, 0, or -1 when absent; -2 once the error is answered */
int e2b_ctl_internet(struct e2b_req *r, json_t *o)
{
	json_t *v = json_object_get(o, "allow_internet_access");

	if (!v || json_is_null(v))
		return -1;
	if (!json_is_boolean(v)) {
		e2b_reply_error(r, 400, "allow_internet_access: expected true or false");
		return -2;
	}
	return json_is_true(v);
}

/*
 * The network section of the new sandbox's spec: the client's, mapped, over the template's
 * (its other fields, such as max_connections, stay); the template's when the client asks
 * nothing. E2B gives internet access by default: a template without a network section gets
 * "open" when the client asks for internet access, and when it asks nothing, "open" if
 * --max-network allows it, else "none" (an explicit ask beyond --max-network is a 403).
 */
bool e2b_ctl_create_network(struct e2b_req *r, json_t *body, json_t *spec, struct netmap *nm)
{
	json_t *net = json_object_get(body, "network"), *allow_out, *deny_out, *tnet, *m;
	int aia = e2b_ctl_internet(r, body);

	if (aia == -2)
		return false;
	if (net && !json_is_null(net) && !json_is_object(net)) {
		e2b_reply_error(r, 400, "network: expected an object");
		return false;
	}
	if (!check_network_extras(r, net) ||
	    !string_list(r, net, "allowOut", "network.allowOut", &allow_out) ||
	    !string_list(r, net, "denyOut", "network.denyOut", &deny_out))
		return false;
	tnet = json_object_get(spec, "network");
	if (!allow_out && !deny_out && aia != 0) {
		if (json_is_object(tnet))
			return true;
		json_object_set_new(spec, "network",
				    json_pack("{s:s}", "mode",
					      (aia == 1 || r->d->max_net >= 2) ? "open" : "none"));
		return true;
	}
	m = map_network(aia, allow_out, deny_out, nm);
	if (!m) {
		e2b_reply_error(r, 500, "out of memory");
		return false;
	}
	if (json_is_object(tnet))
		json_object_update(tnet, m);
	else
		json_object_set(spec, "network", m);
	json_decref(m);
	return true;
}

/*
 * PUT /sandboxes/{id}/network: E2B replaces the whole egress configuration; a field left
 * out is cleared (so {} opens the sandbox to the internet, as in E2B).
 */
void e2b_ctl_put_network(struct e2b_req *r, const char *id)
{
	json_t *body = e2b_ctl_body(r, false), *allow_out, *deny_out, *net = NULL, *old_aia;
	paddock_error err = { 0 };
	struct netmap nm = { 0 };
	struct box *b;
	int aia, k;

	if (!body)
		return;
	aia = e2b_ctl_internet(r, body);
	if (aia == -2 || !check_network_extras(r, body) ||
	    !string_list(r, body, "allowOut", "network.allowOut", &allow_out) ||
	    !string_list(r, body, "denyOut", "network.denyOut", &deny_out))
		goto out;
	b = e2b_ctl_find_live(r, id);
	if (!b)
		goto out;
	net = map_network(aia, allow_out, deny_out, &nm);
	/* the metadata first: svc_box_set_network() records both, or neither */
	old_aia = json_incref(json_object_get(b->metadata, META_INTERNET));
	if (aia >= 0)
		json_object_set_new(b->metadata, META_INTERNET,
				    json_string(aia ? "true" : "false"));
	else
		json_object_del(b->metadata, META_INTERNET);
	k = net ? svc_box_set_network(b, net, &err) : paddock_fail(&err, ENOMEM, "network policy");
	if (k < 0) {
		if (old_aia)
			json_object_set(b->metadata, META_INTERNET, old_aia);
		else
			json_object_del(b->metadata, META_INTERNET);
	}
	json_decref(old_aia);
	if (k < 0 && err.code == EPERM && !strstr(err.msg, "--max-network")) {
		e2b_reply_error(r, 409,
				"network: this sandbox was created without internet access "
				"(mode 'none'), which cannot be opened later");
		goto out;
	}
	if (k < 0) {
		e2b_ctl_reply_paddock_error(r, &err, &nm);
		goto out;
	}
	e2b_ctl_reply_empty(r, 204);
out:
	json_decref(net);
	json_decref(body);
}
