/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane's files (control*.c) to one another: the answers, request helpers
 * and views of a sandbox control.c has, and the handlers the other files own.
 *
 *  - control.c: routing, E2B's error answers, a sandbox as E2B sees it (info, metrics);
 *  - control-sandboxes.c: create, connect, pause, resume, timeout, kill;
 *  - control-network.c: E2B's egress model onto paddock's (create, PUT .../network);
 *  - control-list.c: GET /sandboxes, /v2/sandboxes and their filters.
 *
 * Trust: as control.c says; every function here takes an untrusted request.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "e2b.h"

struct evkeyvalq;

#define RESERVED_PREFIX	    "e2b."
#define META_TEMPLATE	    "e2b.template"
#define META_INTERNET	    "e2b.allow_internet_access"
#define META_MAX	    32 /* svc_create_parse's bound on metadata entries */
#define CREATE_DEFAULT_V1_S 15 /* NewSandbox.timeout's default (and resume's) */

/*
 * The client's lists paddock's rules came from, so that an error about "network.allow[2]"
 * names the client's "network.allowOut[3]".
 */
struct netmap {
	json_t *allow_out, *deny_out; /* borrowed; NULL: the rules are the template's */
};

/* ---- control.c: answers, E2B's {"code": status, "message": "..."} ---- */
void e2b_ctl_reply_empty(struct e2b_req *r, int status);
/* A client's string in a message: printable ASCII, at most size - 1 bytes. */
const char *e2b_ctl_esc(const char *s, char *buf, size_t size);
void e2b_ctl_reply_not_found(struct e2b_req *r, const char *id);
/* A paddock error, its field named as the client wrote it (nm: the network's lists, or NULL) */
void e2b_ctl_reply_paddock_error(struct e2b_req *r, const paddock_error *err,
				 const struct netmap *nm);

/* ---- control.c: requests (each NULL or false once the error is answered) ---- */
/* The body as a JSON object (empty: {} when empty_ok). */
json_t *e2b_ctl_body(struct e2b_req *r, bool empty_ok);
/* A timeout in whole seconds, 0 to E2B_MAX_TTL_S (absent or null: def). */
bool e2b_ctl_seconds(struct e2b_req *r, json_t *o, const char *key, int64_t def, int64_t *ret);
/* The query of the request, parsed (evhttp_clear_headers() it). */
struct evkeyvalq *e2b_ctl_query(struct e2b_req *r, struct evkeyvalq *q);
/* A query number from min to max; *ret unchanged when absent. */
bool e2b_ctl_query_long(struct e2b_req *r, struct evkeyvalq *q, const char *key, long min, long max,
			long *ret);
/* The tenant's live sandbox `id`, or NULL with 404 answered. */
struct box *e2b_ctl_find_live(struct e2b_req *r, const char *id);

/* ---- control.c: a sandbox as E2B sees it ---- */
/* a metadata key of paddock's own ("e2b."): hidden from clients, refused from them */
bool e2b_ctl_reserved(const char *key);
/* the template it was created from, NULL: through paddock's own API */
const char *e2b_ctl_template_of(const struct box *b);
/* a dead sandbox (its init ended) is gone for E2B: only DELETE still finds it */
bool e2b_ctl_live(const struct box *b);
/* ListedSandbox: what every view of a sandbox has */
json_t *e2b_ctl_listed_json(struct box *b);
/* Sandbox: the answer to create and connect */
json_t *e2b_ctl_sandbox_json(struct e2b *e, struct box *b);

/* ---- control-sandboxes.c ---- */
void e2b_ctl_create(struct e2b_req *r, bool v2);	     /* POST /sandboxes, /v2/sandboxes */
void e2b_ctl_connect(struct e2b_req *r, const char *id);     /* POST /v2/sandboxes/{id}/connect */
void e2b_ctl_pause(struct e2b_req *r, const char *id);	     /* POST /sandboxes/{id}/pause */
void e2b_ctl_resume(struct e2b_req *r, const char *id);	     /* POST /sandboxes/{id}/resume */
void e2b_ctl_set_timeout(struct e2b_req *r, const char *id); /* POST /sandboxes/{id}/timeout */
void e2b_ctl_kill(struct e2b_req *r, const char *id);	     /* DELETE /sandboxes/{id} */

/* ---- control-network.c ---- */
/* "0.0.0.0/0" or "::/0" */
bool e2b_ctl_all_traffic(const char *s);
/* what the field holds asks for something: true, a non-empty array or object, a string */
bool e2b_ctl_asks(json_t *v);
/* allow_internet_access: 1, 0, or -1 when absent; -2 once the error is answered */
int e2b_ctl_internet(struct e2b_req *r, json_t *o);
/* The network section of a create's spec (in spec); false once the error is answered. */
bool e2b_ctl_create_network(struct e2b_req *r, json_t *body, json_t *spec, struct netmap *nm);
void e2b_ctl_put_network(struct e2b_req *r, const char *id); /* PUT /sandboxes/{id}/network */

/* ---- control-list.c ---- */
void e2b_ctl_list(struct e2b_req *r, bool v2); /* GET /sandboxes, /v2/sandboxes */
