/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock inspect ID`: one sandbox of paddockd (GET /v1/sandboxes/{id}), as JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock inspect [OPTIONS] ID\n"
	      "\n"
	      "Prints the sandbox object (docs/api.md: state, times, metadata, the effective\n"
	      "spec, usage) as JSON indented by two spaces; with --json as paddockd sent it.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

int cmd_inspect(int argc, char **argv)
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	char *url;
	int r;

	r = api_parse_common(&api, argc, argv, options, "inspect", usage);
	if (r != API_PARSE_GO)
		return r;
	if (argc - optind != 1)
		return api_failf("inspect: expected one sandbox id (paddock inspect ID)");
	url = API_URL("sandboxes", argv[optind]);
	r = api_call(&api, "GET", url, NULL, &reply);
	free(url);
	if (r != 0)
		return r;
	r = api.json ? api_print_raw(&reply) : api_print_pretty(reply.json);
	api_reply_release(&reply);
	return r;
}
