/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One intercepted HTTPS connection on the egress proxy's event loop: TLS terminated towards
 * the sandbox with a leaf from the sandbox's CA (tls-ca.h), re-encrypted towards the real
 * server and verified there, with the caller's transforms (secret substitution) in between.
 *
 * Trust: both peers are hostile. The client is the sandbox; the upstream is whatever the
 * network gave us until its certificate checks out: until then client_data() is not called
 * (the client's bytes wait), so no secret is put in for, or sent to, the wrong server. Memory is
 * bounded: a direction stops reading while the other side has PD_MITM_MAX_PENDING bytes unsent; the
 * handshakes and the final flush have timeouts.
 *
 * libevent and OpenSSL write sockets with write(2), not send(MSG_NOSIGNAL): the process must
 * ignore SIGPIPE (the front ends do).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "paddock/paddock.h"

struct event_base;
struct evbuffer;
struct pd_mitm;

/* a direction stops reading while its peer's output holds this much */
#define PD_MITM_MAX_PENDING (1024 * 1024)
/* both handshakes must finish in this time; so must the flush after one side ends */
#define PD_MITM_TIMEOUT_S 10

struct pd_mitm_ops {
	/* Decrypted bytes from the client (the sandbox). The callee drains what it consumed
	 * from `in` (it may leave an incomplete part for the next call) and appends what goes
	 * upstream to `out`; -1 aborts the connection. */
	int (*client_data)(struct evbuffer *in, struct evbuffer *out, void *ud);
	/* Decrypted bytes from upstream; the same contract, towards the client. */
	int (*upstream_data)(struct evbuffer *in, struct evbuffer *out, void *ud);
	/* Optional: upstream ended (after its last bytes went through upstream_data); what it
	 * appends to `out` still goes to the client. -1 aborts instead. */
	int (*upstream_eof)(struct evbuffer *out, void *ud);
	/* Optional: the upstream failed before it was ready: its certificate did not verify,
	 * it is for another name, its handshake failed or timed out (`reason`, as closed()
	 * will get it). The callee may answer the client with pd_mitm_answer() (it goes once
	 * the client's own handshake is done); otherwise the connection just ends. */
	void (*upstream_failed)(const char *reason, void *ud);
	/* The interception ended. `reason` is text for a record, valid during the call: "client
	 * closed", "upstream closed", "upstream certificate verification failed: <why>", ...;
	 * the byte counts are decrypted bytes the callbacks consumed from each side. The mitm
	 * is already freed: do not touch it. Called from the event loop, never from inside
	 * pd_mitm_start(). */
	void (*closed)(const char *reason, uint64_t bytes_from_client, uint64_t bytes_from_upstream,
		       void *ud);
};

/*
 * With server_ctx and upstream_ssl both NULL: the same relay over plain TCP (no TLS on
 * either side), for plain HTTP a caller must transform; peeked bytes are client data.
 */
/*
 * Starts intercepting. Takes over, even on failure: cfd (the client's TCP socket), ufd (a
 * connected TCP socket to the real server; both non-blocking) and upstream_ssl (from
 * pd_tls_client_ssl(): it must verify its peer and check a host name, or -EINVAL).
 * server_ctx (pd_ca_server_ctx()) is borrowed; the connection keeps its own reference.
 * `peeked` are the bytes the proxy already read from cfd (the ClientHello, to learn the
 * name); they are copied and go to TLS before anything else from cfd. ops is copied; ud is
 * passed to every callback. *ret stays valid until closed() is called or pd_mitm_free().
 */
int pd_mitm_start(struct event_base *base, SSL_CTX *server_ctx, SSL *upstream_ssl, int cfd, int ufd,
		  const uint8_t *peeked, size_t peeked_len, const struct pd_mitm_ops *ops, void *ud,
		  struct pd_mitm **ret, paddock_error *err);

/* Closes both sides at once, without calling closed(); accepts NULL. Not from inside this
 * mitm's own callbacks: return -1 from a data callback instead. */
void pd_mitm_free(struct pd_mitm *m);
/* The decrypted bytes the callbacks consumed from each side so far. */
void pd_mitm_counts(const struct pd_mitm *m, uint64_t *ret_from_client,
		    uint64_t *ret_from_upstream);

/*
 * From inside a callback (data, upstream_eof, upstream_failed): answers the client with
 * `data` (an HTTP error) after what is queued for it, and ends once it is out and the
 * client closed (or LINGER_S later: closing with its request unread would reset the
 * connection and lose the answer), with `reason` recorded; what the client sends meanwhile
 * goes nowhere. A data callback returns 0.
 */
void pd_mitm_answer(struct pd_mitm *m, const void *data, size_t len, const char *reason);
