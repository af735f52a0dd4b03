/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The halves of libpaddock linked into the program (module.h): paddockd, libpaddock.so and
 * the tests get their tables straight away.
 */
#include "egress-module.h"
#include "image-module.h"

int pd_egress_ops(const struct pd_egress_ops **ret_ops, paddock_error *err)
{
	(void)err;
	*ret_ops = &pd_egress_module_ops;
	return 0;
}

int pd_image_ops(const struct pd_image_ops **ret_ops, paddock_error *err)
{
	(void)err;
	*ret_ops = &pd_image_module_ops;
	return 0;
}
