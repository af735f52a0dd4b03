/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock`: a table of subcommands, each in its own cmd-<name>.c. */
#include <stdio.h>
#include <string.h>

#include "paddock/paddock.h"
#include "cli.h"
#include "sibling.h"

/* `paddock mcp` is a program of its own (src/mcp/main.c says why) */
static int cmd_mcp_program(int argc, char **argv)
{
	return cli_exec_sibling("paddock-mcp", argc, argv);
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cmd_run, "run one command in a fresh sandbox" },
	{ "image", cmd_image, "pull, import, list, inspect and remove images" },
	{ "gc", cmd_gc, "remove the idle cgroups kept for reuse" },
	{ "mcp", cmd_mcp_program, "serve sandboxes as MCP tools on stdin/stdout" },
	/* the client of paddockd */
	{ "create", cmd_create, "create a sandbox in paddockd" },
	{ "ls", cmd_ls, "list your sandboxes" },
	{ "inspect", cmd_inspect, "show a sandbox as JSON" },
	{ "exec", cmd_exec, "run a command in a sandbox" },
	{ "code", cmd_code, "run code in a sandbox's code interpreter (state kept)" },
	{ "ps", cmd_ps, "list the processes of a sandbox" },
	{ "cp", cmd_cp, "copy a file into or out of a sandbox" },
	{ "files", cmd_files, "list, stat, make, move or remove files in a sandbox" },
	{ "logs", cmd_logs, "show the events of a sandbox" },
	{ "ttl", cmd_ttl, "set when a sandbox expires" },
	{ "pause", cmd_lifecycle, "pause every process of a sandbox" },
	{ "resume", cmd_lifecycle, "resume a paused sandbox" },
	{ "stop", cmd_lifecycle, "end a sandbox's processes, keeping its files" },
	{ "start", cmd_lifecycle, "start a stopped sandbox again" },
	{ "snapshot", cmd_snapshot, "save a sandbox's files as a named image" },
	{ "fork", cmd_fork, "snapshot a sandbox and create a new one from it" },
	{ "rm", cmd_rm, "delete sandboxes" },
	{ "template", cmd_template, "list, show, make or remove paddockd's templates" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: paddock COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'paddock COMMAND --help' tells more.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return PADDOCK_EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("paddock %s\n", PADDOCK_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "paddock: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return PADDOCK_EXIT_FAILURE;
}
