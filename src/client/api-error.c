/* SPDX-License-Identifier: Apache-2.0 */
#include "api-error.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int status_errno(int status)
{
	switch (status) {
	case 400:
	case 405:
	case 416:
		return EINVAL;
	case 401:
		return EACCES;
	case 403:
		return EPERM;
	case 404:
		return ENOENT;
	case 409:
		return EBUSY;
	case 413:
		return EFBIG;
	case 422:
		return ENOTSUP;
	case 429:
		return EAGAIN;
	default:
		return status >= 500 ? EIO : EPROTO;
	}
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

int client_error_answer(int status, const char *reason, const char *body, size_t len,
			paddock_error *err, bool *ret_named)
{
	json_t *json = body ? json_loadb(body, len, JSON_ALLOW_NUL, NULL) : NULL;
	json_t *e = json_object_get(json, "error");
	const char *msg = str(e, "message"), *code_name = str(e, "code");
	int code = paddock_errno_from_name(str(e, "errno"));

	if (ret_named)
		*ret_named = code != 0;
	if (!code)
		code = status_errno(status);
	if (!*msg && !*code_name) {
		json_decref(json);
		return paddock_fail(err, code, "paddockd answered %d %s", status,
				    reason ? reason : "");
	}
	paddock_fail_field(err, code, str(e, "field"), "%s", *msg ? msg : code_name);
	json_decref(json);
	return -code;
}
