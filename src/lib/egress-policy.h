/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Egress policy: the rules that decide where a sandbox may connect (issue 5's allowlist),
 * and the classification of addresses that are never reached without an explicit CIDR rule
 * (loopback, private, link-local and cloud metadata, CGNAT, multicast, unspecified...).
 * Pure functions: no I/O, no resolution; the egress proxy and DNS filter call them.
 *
 * Rules (text form, as `--allow` / `--deny` take them):
 *   pypi.org                 exactly this name, any port
 *   *.githubusercontent.com  any name below it (not the name itself)
 *   example.com:443          a name and one port
 *   10.1.2.0/24:5432         addresses of a CIDR (IPv4 or IPv6, "[fd00::]/8:80" with a port)
 *   1.2.3.4, [::1]:8080      one address
 * Deny rules beat allow rules. Names are compared lowercased, without a trailing dot.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paddock/paddock.h"

#define PD_EGRESS_NAME_MAX  253
#define PD_EGRESS_RULES_MAX 1024

enum pd_egress_rule_kind {
	PD_EGRESS_NAME,	    /* exact name */
	PD_EGRESS_WILDCARD, /* "*.suffix": names below suffix */
	PD_EGRESS_CIDR,	    /* an address range (a single address is /32 or /128) */
	_PD_EGRESS_RULE_KIND_MAX,
};

struct pd_egress_rule {
	enum pd_egress_rule_kind kind;
	bool deny;
	uint16_t port;			    /* 0: any */
	char name[PD_EGRESS_NAME_MAX + 1];  /* NAME; WILDCARD: the suffix without "*." */
	uint8_t addr[16];		    /* CIDR: IPv4 in the first 4 bytes */
	int family;			    /* CIDR: AF_INET or AF_INET6 */
	unsigned prefix;		    /* CIDR: prefix length */
	char text[PD_EGRESS_NAME_MAX + 16]; /* the rule as written, for events and 403s */
};

enum pd_addr_class {
	PD_ADDR_PUBLIC,
	PD_ADDR_LOOPBACK,    /* 127/8, ::1 */
	PD_ADDR_PRIVATE,     /* RFC 1918, fc00::/7 (ULA) */
	PD_ADDR_LINK_LOCAL,  /* 169.254/16 (cloud metadata), fe80::/10 */
	PD_ADDR_CGNAT,	     /* 100.64/10 */
	PD_ADDR_MULTICAST,   /* 224/4, ff00::/8 */
	PD_ADDR_UNSPECIFIED, /* 0/8, :: */
	PD_ADDR_RESERVED,    /* 240/4 and broadcast, 192.0.0/24, benchmarking 198.18/15, ... */
	_PD_ADDR_CLASS_MAX,
};

const char *pd_addr_class_to_string(enum pd_addr_class c);

/*
 * The class of an address. IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible and NAT64
 * (64:ff9b::/96) IPv6 addresses are classified by the IPv4 address they carry.
 */
enum pd_addr_class pd_addr_classify(int family, const void *addr);

/* Parses one rule; `field` names it in errors (e.g. "network.allow[3]"). */
int pd_egress_rule_parse(const char *text, bool deny, const char *field,
			 struct pd_egress_rule *ret_rule, paddock_error *err);

enum pd_egress_mode {
	PD_EGRESS_NONE,	     /* loopback only */
	PD_EGRESS_ALLOWLIST, /* only what a rule allows */
	PD_EGRESS_OPEN,	     /* any public destination */
	_PD_EGRESS_MODE_MAX,
};

struct pd_egress_policy {
	enum pd_egress_mode mode;
	/*
	 * ALLOWLIST: a destination no rule names (neither allow nor deny) is held while a person
	 * is asked (network.unlisted "ask") rather than refused. The decisions here still say
	 * "not allowed" for it: pd_egress_ask_wanted() tells the proxy to ask.
	 */
	bool ask;
	struct pd_egress_rule *rules;
	size_t n_rules;
};

void pd_egress_policy_init(struct pd_egress_policy *p, enum pd_egress_mode mode);
void pd_egress_policy_release(struct pd_egress_policy *p);
/*
 * Adds a rule, or a preset's rules ("preset:python-packages", "preset:npm",
 * "preset:github"). On error the policy is unchanged.
 */
int pd_egress_policy_add(struct pd_egress_policy *p, const char *text, bool deny, const char *field,
			 paddock_error *err);

/* The names of the presets, NULL-terminated, and the rules of one (NULL when unknown). */
extern const char *const pd_egress_presets[];
const char *const *pd_egress_preset_rules(const char *name);

/*
 * May a connection to `name` (as the client named it: Host, SNI, CONNECT, a DNS query) on
 * `port` go ahead, before any address is known? *ret_rule: the deciding rule, or NULL when
 * the mode decided. Names are normalised (lowercase, trailing dot dropped); a malformed
 * name is refused.
 */
bool pd_egress_allow_name(const struct pd_egress_policy *p, const char *name, uint16_t port,
			  const struct pd_egress_rule **ret_rule);

/*
 * May the DNS filter answer for `name`? As pd_egress_allow_name() for a port not yet known:
 * an allow rule for the name with any port allows, a deny rule for all its ports refuses.
 */
bool pd_egress_allow_dns(const struct pd_egress_policy *p, const char *name,
			 const struct pd_egress_rule **ret_rule);

/*
 * May the proxy connect to this address (resolved by the supervisor from an allowed name,
 * or given as a literal)? `name_allowed`: the name that led here was allowed by a rule.
 * SECURITY: a non-public address is reachable only through a CIDR allow rule that covers it,
 * whatever the name said (no SSRF, no DNS rebinding); a deny rule covering it always wins.
 */
bool pd_egress_allow_addr(const struct pd_egress_policy *p, int family, const void *addr,
			  uint16_t port, bool name_allowed, const struct pd_egress_rule **ret_rule);

/*
 * May the DNS filter answer an allowed name with this address, whatever port comes next?
 * As pd_egress_allow_addr() for a name that was allowed, but an allow rule for the address
 * on any port allows it (a CIDR rule "10.0.0.5/32:5432" makes 10.0.0.5 an answer), and a
 * deny rule refuses only when it covers every port.
 */
bool pd_egress_allow_addr_dns(const struct pd_egress_policy *p, int family, const void *addr,
			      const struct pd_egress_rule **ret_rule);

/*
 * Whether a connection to `name` (normalised; NULL for an address) or to the address
 * (`family`, `addr`) on `port` is to be held and a person asked: the policy asks, and no rule
 * matches it at all (a deny rule refuses; an allow rule allows). Only destinations that
 * could be public are asked about: an address that is not public, a name of one label or
 * under "localhost" never (a person cannot open the SSRF wall; a CIDR rule does).
 */
bool pd_egress_ask_wanted(const struct pd_egress_policy *p, const char *name, int family,
			  const void *addr, uint16_t port);

/* Lowercases and checks a DNS name (LDH labels of 1..63, total <= 253) into buf. */
int pd_egress_name_normalise(const char *name, char *buf, size_t size);
