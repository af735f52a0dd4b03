/* SPDX-License-Identifier: Apache-2.0 */
/* run_code through the sandbox's code interpreter (tool-code.c, docs/mcp.md). */
#pragma once

#include <jansson.h>
#include <stddef.h>

struct event_base;
struct mcp_backend;
struct mcp_call;

#define MCP_CODE_CONTEXTS_MAX 16 /* named contexts per sandbox */

struct mcp_code_req {
	const char *sandbox_id;
	const char *language; /* "python" or "bash" */
	const char *code;
	json_t *env;	     /* {NAME: value} for this run only, or NULL */
	const char *context; /* a name the agent chose (made on first use); NULL: the default */
	json_t *contexts;    /* the sandbox's names: {NAME: {"id", "language"}}; updated */
	double timeout_s;    /* > 0: interrupted after this (the context lives on) */
	size_t output_max;   /* bytes of stdout, and of stderr, in the answer */
};

/* Runs the code and answers the call (mcp_call_result_with(), images as image blocks). */
void mcp_code_run(struct mcp_backend *b, struct event_base *base, struct mcp_call *c,
		  const struct mcp_code_req *req);
