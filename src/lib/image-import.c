/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock image import`: an image from an OCI image layout (a directory, or a tar of one:
 * skopeo's and podman's oci-archive) or a docker archive (docker save, podman save,
 * skopeo's docker-archive). Runs in the supervisor, as the store's owner.
 *
 * Trust: the archive is hostile. A tar is first unpacked by the layer unpacker itself
 * (image-unpack.c: nothing lands outside a temporary directory of the store, no device,
 * no set-id bit, bounded), then read as a layout: every file is opened beneath it without
 * symlinks (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), blobs by digests checked for
 * form and verified against their content.
 */
#include "paddock/image.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "error.h"
#include "image-module.h"
#include "image-oci.h"
#include "image-ref.h"
#include "image-store.h"
#include "image-tree.h"
#include "image-unpack.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/strv.h"

#define REF_NAME_ANNOTATION "org.opencontainers.image.ref.name"

/* A file of the layout, beneath it, through no symlink. */
static int open_beneath(int dir, const char *path, paddock_error *err)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dir, path, &how, sizeof(how));
	struct stat st;

	if (fd < 0)
		return pd_fail(err, errno, "open '%s' in the archive", PD_ESC(path));
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		pd_close((int)fd);
		return pd_fail(err, EINVAL, "'%s' in the archive is not a regular file",
			       PD_ESC(path));
	}
	return (int)fd;
}

/* A small file (a JSON document) of the layout, whole. */
static int read_small(int dir, const char *path, char **ret, size_t *ret_len, paddock_error *err)
{
	_cleanup_close_ int fd = open_beneath(dir, path, err);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_size > PD_IMAGE_MAX_JSON)
		return pd_fail(err, EFBIG, "'%s' in the archive is larger than %u bytes",
			       PD_ESC(path), PD_IMAGE_MAX_JSON);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return pd_fail(err, ENOMEM, "out of memory");
	n = pd_read_full(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return pd_fail(err, (int)-n, "read '%s'", PD_ESC(path));
	buf[n] = '\0';
	*ret_len = (size_t)n;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* A blob of an OCI layout, verified. */
static int read_blob(int dir, const char *digest, int64_t size, char **ret, size_t *ret_len,
		     paddock_error *err)
{
	char path[PD_DIGEST_MAX + 16], got[PD_DIGEST_MAX];
	int r;

	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	r = read_small(dir, path, ret, ret_len, err);
	if (r < 0)
		return r;
	if (pd_digest_buffer(*ret, *ret_len, got) < 0 || strcmp(got, digest) ||
	    (size >= 0 && (size_t)size != *ret_len)) {
		free(*ret);
		*ret = NULL;
		return pd_fail(err, EBADMSG,
			       "blob %s in the archive: its content has digest %s "
			       "(%zu bytes)",
			       digest, got, *ret_len);
	}
	return 0;
}

struct layout {
	int dir;
	char **paths; /* docker archive: each layer's file */
};

static int open_oci_layer(void *userdata, size_t i, const struct pd_layer_src *src,
			  paddock_error *err)
{
	struct layout *l = userdata;
	char path[PD_DIGEST_MAX + 16];

	(void)i;
	snprintf(path, sizeof(path), "blobs/sha256/%s", src->blob_digest + 7);
	return open_beneath(l->dir, path, err);
}

static int open_docker_layer(void *userdata, size_t i, const struct pd_layer_src *src,
			     paddock_error *err)
{
	struct layout *l = userdata;

	(void)src;
	return open_beneath(l->dir, l->paths[i], err);
}

/* A reference as a stored name: normalized, or refused. */
static int normalize(const char *ref, const char *field, char *buf, size_t size, paddock_error *err)
{
	struct pd_image_ref r;
	int rc = pd_image_ref_parse(ref, field, &r, err);

	if (rc < 0)
		return rc;
	pd_image_ref_format(&r, buf, size);
	return 0;
}

static int import_oci(paddock_image_store *s, int dir, const char *name, char **ret_json,
		      paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *index = NULL;
	_cleanup_free_ char *text = NULL, *mtext = NULL, *ctext = NULL;
	struct pd_manifest *m = NULL;
	struct layout l = { .dir = dir };
	char digest[PD_DIGEST_MAX], own_name[PD_REF_MAX + PD_DIGEST_MAX + 2] = "";
	const char *names[2] = { name, NULL };
	json_t *list, *entry = NULL, *v;
	enum pd_oci_kind kind;
	int64_t size = -1;
	size_t len, mlen, clen, i;
	json_error_t jerr;
	int r;

	r = read_small(dir, "index.json", &text, &len, err);
	if (r < 0)
		return r;
	index = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	list = json_object_get(index, "manifests");
	if (!json_is_array(list) || json_array_size(list) == 0)
		return pd_fail(err, EINVAL, "index.json of the archive lists no manifest");
	/* one manifest, the one named like `name`, or the one for this platform */
	if (json_array_size(list) == 1)
		entry = json_array_get(list, 0);
	json_array_foreach(list, i, v)
	{
		const char *an = json_string_value(
			json_object_get(json_object_get(v, "annotations"), REF_NAME_ANNOTATION));
		char norm[sizeof(own_name)];
		paddock_error ignored = { 0 };

		if (entry || !an || !name)
			continue;
		if (normalize(an, "", norm, sizeof(norm), &ignored) == 0 && !strcmp(norm, name))
			entry = v;
	}
	if (entry) {
		if (!pd_digest_valid(json_string_value(json_object_get(entry, "digest"))))
			return pd_fail(err, EINVAL,
				       "index.json: a manifest without a sha256 digest");
		snprintf(digest, sizeof(digest), "%s",
			 json_string_value(json_object_get(entry, "digest")));
		if (json_is_integer(json_object_get(entry, "size")))
			size = (int64_t)json_integer_value(json_object_get(entry, "size"));
		/* the name the archive gives it, when the caller gives none */
		v = json_object_get(json_object_get(entry, "annotations"), REF_NAME_ANNOTATION);
		if (!name && json_is_string(v) && strchr(json_string_value(v), '/')) {
			paddock_error ignored = { 0 };

			if (normalize(json_string_value(v), "", own_name, sizeof(own_name),
				      &ignored) == 0)
				names[0] = own_name;
		}
	} else {
		r = pd_oci_pick(text, len, NULL, digest, &size, err);
		if (r < 0)
			return r;
		kind = PD_OCI_MANIFEST;
	}
	r = read_blob(dir, digest, size, &mtext, &mlen, err);
	if (r < 0)
		return r;
	r = pd_oci_kind(mtext, mlen, NULL, &kind, err);
	if (r < 0)
		return r;
	if (kind == PD_OCI_INDEX) {
		r = pd_oci_pick(mtext, mlen, NULL, digest, &size, err);
		free(mtext);
		mtext = NULL;
		if (r >= 0)
			r = read_blob(dir, digest, size, &mtext, &mlen, err);
		if (r < 0)
			return r;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return pd_fail(err, ENOMEM, "out of memory");
	r = pd_oci_parse_manifest(mtext, mlen, m, err);
	if (r >= 0)
		r = read_blob(dir, m->config_digest, m->config_size, &ctext, &clen, err);
	if (r >= 0)
		r = pd_image_store_add(s, mtext, mlen, ctext, clen, m->layers, m->n_layers,
				       open_oci_layer, &l, names, ret_json, err);
	free(m);
	return r;
}

static int import_docker(paddock_image_store *s, int dir, const char *name, char **ret_json,
			 paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	_cleanup_free_ char *text = NULL, *ctext = NULL;
	_cleanup_free_ struct pd_layer_src *layers = NULL;
	_cleanup_strv_ char **names = NULL;
	struct layout l = { .dir = dir };
	json_t *entry, *jl, *tags, *v;
	const char *config;
	size_t len, clen, i, k = 0;
	json_error_t jerr;
	int r;

	r = read_small(dir, "manifest.json", &text, &len, err);
	if (r < 0)
		return r;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	entry = json_array_get(root, 0);
	config = json_string_value(json_object_get(entry, "Config"));
	jl = json_object_get(entry, "Layers");
	tags = json_object_get(entry, "RepoTags");
	if (!json_is_array(root) || !config || !json_is_array(jl))
		return pd_fail(err, EINVAL,
			       "manifest.json of the archive: expected "
			       "[{\"Config\": ..., \"Layers\": [...]}]");
	if (json_array_size(jl) > PD_IMAGE_MAX_LAYERS)
		return pd_fail(err, E2BIG, "image has %zu layers; at most %d are supported",
			       json_array_size(jl), PD_IMAGE_MAX_LAYERS);
	r = read_small(dir, config, &ctext, &clen, err);
	if (r < 0)
		return r;
	layers = calloc(json_array_size(jl) + 1, sizeof(*layers));
	l.paths = calloc(json_array_size(jl) + 1, sizeof(char *));
	names = calloc((json_is_array(tags) ? json_array_size(tags) : 0) + 2, sizeof(char *));
	if (!layers || !l.paths || !names) {
		r = pd_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(jl, i, v)
	{
		if (!json_is_string(v)) {
			r = pd_fail(err, EINVAL, "manifest.json: Layers[%zu] is not a path", i);
			goto out;
		}
		layers[i].blob_size = -1; /* a docker archive names no blob digest */
		if (!(l.paths[i] = strdup(json_string_value(v)))) {
			r = pd_fail(err, ENOMEM, "out of memory");
			goto out;
		}
	}
	if (name) {
		names[k++] = strdup(name);
	} else {
		json_array_foreach(tags, i, v)
		{
			char norm[PD_REF_MAX + PD_DIGEST_MAX + 2];
			paddock_error ignored = { 0 };

			if (k < 64 && json_is_string(v) &&
			    normalize(json_string_value(v), "", norm, sizeof(norm), &ignored) == 0)
				names[k++] = strdup(norm);
		}
	}
	for (i = 0; i < k; i++)
		if (!names[i]) {
			r = pd_fail(err, ENOMEM, "out of memory");
			goto out;
		}
	r = pd_image_store_add(s, NULL, 0, ctext, clen, layers, json_array_size(jl),
			       open_docker_layer, &l, (const char *const *)names, ret_json, err);
out:
	pd_strv_free(l.paths);
	return r;
}

int pd_image_import(paddock_image_store *s, const char *path, const char *name, char **ret_json,
		    paddock_error *err)
{
	_cleanup_close_ int in = -EBADF, tmp = -EBADF, dir = -EBADF;
	char norm[PD_REF_MAX + PD_DIGEST_MAX + 2], tmp_name[64];
	bool unpacked = false;
	struct stat st;
	int r;

	if (!s || !path)
		return pd_fail(err, EINVAL, "import: no store or path given");
	if (name) {
		r = normalize(name, "name", norm, sizeof(norm), err);
		if (r < 0)
			return r;
		name = norm;
	}
	in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0 || fstat(in, &st) < 0)
		return pd_fail(err, errno, "open '%s'", PD_ESC(path));
	if (S_ISDIR(st.st_mode)) {
		dir = TAKE_FD(in);
	} else if (S_ISREG(st.st_mode)) {
		struct pd_unpack_opts o = { .blob_size = -1 };
		unsigned rnd = 0;

		tmp = openat(s->fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (tmp < 0)
			return pd_fail(err, errno, "open the store's tmp");
		if (getrandom(&rnd, sizeof(rnd), 0) < 0)
			rnd = (unsigned)getpid() ^ (unsigned)time(NULL);
		snprintf(tmp_name, sizeof(tmp_name), "import-%08x", rnd);
		if (mkdirat(tmp, tmp_name, 0700) < 0)
			return pd_fail(err, errno, "make a temporary directory in the store");
		unpacked = true;
		dir = openat(tmp, tmp_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		r = dir < 0 ? pd_fail(err, errno, "open a temporary directory")
			    : pd_unpack_layer(in, dir, &o, NULL, err);
		if (r < 0) {
			pd_error_prefix(err, "read archive '%s'", PD_ESC(path));
			goto out;
		}
	} else {
		return pd_fail(err, EINVAL, "'%s' is neither a file nor a directory", PD_ESC(path));
	}
	if (faccessat(dir, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = import_oci(s, dir, name, ret_json, err);
	else if (faccessat(dir, "manifest.json", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		r = import_docker(s, dir, name, ret_json, err);
	else
		r = pd_fail(err, EINVAL,
			    "'%s' is neither an OCI image layout (index.json) nor a "
			    "docker archive (manifest.json)",
			    PD_ESC(path));
	if (r < 0)
		pd_error_prefix(err, "import '%s'", PD_ESC(path));
out:
	if (unpacked) {
		paddock_error ignored = { 0 };

		(void)pd_image_remove_tree(tmp, tmp_name, &ignored);
	}
	return r;
}
