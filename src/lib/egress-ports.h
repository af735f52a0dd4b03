/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress listeners' fixed addresses inside a sandbox's network namespace. They are
 * sockets init creates in that netns and the supervisor serves from outside; a sandbox's
 * own services cannot bind these ports (documented in docs/network.md).
 */
#pragma once

#define PD_EGRESS_PROXY_PORT	   3128 /* HTTP proxy: CONNECT and absolute-form, 127.0.0.1 */
#define PD_EGRESS_SOCKS_PORT	   1080 /* SOCKS5, 127.0.0.1 */
#define PD_EGRESS_TRANSPARENT_PORT 3129 /* redirected TCP, 127.0.0.1 and [::1] */
#define PD_EGRESS_DNS_PORT	   53	/* the DNS filter, UDP, 127.0.0.1 */
#define PD_EGRESS_UDP_SINK_PORT	   3130 /* redirected non-DNS UDP, recorded and dropped */
