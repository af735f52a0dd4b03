/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock pause ID` and `paddock resume ID`: every process of the sandbox stops where it is
 * (POST .../pause), or goes on (POST .../resume). Both are idempotent.
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

static void usage_pause(FILE *f)
{
	fputs("usage: paddock pause [OPTIONS] ID\n"
	      "\n"
	      "Pauses a sandbox: every process stops where it is and uses no CPU; memory, files\n"
	      "and sockets stay. Commands, ports and the code interpreter are refused until\n"
	      "'paddock resume ID'; files can still be read and written. The TTL keeps running.\n"
	      "As root the cgroup freezer does it, invisibly; rootless, SIGSTOP and SIGCONT.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id and the new state; with --json, the sandbox object.\n"
	      "Exit status: 0 (also when it was paused already); 1 if paddockd refused (no such\n"
	      "sandbox, or it has stopped); 125 if paddock failed.\n",
	      f);
}

static void usage_resume(FILE *f)
{
	fputs("usage: paddock resume [OPTIONS] ID\n"
	      "\n"
	      "Resumes a paused sandbox: its processes go on where they stopped.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id and the new state; with --json, the sandbox object.\n"
	      "Exit status: 0 (also when it was running already); 1 if paddockd refused (no such\n"
	      "sandbox, or it has stopped); 125 if paddock failed.\n",
	      f);
}

static int pause_or_resume(int argc, char **argv, const char *verb, void (*usage)(FILE *f))
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

int cmd_pause(int argc, char **argv)
{
	return pause_or_resume(argc, argv, "pause", usage_pause);
}

int cmd_resume(int argc, char **argv)
{
	return pause_or_resume(argc, argv, "resume", usage_resume);
}
