/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public functions of egress (paddock.h): a context's name resolution and upstream
 * trust, a sandbox's counters and policy. They stand outside the egress half and reach it
 * through its table (egress-module.h), so that a program using none of them never loads it.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress-module.h"
#include "egress.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "spec.h"
#include "util/cleanup.h"
#include "util/strv.h"

size_t paddock_sandbox_asks(const paddock_sandbox *sb, const struct paddock_ask **ret, size_t max)
{
	const struct pd_egress_ops *eg;

	/* a sandbox with an egress has the half loaded: the table is there */
	if (!sb || !sb->egress || pd_egress_ops(&eg, NULL) < 0)
		return 0;
	return eg->asks(sb->egress, ret, max);
}

int paddock_sandbox_ask_stats(const paddock_sandbox *sb, struct paddock_ask_stats *ret,
			      paddock_error *err)
{
	if (!sb || !ret)
		return pd_fail(err, EINVAL, "paddock_sandbox_ask_stats: arguments are required");
	if (!sb->egress)
		return pd_fail(err, ENOENT, "sandbox '%s' has no egress (network.mode none)",
			       sb->id);
	*ret = sb->egress->ask_stats;
	return 0;
}

int paddock_sandbox_answer(paddock_sandbox *sb, uint64_t id, enum paddock_ask_answer answer,
			   const char *by, const char *who, paddock_error *err)
{
	const struct pd_egress_ops *eg;
	int r;

	if (!sb || !by || !*by || (unsigned)answer >= _PADDOCK_ASK_MAX)
		return pd_fail(err, EINVAL, "paddock_sandbox_answer: arguments are required");
	if (!sb->egress)
		return pd_fail_field(
			err, ENOENT, "id",
			"no decision %llu is pending in sandbox '%s' (it has no egress)",
			(unsigned long long)id, sb->id);
	r = pd_egress_ops(&eg, err);
	if (r < 0)
		return r;
	return eg->answer(sb->egress, id, answer, by, who, err);
}

int paddock_ctx_set_resolve_hosts(paddock_ctx *ctx, const char *path, paddock_error *err)
{
	const struct pd_egress_ops *eg;
	struct pd_resolver *r = NULL;
	char *copy;
	int k;

	if (!ctx || !path)
		return pd_fail(err, EINVAL,
			       "paddock_ctx_set_resolve_hosts: arguments are required");
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

int paddock_sandbox_set_network(paddock_sandbox *sb, const paddock_spec *from, paddock_error *err)
{
	const struct pd_egress_ops *eg;
	struct pd_egress_policy p;
	paddock_spec tmp = { 0 };
	unsigned closed;
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
	eg->ask_setup(sb->egress, sb->spec); /* pending ones keep their time */
	/* each connection it closes is an egress.connection of its own, before this */
	closed = eg->set_policy(sb->egress, &p);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "egress.policy", sb->id, NULL,
			json_pack("{s:s, s:i, s:i, s:s, s:I}", "mode",
				  pd_net_mode_to_string(from->network.mode), "allow",
				  (int)from->network.n_allow, "deny", (int)from->network.n_deny,
				  "unlisted", pd_net_unlisted_to_string(from->network.unlisted),
				  "connections_closed", (json_int_t)closed));
	return closed > (unsigned)INT_MAX ? INT_MAX : (int)closed;
}
