/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots (paddock_sandbox_snapshot(), docs/images.md): a sandbox made from an image is
 * paused, its writable layer (the overlay's upper directory on its disk, which init handed
 * over at READY: rootfs.c) captured as a new layer of the image store, named, and resumed.
 * The image is immutable and like any other: listed, run (the base's layers are shared, the
 * new one is one more overlay lower) and removed.
 *
 * Runs in the supervisor, with the sandbox frozen: nothing inside can change the layer while
 * it is read, and the reading (image-snapshot.c, the images half) treats it as hostile. A
 * sandbox on the host's /usr has no image to put a layer on: it is refused (docs say why).
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/image.h"
#include "error.h"
#include "events.h"
#include "image-module.h"
#include "image-ref.h"
#include "image-store.h"
#include "util/cleanup.h"

PD_DEFINE_CLEANUP(struct pd_image, pd_image_free)
PD_DEFINE_CLEANUP(paddock_image_store, paddock_image_store_free)

static bool all_hex(const char *s)
{
	return s[0] && strspn(s, "0123456789abcdef") == strlen(s);
}

int pd_snapshot_name(const char *name, char *buf, size_t size, paddock_error *err)
{
	struct pd_image_ref ref;
	int r;

	if (!name || !name[0])
		return pd_fail_field(err, EINVAL, "name",
				     "expected a name for the snapshot, such as 'work:1' "
				     "([DOMAIN/]PATH[:TAG], lowercase [a-z0-9._-] components)");
	if (all_hex(name) && strlen(name) >= 12)
		return pd_fail_field(err, EINVAL, "name",
				     "'%s' reads as an image id: expected a name such as 'work:1'",
				     PD_ESC(name));
	r = pd_image_ref_parse(name, "name", &ref, err);
	if (r < 0)
		return r;
	if (ref.digest[0])
		return pd_fail_field(
			err, EINVAL, "name",
			"'%s' names a digest: a snapshot's name is [DOMAIN/]PATH[:TAG]",
			PD_ESC(name));
	pd_image_ref_format(&ref, buf, size);
	return 0;
}

/*
 * The image the sandbox runs: the id taken at create (kept in its handle across a restart),
 * which must still be in the store. A sandbox adopted from a handle without one (an older
 * paddock's) has only its spec's reference, resolved again: right unless the name was given
 * to another image since.
 */
static int base_image(paddock_sandbox *sb, const char *store_dir, paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	int r;

	if (sb->image_id[0] && sb->image_lock >= 0)
		return 0;
	r = pd_image_resolve(store_dir, sb->image_id[0] ? sb->image_id : sb->spec->image, &img,
			     err);
	if (r < 0) {
		pd_error_prefix(err, "the sandbox's image");
		return r;
	}
	snprintf(sb->image_id, sizeof(sb->image_id), "%s", img->id);
	if (sb->image_lock < 0)
		sb->image_lock = TAKE_FD(img->lock_fd);
	return 0;
}

/* Adds what a snapshot's caller wants to know to the record: the layer's own size, whence. */
static int describe(paddock_image_store *store, paddock_sandbox *sb, char **json,
		    paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *rec = json_loads(*json, 0, NULL), *meta = NULL;
	_cleanup_close_ int layers = pd_image_store_subdir(store, "layers", err);
	json_t *jl = json_object_get(rec, "layers");
	const char *top = json_string_value(json_array_get(jl, json_array_size(jl) - 1));
	char name[PD_DIGEST_HEX + 8];
	char *out;

	if (!rec || !top || !pd_digest_valid(top) || layers < 0)
		return pd_fail(err, EIO, "read back the snapshot's record");
	snprintf(name, sizeof(name), "%s.json", top + 7);
	if (pd_image_store_read_json(layers, name, &meta, err) < 0)
		return -err->code;
	if (json_object_set_new(rec, "snapshot",
				json_pack("{s:s,s:s,s:O?,s:s}", "sandbox", sb->id, "layer", top,
					  "layer_size", json_object_get(meta, "size"), "base",
					  sb->image_id)) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	out = json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!out)
		return pd_fail(err, ENOMEM, "out of memory");
	free(*json);
	*json = out;
	return 0;
}

static int capture(paddock_sandbox *sb, const char *name, bool workspace, char **ret_json,
		   paddock_error *err)
{
	_cleanup_(paddock_image_store_freep) paddock_image_store *store = NULL;
	_cleanup_free_ char *json = NULL;
	_cleanup_close_ int ws = -EBADF;
	const struct pd_image_ops *im;
	char dir[PATH_MAX];
	int r;

	/*
	 * A pooled sandbox's /workspace is the disk's "workspace", bound (rootfs.c): beside the
	 * upper directory on the disk, which the sandbox cannot rename or replace (it sees
	 * neither the disk's root nor its upper/).
	 */
	if (workspace && sb->spec_pooled) {
		ws = openat(sb->upper_fd, "../workspace",
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ws < 0)
			return pd_fail(err, errno, "open the sandbox's workspace");
	}
	r = pd_sandbox_image_store_dir(sb->ctx, dir, sizeof(dir), err);
	if (r >= 0)
		r = base_image(sb, dir, err);
	if (r >= 0)
		r = paddock_image_store_open(dir, &store, err);
	if (r >= 0)
		r = pd_image_ops(&im, err);
	if (r < 0)
		return r;
	struct pd_snapshot_src src = {
		.upper_fd = sb->upper_fd,
		.base_id = sb->image_id,
		.sandbox_id = sb->id,
		.rootless = sb->idmap.rootless,
		.outside_uid = sb->idmap.outside_uid,
		.outside_gid = sb->idmap.outside_gid,
		.workspace = workspace,
		.workspace_fd = ws,
	};
	r = im->snapshot(store, &src, name, &json, err);
	if (r >= 0)
		r = describe(store, sb, &json, err);
	if (r < 0)
		return r;
	*ret_json = TAKE_PTR(json);
	return 0;
}

int paddock_sandbox_snapshot(paddock_sandbox *sb, const char *name,
			     const struct paddock_snapshot_opts *opts, char **ret_json,
			     paddock_error *err)
{
	bool workspace = opts && opts->workspace;
	_cleanup_free_ char *json = NULL;
	char norm[PD_REF_MAX + 2];
	bool was_paused;
	int r;

	if (!sb)
		return pd_fail(err, EINVAL, "paddock_sandbox_snapshot: a sandbox is required");
	r = pd_snapshot_name(name, norm, sizeof(norm), err);
	if (r < 0)
		return r;
	if (sb->state != PD_SB_RUNNING)
		return pd_fail(err, ESRCH,
			       "sandbox '%s' has ended or is ending: there is nothing to snapshot",
			       sb->id);
	if (sb->spec->pooled)
		return pd_fail(err, EBUSY, "sandbox '%s' is pooled: claim it first", sb->id);
	if (!sb->spec->image)
		return pd_fail_field(err, EOPNOTSUPP, "image",
				     "sandbox '%s' runs on the host's /usr, not an image: a "
				     "snapshot is a layer on an image (create it with an image)",
				     sb->id);
	if (workspace && sb->spec->workspace)
		return pd_fail_field(
			err, EOPNOTSUPP, "workspace",
			"the workspace of sandbox '%s' is a host directory ('%s'): it is "
			"no part of the sandbox to snapshot",
			sb->id, PD_ESC(sb->spec->workspace));
	if (sb->upper_fd < 0)
		return pd_fail(err, EOPNOTSUPP,
			       "sandbox '%s' has no writable layer to capture (a root the spec "
			       "binds, or an init older than snapshots)",
			       sb->id);
	was_paused = sb->paused != PD_PAUSE_NONE;
	r = paddock_sandbox_pause(sb, err);
	if (r < 0) {
		pd_error_prefix(err, "snapshot: pause");
		return r;
	}
	r = capture(sb, norm, workspace, &json, err);
	if (r < 0)
		pd_error_prefix(err, "snapshot of sandbox '%s'", sb->id);
	/* the sandbox runs again whatever became of the snapshot; a paused one stays paused */
	if (!was_paused) {
		paddock_error rerr = { 0 };
		int rr = paddock_sandbox_resume(sb, &rerr);

		if (rr < 0 && r >= 0) {
			*err = rerr;
			pd_error_prefix(err, "snapshot: resume");
			return rr;
		}
	}
	if (r < 0)
		return r;
	if (pd_events_wanted(sb->ctx)) {
		_cleanup_(json_decrefp) json_t *rec = json_loads(json, 0, NULL);

		pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.snapshotted", sb->id, NULL,
			json_pack("{s:s,s:s,s:O?,s:O?}", "name", norm, "image",
				  json_string_value(json_object_get(rec, "id")) ?: "", "size",
				  json_object_get(rec, "size"), "layer_size",
				  json_object_get(json_object_get(rec, "snapshot"), "layer_size")));
	}
	if (ret_json)
		*ret_json = TAKE_PTR(json);
	return 0;
}
