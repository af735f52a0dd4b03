/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's root filesystem, built by init inside its fresh mount namespace and
 * entered with pivot_root. See rootfs.c for the layout.
 */
#pragma once

#include <stdbool.h>

/* With secrets: the sandbox's CA, and the host's bundle with it (rootfs.c writes both). */
#define PD_CA_CERT_PATH	  "/etc/paddock/ca.pem"
#define PD_CA_BUNDLE_PATH "/etc/paddock/ca-bundle.pem"

#include "paddock/paddock.h"
#include "idmap.h"
#include "spec.h"

/* Host trees a sandbox mounts, cloned while init still has the invoker's host identity. */
struct pd_rootfs_sources {
	int *bind_fds; /* spec->n_binds detached trees */
	size_t n_binds;
	int workspace_fd; /* detached tree of spec->workspace, or -EBADF */
	/*
	 * The image's layers, bottom first (spec->image_layers): as root idmapped detached
	 * trees the supervisor sends (pd_idmap_layer_tree()), rootless O_PATH fds init opens
	 * (pd_rootfs_open_sources()). With any, the root is an overlay of them, writable
	 * (docs/images.md).
	 */
	int *layer_fds;
	size_t n_layers;
	bool has_own_layers; /* rootless: init opened them, nothing to attach first */
	/*
	 * A pooled init's: set want_host_tree, and pd_rootfs_build() leaves in host_tree a
	 * detached clone of the host's mount tree (where this kernel lets a tree be cloned
	 * from one), from which a claim's workspace is cloned after the pivot.
	 */
	bool want_host_tree;
	int host_tree;
	/* with want_host_tree: the directory of the /proc view (disk/proc), for the claim */
	int proc_view_fd;
	/*
	 * As root, the mount point of a host's LXCFS (pd_rootfs_lxcfs()), or NULL; its proc
	 * directory opened by pd_rootfs_open_sources() (before the stage may cover the path).
	 */
	const char *lxcfs;
	int lxcfs_proc;
	/*
	 * An image's root: pd_rootfs_build() leaves here an O_PATH fd of the overlay's upper
	 * directory (disk/upper), which init hands the supervisor at READY for snapshots
	 * (sandbox-snapshot.c). -EBADF otherwise.
	 */
	int upper_fd;
};

/*
 * Where the host mounted LXCFS (a fuse.lxcfs mount with a proc/meminfo), or NULL. Probed
 * once per process from /proc/self/mountinfo: start LXCFS before the supervisor.
 */
const char *pd_rootfs_lxcfs(void);

void pd_rootfs_sources_init(struct pd_rootfs_sources *s);
void pd_rootfs_sources_release(struct pd_rootfs_sources *s);

/*
 * Sizes `sources` for the spec's binds, all fds -EBADF. init fills in the trees the
 * supervisor sent ready-made (idmapped) before pd_rootfs_open_sources() clones the rest.
 */
int pd_rootfs_sources_prepare(const paddock_spec *spec, struct pd_rootfs_sources *sources,
			      paddock_error *err);

/*
 * Clones the trees the spec binds (binds[], workspace) that `sources` does not hold yet.
 * Runs in init before it takes its sandbox identity, so host permissions are checked
 * against the invoker. On error the sources are released.
 */
int pd_rootfs_open_sources(const paddock_spec *spec, struct pd_rootfs_sources *sources,
			   paddock_error *err);

/*
 * Builds the root (consuming the sources' fds), pivots into it and detaches the old root.
 * On return the cwd is "/" of the new root. Runs in init, as init's sandbox identity.
 */
int pd_rootfs_build(const paddock_spec *spec, const struct pd_idmap *idmap,
		    struct pd_rootfs_sources *sources, paddock_error *err);

/*
 * A pooled sandbox's claim with secrets: writes PD_CA_CERT_PATH and PD_CA_BUNDLE_PATH into
 * the built root exactly as pd_rootfs_build() does for a spec with secrets (the same
 * writer). Runs in init after the pivot, before it confines itself.
 */
int pd_rootfs_bind_ca(const char *ca_pem, const struct pd_idmap *idmap, paddock_error *err);

/*
 * A pooled sandbox's claim with a workspace: replaces the private /workspace with the
 * claim's tree (the supervisor's, made as for a cold create: pd_launch_workspace_tree()),
 * attached where pd_rootfs_build() attaches it. Runs in init after the pivot, before it
 * confines itself (the Landlock ruleset is made again: it holds /workspace by inode).
 */
int pd_rootfs_attach_workspace(int tree_fd, paddock_error *err);

/*
 * The claim's workspace as a cold rootless init clones it (recursive, nosuid, nodev), but
 * from host_tree (struct pd_rootfs_sources): `path` is resolved within that tree, absolute
 * symlinks included, as on the host. A detached tree, or -errno (err names "workspace").
 */
int pd_rootfs_clone_from_host(int host_tree, const char *path, paddock_error *err);

/*
 * The absolute paths (in the new root) a command may write below, NULL-terminated: for
 * Landlock. Caller frees with pd_strv_free.
 */
int pd_rootfs_writable_paths(const paddock_spec *spec, char ***ret_paths, paddock_error *err);
