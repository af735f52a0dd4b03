/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the egress proxy's HTTP request head parser with what a sandbox could send: any
 * bytes. A parsed head must lie within the input and name a host and a port.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_http_head h;
	const char *why = NULL;
	int r;

	if (size > PD_HTTP_HEAD_MAX + 1024)
		return 0;
	r = pd_http_head_parse((const char *)data, size, &h, &why);
	if (r == 0 && (h.head_len > size || h.target_offset + h.target_len > h.head_len ||
		       !h.host[0] || h.port == 0 || strlen(h.host) > PD_EGRESS_NAME_MAX))
		abort();
	if (r == -EPROTO && !why)
		abort();
	return 0;
}
