/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/* NULL-terminated arrays of malloc'ed strings. */
void pd_strv_free(char **v);
size_t pd_strv_length(char *const *v);
