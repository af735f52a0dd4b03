/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the SOCKS5 greeting and request parsers with any bytes a sandbox could send to the
 * egress proxy's SOCKS port. What they return must lie within the input, and a host must be
 * a NUL-terminated name of visible ASCII or an address that reads back as the one parsed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(const uint8_t *data, size_t size, int r,
			  const struct pd_socks5_request *q)
{
	uint8_t addr[16];
	size_t n;

	if (r != 0)
		return;
	n = strnlen(q->host, sizeof(q->host));
	if (q->len > size || q->len > PD_SOCKS5_REQUEST_MAX || n == 0 || n >= sizeof(q->host))
		abort();
	if (q->cmd < PD_SOCKS5_CMD_CONNECT || q->cmd > PD_SOCKS5_CMD_UDP_ASSOCIATE)
		abort();
	switch (q->atyp) {
	case PD_SOCKS5_ATYP_DOMAIN:
		if (q->family != AF_UNSPEC || n != data[4] || memcmp(q->host, data + 5, n) != 0)
			abort();
		for (size_t i = 0; i < n; i++)
			if (q->host[i] <= 0x20 || q->host[i] >= 0x7f)
				abort();
		break;
	case PD_SOCKS5_ATYP_IPV4:
	case PD_SOCKS5_ATYP_IPV6:
		if (q->family != (q->atyp == PD_SOCKS5_ATYP_IPV4 ? AF_INET : AF_INET6) ||
		    inet_pton(q->family, q->host, addr) != 1 ||
		    memcmp(addr, q->addr, q->family == AF_INET ? 4 : 16) != 0)
			abort();
		break;
	default:
		abort();
	}
	if (q->port != (uint16_t)(data[q->len - 2] << 8 | data[q->len - 1]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_socks5_request q;
	const char *why = NULL;
	size_t len = 0;
	bool noauth = false;
	int r;

	if (size > 4 * PD_SOCKS5_REQUEST_MAX)
		return 0;
	/* as the proxy reads them: a greeting, then a request in what follows it */
	r = pd_socks5_greeting_parse(data, size, &len, &noauth, &why);
	if (r == 0 && (len < 3 || len > size || len != 2u + data[1] ||
		       noauth != (memchr(data + 2, 0, len - 2) != NULL)))
		abort();
	if (r == -EPROTO && !why)
		abort();
	if (r == 0) {
		r = pd_socks5_request_parse(data + len, size - len, &q, &why);
		check_request(data + len, size - len, r, &q);
		if (r == -EPROTO && !why)
			abort();
	}
	/* and the whole input as a request, so the corpus need not start with a greeting */
	r = pd_socks5_request_parse(data, size, &q, &why);
	check_request(data, size, r, &q);
	if (r == -EPROTO && !why)
		abort();
	return 0;
}
