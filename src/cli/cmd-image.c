/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock image pull|import|ls|inspect|rm`: the image store (docs/images.md), through
 * libpaddock's image API. The store is root's as root, the user's own rootless; --store
 * DIR or $PADDOCK_IMAGE_STORE names another.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "paddock/image.h"
#include "paddock/paddock.h"
#include "cli.h"

enum {
	OPT_STORE = 0x100,
	OPT_JSON,
	OPT_NAME,
	OPT_CREDS,
	OPT_PLAIN_HTTP,
	OPT_TLS_NO_VERIFY,
	OPT_CA,
	OPT_PLATFORM,
};

static const struct option options[] = {
	{ "store", required_argument, NULL, OPT_STORE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "creds", required_argument, NULL, OPT_CREDS },
	{ "plain-http", no_argument, NULL, OPT_PLAIN_HTTP },
	{ "tls-no-verify", no_argument, NULL, OPT_TLS_NO_VERIFY },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "platform", required_argument, NULL, OPT_PLATFORM },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock image COMMAND [OPTIONS] [ARG...]\n"
	      "\n"
	      "The image store: layers unpacked once, shared read-only by every sandbox made\n"
	      "from them (paddock run --image REF; docs/images.md).\n"
	      "\n"
	      "  pull REF             fetch an image from its registry (OCI distribution API)\n"
	      "  import FILE|DIR      an OCI image layout (or its tar: oci-archive) or a docker\n"
	      "                       archive (docker save, podman save)\n"
	      "  ls                   the images in the store\n"
	      "  inspect REF          one image: names, id, layers, config\n"
	      "  rm REF...            remove images (and the layers nothing else uses)\n"
	      "\n"
	      "REF is a name (debian:12, 127.0.0.1:5000/tools/base:1, docker.io/library/\n"
	      "alpine@sha256:...), an image id (sha256:...) or 12 or more hex digits of one.\n"
	      "\n"
	      "  --store DIR          the store (default: $PADDOCK_IMAGE_STORE, else\n"
	      "                       /var/lib/paddock/images as root, else\n"
	      "                       $XDG_DATA_HOME/paddock/images or ~/.local/share/...)\n"
	      "  --json               ls, inspect, pull, import: print JSON\n"
	      "  -q, --quiet          ls: ids only; pull, import: print nothing\n"
	      "  --name NAME          import: the name to give the image\n"
	      "  --creds USER:PASS    pull: credentials for the registry (basic or token auth)\n"
	      "  --plain-http         pull: http:// (a loopback registry always is)\n"
	      "  --tls-no-verify      pull: do not verify the registry's certificate\n"
	      "  --ca FILE            pull: also trust this CA certificate (PEM)\n"
	      "  --platform OS/ARCH   pull: another platform than this machine's\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "Exit status: 0; 1 if an image is missing or refused; 125 if paddock failed.\n",
	      f);
}

int cli_image_store_dir(const char *given, char *buf, size_t size, paddock_error *err)
{
	const char *env = getenv("PADDOCK_IMAGE_STORE");

	if (given || (env && env[0])) {
		snprintf(buf, size, "%s", given ? given : env);
		return 0;
	}
	return paddock_image_store_default_dir(buf, size, err);
}

static int fail(const paddock_error *err)
{
	char buf[sizeof(err->msg) + 128];

	if (err->field[0] && err->code == EINVAL)
		fprintf(stderr, "paddock: %s: %s\n", err->field, err->msg);
	else
		fprintf(stderr, "paddock: %s\n", paddock_error_format(err, buf, sizeof(buf)));
	return err->code == ENOENT || err->code == EBUSY || err->code == EBADMSG ||
			       err->code == EINVAL || err->code == EACCES || err->code == EPERM
		       ? 1
		       : PADDOCK_EXIT_FAILURE;
}

static const char *human_size(uint64_t n, char *buf, size_t size)
{
	static const char units[] = "BKMGT";
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%" PRIu64 "B", n);
	else
		snprintf(buf, size, "%.1f%c", v, units[u]);
	return buf;
}

static void print_summary(const char *verb, const char *json)
{
	json_t *rec = json_loads(json, 0, NULL);
	json_t *names = json_object_get(rec, "names");
	const char *id = json_string_value(json_object_get(rec, "id"));

	printf("%s %s", verb,
	       json_array_size(names) ? json_string_value(json_array_get(names, 0)) : "(no name)");
	printf(" (%s, %zu layers)\n", id ? id : "?",
	       json_array_size(json_object_get(rec, "layers")));
	json_decref(rec);
}

static int list(paddock_image_store *s, bool json, bool quiet)
{
	paddock_error err = { 0 };
	char *text = NULL;
	json_t *all, *rec;
	size_t i;

	if (paddock_image_list(s, &text, &err) < 0)
		return fail(&err);
	if (json) {
		printf("%s\n", text);
		free(text);
		return 0;
	}
	all = json_loads(text, 0, NULL);
	free(text);
	if (!quiet)
		printf("%-48s  %-12s  %8s  %s\n", "NAME", "ID", "SIZE", "ADDED");
	json_array_foreach(all, i, rec)
	{
		const char *id = json_string_value(json_object_get(rec, "id"));
		json_t *names = json_object_get(rec, "names");
		char sz[32];
		size_t k;
		json_t *n;

		if (!id || strlen(id) < 19)
			continue;
		if (quiet) {
			printf("%s\n", id);
			continue;
		}
		human_size((uint64_t)json_integer_value(json_object_get(rec, "size")), sz,
			   sizeof(sz));
		if (json_array_size(names) == 0)
			printf("%-48s  %.12s  %8s  %s\n", "-", id + 7, sz,
			       json_string_value(json_object_get(rec, "added")) ?: "-");
		json_array_foreach(names, k, n)
			printf("%-48s  %.12s  %8s  %s\n", json_string_value(n) ?: "?", id + 7, sz,
			       json_string_value(json_object_get(rec, "added")) ?: "-");
	}
	json_decref(all);
	return 0;
}

static void print_strv(const char *label, json_t *v)
{
	size_t i;
	json_t *s;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return;
	printf("%-12s", label);
	json_array_foreach(v, i, s) printf(" %s", json_string_value(s) ?: "?");
	printf("\n");
}

static int inspect(paddock_image_store *s, const char *ref, bool json)
{
	paddock_error err = { 0 };
	char *text = NULL, sz[32];
	json_t *rec, *cfg, *v;
	size_t i;

	if (paddock_image_inspect(s, ref, &text, &err) < 0)
		return fail(&err);
	if (json) {
		printf("%s\n", text);
		free(text);
		return 0;
	}
	rec = json_loads(text, 0, NULL);
	free(text);
	cfg = json_object_get(rec, "config");
	printf("%-12s %s\n", "id", json_string_value(json_object_get(rec, "id")) ?: "?");
	json_array_foreach(json_object_get(rec, "names"), i, v)
		printf("%-12s %s\n", "name", json_string_value(v) ?: "?");
	if (json_is_string(json_object_get(rec, "manifest")))
		printf("%-12s %s\n", "manifest",
		       json_string_value(json_object_get(rec, "manifest")));
	printf("%-12s %s/%s\n", "platform", json_string_value(json_object_get(rec, "os")) ?: "?",
	       json_string_value(json_object_get(rec, "architecture")) ?: "?");
	printf("%-12s %s\n", "size",
	       human_size((uint64_t)json_integer_value(json_object_get(rec, "size")), sz,
			  sizeof(sz)));
	json_array_foreach(json_object_get(rec, "layers"), i, v)
		printf("%-12s %s\n", "layer", json_string_value(v) ?: "?");
	print_strv("entrypoint", json_object_get(cfg, "Entrypoint"));
	print_strv("cmd", json_object_get(cfg, "Cmd"));
	if (json_is_string(json_object_get(cfg, "WorkingDir")))
		printf("%-12s %s\n", "workdir",
		       json_string_value(json_object_get(cfg, "WorkingDir")));
	if (json_is_string(json_object_get(cfg, "User")))
		printf("%-12s %s\n", "user", json_string_value(json_object_get(cfg, "User")));
	json_array_foreach(json_object_get(cfg, "Env"), i, v)
		printf("%-12s %s\n", "env", json_string_value(v) ?: "?");
	json_decref(rec);
	return 0;
}

int cmd_image(int argc, char **argv)
{
	struct paddock_pull_opts pull = { 0 };
	paddock_image_store *s = NULL;
	paddock_error err = { 0 };
	const char *store = NULL, *name = NULL, *verb;
	char dir[4096];
	bool json = false, quiet = false;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "qh", options, NULL)) != -1) {
		switch (c) {
		case OPT_STORE:
			store = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_NAME:
			name = optarg;
			break;
		case OPT_CREDS:
			pull.creds = optarg;
			break;
		case OPT_PLAIN_HTTP:
			pull.plain_http = true;
			break;
		case OPT_TLS_NO_VERIFY:
			pull.tls_no_verify = true;
			break;
		case OPT_CA:
			pull.ca_file = optarg;
			break;
		case OPT_PLATFORM:
			pull.platform = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "paddock: see 'paddock image --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return PADDOCK_EXIT_FAILURE;
	}
	verb = argv[optind++];
	if (cli_image_store_dir(store, dir, sizeof(dir), &err) < 0 ||
	    paddock_image_store_open(dir, &s, &err) < 0)
		return fail(&err);
	if (!strcmp(verb, "ls") || !strcmp(verb, "list")) {
		status = list(s, json, quiet);
	} else if (!strcmp(verb, "inspect") && optind + 1 == argc) {
		status = inspect(s, argv[optind], json);
	} else if (!strcmp(verb, "rm") && optind < argc) {
		for (int i = optind; i < argc; i++) {
			if (paddock_image_remove(s, argv[i], &err) < 0)
				status = fail(&err);
			else if (!quiet)
				printf("removed %s\n", argv[i]);
		}
	} else if ((!strcmp(verb, "pull") || !strcmp(verb, "import")) && optind + 1 == argc) {
		char *text = NULL;
		int r = !strcmp(verb, "pull")
				? paddock_image_pull(s, argv[optind], &pull, &text, &err)
				: paddock_image_import(s, argv[optind], name, &text, &err);

		if (r < 0) {
			status = fail(&err);
		} else if (json) {
			printf("%s\n", text);
		} else if (!quiet) {
			print_summary(!strcmp(verb, "pull") ? "pulled" : "imported", text);
		}
		free(text);
	} else {
		fprintf(stderr,
			"paddock: image: expected pull REF, import FILE, ls, inspect REF or "
			"rm REF... (see 'paddock image --help')\n");
		status = PADDOCK_EXIT_FAILURE;
	}
	paddock_image_store_free(s);
	return status;
}
