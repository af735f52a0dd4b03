/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reconnect sockets the store does not know, at start. With a sound store they are sandboxes
 * whose creation a crash interrupted: ended. With a store that was damaged or missing, each
 * is taken over from the record its init keeps (paddock_sandbox_recover()): that record
 * comes from inside the sandbox's namespaces and is checked field by field, as a client's
 * request would be.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "lifecycle.h"

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
	return printable_word(t, SVC_MAX_TENANT);
}

static bool valid_idem_key(const char *k)
{
	return printable_word(k, SVC_MAX_IDEM_KEY);
}

bool svc_idempotency_key_valid(const char *key)
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
	if (!o ||
	    json_unpack_ex(o, &jerr, JSON_STRICT,
			   "{s:i,s:s,s:s,s?s,s:o,s:o,s:I,s:I,s:I,s:I,"
			   "s:I,s?o}",
			   "v", &v, "tenant", &tenant, "state", &state, "on_timeout", &on_timeout,
			   "spec", &spec, "metadata", &meta, "created_ms", &created, "expires_ms",
			   &expires, "last_active_ms", &active, "ttl_s", &ttl, "idle_timeout_s",
			   &idle, "idempotency", &idem) < 0 ||
	    v != 1 || !valid_tenant(tenant) || !json_is_object(spec) || ttl < 1 ||
	    (strcmp(state, "running") != 0 && strcmp(state, "paused") != 0) ||
	    (on_timeout && strcmp(on_timeout, "kill") != 0 && strcmp(on_timeout, "pause") != 0) ||
	    ttl > E2B_MAX_TTL_S || idle < 0 || idle > E2B_MAX_TTL_S || created <= 0 ||
	    expires <= 0 || svc_check_metadata(meta, err) < 0) {
		json_decref(o);
		return paddock_fail(err, EPROTO, "its record does not parse");
	}
	b = svc_box_new(d, paddock_sandbox_id(sb), tenant);
	if (!b) {
		json_decref(o);
		return paddock_fail(err, ENOMEM, "allocate sandbox");
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
	r = b->spec_json ? paddock_spec_new(&ps, err) : paddock_fail(err, ENOMEM, "format spec");
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
	svc_box_link(b);
	svc_box_watch_exit(b);
	if (svc_box_store_new(b, &serr) < 0)
		svc_store_warn(d, &serr); /* it runs and is served; the next change tries again */
	svc_box_adopt_unknown_execs(b);
	svc_box_repause(b);
	return 0;
}

/* What a rebuilt store says of what it could not bring back (stderr and the event log). */
static void report_rebuilt(struct daemon *d, unsigned recovered, json_t *lost)
{
	char ts[40];
	json_t *o;
	char *s;

	fprintf(stderr,
		"paddockd: the store %s; %u live sandboxes recovered from their own "
		"records, %zu could not be (ended): commands' past reports, stored events and "
		"the keys of deleted sandboxes are not recovered\n",
		d->store_rebuilt ? "was damaged and was rebuilt" : "was missing", recovered,
		json_array_size(lost));
	svc_format_time(svc_now_ms(), ts, sizeof(ts));
	o = json_pack("{s:s,s:s,s:s,s:s?,s:I,s:O}", "ts", ts, "level", "warn", "event",
		      "store.rebuilt", "moved_to", d->store_moved[0] ? d->store_moved : NULL,
		      "recovered", (json_int_t)recovered, "lost", lost);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (s) {
		size_t n = strlen(s);

		s[n] = '\n'; /* json_dumps' NUL becomes the line's end */
		svc_event_log_write(d, s, n + 1);
	}
	free(s);
	json_decref(o);
}

/* A sweep of the reconnect sockets at start (paddock_sweep_orphans()). */
struct sweep {
	struct daemon *d;
	bool recovering; /* the store was damaged or missing */
	json_t *lost;
	unsigned recovered;
};

/*
 * A socket the store does not know. With a sound store: a sandbox whose creation a crash
 * interrupted (launched, not yet recorded, never acknowledged): ended. With a store that was
 * damaged or missing: taken over from the record its init keeps (recover_socket()), and
 * ended only when it cannot be.
 */
static bool sweep_keep(const char *id, const char *path, void *userdata)
{
	struct sweep *s = userdata;
	struct daemon *d = s->d;
	paddock_error err = { 0 };
	char buf[600];

	for (struct box *b = d->boxes; b; b = b->next)
		if (strcmp(b->id, id) == 0)
			return true;
	if (svc_lifecycle_finishing(d, id))
		return true;
	if (!s->recovering)
		return false;
	if (recover_socket(d, path, &err) >= 0) {
		s->recovered++;
		return true;
	}
	/* nobody listens there: a socket left by a sandbox that ended, not a loss */
	if (err.code != ECONNREFUSED && err.code != ENOENT) {
		paddock_error_format(&err, buf, sizeof(buf));
		fprintf(stderr, "paddockd: sandbox %s cannot be recovered, ending it: %s\n", id,
			buf);
		if (json_array_size(s->lost) < 64)
			json_array_append_new(s->lost,
					      json_pack("{s:s,s:s}", "sandbox", id, "error", buf));
	}
	return false;
}

static void sweep_ended(const char *id, void *userdata)
{
	struct sweep *s = userdata;

	if (!s->recovering)
		fprintf(stderr, "paddockd: ending sandbox %s, which no record names\n", id);
}

void svc_lifecycle_sweep_orphans(struct daemon *d, const char *dir)
{
	struct sweep s = { .d = d,
			   .recovering = d->store_rebuilt || d->store_fresh,
			   .lost = json_array() };
	paddock_error err = { 0 };
	char buf[600];

	/* returns once the inits it ended are gone: nothing a restart did not adopt lives on */
	if (paddock_sweep_orphans(dir, sweep_keep, sweep_ended, &s, &err) < 0)
		fprintf(stderr, "paddockd: reconnect sockets, ignoring: %s\n",
			paddock_error_format(&err, buf, sizeof(buf)));
	if (s.recovering && (d->store_rebuilt || s.recovered || json_array_size(s.lost)))
		report_rebuilt(d, s.recovered, s.lost);
	json_decref(s.lost);
}
