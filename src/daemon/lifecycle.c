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
#include "e2b.h"

#define REAPER_PERIOD_S 1
#define EVENTS_KEPT 2000

static const char *const create_fields[] = {
	"ttl_s", "idle_timeout_s", "metadata", NULL,
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

void pd_box_persist(struct box *b)
{
	paddock_error err = { 0 };
	char *handle = NULL, *meta = json_dumps(b->metadata, JSON_COMPACT);
	struct paddock_store_sandbox row = {
		.id = b->id,
		.tenant = b->tenant,
		.state = b->stopped ? "stopped" : "running",
		.spec_json = b->spec_json,
		.metadata_json = meta ? meta : "{}",
		.created_ms = b->created_ms,
		.expires_ms = b->expires_ms,
		.last_active_ms = b->last_active_ms,
		.ttl_s = b->ttl_s,
		.idle_timeout_s = b->idle_timeout_s,
	};

	if (b->sb && paddock_sandbox_handle(b->sb, &handle, NULL) >= 0)
		row.handle_json = handle;
	else
		row.handle_json = "{}";
	if (paddock_store_put_sandbox(b->d->store, &row, &err) < 0)
		store_warn(b->d, &err);
	free(handle);
	free(meta);
}

json_t *pd_box_json(struct box *b)
{
	struct paddock_usage u = { 0 };
	json_t *spec = json_loads(b->spec_json, 0, NULL);
	unsigned running = 0;

	for (struct proc *p = b->procs; p; p = p->next)
		running += !p->exited;
	if (b->sb)
		(void)paddock_sandbox_usage(b->sb, &u, NULL);
	return json_pack("{s:s,s:s,s:o,s:o,s:I,s:I,s:o,s:O,s:o,s:{s:I,s:I,s:f,s:I,s:i,s:i}}",
			 "id", b->id, "state", b->stopped ? "stopped" : "running", "created_at",
			 pd_time_json(b->created_ms), "expires_at", pd_time_json(b->expires_ms),
			 "ttl_s", (json_int_t)b->ttl_s, "idle_timeout_s",
			 (json_int_t)b->idle_timeout_s, "last_active_at",
			 pd_time_json(b->last_active_ms), "metadata", b->metadata, "spec",
			 spec ? spec : json_object(), "usage", "memory_bytes",
			 (json_int_t)u.memory_bytes, "memory_peak_bytes",
			 (json_int_t)u.memory_peak_bytes, "cpu_s", u.cpu_s, "pids",
			 (json_int_t)u.pids, "execs", (int)u.execs, "processes", (int)running);
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
			(void)!write(d->event_log_fd, line, len + 1);
			free(line);
		}
	}
	if (sid && ev->level != PADDOCK_LEVEL_DEBUG) {
		struct box *b = NULL;

		for (b = d->boxes; b; b = b->next)
			if (strcmp(b->id, sid) == 0)
				break;
		/* a sandbox being created is not listed yet: its events still go to the store */
		/* a sandbox being created has no row yet: keep its first events until it has */
		if (!b && d->n_pending < sizeof(d->pending) / sizeof(d->pending[0])) {
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
			pd_stream_line(w, json_incref(o));
	}
	json_decref(o);
}

/* Stores the events kept for `id` (now that it has a row) and drops every kept one. */
static void flush_pending(struct daemon *d, const char *id)
{
	for (size_t i = 0; i < d->n_pending; i++) {
		struct pending_event *pe = &d->pending[i];

		if (strcmp(pe->sandbox, id) == 0)
			(void)paddock_store_add_event(d->store, id, pe->ts_ms, pe->name, pe->json,
						      NULL, NULL);
		free(pe->json);
	}
	d->n_pending = 0;
}

/* ---- create / destroy ------------------------------------------------------------------ */

static int get_seconds(json_t *body, const char *key, int64_t def, int64_t max, int64_t *ret,
		       paddock_error *err)
{
	json_t *v = json_object_get(body, key);

	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
		int r = dfail(err, EINVAL, "expected whole seconds from 0 to %lld", (long long)max);
		snprintf(err->field, sizeof(err->field), "%s", key);
		return r;
	}
	*ret = json_integer_value(v);
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
	pd_box_persist(b);
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
	char *real;
	int r;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return 0; /* the spec parser names the type error */
	real = realpath(json_string_value(v), NULL);
	for (size_t i = 0; real && i < d->n_host_paths; i++) {
		size_t n = strlen(d->host_paths[i]);

		if (strncmp(real, d->host_paths[i], n) == 0 && (real[n] == '\0' || real[n] == '/' ||
								 strcmp(d->host_paths[i], "/") == 0)) {
			json_object_set_new(holder, key, json_string(real));
			free(real);
			return 0;
		}
	}
	free(real);
	r = dfail(err, EACCES, "host path '%.200s' is not among the directories this paddockd "
		  "lets API clients use (--allow-host-path)", json_string_value(v));
	snprintf(err->field, sizeof(err->field), "%s", field);
	return r;
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
	for (const char *const *f = create_fields; *f; f++)
		json_object_del(specj, *f);
	r = get_seconds(body, "ttl_s", PD_DEFAULT_TTL_S, PD_MAX_TTL_S, ret_ttl, err);
	if (r >= 0)
		r = get_seconds(body, "idle_timeout_s", 0, PD_MAX_TTL_S, ret_idle, err);
	if (r >= 0 && meta)
		r = check_metadata(meta, err);
	if (r >= 0)
		r = check_host_paths(d, tenant, specj, err);
	if (r >= 0)
		r = check_secret_sources(tenant, specj, err);
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

int pd_box_create(struct daemon *d, const char *tenant, json_t *body, struct box **ret,
		  paddock_error *err)
{
	paddock_spec *spec = NULL;
	json_t *meta = json_object_get(body, "metadata");
	char path[300];
	struct paddock_sandbox_opts opts = { .orphan_timeout_s = d->orphan_timeout_s };
	paddock_sandbox *sb = NULL;
	int64_t ttl = 0, idle = 0;
	struct box *b;
	int r;

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
		flush_pending(d, ""); /* the failure is in the log; no row to keep it with */
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
	b->expires_ms = b->created_ms + ttl * 1000;
	paddock_sandbox_set_exit_callback(sb, box_exited, b);
	box_link(b);
	d->m.created++;
	pd_box_persist(b);
	flush_pending(d, b->id);
	*ret = b;
	return 0;
}

/* Unlinks a box and ends what clients hold of it: processes, file watches, event streams. */
static void box_unlink(struct box *b)
{
	for (struct box **pp = &b->d->boxes; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	while (b->procs)
		pd_proc_free(b->procs);
	pd_files_release(b);
	pd_network_release(b);
	if (b->d->e2b)
		e2b_fs_release(b->d->e2b, b);
	while (b->watchers) {
		pd_stream_end(b->watchers);
		pd_watcher_free(b->watchers, &b->watchers);
	}
}

static void box_free(struct box *b)
{
	if (b->sb)
		b->sb = paddock_sandbox_free(b->sb); /* init is gone: no wait */
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

void pd_box_destroy(struct box *b, const char *reason, struct request *deleter)
{
	struct daemon *d = b->d;
	paddock_error err = { 0 };

	box_unlink(b);
	if (paddock_store_delete_sandbox(d->store, b->id, &err) < 0)
		store_warn(d, &err);
	if (strcmp(reason, "deleted") == 0)
		d->m.destroyed_by[0]++;
	else if (strcmp(reason, "ttl") == 0)
		d->m.destroyed_by[1]++;
	else if (strcmp(reason, "idle") == 0)
		d->m.destroyed_by[2]++;
	else
		d->m.destroyed_by[3]++;
	{
		char line[256], ts[40];
		pd_format_time(pd_now_ms(), ts, sizeof(ts));
		snprintf(line, sizeof(line),
			 "{\"ts\":\"%s\",\"level\":\"info\",\"event\":\"sandbox.removed\","
			 "\"sandbox\":\"%s\",\"reason\":\"%s\"}\n",
			 ts, b->id, reason);
		if (d->event_log_fd >= 0)
			(void)!write(d->event_log_fd, line, strlen(line));
	}
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
		return;
	}
	box_free(b);
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
	for (b = d->boxes; b; b = next) {
		next = b->next;
		/* a command still running is activity, however long it runs without a request */
		for (struct proc *p = b->procs; p; p = p->next)
			if (!p->exited)
				b->last_active_ms = now;
		if (now >= b->expires_ms)
			pd_box_destroy(b, "ttl", NULL);
		else if (b->idle_timeout_s > 0 && now - b->last_active_ms >= b->idle_timeout_s * 1000)
			pd_box_destroy(b, "idle", NULL);
	}
}

/* ---- start: adopt what the store says is live ---------------------------------------- */

struct adopt_ctx {
	struct daemon *d;
	char **ids;
	size_t n;
};

static int collect(const struct paddock_store_sandbox *row, void *userdata)
{
	struct adopt_ctx *a = userdata;
	char **ids = realloc(a->ids, (a->n + 1) * sizeof(char *));

	if (!ids)
		return -ENOMEM;
	a->ids = ids;
	a->ids[a->n++] = strdup(row->id);
	return 0;
}

struct exec_rows {
	struct box *b;
};

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
	pd_proc_adopt(b, ex, row);
	return 0;
}

static int adopt_row(const struct paddock_store_sandbox *row, void *userdata)
{
	struct adopt_ctx *a = userdata;
	struct daemon *d = a->d;
	paddock_spec *spec = NULL;
	paddock_error err = { 0 };
	struct box *b;
	int r;

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
	b->stopped = strcmp(row->state, "running") != 0;
	r = paddock_spec_new(&spec, &err);
	if (r >= 0 && b->spec_json)
		r = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), &err);
	if (r >= 0) {
		(void)paddock_spec_get_limit(spec, "timeout", &b->exec_timeout_s, NULL);
		(void)paddock_spec_get_limit(spec, "output", &b->output_limit, NULL);
	}
	if (r >= 0 && !b->stopped)
		r = paddock_sandbox_adopt(d->ctx, spec, row->handle_json, &b->sb, &err);
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

static int adopt_all(struct daemon *d, paddock_error *err)
{
	struct adopt_ctx a = { .d = d };
	int r;

	r = paddock_store_list_sandboxes(d->store, collect, &a, err);
	for (size_t i = 0; i < a.n; i++)
		free(a.ids[i]);
	free(a.ids);
	if (r < 0)
		return r;
	r = paddock_store_list_sandboxes(d->store, adopt_row, &a, err);
	if (r < 0)
		return r;
	for (struct box *b = d->boxes; b; b = b->next) {
		if (!b->sb)
			continue;
		r = paddock_store_list_execs(d->store, b->id, adopt_exec_row, b, err);
		if (r < 0)
			return r;
		/* commands init knows but the store does not (paddockd died in between) */
		for (paddock_exec *ex = paddock_sandbox_exec_next(b->sb, NULL); ex;
		     ex = paddock_sandbox_exec_next(b->sb, ex)) {
			bool known = false;

			for (struct proc *p = b->procs; p; p = p->next)
				known |= p->exec_id == paddock_exec_id(ex);
			if (!known)
				pd_proc_adopt(b, ex, NULL);
		}
	}
	return 0;
}

/*
 * Reconnect sockets the store does not know: a sandbox whose creation a crash interrupted
 * (launched, not yet recorded). If its init still listens it is ended (its pidfd, from the
 * kernel's view of the peer), and the socket file goes in any case.
 */
static void sweep_orphans(struct daemon *d, const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;

	if (!dh)
		return;
	while ((de = readdir(dh))) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		bool known = false;
		int fd, pidfd = -1;
		socklen_t len = sizeof(pidfd);

		if (de->d_name[0] == '.')
			continue;
		for (struct box *b = d->boxes; b && !known; b = b->next)
			known = strcmp(b->id, de->d_name) == 0;
		if (known || snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, de->d_name) >=
				     (int)sizeof(sa.sun_path))
			continue;
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
			fprintf(stderr, "paddockd: ending sandbox %s, which no record names\n",
				de->d_name);
			(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			close(pidfd);
		}
		if (fd >= 0)
			close(fd);
		(void)unlink(sa.sun_path);
	}
	closedir(dh);
}

int pd_lifecycle_start(struct daemon *d, paddock_error *err)
{
	char dir[300];
	struct timeval tv = { .tv_sec = REAPER_PERIOD_S };
	int r;

	snprintf(dir, sizeof(dir), "%s/s", d->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dfail(err, errno, "mkdir '%s'", dir);
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
		pd_box_persist(b);
		box_unlink(b);
		if (b->sb)
			paddock_sandbox_release(b->sb);
		json_decref(b->metadata);
		free(b->spec_json);
		free(b);
	}
	finish_dying(d);
	if (d->reaper_ev)
		event_free(d->reaper_ev);
	d->reaper_ev = NULL;
	flush_pending(d, "");
}
