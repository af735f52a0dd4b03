/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock create [OPTIONS]`: a sandbox in paddockd (POST /v1/sandboxes); prints its id.
 *
 * The spec flags are `paddock run`'s and mean the same: --spec FILE first, then each flag in
 * order, all checked here by libpaddock (paddock_spec_set) so a typo fails before anything
 * is sent, with the same message as `paddock run`. The request carries only the fields the
 * file or a flag named, written the way libpaddock writes them back; everything else is left
 * to paddockd's defaults. Relative host paths (--workspace, --rootfs, binds) are made
 * absolute against our working directory, since paddockd has its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"
#include "spec-flags.h"

enum {
	OPT_TTL = SPEC_OPT_END,
	OPT_IDLE_TIMEOUT,
	OPT_METADATA,
	OPT_TEMPLATE,
	OPT_PRINT_REQUEST,
};

static const struct option options[] = {
	SPEC_LONG_OPTIONS,
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "metadata", required_argument, NULL, OPT_METADATA },
	{ "template", required_argument, NULL, OPT_TEMPLATE },
	{ "print-request", no_argument, NULL, OPT_PRINT_REQUEST },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock create [OPTIONS]\n"
	      "\n"
	      "Creates a sandbox in paddockd and prints its id.\n"
	      "\n"
	      "  --ttl SECONDS        delete it this long after now (whole seconds, at most\n"
	      "                       86400; paddockd's default 1800; 'paddock ttl' changes it)\n"
	      "  --idle-timeout SECONDS\n"
	      "                       delete it after this long without use (default: never)\n"
	      "  --metadata KEY=VALUE a label, shown by 'paddock ls' (repeatable)\n"
	      "  --template NAME      start from a template of paddockd's ('paddock template');\n"
	      "                       the spec flags given override its sections\n"
	      "  --spec FILE          JSON spec (docs/spec.md), or a whole create request (the\n"
	      "                       spec plus ttl_s, idle_timeout_s, metadata); the other\n"
	      "                       flags override it\n"
	      "\n"
	      "the spec, as with 'paddock run' (docs/spec.md); paddockd's defaults otherwise:\n"
	      "  --workspace DIR      host directory at /workspace, read-write\n"
	      "  --bind SRC[:DST]     bind a host path read-write (DST defaults to SRC)\n"
	      "  --ro-bind SRC[:DST]  bind a host path read-only\n"
	      "  --env NAME=VALUE     set a variable of every command\n"
	      "  --cwd DIR            working directory of commands (default /workspace)\n"
	      "  --hostname NAME      hostname inside (default 'sandbox')\n"
	      "  --rootfs DIR         a directory tree to use as the read-only base\n"
	      "  --landlock MODE      auto (default) or required\n"
	      "  --timeout SECONDS    default timeout of each exec (86400)\n"
	      "  --memory SIZE        memory, no swap (1G)\n"
	      "  --pids N             processes and threads (512)\n"
	      "  --cpus N             CPU quota, e.g. 0.5 or 2 (2)\n"
	      "  --cpu-time SECONDS   CPU time of the whole sandbox (3600)\n"
	      "  --disk SIZE          the sandbox's own disk (1G); not its writable host binds\n"
	      "  --file-size SIZE     largest file a command may write (1G)\n"
	      "  --nofile N           open files per process (1024)\n"
	      "  --output-limit SIZE  captured stdout+stderr of one exec (16M)\n"
	      "  --require LIMITS     refuse to create unless these are enforced\n"
	      "  --net MODE           none (default), allowlist, open, or ask: an allowlist\n"
	      "                       whose unlisted hosts wait for an answer through the API\n"
	      "                       (docs/network.md)\n"
	      "  --ask-timeout S      how long such a connection waits for the answer (30)\n"
	      "  --allow RULE         allow a destination (implies --net allowlist)\n"
	      "  --deny RULE          refuse a destination; deny beats allow\n"
	      "  --no-transparent     only programs honouring HTTP(S)_PROXY get egress\n"
	      "  --secret NAME@HOST[,HOST...]\n"
	      "                       the sandbox gets a placeholder in $NAME; the proxy puts the\n"
	      "                       real value (this process's $NAME, or NAME=file:PATH@HOST)\n"
	      "                       into requests to HOST only (docs/secrets.md)\n"
	      "\n"
	      "  --print-request      print the request body (JSON); nothing is "
	      "sent\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: the new sandbox's id and a newline; with --json, the sandbox object.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static int spec_error(const paddock_error *err)
{
	char buf[sizeof(err->msg) + 128];

	fputs("paddock: ", stderr);
	if (err->field[0])
		fprintf(stderr, "%s: ", err->field);
	/* bad input: the message says it all */
	api_fput_escaped(stderr, err->field[0] && err->code == EINVAL
					 ? err->msg
					 : paddock_error_format(err, buf, sizeof(buf)));
	fputc('\n', stderr);
	return PADDOCK_EXIT_FAILURE;
}

/* The request's own members, which a spec does not have. */
static const char *const request_keys[] = { "ttl_s", "idle_timeout_s", "metadata", "template" };

/*
 * Loads --spec FILE into `spec` and returns it parsed, without the request's own members,
 * which go into `req`. NULL (printed) on failure.
 */
static json_t *load_spec_file(paddock_spec *spec, const char *path, json_t *req)
{
	paddock_error err = { 0 };
	json_t *doc, *rest;
	char *text, *dumped = NULL;
	size_t len;
	bool stripped = false;
	int r;

	if (spec_file_read(path, &text, &len, &err) < 0) {
		spec_error(&err);
		return NULL;
	}
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	rest = json_is_object(doc) ? doc : NULL;
	for (size_t i = 0; rest && i < sizeof(request_keys) / sizeof(request_keys[0]); i++) {
		json_t *v = json_object_get(rest, request_keys[i]);
		if (!v)
			continue;
		api_set(req, request_keys[i], json_incref(v));
		(void)json_object_del(rest, request_keys[i]);
		stripped = true;
	}
	/* libpaddock checks the file (its messages give line and column of the file itself) */
	if (stripped)
		dumped = api_oom(json_dumps(rest, JSON_COMPACT));
	r = paddock_spec_load_json(spec, dumped ? dumped : text, dumped ? strlen(dumped) : len,
				   &err);
	free(dumped);
	free(text);
	if (r < 0) {
		char msg[sizeof(err.msg)];
		memcpy(msg, err.msg, sizeof(msg));
		snprintf(err.msg, sizeof(err.msg), "spec '%.100s': %.250s", path, msg);
		spec_error(&err);
		json_decref(doc);
		return NULL;
	}
	return rest ? rest : api_oom(json_object());
}

/* req[a][b] = full[a][b] for the field "a.b" (or req[a] = full[a] for "a"). */
static void copy_field(json_t *req, const json_t *full, const char *field)
{
	const char *dot = strchr(field, '.');
	char section[32];
	json_t *v, *sec;

	if (!dot) {
		v = json_object_get(full, field);
		if (v)
			api_set(req, field, json_deep_copy(v));
		return;
	}
	snprintf(section, sizeof(section), "%.*s", (int)(dot - field), field);
	v = json_object_get(json_object_get(full, section), dot + 1);
	if (!v)
		return;
	sec = json_object_get(req, section);
	if (!sec) {
		sec = api_oom(json_object());
		api_set(req, section, sec); /* still borrowed through req */
	}
	api_set(sec, dot + 1, json_deep_copy(v));
}

static bool is_section(const char *key)
{
	return !strcmp(key, "limits") || !strcmp(key, "security") || !strcmp(key, "network");
}

/*
 * A secret's source names this client's environment or a file it can read, not paddockd's:
 * the value is read here and sent as a write-only "value" (docs/secrets.md). Only when the
 * request is sent, so --print-request never shows a value.
 */
static int read_secret_values(json_t *req, const json_t *file)
{
	json_t *list = json_object_get(req, "secrets"), *sec, *fsec;
	size_t i, j;

	json_array_foreach(list, i, sec)
	{
		const char *src = json_string_value(json_object_get(sec, "source"));
		const char *name = json_string_value(json_object_get(sec, "name"));
		char *val = NULL;
		size_t n = 0;

		if (src && !strcmp(src, "value")) {
			/* given in the --spec file: the spec library never writes a value back */
			json_array_foreach(
				json_object_get(file, "secrets"), j,
				fsec) if (name && json_is_string(json_object_get(fsec, "value")) &&
					  !strcmp(name,
						  json_string_value(json_object_get(fsec, "name"))
							  ?: ""))
			{
				json_object_del(sec, "source");
				json_object_set(sec, "value", json_object_get(fsec, "value"));
			}
			continue;
		}
		if (!src)
			continue;
		if (!strncmp(src, "env:", 4)) {
			const char *v = getenv(src + 4);

			if (!v || !*v)
				return api_failf("secret %s: $%s is not set in this environment",
						 name ? name : "?", src + 4);
			val = strdup(v);
			n = val ? strlen(val) : 0;
		} else if (!strncmp(src, "file:", 5)) {
			FILE *f = fopen(src + 5, "re");

			val = malloc(8193);
			if (f && val)
				n = fread(val, 1, 8193, f);
			if (f)
				fclose(f);
			if (!f || !val || n == 0 || n > 8192) {
				free(val);
				return api_failf("secret %s: cannot read %s (1 to 8192 bytes)",
						 name ? name : "?", src + 5);
			}
			while (n > 0 && (val[n - 1] == '\n' || val[n - 1] == '\r'))
				n--;
			val[n] = '\0';
		}
		if (!val)
			return api_failf("out of memory");
		json_object_del(sec, "source");
		json_object_set_new(sec, "value", json_stringn(val, n));
		explicit_bzero(val, n);
		free(val);
	}
	return 0;
}

/* The request: the fields the file or a flag named, as libpaddock writes them back. */
static json_t *build_request(const paddock_spec *spec, const json_t *file, const char **touched,
			     size_t n_touched, json_t *req)
{
	paddock_error err = { 0 };
	const char *key;
	json_t *full, *v;
	char *text = NULL;

	if (paddock_spec_to_json(spec, &text, &err) < 0) {
		spec_error(&err);
		return NULL;
	}
	full = api_oom(json_loads(text, 0, NULL));
	free(text);
	json_object_foreach((json_t *)file, key, v)
	{
		if (is_section(key) && json_is_object(v)) {
			const char *sub;
			json_t *sv;
			json_object_foreach(v, sub, sv)
			{
				char field[128];
				(void)sv;
				snprintf(field, sizeof(field), "%s.%s", key, sub);
				copy_field(req, full, field);
			}
		} else {
			copy_field(req, full, key);
		}
	}
	for (size_t i = 0; i < n_touched; i++)
		copy_field(req, full, touched[i]);
	json_decref(full);
	return req;
}

static int set_seconds(json_t *req, const char *key, const char *flag, const char *value)
{
	double s;

	if (api_parse_seconds(value, &s) < 0)
		return api_failf("%s: expected a number of seconds such as '600', got '%s'", flag,
				 value);
	api_set(req, key, api_seconds_json(s));
	return 0;
}

static int add_metadata(json_t *req, const char *kv)
{
	const char *eq = strchr(kv, '=');
	json_t *md = json_object_get(req, "metadata");
	char *key;

	if (!eq || eq == kv)
		return api_failf("--metadata: expected KEY=VALUE, got '%s'", kv);
	if (!json_is_object(md)) {
		md = api_oom(json_object());
		api_set(req, "metadata", md);
	}
	key = api_oom(strndup(kv, (size_t)(eq - kv)));
	api_set(md, key, api_oom(json_string(eq + 1)));
	free(key);
	return 0;
}

/* How parsing the command line ended, when it did not end in a request to send. */
enum parse_outcome {
	PARSE_OK,
	PARSE_FAILED, /* the message is printed */
	PARSE_HELP,   /* usage is printed: exit 0 */
};

/* pass 1: the spec file, so the flags in pass 2 override it whatever their order */
static bool load_spec_files(int argc, char **argv, paddock_spec *spec, json_t *req, json_t **file)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1)
		if (c == SPEC_OPT_SPEC) {
			json_decref(*file);
			*file = load_spec_file(spec, optarg, req);
			if (!*file)
				return false;
		}
	return true;
}

/* One of create's own flags (pass 2), after spec_flag_apply() left it alone. */
static enum parse_outcome apply_create_flag(struct api *api, json_t *req, int c,
					    bool *print_request)
{
	if (api_option(api, c, optarg)) {
		return PARSE_OK;
	} else if (c == OPT_TTL || c == OPT_IDLE_TIMEOUT) {
		if (set_seconds(req, c == OPT_TTL ? "ttl_s" : "idle_timeout_s",
				c == OPT_TTL ? "--ttl" : "--idle-timeout", optarg) != 0)
			return PARSE_FAILED;
		return PARSE_OK;
	} else if (c == OPT_METADATA) {
		if (add_metadata(req, optarg) != 0)
			return PARSE_FAILED;
		return PARSE_OK;
	} else if (c == OPT_TEMPLATE) {
		api_set(req, "template", api_oom(json_string(optarg)));
		return PARSE_OK;
	} else if (c == OPT_PRINT_REQUEST) {
		*print_request = true;
		return PARSE_OK;
	} else if (c == 'h') {
		usage(stdout);
		return PARSE_HELP;
	} else {
		fprintf(stderr, "paddock: see 'paddock create --help'\n");
		return PARSE_FAILED;
	}
}

/*
 * pass 2: the flags. A spec flag sets its field in `spec` and is listed in `touched`, so
 * that the request carries it even where it equals the default.
 */
static enum parse_outcome apply_flags(int argc, char **argv, paddock_spec *spec, struct api *api,
				      json_t *req, const char **touched, size_t *n_touched,
				      bool *print_request)
{
	paddock_error err = { 0 };
	int c, r;

	optind = 0;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		const char *field = NULL;
		enum parse_outcome o;

		r = spec_flag_apply(spec, c, optarg, &field, &err);
		if (r < 0) {
			spec_error(&err);
			return PARSE_FAILED;
		}
		if (r > 0) {
			if (field)
				touched[(*n_touched)++] = field;
			if (c == SPEC_OPT_NET) /* --net ask asks; any other mode does not */
				touched[(*n_touched)++] = "network.unlisted";
			continue;
		}
		o = apply_create_flag(api, req, c, print_request);
		if (o != PARSE_OK)
			return o;
	}
	return PARSE_OK;
}

/* POSTs the request and prints the new sandbox's id (or, with --json, paddockd's answer). */
static int post_sandbox(struct api *api, json_t *req)
{
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes");
	int status;

	status = api_call(api, "POST", url, req, &reply);
	free(url);
	if (status != 0)
		goto out;
	if (api->json) {
		status = api_print_raw(&reply);
	} else {
		const char *id = api_str(reply.json, "id", NULL);
		if (!id)
			status = api_failf("paddockd's answer has no sandbox id");
		else
			api_fput_escaped(stdout, id), fputc('\n', stdout);
	}
out:
	api_reply_release(&reply);
	return status;
}

int cmd_create(int argc, char **argv)
{
	struct api api = { 0 };
	paddock_error err = { 0 };
	paddock_spec *spec = NULL;
	json_t *req = api_oom(json_object()), *file = NULL;
	/* a flag names one field, --net two (network.mode and network.unlisted) */
	const char **touched = api_oom(calloc(2 * (size_t)argc + 1, sizeof(*touched)));
	size_t n_touched = 0;
	bool print_request = false;
	int status = PADDOCK_EXIT_FAILURE;

	if (paddock_spec_new(&spec, &err) < 0) {
		spec_error(&err);
		goto out;
	}
	if (!load_spec_files(argc, argv, spec, req, &file))
		goto out;
	switch (apply_flags(argc, argv, spec, &api, req, touched, &n_touched, &print_request)) {
	case PARSE_OK:
		break;
	case PARSE_FAILED:
		goto out;
	case PARSE_HELP:
		status = 0;
		goto out;
	}
	if (optind < argc) {
		api_failf("create: unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (paddock_spec_validate(spec, &err) < 0) {
		spec_error(&err);
		goto out;
	}
	if (!file)
		file = api_oom(json_object());
	if (!build_request(spec, file, touched, n_touched, req))
		goto out;
	if (print_request) {
		status = api_print_pretty(req);
		goto out;
	}
	status = read_secret_values(req, file);
	if (status == 0)
		status = post_sandbox(&api, req);
out:
	json_decref(file);
	json_decref(req);
	free(touched);
	paddock_spec_free(spec);
	return status;
}
