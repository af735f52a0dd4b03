/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools of `paddock mcp` (docs/mcp.md) and a session's state: the sandboxes it made
 * (the default one made on first use) and the background processes it started. Arguments
 * are checked against each tool's published inputSchema (schema.c) before anything runs;
 * every failure is a tool error naming the argument, so the model can correct itself.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "error.h"
#include "mcp.h"
#include "schema.h"
#include "spec.h"
#include "tool-code.h"
#include "util/base64.h"

#define WORKSPACE "/workspace"
#define MAX_LIST_ENTRIES 1000
#define MAX_WAIT_S 60
#define WAIT_POLL_MS 100

struct sandbox {
	char *id;
	bool is_default;
	double timeout_s; /* a command's default and ceiling */
	unsigned n_procs;
	bool paused; /* by pause_sandbox, until resume_sandbox */
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

/* ---- schemas ---------------------------------------------------------------------------- */

#define SANDBOX_ID_ARG                                                                         \
	"\"sandbox_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"the sandbox; "   \
	"default: the session's default sandbox, made on first use\"}"
#define ENV_ARG                                                                                \
	"\"env\":{\"type\":\"object\",\"maxProperties\":256,\"additionalProperties\":"          \
	"{\"type\":\"string\",\"maxLength\":65536},\"description\":\"extra environment "        \
	"variables, NAME: value\"}"
#define TIMEOUT_ARG                                                                            \
	"\"timeout_s\":{\"type\":\"number\",\"minimum\":0.001,\"description\":\"seconds before " \
	"the command is killed (reason 'timeout'); default and ceiling: the sandbox's "         \
	"limits.timeout_s\"}"
#define CWD_ARG                                                                                \
	"\"cwd\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":"      \
	"\"working directory; relative to /workspace; default /workspace\"}"
#define STDIN_ARG                                                                              \
	"\"stdin\":{\"type\":\"string\",\"maxLength\":1048576,\"description\":\"text given "     \
	"to the command's stdin, then end of file\"}"

#define EXEC_RESULT                                                                            \
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"              \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"reason\":{\"type\":\"string\"},"      \
	"\"signal\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"},"         \
	"\"stderr\":{\"type\":\"string\"},\"stdout_truncated\":{\"type\":\"boolean\"},"          \
	"\"stderr_truncated\":{\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},"   \
	"\"stderr_bytes\":{\"type\":\"integer\"},\"report\":{\"type\":\"object\"}},"             \
	"\"required\":[\"sandbox_id\",\"exit_code\",\"reason\",\"signal\",\"stdout\","          \
	"\"stderr\",\"stdout_truncated\",\"stderr_truncated\",\"stdout_bytes\","                \
	"\"stderr_bytes\",\"report\"]}"

#define CODE_RESULT                                                                            \
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"              \
	"\"language\":{\"type\":\"string\"},\"context\":{\"type\":[\"string\",\"null\"]},"               \
	"\"execution_count\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"}," \
	"\"stderr\":{\"type\":\"string\"},\"stdout_truncated\":{\"type\":\"boolean\"},"          \
	"\"stderr_truncated\":{\"type\":\"boolean\"},\"results\":{\"type\":\"array\",\"items\":"  \
	"{\"type\":\"object\"}},\"error\":{\"type\":[\"object\",\"null\"],\"properties\":"       \
	"{\"name\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"},\"traceback\":"         \
	"{\"type\":\"string\"}}},\"timed_out\":{\"type\":\"boolean\"},\"dropped\":"              \
	"{\"type\":\"integer\"},\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"report\":"    \
	"{\"type\":\"object\"}},\"required\":[\"sandbox_id\",\"language\",\"stdout\",\"stderr\"," \
	"\"results\",\"error\",\"timed_out\"]}"

#define LIMITS_PROPS                                                                           \
	"\"memory\":{\"type\":[\"string\",\"integer\"],\"description\":\"bytes, or '512M', "   \
	"'2G'\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"               \
	"\"timeout_s\":{\"type\":\"number\",\"description\":\"each command's default and "     \
	"ceiling timeout\"},\"cpu_time_s\":{\"type\":\"number\"},\"disk\":{\"type\":"          \
	"[\"string\",\"integer\"]}"

struct tool;
typedef void (*tool_fn)(struct mcp_tools *t, struct mcp_call *c, json_t *args);

static void create_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void destroy_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void list_sandboxes(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void pause_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void resume_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void run_command(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void run_code(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void write_file(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void read_file(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void list_files(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void start_process(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void read_process_output(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void stop_process(struct mcp_tools *t, struct mcp_call *c, json_t *args);

static const struct tool {
	const char *name, *title, *description;
	const char *input, *output; /* JSON Schemas */
	tool_fn fn;
	bool read_only, destructive, idempotent;
} tools[] = {
	{ "create_sandbox", "Create a sandbox",
	  "Create a new isolated Linux sandbox (its own filesystem, processes and network) and "
	  "return its sandbox_id. Optional: network access (allow rules such as 'pypi.org' or "
	  "'*.github.com'), limits, environment, a host workspace directory. Everything must be "
	  "within what the operator allows. Most tasks need no call to this: every tool uses a "
	  "default sandbox when sandbox_id is omitted.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	  "\"network\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	  "\"mode\":{\"type\":\"string\",\"enum\":[\"none\",\"allowlist\",\"open\"]},"
	  "\"allow\":{\"type\":\"array\",\"maxItems\":256,\"items\":{\"type\":\"string\","
	  "\"maxLength\":300}},\"deny\":{\"type\":\"array\",\"maxItems\":256,\"items\":"
	  "{\"type\":\"string\",\"maxLength\":300}}}},"
	  "\"limits\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	  LIMITS_PROPS "}}," ENV_ARG ","
	  "\"workspace\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"a host "
	  "directory mounted at /workspace (only where the operator allows)\"}}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"network\":{\"type\":\"object\",\"properties\":{\"mode\":{\"type\":\"string\"},"
	  "\"allow\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"deny\":{\"type\":"
	  "\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"mode\",\"allow\","
	  "\"deny\"]},\"limits\":{\"type\":\"object\",\"properties\":{\"memory_bytes\":"
	  "{\"type\":\"number\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"number\"},"
	  "\"timeout_s\":{\"type\":\"number\"},\"cpu_time_s\":{\"type\":\"number\"},"
	  "\"disk_bytes\":{\"type\":\"number\"}}},\"workspace\":{\"type\":[\"string\","
	  "\"null\"]}},\"required\":[\"sandbox_id\",\"network\",\"limits\",\"workspace\"]}",
	  create_sandbox, false, false, false },
	{ "destroy_sandbox", "Destroy a sandbox",
	  "Destroy a sandbox and everything in it: its processes and files are gone.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"sandbox_id\"],"
	  "\"properties\":{" SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"destroyed\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"destroyed\"]}",
	  destroy_sandbox, false, true, true },
	{ "list_sandboxes", "List sandboxes", "The sandboxes of this session.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
	  "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\",\"items\":"
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"default\":{\"type\":\"boolean\"},\"processes\":{\"type\":\"integer\"},"
	  "\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"paused\"]}},"
	  "\"required\":[\"sandbox_id\",\"default\",\"processes\",\"state\"]}}},"
	  "\"required\":[\"sandboxes\"]}",
	  list_sandboxes, true, false, true },
	{ "pause_sandbox", "Pause a sandbox",
	  "Pause every process of a sandbox where it is: it uses no CPU, and its memory, files "
	  "and running servers stay. Use it while waiting (for a person, a long think). Commands "
	  "and code fail while paused; files can still be read and written. resume_sandbox "
	  "continues it.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"sandbox_id\"],"
	  "\"properties\":{" SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"state\":{\"type\":\"string\",\"enum\":[\"paused\",\"running\"]}},"
	  "\"required\":[\"sandbox_id\",\"state\"]}",
	  pause_sandbox, false, false, true },
	{ "resume_sandbox", "Resume a sandbox",
	  "Resume a paused sandbox: its processes go on where they stopped.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"sandbox_id\"],"
	  "\"properties\":{" SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"state\":{\"type\":\"string\",\"enum\":[\"paused\",\"running\"]}},"
	  "\"required\":[\"sandbox_id\",\"state\"]}",
	  resume_sandbox, false, false, true },
	{ "run_command", "Run a shell command",
	  "Run a shell command (/bin/sh -c) in the sandbox, wait for it to end and return its "
	  "exit code, stdout and stderr. Runs as an unprivileged user in /workspace. A non-zero "
	  "exit code is a normal result: read exit_code.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"command\"],"
	  "\"properties\":{\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":"
	  "1048576}," SANDBOX_ID_ARG "," CWD_ARG "," ENV_ARG "," STDIN_ARG "," TIMEOUT_ARG "}}",
	  EXEC_RESULT, run_command, false, true, false },
	{ "run_code", "Run code",
	  "Run code in the sandbox. python and bash run in a kernel that keeps its state between "
	  "calls (variables, imports, the working directory), like a notebook: name a context "
	  "to keep separate states, else the language's default context is used. The value of "
	  "the last line is returned, and plots (matplotlib) come back as images. node and sh "
	  "run the code as a one-off program. Runs as an unprivileged user; the default working "
	  "directory is /workspace.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"language\","
	  "\"code\"],\"properties\":{\"language\":{\"type\":\"string\",\"enum\":[\"python\","
	  "\"bash\",\"node\",\"sh\"]},\"code\":{\"type\":\"string\",\"maxLength\":4194304},"
	  "\"context\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"pattern\":\"^[A-Za-z0-9_.-]{1,64}$\","
	  "\"description\":\"python and bash: a name for a separate state, made on first use; "
	  "default: the language's default context\"}," SANDBOX_ID_ARG "," ENV_ARG "," STDIN_ARG
	  "," TIMEOUT_ARG "}}",
	  CODE_RESULT, run_code, false, true, false },
	{ "write_file", "Write a file",
	  "Write a file in the sandbox (replacing it whole; missing directories are created). "
	  "Relative paths are under /workspace. Content is text, or base64 with encoding "
	  "'base64' for binary data.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\","
	  "\"content\"],\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,"
	  "\"maxLength\":4096},\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":"
	  "\"string\",\"enum\":[\"utf-8\",\"base64\"]},\"executable\":{\"type\":\"boolean\"},"
	  SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"path\":"
	  "{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}},\"required\":[\"sandbox_id\","
	  "\"path\",\"size\"]}",
	  write_file, false, true, true },
	{ "read_file", "Read a file",
	  "Read a file of the sandbox: text when it is UTF-8, else base64. Relative paths are "
	  "under /workspace. Large files come in parts: use offset and next_offset.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\"],"
	  "\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
	  "\"offset\":{\"type\":\"integer\",\"minimum\":0},\"max_bytes\":{\"type\":\"integer\","
	  "\"minimum\":1}," SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"path\":"
	  "{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"offset\":{\"type\":"
	  "\"integer\"},\"next_offset\":{\"type\":\"integer\"},\"encoding\":{\"type\":"
	  "\"string\",\"enum\":[\"utf-8\",\"base64\"]},\"content\":{\"type\":\"string\"},"
	  "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"path\",\"size\","
	  "\"offset\",\"next_offset\",\"encoding\",\"content\",\"truncated\"]}",
	  read_file, true, false, true },
	{ "list_files", "List files",
	  "List the files below a directory of the sandbox (default /workspace), down to "
	  "depth levels.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"path\":"
	  "{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},\"depth\":{\"type\":"
	  "\"integer\",\"minimum\":1,\"maximum\":5}," SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"path\":"
	  "{\"type\":\"string\"},\"entries\":{\"type\":\"array\",\"items\":{\"type\":"
	  "\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"name\":{\"type\":"
	  "\"string\"},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
	  "\"mode\":{\"type\":\"string\"},\"mtime\":{\"type\":\"string\"},\"symlink_target\":"
	  "{\"type\":[\"string\",\"null\"]}},\"required\":[\"path\",\"name\",\"type\","
	  "\"size\"]}}},\"required\":[\"sandbox_id\",\"path\",\"entries\"]}",
	  list_files, true, false, true },
	{ "start_process", "Start a background process",
	  "Start a shell command that keeps running (a server, a long build) and return at "
	  "once with its process_id; read its output with read_process_output, end it with "
	  "stop_process.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"command\"],"
	  "\"properties\":{\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":"
	  "1048576}," SANDBOX_ID_ARG "," CWD_ARG "," ENV_ARG ",\"timeout_s\":{\"type\":"
	  "\"number\",\"minimum\":0.001,\"description\":\"seconds before it is killed; "
	  "default: never\"}}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"process_id\":{\"type\":\"string\"},\"pid\":{\"type\":\"integer\"}},\"required\":"
	  "[\"sandbox_id\",\"process_id\",\"pid\"]}",
	  start_process, false, true, false },
	{ "read_process_output", "Read a background process's output",
	  "What a background process wrote since the last call, and whether it still runs "
	  "(then exit_code and reason once it ended). wait_s waits up to that long for output "
	  "or the end.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process_id\"],"
	  "\"properties\":{\"process_id\":{\"type\":\"string\",\"maxLength\":32},\"wait_s\":"
	  "{\"type\":\"number\",\"minimum\":0,\"maximum\":60}}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"process_id\":{\"type\":\"string\"},\"running\":{\"type\":\"boolean\"},\"stdout\":"
	  "{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},\"stdout_dropped\":{\"type\":"
	  "\"integer\"},\"stderr_dropped\":{\"type\":\"integer\"},\"exit_code\":{\"type\":"
	  "[\"integer\",\"null\"]},\"reason\":{\"type\":[\"string\",\"null\"]},\"report\":"
	  "{\"type\":[\"object\",\"null\"]}},\"required\":[\"sandbox_id\",\"process_id\","
	  "\"running\",\"stdout\",\"stderr\",\"stdout_dropped\",\"stderr_dropped\","
	  "\"exit_code\",\"reason\",\"report\"]}",
	  /* reading takes the output: not idempotent, though it changes nothing inside */
	  read_process_output, true, false, false },
	{ "stop_process", "Stop a background process",
	  "Send a signal (default TERM) to a background process and the processes it started.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process_id\"],"
	  "\"properties\":{\"process_id\":{\"type\":\"string\",\"maxLength\":32},\"signal\":"
	  "{\"type\":\"string\",\"enum\":[\"TERM\",\"KILL\",\"INT\",\"HUP\"]}}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"process_id\":{\"type\":\"string\"},\"signal\":{\"type\":\"string\"}},"
	  "\"required\":[\"sandbox_id\",\"process_id\",\"signal\"]}",
	  stop_process, false, true, false },
};

#define N_TOOLS (sizeof(tools) / sizeof(tools[0]))

static const struct tool *find_tool(const char *name)
{
	for (size_t i = 0; i < N_TOOLS; i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

bool mcp_tools_has(const char *name)
{
	return find_tool(name) != NULL;
}

static json_t *build_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < N_TOOLS; i++) {
		const struct tool *tl = &tools[i];
		json_t *in = json_loads(tl->input, 0, NULL), *out = json_loads(tl->output, 0, NULL);

		if (!in || !out || json_array_append_new(list, json_pack(
			    "{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
			    tl->name, "title", tl->title, "description", tl->description,
			    "inputSchema", in, "outputSchema", out, "annotations", "title",
			    tl->title, "readOnlyHint", tl->read_only, "destructiveHint",
			    tl->destructive, "idempotentHint", tl->idempotent, "openWorldHint",
			    0)) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

/* ---- the session ------------------------------------------------------------------------ */

int mcp_tools_new(struct mcp_backend *backend, const struct mcp_policy *policy,
		  struct event_base *base, struct mcp_tools **ret, paddock_error *err)
{
	struct mcp_tools *t = calloc(1, sizeof(*t));

	if (!t)
		return pd_fail(err, ENOMEM, "allocate the tools");
	t->list = build_list();
	if (!t->list) {
		free(t);
		/* the schemas are constants: only memory can fail here */
		return pd_fail(err, ENOMEM, "build the tool list");
	}
	t->backend = backend;
	t->policy = policy;
	t->base = base;
	*ret = t;
	return 0;
}

static void proc_free(struct mcp_tools *t, struct proc *p)
{
	for (struct proc **pp = &t->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->sb->n_procs--;
	free(p->backend_id);
	free(p);
}

/* ---- asking the person (network.unlisted "ask", docs/mcp.md) ------------------------------- */

static void ask_free(struct mcp_tools *t, struct ask *a)
{
	for (struct ask **pp = &t->asks; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	free(a->sandbox);
	free(a);
}

/* The questions about `sandbox` (NULL: all) end: the client is told (if it is still there). */
static void asks_drop(struct mcp_tools *t, const char *sandbox, const char *reason)
{
	for (struct ask *a = t->asks, *next; a; a = next) {
		next = a->next;
		if (sandbox && strcmp(a->sandbox, sandbox) != 0)
			continue;
		if (t->server && reason)
			mcp_server_request_cancel(t->server, a->seq, reason);
		ask_free(t, a);
	}
}

void mcp_tools_set_server(struct mcp_tools *t, struct mcp_server *s)
{
	if (!t)
		return;
	if (!s)
		asks_drop(t, NULL, NULL); /* the server went, and its requests with it */
	t->server = s;
}

static void answer_for(struct mcp_tools *t, const char *sandbox, uint64_t id,
		       enum paddock_ask_answer a, const char *who)
{
	paddock_error err = { 0 };

	/* a sandbox destroyed meanwhile, a decision that timed out: nothing left to answer */
	(void)t->backend->ops->answer(t->backend, sandbox, id, a, who, &err);
}

/* The client's answer: accept with a decision, or decline or cancel (a no). */
static void elicited(json_t *result, const char *error, void *userdata)
{
	struct ask *q = userdata;
	struct mcp_tools *t = q->t;
	const char *action = json_string_value(json_object_get(result, "action"));
	const char *decision =
		json_string_value(json_object_get(json_object_get(result, "content"), "decision"));
	int a = PADDOCK_ASK_DENY;
	char who[128], *sandbox = q->sandbox;
	uint64_t id = q->id;

	if (action && !strcmp(action, "accept") && decision &&
	    paddock_ask_answer_from_string(decision) >= 0)
		a = paddock_ask_answer_from_string(decision);
	snprintf(who, sizeof(who), "%.80s, elicitation %s",
		 t->server ? mcp_server_client(t->server) : "an MCP client",
		 error					      ? "error"
		 : action && (!strcmp(action, "accept") || !strcmp(action, "decline") ||
			      !strcmp(action, "cancel")) ? action
							  : "invalid");
	/* SECURITY: anything but an accepted, valid decision is a no */
	q->sandbox = NULL;
	ask_free(t, q);
	answer_for(t, sandbox, id, (enum paddock_ask_answer)a, who);
	free(sandbox);
}

static json_t *ask_schema(const struct mcp_tools *t, const struct mcp_ask *a)
{
	char title[320];
	json_t *decision;

	snprintf(title, sizeof(title), "Allow %s?", a->rule);
	/* 2025-11-25 titles each choice with oneOf; 2025-06-18 had enumNames */
	if (strcmp(mcp_server_version(t->server), "2025-11-25") >= 0)
		decision = json_pack("{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}", "type",
				     "string", "title", title, "oneOf", "const", "allow_once",
				     "title", "Allow once", "const", "allow_always", "title",
				     "Allow for this sandbox", "const", "deny", "title", "Deny");
	else
		decision = json_pack("{s:s, s:s, s:[s, s, s], s:[s, s, s]}", "type", "string",
				     "title", title, "enum", "allow_once", "allow_always", "deny",
				     "enumNames", "Allow once", "Allow for this sandbox", "Deny");
	return json_pack("{s:s, s:{s:o}, s:[s]}", "type", "object", "properties", "decision",
			 decision, "required", "decision");
}

static void on_ask(const struct mcp_ask *a, void *userdata)
{
	struct mcp_tools *t = userdata;
	paddock_error err = { 0 };
	char message[768], within[40] = "";
	int64_t left_ms;
	struct ask *q;
	struct timespec now;

	if (a->decided) {
		/* answered here, elsewhere, or its time ran out: the question is moot */
		for (q = t->asks; q; q = q->next)
			if (q->id == a->id && !strcmp(q->sandbox, a->sandbox)) {
				snprintf(message, sizeof(message), "decided: %s by %s", a->answer,
					 a->by);
				mcp_server_request_cancel(t->server, q->seq, message);
				ask_free(t, q);
				break;
			}
		return;
	}
	if (!mcp_server_can_elicit(t->server))
		return answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY,
				  "the MCP client cannot ask a person (no elicitation)");
	clock_gettime(CLOCK_REALTIME, &now);
	left_ms = a->expires_ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	if (a->expires_ms > 0 && left_ms > 0)
		snprintf(within, sizeof(within), " within %lld s", (long long)((left_ms + 999) / 1000));
	/* the host is a DNS name or an address (libpaddock's), nothing a sandbox can word */
	snprintf(message, sizeof(message),
		 "A command in sandbox %s wants to connect to %s, which its network policy does "
		 "not name. Allow it? \"Allow once\" lets the connections waiting now through; "
		 "\"Allow for this sandbox\" adds the rule %s. No answer%s denies it.",
		 a->sandbox, a->rule, a->rule, within);
	q = calloc(1, sizeof(*q));
	if (!q || !(q->sandbox = strdup(a->sandbox))) {
		free(q);
		return answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY, "out of memory");
	}
	q->t = t;
	q->id = a->id;
	q->next = t->asks;
	t->asks = q;
	if (mcp_server_elicit(t->server, message, ask_schema(t, a), elicited, q, &q->seq, &err) <
	    0) {
		ask_free(t, q);
		answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY, err.msg);
	}
}

static void sandbox_forget(struct mcp_tools *t, struct sandbox *sb)
{
	asks_drop(t, sb->id, "the sandbox was destroyed");
	for (struct proc *p = t->procs, *next; p; p = next) {
		next = p->next;
		if (p->sb == sb)
			proc_free(t, p);
	}
	for (struct sandbox **pp = &t->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	t->n_sandboxes--;
	json_decref(sb->contexts);
	free(sb->id);
	free(sb);
}

struct mcp_tools *mcp_tools_free(struct mcp_tools *t)
{
	if (!t)
		return NULL;
	while (t->sandboxes) {
		paddock_error err = { 0 };

		(void)t->backend->ops->destroy(t->backend, t->sandboxes->id, &err);
		sandbox_forget(t, t->sandboxes);
	}
	json_decref(t->list);
	free(t);
	return NULL;
}

json_t *mcp_tools_list(struct mcp_tools *t)
{
	return json_deep_copy(t->list);
}

static int new_sandbox(struct mcp_tools *t, const paddock_spec *spec, bool is_default,
		       struct sandbox **ret, paddock_error *err)
{
	struct sandbox *sb;
	int r;

	if (!t->backend)
		return pd_fail(err, ENOTSUP, "this server has no sandboxes");
	if (t->n_sandboxes >= t->policy->max_sandboxes)
		return pd_fail_field(err, EPERM, "sandbox_id",
				     "this session has %u sandboxes, the most the operator allows; "
				     "destroy_sandbox one first",
				     t->n_sandboxes);
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return pd_fail(err, ENOMEM, "allocate a sandbox");
	r = paddock_spec_get_limit(spec, "timeout", &sb->timeout_s, err);
	if (r >= 0)
		r = t->backend->ops->create(t->backend, spec, &sb->id, err);
	if (r < 0) {
		free(sb);
		return r;
	}
	/* a policy that asks: its questions go to the person at the client (or are denied) */
	if (spec->network.unlisted == PD_NET_UNLISTED_ASK) {
		r = t->backend->ops->watch_asks(t->backend, sb->id, on_ask, t, err);
		if (r < 0) {
			paddock_error e = { 0 };

			(void)t->backend->ops->destroy(t->backend, sb->id, &e);
			free(sb->id);
			free(sb);
			return r;
		}
	}
	sb->is_default = is_default;
	sb->next = t->sandboxes;
	t->sandboxes = sb;
	t->n_sandboxes++;
	*ret = sb;
	return 0;
}

/* The sandbox a call names, or the default one (made now if there is none yet). */
static int get_sandbox(struct mcp_tools *t, json_t *args, struct sandbox **ret, paddock_error *err)
{
	const char *id = json_string_value(json_object_get(args, "sandbox_id"));

	for (struct sandbox *sb = t->sandboxes; sb; sb = sb->next)
		if (id ? !strcmp(sb->id, id) : sb->is_default) {
			*ret = sb;
			return 0;
		}
	if (id)
		return pd_fail_field(err, ENOENT, "sandbox_id",
				     "no sandbox '%s' in this session (list_sandboxes names them)",
				     PD_ESC(id));
	return new_sandbox(t, t->policy->spec, true, ret, err);
}

/* A path as the sandbox sees it: relative ones are under /workspace. Caller frees. */
static char *sandbox_path(const char *path)
{
	char *p;

	if (path[0] == '/')
		return strdup(path);
	return asprintf(&p, WORKSPACE "/%s", path) < 0 ? NULL : p;
}

static int fail_oom(struct mcp_call *c)
{
	paddock_error err = { 0 };

	pd_fail(&err, ENOMEM, "answer the call");
	mcp_call_error(c, &err);
	return -ENOMEM;
}

/* ---- commands --------------------------------------------------------------------------- */

struct run {
	struct mcp_tools *t;
	struct mcp_call *call;
	struct mcp_pending *pending;
	char *sandbox_id;
	const char *language; /* run_code's one-off program (node, sh): its result's shape */
};

/* A one-off program's exec result in run_code's shape (CODE_RESULT). */
static json_t *code_result(json_t *res, const char *language)
{
	const char *reason = json_string_value(json_object_get(res, "reason"));
	json_int_t code = json_integer_value(json_object_get(res, "exit_code"));
	bool exited = reason && !strcmp(reason, "exited");
	json_t *error = json_null();

	if (!exited)
		error = json_pack("{s:s, s:s, s:s}", "name", "Ended", "value",
				  reason ? reason : "unknown", "traceback", "");
	else if (code != 0)
		error = json_pack("{s:s, s:o, s:s}", "name", "ExitCode", "value",
				  json_sprintf("%" JSON_INTEGER_FORMAT, code), "traceback", "");
	json_object_set_new(res, "language", json_string(language));
	json_object_set_new(res, "results", json_array());
	json_object_set_new(res, "error", error ? error : json_null());
	json_object_set_new(res, "timed_out", json_boolean(reason && !strcmp(reason, "timeout")));
	json_object_del(res, "reason");
	json_object_del(res, "signal");
	json_object_del(res, "stdout_bytes");
	json_object_del(res, "stderr_bytes");
	return res;
}

static void run_done(json_t *result, const paddock_error *err, void *userdata)
{
	struct run *run = userdata;

	if (result && run->language)
		result = code_result(result, run->language);
	if (!result)
		mcp_call_error(run->call, err);
	else if (json_object_set_new(result, "sandbox_id", json_string(run->sandbox_id)) < 0)
		fail_oom(run->call), json_decref(result);
	else
		mcp_call_result(run->call, result);
	free(run->sandbox_id);
	free(run);
}

static void run_cancel(struct mcp_call *c, void *data)
{
	struct run *run = data;

	(void)c;
	run->t->backend->ops->cancel(run->t->backend, run->pending);
	free(run->sandbox_id);
	free(run);
}

/* NAME=VALUE strings of the env argument (NULL-terminated); names are checked here. */
static int env_list(json_t *env, char ***ret, paddock_error *err)
{
	size_t n = 0;
	const char *key;
	json_t *v;
	char **list = calloc(json_object_size(env) + 1, sizeof(char *));

	if (!list)
		return pd_fail(err, ENOMEM, "env");
	json_object_foreach(env, key, v) {
		bool ok = key[0] && !(key[0] >= '0' && key[0] <= '9');

		for (const char *k = key; *k; k++)
			ok = ok && ((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
				    (*k >= '0' && *k <= '9') || *k == '_');
		if (!ok || asprintf(&list[n], "%s=%s", key, json_string_value(v)) < 0) {
			list[n] = NULL;
			for (size_t i = 0; i < n; i++)
				free(list[i]);
			free(list);
			if (!ok)
				return pd_fail_field(err, EINVAL, "env",
						     "'%s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
						     PD_ESC(key));
			return pd_fail(err, ENOMEM, "env");
		}
		n++;
	}
	*ret = list;
	return 0;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The request of run_command, run_code and start_process from their arguments. */
static int exec_request(struct mcp_tools *t, struct sandbox *sb, json_t *args, bool background,
			struct mcp_exec_req *req, char ***ret_env, char **ret_cwd,
			paddock_error *err)
{
	json_t *timeout = json_object_get(args, "timeout_s"), *cwd = json_object_get(args, "cwd");
	json_t *in = json_object_get(args, "stdin");
	int r;

	memset(req, 0, sizeof(*req));
	req->output_max = t->policy->max_output;
	req->timeout_s = background ? 0 : sb->timeout_s;
	if (timeout) {
		req->timeout_s = json_number_value(timeout);
		if (sb->timeout_s > 0 && req->timeout_s > sb->timeout_s)
			return pd_fail_field(err, EPERM, "timeout_s",
					     "%g s asked, the sandbox allows at most %g s "
					     "(limits.timeout_s)",
					     req->timeout_s, sb->timeout_s);
	}
	*ret_cwd = NULL;
	if (cwd && !(*ret_cwd = sandbox_path(json_string_value(cwd))))
		return pd_fail(err, ENOMEM, "cwd");
	req->cwd = *ret_cwd;
	if (in) {
		req->stdin_data = json_string_value(in);
		req->stdin_len = json_string_length(in);
	}
	r = env_list(json_object_get(args, "env"), ret_env, err);
	if (r < 0) {
		free(*ret_cwd);
		return r;
	}
	req->env = (const char *const *)*ret_env;
	return 0;
}

static void start_run(struct mcp_tools *t, struct mcp_call *c, struct sandbox *sb, json_t *args,
		      const char *const *argv, const char *language)
{
	struct mcp_exec_req req;
	paddock_error err = { 0 };
	char **env = NULL, *cwd = NULL;
	struct run *run;
	int r;

	r = exec_request(t, sb, args, false, &req, &env, &cwd, &err);
	if (r < 0)
		return mcp_call_error(c, &err);
	req.argv = argv;
	run = calloc(1, sizeof(*run));
	if (!run || !(run->sandbox_id = strdup(sb->id))) {
		free(run);
		(void)fail_oom(c);
		goto out;
	}
	run->t = t;
	run->call = c;
	run->language = language;
	r = t->backend->ops->exec(t->backend, sb->id, &req, run_done, run, &run->pending, &err);
	if (r < 0) {
		free(run->sandbox_id);
		free(run);
		mcp_call_error(c, &err);
		goto out;
	}
	mcp_call_set_cancel(c, run_cancel, run);
out:
	strv_free(env);
	free(cwd);
}

static void run_command(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	const char *argv[] = { "/bin/sh", "-c", json_string_value(json_object_get(args, "command")),
			       NULL };
	paddock_error err = { 0 };
	struct sandbox *sb;

	if (get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	start_run(t, c, sb, args, argv, NULL);
}

/* python and bash: the code interpreter, whose contexts keep their state (tool-code.c) */
static void run_in_context(struct mcp_tools *t, struct mcp_call *c, struct sandbox *sb,
			   json_t *args, const char *language)
{
	json_t *timeout = json_object_get(args, "timeout_s");
	struct mcp_code_req req = {
		.sandbox_id = sb->id,
		.language = language,
		.code = json_string_value(json_object_get(args, "code")),
		.env = json_object_get(args, "env"),
		.context = json_string_value(json_object_get(args, "context")),
		.timeout_s = sb->timeout_s,
		.output_max = t->policy->max_output,
	};
	paddock_error err = { 0 };

	if (req.context && (strlen(req.context) > 64 ||
			    strspn(req.context, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
						"0123456789_.-") != strlen(req.context))) {
		pd_fail_field(&err, EINVAL, "context",
			      "expected a name of 1 to 64 letters, digits, '_', '.' or '-'");
		return mcp_call_error(c, &err);
	}
	if (json_object_get(args, "stdin")) {
		pd_fail_field(&err, EINVAL, "stdin",
			      "%s runs in a kernel, which reads no stdin; use node or sh, or "
			      "run_command",
			      language);
		return mcp_call_error(c, &err);
	}
	if (timeout) {
		req.timeout_s = json_number_value(timeout);
		if (sb->timeout_s > 0 && req.timeout_s > sb->timeout_s) {
			pd_fail_field(&err, EPERM, "timeout_s",
				      "%g s asked, the sandbox allows at most %g s (limits.timeout_s)",
				      req.timeout_s, sb->timeout_s);
			return mcp_call_error(c, &err);
		}
	}
	if (!sb->contexts && !(sb->contexts = json_object())) {
		(void)fail_oom(c);
		return;
	}
	req.contexts = sb->contexts;
	mcp_code_run(t->backend, t->base, c, &req);
}

static void run_code(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	static const struct {
		const char *language, *program, *ext;
	} langs[] = {
		{ "node", "node", "js" },
		{ "sh", "sh", "sh" },
	};
	const char *language = json_string_value(json_object_get(args, "language"));
	json_t *code = json_object_get(args, "code");
	paddock_error err = { 0 };
	struct sandbox *sb;
	char path[64];
	size_t i;

	if (get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	if (!strcmp(language, "python") || !strcmp(language, "bash"))
		return run_in_context(t, c, sb, args, language);
	if (json_object_get(args, "context")) {
		pd_fail_field(&err, EINVAL, "context",
			      "%s runs each call as a one-off program; contexts are for python and "
			      "bash",
			      language);
		return mcp_call_error(c, &err);
	}
	for (i = 0; i < sizeof(langs) / sizeof(langs[0]); i++)
		if (!strcmp(langs[i].language, language))
			break;
	snprintf(path, sizeof(path), "/tmp/paddock-code-%lu.%s", ++t->next_code, langs[i].ext);
	if (t->backend->ops->write_file(t->backend, sb->id, path, json_string_value(code),
					json_string_length(code), 0644, &err) < 0) {
		pd_error_prefix(&err, "save the code to %s", path);
		return mcp_call_error(c, &err);
	}
	const char *argv[] = { langs[i].program, path, NULL };

	start_run(t, c, sb, args, argv, langs[i].language);
}

/* ---- background processes --------------------------------------------------------------- */

static void start_process(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	const char *argv[] = { "/bin/sh", "-c", json_string_value(json_object_get(args, "command")),
			       NULL };
	struct mcp_exec_req req;
	paddock_error err = { 0 };
	char **env = NULL, *cwd = NULL;
	struct sandbox *sb;
	struct proc *p;
	int r, pid = 0;

	if (get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	if (sb->n_procs >= MCP_MAX_PROCS) {
		pd_fail_field(&err, EPERM, "command",
			      "this sandbox already has %u background processes, the most it keeps; "
			      "use another sandbox",
			      sb->n_procs);
		return mcp_call_error(c, &err);
	}
	r = exec_request(t, sb, args, true, &req, &env, &cwd, &err);
	if (r < 0)
		return mcp_call_error(c, &err);
	req.argv = argv;
	p = calloc(1, sizeof(*p));
	if (!p) {
		(void)fail_oom(c);
		goto out;
	}
	r = t->backend->ops->bg_start(t->backend, sb->id, &req, &p->backend_id, &pid, &err);
	if (r < 0) {
		free(p);
		mcp_call_error(c, &err);
		goto out;
	}
	snprintf(p->id, sizeof(p->id), "p%lu", ++t->next_proc);
	p->sb = sb;
	sb->n_procs++;
	p->next = t->procs;
	t->procs = p;
	mcp_call_result(c, json_pack("{s:s, s:s, s:i}", "sandbox_id", sb->id, "process_id", p->id,
				     "pid", pid));
out:
	strv_free(env);
	free(cwd);
}

static int find_proc(struct mcp_tools *t, json_t *args, struct proc **ret, paddock_error *err)
{
	const char *id = json_string_value(json_object_get(args, "process_id"));

	for (struct proc *p = t->procs; p; p = p->next)
		if (!strcmp(p->id, id)) {
			*ret = p;
			return 0;
		}
	return pd_fail_field(err, ENOENT, "process_id",
			     "no process '%s' in this session (start_process returns one)",
			     PD_ESC(id));
}

struct wait {
	struct mcp_tools *t;
	struct mcp_call *call;
	struct event *timer;
	char proc_id[24];
	double deadline_s;
	unsigned polls;
};

static void wait_free(struct wait *w)
{
	if (w->timer)
		event_free(w->timer);
	free(w);
}

/*
 * Asks the backend for the process's output: answers the call (true) when there is some,
 * when the process ended, when the wait is over, or on an error.
 */
static bool output_answer(struct mcp_tools *t, struct mcp_call *c, const char *proc_id,
			  bool last)
{
	paddock_error err = { 0 };
	json_t *args = json_pack("{s:s}", "process_id", proc_id), *out = NULL;
	struct proc *p;
	int r;

	r = args ? find_proc(t, args, &p, &err) : pd_fail(&err, ENOMEM, "read_process_output");
	json_decref(args);
	if (r >= 0) {
		r = t->backend->ops->bg_output(t->backend, p->sb->id, p->backend_id,
					       t->policy->max_output, &out, &err);
		if (r == -ENOENT) /* the backend named it by its own id */
			pd_fail_field(&err, ENOENT, "process_id", "process '%s' is gone", p->id);
	}
	if (r < 0) {
		mcp_call_error(c, &err);
		return true;
	}
	if (!last && json_is_true(json_object_get(out, "running")) &&
	    !json_string_length(json_object_get(out, "stdout")) &&
	    !json_string_length(json_object_get(out, "stderr"))) {
		json_decref(out);
		return false;
	}
	json_object_set_new(out, "sandbox_id", json_string(p->sb->id));
	json_object_set_new(out, "process_id", json_string(p->id));
	mcp_call_result(c, out);
	return true;
}

static void wait_tick(evutil_socket_t fd, short what, void *data)
{
	struct wait *w = data;
	const struct timeval tv = { 0, WAIT_POLL_MS * 1000 };

	(void)fd;
	(void)what;
	w->polls++;
	if (output_answer(w->t, w->call, w->proc_id, w->polls * WAIT_POLL_MS / 1000.0 >= w->deadline_s)) {
		wait_free(w); /* the call was answered and freed */
		return;
	}
	event_add(w->timer, &tv);
}

static void wait_cancel(struct mcp_call *c, void *data)
{
	(void)c;
	wait_free(data);
}

static void read_process_output(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	double wait_s = json_number_value(json_object_get(args, "wait_s"));
	const struct timeval tv = { 0, WAIT_POLL_MS * 1000 };
	struct wait *w;

	if (output_answer(t, c, json_string_value(json_object_get(args, "process_id")),
			  wait_s <= 0))
		return;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->timer = evtimer_new(t->base, wait_tick, w))) {
		free(w);
		(void)fail_oom(c);
		return;
	}
	w->t = t;
	w->call = c;
	w->deadline_s = wait_s;
	snprintf(w->proc_id, sizeof(w->proc_id), "%s",
		 json_string_value(json_object_get(args, "process_id")));
	mcp_call_set_cancel(c, wait_cancel, w);
	event_add(w->timer, &tv);
}

static void stop_process(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT }, { "HUP", SIGHUP } };
	const char *name = json_string_value(json_object_get(args, "signal"));
	paddock_error err = { 0 };
	struct proc *p;
	int sig = SIGTERM;

	if (!name)
		name = "TERM";
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(sigs[i].name, name))
			sig = sigs[i].sig;
	if (find_proc(t, args, &p, &err) < 0)
		return mcp_call_error(c, &err);
	if (t->backend->ops->bg_signal(t->backend, p->sb->id, p->backend_id, sig, &err) < 0) {
		/* the backend names the process by its own id: the agent knows ours */
		if (err.code == ESRCH)
			pd_fail_field(&err, ESRCH, "process_id", "process '%s' has already ended",
				      p->id);
		return mcp_call_error(c, &err);
	}
	mcp_call_result(c, json_pack("{s:s, s:s, s:s}", "sandbox_id", p->sb->id, "process_id",
				     p->id, "signal", name));
}

/* ---- files ------------------------------------------------------------------------------ */

static void write_file(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *content = json_object_get(args, "content");
	const char *encoding = json_string_value(json_object_get(args, "encoding"));
	bool exe = json_is_true(json_object_get(args, "executable"));
	paddock_error err = { 0 };
	char *path = NULL, *decoded = NULL;
	const char *data = json_string_value(content);
	size_t len = json_string_length(content);
	struct sandbox *sb;

	if (encoding && !strcmp(encoding, "base64")) {
		int r = pd_base64_decode(data, len, &decoded, &len);

		if (r < 0) {
			pd_fail_field(&err, EINVAL, "content", r == -ENOMEM ? "out of memory" :
				      "not valid base64 (standard alphabet, '=' padding)");
			return mcp_call_error(c, &err);
		}
		data = decoded;
	}
	path = sandbox_path(json_string_value(json_object_get(args, "path")));
	if (!path)
		pd_fail(&err, ENOMEM, "path");
	if (path && get_sandbox(t, args, &sb, &err) >= 0 &&
	    t->backend->ops->write_file(t->backend, sb->id, path, data, len, exe ? 0755 : 0644,
					&err) >= 0)
		mcp_call_result(c, json_pack("{s:s, s:s, s:I}", "sandbox_id", sb->id, "path", path,
					     "size", (json_int_t)len));
	else
		mcp_call_error(c, &err);
	free(path);
	free(decoded);
}

static void read_file(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *off = json_object_get(args, "offset"), *max = json_object_get(args, "max_bytes");
	uint64_t offset = off ? (uint64_t)json_number_value(off) : 0, size = 0;
	size_t limit = t->policy->max_read, len = 0, keep;
	paddock_error err = { 0 };
	char *path = NULL, *data = NULL;
	json_t *text = NULL, *out;
	struct sandbox *sb;

	if (max && json_number_value(max) < (double)limit)
		limit = (size_t)json_number_value(max);
	path = sandbox_path(json_string_value(json_object_get(args, "path")));
	if (!path) {
		(void)fail_oom(c);
		return;
	}
	if (get_sandbox(t, args, &sb, &err) < 0 ||
	    t->backend->ops->read_file(t->backend, sb->id, path, offset, limit, &data, &len, &size,
				       &err) < 0) {
		mcp_call_error(c, &err);
		goto out;
	}
	/* text when the bytes are UTF-8; a part may end inside a character: keep that for next */
	keep = len;
	for (int cut = 0; cut <= 3 && cut <= (int)len && !text; cut++) {
		if (cut && offset + len >= size)
			break; /* the whole rest of the file: it is not text */
		keep = len - (size_t)cut;
		text = json_stringn(data, keep);
	}
	if (!text) {
		char *b64 = pd_base64_encode(data, len);

		keep = len;
		text = b64 ? json_string(b64) : NULL;
		free(b64);
		out = json_pack("{s:s}", "encoding", "base64");
	} else {
		out = json_pack("{s:s}", "encoding", "utf-8");
	}
	if (!text || !out ||
	    json_object_update_new(out, json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:b}", "sandbox_id",
					      sb->id, "path", path, "size", (json_int_t)size,
					      "offset", (json_int_t)offset, "next_offset",
					      (json_int_t)(offset + keep), "content", text,
					      "truncated", offset + keep < size)) < 0) {
		json_decref(out);
		(void)fail_oom(c);
		goto out;
	}
	mcp_call_result(c, out);
out:
	free(path);
	free(data);
}

static void list_files(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *depth = json_object_get(args, "depth"), *path_arg = json_object_get(args, "path");
	paddock_error err = { 0 };
	json_t *entries = NULL;
	struct sandbox *sb;
	char *path;
	int r;

	path = sandbox_path(path_arg ? json_string_value(path_arg) : WORKSPACE);
	if (!path) {
		(void)fail_oom(c);
		return;
	}
	r = get_sandbox(t, args, &sb, &err);
	if (r >= 0)
		r = t->backend->ops->list_dir(t->backend, sb->id, path,
					      depth ? (unsigned)json_number_value(depth) : 1,
					      MAX_LIST_ENTRIES, &entries, &err);
	if (r == -E2BIG)
		pd_fail_field(&err, E2BIG, "depth",
			      "more than %d entries below '%s': list a subdirectory or less deep",
			      MAX_LIST_ENTRIES, PD_ESC(path));
	if (r < 0)
		mcp_call_error(c, &err);
	else
		mcp_call_result(c, json_pack("{s:s, s:s, s:o}", "sandbox_id", sb->id, "path", path,
					     "entries", entries));
	free(path);
}

/* ---- sandboxes -------------------------------------------------------------------------- */

static json_t *limits_json(const paddock_spec *spec)
{
	static const struct {
		const char *key, *limit;
	} keys[] = { { "memory_bytes", "memory" },   { "cpus", "cpus" },
		     { "pids", "pids" },	     { "timeout_s", "timeout" },
		     { "cpu_time_s", "cpu_time" }, { "disk_bytes", "disk" } };
	json_t *o = json_object();

	for (size_t i = 0; o && i < sizeof(keys) / sizeof(keys[0]); i++) {
		paddock_error err = { 0 };
		double v;

		if (paddock_spec_get_limit(spec, keys[i].limit, &v, &err) < 0)
			continue;
		/* sizes and counts are whole numbers; CPUs and seconds may not be */
		json_object_set_new(o, keys[i].key,
				    v == (double)(json_int_t)v ? json_integer((json_int_t)v)
							       : json_real(v));
	}
	return o;
}

static json_t *strings(char **list, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(list[i]));
	return a;
}

static void create_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;
	struct sandbox *sb;

	if (mcp_policy_spec(t->policy, args, &spec, &err) < 0 ||
	    new_sandbox(t, spec, false, &sb, &err) < 0) {
		paddock_spec_free(spec);
		return mcp_call_error(c, &err);
	}
	mcp_call_result(c, json_pack("{s:s, s:{s:s, s:o, s:o}, s:o, s:s?}", "sandbox_id", sb->id,
				     "network", "mode", pd_net_mode_to_string(spec->network.mode),
				     "allow", strings(spec->network.allow, spec->network.n_allow),
				     "deny", strings(spec->network.deny, spec->network.n_deny),
				     "limits", limits_json(spec), "workspace", spec->workspace));
	paddock_spec_free(spec);
}

static void destroy_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	paddock_error err = { 0 };
	struct sandbox *sb;
	char *id;

	if (get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	id = strdup(sb->id);
	if (!id) {
		(void)fail_oom(c);
		return;
	}
	if (t->backend->ops->destroy(t->backend, sb->id, &err) < 0 && err.code != ENOENT) {
		free(id);
		return mcp_call_error(c, &err);
	}
	sandbox_forget(t, sb);
	mcp_call_result(c, json_pack("{s:s, s:b}", "sandbox_id", id, "destroyed", 1));
	free(id);
}

static void set_paused(struct mcp_tools *t, struct mcp_call *c, json_t *args, bool pause)
{
	paddock_error err = { 0 };
	struct sandbox *sb;

	if (get_sandbox(t, args, &sb, &err) < 0 ||
	    t->backend->ops->set_paused(t->backend, sb->id, pause, &err) < 0)
		return mcp_call_error(c, &err);
	sb->paused = pause;
	mcp_call_result(c, json_pack("{s:s, s:s}", "sandbox_id", sb->id, "state",
				     pause ? "paused" : "running"));
}

static void pause_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	set_paused(t, c, args, true);
}

static void resume_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	set_paused(t, c, args, false);
}

static void list_sandboxes(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *list = json_array();

	(void)args;
	for (struct sandbox *sb = t->sandboxes; list && sb; sb = sb->next)
		json_array_append_new(list, json_pack("{s:s, s:b, s:i, s:s}", "sandbox_id", sb->id,
						      "default", sb->is_default, "processes",
						      (int)sb->n_procs, "state",
						      sb->paused ? "paused" : "running"));
	if (!list)
		(void)fail_oom(c);
	else
		mcp_call_result(c, json_pack("{s:o}", "sandboxes", list));
}

void mcp_tools_call(struct mcp_tools *t, struct mcp_call *c, const char *name, json_t *args)
{
	const struct tool *tl = find_tool(name);
	paddock_error err = { 0 };
	size_t i;
	json_t *schema;

	/* the parsed inputSchema, as published */
	for (i = 0; i < N_TOOLS && &tools[i] != tl; i++)
		;
	schema = json_object_get(json_array_get(t->list, i), "inputSchema");
	if (!tl || mcp_schema_check(schema, args, &err) < 0) {
		if (!tl)
			pd_fail_field(&err, EINVAL, "name", "no such tool");
		return mcp_call_error(c, &err);
	}
	tl->fn(t, c, args);
}
