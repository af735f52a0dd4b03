/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public functions of egress (paddock.h): a context's name resolution and upstream
 * trust, a sandbox's counters and policy. They stand outside the egress half and reach it
 * through its table (egress-module.h), so that a program using none of them never loads it.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress-module.h"
#include "egress.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "spec.h"
#include "util/strv.h"

int paddock_ctx_set_resolve_hosts(paddock_ctx *ctx, const char *path, paddock_error *err)
{
	const struct pd_egress_ops *eg;
	struct pd_resolver *r = NULL;
	char *copy;
	int k;

	if (!ctx || !path)
		return pd_fail(err, EINVAL, "paddock_ctx_set_resolve_hosts: arguments are required");
	k = pd_egress_ops(&eg, err);
	if (k < 0)
		return k;
	/* read now, so a bad file is an error here rather than at the first connection */
	k = eg->resolver_new(ctx->base, path, &r, err);
	if (k < 0)
		return k;
	copy = strdup(path);
	if (!copy) {
		eg->resolver_free(r);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	eg->resolver_free(ctx->resolver);
	free(ctx->resolve_hosts);
	ctx->resolver = r;
	ctx->resolve_hosts = copy;
	return 0;
}

int paddock_ctx_add_upstream_ca(paddock_ctx *ctx, const char *path, paddock_error *err)
{
	size_t n = pd_strv_length(ctx ? ctx->upstream_ca : NULL);
	const struct pd_egress_ops *eg;
	char **v;
	int r;

	if (!ctx || !path)
		return pd_fail(err, EINVAL, "paddock_ctx_add_upstream_ca: arguments are required");
	if (access(path, R_OK) < 0)
		return pd_fail(err, errno, "read upstream CA file %s", path);
	r = pd_egress_ops(&eg, err);
	if (r < 0)
		return r;
	v = realloc(ctx->upstream_ca, (n + 2) * sizeof(*v));
	if (!v)
		return pd_fail(err, ENOMEM, "out of memory");
	ctx->upstream_ca = v;
	v[n] = strdup(path);
	v[n + 1] = NULL;
	if (!v[n])
		return pd_fail(err, ENOMEM, "out of memory");
	/* made now, so a file that is no CA is an error here, not at the first interception */
	eg->upstream_tls_free(ctx->upstream_tls);
	ctx->upstream_tls = eg->upstream_tls_new((const char *const *)ctx->upstream_ca, err);
	if (!ctx->upstream_tls) {
		free(v[n]);
		v[n] = NULL;
		return -EINVAL;
	}
	return 0;
}

int paddock_sandbox_egress_stats(const paddock_sandbox *sb, struct paddock_egress_stats *ret,
				 paddock_error *err)
{
	if (!sb || !ret)
		return pd_fail(err, EINVAL, "paddock_sandbox_egress_stats: arguments are required");
	if (!sb->egress)
		return pd_fail(err, ENOENT, "sandbox '%s' has no egress (network.mode none)",
			       sb->id);
	*ret = sb->egress->stats;
	return 0;
}

int paddock_sandbox_set_network(paddock_sandbox *sb, const paddock_spec *from,
				paddock_error *err)
{
	const struct pd_egress_ops *eg;
	struct pd_egress_policy p;
	paddock_spec tmp = { 0 };
	int r;

	if (!sb || !from)
		return pd_fail(err, EINVAL, "paddock_sandbox_set_network: arguments are required");
	if (!sb->egress)
		return pd_fail_field(err, EPERM, "network.mode",
				     "sandbox '%s' was created with network.mode 'none': it has no "
				     "egress to change (create it with 'allowlist' or 'open')",
				     sb->id);
	/* the sandbox's egress was made by the half: it is there */
	r = pd_egress_ops(&eg, err);
	if (r < 0)
		return r;
	r = pd_spec_network_validate(from, err);
	if (r < 0)
		return r;
	r = pd_spec_network_policy(from, &p, err);
	if (r < 0)
		return r;
	/* the sandbox's spec says what is in force: its network section follows */
	if (pd_spec_network_copy(&tmp, from) < 0) {
		pd_spec_network_clear(&tmp);
		pd_egress_policy_release(&p);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	tmp.network.transparent = sb->spec->network.transparent; /* fixed at create */
	tmp.network.max_connections = from->network.max_connections;
	pd_spec_network_clear(sb->spec);
	sb->spec->network = tmp.network;
	sb->egress->max_conns = tmp.network.max_connections;
	eg->set_policy(sb->egress, &p);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "egress.policy", sb->id, NULL,
			json_pack("{s:s, s:i, s:i}", "mode",
				  pd_net_mode_to_string(from->network.mode), "allow",
				  (int)from->network.n_allow, "deny", (int)from->network.n_deny));
	return 0;
}
