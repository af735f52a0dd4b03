/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The words of a person's answer (network.unlisted "ask", egress-ask.c) and the context's
 * handler of decisions: core, since both the egress half and the front ends use them.
 */
#include <errno.h>
#include <string.h>

#include "paddock/paddock.h"
#include "sandbox.h"

static const char *const answer_names[_PADDOCK_ASK_MAX] = {
	[PADDOCK_ASK_ALLOW_ONCE] = "allow_once",
	[PADDOCK_ASK_ALLOW_ALWAYS] = "allow_always",
	[PADDOCK_ASK_DENY] = "deny",
};

const char *paddock_ask_answer_to_string(enum paddock_ask_answer a)
{
	return (unsigned)a < _PADDOCK_ASK_MAX ? answer_names[a] : NULL;
}

int paddock_ask_answer_from_string(const char *s)
{
	for (int i = 0; s && i < _PADDOCK_ASK_MAX; i++)
		if (strcmp(s, answer_names[i]) == 0)
			return i;
	return -EINVAL;
}

void paddock_ctx_set_ask_handler(paddock_ctx *ctx, paddock_ask_fn fn, void *userdata)
{
	if (!ctx)
		return;
	ctx->ask_fn = fn;
	ctx->ask_userdata = userdata;
}
