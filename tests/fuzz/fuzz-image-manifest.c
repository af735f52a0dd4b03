/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the readers of registry documents (image-oci.c): the input is taken as an index
 * or a manifest, as a registry would send it. Whatever is accepted must be within bounds:
 * digests well-formed, at most PD_IMAGE_MAX_LAYERS layers, sizes not negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pd_manifest m;
	paddock_error err = { 0 };
	enum pd_oci_kind kind;
	char digest[PD_DIGEST_MAX];
	int64_t dsize;

	if (pd_oci_kind((const char *)data, size, NULL, &kind, &err) < 0)
		return 0;
	if (pd_oci_pick((const char *)data, size, "linux/amd64", digest, &dsize, &err) == 0 &&
	    (!pd_digest_valid(digest) || dsize < 0))
		abort();
	if (pd_oci_parse_manifest((const char *)data, size, &m, &err) == 0) {
		if (!pd_digest_valid(m.config_digest) || m.n_layers > PD_IMAGE_MAX_LAYERS)
			abort();
		for (size_t i = 0; i < m.n_layers; i++)
			if (!pd_digest_valid(m.layers[i].blob_digest) || m.layers[i].blob_size < 0)
				abort();
	}
	return 0;
}
