/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the layer unpacker (image-unpack.c). The input is a layer stream (tar, plain,
 * gzip or zstd), unpacked into a fresh directory "layer" beside an empty "outside": whatever
 * the input, nothing may appear outside (no escape through names, symlinks or hard links),
 * nothing in the layer may be a device node other than a whiteout (0/0) or carry a set-id
 * bit, and the layer must be removable. Limits are lowered so that an iteration stays cheap.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "image-tree.h"
#include "image-unpack.h"
#include "util/cleanup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int scratch = -1;
static char scratch_path[64];

static bool empty(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	bool ok = true;

	if (!d)
		abort();
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			ok = false;
	closedir(d);
	return ok;
}

/* Every entry below dirfd: no device but whiteouts, no set-id bit. */
static void check_tree(int dirfd, int depth)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d || depth > 600)
		abort();
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			abort();
		if (st.st_mode & (S_ISUID | S_ISGID) && !S_ISDIR(st.st_mode))
			abort();
		if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode) ||
		    (S_ISCHR(st.st_mode) && st.st_rdev != makedev(0, 0)))
			abort();
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

			if (sub >= 0) {
				check_tree(sub, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
}

static void remove_scratch(void)
{
	paddock_error err = { 0 };

	(void)pd_image_remove_tree(scratch, "outside", &err);
	(void)pd_image_remove_tree(scratch, "layer", &err);
	close(scratch);
	(void)rmdir(scratch_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_unpack_opts o = { .blob_size = -1, .max_bytes = 8u << 20, .max_entries = 2000 };
	paddock_error err = { 0 };
	int in, layer;

	if (scratch < 0) {
		snprintf(scratch_path, sizeof(scratch_path), "/tmp/fuzz-image-unpack.XXXXXX");
		if (!mkdtemp(scratch_path))
			abort();
		scratch = open(scratch_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (scratch < 0 || mkdirat(scratch, "outside", 0755) < 0)
			abort();
		atexit(remove_scratch);
	}
	if (mkdirat(scratch, "layer", 0755) < 0)
		abort();
	layer = openat(scratch, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	in = memfd_create("layer", MFD_CLOEXEC);
	if (layer < 0 || in < 0 || write(in, data, size) != (ssize_t)size ||
	    lseek(in, 0, SEEK_SET) != 0)
		abort();
	(void)pd_unpack_layer(in, layer, &o, NULL, &err);
	close(in);
	check_tree(layer, 0);
	close(layer);
	/* SECURITY: whatever the input, nothing beside the layer */
	if (!empty(scratch, "outside"))
		abort();
	if (pd_image_remove_tree(scratch, "layer", &err) < 0)
		abort();
	return 0;
}
