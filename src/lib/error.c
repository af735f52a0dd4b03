/* SPDX-License-Identifier: Apache-2.0 */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 4, 0))) static void
vset(paddock_error *err, int code, const char *field, const char *fmt, va_list ap)
{
	if (!err)
		return;
	err->code = code > 0 ? code : (code < 0 ? -code : EIO);
	snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int pd_fail(paddock_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (code < 0)
		code = -code;
	if (code == 0)
		code = EIO;
	va_start(ap, fmt);
	vset(err, code, NULL, fmt, ap);
	va_end(ap);
	return -code;
}

int pd_fail_field(paddock_error *err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (code < 0)
		code = -code;
	if (code == 0)
		code = EINVAL;
	va_start(ap, fmt);
	vset(err, code, field, fmt, ap);
	va_end(ap);
	return -code;
}

void pd_error_prefix(paddock_error *err, const char *fmt, ...)
{
	char prefix[192], old[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	/* truncation is fine here: the message stays terminated and the start is kept */
	size_t pl = strlen(prefix); /* < sizeof(prefix) <= sizeof(err->msg) - 3 */
	memcpy(err->msg, prefix, pl);
	memcpy(err->msg + pl, ": ", 2);
	snprintf(err->msg + pl + 2, sizeof(err->msg) - pl - 2, "%.*s",
		 (int)(sizeof(err->msg) - pl - 3), old);
}

void pd_error_clear(paddock_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

const char *pd_escape(const char *s, char *buf, size_t size)
{
	size_t o = 0;

	if (size == 0)
		return buf;
	if (!s) {
		snprintf(buf, size, "(null)");
		return buf;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[5];
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
			tmp[0] = (char)c;
			n = 1;
		} else {
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		}
		if (o + n + 4 > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

static const struct {
	int code;
	const char *name;
} errno_names[] = {
	{ EPERM, "EPERM" },
	{ ENOENT, "ENOENT" },
	{ ESRCH, "ESRCH" },
	{ EINTR, "EINTR" },
	{ EIO, "EIO" },
	{ ENXIO, "ENXIO" },
	{ E2BIG, "E2BIG" },
	{ ENOEXEC, "ENOEXEC" },
	{ EBADF, "EBADF" },
	{ ECHILD, "ECHILD" },
	{ EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" },
	{ EACCES, "EACCES" },
	{ EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" },
	{ EXDEV, "EXDEV" },
	{ ENODEV, "ENODEV" },
	{ ENOTDIR, "ENOTDIR" },
	{ EISDIR, "EISDIR" },
	{ EINVAL, "EINVAL" },
	{ ENFILE, "ENFILE" },
	{ EMFILE, "EMFILE" },
	{ ENOTTY, "ENOTTY" },
	{ EFBIG, "EFBIG" },
	{ ENOSPC, "ENOSPC" },
	{ ESPIPE, "ESPIPE" },
	{ EROFS, "EROFS" },
	{ EPIPE, "EPIPE" },
	{ ERANGE, "ERANGE" },
	{ ENAMETOOLONG, "ENAMETOOLONG" },
	{ ENOSYS, "ENOSYS" },
	{ ENOTEMPTY, "ENOTEMPTY" },
	{ ELOOP, "ELOOP" },
	{ EOVERFLOW, "EOVERFLOW" },
	{ EPROTO, "EPROTO" },
	{ EMSGSIZE, "EMSGSIZE" },
	{ EOPNOTSUPP, "EOPNOTSUPP" },
	{ ECONNRESET, "ECONNRESET" },
	{ ETIMEDOUT, "ETIMEDOUT" },
	{ ECONNREFUSED, "ECONNREFUSED" },
	{ EALREADY, "EALREADY" },
	{ ECANCELED, "ECANCELED" },
	{ EDQUOT, "EDQUOT" },
};

const char *paddock_errno_name(int code)
{
	if (code < 0)
		code = -code;
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].code == code)
			return errno_names[i].name;
	return "E?";
}

int paddock_errno_from_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (strcmp(errno_names[i].name, name) == 0)
			return errno_names[i].code;
	return 0;
}

const char *paddock_error_format(const paddock_error *err, char *buf, size_t size)
{
	if (!err || err->code == 0)
		snprintf(buf, size, "%s", err && err->msg[0] ? err->msg : "no error");
	else
		snprintf(buf, size, "%s: %s", err->msg, strerror(err->code));
	return buf;
}

/* The public names of the functions above: one implementation, the library's and the front ends' */
extern __typeof__(pd_fail) paddock_fail __attribute__((alias("pd_fail")));
extern __typeof__(pd_fail_field) paddock_fail_field __attribute__((alias("pd_fail_field")));
extern __typeof__(pd_error_prefix) paddock_error_prefix __attribute__((alias("pd_error_prefix")));
extern __typeof__(pd_error_clear) paddock_error_clear __attribute__((alias("pd_error_clear")));
extern __typeof__(pd_escape) paddock_escape __attribute__((alias("pd_escape")));
