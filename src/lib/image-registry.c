/* SPDX-License-Identifier: Apache-2.0 */
#include "paddock/image.h"

#include <errno.h>

#include "error.h"

int paddock_image_pull(paddock_image_store *store, const char *ref,
		       const struct paddock_pull_opts *opts, char **ret_json, paddock_error *err)
{
	(void)store; (void)ref; (void)opts; (void)ret_json;
	return pd_fail(err, EOPNOTSUPP, "not yet");
}
