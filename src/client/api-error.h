/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's error answers, {"error":{"code","field","message"[,"errno"]}} (docs/api.md), as
 * a paddock_error, read one way by every client of paddockd (`paddock`, `paddock mcp
 * --connect`).
 *
 * Trust: paddockd's messages may quote what a sandbox or an agent chose (paths, names): they
 * are copied as they are, cut to the error's size; a caller that prints them escapes them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "paddock/paddock.h"

/*
 * Fills err from an error answer's status, reason phrase and body (any bytes, not
 * NUL-terminated) and returns -code: the errno paddockd named, else the one the status
 * means (400 EINVAL, 401 EACCES, 403 EPERM, 404 ENOENT, 409 EBUSY, 413 EFBIG, 422 ENOTSUP,
 * 429 EAGAIN, 5xx EIO, else EPROTO). The message is paddockd's "message" (its "code" when the
 * message is empty); a body that is not paddockd's JSON (evhttp's own 400 or 413) gives
 * "paddockd answered STATUS REASON". *ret_named, when given, says whether paddockd named the
 * errno (a client that adds strerror() to the message adds it only then).
 */
int client_error_answer(int status, const char *reason, const char *body, size_t len,
			paddock_error *err, bool *ret_named);
