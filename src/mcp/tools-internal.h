/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the tools share (tools.c, tools-ask.c, tools-exec.c, tools-files.c): a
 * session's state and the few helpers every tool calls. Private to src/mcp.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "paddock/paddock.h"
#include "mcp.h"

#define WORKSPACE "/workspace"

struct sandbox {
	char *id;
	bool is_default;
	double timeout_s; /* a command's default and ceiling */
	unsigned n_procs;
	bool paused;	  /* by pause_sandbox, until resume_sandbox */
	json_t *contexts; /* run_code's named contexts: {NAME: {"id", "language"}} */
	struct sandbox *next;
};

struct proc {
	char id[24]; /* "p7": unique in the session */
	struct sandbox *sb;
	char *backend_id;
	struct proc *next;
};

/* A question to the person at the client: a sandbox's pending decision, elicited. */
struct ask {
	struct mcp_tools *t;
	char *sandbox;
	uint64_t id;  /* the decision's */
	uint64_t seq; /* the elicitation request's */
	struct ask *next;
};

struct mcp_tools {
	struct mcp_backend *backend;
	const struct mcp_policy *policy;
	struct event_base *base;
	struct mcp_server *server; /* the session's, for asking its person; NULL once gone */
	struct ask *asks;	   /* elicitations waiting for the client's answer */
	struct sandbox *sandboxes;
	unsigned n_sandboxes;
	struct proc *procs;
	unsigned long next_proc, next_code;
	json_t *list; /* tools/list's array, with the parsed schemas */
};

/* tools.c: the session's sandboxes */
/* The sandbox a call names, or the default one (made now if there is none yet). */
int tools_get_sandbox(struct mcp_tools *t, json_t *args, struct sandbox **ret, paddock_error *err);
/* A path as the sandbox sees it: relative ones are under /workspace. Caller frees. */
char *tools_sandbox_path(const char *path);
/* Answers the call with an out-of-memory error; returns -ENOMEM. */
int tools_fail_oom(struct mcp_call *c);

/* tools-ask.c: asking the person (network.unlisted "ask") */
/* The backend's mcp_ask_fn for a sandbox whose policy asks; userdata is the mcp_tools. */
void tools_on_ask(const struct mcp_ask *a, void *userdata);
/* The questions about `sandbox` (NULL: all) end: the client is told (if it is still there). */
void tools_asks_drop(struct mcp_tools *t, const char *sandbox, const char *reason);

/* The tools, each answering its call now or later (mcp.h); args are checked already. */
/* tools-exec.c: commands and background processes */
void tool_run_command(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_run_code(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_start_process(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_read_process_output(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_stop_process(struct mcp_tools *t, struct mcp_call *c, json_t *args);
/* tools-files.c */
void tool_write_file(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_read_file(struct mcp_tools *t, struct mcp_call *c, json_t *args);
void tool_list_files(struct mcp_tools *t, struct mcp_call *c, json_t *args);
