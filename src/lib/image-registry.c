/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock image pull`: an image from a registry, by the OCI distribution API (v2): the
 * manifest (or the index, then the manifest for this platform), the config, the layers the
 * store lacks. Runs in the supervisor, blocking, as the store's owner.
 *
 * Trust: the registry is hostile. Every document is bounded and verified against the
 * digest that named it (the reference's, the index's, the manifest's); layers stream into a
 * temporary file, never past their descriptor's size, and the unpacker checks their digest
 * and diff id (image-unpack.c). Authentication: a 401 is answered once, with basic auth
 * (the caller's credentials) or a bearer token from the challenge's realm (docker's token
 * protocol, credentials sent only to it), never over plain http to a non-loopback host.
 * Redirects (blob storage) are followed five deep, never from https to http, and carry no
 * credentials to another host.
 */
#include "paddock/image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "error.h"
#include "image-http.h"
#include "image-module.h"
#include "image-oci.h"
#include "image-ref.h"
#include "image-store.h"
#include "image-unpack.h"
#include "util/base64.h"
#include "util/cleanup.h"

#define MAX_REDIRECTS 5
#define TOKEN_MAX     (64u << 10)
#define ACCEPT                                                                                     \
	"Accept: application/vnd.oci.image.index.v1+json, "                                        \
	"application/vnd.oci.image.manifest.v1+json, "                                             \
	"application/vnd.docker.distribution.manifest.list.v2+json, "                              \
	"application/vnd.docker.distribution.manifest.v2+json"

struct registry {
	paddock_image_store *store;
	struct pd_image_ref ref;
	const struct paddock_pull_opts *opts;
	struct pd_http_opts http;
	char origin[300];	     /* scheme://host[:port] */
	char base[PD_REF_MAX + 320]; /* origin/v2/path */
	char auth[4200];	     /* "Authorization: ..." or "" */
	bool tried_auth;
	struct pd_manifest *manifest;
};

static void free_resp(struct pd_http_response *r)
{
	free(r->body);
	r->body = NULL;
}

/* The registry's own words on a failure: {"errors":[{"code":..,"message":..}]} */
static const char *registry_says(const struct pd_http_response *r, char *buf, size_t size)
{
	json_t *root = r->body ? json_loads(r->body, 0, NULL) : NULL;
	json_t *e = json_array_get(json_object_get(root, "errors"), 0);
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));

	buf[0] = '\0';
	if (code || msg)
		snprintf(buf, size, " (%s: %s)", code ? PD_ESC(code) : "", msg ? PD_ESC(msg) : "");
	json_decref(root);
	return buf;
}

/* ---- authentication ---------------------------------------------------------------------- */

/* The value of `key` in a challenge's parameters (k="v", ...), unquoted. */
static bool challenge_param(const char *ch, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = ch; *p;) {
		p += strspn(p, " ,");
		if (!strncasecmp(p, key, kl) && p[kl] == '=') {
			size_t o = 0;

			p += kl + 1;
			if (*p == '"') {
				for (p++; *p && *p != '"' && o + 1 < size; p++)
					out[o++] = *p == '\\' && p[1] ? *++p : *p;
			} else {
				for (; *p && *p != ',' && *p != ' ' && o + 1 < size; p++)
					out[o++] = *p;
			}
			out[o] = '\0';
			return true;
		}
		/* skip this parameter, quoted commas included */
		while (*p && *p != ',') {
			if (*p == '"')
				for (p++; *p && *p != '"'; p++)
					if (*p == '\\' && p[1])
						p++;
			if (*p)
				p++;
		}
	}
	return false;
}

static void url_encode(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static bool header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int basic_header(const char *creds, char *out, size_t size, paddock_error *err)
{
	_cleanup_free_ char *b64 = NULL;

	if (!strchr(creds, ':'))
		return pd_fail_field(err, EINVAL, "creds", "expected USER:PASSWORD");
	b64 = pd_base64_encode(creds, strlen(creds));
	if (!b64)
		return pd_fail(err, ENOMEM, "out of memory");
	if (snprintf(out, size, "Authorization: Basic %s", b64) >= (int)size)
		return pd_fail_field(err, EINVAL, "creds", "credentials too long");
	return 0;
}

/* Answers a 401: basic auth, or a bearer token from the challenge's realm. */
static int authenticate(struct registry *g, const char *challenge, paddock_error *err)
{
	char realm[2048], service[512], scope[1024], url[4096], e_service[1536], e_scope[3072];
	char basic[1024] = "", says[512];
	struct pd_http_response resp = { 0 };
	const char *headers[2] = { NULL, NULL };
	struct pd_url ru;
	json_t *root;
	const char *token;
	int r;

	if (!strncasecmp(challenge, "Basic", 5)) {
		if (!g->opts->creds)
			return pd_fail(err, EACCES,
				       "the registry wants credentials (--creds USER:PASSWORD)");
		return basic_header(g->opts->creds, g->auth, sizeof(g->auth), err);
	}
	if (strncasecmp(challenge, "Bearer", 6))
		return pd_fail(err, EACCES, "the registry asks for an unknown authentication: '%s'",
			       PD_ESC(challenge));
	if (!challenge_param(challenge + 6, "realm", realm, sizeof(realm)) ||
	    pd_url_parse(realm, &ru) < 0)
		return pd_fail(err, EPROTO, "a bearer challenge without a usable realm");
	/* SECURITY: no credentials over plain http but to a loopback realm */
	if (!ru.tls && g->opts->creds && strcmp(ru.host, "127.0.0.1") && strcmp(ru.host, "::1") &&
	    strcmp(ru.host, "localhost"))
		return pd_fail(err, EACCES,
			       "the token realm '%s' is plain http: credentials are "
			       "not sent there",
			       PD_ESC(realm));
	if (!challenge_param(challenge + 6, "service", service, sizeof(service)))
		service[0] = '\0';
	if (!challenge_param(challenge + 6, "scope", scope, sizeof(scope)))
		snprintf(scope, sizeof(scope), "repository:%s:pull", g->ref.path);
	url_encode(service, e_service, sizeof(e_service));
	url_encode(scope, e_scope, sizeof(e_scope));
	if (snprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", realm,
		     strchr(realm, '?') ? "&" : "?", e_service, e_scope) >= (int)sizeof(url))
		return pd_fail(err, E2BIG, "token URL too long");
	if (g->opts->creds) {
		r = basic_header(g->opts->creds, basic, sizeof(basic), err);
		if (r < 0)
			return r;
		headers[0] = basic;
	}
	r = pd_http_get(url, headers, &g->http, -1, TOKEN_MAX, &resp, err);
	if (r < 0) {
		pd_error_prefix(err, "get a token");
		return r;
	}
	if (resp.status != 200) {
		r = pd_fail(err, EACCES, "the token service answered %d%s", resp.status,
			    registry_says(&resp, says, sizeof(says)));
		free_resp(&resp);
		return r;
	}
	root = json_loadb(resp.body, resp.body_len, 0, NULL);
	token = json_string_value(json_object_get(root, "token"));
	if (!token)
		token = json_string_value(json_object_get(root, "access_token"));
	if (!token || !token[0] || !header_safe(token) ||
	    snprintf(g->auth, sizeof(g->auth), "Authorization: Bearer %s", token) >=
		    (int)sizeof(g->auth)) {
		g->auth[0] = '\0';
		r = pd_fail(err, EPROTO, "the token service gave no usable token");
	}
	json_decref(root);
	free_resp(&resp);
	return r < 0 ? r : 0;
}

/* ---- requests ---------------------------------------------------------------------------- */

/*
 * GET base + path: authenticating once on a 401, following redirects. A 2xx body lands in
 * resp (or fd); other statuses come back for the caller to name.
 */
static int get(struct registry *g, const char *path, bool accept, int fd, uint64_t max,
	       struct pd_http_response *resp, paddock_error *err)
{
	char url[8192], next[8192];
	bool same_origin = true;
	int r;

	snprintf(url, sizeof(url), "%s%s", g->base, path);
	for (int hops = 0;; hops++) {
		const char *headers[3] = { NULL, NULL, NULL };
		size_t h = 0;

		if (accept)
			headers[h++] = ACCEPT;
		if (same_origin && g->auth[0])
			headers[h++] = g->auth;
		*resp = (struct pd_http_response){ 0 };
		r = pd_http_get(url, headers, &g->http, fd, max, resp, err);
		if (r < 0)
			return r;
		if (resp->status == 401 && same_origin && !g->tried_auth) {
			g->tried_auth = true;
			r = authenticate(g, resp->www_authenticate, err);
			free_resp(resp);
			if (r < 0)
				return r;
			hops--;
			continue;
		}
		if (resp->status < 300 || resp->status >= 400 || !resp->location[0])
			return 0;
		free_resp(resp);
		if (hops >= MAX_REDIRECTS)
			return pd_fail(err, ELOOP, "more than %d redirects", MAX_REDIRECTS);
		if (pd_url_resolve(url, resp->location, next, sizeof(next)) < 0)
			return pd_fail(err, EPROTO, "a redirect to '%s'", PD_ESC(resp->location));
		/* SECURITY: https stays https */
		if (!strncmp(url, "https://", 8) && strncmp(next, "https://", 8))
			return pd_fail(err, EPROTO, "a redirect from https to '%s'", PD_ESC(next));
		same_origin = same_origin && !strncmp(next, g->origin, strlen(g->origin)) &&
			      (next[strlen(g->origin)] == '/');
		snprintf(url, sizeof(url), "%s", next);
	}
}

static int status_fail(struct registry *g, const struct pd_http_response *resp, const char *what,
		       paddock_error *err)
{
	char says[512];
	char name[PD_REF_MAX + PD_DIGEST_MAX + 2];

	pd_image_ref_format(&g->ref, name, sizeof(name));
	registry_says(resp, says, sizeof(says));
	if (resp->status == 404)
		return pd_fail_field(err, ENOENT, "image", "no %s for '%s' in the registry%s", what,
				     PD_ESC(name), says);
	if (resp->status == 401 || resp->status == 403)
		return pd_fail_field(err, EACCES, "image",
				     "the registry refused the %s of '%s' "
				     "(%d)%s",
				     what, PD_ESC(name), resp->status, says);
	return pd_fail(err, EPROTO, "the registry answered %d for the %s%s", resp->status, what,
		       says);
}

/* A manifest or index by tag or digest, whose digest is `want` when given. */
static int get_manifest(struct registry *g, const char *reference, const char *want,
			struct pd_http_response *resp, paddock_error *err)
{
	char path[PD_REF_MAX + 64], got[PD_DIGEST_MAX];
	int r;

	snprintf(path, sizeof(path), "/manifests/%s", reference);
	r = get(g, path, true, -1, PD_IMAGE_MAX_JSON, resp, err);
	if (r < 0)
		return r;
	if (resp->status != 200) {
		r = status_fail(g, resp, "manifest", err);
		free_resp(resp);
		return r;
	}
	if (pd_digest_buffer(resp->body, resp->body_len, got) < 0) {
		free_resp(resp);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	if (want && strcmp(got, want)) {
		free_resp(resp);
		return pd_fail(err, EBADMSG, "manifest %s: its content has digest %s", want, got);
	}
	return 0;
}

static int open_layer(void *userdata, size_t i, const struct pd_layer_src *src, paddock_error *err)
{
	struct registry *g = userdata;
	struct pd_http_response resp = { 0 };
	_cleanup_close_ int fd = -EBADF;
	char path[PD_DIGEST_MAX + 16];
	int r;

	(void)i;
	if (src->blob_size < 0 || (uint64_t)src->blob_size > PD_UNPACK_MAX_BYTES)
		return pd_fail(err, EFBIG, "layer %s: a size out of range", src->blob_digest);
	fd = pd_image_store_tmpfile(g->store, err);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/blobs/%s", src->blob_digest);
	r = get(g, path, false, fd, (uint64_t)src->blob_size, &resp, err);
	if (r >= 0 && resp.status != 200)
		r = status_fail(g, &resp, "layer", err);
	free_resp(&resp);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return pd_fail(err, errno, "rewind the download");
	return TAKE_FD(fd);
}

static int pull(struct registry *g, char **ret_json, paddock_error *err)
{
	struct pd_http_response mresp = { 0 }, cresp = { 0 };
	char name[PD_REF_MAX + PD_DIGEST_MAX + 2], digest[PD_DIGEST_MAX], path[PD_DIGEST_MAX + 16];
	const char *names[2] = { name, NULL };
	enum pd_oci_kind kind;
	int64_t size;
	int r;

	r = get_manifest(g, g->ref.digest[0] ? g->ref.digest : g->ref.tag,
			 g->ref.digest[0] ? g->ref.digest : NULL, &mresp, err);
	if (r < 0)
		return r;
	r = pd_oci_kind(mresp.body, mresp.body_len, mresp.content_type, &kind, err);
	if (r >= 0 && kind == PD_OCI_INDEX) {
		r = pd_oci_pick(mresp.body, mresp.body_len, g->opts->platform, digest, &size, err);
		free_resp(&mresp);
		if (r >= 0)
			r = get_manifest(g, digest, digest, &mresp, err);
		if (r >= 0)
			r = pd_oci_kind(mresp.body, mresp.body_len, mresp.content_type, &kind, err);
		if (r >= 0 && kind != PD_OCI_MANIFEST)
			r = pd_fail(err, EPROTO, "the index's manifest %s is another index",
				    digest);
	}
	if (r >= 0)
		r = pd_oci_parse_manifest(mresp.body, mresp.body_len, g->manifest, err);
	if (r >= 0) {
		snprintf(path, sizeof(path), "/blobs/%s", g->manifest->config_digest);
		r = get(g, path, false, -1, (uint64_t)g->manifest->config_size, &cresp, err);
		if (r >= 0 && cresp.status != 200)
			r = status_fail(g, &cresp, "config", err);
	}
	if (r >= 0 && (pd_digest_buffer(cresp.body, cresp.body_len, digest) < 0 ||
		       strcmp(digest, g->manifest->config_digest)))
		r = pd_fail(err, EBADMSG, "config %s: its content has digest %s",
			    g->manifest->config_digest, digest);
	if (r >= 0) {
		pd_image_ref_format(&g->ref, name, sizeof(name));
		r = pd_image_store_add(g->store, mresp.body, mresp.body_len, cresp.body,
				       cresp.body_len, g->manifest->layers, g->manifest->n_layers,
				       open_layer, g, names, ret_json, err);
	}
	free_resp(&mresp);
	free_resp(&cresp);
	return r;
}

int pd_image_pull(paddock_image_store *store, const char *ref, const struct paddock_pull_opts *opts,
		  char **ret_json, paddock_error *err)
{
	static const struct paddock_pull_opts none = { 0 };
	struct registry g = { .store = store };
	char name[PD_REF_MAX + PD_DIGEST_MAX + 2];
	bool plain;
	int r;

	if (!store)
		return pd_fail(err, EINVAL, "no image store given");
	r = pd_image_ref_parse(ref, "image", &g.ref, err);
	if (r < 0)
		return r;
	g.opts = opts ? opts : &none;
	g.http = (struct pd_http_opts){ .tls_no_verify = g.opts->tls_no_verify,
					.ca_file = g.opts->ca_file };
	plain = g.opts->plain_http || pd_image_ref_is_loopback(&g.ref);
	snprintf(g.origin, sizeof(g.origin), "%s://%s", plain ? "http" : "https",
		 pd_image_ref_registry_host(&g.ref));
	snprintf(g.base, sizeof(g.base), "%s/v2/%s", g.origin, g.ref.path);
	g.manifest = calloc(1, sizeof(*g.manifest));
	if (!g.manifest)
		return pd_fail(err, ENOMEM, "out of memory");
	if (g.opts->creds) {
		/* sent up front only where the registry asks: a 401 says so */
		if (!strchr(g.opts->creds, ':')) {
			free(g.manifest);
			return pd_fail_field(err, EINVAL, "creds", "expected USER:PASSWORD");
		}
	}
	r = pull(&g, ret_json, err);
	free(g.manifest);
	explicit_bzero(g.auth, sizeof(g.auth));
	if (r < 0) {
		pd_image_ref_format(&g.ref, name, sizeof(name));
		pd_error_prefix(err, "pull '%s'", PD_ESC(name));
	}
	return r;
}
