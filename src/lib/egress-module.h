/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress half of libpaddock, as the rest of it sees it (module.h): a sandbox's proxy and
 * DNS filter (egress.h), its secrets (secrets.h), and the context's name resolver and
 * upstream TLS trust. Built from egress*.c, tls-*.c, secret*.c and egress-ops.c; linked in,
 * or loaded as paddock-egress.so on first use. Nothing outside the half calls those files'
 * functions but through this table, so a sandbox with network.mode none and no secrets
 * never loads it.
 */
#pragma once

#include "module.h"
#include "paddock/paddock.h"

struct event_base;
struct pd_egress;
struct pd_egress_policy;
struct pd_resolver;
struct pd_secrets;
struct ssl_ctx_st;

/* What the module calls back in the program (the state is the program's). */
struct pd_egress_host {
	int (*sandbox_socket)(paddock_sandbox *sb, int domain, int type, int *ret_fd,
			      paddock_error *err);
};

struct pd_egress_ops {
	struct pd_module_abi abi; /* first: the loader checks it */
	/* egress.h: the listeners, policy and counters of a sandbox with network.mode != none */
	int (*start)(paddock_sandbox *sb, struct pd_egress **ret, paddock_error *err);
	void (*free)(struct pd_egress *eg); /* accepts NULL */
	/* takes the policy; returns how many open connections it closed (egress.h) */
	unsigned (*set_policy)(struct pd_egress *eg, struct pd_egress_policy *policy);
	/* the ask bounds of spec's network section; pending decisions keep their time */
	void (*ask_setup)(struct pd_egress *eg, const paddock_spec *spec);
	size_t (*asks)(const struct pd_egress *eg, const struct paddock_ask **ret, size_t max);
	int (*answer)(struct pd_egress *eg, uint64_t id, enum paddock_ask_answer answer,
		      const char *by, const char *who, paddock_error *err);
	/* secrets.h: a spec's secrets, read, with their placeholders and CA; NULL without any */
	int (*secrets_new)(const paddock_spec *spec, struct pd_secrets **ret, paddock_error *err);
	void (*secrets_free)(struct pd_secrets *s); /* accepts NULL; wipes the values */
	/* egress-resolve.h: the context's resolver, from a hosts file (NULL: the system's) */
	int (*resolver_new)(struct event_base *base, const char *hosts_file,
			    struct pd_resolver **ret, paddock_error *err);
	void (*resolver_free)(struct pd_resolver *r); /* accepts NULL */
	/* tls-ca.h: what verifies intercepted hosts: the system's CAs and these files */
	struct ssl_ctx_st *(*upstream_tls_new)(const char *const *ca_files, paddock_error *err);
	void (*upstream_tls_free)(struct ssl_ctx_st *tls); /* accepts NULL */
};

/*
 * The egress half: *ret_ops on success; -ELIBACC (err filled) when its module cannot be
 * loaded, -ELIBBAD when it is from another build. Once it succeeded it always does, so a
 * caller holding something the half made (an egress, secrets) may pass err NULL.
 */
int pd_egress_ops(const struct pd_egress_ops **ret_ops, paddock_error *err);

/* The table itself, in the half (egress-ops.c): module-linked.c returns it. */
extern const struct pd_egress_ops pd_egress_module_ops;
