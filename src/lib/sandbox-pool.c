/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pooled sandboxes (docs/architecture.md, "Warm pool"): made ahead of demand from a template
 * (a spec but for what a claim binds), their init waiting after the root is built and before
 * it confines itself; a claim binds the claim's hostname, environment, limits, secrets and
 * workspace, then init confines itself exactly as a sandbox made cold does. What the claim
 * binds is this file's late_fields and the network policy (its rules, and allowlist or open:
 * a sandbox with egress has the same network namespace, routes and proxy either way; only
 * the supervisor's policy differs) and nothing else: every other field must be the
 * template's.
 *
 * Order of a claim: checks, the claim's secrets read (supervisor; wiped if the claim fails
 * before init has them), then the cgroup's limits (supervisor), the network policy
 * (supervisor), then PD_CTL_BIND to init: hostname, environment, the secrets' placeholders
 * and CA, the disk size, the rlimit plan and the workspace's tree (an fd, made by the
 * supervisor as for a cold create), applied by init before it confines itself;
 * then BOUND, and only then the proxy substitutes the claim's secrets. Nothing runs in the
 * sandbox before BOUND (paddock_exec_start() refuses a pooled sandbox).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "control.h"
#include "error.h"
#include "events.h"
#include "egress-module.h"
#include "egress.h"
#include "init.h"
#include "sandbox.h"
#include "spec.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define CLAIM_TIMEOUT_MS 10000

/*
 * Spec fields a claim binds (top level, or "limits.NAME"). secrets: a claim reads the
 * claim's values, makes their placeholders and the sandbox's CA, and init writes the CA
 * where a cold build does and puts the variables a cold init puts (a pooled sandbox
 * holds none while it waits); secrets need egress, and network.mode none versus egress
 * stays in the template. Every limit that is a value is one:
 * the cgroup's (memory, pids, cpus; cpu_time is checked against its counters) are written
 * again by the claim, the rlimits (file_size, nofile, cpu_time, and memory and pids where no
 * cgroup enforces them) are planned for it and sent to init, and the disk tmpfs is resized
 * by init before it confines itself. limits.required stays in the template: it decides
 * whether a sandbox can be made at all (launch.c), so a pool of a spec that requires what
 * cannot be enforced here is never made, and a claim never fails on it. workspace: the
 * supervisor makes the claim's idmapped tree as it does for a cold create
 * (pd_launch_open_tree()) and sends it with BIND; init detaches the pooled private
 * /workspace, attaches the tree where a cold build does and makes its Landlock ruleset
 * again. Where a cold init would clone the directory itself (rootless, or a filesystem
 * without idmapped mounts), the pooled init clones it from the clone of the host's mount
 * tree it kept from before its pivot (PD_READY_HOST_TREE; closed at the claim, before any
 * command runs): the path goes in BIND, checked here first. Where the kernel cannot clone
 * from a kept tree, such a claim is refused before BIND: the sandbox stays pooled and the
 * create goes cold. No other field depends on it ("cwd" is /workspace with or without one).
 */
static const char *const late_fields[] = {
	"hostname",	    "env",
	"limits.timeout_s", "limits.output",
	"limits.memory",    "limits.pids",
	"limits.cpus",	    "limits.cpu_time_s",
	"limits.file_size", "limits.nofile",
	"limits.disk",	    "secrets",
	"workspace",	    NULL,
};

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
		/* asking is policy too: the proxy's, set at the claim with the rules */
		json_object_del(net, "unlisted");
		json_object_del(net, "ask_timeout_s");
		json_object_del(net, "ask_max_pending");
		if (mode && strcmp(mode, "none") != 0)
			json_object_set_new(net, "mode", json_string("egress"));
	}
	*ret_json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	if (!*ret_json)
		return pd_fail(err, ENOMEM, "template of the spec");
	return 0;
}

/* The claim's hostname, environment, disk size, rlimit plan, secrets and workspace, for init. */
static int pack_bind(const paddock_sandbox *sb, const paddock_spec *spec, char *const *secret_env,
		     const char *ca_pem, const struct stat *ws, char **ret_buf, size_t *ret_len,
		     paddock_error *err)
{
	uint32_t workspace = !spec->workspace ? PD_BIND_WORKSPACE_NONE
			     : ws	      ? PD_BIND_WORKSPACE_PATH
					      : PD_BIND_WORKSPACE_TREE;
	struct pd_ctl_bind hdr = { .disk_bytes = spec->limits.disk_bytes,
				   .memory_bytes = spec->limits.memory_bytes,
				   .cpus_milli = (uint32_t)(spec->limits.cpus * 1000.0 + 0.5),
				   .workspace = workspace,
				   .workspace_dev = ws ? (uint64_t)ws->st_dev : 0,
				   .workspace_ino = ws ? (uint64_t)ws->st_ino : 0 };
	struct pd_ctl_bind_strings s = {
		.hostname = spec->hostname,
		.env = spec->env,
		.envc = spec->n_env,
		.secret_env = secret_env,
		.ca_pem = ca_pem,
		.workspace_path = workspace == PD_BIND_WORKSPACE_PATH ? spec->workspace : NULL,
	};
	int r;

	/* the plan a cold init makes, from the claim's limits: `ulimit -a` is the same inside */
	pd_init_plan_rlimits(spec, sb->cg != NULL, &hdr.rlimits);
	r = pd_ctl_bind_pack(&hdr, &s, ret_buf, ret_len);
	if (r == -E2BIG)
		return pd_fail_field(err, E2BIG, "env", "the environment is larger than %u bytes",
				     PD_CTL_MAX_MSG);
	if (r < 0)
		return pd_fail(err, -r, "claim");
	return 0;
}

/*
 * The claim's cgroup limits, written before init hears of the claim: in force before init
 * confines itself and before any command exists, as at a cold create. When a write fails,
 * the template's limits are written back and the sandbox stays pooled; if even that fails
 * it is killed (a sandbox never serves with limits half of one spec and half of another).
 */
static void unbind_cgroup(paddock_sandbox *sb)
{
	struct pd_cgroup_limits had;

	pd_launch_cgroup_limits(sb->spec, &had);
	if (pd_cgroup_set_limits(sb->cg, &had, NULL) < 0)
		(void)paddock_sandbox_kill(sb, PADDOCK_END_KILLED, NULL);
}

static int bind_cgroup(paddock_sandbox *sb, const paddock_spec *spec, paddock_error *err)
{
	struct pd_cgroup_limits want, had;
	int r;

	if (!sb->cg)
		return 0;
	pd_launch_cgroup_limits(spec, &want);
	pd_launch_cgroup_limits(sb->spec, &had);
	/* while pooled the cgroup holds the template spec's values (or the sandbox was killed) */
	if (want.memory_bytes == had.memory_bytes && want.pids == had.pids && want.cpus == had.cpus)
		return 0;
	r = pd_cgroup_set_limits(sb->cg, &want, err);
	if (r < 0)
		unbind_cgroup(sb);
	return r;
}

/* The supervisor's copy of the spec takes the claim's late fields. */
static int take_late_fields(paddock_spec *dst, const paddock_spec *src, paddock_error *err)
{
	char *hostname = strdup(src->hostname);
	char **env = calloc(src->n_env + 1, sizeof(char *));
	char *workspace = NULL;

	if (!hostname || !env || (src->workspace && !(workspace = strdup(src->workspace))))
		goto oom;
	/* the claim's secrets (sources, and values given by value), as a cold create keeps */
	pd_spec_secrets_clear(dst);
	if (pd_spec_secrets_copy(dst, src) < 0)
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
	free(dst->workspace); /* a pooled sandbox's template has none */
	dst->workspace = workspace;
	/* every limit but `required` is late, and `required` is the template's */
	dst->limits = src->limits;
	return 0;
oom:
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
	free(hostname);
	free(workspace);
	return pd_fail(err, ENOMEM, "claim");
}

/* SECURITY: what a claim read of its secrets goes, wiped, unless the sandbox took it. */
struct claim_secrets {
	struct pd_secrets *secrets;
	char **env;
	char *ca_pem;
};

static void claim_secrets_release(struct claim_secrets *c)
{
	const struct pd_egress_ops *eg;

	/* read by the egress half: it is loaded */
	if (c->secrets && pd_egress_ops(&eg, NULL) >= 0)
		eg->secrets_free(c->secrets); /* wipes the values */
	c->secrets = NULL;
	pd_strv_free(c->env);
	c->env = NULL;
	free(c->ca_pem);
	c->ca_pem = NULL;
}

/*
 * After BOUND: the sandbox's secrets are the claim's, for the proxy's substitution too
 * (it borrows them; none could connect before BOUND). A pooled sandbox had none.
 */
static void take_secrets(paddock_sandbox *sb, struct claim_secrets *c)
{
	assert(!sb->secrets && !sb->spec->secret_env && !sb->spec->ca_pem);
	sb->secrets = TAKE_PTR(c->secrets);
	sb->spec->secret_env = TAKE_PTR(c->env);
	sb->spec->ca_pem = TAKE_PTR(c->ca_pem);
	if (sb->egress)
		sb->egress->secrets = sb->secrets;
}

/*
 * Rootless, or where the filesystem cannot idmap, a cold init clones the workspace itself
 * before its pivot: a pooled init clones it at the claim from the host tree it kept
 * (PD_BIND_WORKSPACE_PATH). The directory is checked here first, as the invoker, so a
 * path that is not one is refused before BIND and the sandbox stays pooled; a kernel that
 * cannot clone from a kept tree (the init said so in READY) refuses it too: made cold.
 * Its device and inode go with the path: init binds that directory or none (a mount made
 * on the host since the sandbox was built is not in the tree it kept).
 */
static int workspace_by_path(const paddock_sandbox *sb, const char *path, struct stat *ret_st,
			     paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;

	if (!sb->host_tree)
		return pd_fail_field(err, EOPNOTSUPP, "workspace",
				     "this kernel cannot clone a workspace into a pooled sandbox");
	if (!strcmp(path, "/")) /* the kept tree's own root cannot be cloned (rootless) */
		return pd_fail_field(err, EOPNOTSUPP, "workspace",
				     "a pooled sandbox cannot take '/' as its workspace");
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, ret_st) < 0)
		return pd_fail_field(err, errno, "workspace", "open '%s'", PD_ESC(path));
	return 0;
}

static int claim(paddock_sandbox *sb, const paddock_spec *spec, paddock_error *err)
{
	char *mine = NULL, *theirs = NULL, *buf = NULL;
	_cleanup_close_ int tree = -EBADF;
	struct stat ws_st, *ws = NULL;
	struct claim_secrets sec = { 0 };
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
		r = pd_launch_check_disk(spec, err);
	if (r >= 0)
		r = paddock_spec_template_json(sb->spec, &mine, err);
	if (r >= 0)
		r = paddock_spec_template_json(spec, &theirs, err);
	if (r >= 0 && strcmp(mine, theirs) != 0)
		r = pd_fail(err, EINVAL, "the spec is not the template of sandbox %s", sb->id);
	/* the claim's secrets, read now as a cold create reads them when it makes a sandbox */
	if (r >= 0)
		r = pd_sandbox_secrets_prepare(spec, &sec.secrets, &sec.env, &sec.ca_pem, err);
	/* the claim's workspace, the tree a cold create sends init (launch.c) */
	if (r >= 0 && spec->workspace) {
		r = pd_launch_open_tree(sb, spec->workspace, PD_CTL_TREE_WORKSPACE, &tree, err);
		if (r >= 0 && tree < 0) {
			r = workspace_by_path(sb, spec->workspace, &ws_st, err);
			ws = &ws_st;
		}
	}
	if (r >= 0)
		r = pack_bind(sb, spec, sec.env, sec.ca_pem, ws, &buf, &len, err);
	/* the claim's limits and network policy, in force before any command can run */
	if (r >= 0)
		r = bind_cgroup(sb, spec, err);
	if (r >= 0 && sb->egress) {
		r = paddock_sandbox_set_network(sb, spec, err);
		if (r < 0 && sb->cg)
			unbind_cgroup(sb);
	}
	/* it was made at the lowest priority (sandbox.c): from now on it serves a claim */
	if (r >= 0 && pd_idmap_host_root())
		(void)setpriority(PRIO_PROCESS, (id_t)sb->init_pid, 0);
	if (r >= 0 && pd_ctl_send(sb->ctl, PD_CTL_BIND, buf, len, &tree, tree >= 0 ? 1 : 0) < 0)
		r = pd_fail(err, EPIPE, "claim sandbox %s", sb->id);
	free(mine);
	free(theirs);
	if (buf)
		explicit_bzero(buf, len); /* placeholders: worthless, but this claim's alone */
	free(buf);
	if (r < 0) {
		/* SECURITY: a sandbox left pooled keeps nothing of this claim's secrets */
		claim_secrets_release(&sec);
		return r;
	}
	/* nothing else can come from a pooled init: it has had no command */
	n = pd_ctl_recv_wait(sb->ctl, CLAIM_TIMEOUT_MS, &type, &msg, sizeof(msg), NULL, NULL);
	if (type != PD_CTL_BOUND || n != (ssize_t)sizeof(msg.bound)) {
		/* init's account of its failure is hostile text: only its code is taken */
		int code = type == PD_CTL_FAILED && n == (ssize_t)sizeof(msg.failed) &&
					   msg.failed.code > 0 && msg.failed.code < 4096
				   ? msg.failed.code
			   : n < 0 ? (int)-n
				   : EPROTO;

		claim_secrets_release(&sec);
		(void)paddock_sandbox_kill(sb, PADDOCK_END_KILLED, NULL);
		/* the one failure a correct claim can meet in init; its words are ours */
		if (ws && code == EXDEV)
			return pd_fail_field(err, code, "workspace",
					     "'%s' is another directory on the host than when "
					     "sandbox %s was made",
					     PD_ESC(spec->workspace), sb->id);
		return pd_fail(err, code, "claim sandbox %s: init could not bind it (message %u)",
			       sb->id, type);
	}
	r = take_late_fields(sb->spec, spec, err);
	if (r < 0) {
		claim_secrets_release(&sec);
		(void)paddock_sandbox_kill(sb, PADDOCK_END_KILLED, NULL);
		return r;
	}
	take_secrets(sb, &sec);
	sb->spec->pooled = false;
	sb->landlock_abi = msg.bound.landlock_abi;
	pd_sandbox_limits_bound(sb);
	if (pd_events_wanted(sb->ctx))
		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.claimed", sb->id, NULL,
			json_pack("{s:s,s:i}", "hostname", sb->spec->hostname, "secrets",
				  (int)sb->spec->n_secrets));
	return 0;
}

int paddock_sandbox_claim(paddock_sandbox *sb, const paddock_spec *spec, paddock_error *err)
{
	paddock_spec *own = NULL;
	int r;

	if (!sb || !spec)
		return pd_fail(err, EINVAL, "paddock_sandbox_claim: arguments are required");
	/* with an image, the claim is the spec a cold create of it would have made */
	r = pd_sandbox_image_claim_spec(sb, spec, &own, err);
	if (r >= 0)
		r = claim(sb, own ? own : spec, err);
	paddock_spec_free(own);
	return r;
}
