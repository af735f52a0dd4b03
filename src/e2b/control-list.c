/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /sandboxes and /v2/sandboxes (docs/e2b.md): the tenant's live sandboxes, filtered by
 * metadata, state and template, in pages ordered by start time (v2: `nextToken`).
 *
 * Trust: r->tenant is the API key's tenant (e2b.c); the query is untrusted and bounded.
 */
#include "e2b-control.h"

#include <ctype.h>
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#define LIST_LIMIT_MAX 100 /* E2B's page size, and its default */

/* ---- list -------------------------------------------------------------------------------- */

struct list_query {
	json_t *metadata; /* key -> value every listed sandbox has */
	bool running;	  /* "running" is among the states asked for */
	bool paused;	  /* "paused" is */
	const char *tmpl; /* template ID or alias, or NULL */
	int64_t after_ms; /* started at or after, 0: any */
	bool asc;	  /* oldest first (default: newest first) */
	long limit;
	bool has_token;
	int64_t tok_ms; /* nextToken: where the page starts (created_ms, id) */
	char tok_id[32];
};

/* "%XX" and, with plus, "+" as a space; in place. False when the result holds a NUL. */
static bool url_decode(char *s, bool plus)
{
	size_t n = 0;
	char *out = evhttp_uridecode(s, plus, &n);
	bool ok = out && n == strlen(out) && n <= strlen(s);

	if (ok)
		memcpy(s, out, strlen(out) + 1);
	free(out);
	return ok;
}

/*
 * The SDK's metadata filter: URLSearchParams of encodeURIComponent'd keys and values, so a
 * pair is decoded twice once split (the query layer decoded the parameter once already).
 */
static bool parse_metadata_filter(struct e2b_req *r, const char *s, json_t *ret)
{
	char *copy = strdup(s), *save = NULL;
	bool ok = copy != NULL;

	for (char *p = copy ? strtok_r(copy, "&", &save) : NULL; ok && p;
	     p = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(p, '=');

		if (!eq || eq == p || json_object_size(ret) >= META_MAX) {
			ok = false;
			break;
		}
		*eq = '\0';
		ok = url_decode(p, true) && url_decode(p, false) && url_decode(eq + 1, true) &&
		     url_decode(eq + 1, false) && *p;
		/* a pair that is not UTF-8 must not drop out of the filter: refused */
		if (ok)
			ok = json_object_set_new(ret, p, json_string(eq + 1)) == 0;
	}
	free(copy);
	if (!ok)
		e2b_reply_error(r, 400,
				"metadata: expected URL-encoded key=value pairs joined by '&' "
				"(at most %d)",
				META_MAX);
	return ok;
}

/* RFC 3339 ("2025-06-01T09:14:03.512Z", "...+02:00") to ms since the epoch */
static bool parse_time(const char *s, int64_t *ret)
{
	struct tm tm = { 0 };
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	int64_t ms = 0, off = 0;
	time_t t;

	if (!p)
		return false;
	if (*p == '.') {
		int digits = 0;

		for (p++; isdigit((unsigned char)*p); p++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*p - '0');
		if (digits == 0)
			return false;
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-' || *p == ' ') && isdigit((unsigned char)p[1]) &&
		   isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
		   isdigit((unsigned char)p[5])) {
		/* a "+" the query layer turned into a space is still an east offset */
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
		      ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
		p += 6;
	} else {
		return false;
	}
	if (*p)
		return false;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return false;
	*ret = ((int64_t)t - off) * 1000 + ms;
	return true;
}

static bool parse_states(struct e2b_req *r, struct evkeyvalq *q, struct list_query *lq)
{
	bool any = false;

	lq->running = lq->paused = true; /* no state asked: both */
	for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		char buf[64], *save = NULL;

		if (strcmp(kv->key, "state") != 0)
			continue;
		if (!any)
			lq->running = lq->paused = false;
		any = true;
		snprintf(buf, sizeof(buf), "%s", kv->value);
		for (char *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
			if (strcmp(s, "running") == 0) {
				lq->running = true;
			} else if (strcmp(s, "paused") == 0) {
				lq->paused = true;
			} else {
				e2b_reply_error(r, 400, "state: expected 'running' or 'paused'");
				return false;
			}
		}
	}
	return true;
}

static bool parse_list_query(struct e2b_req *r, struct evkeyvalq *q, bool v2, struct list_query *lq)
{
	const char *meta = evhttp_find_header(q, "metadata");
	const char *after = evhttp_find_header(q, "startedAfter");
	const char *order = evhttp_find_header(q, "order");
	const char *token = evhttp_find_header(q, "nextToken");

	lq->limit = v2 ? LIST_LIMIT_MAX : SVC_MAX_SANDBOXES;
	if (meta && *meta && !parse_metadata_filter(r, meta, lq->metadata))
		return false;
	if (!parse_states(r, q, lq))
		return false;
	if (!v2)
		return true;
	lq->tmpl = evhttp_find_header(q, "template");
	if (lq->tmpl && !*lq->tmpl)
		lq->tmpl = NULL;
	if (after && *after && !parse_time(after, &lq->after_ms)) {
		e2b_reply_error(r, 400,
				"startedAfter: expected an RFC 3339 time such as "
				"'2025-06-01T09:14:03.512Z'");
		return false;
	}
	if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
		e2b_reply_error(r, 400, "order: expected 'asc' or 'desc'");
		return false;
	}
	lq->asc = order && strcmp(order, "asc") == 0;
	if (!e2b_ctl_query_long(r, q, "limit", 1, LIST_LIMIT_MAX, &lq->limit))
		return false;
	if (token && *token) {
		char *end;
		long long ms;

		errno = 0;
		ms = strtoll(token, &end, 10);
		if (errno || end == token || *end != '-' || ms < 0 ||
		    strlen(end + 1) >= sizeof(lq->tok_id) || !end[1]) {
			e2b_reply_error(
				r, 400,
				"nextToken: expected the X-Next-Token of the previous page");
			return false;
		}
		lq->has_token = true;
		lq->tok_ms = ms;
		snprintf(lq->tok_id, sizeof(lq->tok_id), "%s", end + 1);
	}
	return true;
}

/* the order of a page: by start time, then id (stable while sandboxes come and go) */
static int key_cmp(int64_t ams, const char *aid, int64_t bms, const char *bid)
{
	if (ams != bms)
		return ams < bms ? -1 : 1;
	return strcmp(aid, bid);
}

static int cmp_asc(const void *a, const void *b)
{
	const struct box *x = *(struct box *const *)a, *y = *(struct box *const *)b;

	return key_cmp(x->created_ms, x->id, y->created_ms, y->id);
}

static int cmp_desc(const void *a, const void *b)
{
	return -cmp_asc(a, b);
}

static bool list_match(struct e2b_req *r, struct box *b, const struct list_query *lq)
{
	const char *k, *tmpl = e2b_ctl_template_of(b);
	json_t *v;

	if (strcmp(b->tenant, r->tenant) != 0 || !e2b_ctl_live(b) ||
	    !(b->paused ? lq->paused : lq->running))
		return false;
	if (lq->tmpl && (!tmpl || strcmp(lq->tmpl, tmpl) != 0))
		return false;
	if (lq->after_ms && b->created_ms < lq->after_ms)
		return false;
	if (lq->has_token) {
		int c = key_cmp(b->created_ms, b->id, lq->tok_ms, lq->tok_id);

		if (lq->asc ? c < 0 : c > 0)
			return false;
	}
	json_object_foreach(lq->metadata, k, v)
	{
		json_t *have = e2b_ctl_reserved(k) ? NULL : json_object_get(b->metadata, k);

		if (!json_equal(have, v))
			return false;
	}
	return true;
}

/* GET /v2/sandboxes (paged, X-Next-Token) and GET /sandboxes (v1: every match) */
void e2b_ctl_list(struct e2b_req *r, bool v2)
{
	struct list_query lq = { .metadata = json_object() };
	struct box **v = NULL;
	size_t n = 0, cap = 0;
	struct evkeyvalq q;
	json_t *a;

	if (!e2b_ctl_query(r, &q)) {
		json_decref(lq.metadata);
		return;
	}
	if (!lq.metadata || !parse_list_query(r, &q, v2, &lq))
		goto out;
	for (struct box *b = r->d->boxes; b; b = b->next) {
		if (!list_match(r, b, &lq))
			continue;
		if (n == cap) {
			struct box **nv = reallocarray(v, cap ? cap * 2 : 16, sizeof(*v));

			if (!nv) {
				e2b_reply_error(r, 500, "out of memory");
				goto out;
			}
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[n++] = b;
	}
	if (n)
		qsort(v, n, sizeof(*v), lq.asc ? cmp_asc : cmp_desc);
	a = json_array();
	for (size_t i = 0; i < n && i < (size_t)lq.limit; i++)
		json_array_append_new(a, e2b_ctl_listed_json(v[i]));
	if (n > (size_t)lq.limit) {
		char tok[64];

		snprintf(tok, sizeof(tok), "%lld-%s", (long long)v[lq.limit]->created_ms,
			 v[lq.limit]->id);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "X-Next-Token", tok);
	}
	e2b_reply_json(r, 200, a);
out:
	free(v);
	json_decref(lq.metadata);
	evhttp_clear_headers(&q);
}
