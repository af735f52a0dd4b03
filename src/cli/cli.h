/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

int cmd_run(int argc, char **argv);
int cmd_gc(int argc, char **argv);
