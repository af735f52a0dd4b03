/* SPDX-License-Identifier: Apache-2.0 */
/*
 * diskfill: a probe the limit tests run inside sandboxes. It writes 1 MiB blocks until it
 * has written MIB of them or a write fails, then prints one JSON line on stdout and exits 0
 * either way:
 *
 *   {"written_mib":57,"errno":"ENOSPC"}      (errno: the failure that stopped it, or null)
 *
 * Usage:
 *   diskfill DIR MIB              one new 1 MiB file per block, DIR/diskfill-00000 and on
 *                                 (no single file grows, so only the space limit stops it)
 *   diskfill --one-file FILE MIB  every block into one new file (for RLIMIT_FSIZE: EFBIG)
 *
 * SIGXFSZ is ignored, so going past RLIMIT_FSIZE fails the write with EFBIG rather than
 * killing the probe. written_mib counts whole blocks that reached the file: a short write
 * that ends in an error does not count. Each file is fsync()ed and its close() checked, so
 * a filesystem that reports ENOSPC late (delayed allocation) is counted right too.
 *
 * Bounded, in case it runs on the host by mistake: MIB is at most 1024, and it creates its
 * files with O_EXCL, so it never overwrites anything. Exit status 2: bad arguments; any
 * failure after that (no such DIR, too) is in the JSON line. Standalone: libc only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MIB 1024L
#define BLOCK	(1024 * 1024)

static char block[BLOCK];

static const char *errno_name(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

/* Writes the whole block; returns 0 or an errno value. */
static int write_block(int fd)
{
	size_t done = 0;

	while (done < sizeof(block)) {
		ssize_t w = write(fd, block + done, sizeof(block) - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		done += (size_t)w;
	}
	return 0;
}

static int create(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

/* Ends a file: 0 or an errno value. The file stays, even when closing it failed. */
static int finish_file(int fd)
{
	int e = 0;

	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		e = errno; /* EINVAL/EROFS: this file type cannot be synced; nothing was lost */
	if (close(fd) < 0 && e == 0 && errno != EINTR)
		e = errno;
	return e;
}

static void report(long written, int e)
{
	printf("{\"written_mib\":%ld,\"errno\":", written);
	if (e)
		printf("\"%s\"}\n", errno_name(e));
	else
		printf("null}\n");
}

/* One 1 MiB file per block in DIR. */
static int fill_dir(const char *dir, long mib, long *ret_written)
{
	long n = 0;
	int e = 0;

	for (; n < mib; n++) {
		char path[4096];
		int fd;

		if (snprintf(path, sizeof(path), "%s/diskfill-%05ld", dir, n) >=
		    (int)sizeof(path)) {
			e = ENAMETOOLONG;
			break;
		}
		fd = create(path);
		if (fd < 0) {
			e = errno;
			break;
		}
		e = write_block(fd);
		if (e) {
			(void)finish_file(fd);
			break;
		}
		e = finish_file(fd);
		if (e)
			break;
	}
	*ret_written = n;
	return e;
}

/* Every block into FILE. */
static int fill_file(const char *file, long mib, long *ret_written)
{
	long n = 0;
	int fd = create(file), e = 0;

	if (fd < 0) {
		*ret_written = 0;
		return errno;
	}
	for (; n < mib; n++) {
		e = write_block(fd);
		if (e)
			break;
	}
	if (e) {
		(void)finish_file(fd);
	} else {
		e = finish_file(fd);
		/* the last blocks may not have made it after all; we cannot tell which */
		if (e && n > 0)
			n--;
	}
	*ret_written = n;
	return e;
}

int main(int argc, char **argv)
{
	bool one_file = argc == 4 && strcmp(argv[1], "--one-file") == 0;
	const char *path, *mib_arg;
	long mib, written = 0;
	char *end;
	int e;

	if (argc != 3 && !one_file) {
		fprintf(stderr, "usage: diskfill DIR MIB | diskfill --one-file FILE MIB\n");
		return 2;
	}
	path = argv[argc - 2];
	mib_arg = argv[argc - 1];
	errno = 0;
	mib = strtol(mib_arg, &end, 10);
	if (errno != 0 || end == mib_arg || *end != '\0' || mib < 1 || mib > MAX_MIB) {
		fprintf(stderr, "diskfill: MIB must be 1..%ld, got '%s'\n", MAX_MIB, mib_arg);
		return 2;
	}
	/* the same non-zero pattern everywhere: nothing may store it as a hole */
	memset(block, 0x5a, sizeof(block));
	(void)signal(SIGXFSZ, SIG_IGN);

	e = one_file ? fill_file(path, mib, &written) : fill_dir(path, mib, &written);
	report(written, e);
	return fflush(stdout) == 0 ? 0 : 1;
}
