/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock ps ID`: the processes of a sandbox (GET /v1/sandboxes/{id}/processes). */
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

static void usage(FILE *f)
{
	fputs("usage: paddock ps [OPTIONS] ID\n"
	      "\n"
	      "Lists the processes paddockd started in a sandbox: running and recently ended.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: a header line, then one line per process, columns separated by two or\n"
	      "more spaces:\n"
	      "  PID  TAG  STATE  STARTED  EXIT  COMMAND\n"
	      "PID is inside the sandbox; TAG is '-' when none; STATE is running or exited;\n"
	      "EXIT is the exit status (as 'paddock exec' would exit) or '-'; COMMAND is argv\n"
	      "joined by spaces. With --json: {\"processes\":[...]}.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static void print_argv(const json_t *argv)
{
	size_t i;
	json_t *a;

	json_array_foreach((json_t *)argv, i, a)
	{
		if (i > 0)
			fputc(' ', stdout);
		api_fput_escaped(stdout, json_is_string(a) ? json_string_value(a) : "?");
	}
	if (json_array_size(argv) == 0)
		fputc('-', stdout);
}

int cmd_ps(int argc, char **argv)
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	json_t *list, *p;
	int tag_width = 3;
	size_t i;
	char *url;
	int r;

	r = api_parse_common(&api, argc, argv, options, "ps", usage);
	if (r != API_PARSE_GO)
		return r;
	if (argc - optind != 1)
		return api_failf("ps: expected one sandbox id (paddock ps ID)");
	url = API_URL("sandboxes", argv[optind], "processes");
	r = api_get_list(&api, url, "processes", &reply, &list);
	free(url);
	if (r != 0 || !list)
		return r;
	json_array_foreach(list, i, p)
	{
		char *tag = api_escape(api_str(p, "tag", "-"));
		if ((int)strlen(tag) > tag_width)
			tag_width = strlen(tag) > 64 ? 64 : (int)strlen(tag);
		free(tag);
	}
	printf("%-7s  %-*s  %-7s  %-24s  %-4s  %s\n", "PID", tag_width, "TAG", "STATE", "STARTED",
	       "EXIT", "COMMAND");
	json_array_foreach(list, i, p)
	{
		char *tag = api_escape(api_str(p, "tag", "-"));
		char *state = api_escape(api_str(p, "state", "-"));
		char *started = api_escape(api_str(p, "started_at", "-"));
		json_t *pid = json_object_get(p, "pid");
		json_t *status = json_object_get(json_object_get(p, "result"), "exit_status");
		char exit_s[24] = "-";

		if (json_is_integer(status))
			snprintf(exit_s, sizeof(exit_s), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(status));
		printf("%-7" JSON_INTEGER_FORMAT "  %-*s  %-7s  %-24s  %-4s  ",
		       json_is_integer(pid) ? json_integer_value(pid) : -1, tag_width, tag, state,
		       started, exit_s);
		print_argv(json_object_get(p, "argv"));
		fputc('\n', stdout);
		free(tag);
		free(state);
		free(started);
	}
	api_reply_release(&reply);
	return 0;
}
