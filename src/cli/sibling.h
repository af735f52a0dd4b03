/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Execs the program `name` that lives beside this one, with argv (argv[0] becomes `name`).
 * Returns only on failure, with an exit status, the message printed.
 */
int cli_exec_sibling(const char *name, int argc, char **argv);
