/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Name resolution for the egress proxy and DNS filter, done by the supervisor, never by the
 * sandbox. One resolver per context, with one cache: what the DNS filter answered a sandbox
 * is what the proxy dials for that name while the entry lives (pinning), so a name cannot
 * resolve to one address for the check and another for the connection (DNS rebinding).
 *
 * Two sources: the system's (libevent's evdns: /etc/resolv.conf and /etc/hosts of the
 * supervisor, read on first use), or, for tests, a hosts-style file that is then the only
 * source (a name it lacks does not exist).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "paddock/paddock.h"

struct event_base;

#define PD_RESOLVE_ADDRS_MAX 8

struct pd_addrs {
	size_t n;
	struct {
		int family; /* AF_INET or AF_INET6 */
		uint8_t addr[16];
	} a[PD_RESOLVE_ADDRS_MAX];
};

struct pd_resolver;
struct pd_resolve_req;

/* hosts_file: NULL for the system's resolver. */
int pd_resolver_new(struct event_base *base, const char *hosts_file, struct pd_resolver **ret,
		    paddock_error *err);
void pd_resolver_free(struct pd_resolver *r);

/*
 * `error` is 0 with at least one address, -ENOENT when the name does not exist or has no
 * address, -EAGAIN on a temporary failure. May be called before pd_resolve() returns (a
 * cached or file answer), in which case it returns NULL.
 */
typedef void (*pd_resolve_fn)(int error, const struct pd_addrs *addrs, void *userdata);
struct pd_resolve_req *pd_resolve(struct pd_resolver *r, const char *name, pd_resolve_fn fn,
				  void *userdata);
/* The callback will not be called. */
void pd_resolve_cancel(struct pd_resolve_req *req);
