/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The entry point of paddock-images.so (module.h), built into the module only. The images
 * half needs nothing of the program's state: no host table.
 */
#include "image-module.h"

PD_MODULE_EXPORT const void *pd_image_module_init(const void *host);

const void *pd_image_module_init(const void *host)
{
	(void)host;
	return &pd_image_module_ops;
}
