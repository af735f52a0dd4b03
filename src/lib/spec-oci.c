/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec's fields for the OCI runtime (include/paddock/oci.h): a root made of directories
 * stacked as an image's layers, and a network namespace to join. Set by a front end from an
 * OCI bundle's config.json (src/oci/), never from the spec's JSON: they name host paths
 * that only the host's own tooling (an engine) chose. Checked here like any other field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/oci.h"
#include "error.h"
#include "spec.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define ROOT_LAYERS_MAX 128

static int check_abs(const char *field, const char *path, paddock_error *err)
{
	size_t n = strlen(path);

	if (path[0] != '/' || n > PD_SPEC_MAX_PATH)
		return pd_fail_field(err, EINVAL, field,
				     "expected an absolute path of at most %d bytes, got '%s'",
				     PD_SPEC_MAX_PATH, PD_ESC(path));
	return 0;
}

static char **strv_copy(char *const *v)
{
	size_t n = pd_strv_length(v);
	_cleanup_strv_ char **c = calloc(n + 1, sizeof(*c));

	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i])))
			return NULL;
	return TAKE_PTR(c);
}

int paddock_spec_set_root_layers(paddock_spec *spec, const char *const *dirs, paddock_error *err)
{
	size_t n = 0;
	char **copy = NULL;
	int r;

	if (!spec)
		return pd_fail(err, EINVAL, "paddock_spec_set_root_layers: no spec given");
	for (; dirs && dirs[n]; n++) {
		r = check_abs("root.path", dirs[n], err);
		if (r < 0)
			return r;
	}
	if (n > ROOT_LAYERS_MAX)
		return pd_fail_field(err, E2BIG, "root.path", "%zu layers: at most %d", n,
				     ROOT_LAYERS_MAX);
	if (n > 0 && !(copy = strv_copy((char *const *)dirs)))
		return pd_fail(err, ENOMEM, "out of memory");
	pd_strv_free(spec->root_layers);
	spec->root_layers = copy;
	return 0;
}

int paddock_spec_set_netns(paddock_spec *spec, const char *path, paddock_error *err)
{
	char *copy = NULL;
	int r;

	if (!spec)
		return pd_fail(err, EINVAL, "paddock_spec_set_netns: no spec given");
	if (path) {
		r = check_abs("linux.namespaces.network.path", path, err);
		if (r < 0)
			return r;
		if (!(copy = strdup(path)))
			return pd_fail(err, ENOMEM, "out of memory");
	}
	free(spec->netns_path);
	spec->netns_path = copy;
	return 0;
}

int paddock_spec_set_root_readonly(paddock_spec *spec, bool readonly, paddock_error *err)
{
	if (!spec)
		return pd_fail(err, EINVAL, "paddock_spec_set_root_readonly: no spec given");
	spec->root_readonly = readonly;
	return 0;
}

int pd_spec_oci_copy(paddock_spec *dst, const paddock_spec *src)
{
	dst->root_readonly = src->root_readonly;
	if (src->root_layers && !(dst->root_layers = strv_copy(src->root_layers)))
		return -ENOMEM;
	if (src->netns_path && !(dst->netns_path = strdup(src->netns_path)))
		return -ENOMEM;
	return 0;
}

void pd_spec_oci_clear(paddock_spec *spec)
{
	pd_strv_free(spec->root_layers);
	spec->root_layers = NULL;
	free(spec->netns_path);
	spec->netns_path = NULL;
	spec->root_readonly = false;
}

int pd_spec_oci_validate(const paddock_spec *spec, paddock_error *err)
{
	if (spec->root_layers && (spec->image || spec->rootfs))
		return pd_fail_field(err, EINVAL, spec->image ? "image" : "rootfs",
				     "expected no \"%s\" with a bundle's root",
				     spec->image ? "image" : "rootfs");
	if (spec->root_readonly && !spec->root_layers)
		return pd_fail_field(err, EINVAL, "root.readonly",
				     "only a bundle's root is made read-only this way");
	if (spec->netns_path && spec->network.mode != PD_NET_NONE)
		return pd_fail_field(err, EINVAL, "network.mode",
				     "a joined network namespace is the engine's: paddock's egress "
				     "proxy cannot govern it (network.mode must be \"none\", got "
				     "\"%s\")",
				     pd_net_mode_to_string(spec->network.mode));
	return 0;
}
