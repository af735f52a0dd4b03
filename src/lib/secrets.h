/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's secrets in its supervisor (docs/secrets.md): the real values, read once at
 * create from the sources the spec names, the placeholders the sandbox sees instead, and
 * the hosts each may go to. This is the one place a value lives: the proxy borrows it for
 * a request, nothing copies it, and pd_secrets_free() wipes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress-policy.h"
#include "paddock/paddock.h"

struct pd_ca;

struct pd_secret_rt {
	char *name;
	uint8_t *value;
	size_t value_len;
	char *placeholder; /* what the sandbox sees; not secret */
	size_t placeholder_len;
	char fingerprint[17]; /* 8 bytes of a keyed HMAC of the value, hex: names it in records */
	struct pd_egress_rule *hosts;
	size_t n_hosts;
	bool in_body;
};

struct pd_secrets {
	struct pd_secret_rt *s;
	size_t n;
	struct pd_ca *ca; /* signs the leaf certificates of intercepted hosts */
	char *ca_pem;	  /* its certificate, for the sandbox's trust */
};

/* Reads every secret's value and makes its placeholder and the CA; NULL when none. */
int pd_secrets_new(const paddock_spec *spec, struct pd_secrets **ret, paddock_error *err);
/* Wipes the values and frees. */
void pd_secrets_free(struct pd_secrets *s);
/* Whether secret i may be sent to `host` (a normalised name). */
bool pd_secret_bound(const struct pd_secret_rt *s, const char *host);
/* Whether any secret may be sent to host: its HTTPS is then intercepted. */
bool pd_secrets_any_bound(const struct pd_secrets *s, const char *host);

/*
 * A placeholder for `value`: the same length, each letter or digit replaced by a random one
 * of its kind, other characters and a short prefix ending in '-' or '_' ("sk-", "ghp_")
 * kept, so clients that check a key's shape accept it. When that leaves under 64 random
 * bits (a short value), "paddock_" and 32 random characters instead. Never equal to value.
 */
int pd_secret_placeholder(const uint8_t *value, size_t len, char **ret, size_t *ret_len);
