/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image store (image-store.h has the layout). Runs in the supervisor: `paddock image`,
 * and a sandbox's create, which resolves its image here and holds the image's record
 * (flock LOCK_SH) while it lives, so `image rm` cannot take layers from under it. Adding an
 * image is image-store-add.c's, in the images half (image-module.h).
 *
 * Trust: the store directory is ours (0700; root's as root). What goes into it is not:
 * configs and manifests are parsed with bounds (size, counts), layers through the hardened
 * unpacker (image-unpack.c), and nothing is named by a string from outside but digests that
 * were checked to be "sha256:" and 64 hex digits. A layer is unpacked into tmp/ and renamed
 * into layers/ only once it is whole and its digests matched, so a layer directory is
 * always complete; two pulls racing for one layer both unpack it, the second rename loses
 * and its copy is removed.
 */
#include "image-store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "idmap.h"
#include "image-ref.h"
#include "image-tree.h"
#include "util/cleanup.h"
#include "util/fd.h"
#include "util/strv.h"

#define MAX_ENV 1024

PD_DEFINE_CLEANUP(paddock_image_store, paddock_image_store_free)

/* ---- opening ----------------------------------------------------------------------------- */

const char *pd_image_arch(void)
{
	static const struct {
		const char *machine, *arch;
	} map[] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" },	 { "armv7l", "arm" },
		{ "i686", "386" },     { "i386", "386" },	 { "ppc64le", "ppc64le" },
		{ "s390x", "s390x" },  { "riscv64", "riscv64" },
	};
	struct utsname u;

	if (uname(&u) == 0)
		for (size_t i = 0; i < ELEMENTSOF(map); i++)
			if (!strcmp(u.machine, map[i].machine))
				return map[i].arch;
	return "amd64";
}

int paddock_image_store_default_dir(char *buf, size_t size, paddock_error *err)
{
	const char *xdg = secure_getenv("XDG_DATA_HOME"), *home = secure_getenv("HOME");
	int n;

	if (!buf)
		return pd_fail(err, EINVAL, "no buffer given");
	if (pd_idmap_host_root())
		n = snprintf(buf, size, "%s", PD_IMAGE_DEFAULT_ROOT_DIR);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, size, "%s/paddock/images", xdg);
	else if (home && home[0] == '/' && strcmp(home, "/"))
		n = snprintf(buf, size, "%s/.local/share/paddock/images", home);
	else
		return pd_fail(err, ENOENT,
			       "no image store: set HOME or XDG_DATA_HOME, or name one "
			       "(PADDOCK_IMAGE_STORE)");
	if (n < 0 || (size_t)n >= size)
		return pd_fail(err, ENAMETOOLONG, "image store path too long");
	return 0;
}

/* mkdir -p, each new level 0700 */
static int make_dirs(const char *path, paddock_error *err)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return pd_fail(err, ENAMETOOLONG, "image store path too long");
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return pd_fail(err, errno, "mkdir '%s'", PD_ESC(buf));
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return pd_fail(err, errno, "mkdir '%s'", PD_ESC(buf));
	return 0;
}

int paddock_image_store_open(const char *dir, paddock_image_store **ret_store, paddock_error *err)
{
	static const char *const subdirs[] = { "blobs", "blobs/sha256", "layers", "images", "tmp" };
	paddock_image_store *s;
	struct stat st;
	int r;

	if (!dir || dir[0] != '/' || !ret_store)
		return pd_fail(err, EINVAL, "open image store: expected an absolute directory");
	r = make_dirs(dir, err);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pd_fail(err, ENOMEM, "out of memory");
	s->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	s->dir = strdup(dir);
	if (s->fd < 0 || !s->dir) {
		r = pd_fail(err, s->fd < 0 ? errno : ENOMEM, "open image store '%s'", PD_ESC(dir));
		paddock_image_store_free(s);
		return r;
	}
	/* SECURITY: a store someone else owns could hand us their layers */
	if (fstat(s->fd, &st) < 0 || st.st_uid != geteuid()) {
		r = pd_fail(err, EPERM, "image store '%s' belongs to another user", PD_ESC(dir));
		paddock_image_store_free(s);
		return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(subdirs); i++)
		if (mkdirat(s->fd, subdirs[i], 0700) < 0 && errno != EEXIST) {
			r = pd_fail(err, errno, "mkdir '%s/%s'", PD_ESC(dir), subdirs[i]);
			paddock_image_store_free(s);
			return r;
		}
	s->chown = pd_idmap_host_root();
	*ret_store = s;
	return 0;
}

paddock_image_store *paddock_image_store_free(paddock_image_store *s)
{
	if (!s)
		return NULL;
	pd_close(s->fd);
	free(s->dir);
	free(s);
	return NULL;
}

int pd_image_store_lock(paddock_image_store *s, paddock_error *err)
{
	int fd = openat(s->fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return pd_fail(err, errno, "open the image store's lock");
	if (flock(fd, LOCK_EX) < 0) {
		pd_close(fd);
		return pd_fail(err, errno, "lock the image store");
	}
	return fd;
}

/* ---- files ------------------------------------------------------------------------------- */

int pd_image_store_read_json(int dirfd, const char *name, json_t **ret, paddock_error *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ char *buf = NULL;
	json_error_t jerr;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return pd_fail(err, errno, "open '%s'", PD_ESC(name));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > PD_IMAGE_MAX_JSON)
		return pd_fail(err, EINVAL, "'%s' is not a small regular file", PD_ESC(name));
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return pd_fail(err, ENOMEM, "out of memory");
	n = pd_read_full(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return pd_fail(err, (int)-n, "read '%s'", PD_ESC(name));
	*ret = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
	if (!*ret)
		return pd_fail(err, EINVAL, "'%s': %s", PD_ESC(name), jerr.text);
	return 0;
}

int pd_image_store_write_atomic(int dirfd, const char *name, const void *data, size_t len,
				paddock_error *err)
{
	char tmp[NAME_MAX + 1];
	unsigned rnd = 0;
	int r;

	if (getrandom(&rnd, sizeof(rnd), 0) < 0)
		rnd = (unsigned)getpid() ^ (unsigned)time(NULL);
	snprintf(tmp, sizeof(tmp), ".%.200s.%08x", name, rnd);
	r = pd_write_file_at(dirfd, tmp, data, len, 0644);
	if (r < 0)
		return pd_fail(err, -r, "write '%s'", PD_ESC(name));
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		r = pd_fail(err, errno, "rename '%s'", PD_ESC(name));
		(void)unlinkat(dirfd, tmp, 0);
		return r;
	}
	return 0;
}

/* ---- configs ------------------------------------------------------------------------------ */

static bool env_name_ok(const char *s)
{
	size_t n = strcspn(s, "=");

	if (n == 0 || n > 255 || s[n] != '=')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
		      (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* An array of strings, or NULL (absent or null); -EINVAL on anything else. */
static int strv_from_json(json_t *v, size_t max, bool env, char ***ret)
{
	_cleanup_strv_ char **out = NULL;
	size_t i, k = 0;
	json_t *m;

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > max)
		return -EINVAL;
	out = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!out)
		return -ENOMEM;
	json_array_foreach(v, i, m)
	{
		const char *s = json_string_value(m);

		if (!s || strlen(s) != json_string_length(m) || strlen(s) > 65536)
			return -EINVAL;
		/* a variable a spec could not hold is left out, not the image refused */
		if (env && !env_name_ok(s))
			continue;
		out[k] = strdup(s);
		if (!out[k++])
			return -ENOMEM;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

/* ---- records ------------------------------------------------------------------------------- */

int pd_image_store_subdir(paddock_image_store *s, const char *name, paddock_error *err)
{
	int fd = openat(s->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return pd_fail(err, errno, "open the store's %s", name);
	return fd;
}

int pd_image_store_each(paddock_image_store *s,
			int (*fn)(json_t *rec, const char *file, void *userdata), void *userdata,
			paddock_error *err)
{
	_cleanup_close_ int dir = pd_image_store_subdir(s, "images", err);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (dir < 0)
		return dir;
	d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 3));
	if (!d)
		return pd_fail(err, errno, "read the store's images");
	while (r == 0 && (de = readdir(d))) {
		_cleanup_(json_decrefp) json_t *rec = NULL;
		paddock_error ignored = { 0 };
		size_t n = strlen(de->d_name);

		if (n != PD_DIGEST_HEX + 5 || strcmp(de->d_name + PD_DIGEST_HEX, ".json"))
			continue;
		if (pd_image_store_read_json(dir, de->d_name, &rec, &ignored) < 0 ||
		    !json_is_object(rec))
			continue; /* a record half-written by a crash is no image */
		r = fn(rec, de->d_name, userdata);
	}
	closedir(d);
	return r < 0 ? r : 0;
}

int pd_image_store_write_record(paddock_image_store *s, json_t *rec, paddock_error *err)
{
	_cleanup_close_ int dir = pd_image_store_subdir(s, "images", err);
	_cleanup_free_ char *text = NULL;
	const char *id = json_string_value(json_object_get(rec, "id"));
	char name[PD_DIGEST_HEX + 8];

	if (dir < 0)
		return dir;
	if (!pd_digest_valid(id))
		return pd_fail(err, EINVAL, "image record without an id");
	text = json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text)
		return pd_fail(err, ENOMEM, "out of memory");
	snprintf(name, sizeof(name), "%s.json", id + 7);
	return pd_image_store_write_atomic(dir, name, text, strlen(text), err);
}

/* ---- finding --------------------------------------------------------------------------------- */

struct find {
	const char *id;				   /* a whole id */
	const char *prefix;			   /* hex prefix of an id */
	char name[PD_REF_MAX + PD_DIGEST_MAX + 2]; /* a normalized reference */
	char repo[PD_REF_MAX];			   /* with a digest: the repository */
	char digest[PD_DIGEST_MAX];
	json_t *found;
	int matches;
};

static int find_cb(json_t *rec, const char *file, void *userdata)
{
	struct find *f = userdata;
	const char *id = json_string_value(json_object_get(rec, "id"));
	bool hit = false;
	size_t i;
	json_t *v;

	(void)file;
	if (!id)
		return 0;
	if (f->id)
		hit = !strcmp(id, f->id);
	else if (f->prefix)
		hit = !strncmp(id + 7, f->prefix, strlen(f->prefix));
	else if (f->digest[0] &&
		 !strcmp(json_string_value(json_object_get(rec, "manifest")) ?: "", f->digest)) {
		/* repo@digest: the manifest's digest, under any of its names in that repo */
		json_array_foreach(json_object_get(rec, "names"), i, v)
		{
			const char *n = json_string_value(v);
			size_t rl = strlen(f->repo);

			hit = hit ||
			      (n && !strncmp(n, f->repo, rl) && (n[rl] == ':' || n[rl] == '@'));
		}
	} else {
		json_array_foreach(json_object_get(rec, "names"), i, v) hit =
			hit || !strcmp(json_string_value(v) ?: "", f->name);
	}
	if (!hit)
		return 0;
	f->matches++;
	if (!f->found)
		f->found = json_incref(rec);
	return f->id ? 1 : 0;
}

static bool all_hex(const char *s)
{
	return s[0] && strspn(s, "0123456789abcdef") == strlen(s);
}

/* The record `ref` names, or -ENOENT (field "image"). */
static int find_image(paddock_image_store *s, const char *ref, json_t **ret, paddock_error *err)
{
	struct find f = { 0 };
	struct pd_image_ref pr;
	int r;

	if (!ref || !ref[0])
		return pd_fail_field(err, EINVAL, "image",
				     "expected an image reference, got nothing");
	if (pd_digest_valid(ref)) {
		f.id = ref;
	} else if (all_hex(ref) && strlen(ref) >= 12 && strlen(ref) <= PD_DIGEST_HEX) {
		f.prefix = ref;
	} else {
		r = pd_image_ref_parse(ref, "image", &pr, err);
		if (r < 0)
			return r;
		pd_image_ref_format(&pr, f.name, sizeof(f.name));
		if (pr.digest[0] && !pr.tag[0]) {
			snprintf(f.digest, sizeof(f.digest), "%s", pr.digest);
			pd_image_ref_repository(&pr, f.repo, sizeof(f.repo));
		}
	}
	r = pd_image_store_each(s, find_cb, &f, err);
	if (r < 0) {
		json_decref(f.found);
		return r;
	}
	if (f.matches > 1) {
		json_decref(f.found);
		return pd_fail_field(err, EINVAL, "image",
				     "'%s' names %d images: give more of the id", PD_ESC(ref),
				     f.matches);
	}
	if (!f.found)
		return pd_fail_field(err, ENOENT, "image",
				     "no image '%s' in the store (paddock "
				     "image pull)",
				     PD_ESC(ref));
	*ret = f.found;
	return 0;
}

static int dump(json_t *v, char **ret_json, paddock_error *err)
{
	if (!ret_json)
		return 0;
	*ret_json = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!*ret_json)
		return pd_fail(err, ENOMEM, "out of memory");
	return 0;
}

int paddock_image_inspect(paddock_image_store *s, const char *ref, char **ret_json,
			  paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *rec = NULL;
	int r;

	if (!s)
		return pd_fail(err, EINVAL, "no image store given");
	r = find_image(s, ref, &rec, err);
	if (r < 0)
		return r;
	return dump(rec, ret_json, err);
}

static int list_cb(json_t *rec, const char *file, void *userdata)
{
	(void)file;
	return json_array_append(userdata, rec) < 0 ? -ENOMEM : 0;
}

int paddock_image_list(paddock_image_store *s, char **ret_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *all = json_array();
	int r;

	if (!s)
		return pd_fail(err, EINVAL, "no image store given");
	if (!all)
		return pd_fail(err, ENOMEM, "out of memory");
	r = pd_image_store_each(s, list_cb, all, err);
	if (r == -ENOMEM)
		return pd_fail(err, ENOMEM, "out of memory");
	if (r < 0)
		return r;
	return dump(all, ret_json, err);
}

/* ---- removing -------------------------------------------------------------------------------- */

struct in_use {
	json_t *layers; /* every diff id some image still has */
	json_t *blobs;	/* every config and manifest digest */
};

static int in_use_cb(json_t *rec, const char *file, void *userdata)
{
	struct in_use *u = userdata;
	size_t i;
	json_t *v;

	(void)file;
	json_array_foreach(json_object_get(rec, "layers"), i, v) if (json_is_string(v))(void)
		json_object_set_new(u->layers, json_string_value(v), json_true());
	v = json_object_get(rec, "id");
	if (json_is_string(v))
		(void)json_object_set_new(u->blobs, json_string_value(v), json_true());
	v = json_object_get(rec, "manifest");
	if (json_is_string(v))
		(void)json_object_set_new(u->blobs, json_string_value(v), json_true());
	return 0;
}

/* Removes layers and blobs of `rec` that no remaining record names. */
static int prune(paddock_image_store *s, json_t *rec, paddock_error *err)
{
	struct in_use u = { json_object(), json_object() };
	_cleanup_close_ int layers = -EBADF, blobs = -EBADF;
	const char *blob_ids[2] = { json_string_value(json_object_get(rec, "id")),
				    json_string_value(json_object_get(rec, "manifest")) };
	size_t i;
	json_t *v;
	int r;

	if (!u.layers || !u.blobs) {
		r = pd_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	r = pd_image_store_each(s, in_use_cb, &u, err);
	if (r < 0)
		goto out;
	layers = pd_image_store_subdir(s, "layers", err);
	blobs = pd_image_store_subdir(s, "blobs/sha256", err);
	if (layers < 0 || blobs < 0) {
		r = -err->code;
		goto out;
	}
	json_array_foreach(json_object_get(rec, "layers"), i, v)
	{
		const char *d = json_string_value(v);
		char meta[PD_DIGEST_HEX + 8];

		if (!pd_digest_valid(d) || json_object_get(u.layers, d))
			continue;
		r = pd_image_remove_tree(layers, d + 7, err);
		if (r < 0)
			goto out;
		snprintf(meta, sizeof(meta), "%s.json", d + 7);
		(void)unlinkat(layers, meta, 0);
	}
	for (i = 0; i < ELEMENTSOF(blob_ids); i++)
		if (pd_digest_valid(blob_ids[i]) && !json_object_get(u.blobs, blob_ids[i]))
			(void)unlinkat(blobs, blob_ids[i] + 7, 0);
	r = 0;
out:
	json_decref(u.layers);
	json_decref(u.blobs);
	return r;
}

int paddock_image_remove(paddock_image_store *s, const char *ref, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *rec = NULL;
	_cleanup_close_ int lock = -EBADF, dir = -EBADF, held = -EBADF;
	const char *id;
	char name[PD_DIGEST_HEX + 8];
	int r;

	if (!s)
		return pd_fail(err, EINVAL, "no image store given");
	lock = pd_image_store_lock(s, err);
	if (lock < 0)
		return lock;
	r = find_image(s, ref, &rec, err);
	if (r < 0)
		return r;
	id = json_string_value(json_object_get(rec, "id"));
	dir = pd_image_store_subdir(s, "images", err);
	if (dir < 0)
		return dir;
	snprintf(name, sizeof(name), "%s.json", id + 7);
	held = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (held < 0)
		return pd_fail(err, errno, "open image %s", id);
	/* a sandbox made from it holds LOCK_SH (pd_image_resolve()) */
	if (flock(held, LOCK_EX | LOCK_NB) < 0)
		return pd_fail_field(err, errno == EWOULDBLOCK ? EBUSY : errno, "image",
				     "image '%s' is in use by a running sandbox", PD_ESC(ref));
	if (unlinkat(dir, name, 0) < 0)
		return pd_fail(err, errno, "remove image %s", id);
	return prune(s, rec, err);
}

/* ---- a sandbox's image ----------------------------------------------------------------------- */

struct pd_image *pd_image_free(struct pd_image *img)
{
	if (!img)
		return NULL;
	pd_strv_free(img->layer_dirs);
	pd_strv_free(img->env);
	pd_strv_free(img->entrypoint);
	pd_strv_free(img->cmd);
	free(img->cwd);
	pd_close(img->lock_fd);
	free(img);
	return NULL;
}

PD_DEFINE_CLEANUP(struct pd_image, pd_image_free)

int pd_image_resolve(const char *dir, const char *ref, struct pd_image **ret, paddock_error *err)
{
	_cleanup_(paddock_image_store_freep) paddock_image_store *s = NULL;
	_cleanup_(json_decrefp) json_t *rec = NULL;
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	_cleanup_close_ int images = -EBADF;
	json_t *layers, *cfg, *v;
	const char *id;
	char name[PD_DIGEST_HEX + 8];
	size_t i;
	int r;

	r = paddock_image_store_open(dir, &s, err);
	if (r < 0)
		return r;
	r = find_image(s, ref, &rec, err);
	if (r < 0)
		return r;
	img = calloc(1, sizeof(*img));
	if (!img)
		return pd_fail(err, ENOMEM, "out of memory");
	img->lock_fd = -EBADF;
	id = json_string_value(json_object_get(rec, "id"));
	layers = json_object_get(rec, "layers");
	if (!pd_digest_valid(id) || !json_is_array(layers) ||
	    json_array_size(layers) > PD_IMAGE_MAX_LAYERS)
		return pd_fail_field(err, EINVAL, "image", "image '%s': a damaged record",
				     PD_ESC(ref));
	snprintf(img->id, sizeof(img->id), "%s", id);
	images = pd_image_store_subdir(s, "images", err);
	if (images < 0)
		return images;
	snprintf(name, sizeof(name), "%s.json", id + 7);
	img->lock_fd = openat(images, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (img->lock_fd < 0 || flock(img->lock_fd, LOCK_SH) < 0)
		return pd_fail_field(err, errno, "image", "hold image '%s'", PD_ESC(ref));
	/*
	 * image rm unlinks the record and prunes its layers holding LOCK_EX on it: a record we
	 * opened before and hold only now may be gone, with its layers.
	 */
	{
		struct stat st;

		if (fstat(img->lock_fd, &st) < 0 || st.st_nlink == 0)
			return pd_fail_field(err, ENOENT, "image",
					     "image '%s' was removed meanwhile", PD_ESC(ref));
	}
	img->layer_dirs = calloc(json_array_size(layers) + 1, sizeof(char *));
	if (!img->layer_dirs)
		return pd_fail(err, ENOMEM, "out of memory");
	json_array_foreach(layers, i, v)
	{
		const char *d = json_string_value(v);

		if (!pd_digest_valid(d))
			return pd_fail_field(err, EINVAL, "image", "image '%s': a damaged record",
					     PD_ESC(ref));
		if (asprintf(&img->layer_dirs[i], "%s/layers/%s", s->dir, d + 7) < 0) {
			img->layer_dirs[i] = NULL;
			return pd_fail(err, ENOMEM, "out of memory");
		}
		img->n_layers++;
	}
	cfg = json_object_get(rec, "config");
	if (strv_from_json(json_object_get(cfg, "Env"), MAX_ENV, true, &img->env) < 0 ||
	    strv_from_json(json_object_get(cfg, "Entrypoint"), MAX_ENV, false, &img->entrypoint) <
		    0 ||
	    strv_from_json(json_object_get(cfg, "Cmd"), MAX_ENV, false, &img->cmd) < 0)
		return pd_fail_field(err, EINVAL, "image", "image '%s': a malformed config",
				     PD_ESC(ref));
	v = json_object_get(cfg, "WorkingDir");
	if (json_is_string(v) && json_string_value(v)[0] == '/' &&
	    !(img->cwd = strdup(json_string_value(v))))
		return pd_fail(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(img);
	return 0;
}

int paddock_image_command(paddock_image_store *s, const char *ref, const char *const *args,
			  char ***ret_argv, paddock_error *err)
{
	_cleanup_(pd_image_freep) struct pd_image *img = NULL;
	_cleanup_strv_ char **argv = NULL;
	size_t n = 0, k = 0;
	char *const *tail;
	int r;

	if (!s || !ret_argv)
		return pd_fail(err, EINVAL, "no image store given");
	r = pd_image_resolve(s->dir, ref, &img, err);
	if (r < 0)
		return r;
	tail = (args && args[0]) ? (char *const *)args : img->cmd;
	n = pd_strv_length(img->entrypoint) + pd_strv_length(tail);
	if (n == 0)
		return pd_fail_field(err, ENOENT, "image",
				     "image '%s' has no Entrypoint or Cmd: name a command",
				     PD_ESC(ref));
	argv = calloc(n + 1, sizeof(char *));
	if (!argv)
		return pd_fail(err, ENOMEM, "out of memory");
	for (char **p = img->entrypoint; p && *p; p++)
		if (!(argv[k++] = strdup(*p)))
			return pd_fail(err, ENOMEM, "out of memory");
	for (char *const *p = tail; p && *p; p++)
		if (!(argv[k++] = strdup(*p)))
			return pd_fail(err, ENOMEM, "out of memory");
	*ret_argv = TAKE_PTR(argv);
	return 0;
}
