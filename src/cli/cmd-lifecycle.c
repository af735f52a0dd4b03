/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock pause|resume|stop|start ID`: a sandbox changes state through POST
 * /sandboxes/ID/<verb>. `pause` stops every process where it is and `resume` lets them go on;
 * `stop` ends them and keeps what the sandbox wrote, `start` runs it again on what was kept.
 * All four are idempotent. The commands differ only in their help, so they are one table.
 */
#include <assert.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"
#include "sandbox-action.h"

struct action {
	const char *verb;	 /* the command's name, and the endpoint's last segment */
	const char *about;	 /* --help: what it does */
	const char *exit_status; /* --help: when it succeeds and why paddockd may refuse */
};

static const struct action actions[] = {
	{ "pause",
	  "Pauses a sandbox: every process stops where it is and uses no CPU; memory, files\n"
	  "and sockets stay. Commands, ports and the code interpreter are refused until\n"
	  "'paddock resume ID'; files can still be read and written. The TTL keeps running.\n"
	  "As root the cgroup freezer does it, invisibly; rootless, SIGSTOP and SIGCONT.\n",
	  "Exit status: 0 (also when it was paused already); 1 if paddockd refused (no such\n"
	  "sandbox, or it has stopped); 125 if paddock failed.\n" },
	{ "resume", "Resumes a paused sandbox: its processes go on where they stopped.\n",
	  "Exit status: 0 (also when it was running already); 1 if paddockd refused (no such\n"
	  "sandbox, or it has stopped); 125 if paddock failed.\n" },
	{ "stop",
	  "Stops a sandbox: every process ends, and what it wrote (its root's writable\n"
	  "layer and its own /workspace) is kept in paddockd's image store, across\n"
	  "restarts and reboots, until 'paddock start ID' or its deletion. Memory is not\n"
	  "kept. Only a sandbox made from an image can be stopped. The TTL keeps running.\n",
	  "Exit status: 0 (also when it was stopped already); 1 if paddockd refused (no such\n"
	  "sandbox, one on the host's /usr, or one that ended on its own); 125 if paddock\n"
	  "failed.\n" },
	{ "start",
	  "Starts a stopped sandbox again: the same id, spec, metadata and network policy,\n"
	  "its kept files, new processes; its secrets are read again.\n",
	  "Exit status: 0 (also when it was running already); 1 if paddockd refused (no such\n"
	  "sandbox, or one that ended on its own: nothing kept); 125 if paddock failed.\n" },
};

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

/* The command being run, for usage(): api_parse_common's callback takes no argument. */
static const struct action *arg_action;

static void usage(FILE *f)
{
	fprintf(f, "usage: paddock %s [OPTIONS] ID\n\n", arg_action->verb);
	fputs(arg_action->about, f);
	fputs("\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the id and the new state; with --json, the sandbox object.\n",
	      f);
	fputs(arg_action->exit_status, f);
}

static void print_state(const json_t *sb)
{
	char *id = api_escape(api_str(sb, "id", "-"));
	char *state = api_escape(api_str(sb, "state", "-"));

	printf("%s %s\n", id, state);
	free(id);
	free(state);
}

int cmd_lifecycle(int argc, char **argv)
{
	struct api api = { 0 };
	const char *verb;
	int r;

	/* main.c runs every command of the table as this, with its name in argv[0] */
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(argv[0], actions[i].verb))
			arg_action = &actions[i];
	assert(arg_action);
	verb = arg_action->verb;
	r = api_parse_common(&api, argc, argv, options, verb, usage);
	if (r != API_PARSE_GO)
		return r;
	if (argc - optind != 1)
		return api_failf("%s: expected one sandbox id (paddock %s ID)", verb, verb);
	return cli_sandbox_action(&api, argv[optind], verb, NULL, print_state);
}
