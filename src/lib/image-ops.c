/* SPDX-License-Identifier: Apache-2.0 */
/* The images half's table (image-module.h): what the rest of libpaddock may call of it. */
#include "image-module.h"

#include "image-store.h"

#include "sandbox.h"
#include "spec.h"

const struct pd_image_ops pd_image_module_ops = {
	.abi = PD_MODULE_ABI(struct pd_image_ops),
	.pull = pd_image_pull,
	.import = pd_image_import,
	.snapshot = pd_image_snapshot,
};
