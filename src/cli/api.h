/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of paddockd's API (docs/api.md) for the `paddock` subcommands: where the
 * socket is, request URLs, JSON requests, and how answers and errors are shown.
 *
 * Unlike the rest of paddock, the functions returning `int` here return the CLI's exit
 * status, with the reason already printed on stderr: 0 on success, API_EXIT_REFUSED (1) when
 * paddockd answered with an error, PADDOCK_EXIT_FAILURE (125) when paddock could not talk to
 * it (no socket, a malformed answer) or failed itself. Subcommands just pass them on.
 */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "paddock/paddock.h"
#include "client.h"

#define API_EXIT_REFUSED 1

/* Bounds on what paddockd may send back. */
#define API_ANSWER_MAX	   (64u << 20) /* a whole JSON answer */
#define API_LINE_MAX	   (16u << 20) /* one NDJSON line (an output chunk, escaped) */
#define API_ERROR_BODY_MAX (1u << 20)  /* an error answer */

/* Options every client subcommand takes; put API_LONG_OPTIONS in its option table. */
enum {
	OPT_API_SOCKET = 0x300,
	OPT_API_JSON,
};
#define API_LONG_OPTIONS                                                                           \
	{ "socket", required_argument, NULL, OPT_API_SOCKET },                                     \
	{                                                                                          \
		"json", no_argument, NULL, OPT_API_JSON                                            \
	}
#define API_OPTIONS_HELP                                                                           \
	"  --socket PATH        paddockd's socket (default: $PADDOCK_SOCKET, else\n"               \
	"                       $XDG_RUNTIME_DIR/paddock/paddockd.sock when not root and\n"        \
	"                       XDG_RUNTIME_DIR is set, else /run/paddock/paddockd.sock)\n"        \
	"  --json               print paddockd's JSON answer as it is\n"

struct api {
	const char *socket; /* --socket; NULL: from the environment */
	bool json;	    /* --json */
	size_t answer_max;  /* 0: API_ANSWER_MAX */
	int quiet_status;   /* an error status not to print (404 for `rm -f`); -1: any */
	int last_status;    /* the status of the last answer, 0 if none came */
	char socket_buf[4096];
};

/* Handles OPT_API_SOCKET and OPT_API_JSON; false for any other option. */
bool api_option(struct api *api, int opt, const char *arg);
/* The socket path: --socket, $PADDOCK_SOCKET, or paddockd's default for the caller. */
const char *api_socket_path(struct api *api);

/*
 * "/v1/" followed by the segments, each percent-encoded (a '/' inside one too), joined by
 * '/'. The list ends with NULL. Aborts when out of memory. Caller frees.
 */
char *api_url(const char *const *segments);
#define API_URL(...) api_url((const char *const[]){ __VA_ARGS__, NULL })
/* Appends "?key=value" or "&key=value", the value percent-encoded ('/' kept). */
void api_url_query(char **url, const char *key, const char *value);

struct api_reply {
	int status;
	char *body; /* NUL-terminated */
	size_t len;
	json_t *json; /* the body parsed, or NULL when it is empty */
};
void api_reply_release(struct api_reply *reply);

/*
 * One request with an optional JSON body (borrowed), answered as a whole. A 2xx answer
 * fills *ret_reply (release it) and returns 0. An error answer is printed as
 * "paddock: MESSAGE (field: FIELD)" (unless its status is api->quiet_status) and gives
 * API_EXIT_REFUSED.
 */
int api_call(struct api *api, const char *method, const char *url, const json_t *body,
	     struct api_reply *ret_reply);

/*
 * Opens a connection, sends `req` and reads the answer's head. A 2xx answer gives 0 with
 * the connection in *ret_conn (free it) positioned at the body; an error answer is read,
 * printed and gives API_EXIT_REFUSED.
 */
int api_open(struct api *api, const struct http_request *req, struct http_conn **ret_conn,
	     struct http_response *ret_resp);

/* Prints "paddock: WHAT: MESSAGE: ERRNO-TEXT" and returns PADDOCK_EXIT_FAILURE. */
int api_fail(const char *what, const paddock_error *err);

/*
 * The option loop of a command that takes only the client options (--socket, --json) and
 * -h: API_PARSE_GO to go on (optind at the first argument), else the exit status to return
 * (0 after --help).
 */
#define API_PARSE_GO (-1)
int api_parse_common(struct api *api, int argc, char **argv, const struct option *options,
		     const char *command, void (*usage)(FILE *f));

/*
 * GETs `url` and finds the array `key` in the answer (with --json, prints the answer and
 * returns 0 with *ret_list NULL). The reply is the caller's to release.
 */
int api_get_list(struct api *api, const char *url, const char *key, struct api_reply *reply,
		 json_t **ret_list);
/* Prints "paddock: MESSAGE" (a vprintf format) and returns PADDOCK_EXIT_FAILURE. */
__attribute__((format(printf, 1, 2))) int api_failf(const char *fmt, ...);

/* Prints an answer's body as it is (--json), with a final newline. Returns 0 or 125. */
int api_print_raw(const struct api_reply *reply);
/* Prints a JSON value indented by 2 spaces, numbers to 15 significant digits. */
int api_print_pretty(const json_t *json);

/*
 * Writes a string from paddockd or a sandbox for a terminal: control characters (C0, DEL,
 * C1) and backslashes are escaped as \xNN / \\, so a hostile name cannot move the cursor.
 */
void api_fput_escaped(FILE *f, const char *s);
/* The same into a new string (for padding columns); aborts when out of memory. */
char *api_escape(const char *s);
/* A member's string value, or `fallback` when it is missing or not a string. */
const char *api_str(const json_t *obj, const char *key, const char *fallback);

/* A number of seconds from the command line: decimal, no sign or exponent; -EINVAL if not. */
int api_parse_seconds(const char *s, double *ret);
/* A JSON number for seconds: an integer when whole. */
json_t *api_seconds_json(double s);

/* Abort on allocation failure: the CLI has nothing sensible left to do. */
void *api_oom(void *p);
/* json_object_set_new() that aborts when out of memory (it takes `value` either way). */
void api_set(json_t *obj, const char *key, json_t *value);
