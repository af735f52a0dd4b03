/* SPDX-License-Identifier: Apache-2.0 */
/* Digests as references and records spell them (image-digest.h); hashing is in -sha256.c. */
#include "image-digest.h"

#include <string.h>

bool pd_digest_valid(const char *s)
{
	if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + PD_DIGEST_HEX)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}
