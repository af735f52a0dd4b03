/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An intercepted HTTPS connection (see tls-mitm.h), on libevent's OpenSSL bufferevents.
 *
 * Client side: a socket bufferevent on cfd with a TLS filter bufferevent over it, accepting.
 * The proxy already read the ClientHello from cfd, so those bytes are put back at the front
 * of the socket bufferevent's input and the filter is kicked once to read them: nothing
 * more arrives from the client (it waits for our ServerHello), and a filter starts its
 * handshake only from the socket bufferevent's callbacks. (libevent 2.1.12 happens to run
 * the write callback on the socket's first writability too, which hides a missing kick;
 * not something to rely on.) Upstream side: an OpenSSL socket bufferevent on ufd,
 * connecting, with the caller's SSL (SNI, peer and name verification).
 *
 * Order of events: both handshakes run at once. Client bytes go through client_data() into
 * the upstream bufferevent's output, which libevent writes only once its handshake is done,
 * and a failed verification fails the handshake: so nothing reaches an unverified server.
 *
 * Ending: an EOF from one side (a close_notify or, allowed here, a bare TCP close) flushes
 * what is pending to the other side, sends it a close_notify, and ends; errors, refusals
 * by a callback and timeouts end at once. The end is deferred to an event, which frees
 * everything and then calls ops->closed(): no callback frees the object it was called for.
 */
#include "tls-mitm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "error.h"
#include "util/cleanup.h"

enum side {
	CLIENT,
	UPSTREAM,
};

/* what the client socket may hold in encrypted bytes on top of the filter's output */
#define CLIENT_SOCKET_HIGH (64 * 1024)

struct pd_mitm {
	struct event_base *base;
	struct bufferevent *bev[2]; /* [CLIENT] the TLS filter (owns csock), [UPSTREAM] TLS */
	struct bufferevent *csock;  /* the client's TCP socket under the filter */
	struct evbuffer_cb_entry *csock_out_cb;
	struct event *timer;  /* the handshakes, then the flush */
	struct event *finish; /* the deferred end */
	struct pd_mitm_ops ops;
	void *ud;
	uint64_t bytes[2]; /* decrypted bytes the callbacks consumed from each side */
	bool ready[2];	   /* handshake done */
	bool paused[2];	   /* not reading: the other side's output is full */
	bool flushing;	   /* `ended` closed; flushing to the other side */
	enum side ended;
	bool shutdown_sent;
	bool finishing;
	bool plain;	 /* no TLS either side: the same relay for plain HTTP (tls-mitm.h) */
	bool answering;	 /* pd_mitm_answer(): the client gets an answer, then we linger */
	bool lingering;	 /* the answer is out: wait for the client to close, briefly */
	uint8_t *answer; /* the answer, until the client's handshake is done */
	size_t answer_len;
	char reason[256];
};

/* after an answer, how long the client gets to read it and close before we do: closing
 * with its request still unread would reset the connection and lose the answer */
#define LINGER_S 2

static const char *const side_name[] = { [CLIENT] = "client", [UPSTREAM] = "upstream" };

static enum side other(enum side s)
{
	return s == CLIENT ? UPSTREAM : CLIENT;
}

static enum side side_of(const struct pd_mitm *m, const struct bufferevent *bev)
{
	return bev == m->bev[CLIENT] ? CLIENT : UPSTREAM;
}

__attribute__((format(printf, 2, 3))) static void set_reason(struct pd_mitm *m, const char *fmt,
							     ...)
{
	va_list ap;

	if (m->reason[0]) /* the first cause is the one worth recording */
		return;
	va_start(ap, fmt);
	vsnprintf(m->reason, sizeof(m->reason), fmt, ap);
	va_end(ap);
}

/* Ends now: nothing more is read or written; the deferred event frees and reports. */
static void end_now(struct pd_mitm *m)
{
	if (m->finishing)
		return;
	m->finishing = true;
	for (int s = CLIENT; s <= UPSTREAM; s++)
		bufferevent_disable(m->bev[s], EV_READ | EV_WRITE);
	event_del(m->timer);
	event_active(m->finish, EV_TIMEOUT, 1);
}

/* After one side ended: once everything is out towards the other, close_notify, then end. */
static void flush_check(struct pd_mitm *m)
{
	enum side t = other(m->ended);

	if (!m->flushing || m->finishing || !m->ready[t])
		return;
	if (evbuffer_get_length(bufferevent_get_output(m->bev[t])) > 0)
		return;
	if (!m->shutdown_sent && m->plain) {
		m->shutdown_sent = true;
		(void)shutdown(bufferevent_getfd(m->bev[t]), SHUT_WR);
	}
	if (!m->shutdown_sent) {
		m->shutdown_sent = true;
		/* Best effort: a close_notify tells the peer the stream was not cut short. For
		 * the client it lands in csock's output, drained below; upstream, it goes
		 * straight to the socket, and a full one just loses it. */
		(void)SSL_shutdown(bufferevent_openssl_get_ssl(m->bev[t]));
		ERR_clear_error();
	}
	if (t == CLIENT && m->csock && evbuffer_get_length(bufferevent_get_output(m->csock)) > 0)
		return;
	if (t == CLIENT && m->answering && !m->lingering) {
		struct timeval tv = { .tv_sec = LINGER_S };

		/* the answer is out; the client reads it and closes, or we do soon */
		m->lingering = true;
		(void)shutdown(bufferevent_getfd(m->csock ? m->csock : m->bev[CLIENT]), SHUT_WR);
		evtimer_add(m->timer, &tv);
		return;
	}
	if (m->lingering)
		return;
	end_now(m);
}

static void begin_flush(struct pd_mitm *m, enum side ended)
{
	enum side t = other(ended);
	struct timeval tv = { .tv_sec = PD_MITM_TIMEOUT_S };

	if (m->flushing || m->finishing)
		return;
	set_reason(m, "%s closed", side_name[ended]);
	m->flushing = true;
	m->ended = ended;
	/* Only the flush remains. Reading is stopped only on an open side: toggling it on a
	 * filter bufferevent mid-handshake would drive SSL_read and handshake behind
	 * libevent's back. An unfinished handshake gets the same time as the flush. */
	bufferevent_disable(m->bev[ended], EV_READ);
	/* an answer's client is read (and what it sends dropped) until it closes */
	if (m->ready[t] && !(t == CLIENT && m->answering))
		bufferevent_disable(m->bev[t], EV_READ);
	bufferevent_setwatermark(m->bev[t], EV_WRITE, 0, 0); /* the write callback at empty */
	evtimer_add(m->timer, &tv);
	flush_check(m);
}

void pd_mitm_answer(struct pd_mitm *m, const void *data, size_t len, const char *reason)
{
	if (m->finishing || m->flushing)
		return;
	set_reason(m, "%s", reason);
	m->answering = true;
	if (m->ready[CLIENT]) {
		(void)evbuffer_add(bufferevent_get_output(m->bev[CLIENT]), data, len);
	} else {
		/* it goes once the client's handshake is done (on_connected) */
		m->answer = malloc(len);
		if (m->answer) {
			memcpy(m->answer, data, len);
			m->answer_len = len;
		}
	}
	/* as if upstream had ended: what is queued for the client goes out, then the end */
	begin_flush(m, UPSTREAM);
}

/*
 * The upstream failed before it was ready (its certificate, its name, its handshake): the
 * caller may answer the client in its place (pd_mitm_answer); otherwise the end.
 */
static void upstream_failed(struct pd_mitm *m)
{
	bufferevent_disable(m->bev[UPSTREAM], EV_READ | EV_WRITE);
	if (m->ops.upstream_failed) {
		m->ops.upstream_failed(m->reason, m->ud);
		if (m->flushing || m->finishing)
			return;
	}
	end_now(m);
}

/* Decrypted bytes from side s through its transform into the other side's output. */
static void pump(struct pd_mitm *m, enum side s)
{
	struct evbuffer *in = bufferevent_get_input(m->bev[s]);
	struct evbuffer *out = bufferevent_get_output(m->bev[other(s)]);
	size_t before = evbuffer_get_length(in);
	int r;

	/* An answered client's bytes go nowhere (and are not counted) */
	if (s == CLIENT && m->answering) {
		(void)evbuffer_drain(in, before);
		return;
	}
	/* Once one side has ended, the other's bytes have nowhere to go. */
	if (m->finishing || before == 0 || (m->flushing && s != m->ended))
		return;
	/* SECURITY: the client's bytes wait (bounded by the read high watermark) until the
	 * upstream is verified: the transform puts the real secret in, and it should not
	 * exist outside its store for a server that may turn out to be the wrong one. */
	if (s == CLIENT && !m->ready[UPSTREAM])
		return;
	r = s == CLIENT ? m->ops.client_data(in, out, m->ud) : m->ops.upstream_data(in, out, m->ud);
	size_t after = evbuffer_get_length(in);
	if (after < before)
		m->bytes[s] += before - after;
	if (r < 0) {
		set_reason(m, "%s data refused", side_name[s]);
		end_now(m);
		return;
	}
	if (m->flushing) {
		flush_check(m);
		return;
	}
	/* Backpressure: resumed by the other side's write callback (its low watermark). */
	if (evbuffer_get_length(out) >= PD_MITM_MAX_PENDING && !m->paused[s]) {
		m->paused[s] = true;
		bufferevent_disable(m->bev[s], EV_READ);
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct pd_mitm *m = arg;

	pump(m, side_of(m, bev));
}

/* bev's output went down to its low watermark (half the limit; 0 when flushing). */
static void on_write(struct bufferevent *bev, void *arg)
{
	struct pd_mitm *m = arg;
	enum side t = side_of(m, bev), s = other(t);

	if (m->finishing)
		return;
	if (m->flushing) {
		flush_check(m);
		return;
	}
	if (m->paused[s]) {
		m->paused[s] = false;
		bufferevent_enable(m->bev[s], EV_READ);
	}
}

/* csock's output changed: the last of a flush (and the close_notify) may be out now. */
static void on_csock_out(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct pd_mitm *m = arg;

	(void)info;
	if (m->flushing && m->ended == UPSTREAM && evbuffer_get_length(buf) == 0)
		flush_check(m);
}

static void on_connected(struct pd_mitm *m, enum side s)
{
	m->ready[s] = true;
	if (s == UPSTREAM) {
		SSL *ssl = bufferevent_openssl_get_ssl(m->bev[s]);
		long vr = SSL_get_verify_result(ssl);

		/* SECURITY: SSL_VERIFY_PEER already failed the handshake on a bad certificate;
		 * checked again because what follows is the real secret. */
		if (vr != X509_V_OK || !SSL_get0_peer_certificate(ssl)) {
			m->ready[s] = false;
			set_reason(m, "upstream certificate verification failed: %s",
				   vr != X509_V_OK ? X509_verify_cert_error_string(vr)
						   : "no certificate");
			upstream_failed(m);
			return;
		}
		pump(m, CLIENT); /* what the client sent meanwhile */
		if (m->finishing)
			return;
	}
	if (m->flushing) {
		if (s == CLIENT && m->answer) {
			(void)evbuffer_add(bufferevent_get_output(m->bev[CLIENT]), m->answer,
					   m->answer_len);
			free(m->answer);
			m->answer = NULL;
		}
		if (s != m->ended) {
			if (!(s == CLIENT && m->answering))
				bufferevent_disable(m->bev[s], EV_READ);
			flush_check(m);
		}
		return;
	}
	if (m->ready[CLIENT] && m->ready[UPSTREAM])
		event_del(m->timer); /* no idle timeout here: the proxy has its own */
}

/* Why side s failed, from what OpenSSL and the socket say. */
static void failure_reason(struct pd_mitm *m, enum side s, short what)
{
	const char *phase = m->ready[s] ? "connection" : "handshake";
	unsigned long e;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (s == UPSTREAM && !m->ready[s]) {
		long vr = SSL_get_verify_result(bufferevent_openssl_get_ssl(m->bev[s]));

		if (vr != X509_V_OK) {
			set_reason(m, "upstream certificate verification failed: %s",
				   X509_verify_cert_error_string(vr));
			return;
		}
	}
	/* libevent 2.1 records SSL_get_error()'s code (SSL_ERROR_SYSCALL...) among the
	 * OpenSSL errors: skip those, they belong to no library */
	while ((e = bufferevent_get_openssl_error(m->bev[s])) != 0 && ERR_GET_LIB(e) == 0)
		;
	if (e != 0) {
		char buf[160];

		ERR_error_string_n(e, buf, sizeof(buf));
		set_reason(m, "%s tls %s failed: %s", side_name[s], phase, buf);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		set_reason(m, "%s timed out", side_name[s]);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		set_reason(m, "%s closed during the tls handshake", side_name[s]);
		return;
	}
	/* errno is long gone by a deferred callback; the socket may still hold the error */
	(void)getsockopt(bufferevent_getfd(s == CLIENT && m->csock ? m->csock : m->bev[s]),
			 SOL_SOCKET, SO_ERROR, &soerr, &sl);
	set_reason(m, "%s %s failed: %s", side_name[s], phase,
		   soerr ? strerror(soerr) : "connection error");
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct pd_mitm *m = arg;
	enum side s = side_of(m, bev);

	if (m->finishing)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		on_connected(m, s);
		return;
	}
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	if (s == CLIENT && m->answering) {
		end_now(m); /* it read the answer and closed, or went away */
		return;
	}
	if ((what & BEV_EVENT_EOF) && m->ready[s]) {
		/* what was decrypted before the end still goes through */
		pump(m, s);
		if (s == UPSTREAM && m->ops.upstream_eof && !m->finishing && !m->flushing &&
		    m->ops.upstream_eof(bufferevent_get_output(m->bev[CLIENT]), m->ud) < 0) {
			set_reason(m, "upstream data refused");
			end_now(m);
			return;
		}
		begin_flush(m, s);
		return;
	}
	failure_reason(m, s, what);
	if (s == UPSTREAM && !m->ready[UPSTREAM] && !m->flushing) {
		upstream_failed(m);
		return;
	}
	end_now(m);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct pd_mitm *m = arg;

	(void)fd;
	(void)what;
	if (m->lingering) {
		end_now(m); /* the answer went out; the client did not close: we do */
		return;
	}
	if (!m->ready[CLIENT] || !m->ready[UPSTREAM])
		set_reason(m, "tls handshake timed out (%s)",
			   !m->ready[CLIENT] && !m->ready[UPSTREAM] ? "client and upstream"
			   : !m->ready[CLIENT]			    ? "client"
								    : "upstream");
	if (m->ready[CLIENT] && !m->ready[UPSTREAM] && !m->flushing) {
		struct timeval tv = { .tv_sec = PD_MITM_TIMEOUT_S };

		evtimer_add(m->timer, &tv); /* for the answer's flush */
		upstream_failed(m);
		return;
	}
	set_reason(m, "flush timed out"); /* unless the flush's own cause is recorded already */
	end_now(m);
}

void pd_mitm_free(struct pd_mitm *m)
{
	if (!m)
		return;
	if (m->csock_out_cb)
		evbuffer_remove_cb_entry(bufferevent_get_output(m->csock), m->csock_out_cb);
	if (m->bev[CLIENT])
		bufferevent_free(m->bev[CLIENT]); /* and csock, cfd, the client SSL */
	else if (m->csock)
		bufferevent_free(m->csock);
	if (m->bev[UPSTREAM])
		bufferevent_free(m->bev[UPSTREAM]); /* and ufd, the upstream SSL */
	if (m->timer)
		event_free(m->timer);
	if (m->finish)
		event_free(m->finish);
	free(m->answer);
	free(m);
}
PD_DEFINE_CLEANUP(struct pd_mitm, pd_mitm_free)

void pd_mitm_counts(const struct pd_mitm *m, uint64_t *ret_from_client, uint64_t *ret_from_upstream)
{
	*ret_from_client = m->bytes[CLIENT];
	*ret_from_upstream = m->bytes[UPSTREAM];
}

static void on_finish(evutil_socket_t fd, short what, void *arg)
{
	struct pd_mitm *m = arg;
	void (*closed)(const char *, uint64_t, uint64_t, void *) = m->ops.closed;
	uint64_t from_client = m->bytes[CLIENT], from_upstream = m->bytes[UPSTREAM];
	void *ud = m->ud;
	char reason[sizeof(m->reason)];

	(void)fd;
	(void)what;
	memcpy(reason, m->reason, sizeof(reason));
	if (!reason[0])
		snprintf(reason, sizeof(reason), "closed");
	pd_mitm_free(m);
	closed(reason, from_client, from_upstream, ud);
}

static void close_fd(int fd)
{
	(void)pd_close(fd);
}

/*
 * Plain mode: the same relay, transforms and ending over two TCP sockets, for plain HTTP
 * the broker must see (a sandbox with secrets). Both sides are ready at once.
 */
static int start_plain(struct event_base *base, int cfd, int ufd, const uint8_t *peeked,
		       size_t peeked_len, const struct pd_mitm_ops *ops, void *ud,
		       struct pd_mitm **ret, paddock_error *err)
{
	_cleanup_(pd_mitm_freep) struct pd_mitm *m = NULL;

	if (!base || cfd < 0 || ufd < 0 || !ops || !ops->client_data || !ops->upstream_data ||
	    !ops->closed || !ret || (peeked_len > 0 && !peeked) || !(m = calloc(1, sizeof(*m)))) {
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, EINVAL, "bad relay arguments");
	}
	m->base = base;
	m->ops = *ops;
	m->ud = ud;
	m->plain = true;
	m->ready[CLIENT] = m->ready[UPSTREAM] = true;
	m->bev[UPSTREAM] =
		bufferevent_socket_new(base, ufd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!m->bev[UPSTREAM]) {
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, ENOMEM, "upstream bufferevent");
	}
	m->bev[CLIENT] =
		bufferevent_socket_new(base, cfd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!m->bev[CLIENT]) {
		close_fd(cfd);
		return pd_fail(err, ENOMEM, "client bufferevent");
	}
	m->timer = evtimer_new(base, on_timer, m);
	m->finish = event_new(base, -1, 0, on_finish, m);
	if (!m->timer || !m->finish)
		return pd_fail(err, ENOMEM, "relay events");
	for (int s = CLIENT; s <= UPSTREAM; s++) {
		bufferevent_setcb(m->bev[s], on_read, on_write, on_event, m);
		bufferevent_setwatermark(m->bev[s], EV_READ, 0, PD_MITM_MAX_PENDING);
		bufferevent_setwatermark(m->bev[s], EV_WRITE, PD_MITM_MAX_PENDING / 2, 0);
		if (bufferevent_enable(m->bev[s], EV_READ | EV_WRITE) < 0)
			return pd_fail(err, EIO, "enable relay");
	}
	if (peeked_len > 0 &&
	    evbuffer_prepend(bufferevent_get_input(m->bev[CLIENT]), peeked, peeked_len) < 0)
		return pd_fail(err, ENOMEM, "client bytes");
	bufferevent_trigger(m->bev[CLIENT], EV_READ,
			    BEV_TRIG_DEFER_CALLBACKS | BEV_TRIG_IGNORE_WATERMARKS);
	*ret = TAKE_PTR(m);
	return 0;
}

int pd_mitm_start(struct event_base *base, SSL_CTX *server_ctx, SSL *upstream_ssl, int cfd, int ufd,
		  const uint8_t *peeked, size_t peeked_len, const struct pd_mitm_ops *ops, void *ud,
		  struct pd_mitm **ret, paddock_error *err)
{
	_cleanup_(pd_mitm_freep) struct pd_mitm *m = NULL;
	struct timeval tv = { .tv_sec = PD_MITM_TIMEOUT_S };
	SSL *cssl;

	if (!server_ctx && !upstream_ssl)
		return start_plain(base, cfd, ufd, peeked, peeked_len, ops, ud, ret, err);
	if (!base || !server_ctx || !upstream_ssl || cfd < 0 || ufd < 0 || !ops ||
	    !ops->client_data || !ops->upstream_data || !ops->closed || !ret ||
	    (peeked_len > 0 && !peeked)) {
		SSL_free(upstream_ssl);
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, EINVAL, "bad interception arguments");
	}
	/* SECURITY: the secret goes to whoever this SSL accepts: it must check the peer's
	 * certificate and its name, or nothing is sent. */
	if (!(SSL_get_verify_mode(upstream_ssl) & SSL_VERIFY_PEER) ||
	    !X509_VERIFY_PARAM_get0_host(SSL_get0_param(upstream_ssl), 0)) {
		SSL_free(upstream_ssl);
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, EINVAL, "upstream TLS does not verify the server");
	}

	m = calloc(1, sizeof(*m));
	if (!m) {
		SSL_free(upstream_ssl);
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, ENOMEM, "allocate interception");
	}
	m->base = base;
	m->ops = *ops;
	m->ud = ud;

	/* On failure libevent has freed the SSL (CLOSE_ON_FREE) but not closed the fd. */
	m->bev[UPSTREAM] =
		bufferevent_openssl_socket_new(base, ufd, upstream_ssl, BUFFEREVENT_SSL_CONNECTING,
					       BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!m->bev[UPSTREAM]) {
		close_fd(cfd);
		close_fd(ufd);
		return pd_fail(err, ENOMEM, "upstream TLS bufferevent");
	}
	m->csock = bufferevent_socket_new(base, cfd, BEV_OPT_CLOSE_ON_FREE);
	if (!m->csock) {
		close_fd(cfd);
		return pd_fail(err, ENOMEM, "client bufferevent");
	}
	cssl = SSL_new(server_ctx);
	if (!cssl) {
		ERR_clear_error();
		return pd_fail(err, ENOMEM, "client TLS connection");
	}
	/* On failure libevent has freed cssl but not csock (libevent 2.1.12 frees csock
	 * too only when setting up the handshake fails, which cannot happen before any
	 * bytes arrived): pd_mitm_free frees it. */
	m->bev[CLIENT] =
		bufferevent_openssl_filter_new(base, m->csock, cssl, BUFFEREVENT_SSL_ACCEPTING,
					       BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!m->bev[CLIENT])
		return pd_fail(err, ENOMEM, "client TLS bufferevent");
	m->timer = evtimer_new(base, on_timer, m);
	m->finish = event_new(base, -1, 0, on_finish, m);
	m->csock_out_cb = evbuffer_add_cb(bufferevent_get_output(m->csock), on_csock_out, m);
	if (!m->timer || !m->finish || !m->csock_out_cb || evtimer_add(m->timer, &tv) < 0)
		return pd_fail(err, ENOMEM, "interception events");

	for (int s = CLIENT; s <= UPSTREAM; s++) {
		bufferevent_setcb(m->bev[s], on_read, on_write, on_event, m);
		/* a transform that leaves bytes in `in` (a partial header) cannot make us
		 * buffer without bound either */
		bufferevent_setwatermark(m->bev[s], EV_READ, 0, PD_MITM_MAX_PENDING);
		bufferevent_setwatermark(m->bev[s], EV_WRITE, PD_MITM_MAX_PENDING / 2, 0);
		/* Servers and clients commonly end with a bare TCP close: taken as an end, not
		 * an error. Truncation is the application protocol's to notice (HTTP/1.1
		 * frames its bodies). */
		bufferevent_openssl_set_allow_dirty_shutdown(m->bev[s], 1);
	}
	/* The filter reads the socket bufferevent's input; above this much unsent output it
	 * waits for the socket to drain. */
	bufferevent_setwatermark(m->csock, EV_WRITE, 0, CLIENT_SOCKET_HIGH);

	/* Enabled before the ClientHello is back in place: enabling a filter runs SSL_read on
	 * what its input holds, which would handshake behind libevent's back. Enabled before
	 * the handshakes end too, as libevent re-applies these flags when they do. */
	if (bufferevent_enable(m->bev[UPSTREAM], EV_READ | EV_WRITE) < 0 ||
	    bufferevent_enable(m->bev[CLIENT], EV_READ | EV_WRITE) < 0)
		return pd_fail(err, EIO, "enable interception");
	if (peeked_len > 0 &&
	    evbuffer_prepend(bufferevent_get_input(m->csock), peeked, peeked_len) < 0)
		return pd_fail(err, ENOMEM, "client hello");
	/* The kick (see the top): the filter's handshake runs from the loop, with the bytes. */
	bufferevent_trigger(m->csock, EV_READ,
			    BEV_TRIG_DEFER_CALLBACKS | BEV_TRIG_IGNORE_WATERMARKS);

	*ret = TAKE_PTR(m);
	return 0;
}
