/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init, running: the environment a command starts with. Built from nothing (a sandbox never
 * sees the supervisor's): a base, the proxy's and the CA's variables when the sandbox has
 * them, the secrets' placeholders, the spec's (or a claim's) variables, then the request's.
 * Runs in init (init-run.h); the strings are init's or the request's, never copied.
 */
#include "init-run.h"

#include <stdlib.h>
#include <string.h>

#include "egress-ports.h"
#include "rootfs.h"
#include "util/cleanup.h"
#include "util/strv.h"

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/home/user",
	"USER=user",
	"LOGNAME=user",
	"SHELL=/bin/bash",
	"LANG=C.UTF-8",
	NULL,
};

/* With "user": "root", these replace their names in base_env. */
static const char *const root_env[] = {
	"HOME=/root",
	"USER=root",
	"LOGNAME=root",
	NULL,
};

bool pd_init_env_has(char **env, size_t n, const char *kv, size_t *ret_idx)
{
	size_t kl = strcspn(kv, "=");

	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], kv, kl) && env[i][kl] == '=') {
			*ret_idx = i;
			return true;
		}
	return false;
}

/*
 * With egress, the proxy in every spelling tools read (curl reads only the lowercase
 * http_proxy; Go, Python and Node read either). socks5h: the proxy resolves the name.
 */
static const char *const egress_env[] = {
	"http_proxy=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"HTTP_PROXY=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"https_proxy=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"HTTPS_PROXY=http://127.0.0.1:" STRINGIFY(PD_EGRESS_PROXY_PORT),
	"all_proxy=socks5h://127.0.0.1:" STRINGIFY(PD_EGRESS_SOCKS_PORT),
	"ALL_PROXY=socks5h://127.0.0.1:" STRINGIFY(PD_EGRESS_SOCKS_PORT),
	"no_proxy=localhost,127.0.0.1,::1",
	"NO_PROXY=localhost,127.0.0.1,::1",
	NULL,
};

/* With secrets, every TLS stack's way to a CA bundle leads to one that trusts the sandbox's CA. */
static const char *const ca_env[] = {
	"SSL_CERT_FILE=" PD_CA_BUNDLE_PATH,
	"REQUESTS_CA_BUNDLE=" PD_CA_BUNDLE_PATH,
	"CURL_CA_BUNDLE=" PD_CA_BUNDLE_PATH,
	"GIT_SSL_CAINFO=" PD_CA_BUNDLE_PATH,
	"NODE_EXTRA_CA_CERTS=" PD_CA_CERT_PATH,
	"PIP_CERT=" PD_CA_BUNDLE_PATH,
	NULL,
};

/*
 * base, egress, CA, the secrets' placeholders, the spec's, then the request's; a later NAME
 * replaces an earlier one (the spec cannot name a secret: validated).
 */
char **pd_init_build_env(const struct pd_init_state *st, char **extra)
{
	size_t cap = ELEMENTSOF(base_env) + ELEMENTSOF(root_env) + ELEMENTSOF(egress_env) +
		     ELEMENTSOF(ca_env) + pd_strv_length(st->conf->secret_env) +
		     pd_strv_length(st->bound_secret_env) + pd_strv_length(st->conf->env) +
		     pd_strv_length(st->bound_env) + pd_strv_length(extra) + 1,
	       n = 0;
	char **env = calloc(cap, sizeof(char *));
	const char *const *lists[7] = {
		base_env,
		st->conf->idmap.root_user ? root_env : NULL,
		(st->conf->flags & PD_INIT_EGRESS) ? egress_env : NULL,
		(st->conf->flags & PD_INIT_CA) || st->bound_ca ? ca_env : NULL,
		(const char *const *)(st->bound_secret_env ? st->bound_secret_env
							   : st->conf->secret_env),
		(const char *const *)(st->bound_env ? st->bound_env : st->conf->env),
		(const char *const *)extra
	};

	if (!env)
		return NULL;
	for (int l = 0; l < 7; l++)
		for (const char *const *e = lists[l]; e && *e; e++) {
			size_t idx;

			if (!strchr(*e, '='))
				continue;
			if (pd_init_env_has(env, n, *e, &idx))
				env[idx] = (char *)*e;
			else
				env[n++] = (char *)*e;
		}
	return env;
}
