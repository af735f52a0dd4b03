/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays fuzz inputs when the build has no libFuzzer: `fuzz-NAME DIR|FILE...` feeds every
 * regular file under each directory (names starting with '.' skipped, in name order), or
 * each file named, once to LLVMFuzzerTestOneInput(). With the sanitizers on, `meson test`
 * then runs every seed and every crash reproducer kept in the corpus.
 *
 * Each input is read into a buffer of exactly its size, so a read past the end is caught.
 * Exit status: 0 when all inputs ran, 1 when one could not be read or none was found.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int report(int r, const char *what, const char *name)
{
	fprintf(stderr, "%s '%s': %s\n", what, name, strerror(-r));
	return r;
}

/* Runs the input in fd; returns 0, or -errno when it cannot be read. */
static int replay_fd(int fd, const char *name)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	size_t size, got = 0;

	if (fstat(fd, &st) < 0)
		return report(-errno, "stat", name);
	size = (size_t)st.st_size;
	/* malloc(0) may return NULL; a one-byte buffer still holds an empty input */
	buf = malloc(size > 0 ? size : 1);
	if (!buf) {
		fprintf(stderr, "read '%s': out of memory\n", name);
		return -ENOMEM;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return report(-errno, "read", name);
		if (n == 0) {
			fprintf(stderr, "read '%s': file shrank while reading\n", name);
			return -EIO;
		}
		got += (size_t)n;
	}
	(void)LLVMFuzzerTestOneInput(buf, size); /* libFuzzer reserves non-zero returns */
	return 0;
}

static int skip_hidden(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static int replay_entry(const char *dir, int dir_fd, const char *name, size_t *count)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int r;

	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		fprintf(stderr, "open '%s/%s': %s\n", dir, name, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	r = replay_fd(fd, name);
	if (r < 0)
		return r;
	(*count)++;
	return 0;
}

/* Replays every regular file in dir, in name order; adds to *count. */
static int replay_dir(const char *dir, int dir_fd, size_t *count)
{
	struct dirent **names = NULL;
	int n, r = 0;

	n = scandirat(dir_fd, ".", &names, skip_hidden, alphasort);
	if (n < 0)
		return report(-errno, "list", dir);
	for (int i = 0; i < n && r == 0; i++)
		r = replay_entry(dir, dir_fd, names[i]->d_name, count);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

int main(int argc, char **argv)
{
	size_t count = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		_cleanup_close_ int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		struct stat st;
		int r;

		if (fd < 0 || fstat(fd, &st) < 0) {
			(void)report(-errno, "open", argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			r = replay_dir(argv[i], fd, &count);
		} else {
			r = replay_fd(fd, argv[i]);
			count += r == 0;
		}
		if (r < 0)
			return 1;
	}
	if (count == 0) {
		fprintf(stderr, "no inputs found in %s%s\n", argv[1], argc > 2 ? " ..." : "");
		return 1;
	}
	fprintf(stderr, "replayed %zu inputs\n", count);
	return 0;
}
