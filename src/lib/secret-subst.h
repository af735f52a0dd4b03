/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secret brokering on one proxied HTTP/1.x connection, as a pure streaming transformer: no
 * I/O, bytes in, bytes out (libevent evbuffers), every buffer bounded.
 *
 * A sandbox holds only placeholders. On the request side (sandbox -> server, hostile),
 * pd_subst puts the real value in place of a placeholder of a secret bound to this
 * connection's host, and refuses a request that carries a placeholder of a secret that is
 * not. The response side (server -> sandbox) is secret-scrub.h's.
 *
 * pd_subst borrows `secrets`: the array and what it points to must outlive the object. A
 * value is copied nowhere but into `out` (and wiped scratch buffers on the way there); it is
 * never logged and never passed to the use callback.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct pd_response;

struct pd_secret {
	const char *name;     /* the variable name, for events and errors */
	const uint8_t *value; /* the real value: never logged */
	size_t value_len;
	const uint8_t *placeholder; /* what the sandbox sees instead */
	size_t placeholder_len;
	bool bound;   /* bound to the host this connection goes to (the caller decides) */
	bool in_body; /* substitute in request bodies too */
};

/* Every secret has a value and a placeholder (secrets may be NULL when n is 0). */
bool pd_secrets_valid(const struct pd_secret *secrets, size_t n);

/* `where` is "request-line", "header NAME", "basic-auth" or "body". */
struct pd_subst_use {
	size_t secret; /* index into the secrets array */
	const char *where;
};

/*
 * Called once per (request, secret) substituted, with the request line as the sandbox sent
 * it minus the query ("GET /repos/x HTTP/1.1"): it holds placeholders, never a value. Both
 * strings live for the call only. The callback must not free the pd_subst it is called for.
 */
typedef void (*pd_subst_use_fn)(const struct pd_subst_use *use, const char *request_line_no_query,
				void *ud);

/* A chunk-size line (size and extensions) longer than this is refused (-EPROTO). */
#define PD_SUBST_CHUNK_LINE_MAX 4096u

/* One client->server request stream: many requests on a keep-alive connection. */
struct pd_subst;

/*
 * max_head bounds a request head (request line, headers, blank line) and the trailer section
 * of a chunked body; max_body bounds a body that is buffered, which happens for every
 * request when some bound secret has in_body. Returns NULL with errno EINVAL (an empty value
 * or placeholder, max_head 0) or ENOMEM.
 */
struct pd_subst *pd_subst_new(const struct pd_secret *secrets, size_t n, size_t max_head,
			      size_t max_body, pd_subst_use_fn fn, void *ud);
/* Wipes what it holds and frees; accepts NULL; returns NULL. */
struct pd_subst *pd_subst_free(struct pd_subst *s);

/*
 * Feeds bytes from the client and appends to `out` what may go upstream. Partial input is
 * kept (bounded), so the result does not depend on how the stream is split into feeds.
 *
 * Request heads are rewritten: CRLF line ends, "Name: value" with the value's outer
 * whitespace trimmed, placeholders of bound secrets replaced in the request target and in
 * every header value (in the decoded credentials of "Authorization: Basic"), and
 * Proxy-Authorization, Proxy-Connection and Upgrade dropped. A chunked body that is
 * streamed keeps its chunks, with canonical size lines and without extensions or trailers.
 * When some bound secret has in_body, every body is buffered, its placeholders replaced, and
 * sent with a Content-Length of its new length (Transfer-Encoding and Expect dropped).
 *
 * Returns 0, or (final: the object then returns only that error, with the same out-values):
 *   -EPERM  a placeholder of an unbound secret (*ret_secret = its index); nothing of that
 *           request went to out — unless it was in a body being streamed: then out already
 *           has the request up to the placeholder's first byte, and the caller must close
 *           the upstream connection (the request there is incomplete, never completed);
 *   -EPROTO not HTTP/1.x, ambiguous framing (Content-Length with Transfer-Encoding,
 *           differing Content-Lengths, a coding other than chunked), obs-fold, NUL, CONNECT,
 *           invalid Basic credentials, or a bound secret's value that cannot go where its
 *           placeholder is (a request target takes only visible ASCII, a header value no
 *           control byte);
 *   -E2BIG  a head or trailer section over max_head, a buffered body over max_body;
 *   -ENOMEM out of memory (out may hold part of a request).
 * *ret_why gets a reason (static text) for every error. ret_secret and ret_why may be NULL.
 */
int pd_subst_feed(struct pd_subst *s, const uint8_t *in, size_t len, struct evbuffer *out,
		  size_t *ret_secret, const char **ret_why);

/*
 * Links the request stream to the response side of its connection (secret-scrub.h),
 * borrowed: it must outlive s. From then on every request asks for an identity response
 * (Accept-Encoding: identity; Accept-Encoding and TE dropped), is announced to r as it goes
 * out (pd_response_expect: a response to HEAD has no body), and the Basic credentials it
 * builds are scrubbed from responses (pd_response_add_credential). A request r has no room
 * for fails (-E2BIG, too many waiting for their responses).
 */
void pd_subst_set_response(struct pd_subst *s, struct pd_response *r);
