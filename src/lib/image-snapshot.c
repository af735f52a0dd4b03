/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A snapshot's layer and image (paddock_sandbox_snapshot(), sandbox-snapshot.c): the
 * sandbox's writable layer, its overlay upper directory, written as an OCI layer tar into an
 * unlinked file of the store's tmp/, then added like an imported image's: the base image's
 * layers (already in the store: shared, not copied) and this one on top, the base's config
 * with the new diff id. Part of the images half (image-module.h): it links libarchive.
 *
 * Trust: the upper directory is the sandbox's, written by its commands: hostile. It is read
 * while the sandbox is paused, by fd only: every entry with fstatat(AT_SYMLINK_NOFOLLOW) in
 * its parent's fd, opened with O_NOFOLLOW and checked to be what was stat'ed, never below
 * another filesystem, symlinks read and stored, never followed. What it carries is then
 * neutralised a second time by the same unpacker as a pulled layer (image-unpack.c): set-id
 * bits, xattrs and devices do not reach the store. Here, set-id bits are dropped as well,
 * and a device node other than an overlay whiteout fails the snapshot by name.
 *
 * Translation: an overlay whiteout (a character device 0/0) becomes ".wh.NAME", an opaque
 * directory ("user.overlay.opaque" = "y": the overlay is mounted with userxattr) an entry
 * ".wh..wh..opq" in it. As root the owners are written as the sandbox sees them (its range
 * starts at idmap.outside_uid), which is how a pulled layer's tar names them.
 */
#include "image-module.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "image-ref.h"
#include "image-store.h"
#include "image-tree.h"
#include "image-unpack.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define SNAP_MAX_DEPTH 128 /* directories deep: each level holds two fds */
#define SNAP_ID_RANGE  65536u

/* Written by init or paddock at every create (rootfs.c): the sandbox's own, not its state. */
static const char *const skipped[] = { "etc/hosts", "etc/hostname", "etc/resolv.conf",
				       "etc/paddock" };

struct snap {
	const struct pd_snapshot_src *src;
	struct archive *a;
	struct archive_entry_linkresolver *links;
	dev_t dev;
	int out_fd;
	struct pd_digest digest;
	uint64_t bytes, entries;
	paddock_error *err;
	int failed; /* the write callback's errno */
	char buf[1 << 16];
};

static la_ssize_t out_write(struct archive *a, void *userdata, const void *buf, size_t len)
{
	struct snap *s = userdata;
	int r;

	if (s->bytes + len > PD_UNPACK_MAX_BYTES) {
		s->failed = EFBIG;
		archive_set_error(a, EFBIG, "layer larger than the store takes");
		return -1;
	}
	r = pd_write_all(s->out_fd, buf, len);
	if (r < 0) {
		s->failed = -r;
		archive_set_error(a, -r, "write the layer");
		return -1;
	}
	pd_digest_update(&s->digest, buf, len);
	s->bytes += len;
	return (la_ssize_t)len;
}

static int archive_fail(struct snap *s, const char *what, const char *path)
{
	int code = s->failed ? s->failed : archive_errno(s->a) > 0 ? archive_errno(s->a) : EIO;

	return pd_fail(s->err, code, "%s '%s': %s", what, PD_ESC(path),
		       archive_error_string(s->a) ?: "failed");
}

static unsigned inside_id(const struct snap *s, unsigned host, unsigned base)
{
	if (s->src->rootless)
		return 0; /* a rootless store keeps no owners (image-unpack.c) */
	if (host >= base && host - base < SNAP_ID_RANGE)
		return host - base;
	return 65534; /* not the sandbox's: nobody */
}

static bool is_skipped(const struct snap *s, const char *path)
{
	/*
	 * An image's /workspace is a directory of its root (rootfs.c): kept when asked; a pooled
	 * one's is the disk's own (write_workspace()), the upper's only its mount point.
	 */
	if ((!s->src->workspace || s->src->workspace_fd >= 0) && !strcmp(path, "workspace"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(skipped); i++)
		if (!strcmp(path, skipped[i]))
			return true;
	return false;
}

/* Writes `e` (header, then `fd`'s data unless it is a hard link to an earlier entry). */
static int put_entry(struct snap *s, struct archive_entry *e, int fd, const char *path)
{
	struct archive_entry *spare = NULL;
	int64_t left;

	if (++s->entries > PD_UNPACK_MAX_ENTRIES)
		return pd_fail(s->err, E2BIG, "more than %u entries in the writable layer",
			       PD_UNPACK_MAX_ENTRIES);
	if (archive_entry_filetype(e) == AE_IFREG && archive_entry_nlink(e) > 1)
		archive_entry_linkify(s->links, &e, &spare);
	if (!e)
		return 0; /* the tar strategy never defers; nothing to write */
	if (archive_write_header(s->a, e) < ARCHIVE_WARN)
		return archive_fail(s, "write the header of", path);
	left = archive_entry_size(e);
	while (fd >= 0 && left > 0) {
		ssize_t n = read(fd, s->buf,
				 left < (int64_t)sizeof(s->buf) ? (size_t)left : sizeof(s->buf));
		if (n < 0)
			return pd_fail(s->err, errno, "read '%s'", PD_ESC(path));
		if (n == 0)
			return pd_fail(s->err, EIO, "'%s' shrank while it was read", PD_ESC(path));
		if (archive_write_data(s->a, s->buf, (size_t)n) != n)
			return archive_fail(s, "write", path);
		left -= n;
	}
	return 0;
}

static struct archive_entry *new_entry(const struct snap *s, const char *path,
				       const struct stat *st)
{
	struct archive_entry *e = archive_entry_new();

	if (!e)
		return NULL;
	archive_entry_copy_pathname(e, path);
	/* SECURITY: no set-id bit leaves a sandbox (the sticky bit is no privilege) */
	archive_entry_set_mode(e, st->st_mode & ~(mode_t)(S_ISUID | S_ISGID));
	archive_entry_set_uid(e, inside_id(s, st->st_uid, s->src->outside_uid));
	archive_entry_set_gid(e, inside_id(s, st->st_gid, s->src->outside_gid));
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	archive_entry_set_dev(e, st->st_dev);
	archive_entry_set_ino64(e, (la_int64_t)st->st_ino);
	archive_entry_set_nlink(e, (unsigned)st->st_nlink);
	return e;
}

static void entry_freep(struct archive_entry **e)
{
	if (*e)
		archive_entry_free(*e);
}

static int walk(struct snap *s, int dir_fd, char *path, size_t plen, unsigned depth);

/* One entry of the directory dir_fd, whose path in the layer is path[0..plen) + name. */
static int one(struct snap *s, int dir_fd, const char *name, char *path, size_t plen,
	       unsigned depth)
{
	__attribute__((cleanup(entry_freep))) struct archive_entry *e = NULL;
	_cleanup_close_ int fd = -EBADF;
	struct stat st, st2;
	size_t nlen = strlen(name);
	char opq[2];
	int r;

	if (plen + nlen + 16 >= PATH_MAX)
		return pd_fail(s->err, ENAMETOOLONG,
			       "a path in the writable layer is longer than "
			       "%d bytes",
			       PATH_MAX - 16);
	memcpy(path + plen, name, nlen + 1);
	if (is_skipped(s, path))
		return 0;
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_fail(s->err, errno, "stat '%s'", PD_ESC(path));
	if (st.st_dev != s->dev)
		return 0; /* not the layer's: nothing is mounted in an upper directory */
	switch (st.st_mode & S_IFMT) {
	case S_IFCHR:
		if (st.st_rdev == 0) { /* an overlay whiteout: NAME removed from below */
			char wh[PATH_MAX];

			snprintf(wh, sizeof(wh), "%.*s.wh.%s", (int)plen, path, name);
			st.st_mode = S_IFREG | 0600;
			st.st_size = 0;
			st.st_nlink = 1;
			e = new_entry(s, wh, &st);
			if (!e)
				return pd_fail(s->err, ENOMEM, "out of memory");
			archive_entry_set_size(e, 0);
			return put_entry(s, e, -EBADF, wh);
		}
		__attribute__((fallthrough));
	case S_IFBLK:
		return pd_fail(s->err, EPERM, "'%s' is a device node: a snapshot carries none",
			       PD_ESC(path));
	case S_IFSOCK:
		return 0; /* a socket is a live process's: nothing to keep */
	case S_IFLNK: {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir_fd, name, target, sizeof(target) - 1);

		if (n < 0)
			return pd_fail(s->err, errno, "read the link '%s'", PD_ESC(path));
		target[n] = '\0';
		e = new_entry(s, path, &st);
		if (!e)
			return pd_fail(s->err, ENOMEM, "out of memory");
		archive_entry_copy_symlink(e, target);
		return put_entry(s, e, -EBADF, path);
	}
	case S_IFIFO:
		e = new_entry(s, path, &st);
		if (!e)
			return pd_fail(s->err, ENOMEM, "out of memory");
		return put_entry(s, e, -EBADF, path);
	case S_IFREG:
		fd = openat(dir_fd, name,
			    O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return pd_fail(s->err, errno, "open '%s'", PD_ESC(path));
		if (fstat(fd, &st2) < 0)
			return pd_fail(s->err, errno, "stat '%s'", PD_ESC(path));
		if (st2.st_ino != st.st_ino || st2.st_dev != st.st_dev || !S_ISREG(st2.st_mode))
			return pd_fail(s->err, EAGAIN, "'%s' changed while it was read",
				       PD_ESC(path));
		e = new_entry(s, path, &st);
		if (!e)
			return pd_fail(s->err, ENOMEM, "out of memory");
		archive_entry_set_size(e, st.st_size);
		return put_entry(s, e, fd, path);
	case S_IFDIR:
		if (depth >= SNAP_MAX_DEPTH)
			return pd_fail(s->err, ELOOP, "'%s' is more than %d directories deep",
				       PD_ESC(path), SNAP_MAX_DEPTH);
		fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return pd_fail(s->err, errno, "open '%s'", PD_ESC(path));
		if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)
			return pd_fail(s->err, EAGAIN, "'%s' changed while it was read",
				       PD_ESC(path));
		e = new_entry(s, path, &st);
		if (!e)
			return pd_fail(s->err, ENOMEM, "out of memory");
		r = put_entry(s, e, -EBADF, path);
		if (r < 0)
			return r;
		path[plen + nlen] = '/';
		path[plen + nlen + 1] = '\0';
		/* an opaque directory hides all below it: its entries alone are the layer's */
		if (fgetxattr(fd, "user.overlay.opaque", opq, sizeof(opq)) == 1 && opq[0] == 'y') {
			__attribute__((cleanup(entry_freep))) struct archive_entry *w = NULL;
			char wh[PATH_MAX];

			snprintf(wh, sizeof(wh), "%s.wh..wh..opq", path);
			st.st_mode = S_IFREG | 0600;
			st.st_nlink = 1;
			w = new_entry(s, wh, &st);
			if (!w)
				return pd_fail(s->err, ENOMEM, "out of memory");
			archive_entry_set_size(w, 0);
			r = put_entry(s, w, -EBADF, wh);
			if (r < 0)
				return r;
		}
		return walk(s, fd, path, plen + nlen + 1, depth + 1);
	default:
		return pd_fail(s->err, EINVAL, "'%s' is of an unknown type", PD_ESC(path));
	}
}

static int walk(struct snap *s, int dir_fd, char *path, size_t plen, unsigned depth)
{
	int dup = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (dup < 0)
		return pd_fail(s->err, errno, "open '%s'", PD_ESC(path));
	d = fdopendir(dup);
	if (!d) {
		pd_close(dup);
		return pd_fail(s->err, errno, "read '%s'", PD_ESC(path));
	}
	while (r >= 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = one(s, dir_fd, de->d_name, path, plen, depth);
		path[plen] = '\0';
	}
	if (r >= 0 && errno)
		r = pd_fail(s->err, errno, "read '%s'", PD_ESC(path));
	closedir(d);
	return r;
}

/*
 * A pooled sandbox's /workspace (a directory of its disk, bound): "workspace" as an opaque
 * directory, so that a sandbox from the layer sees what this one saw there, and nothing of
 * its image's /workspace below. Read as the upper is: by fd, never past the disk.
 */
static int write_workspace(struct snap *s, int ws_fd)
{
	__attribute__((cleanup(entry_freep))) struct archive_entry *e = NULL, *w = NULL;
	char path[PATH_MAX] = "workspace";
	struct stat st;
	int r;

	if (fstat(ws_fd, &st) < 0)
		return pd_fail(s->err, errno, "stat the workspace");
	if (!S_ISDIR(st.st_mode) || st.st_dev != s->dev)
		return pd_fail(s->err, EINVAL,
			       "the workspace is not a directory of the sandbox's disk");
	e = new_entry(s, path, &st);
	if (!e)
		return pd_fail(s->err, ENOMEM, "out of memory");
	r = put_entry(s, e, -EBADF, path);
	if (r < 0)
		return r;
	st.st_mode = S_IFREG | 0600;
	st.st_nlink = 1;
	w = new_entry(s, "workspace/.wh..wh..opq", &st);
	if (!w)
		return pd_fail(s->err, ENOMEM, "out of memory");
	archive_entry_set_size(w, 0);
	r = put_entry(s, w, -EBADF, "workspace/.wh..wh..opq");
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "workspace/");
	return walk(s, ws_fd, path, strlen(path), 1);
}

/* The writable layer as a tar into out_fd: its diff id and size. */
static int write_layer(const struct pd_snapshot_src *src, int out_fd, char *ret_diff_id,
		       uint64_t *ret_bytes, paddock_error *err)
{
	_cleanup_close_ int top = -EBADF;
	struct snap *s = calloc(1, sizeof(*s));
	char path[PATH_MAX] = "";
	struct stat st;
	int r;

	if (!s)
		return pd_fail(err, ENOMEM, "out of memory");
	*s = (struct snap){ .src = src, .out_fd = out_fd, .err = err };
	top = openat(src->upper_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0 || fstat(top, &st) < 0) {
		r = pd_fail(err, errno, "open the sandbox's writable layer");
		free(s);
		return r;
	}
	s->dev = st.st_dev;
	if (pd_digest_init(&s->digest) < 0) {
		free(s);
		return pd_fail(err, ENOMEM, "out of memory");
	}
	s->a = archive_write_new();
	s->links = archive_entry_linkresolver_new();
	if (!s->a || !s->links) {
		r = pd_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	archive_entry_linkresolver_set_strategy(s->links, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
	if (archive_write_set_format_pax_restricted(s->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(s->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(s->a, s, NULL, out_write, NULL, NULL) != ARCHIVE_OK) {
		r = archive_fail(s, "start", "the layer");
		goto out;
	}
	r = walk(s, top, path, 0, 0);
	if (r >= 0 && src->workspace && src->workspace_fd >= 0)
		r = write_workspace(s, src->workspace_fd);
	if (r >= 0 && archive_write_close(s->a) != ARCHIVE_OK)
		r = archive_fail(s, "finish", "the layer");
	if (r >= 0) {
		pd_digest_final(&s->digest, ret_diff_id);
		*ret_bytes = s->bytes;
	}
out:
	if (s->links)
		archive_entry_linkresolver_free(s->links);
	if (s->a)
		archive_write_free(s->a);
	pd_digest_release(&s->digest);
	free(s);
	return r;
}

/* ---- the image --------------------------------------------------------------------------- */

static void now_rfc3339(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%09ldZ", sec, ts.tv_nsec);
}

/* The base's config with the new layer on top: a new config, so a new image id. */
static int snapshot_config(paddock_image_store *store, const struct pd_snapshot_src *src,
			   const char *diff_id, char **ret, size_t *ret_len, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *cfg = NULL;
	_cleanup_close_ int blobs = pd_image_store_subdir(store, "blobs/sha256", err);
	char ts[48], by[160];
	json_t *ids, *hist;
	int r;

	if (blobs < 0)
		return blobs;
	r = pd_image_store_read_json(blobs, src->base_id + 7, &cfg, err);
	if (r < 0) {
		pd_error_prefix(err, "the config of image %s", src->base_id);
		return r;
	}
	ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
	if (!json_is_array(ids) || json_array_append_new(ids, json_string(diff_id)) < 0)
		return pd_fail(err, EINVAL, "the config of image %s has no rootfs.diff_ids",
			       src->base_id);
	now_rfc3339(ts, sizeof(ts));
	snprintf(by, sizeof(by), "paddock snapshot of sandbox %s", src->sandbox_id);
	hist = json_object_get(cfg, "history");
	if (!json_is_array(hist)) {
		hist = json_array();
		(void)json_object_set_new(cfg, "history", hist);
	}
	if (!hist ||
	    json_array_append_new(hist, json_pack("{s:s,s:s}", "created", ts, "created_by", by)) <
		    0 ||
	    json_object_set_new(cfg, "created", json_string(ts)) < 0)
		return pd_fail(err, ENOMEM, "out of memory");
	*ret = json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!*ret)
		return pd_fail(err, ENOMEM, "out of memory");
	*ret_len = strlen(*ret);
	return 0;
}

struct layer_in {
	int tar_fd;
	size_t top; /* the new layer's index; the others are the base's, in the store */
};

static int open_layer(void *userdata, size_t i, const struct pd_layer_src *src, paddock_error *err)
{
	struct layer_in *in = userdata;
	int fd;

	(void)src;
	if (i != in->top)
		return pd_fail(err, ENOENT, "layer %zu of the base image is gone from the store",
			       i);
	fd = fcntl(in->tar_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return pd_fail(err, errno, "reopen the snapshot's layer");
	if (lseek(fd, 0, SEEK_SET) < 0) {
		pd_close(fd);
		return pd_fail(err, errno, "rewind the snapshot's layer");
	}
	return fd;
}

struct layer_user {
	const char *diff_id;
	bool used;
};

static int layer_user_cb(json_t *rec, const char *file, void *userdata)
{
	struct layer_user *u = userdata;
	size_t i;
	json_t *v;

	(void)file;
	json_array_foreach(json_object_get(rec, "layers"), i, v) u->used =
		u->used || !strcmp(json_string_value(v) ?: "", u->diff_id);
	return u->used ? 1 : 0;
}

/*
 * A failed add may have stored the new layer (the disk filled up after it): the store is
 * left as it was, so a layer no image names goes again.
 */
static void drop_unused_layer(paddock_image_store *store, const char *diff_id)
{
	paddock_error ignored = { 0 };
	_cleanup_close_ int lock = pd_image_store_lock(store, &ignored);
	_cleanup_close_ int layers = -EBADF;
	struct layer_user u = { .diff_id = diff_id };
	char meta[PD_DIGEST_HEX + 8];

	if (lock < 0 || pd_image_store_each(store, layer_user_cb, &u, &ignored) < 0 || u.used)
		return;
	layers = pd_image_store_subdir(store, "layers", &ignored);
	if (layers < 0)
		return;
	(void)pd_image_remove_tree(layers, diff_id + 7, &ignored);
	snprintf(meta, sizeof(meta), "%s.json", diff_id + 7);
	(void)unlinkat(layers, meta, 0);
}

int pd_image_snapshot(paddock_image_store *store, const struct pd_snapshot_src *src,
		      const char *name, char **ret_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *base = NULL;
	_cleanup_free_ struct pd_layer_src *layers = NULL;
	_cleanup_free_ char *config = NULL;
	_cleanup_close_ int tar = -EBADF, images = -EBADF;
	char diff_id[PD_DIGEST_MAX], rec_name[PD_DIGEST_HEX + 8];
	const char *names[2] = { name, NULL };
	struct layer_in in;
	size_t n, config_len = 0;
	uint64_t bytes = 0;
	json_t *jl;
	int r;

	images = pd_image_store_subdir(store, "images", err);
	if (images < 0)
		return images;
	snprintf(rec_name, sizeof(rec_name), "%s.json", src->base_id + 7);
	r = pd_image_store_read_json(images, rec_name, &base, err);
	if (r < 0) {
		pd_error_prefix(err, "the sandbox's image %s", src->base_id);
		return r;
	}
	jl = json_object_get(base, "layers");
	n = json_array_size(jl);
	if (!json_is_array(jl) || n + 1 > PD_IMAGE_MAX_LAYERS)
		return pd_fail_field(err, E2BIG, "image",
				     "image %s has %zu layers: a snapshot adds one, and at most %d "
				     "are supported",
				     src->base_id, n, PD_IMAGE_MAX_LAYERS);
	tar = pd_image_store_tmpfile(store, err);
	if (tar < 0)
		return tar;
	r = write_layer(src, tar, diff_id, &bytes, err);
	if (r < 0) {
		pd_error_prefix(err, "write the writable layer");
		return r;
	}
	r = snapshot_config(store, src, diff_id, &config, &config_len, err);
	if (r < 0)
		return r;
	layers = calloc(n + 1, sizeof(*layers));
	if (!layers)
		return pd_fail(err, ENOMEM, "out of memory");
	for (size_t i = 0; i <= n; i++) {
		layers[i].blob_size = -1;
		snprintf(layers[i].media_type, sizeof(layers[i].media_type), "%s",
			 "application/vnd.oci.image.layer.v1.tar");
	}
	in = (struct layer_in){ .tar_fd = tar, .top = n };
	r = pd_image_store_add(store, NULL, 0, config, config_len, layers, n + 1, open_layer, &in,
			       names, ret_json, err);
	if (r < 0)
		drop_unused_layer(store, diff_id);
	return r;
}
