/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock rm ID...`: deletes sandboxes in paddockd (DELETE /v1/sandboxes/{id}). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

static const struct option options[] = {
	{ "force", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock rm [OPTIONS] ID...\n"
	      "\n"
	      "Deletes sandboxes: every process, mount and cgroup of each is gone when it is\n"
	      "printed. Goes on after a failure.\n"
	      "\n"
	      "  -f, --force          a sandbox that does not exist is not an "
	      "error\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id of each deleted sandbox, one a line (--json changes nothing).\n"
	      "Exit status: 0; 1 if paddockd refused any; 125 if paddock failed.\n",
	      f);
}

int cmd_rm(int argc, char **argv)
{
	struct api api = { 0 };
	bool force = false;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "fh", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == 'f') {
			force = true;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "paddock: see 'paddock rm --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (optind == argc)
		return api_failf("rm: expected at least one sandbox id (paddock rm ID...)");
	if (force)
		api.quiet_status = 404;
	for (int i = optind; i < argc; i++) {
		struct api_reply reply = { 0 };
		char *url = API_URL("sandboxes", argv[i]);
		int r = api_call(&api, "DELETE", url, NULL, &reply);

		free(url);
		api_reply_release(&reply);
		if (r == 0) {
			api_fput_escaped(stdout, argv[i]);
			fputc('\n', stdout);
			fflush(stdout);
		} else if (r == PADDOCK_EXIT_FAILURE) {
			return r; /* paddockd cannot be reached: the next ones would fail alike */
		} else if (!(force && api.last_status == 404)) {
			status = r;
		}
	}
	return status;
}
