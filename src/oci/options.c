/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The options `create`, `run` and `exec` share with runc's: where the pid file goes, the
 * console socket, --detach, --preserve-fds, and those a paddock container has no use for.
 * One home, so the three commands take them, and refuse them, alike.
 */
#include <string.h>

#include "oci.h"

int oci_launch_option(struct oci_launch_args *a, int c, const char *arg)
{
	switch (c) {
	case OCI_OPT_PID_FILE:
		a->pid_file = arg;
		return 1;
	case OCI_OPT_CONSOLE_SOCKET:
		a->console_socket = arg;
		return 1;
	case 'd':
		a->detach = true;
		return 1;
	case OCI_OPT_PRESERVE_FDS:
		/* the engine's own fds beyond stdio have no way into a paddock sandbox */
		if (strcmp(arg, "0")) {
			oci_failf("--preserve-fds: passing extra fds into a paddock container is "
				  "not supported (got %s)",
				  arg);
			return -1;
		}
		return 1;
	case OCI_OPT_IGNORED:
		return 1;
	default:
		return 0;
	}
}
