/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock stop ID` and `paddock start ID`: the sandbox's processes end and what it wrote is
 * kept (POST .../stop), or it runs again on what was kept (POST .../start). Both are
 * idempotent.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage_stop(FILE *f)
{
	fputs("usage: paddock stop [OPTIONS] ID\n"
	      "\n"
	      "Stops a sandbox: every process ends, and what it wrote (its root's writable\n"
	      "layer and its own /workspace) is kept in paddockd's image store, across\n"
	      "restarts and reboots, until 'paddock start ID' or its deletion. Memory is not\n"
	      "kept. Only a sandbox made from an image can be stopped. The TTL keeps running.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id and the new state; with --json, the sandbox object.\n"
	      "Exit status: 0 (also when it was stopped already); 1 if paddockd refused (no such\n"
	      "sandbox, one on the host's /usr, or one that ended on its own); 125 if paddock\n"
	      "failed.\n",
	      f);
}

static void usage_start(FILE *f)
{
	fputs("usage: paddock start [OPTIONS] ID\n"
	      "\n"
	      "Starts a stopped sandbox again: the same id, spec, metadata and network policy,\n"
	      "its kept files, new processes; its secrets are read again.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id and the new state; with --json, the sandbox object.\n"
	      "Exit status: 0 (also when it was running already); 1 if paddockd refused (no such\n"
	      "sandbox, or one that ended on its own: nothing kept); 125 if paddock failed.\n",
	      f);
}

static int stop_or_start(int argc, char **argv, const char *verb, void (*usage)(FILE *f))
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	char *url, *id, *state;
	int r;

	r = api_parse_common(&api, argc, argv, options, verb, usage);
	if (r != API_PARSE_GO)
		return r;
	if (argc - optind != 1)
		return api_failf("%s: expected one sandbox id (paddock %s ID)", verb, verb);
	url = API_URL("sandboxes", argv[optind], verb);
	r = api_call(&api, "POST", url, NULL, &reply);
	free(url);
	if (r != 0)
		return r;
	if (api.json) {
		r = api_print_raw(&reply);
	} else {
		id = api_escape(api_str(reply.json, "id", "-"));
		state = api_escape(api_str(reply.json, "state", "-"));
		printf("%s %s\n", id, state);
		free(id);
		free(state);
	}
	api_reply_release(&reply);
	return r;
}

int cmd_stop(int argc, char **argv)
{
	return stop_or_start(argc, argv, "stop", usage_stop);
}

int cmd_start(int argc, char **argv)
{
	return stop_or_start(argc, argv, "start", usage_start);
}
