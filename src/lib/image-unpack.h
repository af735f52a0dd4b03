/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unpacking one image layer (a tar stream, plain, gzip or zstd) into an empty directory of
 * the layer store, as an overlayfs lower layer: OCI whiteouts become overlay whiteouts
 * (character devices 0/0), opaque directories the "user.overlay.opaque" xattr (the
 * sandbox mounts its overlay with "userxattr"). The stream is hostile: see image-unpack.c.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "paddock/paddock.h"
#include "image-digest.h"

#define PD_UNPACK_MAX_BYTES   (UINT64_C(32) << 30) /* uncompressed bytes of one layer */
#define PD_UNPACK_MAX_ENTRIES 1000000u		   /* entries of one layer */
#define PD_UNPACK_MAX_RATIO   200u /* uncompressed:compressed, checked past 64 MiB */

struct pd_unpack_opts {
	const char *blob_digest; /* digest the compressed stream must have, or NULL */
	int64_t blob_size;	 /* its size, or -1 */
	const char *diff_id;	 /* digest the uncompressed tar must have, or NULL */
	bool chown;		 /* give entries the tar's owners (a root store), else keep ours */
	uint64_t max_bytes;	 /* 0: PD_UNPACK_MAX_BYTES */
	uint64_t max_entries;	 /* 0: PD_UNPACK_MAX_ENTRIES */
};

struct pd_unpack_stats {
	uint64_t entries;	     /* written (whiteouts included) */
	uint64_t skipped;	     /* device nodes and sockets, not made */
	uint64_t bytes_in;	     /* compressed bytes read */
	uint64_t bytes_out;	     /* uncompressed tar bytes */
	uint64_t size;		     /* bytes of file data written */
	char diff_id[PD_DIGEST_MAX]; /* of the uncompressed tar */
};

/*
 * Unpacks the layer read from in_fd (to its end) into dir_fd, an empty directory. Fails,
 * naming the entry, on anything that would write outside dir_fd (absolute or ".." names,
 * paths through symlinks, hard links out of the layer), on limits (size, count, ratio),
 * truncation, a bad compression or tar format, and a digest other than the ones asked for.
 * Device nodes are skipped, set-id bits and extended attributes dropped. On failure dir_fd
 * holds a partial layer: the caller removes it.
 */
int pd_unpack_layer(int in_fd, int dir_fd, const struct pd_unpack_opts *opts,
		    struct pd_unpack_stats *ret_stats, paddock_error *err);
