/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policy from annotations (docs/oci.md): Kubernetes passes a pod's annotations through
 * containerd (pod_annotations in its runtime's configuration), Podman and Docker pass
 * --annotation. Each dev.paddock.* key maps onto a spec field with paddock_spec_set(), so
 * every value is checked as a flag's is; an unknown dev.paddock.* key is refused (a typo must
 * not silently drop a policy), any other annotation is the engine's business.
 *
 *   dev.paddock.network.mode         none | allowlist | open
 *   dev.paddock.network.allow        rules, separated by commas or spaces (docs/network.md)
 *   dev.paddock.network.deny         rules, likewise
 *   dev.paddock.network.transparent  true | false
 *   dev.paddock.secret.NAME          HOST[ HOST...]: the value is the process's own NAME
 *                                    variable (Kubernetes fills it from a Secret), which the
 *                                    process then sees only as a placeholder
 *   dev.paddock.limits.FIELD         any limits.* field (memory, pids, cpus, disk, ...)
 *   dev.paddock.landlock             auto | required
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci.h"

#define PREFIX "dev.paddock."

static int fail(paddock_error *err, const char *key, int code, const char *msg)
{
	err->code = code;
	snprintf(err->field, sizeof(err->field), "annotations.%s", key);
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return -code;
}

/* A list "a, b,c" or "a b c" (Podman's --annotation splits on commas) as one
 * paddock_spec_set() per entry. */
static int set_list(paddock_spec *spec, const char *field, const char *key, const char *value,
		    paddock_error *err)
{
	char *copy = strdup(value), *save = NULL;
	int r = 0;

	if (!copy)
		return fail(err, key, ENOMEM, "out of memory");
	for (char *t = strtok_r(copy, ", \t", &save); t && r >= 0;
	     t = strtok_r(NULL, ", \t", &save))
		r = paddock_spec_set(spec, field, t, err);
	free(copy);
	if (r < 0)
		snprintf(err->field, sizeof(err->field), "annotations.%s", key);
	return r;
}

/*
 * The secret's value: the process's NAME=VALUE, moved into this (the supervisor's)
 * environment for libpaddock to read once at create (source env:NAME), and replaced in the
 * process's environment by libpaddock's placeholder (init puts it there).
 */
static int secret(struct oci_process *p, paddock_spec *spec, const char *key, const char *name,
		  const char *hosts, paddock_error *err)
{
	size_t n = strlen(name);
	char *value = NULL, spec_value[1024];
	size_t k = 0;
	int r;

	for (size_t i = 0; p->env && p->env[i]; i++) {
		if (!strncmp(p->env[i], name, n) && p->env[i][n] == '=') {
			value = p->env[i] + n + 1;
			continue;
		}
	}
	if (!value || !*value)
		return fail(
			err, key, EINVAL,
			"expected the secret's value in the process's environment (NAME=VALUE)");
	if (setenv(name, value, 1) < 0)
		return fail(err, key, errno, "keep the secret's value");
	/* SECURITY: the value leaves the process's environment: init adds the placeholder */
	for (size_t i = 0; p->env[i]; i++) {
		if (!strncmp(p->env[i], name, n) && p->env[i][n] == '=') {
			explicit_bzero(p->env[i], strlen(p->env[i]));
			free(p->env[i]);
			continue;
		}
		p->env[k++] = p->env[i];
	}
	p->env[k] = NULL;
	/* "a b,c" -> "a,b,c": the spec's list */
	{
		size_t o = (size_t)snprintf(spec_value, sizeof(spec_value), "%s@", name);

		for (const char *h = hosts; *h && o < sizeof(spec_value) - 1; h++) {
			bool sep = *h == ',' || *h == ' ' || *h == '\t';

			if (sep && (spec_value[o - 1] == ',' || spec_value[o - 1] == '@'))
				continue;
			spec_value[o++] = sep ? ',' : *h;
		}
		if (o >= sizeof(spec_value) - 1)
			return fail(err, key, E2BIG, "too many hosts");
		if (spec_value[o - 1] == ',')
			o--;
		spec_value[o] = '\0';
	}
	r = paddock_spec_set(spec, "secrets", spec_value, err);
	if (r < 0)
		snprintf(err->field, sizeof(err->field), "annotations.%s", key);
	return r;
}

int oci_annotations_apply(json_t *annotations, const struct oci_process *cp, paddock_spec *spec,
			  paddock_error *err)
{
	struct oci_process *p = (struct oci_process *)cp;
	const char *key;
	json_t *v;
	int r = 0;

	/* mode first, then rules and secrets, which need it */
	for (int pass = 0; pass < 2; pass++) {
		json_object_foreach(annotations, key, v)
		{
			const char *k = key + strlen(PREFIX), *val = json_string_value(v);
			char field[96];

			if (strncmp(key, PREFIX, strlen(PREFIX)))
				continue;
			if (!val)
				return fail(err, key, EINVAL, "expected a string");
			if (!strcmp(k, "network.mode")) {
				if (pass == 0)
					r = paddock_spec_set(spec, "network.mode", val, err);
			} else if (pass == 0) {
				continue;
			} else if (!strcmp(k, "network.allow") || !strcmp(k, "network.deny")) {
				r = set_list(spec, k, key, val, err);
			} else if (!strcmp(k, "network.transparent")) {
				r = paddock_spec_set(spec, "network.transparent", val, err);
			} else if (!strncmp(k, "secret.", 7) && k[7]) {
				r = secret(p, spec, key, k + 7, val, err);
			} else if (!strncmp(k, "limits.", 7) && k[7]) {
				snprintf(field, sizeof(field), "%s", k);
				r = paddock_spec_set(spec, field, val, err);
			} else if (!strcmp(k, "landlock")) {
				r = paddock_spec_set(spec, "security.landlock", val, err);
			} else {
				return fail(err, key, EINVAL,
					    "unknown paddock annotation (docs/oci.md lists them)");
			}
			if (r < 0) {
				if (strncmp(err->field, "annotations.", 12))
					snprintf(err->field, sizeof(err->field), "annotations.%s",
						 key);
				return r;
			}
		}
	}
	return 0;
}
