/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <jansson.h>

#include "api.h"

/*
 * The request and answer of a command that POSTs to /sandboxes/ID/<action> (ttl, pause,
 * stop, snapshot, fork ...): sends `body` (borrowed; NULL for none), then prints paddockd's
 * answer as it is with --json, else as print(answer) does. Returns the exit status, as the
 * api_* functions do.
 */
int cli_sandbox_action(struct api *api, const char *id, const char *action, const json_t *body,
		       void (*print)(const json_t *answer));
