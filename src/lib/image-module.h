/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The images half of libpaddock, as the rest of it sees it (module.h): adding images to the
 * store, by pulling them from a registry (image-registry.c, image-http.c) or importing an
 * archive (image-import.c), each layer unpacked (image-unpack.c) and hashed
 * (image-digest-sha256.c) into the store (image-store-add.c). It links libarchive and
 * OpenSSL. Reading the store, and so running a sandbox from an image already there, is the
 * core's (image-store.c): only a pull or an import loads the half.
 */
#pragma once

#include "module.h"
#include "paddock/image.h"

struct pd_snapshot_src;

struct pd_image_ops {
	struct pd_module_abi abi; /* first: the loader checks it */
	/* paddock_image_pull() and paddock_image_import() (image.h), whose stubs call these */
	int (*pull)(paddock_image_store *store, const char *ref,
		    const struct paddock_pull_opts *opts, char **ret_json, paddock_error *err);
	int (*import)(paddock_image_store *store, const char *path, const char *name,
		      char **ret_json, paddock_error *err);
	/* paddock_sandbox_snapshot()'s layer and image (image-snapshot.c) */
	int (*snapshot)(paddock_image_store *store, const struct pd_snapshot_src *src,
			const char *name, char **ret_json, paddock_error *err);
};

/* The images half: as pd_egress_ops() (egress-module.h). */
int pd_image_ops(const struct pd_image_ops **ret_ops, paddock_error *err);

/* The table itself, in the half (image-ops.c): module-linked.c returns it. */
extern const struct pd_image_ops pd_image_module_ops;

/* The half's implementations (image-registry.c, image-import.c). */
int pd_image_pull(paddock_image_store *store, const char *ref, const struct paddock_pull_opts *opts,
		  char **ret_json, paddock_error *err);
int pd_image_import(paddock_image_store *store, const char *path, const char *name, char **ret_json,
		    paddock_error *err);
