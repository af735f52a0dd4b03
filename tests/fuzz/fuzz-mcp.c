/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes `paddock mcp`'s message handler (src/mcp/server.c and the tools' argument checks and
 * policy) with any bytes a client could send, one message per line. The tools have no
 * backend, so every call that passes its checks fails where a sandbox would be needed. Each
 * answer must be one JSON-RPC 2.0 object with either a result or an error, never both, and
 * a request may be answered at most once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answer(const char *json, size_t len, void *userdata)
{
	json_t *msg = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *result, *error;
	unsigned *answers = userdata;

	if (!msg || !json_is_object(msg) || memchr(json, '\n', len))
		abort();
	if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
		abort();
	result = json_object_get(msg, "result");
	error = json_object_get(msg, "error");
	if (!result == !error || !json_object_get(msg, "id"))
		abort();
	if (error && (!json_is_integer(json_object_get(error, "code")) ||
		      !json_is_string(json_object_get(error, "message"))))
		abort();
	(*answers)++;
	json_decref(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_policy policy = { .max_sandboxes = 2, .max_output = 1024, .max_read = 1024 };
	struct mcp_tools *tools = NULL;
	struct mcp_server *s = NULL;
	paddock_error err = { 0 };
	unsigned answers = 0, lines = 0;
	size_t start = 0;

	if (paddock_spec_new(&policy.spec, &err) < 0 ||
	    paddock_spec_set(policy.spec, "network.allow", "example.com", &err) < 0 ||
	    mcp_tools_new(NULL, &policy, NULL, &tools, &err) < 0 ||
	    mcp_server_new(tools, check_answer, &answers, &s, &err) < 0)
		abort();
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		mcp_server_message(s, (const char *)data + start, i - start);
		lines++;
		start = i + 1;
	}
	/* at most one answer per line: no backend means nothing answers later */
	if (answers > lines || mcp_server_busy(s))
		abort();
	mcp_server_free(s);
	mcp_tools_free(tools);
	mcp_policy_release(&policy);
	return 0;
}
