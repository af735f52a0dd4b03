/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock mcp [OPTIONS]`: an MCP server on stdin/stdout (docs/mcp.md). One JSON-RPC message
 * per line in, answers out; nothing else is ever written to stdout. The operator's flags fix
 * the policy; the session ends when stdin closes (after the calls in flight, for at most
 * EOF_GRACE_S) or on SIGTERM, SIGINT or SIGHUP, and takes every sandbox it made with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "paddock/paddock.h"
#include "cli.h"
#include "mcp.h"
#include "mcp-http.h"
#include "spec-flags.h"

#define DEFAULT_TIMEOUT_S     "300"
#define DEFAULT_MAX_SANDBOXES 4
#define DEFAULT_MAX_OUTPUT    (256u << 10)
#define DEFAULT_MAX_READ      (1u << 20)
#define EOF_GRACE_S	      10
#define OUT_MAX		      (64u << 20) /* answers queued for a client that does not read: then it is gone */

enum {
	OPT_CONNECT = SPEC_OPT_END,
	OPT_CONFIG,
	OPT_ALLOW_HOST_PATH,
	OPT_MAX_SANDBOXES,
	OPT_MAX_OUTPUT,
	OPT_MAX_READ,
	OPT_MAX_MESSAGE,
	OPT_EVENTS,
	OPT_RESOLVE_HOSTS,
	OPT_UPSTREAM_CA,
	OPT_IDLE_TIMEOUT,
	OPT_HTTP,
	OPT_HTTP_TOKEN_FILE,
	OPT_MAX_SESSIONS,
	OPT_SESSION_IDLE,
	OPT_SESSION_GONE,
};

static const struct option options[] = {
	SPEC_LONG_OPTIONS,
	{ "connect", required_argument, NULL, OPT_CONNECT },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "allow-host-path", required_argument, NULL, OPT_ALLOW_HOST_PATH },
	{ "max-sandboxes", required_argument, NULL, OPT_MAX_SANDBOXES },
	{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
	{ "max-read", required_argument, NULL, OPT_MAX_READ },
	{ "max-message", required_argument, NULL, OPT_MAX_MESSAGE },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "resolve-hosts", required_argument, NULL, OPT_RESOLVE_HOSTS },
	{ "upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-token-file", required_argument, NULL, OPT_HTTP_TOKEN_FILE },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
	{ "session-idle", required_argument, NULL, OPT_SESSION_IDLE },
	{ "session-gone", required_argument, NULL, OPT_SESSION_GONE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock mcp [OPTIONS]\n"
	      "\n"
	      "A Model Context Protocol server on stdin/stdout: sandboxes as tools for an agent\n"
	      "(docs/mcp.md). Every sandbox it makes ends with the session.\n"
	      "\n"
	      "  --connect SOCKET       use a running paddockd instead of making sandboxes here\n"
	      "  --idle-timeout S       with --connect: paddockd ends a sandbox idle this long\n"
	      "                         (default 3600; protects against a killed server)\n"
	      "  --http ADDR:PORT       serve MCP's Streamable HTTP transport at /mcp instead of\n"
	      "                         stdio (e.g. 127.0.0.1:8931); each session has its own\n"
	      "                         sandboxes\n"
	      "  --http-token-file FILE clients must send 'Authorization: Bearer <its content>'\n"
	      "                         (required unless ADDR is loopback)\n"
	      "  --max-sessions N       HTTP sessions at once (8)\n"
	      "  --session-idle S       an HTTP session unused this long ends (1800)\n"
	      "  --session-gone S       an HTTP session whose client held a GET stream ends once\n"
	      "                         it has none and no request for this long (30)\n"
	      "  --config FILE          JSON: {\"spec\": {...}, \"allow_host_paths\": [...],\n"
	      "                         \"max_sandboxes\": N, \"max_output\": N, \"max_read\": N,\n"
	      "                         \"max_message\": N}; flags override it\n"
	      "\n"
	      "operator policy: every spec flag of 'paddock run' (--allow, --deny, --net,\n"
	      "--memory, --cpus, --pids, --disk, --cpu-time, --env, --workspace, --secret,\n"
	      "--spec FILE, ...) sets the default sandbox and the ceiling of what an agent may\n"
	      "ask for; --timeout is each command's default and longest timeout (300).\n"
	      "  --allow-host-path DIR  agents may name a workspace under DIR (repeatable)\n"
	      "  --max-sandboxes N      sandboxes at once, the default one included (4)\n"
	      "  --max-output SIZE      bytes kept of each stream of a command (256K)\n"
	      "  --max-read SIZE        bytes one read_file returns at most (1M)\n"
	      "  --max-message SIZE     longest JSON-RPC message accepted (4M)\n"
	      "\n"
	      "  --events FILE          append every sandbox event (JSON lines); '-': stderr\n"
	      "  --resolve-hosts FILE   resolve egress names only from this hosts file\n"
	      "  --upstream-ca FILE     trust this CA for brokered HTTPS (repeatable)\n"
	      "  -h, --help             this help\n",
	      f);
}

/* ---- the session ------------------------------------------------------------------------ */

struct session {
	struct event_base *base;
	struct mcp_server *server;
	struct evbuffer *in, *out;
	struct event *in_ev, *out_ev, *grace_ev;
	size_t max_message;
	bool discarding; /* inside a message over the limit: skip to its newline */
	bool eof;
	unsigned grace_ticks;
	int in_flags, out_flags;
};

static void send_line(const char *json, size_t len, void *userdata)
{
	struct session *s = userdata;

	if (evbuffer_get_length(s->out) > OUT_MAX) {
		fprintf(stderr, "paddock mcp: the client reads no answers; ending the session\n");
		event_base_loopexit(s->base, NULL);
		return;
	}
	evbuffer_add(s->out, json, len);
	evbuffer_add(s->out, "\n", 1);
	event_add(s->out_ev, NULL);
}

static void out_cb(evutil_socket_t fd, short what, void *data)
{
	struct session *s = data;

	(void)what;
	while (evbuffer_get_length(s->out)) {
		int n = evbuffer_write(s->out, fd);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return; /* stays armed */
		if (n <= 0) {
			/* the client is gone (EPIPE): nobody hears answers; end the session */
			event_base_loopexit(s->base, NULL);
			return;
		}
	}
	event_del(s->out_ev);
}

/* Hands every complete line to the server. */
static void take_lines(struct session *s)
{
	for (;;) {
		size_t eol_len = 0;
		struct evbuffer_ptr eol =
			evbuffer_search_eol(s->in, NULL, &eol_len, EVBUFFER_EOL_LF);
		size_t len;

		if (eol.pos < 0) {
			if (evbuffer_get_length(s->in) > s->max_message) {
				if (!s->discarding)
					mcp_server_oversized(s->server, s->max_message);
				s->discarding = true;
				evbuffer_drain(s->in, evbuffer_get_length(s->in));
			}
			return;
		}
		len = (size_t)eol.pos;
		if (s->discarding || len > s->max_message) {
			if (!s->discarding)
				mcp_server_oversized(s->server, s->max_message);
			s->discarding = false;
			evbuffer_drain(s->in, len + eol_len);
			continue;
		}
		mcp_server_message(s->server, (const char *)evbuffer_pullup(s->in, (ssize_t)len),
				   len);
		evbuffer_drain(s->in, len + eol_len);
	}
}

static void grace_cb(evutil_socket_t fd, short what, void *data);

static void in_cb(evutil_socket_t fd, short what, void *data)
{
	struct session *s = data;
	int n;

	(void)what;
	n = evbuffer_read(s->in, fd, 65536);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		take_lines(s);
		return;
	}
	/* end of input: a last line without its newline still counts */
	if (evbuffer_get_length(s->in) && !s->discarding) {
		size_t len = evbuffer_get_length(s->in);

		mcp_server_message(s->server, (const char *)evbuffer_pullup(s->in, -1), len);
	}
	evbuffer_drain(s->in, evbuffer_get_length(s->in));
	event_del(s->in_ev);
	s->eof = true;
	grace_cb(-1, 0, s);
}

/* After EOF: the calls in flight may finish (for EOF_GRACE_S), then the session ends. */
static void grace_cb(evutil_socket_t fd, short what, void *data)
{
	struct session *s = data;
	const struct timeval tick = { 0, 50000 };

	(void)fd;
	(void)what;
	if (!mcp_server_busy(s->server) || ++s->grace_ticks > EOF_GRACE_S * 20) {
		event_base_loopexit(s->base, NULL);
		return;
	}
	evtimer_add(s->grace_ev, &tick);
}

/* `data` is the event base */
static void signal_cb(evutil_socket_t sig, short what, void *data)
{
	(void)what;
	fprintf(stderr, "paddock mcp: %s: ending the session\n", strsignal((int)sig));
	event_base_loopexit(data, NULL);
}

/* ---- options ---------------------------------------------------------------------------- */

struct args {
	const char *connect, *events, *resolve_hosts, *upstream_ca;
	const char *http, *http_token_file;
	unsigned idle_timeout_s, max_sessions, session_idle_s, session_gone_s;
	size_t max_message;
};

static int parse_size(const char *opt, const char *s, size_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && *end) {
		const char *units = "KMG";
		const char *u = strchr(units, *end & ~0x20);

		if (u && (!end[1] || ((end[1] | 0x20) == 'i' && !end[2]) ||
			  ((end[1] | 0x20) == 'b' && !end[2])))
			shift = 10 * (unsigned)(u - units + 1);
		else
			end = (char *)s;
	}
	if (end == s || errno || s[0] == '-' || v == 0 || v > (1ull << 40) >> shift) {
		fprintf(stderr,
			"paddock mcp: %s: expected a size such as 65536, '256K' or '4M', got "
			"'%s'\n",
			opt, s);
		return -EINVAL;
	}
	*ret = (size_t)(v << shift);
	return 0;
}

static int parse_count(const char *opt, const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-' || v < 1 || v > max) {
		fprintf(stderr, "paddock mcp: %s: expected a number from 1 to %u, got '%s'\n", opt,
			max, s);
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

static int json_size(json_t *v, const char *key, size_t *ret)
{
	json_t *m = json_object_get(v, key);
	char buf[32];

	if (!m)
		return 0;
	if (json_is_integer(m) && json_integer_value(m) > 0)
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(m));
	else if (json_is_string(m))
		snprintf(buf, sizeof(buf), "%s", json_string_value(m));
	else
		buf[0] = '\0';
	return parse_size(key, buf, ret);
}

/* The config file: the same settings as the flags, which come after it. */
static int load_config(const char *path, struct mcp_policy *p, struct args *a)
{
	static const char *const keys[] = { "spec",	  "allow_host_paths", "max_sandboxes",
					    "max_output", "max_read",	      "max_message",
					    NULL };
	paddock_error err = { 0 };
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), *v;
	const char *key;
	int r = -EINVAL;
	size_t i;

	if (!root || !json_is_object(root)) {
		fprintf(stderr, "paddock mcp: --config %s: %s\n", path,
			root ? "expected a JSON object" : jerr.text);
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		if (!keys[i]) {
			fprintf(stderr,
				"paddock mcp: --config %s: unknown key '%s'; expected spec, "
				"allow_host_paths, max_sandboxes, max_output, max_read, "
				"max_message\n",
				path, key);
			goto out;
		}
	}
	if ((v = json_object_get(root, "spec"))) {
		char *text = json_dumps(v, JSON_COMPACT);

		r = text ? paddock_spec_load_json(p->spec, text, strlen(text), &err) : -ENOMEM;
		free(text);
		if (r < 0) {
			fprintf(stderr, "paddock mcp: --config %s: spec.%s: %s\n", path, err.field,
				err.msg);
			goto out;
		}
		r = -EINVAL;
	}
	json_array_foreach(json_object_get(root, "allow_host_paths"), i, v)
	{
		if (!json_is_string(v) ||
		    mcp_policy_allow_host_path(p, json_string_value(v), &err) < 0) {
			fprintf(stderr, "paddock mcp: --config %s: allow_host_paths[%zu]: %s\n",
				path, i, json_is_string(v) ? err.msg : "expected a directory");
			goto out;
		}
	}
	if ((v = json_object_get(root, "max_sandboxes"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1024) {
			fprintf(stderr,
				"paddock mcp: --config %s: max_sandboxes: expected 1..1024\n",
				path);
			goto out;
		}
		p->max_sandboxes = (unsigned)json_integer_value(v);
	}
	if (json_size(root, "max_output", &p->max_output) < 0 ||
	    json_size(root, "max_read", &p->max_read) < 0 ||
	    json_size(root, "max_message", &a->max_message) < 0)
		goto out;
	r = 0;
out:
	json_decref(root);
	return r;
}

/* Pass 1: --config and --spec, so that every flag overrides them whatever the order. */
static int parse_files(int argc, char **argv, struct mcp_policy *p, struct args *a)
{
	paddock_error err = { 0 };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (c == OPT_CONFIG && load_config(optarg, p, a) < 0)
			return -EINVAL;
		if (c == SPEC_OPT_SPEC) {
			char *text = NULL;
			size_t len = 0;

			if (spec_file_read(optarg, &text, &len, &err) < 0 ||
			    paddock_spec_load_json(p->spec, text, len, &err) < 0) {
				free(text);
				fprintf(stderr, "paddock mcp: --spec %s: %s%s%s\n", optarg,
					err.field, err.field[0] ? ": " : "", err.msg);
				return -EINVAL;
			}
			free(text);
		}
	}
	optind = 0;
	opterr = 1;
	return 0;
}

/* The flags that bound something: 1 if `c` is one (applied), 0 if not, < 0 if its value is bad. */
static int apply_limit_flag(int c, struct mcp_policy *p, struct args *a)
{
	int r;

	switch (c) {
	case OPT_MAX_SANDBOXES:
		r = parse_count("--max-sandboxes", optarg, 1024, &p->max_sandboxes);
		break;
	case OPT_MAX_OUTPUT:
		r = parse_size("--max-output", optarg, &p->max_output);
		break;
	case OPT_MAX_READ:
		r = parse_size("--max-read", optarg, &p->max_read);
		break;
	case OPT_MAX_MESSAGE:
		r = parse_size("--max-message", optarg, &a->max_message);
		break;
	case OPT_IDLE_TIMEOUT:
		r = parse_count("--idle-timeout", optarg, 30 * 86400, &a->idle_timeout_s);
		break;
	case OPT_MAX_SESSIONS:
		r = parse_count("--max-sessions", optarg, 1024, &a->max_sessions);
		break;
	case OPT_SESSION_IDLE:
		r = parse_count("--session-idle", optarg, 30 * 86400, &a->session_idle_s);
		break;
	case OPT_SESSION_GONE:
		r = parse_count("--session-gone", optarg, 86400, &a->session_gone_s);
		break;
	default:
		return 0;
	}
	return r < 0 ? -EINVAL : 1;
}

/* One flag of pass 2 that is not a spec flag: as parse_args() returns. */
static int apply_flag(int c, struct mcp_policy *p, struct args *a)
{
	paddock_error err = { 0 };
	int r;

	switch (c) {
	case OPT_CONNECT:
		a->connect = optarg;
		break;
	case OPT_CONFIG:
		break; /* read in pass 1 */
	case OPT_ALLOW_HOST_PATH:
		if (mcp_policy_allow_host_path(p, optarg, &err) < 0) {
			fprintf(stderr, "paddock mcp: --allow-host-path: %s\n", err.msg);
			return -EINVAL;
		}
		break;
	case OPT_EVENTS:
		a->events = optarg;
		break;
	case OPT_RESOLVE_HOSTS:
		a->resolve_hosts = optarg;
		break;
	case OPT_UPSTREAM_CA:
		a->upstream_ca = optarg;
		break;
	case OPT_HTTP:
		a->http = optarg;
		break;
	case OPT_HTTP_TOKEN_FILE:
		a->http_token_file = optarg;
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		r = apply_limit_flag(c, p, a);
		if (r != 0)
			return r;
		fprintf(stderr, "paddock mcp: see 'paddock mcp --help'\n");
		return -EINVAL;
	}
	return 1;
}

/* 1: continue; 0: exit 0 (--help); < 0: exit with an error (already printed) */
static int parse_args(int argc, char **argv, struct mcp_policy *p, struct args *a)
{
	paddock_error err = { 0 };
	int c, r;

	if (parse_files(argc, argv, p, a) < 0)
		return -EINVAL;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		const char *field = NULL;

		r = spec_flag_apply(p->spec, c, optarg, &field, &err);
		if (r < 0) {
			fprintf(stderr, "paddock mcp: %s%s%s\n", err.field,
				err.field[0] ? ": " : "", err.msg);
			return r;
		}
		if (r > 0)
			continue;
		r = apply_flag(c, p, a);
		if (r <= 0)
			return r;
	}
	if (optind < argc) {
		fprintf(stderr, "paddock mcp: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (paddock_spec_validate(p->spec, &err) < 0) {
		fprintf(stderr, "paddock mcp: %s%s%s\n", err.field, err.field[0] ? ": " : "",
			err.msg);
		return -EINVAL;
	}
	return 1;
}

/* ---- main ------------------------------------------------------------------------------- */

static int serve(struct session *s, struct mcp_backend *backend, const struct mcp_policy *p)
{
	struct event *sigs[3] = { NULL };
	const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct mcp_tools *tools = NULL;
	paddock_error err = { 0 };
	int r = -ENOMEM;

	if (mcp_tools_new(backend, p, s->base, &tools, &err) < 0 ||
	    mcp_server_new(tools, send_line, s, &s->server, &err) < 0) {
		fprintf(stderr, "paddock mcp: %s\n", err.msg);
		goto out;
	}
	/* stdio carries the server's own requests too: a person can be asked (elicitation) */
	mcp_server_set_requests(s->server, true);
	s->in = evbuffer_new();
	s->out = evbuffer_new();
	s->in_ev = event_new(s->base, STDIN_FILENO, EV_READ | EV_PERSIST, in_cb, s);
	s->out_ev = event_new(s->base, STDOUT_FILENO, EV_WRITE | EV_PERSIST, out_cb, s);
	s->grace_ev = evtimer_new(s->base, grace_cb, s);
	if (!s->in || !s->out || !s->in_ev || !s->out_ev || !s->grace_ev ||
	    event_add(s->in_ev, NULL) < 0)
		goto out;
	for (int i = 0; i < 3; i++) {
		sigs[i] = evsignal_new(s->base, signums[i], signal_cb, s->base);
		if (!sigs[i] || event_add(sigs[i], NULL) < 0)
			goto out;
	}
	r = event_base_dispatch(s->base) < 0 ? -EIO : 0;
out:
	/* calls in flight are cancelled (their commands killed), then every sandbox ends */
	s->server = mcp_server_free(s->server);
	mcp_tools_free(tools);
	/* answers already made still reach a client that reads them */
	if (s->out && evbuffer_get_length(s->out)) {
		fcntl(STDOUT_FILENO, F_SETFL, s->out_flags);
		while (evbuffer_get_length(s->out) && evbuffer_write(s->out, STDOUT_FILENO) > 0)
			;
	}
	for (int i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	if (s->in_ev)
		event_free(s->in_ev);
	if (s->out_ev)
		event_free(s->out_ev);
	if (s->grace_ev)
		event_free(s->grace_ev);
	if (s->in)
		evbuffer_free(s->in);
	if (s->out)
		evbuffer_free(s->out);
	return r;
}

/* The token file's first line; it must not be readable by others. */
static char *read_token(const char *path)
{
	char buf[512], *nl;
	struct stat st;
	FILE *f = fopen(path, "re");

	if (!f || fstat(fileno(f), &st) < 0 || !fgets(buf, sizeof(buf), f)) {
		fprintf(stderr, "paddock mcp: --http-token-file %s: %s\n", path,
			f ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	nl = strpbrk(buf, "\r\n");
	if (nl)
		*nl = '\0';
	if (strlen(buf) < 16 || (st.st_mode & 0077)) {
		fprintf(stderr,
			"paddock mcp: --http-token-file %s: expected a token of at least 16 "
			"characters in a file only its owner can read (chmod 600)\n",
			path);
		explicit_bzero(buf, sizeof(buf));
		return NULL;
	}
	nl = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return nl;
}

static bool loopback(const char *addr)
{
	return !strncmp(addr, "127.", 4) || !strcmp(addr, "::1") || !strcmp(addr, "localhost");
}

static int serve_http(struct event_base *base, const struct args *a, struct mcp_backend *backend,
		      const struct mcp_policy *p)
{
	struct mcp_http_opts o = { .max_sessions = a->max_sessions,
				   .idle_s = a->session_idle_s,
				   .gone_s = a->session_gone_s,
				   .max_message = a->max_message };
	struct event *sigs[3] = { NULL };
	const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	struct mcp_http *h = NULL;
	paddock_error err = { 0 };
	char addr[256], *colon, *end, *token = NULL;
	unsigned long port;
	int r = -EINVAL;

	snprintf(addr, sizeof(addr), "%s", a->http);
	colon = strrchr(addr, ':');
	port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!colon || colon == addr || !colon[1] || *end || port == 0 || port > 65535) {
		fprintf(stderr,
			"paddock mcp: --http: expected ADDR:PORT such as 127.0.0.1:8931 or "
			"[::1]:8931, got '%s'\n",
			a->http);
		return -EINVAL;
	}
	*colon = '\0';
	o.addr = addr;
	if (addr[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		o.addr = addr + 1;
	}
	o.port = (unsigned short)port;
	if (a->http_token_file && !(token = read_token(a->http_token_file)))
		return -EINVAL;
	if (!token && !loopback(o.addr)) {
		fprintf(stderr,
			"paddock mcp: --http %s is not loopback: anyone who reaches it could "
			"run code; give --http-token-file\n",
			a->http);
		return -EINVAL;
	}
	o.token = token;
	r = mcp_http_new(base, &o, backend, p, &h, &err);
	if (r < 0) {
		fprintf(stderr, "paddock mcp: --http: %s: %s\n", err.msg, strerror(err.code));
		goto out;
	}
	fprintf(stderr, "paddock mcp: serving MCP at http://%s/mcp\n", a->http);
	for (int i = 0; i < 3; i++) {
		sigs[i] = evsignal_new(base, signums[i], signal_cb, base);
		if (!sigs[i] || event_add(sigs[i], NULL) < 0)
			goto out;
	}
	r = event_base_dispatch(base) < 0 ? -EIO : 0;
out:
	mcp_http_free(h); /* every session's sandboxes end */
	for (int i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	return r;
}

int cmd_mcp(int argc, char **argv)
{
	struct mcp_policy policy = {
		.max_sandboxes = DEFAULT_MAX_SANDBOXES,
		.max_output = DEFAULT_MAX_OUTPUT,
		.max_read = DEFAULT_MAX_READ,
	};
	struct args a = { .max_message = MCP_MAX_MESSAGE_DEFAULT,
			  .idle_timeout_s = 3600,
			  .max_sessions = 8,
			  .session_idle_s = 1800,
			  .session_gone_s = 30 };
	struct session s = { 0 };
	struct mcp_backend *backend = NULL;
	paddock_error err = { 0 };
	FILE *events = NULL;
	int r, status = PADDOCK_EXIT_FAILURE;

	if (paddock_spec_new(&policy.spec, &err) < 0 ||
	    paddock_spec_set(policy.spec, "limits.timeout_s", DEFAULT_TIMEOUT_S, &err) < 0) {
		fprintf(stderr, "paddock mcp: %s\n", err.msg);
		goto out;
	}
	r = parse_args(argc, argv, &policy, &a);
	if (r <= 0) {
		status = r == 0 ? 0 : PADDOCK_EXIT_FAILURE;
		goto out;
	}
	s.max_message = a.max_message;
	/* a client gone while an answer is written must not kill the server before it cleans up */
	signal(SIGPIPE, SIG_IGN);
	s.base = event_base_new();
	if (!s.base) {
		fprintf(stderr, "paddock mcp: cannot make an event loop\n");
		goto out;
	}
	if (a.connect)
		r = mcp_backend_daemon_new(s.base, a.connect, a.idle_timeout_s, &backend, &err);
	else
		r = mcp_backend_embedded_new(s.base, a.resolve_hosts, a.upstream_ca, &backend,
					     &err);
	if (r < 0) {
		fprintf(stderr, "paddock mcp: %s%s%s\n", err.field, err.field[0] ? ": " : "",
			err.msg);
		goto out;
	}
	if (a.events && !a.connect) {
		events = strcmp(a.events, "-") ? fopen(a.events, "ae") : stderr;
		if (!events) {
			fprintf(stderr, "paddock mcp: --events %s: %s\n", a.events,
				strerror(errno));
			goto out;
		}
		r = mcp_backend_embedded_set_events(backend, events);
		if (r < 0) {
			fprintf(stderr, "paddock mcp: --events %s: %s\n", a.events, strerror(-r));
			goto out;
		}
	}
	if (a.http) {
		status = serve_http(s.base, &a, backend, &policy) < 0 ? PADDOCK_EXIT_FAILURE : 0;
		goto out;
	}
	s.in_flags = fcntl(STDIN_FILENO, F_GETFL);
	s.out_flags = fcntl(STDOUT_FILENO, F_GETFL);
	if (s.in_flags < 0 || s.out_flags < 0) {
		fprintf(stderr, "paddock mcp: stdin and stdout must be open\n");
		goto out;
	}
	fcntl(STDIN_FILENO, F_SETFL, s.in_flags | O_NONBLOCK);
	fcntl(STDOUT_FILENO, F_SETFL, s.out_flags | O_NONBLOCK);
	status = serve(&s, backend, &policy) < 0 ? PADDOCK_EXIT_FAILURE : 0;
	/* the flags are the file's, shared with whoever gave it: as they were */
	fcntl(STDIN_FILENO, F_SETFL, s.in_flags);
	fcntl(STDOUT_FILENO, F_SETFL, s.out_flags);
out:
	if (backend)
		backend->ops->free(backend);
	if (events && events != stderr)
		fclose(events);
	if (s.base)
		event_base_free(s.base);
	mcp_policy_release(&policy);
	return status;
}
