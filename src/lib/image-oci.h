/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OCI and docker image documents (image-oci.c): indexes (manifest lists), manifests, and the
 * importers of image layouts and docker archives. Every document is hostile input: bounded
 * (PD_IMAGE_MAX_JSON, PD_IMAGE_MAX_LAYERS), parsed strictly, digests checked for form
 * before they name a file.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "image-store.h"

struct pd_manifest {
	char config_digest[PD_DIGEST_MAX];
	int64_t config_size;
	struct pd_layer_src layers[PD_IMAGE_MAX_LAYERS];
	size_t n_layers;
};

enum pd_oci_kind {
	PD_OCI_MANIFEST, /* an image manifest (OCI or docker schema 2) */
	PD_OCI_INDEX,	 /* an index (OCI or docker manifest list) */
};

/*
 * Which kind a document is: its mediaType member, else the Content-Type it came with (may
 * be NULL), else its shape. -EINVAL (schema 1, or unknown) naming what it is.
 */
int pd_oci_kind(const char *json, size_t len, const char *content_type, enum pd_oci_kind *ret,
		paddock_error *err);

/* An image manifest's config and layers. */
int pd_oci_parse_manifest(const char *json, size_t len, struct pd_manifest *ret,
			  paddock_error *err);

/*
 * From an index, the manifest for `platform` ("os/arch[/variant]"; NULL: linux and this
 * machine's). -ENOENT naming the platforms it has when none fits.
 */
int pd_oci_pick(const char *json, size_t len, const char *platform, char ret_digest[PD_DIGEST_MAX],
		int64_t *ret_size, paddock_error *err);
