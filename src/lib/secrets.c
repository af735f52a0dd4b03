/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's secrets in its supervisor: values, placeholders, bound hosts (secrets.h). */
#include "secrets.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "error.h"
#include "spec.h"
#include "tls-ca.h"
#include "util/cleanup.h"

#define PREFIX_MAX	8    /* "sk-proj-", "ghp_", "xoxb-": kept as the key's kind */
#define MIN_RANDOM_BITS 64.0 /* below this a same-shape placeholder could be guessed */

static int random_bytes(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

/* A uniform index below n from a random byte source, without modulo bias. */
static int random_below(unsigned n, unsigned *ret)
{
	uint8_t b;
	int r;

	do {
		r = random_bytes(&b, 1);
		if (r < 0)
			return r;
	} while (b >= 256 - 256 % n);
	*ret = b % n;
	return 0;
}

int pd_secret_placeholder(const uint8_t *value, size_t len, char **ret, size_t *ret_len)
{
	static const char lower[] = "abcdefghijklmnopqrstuvwxyz",
			  upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", digit[] = "0123456789";
	size_t prefix = 0;
	double bits = 0;
	char *out;
	int r;

	for (size_t i = 0; i < len && i < PREFIX_MAX; i++)
		if (value[i] == '-' || value[i] == '_')
			prefix = i + 1;
	for (size_t i = prefix; i < len; i++) {
		uint8_t c = value[i];

		bits += c >= 'a' && c <= 'z'   ? 4.70
			: c >= 'A' && c <= 'Z' ? 4.70
			: c >= '0' && c <= '9' ? 3.32
					       : 0;
	}
	if (bits < MIN_RANDOM_BITS) {
		/* a short value: a longer placeholder (documented: lengths then differ) */
		out = malloc(8 + 32 + 1);
		if (!out)
			return -ENOMEM;
		memcpy(out, "paddock_", 8);
		for (size_t i = 8; i < 40; i++) {
			unsigned k;

			r = random_below(36, &k);
			if (r < 0) {
				free(out);
				return r;
			}
			out[i] = k < 26 ? lower[k] : digit[k - 26];
		}
		out[40] = '\0';
		*ret = out;
		*ret_len = 40;
		return 0;
	}
	out = malloc(len + 1);
	if (!out)
		return -ENOMEM;
	do {
		for (size_t i = 0; i < len; i++) {
			uint8_t c = value[i];
			const char *set = c >= 'a' && c <= 'z'	 ? lower
					  : c >= 'A' && c <= 'Z' ? upper
					  : c >= '0' && c <= '9' ? digit
								 : NULL;
			unsigned k;

			if (i < prefix || !set) {
				out[i] = (char)c;
				continue;
			}
			r = random_below((unsigned)strlen(set), &k);
			if (r < 0) {
				free(out);
				return r;
			}
			out[i] = set[k];
		}
	} while (memcmp(out, value, len) == 0); /* 2^-64: but never equal, by construction */
	out[len] = '\0';
	*ret = out;
	*ret_len = len;
	return 0;
}

/*
 * HMAC-SHA-256 under a key made once per process: a fingerprint tells records of one
 * supervisor apart and together, and cannot be brute-forced back into a short value by
 * whoever reads the records.
 */
static int fingerprint(const uint8_t *value, size_t len, uint8_t out[static 32])
{
	static uint8_t key[32];
	static bool have_key;
	unsigned int n = 32;
	int r;

	if (!have_key) {
		r = random_bytes(key, sizeof(key));
		if (r < 0)
			return r;
		have_key = true;
	}
	return HMAC(EVP_sha256(), key, sizeof(key), value, len, out, &n) ? 0 : -EIO;
}

void pd_secrets_free(struct pd_secrets *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct pd_secret_rt *x = &s->s[i];

		if (x->value) {
			/* SECURITY: the one copy of the value, gone with the sandbox */
			explicit_bzero(x->value, x->value_len);
			free(x->value);
		}
		free(x->name);
		free(x->placeholder);
		free(x->hosts);
	}
	free(s->s);
	pd_ca_free(s->ca);
	free(s->ca_pem);
	free(s);
}

bool pd_secret_bound(const struct pd_secret_rt *s, const char *host)
{
	struct pd_egress_policy p = { .mode = PD_EGRESS_ALLOWLIST,
				      .rules = s->hosts,
				      .n_rules = s->n_hosts };
	const struct pd_egress_rule *rule;

	/* the host patterns are allow rules without ports: the egress matcher, any port */
	return pd_egress_allow_dns(&p, host, &rule) && rule;
}

bool pd_secrets_any_bound(const struct pd_secrets *s, const char *host)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (pd_secret_bound(&s->s[i], host))
			return true;
	return false;
}

int pd_secrets_new(const paddock_spec *spec, struct pd_secrets **ret, paddock_error *err)
{
	struct pd_secrets *s;
	int r;

	*ret = NULL;
	if (spec->n_secrets == 0)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->s = calloc(spec->n_secrets, sizeof(*s->s)))) {
		free(s);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < spec->n_secrets; i++) {
		const struct pd_spec_secret *src = &spec->secrets[i];
		struct pd_secret_rt *x = &s->s[i];
		uint8_t digest[32];
		char field[64];

		s->n++;
		snprintf(field, sizeof(field), "secrets[%zu].source", i);
		x->in_body = src->in_body;
		x->name = strdup(src->name);
		x->hosts = calloc(src->n_hosts, sizeof(*x->hosts));
		if (!x->name || !x->hosts) {
			r = pd_fail(err, ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t j = 0; j < src->n_hosts; j++) {
			r = pd_egress_rule_parse(src->hosts[j], false, "secrets", &x->hosts[j],
						 err);
			if (r < 0)
				goto fail;
			x->n_hosts++;
		}
		r = pd_spec_secret_value(src, field, &x->value, &x->value_len, err);
		if (r < 0)
			goto fail;
		r = fingerprint(x->value, x->value_len, digest);
		if (r < 0) {
			pd_fail(err, -r, "fingerprint secret '%s'", x->name);
			goto fail;
		}
		for (int k = 0; k < 8; k++)
			snprintf(x->fingerprint + 2 * k, 3, "%02x", digest[k]);
		r = pd_secret_placeholder(x->value, x->value_len, &x->placeholder,
					  &x->placeholder_len);
		if (r < 0) {
			pd_fail(err, -r, "make a placeholder for secret '%s'", x->name);
			goto fail;
		}
	}
	r = pd_ca_new(&s->ca, err);
	if (r >= 0) {
		size_t n;

		r = pd_ca_cert_pem(s->ca, &s->ca_pem, &n, err);
	}
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	pd_secrets_free(s);
	return r;
}
