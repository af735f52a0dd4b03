/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd [--config FILE] [--socket PATH] [--state-dir DIR] [--listen ADDR:PORT --tokens FILE]
 *          [--max-upload BYTES] [--orphan-timeout S] [--destroy-on-exit]
 *
 * The config file is a JSON object with the same settings (docs/api.md "Running paddockd");
 * flags given after --config override it.
 *
 * Start-up: state dir (0700), SQLite store, adopt the sandboxes the store lists, then serve.
 * SIGTERM/SIGINT: stop accepting, let the loop finish what is in flight, release the
 * sandboxes for the next start (or destroy them with --destroy-on-exit).
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paddock/image.h"
#include "daemon.h"
#include "e2b.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: paddockd [--config FILE] [--socket PATH] [--state-dir DIR]\n"
		   "                [--listen ADDR:PORT --tokens FILE]\n"
		   "                [--max-upload BYTES] [--orphan-timeout SECONDS] "
		   "[--destroy-on-exit]\n"
		   "                [--resolve-hosts FILE] [--max-network none|allowlist|open]\n"
		   "                [--pool N] [--pool-max N] [--pool-templates N]\n"
		   "                [--pool-min-available SIZE|N%%]\n"
		   "                [--upstream-ca FILE]...\n"
		   "                [--event-log-max SIZE] [--event-log-keep N]\n"
		   "                [--stream-backlog-max SIZE]\n"
		   "                [--max-connections N] [--max-connections-per-peer N]\n"
		   "                [--max-sandboxes N] [--max-templates N]\n"
		   "                [--header-timeout SECONDS] [--image-store DIR]\n"
		   "                [--e2b ADDR:PORT [--e2b-domain NAME] [--e2b-templates FILE]]\n"
		   "Serves the paddock HTTP API (docs/api.md).\n");
}

static int load_tokens(struct daemon *d, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[512];

	if (!f) {
		fprintf(stderr, "paddockd: open tokens '%s': %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char tenant[SVC_MAX_TENANT + 1], token[256];
		struct tenant_token *t;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%64s %255s", tenant, token) != 2 || strlen(token) < 16 ||
		    strcmp(tenant, SVC_LOCAL_TENANT) == 0) {
			fprintf(stderr,
				"paddockd: tokens '%s': expected 'TENANT TOKEN' lines with "
				"tokens of at least 16 characters (and no tenant named 'local': "
				"the unix "
				"socket's)\n",
				path);
			fclose(f);
			return -1;
		}
		t = realloc(d->http->tokens, (d->http->n_tokens + 1) * sizeof(*t));
		if (!t) {
			fclose(f);
			return -1;
		}
		d->http->tokens = t;
		snprintf(t[d->http->n_tokens].tenant, sizeof(t->tenant), "%s", tenant);
		snprintf(t[d->http->n_tokens].token, sizeof(t->token), "%s", token);
		d->http->n_tokens++;
	}
	fclose(f);
	return 0;
}

#define DRAIN_MAX_S 30

/* Requests still waiting for a command's answer (not the streams a client follows). */
static bool in_flight(struct daemon *d)
{
	for (struct box *b = d->boxes; b; b = b->next)
		for (struct proc *p = b->procs; p; p = p->next)
			if (pdd_proc_waited_for(p))
				return true;
	return false;
}

static void drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	static int ticks;

	(void)fd;
	(void)what;
	if (!in_flight(d) || ++ticks > DRAIN_MAX_S * 20)
		event_base_loopexit(d->base, NULL);
}

/* SIGTERM/SIGINT: new requests get 503, those in flight finish (up to DRAIN_MAX_S). */
/* An operator-allowed host directory, resolved now (it must exist). */
static int add_host_path(struct daemon *d, const char *path)
{
	char *real = realpath(path, NULL), **n;

	if (!real) {
		fprintf(stderr, "paddockd: --allow-host-path '%s': %s\n", path, strerror(errno));
		return -1;
	}
	n = realloc(d->host_paths, (d->n_host_paths + 1) * sizeof(*n));
	if (!n) {
		free(real);
		return -1;
	}
	d->host_paths = n;
	d->host_paths[d->n_host_paths++] = real;
	return 0;
}

/* --event-log-max: a size ("64M"), at least 4 KiB; 0: never rotate */
static int parse_log_max(struct daemon *d, const char *s)
{
	uint64_t v = 0;

	if (paddock_parse_size(s, &v) < 0 || (v > 0 && v < 4096)) {
		fprintf(stderr,
			"paddockd: --event-log-max: expected a size such as '64M' (at least "
			"4K; 0: never rotate), got '%s'\n",
			s);
		return -1;
	}
	d->event_log_max = v;
	return 0;
}

/* --max-connections (C), --max-connections-per-peer (Q), --header-timeout (H) */
static int parse_http_limit(struct daemon *d, int which, const char *s)
{
	static const struct {
		int c;
		const char *name;
		long min, max;
	} limits[] = {
		{ 'C', "--max-connections", 1, 1 << 20 },
		{ 'Q', "--max-connections-per-peer", 1, 1 << 20 },
		{ 'H', "--header-timeout", 1, 3600 },
	};
	char *end = NULL;
	long v = strtol(s, &end, 10);

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		if (limits[i].c != which)
			continue;
		if (!*s || *end || v < limits[i].min || v > limits[i].max) {
			fprintf(stderr,
				"paddockd: %s: expected a number from %ld to %ld, got '%s'\n",
				limits[i].name, limits[i].min, limits[i].max, s);
			return -1;
		}
	}
	if (which == 'C')
		d->http->http_limits.max_conns = (unsigned)v;
	else if (which == 'Q')
		d->http->http_limits.max_per_peer = (unsigned)v;
	else
		d->http->http_limits.header_timeout_s = (unsigned)v;
	return 0;
}

/* --max-templates, --max-sandboxes: what a tenant may have at most */
#define MAX_PER_TENANT_MAX (1 << 20)
static int parse_per_tenant(const char *opt, const char *s, unsigned *ret)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < 1 || v > MAX_PER_TENANT_MAX) {
		fprintf(stderr, "paddockd: --%s: expected a number from 1 to %d, got '%s'\n", opt,
			MAX_PER_TENANT_MAX, s);
		return -1;
	}
	*ret = (unsigned)v;
	return 0;
}

/* --event-log-keep: rotated files kept, 0 to 100 */
static int parse_log_keep(struct daemon *d, const char *s)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < 0 || v > 100) {
		fprintf(stderr,
			"paddockd: --event-log-keep: expected a number from 0 to 100, got "
			"'%s'\n",
			s);
		return -1;
	}
	d->event_log_keep = (unsigned)v;
	return 0;
}

/*
 * {"socket": PATH, "state_dir": DIR, "listen": "ADDR:PORT", "tokens": FILE,
 *  "max_upload": BYTES, "orphan_timeout_s": S, "destroy_on_exit": BOOL,
 *  "max_network": "none"|"allowlist"|"open", "event_log_max": SIZE, "event_log_keep": N,
 *  "max_connections": N, "max_connections_per_peer": N, "header_timeout_s": S,
 *  "max_templates": N};
 * unknown keys and
 * wrong types are refused by name.
 */
static int load_config(struct daemon *d, const char *path, const char **listen_addr,
		       const char **tokens)
{
	static json_t *keep; /* the strings handed out live as long as the process */
	json_error_t jerr;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), *v;
	const char *k;

	if (!json_is_object(o)) {
		fprintf(stderr, "paddockd: config '%s': expected a JSON object: %s (line %d)\n",
			path, jerr.text, jerr.line);
		json_decref(o);
		return -1;
	}
	json_object_foreach(o, k, v)
	{
		bool str = json_is_string(v);
		const char *s = json_string_value(v);

		if (strcmp(k, "socket") == 0 && str && strlen(s) < sizeof(d->http->socket_path))
			snprintf(d->http->socket_path, sizeof(d->http->socket_path), "%s", s);
		else if (strcmp(k, "state_dir") == 0 && str && strlen(s) < 64)
			snprintf(d->state_dir, sizeof(d->state_dir), "%s", s);
		else if (strcmp(k, "listen") == 0 && str)
			*listen_addr = s;
		else if (strcmp(k, "tokens") == 0 && str)
			*tokens = s;
		else if (strcmp(k, "max_upload") == 0 && json_is_integer(v) &&
			 json_integer_value(v) > 0)
			d->http->max_upload = (uint64_t)json_integer_value(v);
		else if (strcmp(k, "orphan_timeout_s") == 0 && json_is_integer(v) &&
			 json_integer_value(v) > 0 && json_integer_value(v) < INT32_MAX)
			d->orphan_timeout_s = (int)json_integer_value(v);
		else if (strcmp(k, "destroy_on_exit") == 0 && json_is_boolean(v))
			d->destroy_on_exit = json_is_true(v);
		else if (strcmp(k, "max_network") == 0 && json_is_string(v) &&
			 svc_max_network_parse(json_string_value(v)) >= 0)
			d->max_net = svc_max_network_parse(json_string_value(v));
		else if (strcmp(k, "event_log_max") == 0 && str && parse_log_max(d, s) == 0)
			;
		else if ((strcmp(k, "max_connections") == 0 ||
			  strcmp(k, "max_connections_per_peer") == 0 ||
			  strcmp(k, "header_timeout_s") == 0) &&
			 json_is_integer(v) && json_integer_value(v) >= 0 &&
			 json_integer_value(v) <= INT32_MAX) {
			char num[24];

			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
			int which = strcmp(k, "header_timeout_s") == 0	? 'H'
				    : strcmp(k, "max_connections") == 0 ? 'C'
									: 'Q';

			if (parse_http_limit(d, which, num) < 0) {
				json_decref(o);
				return -1;
			}
		} else if (strcmp(k, "max_templates") == 0 && json_is_integer(v) &&
			   json_integer_value(v) >= 1 &&
			   json_integer_value(v) <= MAX_PER_TENANT_MAX)
			d->max_templates = (unsigned)json_integer_value(v);
		else if (strcmp(k, "max_sandboxes") == 0 && json_is_integer(v) &&
			 json_integer_value(v) >= 1 && json_integer_value(v) <= MAX_PER_TENANT_MAX)
			d->max_sandboxes = (unsigned)json_integer_value(v);
		else if (strcmp(k, "event_log_keep") == 0 && json_is_integer(v) &&
			 json_integer_value(v) >= 0 && json_integer_value(v) <= 100)
			d->event_log_keep = (unsigned)json_integer_value(v);
		else if (strcmp(k, "allow_host_paths") == 0 && json_is_array(v)) {
			size_t i;
			json_t *e;

			json_array_foreach(v, i, e)
			{
				if (!json_is_string(e) ||
				    add_host_path(d, json_string_value(e)) < 0) {
					json_decref(o);
					return -1;
				}
			}
		} else {
			fprintf(stderr,
				"paddockd: config '%s': '%s' is unknown or has a bad value\n", path,
				k);
			json_decref(o);
			return -1;
		}
	}
	json_decref(keep);
	keep = o;
	return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	struct timeval tv = { .tv_usec = 50000 };

	(void)what;
	if (d->stopping)
		return;
	fprintf(stderr, "paddockd: %s: stopping\n", strsignal((int)sig));
	d->stopping = true;
	d->http->sig_ev[2] = event_new(d->base, -1, EV_PERSIST, drain_cb, d);
	if (!d->http->sig_ev[2] || event_add(d->http->sig_ev[2], &tv) < 0)
		event_base_loopexit(d->base, NULL);
}

static int mkdir_p(const char *path)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0700) < 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -1;
	return chmod(buf, 0700);
}

/*
 * Each live sandbox holds about ten fds here (control socket, pidfd, root, cgroup, events):
 * the usual soft limit of 1024 would stop paddockd near a hundred sandboxes. The soft limit
 * goes to the hard one, and as root the hard one up to 1 Mi (fs.nr_open permitting).
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (paddock_host_root() && rl.rlim_max < (1u << 20)) {
		struct rlimit want = { 1u << 20, 1u << 20 };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

/*
 * --max-connections by default: 1024 per listener, but no more than a quarter of the open
 * files paddockd may have, so that clients alone never take the descriptors its sandboxes
 * need (about ten each).
 */
static unsigned default_max_conns(void)
{
	struct rlimit rl;
	rlim_t quarter;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return PDD_MAX_CONNECTIONS;
	quarter = rl.rlim_cur / 4;
	if (quarter < 16)
		return 16;
	return quarter < PDD_MAX_CONNECTIONS ? (unsigned)quarter : PDD_MAX_CONNECTIONS;
}

/* What the command line (and config) give that is not paddockd's state: used to start it. */
struct options {
	const char *listen_addr, *tokens;
	const char *resolve_hosts, *upstream_ca[8];
	size_t n_upstream_ca;
	const char *e2b_addr, *e2b_domain, *e2b_templates;
	long pool_max; /* --pool-max, -1: --pool times --pool-templates */
};

/* parse_options() and prepare(): go on starting (else: the exit status) */
#define GO_ON (-1)

/* Root's state and socket under /var/lib and /run; a user's under $XDG_RUNTIME_DIR. */
static void default_paths(struct daemon *d)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");

	if (paddock_host_root() || !rt) {
		snprintf(d->state_dir, sizeof(d->state_dir), "%s",
			 paddock_host_root() ? "/var/lib/paddock" : "/tmp/paddock");
		snprintf(d->http->socket_path, sizeof(d->http->socket_path),
			 "/run/paddock/paddockd.sock");
	} else {
		snprintf(d->state_dir, sizeof(d->state_dir), "%s/paddock/state", rt);
		snprintf(d->http->socket_path, sizeof(d->http->socket_path),
			 "%s/paddock/paddockd.sock", rt);
	}
}

/* --pool (P), --pool-max (M), --pool-templates (T): 0 to 4096 (templates: 1 to 4096) */
static int parse_pool_count(struct daemon *d, struct options *o, int c, const char *s)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);

	if (*end || end == s || v < (c == 'T') || v > 4096) {
		fprintf(stderr, "paddockd: --%s: expected a number from %d to 4096\n",
			c == 'P'   ? "pool"
			: c == 'M' ? "pool-max"
				   : "pool-templates",
			c == 'T');
		return -1;
	}
	if (c == 'P')
		d->pool.size = (unsigned)v;
	else if (c == 'M')
		o->pool_max = v;
	else
		d->pool.max_templates = (unsigned)v;
	return 0;
}

/* --pool-min-available: "10%" of MemTotal, or a size: "2G" */
static int parse_min_available(struct daemon *d, const char *s)
{
	size_t n = strlen(s);
	uint64_t v = 0;
	long pct = -1;
	bool share = n > 1 && s[n - 1] == '%';
	char *end = NULL;

	if (share)
		pct = strtol(s, &end, 10);
	if (share ? end != s + n - 1 || pct < 0 || pct > 99
		  : paddock_parse_size(s, &v) < 0 || v / 1024 == 0) {
		fprintf(stderr,
			"paddockd: --pool-min-available: expected a share of memory from "
			"0%% to 99%% or a size (\"2G\"), got '%s'\n",
			s);
		return -1;
	}
	d->pool.min_avail_pct = share ? (unsigned)pct : 0;
	d->pool.min_avail_kb = v / 1024;
	return 0;
}

/* --stream-backlog-max: an events follower's unsent bytes before it is closed */
static int parse_backlog_max(struct daemon *d, const char *s)
{
	uint64_t v = 0;

	if (paddock_parse_size(s, &v) < 0 || v < 4096 || v > (1ull << 30)) {
		fprintf(stderr,
			"paddockd: --stream-backlog-max: expected a size such as '1M' "
			"(4K to 1G), got '%s'\n",
			s);
		return -1;
	}
	d->http->stream_behind_max = v;
	return 0;
}

/* One option of the command line: 0, or -1 when it is refused (said on stderr). */
static int parse_option(struct daemon *d, struct options *o, int c, const char *arg)
{
	char *end = NULL;

	switch (c) {
	case 's':
		if (strlen(arg) >= sizeof(d->http->socket_path)) {
			fprintf(stderr, "paddockd: --socket: path too long\n");
			return -1;
		}
		snprintf(d->http->socket_path, sizeof(d->http->socket_path), "%s", arg);
		return 0;
	case 'd':
		if (strlen(arg) >= 64) {
			fprintf(stderr, "paddockd: --state-dir: expected a path under 64 bytes "
					"(sockets live below it)\n");
			return -1;
		}
		snprintf(d->state_dir, sizeof(d->state_dir), "%s", arg);
		return 0;
	case 'l':
		o->listen_addr = arg;
		return 0;
	case 't':
		o->tokens = arg;
		return 0;
	case 'u':
		d->http->max_upload = strtoull(arg, &end, 10);
		if (*end || d->http->max_upload == 0) {
			fprintf(stderr, "paddockd: --max-upload: expected bytes\n");
			return -1;
		}
		return 0;
	case 'o':
		d->orphan_timeout_s = (int)strtol(arg, &end, 10);
		if (*end || d->orphan_timeout_s < 1) {
			fprintf(stderr, "paddockd: --orphan-timeout: expected seconds\n");
			return -1;
		}
		return 0;
	case 'x':
		d->destroy_on_exit = true;
		return 0;
	case 'E':
		o->e2b_addr = arg;
		return 0;
	case 'D':
		if (strlen(arg) >= 100) {
			fprintf(stderr,
				"paddockd: --e2b-domain: expected a name under 100 bytes\n");
			return -1;
		}
		o->e2b_domain = arg;
		return 0;
	case 'X':
		o->e2b_templates = arg;
		return 0;
	case 'c':
		return load_config(d, arg, &o->listen_addr, &o->tokens);
	case 'a':
		return add_host_path(d, arg);
	case 'r':
		o->resolve_hosts = arg;
		return 0;
	case 'U':
		if (o->n_upstream_ca >= sizeof(o->upstream_ca) / sizeof(o->upstream_ca[0])) {
			fprintf(stderr, "paddockd: --upstream-ca: at most 8 files\n");
			return -1;
		}
		o->upstream_ca[o->n_upstream_ca++] = arg;
		return 0;
	case 'N':
		d->max_net = svc_max_network_parse(arg);
		if (d->max_net < 0) {
			fprintf(stderr,
				"paddockd: --max-network: expected none, allowlist or "
				"open, got '%s'\n",
				arg);
			return -1;
		}
		return 0;
	case 'B':
		return parse_backlog_max(d, arg);
	case 'P':
	case 'M':
	case 'T':
		return parse_pool_count(d, o, c, arg);
	case 'A':
		return parse_min_available(d, arg);
	case 'L':
		return parse_log_max(d, arg);
	case 'C':
	case 'Q':
	case 'H':
		return parse_http_limit(d, c, arg);
	case 'I':
		d->image_store = arg;
		return 0;
	case 'K':
		return parse_log_keep(d, arg);
	case 'm':
		return parse_per_tenant("max-templates", arg, &d->max_templates);
	case 'n':
		return parse_per_tenant("max-sandboxes", arg, &d->max_sandboxes);
	default:
		usage(stderr);
		return -1;
	}
}

/* The command line (and the config files it names): GO_ON, or the exit status. */
static int parse_options(struct daemon *d, struct options *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "tokens", required_argument, NULL, 't' },
		{ "max-upload", required_argument, NULL, 'u' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "destroy-on-exit", no_argument, NULL, 'x' },
		{ "config", required_argument, NULL, 'c' },
		{ "allow-host-path", required_argument, NULL, 'a' },
		{ "resolve-hosts", required_argument, NULL, 'r' },
		{ "max-network", required_argument, NULL, 'N' },
		{ "upstream-ca", required_argument, NULL, 'U' },
		{ "pool", required_argument, NULL, 'P' },
		{ "pool-max", required_argument, NULL, 'M' },
		{ "pool-templates", required_argument, NULL, 'T' },
		{ "pool-min-available", required_argument, NULL, 'A' },
		{ "e2b", required_argument, NULL, 'E' },
		{ "e2b-domain", required_argument, NULL, 'D' },
		{ "e2b-templates", required_argument, NULL, 'X' },
		{ "event-log-max", required_argument, NULL, 'L' },
		{ "max-connections", required_argument, NULL, 'C' },
		{ "max-connections-per-peer", required_argument, NULL, 'Q' },
		{ "header-timeout", required_argument, NULL, 'H' },
		{ "event-log-keep", required_argument, NULL, 'K' },
		{ "image-store", required_argument, NULL, 'I' },
		{ "stream-backlog-max", required_argument, NULL, 'B' },
		{ "max-templates", required_argument, NULL, 'm' },
		{ "max-sandboxes", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (parse_option(d, o, c, optarg) < 0)
			return 2;
	}
	d->pool.max =
		o->pool_max >= 0 ? (unsigned)o->pool_max : d->pool.size * d->pool.max_templates;
	if ((o->listen_addr && !o->tokens) || (o->tokens && !o->listen_addr && !o->e2b_addr)) {
		fprintf(stderr, "paddockd: --listen needs --tokens (every TCP client is a tenant), "
				"and --tokens needs --listen or --e2b\n");
		return 2;
	}
	return GO_ON;
}

/* The process and its directories: GO_ON, or the exit status. */
static int prepare(struct daemon *d, const struct options *o)
{
	char dir[sizeof(d->http->socket_path)], *slash;

	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (!d->http->http_limits.max_conns)
		d->http->http_limits.max_conns = default_max_conns();
	/*
	 * file access into sandboxes runs with the sandbox user's fsuid: no group of ours may
	 * count in those permission checks
	 */
	if (paddock_host_root() && setgroups(0, NULL) < 0) {
		fprintf(stderr, "paddockd: setgroups: %s\n", strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", d->http->socket_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir_p(dir) < 0) {
			fprintf(stderr, "paddockd: mkdir '%s': %s\n", dir, strerror(errno));
			return 1;
		}
	}
	if (mkdir_p(d->state_dir) < 0) {
		fprintf(stderr, "paddockd: mkdir '%s': %s\n", d->state_dir, strerror(errno));
		return 1;
	}
	if (o->tokens && load_tokens(d, o->tokens) < 0)
		return 1;
	return GO_ON;
}

/* The loop and libpaddock's context; then the core: the event log, the store, the sandboxes. */
static int start(struct daemon *d, const struct options *o, paddock_error *err)
{
	int r;

	d->base = event_base_new();
	if (!d->base)
		return paddock_fail(err, ENOMEM, "event base");
	r = paddock_ctx_new(d->base, &d->ctx, err);
	if (r < 0)
		return r;
	/* the store sandboxes take "image" from, and snapshots go to (api-snapshots.c) */
	if (!d->image_store)
		d->image_store = getenv("PADDOCK_IMAGE_STORE");
	if (d->image_store && (r = paddock_ctx_set_image_store(d->ctx, d->image_store, err)) < 0)
		return r;
	if (o->resolve_hosts &&
	    (r = paddock_ctx_set_resolve_hosts(d->ctx, o->resolve_hosts, err)) < 0)
		return r;
	for (size_t i = 0; i < o->n_upstream_ca; i++)
		if ((r = paddock_ctx_add_upstream_ca(d->ctx, o->upstream_ca[i], err)) < 0)
			return r;
	return svc_open(d, err);
}

/*
 * The unix socket, TCP (--listen) and the E2B front end (--e2b). -EINVAL with err left
 * empty: --listen is not ADDR:PORT (said on stderr).
 */
static int listen_all(struct daemon *d, const struct options *o, paddock_error *err)
{
	int r;

	r = pdd_http_setup(d, err);
	if (r < 0)
		return r;
	if (o->listen_addr) {
		char host[128];
		const char *colon = strrchr(o->listen_addr, ':');
		long port = colon ? strtol(colon + 1, NULL, 10) : 0;

		if (!colon || port < 1 || port > 65535 ||
		    (size_t)(colon - o->listen_addr) >= sizeof(host)) {
			fprintf(stderr, "paddockd: --listen: expected ADDR:PORT\n");
			return -EINVAL;
		}
		memcpy(host, o->listen_addr, (size_t)(colon - o->listen_addr));
		host[colon - o->listen_addr] = '\0';
		r = pdd_http_listen_tcp(d, host, (unsigned short)port, err);
		if (r < 0)
			return r;
	}
	if (o->e2b_addr)
		return e2b_start(d, o->e2b_addr, o->e2b_domain, o->e2b_templates, err);
	return 0;
}

/* Serves until SIGTERM or SIGINT has drained the requests in flight (on_signal()). */
static void run(struct daemon *d)
{
	d->http->sig_ev[0] = evsignal_new(d->base, SIGTERM, on_signal, d);
	d->http->sig_ev[1] = evsignal_new(d->base, SIGINT, on_signal, d);
	event_add(d->http->sig_ev[0], NULL);
	event_add(d->http->sig_ev[1], NULL);
	fprintf(stderr, "paddockd: serving %s (state in %s)\n", d->http->socket_path, d->state_dir);
	event_base_dispatch(d->base);
}

/* Stops serving, releases (or destroys) the sandboxes, frees what start() made. */
static void stop(struct daemon *d)
{
	e2b_stop(d);
	pdd_events_release(d);
	pdd_http_stop(d);
	if (d->ctx)
		svc_lifecycle_stop(d);
	for (int i = 0; i < 3; i++)
		if (d->http->sig_ev[i])
			event_free(d->http->sig_ev[i]);
	svc_close(d);
	paddock_ctx_free(d->ctx);
	if (d->base)
		event_base_free(d->base);
	pdd_http_gate_free(d);
	free(d->http->tokens);
	for (size_t i = 0; i < d->n_host_paths; i++)
		free(d->host_paths[i]);
	free(d->host_paths);
}

int main(int argc, char **argv)
{
	struct pdd_http http = { .max_upload = 256u << 20,
				 .stream_behind_max = PDD_STREAM_BEHIND_MAX,
				 .http_limits = { .max_per_peer = PDD_MAX_PER_PEER,
						  .header_timeout_s = PDD_HEADER_TIMEOUT_S } };
	struct daemon d = { .http = &http,
			    .orphan_timeout_s = 3600,
			    .max_net = 2,
			    .max_templates = SVC_MAX_TEMPLATES,
			    .max_sandboxes = SVC_MAX_SANDBOXES,
			    .event_log_fd = -1,
			    .state_fd = -1,
			    .hooks = &pdd_service_hooks,
			    .event_log_max = SVC_EVENT_LOG_MAX,
			    .event_log_keep = SVC_EVENT_LOG_KEEP,
			    .pool = { .max_templates = 4, .min_avail_pct = 10 } };
	struct options o = { .pool_max = -1 };
	paddock_error err = { 0 };
	char buf[600];
	int r;

	default_paths(&d);
	r = parse_options(&d, &o, argc, argv);
	if (r == GO_ON)
		r = prepare(&d, &o);
	if (r != GO_ON)
		return r;
	r = start(&d, &o, &err);
	if (r >= 0)
		r = listen_all(&d, &o, &err);
	if (r >= 0)
		run(&d);
	else if (err.code)
		fprintf(stderr, "paddockd: %s\n", paddock_error_format(&err, buf, sizeof(buf)));
	stop(&d);
	return r < 0 ? 1 : 0;
}
