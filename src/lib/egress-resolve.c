/* SPDX-License-Identifier: Apache-2.0 */
/* Name resolution for egress, with a pinning cache (egress-resolve.h). */
#include "egress-resolve.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "egress-policy.h"
#include "error.h"
#include "util/cleanup.h"

#define CACHE_MAX	     4096
#define CACHE_TTL_S	     60 /* a pinned answer lives this long */
#define CACHE_NEGATIVE_TTL_S 5	/* and "no such name" this long */
#define HOSTS_MAX_BYTES	     (4u << 20)

struct entry {
	char name[PD_EGRESS_NAME_MAX + 1];
	int error;
	struct pd_addrs addrs;
	time_t expires;
	struct entry *next;
};

struct pd_resolve_req {
	struct pd_resolver *r;
	char name[PD_EGRESS_NAME_MAX + 1];
	pd_resolve_fn fn;
	void *userdata;
	struct evdns_getaddrinfo_request *q;
	bool done, cancelled, in_call;
	struct pd_resolve_req *next, *prev;
};

struct pd_resolver {
	struct event_base *base;
	struct evdns_base *dns; /* NULL with a hosts file, or until first used */
	bool file_only;
	struct entry *cache; /* a list: a sandbox names few hosts; CACHE_MAX bounds it */
	size_t n_cache;
	struct entry *file; /* the hosts file's names: never expire */
	struct pd_resolve_req *pending;
};

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void addrs_add(struct pd_addrs *a, int family, const void *addr)
{
	size_t len = family == AF_INET ? 4 : 16;

	if (a->n >= PD_RESOLVE_ADDRS_MAX)
		return;
	for (size_t i = 0; i < a->n; i++)
		if (a->a[i].family == family && memcmp(a->a[i].addr, addr, len) == 0)
			return;
	a->a[a->n].family = family;
	memset(a->a[a->n].addr, 0, 16);
	memcpy(a->a[a->n].addr, addr, len);
	a->n++;
}

static struct entry *find(struct entry *list, const char *name)
{
	for (struct entry *e = list; e; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/*
 * A hosts-style file: "ADDRESS NAME [NAME...]" per line, '#' comments. Written by the
 * operator (tests), but still read with bounds: a line that does not parse is an error
 * naming its number, so a typo cannot silently make a test name resolve nowhere.
 */
static int load_hosts(struct pd_resolver *r, const char *path, paddock_error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[1024];
	unsigned lineno = 0;
	size_t total = 0;

	if (!f)
		return pd_fail(err, errno, "open the resolver's hosts file %s", path);
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok, *hash = strchr(line, '#');
		uint8_t addr[16];
		int family;

		lineno++;
		total += strlen(line);
		if (total > HOSTS_MAX_BYTES)
			return pd_fail(err, EFBIG, "hosts file %s: larger than %u bytes", path,
				       HOSTS_MAX_BYTES);
		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t\r\n", &save);
		if (!tok)
			continue;
		if (inet_pton(AF_INET, tok, addr) == 1)
			family = AF_INET;
		else if (inet_pton(AF_INET6, tok, addr) == 1)
			family = AF_INET6;
		else
			return pd_fail(err, EINVAL,
				       "hosts file %s:%u: expected an address, got '%s'", path,
				       lineno, PD_ESC(tok));
		while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
			char norm[PD_EGRESS_NAME_MAX + 1];
			struct entry *e;

			if (pd_egress_name_normalise(tok, norm, sizeof(norm)) < 0)
				return pd_fail(err, EINVAL, "hosts file %s:%u: bad name '%s'", path,
					       lineno, PD_ESC(tok));
			e = find(r->file, norm);
			if (!e) {
				e = calloc(1, sizeof(*e));
				if (!e)
					return pd_fail(err, ENOMEM, "out of memory");
				snprintf(e->name, sizeof(e->name), "%s", norm);
				e->next = r->file;
				r->file = e;
			}
			addrs_add(&e->addrs, family, addr);
		}
	}
	return 0;
}

int pd_resolver_new(struct event_base *base, const char *hosts_file, struct pd_resolver **ret,
		    paddock_error *err)
{
	struct pd_resolver *r = calloc(1, sizeof(*r));
	int k;

	if (!r)
		return pd_fail(err, ENOMEM, "out of memory");
	r->base = base;
	if (hosts_file) {
		/*
		 * Read by hand, not with evdns_base_load_hosts(): evdns without name servers
		 * never answers a name its hosts lack (the callback is simply not called).
		 */
		r->file_only = true;
		k = load_hosts(r, hosts_file, err);
		if (k < 0) {
			pd_resolver_free(r);
			return k;
		}
	}
	*ret = r;
	return 0;
}

static void entries_free(struct entry *e)
{
	while (e) {
		struct entry *n = e->next;

		free(e);
		e = n;
	}
}

void pd_resolver_free(struct pd_resolver *r)
{
	if (!r)
		return;
	/* pending requests belong to connections, which are gone before the context */
	while (r->pending)
		pd_resolve_cancel(r->pending);
	if (r->dns)
		evdns_base_free(r->dns, 0);
	entries_free(r->cache);
	entries_free(r->file);
	free(r);
}

static void cache_put(struct pd_resolver *r, const char *name, int error,
		      const struct pd_addrs *addrs)
{
	struct entry *e = find(r->cache, name), **pp;
	time_t now = now_s();

	if (!e) {
		/* make room: drop expired entries, then the oldest (the list's tail) */
		for (pp = &r->cache; *pp;) {
			if ((*pp)->expires <= now) {
				struct entry *x = *pp;

				*pp = x->next;
				free(x);
				r->n_cache--;
			} else {
				pp = &(*pp)->next;
			}
		}
		if (r->n_cache >= CACHE_MAX) {
			for (pp = &r->cache; (*pp)->next; pp = &(*pp)->next)
				;
			free(*pp);
			*pp = NULL;
			r->n_cache--;
		}
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->next = r->cache;
		r->cache = e;
		r->n_cache++;
	}
	e->error = error;
	e->addrs = *addrs;
	e->expires = now + (error ? CACHE_NEGATIVE_TTL_S : CACHE_TTL_S);
}

static void req_unlink(struct pd_resolve_req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (q->r->pending == q)
		q->r->pending = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->next = q->prev = NULL;
}

static void on_addrinfo(int result, struct evutil_addrinfo *res, void *arg)
{
	struct pd_resolve_req *q = arg;
	struct pd_addrs addrs = { 0 };
	int error;

	q->q = NULL;
	for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(struct sockaddr_in))
			addrs_add(&addrs, AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr);
		else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(struct sockaddr_in6))
			addrs_add(&addrs, AF_INET6,
				  &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
	}
	if (res)
		evutil_freeaddrinfo(res);
	if (result == EVUTIL_EAI_CANCEL || q->cancelled) {
		/* cancelled by pd_resolve_cancel(), which left freeing q to us */
		req_unlink(q);
		free(q);
		return;
	}
	if (result == 0 && addrs.n > 0)
		error = 0;
	else if (result == EVUTIL_EAI_NONAME || result == EVUTIL_EAI_NODATA ||
		 (result == 0 && addrs.n == 0))
		error = -ENOENT;
	else
		error = -EAGAIN;
	if (error != -EAGAIN)
		cache_put(q->r, q->name, error, &addrs);
	req_unlink(q);
	if (!q->cancelled)
		q->fn(error, &addrs, q->userdata);
	if (q->in_call) {
		q->done = true; /* answered inside evdns_getaddrinfo(): pd_resolve() frees q */
		return;
	}
	free(q);
}

struct pd_resolve_req *pd_resolve(struct pd_resolver *r, const char *name, pd_resolve_fn fn,
				  void *userdata)
{
	static const struct pd_addrs none;
	char norm[PD_EGRESS_NAME_MAX + 1];
	struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct evdns_getaddrinfo_request *h;
	struct pd_resolve_req *q;
	struct entry *e;

	if (pd_egress_name_normalise(name, norm, sizeof(norm)) < 0) {
		fn(-ENOENT, &none, userdata);
		return NULL;
	}
	if (r->file_only) {
		e = find(r->file, norm);
		fn(e ? 0 : -ENOENT, e ? &e->addrs : &none, userdata);
		return NULL;
	}
	e = find(r->cache, norm);
	if (e && e->expires > now_s()) {
		struct pd_addrs copy = e->addrs;

		fn(e->error, &copy, userdata);
		return NULL;
	}
	if (!r->dns) {
		/* first use: read /etc/resolv.conf now, so a sandbox without egress never does */
		r->dns = evdns_base_new(r->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (!r->dns) {
			fn(-EAGAIN, &none, userdata);
			return NULL;
		}
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		fn(-EAGAIN, &none, userdata);
		return NULL;
	}
	q->r = r;
	q->fn = fn;
	q->userdata = userdata;
	snprintf(q->name, sizeof(q->name), "%s", norm);
	q->next = r->pending;
	if (r->pending)
		r->pending->prev = q;
	r->pending = q;
	q->in_call = true;
	h = evdns_getaddrinfo(r->dns, norm, NULL, &hints, on_addrinfo, q);
	q->in_call = false;
	if (q->done || !h) {
		/* answered inside the call (a cached or numeric answer): nothing to cancel */
		if (!q->done) {
			req_unlink(q);
			fn(-EAGAIN, &none, userdata);
		}
		free(q);
		return NULL;
	}
	q->q = h;
	return q;
}

void pd_resolve_cancel(struct pd_resolve_req *q)
{
	if (!q)
		return;
	q->cancelled = true;
	if (q->q) {
		/* evdns calls on_addrinfo with EVUTIL_EAI_CANCEL, which frees q */
		evdns_getaddrinfo_cancel(q->q);
		return;
	}
	req_unlink(q);
	free(q);
}
