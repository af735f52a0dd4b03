/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The life of paddockd's sandboxes: create (with a reconnect socket under the state dir, so
 * the sandbox outlives a crash of paddockd), TTL and idle timeout (the reaper), destroy,
 * and on start the adoption of every sandbox the store says was live: re-adopted with its
 * processes, or, when that cannot be, ended and forgotten. Each state change is one store
 * transaction; events go to the store, the JSON-lines log and the sandbox's followers.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#include "daemon.h"
#include "paddock/policy.h"
#include "e2b.h"

#define REAPER_PERIOD_S 1
#define EVENTS_KEPT 2000

static const char *const create_fields[] = {
	"ttl_s", "idle_timeout_s", "metadata", "on_timeout", NULL,
};

struct box *pd_box_find(struct daemon *d, const char *tenant, const char *id)
{
	for (struct box *b = d->boxes; b; b = b->next)
		/* SECURITY: another tenant's sandbox is exactly as absent as an unknown one */
		if (strcmp(b->id, id) == 0 && strcmp(b->tenant, tenant) == 0)
			return b;
	return NULL;
}

void pd_box_touch(struct box *b)
{
	b->last_active_ms = pd_now_ms();
}

static void store_warn(struct daemon *d, const paddock_error *err)
{
	char buf[600];

	fprintf(stderr, "paddockd: store: %s\n", paddock_error_format(err, buf, sizeof(buf)));
	(void)d;
}

int pd_store_error(paddock_error *err, const paddock_error *cause)
{
	char msg[sizeof(err->msg)];
	int code = cause->code ? cause->code : EIO;

	snprintf(msg, sizeof(msg), "paddockd cannot record it in its state store (nothing "
		 "changed): %.300s", cause->msg);
	memset(err, 0, sizeof(*err));
	err->code = code;
	snprintf(err->field, sizeof(err->field), "store");
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return -code;
}

const char *pd_box_state(const struct box *b)
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
			      b->tenant, "state", pd_box_state(b), "on_timeout",
			      on_timeout_name(b), "spec",
			      spec ? spec : json_object(), "metadata", b->metadata, "created_ms",
			      (json_int_t)b->created_ms, "expires_ms", (json_int_t)b->expires_ms,
			      "last_active_ms", (json_int_t)b->last_active_ms, "ttl_s",
			      (json_int_t)b->ttl_s, "idle_timeout_s", (json_int_t)b->idle_timeout_s);
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
		.state = pd_box_state(b),
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
		 * (recorded before its init is ended: pd_box_stop()).
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

	if (!b->sb || !paddock_sandbox_running(b->sb))
		return 0;
	rec = box_record(b);
	if (!rec)
		return dfail(err, ENOMEM, "format the record of '%s'", b->id);
	r = paddock_sandbox_set_record(b->sb, rec, err);
	free(rec);
	return r;
}

int pd_box_persist(struct box *b, paddock_error *err)
{
	paddock_error cause = { 0 };
	int r;

	/* first the sandbox's own copy: a store it could not write would leave it without */
	r = box_give_record(b, &cause);
	if (r >= 0)
		r = box_store(b, &cause);
	if (r < 0)
		return pd_store_error(err, &cause);
	return 0;
}

/* A change nobody waits for (a sandbox that stopped, shutdown): a failure is logged. */
void pd_box_persist_or_warn(struct box *b)
{
	paddock_error err = { 0 };

	if (pd_box_persist(b, &err) < 0)
		store_warn(b->d, &err);
}

json_t *pd_box_json(struct box *b)
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
		      "id", b->id, "tenant", b->tenant, "state", pd_box_state(b), "created_at",
		      pd_time_json(b->created_ms), "expires_at", pd_time_json(b->expires_ms),
		      "ttl_s", (json_int_t)b->ttl_s, "on_timeout", on_timeout_name(b),
		      "idle_timeout_s",
		      (json_int_t)b->idle_timeout_s, "last_active_at",
		      pd_time_json(b->last_active_ms), "metadata", b->metadata, "spec",
		      spec ? spec : json_object(), "usage", "memory_bytes",
		      (json_int_t)u.memory_bytes, "memory_peak_bytes",
		      (json_int_t)u.memory_peak_bytes, "cpu_s", u.cpu_s, "pids",
		      (json_int_t)u.pids, "execs", (int)u.execs, "processes", (int)running);
	/* a stopped one: the image its POST .../start runs from (null: it ended on its own) */
	if (o && b->stopped)
		json_object_set_new(o, "kept_image",
				    b->kept_image[0] ? json_string(b->kept_image) : json_null());
	return o;
}

/* ---- events ---------------------------------------------------------------------------- */

void pd_event_sink(const struct paddock_event *ev, void *userdata)
{
	struct daemon *d = userdata;
	json_t *o = json_loads(ev->json, 0, NULL);
	const char *sid = o ? json_string_value(json_object_get(o, "sandbox")) : NULL;
	paddock_error err = { 0 };
	size_t len = strlen(ev->json);

	/* one write per line, O_APPEND: lines from concurrent writers never interleave */
	if (d->event_log_fd >= 0) {
		char *line = malloc(len + 1);
		if (line) {
			memcpy(line, ev->json, len);
			line[len] = '\n';
			pd_event_log_write(d, line, len + 1);
			free(line);
		}
	}
	if (!sid && o && ev->level != PADDOCK_LEVEL_DEBUG)
		pd_events_broadcast(d, NULL, NULL, o); /* paddockd's own: the operator's */
	if (sid && ev->level != PADDOCK_LEVEL_DEBUG) {
		struct box *b = NULL, *gone = NULL;
		bool dying = false;

		for (b = d->boxes; b; b = b->next)
			if (strcmp(b->id, sid) == 0)
				break;
		for (struct box *x = d->dying; x && !b && !dying; x = x->next)
			if (strcmp(x->id, sid) == 0)
				gone = x, dying = true;
		/* a sandbox being created has no row yet: keep its first events until it has */
		if (!b && !dying && d->n_pending < sizeof(d->pending) / sizeof(d->pending[0])) {
			struct pending_event *pe = &d->pending[d->n_pending];

			pe->json = strdup(ev->json);
			if (pe->json) {
				snprintf(pe->sandbox, sizeof(pe->sandbox), "%s", sid);
				snprintf(pe->name, sizeof(pe->name), "%s", ev->name);
				pe->ts_ms = pd_now_ms();
				d->n_pending++;
			}
		} else if (b) {
			(void)paddock_store_add_event(d->store, b->id, pd_now_ms(), ev->name,
						      ev->json, NULL, &err);
		}
		for (struct watcher *w = b ? b->watchers : NULL; w; w = w->next)
			pd_stream_event(d, w, json_incref(o));
		/* one being created is told when it has a row (flush_pending), with its tenant */
		if (o && (b || gone))
			pd_events_broadcast(d, (b ? b : gone)->tenant, sid, o);
	}
	json_decref(o);
}

/*
 * Stores the events kept for `id` (now that it has a row), tells GET /v1/events of them
 * (`tenant`'s, or NULL: the operator's only), and drops every kept one.
 */
static void flush_pending(struct daemon *d, const char *id, const char *tenant)
{
	for (size_t i = 0; i < d->n_pending; i++) {
		struct pending_event *pe = &d->pending[i];

		if (strcmp(pe->sandbox, id) == 0) {
			json_t *o = json_loads(pe->json, 0, NULL);

			(void)paddock_store_add_event(d->store, id, pe->ts_ms, pe->name, pe->json,
						      NULL, NULL);
			if (o)
				pd_events_broadcast(d, tenant, id, o);
			json_decref(o);
		}
		free(pe->json);
	}
	d->n_pending = 0;
}

/* ---- create / destroy ------------------------------------------------------------------ */

static int get_seconds(json_t *body, const char *key, int64_t def, int64_t min, int64_t max,
		       int64_t *ret, paddock_error *err)
{
	json_t *v = json_object_get(body, key);

	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		int r = dfail(err, EINVAL, "expected whole seconds from %lld to %lld",
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
		r = dfail(err, EINVAL, "expected \"kill\" or \"pause\"");
		snprintf(err->field, sizeof(err->field), "on_timeout");
		return r;
	}
	*ret_pause = strcmp(s, "pause") == 0;
	return 0;
}

static int check_metadata(json_t *m, paddock_error *err)
{
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object(m) || json_object_size(m) > 32) {
		r = dfail(err, EINVAL, "expected an object of at most 32 string values");
		snprintf(err->field, sizeof(err->field), "metadata");
		return r;
	}
	json_object_foreach(m, k, v) {
		if (strlen(k) > 64 || !json_is_string(v) || json_string_length(v) > 1024) {
			r = dfail(err, EINVAL,
				  "expected keys of at most 64 and string values of at most 1024 bytes");
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
	pd_box_persist_or_warn(b);
}

void pd_box_watch_exit(struct box *b)
{
	paddock_sandbox_set_exit_callback(b->sb, box_exited, b);
}

static struct box *box_new(struct daemon *d, const char *id, const char *tenant)
{
	struct box *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->d = d;
	snprintf(b->id, sizeof(b->id), "%s", id);
	snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
	return b;
}

static void box_link(struct box *b)
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

static int check_host_paths(struct daemon *d, const char *tenant, json_t *spec,
			    paddock_error *err)
{
	json_t *binds = json_object_get(spec, "binds"), *b;
	size_t i;
	int r;

	if (strcmp(tenant, PD_LOCAL_TENANT) == 0)
		return 0;
	r = check_host_path(d, spec, "workspace", "workspace", err);
	if (r >= 0)
		r = check_host_path(d, spec, "rootfs", "rootfs", err);
	json_array_foreach(binds, i, b) {
		char field[64];

		if (r < 0)
			break;
		if (json_is_string(b)) {
			r = dfail(err, EACCES, "binds from a TCP tenant must be objects "
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

	if (strcmp(tenant, PD_LOCAL_TENANT) == 0)
		return 0;
	json_array_foreach(json_object_get(spec, "secrets"), i, sec) {
		const char *src = json_string_value(json_object_get(sec, "source"));

		if (src && strcmp(src, "value") != 0) {
			int r = dfail(err, EPERM,
				      "a TCP tenant gives a secret by \"value\"; \"source\" '%.40s' "
				      "would be read from paddockd's own environment or files",
				      src);
			snprintf(err->field, sizeof(err->field), "secrets[%zu].source", i);
			return r;
		}
	}
	return 0;
}

int pd_create_parse(struct daemon *d, const char *tenant, json_t *body, paddock_spec **ret_spec,
		    int64_t *ret_ttl, int64_t *ret_idle, paddock_error *err)
{
	paddock_spec *spec = NULL;
	json_t *specj = json_deep_copy(body), *meta = json_object_get(body, "metadata");
	char *s;
	int r;

	if (!specj)
		return dfail(err, ENOMEM, "copy request");
	/* a named template is the base the request's own fields go over */
	r = pd_template_apply(d, tenant, specj, err);
	if (r < 0) {
		json_decref(specj);
		return r;
	}
	for (const char *const *f = create_fields; *f; f++)
		json_object_del(specj, *f);
	/* a sandbox that is expired when it is made is no sandbox: ttl_s 0 is refused */
	r = get_seconds(body, "ttl_s", PD_DEFAULT_TTL_S, 1, PD_MAX_TTL_S, ret_ttl, err);
	if (r >= 0) /* 0: no idle timeout */
		r = get_seconds(body, "idle_timeout_s", 0, 0, PD_MAX_TTL_S, ret_idle, err);
	if (r >= 0 && meta)
		r = check_metadata(meta, err);
	if (r >= 0)
		r = check_host_paths(d, tenant, specj, err);
	if (r >= 0)
		r = check_secret_sources(tenant, specj, err);
	if (r >= 0)
		r = pd_stop_check_image(specj, err);
	if (r >= 0 && tenant_count(d, tenant) >= PD_MAX_SANDBOXES)
		r = dfail(err, EAGAIN, "tenant '%s' has %u sandboxes, the most allowed", tenant,
			  PD_MAX_SANDBOXES);
	s = r >= 0 ? json_dumps(specj, JSON_COMPACT) : NULL;
	json_decref(specj);
	if (r < 0)
		return r;
	if (!s)
		return dfail(err, ENOMEM, "format spec");
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
		return pd_store_error(err, &cause);
	if (!l.found)
		return 0;
	if (strcmp(l.fingerprint, fp) != 0) {
		r = dfail(err, EEXIST, "Idempotency-Key '%s' was used for another request (a "
			  "different body): use a new key for a new sandbox", key);
		snprintf(err->field, sizeof(err->field), "Idempotency-Key");
		return r;
	}
	*ret_b = pd_box_find(d, tenant, l.sandbox_id);
	if (!*ret_b) {
		r = dfail(err, EEXIST, "the sandbox Idempotency-Key '%s' made, %s, is gone "
			  "(deleted or expired)", key, l.sandbox_id);
		snprintf(err->field, sizeof(err->field), "Idempotency-Key");
		return r;
	}
	return 0;
}

/* The new box's row and its key, together or not at all. */
static int box_store_new(struct box *b, paddock_error *err)
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
			.tenant = b->tenant, .key = b->idem_key, .sandbox_id = b->id,
			.fingerprint = b->idem_fp, .created_ms = b->idem_ms,
		};
		r = paddock_store_put_idempotency(st, &k, err);
	}
	if (r >= 0)
		r = paddock_store_commit(st, err);
	if (r < 0)
		(void)paddock_store_rollback(st, NULL); /* err says why */
	return r;
}

int pd_box_create_keyed(struct daemon *d, const char *tenant, json_t *body, const char *key,
			struct box **ret, bool *ret_replayed, paddock_error *err)
{
	paddock_spec *spec = NULL;
	json_t *meta = json_object_get(body, "metadata");
	char path[300], fp[17] = "";
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
		r = pd_create_parse(d, tenant, body, &spec, &ttl, &idle, err);
	if (r < 0)
		return r;
	{
		char *sj = NULL;

		r = paddock_spec_to_json(spec, &sj, err);
		if (r >= 0)
			r = pd_check_max_network(d, sj, err);
		free(sj);
		if (r < 0) {
			paddock_spec_free(spec);
			return r;
		}
	}
	b = box_new(d, "sb_pending", tenant);
	if (!b) {
		paddock_spec_free(spec);
		return dfail(err, ENOMEM, "allocate sandbox");
	}
	snprintf(path, sizeof(path), "%s/s", d->state_dir);
	opts.reconnect_dir = path;
	/* a ready sandbox of this template if the pool has one, else one made now */
	r = pd_pool_claim(d, spec, &sb);
	if (r < 0)
		r = paddock_sandbox_create_with(d->ctx, spec, &opts, &sb, err);
	if (r < 0) {
		flush_pending(d, "", NULL); /* the failure is in the log; no row to keep it with */
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
	b->created_ms = b->last_active_ms = pd_now_ms();
	b->ttl_s = ttl;
	b->idle_timeout_s = idle;
	b->pause_on_timeout = pause_on_timeout;
	b->expires_ms = b->created_ms + ttl * 1000;
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
		r = box_store_new(b, &cause);
	if (r < 0) {
		pd_store_error(err, &cause);
		pd_log_event(d, NULL, "sandbox.removed", b->id, "\"reason\":\"store_failed\"");
		flush_pending(d, "", NULL);
		b->sb = paddock_sandbox_free(sb); /* SIGKILL, and wait: nothing of it is left */
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
		return -err->code;
	}
	paddock_sandbox_set_exit_callback(sb, box_exited, b);
	box_link(b);
	d->m.created++;
	flush_pending(d, b->id, b->tenant);
	*ret = b;
	return 0;
}

int pd_box_create(struct daemon *d, const char *tenant, json_t *body, struct box **ret,
		  paddock_error *err)
{
	return pd_box_create_keyed(d, tenant, body, NULL, ret, NULL, err);
}

void pd_box_release_clients(struct box *b)
{
	while (b->procs)
		pd_proc_free(b->procs);
	pd_files_release(b);
	pd_network_release(b);
	if (b->d->e2b)
		e2b_fs_release(b->d->e2b, b);
}

/* Unlinks a box and ends what clients hold of it: processes, file watches, event streams. */
static void box_unlink(struct box *b)
{
	for (struct box **pp = &b->d->boxes; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	pd_box_release_clients(b);
	while (b->watchers) {
		pd_stream_end(b->watchers);
		pd_watcher_free(b->watchers, &b->watchers);
	}
}

/*
 * The sandbox is gone: its row goes (it said "deleting" meanwhile, so a restart in between
 * finishes the teardown: finish_deleting()), and so does its reconnect socket, which
 * libpaddock removes only for a sandbox it still held (not one that had stopped before a
 * restart).
 */
static void box_forget(struct daemon *d, const char *id)
{
	paddock_error err = { 0 };
	char path[300];

	if (paddock_store_delete_sandbox(d->store, id, &err) < 0 && err.code != ENOENT)
		store_warn(d, &err); /* the row stays "deleting": the next start finishes it */
	snprintf(path, sizeof(path), "%s/s/%s", d->state_dir, id);
	(void)unlink(path); /* ENOENT: libpaddock removed it */
}

static void box_free(struct box *b)
{
	if (b->sb)
		b->sb = paddock_sandbox_free(b->sb); /* init is gone: no wait */
	if (b->removed_reason[0]) {
		box_forget(b->d, b->id);
		pd_box_forget_kept(b); /* its init is gone: no kept image is in use */
	}
	while (b->deleters) {
		struct watcher *w = b->deleters;

		if (w->req) {
			struct request r = { .d = b->d, .req = w->req };
			pd_watcher_detach(w);
			pd_reply_empty(&r, 204);
			w->req = NULL;
		}
		pd_watcher_free(w, &b->deleters);
	}
	json_decref(b->metadata);
	free(b->spec_json);
	free(b);
}

static void dying_unlink(struct box *b)
{
	for (struct box **pp = &b->d->dying; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
}

static void dead_cb(evutil_socket_t fd, short what, void *arg)
{
	struct box *b = arg;

	(void)fd;
	(void)what;
	dying_unlink(b);
	box_free(b);
}

/* init of a dying sandbox is gone: free it from the loop, not from its own callback */
static void box_dead(paddock_sandbox *sb, enum paddock_end_reason reason, void *userdata)
{
	struct box *b = userdata;
	struct timeval now = { 0 };

	(void)sb;
	(void)reason;
	if (event_base_once(b->d->base, -1, EV_TIMEOUT, dead_cb, b, &now) < 0) {
		dying_unlink(b);
		box_free(b); /* out of memory: the sandbox is dead anyway, so this is quick */
	}
}

static void deleter_gone(struct watcher *w)
{
	struct box *b = w->owner;

	pd_watcher_free(w, &b->deleters);
}

/* `tenant`: whose GET /v1/events hears of it (NULL: the operator's only) */
void pd_log_event(struct daemon *d, const char *tenant, const char *event, const char *sandbox,
		  const char *fmt, ...)
{
	char line[512], ts[40], fields[320] = "";
	va_list ap;
	int n;

	if (d->event_log_fd < 0 && !d->event_watchers)
		return;
	va_start(ap, fmt);
	vsnprintf(fields, sizeof(fields), fmt, ap);
	va_end(ap);
	pd_format_time(pd_now_ms(), ts, sizeof(ts));
	n = snprintf(line, sizeof(line),
		     "{\"ts\":\"%s\",\"level\":\"info\",\"event\":\"%s\",\"sandbox\":\"%s\"%s%s}\n",
		     ts, event, sandbox, fields[0] ? "," : "", fields);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	pd_event_log_write(d, line, (size_t)n);
	if (d->event_watchers) {
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);

		if (o)
			pd_events_broadcast(d, tenant, sandbox, o);
		json_decref(o);
	}
}

int pd_box_delete(struct box *b, const char *reason, struct request *deleter, bool force,
		  paddock_error *err)
{
	struct daemon *d = b->d;
	paddock_error cause = { 0 };

	/*
	 * First the record that it is going: a client told 204 must not find it again after a
	 * restart, and a restart in the middle of the teardown finishes it (finish_deleting()).
	 * When that cannot be written, a DELETE fails and changes nothing; TTL, idle and the
	 * like end the sandbox all the same (its row is then a sandbox that cannot be adopted).
	 */
	if (paddock_store_set_state(d->store, b->id, "deleting", &cause) < 0 &&
	    cause.code != ENOENT) {
		if (!force)
			return pd_store_error(err, &cause);
		store_warn(d, &cause);
	}
	box_unlink(b);
	if (strcmp(reason, "deleted") == 0)
		d->m.destroyed_by[0]++;
	else if (strcmp(reason, "ttl") == 0)
		d->m.destroyed_by[1]++;
	else if (strcmp(reason, "idle") == 0)
		d->m.destroyed_by[2]++;
	else
		d->m.destroyed_by[3]++;
	pd_log_event(d, b->tenant, "sandbox.removed", b->id, "\"reason\":\"%s\"", reason);
	snprintf(b->removed_reason, sizeof(b->removed_reason), "%s", reason);
	if (deleter) {
		struct watcher *w = pd_watcher_new(deleter, W_WAIT, b, &b->deleters);

		if (w)
			w->on_gone = deleter_gone;
		else
			pd_reply_empty(deleter, 204);
	}
	/* a sandbox still running is ended, and freed when the kernel has finished with it */
	if (b->sb && paddock_sandbox_running(b->sb) && !d->stopping) {
		paddock_sandbox_set_exit_callback(b->sb, box_dead, b);
		b->next = d->dying;
		d->dying = b;
		(void)paddock_sandbox_end(b->sb, NULL);
		return 0;
	}
	box_free(b);
	return 0;
}

void pd_box_destroy(struct box *b, const char *reason, struct request *deleter)
{
	(void)pd_box_delete(b, reason, deleter, true, NULL);
}

/* Waits for every sandbox being torn down (shutdown). */
static void finish_dying(struct daemon *d)
{
	while (d->dying) {
		struct box *b = d->dying;

		d->dying = b->next;
		box_free(b);
	}
}

/* ---- reaper ---------------------------------------------------------------------------- */

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	int64_t now = pd_now_ms();
	struct box *b, *next;

	(void)fd;
	(void)what;
	/* Idempotency-Keys are remembered for a day (docs/api.md) */
	if (++d->reaper_ticks % 60 == 1) {
		paddock_error err = { 0 };

		if (paddock_store_prune_idempotency(d->store, now - PD_IDEM_KEEP_S * 1000LL,
						    &err) < 0)
			store_warn(d, &err);
	}
	for (b = d->boxes; b; b = next) {
		next = b->next;
		/* a command still running is activity, however long it runs without a request */
		for (struct proc *p = b->procs; p; p = p->next)
			if (!p->exited)
				b->last_active_ms = now;
		if (now >= b->expires_ms) {
			if (!pd_box_pause_on_timeout(b))
				pd_box_destroy(b, "ttl", NULL);
		} else if (b->idle_timeout_s > 0 && !b->paused && !b->stopped &&
			   now - b->last_active_ms >= b->idle_timeout_s * 1000) {
			/* a paused sandbox is idle by intent: its idle timeout waits for the resume */
			pd_box_destroy(b, "idle", NULL);
		}
	}
}

/* ---- start: adopt what the store says is live ---------------------------------------- */

/* A stored row, copied out of the walk (adoption starts only once the walk has ended). */
struct row_copy {
	struct paddock_store_sandbox row;
	char *strings[7];
};

struct rows {
	struct row_copy *v;
	size_t n;
};

static int collect(const struct paddock_store_sandbox *row, void *userdata)
{
	struct rows *a = userdata;
	struct row_copy *v = reallocarray(a->v, a->n + 1, sizeof(*v)), *c;
	const char *src[7] = { row->id,		   row->tenant,	       row->state,
			       row->spec_json,	   row->metadata_json, row->handle_json,
			       row->on_timeout };

	if (!v)
		return -ENOMEM;
	a->v = v;
	c = &v[a->n++];
	memset(c, 0, sizeof(*c));
	c->row = *row;
	for (int i = 0; i < 7; i++)
		if (src[i] && !(c->strings[i] = strdup(src[i])))
			return -ENOMEM;
	c->row.id = c->strings[0];
	c->row.tenant = c->strings[1];
	c->row.state = c->strings[2];
	c->row.spec_json = c->strings[3];
	c->row.metadata_json = c->strings[4];
	c->row.handle_json = c->strings[5];
	c->row.on_timeout = c->strings[6];
	return 0;
}

static void rows_free(struct rows *a)
{
	for (size_t i = 0; i < a->n; i++)
		for (int k = 0; k < 7; k++)
			free(a->v[i].strings[k]);
	free(a->v);
}

static int adopt_exec_row(const struct paddock_store_exec *row, void *userdata)
{
	struct box *b = userdata;
	paddock_exec *ex;

	for (ex = b->sb ? paddock_sandbox_exec_next(b->sb, NULL) : NULL; ex;
	     ex = paddock_sandbox_exec_next(b->sb, ex))
		if (paddock_exec_id(ex) == row->exec_id)
			break;
	if (row->result_json && row->ended_ms > 0)
		return 0; /* ended and recorded: history, not a process to follow */
	/*
	 * A foreground command's client went with the old paddockd: killed, as when a client
	 * goes away (its result says so); a background one is followed on.
	 */
	pd_proc_adopt(b, ex, row, !row->background);
	return 0;
}

/* Connects to a reconnect socket: the pidfd of the init listening there, or -1. */
static int init_pidfd(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1;
	close(fd);
	return pidfd;
}

/*
 * A "deleting" row: a DELETE (or TTL) was answered and the sandbox killed, but paddockd died
 * before the kernel finished and the teardown was logged. Finished now: killed again if its
 * init still listens, and once it is gone the events it would have had are logged, the row
 * and the socket go.
 */
struct finishing {
	struct daemon *d;
	char id[32];
	int pidfd;
	struct event *ev;
	struct finishing *next;
};

static void finished(struct finishing *f)
{
	struct daemon *d = f->d;

	pd_log_event(d, NULL, "sandbox.exited", f->id, "\"reason\":\"killed\",\"after_restart\":true");
	pd_log_event(d, NULL, "sandbox.destroyed", f->id, "\"after_restart\":true");
	box_forget(d, f->id);
	pd_stop_forget_images(d, f->id, NULL);
	for (struct finishing **pp = &d->finishing; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	if (f->ev)
		event_free(f->ev);
	if (f->pidfd >= 0)
		close(f->pidfd);
	free(f);
}

static void finishing_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	finished(arg);
}

static int finish_deleting(struct daemon *d, const char *id)
{
	struct finishing *f = calloc(1, sizeof(*f));
	char path[300];

	if (!f)
		return -ENOMEM;
	f->d = d;
	snprintf(f->id, sizeof(f->id), "%s", id);
	snprintf(path, sizeof(path), "%s/s/%s", d->state_dir, id);
	f->next = d->finishing;
	d->finishing = f;
	f->pidfd = init_pidfd(path);
	if (f->pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, f->pidfd, SIGKILL, NULL, 0);
		/* the pidfd reads as ready once init, and so every process of it, is gone */
		f->ev = event_new(d->base, f->pidfd, EV_READ, finishing_cb, f);
		if (f->ev && event_add(f->ev, NULL) == 0)
			return 0;
	}
	finished(f);
	return 0;
}

static int adopt_row(struct daemon *d, const struct paddock_store_sandbox *row)
{
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };
	struct box *b;
	int r;

	if (strcmp(row->state, "deleting") == 0)
		return finish_deleting(d, row->id);
	b = box_new(d, row->id, row->tenant);
	if (!b)
		return -ENOMEM;
	b->spec_json = strdup(row->spec_json);
	b->metadata = json_loads(row->metadata_json, 0, NULL);
	if (!b->metadata)
		b->metadata = json_object();
	b->created_ms = row->created_ms;
	b->expires_ms = row->expires_ms;
	b->last_active_ms = row->last_active_ms;
	b->ttl_s = row->ttl_s;
	b->idle_timeout_s = row->idle_timeout_s;
	b->pause_on_timeout = row->on_timeout && strcmp(row->on_timeout, "pause") == 0;
	/* adoption thaws a paused sandbox: adopt_all() pauses it again (pd_box_repause()) */
	b->paused = strcmp(row->state, "paused") == 0;
	b->stopped = !b->paused && strcmp(row->state, "running") != 0;
	r = paddock_spec_new(&spec, &err);
	if (r >= 0 && b->spec_json)
		r = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), &err);
	if (r >= 0) {
		(void)paddock_spec_get_limit(spec, "timeout", &b->exec_timeout_s, NULL);
		(void)paddock_spec_get_limit(spec, "output", &b->output_limit, NULL);
	}
	if (r >= 0 && !b->stopped)
		r = paddock_sandbox_adopt(d->ctx, spec, row->handle_json, &b->sb, &err);
	if (b->stopped)
		pd_box_adopt_stopped(b, row->handle_json);
	paddock_spec_free(spec);
	box_link(b);
	if (r < 0) {
		char buf[600];
		/* SECURITY: what cannot be supervised is ended (adopt killed it) and forgotten */
		fprintf(stderr, "paddockd: sandbox %s cannot be adopted, removing it: %s\n",
			row->id, paddock_error_format(&err, buf, sizeof(buf)));
		pd_box_destroy(b, "adopt_failed", NULL);
		return 0;
	}
	if (b->sb)
		paddock_sandbox_set_exit_callback(b->sb, box_exited, b);
	return 0;
}

/* The commands init knows of b that the records do not (or no records at all). */
static void adopt_unknown_execs(struct box *b)
{
	for (paddock_exec *ex = paddock_sandbox_exec_next(b->sb, NULL); ex;
	     ex = paddock_sandbox_exec_next(b->sb, ex)) {
		bool known = false;

		for (struct proc *p = b->procs; p; p = p->next)
			known |= p->exec_id == paddock_exec_id(ex);
		/*
		 * Started, never recorded (paddockd died in between): nobody was told it runs,
		 * so it is ended. A recovered sandbox's commands are all unrecorded: followed on,
		 * as background commands, since nothing says which had a client waiting.
		 */
		if (!known)
			pd_proc_adopt(b, ex, NULL, !b->recovered);
	}
}

static int adopt_all(struct daemon *d, paddock_error *err)
{
	struct rows a = { 0 };
	int r;

	/* the whole walk first: a store that turns out damaged half-way has adopted nothing */
	r = paddock_store_list_sandboxes(d->store, collect, &a, err);
	for (size_t i = 0; r >= 0 && i < a.n; i++)
		r = adopt_row(d, &a.v[i].row);
	rows_free(&a);
	if (r < 0)
		return r;
	for (struct box *b = d->boxes; b; b = b->next) {
		paddock_error e = { 0 };

		if (!b->sb)
			continue;
		if (paddock_store_list_execs(d->store, b->id, adopt_exec_row, b, &e) < 0) {
			store_warn(d, &e);
			b->recovered = true; /* its commands' records are unreadable */
		}
		adopt_unknown_execs(b);
		/* last: a command ended above is ended by a signal, which a pause would hold */
		pd_box_repause(b);
	}
	return 0;
}

/* 1 to max printable ASCII characters, no space: a tenant (as the tokens file reads them) */
static bool printable_word(const char *k, size_t max)
{
	size_t n = strlen(k);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (k[i] < 0x21 || k[i] > 0x7e)
			return false;
	return true;
}

static bool valid_tenant(const char *t)
{
	return printable_word(t, PD_MAX_TENANT);
}

static bool valid_idem_key(const char *k)
{
	return printable_word(k, PD_MAX_IDEM_KEY);
}

bool pd_idempotency_key_valid(const char *key)
{
	return valid_idem_key(key);
}

/*
 * The box a recovered sandbox's record describes (box_record()). The record comes from
 * inside the sandbox's namespaces: every field is checked as a client's would be.
 */
static int box_from_record(struct daemon *d, paddock_sandbox *sb, struct box **ret,
			   paddock_error *err)
{
	const char *tenant = NULL, *state = NULL, *on_timeout = NULL;
	json_t *spec = NULL, *meta = NULL, *idem = NULL, *o;
	json_int_t created = 0, expires = 0, active = 0, ttl = 0, idle = 0;
	paddock_spec *ps = NULL;
	json_error_t jerr;
	struct box *b;
	int v = 0, r;

	o = json_loads(paddock_sandbox_record(sb), JSON_REJECT_DUPLICATES, &jerr);
	if (!o || json_unpack_ex(o, &jerr, JSON_STRICT, "{s:i,s:s,s:s,s?s,s:o,s:o,s:I,s:I,s:I,s:I,"
				 "s:I,s?o}", "v", &v, "tenant", &tenant, "state", &state,
				 "on_timeout", &on_timeout, "spec", &spec, "metadata", &meta,
				 "created_ms", &created, "expires_ms", &expires, "last_active_ms",
				 &active, "ttl_s", &ttl, "idle_timeout_s", &idle, "idempotency",
				 &idem) < 0 ||
	    v != 1 || !valid_tenant(tenant) || !json_is_object(spec) || ttl < 1 ||
	    (strcmp(state, "running") != 0 && strcmp(state, "paused") != 0) ||
	    (on_timeout && strcmp(on_timeout, "kill") != 0 && strcmp(on_timeout, "pause") != 0) ||
	    ttl > PD_MAX_TTL_S || idle < 0 || idle > PD_MAX_TTL_S || created <= 0 ||
	    expires <= 0 || check_metadata(meta, err) < 0) {
		json_decref(o);
		return dfail(err, EPROTO, "its record does not parse");
	}
	b = box_new(d, paddock_sandbox_id(sb), tenant);
	if (!b) {
		json_decref(o);
		return dfail(err, ENOMEM, "allocate sandbox");
	}
	b->spec_json = json_dumps(spec, JSON_COMPACT);
	b->metadata = json_incref(meta);
	b->created_ms = created;
	b->expires_ms = expires;
	b->last_active_ms = active;
	b->ttl_s = ttl;
	b->idle_timeout_s = idle;
	b->paused = strcmp(state, "paused") == 0;
	b->pause_on_timeout = on_timeout && strcmp(on_timeout, "pause") == 0;
	b->recovered = true;
	if (json_is_object(idem)) {
		const char *key = json_string_value(json_object_get(idem, "key"));
		const char *fp = json_string_value(json_object_get(idem, "fingerprint"));
		json_t *ms = json_object_get(idem, "created_ms");

		if (key && fp && valid_idem_key(key) && strlen(fp) == 16 && json_is_integer(ms)) {
			snprintf(b->idem_key, sizeof(b->idem_key), "%s", key);
			snprintf(b->idem_fp, sizeof(b->idem_fp), "%s", fp);
			b->idem_ms = json_integer_value(ms);
		}
	}
	json_decref(o);
	r = b->spec_json ? paddock_spec_new(&ps, err) : dfail(err, ENOMEM, "format spec");
	if (r >= 0)
		r = paddock_spec_load_json(ps, b->spec_json, strlen(b->spec_json), err);
	if (r >= 0) {
		(void)paddock_spec_get_limit(ps, "timeout", &b->exec_timeout_s, NULL);
		(void)paddock_spec_get_limit(ps, "output", &b->output_limit, NULL);
	}
	paddock_spec_free(ps);
	if (r < 0) {
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
		return r;
	}
	*ret = b;
	return 0;
}

/*
 * A sandbox the store does not know, taken over from what its init kept: for a store that
 * was damaged or lost. Its row (and key) are written again; its commands are followed on.
 */
static int recover_socket(struct daemon *d, const char *path, paddock_error *err)
{
	paddock_sandbox *sb = NULL;
	paddock_error serr = { 0 };
	struct box *b = NULL;
	int r;

	r = paddock_sandbox_recover(d->ctx, path, &sb, err);
	if (r < 0)
		return r; /* killed: nothing can supervise it */
	r = box_from_record(d, sb, &b, err);
	if (r < 0) {
		paddock_sandbox_free(sb);
		return r;
	}
	b->sb = sb;
	box_link(b);
	paddock_sandbox_set_exit_callback(sb, box_exited, b);
	if (box_store_new(b, &serr) < 0)
		store_warn(d, &serr); /* it runs and is served; the next change tries again */
	adopt_unknown_execs(b);
	pd_box_repause(b);
	return 0;
}

/* What a rebuilt store says of what it could not bring back (stderr and the event log). */
static void report_rebuilt(struct daemon *d, unsigned recovered, json_t *lost)
{
	char ts[40];
	json_t *o;
	char *s;

	fprintf(stderr, "paddockd: the store %s; %u live sandboxes recovered from their own "
		"records, %zu could not be (ended): commands' past reports, stored events and "
		"the keys of deleted sandboxes are not recovered\n",
		d->store_rebuilt ? "was damaged and was rebuilt" : "was missing",
		recovered, json_array_size(lost));
	pd_format_time(pd_now_ms(), ts, sizeof(ts));
	o = json_pack("{s:s,s:s,s:s,s:s?,s:I,s:O}", "ts", ts, "level", "warn", "event",
		      "store.rebuilt", "moved_to", d->store_moved[0] ? d->store_moved : NULL,
		      "recovered", (json_int_t)recovered, "lost", lost);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (s) {
		size_t n = strlen(s);

		s[n] = '\n'; /* json_dumps' NUL becomes the line's end */
		pd_event_log_write(d, s, n + 1);
	}
	free(s);
	json_decref(o);
}

/*
 * Reconnect sockets the store does not know. With a sound store: a sandbox whose creation a
 * crash interrupted (launched, not yet recorded, never acknowledged): if its init still
 * listens it is ended (its pidfd, from the kernel's view of the peer), and the socket file
 * goes in any case. With a store that was damaged or missing: each is taken over from the
 * record its init keeps (recover_socket()), and only those that cannot be are ended.
 */
static void sweep_orphans(struct daemon *d, const char *dir)
{
	bool recovering = d->store_rebuilt || d->store_fresh;
	json_t *lost = json_array();
	unsigned recovered = 0;
	DIR *dh = opendir(dir);
	struct dirent *de;

	while (dh && (de = readdir(dh))) {
		char path[300];
		paddock_error err = { 0 };
		bool known = false;
		int pidfd;

		if (de->d_name[0] == '.')
			continue;
		for (struct box *b = d->boxes; b && !known; b = b->next)
			known = strcmp(b->id, de->d_name) == 0;
		for (struct finishing *f = d->finishing; f && !known; f = f->next)
			known = strcmp(f->id, de->d_name) == 0;
		if (known || snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
				     (int)sizeof(path))
			continue;
		if (recovering) {
			char buf[600];

			if (recover_socket(d, path, &err) >= 0) {
				recovered++;
				continue;
			}
			/* nobody listens there: a socket left by a sandbox that ended, not a loss */
			if (err.code != ECONNREFUSED && err.code != ENOENT) {
				paddock_error_format(&err, buf, sizeof(buf));
				fprintf(stderr, "paddockd: sandbox %s cannot be recovered, ending it: "
					"%s\n", de->d_name, buf);
				if (json_array_size(lost) < 64)
					json_array_append_new(lost,
							      json_pack("{s:s,s:s}", "sandbox",
									de->d_name, "error", buf));
			}
		}
		pidfd = init_pidfd(path);
		if (pidfd >= 0) {
			if (!recovering)
				fprintf(stderr, "paddockd: ending sandbox %s, which no record names\n",
					de->d_name);
			(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			close(pidfd);
		}
		(void)unlink(path);
	}
	if (dh)
		closedir(dh);
	if (recovering && (d->store_rebuilt || recovered || json_array_size(lost)))
		report_rebuilt(d, recovered, lost);
	json_decref(lost);
}

int pd_lifecycle_start(struct daemon *d, paddock_error *err)
{
	char dir[300];
	struct timeval tv = { .tv_sec = REAPER_PERIOD_S };
	uint64_t max_exec = 0;
	int r;

	snprintf(dir, sizeof(dir), "%s/s", d->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dfail(err, errno, "mkdir '%s'", dir);
	/* a new command never takes the id of one the store remembers */
	r = paddock_store_max_exec_id(d->store, &max_exec, err);
	if (r < 0)
		return r;
	paddock_ctx_reserve_exec_ids(d->ctx, max_exec);
	r = adopt_all(d, err);
	if (r < 0)
		return r;
	sweep_orphans(d, dir);
	d->reaper_ev = event_new(d->base, -1, EV_PERSIST, reaper_cb, d);
	if (!d->reaper_ev || event_add(d->reaper_ev, &tv) < 0)
		return dfail(err, ENOMEM, "reaper timer");
	return pd_pool_start(d, err);
}

/* SIGTERM: sandboxes stay for the next paddockd, unless told to destroy them. */
void pd_lifecycle_stop(struct daemon *d)
{
	pd_pool_stop(d); /* pooled sandboxes have no tenant to keep them for: they end */
	while (d->boxes) {
		struct box *b = d->boxes;

		if (d->destroy_on_exit) {
			pd_box_destroy(b, "shutdown", NULL);
			continue;
		}
		pd_box_persist_or_warn(b);
		box_unlink(b);
		if (b->sb)
			paddock_sandbox_release(b->sb);
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
	}
	finish_dying(d);
	/* a teardown not finished yet: the next start finishes it (the row says "deleting") */
	while (d->finishing) {
		struct finishing *f = d->finishing;

		d->finishing = f->next;
		if (f->ev)
			event_free(f->ev);
		if (f->pidfd >= 0)
			close(f->pidfd);
		free(f);
	}
	if (d->reaper_ev)
		event_free(d->reaper_ev);
	d->reaper_ev = NULL;
	flush_pending(d, "", NULL);
}
