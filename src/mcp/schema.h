/* SPDX-License-Identifier: Apache-2.0 */
/* Tool arguments checked against the tool's own inputSchema (schema.c). */
#pragma once

#include <jansson.h>

#include "paddock/paddock.h"

/* 0, or -EINVAL with err naming the argument ("limits.memory") and what was expected. */
int mcp_schema_check(json_t *schema, json_t *value, paddock_error *err);
