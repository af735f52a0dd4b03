/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B front end's listener: who a request is (API key, envd access token, user), which
 * sandbox it is for (E2b-Sandbox-Id, or a `{port}-{id}.{domain}` Host), and which handler
 * answers it. See e2b.h for the map and docs/e2b.md for the contract.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2b.h"
#include "paddock/files.h"

#define DEBUG_SANDBOX_ID "debug_sandbox_id"

/* ---- identity ----------------------------------------------------------------------------- */

void e2b_access_token(const struct e2b *e, const char *sandbox_id, char out[E2B_TOKEN_LEN + 1])
{
	unsigned char mac[32];
	unsigned int n = sizeof(mac);

	if (!HMAC(EVP_sha256(), e->key, sizeof(e->key), (const unsigned char *)sandbox_id,
		  strlen(sandbox_id), mac, &n))
		memset(mac, 0, sizeof(mac));
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

/* SECURITY: in time independent of where the strings differ */
static bool same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);

	for (size_t k = 0; k < la; k++)
		diff |= (unsigned char)(a[k] ^ (k < lb ? b[k] : 0));
	return !diff;
}

/* The tenant an X-API-Key names, or NULL. */
static const char *api_key_tenant(struct e2b *e, const char *key)
{
	const char *tenant = NULL;

	if (!key || !*key)
		return NULL;
	if (e->open_keys)
		return SVC_LOCAL_TENANT;
	for (size_t i = 0; i < e->d->http->n_tokens; i++)
		if (same_secret(e->d->http->tokens[i].token, key))
			tenant = e->d->http->tokens[i].tenant;
	return tenant;
}

static struct box *box_any_tenant(struct daemon *d, const char *id)
{
	for (struct box *b = d->boxes; b; b = b->next)
		if (strcmp(b->id, id) == 0)
			return b;
	return NULL;
}

/*
 * envd's user: "Authorization: Basic base64(user:)". paddock runs every command as the
 * sandbox user (uid 1000, "user"); "root" is refused with a message saying so (code that
 * asks for root expects it), any other name as envd refuses unknown users (docs/e2b.md).
 */
static int request_user(struct e2b_req *r, char *msg, size_t size)
{
	const char *h =
		evhttp_find_header(evhttp_request_get_input_headers(r->req), "Authorization");
	char *dec = NULL, *colon;
	size_t len;

	r->user = "user";
	r->home = "/home/user";
	if (!h)
		return 0;
	if (strncasecmp(h, "Basic ", 6) != 0) {
		snprintf(msg, size, "Authorization: expected Basic base64(\"user:\")");
		return -1;
	}
	if (paddock_base64_decode(h + 6, strlen(h + 6), &dec, &len) < 0) {
		snprintf(msg, size, "Authorization: the credentials are not base64");
		return -1;
	}
	colon = memchr(dec, ':', len);
	if (colon)
		*colon = '\0';
	else if (len < 64)
		dec[len] = '\0';
	if (strcmp(dec, "user") == 0) {
		r->user = "user";
	} else if (strcmp(dec, "root") == 0) {
		/* refused, not quietly run as uid 1000: code asking for root expects root */
		snprintf(msg, size,
			 "user 'root': this sandbox runs commands and files as 'user' "
			 "(uid 1000) only; leave user unset (docs/e2b.md)");
		free(dec);
		return -1;
	} else if (dec[0] != '\0') {
		snprintf(msg, size, "user '%.32s' does not exist (expected 'user' or 'root')", dec);
		free(dec);
		return -1;
	}
	free(dec);
	return 0;
}

char *e2b_path(const struct e2b_req *r, const char *path)
{
	char *out = NULL;

	if (!path)
		path = "";
	if (strlen(path) > PADDOCK_FILES_MAX_PATH)
		return NULL;
	if (path[0] == '/')
		return strdup(path);
	if (path[0] == '~' && (path[1] == '/' || path[1] == '\0'))
		path += path[1] ? 2 : 1;
	if (asprintf(&out, "%s%s%s", r->home, path[0] ? "/" : "", path) < 0)
		return NULL;
	return out;
}

void e2b_reply_paddock_error(struct e2b_req *r, const paddock_error *err)
{
	char buf[sizeof(err->msg) + 64];

	e2b_connect_reply_error(r->req, e2b_connect_code_from_errno(err->code), "%s%s%s",
				err->field[0] ? err->field : "", err->field[0] ? ": " : "",
				paddock_error_format(err, buf, sizeof(buf)));
}

/* ---- plain envd endpoints ------------------------------------------------------------------ */

static void reply_text(struct evhttp_request *req, int status, const char *type, const char *s)
{
	struct evbuffer *b = evbuffer_new();

	if (b && s)
		evbuffer_add(b, s, strlen(s));
	if (type)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	evhttp_send_reply(req, status, NULL, b);
	if (b)
		evbuffer_free(b);
}

void e2b_reply_json(struct e2b_req *r, int status, json_t *body_take)
{
	char *s = body_take ? json_dumps(body_take, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	struct evbuffer *b = evbuffer_new();

	json_decref(body_take);
	if (b)
		evbuffer_add_printf(b, "%s\n", s ? s : "{}");
	free(s);
	if (status >= 400)
		r->e->m.errors++;
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
			  "application/json");
	evhttp_send_reply(r->req, status, NULL, b);
	if (b)
		evbuffer_free(b);
}

void e2b_reply_error(struct e2b_req *r, int status, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* svc_json_text: a message quoting the client may hold bytes that are not UTF-8 */
	e2b_reply_json(r, status,
		       json_pack("{s:i,s:o}", "code", status, "message", svc_json_text(msg)));
}

/* GET /envs: the environment a command starts with (the spec's env over the base) */
static void envd_envs(struct e2b_req *r)
{
	json_t *out = json_object(), *spec = json_loads(r->box->spec_json, 0, NULL);
	json_t *env = spec ? json_object_get(spec, "env") : NULL;
	const char *k;
	json_t *v;

	json_object_foreach(env, k, v) if (json_is_string(v)) json_object_set(out, k, v);
	json_decref(spec);
	e2b_reply_json(r, 200, out);
}

/* GET /metrics: the sandbox's usage in envd's shape */
static void envd_metrics(struct e2b_req *r)
{
	json_t *o = svc_box_json(r->box), *u = json_object_get(o, "usage");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double mem_limit = 0, cpu_s = json_number_value(json_object_get(u, "cpu_s"));

	paddock_spec *spec = NULL;
	if (paddock_spec_new(&spec, NULL) >= 0 &&
	    paddock_spec_load_json(spec, r->box->spec_json, strlen(r->box->spec_json), NULL) >= 0)
		(void)paddock_spec_get_limit(spec, "memory", &mem_limit, NULL);
	paddock_spec_free(spec);
	e2b_reply_json(r, 200,
		       json_pack("{s:I,s:f,s:i,s:I,s:I,s:I,s:I}", "ts",
				 (json_int_t)(svc_now_ms() / 1000), "cpu_used_s", cpu_s,
				 "cpu_count", (int)(ncpu > 0 ? ncpu : 1), "mem_used",
				 (json_int_t)json_integer_value(json_object_get(u, "memory_bytes")),
				 "mem_total", (json_int_t)mem_limit, "disk_used", (json_int_t)0,
				 "disk_total", (json_int_t)0));
	json_decref(o);
}

/* ---- routing ------------------------------------------------------------------------------ */

/* "49983-sb_xxxx.e2b.local[:port]": the port and id, when the Host has our domain */
static bool parse_host(struct e2b *e, const char *host, long *ret_port, char *id, size_t id_size)
{
	char buf[256], *dash, *dot, *end;
	size_t dl = strlen(e->domain), n;

	if (!host || strlen(host) >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%s", host);
	end = strrchr(buf, ':');
	if (end && !strchr(end, ']'))
		*end = '\0';
	n = strlen(buf);
	if (n < dl + 2 || strcasecmp(buf + n - dl, e->domain) != 0 || buf[n - dl - 1] != '.')
		return false;
	buf[n - dl - 1] = '\0';
	dash = strchr(buf, '-');
	dot = strchr(buf, '.');
	if (!dash || dot)
		return false;
	*dash = '\0';
	*ret_port = strtol(buf, &end, 10);
	if (*end || buf[0] == '\0' || *ret_port < 1 || *ret_port > 65535)
		return false;
	snprintf(id, id_size, "%s", dash + 1);
	return true;
}

/* E2b-Sandbox-Port: a port from 1 to 65535, when the header is there */
static bool header_port(struct evhttp_request *req, long *ret_port)
{
	const char *v =
		evhttp_find_header(evhttp_request_get_input_headers(req), "E2b-Sandbox-Port");
	char *end;

	if (!v || !*v)
		return false;
	*ret_port = strtol(v, &end, 10);
	if (*end || *ret_port < 1 || *ret_port > 65535)
		*ret_port = 0; /* not a port: the request goes its usual way */
	return *ret_port != 0;
}

static bool is_envd_path(const char *p)
{
	return strncmp(p, "/process.Process/", 17) == 0 ||
	       strncmp(p, "/filesystem.Filesystem/", 23) == 0 || strcmp(p, "/files") == 0 ||
	       strcmp(p, "/health") == 0 || strcmp(p, "/metrics") == 0 || strcmp(p, "/envs") == 0 ||
	       strcmp(p, "/init") == 0;
}

/* the tenant "local"'s default sandbox for the SDK's debug mode, made on first use */
static struct box *debug_box(struct e2b *e, paddock_error *err)
{
	struct box *b;
	json_t *body;

	for (b = e->d->boxes; b; b = b->next)
		if (strcmp(b->tenant, SVC_LOCAL_TENANT) == 0 && b->metadata &&
		    json_is_string(json_object_get(b->metadata, "e2b.debug")))
			return b;
	body = json_pack("{s:O,s:{s:s}}", "spec", json_object_get(e->templates, "base"), "metadata",
			 "e2b.debug", "true");
	if (!body)
		return NULL;
	/* the base template's spec with the debug marker; a create body has spec fields flat */
	json_t *flat = json_deep_copy(json_object_get(body, "spec"));
	json_object_set(flat, "metadata", json_object_get(body, "metadata"));
	json_decref(body);
	if (svc_box_create(e->d, SVC_LOCAL_TENANT, flat, &b, err) < 0)
		b = NULL;
	json_decref(flat);
	return b;
}

/* the server-streaming methods: their errors are end-of-stream envelopes in a 200 */
static bool is_stream_method(const char *path)
{
	return strcmp(path, "/process.Process/Start") == 0 ||
	       strcmp(path, "/process.Process/Connect") == 0 ||
	       strcmp(path, "/filesystem.Filesystem/WatchDir") == 0;
}

static void connect_call(struct e2b_req *r, const char *path)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(r->req);
	const char *ct = evhttp_find_header(in, "Content-Type");
	struct evbuffer *body = evhttp_request_get_input_buffer(r->req);
	bool process = strncmp(path, "/process.Process/", 17) == 0;
	const char *method = strchr(path + 1, '/') + 1;
	bool stream_method = is_stream_method(path);
	enum e2b_connect_code code;
	char msg[256];
	json_t *m;
	double t;

	if (evhttp_request_get_command(r->req) != EVHTTP_REQ_POST) {
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", "POST");
		return e2b_connect_reply_error(r->req, E2B_CONNECT_UNIMPLEMENTED,
					       "expected POST (Connect over HTTP/1.1)");
	}
	if (process && strcmp(method, "StreamInput") == 0)
		return e2b_connect_reply_error(
			r->req, E2B_CONNECT_UNIMPLEMENTED,
			"StreamInput is a client stream, which needs HTTP/2; "
			"use SendInput");
	/* the protocol answers a codec it does not speak with 415 */
	if (!ct ||
	    (strcasecmp(ct, stream_method ? "application/connect+json" : "application/json") != 0 &&
	     strncasecmp(ct, stream_method ? "application/connect+json;" : "application/json;",
			 stream_method ? 25 : 17) != 0)) {
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Accept-Post",
				  stream_method ? "application/connect+json" : "application/json");
		r->e->m.errors++;
		return reply_text(r->req, 415, "text/plain",
				  stream_method
					  ? "expected Content-Type: application/connect+json\n"
					  : "expected Content-Type: application/json\n");
	}
	t = e2b_connect_parse_timeout(evhttp_find_header(in, "Connect-Timeout-Ms"));
	if (t < 0)
		return stream_method
			       ? e2b_connect_stream_end(
					 r->req, &(bool){ false }, E2B_CONNECT_INVALID_ARGUMENT,
					 "Connect-Timeout-Ms: expected 1 to 10 digits")
			       : e2b_connect_reply_error(
					 r->req, E2B_CONNECT_INVALID_ARGUMENT,
					 "Connect-Timeout-Ms: expected 1 to 10 digits");
	r->timeout_s = t;
	{
		const char *k = evhttp_find_header(in, "Keepalive-Ping-Interval");
		long v = k ? strtol(k, NULL, 10) : 0;

		r->keepalive_s = v > 0 && v <= 3600 ? (double)v : 0;
	}
	size_t len = evbuffer_get_length(body);
	m = e2b_connect_decode_request(len ? evbuffer_pullup(body, -1) : (const uint8_t *)"", len,
				       stream_method, &code, msg, sizeof(msg));
	if (!m) {
		r->e->m.errors++;
		return stream_method ? e2b_connect_stream_end(r->req, &(bool){ false }, (int)code,
							      "%s", msg)
				     : e2b_connect_reply_error(r->req, code, "%s", msg);
	}
	if (stream_method)
		r->e->m.stream++;
	else
		r->e->m.rpc++;
	if (process)
		e2b_process(r, method, m, stream_method);
	else
		e2b_filesystem(r, method, m, stream_method);
	json_decref(m);
}

static void handle_envd(struct e2b_req *r, const char *path, const char *id_from_host)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(r->req);
	const char *id = id_from_host ? id_from_host : evhttp_find_header(in, "E2b-Sandbox-Id");
	const char *token = evhttp_find_header(in, "X-Access-Token");
	char want[E2B_TOKEN_LEN + 1], msg[160];
	paddock_error err = { 0 };
	bool connect_rpc = path[1] != 'f' || strncmp(path, "/filesystem.", 12) == 0;

	if (strcmp(path, "/health") == 0) {
		/*
		 * The SDK's isRunning(): 502 is "not running" (E2B's proxy answers so). Naming no
		 * sandbox, it is envd's own health check: envd answers 204
		 */
		struct box *b = id ? box_any_tenant(r->d, id) : NULL;

		if (!id || (strcmp(id, DEBUG_SANDBOX_ID) == 0 && r->e->open_keys))
			return reply_text(r->req, 204, NULL, NULL);
		return reply_text(r->req, b && b->sb && paddock_sandbox_running(b->sb) ? 204 : 502,
				  NULL, NULL);
	}
	/* a signed /files URL as the SDK makes it names no sandbox: its signature does */
	if ((!id || !*id) && strcmp(path, "/files") == 0) {
		bool is_signed;

		id = e2b_files_signed_box(r, &is_signed);
		if (!id && is_signed) {
			r->e->m.errors++;
			return e2b_reply_error(r, 401, "invalid signature");
		}
	}
	if (!id || !*id) {
		r->e->m.errors++;
		return connect_rpc ? e2b_connect_reply_error(
					     r->req, E2B_CONNECT_INVALID_ARGUMENT,
					     "E2b-Sandbox-Id: expected the sandbox's id")
				   : e2b_reply_error(r, 400,
						     "E2b-Sandbox-Id: expected the sandbox's id");
	}
	if (strcmp(id, DEBUG_SANDBOX_ID) == 0) {
		/* SECURITY: debug mode has no keys: only where every client is the local tenant */
		if (!r->e->open_keys)
			goto not_found;
		r->box = debug_box(r->e, &err);
		r->debug = r->box != NULL;
		if (!r->box) {
			if (connect_rpc)
				e2b_reply_paddock_error(r, &err);
			else
				e2b_reply_error(r, 500, "%s", err.msg);
			return;
		}
	} else {
		r->box = box_any_tenant(r->d, id);
		if (!r->box)
			goto not_found;
		/*
		 * SECURITY: the access token is what makes a sandbox reachable through envd; a
		 * wrong one answers exactly like an unknown sandbox. /files may instead carry a
		 * signature (envd-files.c checks it) and the token may be absent for it.
		 */
		e2b_access_token(r->e, r->box->id, want);
		if (token ? !same_secret(want, token) : strcmp(path, "/files") != 0) {
			r->e->m.errors++;
			return connect_rpc
				       ? e2b_connect_reply_error(
						 r->req, E2B_CONNECT_UNAUTHENTICATED,
						 "X-Access-Token: missing or not this sandbox's")
				       : e2b_reply_error(
						 r, 401,
						 "X-Access-Token: missing or not this sandbox's");
		}
	}
	r->tenant = r->box->tenant;
	if (!r->box->sb || !paddock_sandbox_running(r->box->sb)) {
		r->e->m.errors++;
		return connect_rpc ? e2b_connect_reply_error(r->req, E2B_CONNECT_UNAVAILABLE,
							     "the sandbox is not running")
				   : e2b_reply_error(r, 502, "the sandbox is not running");
	}
	if (request_user(r, msg, sizeof(msg)) < 0) {
		r->e->m.errors++;
		/* envd checks the user inside the call: a stream says why in its end envelope */
		if (is_stream_method(path))
			return e2b_connect_stream_end(r->req, &(bool){ false },
						      E2B_CONNECT_UNAUTHENTICATED, "%s", msg);
		return connect_rpc ? e2b_connect_reply_error(r->req, E2B_CONNECT_UNAUTHENTICATED,
							     "%s", msg)
				   : e2b_reply_error(r, 401, "%s", msg);
	}
	svc_box_touch(r->box);
	if (strcmp(path, "/files") == 0) {
		r->e->m.files++;
		return e2b_files(r);
	}
	if (strcmp(path, "/envs") == 0)
		return envd_envs(r);
	if (strcmp(path, "/metrics") == 0)
		return envd_metrics(r);
	if (strcmp(path, "/init") == 0)
		return reply_text(r->req, 204, NULL, NULL);
	return connect_call(r, path);
not_found:
	r->e->m.errors++;
	if (connect_rpc)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_NOT_FOUND,
					       "sandbox '%.64s' not found", id);
	snprintf(msg, sizeof(msg), "sandbox '%.64s' not found", id);
	e2b_reply_error(r, 404, "%s", msg);
}

static void handle_control(struct e2b_req *r, const char *path)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(r->req);
	char *copy = strdup(path), *save = NULL, *seg[8];
	size_t n = 0;

	r->tenant = api_key_tenant(r->e, evhttp_find_header(in, "X-API-Key"));
	if (!r->tenant) {
		free(copy);
		r->e->m.errors++;
		return e2b_reply_error(r, 401, "X-API-Key: missing or unknown API key");
	}
	if (!copy)
		return e2b_reply_error(r, 500, "out of memory");
	for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (n == sizeof(seg) / sizeof(seg[0])) {
			free(copy);
			return e2b_reply_error(r, 404, "no such route");
		}
		seg[n++] = s;
	}
	r->e->m.control++;
	e2b_control(r, seg, n);
	free(copy);
}

/* `{port}-{id}.{domain}` to a port other than envd's: the sandbox's service on that port */
static void proxy_port(struct e2b_req *r, const char *id, long port)
{
	struct box *b = box_any_tenant(r->d, id);
	const char *uri = evhttp_request_get_uri(r->req);

	if (!b) {
		char msg[128];

		snprintf(msg, sizeof(msg), "sandbox '%.64s' not found", id);
		return e2b_reply_error(r, 404, "%s", msg);
	}
	r->e->m.proxied++;
	svc_box_touch(b);
	if (port == PADDOCK_CODE_PORT)
		return pdd_code_forward(r->req, b, uri && uri[0] == '/' ? uri : "/");
	pdd_port_forward(r->req, b, port, uri && uri[0] == '/' ? uri : "/");
}

/* ---- the gate's policy: who a request is, from its head alone ------------------------------ */

/*
 * The HTTP gate (src/daemon/http-gate.c) reads each head before evhttp reads a body and asks
 * this policy: the same routing as handle() and the same checks as handle_envd() and
 * handle_control() where headers suffice, so that no unauthenticated body is read:
 * - control plane: X-API-Key of a tenant, bodies up to PDD_MAX_BODY (JSON);
 * - envd: X-Access-Token, the HMAC of the sandbox id the Host or E2b-Sandbox-Id names; a
 *   request naming no live sandbox goes on with a body of E2B_UNAUTH_BODY_MAX at most (the
 *   handler answers invalid_argument or not_found, as envd does); /files without a token
 *   needs a signed URL whose signature is some live sandbox's; /health takes no body;
 *   Connect bodies up to one message, /files up to --max-upload plus multipart framing;
 * - `{port}-{id}.{domain}` and E2b-Sandbox-Port: public, as E2B's URLs (docs/e2b.md),
 *   bodies up to --max-upload, what the service inside takes.
 * The handlers check again (the gate is a first wall), and answer what it passes.
 */
enum { SHAPE_JSON, SHAPE_CONNECT };

/* A request the handler will refuse (no such sandbox): a body that small is read first. */
#define E2B_UNAUTH_BODY_MAX 4096

static void value_str(const struct pdd_gate_value *v, char *buf, size_t size)
{
	size_t n = v->p && v->len < size ? v->len : 0;

	memcpy(buf, v->p ? v->p : "", n);
	buf[n] = '\0';
}

static int gate_refuse(struct pdd_gate_verdict *v, int status, const char *msg)
{
	v->status = status;
	snprintf(v->msg, sizeof(v->msg), "%s", msg);
	return -1;
}

static int gate_envd(struct e2b *e, const struct pdd_gate_head *h, const char *path,
		     const char *query, const char *id, struct pdd_gate_verdict *v)
{
	char token[E2B_TOKEN_LEN + 8], want[E2B_TOKEN_LEN + 1];
	bool files = strcmp(path, "/files") == 0, ok;

	v->shape = path[1] != 'f' || strncmp(path, "/filesystem.", 12) == 0 ? SHAPE_CONNECT
									    : SHAPE_JSON;
	v->limit = files ? e->d->http->max_upload + (64u << 10) : E2B_CONNECT_MAX_MESSAGE + 64;
	if (strcmp(path, "/health") == 0) {
		v->limit = 0; /* a health check names no one and sends nothing */
		v->shape = SHAPE_JSON;
		return 0;
	}
	if (strcmp(id, DEBUG_SANDBOX_ID) == 0 && e->open_keys)
		return 0; /* SECURITY: no --tokens, loopback only: every client is the local tenant
			   */
	if (files && !h->access_token.p && query) {
		bool is_signed;
		const char *op =
			h->method == PDD_M_GET || h->method == PDD_M_HEAD ? "read" : "write";

		if (e2b_files_signed_query(e, query, op, &is_signed))
			return 0; /* its expiry and path: envd-files.c checks them */
		if (is_signed)
			return gate_refuse(v, 401, "invalid signature");
	}
	if (!id[0] || !box_any_tenant(e->d, id)) {
		/* no such sandbox (debug_sandbox_id under --tokens too): the handler says so */
		v->limit = E2B_UNAUTH_BODY_MAX;
		return 0;
	}
	value_str(&h->access_token, token, sizeof(token));
	e2b_access_token(e, id, want);
	ok = token[0] && same_secret(want, token);
	explicit_bzero(want, sizeof(want));
	if (!ok)
		return gate_refuse(v, 401, "X-Access-Token: missing or not this sandbox's");
	return 0;
}

static int gate_check(void *arg, const struct pdd_gate_head *h, struct pdd_gate_verdict *v)
{
	struct e2b *e = arg;
	const char *q = memchr(h->target, '?', h->target_len);
	size_t plen = q ? (size_t)(q - h->target) : h->target_len;
	char raw[3 * 1024 + 4], host[256], id[128], key[300], sport[16];
	char *path, *end, *query = NULL;
	long port;
	int r = 0;

	v->shape = SHAPE_JSON;
	v->limit = 0;
	/* handle() takes a path of 1024 bytes decoded at most; the query is the head's size */
	if (plen >= sizeof(raw))
		return gate_refuse(v, 414, "the request's path may have 1024 bytes");
	memcpy(raw, h->target, plen);
	raw[plen] = '\0';
	if (q && !(query = strndup(q + 1, h->target_len - plen - 1)))
		return gate_refuse(v, 503, "out of memory");
	path = evhttp_uridecode(raw, 0, NULL);
	if (!path) {
		free(query);
		return gate_refuse(v, 400, "malformed path");
	}
	value_str(&h->host, host, sizeof(host));
	value_str(&h->sandbox_port, sport, sizeof(sport));
	if (parse_host(e, host, &port, id, sizeof(id))) {
		if (port != E2B_ENVD_PORT)
			v->limit = e->d->http->max_upload; /* public: the service inside decides */
		else
			r = gate_envd(e, h, path, query, id, v);
	} else if (sport[0] && (port = strtol(sport, &end, 10)) >= 1 && port <= 65535 && !*end &&
		   port != E2B_ENVD_PORT) {
		v->limit = e->d->http->max_upload;
	} else if (is_envd_path(path)) {
		value_str(&h->sandbox_id, id, sizeof(id));
		r = gate_envd(e, h, path, query, id, v);
	} else {
		value_str(&h->api_key, key, sizeof(key));
		v->limit = PDD_MAX_BODY;
		if (!api_key_tenant(e, key))
			r = gate_refuse(v, 401, "X-API-Key: missing or unknown API key");
	}
	free(path);
	free(query);
	return r;
}

/* A refusal of the gate's, in the shape the route's clients parse (as the handlers answer). */
static void gate_reply(void *arg, struct evhttp_request *req, int shape, int status,
		       const char *msg)
{
	struct e2b *e = arg;
	struct e2b_req r = { .d = e->d, .e = e, .req = req };

	if (shape == SHAPE_CONNECT)
		return e2b_connect_reply_error(req,
					       status == 401   ? E2B_CONNECT_UNAUTHENTICATED
					       : status == 413 ? E2B_CONNECT_RESOURCE_EXHAUSTED
							       : E2B_CONNECT_INVALID_ARGUMENT,
					       "%s", msg);
	e2b_reply_error(&r, status, "%s", msg);
}

static void handle(struct evhttp_request *req, void *arg)
{
	struct e2b *e = arg;
	struct e2b_req r = { .d = e->d, .e = e, .req = req };
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *raw = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *host = evhttp_find_header(evhttp_request_get_input_headers(req), "Host");
	char id[64], *path;
	long port;

	svc_pool_request(e->d);
	/* refused at its head (the gate, gate_check()): answered there, in E2B's shape */
	if (pdd_http_gate_request(e->d, req))
		return;
	pdd_http_no_delay(req);
	if (e->d->stopping)
		return e2b_reply_error(&r, 503, "paddockd is shutting down");
	path = raw ? evhttp_uridecode(raw, 0, NULL) : NULL;
	if (!path || strlen(path) > 1024 || path[0] != '/') {
		free(path);
		return e2b_reply_error(&r, 400, "malformed path");
	}
	if (parse_host(e, host, &port, id, sizeof(id))) {
		if (port != E2B_ENVD_PORT)
			proxy_port(&r, id, port);
		else
			handle_envd(&r, path, id);
	} else if (header_port(req, &port) && port != E2B_ENVD_PORT) {
		/* E2B_SANDBOX_URL: the SDK names sandbox and port in headers (the code interpreter)
		 */
		const char *sid =
			evhttp_find_header(evhttp_request_get_input_headers(req), "E2b-Sandbox-Id");

		if (!sid || !*sid || strlen(sid) >= sizeof(id))
			e2b_reply_error(&r, 400, "E2b-Sandbox-Id: expected the sandbox's id");
		else
			proxy_port(&r, sid, port);
	} else if (is_envd_path(path)) {
		handle_envd(&r, path, NULL);
	} else {
		handle_control(&r, path);
	}
	free(path);
}

/* ---- start / stop ------------------------------------------------------------------------- */

static int load_key(struct e2b *e, paddock_error *err)
{
	char path[512];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/e2b.key", e->d->state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		unsigned char k[32];

		if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
			return paddock_fail(err, EIO, "getrandom");
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 || write(fd, k, sizeof(k)) != (ssize_t)sizeof(k)) {
			int e2 = errno;
			if (fd >= 0)
				close(fd);
			return paddock_fail(err, e2 ? e2 : EIO, "write %s", path);
		}
		close(fd);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return paddock_fail(err, errno, "open %s", path);
	n = read(fd, e->key, sizeof(e->key));
	close(fd);
	if (n != (ssize_t)sizeof(e->key))
		return paddock_fail(err, EINVAL, "%s: expected %zu bytes", path, sizeof(e->key));
	return 0;
}

/*
 * `code-interpreter-v1`, the default template of @e2b/code-interpreter: the base template's
 * spec unless the file names it. Any sandbox has the code interpreter on port 49999 (started
 * on first use); the name only has to exist.
 */
static int add_code_template(struct e2b *e, paddock_error *err)
{
	if (json_object_get(e->templates, E2B_CODE_TEMPLATE))
		return 0;
	if (json_object_set(e->templates, E2B_CODE_TEMPLATE,
			    json_object_get(e->templates, "base")) < 0)
		return paddock_fail(err, ENOMEM, "templates");
	return 0;
}

static int load_templates(struct e2b *e, const char *file, paddock_error *err)
{
	json_error_t jerr;
	const char *k;
	json_t *v;
	int r;

	if (!file) {
		e->templates = json_pack("{s:{}}", "base");
		return e->templates ? add_code_template(e, err)
				    : paddock_fail(err, ENOMEM, "templates");
	}
	e->templates = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
	if (!e->templates)
		return paddock_fail(err, EINVAL, "--e2b-templates %s: %s (line %d)", file,
				    jerr.text, jerr.line);
	if (!json_is_object(e->templates))
		return paddock_fail(err, EINVAL,
				    "--e2b-templates %s: expected an object of template "
				    "name to spec",
				    file);
	json_object_foreach(e->templates, k, v)
	{
		paddock_spec *spec = NULL;
		char *s;

		if (!json_is_object(v))
			return paddock_fail(
				err, EINVAL,
				"--e2b-templates %s: template '%s': expected a spec object", file,
				k);
		s = json_dumps(v, JSON_COMPACT);
		r = s ? paddock_spec_new(&spec, err) : -ENOMEM;
		if (r >= 0)
			r = paddock_spec_load_json(spec, s, strlen(s), err);
		if (r >= 0)
			r = paddock_spec_validate(spec, err);
		free(s);
		paddock_spec_free(spec);
		if (r < 0) {
			char why[sizeof(err->msg) + sizeof(err->field) + 2];

			snprintf(why, sizeof(why), "%s%s%s", err->field, err->field[0] ? ": " : "",
				 err->msg);
			return paddock_fail(err, EINVAL, "--e2b-templates %s: template '%s': %s",
					    file, k, why);
		}
	}
	if (!json_object_get(e->templates, "base"))
		json_object_set_new(e->templates, "base", json_object());
	return add_code_template(e, err);
}

/* the daemon's box_gone hook: a sandbox going ends its file watchers */
static void box_gone(struct daemon *d, struct box *b)
{
	if (d->http->e2b)
		e2b_fs_release(d->http->e2b, b);
}

int e2b_start(struct daemon *d, const char *addr_port, const char *domain,
	      const char *templates_file, paddock_error *err)
{
	struct e2b *e = calloc(1, sizeof(*e));
	char addr[128], *colon;
	long port;
	int r;

	if (!e)
		return paddock_fail(err, ENOMEM, "e2b");
	d->http->e2b = e;
	d->box_gone = box_gone;
	e->d = d;
	snprintf(e->domain, sizeof(e->domain), "%s", domain && *domain ? domain : "localhost");
	snprintf(addr, sizeof(addr), "%s", addr_port);
	colon = strrchr(addr, ':');
	char *pend = NULL;
	port = colon ? strtol(colon + 1, &pend, 10) : -1;
	if (!colon || colon[1] == '\0' || *pend || port < 0 || port > 65535)
		return paddock_fail(err, EINVAL, "--e2b: expected ADDR:PORT, got '%s'", addr_port);
	*colon = '\0';
	if (addr[0] == '[' && colon[-1] == ']') {
		memmove(addr, addr + 1, strlen(addr));
		addr[strlen(addr) - 1] = '\0';
	}
	/* SECURITY: without tokens every key is the local tenant: loopback only */
	e->open_keys = d->http->n_tokens == 0;
	if (e->open_keys && strcmp(addr, "127.0.0.1") != 0 && strcmp(addr, "::1") != 0 &&
	    strcmp(addr, "localhost") != 0)
		return paddock_fail(err, EPERM,
				    "--e2b on %s needs --tokens (API keys); without them "
				    "only a loopback address is allowed",
				    addr);
	if ((r = load_key(e, err)) < 0 || (r = load_templates(e, templates_file, err)) < 0)
		return r;
	e->http = evhttp_new(d->base);
	if (!e->http)
		return paddock_fail(err, ENOMEM, "evhttp");
	e->gate = (struct e2b_gate_policy){
		.name = "e2b", .check = gate_check, .reply = gate_reply, .arg = e
	};
	if (pdd_http_gate_add_policy(d, e->http, &e->gate) < 0)
		return paddock_fail(err, ENOMEM, "e2b: the HTTP gate");
	/*
	 * A second wall behind the gate, which bounds heads and bodies before evhttp reads them.
	 * No evhttp timeouts: the gate times heads, stalled bodies and answers
	 * (COMPAT(libevent 2.1.12): a filter's timeout timer can outlive the filter).
	 */
	evhttp_set_max_headers_size(e->http, 2 * PDD_MAX_HEADERS);
	evhttp_set_max_body_size(e->http, (ev_ssize_t)(d->http->max_upload + (64u << 10)));
	evhttp_set_allowed_methods(e->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
						    EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(e->http, handle, e);
	/* port 0: the kernel picks one, and the log says which (tests use that) */
	struct evhttp_bound_socket *bound =
		evhttp_bind_socket_with_handle(e->http, addr, (unsigned short)port);
	if (!bound)
		return paddock_fail(err, errno ? errno : EADDRINUSE, "--e2b: listen on %s:%ld",
				    addr, port);
	pdd_http_gate_listening(d, e->http, evhttp_bound_socket_get_listener(bound));
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char host[64] = "?";
		unsigned p = (unsigned)port;

		if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss, &sl) ==
		    0) {
			if (ss.ss_family == AF_INET) {
				struct sockaddr_in *a = (struct sockaddr_in *)&ss;
				inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
				p = ntohs(a->sin_port);
			} else if (ss.ss_family == AF_INET6) {
				struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
				inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
				p = ntohs(a->sin6_port);
			}
		}
		/* *.localhost is the loopback (RFC 6761): getHost() must name this port too */
		{
			size_t dl = strlen(e->domain);
			bool loop = strcasecmp(e->domain, "localhost") == 0 ||
				    (dl > 10 && strcasecmp(e->domain + dl - 10, ".localhost") == 0);

			if (loop)
				snprintf(e->sdk_domain, sizeof(e->sdk_domain), "%s:%u", e->domain,
					 p);
			else
				snprintf(e->sdk_domain, sizeof(e->sdk_domain), "%s", e->domain);
		}
		fprintf(stderr, "paddockd: e2b on %s:%u (domain %s)\n", host, p, e->domain);
	}
	return 0;
}

void e2b_stop(struct daemon *d)
{
	struct e2b *e = d->http->e2b;

	if (!e)
		return;
	for (struct box *b = d->boxes; b; b = b->next)
		e2b_fs_release(e, b);
	if (e->http) {
		/* the gate forgets the listening socket evhttp_free() frees */
		pdd_http_gate_listening(d, e->http, NULL);
		evhttp_free(e->http);
	}
	json_decref(e->templates);
	free(e);
	d->http->e2b = NULL;
	d->box_gone = NULL;
}
