/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the DNS filter's query parser with any datagram a sandbox could send, and builds
 * the answers to what it accepts: an answer never exceeds 512 bytes nor the space given.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress-dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t addrs[40 * 16] = { 1 };
	uint8_t out[PD_DNS_MSG_MAX + 64];
	struct pd_dns_query q;
	uint16_t id = 0;
	int n;

	if (pd_dns_query_parse(data, size, &q, &id) < 0)
		return 0;
	if (q.id != id || strlen(q.name) > PD_EGRESS_NAME_MAX)
		abort();
	for (size_t cap = 0; cap <= sizeof(out); cap += 97) {
		n = pd_dns_answer_build(&q, (int)(size % 6), size & 1 ? AF_INET : AF_INET6, addrs,
					40, 60, out, cap);
		if (n != -ENOSPC && (n < 12 || (size_t)n > cap || n > PD_DNS_MSG_MAX))
			abort();
	}
	return 0;
}
