/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS for the egress proxy's interception of hosts a secret is bound to (docs/secrets.md).
 *
 * A per-sandbox CA: made when the sandbox is created, its private key lives only in the
 * supervisor process's memory (never written, never sent), and its certificate goes into the
 * sandbox's trust. It signs leaf certificates for the host names the sandbox connects to,
 * minted on demand and cached. The upstream side is plain verified TLS: the host's trust
 * store plus the CA files the operator names.
 *
 * Trust: the host names come from the sandbox (SNI, CONNECT) and are validated by the proxy
 * before they get here; these functions check them again and refuse anything that is not a
 * plain DNS name, so a hostile name can never widen what a leaf certificate covers.
 */
#pragma once

#include <stddef.h>

#include <openssl/ssl.h>

#include "paddock/paddock.h"

struct pd_ca;

/*
 * A new CA: an EC P-256 key and a self-signed certificate (CN "paddock sandbox CA <random
 * hex>", CA:TRUE pathlen:0, keyCertSign and cRLSign, valid from an hour ago for 30 days).
 */
int pd_ca_new(struct pd_ca **ret, paddock_error *err);
/* Frees the keys and every cached context; accepts NULL. */
void pd_ca_free(struct pd_ca *ca);

/* The CA certificate as PEM (never the key), NUL-terminated; *ret_pem is the caller's. */
int pd_ca_cert_pem(const struct pd_ca *ca, char **ret_pem, size_t *ret_len, paddock_error *err);

/*
 * The SSL_CTX for the client-facing side of an interception of `host` (a DNS name; letters,
 * digits, '-', '_' and '.', at most 253 bytes; compared case-insensitively): a leaf for
 * `host` (SAN DNS:host, serverAuth) signed by the CA, TLS 1.2 or later, ALPN "http/1.1"
 * only (a client that offers only h2 gets no ALPN and must speak HTTP/1.1 or give up).
 *
 * The context belongs to the CA's cache, which keeps the 256 hosts used last. It stays valid
 * until the next pd_ca_server_ctx() call (which may evict it) or pd_ca_free(); an SSL made
 * from it holds its own reference, so make one at once (pd_mitm_start() does). NULL on
 * failure, with err filled (EINVAL for a bad name).
 */
SSL_CTX *pd_ca_server_ctx(struct pd_ca *ca, const char *host, paddock_error *err);

/*
 * A client SSL_CTX for the upstream side: peers verified against the host's default trust
 * store plus each file of extra_ca_files (PEM, one or more certificates; the list is
 * NULL-terminated and may be NULL or empty), TLS 1.2 or later, ALPN "http/1.1". The caller
 * frees it with SSL_CTX_free(). One serves any number of connections.
 */
SSL_CTX *pd_tls_upstream_ctx_new(const char *const *extra_ca_files, paddock_error *err);

/*
 * An SSL for one upstream connection to `host` (a DNS name, as above): SNI set, the peer's
 * certificate required and checked against the name. The caller owns it (pd_mitm_start()
 * takes it over).
 */
SSL *pd_tls_client_ssl(SSL_CTX *ctx, const char *host, paddock_error *err);
