/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

int cmd_run(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_files(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_ttl(int argc, char **argv);
/* pause, resume, stop and start (cmd-lifecycle.c): which one is argv[0] */
int cmd_lifecycle(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_fork(int argc, char **argv);
int cmd_code(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_image(int argc, char **argv);

#include <stddef.h>
#include "paddock/paddock.h"
/* The image store `paddock image` and `paddock run --image` use: given, $PADDOCK_IMAGE_STORE,
 * or libpaddock's default. */
int cli_image_store_dir(const char *given, char *buf, size_t size, paddock_error *err);
