/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Programs of paddock's that live beside `paddock` (the same directory, built and installed
 * together): `paddock mcp` is paddock-mcp (src/mcp/main.c). Found by /proc/self/exe, so the
 * one that runs is the one installed with this `paddock`, wherever that is.
 */
#include "sibling.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "paddock/paddock.h"

int cli_exec_sibling(const char *name, int argc, char **argv)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	(void)argc;
	if (n < 0) {
		fprintf(stderr, "paddock: find %s: /proc/self/exe: %s\n", name, strerror(errno));
		return PADDOCK_EXIT_FAILURE;
	}
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) + 1 + strlen(name) + 1 > sizeof(path)) {
		fprintf(stderr, "paddock: find %s beside '%s'\n", name, path);
		return PADDOCK_EXIT_FAILURE;
	}
	strcpy(slash + 1, name);
	argv[0] = (char *)name;
	execv(path, argv);
	fprintf(stderr, "paddock: run %s: %s\n", path, strerror(errno));
	return PADDOCK_EXIT_FAILURE;
}
