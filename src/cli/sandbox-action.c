/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One home for the POST /sandboxes/ID/<action> round trip the client subcommands share, so
 * that they differ only in what they send and how they show the answer.
 */
#include "sandbox-action.h"

#include <stdlib.h>

int cli_sandbox_action(struct api *api, const char *id, const char *action, const json_t *body,
		       void (*print)(const json_t *answer))
{
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", id, action);
	int r = api_call(api, "POST", url, body, &reply);

	free(url);
	if (r != 0)
		return r;
	if (api->json)
		r = api_print_raw(&reply);
	else
		print(reply.json);
	api_reply_release(&reply);
	return r;
}
