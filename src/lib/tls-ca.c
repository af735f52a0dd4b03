/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-sandbox CA and the two TLS contexts of an interception (see tls-ca.h).
 *
 * The CA key and the one leaf key exist only in this process's memory; OpenSSL wipes them
 * when the last reference goes (EVP_PKEY_free clears private key material), and nothing
 * here copies them. Leaves share one key: they all live in this process next to the CA key,
 * so a key per host would protect nothing and cost a key generation per new host.
 */
#include "tls-ca.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "error.h"
#include "util/cleanup.h"

#define CA_LIFETIME_S	(30L * 86400)
#define LEAF_LIFETIME_S (7L * 86400)
/* a cached leaf is replaced a day before it expires, so a long-lived sandbox never sees one
 * expire under it */
#define LEAF_REMINT_S (6L * 86400)
/* clocks disagree: the sandbox's clock may be behind ours */
#define BACKDATE_S     3600L
#define LEAF_CACHE_MAX 256
#define HOST_MAX       253
/* RFC 5280 ub-common-name: a longer name goes only in the SAN */
#define CN_MAX 64

PD_DEFINE_CLEANUP(EVP_PKEY, EVP_PKEY_free)
PD_DEFINE_CLEANUP(X509, X509_free)
PD_DEFINE_CLEANUP(SSL_CTX, SSL_CTX_free)
PD_DEFINE_CLEANUP(SSL, SSL_free)
PD_DEFINE_CLEANUP(BIO, BIO_free)
PD_DEFINE_CLEANUP(BIGNUM, BN_free)
PD_DEFINE_CLEANUP(X509_EXTENSION, X509_EXTENSION_free)
PD_DEFINE_CLEANUP(GENERAL_NAMES, GENERAL_NAMES_free)
PD_DEFINE_CLEANUP(struct pd_ca, pd_ca_free)

struct pd_ca_leaf {
	char *host; /* lowercase */
	SSL_CTX *ctx;
	time_t minted;
	uint64_t used; /* ca->clock when last returned: the least recent is evicted */
};

struct pd_ca {
	EVP_PKEY *key; /* SECURITY: the CA's private key; never leaves this struct */
	X509 *cert;
	EVP_PKEY *leaf_key;
	struct pd_ca_leaf leaves[LEAF_CACHE_MAX];
	size_t n_leaves;
	uint64_t clock;
};

/* The most recent OpenSSL error as text, and the queue emptied so it cannot mislead the next
 * caller. */
static const char *ossl_text(char *buf, size_t size)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0)
		snprintf(buf, size, "unknown openssl error");
	else
		ERR_error_string_n(e, buf, size);
	ERR_clear_error();
	return buf;
}
#define OSSL_ERR ossl_text((char[192]){ 0 }, 192)

/* Letters, digits, '-', '_', '.': a DNS name the proxy validated already. Checked again
 * because the name goes into a certificate this CA signs.
 * SECURITY: no '*' (a wildcard leaf), ',' or ':' (config-string syntax), no NUL tricks. */
static int host_normalize(const char *host, char buf[static HOST_MAX + 1], paddock_error *err)
{
	size_t n = host ? strnlen(host, HOST_MAX + 1) : 0;

	if (n == 0 || n > HOST_MAX || host[0] == '.' || host[0] == '-')
		return pd_fail(err, EINVAL, "bad host name '%s'", PD_ESC(host));
	for (size_t i = 0; i < n; i++) {
		char c = host[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_' || c == '.'))
			return pd_fail(err, EINVAL, "bad host name '%s'", PD_ESC(host));
		buf[i] = c;
	}
	buf[n] = '\0';
	return 0;
}

/* A random positive 127-bit serial: RFC 5280 asks for at most 20 octets, positive, and CAs
 * use randomness so no two leaves collide even across CAs with the same name. */
static int set_random_serial(X509 *x, paddock_error *err)
{
	unsigned char b[16];
	_cleanup_(BN_freep) BIGNUM *bn = NULL;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return pd_fail(err, EIO, "random serial: %s", OSSL_ERR);
	b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
	bn = BN_bin2bn(b, sizeof(b), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		return pd_fail(err, ENOMEM, "serial: %s", OSSL_ERR);
	return 0;
}

/* value is always a constant here: no sandbox string goes through OpenSSL's config syntax */
static int add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value, paddock_error *err)
{
	_cleanup_(X509_EXTENSION_freep) X509_EXTENSION *ext =
		X509V3_EXT_conf_nid(NULL, v3, nid, value);

	if (!ext || X509_add_ext(x, ext, -1) != 1)
		return pd_fail(err, EIO, "certificate extension %s: %s", OBJ_nid2sn(nid), OSSL_ERR);
	return 0;
}

/* The fields every certificate here shares. */
static int cert_base(X509 *x, EVP_PKEY *pubkey, long lifetime, paddock_error *err)
{
	int r;

	if (X509_set_version(x, X509_VERSION_3) != 1)
		return pd_fail(err, EIO, "certificate version: %s", OSSL_ERR);
	r = set_random_serial(x, err);
	if (r < 0)
		return r;
	if (!X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_S) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), lifetime))
		return pd_fail(err, EIO, "certificate validity: %s", OSSL_ERR);
	if (X509_set_pubkey(x, pubkey) != 1)
		return pd_fail(err, EIO, "certificate key: %s", OSSL_ERR);
	return 0;
}

static int make_ca_cert(EVP_PKEY *key, X509 **ret, paddock_error *err)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	unsigned char rnd[8];
	char cn[64];
	X509V3_CTX v3;
	int r;

	if (!x)
		return pd_fail(err, ENOMEM, "new certificate");
	r = cert_base(x, key, CA_LIFETIME_S, err);
	if (r < 0)
		return r;
	/* a random suffix: two sandboxes' CAs never share a name, so a client's cache of one
	 * never applies to the other */
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return pd_fail(err, EIO, "random CA name: %s", OSSL_ERR);
	r = snprintf(cn, sizeof(cn), "paddock sandbox CA ");
	for (size_t i = 0; i < sizeof(rnd); i++)
		r += snprintf(cn + r, sizeof(cn) - (size_t)r, "%02x", rnd[i]);
	X509_NAME *name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
				       0) != 1 ||
	    X509_set_issuer_name(x, name) != 1)
		return pd_fail(err, EIO, "CA name: %s", OSSL_ERR);

	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	r = add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_subject_key_identifier, "hash", err);
	if (r < 0)
		return r;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		return pd_fail(err, EIO, "sign CA certificate: %s", OSSL_ERR);
	*ret = TAKE_PTR(x);
	return 0;
}

int pd_ca_new(struct pd_ca **ret, paddock_error *err)
{
	_cleanup_(pd_ca_freep) struct pd_ca *ca = NULL;
	int r;

	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return pd_fail(err, ENOMEM, "allocate CA");
	ca->key = EVP_EC_gen("P-256");
	if (!ca->key)
		return pd_fail(err, EIO, "generate CA key: %s", OSSL_ERR);
	ca->leaf_key = EVP_EC_gen("P-256");
	if (!ca->leaf_key)
		return pd_fail(err, EIO, "generate leaf key: %s", OSSL_ERR);
	r = make_ca_cert(ca->key, &ca->cert, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ca);
	return 0;
}

void pd_ca_free(struct pd_ca *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < ca->n_leaves; i++) {
		free(ca->leaves[i].host);
		SSL_CTX_free(ca->leaves[i].ctx);
	}
	/* EVP_PKEY_free wipes the private keys (and the leaf contexts' references are gone) */
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	OPENSSL_cleanse(ca, sizeof(*ca));
	free(ca);
}

int pd_ca_cert_pem(const struct pd_ca *ca, char **ret_pem, size_t *ret_len, paddock_error *err)
{
	_cleanup_(BIO_freep) BIO *bio = NULL;
	char *data;
	long n;

	if (!ca || !ret_pem)
		return pd_fail(err, EINVAL, "no CA");
	bio = BIO_new(BIO_s_mem());
	if (!bio || PEM_write_bio_X509(bio, ca->cert) != 1)
		return pd_fail(err, ENOMEM, "CA certificate to PEM: %s", OSSL_ERR);
	n = BIO_get_mem_data(bio, &data);
	if (n <= 0)
		return pd_fail(err, EIO, "CA certificate to PEM: empty");
	char *pem = malloc((size_t)n + 1);
	if (!pem)
		return pd_fail(err, ENOMEM, "CA certificate PEM");
	memcpy(pem, data, (size_t)n);
	pem[n] = '\0';
	*ret_pem = pem;
	if (ret_len)
		*ret_len = (size_t)n;
	return 0;
}

/* subjectAltName DNS:host, built as a structure, not from config text (see add_ext) */
static int add_san(X509 *x, const char *host, bool critical, paddock_error *err)
{
	_cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = GENERAL_NAMES_new();
	GENERAL_NAME *gen = GENERAL_NAME_new();
	ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();

	if (!gens || !gen || !ia5 || ASN1_STRING_set(ia5, host, -1) != 1) {
		GENERAL_NAME_free(gen);
		ASN1_IA5STRING_free(ia5);
		return pd_fail(err, ENOMEM, "subjectAltName");
	}
	GENERAL_NAME_set0_value(gen, GEN_DNS, ia5);
	if (sk_GENERAL_NAME_push(gens, gen) <= 0) {
		GENERAL_NAME_free(gen);
		return pd_fail(err, ENOMEM, "subjectAltName");
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, critical ? 1 : 0,
			      X509V3_ADD_DEFAULT) != 1)
		return pd_fail(err, EIO, "subjectAltName: %s", OSSL_ERR);
	return 0;
}

static int make_leaf_cert(struct pd_ca *ca, const char *host, X509 **ret, paddock_error *err)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	size_t hl = strlen(host);
	X509V3_CTX v3;
	int r;

	if (!x)
		return pd_fail(err, ENOMEM, "new certificate");
	r = cert_base(x, ca->leaf_key, LEAF_LIFETIME_S, err);
	if (r < 0)
		return r;
	/* a leaf outliving its CA would only confuse: it cannot chain after that anyway */
	if (ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(ca->cert)) > 0 &&
	    X509_set1_notAfter(x, X509_get0_notAfter(ca->cert)) != 1)
		return pd_fail(err, EIO, "leaf validity: %s", OSSL_ERR);
	if (X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1)
		return pd_fail(err, EIO, "leaf issuer: %s", OSSL_ERR);
	if (hl <= CN_MAX && X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
						       (const unsigned char *)host, -1, -1, 0) != 1)
		return pd_fail(err, EIO, "leaf name: %s", OSSL_ERR);

	X509V3_set_ctx(&v3, ca->cert, x, NULL, NULL, 0);
	r = add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_key_usage, "critical,digitalSignature", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_ext_key_usage, "serverAuth", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_subject_key_identifier, "hash", err);
	if (r < 0)
		return r;
	r = add_ext(x, &v3, NID_authority_key_identifier, "keyid:always", err);
	if (r < 0)
		return r;
	/* RFC 5280 4.2.1.6: with an empty subject the SAN must be critical */
	r = add_san(x, host, hl > CN_MAX, err);
	if (r < 0)
		return r;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return pd_fail(err, EIO, "sign leaf certificate: %s", OSSL_ERR);
	*ret = TAKE_PTR(x);
	return 0;
}

/* We speak HTTP/1.1 to the client: select it when offered, else no ALPN at all. An h2-only
 * client then fails its own check, which is the honest answer. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	static const char want[] = "http/1.1";

	(void)ssl;
	(void)arg;
	for (unsigned int i = 0; i < inlen;) {
		unsigned int n = in[i];

		if (n > inlen - i - 1)
			break;
		if (n == sizeof(want) - 1 && memcmp(in + i + 1, want, n) == 0) {
			*out = in + i + 1;
			*outlen = (unsigned char)n;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + n;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

static SSL_CTX *make_server_ctx(struct pd_ca *ca, const char *host, paddock_error *err)
{
	_cleanup_(X509_freep) X509 *leaf = NULL;
	_cleanup_(SSL_CTX_freep) SSL_CTX *ctx = NULL;
	int r;

	r = make_leaf_cert(ca, host, &leaf, err);
	if (r < 0)
		return NULL;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		pd_fail(err, ENOMEM, "new server context: %s", OSSL_ERR);
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_use_certificate(ctx, leaf) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		pd_fail(err, EIO, "server context for '%s': %s", host, OSSL_ERR);
		return NULL;
	}
	/* The client is the sandbox: no renegotiation (a CPU sink), and no server-side session
	 * cache, whose memory a client could grow; stateless tickets still resume sessions. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	return TAKE_PTR(ctx);
}

SSL_CTX *pd_ca_server_ctx(struct pd_ca *ca, const char *host, paddock_error *err)
{
	char name[HOST_MAX + 1];
	struct pd_ca_leaf *slot = NULL;
	time_t now = time(NULL);
	int r;

	if (!ca) {
		pd_fail(err, EINVAL, "no CA");
		return NULL;
	}
	r = host_normalize(host, name, err);
	if (r < 0)
		return NULL;
	ca->clock++;
	for (size_t i = 0; i < ca->n_leaves; i++) {
		struct pd_ca_leaf *l = &ca->leaves[i];

		if (strcmp(l->host, name) != 0)
			continue;
		/* a clock set back makes a leaf look young: mint anew then too */
		if (now >= l->minted && now - l->minted < LEAF_REMINT_S) {
			l->used = ca->clock;
			return l->ctx;
		}
		slot = l;
		break;
	}

	SSL_CTX *ctx = make_server_ctx(ca, name, err);
	if (!ctx)
		return NULL;
	if (slot) {
		/* SSLs made from the old context keep their own reference */
		SSL_CTX_free(slot->ctx);
	} else {
		char *h = strdup(name);

		if (!h) {
			SSL_CTX_free(ctx);
			pd_fail(err, ENOMEM, "leaf cache");
			return NULL;
		}
		if (ca->n_leaves < LEAF_CACHE_MAX) {
			slot = &ca->leaves[ca->n_leaves++];
		} else {
			slot = &ca->leaves[0];
			for (size_t i = 1; i < ca->n_leaves; i++)
				if (ca->leaves[i].used < slot->used)
					slot = &ca->leaves[i];
			free(slot->host);
			SSL_CTX_free(slot->ctx);
		}
		slot->host = h;
	}
	slot->ctx = ctx;
	slot->minted = now;
	slot->used = ca->clock;
	return ctx;
}

SSL_CTX *pd_tls_upstream_ctx_new(const char *const *extra_ca_files, paddock_error *err)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	_cleanup_(SSL_CTX_freep) SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx) {
		pd_fail(err, ENOMEM, "new client context: %s", OSSL_ERR);
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		pd_fail(err, EIO, "client context: %s", OSSL_ERR);
		return NULL;
	}
	if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		pd_fail(err, EIO, "load the default trust store: %s", OSSL_ERR);
		return NULL;
	}
	for (size_t i = 0; extra_ca_files && extra_ca_files[i]; i++)
		if (SSL_CTX_load_verify_file(ctx, extra_ca_files[i]) != 1) {
			pd_fail(err, EINVAL, "load CA file '%s': %s", PD_ESC(extra_ca_files[i]),
				OSSL_ERR);
			return NULL;
		}
	/* SECURITY: the upstream gets the real secret: its certificate must check out. The
	 * name is checked per connection (pd_tls_client_ssl). */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* unlike every other setter here, 0 means success */
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
		pd_fail(err, ENOMEM, "client ALPN: %s", OSSL_ERR);
		return NULL;
	}
	return TAKE_PTR(ctx);
}

SSL *pd_tls_client_ssl(SSL_CTX *ctx, const char *host, paddock_error *err)
{
	char name[HOST_MAX + 1];
	_cleanup_(SSL_freep) SSL *ssl = NULL;
	int r;

	if (!ctx) {
		pd_fail(err, EINVAL, "no client context");
		return NULL;
	}
	r = host_normalize(host, name, err);
	if (r < 0)
		return NULL;
	ssl = SSL_new(ctx);
	if (!ssl) {
		pd_fail(err, ENOMEM, "new client connection: %s", OSSL_ERR);
		return NULL;
	}
	if (SSL_set_tlsext_host_name(ssl, name) != 1 || SSL_set1_host(ssl, name) != 1) {
		pd_fail(err, EIO, "server name '%s': %s", name, OSSL_ERR);
		return NULL;
	}
	/* "*.example.com" matches; "f*.example.com" does not */
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
	return TAKE_PTR(ssl);
}
