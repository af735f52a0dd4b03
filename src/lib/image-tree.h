/* SPDX-License-Identifier: Apache-2.0 */
/* Removing a tree of the image store (image-tree.c). */
#pragma once

#include "paddock/paddock.h"

/* Removes dirfd/name, a file or a whole tree below it; 0 when it is not there. */
int pd_image_remove_tree(int dirfd, const char *name, paddock_error *err);
