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

int pd_sandbox_image_prepare(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	paddock_spec *spec = sb->spec;
	char dir[PATH_MAX];
	int r;

	if (!spec->image)
		return 0;
	if (sb->ctx->image_store)
		snprintf(dir, sizeof(dir), "%s", sb->ctx->image_store);
	else if ((r = paddock_image_store_default_dir(dir, sizeof(dir), err)) < 0)
		return r;
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
	spec->image_layers = TAKE_PTR(img->layer_dirs);
	sb->image_lock = TAKE_FD(img->lock_fd);
	return 0;
}
