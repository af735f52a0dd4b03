/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP request head, TLS ClientHello and SOCKS5 parsers of the egress proxy
 * (egress-parse.h). Written by hand: evhttp parses requests for a server it runs itself and
 * gives no access to a head that is to be judged and then forwarded byte for byte, and
 * OpenSSL reads a ClientHello only inside a handshake paddock does not terminate (a tunnelled
 * connection must reach the real server unchanged). Strict on purpose: CRLF line ends only,
 * no obsolete line folding, one Host header, no credentials in URLs; SOCKS5 version 5 only,
 * a zero reserved byte, domain names of visible ASCII.
 */
#include "egress-parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- HTTP ------------------------------------------------------------------------------- */

static bool tchar(char c)
{
	/* not NUL: strchr() finds the terminator */
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int parse_port(const char *s, size_t n, uint16_t *ret)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EPROTO;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EPROTO;
	*ret = (uint16_t)v;
	return 0;
}

enum port_rule {
	PORT_REQUIRED,	 /* CONNECT host:port */
	PORT_DEFAULT_80, /* http://host/ */
	PORT_OPTIONAL,	 /* Host: host, without a port: 0, "none given" */
};

/*
 * "host[:port]" or "[v6][:port]" into a normalised host (a name lowercased, or an address
 * as written) and a port (as `rule` says when absent).
 */
static int parse_authority(const char *s, size_t n, char *host, size_t size, uint16_t *port,
			   enum port_rule rule)
{
	char tmp[PD_EGRESS_NAME_MAX + 1];
	const char *h = s, *colon = NULL;
	size_t hl;
	uint8_t addr[16];

	if (n == 0 || memchr(s, '@', n))
		return -EPROTO; /* no userinfo: "allowed.com@evil.com" is not allowed.com */
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close)
			return -EPROTO;
		h = s + 1;
		hl = (size_t)(close - h);
		if (close + 1 < s + n) {
			if (close[1] != ':')
				return -EPROTO;
			colon = close + 1;
		}
		if (hl >= sizeof(tmp))
			return -EPROTO;
		memcpy(tmp, h, hl);
		tmp[hl] = '\0';
		if (inet_pton(AF_INET6, tmp, addr) != 1)
			return -EPROTO;
	} else {
		colon = memchr(s, ':', n);
		hl = colon ? (size_t)(colon - s) : n;
		if (hl == 0 || hl >= sizeof(tmp))
			return -EPROTO;
		memcpy(tmp, s, hl);
		tmp[hl] = '\0';
	}
	if (colon) {
		if (parse_port(colon + 1, (size_t)(s + n - colon - 1), port) < 0)
			return -EPROTO;
	} else {
		if (rule == PORT_REQUIRED)
			return -EPROTO;
		*port = rule == PORT_DEFAULT_80 ? 80 : 0;
	}
	if (inet_pton(AF_INET, tmp, addr) == 1 || inet_pton(AF_INET6, tmp, addr) == 1) {
		if (strlen(tmp) >= size)
			return -EPROTO;
		strcpy(host, tmp);
		return 0;
	}
	return pd_egress_name_normalise(tmp, host, size) < 0 ? -EPROTO : 0;
}

static int fail_http(const char **why, const char *text)
{
	*why = text;
	return -EPROTO;
}

int pd_http_head_parse(const char *buf, size_t len, struct pd_http_head *ret_head,
		       const char **ret_why)
{
	struct pd_http_head h = { 0 };
	const char *end = NULL, *p, *sp1, *sp2, *eol;
	size_t scan = len < PD_HTTP_HEAD_MAX ? len : PD_HTTP_HEAD_MAX;
	unsigned n_headers = 0;
	bool have_host = false;

	*ret_why = NULL;
	for (size_t i = 0; i + 3 < scan; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n') {
			end = buf + i + 4;
			break;
		}
	if (!end) {
		if (len >= PD_HTTP_HEAD_MAX)
			return -E2BIG;
		/* a bare LF or a NUL already makes it malformed, whatever follows */
		for (size_t i = 0; i < len; i++)
			if (buf[i] == '\0' || (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')))
				return fail_http(ret_why, "lines ending in CRLF");
		return -EAGAIN;
	}
	h.head_len = (size_t)(end - buf);
	/* request line: METHOD SP TARGET SP HTTP/1.x CRLF */
	eol = memchr(buf, '\r', h.head_len);
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1 || sp1 == buf || (size_t)(sp1 - buf) >= sizeof(h.method))
		return fail_http(ret_why, "a request line 'METHOD TARGET HTTP/1.1'");
	for (p = buf; p < sp1; p++)
		if (*p < 'A' || *p > 'Z')
			return fail_http(ret_why, "an upper-case method");
	memcpy(h.method, buf, (size_t)(sp1 - buf));
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return fail_http(ret_why, "a request line 'METHOD TARGET HTTP/1.1'");
	for (p = sp1 + 1; p < sp2; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return fail_http(ret_why, "a request target of visible ASCII");
	if (eol - sp2 - 1 != 8 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 && memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return fail_http(ret_why, "HTTP/1.0 or HTTP/1.1");
	h.target_offset = (size_t)(sp1 + 1 - buf);
	h.target_len = (size_t)(sp2 - sp1 - 1);

	/* headers */
	for (p = eol + 2; p < end - 2; p = eol + 2) {
		const char *colon, *v, *ve;

		eol = memchr(p, '\r', (size_t)(end - p));
		if (!eol || eol[1] != '\n')
			return fail_http(ret_why, "lines ending in CRLF");
		if (++n_headers > PD_HTTP_HEADERS_MAX)
			return -E2BIG;
		if (*p == ' ' || *p == '\t')
			return fail_http(ret_why, "no folded header lines");
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			return fail_http(ret_why, "headers 'Name: value'");
		for (const char *c = p; c < colon; c++)
			if (!tchar(*c))
				return fail_http(ret_why, "header names of token characters");
		for (const char *c = colon + 1; c < eol; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return fail_http(ret_why, "no control characters in header values");
		if ((size_t)(colon - p) != 4 || strncasecmp(p, "host", 4) != 0)
			continue;
		if (have_host)
			return fail_http(ret_why, "one Host header");
		have_host = true;
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (parse_authority(v, (size_t)(ve - v), h.host_header, sizeof(h.host_header),
				    &h.host_header_port, PORT_OPTIONAL) < 0)
			return fail_http(ret_why, "a Host header 'name[:port]'");
	}

	/* the target's form */
	const char *t = buf + h.target_offset;
	size_t tl = h.target_len;

	if (strcmp(h.method, "CONNECT") == 0) {
		h.form = PD_HTTP_CONNECT;
		if (parse_authority(t, tl, h.host, sizeof(h.host), &h.port, PORT_REQUIRED) < 0)
			return fail_http(ret_why, "CONNECT host:port");
	} else if (tl > 7 && strncasecmp(t, "http://", 7) == 0) {
		const char *a = t + 7, *ae = a;

		while (ae < t + tl && *ae != '/' && *ae != '?' && *ae != '#')
			ae++;
		h.form = PD_HTTP_ABSOLUTE;
		if (parse_authority(a, (size_t)(ae - a), h.host, sizeof(h.host), &h.port,
				    PORT_DEFAULT_80) < 0)
			return fail_http(ret_why, "an absolute URL 'http://host[:port]/path' "
						  "without credentials");
	} else if (t[0] == '/' || (tl == 1 && t[0] == '*')) {
		h.form = PD_HTTP_ORIGIN;
		if (!have_host)
			return fail_http(ret_why, "a Host header");
		strcpy(h.host, h.host_header);
		h.port = h.host_header_port ? h.host_header_port : 80;
	} else {
		return fail_http(ret_why, "a target: CONNECT host:port, http://host/path or /path");
	}
	*ret_head = h;
	return 0;
}

int pd_http_request_line_check(const uint8_t *buf, size_t len)
{
	static const char version[] = "HTTP/1.";
	enum { METHOD, TARGET, VERSION, MINOR, CR, LF } st = METHOD;
	size_t i = 0, n = 0;

	/* empty lines before a request line are ignored (RFC 9112 §2.2), as the broker does */
	while (i < len &&
	       (buf[i] == '\n' || (buf[i] == '\r' && (i + 1 == len || buf[i + 1] == '\n'))))
		i++;
	for (; i < len; i++) {
		uint8_t c = buf[i];

		switch (st) {
		case METHOD:
			if (c == ' ' && n > 0) {
				st = TARGET;
				n = 0;
			} else if (!tchar((char)c) || ++n > 32) {
				return -EPROTO;
			}
			break;
		case TARGET:
			if (c == ' ' && n > 0) {
				st = VERSION;
				n = 0;
			} else if (c <= 0x20 || c >= 0x7f) {
				return -EPROTO;
			} else {
				n++;
			}
			break;
		case VERSION:
			if (c != (uint8_t)version[n])
				return -EPROTO;
			if (++n == sizeof(version) - 1)
				st = MINOR;
			break;
		case MINOR:
			if (c != '0' && c != '1')
				return -EPROTO;
			st = CR;
			break;
		case CR:
			if (c == '\n')
				return 0;
			if (c != '\r')
				return -EPROTO;
			st = LF;
			break;
		case LF:
			return c == '\n' ? 0 : -EPROTO;
		}
	}
	return st == METHOD ? -EAGAIN : 1;
}

/* ---- TLS ClientHello -------------------------------------------------------------------- */

struct cursor {
	const uint8_t *p, *end;
};

static bool take(struct cursor *c, size_t n, const uint8_t **ret)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	if (ret)
		*ret = c->p;
	c->p += n;
	return true;
}

static bool u8(struct cursor *c, unsigned *v)
{
	const uint8_t *b;

	if (!take(c, 1, &b))
		return false;
	*v = b[0];
	return true;
}

static bool u16(struct cursor *c, unsigned *v)
{
	const uint8_t *b;

	if (!take(c, 2, &b))
		return false;
	*v = (unsigned)b[0] << 8 | b[1];
	return true;
}

static int fail_tls(const char **why, const char *text)
{
	*why = text;
	return -EPROTO;
}

/* The body of a complete ClientHello handshake message. */
static int client_hello(const uint8_t *body, size_t len, char *name, size_t size, const char **why)
{
	struct cursor c = { body, body + len };
	unsigned n, ext_len;
	const uint8_t *exts;

	if (!take(&c, 2 + 32, NULL) || !u8(&c, &n) || n > 32 || !take(&c, n, NULL))
		return fail_tls(why, "a ClientHello's version, random and session id");
	if (!u16(&c, &n) || n % 2 || !take(&c, n, NULL))
		return fail_tls(why, "a ClientHello's cipher suites");
	if (!u8(&c, &n) || !take(&c, n, NULL))
		return fail_tls(why, "a ClientHello's compression methods");
	if (c.p == c.end)
		return -ENOENT; /* no extensions at all */
	if (!u16(&c, &ext_len) || !take(&c, ext_len, &exts) || c.p != c.end)
		return fail_tls(why, "a ClientHello's extensions");
	c = (struct cursor){ exts, exts + ext_len };
	while (c.p < c.end) {
		unsigned type, elen, list_len, ntype, nlen;
		const uint8_t *e, *host;
		struct cursor ec, lc;

		if (!u16(&c, &type) || !u16(&c, &elen) || !take(&c, elen, &e))
			return fail_tls(why, "an extension's length");
		if (type != 0)
			continue;
		ec = (struct cursor){ e, e + elen };
		if (!u16(&ec, &list_len) || !take(&ec, list_len, NULL) || ec.p != ec.end)
			return fail_tls(why, "a server_name list");
		lc = (struct cursor){ e + 2, e + 2 + list_len };
		while (lc.p < lc.end) {
			if (!u8(&lc, &ntype) || !u16(&lc, &nlen) || !take(&lc, nlen, &host))
				return fail_tls(why, "a server name's length");
			if (ntype != 0)
				continue;
			char tmp[PD_EGRESS_NAME_MAX + 2];
			if (nlen == 0 || nlen > PD_EGRESS_NAME_MAX || memchr(host, 0, nlen))
				return fail_tls(why, "a server name of 1..253 bytes");
			memcpy(tmp, host, nlen);
			tmp[nlen] = '\0';
			if (pd_egress_name_normalise(tmp, name, size) < 0)
				return fail_tls(why,
						"a server name of letters, digits, '-' and '.'");
			return 0;
		}
		return -ENOENT;
	}
	return -ENOENT;
}

int pd_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t size, const char **ret_why)
{
	uint8_t hs[PD_TLS_HELLO_MAX];
	size_t have = 0, off = 0;

	*ret_why = NULL;
	/* the handshake may span records: gather their payloads until the message is whole */
	for (;;) {
		size_t rec;

		if (have >= 4) {
			size_t msg = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];

			if (hs[0] != 1)
				return fail_tls(ret_why, "a ClientHello first");
			if (msg + 4 > sizeof(hs))
				return fail_tls(ret_why, "a ClientHello of at most 16 KiB");
			if (have >= msg + 4)
				return client_hello(hs + 4, msg, name, size, ret_why);
		}
		if (len - off < 5)
			return -EAGAIN;
		if (buf[off] != 22)
			return fail_tls(ret_why, "a TLS handshake record");
		if (buf[off + 1] != 3)
			return fail_tls(ret_why, "TLS (record version 3.x)");
		rec = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (rec == 0 || rec > (1u << 14))
			return fail_tls(ret_why, "a record of 1..16384 bytes");
		if (len - off - 5 < rec)
			return -EAGAIN;
		if (have + rec > sizeof(hs))
			return fail_tls(ret_why, "a ClientHello of at most 16 KiB");
		memcpy(hs + have, buf + off + 5, rec);
		have += rec;
		off += 5 + rec;
	}
}

/* ---- SOCKS5 ----------------------------------------------------------------------------- */

static int fail_socks(const char **why, const char *text)
{
	*why = text;
	return -EPROTO;
}

int pd_socks5_greeting_parse(const uint8_t *buf, size_t len, size_t *ret_len, bool *ret_noauth,
			     const char **ret_why)
{
	size_t n;

	*ret_why = NULL;
	if (len < 1)
		return -EAGAIN;
	if (buf[0] != 5)
		return fail_socks(ret_why, "SOCKS version 5");
	if (len < 2)
		return -EAGAIN;
	n = buf[1];
	if (n == 0)
		return fail_socks(ret_why, "at least one authentication method");
	if (len - 2 < n)
		return -EAGAIN;
	*ret_noauth = memchr(buf + 2, PD_SOCKS5_METHOD_NOAUTH, n) != NULL;
	*ret_len = 2 + n;
	return 0;
}

int pd_socks5_request_parse(const uint8_t *buf, size_t len, struct pd_socks5_request *ret,
			    const char **ret_why)
{
	struct pd_socks5_request q = { 0 };
	size_t off, alen;

	*ret_why = NULL;
	/* VER CMD RSV ATYP, each judged as soon as it is there */
	if (len < 1)
		return -EAGAIN;
	if (buf[0] != 5)
		return fail_socks(ret_why, "SOCKS version 5");
	if (len < 2)
		return -EAGAIN;
	q.cmd = buf[1];
	if (q.cmd != PD_SOCKS5_CMD_CONNECT && q.cmd != PD_SOCKS5_CMD_BIND &&
	    q.cmd != PD_SOCKS5_CMD_UDP_ASSOCIATE)
		return fail_socks(ret_why, "a command: CONNECT, BIND or UDP ASSOCIATE");
	if (len < 3)
		return -EAGAIN;
	if (buf[2] != 0)
		return fail_socks(ret_why, "a reserved byte of 0");
	if (len < 4)
		return -EAGAIN;
	q.atyp = buf[3];
	switch (q.atyp) {
	case PD_SOCKS5_ATYP_IPV4:
		off = 4, alen = 4;
		q.family = AF_INET;
		break;
	case PD_SOCKS5_ATYP_IPV6:
		off = 4, alen = 16;
		q.family = AF_INET6;
		break;
	case PD_SOCKS5_ATYP_DOMAIN:
		if (len < 5)
			return -EAGAIN;
		off = 5, alen = buf[4];
		q.family = AF_UNSPEC;
		if (alen == 0 || alen > PD_EGRESS_NAME_MAX)
			return fail_socks(ret_why, "a domain name of 1..253 bytes");
		/* the name's bytes that are here: a NUL, a space or a control byte is final */
		for (size_t i = off; i < len && i < off + alen; i++)
			if (buf[i] <= 0x20 || buf[i] >= 0x7f)
				return fail_socks(ret_why, "a domain name of visible ASCII");
		break;
	default:
		return fail_socks(ret_why, "an address type: IPv4, domain name or IPv6");
	}
	/* DST.ADDR, DST.PORT */
	if (len - off < alen + 2)
		return -EAGAIN;
	if (q.family == AF_UNSPEC) {
		memcpy(q.host, buf + off, alen);
		q.host[alen] = '\0';
	} else {
		memcpy(q.addr, buf + off, alen);
		/* cannot fail: host has room for any address (INET6_ADDRSTRLEN) */
		(void)inet_ntop(q.family, q.addr, q.host, sizeof(q.host));
	}
	q.port = (uint16_t)(buf[off + alen] << 8 | buf[off + alen + 1]);
	q.len = off + alen + 2;
	*ret = q;
	return 0;
}

size_t pd_socks5_reply(uint8_t rep, uint8_t out[PD_SOCKS5_REPLY_LEN])
{
	/* BND.ADDR 0.0.0.0, BND.PORT 0: the sandbox need not learn where paddock connects from */
	memset(out, 0, PD_SOCKS5_REPLY_LEN);
	out[0] = 5;
	out[1] = rep;
	out[3] = PD_SOCKS5_ATYP_IPV4;
	return PD_SOCKS5_REPLY_LEN;
}
