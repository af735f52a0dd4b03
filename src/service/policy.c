/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's bounds on what a tenant's spec may ask for, checked on the typed spec
 * (libpaddock's policy, paddock/policy.h): --max-network, the widest egress any sandbox gets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "service.h"
#include "paddock/policy.h"

static const char *const net_modes[] = { "none", "allowlist", "open" };

int svc_max_network_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, net_modes[i]) == 0)
			return i;
	return -1;
}

int svc_check_max_network(struct daemon *d, const paddock_spec *spec, paddock_error *err)
{
	paddock_policy *p = NULL;
	int r;

	/* SECURITY: the operator's bound on egress holds for every tenant, at create and PUT */
	r = paddock_policy_new(&p, err);
	if (r >= 0)
		r = paddock_policy_set_max_network(p, net_modes[d->max_net], err);
	if (r >= 0)
		r = paddock_policy_check_network(p, spec, err);
	if (r == -EPERM) {
		size_t n = strlen(err->msg);

		snprintf(err->msg + n, sizeof(err->msg) - n, " (--max-network)");
	}
	paddock_policy_free(p);
	return r;
}
