/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock logs [-f] ID`: the events of a sandbox (GET /v1/sandboxes/{id}/events), oldest
 * first; with -f, live ones after. Event fields can carry what a sandbox chose (file names,
 * argv[0], hosts): shown as JSON-escaped ASCII, never as raw bytes.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

#define EVENT_LINE_MAX (1u << 20)

static const struct option options[] = {
	{ "follow", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock logs [OPTIONS] ID\n"
	      "\n"
	      "Prints the events of a sandbox (docs/events.md), oldest first.\n"
	      "\n"
	      "  -f, --follow         then wait for new ones, until the sandbox is "
	      "gone\n" API_OPTIONS_HELP "  -h, --help           this text\n"
	      "\n"
	      "Output: one line per event:\n"
	      "  TS LEVEL EVENT KEY=VALUE...\n"
	      "with the event's own fields in its order (the sandbox id left out); a string is\n"
	      "bare when it is printable ASCII without spaces, quotes or '=', else JSON-quoted;\n"
	      "other values are compact JSON. With --json: each event's JSON line as it is.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

static bool bare(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f || *s == '"' || *s == '\\' || *s == '=')
			return false;
	return true;
}

static void print_value(const json_t *v)
{
	char *text;

	if (json_is_string(v) && bare(json_string_value(v)) &&
	    strlen(json_string_value(v)) == json_string_length(v)) {
		fputs(json_string_value(v), stdout);
		return;
	}
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII |
				     JSON_REAL_PRECISION(15));
	fputs(text ? text : "?", stdout);
	free(text);
}

static void print_event(const json_t *ev)
{
	const char *key;
	json_t *v;

	print_value(json_object_get(ev, "ts"));
	fputc(' ', stdout);
	print_value(json_object_get(ev, "level"));
	fputc(' ', stdout);
	print_value(json_object_get(ev, "event"));
	json_object_foreach((json_t *)ev, key, v)
	{
		if (!strcmp(key, "ts") || !strcmp(key, "level") || !strcmp(key, "event") ||
		    !strcmp(key, "sandbox"))
			continue;
		fputc(' ', stdout);
		if (bare(key))
			fputs(key, stdout);
		else
			api_fput_escaped(stdout, key);
		fputc('=', stdout);
		print_value(v);
	}
	fputc('\n', stdout);
}

int cmd_logs(int argc, char **argv)
{
	struct api api = { 0 };
	struct http_request req = { .method = "GET", .body_fd = -1 };
	struct http_response resp;
	struct http_conn *conn = NULL;
	paddock_error err = { 0 };
	bool follow = false;
	const char *line;
	size_t len;
	char *url;
	int c, r;

	while ((c = getopt_long(argc, argv, "fh", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == 'f') {
			follow = true;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "paddock: see 'paddock logs --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (argc - optind != 1)
		return api_failf("logs: expected one sandbox id (paddock logs [-f] ID)");
	url = API_URL("sandboxes", argv[optind], "events");
	if (follow)
		api_url_query(&url, "follow", "1");
	req.target = url;
	r = api_open(&api, &req, &conn, &resp);
	free(url);
	if (r != 0)
		return r;
	while ((r = http_read_line(conn, EVENT_LINE_MAX, &line, &len, &err)) > 0) {
		json_t *ev;

		if (len == 0)
			continue;
		if (api.json) {
			fwrite(line, 1, len, stdout);
			fputc('\n', stdout);
		} else {
			ev = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
			if (!json_is_object(ev)) {
				json_decref(ev);
				http_conn_free(conn);
				return api_failf("paddockd sent an event that is not a JSON "
						 "object");
			}
			print_event(ev);
			json_decref(ev);
		}
		if (follow)
			fflush(stdout);
	}
	http_conn_free(conn);
	if (r < 0)
		return api_fail("read the events", &err);
	if (fflush(stdout) != 0)
		return PADDOCK_EXIT_FAILURE;
	return 0;
}
