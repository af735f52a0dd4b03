/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NULL-terminated arrays of malloc'ed strings. */
void pd_strv_free(char **v);
size_t pd_strv_length(char *const *v);

/*
 * Unpacks `n` NUL-terminated strings laid end to end from *pos, none past `end`, into a new
 * NULL-terminated array pointing into that buffer (free() the array, not its strings), and
 * advances *pos past them. Each must pass `ok`, when given. The one reader of packed string
 * lists (control messages, init's configuration). 0, or -EPROTO (more than `max`, one runs
 * past `end`, one refused), or -ENOMEM; *ret and *pos are written only on success.
 */
int pd_strv_unpack(const char **pos, const char *end, uint32_t n, uint32_t max,
		   bool (*ok)(const char *s), char ***ret);

/* For `ok`: "NAME=VALUE" with a '=' anywhere; and with a NAME before it. */
bool pd_str_has_assignment(const char *s);
bool pd_str_is_named_assignment(const char *s);
