/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image code's pure parts: references, and the layer unpacker against hostile tars
 * (written here with libarchive): every escape is refused and nothing lands outside the
 * layer, whiteouts and opaque directories become overlay's, set-id bits and devices go,
 * digests and limits hold.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "image-digest.h"
#include "image-oci.h"
#include "image-store.h"
#include "image-ref.h"
#include "image-tree.h"
#include "image-unpack.h"
#include "util/cleanup.h"
#include "util/fd.h"

/* ---- references ---------------------------------------------------------------------------- */

static void test_ref_parse(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "debian", "docker.io/library/debian:latest" },
		{ "debian:12", "docker.io/library/debian:12" },
		{ "user/app:v1.2", "docker.io/user/app:v1.2" },
		{ "127.0.0.1:5000/test/base:1", "127.0.0.1:5000/test/base:1" },
		{ "localhost/x", "localhost/x:latest" },
		{ "ghcr.io/a/b/c", "ghcr.io/a/b/c:latest" },
		{ "a__b/c-d.e", "docker.io/a__b/c-d.e:latest" },
		{ "reg.example.com:443/x@sha256:"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  "reg.example.com:443/x@sha256:"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
	};
	static const char *const bad[] = {
		"",
		"Debian",
		"debian:",
		":tag",
		"a//b",
		"a/",
		"-a",
		"a-",
		"a..b",
		"a___b",
		"debian:-x",
		"debian:.x",
		"x@sha256:1234",
		"x@md5:0123",
		"reg:99999999/x",
		"reg:/x",
		"a b",
		"a\nb",
		"../x",
		"x/../y",
	};
	char buf[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct pd_image_ref r;
		paddock_error err = { 0 };

		assert_int_equal(pd_image_ref_parse(ok[i].in, "image", &r, &err), 0);
		pd_image_ref_format(&r, buf, sizeof(buf));
		assert_string_equal(buf, ok[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pd_image_ref r;
		paddock_error err = { 0 };

		if (pd_image_ref_parse(bad[i], "image", &r, &err) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_string_equal(err.field, "image");
	}
}

static void test_ref_loopback(void **state)
{
	static const struct {
		const char *in;
		bool loopback;
	} cases[] = {
		{ "127.0.0.1:5000/x", true }, { "127.1.2.3/x", true },
		{ "localhost:5000/x", true }, { "[::1]:5000/x", true },
		{ "127.evil.com/x", false },  { "localhost.evil.com/x", false },
		{ "registry.io/x", false },   { "1270.0.0.1/x", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pd_image_ref r;
		paddock_error err = { 0 };

		assert_int_equal(pd_image_ref_parse(cases[i].in, "image", &r, &err), 0);
		if (pd_image_ref_is_loopback(&r) != cases[i].loopback)
			fail_msg("'%s': loopback %d", cases[i].in, !cases[i].loopback);
	}
}

/* ---- tars ------------------------------------------------------------------------------------ */

struct tarbuf {
	struct archive *a;
	char *data;
	size_t size, used;
};

static void tar_begin(struct tarbuf *t, const char *filter)
{
	t->size = 64u << 20;
	t->data = malloc(t->size);
	t->a = archive_write_new();
	assert_non_null(t->data);
	assert_int_equal(archive_write_set_format_pax_restricted(t->a), ARCHIVE_OK);
	if (filter && !strcmp(filter, "gzip"))
		assert_int_equal(archive_write_add_filter_gzip(t->a), ARCHIVE_OK);
	else if (filter && !strcmp(filter, "zstd"))
		assert_int_equal(archive_write_add_filter_zstd(t->a), ARCHIVE_OK);
	archive_write_set_bytes_in_last_block(t->a, 1);
	assert_int_equal(archive_write_open_memory(t->a, t->data, t->size, &t->used), ARCHIVE_OK);
}

static void tar_add(struct tarbuf *t, const char *path, mode_t type, mode_t perm, const char *data,
		    size_t len, const char *link, bool hard)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_mtime(e, 1700000000, 0);
	if (type == AE_IFREG && !hard)
		archive_entry_set_size(e, (la_int64_t)len);
	if (link && hard)
		archive_entry_set_hardlink(e, link);
	else if (link)
		archive_entry_set_symlink(e, link);
	if (type == AE_IFCHR)
		archive_entry_set_rdev(e, makedev(1, 3));
	assert_int_equal(archive_write_header(t->a, e), ARCHIVE_OK);
	if (len && !hard)
		assert_int_equal(archive_write_data(t->a, data, len), (la_ssize_t)len);
	archive_entry_free(e);
}

#define FILE_(t, p, d)	    tar_add(t, p, AE_IFREG, 0644, d, strlen(d), NULL, false)
#define DIR_(t, p)	    tar_add(t, p, AE_IFDIR, 0755, NULL, 0, NULL, false)
#define SYMLINK_(t, p, to)  tar_add(t, p, AE_IFLNK, 0777, NULL, 0, to, false)
#define HARDLINK_(t, p, to) tar_add(t, p, AE_IFREG, 0644, NULL, 0, to, true)

static int tar_end(struct tarbuf *t)
{
	int fd;

	assert_int_equal(archive_write_close(t->a), ARCHIVE_OK);
	archive_write_free(t->a);
	fd = memfd_create("layer", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, t->data, t->used), (ssize_t)t->used);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	free(t->data);
	return fd;
}

/* A scratch directory holding "layer" (the target) and "outside" (must stay empty). */
struct scratch {
	char path[64];
	int dir, layer;
};

static void scratch_new(struct scratch *s)
{
	snprintf(s->path, sizeof(s->path), "/tmp/test-image.XXXXXX");
	assert_non_null(mkdtemp(s->path));
	s->dir = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(mkdirat(s->dir, "layer", 0755), 0);
	assert_int_equal(mkdirat(s->dir, "outside", 0755), 0);
	s->layer = openat(s->dir, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(s->dir >= 0 && s->layer >= 0);
}

static bool dir_empty(int dirfd, const char *name)
{
	char buf[256];
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t n;
	bool empty = true;
	struct {
		unsigned long long ino;
		long long off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	} * d;

	assert_true(fd >= 0);
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (ssize_t o = 0; o < n; o += d->reclen) {
			d = (void *)(buf + o);
			if (strcmp(d->name, ".") && strcmp(d->name, ".."))
				empty = false;
		}
	close(fd);
	return empty;
}

static void scratch_free(struct scratch *s)
{
	paddock_error err = { 0 };

	/* SECURITY of the unpacker: nothing went next to the layer */
	assert_true(dir_empty(s->dir, "outside"));
	close(s->layer);
	assert_int_equal(pd_image_remove_tree(s->dir, "layer", &err), 0);
	assert_int_equal(pd_image_remove_tree(s->dir, "outside", &err), 0);
	close(s->dir);
	assert_int_equal(rmdir(s->path), 0);
}

static int unpack(int fd, int dir, paddock_error *err)
{
	struct pd_unpack_opts o = { .blob_size = -1 };
	int r = pd_unpack_layer(fd, dir, &o, NULL, err);

	close(fd);
	return r;
}

static void test_unpack_ok(void **state)
{
	static const char *const filters[] = { NULL, "gzip", "zstd" };

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		struct scratch s;
		struct tarbuf t;
		paddock_error err = { 0 };
		struct stat st, st2;
		char buf[64];
		ssize_t n;

		scratch_new(&s);
		tar_begin(&t, filters[i]);
		DIR_(&t, "./usr/");
		DIR_(&t, "usr/bin");
		FILE_(&t, "usr/bin/tool", "#!/bin/sh\n");
		tar_add(&t, "usr/bin/su", AE_IFREG, 04755, "x", 1, NULL, false);
		SYMLINK_(&t, "bin", "usr/bin");
		HARDLINK_(&t, "usr/bin/tool2", "usr/bin/tool");
		tar_add(&t, "dev/sda", AE_IFCHR, 0600, NULL, 0, NULL, false);
		tar_add(&t, "ro", AE_IFDIR, 0555, NULL, 0, NULL, false);
		FILE_(&t, "ro/inside", "written before ro's mode applies");
		FILE_(&t, "usr/bin/tool", "#!/bin/sh\necho second\n"); /* a later entry wins */
		DIR_(&t, "rep");
		FILE_(&t, "rep/x", "in a directory a file replaces");
		FILE_(&t, "rep", "a file now");
		FILE_(&t, "rep2/y", "a file a directory replaces");
		DIR_(&t, "rep2/y");
		FILE_(&t, "rep2/y/z", "inside");
		assert_int_equal(unpack(tar_end(&t), s.layer, &err), 0);

		n = readlinkat(s.layer, "bin", buf, sizeof(buf));
		assert_int_equal(n, 7);
		assert_int_equal(fstatat(s.layer, "usr/bin/su", &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0755); /* set-uid dropped */
		assert_int_equal(fstatat(s.layer, "dev/sda", &st, AT_SYMLINK_NOFOLLOW), -1);
		assert_int_equal(fstatat(s.layer, "ro", &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0555);
		assert_int_equal(fstatat(s.layer, "usr/bin/tool", &st, 0), 0);
		assert_int_equal(st.st_size, 22);
		assert_int_equal(fstatat(s.layer, "usr/bin/tool2", &st2, 0), 0);
		assert_int_equal(st2.st_size, 10); /* linked to the first one, then replaced */
		assert_int_equal(fstatat(s.layer, "rep", &st, AT_SYMLINK_NOFOLLOW), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(fstatat(s.layer, "rep2/y/z", &st, AT_SYMLINK_NOFOLLOW), 0);
		scratch_free(&s);
	}
}

static void test_unpack_whiteouts(void **state)
{
	struct scratch s;
	struct tarbuf t;
	paddock_error err = { 0 };
	struct stat st;
	char v[8];

	(void)state;
	scratch_new(&s);
	tar_begin(&t, "gzip");
	DIR_(&t, "etc");
	FILE_(&t, "etc/gone", "x");
	FILE_(&t, "etc/.wh.gone", "");	/* removes this layer's own, leaves a whiteout */
	FILE_(&t, "etc/.wh.other", ""); /* a lower layer's */
	DIR_(&t, "var/cache");
	FILE_(&t, "var/cache/.wh..wh..opq", "");
	FILE_(&t, "var/cache/new", "y");
	FILE_(&t, ".wh..wh.plnk", ""); /* aufs bookkeeping: skipped */
	assert_int_equal(unpack(tar_end(&t), s.layer, &err), 0);

	assert_int_equal(fstatat(s.layer, "etc/gone", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
	assert_int_equal(fstatat(s.layer, "etc/other", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
	assert_int_equal(fstatat(s.layer, "etc/.wh.other", &st, AT_SYMLINK_NOFOLLOW), -1);
	{
		char p[128];

		snprintf(p, sizeof(p), "%s/layer/var/cache", s.path);
		assert_int_equal(getxattr(p, "user.overlay.opaque", v, sizeof(v)), 1);
		assert_int_equal(v[0], 'y');
	}
	assert_int_equal(fstatat(s.layer, "var/cache/new", &st, 0), 0);
	assert_int_equal(fstatat(s.layer, ".wh..wh.plnk", &st, AT_SYMLINK_NOFOLLOW), -1);
	scratch_free(&s);
}

/* Each of these tars tries to write outside the layer: refused, naming the entry. */
static void test_unpack_escapes(void **state)
{
	static const char *const expect[] = {
		"'..'",
		"'..'",
		"symlink",
		"symlink",
		"not in this layer",
		"'..'",
		"a directory",
		"whiteout of nothing",
	};

	(void)state;
	for (int i = 0; i < 8; i++) {
		struct scratch s;
		struct tarbuf t;
		paddock_error err = { 0 };
		char out[128];
		int r;

		scratch_new(&s);
		snprintf(out, sizeof(out), "%s/outside", s.path);
		tar_begin(&t, NULL);
		switch (i) {
		case 0:
			FILE_(&t, "../outside/x", "escaped");
			break;
		case 1:
			FILE_(&t, "a/../../outside/x", "escaped");
			break;
		case 2: /* a symlink out, then a file through it */
			SYMLINK_(&t, "link", out);
			FILE_(&t, "link/x", "escaped");
			break;
		case 3: /* relative, the same way */
			SYMLINK_(&t, "link", "../outside");
			DIR_(&t, "link/sub");
			break;
		case 4: /* a hard link to a file outside */
			HARDLINK_(&t, "x", "/etc/passwd");
			break;
		case 5:
			HARDLINK_(&t, "x", "../outside/y");
			break;
		case 6:
			DIR_(&t, "d");
			HARDLINK_(&t, "x", "d");
			break;
		case 7:
			FILE_(&t, "etc/.wh..", "");
			break;
		}
		r = unpack(tar_end(&t), s.layer, &err);
		if (r >= 0 || !strstr(err.msg, expect[i]))
			fail_msg("case %d: r=%d '%s'", i, r, err.msg);
		scratch_free(&s);
	}
}

static void test_unpack_absolute(void **state)
{
	struct scratch s;
	struct tarbuf t;
	paddock_error err = { 0 };
	struct stat st;

	(void)state;
	scratch_new(&s);
	tar_begin(&t, NULL);
	FILE_(&t, "/etc/hostname", "neutralised"); /* made relative to the layer */
	assert_int_equal(unpack(tar_end(&t), s.layer, &err), 0);
	assert_int_equal(fstatat(s.layer, "etc/hostname", &st, 0), 0);
	scratch_free(&s);
}

static void test_unpack_digests(void **state)
{
	struct scratch s;
	struct tarbuf t;
	paddock_error err = { 0 };
	struct pd_unpack_stats st;
	struct pd_unpack_opts o = { .blob_size = -1 };
	char *copy;
	size_t len;
	int fd;

	(void)state;
	scratch_new(&s);
	tar_begin(&t, "gzip");
	FILE_(&t, "a", "hello");
	fd = tar_end(&t);
	assert_int_equal(pd_unpack_layer(fd, s.layer, &o, &st, &err), 0);
	assert_true(pd_digest_valid(st.diff_id));
	/* the same stream, claimed to have another diff id: refused */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	o.diff_id = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
	assert_int_equal(pd_image_remove_tree(s.dir, "layer", &err), 0);
	assert_int_equal(mkdirat(s.dir, "layer", 0755), 0);
	close(s.layer);
	s.layer = openat(s.dir, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(pd_unpack_layer(fd, s.layer, &o, NULL, &err), -EBADMSG);
	/* truncated: the gzip stream ends early */
	len = (size_t)lseek(fd, 0, SEEK_END);
	copy = malloc(len);
	assert_int_equal(pread(fd, copy, len, 0), (ssize_t)len);
	close(fd);
	fd = memfd_create("cut", MFD_CLOEXEC);
	assert_int_equal(write(fd, copy, len / 2), (ssize_t)(len / 2));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	o.diff_id = NULL;
	assert_true(pd_unpack_layer(fd, s.layer, &o, NULL, &err) < 0);
	close(fd);
	free(copy);
	scratch_free(&s);
}

static void test_unpack_bomb(void **state)
{
	struct scratch s;
	struct tarbuf t;
	paddock_error err = { 0 };
	char *zeros = calloc(1, 96u << 20);
	int r;

	(void)state;
	assert_non_null(zeros);
	scratch_new(&s);
	tar_begin(&t, "gzip");
	tar_add(&t, "zeros", AE_IFREG, 0644, zeros, 96u << 20, NULL, false);
	free(zeros);
	r = unpack(tar_end(&t), s.layer, &err);
	if (r != -EFBIG || !strstr(err.msg, "compression bomb"))
		fail_msg("r=%d '%s'", r, err.msg);
	scratch_free(&s);
}

static void test_unpack_not_tar(void **state)
{
	struct scratch s;
	paddock_error err = { 0 };
	int fd = memfd_create("junk", MFD_CLOEXEC);

	(void)state;
	scratch_new(&s);
	assert_int_equal(write(fd, "this is not a tar archive, not at all.......", 44), 44);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_true(unpack(fd, s.layer, &err) < 0);
	scratch_free(&s);
}

/* ---- manifests ------------------------------------------------------------------------------- */

#define D(c)                                                                                       \
	"sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c  \
		c c c c c c c c c c c c c c c c c c c c c c c c

static void test_oci(void **state)
{
	static const char index[] =
		"{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D(
			"a") "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":"
			     "\"s390x\"}},"
			     "{\"mediaType\":\"application/"
			     "vnd.oci.image.manifest.v1+json\",\"digest\":\"" D(
				     "b") "\",\"size\":11,\"platform\":{\"os\":\"linux\","
					  "\"architecture\":\"riscv64\"}}]}";
	static const char manifest[] = "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D(
		"c") "\",\"size\":5},"
		     "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
		     "\"digest\":\"" D("d") "\",\"size\":7}]}";
	struct pd_manifest *m = calloc(1, sizeof(*m));
	paddock_error err = { 0 };
	enum pd_oci_kind k;
	char digest[PD_DIGEST_MAX];
	int64_t size;

	(void)state;
	assert_int_equal(pd_oci_kind(index, strlen(index), NULL, &k, &err), 0);
	assert_int_equal(k, PD_OCI_INDEX);
	assert_int_equal(pd_oci_pick(index, strlen(index), "linux/riscv64", digest, &size, &err),
			 0);
	assert_string_equal(digest, D("b"));
	assert_int_equal(size, 11);
	assert_int_equal(pd_oci_pick(index, strlen(index), "linux/mips", digest, &size, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "linux/s390x"));
	assert_int_equal(pd_oci_kind(manifest, strlen(manifest), NULL, &k, &err), 0);
	assert_int_equal(k, PD_OCI_MANIFEST);
	assert_int_equal(pd_oci_parse_manifest(manifest, strlen(manifest), m, &err), 0);
	assert_int_equal(m->n_layers, 1);
	assert_string_equal(m->config_digest, D("c"));
	assert_string_equal(m->layers[0].blob_digest, D("d"));
	{
		static const char bad[] = "{\"config\":{\"digest\":\"md5:x\",\"size\":1},"
					  "\"layers\":[]}";
		static const char v1[] = "{\"schemaVersion\":1,\"mediaType\":\"application/vnd."
					 "docker.distribution.manifest.v1+json\"}";

		assert_int_equal(pd_oci_parse_manifest(bad, strlen(bad), m, &err), -EINVAL);
		assert_int_equal(pd_oci_kind(v1, strlen(v1), NULL, &k, &err), -EOPNOTSUPP);
	}
	free(m);
}

/* ---- snapshots -------------------------------------------------------------------------- */

static int base_layer_fd = -1;

static int open_base_layer(void *userdata, size_t i, const struct pd_layer_src *src,
			   paddock_error *err)
{
	(void)userdata, (void)i, (void)src, (void)err;
	assert_int_equal(lseek(base_layer_fd, 0, SEEK_SET), 0);
	return fcntl(base_layer_fd, F_DUPFD_CLOEXEC, 3);
}

/* A store with one image (one layer: etc/motd) named base:1; its id into `id`. */
static paddock_image_store *snapshot_store(const char *dir, char *id)
{
	static const char *const names[] = { "docker.io/library/base:1", NULL };
	struct pd_layer_src src = { .blob_size = -1, .media_type = "tar" };
	paddock_image_store *store = NULL;
	paddock_error err = { 0 };
	char diff[PD_DIGEST_MAX], config[512], buf[1 << 16], *json = NULL;
	struct tarbuf t;
	ssize_t n;

	assert_int_equal(paddock_image_store_open(dir, &store, &err), 0);
	tar_begin(&t, NULL);
	DIR_(&t, "etc");
	FILE_(&t, "etc/motd", "base\n");
	base_layer_fd = tar_end(&t);
	n = read(base_layer_fd, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(pd_digest_buffer(buf, (size_t)n, diff), 0);
	snprintf(config, sizeof(config),
		 "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"A=1\"]},"
		 "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
		 diff);
	assert_int_equal(pd_digest_buffer(config, strlen(config), id), 0);
	if (pd_image_store_add(store, NULL, 0, config, strlen(config), &src, 1, open_base_layer,
			       NULL, names, &json, &err) < 0)
		fail_msg("add the base: %s", err.msg);
	free(json);
	close(base_layer_fd);
	return store;
}

/*
 * An upper directory as hostile as a sandbox can make one (and more: a set-uid file, a
 * device node as root): the layer keeps files, links and whiteouts, drops set-id bits,
 * sockets and the /etc files every create writes, follows no symlink, and a device node
 * fails the snapshot leaving the store as it was.
 */
static void test_snapshot_upper(void **state)
{
	struct scratch s;
	paddock_error err = { 0 };
	char store_dir[128], id[PD_DIGEST_MAX], path[256], v[8], *json = NULL;
	struct stat st, st2;
	paddock_image_store *store;
	json_t *rec, *layers;
	int upper, layer, sock;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)state;
	scratch_new(&s);
	snprintf(store_dir, sizeof(store_dir), "%s/outside/store", s.path);
	store = snapshot_store(store_dir, id);
	upper = s.layer;
	assert_int_equal(mkdirat(upper, "usr", 0755), 0);
	assert_int_equal(pd_write_file_at(upper, "usr/tool", "x", 1, 0755), 0);
	assert_int_equal(fchmodat(upper, "usr/tool", 04755, 0), 0);
	assert_int_equal(linkat(upper, "usr/tool", upper, "usr/tool2", 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", upper, "usr/escape"), 0);
	assert_int_equal(symlinkat("/", upper, "root"), 0); /* a walk must not enter it */
	assert_int_equal(mkdirat(upper, "etc", 0755), 0);
	assert_int_equal(pd_write_file_at(upper, "etc/hosts", "1.2.3.4 x\n", 10, 0644), 0);
	assert_int_equal(mkdirat(upper, "etc/paddock", 0755), 0);
	assert_int_equal(pd_write_file_at(upper, "etc/paddock/ca.pem", "ca", 2, 0644), 0);
	if (mknodat(upper, "etc/motd", S_IFCHR | 0600, makedev(0, 0)) < 0)
		skip(); /* whiteouts need Linux 5.8 unprivileged */
	assert_int_equal(mkdirat(upper, "var", 0755), 0);
	snprintf(path, sizeof(path), "%s/layer/var", s.path);
	if (setxattr(path, "user.overlay.opaque", "y", 1, 0) < 0)
		skip(); /* the scratch filesystem has no user xattrs */
	assert_int_equal(mkfifoat(upper, "var/fifo", 0644), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/layer/var/sock", s.path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(sock);

	struct pd_snapshot_src src = { .upper_fd = upper,
				       .base_id = id,
				       .sandbox_id = "sb_test",
				       .rootless = true,
				       .workspace_fd = -EBADF };
	if (pd_image_snapshot(store, &src, "docker.io/library/snap:1", &json, &err) < 0)
		fail_msg("snapshot: %s", err.msg);
	rec = json_loads(json, 0, NULL);
	free(json);
	layers = json_object_get(rec, "layers");
	assert_int_equal(json_array_size(layers), 2);
	snprintf(path, sizeof(path), "%s/layers/%s", store_dir,
		 json_string_value(json_array_get(layers, 1)) + 7);
	layer = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(layer >= 0);
	assert_int_equal(fstatat(layer, "usr/tool", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* SECURITY: no set-uid bit out */
	assert_int_equal(fstatat(layer, "usr/tool2", &st2, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(st.st_ino == st2.st_ino && st.st_nlink == 2);
	assert_int_equal(readlinkat(layer, "usr/escape", path, sizeof(path)), 11); /* kept */
	assert_int_equal(fstatat(layer, "root", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(fstatat(layer, "etc/motd", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)); /* whiteout kept */
	assert_int_equal(fstatat(layer, "etc/hosts", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(layer, "etc/paddock", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(layer, "var/sock", &st, AT_SYMLINK_NOFOLLOW), -1);
	snprintf(path, sizeof(path), "%s/layers/%s/var", store_dir,
		 json_string_value(json_array_get(layers, 1)) + 7);
	assert_int_equal(getxattr(path, "user.overlay.opaque", v, sizeof(v)), 1);
	close(layer);
	json_decref(rec);
	assert_true(dir_empty(s.dir, "outside/store/tmp"));

	/* a device node (as root only: mknod of one needs CAP_MKNOD) fails it, naming it */
	if (mknodat(upper, "usr/null", S_IFCHR | 0666, makedev(1, 3)) == 0) {
		char before[64], after[64];
		int images = openat(s.dir, "outside/store/images", O_RDONLY | O_DIRECTORY);

		snprintf(before, sizeof(before), "%d", dir_empty(s.dir, "outside/store/tmp"));
		assert_int_equal(
			pd_image_snapshot(store, &src, "docker.io/library/dev:1", &json, &err),
			-EPERM);
		assert_non_null(strstr(err.msg, "'usr/null' is a device node"));
		assert_int_equal(faccessat(images, "x", F_OK, 0), -1);
		snprintf(after, sizeof(after), "%d", dir_empty(s.dir, "outside/store/tmp"));
		assert_string_equal(before, after);
		close(images);
		assert_int_equal(unlinkat(upper, "usr/null", 0), 0);
	}
	paddock_image_store_free(store);
	assert_int_equal(pd_image_remove_tree(s.dir, "outside/store", &err), 0);
	scratch_free(&s);
}

/*
 * A pooled sandbox's /workspace is a directory of its disk beside the upper, not the upper's
 * own: with workspace asked, the layer's "workspace" is that directory, opaque (nothing of the
 * image's /workspace below shows through), and the upper's mount point is not written.
 */
static void test_snapshot_pooled_workspace(void **state)
{
	struct scratch s;
	paddock_error err = { 0 };
	char store_dir[128], id[PD_DIGEST_MAX], path[256], v[8], *json = NULL;
	paddock_image_store *store;
	struct stat st;
	json_t *rec, *layers;
	int ws, layer;

	(void)state;
	scratch_new(&s);
	snprintf(store_dir, sizeof(store_dir), "%s/outside/store", s.path);
	store = snapshot_store(store_dir, id);
	assert_int_equal(mkdirat(s.layer, "workspace", 0755), 0); /* the mount point */
	assert_int_equal(pd_write_file_at(s.layer, "workspace/hidden", "h", 1, 0644), 0);
	assert_int_equal(mkdirat(s.dir, "ws", 0755), 0);
	assert_int_equal(pd_write_file_at(s.dir, "ws/w", "data", 4, 0644), 0);
	ws = openat(s.dir, "ws", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ws >= 0);

	struct pd_snapshot_src src = { .upper_fd = s.layer,
				       .base_id = id,
				       .sandbox_id = "sb_test",
				       .rootless = true,
				       .workspace = true,
				       .workspace_fd = ws };
	if (pd_image_snapshot(store, &src, "docker.io/library/ws:1", &json, &err) < 0)
		fail_msg("snapshot: %s", err.msg);
	rec = json_loads(json, 0, NULL);
	free(json);
	layers = json_object_get(rec, "layers");
	snprintf(path, sizeof(path), "%s/layers/%s", store_dir,
		 json_string_value(json_array_get(layers, 1)) + 7);
	layer = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(layer >= 0);
	assert_int_equal(fstatat(layer, "workspace/w", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(fstatat(layer, "workspace/hidden", &st, AT_SYMLINK_NOFOLLOW), -1);
	strncat(path, "/workspace", sizeof(path) - strlen(path) - 1);
	if (getxattr(path, "user.overlay.opaque", v, sizeof(v)) < 0 && errno == ENOTSUP)
		skip(); /* the scratch filesystem has no user xattrs */
	assert_int_equal(getxattr(path, "user.overlay.opaque", v, sizeof(v)), 1);
	close(layer);
	close(ws);
	json_decref(rec);
	paddock_image_store_free(store);
	assert_int_equal(pd_image_remove_tree(s.dir, "outside/store", &err), 0);
	assert_int_equal(pd_image_remove_tree(s.dir, "ws", &err), 0);
	scratch_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ref_parse),
		cmocka_unit_test(test_ref_loopback),
		cmocka_unit_test(test_unpack_ok),
		cmocka_unit_test(test_unpack_whiteouts),
		cmocka_unit_test(test_unpack_escapes),
		cmocka_unit_test(test_unpack_absolute),
		cmocka_unit_test(test_unpack_digests),
		cmocka_unit_test(test_unpack_bomb),
		cmocka_unit_test(test_unpack_not_tar),
		cmocka_unit_test(test_oci),
		cmocka_unit_test(test_snapshot_upper),
		cmocka_unit_test(test_snapshot_pooled_workspace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
