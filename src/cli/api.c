/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client side of paddockd's API, shared by the `paddock` subcommands that talk to it.
 * Everything paddockd sends back is treated as hostile for the terminal: strings are escaped
 * before they are shown, and answers are bounded (API_*_MAX) before they are parsed.
 */
#include "api.h"
#include "api-error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *api_oom(void *p)
{
	if (!p) {
		fputs("paddock: out of memory\n", stderr);
		abort();
	}
	return p;
}

void api_set(json_t *obj, const char *key, json_t *value)
{
	if (!value || json_object_set_new(obj, key, value) < 0)
		api_oom(NULL);
}

bool api_option(struct api *api, int opt, const char *arg)
{
	switch (opt) {
	case OPT_API_SOCKET:
		api->socket = arg;
		return true;
	case OPT_API_JSON:
		api->json = true;
		return true;
	default:
		return false;
	}
}

const char *api_socket_path(struct api *api)
{
	const char *env;

	if (api->socket)
		return api->socket;
	env = secure_getenv("PADDOCK_SOCKET");
	if (env && *env)
		return api->socket = env;
	/* as paddockd chooses its own (src/daemon/main.c) */
	env = secure_getenv("XDG_RUNTIME_DIR");
	if (paddock_host_root() || !env || !*env)
		return api->socket = "/run/paddock/paddockd.sock";
	snprintf(api->socket_buf, sizeof(api->socket_buf), "%s/paddock/paddockd.sock", env);
	return api->socket = api->socket_buf;
}

/* ---- URLs ----------------------------------------------------------------------------- */

char *api_url(const char *const *segments)
{
	char *url = NULL;
	size_t len;
	FILE *f = api_oom(open_memstream(&url, &len));

	fputs("/v1", f);
	for (; *segments; segments++) {
		fputc('/', f);
		http_put_encoded(f, *segments, false);
	}
	if (fclose(f) != 0)
		api_oom(NULL);
	return url;
}

void api_url_query(char **url, const char *key, const char *value)
{
	char *out = NULL;
	size_t len;
	FILE *f = api_oom(open_memstream(&out, &len));

	fprintf(f, "%s%c", *url, strchr(*url, '?') ? '&' : '?');
	http_put_encoded(f, key, false);
	fputc('=', f);
	http_put_encoded(f, value, true);
	if (fclose(f) != 0)
		api_oom(NULL);
	free(*url);
	*url = out;
}

/* ---- requests ------------------------------------------------------------------------- */

void api_reply_release(struct api_reply *reply)
{
	free(reply->body);
	json_decref(reply->json);
	*reply = (struct api_reply){ 0 };
}

int api_fail(const char *what, const paddock_error *err)
{
	char buf[sizeof(err->msg) + 128];

	fprintf(stderr, "paddock: %s: ", what);
	api_fput_escaped(stderr, paddock_error_format(err, buf, sizeof(buf)));
	fputc('\n', stderr);
	return PADDOCK_EXIT_FAILURE;
}

int api_failf(const char *fmt, ...)
{
	va_list ap;

	fputs("paddock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return PADDOCK_EXIT_FAILURE;
}

/*
 * {"error":{"code","field","message"[,"errno"]}} -> "paddock: MESSAGE[: ERRNO-TEXT]
 * (field: FIELD)"
 */
static int print_error_answer(int status, const char *reason, const char *body, size_t len)
{
	paddock_error err = { 0 };
	bool named = false;

	client_error_answer(status, reason, body, len, &err, &named);
	fputs("paddock: ", stderr);
	api_fput_escaped(stderr, err.msg);
	if (named && err.code != EINVAL) /* bad input: the message says it all */
		fprintf(stderr, ": %s", strerror(err.code));
	if (err.field[0]) {
		fputs(" (field: ", stderr);
		api_fput_escaped(stderr, err.field);
		fputc(')', stderr);
	}
	fputc('\n', stderr);
	return API_EXIT_REFUSED;
}

int api_open(struct api *api, const struct http_request *req, struct http_conn **ret_conn,
	     struct http_response *ret_resp)
{
	const char *path = api_socket_path(api);
	struct http_conn *c = NULL;
	struct http_response resp;
	paddock_error err = { 0 };
	char *body = NULL;
	size_t len;
	int r;

	api->last_status = 0;
	r = http_connect_unix(path, &c, &err);
	if (r < 0) {
		char buf[sizeof(err.msg) + 128];
		fputs("paddock: cannot connect to paddockd at '", stderr);
		api_fput_escaped(stderr, path);
		fprintf(stderr, "': %s\n", paddock_error_format(&err, buf, sizeof(buf)));
		fputs("paddock: is paddockd running? Start it, or name its socket with "
		      "--socket PATH or PADDOCK_SOCKET\n",
		      stderr);
		return PADDOCK_EXIT_FAILURE;
	}
	r = http_send_request(c, req, &err);
	if (r < 0) {
		http_conn_free(c);
		return api_fail("send a request to paddockd", &err);
	}
	r = http_read_response(c, &resp, &err);
	if (r < 0) {
		http_conn_free(c);
		return api_fail("read paddockd's answer", &err);
	}
	api->last_status = resp.status;
	if (resp.status >= 200 && resp.status < 300) {
		*ret_conn = c;
		*ret_resp = resp;
		return 0;
	}
	r = http_read_body_all(c, API_ERROR_BODY_MAX, &body, &len, &err);
	http_conn_free(c);
	if (resp.status == api->quiet_status || api->quiet_status < 0) {
		free(body);
		return API_EXIT_REFUSED;
	}
	if (r < 0) {
		fprintf(stderr, "paddock: paddockd answered %d\n", resp.status);
		return api_fail("read paddockd's error", &err);
	}
	r = print_error_answer(resp.status, resp.reason, body, len);
	free(body);
	return r;
}

int api_call(struct api *api, const char *method, const char *url, const json_t *body,
	     struct api_reply *ret_reply)
{
	char *text = body ? api_oom(json_dumps(body, JSON_COMPACT)) : NULL;
	struct http_request req = {
		.method = method,
		.target = url,
		.content_type = text ? "application/json" : NULL,
		.body = text,
		.body_len = text ? strlen(text) : 0,
		.body_fd = -1,
	};
	struct api_reply reply = { 0 };
	struct http_conn *c = NULL;
	struct http_response resp;
	paddock_error err = { 0 };
	json_error_t jerr;
	int r;

	r = api_open(api, &req, &c, &resp);
	free(text);
	if (r != 0)
		return r;
	reply.status = resp.status;
	r = http_read_body_all(c, api->answer_max ? api->answer_max : API_ANSWER_MAX, &reply.body,
			       &reply.len, &err);
	http_conn_free(c);
	if (r < 0)
		return api_fail("read paddockd's answer", &err);
	if (reply.len > 0) {
		/* output in an answer may hold NUL bytes: \u0000 is allowed, lengths are used */
		reply.json = json_loadb(reply.body, reply.len, JSON_ALLOW_NUL, &jerr);
		if (!reply.json) {
			api_reply_release(&reply);
			return api_failf("paddockd's answer is not JSON (line %d: %s)", jerr.line,
					 jerr.text);
		}
	}
	*ret_reply = reply;
	return 0;
}

/* ---- output --------------------------------------------------------------------------- */

int api_print_raw(const struct api_reply *reply)
{
	if (reply->len > 0 && fwrite(reply->body, 1, reply->len, stdout) != reply->len)
		return api_failf("write the answer: %s", strerror(errno));
	if (reply->len == 0 || reply->body[reply->len - 1] != '\n')
		fputc('\n', stdout);
	return 0;
}

int api_print_pretty(const json_t *json)
{
	if (json_dumpf(json, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) < 0)
		return api_failf("write the answer");
	fputc('\n', stdout);
	return 0;
}

void api_fput_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* C1 controls, as UTF-8 */
			fprintf(f, "\\u%04x", p[1]), p++;
		else
			fputc(*p, f);
	}
}

char *api_escape(const char *s)
{
	char *out = NULL;
	size_t len;
	FILE *f = api_oom(open_memstream(&out, &len));

	api_fput_escaped(f, s);
	if (fclose(f) != 0)
		api_oom(NULL);
	return out;
}

const char *api_str(const json_t *obj, const char *key, const char *fallback)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : fallback;
}

/* ---- numbers -------------------------------------------------------------------------- */

int api_parse_seconds(const char *s, double *ret)
{
	size_t digits = strspn(s, "0123456789");
	const char *rest = s + digits;
	char *end;
	double v;

	if (*rest == '.' && rest[1]) {
		size_t frac = strspn(rest + 1, "0123456789");
		rest += 1 + frac;
		if (frac == 0)
			return -EINVAL;
	}
	if (digits == 0 || *rest)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

json_t *api_seconds_json(double s)
{
	if (s == floor(s) && s < 9e15)
		return api_oom(json_integer((json_int_t)s));
	return api_oom(json_real(s));
}

int api_parse_common(struct api *api, int argc, char **argv, const struct option *options,
		     const char *command, void (*usage)(FILE *f))
{
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (api_option(api, c, optarg))
			continue;
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "paddock: see 'paddock %s --help'\n", command);
		return PADDOCK_EXIT_FAILURE;
	}
	return API_PARSE_GO;
}

int api_get_list(struct api *api, const char *url, const char *key, struct api_reply *reply,
		 json_t **ret_list)
{
	json_t *list;
	int r = api_call(api, "GET", url, NULL, reply);

	*ret_list = NULL;
	if (r != 0)
		return r;
	if (api->json) {
		r = api_print_raw(reply);
		api_reply_release(reply);
		return r;
	}
	list = json_object_get(reply->json, key);
	if (!json_is_array(list)) {
		api_reply_release(reply);
		return api_failf("paddockd's answer has no list of %s", key);
	}
	*ret_list = list;
	return 0;
}
