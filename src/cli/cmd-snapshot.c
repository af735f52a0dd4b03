/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock snapshot ID NAME` (POST .../snapshot) and `paddock fork ID` (POST .../fork): a
 * sandbox's writable layer as a named image of paddockd's store, and a new sandbox on it.
 */
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"
#include "sandbox-action.h"

enum { OPT_NAME = 0x400, OPT_TTL, OPT_WORKSPACE };

static const struct option snapshot_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "workspace", no_argument, NULL, OPT_WORKSPACE },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static const struct option fork_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "workspace", no_argument, NULL, OPT_WORKSPACE },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void snapshot_usage(FILE *f)
{
	fputs("usage: paddock snapshot [OPTIONS] ID NAME\n"
	      "\n"
	      "Pauses the sandbox, captures what its commands wrote to its root (not /home/user,\n"
	      "/tmp; /workspace with --workspace) as a new layer on its image, and resumes it.\n"
	      "NAME is an image reference ('work', 'work:2', 'team/work:1'); `paddock create\n"
	      "--image NAME` and `paddock run --image NAME` start sandboxes on it; `paddock\n"
	      "image ls|rm` list and remove it. The sandbox must have been made from an image.\n"
	      "\n"
	      "  --workspace          keep /workspace too\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: the image's name, id and size; with --json, the image object.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static void fork_usage(FILE *f)
{
	fputs("usage: paddock fork [OPTIONS] ID\n"
	      "\n"
	      "Snapshots the sandbox and creates a new one from the snapshot with the same spec:\n"
	      "an independent copy of its files (not of its processes; /workspace with\n"
	      "--workspace).\n"
	      "\n"
	      "  --name NAME          the snapshot's name (default: fork/ID:MILLISECONDS)\n"
	      "  --ttl SECONDS        the new sandbox's TTL (default: the parent's)\n"
	      "  --workspace          copy /workspace too\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: the new sandbox's id; with --json, the sandbox object (and its snapshot).\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static void print_image(const json_t *img)
{
	api_fput_escaped(stdout, api_str(img, "name", "-"));
	printf(" %s %" PRId64 "\n", api_str(img, "id", "-"),
	       (int64_t)json_integer_value(json_object_get(img, "size")));
}

static void print_id(const json_t *sb)
{
	api_fput_escaped(stdout, api_str(sb, "id", "-"));
	fputc('\n', stdout);
}

int cmd_snapshot(int argc, char **argv)
{
	struct api api = { 0 };
	bool workspace = false;
	json_t *body;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", snapshot_options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == OPT_WORKSPACE) {
			workspace = true;
		} else if (c == 'h') {
			snapshot_usage(stdout);
			return 0;
		} else {
			snapshot_usage(stderr);
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (argc - optind != 2)
		return api_failf("snapshot: expected a sandbox id and a name (paddock snapshot ID "
				 "NAME)");
	body = api_oom(json_object());
	api_set(body, "name", api_oom(json_string(argv[optind + 1])));
	if (workspace)
		api_set(body, "include_workspace", json_true());
	r = cli_sandbox_action(&api, argv[optind], "snapshot", body, print_image);
	json_decref(body);
	return r;
}

int cmd_fork(int argc, char **argv)
{
	struct api api = { 0 };
	const char *name = NULL;
	bool workspace = false;
	double ttl = -1;
	json_t *body;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", fork_options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		switch (c) {
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_WORKSPACE:
			workspace = true;
			break;
		case OPT_TTL:
			if (api_parse_seconds(optarg, &ttl) < 0)
				return api_failf(
					"fork: --ttl: expected a number of seconds such as "
					"'3600', got '%s'",
					optarg);
			break;
		case 'h':
			fork_usage(stdout);
			return 0;
		default:
			fork_usage(stderr);
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (argc - optind != 1)
		return api_failf("fork: expected a sandbox id (paddock fork ID)");
	body = api_oom(json_object());
	if (name)
		api_set(body, "name", api_oom(json_string(name)));
	if (ttl >= 0)
		api_set(body, "ttl_s", api_seconds_json(ttl));
	if (workspace)
		api_set(body, "include_workspace", json_true());
	r = cli_sandbox_action(&api, argv[optind], "fork", body, print_id);
	json_decref(body);
	return r;
}
