/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building a sandbox's root filesystem. Runs in init (inside the new user and mount
 * namespaces, with capabilities over them only), before any command exists, so nothing
 * here faces hostile input except what the spec names (validated) and the content of a
 * --rootfs tree (resolved only beneath that tree).
 *
 * One size-limited tmpfs, the sandbox's "disk", holds everything writable:
 *
 *   disk/root        the new "/" (bind of itself so it can be pivot_root's target; read-only
 *                    once built)
 *   disk/upper,work  the overlay's writable layer over the host's /usr/local (the host's
 *                    /usr itself is bound read-only), or over all of a --rootfs tree's /usr
 *   disk/tmp         -> /tmp          disk/home      -> /home/user (unless the root is an
 *                                                        image's: its own, on upper/)
 *   disk/workspace   -> /workspace (unless the spec binds a host directory there, or the
 *                       root is an image's: its own /workspace, on the disk's upper/ too)
 *   disk/shm         -> /dev/shm
 *   disk/dev         -> /dev (read-only; device nodes bound from the host's /dev)
 *   disk/empty       -> /proc/acpi, /proc/driver... (read-only, masks)
 *   disk/proc/NAME   -> /proc/meminfo, /proc/stat... (read-only: the sandbox's own view,
 *                       proc-view.h; or LXCFS's live files, as root where it runs)
 *
 * so the disk limit covers every byte the sandbox can write, and destroying the mount
 * namespace frees it: there is no host directory to clean up. Everything is mounted by fd
 * (fsopen/fsmount, open_tree/move_mount, mount_setattr); nothing is mounted by shelling out.
 *
 * The stage: the disk is attached at the first existing directory of /tmp, /mnt, /run in
 * the (private) old root while it is being built; pivot_root then detaches the whole old
 * root, stage included.
 */
#include "rootfs-build.h"

#define MIRROR_MAX_DIRS	 64
#define MIRROR_MAX_DEPTH 1 /* /usr/local and its children: bin, lib, share, ... */

void pd_rootfs_sources_init(struct pd_rootfs_sources *s)
{
	*s = (struct pd_rootfs_sources){ .workspace_fd = -EBADF,
					 .host_tree = -EBADF,
					 .proc_view_fd = -EBADF,
					 .lxcfs_proc = -EBADF,
					 .upper_fd = -EBADF };
}

void pd_rootfs_sources_release(struct pd_rootfs_sources *s)
{
	for (size_t i = 0; i < s->n_binds; i++)
		s->bind_fds[i] = pd_close(s->bind_fds[i]);
	free(s->bind_fds);
	s->bind_fds = NULL;
	s->n_binds = 0;
	for (size_t i = 0; i < s->n_layers; i++)
		s->layer_fds[i] = pd_close(s->layer_fds[i]);
	free(s->layer_fds);
	s->layer_fds = NULL;
	s->n_layers = 0;
	s->workspace_fd = pd_close(s->workspace_fd);
	s->host_tree = pd_close(s->host_tree);
	s->proc_view_fd = pd_close(s->proc_view_fd);
	s->lxcfs_proc = pd_close(s->lxcfs_proc);
	s->upper_fd = pd_close(s->upper_fd);
}

const char *pd_rootfs_lxcfs(void)
{
	/* a feature-probe cache: LXCFS started after the supervisor is not seen */
	static char found[PATH_MAX];
	static bool probed;
	_cleanup_fclose_ FILE *f = NULL;
	char line[4096];

	if (probed)
		return found[0] ? found : NULL;
	probed = true;
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ... */
		char mnt[PATH_MAX], probe[PATH_MAX + 16];
		const char *dash = strstr(line, " - ");

		if (!dash || strncmp(dash + 3, "fuse.lxcfs ", 11) != 0 ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 || strchr(mnt, '\\'))
			continue;
		snprintf(probe, sizeof(probe), "%s/proc/meminfo", mnt);
		if (access(probe, R_OK) == 0) {
			snprintf(found, sizeof(found), "%s", mnt);
			break;
		}
	}
	return found[0] ? found : NULL;
}

int pd_rootfs_set_attr(int fd, const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr a = { .attr_set = set, .attr_clr = clr };

	if (mount_setattr(fd, path, flags, &a, sizeof(a)) < 0)
		return -errno;
	return 0;
}

/* A detached, recursive clone of a host tree with nosuid,nodev (and rdonly if asked). */
static int clone_tree(const char *path, bool readonly, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		return pd_fail(err, errno, "open '%s'", PD_ESC(path));
	r = pd_rootfs_set_attr(
		fd, "", AT_EMPTY_PATH | AT_RECURSIVE,
		MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0), 0);
	if (r < 0)
		return pd_fail(err, r, "set attributes of '%s'", PD_ESC(path));
	return TAKE_FD(fd);
}

int pd_rootfs_sources_prepare(const paddock_spec *spec, struct pd_rootfs_sources *sources,
			      paddock_error *err)
{
	pd_rootfs_sources_init(sources);
	if (spec->image_layers) {
		size_t n = pd_strv_length(spec->image_layers);

		sources->layer_fds = calloc(n, sizeof(*sources->layer_fds));
		if (!sources->layer_fds)
			return pd_fail(err, ENOMEM, "allocate layer list");
		for (size_t i = 0; i < n; i++)
			sources->layer_fds[i] = -EBADF;
		sources->n_layers = n;
	}
	if (spec->n_binds == 0)
		return 0;
	sources->bind_fds = calloc(spec->n_binds, sizeof(*sources->bind_fds));
	if (!sources->bind_fds)
		return pd_fail(err, ENOMEM, "allocate bind list");
	for (size_t i = 0; i < spec->n_binds; i++)
		sources->bind_fds[i] = -EBADF;
	sources->n_binds = spec->n_binds;
	return 0;
}

int pd_rootfs_open_sources(const paddock_spec *spec, struct pd_rootfs_sources *s,
			   paddock_error *err)
{
	int r;

	assert(s->n_binds == spec->n_binds);
	for (size_t i = 0; i < s->n_layers; i++) {
		if (s->layer_fds[i] >= 0)
			continue; /* the supervisor's idmapped tree, as root */
		/* rootless: opened in our own mount namespace, as the invoker, before the stage */
		s->layer_fds[i] =
			open(spec->image_layers[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s->layer_fds[i] < 0) {
			r = pd_fail_field(err, errno, "image", "open layer '%s'",
					  PD_ESC(spec->image_layers[i]));
			pd_rootfs_sources_release(s);
			return r;
		}
		s->has_own_layers = true;
	}
	for (size_t i = 0; i < spec->n_binds; i++) {
		if (s->bind_fds[i] >= 0)
			continue;
		r = clone_tree(spec->binds[i].source, spec->binds[i].readonly, err);
		if (r < 0) {
			snprintf(err->field, sizeof(err->field), "binds[%zu].source", i);
			pd_rootfs_sources_release(s);
			return r;
		}
		s->bind_fds[i] = r;
	}
	if (spec->workspace && s->workspace_fd < 0) {
		r = clone_tree(spec->workspace, false, err);
		if (r < 0) {
			snprintf(err->field, sizeof(err->field), "workspace");
			pd_rootfs_sources_release(s);
			return r;
		}
		s->workspace_fd = r;
	}
	if (s->lxcfs) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/proc", s->lxcfs);
		/* none: the sandbox gets the written view; LXCFS is a nicety, not a protection */
		s->lxcfs_proc = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	return 0;
}

/* ---- small fd helpers ------------------------------------------------------------------ */

int pd_rootfs_new_fs(const char *type, const char *const *opts, unsigned attrs, paddock_error *err)
{
	_cleanup_close_ int fs = -EBADF;
	int mfd;

	fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return pd_fail(err, errno, "fsopen %s", type);
	/* mountinfo's source, as mount(8) names it ("none" otherwise): tools and OCI's
	 * runtime-tools match mounts by it */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", type, 0) < 0)
		return pd_fail(err, errno, "configure %s's source", type);
	for (const char *const *o = opts; o && o[0]; o += 2) {
		int r = o[1] ? fsconfig(fs, FSCONFIG_SET_STRING, o[0], o[1], 0)
			     : fsconfig(fs, FSCONFIG_SET_FLAG, o[0], NULL, 0);
		if (r < 0)
			return pd_fail(err, errno, "configure %s option '%s'", type, o[0]);
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return pd_fail(err, errno, "create %s", type);
	mfd = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	if (mfd < 0)
		return pd_fail(err, errno, "mount %s", type);
	return mfd;
}

/* Attaches the detached mount `mfd` at dirfd/path. */
int pd_rootfs_attach(int mfd, int dirfd, const char *path, paddock_error *err)
{
	if (move_mount(mfd, "", dirfd, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return pd_fail(err, errno, "attach mount at '%s'", PD_ESC(path));
	return 0;
}

/* Binds dirfd/src (a path inside an fd we own) onto to_dirfd/to. */
int pd_rootfs_bind_at(int dirfd, const char *src, int to_dirfd, const char *to, uint64_t attrs,
		      paddock_error *err)
{
	_cleanup_close_ int t = -EBADF;
	int r;

	t = open_tree(dirfd, src,
		      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (src[0] ? 0 : AT_EMPTY_PATH));
	if (t < 0)
		return pd_fail(err, errno, "clone tree '%s'", PD_ESC(src));
	if (attrs) {
		r = pd_rootfs_set_attr(t, "", AT_EMPTY_PATH, attrs, 0);
		if (r < 0)
			return pd_fail(err, r, "set attributes of '%s'", PD_ESC(src));
	}
	return pd_rootfs_attach(t, to_dirfd, to, err);
}

int pd_rootfs_mkdir_owned(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid,
			  paddock_error *err)
{
	/*
	 * init runs with umask 0 and every directory here is new on a fresh tmpfs, so mkdirat()
	 * sets the mode exactly (sticky bit included) and init owns what it makes: chown only
	 * what belongs to someone else. A directory that exists already was made here before.
	 */
	if (mkdirat(dirfd, name, mode) < 0) {
		if (errno == EEXIST)
			return 0;
		return pd_fail(err, errno, "mkdir '%s'", name);
	}
	if ((uid != geteuid() || gid != getegid()) &&
	    fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(err, errno, "chown '%s'", name);
	return 0;
}

int pd_rootfs_touch(int dirfd, const char *name, paddock_error *err)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return pd_fail(err, errno, "create '%s'", name);
	pd_close(fd);
	return 0;
}

int pd_rootfs_open_dir(int dirfd, const char *name, paddock_error *err)
{
	int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pd_fail(err, errno, "open '%s'", name);
	return fd;
}

/* Opens path below root_fd with every symlink resolved inside root_fd (a --rootfs tree). */
int pd_rootfs_open_in_root(int root_fd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/* ---- the pieces of the root --------------------------------------------------------- */

static const char *const top_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };

/* The merged-/usr links (or, in an old-style tree, read-only binds of the real dirs). */
static int build_top_links(struct build *b, paddock_error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(top_links); i++) {
		const char *name = top_links[i];
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;
		int r;

		if (fstatat(b->base_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(b->base_fd, name, target, sizeof(target) - 1);
			if (n < 0)
				return pd_fail(err, errno, "readlink '%s'", name);
			target[n] = '\0';
			if (symlinkat(target, b->root, name) < 0)
				return pd_fail(err, errno, "symlink '%s'", name);
		} else if (S_ISDIR(st.st_mode)) {
			r = pd_rootfs_mkdir_owned(b->root, name, 0755, b->root_uid, b->root_gid,
						  err);
			if (r < 0)
				return r;
			r = pd_rootfs_bind_at(
				b->base_fd, name, b->root, name,
				MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/*
 * The base /usr/local belongs to host root, which is nobody inside: mirror its directories
 * into the writable layer owned by the sandbox user, so `pip install` and `make install`
 * into /usr/local work as they do on a machine the user owns. Bounded in depth and count.
 */
static int mirror_dirs(int src, int dst, int depth, unsigned *budget, uid_t uid, gid_t gid,
		       paddock_error *err)
{
	_cleanup_close_ int dup_fd = -EBADF;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > MIRROR_MAX_DEPTH)
		return 0;
	dup_fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0)
		return 0; /* unreadable: nothing to mirror */
	d = fdopendir(dup_fd);
	if (!d)
		return pd_fail(err, errno, "read /usr/local");
	TAKE_FD(dup_fd);
	while ((de = readdir(d)) && r >= 0) {
		_cleanup_close_ int s = -EBADF, t = -EBADF;
		struct stat st;

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*budget == 0)
			break;
		(*budget)--;
		s = openat(src, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (s < 0 || fstat(s, &st) < 0)
			continue;
		r = pd_rootfs_mkdir_owned(dst, de->d_name, st.st_mode & 07777, uid, gid, err);
		if (r < 0)
			break;
		t = pd_rootfs_open_dir(dst, de->d_name, err);
		if (t < 0) {
			r = t;
			break;
		}
		r = mirror_dirs(s, t, depth + 1, budget, uid, gid, err);
	}
	closedir(d);
	return r;
}

/*
 * The writable layer: an overlay of `lower` (the base's /usr, or its /usr/local) under the
 * disk's upper/ (with work/ beside it), attached at dirfd/at. The upper's top takes
 * lower's mode and the given owner. With `local` (the base's /usr/local, or -EBADF), its
 * directory and first level are mirrored owned by the sandbox user: at `local_in_upper`
 * below the upper's top, or the top itself when that is NULL.
 */
static int mount_writable(struct build *b, int lower, uid_t uid, gid_t gid, int local,
			  const char *local_in_upper, int dirfd, const char *at, paddock_error *err)
{
	char lower_path[PATH_MAX], upper[PATH_MAX], work[PATH_MAX];
	_cleanup_close_ int mfd = -EBADF, upper_fd = -EBADF, dst = -EBADF;
	uid_t user = pd_idmap_user_uid(b->idmap);
	gid_t ugroup = pd_idmap_user_gid(b->idmap);
	unsigned budget = MIRROR_MAX_DIRS;
	struct stat st;
	int r;

	if (fstat(lower, &st) < 0)
		return pd_fail(err, errno, "stat '%s/usr'", PD_ESC(b->base));
	/*
	 * The lower layer by fd: its path may lie below the stage (a --rootfs under /tmp is
	 * hidden by the disk mounted there now), and a path string could hold the ',' and ':'
	 * overlayfs splits options on. The old root's /proc resolves our own fd.
	 */
	snprintf(lower_path, sizeof(lower_path), "/proc/self/fd/%d", lower);
	snprintf(upper, sizeof(upper), "%s/upper", b->stage);
	snprintf(work, sizeof(work), "%s/work", b->stage);
	r = pd_rootfs_mkdir_owned(b->disk, "upper", st.st_mode & 07777, uid, gid, err);
	if (r >= 0)
		r = pd_rootfs_mkdir_owned(b->disk, "work", 0700, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	upper_fd = pd_rootfs_open_dir(b->disk, "upper", err);
	if (upper_fd < 0)
		return upper_fd;
	if (local >= 0) {
		if (local_in_upper) {
			if (fstat(local, &st) < 0)
				return pd_fail(err, errno, "stat /usr/local");
			r = pd_rootfs_mkdir_owned(upper_fd, local_in_upper, st.st_mode & 07777,
						  user, ugroup, err);
			if (r < 0)
				return r;
			dst = pd_rootfs_open_dir(upper_fd, local_in_upper, err);
			if (dst < 0)
				return dst;
		}
		r = mirror_dirs(local, dst >= 0 ? dst : upper_fd, 1, &budget, user, ugroup, err);
		if (r < 0)
			return r;
	}
	mfd = pd_rootfs_new_fs("overlay",
			       (const char *const[]){ "lowerdir", lower_path, "upperdir", upper,
						      "workdir", work, NULL },
			       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	if (mfd < 0)
		return mfd;
	return pd_rootfs_attach(mfd, dirfd, at, err);
}

/*
 * /usr. A --rootfs tree, which may be the invoker's own, lies wholly under the writable
 * layer, as the spec says. The host's /usr is bound read-only and only its /usr/local gets
 * the layer: nothing else of it is the sandbox's to write anyway (host root owns it, and is
 * nobody inside), and an overlay taxes every lookup through it and builds its dentries anew
 * in each sandbox. Measured on the 2-core VM (2026-12): a first `python3 -c pass` in a fresh
 * sandbox spent ~1 ms more system time under the /usr overlay than under the bind, the
 * second one ~2 ms more. The disk's limit still covers /usr/local.
 */
static int build_usr(struct build *b, paddock_error *err)
{
	_cleanup_close_ int usr = -EBADF, usr_mnt = -EBADF, local = -EBADF;
	int r;

	r = pd_rootfs_mkdir_owned(b->root, "usr", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	usr = pd_rootfs_open_in_root(b->base_fd, "usr", O_PATH | O_DIRECTORY);
	if (usr == -ENOENT)
		return 0; /* a tree without /usr: its top-level dirs were bound already */
	if (usr < 0)
		return pd_fail(err, usr, "open '%s/usr'", PD_ESC(b->base));
	local = openat(usr, "local", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (b->spec->rootfs)
		return mount_writable(b, usr, b->root_uid, b->root_gid, local, "local", b->root,
				      "usr", err);
	r = pd_rootfs_bind_at(usr, "", b->root, "usr",
			      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	if (r < 0 || local < 0)
		return r;
	usr_mnt = pd_rootfs_open_dir(b->root, "usr", err);
	if (usr_mnt < 0)
		return usr_mnt;
	return mount_writable(b, local, pd_idmap_user_uid(b->idmap), pd_idmap_user_gid(b->idmap),
			      local, NULL, usr_mnt, "local", err);
}

const char pd_rootfs_passwd_fmt[] = "root:x:0:0:root:/root:/bin/sh\n"
				    "user:x:1000:1000:user:/home/user:/bin/bash\n"
				    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const char pd_rootfs_group_fmt[] = "root:x:0:\ntty:x:5:\nuser:x:1000:\nnogroup:x:65534:\n";
const char pd_rootfs_nsswitch[] = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
				  "networks: files\nprotocols: files\nservices: files\n"
				  "ethers: files\nrpc: files\n";
const char pd_rootfs_resolv_none[] = "# paddock: network mode none - no name server is reachable\n"
				     "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n";
/* the DNS filter: answers only names the policy allows, from the supervisor's resolution */
const char pd_rootfs_resolv_egress[] = "# paddock: the sandbox's DNS filter (docs/network.md)\n"
				       "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n";

/*
 * Host (or --rootfs) /etc entries a sandbox may see: caches, tables and links that tools
 * need and that hold nothing about the host's users, keys or services. Never shadow, ssh
 * keys, the machine id, or the host's passwd/group.
 */
static const char *const etc_allow[] = {
	"alternatives", "ld.so.cache",	   "ld.so.conf",  "ld.so.conf.d", "localtime",
	"os-release",	"debian_version",  "protocols",	  "services",	  "mime.types",
	"ssl/certs",	"ssl/openssl.cnf", "bash.bashrc", "profile",	  "inputrc",
	"matplotlibrc", /* Debian's python3-matplotlib reads its defaults here */
};

static int write_etc(struct build *b, int etc, paddock_error *err)
{
	char hosts[256], hostname[80];
	int r;

	snprintf(hosts, sizeof(hosts),
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
		 "127.0.1.1\t%s\n",
		 b->spec->hostname);
	snprintf(hostname, sizeof(hostname), "%s\n", b->spec->hostname);
	const struct {
		const char *name, *data;
	} files[] = {
		{ "passwd", pd_rootfs_passwd_fmt },
		{ "group", pd_rootfs_group_fmt },
		{ "hosts", hosts },
		{ "hostname", hostname },
		{ "nsswitch.conf", pd_rootfs_nsswitch },
		{ "resolv.conf", b->spec->network.mode == PD_NET_NONE ? pd_rootfs_resolv_none
								      : pd_rootfs_resolv_egress },
	};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		r = pd_write_file_at(etc, files[i].name, files[i].data, strlen(files[i].data),
				     0644);
		if (r < 0)
			return pd_fail(err, r, "write /etc/%s", files[i].name);
	}
	return 0;
}

/*
 * Small files are copied, not bound: a copy is a few syscalls, a bind is a mount that every
 * later mount operation and the namespace's teardown pay for. The copy lands on the read-only
 * root, so the sandbox cannot change it either. Files over ETC_COPY_MAX are skipped.
 */
#define ETC_COPY_MAX (1u << 20)

static int copy_small_file(int src_dir, const char *rel, int dst_dir, const char *name,
			   paddock_error *err)
{
	_cleanup_close_ int in = -EBADF, out = -EBADF;
	struct stat st;
	off_t off = 0;

	in = openat(src_dir, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > ETC_COPY_MAX)
		return 0; /* unreadable or unusual: the sandbox goes without it */
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0)
		return pd_fail(err, errno, "create /etc/%s", rel);
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_fail(err, errno, "copy /etc/%s", rel);
		if (n == 0)
			break; /* the file shrank while we copied it */
	}
	return 0;
}

static int import_etc_entry(struct build *b, int src_etc, int etc, const char *rel,
			    paddock_error *err)
{
	_cleanup_close_ int src = -EBADF, dst_parent = -EBADF;
	char parent[64], target[PATH_MAX];
	const char *name = rel, *slash = strrchr(rel, '/');
	struct stat st;
	ssize_t n;
	int r;

	if (fstatat(src_etc, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* absent on this host: fine */
	if (slash) {
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
		name = slash + 1;
		r = pd_rootfs_mkdir_owned(etc, parent, 0755, b->root_uid, b->root_gid, err);
		if (r < 0)
			return r;
		dst_parent = pd_rootfs_open_dir(etc, parent, err);
		if (dst_parent < 0)
			return dst_parent;
	}
	int dst = slash ? dst_parent : etc;

	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(src_etc, rel, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		if (symlinkat(target, dst, name) < 0)
			return pd_fail(err, errno, "symlink /etc/%s", rel);
		return 0;
	}
	if (S_ISREG(st.st_mode))
		return copy_small_file(src_etc, rel, dst, name, err);
	if (!S_ISDIR(st.st_mode))
		return 0;
	/* SECURITY: O_NOFOLLOW on the last component; the entry was checked to be no link */
	src = openat(src_etc, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return 0;
	r = pd_rootfs_mkdir_owned(dst, name, 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	return pd_rootfs_bind_at(src, "", dst, name,
				 MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
}

#define CA_BUNDLE_MAX (4u << 20)

/*
 * With secrets: /etc/paddock/ca.pem (the sandbox's CA) and ca-bundle.pem (the base's
 * bundle, read from bundle_fd if it is one, followed by it), which the environment points
 * every TLS stack at. The root they are written into is read-only once built, so the
 * sandbox cannot swap its own CA in. One writer for a cold build and a pooled claim.
 */
int pd_rootfs_write_ca(int etc, int bundle_fd, const char *ca_pem, uid_t uid, gid_t gid,
		       paddock_error *err)
{
	_cleanup_close_ int dir = -EBADF;
	_cleanup_free_ char *bundle = NULL;
	size_t n = 0, ca_len = strlen(ca_pem);
	ssize_t k;
	int r;

	r = pd_rootfs_mkdir_owned(etc, "paddock", 0755, uid, gid, err);
	if (r < 0)
		return r;
	dir = pd_rootfs_open_dir(etc, "paddock", err);
	if (dir < 0)
		return dir;
	r = pd_write_file_at(dir, "ca.pem", ca_pem, ca_len, 0644);
	if (r < 0)
		return pd_fail(err, r, "write %s", PD_CA_CERT_PATH);
	bundle = malloc(CA_BUNDLE_MAX + ca_len + 1);
	if (!bundle)
		return pd_fail(err, ENOMEM, "out of memory");
	while (bundle_fd >= 0 && n < CA_BUNDLE_MAX &&
	       (k = read(bundle_fd, bundle + n, CA_BUNDLE_MAX - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		n += (size_t)k;
	}
	if (n > 0 && bundle[n - 1] != '\n')
		bundle[n++] = '\n';
	memcpy(bundle + n, ca_pem, ca_len);
	n += ca_len;
	r = pd_write_file_at(dir, "ca-bundle.pem", bundle, n, 0644);
	if (r < 0)
		return pd_fail(err, r, "write %s", PD_CA_BUNDLE_PATH);
	return 0;
}

/*
 * SECURITY: the pooled root's /workspace is the bind of disk/workspace that
 * pd_rootfs_build() makes without a workspace; a claim with one detaches it (nothing of the
 * sandbox's has run: it is empty) and attaches the claim's tree where a cold build attaches
 * it, on the root's own "workspace" directory, so the mounts are a cold sandbox's.
 */
int pd_rootfs_attach_workspace(int tree_fd, paddock_error *err)
{
	_cleanup_close_ int root = -EBADF;
	int r;

	if (umount2("/workspace", MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		return pd_fail(err, errno, "detach the private /workspace");
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return pd_fail(err, errno, "open /");
	r = pd_rootfs_attach(tree_fd, root, "workspace", err);
	if (r < 0)
		snprintf(err->field, sizeof(err->field), "workspace");
	return r;
}

/* The base's own bundle (Debian's path), if it has one. */

int pd_rootfs_bind_ca(const char *ca_pem, const struct pd_idmap *idmap, paddock_error *err)
{
	_cleanup_close_ int root = -EBADF, tree = -EBADF, etc = -EBADF, in = -EBADF;
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;
	int r;

	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return pd_fail(err, errno, "open /");

	/*
	 * The bundle as the sandbox sees it: /etc/ssl/certs is the base's, bound read-only by
	 * build_etc() (so crossing that mount is allowed here, unlike in the base). Nothing of
	 * the sandbox's has run yet: the tree is the one init built.
	 */
	fd = syscall(SYS_openat2, root, BASE_BUNDLE, &how, sizeof(how));
	in = fd < 0 ? -errno : (int)fd;
	/*
	 * SECURITY: "/" stays read-only; the files are written through a detached clone of the
	 * root mount that only init holds, made writable (init made that mount, so its
	 * read-only flag is not locked) and closed before init confines itself.
	 */
	tree = open_tree(root, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return pd_fail(err, errno, "clone the root");
	r = pd_rootfs_set_attr(tree, "", AT_EMPTY_PATH, 0, MOUNT_ATTR_RDONLY);
	if (r < 0)
		return pd_fail(err, -r, "make a clone of the root writable");
	etc = pd_rootfs_open_dir(tree, "etc", err);
	if (etc < 0)
		return etc;
	return pd_rootfs_write_ca(etc, in, ca_pem, idmap->init_uid, idmap->init_gid, err);
}

static int build_etc(struct build *b, paddock_error *err)
{
	_cleanup_close_ int etc = -EBADF, src_etc = -EBADF;
	int r;

	r = pd_rootfs_mkdir_owned(b->root, "etc", 0755, b->root_uid, b->root_gid, err);
	if (r < 0)
		return r;
	etc = pd_rootfs_open_dir(b->root, "etc", err);
	if (etc < 0)
		return etc;
	r = write_etc(b, etc, err);
	if (r < 0)
		return r;
	src_etc = pd_rootfs_open_in_root(b->base_fd, "etc", O_PATH | O_DIRECTORY);
	if (b->spec->ca_pem) {
		/* SECURITY: resolved inside the base: a --rootfs tree's link cannot pull a host
		 * file into the sandbox */
		_cleanup_close_ int in = pd_rootfs_open_in_root(b->base_fd, BASE_BUNDLE, O_RDONLY);

		r = pd_rootfs_write_ca(etc, in, b->spec->ca_pem, b->root_uid, b->root_gid, err);
		if (r < 0)
			return r;
	}
	if (src_etc < 0)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(etc_allow); i++) {
		r = import_etc_entry(b, src_etc, etc, etc_allow[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Creates the mountpoint for a bind target (absolute, normalised, no "..": the spec checked)
 * below root, refusing symlinks on the way, and attaches tree_fd there.
 */
static int attach_at_target(struct build *b, int tree_fd, const char *target, const char *field,
			    paddock_error *err)
{
	_cleanup_close_ int dir = -EBADF;
	char buf[PATH_MAX];
	char *comp, *save = NULL, *next;
	struct stat st;
	int r;

	if (fstat(tree_fd, &st) < 0)
		return pd_fail(err, errno, "stat bind source");
	snprintf(buf, sizeof(buf), "%s", target + 1);
	dir = fcntl(b->root, F_DUPFD_CLOEXEC, 3);
	if (dir < 0)
		return pd_fail(err, errno, "dup root fd");
	comp = strtok_r(buf, "/", &save);
	while (comp) {
		next = strtok_r(NULL, "/", &save);
		if (!next)
			break;
		if (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST)
			return pd_fail_field(err, errno, field, "create mountpoint '%s'",
					     PD_ESC(target));
		int sub = openat(dir, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return pd_fail_field(err, errno, field,
					     "'%s' crosses a symlink or a non-directory",
					     PD_ESC(target));
		pd_close(dir);
		dir = sub;
		comp = next;
	}
	if (S_ISDIR(st.st_mode))
		r = (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST) ? -errno : 0;
	else
		r = pd_rootfs_touch(dir, comp, err);
	if (r < 0)
		return pd_fail_field(err, r, field, "create mountpoint '%s'", PD_ESC(target));
	r = pd_rootfs_attach(tree_fd, dir, comp, err);
	if (r < 0)
		snprintf(err->field, sizeof(err->field), "%s", field);
	return r;
}

/* The writable areas on the disk tmpfs, before anything is bound from them. */
static int make_disk_dirs(struct build *b, paddock_error *err)
{
	const struct {
		const char *name;
		mode_t mode;
		bool user_owned;
	} dirs[] = {
		{ "tmp", 01777, false },
		{ "home", 0750, true },
		{ "workspace", 0755, true },
		{ "shm", 01777, false },
	};
	int r;

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		r = pd_rootfs_mkdir_owned(
			b->disk, dirs[i].name, dirs[i].mode,
			dirs[i].user_owned ? pd_idmap_user_uid(b->idmap) : b->root_uid,
			dirs[i].user_owned ? pd_idmap_user_gid(b->idmap) : b->root_gid, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * An image's root is writable and on the disk already: its /workspace and /home/user are its
 * own directories of the overlay, the sandbox user's, not binds of disk/workspace and
 * disk/home. So what an image (a snapshot: sandbox-snapshot.c; a stopped sandbox's kept
 * state) has there is there, copy-on-write, and a snapshot can keep them with the rest of
 * the writable layer (a stop keeps both: `pip install --user` survives it). A pooled root
 * keeps the workspace bind: its claim may replace it (pd_rootfs_attach_workspace()).
 */
static int image_own_dir(struct build *b, int dirfd, const char *name, const char *path,
			 paddock_error *err)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(err, errno, "stat %s", path);
	if (!S_ISDIR(st.st_mode))
		return pd_fail_field(err, ENOTDIR, "image", "the image's %s is not a directory",
				     path);
	if ((st.st_uid != pd_idmap_user_uid(b->idmap) ||
	     st.st_gid != pd_idmap_user_gid(b->idmap)) &&
	    fchownat(dirfd, name, pd_idmap_user_uid(b->idmap), pd_idmap_user_gid(b->idmap),
		     AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(err, errno, "chown %s", path);
	return 0;
}

static int build_dirs(struct build *b, struct pd_rootfs_sources *src, paddock_error *err)
{
	_cleanup_close_ int home = -EBADF, var = -EBADF;
	int r;

	const struct {
		const char *name;
		mode_t mode;
	} dirs[] = {
		{ "tmp", 0755 }, { "home", 0755 }, { "workspace", 0755 }, { "var", 0755 },
		{ "run", 0755 }, { "root", 0700 }, { "opt", 0755 },	  { "mnt", 0755 },
	};
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		r = pd_rootfs_mkdir_owned(b->root, dirs[i].name, dirs[i].mode, b->root_uid,
					  b->root_gid, err);
		if (r < 0)
			return r;
	}
	home = pd_rootfs_open_dir(b->root, "home", err);
	if (home < 0)
		return home;
	r = pd_rootfs_mkdir_owned(home, "user", 0750, pd_idmap_user_uid(b->idmap),
				  pd_idmap_user_gid(b->idmap), err);
	if (r < 0)
		return r;
	var = pd_rootfs_open_dir(b->root, "var", err);
	if (var < 0)
		return var;
	/* an image has its own /var/tmp */
	if (symlinkat("/tmp", var, "tmp") < 0 && !(b->image && errno == EEXIST))
		return pd_fail(err, errno, "symlink /var/tmp");

	const uint64_t rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	r = pd_rootfs_bind_at(b->disk, "tmp", b->root, "tmp", rw, err);
	if (r < 0)
		return r;
	/* a read-only root (an OCI bundle's) keeps /home/user writable: the disk's, bound */
	if (b->image && !b->spec->root_readonly)
		r = image_own_dir(b, home, "user", "/home/user", err);
	else
		r = pd_rootfs_bind_at(b->disk, "home", home, "user", rw, err);
	if (r < 0)
		return r;
	if (src->workspace_fd >= 0) {
		r = pd_rootfs_attach(src->workspace_fd, b->root, "workspace", err);
		if (r < 0)
			return r;
		src->workspace_fd = pd_close(src->workspace_fd);
	} else if (b->image && !b->spec->pooled) {
		r = image_own_dir(b, b->root, "workspace", "/workspace", err);
		if (r < 0)
			return r;
	} else {
		r = pd_rootfs_bind_at(b->disk, "workspace", b->root, "workspace", rw, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < src->n_binds; i++) {
		char field[64];

		snprintf(field, sizeof(field), "binds[%zu].target", i);
		r = attach_at_target(b, src->bind_fds[i], b->spec->binds[i].target, field, err);
		if (r < 0)
			return r;
		src->bind_fds[i] = pd_close(src->bind_fds[i]);
	}
	return 0;
}

static const char *pick_stage(void)
{
	static const char *const candidates[] = { "/tmp", "/mnt", "/run", "/var/tmp", "/opt" };
	struct stat st;

	for (size_t i = 0; i < ELEMENTSOF(candidates); i++)
		if (lstat(candidates[i], &st) == 0 && S_ISDIR(st.st_mode))
			return candidates[i];
	return NULL;
}

static int pivot(int root_fd, paddock_error *err)
{
	if (fchdir(root_fd) < 0)
		return pd_fail(err, errno, "enter new root");
	/* pivot_root(".", "."): the old root ends up on top of the new one, then goes */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return pd_fail(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return pd_fail(err, errno, "detach old root");
	if (chdir("/") < 0)
		return pd_fail(err, errno, "chdir /");
	return 0;
}

/*
 * A detached clone of the whole host tree as this (private) mount namespace sees it, before
 * the stage is attached; -EBADF where the kernel does not let a tree be cloned from a
 * detached one (tried here, so a claim never finds out): a claim then cannot name a
 * workspace by path, and the supervisor knows (PD_READY_HOST_TREE). SECURITY: it is init's
 * alone (closed at the claim, before any command runs), and every access
 * through it is init's sandbox identity's, as before the pivot.
 */
static int keep_host_tree(void)
{
	_cleanup_close_ int tree = -EBADF, probe = -EBADF;

	tree = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return -EBADF;
	/* below its root, as a workspace is (rootless, the root itself cannot be cloned) */
	probe = open_tree(tree, "usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (probe < 0)
		return -EBADF;
	return TAKE_FD(tree);
}

int pd_rootfs_clone_from_host(int host_tree, const char *path, paddock_error *err)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int dir = -EBADF, tree = -EBADF;
	int r;

	dir = (int)syscall(SYS_openat2, host_tree, path, &how, sizeof(how));
	if (dir < 0)
		return pd_fail_field(err, errno, "workspace", "open '%s'", PD_ESC(path));
	tree = open_tree(dir, "",
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0)
		return pd_fail_field(err, errno, "workspace", "clone '%s'", PD_ESC(path));
	r = pd_rootfs_set_attr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
			       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
	if (r < 0)
		return pd_fail_field(err, r, "workspace", "set attributes of '%s'", PD_ESC(path));
	return TAKE_FD(tree);
}

int pd_rootfs_build(const paddock_spec *spec, const struct pd_idmap *idmap,
		    struct pd_rootfs_sources *sources, paddock_error *err)
{
	_cleanup_close_ int disk = -EBADF, root = -EBADF, base_fd = -EBADF;
	char size[32];
	struct build b = {
		.spec = spec,
		.idmap = idmap,
		.sources = sources,
		.base = spec->rootfs ? spec->rootfs : "/",
		.root_uid = idmap->init_uid,
		.root_gid = idmap->init_gid,
		.image = sources->n_layers > 0,
	};
	int r;

	/* SECURITY: nothing we mount may propagate back to the host's mount namespace */
	{
		struct mount_attr a = { .propagation = MS_PRIVATE };
		if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &a, sizeof(a)) < 0)
			return pd_fail(err, errno, "make mounts private");
	}
	if (sources->want_host_tree)
		sources->host_tree = keep_host_tree();
	base_fd = open(b.base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0)
		return pd_fail_field(err, errno, spec->rootfs ? "rootfs" : "", "open '%s'",
				     PD_ESC(b.base));
	b.base_fd = base_fd;
	b.stage = pick_stage();
	if (!b.stage)
		return pd_fail(err, ENOENT, "no directory to stage the root in");

	snprintf(size, sizeof(size), "%llu", (unsigned long long)spec->limits.disk_bytes);
	disk = pd_rootfs_new_fs("tmpfs",
				(const char *const[]){ "size", size, "mode", "0755", NULL },
				MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	if (disk < 0)
		return disk;
	r = pd_rootfs_attach(disk, AT_FDCWD, b.stage, err);
	if (r < 0)
		return r;
	b.disk = disk;
	r = pd_rootfs_mkdir_owned(disk, "root", 0755, b.root_uid, b.root_gid, err);
	if (r < 0)
		return r;
	if (b.image) {
		/* the overlay of the image is the new root, a mount point as pivot_root wants */
		root = pd_rootfs_mount_image_overlay(&b, err);
		if (root < 0)
			return root;
	} else {
		/* the new root must be a mount point for pivot_root: bind disk/root onto itself */
		root = open_tree(disk, "root", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (root < 0)
			return pd_fail(err, errno, "clone new root");
	}
	r = pd_rootfs_attach(root, disk, "root", err);
	if (r < 0)
		return r;
	b.root = root;

	r = make_disk_dirs(&b, err);
	if (r >= 0 && !b.image)
		r = build_top_links(&b, err);
	if (r >= 0 && !b.image)
		r = build_usr(&b, err);
	if (r >= 0)
		r = b.image ? pd_rootfs_build_etc_image(&b, err) : build_etc(&b, err);
	if (r >= 0)
		r = pd_rootfs_build_dev(&b, err);
	if (r >= 0)
		r = pd_rootfs_build_proc(&b, err);
	if (r >= 0)
		r = build_dirs(&b, sources, err);
	if (r < 0) {
		pd_error_prefix(err, "build root");
		return r;
	}
	/*
	 * SECURITY: the root itself is read-only; only the mounts placed on it are writable. An
	 * image's root is its writable layer, on the disk like every other (unless an OCI
	 * bundle's asks for a read-only one: include/paddock/oci.h).
	 */
	if (!b.image || spec->root_readonly) {
		r = pd_rootfs_set_attr(root, "", AT_EMPTY_PATH,
				       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
		if (r < 0)
			return pd_fail(err, r, "make root read-only");
	}
	return pivot(root, err);
}

#define IMAGE_TOP_MAX 256

/*
 * An image's root is writable: each of its top-level directories but /proc, /dev and /sys
 * (read from the built root: init has pivoted into it), as paths. Names the sandbox cannot
 * have made yet: no command has run.
 */
static int image_top_dirs(char **v, size_t *k, size_t max, paddock_error *err)
{
	DIR *d = opendir("/");
	struct dirent *de;

	if (!d)
		return pd_fail(err, errno, "read /");
	while ((de = readdir(d)) && *k < max) {
		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "proc") || !strcmp(de->d_name, "dev") ||
		    !strcmp(de->d_name, "sys"))
			continue;
		if (asprintf(&v[*k], "/%s", de->d_name) < 0) {
			v[*k] = NULL;
			closedir(d);
			return pd_fail(err, ENOMEM, "allocate path list");
		}
		(*k)++;
	}
	closedir(d);
	return 0;
}

int pd_rootfs_writable_paths(const paddock_spec *spec, char ***ret_paths, paddock_error *err)
{
	/* build_usr()'s writable layer: over a --rootfs tree's /usr, the host's /usr/local */
	const char *const fixed[] = { "/tmp",	    "/home/user",
				      "/workspace", spec->rootfs ? "/usr" : "/usr/local",
				      "/dev/shm",   "/dev/pts" };
	size_t n = ELEMENTSOF(fixed) + spec->n_binds + (spec->image_layers ? IMAGE_TOP_MAX : 0);
	_cleanup_strv_ char **v = calloc(n + 1, sizeof(char *));
	size_t k = 0;
	int r;

	if (!v)
		return pd_fail(err, ENOMEM, "allocate path list");
	if (spec->image_layers) {
		r = image_top_dirs(v, &k, IMAGE_TOP_MAX, err);
		if (r < 0)
			return r;
		/* /tmp, /home/user, /workspace are mount points on it, each held by inode */
	}
	for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
		if (!(v[k++] = strdup(fixed[i])))
			return pd_fail(err, ENOMEM, "allocate path list");
	for (size_t i = 0; i < spec->n_binds; i++) {
		if (spec->binds[i].readonly)
			continue;
		if (!(v[k++] = strdup(spec->binds[i].target)))
			return pd_fail(err, ENOMEM, "allocate path list");
	}
	*ret_paths = TAKE_PTR(v);
	return 0;
}
