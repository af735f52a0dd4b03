/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock gc`: removes the idle cgroups paddock keeps for reuse. Sandboxes reuse them, so
 * this is for operators who want the hierarchy clean (before an uninstall, after a test run).
 */
#include <stdio.h>
#include <string.h>

#include "paddock/paddock.h"
#include "cli.h"

int cmd_gc(int argc, char **argv)
{
	paddock_error err = { 0 };
	char buf[512];
	int r;

	if (argc > 1) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			printf("usage: paddock gc\n\nRemoves the idle cgroups paddock keeps for "
			       "reuse "
			       "(those of live sandboxes stay).\n");
			return 0;
		}
		fprintf(stderr, "paddock: gc: unexpected argument '%s'\n", argv[1]);
		return PADDOCK_EXIT_FAILURE;
	}
	r = paddock_gc(&err);
	if (r < 0) {
		fprintf(stderr, "paddock: gc: %s\n", paddock_error_format(&err, buf, sizeof(buf)));
		return PADDOCK_EXIT_FAILURE;
	}
	printf("removed %d idle cgroup%s\n", r, r == 1 ? "" : "s");
	return 0;
}
