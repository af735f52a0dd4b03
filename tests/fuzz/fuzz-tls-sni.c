/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the ClientHello server-name parser with any bytes a sandbox could send to port 443.
 * A name it returns must be a normalised DNS name.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[PD_EGRESS_NAME_MAX + 1], again[PD_EGRESS_NAME_MAX + 1];
	const char *why = NULL;
	int r;

	if (size > 4 * PD_TLS_HELLO_MAX)
		return 0;
	r = pd_tls_sni_parse(data, size, name, sizeof(name), &why);
	if (r == 0 &&
	    (pd_egress_name_normalise(name, again, sizeof(again)) < 0 || strcmp(name, again) != 0))
		abort();
	if (r == -EPROTO && !why)
		abort();
	return 0;
}
