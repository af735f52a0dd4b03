/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading OCI image indexes and manifests, and docker's schema 2 equivalents
 * (image-spec/manifest.md, image-index.md; docker's manifest v2 schema 2). Runs in the
 * supervisor on documents a registry or a file gave us: hostile, bounded, parsed strictly.
 */
#include "image-oci.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "util/cleanup.h"

#define MT_OCI_INDEX	   "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST	   "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST	   "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_V1	   "application/vnd.docker.distribution.manifest.v1"

static int load(const char *json, size_t len, json_t **ret, const char *what, paddock_error *err)
{
	json_error_t jerr;

	if (len > PD_IMAGE_MAX_JSON)
		return pd_fail(err, EFBIG, "%s larger than %u bytes", what, PD_IMAGE_MAX_JSON);
	*ret = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!*ret || !json_is_object(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		return pd_fail(err, EINVAL, "%s: not a JSON object (%s)", what, jerr.text);
	}
	return 0;
}

int pd_oci_kind(const char *json, size_t len, const char *content_type, enum pd_oci_kind *ret,
		paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	const char *mt;
	int r;

	r = load(json, len, &root, "manifest", err);
	if (r < 0)
		return r;
	mt = json_string_value(json_object_get(root, "mediaType"));
	if (!mt)
		mt = content_type;
	if (mt && (!strncmp(mt, MT_OCI_INDEX, strlen(MT_OCI_INDEX)) ||
		   !strncmp(mt, MT_DOCKER_LIST, strlen(MT_DOCKER_LIST)))) {
		*ret = PD_OCI_INDEX;
		return 0;
	}
	if (mt && (!strncmp(mt, MT_OCI_MANIFEST, strlen(MT_OCI_MANIFEST)) ||
		   !strncmp(mt, MT_DOCKER_MANIFEST, strlen(MT_DOCKER_MANIFEST)))) {
		*ret = PD_OCI_MANIFEST;
		return 0;
	}
	if (mt && !strncmp(mt, MT_DOCKER_V1, strlen(MT_DOCKER_V1)))
		return pd_fail(err, EOPNOTSUPP,
			       "a docker schema 1 manifest: not supported (push the image again "
			       "with a current client)");
	/* an OCI document may leave mediaType out: its shape says which */
	if (json_is_array(json_object_get(root, "manifests"))) {
		*ret = PD_OCI_INDEX;
		return 0;
	}
	if (json_is_object(json_object_get(root, "config")) &&
	    json_is_array(json_object_get(root, "layers"))) {
		*ret = PD_OCI_MANIFEST;
		return 0;
	}
	return pd_fail(err, EINVAL, "not an image manifest or index (mediaType '%s')",
		       mt ? PD_ESC(mt) : "none");
}

/* A descriptor's digest (checked) and size. */
static int descriptor(json_t *d, const char *what, char digest[PD_DIGEST_MAX], int64_t *size,
		      paddock_error *err)
{
	const char *dg = json_string_value(json_object_get(d, "digest"));
	json_t *sz = json_object_get(d, "size");

	if (!json_is_object(d))
		return pd_fail(err, EINVAL, "%s: not a descriptor object", what);
	if (!pd_digest_valid(dg))
		return pd_fail(err, EINVAL, "%s: expected a sha256 digest, got '%s'", what,
			       dg ? PD_ESC(dg) : "none");
	if (!json_is_integer(sz) || json_integer_value(sz) < 0)
		return pd_fail(err, EINVAL, "%s: expected a size", what);
	snprintf(digest, PD_DIGEST_MAX, "%s", dg);
	*size = (int64_t)json_integer_value(sz);
	return 0;
}

int pd_oci_parse_manifest(const char *json, size_t len, struct pd_manifest *ret, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	json_t *layers, *v;
	size_t i;
	int r;

	r = load(json, len, &root, "manifest", err);
	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	r = descriptor(json_object_get(root, "config"), "manifest config", ret->config_digest,
		       &ret->config_size, err);
	if (r < 0)
		return r;
	if (ret->config_size > PD_IMAGE_MAX_JSON)
		return pd_fail(err, EFBIG, "image config larger than %u bytes", PD_IMAGE_MAX_JSON);
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers))
		return pd_fail(err, EINVAL, "manifest: expected an array of layers");
	if (json_array_size(layers) > PD_IMAGE_MAX_LAYERS)
		return pd_fail(err, E2BIG, "image has %zu layers; at most %d are supported",
			       json_array_size(layers), PD_IMAGE_MAX_LAYERS);
	json_array_foreach(layers, i, v)
	{
		struct pd_layer_src *l = &ret->layers[i];
		const char *mt = json_string_value(json_object_get(v, "mediaType"));
		char what[48];

		snprintf(what, sizeof(what), "manifest layer %zu", i);
		r = descriptor(v, what, l->blob_digest, &l->blob_size, err);
		if (r < 0)
			return r;
		snprintf(l->media_type, sizeof(l->media_type), "%s", mt ? mt : "");
		/* a tar, whatever the compression: the unpacker finds out which (gzip, zstd) */
		if (mt && !strstr(mt, "tar") && !strstr(mt, "rootfs.diff"))
			return pd_fail(err, EOPNOTSUPP,
				       "manifest layer %zu: media type '%s' is not "
				       "a filesystem layer",
				       i, PD_ESC(mt));
		ret->n_layers++;
	}
	return 0;
}

/* "linux/amd64" or "linux/arm/v7": os, architecture, variant. */
static void split_platform(const char *p, char os[32], char arch[32], char variant[32])
{
	os[0] = arch[0] = variant[0] = '\0';
	(void)sscanf(p, "%31[^/]/%31[^/]/%31s", os, arch, variant);
}

int pd_oci_pick(const char *json, size_t len, const char *platform, char ret_digest[PD_DIGEST_MAX],
		int64_t *ret_size, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	char want_os[32], want_arch[32], want_var[32], have[256] = "";
	char buf[64];
	size_t i, o = 0;
	json_t *m, *list;
	int r;

	r = load(json, len, &root, "index", err);
	if (r < 0)
		return r;
	if (!platform) {
		snprintf(buf, sizeof(buf), "linux/%s", pd_image_arch());
		platform = buf;
	}
	split_platform(platform, want_os, want_arch, want_var);
	list = json_object_get(root, "manifests");
	if (!json_is_array(list) || json_array_size(list) > 4096)
		return pd_fail(err, EINVAL, "index: expected an array of manifests");
	json_array_foreach(list, i, m)
	{
		json_t *p = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(p, "os"));
		const char *arch = json_string_value(json_object_get(p, "architecture"));
		const char *var = json_string_value(json_object_get(p, "variant"));

		if (!os || !arch)
			continue; /* attestations and the like: no platform */
		if (o < sizeof(have))
			o += (size_t)snprintf(have + o, sizeof(have) - o, "%s%.20s/%.20s",
					      o ? ", " : "", os, arch);
		if (strcmp(os, want_os) || strcmp(arch, want_arch) ||
		    (want_var[0] && var && strcmp(var, want_var)))
			continue;
		return descriptor(m, "index entry", ret_digest, ret_size, err);
	}
	return pd_fail_field(err, ENOENT, "image", "no manifest for %s in the index (it has: %s)",
			     PD_ESC(platform), have[0] ? PD_ESC(have) : "none");
}
