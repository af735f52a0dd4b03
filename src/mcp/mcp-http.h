/* SPDX-License-Identifier: Apache-2.0 */
/* MCP's Streamable HTTP transport (http.c): `paddock mcp --http ADDR:PORT`. */
#pragma once

#include "mcp.h"

struct event_base;
struct mcp_http;

struct mcp_http_opts {
	const char *addr;
	unsigned short port;
	const char *token;     /* bearer token clients must send; NULL: none (loopback only) */
	unsigned max_sessions; /* at once */
	unsigned idle_s;       /* a session unused this long ends, with its sandboxes */
	unsigned gone_s;       /* one whose client held a GET stream: once none and no request */
	size_t max_message;    /* largest POST body */
};

/* Listens and serves from `base`; backend and policy are borrowed. */
int mcp_http_new(struct event_base *base, const struct mcp_http_opts *o,
		 struct mcp_backend *backend, const struct mcp_policy *policy,
		 struct mcp_http **ret, paddock_error *err);
/* Ends every session (and its sandboxes) and stops listening. NULL is fine. */
struct mcp_http *mcp_http_free(struct mcp_http *h);
