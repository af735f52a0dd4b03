/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock ls`: the caller's sandboxes in paddockd (GET /v1/sandboxes), as a table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

static const struct option options[] = {
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock ls [OPTIONS]\n"
	      "\n"
	      "Lists your sandboxes in paddockd, oldest first as paddockd gives them.\n"
	      "\n"
	      "  -q, --quiet          print the ids only, one a line\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: a header line, then one line per sandbox, columns separated by two or\n"
	      "more spaces:\n"
	      "  ID  STATE  CREATED  EXPIRES  METADATA\n"
	      "STATE is running, paused or stopped; the times are paddockd's (RFC 3339, UTC);\n"
	      "METADATA is KEY=VALUE,... in paddockd's order, or '-'.\n"
	      "With --json: {\"sandboxes\":[...]}.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static void print_metadata(const json_t *md)
{
	const char *key;
	json_t *v;
	bool first = true;

	json_object_foreach((json_t *)md, key, v)
	{
		if (!first)
			fputc(',', stdout);
		api_fput_escaped(stdout, key);
		fputc('=', stdout);
		api_fput_escaped(stdout, json_is_string(v) ? json_string_value(v) : "?");
		first = false;
	}
	if (first)
		fputc('-', stdout);
}

int cmd_ls(int argc, char **argv)
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	bool quiet = false;
	json_t *list, *sb;
	size_t i;
	char *url;
	int c, r;

	while ((c = getopt_long(argc, argv, "qh", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == 'q') {
			quiet = true;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "paddock: see 'paddock ls --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (optind < argc)
		return api_failf("ls: unexpected argument '%s'", argv[optind]);
	url = API_URL("sandboxes");
	r = api_get_list(&api, url, "sandboxes", &reply, &list);
	free(url);
	if (r != 0 || !list)
		return r;
	if (!quiet)
		printf("%-15s  %-8s  %-24s  %-24s  %s\n", "ID", "STATE", "CREATED", "EXPIRES",
		       "METADATA");
	json_array_foreach(list, i, sb)
	{
		char *id = api_escape(api_str(sb, "id", "-"));
		char *state = api_escape(api_str(sb, "state", "-"));
		char *created = api_escape(api_str(sb, "created_at", "-"));
		char *expires = api_escape(api_str(sb, "expires_at", "-"));

		if (quiet) {
			printf("%s\n", id);
		} else {
			printf("%-15s  %-8s  %-24s  %-24s  ", id, state, created, expires);
			print_metadata(json_object_get(sb, "metadata"));
			fputc('\n', stdout);
		}
		free(id);
		free(state);
		free(created);
		free(expires);
	}
	api_reply_release(&reply);
	return 0;
}
