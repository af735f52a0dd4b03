/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading what names a connection's destination (egress-conn.c has its life): an HTTP proxy
 * request head, a SOCKS5 greeting and request, or — redirected — the original destination
 * and a peek at the first bytes for a TLS server name or an HTTP Host; and the check of the
 * first bytes through a tunnel. Everything here is the sandbox's, read with bounds.
 */
#include "egress-conn.h"

/* Reads what is there into c->buf (at most BUF_MAX); 0 on EOF, -EAGAIN, -errno, or bytes. */
ssize_t pd_egress_fill(struct pd_egress_conn *c)
{
	ssize_t n;

	if (!c->buf) {
		c->buf = malloc(BUF_MAX);
		if (!c->buf)
			return -ENOMEM;
	}
	if (c->len >= BUF_MAX)
		return -E2BIG;
	n = recv(c->cfd, c->buf + c->len, BUF_MAX - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : -errno;
	c->len += (size_t)n;
	return n;
}

/* Takes bytes [from, len) of c->buf as what goes upstream first. */
uint8_t *pd_egress_take_rest(struct pd_egress_conn *c, size_t from, size_t *ret_len)
{
	uint8_t *p;

	*ret_len = c->len > from ? c->len - from : 0;
	if (*ret_len == 0)
		return NULL;
	p = malloc(*ret_len);
	if (p)
		memcpy(p, c->buf + from, *ret_len);
	else
		*ret_len = 0;
	return p;
}

static bool header_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/*
 * An absolute-form request as it goes to the origin: "GET /path HTTP/1.1", without the
 * proxy's own headers, with Connection: close (one request per tunnel: the next request
 * on this connection could name another host, and must be decided again).
 */
uint8_t *pd_egress_rewrite_absolute(struct pd_egress_conn *c, size_t *ret_len)
{
	const char *b = (const char *)c->buf, *t = b + c->head.target_offset, *path, *p, *end;
	size_t tl = c->head.target_len, cap = c->head.head_len + 64, o = 0;
	const char *line_end = memchr(b, '\n', c->head.head_len);
	uint8_t *out;

	/* the path: after "http://authority" */
	path = memmem(t, tl, "://", 3);
	path = path ? memchr(path + 3, '/', (size_t)(t + tl - (path + 3))) : NULL;
	out = malloc(cap + (c->len - c->head.head_len));
	if (!out || !line_end)
		return free(out), NULL;
	o += (size_t)snprintf((char *)out, cap, "%.*s ", (int)strlen(c->head.method),
			      c->head.method);
	if (path) {
		memcpy(out + o, path, (size_t)(t + tl - path));
		o += (size_t)(t + tl - path);
	} else {
		out[o++] = '/';
	}
	/* " HTTP/1.x" and the rest of the request line */
	memcpy(out + o, t + tl, (size_t)(line_end + 1 - (t + tl)));
	o += (size_t)(line_end + 1 - (t + tl));
	end = b + c->head.head_len;
	for (p = line_end + 1; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		size_t content = ll;

		while (content > 0 && (p[content - 1] == '\n' || p[content - 1] == '\r'))
			content--;
		if (content == 0) {
			o += (size_t)snprintf((char *)out + o, cap - o,
					      "Connection: close\r\n\r\n");
			break;
		}
		if (!header_is(p, content, "proxy-connection") &&
		    !header_is(p, content, "proxy-authorization") &&
		    !header_is(p, content, "connection") && !header_is(p, content, "keep-alive")) {
			memcpy(out + o, p, ll);
			o += ll;
		}
		p += ll;
	}
	/* the start of a body, if the client sent it with the head */
	memcpy(out + o, c->buf + c->head.head_len, c->len - c->head.head_len);
	o += c->len - c->head.head_len;
	*ret_len = o;
	return out;
}

void pd_egress_head_proxy(struct pd_egress_conn *c)
{
	const char *why = NULL;
	int r;

	r = pd_http_head_parse((const char *)c->buf, c->len, &c->head, &why);
	if (r == -EAGAIN)
		return pd_egress_conn_arm(c->c_rd, 0);
	if (r == -E2BIG) {
		c->reason = "request head too large";
		pd_egress_conn_http_answer(
			c, "431 Request Header Fields Too Large",
			"paddock: the request head is larger than the proxy takes.\n");
		return pd_egress_conn_close(c);
	}
	if (r < 0) {
		char body[512];

		/* say what is wrong with it: the proxy read it as HTTP and found this */
		c->reason = why ? why : "a malformed request";
		snprintf(body, sizeof(body),
			 "paddock: the proxy cannot read this request: expected %s.\n",
			 why ? why : "an HTTP/1.x request");
		pd_egress_conn_http_answer(c, "400 Bad Request", body);
		return pd_egress_conn_close(c);
	}
	if (c->head.form == PD_HTTP_ORIGIN) {
		c->reason = "not a proxy request";
		pd_egress_conn_http_answer(
			c, "400 Bad Request",
			"paddock: this is an HTTP proxy: send CONNECT host:port or an "
			"absolute http:// URL.\n");
		return pd_egress_conn_close(c);
	}
	pd_egress_conn_set_target(c, c->head.host, c->head.port);
	c->absolute = c->head.form == PD_HTTP_ABSOLUTE;
	/* SECURITY: the Host header must name the host the request goes to */
	if (c->absolute && c->head.host_header[0] &&
	    (strcasecmp(c->head.host_header, c->head.host) != 0 ||
	     (c->head.host_header_port && c->head.host_header_port != c->head.port)))
		return pd_egress_conn_refuse_advice(
			c, "the Host header names another host than the request",
			ADVICE_FIX_REQUEST,
			"send a Host header that names the URL's host and port.");
	pd_egress_conn_decide(c);
}

void pd_egress_head_socks(struct pd_egress_conn *c)
{
	const char *why = NULL;
	size_t used;
	bool noauth;
	int r;

	if (c->socks_step == 0) {
		uint8_t ok[2] = { 5, 0 };

		r = pd_socks5_greeting_parse(c->buf, c->len, &used, &noauth, &why);
		if (r == -EAGAIN)
			return pd_egress_conn_arm(c->c_rd, 0);
		if (r < 0 || !noauth) {
			uint8_t no[2] = { 5, 0xff };

			if (r == 0)
				pd_egress_conn_send_client(c, no, 2);
			c->reason =
				r < 0 ? why : "the client offers no method without authentication";
			return pd_egress_conn_close(c);
		}
		pd_egress_conn_send_client(c, ok, 2);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		c->socks_step = 1;
	}
	struct pd_socks5_request q;

	r = pd_socks5_request_parse(c->buf, c->len, &q, &why);
	if (r == -EAGAIN)
		return pd_egress_conn_arm(c->c_rd, 0);
	if (r < 0) {
		uint8_t rep[10];

		pd_egress_conn_send_client(c, rep, pd_socks5_reply(0x01, rep));
		c->reason = why;
		return pd_egress_conn_close(c);
	}
	if (q.cmd != 1) {
		uint8_t rep[10];

		pd_egress_conn_send_client(c, rep,
					   pd_socks5_reply(0x07, rep)); /* command not supported */
		c->reason = "only the SOCKS5 CONNECT command is served";
		return pd_egress_conn_close(c);
	}
	memmove(c->buf, c->buf + q.len, c->len - q.len);
	c->len -= q.len;
	pd_egress_conn_set_target(c, q.host, q.port);
	pd_egress_conn_decide(c);
}

enum sniff {
	SNIFF_MAYBE, /* token characters that may be a method or another protocol's word */
	SNIFF_MORE,  /* a TLS hello or an HTTP request head has begun: read the rest */
	SNIFF_TLS,   /* a TLS ClientHello (with a server name, or none) */
	SNIFF_HTTP,  /* an HTTP request (with a Host, when its head parses) */
	SNIFF_OTHER, /* neither: another protocol */
};

/*
 * What the first bytes from the client are. `name`: the TLS server name or the Host they
 * carry, "" when none. A request line decides HTTP as the broker reads it
 * (pd_http_request_line_check), so a text protocol's line or binary bytes are another
 * protocol at once, without waiting.
 */
static enum sniff sniff(struct pd_egress_conn *c, char *name, size_t size)
{
	const char *why;
	int r;

	name[0] = '\0';
	if (c->len == 0)
		return SNIFF_MAYBE;
	if (c->buf[0] == 0x16) { /* a TLS handshake record */
		c->is_tls = true;
		r = pd_tls_sni_parse(c->buf, c->len, name, size, &why);
		if (r == -EAGAIN && c->len < PD_TLS_HELLO_MAX)
			return SNIFF_MORE;
		if (r < 0)
			name[0] = '\0';
		return SNIFF_TLS;
	}
	r = pd_http_request_line_check(c->buf, c->len);
	if (r == -EPROTO)
		return SNIFF_OTHER;
	if (r == -EAGAIN)
		return SNIFF_MAYBE; /* at most 32 token characters: never near BUF_MAX */
	/* a request line longer than a head may be is still HTTP: the broker refuses it */
	if (r == 1 && c->len < BUF_MAX)
		return SNIFF_MORE;
	c->is_http = true;
	r = pd_http_head_parse((const char *)c->buf, c->len, &c->head, &why);
	if (r == -EAGAIN && c->len < BUF_MAX)
		return SNIFF_MORE;
	if (r == 0)
		snprintf(name, size, "%s",
			 c->head.form == PD_HTTP_ORIGIN ? c->head.host_header : c->head.host);
	return SNIFF_HTTP;
}

/*
 * The client's first bytes are not known yet (SNIFF_MAYBE or SNIFF_MORE): read on, or give
 * up waiting. SECURITY: bytes that began a request head ("METHOD ") or a TLS hello are never
 * relayed unread: the head gets HEAD_TIMEOUT_S to complete, then the connection closes (a
 * leak check must not time out into a pass). Token characters alone ("ping") get
 * MAYBE_TIMEOUT_MS, then are another protocol's. 1: read on; 0: relay them as they are;
 * -1: closed.
 */
static int wait_for_more(struct pd_egress_conn *c, enum sniff k, bool timed_out)
{
	if (k == SNIFF_MORE) {
		if (timed_out && c->head_timer) {
			c->reason =
				"timed out waiting for the rest of the request head or TLS hello";
			pd_egress_conn_close(c);
			return -1;
		}
		if (!c->head_timer) {
			c->head_timer = true;
			pd_egress_conn_set_timer(c, HEAD_TIMEOUT_S * 1000);
		}
	} else if (timed_out && c->maybe_timer) {
		return 0;
	} else if (!c->maybe_timer) {
		c->maybe_timer = true;
		pd_egress_conn_set_timer(c, MAYBE_TIMEOUT_MS);
	}
	pd_egress_conn_arm(c->c_rd, 0);
	return 1;
}

void pd_egress_peek_transparent(struct pd_egress_conn *c, bool timed_out)
{
	char name[PD_EGRESS_NAME_MAX + 1];

	enum sniff k = sniff(c, name, sizeof(name));

	if (k == SNIFF_MORE || (k == SNIFF_MAYBE && c->len > 0)) {
		if (wait_for_more(c, k, timed_out) != 0)
			return;
		/* a word of another protocol ("ping"): its address decides */
	} else if (k == SNIFF_MAYBE) {
		if (!timed_out)
			return pd_egress_conn_arm(c->c_rd, 0);
		/*
		 * Nothing yet: a protocol whose server speaks first, or a slow client. The
		 * address decides now; whatever the client sends later is checked after the
		 * connect (ST_CHECK), as a tunnel's first bytes are.
		 */
	}
	/*
	 * The name the client asked for decides (TLS server name, Host); without one, the name
	 * the DNS filter answered this address for (ssh, git://, databases); the bare address
	 * only when neither exists.
	 */
	if (!name[0]) {
		const char *answered = pd_egress_name_for_addr(c->eg, c->addr_family, c->addr);

		if (answered)
			snprintf(name, sizeof(name), "%s", answered);
	}
	if (name[0]) {
		uint8_t lit[16];

		if (inet_pton(AF_INET, name, lit) != 1 && inet_pton(AF_INET6, name, lit) != 1)
			pd_egress_conn_set_target(c, name, c->port);
	}
	pd_egress_conn_decide(c);
}

/* The first bytes named another host than the connection was decided for. 0: go on. */
static int check_name(struct pd_egress_conn *c, const char *name)
{
	char norm[PD_EGRESS_NAME_MAX + 1];
	const struct pd_egress_rule *rule;
	uint8_t lit[16];

	if (!name[0] || inet_pton(AF_INET, name, lit) == 1 || inet_pton(AF_INET6, name, lit) == 1)
		return 0;
	if (pd_egress_name_normalise(name, norm, sizeof(norm)) == 0 && c->kind == TARGET_NAME &&
	    streq(norm, c->name))
		return 0;
	if (c->via == PD_VIA_TRANSPARENT &&
	    pd_egress_name_normalise(name, norm, sizeof(norm)) == 0) {
		/*
		 * Redirected, decided by its address before it named anything: the name it names
		 * now decides, as it would have at once (another name of a shared address).
		 */
		if (pd_egress_allow_name(&c->eg->policy, norm, c->port, &rule)) {
			pd_egress_conn_set_target(c, norm, c->port);
			pd_egress_conn_set_rule(c, rule);
			return 0;
		}
		c->allowed = false;
		pd_egress_conn_set_rule(c, rule);
		c->eg->stats.connections_denied++;
		c->reason = rule ? "a deny rule matches the name it sent late"
				 : "no allow rule matches the name it sent late";
		pd_egress_conn_close(c);
		return -1;
	}
	if (c->kind != TARGET_NAME)
		return 0; /* a tunnel to an address: the address was decided */
	c->allowed = false;
	c->rule[0] = '\0'; /* the rule allowed the host; the tunnel's contents are refused */
	c->eg->stats.connections_denied++;
	c->reason = c->is_tls ? "the TLS server name differs from the tunnel's host"
			      : "the Host header differs from the tunnel's host";
	pd_egress_conn_close(c);
	return -1;
}

/*
 * CHECK: the first bytes through a tunnel, or through a redirected connection that showed
 * none before it was decided. Nothing goes on before they are known.
 */
void pd_egress_check_first_bytes(struct pd_egress_conn *c, bool timed_out)
{
	char name[PD_EGRESS_NAME_MAX + 1];
	uint8_t *pre;
	size_t pre_len;
	bool tls;

	enum sniff k = sniff(c, name, sizeof(name));

	if (k == SNIFF_MORE || (k == SNIFF_MAYBE && c->len > 0)) {
		if (wait_for_more(c, k, timed_out) != 0)
			return;
	} else if (k == SNIFF_MAYBE) {
		if (timed_out) {
			c->reason = "idle timeout";
			return pd_egress_conn_close(c);
		}
		return pd_egress_conn_arm(c->c_rd, 0);
	}
	if (check_name(c, name) < 0)
		return;
	pre = pd_egress_take_rest(c, 0, &pre_len);
	if (pd_egress_broker_wanted(c, &tls))
		return pd_egress_broker_start(c, tls, pre, pre_len);
	pd_egress_conn_pipe_start(c, pre, pre_len);
}

/*
 * CHECK, and the server spoke first (ssh, SMTP, MySQL): not a request; relay at once. Bytes
 * of the client's that began a head or hello still decide.
 */
void pd_egress_check_server_first(struct pd_egress_conn *c)
{
	char name[PD_EGRESS_NAME_MAX + 1];
	uint8_t *pre;
	size_t pre_len;

	/* the client may have spoken at the same moment: its bytes, if any, still decide */
	if (c->len == 0 && pd_egress_fill(c) > 0 && sniff(c, name, sizeof(name)) != SNIFF_MAYBE)
		return pd_egress_check_first_bytes(c, false);
	if (c->len > 0 && sniff(c, name, sizeof(name)) != SNIFF_MAYBE)
		return; /* the client's bytes decide; more of them are on their way */
	pre = pd_egress_take_rest(c, 0, &pre_len);
	pd_egress_conn_pipe_start(c, pre, pre_len);
}
