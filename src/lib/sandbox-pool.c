/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pooled sandboxes (docs/architecture.md, "Warm pool"): made ahead of demand from a template
 * (a spec but for what a claim binds), their init waiting after the root is built and before
 * it confines itself; a claim binds the claim's hostname and environment, then init confines
 * itself exactly as a sandbox made cold does. What the claim binds is this file's
 * late_fields and the network policy (its rules, and allowlist or open: a sandbox with
 * egress has the same network namespace, routes and proxy either way; only the supervisor's
 * policy differs) and nothing else: every other field must be the template's.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "control.h"
#include "error.h"
#include "events.h"
#include "sandbox.h"
#include "spec.h"

#define CLAIM_TIMEOUT_MS 10000

/* Spec fields a claim binds (top level, or "limits.NAME"). */
static const char *const late_fields[] = { "hostname", "env", "limits.timeout_s",
					   "limits.output", NULL };

int paddock_spec_template_json(const paddock_spec *spec, char **ret_json, paddock_error *err)
{
	char *text = NULL;
	json_t *root;
	int r;

	r = paddock_spec_to_json(spec, &text, err);
	if (r < 0)
		return r;
	root = json_loads(text, 0, NULL);
	free(text);
	if (!root)
		return pd_fail(err, ENOMEM, "template of the spec");
	for (const char *const *f = late_fields; *f; f++) {
		const char *dot = strchr(*f, '.');

		if (dot)
			json_object_del(json_object_get(root, "limits"), dot + 1);
		else
			json_object_del(root, *f);
	}
	{
		json_t *net = json_object_get(root, "network");
		const char *mode = json_string_value(json_object_get(net, "mode"));

		json_object_del(net, "allow");
		json_object_del(net, "deny");
		if (mode && strcmp(mode, "none") != 0)
			json_object_set_new(net, "mode", json_string("egress"));
	}
	*ret_json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	if (!*ret_json)
		return pd_fail(err, ENOMEM, "template of the spec");
	return 0;
}

/* hostname\0 env...\0 after the header */
static int pack_bind(const paddock_spec *spec, char **ret_buf, size_t *ret_len,
		     paddock_error *err)
{
	struct pd_ctl_bind hdr = { .envc = (uint32_t)spec->n_env };
	size_t len = sizeof(hdr) + strlen(spec->hostname) + 1;
	char *buf, *p;

	for (size_t i = 0; i < spec->n_env; i++)
		len += strlen(spec->env[i]) + 1;
	if (len > PD_CTL_MAX_MSG)
		return pd_fail_field(err, E2BIG, "env", "the environment is larger than %u bytes",
				     PD_CTL_MAX_MSG);
	buf = malloc(len);
	if (!buf)
		return pd_fail(err, ENOMEM, "claim");
	memcpy(buf, &hdr, sizeof(hdr));
	p = stpcpy(buf + sizeof(hdr), spec->hostname) + 1;
	for (size_t i = 0; i < spec->n_env; i++)
		p = stpcpy(p, spec->env[i]) + 1;
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/* The supervisor's copy of the spec takes the claim's late fields. */
static int take_late_fields(paddock_spec *dst, const paddock_spec *src, paddock_error *err)
{
	char *hostname = strdup(src->hostname);
	char **env = calloc(src->n_env + 1, sizeof(char *));

	if (!hostname || !env)
		goto oom;
	for (size_t i = 0; i < src->n_env; i++)
		if (!(env[i] = strdup(src->env[i])))
			goto oom;
	free(dst->hostname);
	dst->hostname = hostname;
	for (size_t i = 0; i < dst->n_env; i++)
		free(dst->env[i]);
	free(dst->env);
	dst->env = env;
	dst->n_env = src->n_env;
	dst->limits.timeout_s = src->limits.timeout_s;
	dst->limits.output_bytes = src->limits.output_bytes;
	return 0;
oom:
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
	free(hostname);
	return pd_fail(err, ENOMEM, "claim");
}

int paddock_sandbox_claim(paddock_sandbox *sb, const paddock_spec *spec, paddock_error *err)
{
	char *mine = NULL, *theirs = NULL, *buf = NULL;
	union {
		struct pd_ctl_ready bound;
		paddock_error failed;
	} msg;
	uint32_t type = 0;
	size_t len = 0;
	ssize_t n;
	int r;

	if (!sb->spec->pooled)
		return pd_fail(err, EINVAL, "sandbox %s is not waiting for a claim", sb->id);
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH, "sandbox %s has ended", sb->id);
	r = paddock_spec_validate(spec, err);
	if (r >= 0)
		r = paddock_spec_template_json(sb->spec, &mine, err);
	if (r >= 0)
		r = paddock_spec_template_json(spec, &theirs, err);
	if (r >= 0 && strcmp(mine, theirs) != 0)
		r = pd_fail(err, EINVAL, "the spec is not the template of sandbox %s", sb->id);
	/* the claim's network policy, in force before any command can run */
	if (r >= 0 && sb->egress)
		r = paddock_sandbox_set_network(sb, spec, err);
	if (r >= 0)
		r = pack_bind(spec, &buf, &len, err);
	/* it was made at the lowest priority (sandbox.c): from now on it serves a claim */
	if (r >= 0 && geteuid() == 0)
		(void)setpriority(PRIO_PROCESS, (id_t)sb->init_pid, 0);
	if (r >= 0 && pd_ctl_send(sb->ctl, PD_CTL_BIND, buf, len, NULL, 0) < 0)
		r = pd_fail(err, EPIPE, "claim sandbox %s", sb->id);
	free(mine);
	free(theirs);
	free(buf);
	if (r < 0)
		return r;
	/* nothing else can come from a pooled init: it has had no command */
	n = pd_ctl_recv_wait(sb->ctl, CLAIM_TIMEOUT_MS, &type, &msg, sizeof(msg), NULL, NULL);
	if (type != PD_CTL_BOUND || n != (ssize_t)sizeof(msg.bound)) {
		/* init's account of its failure is hostile text: only its code is taken */
		int code = type == PD_CTL_FAILED && n == (ssize_t)sizeof(msg.failed) &&
					   msg.failed.code > 0 && msg.failed.code < 4096
				   ? msg.failed.code
			   : n < 0 ? (int)-n
				   : EPROTO;

		(void)paddock_sandbox_kill(sb, PADDOCK_END_KILLED, NULL);
		return pd_fail(err, code, "claim sandbox %s: init could not bind it (message %u)",
			       sb->id, type);
	}
	r = take_late_fields(sb->spec, spec, err);
	if (r < 0)
		return r;
	sb->spec->pooled = false;
	sb->landlock_abi = msg.bound.landlock_abi;
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.claimed", sb->id, NULL,
			json_pack("{s:s}", "hostname", sb->spec->hostname));
	return 0;
}
