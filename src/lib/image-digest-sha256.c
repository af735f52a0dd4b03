/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 for the image store. OpenSSL's, not one of our own: layers are hashed twice
 * (compressed and uncompressed) at unpack speed, and its SHA-NI/AVX2 code is several times
 * faster than portable C. The include is kept to this file: nothing else of the image code
 * sees OpenSSL. Part of the images half (image-module.h): only pulls, imports and unpacking
 * hash.
 */
#include "image-digest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

int pd_digest_init(struct pd_digest *d)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	d->ctx = NULL;
	if (!c)
		return -ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -ENOMEM;
	}
	d->ctx = c;
	return 0;
}

void pd_digest_update(struct pd_digest *d, const void *data, size_t len)
{
	if (d->ctx && len > 0)
		(void)EVP_DigestUpdate(d->ctx, data, len);
}

void pd_digest_final(struct pd_digest *d, char out[PD_DIGEST_MAX])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[32];
	unsigned n = 0;

	memcpy(out, "sha256:", 7);
	if (!d->ctx || EVP_DigestFinal_ex(d->ctx, md, &n) != 1 || n != sizeof(md))
		memset(md, 0, sizeof(md)); /* never a valid digest of anything checked */
	for (size_t i = 0; i < sizeof(md); i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[7 + 2 * i + 1] = hex[md[i] & 15];
	}
	out[PD_DIGEST_MAX - 1] = '\0';
}

void pd_digest_release(struct pd_digest *d)
{
	EVP_MD_CTX_free(d->ctx);
	d->ctx = NULL;
}

int pd_digest_buffer(const void *data, size_t len, char out[PD_DIGEST_MAX])
{
	struct pd_digest d;
	int r = pd_digest_init(&d);

	if (r < 0)
		return r;
	pd_digest_update(&d, data, len);
	pd_digest_final(&d, out);
	pd_digest_release(&d);
	return 0;
}
