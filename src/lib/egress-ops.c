/* SPDX-License-Identifier: Apache-2.0 */
/* The egress half's table (egress-module.h): what the rest of libpaddock may call of it. */
#include "egress-module.h"

#include <openssl/ssl.h>

#include "egress.h"
#include "egress-resolve.h"
#include "sandbox.h"
#include "secrets.h"
#include "spec.h"
#include "tls-ca.h"

static void upstream_tls_free(struct ssl_ctx_st *tls)
{
	SSL_CTX_free(tls);
}

const struct pd_egress_ops pd_egress_module_ops = {
	.abi = PD_MODULE_ABI(struct pd_egress_ops),
	.start = pd_egress_start,
	.free = pd_egress_free,
	.set_policy = pd_egress_set_policy,
	.ask_setup = pd_egress_ask_setup,
	.asks = pd_egress_asks,
	.answer = pd_egress_answer,
	.secrets_new = pd_secrets_new,
	.secrets_free = pd_secrets_free,
	.resolver_new = pd_resolver_new,
	.resolver_free = pd_resolver_free,
	.upstream_tls_new = pd_tls_upstream_ctx_new,
	.upstream_tls_free = upstream_tls_free,
};
