/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools that run commands (docs/mcp.md): run_command and run_code (a one-off program, or
 * python and bash through the code interpreter, tool-code.c), and the background processes:
 * start_process, read_process_output (which may wait, polling the backend from a timer) and
 * stop_process. What the agent gives is checked against the sandbox's limits here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "mcp.h"
#include "tool-code.h"
#include "tools-internal.h"

#define MAX_WAIT_S   60
#define WAIT_POLL_MS 100

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
		tools_fail_oom(run->call), json_decref(result);
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
		return paddock_fail(err, ENOMEM, "env");
	json_object_foreach(env, key, v)
	{
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
				return paddock_fail_field(
					err, EINVAL, "env",
					"'%s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
					PADDOCK_ESC(key));
			return paddock_fail(err, ENOMEM, "env");
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
			return paddock_fail_field(err, EPERM, "timeout_s",
						  "%g s asked, the sandbox allows at most %g s "
						  "(limits.timeout_s)",
						  req->timeout_s, sb->timeout_s);
	}
	*ret_cwd = NULL;
	if (cwd && !(*ret_cwd = tools_sandbox_path(json_string_value(cwd))))
		return paddock_fail(err, ENOMEM, "cwd");
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
		(void)tools_fail_oom(c);
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

void tool_run_command(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	const char *argv[] = { "/bin/sh", "-c", json_string_value(json_object_get(args, "command")),
			       NULL };
	paddock_error err = { 0 };
	struct sandbox *sb;

	if (tools_get_sandbox(t, args, &sb, &err) < 0)
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

	if (req.context &&
	    (strlen(req.context) > 64 ||
	     strspn(req.context, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789_.-") != strlen(req.context))) {
		paddock_fail_field(&err, EINVAL, "context",
				   "expected a name of 1 to 64 letters, digits, '_', '.' or '-'");
		return mcp_call_error(c, &err);
	}
	if (json_object_get(args, "stdin")) {
		paddock_fail_field(&err, EINVAL, "stdin",
				   "%s runs in a kernel, which reads no stdin; use node or sh, or "
				   "run_command",
				   language);
		return mcp_call_error(c, &err);
	}
	if (timeout) {
		req.timeout_s = json_number_value(timeout);
		if (sb->timeout_s > 0 && req.timeout_s > sb->timeout_s) {
			paddock_fail_field(
				&err, EPERM, "timeout_s",
				"%g s asked, the sandbox allows at most %g s (limits.timeout_s)",
				req.timeout_s, sb->timeout_s);
			return mcp_call_error(c, &err);
		}
	}
	if (!sb->contexts && !(sb->contexts = json_object())) {
		(void)tools_fail_oom(c);
		return;
	}
	req.contexts = sb->contexts;
	mcp_code_run(t->backend, t->base, c, &req);
}

void tool_run_code(struct mcp_tools *t, struct mcp_call *c, json_t *args)
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

	if (tools_get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	if (!strcmp(language, "python") || !strcmp(language, "bash"))
		return run_in_context(t, c, sb, args, language);
	if (json_object_get(args, "context")) {
		paddock_fail_field(
			&err, EINVAL, "context",
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
		paddock_error_prefix(&err, "save the code to %s", path);
		return mcp_call_error(c, &err);
	}
	const char *argv[] = { langs[i].program, path, NULL };

	start_run(t, c, sb, args, argv, langs[i].language);
}

/* ---- background processes --------------------------------------------------------------- */

void tool_start_process(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	const char *argv[] = { "/bin/sh", "-c", json_string_value(json_object_get(args, "command")),
			       NULL };
	struct mcp_exec_req req;
	paddock_error err = { 0 };
	char **env = NULL, *cwd = NULL;
	struct sandbox *sb;
	struct proc *p;
	int r, pid = 0;

	if (tools_get_sandbox(t, args, &sb, &err) < 0)
		return mcp_call_error(c, &err);
	if (sb->n_procs >= MCP_MAX_PROCS) {
		paddock_fail_field(
			&err, EPERM, "command",
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
		(void)tools_fail_oom(c);
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
	return paddock_fail_field(err, ENOENT, "process_id",
				  "no process '%s' in this session (start_process returns one)",
				  PADDOCK_ESC(id));
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
static bool output_answer(struct mcp_tools *t, struct mcp_call *c, const char *proc_id, bool last)
{
	paddock_error err = { 0 };
	json_t *args = json_pack("{s:s}", "process_id", proc_id), *out = NULL;
	struct proc *p;
	int r;

	r = args ? find_proc(t, args, &p, &err) : paddock_fail(&err, ENOMEM, "read_process_output");
	json_decref(args);
	if (r >= 0) {
		r = t->backend->ops->bg_output(t->backend, p->sb->id, p->backend_id,
					       t->policy->max_output, &out, &err);
		if (r == -ENOENT) /* the backend named it by its own id */
			paddock_fail_field(&err, ENOENT, "process_id", "process '%s' is gone",
					   p->id);
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
	if (output_answer(w->t, w->call, w->proc_id,
			  w->polls * WAIT_POLL_MS / 1000.0 >= w->deadline_s)) {
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

void tool_read_process_output(struct mcp_tools *t, struct mcp_call *c, json_t *args)
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
		(void)tools_fail_oom(c);
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

void tool_stop_process(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {
		{ "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT }, { "HUP", SIGHUP }
	};
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
			paddock_fail_field(&err, ESRCH, "process_id",
					   "process '%s' has already ended", p->id);
		return mcp_call_error(c, &err);
	}
	mcp_call_result(c, json_pack("{s:s, s:s, s:s}", "sandbox_id", p->sb->id, "process_id",
				     p->id, "signal", name));
}
