/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox CA and an interception end to end, in one process over 127.0.0.1 only: a test
 * upstream TLS server and the mitm share one event loop; the client is a thread doing
 * blocking OpenSSL and trusting only the sandbox CA. The upstream's own test CA is a second
 * pd_ca (its leaves are checked against plain OpenSSL verification in test_ca).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls-ca.h"
#include "tls-mitm.h"

static const char request[] = "get /v1/x http/1.1\r\nhost: api.test\r\n\r\n";
static const char request_upper[] = "GET /V1/X HTTP/1.1\r\nHOST: API.TEST\r\n\r\n";
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
			       "hello";

static X509 *pem_to_x509(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);

	BIO_free(bio);
	return x;
}

static char *ca_pem(const struct pd_ca *ca)
{
	paddock_error err = { 0 };
	char *pem = NULL;
	size_t len = 0;

	assert_int_equal(pd_ca_cert_pem(ca, &pem, &len, &err), 0);
	assert_int_equal(strlen(pem), len);
	return pem;
}

static ASN1_INTEGER *leaf_serial(SSL_CTX *ctx)
{
	return ASN1_INTEGER_dup(X509_get0_serialNumber(SSL_CTX_get0_certificate(ctx)));
}

static void test_ca(void **state)
{
	struct pd_ca *ca = NULL;
	paddock_error err = { 0 };
	char name[128];

	(void)state;
	assert_int_equal(pd_ca_new(&ca, &err), 0);
	char *pem = ca_pem(ca);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(pem, "PRIVATE KEY"));
	X509 *cax = pem_to_x509(pem);
	assert_non_null(cax);
	assert_int_equal(X509_check_ca(cax), 1);
	assert_int_equal(X509_check_issued(cax, cax), X509_V_OK);
	X509_NAME_get_text_by_NID(X509_get_subject_name(cax), NID_commonName, name, sizeof(name));
	assert_true(strncmp(name, "paddock sandbox CA ", 19) == 0);
	assert_int_equal(strlen(name), 19 + 16);
	assert_true(X509_get_extension_flags(cax) & EXFLAG_CA);
	assert_int_equal(X509_get_key_usage(cax), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_int_equal(X509_get_pathlen(cax), 0);

	/* the leaf chains to the CA alone, for the name asked, as a TLS server */
	SSL_CTX *ctx = pd_ca_server_ctx(ca, "API.test", &err);
	assert_non_null(ctx);
	X509 *leaf = SSL_CTX_get0_certificate(ctx);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *sctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_add_cert(store, cax), 1);
	assert_int_equal(X509_STORE_CTX_init(sctx, store, leaf, NULL), 1);
	X509_STORE_CTX_set_purpose(sctx, X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(sctx), "api.test", 0);
	int ok = X509_verify_cert(sctx);
	if (ok != 1)
		fail_msg("leaf does not verify: %s",
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(sctx)));
	X509_STORE_CTX_free(sctx);
	X509_STORE_free(store);
	GENERAL_NAMES *san = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	assert_non_null(san);
	assert_int_equal(sk_GENERAL_NAME_num(san), 1);
	int type;
	ASN1_IA5STRING *dns = GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(san, 0), &type);
	assert_int_equal(type, GEN_DNS);
	assert_string_equal((const char *)ASN1_STRING_get0_data(dns), "api.test");
	GENERAL_NAMES_free(san);
	assert_int_equal(X509_check_host(leaf, "other.test", 0, 0, NULL), 0);
	assert_true(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
	assert_false(X509_get_extension_flags(leaf) & EXFLAG_CA);

	/* cached per (case-folded) name */
	assert_ptr_equal(pd_ca_server_ctx(ca, "api.test", &err), ctx);
	SSL_CTX *other = pd_ca_server_ctx(ca, "b.test", &err);
	assert_non_null(other);
	assert_ptr_not_equal(other, ctx);

	/* names that are not plain DNS names get no certificate */
	const char *bad[] = { "", "*.test", "a.test,DNS:b.test", "a b", ".test", "a\n.test" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_null(pd_ca_server_ctx(ca, bad[i], &err));
		assert_int_equal(err.code, EINVAL);
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_null(pd_ca_server_ctx(ca, longname, &err));
	/* a name too long for a CN still gets a leaf, with the name in the SAN only */
	memset(longname, 'a', 100);
	strcpy(longname + 100, ".test");
	SSL_CTX *lc = pd_ca_server_ctx(ca, longname, &err);
	assert_non_null(lc);
	assert_int_equal(X509_check_host(SSL_CTX_get0_certificate(lc), longname, 0, 0, NULL), 1);

	X509_free(cax);
	free(pem);
	pd_ca_free(ca);
}

static void test_ca_lru(void **state)
{
	struct pd_ca *ca = NULL;
	paddock_error err = { 0 };
	char h[32];

	(void)state;
	assert_int_equal(pd_ca_new(&ca, &err), 0);
	/* 256 hosts fill the cache: h0 .. h255 */
	ASN1_INTEGER *s3 = NULL;
	for (int i = 0; i < 256; i++) {
		snprintf(h, sizeof(h), "h%d.test", i);
		SSL_CTX *ctx = pd_ca_server_ctx(ca, h, &err);
		assert_non_null(ctx);
		if (i == 3)
			s3 = leaf_serial(ctx);
	}
	ASN1_INTEGER *s0 = leaf_serial(pd_ca_server_ctx(ca, "h0.test", &err)); /* h0 now used */
	ASN1_INTEGER *s1 = leaf_serial(pd_ca_server_ctx(ca, "h1.test", &err));
	ASN1_INTEGER *s2 = leaf_serial(pd_ca_server_ctx(ca, "h2.test", &err));
	/* h3 is the least recently used now: a new host evicts it and not h0..h2 */
	assert_non_null(pd_ca_server_ctx(ca, "new.test", &err));
	ASN1_INTEGER *t0 = leaf_serial(pd_ca_server_ctx(ca, "h0.test", &err));
	ASN1_INTEGER *t1 = leaf_serial(pd_ca_server_ctx(ca, "h1.test", &err));
	ASN1_INTEGER *t2 = leaf_serial(pd_ca_server_ctx(ca, "h2.test", &err));
	ASN1_INTEGER *t3 = leaf_serial(pd_ca_server_ctx(ca, "h3.test", &err)); /* minted anew */
	assert_int_equal(ASN1_INTEGER_cmp(s0, t0), 0);
	assert_int_equal(ASN1_INTEGER_cmp(s1, t1), 0);
	assert_int_equal(ASN1_INTEGER_cmp(s2, t2), 0);
	assert_int_not_equal(ASN1_INTEGER_cmp(s3, t3), 0);
	ASN1_INTEGER_free(s0);
	ASN1_INTEGER_free(s1);
	ASN1_INTEGER_free(s2);
	ASN1_INTEGER_free(s3);
	ASN1_INTEGER_free(t0);
	ASN1_INTEGER_free(t1);
	ASN1_INTEGER_free(t2);
	ASN1_INTEGER_free(t3);
	pd_ca_free(ca);
}

static void test_upstream_ctx(void **state)
{
	paddock_error err = { 0 };
	const char *missing[] = { "/nonexistent/ca.pem", NULL };
	const char *none[] = { NULL };

	(void)state;
	SSL_CTX *ctx = pd_tls_upstream_ctx_new(NULL, &err);
	assert_non_null(ctx);
	SSL_CTX_free(ctx);
	ctx = pd_tls_upstream_ctx_new(none, &err);
	assert_non_null(ctx);
	SSL *ssl = pd_tls_client_ssl(ctx, "API.Test", &err);
	assert_non_null(ssl);
	assert_string_equal(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), "api.test");
	assert_true(SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER);
	SSL_free(ssl);
	assert_null(pd_tls_client_ssl(ctx, "*.test", &err));
	SSL_CTX_free(ctx);
	assert_null(pd_tls_upstream_ctx_new(missing, &err));
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "/nonexistent/ca.pem"));
}

/* ---- the end-to-end harness ---- */

static int listen_local(int *ret_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

static int connect_local(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void set_nonblock(int fd)
{
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* The real server: TLS with its own CA, answers one request, then closes. */
struct upstream {
	struct event_base *base;
	SSL_CTX *ctx;
	const char *resp; /* what it answers with; NULL: it never answers */
	size_t resp_len;
	int lfd;
	struct event *lev;
	struct bufferevent *bev;
	char req[4096];
	size_t req_len;
	bool responded;
};

static void up_done(struct upstream *u)
{
	if (u->bev) {
		bufferevent_free(u->bev);
		u->bev = NULL;
	}
}

static void up_read(struct bufferevent *bev, void *arg)
{
	struct upstream *u = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);

	if (n > sizeof(u->req) - 1 - u->req_len)
		n = sizeof(u->req) - 1 - u->req_len;
	evbuffer_remove(in, u->req + u->req_len, n);
	u->req_len += n;
	if (u->resp && !u->responded && strstr(u->req, "\r\n\r\n")) {
		u->responded = true;
		bufferevent_write(bev, u->resp, u->resp_len);
	}
}

static void up_write(struct bufferevent *bev, void *arg)
{
	struct upstream *u = arg;

	if (u->responded && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		SSL_shutdown(bufferevent_openssl_get_ssl(bev));
		up_done(u);
	}
}

static void up_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		up_done(arg);
}

static void up_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct upstream *u = arg;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	(void)what;
	assert_true(fd >= 0);
	assert_null(u->bev);
	u->bev = bufferevent_openssl_socket_new(u->base, fd, SSL_new(u->ctx),
						BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(u->bev);
	bufferevent_openssl_set_allow_dirty_shutdown(u->bev, 1);
	bufferevent_setcb(u->bev, up_read, up_write, up_event, u);
	bufferevent_enable(u->bev, EV_READ | EV_WRITE);
}

/* The proxy's part: peek the ClientHello, connect upstream, hand both to the mitm. */
struct proxy {
	struct event_base *base;
	int lfd;
	struct event *lev;
	SSL_CTX *server_ctx;
	SSL_CTX *upstream_ctx;
	const char *upstream_name;
	int upstream_port;
	struct pd_mitm *m;
	int closed_calls;
	char reason[256];
	uint64_t from_client, from_upstream;
	size_t max_to_client; /* the most the client-bound output held */
	bool answer_failures; /* answer an upstream that fails with a 502 */
	char failed[256];     /* what upstream_failed() was told */
};

static int upper_client(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	char buf[512];
	int n;

	(void)ud;
	while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		for (int i = 0; i < n; i++)
			buf[i] = (char)toupper((unsigned char)buf[i]);
		evbuffer_add(out, buf, (size_t)n);
	}
	return 0;
}

static int pass_upstream(struct evbuffer *in, struct evbuffer *out, void *ud)
{
	struct proxy *p = ud;
	int r = evbuffer_add_buffer(out, in);

	if (evbuffer_get_length(out) > p->max_to_client)
		p->max_to_client = evbuffer_get_length(out);
	return r;
}

static void on_closed(const char *reason, uint64_t from_client, uint64_t from_upstream, void *ud)
{
	struct proxy *p = ud;

	p->closed_calls++;
	snprintf(p->reason, sizeof(p->reason), "%s", reason);
	p->from_client = from_client;
	p->from_upstream = from_upstream;
	p->m = NULL;
}

static const struct pd_mitm_ops test_ops = {
	.client_data = upper_client,
	.upstream_data = pass_upstream,
	.closed = on_closed,
};

static const char bad_gateway[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";

static void answer_failed(const char *reason, void *ud)
{
	struct proxy *p = ud;

	snprintf(p->failed, sizeof(p->failed), "%s", reason);
	pd_mitm_answer(p->m, bad_gateway, strlen(bad_gateway), reason);
}

static const struct pd_mitm_ops answering_ops = {
	.client_data = upper_client,
	.upstream_data = pass_upstream,
	.upstream_failed = answer_failed,
	.closed = on_closed,
};

static void proxy_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct proxy *p = arg;
	struct pollfd pfd;
	paddock_error err = { 0 };
	uint8_t hello[16384];
	int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	(void)what;
	assert_true(cfd >= 0);
	/* what arrives first is the ClientHello (all of it, on loopback) */
	pfd = (struct pollfd){ .fd = cfd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	ssize_t n = recv(cfd, hello, sizeof(hello), 0);
	assert_true(n > 5);
	assert_int_equal(hello[0], 0x16); /* a TLS handshake record */
	set_nonblock(cfd);
	int ufd = connect_local(p->upstream_port);
	set_nonblock(ufd);
	SSL *ussl = pd_tls_client_ssl(p->upstream_ctx, p->upstream_name, &err);
	assert_non_null(ussl);
	int r = pd_mitm_start(p->base, p->server_ctx, ussl, cfd, ufd, hello, (size_t)n,
			      p->answer_failures ? &answering_ops : &test_ops, p, &p->m, &err);
	if (r < 0)
		fail_msg("pd_mitm_start: %s", err.msg);
}

/* The sandbox's client: blocking OpenSSL in a thread, trusting only the sandbox CA. */
struct client {
	int port;
	const char *ca_pem;
	bool close_after_request; /* close_notify right after the request */
	unsigned read_delay_ms;	  /* wait before reading: the response piles up meanwhile */
	const char *expect;	  /* the response it should get */
	size_t expect_len;
	int handshake; /* SSL_connect's result */
	long verify;
	char alpn[32];
	char resp[4096]; /* the start of what it got */
	size_t resp_len; /* all it got */
	bool mismatch;	 /* got something other than `expect` */
	atomic_bool done;
};

static void client_got(struct client *c, const char *buf, size_t n)
{
	if (c->resp_len < sizeof(c->resp))
		memcpy(c->resp + c->resp_len, buf,
		       n < sizeof(c->resp) - c->resp_len ? n : sizeof(c->resp) - c->resp_len);
	if (!c->expect || c->resp_len + n > c->expect_len ||
	    memcmp(c->expect + c->resp_len, buf, n) != 0)
		c->mismatch = true;
	c->resp_len += n;
}

static void *client_main(void *arg)
{
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	struct client *c = arg;
	struct timeval tv = { .tv_sec = 15 };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	X509 *ca = pem_to_x509(c->ca_pem);
	int fd = connect_local(c->port);
	char buf[16384];

	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	X509_free(ca);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, "api.test");
	SSL_set1_host(ssl, "api.test");
	c->handshake = SSL_connect(ssl);
	c->verify = SSL_get_verify_result(ssl);
	if (c->handshake == 1) {
		const unsigned char *p;
		unsigned int pl;
		int n;

		SSL_get0_alpn_selected(ssl, &p, &pl);
		snprintf(c->alpn, sizeof(c->alpn), "%.*s", (int)pl, (const char *)p);
		if (SSL_write(ssl, request, (int)strlen(request)) > 0 && c->close_after_request)
			SSL_shutdown(ssl);
		if (c->read_delay_ms)
			usleep(c->read_delay_ms * 1000);
		while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
			client_got(c, buf, (size_t)n);
	}
	SSL_free(ssl);
	close(fd);
	SSL_CTX_free(ctx);
	atomic_store(&c->done, true);
	return NULL;
}

struct scenario {
	struct event_base *base;
	struct proxy *p;
	struct client *c;
	bool expired;
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct scenario *s = arg;

	(void)fd;
	(void)what;
	if (s->p->closed_calls > 0 && atomic_load(&s->c->done))
		event_base_loopexit(s->base, NULL);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct scenario *s = arg;

	(void)fd;
	(void)what;
	s->expired = true;
	event_base_loopexit(s->base, NULL);
}

/*
 * One interception: the upstream serves a leaf from `up_ca` for `up_name` and answers with
 * `resp`; the mitm trusts `trusted_ca` (a file) and expects "api.test". *c comes with its
 * options set.
 */
static void run(struct pd_ca *up_ca, const char *up_name, struct pd_ca *trusted_ca,
		const char *resp, size_t resp_len, struct upstream *u, struct proxy *p,
		struct client *c)
{
	struct event_base *base = event_base_new();
	struct pd_ca *sandbox_ca = NULL;
	paddock_error err = { 0 };
	char path[] = "/tmp/pdtest-ca.XXXXXX";
	pthread_t th;

	assert_non_null(base);
	assert_int_equal(pd_ca_new(&sandbox_ca, &err), 0);
	char *sandbox_pem = ca_pem(sandbox_ca);
	char *trusted_pem = ca_pem(trusted_ca);
	int tfd = mkstemp(path);
	assert_true(tfd >= 0);
	size_t tl = strlen(trusted_pem);
	assert_int_equal(write(tfd, trusted_pem, tl), (ssize_t)tl);
	close(tfd);
	const char *files[] = { path, NULL };

	*u = (struct upstream){ .base = base, .resp = resp, .resp_len = resp_len };
	u->ctx = pd_ca_server_ctx(up_ca, up_name, &err);
	assert_non_null(u->ctx);
	int up_port;
	u->lfd = listen_local(&up_port);
	u->lev = event_new(base, u->lfd, EV_READ | EV_PERSIST, up_accept, u);
	event_add(u->lev, NULL);

	*p = (struct proxy){ .base = base,
			     .upstream_port = up_port,
			     .upstream_name = "api.test",
			     .answer_failures = p->answer_failures };
	p->server_ctx = pd_ca_server_ctx(sandbox_ca, "api.test", &err);
	assert_non_null(p->server_ctx);
	p->upstream_ctx = pd_tls_upstream_ctx_new(files, &err);
	assert_non_null(p->upstream_ctx);
	int proxy_port;
	p->lfd = listen_local(&proxy_port);
	p->lev = event_new(base, p->lfd, EV_READ | EV_PERSIST, proxy_accept, p);
	event_add(p->lev, NULL);

	c->port = proxy_port;
	c->ca_pem = sandbox_pem;
	c->expect = resp;
	c->expect_len = resp_len;
	struct scenario s = { .base = base, .p = p, .c = c };
	struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, &s);
	struct timeval tv_tick = { .tv_usec = 10000 }, tv_deadline = { .tv_sec = 30 };
	event_add(tick, &tv_tick);
	struct event *deadline = evtimer_new(base, on_deadline, &s);
	evtimer_add(deadline, &tv_deadline);

	assert_int_equal(pthread_create(&th, NULL, client_main, c), 0);
	event_base_dispatch(base);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_false(s.expired);

	pd_mitm_free(p->m); /* NULL after closed(); here for a failed run */
	up_done(u);
	event_free(tick);
	event_free(deadline);
	event_free(u->lev);
	event_free(p->lev);
	close(u->lfd);
	close(p->lfd);
	SSL_CTX_free(p->upstream_ctx);
	unlink(path);
	free(trusted_pem);
	free(sandbox_pem);
	pd_ca_free(sandbox_ca);
	event_base_free(base);
}

static void test_intercept(void **state)
{
	struct pd_ca *up_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { 0 };
	struct client c = { 0 };

	(void)state;
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	run(up_ca, "api.test", up_ca, response, strlen(response), &u, &p, &c);

	assert_int_equal(c.handshake, 1);
	assert_int_equal(c.verify, X509_V_OK);
	assert_string_equal(c.alpn, "http/1.1"); /* h2 was offered first and refused */
	/* the transform is in the path */
	assert_int_equal(u.req_len, strlen(request_upper));
	assert_string_equal(u.req, request_upper);
	assert_int_equal(c.resp_len, strlen(response));
	assert_false(c.mismatch);
	assert_int_equal(p.closed_calls, 1);
	assert_string_equal(p.reason, "upstream closed");
	assert_int_equal(p.from_client, strlen(request));
	assert_int_equal(p.from_upstream, strlen(response));
	pd_ca_free(up_ca);
}

/* The client ends first (close_notify after its request) and the server never answers: the
 * request still reaches the server, however far its handshake got by then, and then both
 * sides are closed. */
static void test_client_closes(void **state)
{
	struct pd_ca *up_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { 0 };
	struct client c = { .close_after_request = true };

	(void)state;
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	run(up_ca, "api.test", up_ca, NULL, 0, &u, &p, &c);

	assert_int_equal(c.handshake, 1);
	assert_int_equal(p.closed_calls, 1);
	assert_string_equal(p.reason, "client closed");
	assert_string_equal(u.req, request_upper);
	assert_int_equal(p.from_client, strlen(request));
	assert_int_equal(c.resp_len, 0);
	pd_ca_free(up_ca);
}

/* 8 MiB to a client that is slow to read: it all arrives, in order, and the proxy never
 * holds much more than its limit for the client. */
static void test_backpressure(void **state)
{
	static const size_t body = 8u << 20;
	struct pd_ca *up_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { 0 };
	struct client c = { .read_delay_ms = 500 };
	char head[128];

	(void)state;
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			  body);
	char *resp = malloc((size_t)hl + body);
	assert_non_null(resp);
	memcpy(resp, head, (size_t)hl);
	for (size_t i = 0; i < body; i++)
		resp[hl + i] = (char)('a' + i % 26);
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	run(up_ca, "api.test", up_ca, resp, (size_t)hl + body, &u, &p, &c);

	assert_int_equal(c.resp_len, (size_t)hl + body);
	assert_false(c.mismatch);
	assert_string_equal(p.reason, "upstream closed");
	assert_int_equal(p.from_upstream, (uint64_t)hl + body);
	/* one read's worth over the limit at most (a read stops at the input's high mark) */
	if (p.max_to_client > 2 * PD_MITM_MAX_PENDING + 65536)
		fail_msg("the client-bound output grew to %zu bytes", p.max_to_client);
	free(resp);
	pd_ca_free(up_ca);
}

static void test_untrusted_upstream(void **state)
{
	struct pd_ca *up_ca = NULL, *other_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { 0 };
	struct client c = { 0 };

	(void)state;
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	assert_int_equal(pd_ca_new(&other_ca, &err), 0);
	run(up_ca, "api.test", other_ca, response, strlen(response), &u, &p, &c);

	assert_int_equal(p.closed_calls, 1);
	if (!strstr(p.reason, "certificate"))
		fail_msg("reason: %s", p.reason);
	assert_int_equal(c.resp_len, 0);
	assert_int_equal(u.req_len, 0);	    /* nothing the client sent reached the server */
	assert_int_equal(p.from_client, 0); /* nor even the transform */
	pd_ca_free(up_ca);
	pd_ca_free(other_ca);
}

static void test_wrong_name_upstream(void **state)
{
	struct pd_ca *up_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { 0 };
	struct client c = { 0 };

	(void)state;
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	/* a trusted CA, but the certificate is for another name */
	run(up_ca, "evil.test", up_ca, response, strlen(response), &u, &p, &c);

	assert_int_equal(p.closed_calls, 1);
	if (!strstr(p.reason, "certificate") || !strstr(p.reason, "hostname"))
		fail_msg("reason: %s", p.reason);
	assert_int_equal(c.resp_len, 0);
	assert_int_equal(u.req_len, 0);
	pd_ca_free(up_ca);
}

/*
 * An upstream that fails verification, answered: the client gets the 502 (after its own
 * handshake, its request read and dropped), the server nothing, and the reason is known.
 */
static void test_upstream_failed_answered(void **state)
{
	struct pd_ca *up_ca = NULL, *other_ca = NULL;
	paddock_error err = { 0 };
	struct upstream u;
	struct proxy p = { .answer_failures = true };
	struct client c = { 0 };

	(void)state;
	assert_int_equal(pd_ca_new(&up_ca, &err), 0);
	assert_int_equal(pd_ca_new(&other_ca, &err), 0);
	run(up_ca, "api.test", other_ca, response, strlen(response), &u, &p, &c);
	assert_int_equal(c.handshake, 1);
	assert_int_equal(c.resp_len, strlen(bad_gateway));
	assert_memory_equal(c.resp, bad_gateway, strlen(bad_gateway));
	if (!strstr(p.failed, "certificate"))
		fail_msg("upstream_failed got: %s", p.failed);
	assert_int_equal(p.closed_calls, 1);
	assert_non_null(strstr(p.reason, "certificate"));
	assert_int_equal(u.req_len, 0);
	assert_int_equal(p.from_client, 0);

	/* and a certificate for another name */
	p = (struct proxy){ .answer_failures = true };
	c = (struct client){ 0 };
	run(up_ca, "evil.test", up_ca, response, strlen(response), &u, &p, &c);
	assert_int_equal(c.resp_len, strlen(bad_gateway));
	if (!strstr(p.failed, "hostname"))
		fail_msg("upstream_failed got: %s", p.failed);
	assert_int_equal(u.req_len, 0);
	pd_ca_free(up_ca);
	pd_ca_free(other_ca);
}

/* A connected pair over 127.0.0.1: sv[0] accepted (non-blocking), sv[1] connected. */
static void tcp_pair(int sv[2])
{
	int port;
	int lfd = listen_local(&port);

	sv[1] = connect_local(port);
	sv[0] = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(sv[0] >= 0);
	close(lfd);
}

/* Reads to EOF (what the handshakes wrote first is skipped); 0 at EOF. */
static ssize_t read_to_eof(int fd)
{
	char b[4096];
	ssize_t n;

	while ((n = read(fd, b, sizeof(b))) > 0)
		;
	return n;
}

/* pd_mitm_free right after the start: both sockets closed, closed() never called. */
static void test_free_early(void **state)
{
	struct event_base *base = event_base_new();
	struct pd_ca *ca = NULL;
	paddock_error err = { 0 };
	struct proxy p = { 0 };
	struct pd_mitm *m = NULL;
	int cpair[2], upair[2];

	(void)state;
	assert_int_equal(pd_ca_new(&ca, &err), 0);
	SSL_CTX *uctx = pd_tls_upstream_ctx_new(NULL, &err);
	assert_non_null(uctx);
	tcp_pair(cpair);
	tcp_pair(upair);
	SSL *ussl = pd_tls_client_ssl(uctx, "api.test", &err);
	assert_int_equal(pd_mitm_start(base, pd_ca_server_ctx(ca, "api.test", &err), ussl, cpair[0],
				       upair[0], (const uint8_t *)"\x16\x03\x01", 3, &test_ops, &p,
				       &m, &err),
			 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	pd_mitm_free(m);
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(p.closed_calls, 0);
	assert_int_equal(read_to_eof(cpair[1]), 0);
	assert_int_equal(read_to_eof(upair[1]), 0);
	close(cpair[1]);
	close(upair[1]);

	/* an SSL that does not verify its peer is refused, and everything given is closed */
	SSL *lax = SSL_new(uctx);
	SSL_set_verify(lax, SSL_VERIFY_NONE, NULL);
	tcp_pair(cpair);
	tcp_pair(upair);
	assert_int_equal(pd_mitm_start(base, pd_ca_server_ctx(ca, "api.test", &err), lax, cpair[0],
				       upair[0], NULL, 0, &test_ops, &p, &m, &err),
			 -EINVAL);
	assert_int_equal(read_to_eof(cpair[1]), 0);
	assert_int_equal(read_to_eof(upair[1]), 0);

	close(cpair[1]);
	close(upair[1]);
	SSL_CTX_free(uctx);
	pd_ca_free(ca);
	event_base_free(base);
}

static void on_expire(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

/* A client that speaks plain HTTP to the TLS port: the reason says so, in OpenSSL's words. */
static void test_client_not_tls(void **state)
{
	static const char plain[] = "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n";
	struct event_base *base = event_base_new();
	struct pd_ca *ca = NULL;
	paddock_error err = { 0 };
	struct proxy p = { 0 };
	struct pd_mitm *m = NULL;
	int cpair[2], upair[2];
	bool expired = false;
	struct timeval tv = { .tv_sec = 20 };

	(void)state;
	assert_int_equal(pd_ca_new(&ca, &err), 0);
	SSL_CTX *uctx = pd_tls_upstream_ctx_new(NULL, &err);
	assert_non_null(uctx);
	tcp_pair(cpair);
	tcp_pair(upair); /* nobody answers there: the upstream handshake just waits */
	assert_int_equal(pd_mitm_start(base, pd_ca_server_ctx(ca, "api.test", &err),
				       pd_tls_client_ssl(uctx, "api.test", &err), cpair[0],
				       upair[0], (const uint8_t *)plain, strlen(plain), &test_ops,
				       &p, &m, &err),
			 0);
	struct event *deadline = evtimer_new(base, on_expire, &expired);
	evtimer_add(deadline, &tv);
	while (p.closed_calls == 0 && !expired)
		event_base_loop(base, EVLOOP_ONCE);
	assert_false(expired);
	assert_int_equal(p.closed_calls, 1);
	if (!strstr(p.reason, "client tls handshake failed: error:"))
		fail_msg("reason: %s", p.reason);
	assert_int_equal(read_to_eof(cpair[1]), 0);
	assert_int_equal(read_to_eof(upair[1]), 0);

	event_free(deadline);
	close(cpair[1]);
	close(upair[1]);
	SSL_CTX_free(uctx);
	pd_ca_free(ca);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca),
		cmocka_unit_test(test_ca_lru),
		cmocka_unit_test(test_upstream_ctx),
		cmocka_unit_test(test_intercept),
		cmocka_unit_test(test_client_closes),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_untrusted_upstream),
		cmocka_unit_test(test_wrong_name_upstream),
		cmocka_unit_test(test_upstream_failed_answered),
		cmocka_unit_test(test_free_early),
		cmocka_unit_test(test_client_not_tls),
	};

	/* libevent and OpenSSL write with write(2): a peer's close must not kill us */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
