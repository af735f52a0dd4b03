/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The secret broker (docs/architecture.md, "Secrets"): a connection whose destination a
 * secret is bound to, or that carries a placeholder, is relayed as HTTP through the
 * substitution engine (secret-subst.c) — intercepted with the sandbox's CA when it is TLS —
 * and what the server answers goes back through the response scrubber (secret-scrub.c).
 * A placeholder bound for another host, or over plain HTTP, stops the connection.
 */
#include "egress-conn.h"

static const char *secret_host(const struct pd_egress_conn *c)
{
	return c->kind == TARGET_NAME ? c->name : c->addr_text;
}

static void on_secret_use(const struct pd_subst_use *use, const char *request_line, void *ud)
{
	struct pd_egress_conn *c = ud;
	const struct pd_secret_rt *rt = &c->eg->secrets->s[use->secret];

	if (!pd_events_wanted(c->eg->ctx))
		return;
	/* SECURITY: the name and a fingerprint; the request line holds placeholders only */
	pd_emit(c->eg->ctx, PADDOCK_LEVEL_INFO, "secret.used", c->eg->sandbox_id, NULL,
		json_pack("{s:s, s:s, s:s, s:s, s:s}", "secret", rt->name, "fingerprint",
			  rt->fingerprint, "host", secret_host(c), "where", use->where, "request",
			  request_line));
}

/* The secret is bound to this host, but this is plain HTTP: its value goes over TLS only. */
static bool plain_to_bound(const struct pd_egress_conn *c, size_t idx)
{
	return !c->intercepted && c->kind == TARGET_NAME &&
	       pd_secret_bound(&c->eg->secrets->s[idx], c->name);
}

static void leak_blocked(struct pd_egress_conn *c, size_t idx)
{
	const struct pd_secret_rt *rt = &c->eg->secrets->s[idx];
	bool plain = plain_to_bound(c, idx);
	const char *ev_reason =
		plain ? "its placeholder was sent over plain HTTP; its value goes to its hosts "
			"over HTTPS only"
		      : "its placeholder was sent to a host the secret is not bound to";

	c->allowed = false;
	c->reason = plain ? "a secret's placeholder was sent over plain HTTP (its value goes to "
			    "its hosts over HTTPS only)"
			  : "a secret's placeholder was sent to a host it is not bound to";
	c->eg->stats.connections_denied++;
	if (pd_events_wanted(c->eg->ctx))
		pd_emit(c->eg->ctx, PADDOCK_LEVEL_WARN, "secret.leak_blocked", c->eg->sandbox_id,
			NULL,
			json_pack("{s:s, s:s, s:s, s:s}", "secret", rt->name, "fingerprint",
				  rt->fingerprint, "host", secret_host(c), "reason", ev_reason));
}

/* Feeds every byte of `in` through fn; drains it. */
static int feed_all(struct evbuffer *in,
		    int (*fn)(struct pd_egress_conn *, const uint8_t *, size_t, struct evbuffer *),
		    struct pd_egress_conn *c, struct evbuffer *out)
{
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		int r;

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			return -1;
		r = fn(c, v.iov_base, v.iov_len, out);
		evbuffer_drain(in, v.iov_len);
		if (r < 0)
			return r;
	}
	return 0;
}

static int subst_chunk(struct pd_egress_conn *c, const uint8_t *p, size_t n, struct evbuffer *out)
{
	const char *why = NULL;
	size_t idx = 0;
	int r = pd_subst_feed(c->subst, p, n, out, &idx, &why);

	if (r == -EPERM) {
		c->leak_idx = idx;
		leak_blocked(c, idx);
	} else if (r < 0 && !c->reason)
		c->reason = why ? why : "the request cannot be brokered";
	return r;
}

static int broker_client_data(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	char body[1024], msg[1536];
	int n, r;

	if (c->leaked) {
		evbuffer_drain(in, evbuffer_get_length(in)); /* the answer is on its way */
		return 0;
	}
	r = feed_all(in, subst_chunk, c, out);
	if (r != -EPERM || !c->mitm)
		return r < 0 ? -1 : 0;
	/* a leak: the request went nowhere; say so in HTTP, naming the secret */
	c->leaked = true;
	if (plain_to_bound(c, c->leak_idx))
		snprintf(body, sizeof(body),
			 "paddock: blocked: the request carries the placeholder of secret %s over "
			 "plain HTTP; its value goes to %s over HTTPS only: use https://%s/.\n",
			 c->eg->secrets->s[c->leak_idx].name, secret_host(c), secret_host(c));
	else
		snprintf(body, sizeof(body),
			 "paddock: blocked: the request carries the placeholder of secret %s, "
			 "which may go only to its own hosts, not %s.\n",
			 c->eg->secrets->s[c->leak_idx].name, secret_host(c));
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "secret-blocked\r\n\r\n%s",
		     strlen(body), body);
	evbuffer_drain(in, evbuffer_get_length(in));
	pd_mitm_answer(c->mitm, msg, (size_t)n, c->reason);
	return 0;
}

/*
 * A response the broker will not pass on: answered with a 502 in its place when none of it
 * went out yet, else the connection is cut. Returns what the data callback returns.
 */
static int response_refused(struct pd_egress_conn *c, const char *why)
{
	bool answered = c->mitm && !pd_response_started(c->resp);
	char body[1024], msg[1536];
	int n;

	c->reason = why;
	c->resp_refused = true;
	if (pd_events_wanted(c->eg->ctx))
		pd_emit(c->eg->ctx, PADDOCK_LEVEL_WARN, "secret.response_refused",
			c->eg->sandbox_id, NULL,
			json_pack("{s:s, s:s, s:s}", "host", secret_host(c), "reason", why,
				  "outcome", answered ? "answered 502" : "connection cut"));
	if (!answered)
		return -1;
	snprintf(body, sizeof(body),
		 "paddock: the response from %s was not passed on: %s. Responses on a connection "
		 "that carries a secret are checked for its value before the sandbox sees them.\n",
		 secret_host(c), why);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "response-refused\r\n\r\n%s",
		     strlen(body), body);
	pd_mitm_answer(c->mitm, msg, (size_t)n, why);
	return 0;
}

static int response_chunk(struct pd_egress_conn *c, const uint8_t *p, size_t n,
			  struct evbuffer *out)
{
	const char *why = NULL;
	int r = pd_response_feed(c->resp, p, n, out, &why);

	if (r < 0)
		return response_refused(c, why) < 0 ? -1 : -EAGAIN;
	return 0;
}

static int broker_upstream_data(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	int r;

	if (!c->resp) /* plain HTTP: no value went out on it, nothing of one can come back */
		return evbuffer_add_buffer(out, in) < 0 ? -1 : 0;
	if (c->resp_refused) {
		evbuffer_drain(in, evbuffer_get_length(in)); /* answered: the rest goes nowhere */
		return 0;
	}
	r = feed_all(in, response_chunk, c, out);
	if (r == -EAGAIN) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return 0;
	}
	return r < 0 ? -1 : 0;
}

static int broker_upstream_eof(struct evbuffer *out, void *ud)
{
	struct pd_egress_conn *c = ud;
	const char *why = NULL;

	if (c->resp && !c->resp_refused && pd_response_end(c->resp, out, &why) < 0)
		return response_refused(c, why);
	return 0;
}

/* The real server's TLS failed (an untrusted certificate, another name): a 502 that says so. */
static void broker_upstream_failed(const char *reason, void *ud)
{
	struct pd_egress_conn *c = ud;
	char body[1024], msg[1536];
	int n;

	snprintf(body, sizeof(body),
		 "paddock: could not reach %s securely: %s. Nothing was sent to it (a secret "
		 "goes only to a server whose certificate verifies for its name).\n",
		 secret_host(c), reason);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\nX-Paddock-Egress: "
		     "upstream-tls-failed\r\n\r\n%s",
		     strlen(body), body);
	pd_mitm_answer(c->mitm, msg, (size_t)n, reason);
}

static void broker_closed(const char *reason, uint64_t from_client, uint64_t from_upstream,
			  void *ud)
{
	struct pd_egress_conn *c = ud;
	static char why[160];

	c->mitm = NULL; /* freed by the library */
	c->bytes_out += from_client;
	c->bytes_in += from_upstream;
	c->eg->stats.bytes_out += from_client;
	c->eg->stats.bytes_in += from_upstream;
	/* an ordinary end is no reason; the text lives for the call only */
	if (!c->reason && strcmp(reason, "client closed") != 0 &&
	    strcmp(reason, "upstream closed") != 0) {
		snprintf(why, sizeof(why), "%s", reason);
		c->reason = why;
	}
	if (!c->leaked)
		c->eg->stats.connections_allowed++;
	pd_egress_conn_close(c);
}

static const struct pd_mitm_ops broker_ops = {
	.client_data = broker_client_data,
	.upstream_data = broker_upstream_data,
	.upstream_eof = broker_upstream_eof,
	.upstream_failed = broker_upstream_failed,
	.closed = broker_closed,
};

/*
 * Takes the connection over for the secret broker: HTTPS to a host a secret is bound to is
 * intercepted (a leaf from the sandbox's CA towards the sandbox, verified TLS upstream), and
 * plain HTTP of a sandbox with secrets is relayed through the same engine, so placeholders
 * are replaced for bound hosts and stopped for any other. `pre` (taken) goes first.
 */
void pd_egress_broker_start(struct pd_egress_conn *c, bool tls, uint8_t *pre, size_t pre_len)
{
	struct pd_secrets *s = c->eg->secrets;
	paddock_error err = { 0 };
	SSL_CTX *sctx = NULL, *uctx;
	SSL *ussl = NULL;
	int r;

	c->view = calloc(s->n, sizeof(*c->view));
	if (!c->view) {
		free(pre);
		c->reason = "out of memory";
		return pd_egress_conn_close(c);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct pd_secret_rt *rt = &s->s[i];

		c->view[i] = (struct pd_secret){
			.name = rt->name,
			.value = rt->value,
			.value_len = rt->value_len,
			.placeholder = (const uint8_t *)rt->placeholder,
			.placeholder_len = rt->placeholder_len,
			/* SECURITY: a value goes over TLS only, never in clear (plain HTTP
			 * to a bound host gets a 403 saying so: broker_client_data) */
			.bound = tls && c->kind == TARGET_NAME && pd_secret_bound(rt, c->name),
			.in_body = rt->in_body,
		};
	}
	c->subst = pd_subst_new(c->view, s->n, PD_HTTP_HEAD_MAX, BROKER_BODY_MAX, on_secret_use, c);
	if (tls) {
		/* the only connections a value goes out on: what comes back is checked */
		c->resp = pd_response_new(c->view, s->n);
		if (c->resp && c->subst)
			pd_subst_set_response(c->subst, c->resp);
	}
	if (!c->subst || (tls && !c->resp)) {
		free(pre);
		c->reason = "out of memory";
		return pd_egress_conn_close(c);
	}
	if (tls) {
		sctx = pd_ca_server_ctx(s->ca, c->name, &err);
		uctx = sctx ? pd_egress_upstream_tls(c->eg->ctx, &err) : NULL;
		ussl = uctx ? pd_tls_client_ssl(uctx, c->name, &err) : NULL;
		if (!ussl) {
			free(pre);
			c->reason = "the interception cannot be set up";
			return pd_egress_conn_close(c);
		}
	}
	/* the relay owns both sockets from here; our own events on them go */
	struct event **evs[] = { &c->c_rd, &c->c_wr, &c->u_rd, &c->u_wr };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		if (*evs[i]) {
			event_free(*evs[i]);
			*evs[i] = NULL;
		}
	event_del(c->timer);
	c->st = ST_BROKER;
	c->intercepted = tls; /* counted allowed when it ends, unless a leak ended it */
	r = pd_mitm_start(c->eg->ctx->base, sctx, ussl, c->cfd, c->ufd, pre, pre_len, &broker_ops,
			  c, &c->mitm, &err);
	free(pre);
	c->cfd = c->ufd = -EBADF; /* taken over, even on failure */
	if (r < 0) {
		c->mitm = NULL;
		c->reason = "the interception cannot start";
		return pd_egress_conn_close(c);
	}
}

/* Whether this connection goes through the broker, and how. */
bool pd_egress_broker_wanted(const struct pd_egress_conn *c, bool *ret_tls)
{
	if (!c->eg->secrets)
		return false;
	*ret_tls = c->is_tls;
	if (c->is_tls)
		return c->kind == TARGET_NAME && pd_secrets_any_bound(c->eg->secrets, c->name);
	return c->is_http || c->absolute;
}
