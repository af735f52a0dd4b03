/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's E2B-compatible front end (`paddockd --e2b ADDR:PORT`, docs/e2b.md): the official
 * E2B SDKs drive paddock sandboxes unchanged. An adapter on the service core (service.h: struct
 * box, struct proc, lifecycle, pause, TTLs) and libpaddock's file API, parallel to paddockd's
 * HTTP API; nothing is implemented twice.
 *
 * One evhttp listener serves:
 *  - envd, the in-sandbox API: Connect-RPC `process.Process/{Method}`,
 * `filesystem.Filesystem/{Method}`, and plain HTTP `/files`, `/health`, `/metrics`, `/envs`. The
 * sandbox is the one the `E2b-Sandbox-Id` header names; `X-Access-Token` must be the sandbox's envd
 * access token.
 *  - the control plane subset (`/sandboxes`, `/v2/sandboxes`), `X-API-Key` naming a tenant.
 *  - `{port}-{id}.{domain}` Hosts: proxied to that port inside the sandbox.
 *
 * Trust: every request is untrusted. A sandbox is reachable only with its access token
 * (envd) or its tenant's API key (control plane); another tenant's sandbox is exactly as
 * absent as an unknown one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "connect.h"
#include "service.h"
/*
 * The pieces of paddockd's HTTP adapter E2B shares, being HTTP too: the gate in front of its
 * listener (pdd_gate_*, pdd_http_gate_*), bounds of a request (PDD_MAX_BODY, PDD_MAX_HEADERS),
 * pdd_json_body(), pdd_http_status() (a paddock_error's status), pdd_http_no_delay(), port and
 * code forwarding (pdd_port_forward(), pdd_code_forward()), watchers bound to a request
 * (pdd_watcher_*) and a hook watcher on a process of the core (pdd_proc_hook()). Processes
 * and a live network change are the core's (svc_exec_*, svc_proc_*: a StartRequest becomes a
 * struct svc_exec_req directly; svc_box_set_network()).
 */
#include "daemon.h"

/*
 * The E2B endpoint on the daemon d, listening on addr_port (paddockd's --e2b): started and
 * stopped by the program (src/daemon/main.c), which wires its adapters; the core calls E2B
 * only through d->box_gone.
 */
int e2b_start(struct daemon *d, const char *addr_port, const char *domain,
	      const char *templates_file, paddock_error *err);
void e2b_stop(struct daemon *d);

struct e2b_fswatch;

struct e2b {
	struct daemon *d;
	struct evhttp *http;
	char domain[128]; /* `{port}-{id}.{domain}` Hosts (--e2b-domain, default localhost) */
	/*
	 * what the SDK is told (the "domain" of create and connect), so that getHost() names a
	 * URL that reaches this listener: a loopback name gets the listener's port ("localhost"
	 * becomes "localhost:3000"), any other domain is told as it is (a DNS name of a proxy)
	 */
	char sdk_domain[160];
	json_t *templates; /* template name -> spec object (--e2b-templates); always has "base" */
	unsigned char key[32]; /* HMAC key: envd access tokens, file URL signatures */
	bool open_keys; /* no --tokens: every API key is the tenant "local" (loopback only) */
	struct e2b_fswatch *fswatches; /* CreateWatcher / WatchDir state, every sandbox's */
	uint64_t next_watch;
	struct {
		uint64_t rpc, stream, files, control, proxied, errors;
	} m;
	struct e2b_gate_policy gate; /* the HTTP gate's rules for this listener (e2b.c) */
};

/* the envd version paddock answers as (the SDK checks features by it) */
#define E2B_ENVD_VERSION  "0.6.4"
#define E2B_ENVD_PORT	  49983
#define E2B_CODE_TEMPLATE "code-interpreter-v1" /* @e2b/code-interpreter's default */
#define E2B_TOKEN_LEN	  64			/* hex characters of an envd access token */

/* One request to the front end, once routed. */
struct e2b_req {
	struct daemon *d;
	struct e2b *e;
	struct evhttp_request *req;
	const char *tenant; /* control plane: the API key's tenant; envd: the sandbox's */
	struct box *box;    /* envd: the sandbox; control plane: NULL */
	const char *user;   /* envd: "user" or "root" (Authorization: Basic), default "user" */
	const char *home;   /* that user's home, where relative paths resolve */
	double timeout_s;   /* Connect-Timeout-Ms, 0: none */
	double keepalive_s; /* Keepalive-Ping-Interval (seconds), 0: none */
	/*
	 * The SDK's debug mode reached the local tenant's debug sandbox (no --tokens): it has
	 * no access token, so /files has no signatures to check either.
	 */
	bool debug;
};

/* ---- e2b.c: listener, routing, identity (e2b_start/stop: daemon.h) ---- */
/* The envd access token of a sandbox: hex HMAC-SHA256(key, id), E2B_TOKEN_LEN + 1 bytes. */
void e2b_access_token(const struct e2b *e, const char *sandbox_id, char out[E2B_TOKEN_LEN + 1]);
/*
 * A path of a request as the sandbox sees it: absolute paths as they are, relative ones (and
 * "") under the user's home. Returns a malloc'ed string, or NULL with the Connect error
 * answered... never: it only fails for paths over PADDOCK_FILES_MAX_PATH (then NULL).
 */
char *e2b_path(const struct e2b_req *r, const char *path);
/* envd's and the control plane's REST answers: JSON, and errors {"code": status, "message"} */
void e2b_reply_json(struct e2b_req *r, int status, json_t *body_take);
void e2b_reply_error(struct e2b_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Answers a unary Connect error from a paddock_error (errno mapped, message kept). */
void e2b_reply_paddock_error(struct e2b_req *r, const paddock_error *err);

/* ---- envd-process.c: process.Process ---- */
void e2b_process(struct e2b_req *r, const char *method, json_t *msg, bool streaming);

/* ---- envd-fs.c: filesystem.Filesystem ---- */
void e2b_filesystem(struct e2b_req *r, const char *method, json_t *msg, bool streaming);
/* the EntryInfo message of a file */
json_t *e2b_entry_info(const struct paddock_file_info *fi);
/* Ends the watchers of a sandbox (it is being destroyed). */
void e2b_fs_release(struct e2b *e, struct box *b);

/* ---- envd-files.c: GET/POST /files ---- */
void e2b_files(struct e2b_req *r);

/* ---- control.c: /sandboxes, /v2/sandboxes (r->tenant set, r->box NULL) ---- */
void e2b_control(struct e2b_req *r, char **seg, size_t n_seg);
/* the sandbox object of the control plane (GET /sandboxes/{id}) */
json_t *e2b_sandbox_json(struct e2b *e, struct box *b);

/*
 * The id of the sandbox whose access token made the signature of a signed /files URL (E2B's
 * downloadUrl/uploadUrl, which name no sandbox), or NULL; *ret_signed: the URL has a
 * signature (envd-files.c).
 */
const char *e2b_files_signed_box(struct e2b_req *r, bool *ret_signed);
/* The same from a query string and an operation ("read" for GET, "write"): for the gate. */
const char *e2b_files_signed_query(struct e2b *e, const char *query, const char *op,
				   bool *ret_signed);
