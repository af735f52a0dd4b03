/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OCI hooks (prestart, createRuntime, poststart, poststop): host programs the engine names
 * (CNI plugins, Docker's network setup), run by the runtime with the container's state on
 * stdin. They are the engine's, trusted like config.json; each is bounded in time (its
 * "timeout", else 120 s) and killed past it. Hooks that would run inside the container's
 * namespaces (createContainer, startContainer) are refused by name.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"

#define HOOK_TIMEOUT_DEFAULT_S 120

static const char *const kind_names[_OCI_HOOK_MAX] = {
	[OCI_HOOK_PRESTART] = "prestart",
	[OCI_HOOK_CREATE_RUNTIME] = "createRuntime",
	[OCI_HOOK_POSTSTART] = "poststart",
	[OCI_HOOK_POSTSTOP] = "poststop",
};

static char **strv(json_t *a)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(*v));

	for (size_t i = 0; v && i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));

		v[i] = strdup(s ? s : "");
		if (!v[i]) {
			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return NULL;
		}
	}
	return v;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void oci_hooks_release(struct oci_hooks *hooks)
{
	for (int k = 0; k < _OCI_HOOK_MAX; k++) {
		for (size_t i = 0; i < hooks->n[k]; i++) {
			free(hooks->h[k][i].path);
			strv_free(hooks->h[k][i].args);
			strv_free(hooks->h[k][i].env);
		}
		free(hooks->h[k]);
		hooks->h[k] = NULL;
		hooks->n[k] = 0;
	}
}

int oci_hooks_load(json_t *obj, struct oci_hooks *ret, paddock_error *err)
{
	const char *key;
	json_t *list;
	char field[64];

	*ret = (struct oci_hooks){ 0 };
	if (!obj)
		return 0;
	if (!json_is_object(obj))
		return oci_error(err, EINVAL, "hooks", "expected an object");
	json_object_foreach(obj, key, list)
	{
		int kind = -1;
		size_t i;
		json_t *h;

		for (int k = 0; k < _OCI_HOOK_MAX; k++)
			if (!strcmp(key, kind_names[k]))
				kind = k;
		snprintf(field, sizeof(field), "hooks.%s", key);
		if (kind < 0)
			return oci_error(
				err, EINVAL, field,
				"hooks that run in the container's namespaces ('%.200s') are not "
				"supported",
				key);
		if (!json_is_array(list) || json_array_size(list) > 64)
			return oci_error(err, EINVAL, field,
					 "expected an array of at most 64 hooks");
		ret->h[kind] = calloc(json_array_size(list) + 1, sizeof(struct oci_hook));
		if (!ret->h[kind])
			return oci_error(err, ENOMEM, field, "out of memory");
		json_array_foreach(list, i, h)
		{
			struct oci_hook *o = &ret->h[kind][i];
			const char *path = json_string_value(json_object_get(h, "path"));
			json_int_t t = json_integer_value(json_object_get(h, "timeout"));

			snprintf(field, sizeof(field), "hooks.%s[%zu].path", key, i);
			if (!path || path[0] != '/')
				return oci_error(err, EINVAL, field, "expected an absolute path");
			o->path = strdup(path);
			o->args = strv(json_object_get(h, "args"));
			o->env = strv(json_object_get(h, "env"));
			o->timeout_s = t > 0 && t < 3600 ? (int)t : 0;
			ret->n[kind]++;
			if (!o->path || !o->args || !o->env)
				return oci_error(err, ENOMEM, field, "out of memory");
		}
	}
	return 0;
}

static int run_one(const struct oci_hook *h, const char *state, paddock_error *err)
{
	int in[2], pidfd;
	pid_t pid;
	siginfo_t si = { 0 };
	struct pollfd p;
	int timeout = (h->timeout_s ? h->timeout_s : HOOK_TIMEOUT_DEFAULT_S) * 1000;
	char *argv0[] = { h->path, NULL };

	if (pipe2(in, O_CLOEXEC) < 0)
		return oci_error(err, errno, "hooks", "pipe for hook '%.200s'", h->path);
	pid = fork();
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		return oci_error(err, errno, "hooks", "fork hook '%.200s'", h->path);
	}
	if (pid == 0) {
		if (dup2(in[0], 0) < 0)
			_exit(127);
		execve(h->path, h->args[0] ? h->args : argv0, h->env);
		_exit(127);
	}
	close(in[0]);
	/* the state is small: one write fits the pipe; a hook that never reads it is fine */
	(void)!write(in[1], state, strlen(state));
	close(in[1]);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	p = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	if (pidfd >= 0 && poll(&p, 1, timeout) == 0) {
		(void)kill(pid, SIGKILL);
		(void)waitid(P_PID, (id_t)pid, &si, WEXITED);
		close(pidfd);
		return oci_error(err, ETIMEDOUT, "hooks", "hook '%.200s' timed out", h->path);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED) < 0)
		return oci_error(err, errno, "hooks", "wait for hook '%.200s'", h->path);
	if (si.si_code != CLD_EXITED || si.si_status != 0)
		return oci_error(err, EIO, "hooks", "hook '%.200s' failed", h->path);
	return 0;
}

int oci_hooks_run(const struct oci_hooks *hooks, enum oci_hook_kind kind, const char *state_json,
		  paddock_error *err)
{
	for (size_t i = 0; i < hooks->n[kind]; i++) {
		int r = run_one(&hooks->h[kind][i], state_json, err);

		if (r < 0) {
			char f[64];

			snprintf(f, sizeof(f), "hooks.%s[%zu]", kind_names[kind], i);
			snprintf(err->field, sizeof(err->field), "%s", f);
			return r;
		}
	}
	return 0;
}
