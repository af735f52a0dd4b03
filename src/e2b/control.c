/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane (`/sandboxes`, `/v2/sandboxes`; docs/e2b.md): create, connect, list,
 * get, kill, set the timeout, metrics and the network policy of paddockd's own sandboxes
 * (struct box), translated both ways. Nothing here makes or ends a sandbox by itself:
 * pd_box_create() and pd_box_destroy() do, the spec parser judges what a request asks for,
 * pd_check_max_network() bounds its egress.
 *
 * Mapping (E2B -> paddock):
 *  - templateID: a template of --e2b-templates (a paddock spec); its name is kept in the
 *    sandbox's metadata under "e2b.template" ("e2b." keys are paddock's: hidden, refused);
 *  - timeout: ttl_s; envVars: the spec's env over the template's; metadata: metadata;
 *  - allow_internet_access, network.allowOut/denyOut: network.mode/allow/deny (map_network);
 *  - autoPause (lifecycle.onTimeout "pause"): on_timeout "pause"; pause, resume and connect
 *    of a paused sandbox: pd_box_pause() and pd_box_resume() (memory is always kept).
 * What cannot be honoured (autoResume, volumes, MCP, egress proxies, ...) is refused by name
 * when asked for and ignored when it is the default.
 *
 * Trust: r->tenant is the API key's tenant (e2b.c); every request is untrusted, bodies are
 * bounded (PD_MAX_BODY), and another tenant's sandbox answers exactly like an unknown one.
 */
#include "e2b.h"

#include <ctype.h>
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
#include <time.h>

#define RESERVED_PREFIX	    "e2b."
#define META_TEMPLATE	    "e2b.template"
#define META_INTERNET	    "e2b.allow_internet_access"
#define META_MAX	    32	/* pd_create_parse's bound on metadata entries */
#define LIST_LIMIT_MAX	    100 /* E2B's page size, and its default */
#define CONNECT_DEFAULT_S   300 /* ConnectSandboxV2.timeout's default */
#define CREATE_DEFAULT_V2_S 300 /* NewSandboxV2.timeout's default */
#define CREATE_DEFAULT_V1_S 15	/* NewSandbox.timeout's default */
#define CLIENT_ID	    "paddock"
#define NO_TEMPLATE	    "paddock" /* templateID of a sandbox made through paddock's own API */
#define MIB		    (1024.0 * 1024.0)

/* ---- replies: E2B's {"code": status, "message": "..."} ----------------------------------- */

static void reply_empty(struct e2b_req *r, int status)
{
	evhttp_send_reply(r->req, status, NULL, NULL);
}

static void reply_method(struct e2b_req *r, const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", allow);
	e2b_reply_error(r, 405, "method not allowed: expected %s", allow);
}

/* A client's string in a message: printable ASCII, at most size - 1 bytes. */
static const char *esc(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; s && *s && n + 1 < size; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f && *s != '\'') ? *s : '?';
	buf[n] = '\0';
	return buf;
}

static void reply_not_found(struct e2b_req *r, const char *id)
{
	char e[72];

	e2b_reply_error(r, 404, "sandbox '%s' not found", esc(id, e, sizeof(e)));
}

/*
 * The client's lists paddock's rules came from, so that an error about "network.allow[2]"
 * names the client's "network.allowOut[3]".
 */
struct netmap {
	json_t *allow_out, *deny_out; /* borrowed; NULL: the rules are the template's */
};

static bool is_all_traffic(const char *s)
{
	return s && (strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "::/0") == 0);
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

		json_array_foreach(nm->allow_out, j, v) {
			if (is_all_traffic(json_string_value(v)))
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

static void reply_paddock_error(struct e2b_req *r, const paddock_error *err,
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
 * the status paddockd's API answers it with (400, 413 past PD_MAX_BODY).
 */
static json_t *body_object(struct e2b_req *r, bool empty_ok)
{
	paddock_error err = { 0 };
	json_t *o;

	if (!empty_ok && evbuffer_get_length(evhttp_request_get_input_buffer(r->req)) == 0) {
		e2b_reply_error(r, 400, "body: expected a JSON object, got an empty body");
		return NULL;
	}
	o = pd_json_body(r->req, empty_ok, &err);
	if (!o)
		e2b_reply_error(r, pd_http_status(&err, NULL), "%s: %s", err.field, err.msg);
	return o;
}

/*
 * A timeout in whole seconds, 0 to PD_MAX_TTL_S (absent or null: def). False once the
 * error is answered.
 */
static bool get_seconds(struct e2b_req *r, json_t *o, const char *key, int64_t def, int64_t *ret)
{
	json_t *v = json_object_get(o, key);
	double x;

	if (!v || json_is_null(v)) {
		*ret = def;
		return true;
	}
	x = json_is_number(v) ? json_number_value(v) : -1;
	if (!json_is_number(v) || !isfinite(x) || x < 0 || x > PD_MAX_TTL_S || x != floor(x)) {
		e2b_reply_error(r, 400, "%s: expected whole seconds from 0 to %d", key, PD_MAX_TTL_S);
		return false;
	}
	*ret = (int64_t)x;
	return true;
}

/* The query of the request, parsed; NULL once an error is answered. */
static struct evkeyvalq *query_parse(struct e2b_req *r, struct evkeyvalq *q)
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

static bool is_reserved(const char *key)
{
	return strncmp(key, RESERVED_PREFIX, strlen(RESERVED_PREFIX)) == 0;
}

static const char *box_template(const struct box *b)
{
	return json_string_value(json_object_get(b->metadata, META_TEMPLATE));
}

/* a dead sandbox (its init ended) is gone for E2B: only DELETE still finds it */
static bool box_live(const struct box *b)
{
	return !b->stopped && b->sb && paddock_sandbox_running(b->sb);
}

static json_t *client_metadata(const struct box *b)
{
	json_t *o = json_object(), *v;
	const char *k;

	json_object_foreach(b->metadata, k, v)
		if (!is_reserved(k) && json_is_string(v))
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
static json_t *listed_json(struct box *b)
{
	const char *tmpl = box_template(b);
	struct box_size s;
	json_t *o;

	box_size(b, &s);
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:i,s:I,s:I,s:o,s:s,s:s,s:[]}", "sandboxID", b->id,
		      "templateID", tmpl ? tmpl : NO_TEMPLATE, "clientID", CLIENT_ID, "startedAt",
		      pd_time_json(b->created_ms), "endAt", pd_time_json(b->expires_ms), "cpuCount",
		      cpu_count(&s), "memoryMB", (json_int_t)(s.memory / MIB), "diskSizeMB",
		      (json_int_t)(s.disk / MIB), "metadata", client_metadata(b), "state",
		      b->paused ? "paused" : "running", "envdVersion", E2B_ENVD_VERSION, "volumeMounts");
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
	json_t *o = listed_json(b);

	if (!o)
		return NULL;
	e2b_access_token(e, b->id, token);
	json_object_set_new(o, "envdAccessToken", json_string(token));
	json_object_set_new(o, "domain", json_string(e->sdk_domain));
	json_object_set_new(o, "network", network_info(b));
	json_object_set_new(o, "lifecycle",
			    json_pack("{s:s,s:b}", "onTimeout", b->pause_on_timeout ? "pause" : "kill",
				      "autoResume", 0));
	if (internet)
		json_object_set_new(o, "allowInternetAccess",
				    json_boolean(strcmp(internet, "true") == 0));
	explicit_bzero(token, sizeof(token));
	return o;
}

/* Sandbox: the answer to create and connect */
static json_t *sandbox_json(struct e2b *e, struct box *b)
{
	const char *tmpl = box_template(b);
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

/* ---- what a request asks for --------------------------------------------------------------- */

/* A list of strings (absent or null: NULL). False once the error is answered. */
static bool string_list(struct e2b_req *r, json_t *o, const char *key, const char *field,
			json_t **ret)
{
	json_t *v = json_object_get(o, key), *m;
	size_t i;

	*ret = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_array(v))
		goto bad;
	json_array_foreach(v, i, m)
		if (!json_is_string(m))
			goto bad;
	*ret = v;
	return true;
bad:
	e2b_reply_error(r, 400, "%s: expected an array of CIDR blocks, addresses or host names", field);
	return false;
}

/* what the field holds asks for something: true, a non-empty array or object, a string */
static bool asks(json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return false;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	if (json_is_object(v))
		return json_object_size(v) > 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	return true;
}

/*
 * The parts of E2B's network configuration paddock has no counterpart for: refused when
 * they ask for something, so that no one believes in a protection that is not there.
 */
static bool check_network_extras(struct e2b_req *r, json_t *net)
{
	json_t *apt = json_object_get(net, "allowPublicTraffic");

	if (asks(json_object_get(net, "egressProxy"))) {
		e2b_reply_error(r, 400,
			    "network.egressProxy: a SOCKS5 egress proxy is not supported "
			    "by paddock");
		return false;
	}
	if (asks(json_object_get(net, "rules"))) {
		e2b_reply_error(r, 400,
			    "network.rules: request transforms are not supported by "
			    "paddock (a template's spec can bind secrets to hosts)");
		return false;
	}
	if (json_is_false(apt)) {
		e2b_reply_error(r, 400,
			    "network.allowPublicTraffic: paddock's sandbox URLs take no "
			    "traffic token; false is not supported");
		return false;
	}
	if (asks(json_object_get(net, "maskRequestHost"))) {
		e2b_reply_error(r, 400, "network.maskRequestHost: not supported by paddock");
		return false;
	}
	if (asks(json_object_get(net, "httpsPorts"))) {
		e2b_reply_error(r, 400,
			    "network.httpsPorts: paddock reaches a sandbox's ports over "
			    "plain HTTP only");
		return false;
	}
	return true;
}

/*
 * E2B's egress model onto paddock's. E2B: traffic is allowed unless denyOut matches it, and
 * an allowOut match beats a deny; allow_internet_access false is denyOut ["0.0.0.0/0"].
 * paddock: a mode and rules where deny beats allow. So:
 *  - allowOut holds "all traffic": open (public addresses), allowOut's other entries as
 *    allow rules (a CIDR opens a private range), no deny rules (allow beats them all);
 *  - all traffic denied: allowOut's entries as an allowlist, or none when there are none;
 *  - else: open, allowOut as allow rules and denyOut as deny rules. Here paddock's deny
 *    beats an allow that E2B would let through (docs/e2b.md): stricter, never wider.
 * aia: allow_internet_access, -1 when absent. Returns {"mode", "allow", "deny"}; the lists
 * are recorded in nm for error messages.
 */
static json_t *map_network(int aia, json_t *allow_out, json_t *deny_out, struct netmap *nm)
{
	json_t *allow = json_array(), *deny = json_array(), *v, *o;
	bool allow_all = false, deny_all = aia == 0;
	const char *mode;
	size_t i;

	json_array_foreach(allow_out, i, v) {
		if (is_all_traffic(json_string_value(v)))
			allow_all = true;
		else
			json_array_append(allow, v);
	}
	json_array_foreach(deny_out, i, v)
		deny_all |= is_all_traffic(json_string_value(v));
	if (allow_all)
		mode = "open";
	else if (deny_all)
		mode = json_array_size(allow) ? "allowlist" : "none";
	else
		mode = "open";
	if (!allow_all && !deny_all && deny_out)
		json_array_extend(deny, deny_out);
	o = json_pack("{s:s,s:o,s:o}", "mode", mode, "allow", allow, "deny", deny);
	nm->allow_out = allow_out;
	nm->deny_out = deny_out;
	return o;
}

/* allow_internet_access: 1, 0, or -1 when absent; -2 once the error is answered */
static int get_internet(struct e2b_req *r, json_t *o)
{
	json_t *v = json_object_get(o, "allow_internet_access");

	if (!v || json_is_null(v))
		return -1;
	if (!json_is_boolean(v)) {
		e2b_reply_error(r, 400, "allow_internet_access: expected true or false");
		return -2;
	}
	return json_is_true(v);
}

/* ---- create ------------------------------------------------------------------------------ */

/* the create fields paddock cannot honour, refused by name when they ask for something */
static bool check_unsupported(struct e2b_req *r, json_t *body)
{
	json_t *resume = json_object_get(body, "autoResume"), *ap = json_object_get(body, "autoPause");

	if (ap && !json_is_null(ap) && !json_is_boolean(ap)) {
		e2b_reply_error(r, 400, "autoPause: expected true or false");
		return false;
	}
	if (json_is_true(json_object_get(resume, "enabled"))) {
		e2b_reply_error(r, 400,
			    "autoResume: traffic does not resume a paused paddock sandbox; "
			    "Sandbox.connect() does");
		return false;
	}
	if (asks(json_object_get(body, "volumeMounts"))) {
		e2b_reply_error(r, 400,
			    "volumeMounts: volumes are not supported by paddock (a "
			    "template's spec can bind host directories)");
		return false;
	}
	if (asks(json_object_get(body, "mcp"))) {
		e2b_reply_error(r, 400, "mcp: the MCP gateway is not supported by paddock");
		return false;
	}
	if (asks(json_object_get(json_object_get(body, "iam"), "tokens"))) {
		e2b_reply_error(r, 400,
			    "iam.tokens: workload identity tokens are not supported by "
			    "paddock");
		return false;
	}
	return true;
}

/* metadata: string values, no reserved key, room for paddock's own entries */
static bool check_metadata(struct e2b_req *r, json_t *meta)
{
	const char *k;
	json_t *v;

	if (!meta || json_is_null(meta))
		return true;
	if (!json_is_object(meta)) {
		e2b_reply_error(r, 400, "metadata: expected an object of string values");
		return false;
	}
	if (json_object_size(meta) > META_MAX - 2) {
		e2b_reply_error(r, 400, "metadata: expected at most %d entries", META_MAX - 2);
		return false;
	}
	json_object_foreach(meta, k, v) {
		char e[72];

		if (is_reserved(k)) {
			e2b_reply_error(r, 400,
				    "metadata.%s: keys starting '" RESERVED_PREFIX
				    "' are reserved for paddock",
				    esc(k, e, sizeof(e)));
			return false;
		}
		if (!json_is_string(v)) {
			e2b_reply_error(r, 400, "metadata.%s: expected a string", esc(k, e, sizeof(e)));
			return false;
		}
	}
	return true;
}

/* envVars over the template's env; false once the error is answered */
static bool merge_env(struct e2b_req *r, json_t *spec, json_t *env_vars)
{
	json_t *env = json_object_get(spec, "env"), *v;
	const char *k;

	if (!env_vars || json_is_null(env_vars))
		return true;
	if (!json_is_object(env_vars)) {
		e2b_reply_error(r, 400, "envVars: expected an object of string values");
		return false;
	}
	if (!json_is_object(env)) {
		env = json_object();
		json_object_set_new(spec, "env", env);
	}
	json_object_foreach(env_vars, k, v) {
		char e[72];

		if (!json_is_string(v)) {
			e2b_reply_error(r, 400, "envVars.%s: expected a string", esc(k, e, sizeof(e)));
			return false;
		}
		json_object_set(env, k, v); /* the spec parser judges the name */
	}
	return true;
}

/*
 * The network section of the new sandbox's spec: the client's, mapped, over the template's
 * (its other fields, such as max_connections, stay); the template's when the client asks
 * nothing. E2B gives internet access by default: a template without a network section gets
 * "open" when the client asks for internet access, and when it asks nothing, "open" if
 * --max-network allows it, else "none" (an explicit ask beyond --max-network is a 403).
 */
static bool create_network(struct e2b_req *r, json_t *body, json_t *spec, struct netmap *nm)
{
	json_t *net = json_object_get(body, "network"), *allow_out, *deny_out, *tnet, *m;
	int aia = get_internet(r, body);

	if (aia == -2)
		return false;
	if (net && !json_is_null(net) && !json_is_object(net)) {
		e2b_reply_error(r, 400, "network: expected an object");
		return false;
	}
	if (!check_network_extras(r, net) ||
	    !string_list(r, net, "allowOut", "network.allowOut", &allow_out) ||
	    !string_list(r, net, "denyOut", "network.denyOut", &deny_out))
		return false;
	tnet = json_object_get(spec, "network");
	if (!allow_out && !deny_out && aia != 0) {
		if (json_is_object(tnet))
			return true;
		json_object_set_new(spec, "network",
				    json_pack("{s:s}", "mode",
					      (aia == 1 || r->d->max_net >= 2) ? "open" : "none"));
		return true;
	}
	m = map_network(aia, allow_out, deny_out, nm);
	if (!m) {
		e2b_reply_error(r, 500, "out of memory");
		return false;
	}
	if (json_is_object(tnet))
		json_object_update(tnet, m);
	else
		json_object_set(spec, "network", m);
	json_decref(m);
	return true;
}

static void create(struct e2b_req *r, bool v2)
{
	json_t *body = body_object(r, true), *tmpl_v, *spec = NULL, *meta, *cmeta;
	struct netmap nm = {0};
	paddock_error err = {0};
	const char *tmpl;
	struct box *b = NULL;
	int64_t ttl;
	char e[72];
	int aia;

	if (!body)
		return;
	tmpl_v = json_object_get(body, "templateID");
	if (tmpl_v && !json_is_string(tmpl_v)) {
		e2b_reply_error(r, 400, "templateID: expected a template name");
		goto out;
	}
	tmpl = tmpl_v ? json_string_value(tmpl_v) : "base";
	/* --e2b-templates first, then the tenant's templates in paddockd (POST /v1/templates) */
	spec = json_is_object(json_object_get(r->e->templates, tmpl))
		       ? json_deep_copy(json_object_get(r->e->templates, tmpl))
		       : pd_template_spec(r->d, r->tenant, tmpl);
	if (!spec) {
		e2b_reply_error(r, 404, "template '%s' not found", esc(tmpl, e, sizeof(e)));
		goto out;
	}
	cmeta = json_object_get(body, "metadata");
	if (!get_seconds(r, body, "timeout", v2 ? CREATE_DEFAULT_V2_S : CREATE_DEFAULT_V1_S,
			 &ttl) ||
	    !check_unsupported(r, body) || !check_metadata(r, cmeta))
		goto out;
	if (!merge_env(r, spec, json_object_get(body, "envVars")) ||
	    !create_network(r, body, spec, &nm))
		goto out;
	/* envd's working directory, and so the code interpreter's contexts' (E2B's default) */
	if (!json_object_get(spec, "cwd"))
		json_object_set_new(spec, "cwd", json_string("/home/user"));
	meta = json_is_object(cmeta) ? json_deep_copy(cmeta) : json_object();
	json_object_set_new(meta, META_TEMPLATE, json_string(tmpl));
	aia = get_internet(r, body);
	if (aia >= 0)
		json_object_set_new(meta, META_INTERNET, json_string(aia ? "true" : "false"));
	json_object_set_new(spec, "metadata", meta);
	json_object_set_new(spec, "ttl_s", json_integer(ttl));
	/* paused with its memory whatever autoPauseMemory says: a freezer keeps it all */
	if (json_is_true(json_object_get(body, "autoPause")))
		json_object_set_new(spec, "on_timeout", json_string("pause"));
	if (pd_box_create(r->d, r->tenant, spec, &b, &err) < 0) {
		reply_paddock_error(r, &err, &nm);
		goto out;
	}
	e2b_reply_json(r, 201, sandbox_json(r->e, b));
out:
	json_decref(spec);
	json_decref(body);
}

/* ---- one sandbox ------------------------------------------------------------------------- */

/* The tenant's live sandbox `id`, or NULL with 404 answered. */
static struct box *find_live(struct e2b_req *r, const char *id)
{
	struct box *b = pd_box_find(r->d, r->tenant, id);

	if (!b || !box_live(b)) {
		reply_not_found(r, id);
		return NULL;
	}
	return b;
}

/* As PUT /v1/sandboxes/{id}/ttl: recorded so a restart keeps it, or unchanged (503). */
static bool set_expiry(struct e2b_req *r, struct box *b, int64_t seconds)
{
	int64_t ttl = b->ttl_s, expires = b->expires_ms;
	paddock_error err = { 0 };

	b->ttl_s = seconds;
	b->expires_ms = pd_now_ms() + seconds * 1000;
	if (pd_box_persist(b, &err) < 0) {
		b->ttl_s = ttl;
		b->expires_ms = expires;
		reply_paddock_error(r, &err, NULL);
		return false;
	}
	return true;
}

/*
 * Resumes a paused sandbox, which then ends `t` seconds from now, as E2B's resume does
 * (a paused one's expiry was its time kept paused). False once the error is answered.
 */
static bool resume_for(struct e2b_req *r, struct box *b, int64_t t)
{
	paddock_error err = { 0 };

	if (pd_box_resume(b, &err) < 0) {
		reply_paddock_error(r, &err, NULL);
		return false;
	}
	return set_expiry(r, b, t);
}

/*
 * A sandbox stopped through paddockd's API (POST /v1/sandboxes/{id}/stop) is started, and
 * then ends `t` seconds from now, as a resumed one. False once the error is answered.
 */
static bool start_for(struct e2b_req *r, struct box *b, int64_t t)
{
	paddock_error err = { 0 };

	if (pd_box_start(b, &err) < 0) {
		reply_paddock_error(r, &err, NULL);
		return false;
	}
	return set_expiry(r, b, t);
}

/*
 * POST /v2/sandboxes/{id}/connect: a running sandbox's timeout only grows (200); a paused
 * one is resumed with the timeout (201, as E2B answers a resume); one stopped through
 * paddockd's API is started (201: E2B has no stop, only this way back).
 */
static void connect_box(struct e2b_req *r, const char *id)
{
	json_t *body = body_object(r, true);
	bool resumed = false;
	struct box *b;
	int64_t t;

	if (!body)
		return;
	if (!get_seconds(r, body, "timeout", CONNECT_DEFAULT_S, &t))
		goto out;
	b = pd_box_find(r->d, r->tenant, id);
	if (b && b->stopped && b->kept_image[0]) {
		if (!start_for(r, b, t))
			goto out;
		e2b_reply_json(r, 201, sandbox_json(r->e, b));
		goto out;
	}
	b = find_live(r, id);
	if (!b)
		goto out;
	pd_box_touch(b);
	if (b->paused) {
		if (!resume_for(r, b, t))
			goto out;
		resumed = true;
	} else if (pd_now_ms() + t * 1000 > b->expires_ms && !set_expiry(r, b, t)) {
		goto out;
	}
	e2b_reply_json(r, resumed ? 201 : 200, sandbox_json(r->e, b));
out:
	json_decref(body);
}

/* POST /sandboxes/{id}/pause: 204; 409 when it is paused already (the SDK's false) */
static void pause_box(struct e2b_req *r, const char *id)
{
	json_t *body = body_object(r, true);
	paddock_error err = { 0 };
	struct box *b;
	char e[72];

	if (!body)
		return;
	json_decref(body); /* "memory": false asks for less than a freezer keeps: all is kept */
	b = find_live(r, id);
	if (!b)
		return;
	if (b->paused)
		return e2b_reply_error(r, 409, "sandbox '%s' is already paused",
				       esc(id, e, sizeof(e)));
	if (pd_box_pause(b, &err) < 0)
		return reply_paddock_error(r, &err, NULL);
	reply_empty(r, 204);
}

/* POST /sandboxes/{id}/resume (E2B's older call): 201 with the sandbox; 409 when running */
static void resume_box(struct e2b_req *r, const char *id)
{
	json_t *body = body_object(r, true);
	struct box *b;
	int64_t t;
	char e[72];

	if (!body)
		return;
	if (!get_seconds(r, body, "timeout", CREATE_DEFAULT_V1_S, &t))
		goto out;
	b = find_live(r, id);
	if (!b)
		goto out;
	if (!b->paused) {
		e2b_reply_error(r, 409, "sandbox '%s' is already running", esc(id, e, sizeof(e)));
		goto out;
	}
	if (resume_for(r, b, t))
		e2b_reply_json(r, 201, sandbox_json(r->e, b));
out:
	json_decref(body);
}

/* POST /sandboxes/{id}/timeout: the sandbox ends `timeout` seconds from now */
static void set_timeout(struct e2b_req *r, const char *id)
{
	json_t *body = body_object(r, false);
	struct box *b;
	int64_t t;

	if (!body)
		return;
	if (!json_is_number(json_object_get(body, "timeout"))) {
		e2b_reply_error(r, 400, "timeout: expected whole seconds from 0 to %d", PD_MAX_TTL_S);
		goto out;
	}
	if (!get_seconds(r, body, "timeout", 0, &t))
		goto out;
	b = find_live(r, id);
	if (!b)
		goto out;
	if (set_expiry(r, b, t))
		reply_empty(r, 204);
out:
	json_decref(body);
}

static void kill_box(struct e2b_req *r, const char *id)
{
	struct box *b = pd_box_find(r->d, r->tenant, id);

	if (!b)
		return reply_not_found(r, id);
	paddock_error err = { 0 };

	/* 204 once init is killed; the kernel's teardown finishes off the request path */
	if (pd_box_delete(b, "deleted", NULL, false, &err) < 0)
		return reply_paddock_error(r, &err, NULL);
	reply_empty(r, 204);
}

/* a query number from min to max; false once the error is answered */
static bool query_long(struct e2b_req *r, struct evkeyvalq *q, const char *key, long min, long max,
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
		e2b_reply_error(r, 400, "%s: expected a whole number from %ld to %ld", key, min, max);
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
	struct paddock_usage u = {0};
	struct box_size s;
	long start = 0, end = -1;
	int64_t now = pd_now_ms();
	double pct = 0, wall;
	struct box *b;
	json_t *a;

	if (!query_parse(r, &q))
		return;
	if (!query_long(r, &q, "start", 0, 1L << 40, &start) ||
	    !query_long(r, &q, "end", 0, 1L << 40, &end))
		goto out;
	b = find_live(r, id);
	if (!b)
		goto out;
	a = json_array();
	if (now / 1000 >= start && (end < 0 || now / 1000 <= end)) {
		box_size(b, &s);
		(void)paddock_sandbox_usage(b->sb, &u, NULL);
		wall = (double)(now - b->created_ms) / 1000.0;
		if (wall > 0 && s.cpus > 0)
			pct = fmin(100.0, 100.0 * u.cpu_s / wall / s.cpus);
		json_array_append_new(
			a, json_pack("{s:i,s:f,s:I,s:I,s:I,s:I,s:I,s:o,s:I}", "cpuCount",
				     cpu_count(&s), "cpuUsedPct", round(pct * 100) / 100, "memUsed",
				     (json_int_t)u.memory_bytes, "memTotal", (json_int_t)s.memory,
				     "memCache", (json_int_t)0, "diskUsed", (json_int_t)0,
				     "diskTotal", (json_int_t)s.disk, "timestamp",
				     pd_time_json(now), "timestampUnix", (json_int_t)(now / 1000)));
	}
	e2b_reply_json(r, 200, a);
out:
	evhttp_clear_headers(&q);
}

/*
 * PUT /sandboxes/{id}/network: E2B replaces the whole egress configuration; a field left
 * out is cleared (so {} opens the sandbox to the internet, as in E2B).
 */
static void put_network(struct e2b_req *r, const char *id)
{
	json_t *body = body_object(r, false), *allow_out, *deny_out, *net = NULL, *old_aia;
	paddock_error err = {0};
	struct netmap nm = {0};
	struct box *b;
	int aia, k;

	if (!body)
		return;
	aia = get_internet(r, body);
	if (aia == -2 || !check_network_extras(r, body) ||
	    !string_list(r, body, "allowOut", "network.allowOut", &allow_out) ||
	    !string_list(r, body, "denyOut", "network.denyOut", &deny_out))
		goto out;
	b = find_live(r, id);
	if (!b)
		goto out;
	net = map_network(aia, allow_out, deny_out, &nm);
	/* the metadata first: pd_box_set_network() records both, or neither */
	old_aia = json_incref(json_object_get(b->metadata, META_INTERNET));
	if (aia >= 0)
		json_object_set_new(b->metadata, META_INTERNET,
				    json_string(aia ? "true" : "false"));
	else
		json_object_del(b->metadata, META_INTERNET);
	k = net ? pd_box_set_network(b, net, &err) : dfail(&err, ENOMEM, "network policy");
	if (k < 0) {
		if (old_aia)
			json_object_set(b->metadata, META_INTERNET, old_aia);
		else
			json_object_del(b->metadata, META_INTERNET);
	}
	json_decref(old_aia);
	if (k < 0 && err.code == EPERM && !strstr(err.msg, "--max-network")) {
		e2b_reply_error(r, 409,
			    "network: this sandbox was created without internet access "
			    "(mode 'none'), which cannot be opened later");
		goto out;
	}
	if (k < 0) {
		reply_paddock_error(r, &err, &nm);
		goto out;
	}
	reply_empty(r, 204);
out:
	json_decref(net);
	json_decref(body);
}

/* ---- list -------------------------------------------------------------------------------- */

struct list_query {
	json_t *metadata; /* key -> value every listed sandbox has */
	bool running;	  /* "running" is among the states asked for */
	bool paused;	  /* "paused" is */
	const char *tmpl; /* template ID or alias, or NULL */
	int64_t after_ms; /* started at or after, 0: any */
	bool asc;	  /* oldest first (default: newest first) */
	long limit;
	bool has_token;
	int64_t tok_ms; /* nextToken: where the page starts (created_ms, id) */
	char tok_id[32];
};

/* "%XX" and, with plus, "+" as a space; in place. False when the result holds a NUL. */
static bool url_decode(char *s, bool plus)
{
	size_t n = 0;
	char *out = evhttp_uridecode(s, plus, &n);
	bool ok = out && n == strlen(out) && n <= strlen(s);

	if (ok)
		memcpy(s, out, strlen(out) + 1);
	free(out);
	return ok;
}

/*
 * The SDK's metadata filter: URLSearchParams of encodeURIComponent'd keys and values, so a
 * pair is decoded twice once split (the query layer decoded the parameter once already).
 */
static bool parse_metadata_filter(struct e2b_req *r, const char *s, json_t *ret)
{
	char *copy = strdup(s), *save = NULL;
	bool ok = copy != NULL;

	for (char *p = copy ? strtok_r(copy, "&", &save) : NULL; ok && p;
	     p = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(p, '=');

		if (!eq || eq == p || json_object_size(ret) >= META_MAX) {
			ok = false;
			break;
		}
		*eq = '\0';
		ok = url_decode(p, true) && url_decode(p, false) && url_decode(eq + 1, true) &&
		     url_decode(eq + 1, false) && *p;
		/* a pair that is not UTF-8 must not drop out of the filter: refused */
		if (ok)
			ok = json_object_set_new(ret, p, json_string(eq + 1)) == 0;
	}
	free(copy);
	if (!ok)
		e2b_reply_error(r, 400,
			    "metadata: expected URL-encoded key=value pairs joined by '&' "
			    "(at most %d)",
			    META_MAX);
	return ok;
}

/* RFC 3339 ("2025-06-01T09:14:03.512Z", "...+02:00") to ms since the epoch */
static bool parse_time(const char *s, int64_t *ret)
{
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	int64_t ms = 0, off = 0;
	time_t t;

	if (!p)
		return false;
	if (*p == '.') {
		int digits = 0;

		for (p++; isdigit((unsigned char)*p); p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (digits == 0)
			return false;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-' || *p == ' ') && isdigit((unsigned char)p[1]) &&
		   isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
		   isdigit((unsigned char)p[5])) {
		/* a "+" the query layer turned into a space is still an east offset */
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
		      ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
		p += 6;
	} else {
		return false;
	}
	if (*p)
		return false;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return false;
	*ret = ((int64_t)t - off) * 1000 + ms;
	return true;
}

static bool parse_states(struct e2b_req *r, struct evkeyvalq *q, struct list_query *lq)
{
	bool any = false;

	lq->running = lq->paused = true; /* no state asked: both */
	for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		char buf[64], *save = NULL;

		if (strcmp(kv->key, "state") != 0)
			continue;
		if (!any)
			lq->running = lq->paused = false;
		any = true;
		snprintf(buf, sizeof(buf), "%s", kv->value);
		for (char *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
			if (strcmp(s, "running") == 0) {
				lq->running = true;
			} else if (strcmp(s, "paused") == 0) {
				lq->paused = true;
			} else {
				e2b_reply_error(r, 400, "state: expected 'running' or 'paused'");
				return false;
			}
		}
	}
	return true;
}

static bool parse_list_query(struct e2b_req *r, struct evkeyvalq *q, bool v2, struct list_query *lq)
{
	const char *meta = evhttp_find_header(q, "metadata");
	const char *after = evhttp_find_header(q, "startedAfter");
	const char *order = evhttp_find_header(q, "order");
	const char *token = evhttp_find_header(q, "nextToken");

	lq->limit = v2 ? LIST_LIMIT_MAX : PD_MAX_SANDBOXES;
	if (meta && *meta && !parse_metadata_filter(r, meta, lq->metadata))
		return false;
	if (!parse_states(r, q, lq))
		return false;
	if (!v2)
		return true;
	lq->tmpl = evhttp_find_header(q, "template");
	if (lq->tmpl && !*lq->tmpl)
		lq->tmpl = NULL;
	if (after && *after && !parse_time(after, &lq->after_ms)) {
		e2b_reply_error(r, 400,
			    "startedAfter: expected an RFC 3339 time such as "
			    "'2025-06-01T09:14:03.512Z'");
		return false;
	}
	if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
		e2b_reply_error(r, 400, "order: expected 'asc' or 'desc'");
		return false;
	}
	lq->asc = order && strcmp(order, "asc") == 0;
	if (!query_long(r, q, "limit", 1, LIST_LIMIT_MAX, &lq->limit))
		return false;
	if (token && *token) {
		char *end;
		long long ms;

		errno = 0;
		ms = strtoll(token, &end, 10);
		if (errno || end == token || *end != '-' || ms < 0 ||
		    strlen(end + 1) >= sizeof(lq->tok_id) || !end[1]) {
			e2b_reply_error(r, 400,
				    "nextToken: expected the X-Next-Token of the previous page");
			return false;
		}
		lq->has_token = true;
		lq->tok_ms = ms;
		snprintf(lq->tok_id, sizeof(lq->tok_id), "%s", end + 1);
	}
	return true;
}

/* the order of a page: by start time, then id (stable while sandboxes come and go) */
static int key_cmp(int64_t ams, const char *aid, int64_t bms, const char *bid)
{
	if (ams != bms)
		return ams < bms ? -1 : 1;
	return strcmp(aid, bid);
}

static int cmp_asc(const void *a, const void *b)
{
	const struct box *x = *(struct box *const *)a, *y = *(struct box *const *)b;

	return key_cmp(x->created_ms, x->id, y->created_ms, y->id);
}

static int cmp_desc(const void *a, const void *b)
{
	return -cmp_asc(a, b);
}

static bool list_match(struct e2b_req *r, struct box *b, const struct list_query *lq)
{
	const char *k, *tmpl = box_template(b);
	json_t *v;

	if (strcmp(b->tenant, r->tenant) != 0 || !box_live(b) ||
	    !(b->paused ? lq->paused : lq->running))
		return false;
	if (lq->tmpl && (!tmpl || strcmp(lq->tmpl, tmpl) != 0))
		return false;
	if (lq->after_ms && b->created_ms < lq->after_ms)
		return false;
	if (lq->has_token) {
		int c = key_cmp(b->created_ms, b->id, lq->tok_ms, lq->tok_id);

		if (lq->asc ? c < 0 : c > 0)
			return false;
	}
	json_object_foreach(lq->metadata, k, v) {
		json_t *have = is_reserved(k) ? NULL : json_object_get(b->metadata, k);

		if (!json_equal(have, v))
			return false;
	}
	return true;
}

/* GET /v2/sandboxes (paged, X-Next-Token) and GET /sandboxes (v1: every match) */
static void list(struct e2b_req *r, bool v2)
{
	struct list_query lq = {.metadata = json_object()};
	struct box **v = NULL;
	size_t n = 0, cap = 0;
	struct evkeyvalq q;
	json_t *a;

	if (!query_parse(r, &q)) {
		json_decref(lq.metadata);
		return;
	}
	if (!lq.metadata || !parse_list_query(r, &q, v2, &lq))
		goto out;
	for (struct box *b = r->d->boxes; b; b = b->next) {
		if (!list_match(r, b, &lq))
			continue;
		if (n == cap) {
			struct box **nv = reallocarray(v, cap ? cap * 2 : 16, sizeof(*v));

			if (!nv) {
				e2b_reply_error(r, 500, "out of memory");
				goto out;
			}
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[n++] = b;
	}
	if (n)
		qsort(v, n, sizeof(*v), lq.asc ? cmp_asc : cmp_desc);
	a = json_array();
	for (size_t i = 0; i < n && i < (size_t)lq.limit; i++)
		json_array_append_new(a, listed_json(v[i]));
	if (n > (size_t)lq.limit) {
		char tok[64];

		snprintf(tok, sizeof(tok), "%lld-%s", (long long)v[lq.limit]->created_ms,
			 v[lq.limit]->id);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "X-Next-Token", tok);
	}
	e2b_reply_json(r, 200, a);
out:
	free(v);
	json_decref(lq.metadata);
	evhttp_clear_headers(&q);
}

/* ---- the rest of E2B's API --------------------------------------------------------------- */

/* GET /templates/aliases/{alias}: whether a template exists (Template.exists()) */
static void template_alias(struct e2b_req *r, const char *name)
{
	char e[72];

	json_t *stored = json_is_object(json_object_get(r->e->templates, name))
				 ? NULL
				 : pd_template_spec(r->d, r->tenant, name);

	if (!stored && !json_is_object(json_object_get(r->e->templates, name)))
		return e2b_reply_error(r, 404, "template '%s' not found", esc(name, e, sizeof(e)));
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
		{"snapshots", "snapshots are not supported by paddock"},
		{"fork", "fork is not supported by paddock"},
		{"logs", "sandbox logs are not supported by paddock (paddock's own API has "
			 "the sandbox's events)"},
		{"refreshes", "refreshes are not supported by paddock; use POST "
			      "/sandboxes/{id}/timeout"},
	};

	if (v2 && strcmp(action, "connect") == 0) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return connect_box(r, id);
	}
	if (v2 && strcmp(action, "logs") != 0)
		return e2b_reply_error(r, 404, "no such route");
	if (!v2 && (strcmp(action, "pause") == 0 || strcmp(action, "resume") == 0)) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return strcmp(action, "pause") == 0 ? pause_box(r, id) : resume_box(r, id);
	}
	if (!v2 && strcmp(action, "timeout") == 0) {
		if (m != EVHTTP_REQ_POST)
			return reply_method(r, "POST");
		return set_timeout(r, id);
	}
	if (!v2 && strcmp(action, "metrics") == 0) {
		if (m != EVHTTP_REQ_GET)
			return reply_method(r, "GET");
		return metrics(r, id);
	}
	if (!v2 && strcmp(action, "network") == 0) {
		if (m != EVHTTP_REQ_PUT)
			return reply_method(r, "PUT");
		return put_network(r, id);
	}
	for (size_t i = 0; i < sizeof(unsupported_actions) / sizeof(unsupported_actions[0]); i++) {
		if (strcmp(action, unsupported_actions[i].name) != 0)
			continue;
		/* the sandbox first: the SDK maps a 404 to SandboxNotFoundError */
		if (!find_live(r, id))
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
				return create(r, v2);
			if (m == EVHTTP_REQ_GET)
				return list(r, v2);
			return reply_method(r, "GET, POST");
		}
		if (n_seg == base + 1 && !v2) {
			if (m == EVHTTP_REQ_GET) {
				struct box *b = find_live(r, seg[1]);

				if (b)
					e2b_reply_json(r, 200, e2b_sandbox_json(r->e, b));
				return;
			}
			if (m == EVHTTP_REQ_DELETE)
				return kill_box(r, seg[1]);
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
