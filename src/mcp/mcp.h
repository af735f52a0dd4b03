/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock mcp`: a Model Context Protocol server (docs/mcp.md). Three layers:
 *   server.c   JSON-RPC 2.0 and the MCP lifecycle: one message in, answers out, no I/O;
 *   tools.c    the tools, their schemas, argument checks and session state (sandboxes,
 *              processes), over a backend (backend.h);
 *   policy.c   the operator's policy: what an agent's create_sandbox may ask for.
 * cmd-mcp.c ties them to stdio and a libevent loop. Everything a client sends is hostile:
 * a message can only ever earn an error answer, never a crash or a change it was not
 * allowed to make.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "paddock/paddock.h"
#include "paddock/policy.h"
#include "backend.h"

#define MCP_SERVER_NAME		"paddock"
#define MCP_MAX_MESSAGE_DEFAULT (4u << 20)

/* JSON-RPC 2.0 error codes */
#define MCP_PARSE_ERROR	     -32700
#define MCP_INVALID_REQUEST  -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS   -32602
#define MCP_INTERNAL_ERROR   -32603
#define MCP_SERVER_BUSY	     -32000 /* implementation-defined: too many calls in flight */

/* Calls in flight at once in one session: each holds a command's output until it ends. */
#define MCP_MAX_CALLS 64
/* The server's own requests waiting for the client at once (elicitations). */
#define MCP_MAX_REQUESTS 64
/* Background processes one sandbox keeps (each up to 1 MiB of unread output per stream). */
#define MCP_MAX_PROCS 32

/* ---- operator policy (policy.c) --------------------------------------------------------- */

struct mcp_policy {
	paddock_spec *spec;	/* every sandbox's default and ceiling; owned */
	paddock_policy *engine; /* directories a workspace may be under; owned, NULL: none */
	unsigned max_sandboxes; /* at once, the default one included */
	size_t max_output;	/* bytes kept of each stream of a command */
	size_t max_read;	/* bytes read_file returns at most */
};

void mcp_policy_release(struct mcp_policy *p);
/* Adds a directory agents may name as workspace (resolved now; it must exist). */
int mcp_policy_allow_host_path(struct mcp_policy *p, const char *dir, paddock_error *err);

/*
 * The spec of a sandbox an agent asks for with create_sandbox's arguments (`args`: the
 * tool's whole argument object, already type-checked against its schema's shape): the
 * operator's spec with the agent's network, limits, env and workspace over it, each within
 * the policy. Refusals name the field ("limits.memory", "network.allow[0]") and say what the
 * operator allows. Caller frees *ret_spec.
 */
int mcp_policy_spec(const struct mcp_policy *p, json_t *args, paddock_spec **ret_spec,
		    paddock_error *err);

/* ---- server (server.c) ------------------------------------------------------------------ */

struct mcp_server;
struct mcp_call;
struct mcp_tools;

/* Writes one JSON-RPC message (a complete JSON text, no newline) to the client. */
typedef void (*mcp_send_fn)(const char *json, size_t len, void *userdata);

/* A server for one session. `tools` is borrowed and must outlive it. */
int mcp_server_new(struct mcp_tools *tools, mcp_send_fn send, void *userdata,
		   struct mcp_server **ret, paddock_error *err);
/* Cancels every call still running (no answers are sent) and frees. NULL is fine. */
struct mcp_server *mcp_server_free(struct mcp_server *s);

/* Whether calls are in flight (the transport waits for them before it ends the session). */
bool mcp_server_busy(const struct mcp_server *s);
/* Whether this server speaks protocol revision `version` ("2025-11-25"). */
bool mcp_protocol_supported(const char *version);
/* Handles one message as received (a line without its newline). */
void mcp_server_message(struct mcp_server *s, const char *data, size_t len);
/* The transport dropped a message longer than the limit: answers -32600 with id null. */
void mcp_server_oversized(struct mcp_server *s, size_t limit);

/*
 * The server's own requests. A transport that carries them (stdio) says so; a session's
 * client can be asked (elicitation/create, form mode) when it also declared the capability
 * and agreed on protocol 2025-06-18 or later.
 */
void mcp_server_set_requests(struct mcp_server *s, bool can);
bool mcp_server_can_elicit(const struct mcp_server *s);
/* The client as it named itself at initialize (printable), and the revision agreed. */
const char *mcp_server_client(const struct mcp_server *s);
const char *mcp_server_version(const struct mcp_server *s);
/*
 * The client's answer: `result` (borrowed: {"action", "content"}), or NULL and why not. Called
 * once, from mcp_server_message(), unless the request was cancelled first.
 */
typedef void (*mcp_elicit_fn)(json_t *result, const char *error, void *userdata);
/* Asks the person at the client (schema stolen); *ret_seq names it for cancel. */
int mcp_server_elicit(struct mcp_server *s, const char *message, json_t *schema, mcp_elicit_fn fn,
		      void *userdata, uint64_t *ret_seq, paddock_error *err);
/* No answer is wanted any more: the client is told (notifications/cancelled), fn never runs. */
void mcp_server_request_cancel(struct mcp_server *s, uint64_t seq, const char *reason);

/* Calls in flight: a tool answers its call now or later, exactly once. */
/* Sends a CallToolResult: `structured` (stolen) as structuredContent and as text. */
void mcp_call_result(struct mcp_call *c, json_t *structured);
/* The same with more content blocks after the text (`more`, an array, stolen; may be NULL). */
void mcp_call_result_with(struct mcp_call *c, json_t *structured, json_t *more);
/* Sends a tool error: isError with `msg` (the field first, when there is one). */
void mcp_call_error(struct mcp_call *c, const paddock_error *err);
/* For a tool answering later: what to do if the client cancels first (then no answer). */
void mcp_call_set_cancel(struct mcp_call *c, void (*cancel)(struct mcp_call *c, void *data),
			 void *data);
struct mcp_tools *mcp_call_tools(const struct mcp_call *c);

/* ---- tools (tools.c) --------------------------------------------------------------------- */

/*
 * The tools of a session over `backend` (borrowed; NULL: every tool that needs a sandbox
 * fails) within `policy` (borrowed).
 */
int mcp_tools_new(struct mcp_backend *backend, const struct mcp_policy *policy,
		  struct event_base *base, struct mcp_tools **ret, paddock_error *err);
/* Destroys every sandbox the session created and frees. NULL is fine. */
struct mcp_tools *mcp_tools_free(struct mcp_tools *t);
/* The session's server, for asking its person (NULL: it is gone); set by the server. */
void mcp_tools_set_server(struct mcp_tools *t, struct mcp_server *s);
/* The tools/list answer's "tools" array (a new reference). */
json_t *mcp_tools_list(struct mcp_tools *t);
/* Whether `name` is a tool. */
bool mcp_tools_has(const char *name);
/* Runs tool `name` with `args` (an object, borrowed) for call `c`. */
void mcp_tools_call(struct mcp_tools *t, struct mcp_call *c, const char *name, json_t *args);
