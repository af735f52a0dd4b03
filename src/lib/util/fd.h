/* SPDX-License-Identifier: Apache-2.0 */
/* Small fd mechanisms: full writes and reads, file creation relative to a dir fd. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying on EINTR and short writes. 0 or -errno. */
int pd_write_all(int fd, const void *buf, size_t len);
/* Reads up to len bytes until EOF; returns the count or -errno. */
ssize_t pd_read_full(int fd, void *buf, size_t len);
/* Creates (O_EXCL) dirfd/name with mode and writes the bytes. 0 or -errno. */
int pd_write_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode);
/* Writes a short string into an existing file (a /proc or cgroup control). 0 or -errno. */
int pd_write_control(int dirfd, const char *name, const char *value);
