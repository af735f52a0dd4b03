/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock code`: the code interpreter of a sandbox in paddockd (docs/code.md), through
 * /v1/sandboxes/{id}/code/...: run code in a context that keeps its state, and manage the
 * contexts. A run's answer streams: stdout and stderr are written as they come, results
 * after; pictures are saved with --images DIR. Everything printed comes from the sandbox and
 * is escaped for the terminal, but for stdout and stderr themselves (as `paddock exec`).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

#define CODE_MAX      (4u << 20) /* the code of one run */
#define CODE_LINE_MAX (64u << 20)

enum { OPT_IMAGES = 0x400, OPT_CWD };

static const struct option options[] = {
	{ "language", required_argument, NULL, 'l' },
	{ "context", required_argument, NULL, 'c' },
	{ "env", required_argument, NULL, 'e' },
	{ "images", required_argument, NULL, OPT_IMAGES },
	{ "cwd", required_argument, NULL, OPT_CWD },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock code [OPTIONS] ID CODE|-      run code (- reads it from stdin)\n"
	      "       paddock code contexts [OPTIONS] ID\n"
	      "       paddock code new-context [--language L] [--cwd DIR] [OPTIONS] ID\n"
	      "       paddock code restart [OPTIONS] ID CONTEXT\n"
	      "       paddock code rm [OPTIONS] ID CONTEXT\n"
	      "\n"
	      "Runs code in the sandbox's code interpreter (started on first use): a Jupyter\n"
	      "kernel that keeps its state between runs, so a run sees the variables of the\n"
	      "last. Without --context, the language's default context is used.\n"
	      "\n"
	      "  -l, --language LANG  python (default) or bash\n"
	      "  -c, --context ID     a context from new-context (its own state and cwd)\n"
	      "  -e, --env NAME=VALUE set for this run only (repeatable)\n"
	      "      --images DIR     save the run's pictures as DIR/result-N.png (or .jpeg)\n"
	      "      --cwd DIR        new-context: its working directory\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: stdout and stderr as the code writes them, then the results' text (the\n"
	      "last expression's value, tables, ...), and an error's traceback on stderr. With\n"
	      "--json, the interpreter's NDJSON lines as they come (docs/code.md).\n"
	      "Exit status: 0; 1 if the code raised an error or paddockd refused; 125 if\n"
	      "paddock failed.\n",
	      f);
}

static char *read_code(const char *arg)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;

	if (strcmp(arg, "-") != 0)
		return api_oom(strdup(arg));
	for (;;) {
		if (len + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 131072;
			buf = api_oom(realloc(buf, cap));
		}
		n = read(STDIN_FILENO, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > CODE_MAX) {
			free(buf);
			api_failf("code: more than %u bytes on stdin", CODE_MAX);
			return NULL;
		}
	}
	if (!buf)
		buf = api_oom(calloc(1, 1));
	buf[len] = '\0';
	return buf;
}

static void save_image(const char *dir, unsigned *n, const char *ext, const json_t *v)
{
	char path[4096], *data = NULL;
	size_t len = 0;
	int fd;

	if (!json_is_string(v) ||
	    paddock_base64_decode(json_string_value(v), json_string_length(v), &data, &len) < 0) {
		fprintf(stderr, "paddock: a %s result that is not base64 was dropped\n", ext);
		return;
	}
	snprintf(path, sizeof(path), "%s/result-%u.%s", dir, ++*n, ext);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		fprintf(stderr, "paddock: cannot write %s: %s\n", path, strerror(errno));
	else
		fprintf(stderr, "paddock: saved %s (%zu bytes)\n", path, len);
	if (fd >= 0)
		close(fd);
	free(data);
}

/* Text from the sandbox, line by line, each line escaped for the terminal. */
static void put_lines(FILE *f, const char *s)
{
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		char *line = api_oom(strndup(s, n));

		api_fput_escaped(f, line);
		fputc('\n', f);
		free(line);
		s += n + (nl ? 1 : 0);
	}
}

/* One line of the run's answer, shown; returns true when it was an error. */
static bool show_line(const char *line, size_t len, const char *images, unsigned *n_images)
{
	json_t *m = json_loadb(line, len, 0, NULL);
	const char *type = api_str(m, "type", "");
	bool error = false;

	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		json_t *t = json_object_get(m, "text");

		fwrite(json_string_value(t) ? json_string_value(t) : "", 1, json_string_length(t),
		       type[3] == 'o' ? stdout : stderr);
		fflush(type[3] == 'o' ? stdout : stderr);
	} else if (!strcmp(type, "result")) {
		const char *text = api_str(m, "text", NULL);
		bool pic = json_object_get(m, "png") || json_object_get(m, "jpeg");

		if (pic && images) {
			if (json_object_get(m, "png"))
				save_image(images, n_images, "png", json_object_get(m, "png"));
			if (json_object_get(m, "jpeg"))
				save_image(images, n_images, "jpeg", json_object_get(m, "jpeg"));
		} else if (pic) {
			fputs("paddock: a picture came back (save it with --images DIR)\n", stderr);
		}
		if (text && !(pic && !json_is_true(json_object_get(m, "is_main_result"))))
			put_lines(stdout, text);
	} else if (!strcmp(type, "error")) {
		const char *tb = api_str(m, "traceback", "");

		error = true;
		if (*tb) { /* a traceback ends with the error's name and value */
			put_lines(stderr, tb);
		} else {
			api_fput_escaped(stderr, api_str(m, "name", "Error"));
			fputs(": ", stderr);
			api_fput_escaped(stderr, api_str(m, "value", ""));
			fputc('\n', stderr);
		}
	}
	json_decref(m);
	return error;
}

static int run(struct api *api, const char *id, const char *code, const char *language,
	       const char *context, json_t *env, const char *images)
{
	json_t *body = api_oom(json_pack("{s:s}", "code", code));
	char *url = API_URL("sandboxes", id, "code", "execute"), *text;
	struct http_response resp;
	struct http_conn *c = NULL;
	paddock_error err = { 0 };
	unsigned n_images = 0;
	bool failed = false, ended = false;
	const char *line;
	size_t len;
	int r;

	api_set(body, context ? "context_id" : "language",
		api_oom(json_string(context ? context : language)));
	if (json_object_size(env))
		json_object_set(body, "env_vars", env);
	text = api_oom(json_dumps(body, JSON_COMPACT));
	json_decref(body);
	struct http_request req = { .method = "POST",
				    .target = url,
				    .content_type = "application/json",
				    .body = text,
				    .body_len = strlen(text),
				    .body_fd = -1 };
	r = api_open(api, &req, &c, &resp);
	free(url);
	free(text);
	if (r != 0)
		return r;
	while ((r = http_read_line(c, CODE_LINE_MAX, &line, &len, &err)) > 0) {
		if (api->json) {
			fwrite(line, 1, len, stdout);
			fputc('\n', stdout);
			fflush(stdout);
		} else if (show_line(line, len, images, &n_images)) {
			failed = true;
		}
		ended = ended || strstr(line, "\"end_of_execution\"");
	}
	http_conn_free(c);
	if (r < 0)
		return api_fail("read the code interpreter's answer", &err);
	if (!ended)
		return api_failf("the code interpreter's answer ended early (it was killed: a "
				 "limit, or the code)");
	return failed ? API_EXIT_REFUSED : 0;
}

static int contexts(struct api *api, const char *id)
{
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", id, "code", "contexts");
	size_t i;
	json_t *c;
	int r;

	r = api_call(api, "GET", url, NULL, &reply);
	free(url);
	if (r != 0)
		return r;
	if (api->json || !json_is_array(reply.json)) {
		r = api_print_raw(&reply);
		api_reply_release(&reply);
		return r;
	}
	printf("%-36s  %-8s  %s\n", "CONTEXT", "LANGUAGE", "CWD");
	json_array_foreach(reply.json, i, c)
	{
		char *cid = api_escape(api_str(c, "id", "-")),
		     *lang = api_escape(api_str(c, "language", "-"));

		printf("%-36s  %-8s  ", cid, lang);
		api_fput_escaped(stdout, api_str(c, "cwd", "-"));
		fputc('\n', stdout);
		free(cid);
		free(lang);
	}
	api_reply_release(&reply);
	return 0;
}

static int context_call(struct api *api, const char *method, const char *id, const char *ctx,
			const char *what, const json_t *body)
{
	struct api_reply reply = { 0 };
	char *url = what  ? API_URL("sandboxes", id, "code", "contexts", ctx, what)
		    : ctx ? API_URL("sandboxes", id, "code", "contexts", ctx)
			  : API_URL("sandboxes", id, "code", "contexts");
	int r = api_call(api, method, url, body, &reply);

	free(url);
	if (r == 0 && reply.json &&
	    (api->json || !json_is_string(json_object_get(reply.json, "id"))))
		r = api_print_raw(&reply);
	else if (r == 0 && reply.json)
		printf("%s\n", json_string_value(json_object_get(reply.json, "id")));
	api_reply_release(&reply);
	return r;
}

int cmd_code(int argc, char **argv)
{
	const char *language = "python", *context = NULL, *images = NULL, *cwd = NULL, *sub = NULL;
	struct api api = { 0 };
	json_t *env = api_oom(json_object());
	int c, r, rest;

	while ((c = getopt_long(argc, argv, "l:c:e:h", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		switch (c) {
		case 'l':
			language = optarg;
			break;
		case 'c':
			context = optarg;
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			char name[256];

			if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(name)) {
				json_decref(env);
				return api_failf("--env: expected NAME=VALUE, got '%s'", optarg);
			}
			snprintf(name, sizeof(name), "%.*s", (int)(eq - optarg), optarg);
			api_set(env, name, api_oom(json_string(eq + 1)));
			break;
		}
		case OPT_IMAGES:
			images = optarg;
			break;
		case OPT_CWD:
			cwd = optarg;
			break;
		case 'h':
			usage(stdout);
			json_decref(env);
			return 0;
		default:
			fputs("paddock: see 'paddock code --help'\n", stderr);
			json_decref(env);
			return PADDOCK_EXIT_FAILURE;
		}
	}
	/* `paddock code contexts ID`: the first word names a subcommand (ids start with sb_) */
	if (optind < argc &&
	    (!strcmp(argv[optind], "contexts") || !strcmp(argv[optind], "new-context") ||
	     !strcmp(argv[optind], "restart") || !strcmp(argv[optind], "rm")))
		sub = argv[optind++];
	rest = argc - optind;
	if (sub && !strcmp(sub, "contexts")) {
		r = rest == 1 ? contexts(&api, argv[optind])
			      : api_failf("code contexts: expected a sandbox id");
	} else if (sub && !strcmp(sub, "new-context")) {
		json_t *body = api_oom(json_pack("{s:s}", "language", language));

		if (cwd)
			api_set(body, "cwd", api_oom(json_string(cwd)));
		r = rest == 1 ? context_call(&api, "POST", argv[optind], NULL, NULL, body)
			      : api_failf("code new-context: expected a sandbox id");
		json_decref(body);
	} else if (sub) {
		bool restart = !strcmp(sub, "restart");

		r = rest == 2 ? context_call(&api, restart ? "POST" : "DELETE", argv[optind],
					     argv[optind + 1], restart ? "restart" : NULL, NULL)
			      : api_failf("code %s: expected a sandbox id and a context id", sub);
	} else if (rest != 2) {
		r = api_failf("code: expected a sandbox id and the code (or - to read it from "
			      "stdin)");
	} else if (strcmp(language, "python") != 0 && strcmp(language, "bash") != 0) {
		r = api_failf("--language: expected python or bash, got '%s'", language);
	} else {
		char *code = read_code(argv[optind + 1]);

		r = code ? run(&api, argv[optind], code, language, context, env, images)
			 : PADDOCK_EXIT_FAILURE;
		free(code);
	}
	json_decref(env);
	return r;
}
