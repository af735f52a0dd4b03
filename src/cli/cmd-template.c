/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock template ls|show|put|rm`: paddockd's templates, named specs a create starts from
 * (`paddock create --template NAME`, E2B's Sandbox.create('NAME'); docs/api.md, "Templates").
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

static void usage(FILE *f)
{
	fputs("usage: paddock template [OPTIONS] ls\n"
	      "       paddock template [OPTIONS] show NAME\n"
	      "       paddock template [OPTIONS] put NAME FILE\n"
	      "       paddock template [OPTIONS] rm NAME\n"
	      "\n"
	      "paddockd's templates: named specs that 'paddock create --template NAME' and E2B's\n"
	      "Sandbox.create('NAME') start from. put makes or replaces NAME with the JSON spec\n"
	      "in FILE ('-': standard input; docs/spec.md). Yours, and those the operator made on\n"
	      "the unix socket, are listed; yours win on a name both have.\n"
	      "\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: ls, a table (NAME OWNER CREATED); show, the spec as JSON; with --json,\n"
	      "paddockd's answer.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static json_t *read_spec(const char *path)
{
	json_error_t jerr;
	json_t *spec = strcmp(path, "-") == 0 ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
					      : json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);

	if (!spec)
		api_failf("template put: %s: %s (line %d)", path, jerr.text, jerr.line);
	else if (!json_is_object(spec)) {
		api_failf("template put: %s: expected a JSON object (a spec, docs/spec.md)", path);
		json_decref(spec);
		spec = NULL;
	}
	return spec;
}

static int list(struct api *api, struct api_reply *reply)
{
	char *url = API_URL("templates");
	size_t i;
	json_t *t;
	int r = api_call(api, "GET", url, NULL, reply);

	free(url);
	if (r != 0 || api->json)
		return r != 0 ? r : api_print_raw(reply);
	printf("%-24s %-9s %s\n", "NAME", "OWNER", "CREATED");
	json_array_foreach(json_object_get(reply->json, "templates"), i, t) {
		api_fput_escaped(stdout, api_str(t, "name", "-"));
		printf(" %s %lld\n", api_str(t, "owner", "-"),
		       (long long)json_integer_value(json_object_get(t, "created_at")));
	}
	return 0;
}

int cmd_template(int argc, char **argv)
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	const char *verb, *name;
	json_t *body = NULL;
	char *url;
	int r;

	r = api_parse_common(&api, argc, argv, options, "template", usage);
	if (r != API_PARSE_GO)
		return r;
	if (optind >= argc)
		return api_failf("template: expected ls, show, put or rm (paddock template --help)");
	verb = argv[optind];
	name = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (strcmp(verb, "ls") == 0 && argc - optind == 1) {
		r = list(&api, &reply);
		api_reply_release(&reply);
		return r;
	}
	if ((strcmp(verb, "show") == 0 || strcmp(verb, "rm") == 0) && argc - optind == 2) {
		url = API_URL("templates", name);
		r = api_call(&api, verb[0] == 's' ? "GET" : "DELETE", url, NULL, &reply);
		free(url);
		if (r == 0 && verb[0] == 's')
			r = api.json ? api_print_raw(&reply)
				     : api_print_pretty(json_object_get(reply.json, "spec"));
		api_reply_release(&reply);
		return r;
	}
	if (strcmp(verb, "put") == 0 && argc - optind == 3) {
		json_t *spec = read_spec(argv[optind + 2]);

		if (!spec)
			return PADDOCK_EXIT_FAILURE;
		body = api_oom(json_object());
		api_set(body, "spec", spec);
		url = API_URL("templates", name);
		r = api_call(&api, "PUT", url, body, &reply);
		free(url);
		json_decref(body);
		if (r == 0 && api.json)
			r = api_print_raw(&reply);
		api_reply_release(&reply);
		return r;
	}
	return api_failf("template: expected 'ls', 'show NAME', 'put NAME FILE' or 'rm NAME', "
			 "got '%s' with %d argument(s)",
			 verb, argc - optind - 1);
}
