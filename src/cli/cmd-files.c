/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock files ls|stat|mkdir|mv|rm ID PATH...`: the file API of paddockd
 * (/v1/sandboxes/{id}/files/...). Paths are as the sandbox sees them; names come from the
 * sandbox and are escaped before they reach the terminal.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

enum {
	OPT_DEPTH = 0x100,
	OPT_MODE,
};

static const struct option options[] = {
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "parents", no_argument, NULL, 'p' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "force", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock files ls [--depth N] ID [PATH...]\n"
	      "       paddock files stat ID PATH...\n"
	      "       paddock files mkdir [-p] [--mode MODE] ID PATH...\n"
	      "       paddock files mv [-f] ID FROM TO\n"
	      "       paddock files rm [-r] ID PATH...\n"
	      "\n"
	      "Files in a sandbox; paths are as the sandbox sees them (absolute, or from /),\n"
	      "and symlinks resolve inside it.\n"
	      "\n"
	      "  --depth N            ls: how deep to go, 1 (default: the directory's entries)\n"
	      "                       to 16; PATH defaults to /workspace\n"
	      "  -p, --parents        mkdir: make missing parents too, no error if it exists\n"
	      "  --mode MODE          mkdir: octal permissions, e.g. 0700 (default 0755)\n"
	      "  -f, --force          mv: replace TO if it exists\n"
	      "  -r, --recursive      rm: remove a directory and all it holds\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: ls and stat print a header line, then one line per entry, columns\n"
	      "separated by two or more spaces:\n"
	      "  TYPE  MODE  UID  GID  SIZE  MTIME  PATH\n"
	      "TYPE is file, dir, symlink or other; a symlink's PATH is followed by\n"
	      "' -> TARGET'. mkdir, mv and rm print nothing. With --json, each answer as\n"
	      "paddockd sent it, one a line: ls {\"entries\":[...]}, stat, mkdir and mv an\n"
	      "entry, rm nothing.\n"
	      "Goes on after a failed PATH. Exit status: 0; 1 if paddockd refused any; 125 if\n"
	      "paddock failed.\n",
	      f);
}

static void print_header(void)
{
	printf("%-7s  %-4s  %6s  %6s  %12s  %-24s  %s\n", "TYPE", "MODE", "UID", "GID", "SIZE",
	       "MTIME", "PATH");
}

static void print_entry(const json_t *e)
{
	char *type = api_escape(api_str(e, "type", "-"));
	char *mode = api_escape(api_str(e, "mode", "-"));
	char *mtime = api_escape(api_str(e, "mtime", "-"));
	json_t *uid = json_object_get(e, "uid"), *gid = json_object_get(e, "gid");
	json_t *size = json_object_get(e, "size");
	const char *target = api_str(e, "symlink_target", NULL);

	printf("%-7s  %-4s  %6" JSON_INTEGER_FORMAT "  %6" JSON_INTEGER_FORMAT
	       "  %12" JSON_INTEGER_FORMAT "  %-24s  ",
	       type, mode, json_is_integer(uid) ? json_integer_value(uid) : -1,
	       json_is_integer(gid) ? json_integer_value(gid) : -1,
	       json_is_integer(size) ? json_integer_value(size) : -1, mtime);
	api_fput_escaped(stdout, api_str(e, "path", api_str(e, "name", "?")));
	if (target) {
		fputs(" -> ", stdout);
		api_fput_escaped(stdout, target);
	}
	fputc('\n', stdout);
	free(type);
	free(mode);
	free(mtime);
}

struct files_opts {
	struct api api;
	const char *depth, *mode;
	bool parents, recursive, force;
};

/* One call; --json prints its answer, else `show` (may be NULL) does. */
static int call(struct files_opts *o, const char *method, char *url, const json_t *body,
		void (*show)(const json_t *json))
{
	struct api_reply reply = { 0 };
	int r = api_call(&o->api, method, url, body, &reply);

	free(url);
	if (r != 0)
		return r;
	if (o->api.json && reply.len > 0)
		r = api_print_raw(&reply);
	else if (!o->api.json && show)
		show(reply.json);
	api_reply_release(&reply);
	return r;
}

static void show_list(const json_t *json)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(json, "entries"), i, e) print_entry(e);
}

static char *files_url(const char *id, const char *what, const char *path)
{
	char *url =
		what ? API_URL("sandboxes", id, "files", what) : API_URL("sandboxes", id, "files");

	if (path)
		api_url_query(&url, "path", path);
	return url;
}

static int files_one(struct files_opts *o, const char *sub, const char *id, const char *path)
{
	json_t *body;
	char *url;
	int r;

	if (!strcmp(sub, "ls")) {
		url = files_url(id, "list", path);
		if (o->depth)
			api_url_query(&url, "depth", o->depth);
		return call(o, "GET", url, NULL, show_list);
	}
	if (!strcmp(sub, "stat"))
		return call(o, "GET", files_url(id, "stat", path), NULL, print_entry);
	if (!strcmp(sub, "rm")) {
		url = files_url(id, NULL, path);
		if (o->recursive)
			api_url_query(&url, "recursive", "1");
		return call(o, "DELETE", url, NULL, NULL);
	}
	/* mkdir */
	body = api_oom(json_pack("{s:s,s:b}", "path", path, "parents", o->parents));
	if (o->mode)
		api_set(body, "mode", api_oom(json_string(o->mode)));
	r = call(o, "POST", files_url(id, "mkdir", NULL), body, NULL);
	json_decref(body);
	return r;
}

static bool valid_mode(const char *m)
{
	size_t n = strlen(m);

	return (n == 3 || n == 4) && strspn(m, "01234567") == n;
}

/* Returned by parse_options() when the command goes on; anything else is its exit status. */
#define GO_ON (-1)

static int parse_options(int argc, char **argv, const char *sub, struct files_opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "prfh", options, NULL)) != -1) {
		if (api_option(&o->api, c, optarg))
			continue;
		switch (c) {
		case OPT_DEPTH: {
			char *end;
			long d = strtol(optarg, &end, 10);
			if (strcmp(sub, "ls") || *end || d < 1 || d > 16 || optarg[0] == '+')
				return api_failf("--depth: expected 1 to 16 with 'files ls', got "
						 "'%s'",
						 optarg);
			o->depth = optarg;
			break;
		}
		case OPT_MODE:
			if (strcmp(sub, "mkdir") || !valid_mode(optarg))
				return api_failf("--mode: expected octal permissions such as "
						 "0755 with 'files mkdir', got '%s'",
						 optarg);
			o->mode = optarg;
			break;
		case 'p':
			o->parents = true;
			break;
		case 'r':
			o->recursive = true;
			break;
		case 'f':
			o->force = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "paddock: see 'paddock files --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if ((o->parents && strcmp(sub, "mkdir")) || (o->recursive && strcmp(sub, "rm")) ||
	    (o->force && strcmp(sub, "mv")))
		return api_failf("files %s: -p goes with mkdir, -r with rm, -f with mv", sub);
	return GO_ON;
}

static int files_mv(struct files_opts *o, const char *id, const char *const *paths, int n_paths)
{
	json_t *body;
	int r;

	if (n_paths != 2)
		return api_failf("files mv: expected FROM and TO after the sandbox id");
	body = api_oom(json_pack("{s:s,s:s,s:b}", "from", paths[0], "to", paths[1], "overwrite",
				 o->force));
	r = call(o, "POST", files_url(id, "move", NULL), body, NULL);
	json_decref(body);
	return r;
}

/* ls, stat, mkdir, rm: one call per path; a failure to reach paddockd stops the rest. */
static int files_each(struct files_opts *o, const char *sub, const char *id,
		      const char *const *paths, int n_paths)
{
	int status = 0;

	if (!o->api.json && (!strcmp(sub, "ls") || !strcmp(sub, "stat")))
		print_header();
	for (int i = 0; i < n_paths; i++) {
		int r = files_one(o, sub, id, paths[i]);
		fflush(stdout);
		if (r == PADDOCK_EXIT_FAILURE)
			return r;
		if (r != 0)
			status = r;
	}
	return status;
}

int cmd_files(int argc, char **argv)
{
	static const char *const subs[] = { "ls", "stat", "mkdir", "mv", "rm" };
	struct files_opts o = { 0 };
	const char *sub, *id, *ls_default[] = { "/workspace" };
	const char *const *paths;
	int n_paths, r;
	bool known = false;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? PADDOCK_EXIT_FAILURE : 0;
	}
	sub = argv[1];
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		known |= !strcmp(sub, subs[i]);
	if (!known)
		return api_failf("files: unknown command '%s' (ls, stat, mkdir, mv or rm)", sub);
	argc--;
	argv++;
	r = parse_options(argc, argv, sub, &o);
	if (r != GO_ON)
		return r;
	if (optind >= argc)
		return api_failf("files %s: expected a sandbox id (see 'paddock files --help')",
				 sub);
	id = argv[optind++];
	paths = (const char *const *)argv + optind;
	n_paths = argc - optind;
	if (!strcmp(sub, "mv"))
		return files_mv(&o, id, paths, n_paths);
	if (n_paths == 0 && !strcmp(sub, "ls")) {
		paths = ls_default;
		n_paths = 1;
	}
	if (n_paths == 0)
		return api_failf("files %s: expected a path after the sandbox id", sub);
	return files_each(&o, sub, id, paths, n_paths);
}
