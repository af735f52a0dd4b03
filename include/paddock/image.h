/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: OCI images (docs/images.md). A store is a directory of content-addressed
 * manifests and configs and of layers unpacked once, shared read-only by every sandbox made
 * from them (overlayfs lower layers). As root the store is /var/lib/paddock/images and keeps
 * the owners a layer's tar names; rootless it is the user's own
 * ($XDG_DATA_HOME/paddock/images) and everything in it is theirs.
 *
 * Every function returns >= 0 on success and -errno on failure with `err` filled; a bad
 * reference is -EINVAL naming the field "image", a missing image -ENOENT, a digest that
 * does not match -EBADMSG. Image descriptions are JSON documents (docs/images.md), which
 * the caller frees.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct paddock_image_store paddock_image_store;

/* The store this process uses by default: root's, or the invoking user's. */
PADDOCK_API int paddock_image_store_default_dir(char *buf, size_t size, paddock_error *err);

/* Opens (making it, mode 0700, when missing) the store in `dir`. */
PADDOCK_API int paddock_image_store_open(const char *dir, paddock_image_store **ret_store,
					 paddock_error *err);
PADDOCK_API paddock_image_store *paddock_image_store_free(paddock_image_store *store);

/* How to reach a registry. Every member may be zero. */
struct paddock_pull_opts {
	const char *creds;    /* "USER:PASSWORD" for basic auth and token requests, or NULL */
	bool plain_http;      /* http:// (default: https, but http for a loopback registry) */
	bool tls_no_verify;   /* do not verify the registry's certificate */
	const char *ca_file;  /* also trust this CA (PEM) */
	const char *platform; /* "linux/arm64"; NULL: this machine's */
};

/*
 * Pulls `ref` from its registry (distribution API v2: index, manifest for the platform,
 * config, layers; each digest verified) into the store, unpacking the layers it lacks.
 * *ret_json (may be NULL) describes the image.
 */
PADDOCK_API int paddock_image_pull(paddock_image_store *store, const char *ref,
				   const struct paddock_pull_opts *opts, char **ret_json,
				   paddock_error *err);

/*
 * Imports an image from `path`: an OCI image layout (directory, or tar as `skopeo copy ...
 * oci-archive:`, `podman save --format oci-archive` write it) or a docker archive (`docker
 * save`, `podman save`, `skopeo copy ... docker-archive:`). `name` (may be NULL) names it;
 * without, the archive's own name, if it has one.
 */
PADDOCK_API int paddock_image_import(paddock_image_store *store, const char *path, const char *name,
				     char **ret_json, paddock_error *err);

/* Every image, as a JSON array of descriptions. */
PADDOCK_API int paddock_image_list(paddock_image_store *store, char **ret_json, paddock_error *err);

/* One image, by name, id ("sha256:..."), or a unique prefix of the id's hex (12 or more). */
PADDOCK_API int paddock_image_inspect(paddock_image_store *store, const char *ref, char **ret_json,
				      paddock_error *err);

/*
 * Removes an image's record, and its layers and blobs that no other image uses. -EBUSY
 * while a sandbox made from it runs.
 */
PADDOCK_API int paddock_image_remove(paddock_image_store *store, const char *ref,
				     paddock_error *err);

/*
 * The command a sandbox from image `ref` runs: its Entrypoint followed by `args`, or by its
 * Cmd when `args` is NULL or empty (docker's rule). -ENOENT (field "image") when the image
 * has neither and no args are given. *ret_argv is NULL-terminated; free each string and the
 * array.
 */
PADDOCK_API int paddock_image_command(paddock_image_store *store, const char *ref,
				      const char *const *args, char ***ret_argv,
				      paddock_error *err);

/* What a snapshot keeps besides the root's writable layer. Every member may be zero. */
struct paddock_snapshot_opts {
	bool workspace; /* /workspace too (not a host directory the spec binds) */
};

/*
 * Snapshot: pauses `sb` (made from an image), captures its writable layer (everything its
 * commands wrote to its root, /home/user included; /workspace only with opts->workspace; never
 * /tmp and /dev/shm, which are its disk's own mounts, nor the /etc files every create writes) as
 * a new layer of the context's store, and adds an image of the sandbox's image's layers and it,
 * with that image's config, named `name` (a reference: "work", "work:2",
 * "registry.local/team/work:1"; a name another image had moves to this one). Then resumes it,
 * unless it was paused already, whether the snapshot was made or not. *ret_json (may be NULL)
 * describes the image as paddock_image_inspect() does, with "snapshot": {"sandbox", "layer",
 * "layer_size", "base"}.
 *
 * opts may be NULL. Errors: -EINVAL (field "name") for a bad name; -ESRCH for a sandbox that
 * is ending; -EOPNOTSUPP (field "workspace") for opts->workspace when the workspace is a host
 * directory (a pooled sandbox's own /workspace, a mount of its disk, is written as the layer's);
 * -EOPNOTSUPP (field "image") for one on the host's /usr; -ENOSPC and others from the store,
 * which is then left as it was.
 */
PADDOCK_API int paddock_sandbox_snapshot(paddock_sandbox *sb, const char *name,
					 const struct paddock_snapshot_opts *opts, char **ret_json,
					 paddock_error *err);

/* The store sandboxes of this context take their "image" from; default: the default dir. */
PADDOCK_API int paddock_ctx_set_image_store(paddock_ctx *ctx, const char *dir, paddock_error *err);

#ifdef __cplusplus
}
#endif
