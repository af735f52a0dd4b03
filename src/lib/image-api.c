/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddock_image_pull() and paddock_image_import() (image.h): the images half's, reached
 * through its table (image-module.h), so that only a program that adds images loads it.
 */
#include <errno.h>

#include "error.h"
#include "image-module.h"

int paddock_image_pull(paddock_image_store *store, const char *ref,
		       const struct paddock_pull_opts *opts, char **ret_json, paddock_error *err)
{
	const struct pd_image_ops *im;
	int r = pd_image_ops(&im, err);

	if (r < 0)
		return r;
	return im->pull(store, ref, opts, ret_json, err);
}

int paddock_image_import(paddock_image_store *store, const char *path, const char *name,
			 char **ret_json, paddock_error *err)
{
	const struct pd_image_ops *im;
	int r = pd_image_ops(&im, err);

	if (r < 0)
		return r;
	return im->import(store, path, name, ret_json, err);
}
