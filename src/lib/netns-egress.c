/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transparent egress inside a sandbox's netns: two routes over rtnetlink, one nftables
 * table through libnftables. Runs in init, before the root is built and before init
 * confines itself; the only input is our own constant text, nothing the sandbox wrote.
 * See netns-egress.h for what the rules do.
 */
#include "netns-egress.h"

#include <arpa/inet.h>
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nftables/libnftables.h>

#include "egress-ports.h"
#include "error.h"
#include "util/cleanup.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/*
 * SECURITY: the filter chain is the allowlist: it runs at priority 0, after NAT at -100
 * (dstnat) has rewritten a connection's first packet and conntrack the rest, so a packet
 * passes only with a loopback destination, whatever its protocol; NAT decides which
 * listener that is. Port 53 in the DNS rule is the world's DNS port, the target is ours.
 */
/* clang-format off */
static const char ruleset[] =
	"table inet paddock {\n"
	"	chain nat_out {\n"
	"		type nat hook output priority -100; policy accept;\n"
	"		ip daddr 127.0.0.0/8 return\n"
	"		ip6 daddr ::1 return\n"
	"		meta l4proto tcp redirect to :" STR(PD_EGRESS_TRANSPARENT_PORT) "\n"
	"		meta nfproto ipv4 udp dport 53 redirect to :" STR(PD_EGRESS_DNS_PORT) "\n"
	"		meta l4proto udp redirect to :" STR(PD_EGRESS_UDP_SINK_PORT) "\n"
	"	}\n"
	"	chain filter_out {\n"
	"		type filter hook output priority 0; policy drop;\n"
	"		ip daddr 127.0.0.0/8 accept\n"
	"		ip6 daddr ::1 accept\n"
	"	}\n"
	"}\n";
/* clang-format on */

/* ---- routes ---------------------------------------------------------------------------- */

/*
 * rtnetlink by hand: two RTM_NEWROUTE messages and their ACKs are all we send, and libmnl
 * would be a dependency (and a link in every front end) for that.
 */
union route_msg {
	struct nlmsghdr nh;
	char buf[NLMSG_SPACE(sizeof(struct rtmsg)) + 3 * RTA_SPACE(sizeof(struct in6_addr))];
};

static void add_attr(union route_msg *m, unsigned short type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(m->nh.nlmsg_len);
	struct rtattr *rta = (struct rtattr *)(m->buf + off);

	assert(off + RTA_SPACE(len) <= sizeof(m->buf));
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	m->nh.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
}

/* Adds "default dev <ifindex> src <src>" to the main table and waits for the kernel's ACK. */
static int add_default_route(int nl, uint32_t seq, int family, uint32_t ifindex, const void *src,
			     size_t src_len, paddock_error *err)
{
	const char *name =
		family == AF_INET ? "default dev lo src 127.0.0.1" : "default dev lo src ::1";
	union route_msg m = { 0 };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	uint32_t table = RT_TABLE_MAIN;

	m.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	m.nh.nlmsg_type = RTM_NEWROUTE;
	m.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	m.nh.nlmsg_seq = seq;
	struct rtmsg *rt = NLMSG_DATA(&m.nh);
	rt->rtm_family = (unsigned char)family;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_LINK; /* no gateway, as ip(8) sets it; IPv6 ignores it */
	rt->rtm_type = RTN_UNICAST;
	add_attr(&m, RTA_TABLE, &table, sizeof(table));
	add_attr(&m, RTA_OIF, &ifindex, sizeof(ifindex));
	/* without a source, connect() picks 0.0.0.0 and replies never come back */
	add_attr(&m, RTA_PREFSRC, src, src_len);

	if (sendto(nl, &m, m.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return pd_fail(err, errno, "send route '%s' to the kernel", name);

	/* an ACK is a header and a struct nlmsgerr (NETLINK_CAP_ACK): room to spare */
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ack;
	struct sockaddr_nl from;
	socklen_t from_len = sizeof(from);
	ssize_t n = recvfrom(nl, &ack, sizeof(ack), MSG_TRUNC, (struct sockaddr *)&from, &from_len);
	if (n < 0)
		return pd_fail(err, errno, "read the kernel's answer to route '%s'", name);
	/* fail closed on anything but the kernel's ACK to this request */
	if ((size_t)n > sizeof(ack) || from.nl_pid != 0 || !NLMSG_OK(&ack.nh, (size_t)n) ||
	    ack.nh.nlmsg_type != NLMSG_ERROR || ack.nh.nlmsg_seq != seq ||
	    ack.nh.nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return pd_fail(err, EPROTO, "unexpected answer to route '%s' from rtnetlink", name);
	const struct nlmsgerr *e = NLMSG_DATA(&ack.nh);
	if (e->error < 0)
		return pd_fail(err, -e->error, "add route '%s'", name);
	return 0;
}

static int add_routes(paddock_error *err)
{
	const struct in_addr lo4 = { .s_addr = htonl(INADDR_LOOPBACK) };
	_cleanup_close_ int nl = -EBADF;
	int r;

	unsigned ifindex = if_nametoindex("lo");
	if (ifindex == 0)
		return pd_fail(err, errno, "find lo");
	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl < 0)
		return pd_fail(err, errno, "open an rtnetlink socket");
	/* the kernel answers errors with our header only, not the whole request echoed back */
	if (setsockopt(nl, SOL_NETLINK, NETLINK_CAP_ACK, &(int){ 1 }, sizeof(int)) < 0)
		return pd_fail(err, errno, "set NETLINK_CAP_ACK");

	r = add_default_route(nl, 1, AF_INET, ifindex, &lo4, sizeof(lo4), err);
	if (r < 0)
		return r;
	return add_default_route(nl, 2, AF_INET6, ifindex, &in6addr_loopback,
				 sizeof(in6addr_loopback), err);
}

/* ---- nftables -------------------------------------------------------------------------- */

/*
 * libnftables is loaded only here, only for transparent mode: it pulls in libnftnl, libmnl,
 * libxtables, libjansson and libgmp, and every `paddock run` would pay for loading them.
 * Measured on Debian 12 (libnftables 1.0.6, December 2026): dlopen() 1.9-3.0 ms warm, 13 ms with a
 * cold page cache, and nft_ctx_new() another 1.1-1.5 ms (it reads /etc/iproute2).
 */
struct nft_api {
	void *dl;
	typeof(nft_ctx_new) *ctx_new;
	typeof(nft_ctx_free) *ctx_free;
	typeof(nft_ctx_buffer_output) *buffer_output;
	typeof(nft_ctx_buffer_error) *buffer_error;
	typeof(nft_ctx_get_error_buffer) *get_error_buffer;
	typeof(nft_run_cmd_from_buffer) *run_cmd_from_buffer;
};

static void nft_api_release(struct nft_api *api)
{
	if (api->dl)
		(void)dlclose(api->dl); /* nothing of it is left in use: its context is freed */
	*api = (struct nft_api){ 0 };
}

/* Looks `name` up; on a miss remembers the first missing name in *missing. */
static void *sym(void *dl, const char *name, const char **missing)
{
	void *p = dlsym(dl, name);

	if (!p && !*missing)
		*missing = name;
	return p;
}

static int nft_api_load(struct nft_api *api, paddock_error *err)
{
	const char *missing = NULL;

	/* SECURITY: resolved in the host's tree; see the header on when this may run */
	api->dl = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!api->dl)
		return pd_fail(err, ENOENT, "load libnftables.so.1: %s (install libnftables1)",
			       dlerror());
	api->ctx_new = sym(api->dl, "nft_ctx_new", &missing);
	api->ctx_free = sym(api->dl, "nft_ctx_free", &missing);
	api->buffer_output = sym(api->dl, "nft_ctx_buffer_output", &missing);
	api->buffer_error = sym(api->dl, "nft_ctx_buffer_error", &missing);
	api->get_error_buffer = sym(api->dl, "nft_ctx_get_error_buffer", &missing);
	api->run_cmd_from_buffer = sym(api->dl, "nft_run_cmd_from_buffer", &missing);
	if (missing)
		return pd_fail(err, ENOSYS, "libnftables.so.1 has no '%s'", missing);
	return 0;
}

/* The first line of nft's error text ("Error: Could not process rule: ..."), for a message. */
static const char *first_line(const char *text, char *buf, size_t size)
{
	char line[256];

	if (!text || !*text)
		return "no error text";
	size_t len = strcspn(text, "\n");
	if (len >= sizeof(line))
		len = sizeof(line) - 1;
	memcpy(line, text, len);
	line[len] = '\0';
	return pd_escape(line, buf, size);
}

static int install_ruleset(paddock_error *err)
{
	_cleanup_(nft_api_release) struct nft_api api = { 0 };
	char text[200];
	int r;

	r = nft_api_load(&api, err);
	if (r < 0)
		return r;
	struct nft_ctx *ctx = api.ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return pd_fail(err, ENOMEM, "create an nftables context");
	/* init does no stdio: whatever nft would print lands in buffers freed with ctx */
	if (api.buffer_output(ctx) < 0 || api.buffer_error(ctx) < 0) {
		api.ctx_free(ctx);
		return pd_fail(err, ENOMEM, "set up nftables' output buffers");
	}
	if (api.run_cmd_from_buffer(ctx, ruleset) != 0) {
		/* libnftables gives text, not an errno: the kernel's reason is in the text */
		r = pd_fail(err, EIO, "install the sandbox's nftables redirect: %s",
			    first_line(api.get_error_buffer(ctx), text, sizeof(text)));
		api.ctx_free(ctx);
		return r;
	}
	api.ctx_free(ctx);
	return 0;
}

int pd_netns_egress_setup(bool transparent, paddock_error *err)
{
	int r;

	if (!transparent)
		return 0;
	r = add_routes(err);
	if (r < 0)
		return r;
	return install_ruleset(err);
}
