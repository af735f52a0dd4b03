/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The response side of an intercepted HTTPS connection to a host secrets are bound to
 * (docs/secrets.md, "Echoes"): what the server sends towards the sandbox never holds a
 * secret's value in any form this connection could have sent it in. Pure streaming
 * transformers like secret-subst.h: no I/O, bytes in, bytes out, every buffer bounded.
 *
 * Trust: the server is trusted with the values bound to it, not with what it echoes: an
 * echo service, an error page quoting a header, a JSON body with the request in it. So:
 *
 *   pd_scrub     replaces, byte stream by byte stream, every form of a value (below) with
 *                the same form of its stand-in, the same length, so framing holds; then
 *                checks what it wrote once more, and stops (-EPERM) rather than let a form
 *                through that its own replacements happened to complete.
 *   pd_response  reads HTTP/1.x responses: refuses what it cannot check (a content coding
 *                other than identity, framing it cannot follow, a protocol switch), de-chunks
 *                and re-chunks bodies so a value split over chunks is seen, scrubs each head
 *                and each body as a whole.
 *
 * Forms of a value V: V itself; base64 (standard and URL alphabets) at each of the three
 * alignments V can have in a longer encoded text (the characters V alone decides); hex
 * (lower and upper case); percent-encoding (RFC 3986 unreserved kept, upper and lower case
 * hex); a JSON string's escapes; and the exact Basic credentials the broker built with it.
 * Encoded forms shorter than PD_SCRUB_FORM_MIN are not looked for (too likely in any text).
 * For a secret not bound to the connection's host only V itself.
 *
 * The stand-in of V: its placeholder, when that has V's length and shape (what
 * pd_secret_placeholder makes for a value of enough entropy: the sandbox sees its own
 * placeholder come back); otherwise (a short value's longer placeholder) V's shape with
 * letters 'x', digits '0' and other characters by class, so every form keeps its length.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secret-subst.h"

struct evbuffer;

#define PD_SCRUB_FORM_MIN	 8  /* an encoded form shorter than this is not looked for */
#define PD_SCRUB_CREDENTIALS_MAX 16 /* Basic credentials remembered per connection */

/* Writes the stand-in of x's value (x->value_len bytes) to out. */
void pd_secret_stand_in(const struct pd_secret *x, uint8_t *out);

/* ---- the byte-stream scrubber ----------------------------------------------------------- */

struct pd_scrub;

/*
 * Borrows secrets (the array and what it points to must outlive the object); its forms are
 * its own copies, wiped when freed. NULL with errno EINVAL (an empty value or placeholder)
 * or ENOMEM.
 */
struct pd_scrub *pd_scrub_new(const struct pd_secret *secrets, size_t n);
/* Wipes what it holds and frees; accepts NULL; returns NULL. */
struct pd_scrub *pd_scrub_free(struct pd_scrub *s);
/*
 * Appends the scrubbed bytes to out, holding back at most pd_scrub_held_max(). 0; -EPERM
 * when a form would have gone out whole (out has what came before it, never the form; the
 * error is final); -ENOMEM. The output does not depend on how the input is split into
 * feeds — but for -EPERM's: of the bytes before the form, those that came in an earlier
 * feed went out already, at most the longest form's length less one.
 */
int pd_scrub_feed(struct pd_scrub *s, const uint8_t *in, size_t len, struct evbuffer *out);
/* The end of a message: appends what was held back, scrubbed. 0, -EPERM or -ENOMEM. */
int pd_scrub_flush(struct pd_scrub *s, struct evbuffer *out);
/* The end of a message cut short: forgets (and wipes) what was held back. */
void pd_scrub_drop(struct pd_scrub *s);
/* The bytes held back now, and the most there can be. */
size_t pd_scrub_held(const struct pd_scrub *s);
size_t pd_scrub_held_max(const struct pd_scrub *s);
/*
 * From now on, `token` (base64 Basic credentials the broker built, holding values) is
 * scrubbed whole too, replaced by the same credentials with each value's stand-in. The
 * last PD_SCRUB_CREDENTIALS_MAX are kept. 0, -EINVAL (not base64), -ENOMEM.
 */
int pd_scrub_add_credential(struct pd_scrub *s, const uint8_t *token, size_t len);

/* ---- HTTP/1.x responses ------------------------------------------------------------------ */

#define PD_RESPONSE_HEAD_MAX	(64u << 10) /* a response head, or a trailer section */
#define PD_RESPONSE_PENDING_MAX 256	    /* requests sent whose responses have not come */

struct pd_response;

/* As pd_scrub_new(); the scrubber is the response's own. */
struct pd_response *pd_response_new(const struct pd_secret *secrets, size_t n);
struct pd_response *pd_response_free(struct pd_response *r);

/* A request went out (its response comes in order): head: the method was HEAD. -E2BIG: too
 * many waiting. */
int pd_response_expect(struct pd_response *r, bool head);
/* pd_scrub_add_credential() on the response's scrubber. */
int pd_response_add_credential(struct pd_response *r, const uint8_t *token, size_t len);

/*
 * Feeds bytes from the server; appends to out what may go to the client. Heads go out
 * scrubbed once whole (at most PD_RESPONSE_HEAD_MAX); bodies are scrubbed as one stream each
 * (a chunked one de-chunked, and re-chunked on the way out, trailers dropped). Returns 0, or
 * (final):
 *   -EPROTO  a response that cannot be checked: not HTTP/1.x, a content coding other than
 *            identity on a body, a transfer coding other than chunked, Content-Length with
 *            Transfer-Encoding or two that differ, a malformed chunk, a 101;
 *   -EPERM   a form of a value would have gone out (see pd_scrub_feed);
 *   -E2BIG   a head or trailer section over PD_RESPONSE_HEAD_MAX;
 *   -ENOMEM.
 * *ret_why (may be NULL) gets a reason (static text) for every error.
 */
int pd_response_feed(struct pd_response *r, const uint8_t *in, size_t len, struct evbuffer *out,
		     const char **ret_why);
/* The server closed: a body that runs to the close ends here. 0 or as pd_response_feed. */
int pd_response_end(struct pd_response *r, struct evbuffer *out, const char **ret_why);
/* Whether any of the response now being read has gone out (else an error can still be
 * answered in its place). */
bool pd_response_started(const struct pd_response *r);
