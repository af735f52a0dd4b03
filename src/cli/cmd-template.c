/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock template ls|show|put|rm`: paddockd's templates, named specs a create starts from
 * (`paddock create --template NAME`, E2B's Sandbox.create('NAME'); docs/api.md, "Templates").
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

enum { OPT_SETUP = 0x400 };

static const struct option options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "setup", required_argument, NULL, OPT_SETUP },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

#define SETUP_MAX 32

static void usage(FILE *f)
{
	fputs("usage: paddock template [OPTIONS] ls\n"
	      "       paddock template [OPTIONS] show NAME\n"
	      "       paddock template [OPTIONS] put NAME FILE\n"
	      "       paddock template [OPTIONS] rm NAME\n"
	      "       paddock template [OPTIONS] build NAME FILE --setup CMD [--setup CMD]...\n"
	      "\n"
	      "paddockd's templates: named specs that 'paddock create --template NAME' and E2B's\n"
	      "Sandbox.create('NAME') start from. put makes or replaces NAME with the JSON spec\n"
	      "in FILE ('-': standard input; docs/spec.md). Yours, and those the operator made on\n"
	      "the unix socket, are listed; yours win on a name both have.\n"
	      "\n"
	      "build makes NAME an image of its own: a sandbox of FILE's spec (which names an\n"
	      "image) runs each --setup CMD (/bin/sh -c) in order, its files are snapshotted as\n"
	      "the image templates/NAME:SECONDS, and NAME becomes FILE's spec on that image. A\n"
	      "command that fails stops it (its output is shown); the sandbox is removed either\n"
	      "way (exit 1). Snapshots are the operator's: on paddockd's unix socket only.\n"
	      "\n"
	      "  --setup CMD          a build command, in order (repeatable, at most "
	      "32)\n" API_OPTIONS_HELP "  -h, --help           this text\n"
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
	json_array_foreach(json_object_get(reply->json, "templates"), i, t)
	{
		api_fput_escaped(stdout, api_str(t, "name", "-"));
		printf(" %s %lld\n", api_str(t, "owner", "-"),
		       (long long)json_integer_value(json_object_get(t, "created_at")));
	}
	return 0;
}

/* The last `max` bytes of a string, for showing a failed command's output. */
static const char *tail_of(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	return n > max ? s + n - max : (s ? s : "");
}

/*
 * build: create a sandbox of `spec`, run the setup commands, snapshot it, store the template
 * on the snapshot. The sandbox goes whatever happens.
 */
static int build(struct api *api, const char *name, json_t *spec, char **setup, size_t n_setup)
{
	struct api_reply reply = { 0 };
	json_t *req = json_deep_copy(spec);
	char *url, ref[200] = "", id[64] = "";
	int r;

	if (!json_is_string(json_object_get(spec, "image"))) {
		json_decref(req);
		return api_failf("template build: the spec must name an image (a snapshot is a "
				 "layer on an image: docs/images.md)");
	}
	/* the builder's own labels and bounds: an hour, and marked as what it is */
	api_set(req, "ttl_s", api_oom(json_integer(3600)));
	api_set(req, "metadata", api_oom(json_pack("{s:s}", "paddock.template-build", name)));
	url = API_URL("sandboxes");
	r = api_call(api, "POST", url, req, &reply);
	free(url);
	json_decref(req);
	if (r != 0)
		return r;
	snprintf(id, sizeof(id), "%s", api_str(reply.json, "id", ""));
	api_reply_release(&reply);
	fprintf(stderr, "paddock: template %s: building in %s\n", name, id);
	for (size_t i = 0; r == 0 && i < n_setup; i++) {
		json_t *body = api_oom(json_pack("{s:s}", "cmd", setup[i]));
		json_t *res;
		int status;

		url = API_URL("sandboxes", id, "exec");
		r = api_call(api, "POST", url, body, &reply);
		free(url);
		json_decref(body);
		if (r != 0)
			break;
		res = json_object_get(reply.json, "result");
		status = (int)json_integer_value(json_object_get(res, "exit_status"));
		if (!json_is_object(res) || status != 0) {
			fprintf(stderr, "%s", tail_of(api_str(reply.json, "stdout", ""), 2000));
			fprintf(stderr, "%s", tail_of(api_str(reply.json, "stderr", ""), 2000));
			fprintf(stderr,
				"paddock: template build: --setup %zu ('%s') ended with "
				"status %d (%s): nothing was stored\n",
				i + 1, setup[i], status, api_str(res, "reason", "no report"));
			r = API_EXIT_REFUSED; /* the build failed, as a refusal does: 1 */
		}
		api_reply_release(&reply);
	}
	if (r == 0) {
		json_t *body;

		snprintf(ref, sizeof(ref), "templates/%s:%lld", name, (long long)time(NULL));
		body = api_oom(json_pack("{s:s}", "name", ref));
		url = API_URL("sandboxes", id, "snapshot");
		r = api_call(api, "POST", url, body, &reply);
		free(url);
		json_decref(body);
		if (r == 0)
			fprintf(stderr, "paddock: template %s: image %s (%s), layer %lld bytes\n",
				name, ref, api_str(reply.json, "id", "?"),
				(long long)json_integer_value(
					json_object_get(reply.json, "layer_size")));
		api_reply_release(&reply);
	}
	if (r == 0) {
		json_t *body = api_oom(json_pack("{s:O}", "spec", spec));

		/* by name, so that `paddock image ls` says what it is */
		api_set(json_object_get(body, "spec"), "image", api_oom(json_string(ref)));
		url = API_URL("templates", name);
		r = api_call(api, "PUT", url, body, &reply);
		free(url);
		json_decref(body);
		if (r == 0 && api->json)
			r = api_print_raw(&reply);
		else if (r == 0)
			printf("%s\n", name);
		api_reply_release(&reply);
	}
	url = API_URL("sandboxes", id);
	(void)api_call(api, "DELETE", url, NULL, &reply);
	free(url);
	api_reply_release(&reply);
	return r;
}

int cmd_template(int argc, char **argv)
{
	struct api api = { 0 };
	struct api_reply reply = { 0 };
	const char *verb, *name;
	json_t *body = NULL;
	char *url, *setup[SETUP_MAX];
	size_t n_setup = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == OPT_SETUP && n_setup < SETUP_MAX) {
			setup[n_setup++] = optarg;
			continue;
		}
		if (c == OPT_SETUP)
			return api_failf("template build: at most %d --setup commands", SETUP_MAX);
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "paddock: see 'paddock template --help'\n");
		return PADDOCK_EXIT_FAILURE;
	}
	if (optind >= argc)
		return api_failf(
			"template: expected ls, show, put or rm (paddock template --help)");
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
	if (n_setup && strcmp(verb, "build") != 0)
		return api_failf("template: --setup is for 'template build'");
	if (strcmp(verb, "build") == 0 && argc - optind == 3) {
		json_t *spec = read_spec(argv[optind + 2]);

		if (!spec)
			return PADDOCK_EXIT_FAILURE;
		if (n_setup == 0) {
			json_decref(spec);
			return api_failf(
				"template build: expected at least one --setup CMD (without, "
				"'template put' stores the spec as it is)");
		}
		r = build(&api, name, spec, setup, n_setup);
		json_decref(spec);
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
	return api_failf("template: expected 'ls', 'show NAME', 'put NAME FILE', 'rm NAME' or "
			 "'build NAME FILE --setup CMD...', got '%s' with %d argument(s)",
			 verb, argc - optind - 1);
}
