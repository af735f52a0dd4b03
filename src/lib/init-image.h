/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The init image: init-main.c and the running half of init (init-run.c), linked statically
 * into one small executable at build time and carried inside libpaddock (init-image.S).
 * Every sandbox's init execs it once its root is built (init.c), from a sealed memfd made
 * once per process: nothing on disk to find, replace or race, and every init of a process
 * shares its pages.
 */
#pragma once

#include "paddock/paddock.h"

/*
 * The image, read-only and close-on-exec, made at the first call and kept for the process's
 * life (do not close it). An fd, or -errno.
 */
int pd_init_image_fd(paddock_error *err);
