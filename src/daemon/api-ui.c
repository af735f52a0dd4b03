/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web console's files at GET /ui and /ui/<name> (docs/console.md). They are compiled in
 * (ui-assets.h), so a name is looked up in a fixed table and never becomes a path: "..",
 * "%2e%2e" or "a/b" is simply no entry (404). The files are the same for everyone and hold
 * no data, so a TCP client needs no token to load them (the gate lets a bodiless GET or HEAD
 * of /ui through, pdd_ui_path()); everything the page then shows comes from the API, with the
 * token the user types in.
 *
 * GET /ui/session says which tenant the request's token names (null: none, or a wrong
 * one), so the page knows whether to ask for one.
 *
 * Every answer carries a strict Content-Security-Policy (only this origin's scripts, styles
 * and connections; no inline code; no framing) and headers that keep browsers from sniffing
 * types or sending the page's address elsewhere.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "ui-assets.h"

#define CSP                                                                                        \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "             \
	"frame-ancestors 'none'"

bool pdd_ui_path(const char *path, size_t len)
{
	return len >= 3 && memcmp(path, "/ui", 3) == 0 &&
	       (len == 3 || path[3] == '/' || path[3] == '?');
}

static const struct pdd_ui_asset *find(const char *name)
{
	for (const struct pdd_ui_asset *a = pdd_ui_assets; a->name; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

static void add_security_headers(struct evkeyvalq *h)
{
	evhttp_add_header(h, "Content-Security-Policy", CSP);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "X-Frame-Options", "DENY");
	evhttp_add_header(h, "Cross-Origin-Opener-Policy", "same-origin");
	evhttp_add_header(h, "Cross-Origin-Resource-Policy", "same-origin");
	/* the files change with paddockd: a browser asks again rather than run stale code */
	evhttp_add_header(h, "Cache-Control", "no-cache");
}

void pdd_api_ui(struct request *r)
{
	const struct pdd_ui_asset *a = NULL;
	struct evkeyvalq *h = r->req ? evhttp_request_get_output_headers(r->req) : NULL;
	struct evbuffer *b;

	if (h)
		add_security_headers(h);
	if (r->method != EVHTTP_REQ_GET && r->method != EVHTTP_REQ_HEAD)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
	/*
	 * Who the request is, without a 401 (which a browser logs as an error): the page asks
	 * this first to know whether to ask for a token. It says nothing a client does not know.
	 */
	if (r->n_seg == 2 && strcmp(r->seg[1], "session") == 0)
		return pdd_reply_json(r, 200, json_pack("{s:s?}", "tenant", r->tenant));
	if (r->n_seg == 1)
		a = find("index.html");
	else if (r->n_seg == 2)
		a = find(r->seg[1]);
	if (!a)
		return pdd_reply_error(r, 404, "not_found", "path", "no such file of the console");
	if (!r->req) { /* a parser under test: the status is all that is kept */
		r->status = 200;
		return;
	}
	b = evbuffer_new();
	if (!b)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	/* the table's bytes live as long as the program: no copy */
	if (r->method == EVHTTP_REQ_GET) {
		evbuffer_add_reference(b, a->data, a->len, NULL, NULL);
	} else { /* HEAD: the length of what GET would send (evhttp would say 0) */
		char n[24];

		snprintf(n, sizeof(n), "%zu", a->len);
		evhttp_add_header(h, "Content-Length", n);
	}
	evhttp_add_header(h, "Content-Type", a->content_type);
	r->status = 200;
	r->d->http->http_by_class[2]++;
	evhttp_send_reply(r->req, 200, "OK", b);
	evbuffer_free(b);
}
