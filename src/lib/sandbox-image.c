/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox made from an image (spec "image"; docs/images.md). Runs in the supervisor at
 * create, before init exists: the image is resolved in the context's store, its record is
 * held (flock LOCK_SH: `paddock image rm` answers EBUSY while the sandbox lives), and the
 * supervisor's own copy of the spec gets what init needs: the layer directories (sent as
 * trees before GO: launch.c) and the image's defaults, which the spec's own fields beat:
 * Env under the spec's env, WorkingDir where cwd is left at its default.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/image.h"
#include "error.h"
#include "image-store.h"
#include "sandbox.h"
#include "util/cleanup.h"
#include "util/strv.h"

#define DEFAULT_CWD "/workspace"

PD_DEFINE_CLEANUP(struct pd_image, pd_image_free)

int paddock_ctx_set_image_store(paddock_ctx *ctx, const char *dir, paddock_error *err)
{
	char *copy;

	if (!ctx || !dir || dir[0] != '/')
		return pd_fail(err, EINVAL, "expected an absolute image store directory");
	copy = strdup(dir);
	if (!copy)
		return pd_fail(err, ENOMEM, "out of memory");
	free(ctx->image_store);
	ctx->image_store = copy;
	return 0;
}

/* Whether the spec's env names the variable of "NAME=VALUE" already. */
static bool spec_has_var(const paddock_spec *spec, const char *kv)
{
	size_t n = strcspn(kv, "=");

	for (size_t i = 0; i < spec->n_env; i++)
		if (!strncmp(spec->env[i], kv, n) && spec->env[i][n] == '=')
			return true;
	return false;
}

/* The context's store: its own, or the default one. */
int pd_sandbox_image_store_dir(const paddock_ctx *ctx, char *dir, size_t size, paddock_error *err)
{
	if (!ctx->image_store)
		return paddock_image_store_default_dir(dir, size, err);
	snprintf(dir, size, "%s", ctx->image_store);
	return 0;
}

/* Resolves spec's image and applies its Env and WorkingDir to `spec`. */
static int resolve_and_apply(const paddock_ctx *ctx, paddock_spec *spec, struct pd_image **ret,
			     paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	char dir[PATH_MAX];
	int r;

	r = pd_sandbox_image_store_dir(ctx, dir, sizeof(dir), err);
	if (r >= 0)
		r = pd_image_resolve(dir, spec->image, &img, err);
	if (r < 0) {
		if (!err->field[0])
			snprintf(err->field, sizeof(err->field), "image");
		return r;
	}
	/* the image's variables first, the spec's after (they win: init keeps the last) */
	for (char **e = img->env; e && *e; e++) {
		if (spec_has_var(spec, *e))
			continue;
		r = paddock_spec_set(spec, "env", *e, err);
		if (r < 0) {
			pd_error_prefix(err, "image '%s': Env", spec->image);
			return r;
		}
	}
	if (img->cwd && !strcmp(spec->cwd, DEFAULT_CWD)) {
		r = paddock_spec_set(spec, "cwd", img->cwd, err);
		if (r < 0) {
			pd_error_prefix(err, "image '%s': WorkingDir", spec->image);
			return r;
		}
	}
	*ret = TAKE_PTR(img);
	return 0;
}

/* An OCI bundle's root (include/paddock/oci.h): its directories are the image's layers. */
static int root_layers(paddock_spec *spec, paddock_error *err)
{
	size_t n = pd_strv_length(spec->root_layers);
	_cleanup_strv_ char **v = NULL;

	if (n == 0)
		return 0;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return pd_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!(v[i] = strdup(spec->root_layers[i])))
			return pd_fail(err, ENOMEM, "out of memory");
	pd_strv_free(spec->image_layers);
	spec->image_layers = TAKE_PTR(v);
	return 0;
}

int pd_sandbox_image_prepare(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	int r;

	if (!sb->spec->image)
		return root_layers(sb->spec, err);
	r = resolve_and_apply(sb->ctx, sb->spec, &img, err);
	if (r < 0)
		return r;
	sb->spec->image_layers = TAKE_PTR(img->layer_dirs);
	sb->image_lock = TAKE_FD(img->lock_fd);
	snprintf(sb->image_id, sizeof(sb->image_id), "%s", img->id);
	return 0;
}

void pd_sandbox_image_hold(paddock_sandbox *sb)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	paddock_error ignored = { 0 };
	char dir[PATH_MAX];

	if (!sb->image_id[0] || sb->image_lock >= 0 ||
	    pd_sandbox_image_store_dir(sb->ctx, dir, sizeof(dir), &ignored) < 0 ||
	    pd_image_resolve(dir, sb->image_id, &img, &ignored) < 0)
		return;
	sb->image_lock = TAKE_FD(img->lock_fd);
}

int pd_sandbox_image_claim_spec(const paddock_sandbox *sb, const paddock_spec *spec,
				paddock_spec **ret_copy, paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	paddock_spec *copy = NULL;
	int r;

	*ret_copy = NULL;
	if (!spec->image)
		return 0;
	r = pd_spec_dup(spec, &copy, err);
	if (r >= 0)
		r = resolve_and_apply(sb->ctx, copy, &img, err);
	if (r < 0) {
		paddock_spec_free(copy);
		return r;
	}
	*ret_copy = copy;
	return 0;
}
