/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools of `paddock mcp` (docs/mcp.md) and a session's state: the sandboxes it made
 * (the default one made on first use) and the background processes it started. Arguments
 * are checked against each tool's published inputSchema (schema.c) before anything runs;
 * every failure is a tool error naming the argument, so the model can correct itself.
 *
 * This file holds the tool list (schemas), the session and its sandboxes, and the sandbox
 * tools; the others are in tools-exec.c (commands, background processes), tools-files.c and
 * tools-ask.c (the person's answers to a sandbox's network questions).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "schema.h"
#include "tools-internal.h"
#include "paddock/cleanup.h"

/* ---- schemas ---------------------------------------------------------------------------- */

#define SANDBOX_ID_ARG                                                                             \
	"\"sandbox_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"the sandbox; "    \
	"default: the session's default sandbox, made on first use\"}"
#define ENV_ARG                                                                                    \
	"\"env\":{\"type\":\"object\",\"maxProperties\":256,\"additionalProperties\":"             \
	"{\"type\":\"string\",\"maxLength\":65536},\"description\":\"extra environment "           \
	"variables, NAME: value\"}"
#define TIMEOUT_ARG                                                                                \
	"\"timeout_s\":{\"type\":\"number\",\"minimum\":0.001,\"description\":\"seconds before "   \
	"the command is killed (reason 'timeout'); default and ceiling: the sandbox's "            \
	"limits.timeout_s\"}"
#define CWD_ARG                                                                                    \
	"\"cwd\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":"         \
	"\"working directory; relative to /workspace; default /workspace\"}"
#define STDIN_ARG                                                                                  \
	"\"stdin\":{\"type\":\"string\",\"maxLength\":1048576,\"description\":\"text given "       \
	"to the command's stdin, then end of file\"}"

#define EXEC_RESULT                                                                                \
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"               \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"reason\":{\"type\":\"string\"},"        \
	"\"signal\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"},"           \
	"\"stderr\":{\"type\":\"string\"},\"stdout_truncated\":{\"type\":\"boolean\"},"            \
	"\"stderr_truncated\":{\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},"     \
	"\"stderr_bytes\":{\"type\":\"integer\"},\"report\":{\"type\":\"object\"}},"               \
	"\"required\":[\"sandbox_id\",\"exit_code\",\"reason\",\"signal\",\"stdout\","             \
	"\"stderr\",\"stdout_truncated\",\"stderr_truncated\",\"stdout_bytes\","                   \
	"\"stderr_bytes\",\"report\"]}"

#define CODE_RESULT                                                                                \
	"{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"               \
	"\"language\":{\"type\":\"string\"},\"context\":{\"type\":[\"string\",\"null\"]},"         \
	"\"execution_count\":{\"type\":[\"integer\",\"null\"]},\"stdout\":{\"type\":\"string\"},"  \
	"\"stderr\":{\"type\":\"string\"},\"stdout_truncated\":{\"type\":\"boolean\"},"            \
	"\"stderr_truncated\":{\"type\":\"boolean\"},\"results\":{\"type\":\"array\",\"items\":"   \
	"{\"type\":\"object\"}},\"error\":{\"type\":[\"object\",\"null\"],\"properties\":"         \
	"{\"name\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"},\"traceback\":"           \
	"{\"type\":\"string\"}}},\"timed_out\":{\"type\":\"boolean\"},\"dropped\":"                \
	"{\"type\":\"integer\"},\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"report\":"       \
	"{\"type\":\"object\"}},\"required\":[\"sandbox_id\",\"language\",\"stdout\",\"stderr\","  \
	"\"results\",\"error\",\"timed_out\"]}"

#define LIMITS_PROPS                                                                               \
	"\"memory\":{\"type\":[\"string\",\"integer\"],\"description\":\"bytes, or '512M', "       \
	"'2G'\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"                  \
	"\"timeout_s\":{\"type\":\"number\",\"description\":\"each command's default and "         \
	"ceiling timeout\"},\"cpu_time_s\":{\"type\":\"number\"},\"disk\":{\"type\":"              \
	"[\"string\",\"integer\"]}"

typedef void (*tool_fn)(struct mcp_tools *t, struct mcp_call *c, json_t *args);

static void create_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void destroy_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void list_sandboxes(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void pause_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);
static void resume_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args);

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
	  "\"limits\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":"
	  "{" LIMITS_PROPS "}}," ENV_ARG ","
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
	  EXEC_RESULT, tool_run_command, false, true, false },
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
	  "\"context\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"pattern\":\"^[A-Za-"
	  "z0-9_.-]{1,64}$\","
	  "\"description\":\"python and bash: a name for a separate state, made on first use; "
	  "default: the language's default context\"}," SANDBOX_ID_ARG "," ENV_ARG "," STDIN_ARG
	  "," TIMEOUT_ARG "}}",
	  CODE_RESULT, tool_run_code, false, true, false },
	{ "write_file", "Write a file",
	  "Write a file in the sandbox (replacing it whole; missing directories are created). "
	  "Relative paths are under /workspace. Content is text, or base64 with encoding "
	  "'base64' for binary data.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\","
	  "\"content\"],\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,"
	  "\"maxLength\":4096},\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":"
	  "\"string\",\"enum\":[\"utf-8\",\"base64\"]},\"executable\":{\"type\":\"boolean\"}"
	  "," SANDBOX_ID_ARG "}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},\"path\":"
	  "{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}},\"required\":[\"sandbox_id\","
	  "\"path\",\"size\"]}",
	  tool_write_file, false, true, true },
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
	  tool_read_file, true, false, true },
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
	  tool_list_files, true, false, true },
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
	  tool_start_process, false, true, false },
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
	  tool_read_process_output, true, false, false },
	{ "stop_process", "Stop a background process",
	  "Send a signal (default TERM) to a background process and the processes it started.",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"process_id\"],"
	  "\"properties\":{\"process_id\":{\"type\":\"string\",\"maxLength\":32},\"signal\":"
	  "{\"type\":\"string\",\"enum\":[\"TERM\",\"KILL\",\"INT\",\"HUP\"]}}}",
	  "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
	  "\"process_id\":{\"type\":\"string\"},\"signal\":{\"type\":\"string\"}},"
	  "\"required\":[\"sandbox_id\",\"process_id\",\"signal\"]}",
	  tool_stop_process, false, true, false },
};

static const struct tool *find_tool(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(tools); i++)
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

	for (size_t i = 0; list && i < ELEMENTSOF(tools); i++) {
		const struct tool *tl = &tools[i];
		json_t *in = json_loads(tl->input, 0, NULL), *out = json_loads(tl->output, 0, NULL);

		if (!in || !out ||
		    json_array_append_new(
			    list,
			    json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}",
				      "name", tl->name, "title", tl->title, "description",
				      tl->description, "inputSchema", in, "outputSchema", out,
				      "annotations", "title", tl->title, "readOnlyHint",
				      tl->read_only, "destructiveHint", tl->destructive,
				      "idempotentHint", tl->idempotent, "openWorldHint", 0)) < 0) {
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
		return paddock_fail(err, ENOMEM, "allocate the tools");
	*t = (struct mcp_tools){
		.backend = backend, .policy = policy, .base = base, .list = build_list()
	};
	if (!t->list) {
		free(t);
		/* the schemas are constants: only memory can fail here */
		return paddock_fail(err, ENOMEM, "build the tool list");
	}
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

static void sandbox_forget(struct mcp_tools *t, struct sandbox *sb)
{
	tools_asks_drop(t, sb->id, "the sandbox was destroyed");
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

/*
 * A new sandbox of `spec`, and when ret_json is not NULL the spec's JSON (every field,
 * defaults included): what the tools read of it.
 */
static int new_sandbox(struct mcp_tools *t, const paddock_spec *spec, bool is_default,
		       struct sandbox **ret, json_t **ret_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *sj = NULL;
	_cleanup_free_ char *text = NULL;
	struct sandbox *sb;
	const char *u;
	int r;

	if (!t->backend)
		return paddock_fail(err, ENOTSUP, "this server has no sandboxes");
	if (t->n_sandboxes >= t->policy->max_sandboxes)
		return paddock_fail_field(
			err, EPERM, "sandbox_id",
			"this session has %u sandboxes, the most the operator allows; "
			"destroy_sandbox one first",
			t->n_sandboxes);
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return paddock_fail(err, ENOMEM, "allocate a sandbox");
	r = paddock_spec_get_limit(spec, "timeout", &sb->timeout_s, err);
	if (r >= 0)
		r = paddock_spec_to_json(spec, &text, err);
	if (r >= 0 && !(sj = json_loads(text, 0, NULL)))
		r = paddock_fail(err, ENOMEM, "read the spec's JSON");
	if (r >= 0)
		r = t->backend->ops->create(t->backend, spec, &sb->id, err);
	if (r < 0) {
		free(sb);
		return r;
	}
	/* a policy that asks: its questions go to the person at the client (or are denied) */
	u = json_string_value(json_object_get(json_object_get(sj, "network"), "unlisted"));
	if (u && strcmp(u, "ask") == 0) {
		r = t->backend->ops->watch_asks(t->backend, sb->id, tools_on_ask, t, err);
		if (r < 0) {
			paddock_error e = { 0 };

			(void)t->backend->ops->destroy(t->backend, sb->id, &e);
			free(sb->id);
			free(sb);
			return r;
		}
	}
	if (ret_json)
		*ret_json = TAKE_PTR(sj);
	sb->is_default = is_default;
	sb->next = t->sandboxes;
	t->sandboxes = sb;
	t->n_sandboxes++;
	*ret = sb;
	return 0;
}

int tools_get_sandbox(struct mcp_tools *t, json_t *args, struct sandbox **ret, paddock_error *err)
{
	const char *id = json_string_value(json_object_get(args, "sandbox_id"));

	for (struct sandbox *sb = t->sandboxes; sb; sb = sb->next)
		if (id ? !strcmp(sb->id, id) : sb->is_default) {
			*ret = sb;
			return 0;
		}
	if (id)
		return paddock_fail_field(
			err, ENOENT, "sandbox_id",
			"no sandbox '%s' in this session (list_sandboxes names them)",
			PADDOCK_ESC(id));
	return new_sandbox(t, t->policy->spec, true, ret, NULL, err);
}

char *tools_sandbox_path(const char *path)
{
	char *p;

	if (path[0] == '/')
		return strdup(path);
	return asprintf(&p, WORKSPACE "/%s", path) < 0 ? NULL : p;
}

int tools_fail_oom(struct mcp_call *c)
{
	paddock_error err = { 0 };

	paddock_fail(&err, ENOMEM, "answer the call");
	mcp_call_error(c, &err);
	return -ENOMEM;
}

/* ---- sandboxes -------------------------------------------------------------------------- */

static json_t *limits_json(const paddock_spec *spec)
{
	static const struct {
		const char *key, *limit;
	} keys[] = { { "memory_bytes", "memory" }, { "cpus", "cpus" },
		     { "pids", "pids" },	   { "timeout_s", "timeout" },
		     { "cpu_time_s", "cpu_time" }, { "disk_bytes", "disk" } };
	json_t *o = json_object();

	for (size_t i = 0; o && i < ELEMENTSOF(keys); i++) {
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

static void create_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;
	json_t *sj, *net;
	struct sandbox *sb;

	if (mcp_policy_spec(t->policy, args, &spec, &err) < 0 ||
	    new_sandbox(t, spec, false, &sb, &sj, &err) < 0) {
		paddock_spec_free(spec);
		return mcp_call_error(c, &err);
	}
	net = json_object_get(sj, "network");
	mcp_call_result(c, json_pack("{s:s, s:{s:O, s:O, s:O}, s:o, s:O?}", "sandbox_id", sb->id,
				     "network", "mode", json_object_get(net, "mode"), "allow",
				     json_object_get(net, "allow"), "deny",
				     json_object_get(net, "deny"), "limits", limits_json(spec),
				     "workspace", json_object_get(sj, "workspace")));
	json_decref(sj);
	paddock_spec_free(spec);
}

static void destroy_sandbox(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	paddock_error err = { 0 };
	struct sandbox *sb;
	json_t *result;

	if (tools_get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	if (t->backend->ops->destroy(t->backend, sb->id, &err) < 0 && err.code != ENOENT)
		return mcp_call_error(c, &err);
	result = json_pack("{s:s, s:b}", "sandbox_id", sb->id, "destroyed", 1);
	sandbox_forget(t, sb);
	mcp_call_result(c, result);
}

static void set_paused(struct mcp_tools *t, struct mcp_call *c, json_t *args, bool pause)
{
	paddock_error err = { 0 };
	struct sandbox *sb;

	if (tools_get_sandbox(t, args, &sb, &err) < 0 ||
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
		(void)tools_fail_oom(c);
	else
		mcp_call_result(c, json_pack("{s:o}", "sandboxes", list));
}

void mcp_tools_call(struct mcp_tools *t, struct mcp_call *c, const char *name, json_t *args)
{
	const struct tool *tl = find_tool(name);
	paddock_error err = { 0 };
	json_t *schema;

	if (!tl) {
		paddock_fail_field(&err, EINVAL, "name", "no such tool");
		return mcp_call_error(c, &err);
	}
	/* the parsed inputSchema, as published */
	schema = json_object_get(json_array_get(t->list, (size_t)(tl - tools)), "inputSchema");
	if (mcp_schema_check(schema, args, &err) < 0)
		return mcp_call_error(c, &err);
	tl->fn(t, c, args);
}
