/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An image's root (rootfs.c builds the rest): its layers, idmapped as root, as the lowers of
 * an overlay under the sandbox's writable layer, and the image's /etc made the sandbox's.
 */
#include "rootfs-build.h"

/*
 * As root the layers are detached trees of the supervisor's (idmapped), in a mount
 * namespace of the host's user namespace: overlayfs clones each lower layer privately, and
 * may only clone a mount of our own namespace (clone_private_mount(): CAP_SYS_ADMIN over
 * the namespace it is in). So each is attached first, below the disk (disk/layers/N, gone
 * with the old root at the pivot: the overlay holds its own clones), and opened there.
 */
static int attach_layers(struct build *b, paddock_error *err)
{
	struct pd_rootfs_sources *src = b->sources;
	_cleanup_close_ int dir = -EBADF;
	int r;

	if (src->has_own_layers)
		return 0;
	r = pd_rootfs_mkdir_owned(b->disk, "layers", 0700, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	dir = pd_rootfs_open_dir(b->disk, "layers", err);
	if (dir < 0)
		return dir;
	for (size_t i = 0; i < src->n_layers; i++) {
		char name[24];
		int fd;

		snprintf(name, sizeof(name), "%zu", i);
		r = pd_rootfs_mkdir_owned(dir, name, 0700, b->root_uid, b->root_gid, err);
		if (r >= 0)
			r = pd_rootfs_attach(src->layer_fds[i], dir, name, err);
		if (r < 0)
			return r;
		fd = pd_rootfs_open_dir(dir, name, err);
		if (fd < 0)
			return fd;
		pd_close(src->layer_fds[i]);
		src->layer_fds[i] = fd;
	}
	return 0;
}

/*
 * The root as an overlay of the image's layers (top first) under the disk's upper: the
 * whole tree is writable, as on a machine of one's own (apt-get, dpkg and pip write /etc,
 * /var and /usr), and every write lands on the disk. "userxattr": a user namespace's
 * overlay reads and writes "user.overlay.*" (the store marks opaque directories so), and
 * layers are passed by fd, "lowerdir+" one at a time: fsconfig() takes strings of at most
 * 256 bytes, fourteen "/proc/self/fd/N" paths. COMPAT(kernel 6.8): "lowerdir+" is new;
 * before it the colon-separated list, for the images it fits.
 */
int pd_rootfs_mount_image_overlay(struct build *b, paddock_error *err)
{
	const struct pd_rootfs_sources *src = b->sources;
	_cleanup_close_ int fs = -EBADF;
	char upper[PATH_MAX], work[PATH_MAX], list[256];
	size_t o = 0;
	bool plus = true;
	int mfd, r;

	r = pd_rootfs_mkdir_owned(b->disk, "upper", 0755, b->root_uid, b->root_gid, err);
	if (r >= 0)
		r = pd_rootfs_mkdir_owned(b->disk, "work", 0700, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	snprintf(upper, sizeof(upper), "%s/upper", b->stage);
	snprintf(work, sizeof(work), "%s/work", b->stage);
	r = attach_layers(b, err);
	if (r < 0)
		return r;
	fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return pd_fail(err, errno, "fsopen overlay");
	for (size_t i = src->n_layers; i > 0; i--) {
		char one[32];

		snprintf(one, sizeof(one), "/proc/self/fd/%d", src->layer_fds[i - 1]);
		if (plus && fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", one, 0) == 0)
			continue;
		if (plus && i != src->n_layers)
			return pd_fail_field(err, errno, "image", "stack layer %zu", i - 1);
		plus = false;
		r = snprintf(list + o, sizeof(list) - o, "%s%s", o ? ":" : "", one);
		if (r < 0 || (size_t)r >= sizeof(list) - o)
			return pd_fail_field(err, E2BIG, "image",
					     "%zu layers: more than this kernel's overlayfs takes "
					     "at once (Linux 6.8 takes any number)",
					     src->n_layers);
		o += (size_t)r;
	}
	if (!plus && fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", list, 0) < 0)
		return pd_fail_field(err, errno, "image", "stack the image's layers");
	if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
		return pd_fail(err, errno, "configure the image's overlay");
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return pd_fail_field(err, errno, "image", "mount the image's layers");
	mfd = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mfd < 0)
		return pd_fail(err, errno, "mount the image's overlay");
	/* the writable layer, by fd: a snapshot reads it from outside (sandbox-snapshot.c) */
	b->sources->upper_fd = pd_close(b->sources->upper_fd);
	b->sources->upper_fd =
		openat(b->disk, "upper", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	/* the layers are the overlay's now: init holds no path into the store */
	for (size_t i = 0; i < src->n_layers; i++)
		src->layer_fds[i] = pd_close(src->layer_fds[i]);
	return mfd;
}

#define ACCOUNTS_MAX (1u << 20)

/*
 * The image's passwd or group with an entry for `id` added if it has none (the sandbox
 * user, 1000, that commands run as), or ours when the image has none. The image's file is
 * the sandbox's to read: bounded, never followed through a symlink.
 */
static int ensure_account(int etc, const char *name, unsigned id, const char *line,
			  const char *fallback, paddock_error *err)
{
	_cleanup_close_ int fd = openat(etc, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ char *buf = NULL;
	char needle[24];
	ssize_t n = 0;
	int r;

	if (fd < 0 && errno != ENOENT && errno != ELOOP)
		return pd_fail(err, errno, "read /etc/%s of the image", name);
	buf = malloc(ACCOUNTS_MAX + strlen(line) + 2);
	if (!buf)
		return pd_fail(err, ENOMEM, "out of memory");
	if (fd >= 0) {
		n = pd_read_full(fd, buf, ACCOUNTS_MAX);
		if (n < 0 || n == ACCOUNTS_MAX)
			return pd_fail(err, n < 0 ? (int)-n : EFBIG, "read /etc/%s of the image",
				       name);
	}
	buf[n] = '\0';
	/* "NAME:x:ID:": a line whose third field is id */
	snprintf(needle, sizeof(needle), ":%u:", id);
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *c = strchr(l, ':');

		if (c && (c = strchr(c + 1, ':')) && !strncmp(c, needle, strlen(needle)))
			return 0;
	}
	if (n == 0) {
		n = (ssize_t)strlen(fallback);
		memcpy(buf, fallback, (size_t)n);
	} else {
		if (buf[n - 1] != '\n')
			buf[n++] = '\n';
		memcpy(buf + n, line, strlen(line));
		n += (ssize_t)strlen(line);
	}
	if (unlinkat(etc, name, 0) < 0 && errno != ENOENT)
		return pd_fail(err, errno, "replace /etc/%s", name);
	r = pd_write_file_at(etc, name, buf, (size_t)n, 0644);
	if (r < 0)
		return pd_fail(err, -r, "write /etc/%s", name);
	return 0;
}

/*
 * An image's /etc is its own (apt's sources, dpkg's database, its users): only what the
 * sandbox is, not what the image is, is written over it: hosts, hostname, resolv.conf, the
 * sandbox user where the image lacks one, and the CA with secrets. All of it lands on the
 * disk (overlay copy-up); the sandbox may change it, as on a machine of its own.
 */
int pd_rootfs_build_etc_image(struct build *b, paddock_error *err)
{
	_cleanup_close_ int etc = -EBADF;
	char hosts[256], hostname[80];
	int r;

	r = pd_rootfs_mkdir_owned(b->root, "etc", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	etc = openat(b->root, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (etc < 0)
		return pd_fail_field(err, errno, "image", "the image's /etc is not a directory");
	snprintf(hosts, sizeof(hosts),
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
		 "127.0.1.1\t%s\n",
		 b->spec->hostname);
	snprintf(hostname, sizeof(hostname), "%s\n", b->spec->hostname);
	const struct {
		const char *name, *data;
	} files[] = {
		{ "hosts", hosts },
		{ "hostname", hostname },
		{ "resolv.conf", b->spec->network.mode == PD_NET_NONE ? pd_rootfs_resolv_none
								      : pd_rootfs_resolv_egress },
	};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		if (unlinkat(etc, files[i].name, 0) < 0 && errno != ENOENT)
			return pd_fail(err, errno, "replace /etc/%s", files[i].name);
		r = pd_write_file_at(etc, files[i].name, files[i].data, strlen(files[i].data),
				     0644);
		if (r < 0)
			return pd_fail(err, -r, "write /etc/%s", files[i].name);
	}
	r = ensure_account(etc, "passwd", PD_SANDBOX_UID,
			   "user:x:1000:1000:user:/home/user:/bin/sh\n", pd_rootfs_passwd_fmt, err);
	if (r >= 0)
		r = ensure_account(etc, "group", PD_SANDBOX_GID, "user:x:1000:\n",
				   pd_rootfs_group_fmt, err);
	if (r >= 0 && faccessat(etc, "nsswitch.conf", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		r = pd_write_file_at(etc, "nsswitch.conf", pd_rootfs_nsswitch,
				     strlen(pd_rootfs_nsswitch), 0644) < 0
			    ? pd_fail(err, errno, "write /etc/nsswitch.conf")
			    : 0;
	if (r >= 0 && b->spec->ca_pem) {
		_cleanup_close_ int in = pd_rootfs_open_in_root(b->root, BASE_BUNDLE, O_RDONLY);

		r = pd_rootfs_write_ca(etc, in, b->spec->ca_pem, b->root_uid, b->root_gid, err);
	}
	return r;
}
