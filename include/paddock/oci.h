/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the OCI runtime (`paddock-oci`, src/oci/, docs/oci.md) needs of libpaddock beyond
 * the spec's JSON: a root made of an OCI bundle's directories, a network namespace to join
 * (a Kubernetes pod's), and a terminal made before its command starts (runc's
 * --console-socket hands the master to the engine at create, the command runs at start).
 */
#pragma once

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The sandbox's root is `dirs` (absolute host paths, bottom first, at most 128), stacked
 * read-only under the sandbox's writable layer exactly as an image's layers are
 * (docs/images.md): an OCI bundle's rootfs directory, or the layers of the overlay an engine
 * mounted there. As root each directory is idmapped through the sandbox's user namespace
 * (its filesystem must support idmapped mounts: an overlay mount cannot be, its layers
 * can), so that host uid N on disk is the sandbox's uid N. Excludes "image" and "rootfs".
 * NULL or an empty list clears it. The spec copies the paths.
 */
PADDOCK_API int paddock_spec_set_root_layers(paddock_spec *spec, const char *const *dirs,
					     paddock_error *err);

/*
 * The root set with paddock_spec_set_root_layers() is mounted read-only (OCI's
 * root.readonly, Kubernetes' readOnlyRootFilesystem): writes fail with EROFS but below
 * /tmp, /home/user, /workspace, /dev/shm and the spec's writable binds, which are mounts of
 * their own on the sandbox's disk.
 */
PADDOCK_API int paddock_spec_set_root_readonly(paddock_spec *spec, bool readonly,
					       paddock_error *err);

/*
 * The sandbox joins the network namespace at `path` (a bind-mounted nsfs file or
 * /proc/PID/ns/net) instead of getting a loopback-only one of its own: its network is that
 * namespace's, as set up by whoever made it (a CNI plugin). Only with network.mode "none":
 * paddock's egress proxy cannot govern a namespace it does not own. As root only (the
 * supervisor enters it to clone init). NULL clears it.
 */
PADDOCK_API int paddock_spec_set_netns(paddock_spec *spec, const char *path, paddock_error *err);

/*
 * A new pseudo-terminal of the sandbox's own devpts (the same as a command's pty), its slave
 * owned by the command's user: for a command started later with the slave as its stdio and
 * paddock_exec_opts.ctty set. Both fds close-on-exec; the caller owns them.
 */
PADDOCK_API int paddock_sandbox_open_pty(paddock_sandbox *sb, unsigned short rows,
					 unsigned short cols, int *ret_master, int *ret_slave,
					 paddock_error *err);

#ifdef __cplusplus
}
#endif
