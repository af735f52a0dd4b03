/* SPDX-License-Identifier: Apache-2.0 */
/* The spec flags shared by `paddock run` and `paddock create` (spec-flags.h). */
#include "spec-flags.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPEC_FILE_MAX (1u << 20)

/* Flags that set one spec field from their argument, as paddock_spec_set() takes it. */
static const struct {
	int opt;
	const char *field;
} field_flags[] = {
	{ SPEC_OPT_CWD, "cwd" },
	{ SPEC_OPT_HOSTNAME, "hostname" },
	{ SPEC_OPT_ENV, "env" },
	{ SPEC_OPT_TIMEOUT, "limits.timeout_s" },
	{ SPEC_OPT_DISK, "limits.disk" },
	{ SPEC_OPT_MEMORY, "limits.memory" },
	{ SPEC_OPT_PIDS, "limits.pids" },
	{ SPEC_OPT_CPUS, "limits.cpus" },
	{ SPEC_OPT_CPU_TIME, "limits.cpu_time_s" },
	{ SPEC_OPT_FILE_SIZE, "limits.file_size" },
	{ SPEC_OPT_NOFILE, "limits.nofile" },
	{ SPEC_OPT_OUTPUT_LIMIT, "limits.output" },
	{ SPEC_OPT_REQUIRE, "limits.required" },
	{ SPEC_OPT_LANDLOCK, "security.landlock" },
	{ SPEC_OPT_ALLOW, "network.allow" },
	{ SPEC_OPT_DENY, "network.deny" },
	{ SPEC_OPT_SECRET, "secrets" },
	{ SPEC_OPT_IMAGE, "image" },
	{ SPEC_OPT_USER, "user" },
	{ SPEC_OPT_ASK_TIMEOUT, "network.ask_timeout_s" },
};

static int fail(paddock_error *err, int code, const char *what, const char *arg)
{
	memset(err, 0, sizeof(*err));
	err->code = code;
	snprintf(err->msg, sizeof(err->msg), "%s '%.300s'", what, arg);
	return -code;
}

/* Relative host paths are taken from the caller's cwd, without "." components. */
static char *absolute(const char *p)
{
	char cwd[PATH_MAX];
	char *out;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (strcmp(p, ".") == 0 || !p[0])
		return strdup(cwd);
	if (asprintf(&out, "%s/%s", cwd, p) < 0)
		return NULL;
	return out;
}

/* "SRC[:DST]" from the command line -> "ABS_SRC:DST:ro|rw" for the spec. */
static int set_bind(paddock_spec *spec, const char *value, bool readonly, paddock_error *err)
{
	const char *colon = strchr(value, ':');
	char *src = colon ? strndup(value, (size_t)(colon - value)) : strdup(value);
	char *abs = src ? absolute(src) : NULL, *joined = NULL;
	int r;

	if (abs && asprintf(&joined, "%s:%s:%s", abs, colon ? colon + 1 : abs,
			    readonly ? "ro" : "rw") >= 0)
		r = paddock_spec_set(spec, "binds", joined, err);
	else
		r = fail(err, errno ? errno : ENOMEM, "resolve", value);
	free(src);
	free(abs);
	free(joined);
	return r;
}

int spec_flag_apply(paddock_spec *spec, int opt, const char *arg, const char **ret_field,
		    paddock_error *err)
{
	const char *field = NULL;
	char *abs;
	int r;

	for (size_t i = 0; i < sizeof(field_flags) / sizeof(field_flags[0]); i++)
		if (opt == field_flags[i].opt) {
			*ret_field = field_flags[i].field;
			r = paddock_spec_set(spec, field_flags[i].field, arg, err);
			return r < 0 ? r : 1;
		}
	switch (opt) {
	case SPEC_OPT_SPEC:
		*ret_field = NULL;
		return 1;
	case SPEC_OPT_WORKSPACE:
	case SPEC_OPT_ROOTFS:
		field = opt == SPEC_OPT_WORKSPACE ? "workspace" : "rootfs";
		abs = absolute(arg);
		if (!abs)
			return fail(err, errno ? errno : ENOMEM, "resolve", arg);
		r = paddock_spec_set(spec, field, abs, err);
		free(abs);
		*ret_field = field;
		return r < 0 ? r : 1;
	case SPEC_OPT_NET:
		/*
		 * "ask" is an allowlist that asks a person about the hosts no rule names
		 * (network.unlisted); any other mode refuses them again.
		 */
		*ret_field = "network.mode";
		r = paddock_spec_set(spec, "network.mode",
				     strcmp(arg, "ask") == 0 ? "allowlist" : arg, err);
		if (r < 0 && strcmp(err->field, "network.mode") == 0)
			snprintf(err->msg, sizeof(err->msg),
				 "expected one of 'none', 'allowlist', 'open', 'ask', got '%.200s'",
				 arg);
		if (r >= 0)
			r = paddock_spec_set(spec, "network.unlisted",
					     strcmp(arg, "ask") == 0 ? "ask" : "deny", err);
		return r < 0 ? r : 1;
	case SPEC_OPT_NO_TRANSPARENT:
		*ret_field = "network.transparent";
		r = paddock_spec_set(spec, "network.transparent", "false", err);
		return r < 0 ? r : 1;
	case SPEC_OPT_BIND:
	case SPEC_OPT_RO_BIND:
		*ret_field = "binds";
		r = set_bind(spec, arg, opt == SPEC_OPT_RO_BIND, err);
		return r < 0 ? r : 1;
	default:
		return 0;
	}
}

int spec_file_read(const char *path, char **ret_text, size_t *ret_len, paddock_error *err)
{
	char *buf = malloc(SPEC_FILE_MAX + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t n = 0;
	ssize_t r = 0;
	int e;

	if (!buf || fd < 0) {
		e = errno ? errno : ENOMEM;
		free(buf);
		if (fd >= 0)
			close(fd);
		return fail(err, e, "open spec", path);
	}
	do {
		r = read(fd, buf + n, SPEC_FILE_MAX + 1 - n);
		if (r > 0)
			n += (size_t)r;
	} while ((r > 0 && n <= SPEC_FILE_MAX) || (r < 0 && errno == EINTR));
	e = errno;
	close(fd);
	if (r < 0 || n > SPEC_FILE_MAX) {
		free(buf);
		if (r < 0)
			return fail(err, e, "read spec", path);
		return fail(err, EFBIG, "spec larger than 1 MiB:", path);
	}
	buf[n] = '\0';
	*ret_text = buf;
	*ret_len = n;
	return 0;
}
