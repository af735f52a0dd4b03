/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image store's insides (image-store.c), for the importers and the puller that fill it
 * and for a sandbox's create, which takes an image's layers from it.
 *
 *   <dir>/lock                   flock'ed by writers
 *   <dir>/blobs/sha256/<hex>     manifests, indexes and configs, as fetched, verified
 *   <dir>/layers/<hex>/          a layer, unpacked (hex of its diff id); read-only to all
 *   <dir>/layers/<hex>.json      its size and entries
 *   <dir>/images/<hex>.json      an image (hex of its config digest: the image id)
 *   <dir>/tmp/                   downloads and unpacks in progress
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "paddock/image.h"
#include "image-digest.h"

#define PD_IMAGE_MAX_LAYERS	  128 /* overlayfs takes 500; no sane image has more than 127 */
#define PD_IMAGE_MAX_JSON	  (4u << 20) /* a manifest, index or config */
#define PD_IMAGE_DEFAULT_ROOT_DIR "/var/lib/paddock/images"

struct paddock_image_store {
	char *dir;
	int fd;	    /* the directory */
	bool chown; /* root: layers keep the tar's owners */
};

/* A layer to add: its blob (may be unknown: "" and -1) and its diff id (from the config). */
struct pd_layer_src {
	char blob_digest[PD_DIGEST_MAX];
	int64_t blob_size;
	char media_type[128];
};

/* Opens layer i's stream (compressed or not) for reading. An fd, or -errno. */
typedef int (*pd_layer_open_fn)(void *userdata, size_t i, const struct pd_layer_src *src,
				paddock_error *err);

/* ---- adding (image-store-add.c, the images half) ---- */

/*
 * Adds an image: stores its config (and manifest, when it has one), unpacks each layer the
 * store lacks (verifying blob digests when known, and the config's diff ids always), then
 * writes its record with `names` (each taken from any other image that had it). Holds the
 * store's lock meanwhile. *ret_json describes the image.
 */
int pd_image_store_add(paddock_image_store *s, const char *manifest, size_t manifest_len,
		       const char *config, size_t config_len, const struct pd_layer_src *layers,
		       size_t n_layers, pd_layer_open_fn open_layer, void *userdata,
		       const char *const *names, char **ret_json, paddock_error *err);

/* Stores a verified blob (manifest, index, config) under blobs/. */
int pd_image_store_put_blob(paddock_image_store *s, const char *digest, const void *data,
			    size_t len, paddock_error *err);

/* A new file in tmp/ for a download: an fd open for reading and writing, already unlinked. */
int pd_image_store_tmpfile(paddock_image_store *s, paddock_error *err);

/* ---- the store's files, for image-store-add.c ---- */

/* Takes the store's lock (flock LOCK_EX on "lock"): the lock's fd. */
int pd_image_store_lock(paddock_image_store *s, paddock_error *err);
/* A directory of the store ("images", "layers", "tmp", "blobs/sha256"): its fd. */
int pd_image_store_subdir(paddock_image_store *s, const char *name, paddock_error *err);
/* Parses dirfd/name, a regular file of at most PD_IMAGE_MAX_JSON bytes. */
int pd_image_store_read_json(int dirfd, const char *name, json_t **ret, paddock_error *err);
/* Writes dirfd/name atomically (a temporary name renamed over it). */
int pd_image_store_write_atomic(int dirfd, const char *name, const void *data, size_t len,
				paddock_error *err);
/* Calls fn for each image record; stops at the first nonzero return (< 0: returned). */
int pd_image_store_each(paddock_image_store *s,
			int (*fn)(json_t *rec, const char *file, void *userdata), void *userdata,
			paddock_error *err);
/* Writes an image record (images/<hex of its "id">.json). */
int pd_image_store_write_record(paddock_image_store *s, json_t *rec, paddock_error *err);

/* ---- snapshots (image-snapshot.c, the images half) ---- */

/* A sandbox's writable layer to capture, and the image it runs. */
struct pd_snapshot_src {
	int upper_fd;		/* its overlay's upper directory (O_PATH is enough) */
	const char *base_id;	/* the image the sandbox was made from: "sha256:<hex>" */
	const char *sandbox_id; /* for the config's history */
	bool rootless;		/* owners are not kept */
	bool workspace;		/* keep the top-level "workspace" directory too */
	/*
	 * With workspace: a /workspace that is a directory of the disk of its own (a pooled
	 * sandbox's bind), written as an opaque "workspace" in place of the upper's; else -1.
	 */
	int workspace_fd;
	unsigned outside_uid; /* as root: the host id of the sandbox's uid 0 */
	unsigned outside_gid;
};

/*
 * Writes the layer (the sandbox is paused meanwhile: the caller's part), then an image of
 * the base's layers and it, named `name` (normalized already). *ret_json describes it. On
 * failure the store is as it was: the layer tar is an unlinked file, a layer stored before
 * the failure is removed again when no image names it.
 */
int pd_image_snapshot(paddock_image_store *store, const struct pd_snapshot_src *src,
		      const char *name, char **ret_json, paddock_error *err);

/* ---- running ---- */

/* An image resolved for a sandbox: what init stacks, and the config's defaults. */
struct pd_image {
	char id[PD_DIGEST_MAX];
	char **layer_dirs; /* absolute paths, bottom layer first, NULL-terminated */
	size_t n_layers;
	char **env;	   /* "NAME=VALUE" of the config, names a spec accepts */
	char *cwd;	   /* WorkingDir, or NULL */
	char **entrypoint; /* or NULL */
	char **cmd;	   /* or NULL */
	int lock_fd;	   /* the record, flock(LOCK_SH): image rm waits for EBUSY */
};

/* Finds `ref` (a name, an id, a unique id prefix) in the store at `dir`. -ENOENT: none. */
int pd_image_resolve(const char *dir, const char *ref, struct pd_image **ret, paddock_error *err);
struct pd_image *pd_image_free(struct pd_image *img);

/* The platform this machine runs: "amd64", "arm64", ... (OCI's architecture names). */
const char *pd_image_arch(void);
