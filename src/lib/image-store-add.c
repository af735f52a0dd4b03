/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Adding to the image store (image-store.c has the rest): blobs checked against their
 * digests, configs parsed with bounds, layers unpacked into tmp/ and renamed into layers/
 * once whole, then the image's record. Part of the images half (image-module.h): only pulls
 * and imports add, so a program that only runs images never loads libarchive or OpenSSL.
 */
#include "image-store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "image-tree.h"
#include "image-unpack.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define MAX_NAMES 64
#define MAX_ENV	  1024

int pd_image_store_put_blob(paddock_image_store *s, const char *digest, const void *data,
			    size_t len, paddock_error *err)
{
	_cleanup_close_ int dir = -EBADF;
	char got[PD_DIGEST_MAX];

	if (!pd_digest_valid(digest))
		return pd_fail(err, EINVAL, "not a sha256 digest: '%s'", PD_ESC(digest));
	if (pd_digest_buffer(data, len, got) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	if (strcmp(got, digest) != 0)
		return pd_fail(err, EBADMSG, "blob %s: its content has digest %s", digest, got);
	dir = openat(s->fd, "blobs/sha256", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dir < 0)
		return pd_fail(err, errno, "open the store's blobs");
	if (faccessat(dir, digest + 7, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	return pd_image_store_write_atomic(dir, digest + 7, data, len, err);
}

int pd_image_store_tmpfile(paddock_image_store *s, paddock_error *err)
{
	_cleanup_close_ int dir = openat(s->fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (dir < 0)
		return pd_fail(err, errno, "open the store's tmp");
	fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return pd_fail(err, errno, "make a temporary file in the store");
	return fd;
}

/* ---- configs ------------------------------------------------------------------------------ */

/* What the store keeps of a config, checked: diff ids and the defaults a sandbox takes. */
struct config_view {
	json_t *root;
	json_t *diff_ids; /* borrowed from root */
	json_t *defaults; /* a new object: Env, WorkingDir, User, Entrypoint, Cmd */
};

static void config_view_release(struct config_view *c)
{
	json_decref(c->root);
	json_decref(c->defaults);
}

static int parse_config(const char *config, size_t len, size_t n_layers, struct config_view *ret,
			paddock_error *err)
{
	static const char *const keys[] = { "Env", "WorkingDir", "User", "Entrypoint", "Cmd" };
	struct config_view c = { 0 };
	json_error_t jerr;
	json_t *rootfs, *cfg, *v;
	size_t i;

	if (len > PD_IMAGE_MAX_JSON)
		return pd_fail(err, EFBIG, "image config larger than %u bytes", PD_IMAGE_MAX_JSON);
	c.root = json_loadb(config, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!c.root || !json_is_object(c.root)) {
		json_decref(c.root);
		return pd_fail(err, EINVAL, "image config: not a JSON object (%s)", jerr.text);
	}
	rootfs = json_object_get(c.root, "rootfs");
	c.diff_ids = json_object_get(rootfs, "diff_ids");
	if (!json_is_object(rootfs) || !json_is_array(c.diff_ids) ||
	    json_array_size(c.diff_ids) != n_layers) {
		config_view_release(&c);
		return pd_fail(err, EINVAL,
			       "image config: expected rootfs.diff_ids with one digest per layer "
			       "(%zu)",
			       n_layers);
	}
	json_array_foreach(c.diff_ids, i, v) if (!pd_digest_valid(json_string_value(v)))
	{
		config_view_release(&c);
		return pd_fail(err, EINVAL,
			       "image config: rootfs.diff_ids[%zu] is not a "
			       "sha256 digest",
			       i);
	}
	c.defaults = json_object();
	if (!c.defaults) {
		config_view_release(&c);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	cfg = json_object_get(c.root, "config");
	for (i = 0; json_is_object(cfg) && i < ELEMENTSOF(keys); i++) {
		v = json_object_get(cfg, keys[i]);
		if (!v || json_is_null(v))
			continue;
		if (json_is_string(v) ? strlen(json_string_value(v)) != json_string_length(v) ||
						json_string_length(v) > 4096
				      : !json_is_array(v) || json_array_size(v) > MAX_ENV) {
			config_view_release(&c);
			return pd_fail(err, EINVAL, "image config: config.%s is malformed",
				       keys[i]);
		}
		(void)json_object_set(c.defaults, keys[i], v);
	}
	*ret = c;
	return 0;
}

/* ---- records ------------------------------------------------------------------------------- */

struct take_names {
	paddock_image_store *s;
	const char *keep_id;
	const char *const *names;
	paddock_error *err;
};

/* Moves a name to the new image: no other record keeps it. */
static int take_names_cb(json_t *rec, const char *file, void *userdata)
{
	struct take_names *t = userdata;
	json_t *names = json_object_get(rec, "names");
	bool changed = false;
	size_t i;

	(void)file;
	if (!json_is_array(names) ||
	    !strcmp(json_string_value(json_object_get(rec, "id")) ?: "", t->keep_id))
		return 0;
	for (i = 0; i < json_array_size(names);) {
		const char *n = json_string_value(json_array_get(names, i));
		bool hit = false;

		for (const char *const *p = t->names; n && p && *p && !hit; p++)
			hit = !strcmp(*p, n);
		if (hit) {
			json_array_remove(names, i);
			changed = true;
		} else {
			i++;
		}
	}
	return changed ? pd_image_store_write_record(t->s, rec, t->err) : 0;
}

static json_t *layer_meta(paddock_image_store *s, const char *diff_id)
{
	_cleanup_close_ int dir = pd_image_store_subdir(s, "layers", &(paddock_error){ 0 });
	char name[PD_DIGEST_HEX + 8];
	paddock_error ignored = { 0 };
	json_t *m = NULL;

	if (dir < 0)
		return NULL;
	snprintf(name, sizeof(name), "%s.json", diff_id + 7);
	if (pd_image_store_read_json(dir, name, &m, &ignored) < 0)
		return NULL;
	return m;
}

/* ---- adding ---------------------------------------------------------------------------------- */

static int unpack_one(paddock_image_store *s, int layers_dir, const char *diff_id,
		      const struct pd_layer_src *src, size_t i, pd_layer_open_fn open_layer,
		      void *userdata, paddock_error *err)
{
	_cleanup_close_ int in = -EBADF, tmp_dir = -EBADF, dir = -EBADF;
	struct pd_unpack_opts o = {
		.blob_digest = src->blob_digest[0] ? src->blob_digest : NULL,
		.blob_size = src->blob_size,
		.diff_id = diff_id,
		.chown = s->chown,
	};
	struct pd_unpack_stats st;
	char tmp[64], meta[160], final_name[PD_DIGEST_HEX + 8];
	unsigned rnd = 0;
	int r;

	if (faccessat(layers_dir, diff_id + 7, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0; /* unpacked once, shared */
	if (strstr(src->media_type, "encrypted"))
		return pd_fail(err, EOPNOTSUPP, "layer %zu (%s) is encrypted", i,
			       PD_ESC(src->media_type));
	in = open_layer(userdata, i, src, err);
	if (in < 0)
		return in;
	tmp_dir = pd_image_store_subdir(s, "tmp", err);
	if (tmp_dir < 0)
		return tmp_dir;
	if (getrandom(&rnd, sizeof(rnd), 0) < 0)
		rnd = (unsigned)getpid() ^ (unsigned)time(NULL);
	snprintf(tmp, sizeof(tmp), "layer-%08x", rnd);
	if (mkdirat(tmp_dir, tmp, 0755) < 0)
		return pd_fail(err, errno, "make a temporary layer directory");
	dir = openat(tmp_dir, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	r = dir < 0 ? pd_fail(err, errno, "open a temporary layer directory")
		    : pd_unpack_layer(in, dir, &o, &st, err);
	if (r < 0) {
		paddock_error ignored = { 0 };

		pd_error_prefix(err, "layer %zu", i);
		(void)pd_image_remove_tree(tmp_dir, tmp, &ignored);
		return r;
	}
	snprintf(meta, sizeof(meta), "{\"size\":%" PRIu64 ",\"entries\":%" PRIu64 "}\n", st.size,
		 st.entries);
	snprintf(final_name, sizeof(final_name), "%s.json", diff_id + 7);
	r = pd_image_store_write_atomic(layers_dir, final_name, meta, strlen(meta), err);
	if (r < 0)
		return r;
	if (renameat(tmp_dir, tmp, layers_dir, diff_id + 7) < 0) {
		int e = errno;
		paddock_error ignored = { 0 };

		(void)pd_image_remove_tree(tmp_dir, tmp, &ignored);
		if (e != EEXIST && e != ENOTEMPTY)
			return pd_fail(err, e, "store layer %s", diff_id);
	}
	return 0;
}

static char *now_rfc3339(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

int pd_image_store_add(paddock_image_store *s, const char *manifest, size_t manifest_len,
		       const char *config, size_t config_len, const struct pd_layer_src *layers,
		       size_t n_layers, pd_layer_open_fn open_layer, void *userdata,
		       const char *const *names, char **ret_json, paddock_error *err)
{
	_cleanup_(config_view_release) struct config_view c = { 0 };
	_cleanup_(json_decrefp) json_t *rec = NULL, *jl = NULL, *jn = NULL, *old = NULL;
	_cleanup_close_ int lock = -EBADF, layers_dir = -EBADF, images_dir = -EBADF;
	char id[PD_DIGEST_MAX], mdigest[PD_DIGEST_MAX] = "", ts[32];
	char rec_name[PD_DIGEST_HEX + 8];
	uint64_t size = 0;
	size_t i;
	json_t *v;
	int r;

	if (n_layers > PD_IMAGE_MAX_LAYERS)
		return pd_fail(err, E2BIG, "image has %zu layers; at most %d are supported",
			       n_layers, PD_IMAGE_MAX_LAYERS);
	r = parse_config(config, config_len, n_layers, &c, err);
	if (r < 0)
		return r;
	if (pd_digest_buffer(config, config_len, id) < 0 ||
	    (manifest && pd_digest_buffer(manifest, manifest_len, mdigest) < 0))
		return pd_fail(err, ENOMEM, "out of memory");
	r = pd_image_store_put_blob(s, id, config, config_len, err);
	if (r >= 0 && manifest)
		r = pd_image_store_put_blob(s, mdigest, manifest, manifest_len, err);
	if (r < 0)
		return r;
	layers_dir = pd_image_store_subdir(s, "layers", err);
	if (layers_dir < 0)
		return layers_dir;
	/*
	 * Layers first, unlocked: a slow pull holds up nobody; each lands whole or not at all.
	 * Then, locked, they must all still be there: an image rm meanwhile may have pruned one
	 * this image shares with the image it removed (it prunes under the lock).
	 */
	for (int attempt = 0;; attempt++) {
		bool missing = false;

		json_array_foreach(c.diff_ids, i, v)
		{
			r = unpack_one(s, layers_dir, json_string_value(v), &layers[i], i,
				       open_layer, userdata, err);
			if (r < 0)
				return r;
		}
		lock = pd_image_store_lock(s, err);
		if (lock < 0)
			return lock;
		json_array_foreach(c.diff_ids, i, v) missing =
			missing || faccessat(layers_dir, json_string_value(v) + 7, F_OK,
					     AT_SYMLINK_NOFOLLOW) < 0;
		if (!missing)
			break;
		lock = pd_close(lock);
		if (attempt == 2)
			return pd_fail(err, EAGAIN,
				       "layers were removed while the image was added");
	}
	jl = json_array();
	jn = json_array();
	if (!jl || !jn)
		return pd_fail(err, ENOMEM, "out of memory");
	json_array_foreach(c.diff_ids, i, v)
	{
		_cleanup_(json_decrefp) json_t *m = layer_meta(s, json_string_value(v));

		size += (uint64_t)json_integer_value(json_object_get(m, "size"));
		if (json_array_append(jl, v) < 0)
			return pd_fail(err, ENOMEM, "out of memory");
	}
	/* the new names first, then those it had before */
	images_dir = pd_image_store_subdir(s, "images", err);
	if (images_dir < 0)
		return images_dir;
	for (const char *const *p = names; p && *p; p++)
		if (json_array_size(jn) < MAX_NAMES)
			(void)json_array_append_new(jn, json_string(*p));
	snprintf(rec_name, sizeof(rec_name), "%s.json", id + 7);
	if (pd_image_store_read_json(images_dir, rec_name, &old, &(paddock_error){ 0 }) == 0)
		json_array_foreach(json_object_get(old, "names"), i, v)
		{
			bool dup = false;
			size_t k;
			json_t *w;

			json_array_foreach(jn, k, w) dup =
				dup ||
				!strcmp(json_string_value(w) ?: "", json_string_value(v) ?: "");
			if (!dup && json_is_string(v) && json_array_size(jn) < MAX_NAMES)
				(void)json_array_append(jn, v);
		}
	rec = json_pack("{s:s,s:s?,s:O,s:O,s:O,s:O?,s:O?,s:O?,s:I,s:s}", "id", id, "manifest",
			manifest ? mdigest : NULL, "names", jn, "layers", jl, "config", c.defaults,
			"architecture", json_object_get(c.root, "architecture"), "os",
			json_object_get(c.root, "os"), "created",
			json_object_get(c.root, "created"), "size", (json_int_t)size, "added",
			now_rfc3339(ts, sizeof(ts)));
	if (!rec)
		return pd_fail(err, ENOMEM, "out of memory");
	r = pd_image_store_write_record(s, rec, err);
	if (r < 0)
		return r;
	if (names && names[0]) {
		struct take_names t = { .s = s, .keep_id = id, .names = names, .err = err };

		r = pd_image_store_each(s, take_names_cb, &t, err);
		if (r < 0)
			return r;
	}
	if (ret_json) {
		*ret_json = json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (!*ret_json)
			return pd_fail(err, ENOMEM, "out of memory");
	}
	return 0;
}
