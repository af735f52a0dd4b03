/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's event log, <state-dir>/events.jsonl: every event line, one write() per line,
 * O_APPEND. Rotated by size so that it never grows without bound: once the file holds
 * --event-log-max bytes, events.jsonl.N-1 becomes .N (the oldest, .N, goes), ..., .1 becomes
 * .2, events.jsonl becomes .1, and a new events.jsonl is started; --event-log-keep says N.
 * So the log takes at most (N + 1) x max bytes plus a line per file.
 *
 * The files are paddockd's own (0600 in its 0700 state directory); they are opened and
 * renamed relative to the directory's fd, never following a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service.h"

#define LOG_NAME "events.jsonl"

static int open_log(struct daemon *d)
{
	struct stat st;
	int fd;

	fd = openat(d->state_fd, LOG_NAME, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	d->event_log_fd = fd;
	d->event_log_size = (uint64_t)st.st_size;
	return 0;
}

int svc_event_log_open(struct daemon *d, paddock_error *err)
{
	int r;

	d->state_fd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (d->state_fd < 0)
		return paddock_fail(err, errno, "open '%s'", d->state_dir);
	r = open_log(d);
	if (r < 0)
		return paddock_fail(err, -r, "open '%s/%s'", d->state_dir, LOG_NAME);
	return 0;
}

/* events.jsonl.i -> .i+1, oldest first; then the live file becomes .1 and a new one starts */
static void rotate(struct daemon *d)
{
	char from[32], to[32];

	close(d->event_log_fd);
	d->event_log_fd = -1;
	if (d->event_log_keep == 0) {
		(void)unlinkat(d->state_fd, LOG_NAME, 0);
	} else {
		snprintf(to, sizeof(to), LOG_NAME ".%u", d->event_log_keep);
		(void)unlinkat(d->state_fd, to, 0); /* ENOENT: fewer files so far */
		for (unsigned i = d->event_log_keep; i > 1; i--) {
			snprintf(from, sizeof(from), LOG_NAME ".%u", i - 1);
			snprintf(to, sizeof(to), LOG_NAME ".%u", i);
			(void)renameat(d->state_fd, from, d->state_fd, to);
		}
		if (renameat(d->state_fd, LOG_NAME, d->state_fd, LOG_NAME ".1") < 0)
			fprintf(stderr, "paddockd: rotate the event log: %s; starting it over\n",
				strerror(errno));
	}
	if (open_log(d) < 0) {
		/* nothing to log to; the store still has the sandboxes' events */
		fprintf(stderr, "paddockd: reopen the event log: %s\n", strerror(errno));
		d->event_log_fd = -1;
	}
	/* a file that could not be renamed is started over, not grown past the bound */
	if (d->event_log_fd >= 0 && d->event_log_size >= d->event_log_max &&
	    ftruncate(d->event_log_fd, 0) == 0)
		d->event_log_size = 0;
}

void svc_event_log_write(struct daemon *d, const char *line, size_t len)
{
	ssize_t n;

	if (d->event_log_fd < 0)
		return;
	n = write(d->event_log_fd, line, len);
	if (n > 0)
		d->event_log_size += (uint64_t)n;
	if (d->event_log_max > 0 && d->event_log_size >= d->event_log_max)
		rotate(d);
}

void svc_event_log_close(struct daemon *d)
{
	if (d->event_log_fd >= 0)
		close(d->event_log_fd);
	if (d->state_fd >= 0)
		close(d->state_fd);
	d->event_log_fd = d->state_fd = -1;
}
