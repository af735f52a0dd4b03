/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The life of paddockd's sandboxes, their records and their creation: a box (the libpaddock
 * sandbox, tenant, TTL, metadata) is recorded twice, as the store's row and as the record
 * its init keeps, and a create (with a reconnect socket under the state dir, so the sandbox
 * outlives a crash of paddockd) answers only once both are written. Each state change is one
 * store transaction. The rest of the lifecycle: lifecycle-events.c (events),
 * lifecycle-delete.c (teardown), lifecycle-ttl.c (the reaper), lifecycle-adopt.c (start and
 * stop), lifecycle-recover.c (reconnect sockets the store does not know).
 *
 * Trust: a create body is a client's (a TCP tenant's: untrusted); what it names on the host
 * (paths, secret sources) is checked here against what the operator allows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "paddock/policy.h"
#include "lifecycle.h"

static const char *const create_fields[] = {
	"ttl_s", "idle_timeout_s", "metadata", "on_timeout", NULL,
};

struct box *svc_box_find(struct daemon *d, const char *tenant, const char *id)
{
	for (struct box *b = d->boxes; b; b = b->next)
		/* SECURITY: another tenant's sandbox is exactly as absent as an unknown one */
		if (strcmp(b->id, id) == 0 && strcmp(b->tenant, tenant) == 0)
			return b;
	return NULL;
}

void svc_box_touch(struct box *b)
{
	b->last_active_ms = svc_now_ms();
}

void svc_store_warn(struct daemon *d, const paddock_error *err)
{
	char buf[600];

	fprintf(stderr, "paddockd: store: %s\n", paddock_error_format(err, buf, sizeof(buf)));
	(void)d;
}

int svc_store_error(paddock_error *err, const paddock_error *cause)
{
	char msg[sizeof(err->msg)];
	int code = cause->code ? cause->code : EIO;

	snprintf(msg, sizeof(msg),
		 "paddockd cannot record it in its state store (nothing "
		 "changed): %.300s",
		 cause->msg);
	memset(err, 0, sizeof(*err));
	err->code = code;
	snprintf(err->field, sizeof(err->field), "store");
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return -code;
}

const char *svc_box_state(const struct box *b)
{
	if (b->stopped)
		return "stopped";
	return b->paused ? "paused" : "running";
}

static const char *on_timeout_name(const struct box *b)
{
	return b->pause_on_timeout ? "pause" : "kill";
}

/*
 * What the sandbox's init keeps of it for a paddockd that lost its store: the same as its
 * row, as JSON (recover_socket() reads it back). NULL when out of memory.
 */
static char *box_record(struct box *b)
{
	json_t *spec = json_loads(b->spec_json, 0, NULL);
	json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:o,s:O,s:I,s:I,s:I,s:I,s:I}", "v", 1, "tenant",
			      b->tenant, "state", svc_box_state(b), "on_timeout",
			      on_timeout_name(b), "spec", spec ? spec : json_object(), "metadata",
			      b->metadata, "created_ms", (json_int_t)b->created_ms, "expires_ms",
			      (json_int_t)b->expires_ms, "last_active_ms",
			      (json_int_t)b->last_active_ms, "ttl_s", (json_int_t)b->ttl_s,
			      "idle_timeout_s", (json_int_t)b->idle_timeout_s);
	char *text;

	if (o && b->idem_key[0])
		json_object_set_new(o, "idempotency",
				    json_pack("{s:s,s:s,s:I}", "key", b->idem_key, "fingerprint",
					      b->idem_fp, "created_ms", (json_int_t)b->idem_ms));
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

/* The store's row of the box: one statement (put_sandbox is a single upsert). */
static int box_store(struct box *b, paddock_error *err)
{
	char *handle = NULL, *meta = json_dumps(b->metadata, JSON_COMPACT);
	struct paddock_store_sandbox row = {
		.id = b->id,
		.tenant = b->tenant,
		.state = svc_box_state(b),
		.spec_json = b->spec_json,
		.metadata_json = meta ? meta : "{}",
		.created_ms = b->created_ms,
		.expires_ms = b->expires_ms,
		.last_active_ms = b->last_active_ms,
		.ttl_s = b->ttl_s,
		.idle_timeout_s = b->idle_timeout_s,
		.on_timeout = on_timeout_name(b),
	};
	int r;

	if (b->stopped && b->kept_image[0]) {
		/*
		 * A stopped sandbox's handle is what starts it again: the image of its state
		 * (recorded before its init is ended: svc_box_stop()).
		 */
		json_t *h = json_pack("{s:s}", "kept_image", b->kept_image);

		handle = h ? json_dumps(h, JSON_COMPACT) : NULL;
		json_decref(h);
		row.handle_json = handle ? handle : "{}";
	} else if (b->sb && paddock_sandbox_handle(b->sb, &handle, NULL) >= 0) {
		row.handle_json = handle;
	} else {
		row.handle_json = "{}";
	}
	r = paddock_store_put_sandbox(b->d->store, &row, err);
	free(handle);
	free(meta);
	return r;
}

/* The record the sandbox's init keeps, when it runs (a stopped one's init is gone). */
static int box_give_record(struct box *b, paddock_error *err)
{
	char *rec;
	int r;

	/* in one process nothing is recovered: its sandboxes die with it */
	if (b->d->in_process || !b->sb || !paddock_sandbox_running(b->sb))
		return 0;
	rec = box_record(b);
	if (!rec)
		return paddock_fail(err, ENOMEM, "format the record of '%s'", b->id);
	r = paddock_sandbox_set_record(b->sb, rec, err);
	free(rec);
	return r;
}

int svc_box_persist(struct box *b, paddock_error *err)
{
	paddock_error cause = { 0 };
	int r;

	/* first the sandbox's own copy: a store it could not write would leave it without */
	r = box_give_record(b, &cause);
	if (r >= 0)
		r = box_store(b, &cause);
	if (r < 0)
		return svc_store_error(err, &cause);
	return 0;
}

/* A change nobody waits for (a sandbox that stopped, shutdown): a failure is logged. */
void svc_box_persist_or_warn(struct box *b)
{
	paddock_error err = { 0 };

	if (svc_box_persist(b, &err) < 0)
		svc_store_warn(b->d, &err);
}

json_t *svc_box_json(struct box *b)
{
	struct paddock_usage u = { 0 };
	json_t *spec = json_loads(b->spec_json, 0, NULL);
	unsigned running = 0;
	json_t *o;

	for (struct proc *p = b->procs; p; p = p->next)
		running += !p->exited;
	if (b->sb)
		(void)paddock_sandbox_usage(b->sb, &u, NULL);
	o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:I,s:s,s:I,s:o,s:O,s:o,s:{s:I,s:I,s:f,s:I,s:i,s:i}}",
		      "id", b->id, "tenant", b->tenant, "state", svc_box_state(b), "created_at",
		      svc_time_json(b->created_ms), "expires_at", svc_time_json(b->expires_ms),
		      "ttl_s", (json_int_t)b->ttl_s, "on_timeout", on_timeout_name(b),
		      "idle_timeout_s", (json_int_t)b->idle_timeout_s, "last_active_at",
		      svc_time_json(b->last_active_ms), "metadata", b->metadata, "spec",
		      spec ? spec : json_object(), "usage", "memory_bytes",
		      (json_int_t)u.memory_bytes, "memory_peak_bytes",
		      (json_int_t)u.memory_peak_bytes, "cpu_s", u.cpu_s, "pids", (json_int_t)u.pids,
		      "execs", (int)u.execs, "processes", (int)running);
	/* a stopped one: the image its POST .../start runs from (null: it ended on its own) */
	if (o && b->stopped)
		json_object_set_new(o, "kept_image",
				    b->kept_image[0] ? json_string(b->kept_image) : json_null());
	return o;
}

/* ---- create ---------------------------------------------------------------------------- */

static int get_seconds(json_t *body, const char *key, int64_t def, int64_t min, int64_t max,
		       int64_t *ret, paddock_error *err)
{
	json_t *v = json_object_get(body, key);

	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		int r = paddock_fail(err, EINVAL, "expected whole seconds from %lld to %lld",
				     (long long)min, (long long)max);
		snprintf(err->field, sizeof(err->field), "%s", key);
		return r;
	}
	*ret = json_integer_value(v);
	return 0;
}

/* on_timeout: "kill" (the default) or "pause" (docs/api.md "Pause and resume") */
static int get_on_timeout(json_t *body, bool *ret_pause, paddock_error *err)
{
	json_t *v = json_object_get(body, "on_timeout");
	const char *s = json_string_value(v);
	int r;

	*ret_pause = false;
	if (!v)
		return 0;
	if (!s || (strcmp(s, "kill") != 0 && strcmp(s, "pause") != 0)) {
		r = paddock_fail(err, EINVAL, "expected \"kill\" or \"pause\"");
		snprintf(err->field, sizeof(err->field), "on_timeout");
		return r;
	}
	*ret_pause = strcmp(s, "pause") == 0;
	return 0;
}

int svc_check_metadata(json_t *m, paddock_error *err)
{
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object(m) || json_object_size(m) > 32) {
		r = paddock_fail(err, EINVAL, "expected an object of at most 32 string values");
		snprintf(err->field, sizeof(err->field), "metadata");
		return r;
	}
	json_object_foreach(m, k, v)
	{
		if (strlen(k) > 64 || !json_is_string(v) || json_string_length(v) > 1024) {
			r = paddock_fail(err, EINVAL,
					 "expected keys of at most 64 and string values of at most "
					 "1024 bytes");
			snprintf(err->field, sizeof(err->field), "metadata");
			return r;
		}
	}
	return 0;
}

static unsigned tenant_count(struct daemon *d, const char *tenant)
{
	unsigned n = 0;

	for (struct box *b = d->boxes; b; b = b->next)
		n += strcmp(b->tenant, tenant) == 0;
	return n;
}

static void box_exited(paddock_sandbox *sb, enum paddock_end_reason reason, void *userdata)
{
	struct box *b = userdata;

	(void)sb;
	(void)reason;
	b->stopped = true;
	b->paused = false;
	svc_box_persist_or_warn(b);
}

void svc_box_watch_exit(struct box *b)
{
	paddock_sandbox_set_exit_callback(b->sb, box_exited, b);
}

struct box *svc_box_new(struct daemon *d, const char *id, const char *tenant)
{
	struct box *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->d = d;
	snprintf(b->id, sizeof(b->id), "%s", id);
	snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
	return b;
}

void svc_box_link(struct box *b)
{
	b->next = b->d->boxes;
	b->d->boxes = b;
}

/*
 * SECURITY: a spec names host paths (workspace, binds, rootfs) that init mounts into the
 * sandbox, writable ones idmapped to the sandbox user: whoever names /etc could write the
 * host's /etc. The unix socket's clients already are paddockd's own user; a TCP tenant may
 * name only what the operator listed (--allow-host-path), checked on the resolved path, and
 * the resolved path is what is used.
 */
static int check_host_path(struct daemon *d, json_t *holder, const char *key, const char *field,
			   paddock_error *err)
{
	json_t *v = json_object_get(holder, key);
	paddock_policy *p = NULL;
	char *real = NULL;
	int r;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return 0; /* the spec parser names the type error */
	/*
	 * libpaddock's policy decides; it is made per path because the daemon keeps only the
	 * operator's list. A listed directory that no longer resolves allows nothing.
	 */
	r = paddock_policy_new(&p, err);
	for (size_t i = 0; r >= 0 && i < d->n_host_paths; i++) {
		paddock_error ignored = { 0 };

		(void)paddock_policy_allow_host_path(p, d->host_paths[i], &ignored);
	}
	if (r >= 0)
		r = paddock_policy_check_host_path(p, json_string_value(v), field, &real, err);
	paddock_policy_free(p);
	if (r == -EPERM) {
		size_t n = strlen(err->msg);

		snprintf(err->msg + n, sizeof(err->msg) - n, " (--allow-host-path)");
	}
	if (r < 0)
		return r;
	json_object_set_new(holder, key, json_string(real));
	free(real);
	return 0;
}

static int check_host_paths(struct daemon *d, const char *tenant, json_t *spec, paddock_error *err)
{
	json_t *binds = json_object_get(spec, "binds"), *b;
	size_t i;
	int r;

	if (strcmp(tenant, SVC_LOCAL_TENANT) == 0)
		return 0;
	r = check_host_path(d, spec, "workspace", "workspace", err);
	if (r >= 0)
		r = check_host_path(d, spec, "rootfs", "rootfs", err);
	json_array_foreach(binds, i, b)
	{
		char field[64];

		if (r < 0)
			break;
		if (json_is_string(b)) {
			r = paddock_fail(err, EACCES,
					 "binds from a TCP tenant must be objects "
					 "({\"source\": ..., \"target\": ...})");
			snprintf(err->field, sizeof(err->field), "binds[%zu]", i);
			break;
		}
		snprintf(field, sizeof(field), "binds[%zu].source", i);
		r = check_host_path(d, b, "source", field, err);
	}
	return r;
}

/*
 * SECURITY: a secret's env: or file: source is read by paddockd, as paddockd: its own
 * environment (tokens, keys) and files. Only the local tenant, the operator, may name one;
 * a TCP tenant gives its secrets by value.
 */
static int check_secret_sources(const char *tenant, json_t *spec, paddock_error *err)
{
	json_t *sec;
	size_t i;

	if (strcmp(tenant, SVC_LOCAL_TENANT) == 0)
		return 0;
	json_array_foreach(json_object_get(spec, "secrets"), i, sec)
	{
		const char *src = json_string_value(json_object_get(sec, "source"));

		if (src && strcmp(src, "value") != 0) {
			int r = paddock_fail(
				err, EPERM,
				"a TCP tenant gives a secret by \"value\"; \"source\" '%.40s' "
				"would be read from paddockd's own environment or files",
				src);
			snprintf(err->field, sizeof(err->field), "secrets[%zu].source", i);
			return r;
		}
	}
	return 0;
}

int svc_create_parse(struct daemon *d, const char *tenant, json_t *body, paddock_spec **ret_spec,
		     int64_t *ret_ttl, int64_t *ret_idle, paddock_error *err)
{
	paddock_spec *spec = NULL;
	json_t *specj = json_deep_copy(body), *meta = json_object_get(body, "metadata");
	unsigned max_sandboxes = d->max_sandboxes ? d->max_sandboxes : SVC_MAX_SANDBOXES;
	char *s;
	int r;

	if (!specj)
		return paddock_fail(err, ENOMEM, "copy request");
	/* a named template is the base the request's own fields go over */
	r = svc_template_apply(d, tenant, specj, err);
	if (r < 0) {
		json_decref(specj);
		return r;
	}
	for (const char *const *f = create_fields; *f; f++)
		json_object_del(specj, *f);
	/* a sandbox that is expired when it is made is no sandbox: ttl_s 0 is refused */
	r = get_seconds(body, "ttl_s", SVC_DEFAULT_TTL_S, 1, E2B_MAX_TTL_S, ret_ttl, err);
	if (r >= 0) /* 0: no idle timeout */
		r = get_seconds(body, "idle_timeout_s", 0, 0, E2B_MAX_TTL_S, ret_idle, err);
	if (r >= 0 && meta)
		r = svc_check_metadata(meta, err);
	if (r >= 0)
		r = check_host_paths(d, tenant, specj, err);
	if (r >= 0)
		r = check_secret_sources(tenant, specj, err);
	if (r >= 0)
		r = svc_stop_check_image(specj, err);
	if (r >= 0 && tenant_count(d, tenant) >= max_sandboxes)
		r = paddock_fail_field(
			err, EAGAIN, "max_sandboxes",
			"tenant '%s' has %u sandboxes, the most allowed (max_sandboxes "
			"%u): delete one first",
			tenant, max_sandboxes, max_sandboxes);
	s = r >= 0 ? json_dumps(specj, JSON_COMPACT) : NULL;
	json_decref(specj);
	if (r < 0)
		return r;
	if (!s)
		return paddock_fail(err, ENOMEM, "format spec");
	r = paddock_spec_new(&spec, err);
	if (r >= 0)
		r = paddock_spec_load_json(spec, s, strlen(s), err);
	free(s);
	if (r < 0) {
		paddock_spec_free(spec);
		return r;
	}
	*ret_spec = spec;
	return 0;
}

/*
 * A request's fingerprint: FNV-1a (64 bits) of the body with its keys sorted, so that a retry
 * that orders its members differently is still the same request. Not a secret: it only tells
 * one of the tenant's requests from another.
 */
static void fingerprint(json_t *body, char out[17])
{
	char *s = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *c = s ? s : ""; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 0x100000001b3ull;
	}
	free(s);
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

struct key_lookup {
	bool found;
	char sandbox_id[32];
	char fingerprint[17];
};

static int key_found(const struct paddock_store_idempotency *k, void *userdata)
{
	struct key_lookup *l = userdata;

	l->found = true;
	snprintf(l->sandbox_id, sizeof(l->sandbox_id), "%s", k->sandbox_id);
	snprintf(l->fingerprint, sizeof(l->fingerprint), "%s", k->fingerprint);
	return 0;
}

/*
 * An Idempotency-Key seen before: the sandbox it made (ret_b), or an error: another request
 * under the same key (409), the sandbox is gone (409), the store cannot say (503). 0 and
 * *ret_b NULL: the key is new.
 */
static int key_replay(struct daemon *d, const char *tenant, const char *key, const char *fp,
		      struct box **ret_b, paddock_error *err)
{
	struct key_lookup l = { 0 };
	paddock_error cause = { 0 };
	int r;

	*ret_b = NULL;
	r = paddock_store_get_idempotency(d->store, tenant, key, key_found, &l, &cause);
	if (r < 0)
		return svc_store_error(err, &cause);
	if (!l.found)
		return 0;
	if (strcmp(l.fingerprint, fp) != 0) {
		r = paddock_fail(err, EEXIST,
				 "Idempotency-Key '%s' was used for another request (a "
				 "different body): use a new key for a new sandbox",
				 key);
		snprintf(err->field, sizeof(err->field), "Idempotency-Key");
		return r;
	}
	*ret_b = svc_box_find(d, tenant, l.sandbox_id);
	if (!*ret_b) {
		r = paddock_fail(err, EEXIST,
				 "the sandbox Idempotency-Key '%s' made, %s, is gone "
				 "(deleted or expired)",
				 key, l.sandbox_id);
		snprintf(err->field, sizeof(err->field), "Idempotency-Key");
		return r;
	}
	return 0;
}

/* The new box's row and its key, together or not at all. */
int svc_box_store_new(struct box *b, paddock_error *err)
{
	paddock_store *st = b->d->store;
	int r;

	if (!b->idem_key[0])
		return box_store(b, err);
	r = paddock_store_begin(st, err);
	if (r < 0)
		return r;
	r = box_store(b, err);
	if (r >= 0) {
		const struct paddock_store_idempotency k = {
			.tenant = b->tenant,
			.key = b->idem_key,
			.sandbox_id = b->id,
			.fingerprint = b->idem_fp,
			.created_ms = b->idem_ms,
		};
		r = paddock_store_put_idempotency(st, &k, err);
	}
	if (r >= 0)
		r = paddock_store_commit(st, err);
	if (r < 0)
		(void)paddock_store_rollback(st, NULL); /* err says why */
	return r;
}

int svc_box_create_keyed(struct daemon *d, const char *tenant, json_t *body, const char *key,
			 struct box **ret, bool *ret_replayed, paddock_error *err)
{
	paddock_spec *spec = NULL;
	json_t *meta = json_object_get(body, "metadata");
	char fp[17] = "";
	struct paddock_sandbox_opts opts = { .orphan_timeout_s = d->orphan_timeout_s };
	paddock_sandbox *sb = NULL;
	paddock_error cause = { 0 };
	int64_t ttl = 0, idle = 0;
	bool pause_on_timeout = false;
	struct box *b;
	int r;

	if (ret_replayed)
		*ret_replayed = false;
	if (key) {
		fingerprint(body, fp);
		r = key_replay(d, tenant, key, fp, &b, err);
		if (r < 0)
			return r;
		if (b) {
			if (ret_replayed)
				*ret_replayed = true;
			*ret = b;
			return 0;
		}
	}
	r = get_on_timeout(body, &pause_on_timeout, err);
	if (r >= 0)
		r = svc_create_parse(d, tenant, body, &spec, &ttl, &idle, err);
	if (r < 0)
		return r;
	r = svc_check_max_network(d, spec, err);
	if (r < 0) {
		paddock_spec_free(spec);
		return r;
	}
	b = svc_box_new(d, "sb_pending", tenant);
	if (!b) {
		paddock_spec_free(spec);
		return paddock_fail(err, ENOMEM, "allocate sandbox");
	}
	/* in one process: no socket to reconnect by, so init dies with the process */
	opts.reconnect_dir = d->in_process ? NULL : d->reconnect_dir;
	/* a ready sandbox of this template if the pool has one, else one made now */
	r = svc_pool_claim(d, spec, &sb);
	if (r < 0)
		r = paddock_sandbox_create_with(d->ctx, spec, &opts, &sb, err);
	if (r < 0) {
		/* the failure is in the log; no row to keep it with */
		svc_events_flush_pending(d, "", NULL);
		paddock_spec_free(spec);
		free(b);
		return r;
	}
	r = paddock_spec_to_json(spec, &b->spec_json, err);
	(void)paddock_spec_get_limit(spec, "timeout", &b->exec_timeout_s, NULL);
	(void)paddock_spec_get_limit(spec, "output", &b->output_limit, NULL);
	paddock_spec_free(spec);
	if (r < 0) {
		paddock_sandbox_free(sb);
		free(b);
		return r;
	}
	snprintf(b->id, sizeof(b->id), "%s", paddock_sandbox_id(sb));
	b->sb = sb;
	b->metadata = meta ? json_incref(meta) : json_object();
	b->created_ms = b->last_active_ms = svc_now_ms();
	b->idle_timeout_s = idle;
	b->pause_on_timeout = pause_on_timeout;
	/* in one process: no TTL (expires_ms 0), it lives until deleted or the core closes */
	b->ttl_s = d->in_process ? 0 : ttl;
	b->expires_ms = d->in_process ? 0 : b->created_ms + ttl * 1000;
	if (key) {
		snprintf(b->idem_key, sizeof(b->idem_key), "%s", key);
		snprintf(b->idem_fp, sizeof(b->idem_fp), "%s", fp);
		b->idem_ms = b->created_ms;
	}
	/*
	 * "Created" means kept: the 201 goes out only once the sandbox's own record and the
	 * store's row are written. A sandbox that cannot be recorded would be lost at the next
	 * start, so it is ended now and the create fails.
	 */
	r = box_give_record(b, &cause);
	if (r >= 0)
		r = svc_box_store_new(b, &cause);
	if (r < 0) {
		svc_store_error(err, &cause);
		svc_log_event(d, NULL, "sandbox.removed", b->id, "\"reason\":\"store_failed\"");
		svc_events_flush_pending(d, "", NULL);
		b->sb = paddock_sandbox_free(sb); /* SIGKILL, and wait: nothing of it is left */
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
		return -err->code;
	}
	paddock_sandbox_set_exit_callback(sb, box_exited, b);
	svc_box_link(b);
	d->m.created++;
	svc_events_flush_pending(d, b->id, b->tenant);
	*ret = b;
	return 0;
}

int svc_box_create(struct daemon *d, const char *tenant, json_t *body, struct box **ret,
		   paddock_error *err)
{
	return svc_box_create_keyed(d, tenant, body, NULL, ret, NULL, err);
}
