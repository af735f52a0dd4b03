/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-sandbox half of transparent egress: inside the sandbox's own network namespace
 * (which has only lo), default routes via lo and an nftables table that send every
 * connection to a non-loopback address to the egress listeners of egress-ports.h, which
 * init created in that netns and the supervisor serves from outside.
 *
 * What the table "inet paddock" does with a packet the sandbox sends (output hook):
 *   - to 127.0.0.0/8 or ::1: untouched (the sandbox's own services, and the listeners);
 *   - TCP, IPv4 and IPv6: redirected to PD_EGRESS_TRANSPARENT_PORT on 127.0.0.1 / [::1];
 *     the supervisor reads the destination with SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST.
 *     DNS over TCP is TCP like any other;
 *   - UDP to port 53 over IPv4: redirected to the DNS filter, 127.0.0.1:PD_EGRESS_DNS_PORT;
 *   - UDP to port 53 over IPv6: to the UDP sink, [::1]:PD_EGRESS_UDP_SINK_PORT, recorded and
 *     dropped. The DNS filter listens on IPv4 only, NAT cannot change the family, and the
 *     sandbox's resolv.conf names 127.0.0.1, so a v6 query is a program going around the
 *     filter: it gets the same treatment as other UDP. Redirect it to [::1]:53 here if the
 *     DNS filter ever gets a v6 socket;
 *   - any other UDP: to the UDP sink, 127.0.0.1 / [::1]:PD_EGRESS_UDP_SINK_PORT;
 *   - everything else to a non-loopback address (ICMP and ICMPv6 including ping, SCTP,
 *     UDP-Lite, raw IP of any protocol): dropped; the sender gets EPERM.
 * The drop is a filter chain with policy drop that runs after NAT and accepts only
 * loopback destinations, so any packet NAT did not rewrite to loopback, whatever its
 * protocol, is dropped. Nothing could leave anyway: the netns has no other link.
 *
 * SECURITY: a command cannot change any of this: nftables and routes need CAP_NET_ADMIN
 * in the user namespace that owns the netns, and commands drop every capability with an
 * empty bounding set and no_new_privs. A nested user namespace gives capabilities only
 * over namespaces it owns, not over this netns.
 */
#pragma once

#include <stdbool.h>

#include "paddock/paddock.h"

/*
 * Called by init (PID 1 of the sandbox, uid 0 with all capabilities in the sandbox's user
 * and net namespaces) after lo is up. With transparent false it does nothing and returns 0:
 * the netns keeps no route but lo's, so programs reach only the proxy ports on loopback
 * and any other connect() fails with ENETUNREACH. With transparent true it adds
 * "default dev lo src 127.0.0.1" and "default dev lo src ::1" to the main table (EEXIST if
 * one is there already) and installs the table described above through libnftables, which
 * it loads with dlopen() for this call only (-ENOENT naming libnftables1 if it is missing).
 *
 * SECURITY: call it before the sandbox's root is built: dlopen() resolves libnftables.so.1
 * and its dependencies in the caller's mount namespace, which must still show the host's
 * files, not the sandbox's (a library from the sandbox's tree would run with init's
 * capabilities).
 *
 * On failure the netns may be left half set up (a route without the table); the caller
 * abandons the sandbox. Without the table, traffic to other addresses goes to lo and is
 * dropped there, so a half setup leaks nothing.
 */
int pd_netns_egress_setup(bool transparent, paddock_error *err);
