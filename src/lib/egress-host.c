/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The entry point of paddock-egress.so (module.h), built into the module only: the program
 * that loads it passes its host table, through which the module's egress reaches the
 * program's sandboxes. Linked in (module-linked.c), the egress half calls the program's own
 * functions and this file is not there.
 */
#include "egress-module.h"

#include <stddef.h>

static const struct pd_egress_host *host;

PD_MODULE_EXPORT const void *pd_egress_module_init(const void *h);

const void *pd_egress_module_init(const void *h)
{
	host = h;
	return &pd_egress_module_ops;
}

/* What egress.c asks init for: its listening sockets, made in the sandbox's netns. */
int paddock_sandbox_socket(paddock_sandbox *sb, int domain, int type, int *ret_fd,
			   paddock_error *err)
{
	return host->sandbox_socket(sb, domain, type, ret_fd, err);
}
