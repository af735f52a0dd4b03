/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane (`/sandboxes`, `/v2/sandboxes`; docs/e2b.md): create, connect, list,
 * get, kill, set the timeout, metrics and the network policy of paddockd's own sandboxes
 * (struct box), translated both ways. Nothing here makes or ends a sandbox by itself:
 * svc_box_create() and svc_box_destroy() do, the spec parser judges what a request asks for,
 * svc_check_max_network() bounds its egress.
 *
 * Mapping (E2B -> paddock):
 *  - templateID: a template of --e2b-templates (a paddock spec); its name is kept in the
 *    sandbox's metadata under "e2b.template" ("e2b." keys are paddock's: hidden, refused);
 *  - timeout: ttl_s; envVars: the spec's env over the template's; metadata: metadata;
 *  - allow_internet_access, network.allowOut/denyOut: network.mode/allow/deny (map_network);
 *  - autoPause (lifecycle.onTimeout "pause"): on_timeout "pause"; pause, resume and connect
 *    of a paused sandbox: svc_box_pause() and svc_box_resume() (memory is always kept).
 * What cannot be honoured (autoResume, volumes, MCP, egress proxies, ...) is refused by name
 * when asked for and ignored when it is the default.
 *
 * This file routes, answers errors in E2B's shape and shows a sandbox (info, metrics); the
 * lifecycle is control-sandboxes.c's, the egress mapping control-network.c's, the listing
 * control-list.c's (e2b-control.h).
 *
 * Trust: r->tenant is the API key's tenant (e2b.c); every request is untrusted, bodies are
 * bounded (PDD_MAX_BODY), and another tenant's sandbox answers exactly like an unknown one.
 */
#include "e2b-control.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#define CLIENT_ID   "paddock"
#define NO_TEMPLATE "paddock" /* templateID of a sandbox made through paddock's own API */
#define MIB	    (1024.0 * 1024.0)

/* ---- replies: E2B's {"code": status, "message": "..."} ----------------------------------- */

void e2b_ctl_reply_empty(struct e2b_req *r, int status)
{
	evhttp_send_reply(r->req, status, NULL, NULL);
}

static void reply_method(struct e2b_req *r, const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", allow);
	e2b_reply_error(r, 405, "method not allowed: expected %s", allow);
}

/* A client's string in a message: printable ASCII, at most size - 1 bytes. */
const char *e2b_ctl_esc(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; s && *s && n + 1 < size; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f && *s != '\'') ? *s : '?';
	buf[n] = '\0';
	return buf;
}

void e2b_ctl_reply_not_found(struct e2b_req *r, const char *id)
{
	char e[72];

	e2b_reply_error(r, 404, "sandbox '%s' not found", e2b_ctl_esc(id, e, sizeof(e)));
}

/* paddock's request and spec field names as the E2B client wrote them */
static void e2b_field(const char *f, const struct netmap *nm, char *out, size_t size)
{
	unsigned long i;
	int k;

	if (strcmp(f, "ttl_s") == 0) {
		snprintf(out, size, "timeout");
	} else if (strcmp(f, "env") == 0 || strncmp(f, "env.", 4) == 0) {
		snprintf(out, size, "envVars%s", f + 3);
	} else if (strcmp(f, "network.mode") == 0) {
		snprintf(out, size, "network");
	} else if (nm && nm->allow_out && sscanf(f, "network.allow[%lu]%n", &i, &k) == 1 &&
		   f[k] == '\0') {
		/* allow holds allowOut's entries but "all traffic", in order */
		size_t j, seen = 0, at = 0;
		json_t *v;

		json_array_foreach(nm->allow_out, j, v)
		{
			if (e2b_ctl_all_traffic(json_string_value(v)))
				continue;
			if (seen++ == i) {
				at = j;
				break;
			}
		}
		snprintf(out, size, "network.allowOut[%zu]", at);
	} else if (nm && nm->deny_out && sscanf(f, "network.deny[%lu]%n", &i, &k) == 1 &&
		   f[k] == '\0') {
		snprintf(out, size, "network.denyOut[%lu]", i);
	} else {
		snprintf(out, size, "%s", f);
	}
}

static int status_from_errno(int code)
{
	switch (code) {
	case EINVAL:
	case E2BIG:
	case ENAMETOOLONG:
	case ERANGE:
	case EDOM:
	case EOPNOTSUPP:
		return 400;
	case ENOENT:
		return 404;
	case EEXIST:
	case EBUSY:
	case ESRCH:
		return 409;
	case EACCES:
	case EPERM:
		return 403;
	case EFBIG:
		return 413;
	case EAGAIN:
	case ENOSPC:
	case EDQUOT:
		return 429; /* the SDK's RateLimitError: a tenant's sandboxes, the host's room */
	default:
		return 500;
	}
}

void e2b_ctl_reply_paddock_error(struct e2b_req *r, const paddock_error *err,
				 const struct netmap *nm)
{
	char field[80];
	int code = err->code ? err->code : EIO;

	/* the state store could not record it: nothing changed, a retry may work */
	if (strcmp(err->field, "store") == 0)
		return e2b_reply_error(r, 503, "%s", err->msg);
	e2b_field(err->field, nm, field, sizeof(field));
	if (field[0])
		e2b_reply_error(r, status_from_errno(code), "%s: %s", field, err->msg);
	else
		e2b_reply_error(r, status_from_errno(code), "%s",
				err->msg[0] ? err->msg : strerror(code));
}

/* ---- requests ---------------------------------------------------------------------------- */

/*
 * The body as a JSON object (empty: {} when empty_ok); NULL once an error is answered, with
 * the status paddockd's API answers it with (400, 413 past PDD_MAX_BODY).
 */
json_t *e2b_ctl_body(struct e2b_req *r, bool empty_ok)
{
	paddock_error err = { 0 };
	json_t *o;

	if (!empty_ok && evbuffer_get_length(evhttp_request_get_input_buffer(r->req)) == 0) {
		e2b_reply_error(r, 400, "body: expected a JSON object, got an empty body");
		return NULL;
	}
	o = pdd_json_body(r->req, empty_ok, &err);
	if (!o)
		e2b_reply_error(r, pdd_http_status(&err, NULL), "%s: %s", err.field, err.msg);
	return o;
}

/*
 * A timeout in whole seconds, 0 to E2B_MAX_TTL_S (absent or null: def). False once the
 * error is answered.
 */
bool e2b_ctl_seconds(struct e2b_req *r, json_t *o, const char *key, int64_t def, int64_t *ret)
{
	json_t *v = json_object_get(o, key);
	double x;

	if (!v || json_is_null(v)) {
		*ret = def;
		return true;
	}
	x = json_is_number(v) ? json_number_value(v) : -1;
	if (!json_is_number(v) || !isfinite(x) || x < 0 || x > E2B_MAX_TTL_S || x != floor(x)) {
		e2b_reply_error(r, 400, "%s: expected whole seconds from 0 to %d", key,
				E2B_MAX_TTL_S);
		return false;
	}
	*ret = (int64_t)x;
	return true;
}

/* The query of the request, parsed; NULL once an error is answered. */
struct evkeyvalq *e2b_ctl_query(struct e2b_req *r, struct evkeyvalq *q)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
	const char *s = uri ? evhttp_uri_get_query(uri) : NULL;

	TAILQ_INIT(q);
	if (s && *s && evhttp_parse_query_str(s, q) < 0) {
		evhttp_clear_headers(q);
		e2b_reply_error(r, 400, "query: expected name=value pairs joined by '&'");
		return NULL;
	}
	return q;
}

/* ---- a sandbox as E2B sees it ------------------------------------------------------------- */

bool e2b_ctl_reserved(const char *key)
{
	return strncmp(key, RESERVED_PREFIX, strlen(RESERVED_PREFIX)) == 0;
}

const char *e2b_ctl_template_of(const struct box *b)
{
	return json_string_value(json_object_get(b->metadata, META_TEMPLATE));
}

/* a dead sandbox (its init ended) is gone for E2B: only DELETE still finds it */
bool e2b_ctl_live(const struct box *b)
{
	return !b->stopped && b->sb && paddock_sandbox_running(b->sb);
}

static json_t *client_metadata(const struct box *b)
{
	json_t *o = json_object(), *v;
	const char *k;

	json_object_foreach(b->metadata, k, v) if (!e2b_ctl_reserved(k) && json_is_string(v))
		json_object_set(o, k, v);
	return o;
}

struct box_size {
	double cpus, memory, disk; /* CPUs, bytes, bytes */
};

static void box_size(const struct box *b, struct box_size *s)
{
	paddock_spec *spec = NULL;

	memset(s, 0, sizeof(*s));
	if (paddock_spec_new(&spec, NULL) < 0)
		return;
	if (b->spec_json &&
	    paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), NULL) >= 0) {
		(void)paddock_spec_get_limit(spec, "cpus", &s->cpus, NULL);
		(void)paddock_spec_get_limit(spec, "memory", &s->memory, NULL);
		(void)paddock_spec_get_limit(spec, "disk", &s->disk, NULL);
	}
	paddock_spec_free(spec);
}

static int cpu_count(const struct box_size *s)
{
	return s->cpus >= 1 ? (int)ceil(s->cpus) : 1;
}

/* ListedSandbox: what every view of a sandbox has */
json_t *e2b_ctl_listed_json(struct box *b)
{
	const char *tmpl = e2b_ctl_template_of(b);
	struct box_size s;
	json_t *o;

	box_size(b, &s);
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:I,s:I,s:o,s:s,s:s,s:[]}", "sandboxID", b->id,
		      "templateID", tmpl ? tmpl : NO_TEMPLATE, "clientID", CLIENT_ID, "startedAt",
		      svc_time_json(b->created_ms), "endAt", svc_time_json(b->expires_ms),
		      "cpuCount", cpu_count(&s), "memoryMB", (json_int_t)(s.memory / MIB),
		      "diskSizeMB", (json_int_t)(s.disk / MIB), "metadata", client_metadata(b),
		      "state", b->paused ? "paused" : "running", "envdVersion", E2B_ENVD_VERSION,
		      "volumeMounts");
	if (o && tmpl)
		json_object_set_new(o, "alias", json_string(tmpl));
	return o;
}

/*
 * The sandbox's egress policy in E2B's words, where an allow entry beats a deny entry:
 * "none" denies all traffic, "allowlist" denies all but its allow rules.
 */
static json_t *network_info(const struct box *b)
{
	json_t *spec = b->spec_json ? json_loads(b->spec_json, 0, NULL) : NULL;
	json_t *net = json_object_get(spec, "network");
	const char *mode = json_string_value(json_object_get(net, "mode"));
	json_t *allow = json_object_get(net, "allow"), *deny = json_object_get(net, "deny");
	json_t *o = json_object(), *deny_out = json_array();

	if (!mode || strcmp(mode, "open") != 0)
		json_array_append_new(deny_out, json_string("0.0.0.0/0"));
	if (json_is_array(deny))
		json_array_extend(deny_out, deny);
	if (json_is_array(allow) && json_array_size(allow))
		json_object_set(o, "allowOut", allow);
	if (json_array_size(deny_out))
		json_object_set(o, "denyOut", deny_out);
	json_decref(deny_out);
	json_decref(spec);
	return o;
}

json_t *e2b_sandbox_json(struct e2b *e, struct box *b)
{
	const char *internet = json_string_value(json_object_get(b->metadata, META_INTERNET));
	char token[E2B_TOKEN_LEN + 1];
	json_t *o = e2b_ctl_listed_json(b);

	if (!o)
		return NULL;
	e2b_access_token(e, b->id, token);
	json_object_set_new(o, "envdAccessToken", json_string(token));
	json_object_set_new(o, "domain", json_string(e->sdk_domain));
	json_object_set_new(o, "network", network_info(b));
	json_object_set_new(o, "lifecycle",
			    json_pack("{s:s,s:b}", "onTimeout",
				      b->pause_on_timeout ? "pause" : "kill", "autoResume", 0));
	if (internet)
		json_object_set_new(o, "allowInternetAccess",
				    json_boolean(strcmp(internet, "true") == 0));
	explicit_bzero(token, sizeof(token));
	return o;
}

/* Sandbox: the answer to create and connect */
json_t *e2b_ctl_sandbox_json(struct e2b *e, struct box *b)
{
	const char *tmpl = e2b_ctl_template_of(b);
	char token[E2B_TOKEN_LEN + 1];
	json_t *o;

	e2b_access_token(e, b->id, token);
	o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "sandboxID", b->id, "templateID",
		      tmpl ? tmpl : NO_TEMPLATE, "clientID", CLIENT_ID, "envdVersion",
		      E2B_ENVD_VERSION, "envdAccessToken", token, "domain", e->sdk_domain);
	explicit_bzero(token, sizeof(token));
	if (o && tmpl)
		json_object_set_new(o, "alias", json_string(tmpl));
	return o;
}

/* ---- one sandbox ------------------------------------------------------------------------- */

/* The tenant's live sandbox `id`, or NULL with 404 answered. */
struct box *e2b_ctl_find_live(struct e2b_req *r, const char *id)
{
	struct box *b = svc_box_find(r->d, r->tenant, id);

	if (!b || !e2b_ctl_live(b)) {
		e2b_ctl_reply_not_found(r, id);
		return NULL;
	}
	return b;
}

/* a query number from min to max; false once the error is answered */
bool e2b_ctl_query_long(struct e2b_req *r, struct evkeyvalq *q, const char *key, long min, long max,
			long *ret)
{
	const char *s = evhttp_find_header(q, key);
	char *end;
	long v;

	if (!s)
		return true;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		e2b_reply_error(r, 400, "%s: expected a whole number from %ld to %ld", key, min,
				max);
		return false;
	}
	*ret = v;
	return true;
}

/*
 * GET /sandboxes/{id}/metrics: one sample, now (paddock keeps no history). CPU is the
 * average since the start, as a share of the sandbox's CPU limit; disk use is not measured.
 */
static void metrics(struct e2b_req *r, const char *id)
{
	struct evkeyvalq q;
	struct paddock_usage u = { 0 };
	struct box_size s;
	long start = 0, end = -1;
	int64_t now = svc_now_ms();
	double pct = 0, wall;
	struct box *b;
	json_t *a;

	if (!e2b_ctl_query(r, &q))
		return;
	if (!e2b_ctl_query_long(r, &q, "start", 0, 1L << 40, &start) ||
	    !e2b_ctl_query_long(r, &q, "end", 0, 1L << 40, &end))
		goto out;
	b = e2b_ctl_find_live(r, id);
	if (!b)
		goto out;
	a = json_array();
	if (now / 1000 >= start && (end < 0 || now / 1000 <= end)) {
		box_size(b, &s);
		(void)paddock_sandbox_usage(b->sb, &u, NULL);
		wall = (double)(now - b->created_ms) / 1000.0;
		if (wall > 0 && s.cpus > 0)
			pct = fmin(100.0, 100.0 * u.cpu_s / wall / s.cpus);
		json_array_append_new(a,
				      json_pack("{s:i,s:f,s:I,s:I,s:I,s:I,s:I,s:o,s:I}", "cpuCount",
						cpu_count(&s), "cpuUsedPct", round(pct * 100) / 100,
						"memUsed", (json_int_t)u.memory_bytes, "memTotal",
						(json_int_t)s.memory, "memCache", (json_int_t)0,
						"diskUsed", (json_int_t)0, "diskTotal",
						(json_int_t)s.disk, "timestamp", svc_time_json(now),
						"timestampUnix", (json_int_t)(now / 1000)));
	}
	e2b_reply_json(r, 200, a);
out:
	evhttp_clear_headers(&q);
}

/* ---- the rest of E2B's API --------------------------------------------------------------- */

/* GET /templates/aliases/{alias}: whether a template exists (Template.exists()) */
static void template_alias(struct e2b_req *r, const char *name)
{
	char e[72];

	json_t *stored = json_is_object(json_object_get(r->e->templates, name))
				 ? NULL
				 : svc_template_spec(r->d, r->tenant, name);

	if (!stored && !json_is_object(json_object_get(r->e->templates, name)))
		return e2b_reply_error(r, 404, "template '%s' not found",
				       e2b_ctl_esc(name, e, sizeof(e)));
	json_decref(stored);
	e2b_reply_json(r, 200, json_pack("{s:s,s:b}", "templateID", name, "public", 0));
}

/*
 * What paddock does not do. 501: the SDK raises SandboxError("501: <message>"); 404 would
 * read as "sandbox not found" and 409 as "already paused".
 */
static void unsupported(struct e2b_req *r, const char *what)
{
	e2b_reply_error(r, 501, "%s", what);
}

/* /sandboxes/{id}/<action> and /v2/sandboxes/{id}/<action> */
static void sandbox_action(struct e2b_req *r, const char *id, const char *action, bool v2)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(r->req);
	struct {
		const char *name, *msg;
	} unsupported_actions[] = {
		{ "snapshots", "snapshots are not supported by paddock" },
		{ "fork", "fork is not supported by paddock" },
		{ "logs", "sandbox logs are not supported by paddock (paddock's own API has "
			  "the sandbox's events)" },
		{ "refreshes", "refreshes are not supported by paddock; use POST "
			       "/sandboxes/{id}/timeout" },
	};

	if (v2 && strcmp(action, "connect") == 0) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return e2b_ctl_connect(r, id);
	}
	if (v2 && strcmp(action, "logs") != 0)
		return e2b_reply_error(r, 404, "no such route");
	if (!v2 && (strcmp(action, "pause") == 0 || strcmp(action, "resume") == 0)) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return strcmp(action, "pause") == 0 ? e2b_ctl_pause(r, id) : e2b_ctl_resume(r, id);
	}
	if (!v2 && strcmp(action, "timeout") == 0) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return e2b_ctl_set_timeout(r, id);
	}
	if (!v2 && strcmp(action, "metrics") == 0) {
		if (m != EVHTTP_REQ_GET)
			return reply_method(r, "GET");
		return metrics(r, id);
	}
	if (!v2 && strcmp(action, "network") == 0) {
		if (m != EVHTTP_REQ_PUT)
			return reply_method(r, "PUT");
		return e2b_ctl_put_network(r, id);
	}
	for (size_t i = 0; i < sizeof(unsupported_actions) / sizeof(unsupported_actions[0]); i++) {
		if (strcmp(action, unsupported_actions[i].name) != 0)
			continue;
		/* the sandbox first: the SDK maps a 404 to SandboxNotFoundError */
		if (!e2b_ctl_find_live(r, id))
			return;
		return unsupported(r, unsupported_actions[i].msg);
	}
	e2b_reply_error(r, 404, "no such route");
}

void e2b_control(struct e2b_req *r, char **seg, size_t n_seg)
{
	enum evhttp_cmd_type m = evhttp_request_get_command(r->req);
	bool v2 = n_seg >= 2 && strcmp(seg[0], "v2") == 0 && strcmp(seg[1], "sandboxes") == 0;
	size_t base = v2 ? 2 : 1;

	if (v2 || (n_seg >= 1 && strcmp(seg[0], "sandboxes") == 0)) {
		if (n_seg == base) {
			if (m == EVHTTP_REQ_POST)
				return e2b_ctl_create(r, v2);
			if (m == EVHTTP_REQ_GET)
				return e2b_ctl_list(r, v2);
			return reply_method(r, "GET, POST");
		}
		if (n_seg == base + 1 && !v2) {
			if (m == EVHTTP_REQ_GET) {
				struct box *b = e2b_ctl_find_live(r, seg[1]);

				if (b)
					e2b_reply_json(r, 200, e2b_sandbox_json(r->e, b));
				return;
			}
			if (m == EVHTTP_REQ_DELETE)
				return e2b_ctl_kill(r, seg[1]);
			return reply_method(r, "GET, DELETE");
		}
		if (n_seg == base + 2)
			return sandbox_action(r, seg[base], seg[base + 1], v2);
		return e2b_reply_error(r, 404, "no such route");
	}
	if (n_seg == 3 && strcmp(seg[0], "templates") == 0 && strcmp(seg[1], "aliases") == 0) {
		if (m != EVHTTP_REQ_GET)
			return reply_method(r, "GET");
		return template_alias(r, seg[2]);
	}
	if (n_seg >= 1 && (strcmp(seg[0], "templates") == 0 ||
			   (n_seg >= 2 && seg[0][0] == 'v' && strcmp(seg[1], "templates") == 0)))
		return unsupported(r, "templates are the operator's (paddockd --e2b-templates); "
				      "building or changing them through the API is not supported");
	if (n_seg >= 1 && strcmp(seg[0], "snapshots") == 0)
		return unsupported(r, "snapshots are not supported by paddock");
	if (n_seg >= 1 && (strcmp(seg[0], "volumes") == 0 || strcmp(seg[0], "volumecontent") == 0))
		return unsupported(r, "volumes are not supported by paddock");
	if (n_seg >= 1 && strcmp(seg[0], "secrets") == 0)
		return unsupported(r, "the secrets API is not supported by paddock (a template's "
				      "spec can hold secrets)");
	e2b_reply_error(r, 404, "no such route");
}
