/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddock-oci's global options and its log: to --log (text, or JSON lines with
 * --log-format json, as containerd and Podman read them) and, for errors, stderr too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"

const char *arg_root = OCI_ROOT_DEFAULT;
const char *arg_log;
bool arg_log_json;
bool arg_systemd_cgroup;
bool arg_debug;
const char *arg_resolve_hosts;
const char *arg_upstream_ca[8];

void oci_now_rfc3339(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%09ldZ", base, ts.tv_nsec);
}

static void log_line(const char *level, const char *msg)
{
	char ts[64], line[4096];
	int fd, n;

	if (!arg_log)
		return;
	oci_now_rfc3339(ts, sizeof(ts));
	if (arg_log_json) {
		json_t *o = json_pack("{s:s,s:s,s:s}", "level", level, "msg", msg, "time", ts);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

		n = s ? snprintf(line, sizeof(line), "%s\n", s) : 0;
		free(s);
		json_decref(o);
	} else {
		n = snprintf(line, sizeof(line), "%s %s paddock-oci[%d]: %s\n", ts, level,
			     (int)getpid(), msg);
	}
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	fd = open(arg_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return;
	(void)!write(fd, line, (size_t)n); /* one write per line: O_APPEND keeps lines whole */
	close(fd);
}

void oci_log(const char *level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(level, msg);
	if (!strcmp(level, "error") || (!arg_log && strcmp(level, "debug")))
		dprintf(STDERR_FILENO, "paddock-oci: %s%s%s\n", strcmp(level, "error") ? level : "",
			strcmp(level, "error") ? ": " : "", msg);
}

int oci_fail(const paddock_error *err)
{
	char buf[768];

	if (err->field[0])
		oci_log("error", "%s: %s", err->field, paddock_error_format(err, buf, sizeof(buf)));
	else
		oci_log("error", "%s", paddock_error_format(err, buf, sizeof(buf)));
	return 1;
}

int oci_error(paddock_error *err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	snprintf(err->field, sizeof(err->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -code;
}

int oci_failf(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	oci_log("error", "%s", msg);
	return 1;
}
