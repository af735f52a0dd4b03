/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references as docker and skopeo read them: [DOMAIN[:PORT]/]PATH[:TAG][@DIGEST].
 * "debian" is docker.io/library/debian:latest. A reference comes from a user, a spec or a
 * file to import: it is parsed strictly and bounded before it names anything.
 */
#pragma once

#include <stdbool.h>

#include "paddock/paddock.h"
#include "image-digest.h"

#define PD_REF_MAX	      512
#define PD_REF_DOMAIN_MAX     255
#define PD_REF_TAG_MAX	      128
#define PD_REF_DEFAULT_DOMAIN "docker.io"

struct pd_image_ref {
	char domain[PD_REF_DOMAIN_MAX + 1]; /* "docker.io", "127.0.0.1:5000" */
	char path[PD_REF_MAX];		    /* "library/debian" */
	char tag[PD_REF_TAG_MAX + 1];	    /* "" when only a digest names it */
	char digest[PD_DIGEST_MAX];	    /* "" or "sha256:<hex>" */
};

/*
 * Parses `s`: bounded, lowercase path components of [a-z0-9] joined by '.', '_', '__' or
 * dashes, a tag of [A-Za-z0-9_.-] (128 at most, not starting with '.' or '-'), a sha256
 * digest. The tag defaults to "latest" when neither tag nor digest is given. -EINVAL (err
 * names `field`) on anything else.
 */
int pd_image_ref_parse(const char *s, const char *field, struct pd_image_ref *ret,
		       paddock_error *err);

/* "domain/path:tag", "domain/path@digest" or "domain/path:tag@digest". */
void pd_image_ref_format(const struct pd_image_ref *r, char *buf, size_t size);

/* "domain/path" without tag or digest. */
void pd_image_ref_repository(const struct pd_image_ref *r, char *buf, size_t size);

/* The registry's host (docker.io is registry-1.docker.io) and whether it is loopback. */
const char *pd_image_ref_registry_host(const struct pd_image_ref *r);
bool pd_image_ref_is_loopback(const struct pd_image_ref *r);
