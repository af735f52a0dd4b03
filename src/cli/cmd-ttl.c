/* SPDX-License-Identifier: Apache-2.0 */
/* `paddock ttl ID SECONDS`: a sandbox now expires SECONDS from now (POST .../ttl). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"
#include "sandbox-action.h"

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock ttl [OPTIONS] ID SECONDS\n"
	      "\n"
	      "Sets when the sandbox is deleted: SECONDS from now (whole seconds, 1 to 86400),\n"
	      "sooner or later than before.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the new expiry time (RFC 3339, UTC); with --json, the sandbox object.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static void print_expiry(const json_t *sb)
{
	api_fput_escaped(stdout, api_str(sb, "expires_at", "-"));
	fputc('\n', stdout);
}

int cmd_ttl(int argc, char **argv)
{
	struct api api = { 0 };
	double seconds;
	json_t *body;
	int r;

	r = api_parse_common(&api, argc, argv, options, "ttl", usage);
	if (r != API_PARSE_GO)
		return r;
	if (argc - optind != 2)
		return api_failf("ttl: expected a sandbox id and a number of seconds (paddock ttl "
				 "ID SECONDS)");
	if (api_parse_seconds(argv[optind + 1], &seconds) < 0)
		return api_failf("ttl: expected a number of seconds such as '3600', got '%s'",
				 argv[optind + 1]);
	body = api_oom(json_object());
	api_set(body, "ttl_s", api_seconds_json(seconds));
	r = cli_sandbox_action(&api, argv[optind], "ttl", body, print_expiry);
	json_decref(body);
	return r;
}
