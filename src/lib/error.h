/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Filling a paddock_error. pd_fail() is called right after the failed call, before anything
 * can change errno; it returns -code so "return pd_fail(...)" is the whole error path.
 */
#pragma once

#include "paddock/paddock.h"

__attribute__((format(printf, 3, 4))) int pd_fail(paddock_error *err, int code, const char *fmt,
						  ...);
__attribute__((format(printf, 4, 5))) int pd_fail_field(paddock_error *err, int code,
							const char *field, const char *fmt, ...);
/* "prefix: <old message>"; keeps code and field. */
__attribute__((format(printf, 2, 3))) void pd_error_prefix(paddock_error *err, const char *fmt,
							   ...);
void pd_error_clear(paddock_error *err);

/*
 * Escapes an untrusted string for a message: printable ASCII kept, everything else as \xNN,
 * truncated to fit `size` (with "..." when cut). Returns buf.
 */
const char *pd_escape(const char *s, char *buf, size_t size);
#define PD_ESC(s) pd_escape((s), (char[128]){ 0 }, 128)
