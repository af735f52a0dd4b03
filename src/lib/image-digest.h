/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 digests as OCI writes them ("sha256:" and 64 lowercase hex digits), streamed. The
 * image store checks every blob, manifest, config and layer against one. The hashing
 * (image-digest-sha256.c) is the images half's (image-module.h); pd_digest_valid()
 * (image-digest.c), a syntax check, is everyone's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define PD_DIGEST_HEX 64
#define PD_DIGEST_MAX (7 + PD_DIGEST_HEX + 1) /* "sha256:" + hex + NUL */

struct pd_digest {
	void *ctx; /* EVP_MD_CTX */
};

/* 0 or -ENOMEM. */
int pd_digest_init(struct pd_digest *d);
void pd_digest_update(struct pd_digest *d, const void *data, size_t len);
/* "sha256:<hex>" into out; the digest can take no more data afterwards. */
void pd_digest_final(struct pd_digest *d, char out[PD_DIGEST_MAX]);
void pd_digest_release(struct pd_digest *d);

/* The digest of one buffer. 0 or -ENOMEM. */
int pd_digest_buffer(const void *data, size_t len, char out[PD_DIGEST_MAX]);

/* Whether s is "sha256:" followed by exactly 64 lowercase hex digits. */
bool pd_digest_valid(const char *s);
