/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec flags `paddock run` and `paddock create` share (docs/spec.md): their getopt
 * table and how each sets the spec, so both parse them identically.
 */
#pragma once

#include <getopt.h>
#include <stddef.h>

#include "paddock/paddock.h"

enum {
	SPEC_OPT_SPEC = 0x100,
	SPEC_OPT_WORKSPACE,
	SPEC_OPT_ROOTFS,
	SPEC_OPT_RO_BIND,
	SPEC_OPT_BIND,
	SPEC_OPT_ENV,
	SPEC_OPT_CWD,
	SPEC_OPT_HOSTNAME,
	SPEC_OPT_TIMEOUT,
	SPEC_OPT_DISK,
	SPEC_OPT_LANDLOCK,
	SPEC_OPT_MEMORY,
	SPEC_OPT_PIDS,
	SPEC_OPT_CPUS,
	SPEC_OPT_CPU_TIME,
	SPEC_OPT_FILE_SIZE,
	SPEC_OPT_NOFILE,
	SPEC_OPT_OUTPUT_LIMIT,
	SPEC_OPT_REQUIRE,
	SPEC_OPT_NET,
	SPEC_OPT_ALLOW,
	SPEC_OPT_DENY,
	SPEC_OPT_NO_TRANSPARENT,
	SPEC_OPT_SECRET,
	SPEC_OPT_IMAGE,
	SPEC_OPT_USER,
	SPEC_OPT_ASK_TIMEOUT,
	SPEC_OPT_END, /* a command's own options start here */
};

/* getopt_long entries of the spec flags, for a command's option table */
#define SPEC_LONG_OPTIONS                                                                          \
	{ "spec", required_argument, NULL, SPEC_OPT_SPEC },                                        \
		{ "workspace", required_argument, NULL, SPEC_OPT_WORKSPACE },                      \
		{ "rootfs", required_argument, NULL, SPEC_OPT_ROOTFS },                            \
		{ "ro-bind", required_argument, NULL, SPEC_OPT_RO_BIND },                          \
		{ "bind", required_argument, NULL, SPEC_OPT_BIND },                                \
		{ "env", required_argument, NULL, SPEC_OPT_ENV },                                  \
		{ "cwd", required_argument, NULL, SPEC_OPT_CWD },                                  \
		{ "hostname", required_argument, NULL, SPEC_OPT_HOSTNAME },                        \
		{ "timeout", required_argument, NULL, SPEC_OPT_TIMEOUT },                          \
		{ "disk", required_argument, NULL, SPEC_OPT_DISK },                                \
		{ "landlock", required_argument, NULL, SPEC_OPT_LANDLOCK },                        \
		{ "memory", required_argument, NULL, SPEC_OPT_MEMORY },                            \
		{ "pids", required_argument, NULL, SPEC_OPT_PIDS },                                \
		{ "cpus", required_argument, NULL, SPEC_OPT_CPUS },                                \
		{ "cpu-time", required_argument, NULL, SPEC_OPT_CPU_TIME },                        \
		{ "file-size", required_argument, NULL, SPEC_OPT_FILE_SIZE },                      \
		{ "nofile", required_argument, NULL, SPEC_OPT_NOFILE },                            \
		{ "output-limit", required_argument, NULL, SPEC_OPT_OUTPUT_LIMIT },                \
		{ "require", required_argument, NULL, SPEC_OPT_REQUIRE },                          \
		{ "net", required_argument, NULL, SPEC_OPT_NET },                                  \
		{ "allow", required_argument, NULL, SPEC_OPT_ALLOW },                              \
		{ "deny", required_argument, NULL, SPEC_OPT_DENY },                                \
		{ "no-transparent", no_argument, NULL, SPEC_OPT_NO_TRANSPARENT },                  \
		{ "secret", required_argument, NULL, SPEC_OPT_SECRET },                            \
		{ "image", required_argument, NULL, SPEC_OPT_IMAGE },                              \
		{ "user", required_argument, NULL, SPEC_OPT_USER },                                \
	{                                                                                          \
		"ask-timeout", required_argument, NULL, SPEC_OPT_ASK_TIMEOUT                       \
	}

/*
 * Applies spec flag `opt` with its argument: 1 when it was one (*ret_field: the spec field it
 * set, NULL for --spec, which is read separately), 0 when `opt` is no spec flag, -errno with
 * err filled when the value is refused. Relative host paths are made absolute against the
 * caller's working directory.
 */
int spec_flag_apply(paddock_spec *spec, int opt, const char *arg, const char **ret_field,
		    paddock_error *err);

/* The contents of a spec file (at most 1 MiB, NUL-terminated); caller frees. */
int spec_file_read(const char *path, char **ret_text, size_t *ret_len, paddock_error *err);
