/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Egress policy: rule parsing, name and address decisions, address classes (egress-policy.h).
 *
 * Trust: every name and address here comes from inside a sandbox (a Host header, an SNI, a
 * CONNECT line, a DNS query) or from a spec; all of it is bounded and validated before use.
 * The address rules are the SSRF wall: whatever a name resolves to, a non-public address is
 * reached only through a CIDR rule that names it.
 */
#include "egress-policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static const char *const class_names[_PD_ADDR_CLASS_MAX] = {
	[PD_ADDR_PUBLIC] = "public",
	[PD_ADDR_LOOPBACK] = "loopback",
	[PD_ADDR_PRIVATE] = "private",
	[PD_ADDR_LINK_LOCAL] = "link_local",
	[PD_ADDR_CGNAT] = "cgnat",
	[PD_ADDR_MULTICAST] = "multicast",
	[PD_ADDR_UNSPECIFIED] = "unspecified",
	[PD_ADDR_RESERVED] = "reserved",
};

const char *pd_addr_class_to_string(enum pd_addr_class c)
{
	return (unsigned)c < _PD_ADDR_CLASS_MAX ? class_names[c] : NULL;
}

/* ---- address classes --------------------------------------------------------------------- */

static bool in4(uint32_t a, uint32_t net, unsigned prefix)
{
	uint32_t mask = prefix ? ~0u << (32 - prefix) : 0;

	return (a & mask) == (net & mask);
}

static enum pd_addr_class classify4(const uint8_t *b)
{
	uint32_t a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	static const struct {
		uint32_t net;
		unsigned prefix;
		enum pd_addr_class c;
	} ranges[] = {
		{ 0x00000000, 8, PD_ADDR_UNSPECIFIED }, /* 0.0.0.0/8 "this network" */
		{ 0x7f000000, 8, PD_ADDR_LOOPBACK },	/* 127.0.0.0/8 */
		{ 0x0a000000, 8, PD_ADDR_PRIVATE },	/* 10.0.0.0/8 */
		{ 0xac100000, 12, PD_ADDR_PRIVATE },	/* 172.16.0.0/12 */
		{ 0xc0a80000, 16, PD_ADDR_PRIVATE },	/* 192.168.0.0/16 */
		{ 0xa9fe0000, 16, PD_ADDR_LINK_LOCAL }, /* 169.254.0.0/16, cloud metadata */
		{ 0x64400000, 10, PD_ADDR_CGNAT },	/* 100.64.0.0/10 */
		{ 0xe0000000, 4, PD_ADDR_MULTICAST },	/* 224.0.0.0/4 */
		{ 0xf0000000, 4, PD_ADDR_RESERVED },	/* 240.0.0.0/4, 255.255.255.255 */
		{ 0xc0000000, 24, PD_ADDR_RESERVED },	/* 192.0.0.0/24 protocol assignments */
		{ 0xc0000200, 24, PD_ADDR_RESERVED },	/* 192.0.2.0/24 TEST-NET-1 */
		{ 0xc6336400, 24, PD_ADDR_RESERVED },	/* 198.51.100.0/24 TEST-NET-2 */
		{ 0xcb007100, 24, PD_ADDR_RESERVED },	/* 203.0.113.0/24 TEST-NET-3 */
		{ 0xc6120000, 15, PD_ADDR_RESERVED },	/* 198.18.0.0/15 benchmarking */
		{ 0xc0586300, 24, PD_ADDR_RESERVED },	/* 192.88.99.0/24 6to4 relay */
	};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (in4(a, ranges[i].net, ranges[i].prefix))
			return ranges[i].c;
	return PD_ADDR_PUBLIC;
}

enum pd_addr_class pd_addr_classify(int family, const void *addr)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t zero[16] = { 0 };
	const uint8_t *b = addr;

	if (family == AF_INET)
		return classify4(b);
	if (family != AF_INET6)
		return PD_ADDR_RESERVED;
	if (memcmp(b, zero, 16) == 0)
		return PD_ADDR_UNSPECIFIED;
	if (memcmp(b, zero, 15) == 0 && b[15] == 1)
		return PD_ADDR_LOOPBACK;
	/* SECURITY: an IPv4 address dressed as IPv6 is judged as the IPv4 address it is */
	if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0 || memcmp(b, zero, 12) == 0)
		return classify4(b + 12);
	if ((b[0] & 0xfe) == 0xfc)
		return PD_ADDR_PRIVATE; /* fc00::/7 unique local */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return PD_ADDR_LINK_LOCAL; /* fe80::/10 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return PD_ADDR_PRIVATE; /* fec0::/10, deprecated site-local */
	if (b[0] == 0xff)
		return PD_ADDR_MULTICAST;
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return PD_ADDR_RESERVED; /* 2001:db8::/32 documentation */
	if (b[0] == 0x20 && b[1] == 0x02)
		return PD_ADDR_RESERVED; /* 2002::/16 6to4: carries an IPv4 address of any class */
	if ((b[0] & 0xe0) != 0x20)
		return PD_ADDR_RESERVED; /* outside 2000::/3, the global unicast space */
	return PD_ADDR_PUBLIC;
}

/* ---- names ------------------------------------------------------------------------------- */

int pd_egress_name_normalise(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name), label = 0;

	if (n > 0 && name[n - 1] == '.')
		n--; /* the root label */
	if (n == 0 || n > PD_EGRESS_NAME_MAX || n + 1 > size)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			/* a label is 1..63 characters and neither starts nor ends with '-' */
			if (label == 0 || buf[i - 1] == '-')
				return -EINVAL;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_') {
			if ((label == 0 && c == '-') || ++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		buf[i] = c;
	}
	if (label == 0 || buf[n - 1] == '-')
		return -EINVAL;
	buf[n] = '\0';
	return 0;
}

/* ---- rules ------------------------------------------------------------------------------- */

static int bad_rule(paddock_error *err, const char *field, const char *text, const char *why)
{
	return pd_fail_field(err, EINVAL, field ? field : "network",
			     "expected a rule such as 'pypi.org', '*.github.com:443' or "
			     "'10.0.0.0/8:5432', got '%s': %s",
			     PD_ESC(text), why);
}

static int parse_port(const char *s, uint16_t *ret)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* "ADDR[/PREFIX]" into the rule; false when it is no address */
static bool parse_cidr(char *s, struct pd_egress_rule *r, const char **why)
{
	char *slash = strchr(s, '/');
	unsigned long prefix;
	char *end;

	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, s, r->addr) == 1)
		r->family = AF_INET;
	else if (inet_pton(AF_INET6, s, r->addr) == 1)
		r->family = AF_INET6;
	else {
		if (slash)
			*slash = '/'; /* not an address: the caller sees the text as it was */
		return false;
	}
	r->kind = PD_EGRESS_CIDR;
	r->prefix = r->family == AF_INET ? 32 : 128;
	if (slash) {
		prefix = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || prefix > r->prefix) {
			*why = "a prefix length from 0 to 32 (IPv4) or 128 (IPv6)";
			r->kind = _PD_EGRESS_RULE_KIND_MAX;
			return true;
		}
		r->prefix = (unsigned)prefix;
	}
	/* the host bits of a range are ignored: 10.1.2.3/8 is 10.0.0.0/8 */
	for (unsigned bit = r->prefix; bit < (r->family == AF_INET ? 32u : 128u); bit++)
		r->addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
	return true;
}

int pd_egress_rule_parse(const char *text, bool deny, const char *field,
			 struct pd_egress_rule *ret_rule, paddock_error *err)
{
	struct pd_egress_rule r = { .deny = deny };
	char buf[PD_EGRESS_NAME_MAX + 16], *host = buf, *colon;
	const char *why = NULL;
	size_t n = text ? strlen(text) : 0;

	if (n == 0 || n >= sizeof(buf))
		return bad_rule(err, field, text ? text : "", "empty or too long");
	memcpy(buf, text, n + 1);
	snprintf(r.text, sizeof(r.text), "%s", text);
	/* the port: "[v6]:port", or one ':' in a name or IPv4 rule (a bare IPv6 has several) */
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return bad_rule(err, field, text, "an IPv6 address in [] is not closed");
		*close = '\0';
		host = buf + 1;
		if (close[1] == '/') {
			/* "[fd00::]/8" and "[fd00::]/8:80": move the prefix next to the address */
			char *p = close + 1, *c = strchr(p, ':');
			if (c) {
				*c = '\0';
				if (parse_port(c + 1, &r.port) < 0)
					return bad_rule(err, field, text, "a port from 1 to 65535");
			}
			memmove(close, p, strlen(p) + 1);
		} else if (close[1] == ':') {
			if (parse_port(close + 2, &r.port) < 0)
				return bad_rule(err, field, text, "a port from 1 to 65535");
		} else if (close[1]) {
			return bad_rule(err, field, text, "nothing but ':PORT' after ']'");
		}
		if (!parse_cidr(host, &r, &why) || r.family != AF_INET6)
			return bad_rule(err, field, text, "an IPv6 address in []");
	} else {
		colon = strchr(buf, ':');
		if (colon && !strchr(colon + 1, ':')) {
			*colon = '\0';
			if (parse_port(colon + 1, &r.port) < 0)
				return bad_rule(err, field, text, "a port from 1 to 65535");
		}
		if (!parse_cidr(host, &r, &why)) {
			if (strchr(host, '/'))
				return bad_rule(err, field, text, "an address before '/'");
			if (strncmp(host, "*.", 2) == 0) {
				r.kind = PD_EGRESS_WILDCARD;
				host += 2;
			} else {
				r.kind = PD_EGRESS_NAME;
			}
			if (pd_egress_name_normalise(host, r.name, sizeof(r.name)) < 0)
				return bad_rule(err, field, text,
						"a domain name of letters, digits, '-' and '.'");
		}
	}
	if (r.kind == _PD_EGRESS_RULE_KIND_MAX)
		return bad_rule(err, field, text, why);
	/*
	 * SECURITY: a CIDR allow rule opens every address it covers, private or not. One that
	 * covers them all opens the supervisor's own loopback and the cloud metadata address
	 * too, which is never what "everything" means: open mode is public destinations only.
	 */
	if (r.kind == PD_EGRESS_CIDR && r.prefix == 0 && !deny)
		return pd_fail_field(
			err, EINVAL, field ? field : "network",
			"'%s' would allow every address, loopback, private networks "
			"and cloud metadata (169.254.169.254) included: for any public "
			"destination use network.mode 'open' (--net open); to reach a "
			"private network, allow its own range (e.g. '10.0.0.0/8')",
			PD_ESC(text));
	*ret_rule = r;
	return 0;
}

/* ---- presets ----------------------------------------------------------------------------- */

static const char *const preset_python[] = { "pypi.org:443", "files.pythonhosted.org:443", NULL };
static const char *const preset_npm[] = { "registry.npmjs.org:443", "registry.yarnpkg.com:443",
					  NULL };
static const char *const preset_github[] = { "github.com:443", "*.github.com:443",
					     "*.githubusercontent.com:443", NULL };

const char *const pd_egress_presets[] = { "python-packages", "npm", "github", NULL };

const char *const *pd_egress_preset_rules(const char *name)
{
	if (!name)
		return NULL;
	if (strcmp(name, "python-packages") == 0)
		return preset_python;
	if (strcmp(name, "npm") == 0)
		return preset_npm;
	if (strcmp(name, "github") == 0)
		return preset_github;
	return NULL;
}

/* ---- policy ------------------------------------------------------------------------------ */

void pd_egress_policy_init(struct pd_egress_policy *p, enum pd_egress_mode mode)
{
	*p = (struct pd_egress_policy){ .mode = mode };
}

void pd_egress_policy_release(struct pd_egress_policy *p)
{
	free(p->rules);
	p->rules = NULL;
	p->n_rules = 0;
}

static int append(struct pd_egress_policy *p, const struct pd_egress_rule *r, size_t extra,
		  paddock_error *err)
{
	struct pd_egress_rule *rules;

	if (p->n_rules + extra > PD_EGRESS_RULES_MAX)
		return pd_fail_field(err, E2BIG, "network", "at most %d rules",
				     PD_EGRESS_RULES_MAX);
	rules = reallocarray(p->rules, p->n_rules + extra, sizeof(*rules));
	if (!rules)
		return pd_fail(err, ENOMEM, "allocate rules");
	p->rules = rules;
	memcpy(p->rules + p->n_rules, r, extra * sizeof(*r));
	p->n_rules += extra;
	return 0;
}

int pd_egress_policy_add(struct pd_egress_policy *p, const char *text, bool deny, const char *field,
			 paddock_error *err)
{
	struct pd_egress_rule rules[8];
	size_t n = 0;
	int r;

	if (text && strncmp(text, "preset:", 7) == 0) {
		const char *const *list = pd_egress_preset_rules(text + 7);

		if (!list)
			return pd_fail_field(
				err, EINVAL, field ? field : "network",
				"unknown preset '%s', expected python-packages, npm or "
				"github",
				PD_ESC(text + 7));
		for (; *list && n < sizeof(rules) / sizeof(rules[0]); list++, n++) {
			r = pd_egress_rule_parse(*list, deny, field, &rules[n], err);
			if (r < 0)
				return r;
		}
		return append(p, rules, n, err);
	}
	r = pd_egress_rule_parse(text, deny, field, &rules[0], err);
	if (r < 0)
		return r;
	return append(p, rules, 1, err);
}

static bool port_matches(const struct pd_egress_rule *r, uint16_t port)
{
	return r->port == 0 || r->port == port;
}

static bool name_matches(const struct pd_egress_rule *r, const char *name)
{
	size_t n, s;

	if (r->kind == PD_EGRESS_NAME)
		return strcmp(r->name, name) == 0;
	if (r->kind != PD_EGRESS_WILDCARD)
		return false;
	n = strlen(name);
	s = strlen(r->name);
	/* "*.example.com" is strictly below: "a.example.com", never "example.com" */
	return n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, r->name) == 0;
}

static bool addr_matches(const struct pd_egress_rule *r, int family, const uint8_t *a)
{
	unsigned full, rest;

	if (r->kind != PD_EGRESS_CIDR || r->family != family)
		return false;
	full = r->prefix / 8;
	rest = r->prefix % 8;
	if (memcmp(r->addr, a, full) != 0)
		return false;
	return rest == 0 || ((r->addr[full] ^ a[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* An IPv4 address in IPv6 clothing, undressed, so IPv4 rules apply to it. */
static int unwrap(int family, const void *addr, uint8_t out[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	const uint8_t *b = addr;

	if (family == AF_INET6 && (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0)) {
		memcpy(out, b + 12, 4);
		return AF_INET;
	}
	memcpy(out, b, family == AF_INET ? 4 : 16);
	return family;
}

/*
 * The address decision. any_port: the DNS filter's question, asked before a port is known
 * (as pd_egress_allow_dns() for names): an allow rule for the address on some port allows,
 * a deny rule refuses only when it covers every port.
 */
static bool allow_addr(const struct pd_egress_policy *p, int family, const void *addr,
		       uint16_t port, bool any_port, bool name_allowed,
		       const struct pd_egress_rule **ret_rule)
{
	const struct pd_egress_rule *allow = NULL;
	uint8_t a[16];
	int fam;

	*ret_rule = NULL;
	if (p->mode == PD_EGRESS_NONE || (family != AF_INET && family != AF_INET6))
		return false;
	fam = unwrap(family, addr, a);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct pd_egress_rule *r = &p->rules[i];

		if (!addr_matches(r, fam, a))
			continue;
		if (any_port ? r->deny && r->port != 0 : !port_matches(r, port))
			continue;
		if (r->deny) {
			*ret_rule = r;
			return false;
		}
		if (!allow)
			allow = r;
	}
	if (allow) {
		*ret_rule = allow;
		return true;
	}
	if (pd_addr_classify(family, addr) != PD_ADDR_PUBLIC)
		return false;
	return name_allowed || p->mode == PD_EGRESS_OPEN;
}

bool pd_egress_allow_addr(const struct pd_egress_policy *p, int family, const void *addr,
			  uint16_t port, bool name_allowed, const struct pd_egress_rule **ret_rule)
{
	return allow_addr(p, family, addr, port, false, name_allowed, ret_rule);
}

bool pd_egress_allow_addr_dns(const struct pd_egress_policy *p, int family, const void *addr,
			      const struct pd_egress_rule **ret_rule)
{
	return allow_addr(p, family, addr, 0, true, true, ret_rule);
}

bool pd_egress_allow_name(const struct pd_egress_policy *p, const char *name, uint16_t port,
			  const struct pd_egress_rule **ret_rule)
{
	const struct pd_egress_rule *allow = NULL;
	char norm[PD_EGRESS_NAME_MAX + 1];
	uint8_t lit[16];

	*ret_rule = NULL;
	if (p->mode == PD_EGRESS_NONE || !name)
		return false;
	/* an address given as a name is decided by the address rules */
	if (inet_pton(AF_INET, name, lit) == 1)
		return pd_egress_allow_addr(p, AF_INET, lit, port, false, ret_rule);
	if (inet_pton(AF_INET6, name, lit) == 1)
		return pd_egress_allow_addr(p, AF_INET6, lit, port, false, ret_rule);
	if (pd_egress_name_normalise(name, norm, sizeof(norm)) < 0)
		return false;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct pd_egress_rule *r = &p->rules[i];

		if (!name_matches(r, norm) || !port_matches(r, port))
			continue;
		if (r->deny) {
			*ret_rule = r;
			return false;
		}
		if (!allow)
			allow = r;
	}
	*ret_rule = allow;
	return allow || p->mode == PD_EGRESS_OPEN;
}

bool pd_egress_allow_dns(const struct pd_egress_policy *p, const char *name,
			 const struct pd_egress_rule **ret_rule)
{
	const struct pd_egress_rule *allow = NULL;
	char norm[PD_EGRESS_NAME_MAX + 1];

	*ret_rule = NULL;
	if (p->mode == PD_EGRESS_NONE || pd_egress_name_normalise(name, norm, sizeof(norm)) < 0)
		return false;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct pd_egress_rule *r = &p->rules[i];

		if (!name_matches(r, norm))
			continue;
		/* a deny rule for one port leaves the name's other ports, so it still resolves */
		if (r->deny && r->port == 0) {
			*ret_rule = r;
			return false;
		}
		if (!r->deny && !allow)
			allow = r;
	}
	*ret_rule = allow;
	return allow || p->mode == PD_EGRESS_OPEN;
}

bool pd_egress_ask_wanted(const struct pd_egress_policy *p, const char *name, int family,
			  const void *addr, uint16_t port)
{
	const struct pd_egress_rule *rule;
	char norm[PD_EGRESS_NAME_MAX + 1];
	uint8_t lit[16];
	size_t n;

	if (!p->ask || p->mode != PD_EGRESS_ALLOWLIST)
		return false;
	if (name && inet_pton(AF_INET, name, lit) == 1)
		return pd_egress_ask_wanted(p, NULL, AF_INET, lit, port);
	if (name && inet_pton(AF_INET6, name, lit) == 1)
		return pd_egress_ask_wanted(p, NULL, AF_INET6, lit, port);
	if (name) {
		if (pd_egress_name_normalise(name, norm, sizeof(norm)) < 0)
			return false;
		n = strlen(norm);
		/* a name of one label (a LAN host) or localhost's is never a public destination */
		if (!strchr(norm, '.') || strcmp(norm, "localhost") == 0 ||
		    (n > 10 && strcmp(norm + n - 10, ".localhost") == 0))
			return false;
		return !pd_egress_allow_name(p, norm, port, &rule) && !rule;
	}
	/* SECURITY: a person is never asked to open a non-public address: a CIDR rule does */
	if ((family != AF_INET && family != AF_INET6) ||
	    pd_addr_classify(family, addr) != PD_ADDR_PUBLIC)
		return false;
	return !pd_egress_allow_addr(p, family, addr, port, false, &rule) && !rule;
}
