/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes paddock-oci's reading of a bundle (src/oci/config.c and what it calls: the process,
 * mounts, namespaces, resources, rlimits, sysctls, hooks, dev.paddock.* annotations and the
 * seccomp profile, compiled with libseccomp). The input is a config.json, written into a
 * bundle of its own with an empty rootfs. Whatever the input, the load either gives a spec
 * that paddock_spec_validate() accepts and writes out, or an error that names what it
 * refused: never a crash, never a success without a process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char bundle[64];

static void remove_bundle(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/rootfs", bundle);
	(void)rmdir(path);
	(void)rmdir(bundle);
}

static void make_bundle(void)
{
	char path[128];

	if (bundle[0])
		return;
	snprintf(bundle, sizeof(bundle), "/tmp/pdfuzz-oci.XXXXXX");
	if (!mkdtemp(bundle))
		abort();
	snprintf(path, sizeof(path), "%s/rootfs", bundle);
	if (mkdir(path, 0755) < 0)
		abort();
	atexit(remove_bundle);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_bundle b = { 0 };
	paddock_error err = { 0 };
	char path[128];
	char *json = NULL;
	int fd, r;

	make_bundle();
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	r = oci_bundle_load(bundle, &b, &err);
	if (r < 0) {
		/* refused: with a reason */
		if (err.code <= 0 || !err.msg[0])
			abort();
		return 0;
	}
	if (!b.process.args || !b.process.args[0] || !b.process.args[0][0] || !b.spec)
		abort();
	if (paddock_spec_validate(b.spec, &err) < 0 ||
	    paddock_spec_to_json(b.spec, &json, &err) < 0)
		abort();
	if (b.filter_len % 8)
		abort();
	free(json);
	oci_bundle_release(&b);
	return 0;
}
