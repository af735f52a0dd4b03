/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watching a sandbox directory from the supervisor, by inotify. inotify_add_watch() takes a
 * path, and a path is what we must never give the kernel to resolve on the sandbox's
 * behalf; so each directory is opened first (O_PATH, openat2 beneath the watched directory
 * with RESOLVE_NO_SYMLINKS, itself resolved in the sandbox's root) and the watch is put on
 * "/proc/self/fd/N": the kernel follows that magic link of ours to the directory already
 * resolved. The watch remembers each directory's path relative to the watched one, which
 * the events' names complete.
 *
 * Recursive watches follow the tree as it changes: a directory created or moved in gets a
 * watch (and so does what is below it), one moved away loses its watches, and a bound
 * (PD_FSOPS_MAX_WATCHES directories) keeps a hostile tree from exhausting the supervisor's
 * inotify watches. Event names come from the sandbox: checked against the record's length
 * and NAME_MAX, and handed to the caller as part of a path it escapes.
 */
#include "fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "fsops-internal.h"
#include "util/cleanup.h"

#define WATCH_MASK                                                                                 \
	(IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |             \
	 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)

/* one paddock_watch_read() reads at most this many times: the loop comes back for more */
#define MAX_READS 16

PD_DEFINE_CLEANUP(DIR, closedir)

struct watched {
	int wd;
	char *rel; /* below the watched directory: "" for itself, "a/b" */
};

struct paddock_watch {
	int fd;	    /* inotify */
	int top;    /* O_PATH of the watched directory */
	char *path; /* its clean path in the sandbox */
	bool recursive;
	uid_t uid;
	gid_t gid;
	struct watched *dirs;
	size_t n, cap;
	alignas(struct inotify_event) char buf[16384];
};

static bool is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

static struct watched *find(paddock_watch *w, int wd)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

/* `rel` below the watched directory, with `how`: an fd or -errno. */
static int open_beneath(int top, const char *rel, struct open_how *how)
{
	long fd;

	for (int tries = 0;; tries++) {
		fd = syscall(SYS_openat2, top, rel[0] ? rel : ".", how, sizeof(*how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN || tries >= PD_FSOPS_OPENAT2_TRIES)
			return -errno;
	}
}

/*
 * Watches the directory `rel` below the watched one. Returns 1 when added, 0 when it is
 * watched already (the same directory reached twice, by a bind mount: not entered again),
 * -ENOSPC past the bound, or -errno.
 */
static int add_dir(paddock_watch *w, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		/* SECURITY: no symlink at all below the watched directory, no way above it */
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int fd = -EBADF;
	char proc[64];
	int wd;

	if (w->n >= PD_FSOPS_MAX_WATCHES)
		return -ENOSPC;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct watched *v = reallocarray(w->dirs, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->dirs = v;
		w->cap = cap;
	}
	fd = open_beneath(w->top, rel, &how);
	if (fd < 0)
		return fd;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(w->fd, proc, WATCH_MASK);
	if (wd < 0)
		return -errno;
	if (find(w, wd))
		return 0;
	w->dirs[w->n].rel = strdup(rel);
	if (!w->dirs[w->n].rel) {
		(void)inotify_rm_watch(w->fd, wd);
		return -ENOMEM;
	}
	w->dirs[w->n++].wd = wd;
	return 1;
}

/* errors that mean "this directory went away or changed": it is not watched, and that is all */
static bool gone(int r)
{
	return r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EACCES || r == -EPERM ||
	       r == -EXDEV;
}

/* Children of watched directory i that are directories: watched too (the list grows). */
static int add_children(paddock_watch *w, size_t i)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	const char *rel = w->dirs[i].rel; /* stays put when w->dirs moves */
	_cleanup_(closedirp) DIR *d = NULL;
	struct dirent *de;
	int fd;

	fd = open_beneath(w->top, rel, &how);
	if (fd < 0)
		return gone(fd) ? 0 : fd;
	d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *child = NULL;
		struct stat st;
		int r;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_UNKNOWN &&
		    (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		child = pd_fsops_join(rel, de->d_name);
		if (!child)
			return -ENOMEM;
		r = add_dir(w, child);
		if (r < 0 && !gone(r))
			return r;
	}
	return 0;
}

/* Watches `rel` and every directory below it, breadth first. */
static int add_tree(paddock_watch *w, const char *rel)
{
	size_t start = w->n;
	int r;

	r = add_dir(w, rel);
	if (r <= 0)
		return r;
	for (size_t i = start; i < w->n; i++) {
		r = add_children(w, i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Stops watching `rel` and what is below it: it was moved away, its paths are stale. */
static void drop_tree(paddock_watch *w, const char *rel)
{
	size_t len = strlen(rel), j = 0;

	for (size_t i = 0; i < w->n; i++) {
		const char *r = w->dirs[i].rel;

		if (!strncmp(r, rel, len) && (r[len] == '\0' || r[len] == '/')) {
			(void)inotify_rm_watch(w->fd, w->dirs[i].wd);
			free(w->dirs[i].rel);
			continue;
		}
		w->dirs[j++] = w->dirs[i];
	}
	w->n = j;
}

static void forget(paddock_watch *w, struct watched *d)
{
	size_t i = (size_t)(d - w->dirs);

	free(d->rel);
	memmove(d, d + 1, (w->n - i - 1) * sizeof(*d));
	w->n--;
}

paddock_watch *pd_fsops_watch_free(paddock_watch *w)
{
	if (!w)
		return NULL;
	for (size_t i = 0; i < w->n; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	free(w->path);
	w->fd = pd_close(w->fd);
	w->top = pd_close(w->top);
	free(w);
	return NULL;
}
PD_DEFINE_CLEANUP(paddock_watch, pd_fsops_watch_free)

int pd_fsops_watch_open(int root_fd, const char *path, bool recursive, uid_t uid, gid_t gid,
			paddock_watch **ret_watch, paddock_error *err)
{
	_cleanup_(pd_fsops_watch_freep) paddock_watch *w = NULL;
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return pd_fail(err, ENOMEM, "allocate a watch");
	*w = (struct paddock_watch){
		.fd = -EBADF, .top = -EBADF, .recursive = recursive, .uid = uid, .gid = gid
	};
	r = pd_fsops_clean_path("path", path, &w->path, err);
	if (r < 0)
		return r;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return pd_fail(err, errno, "inotify_init1");
	r = pd_fsops_become(uid, gid, &old, err);
	if (r < 0)
		return r;
	/* the directory named is resolved like any path: symlinks followed, inside the root */
	w->top = pd_fsops_open_in_root(root_fd, "path", w->path, O_PATH | O_DIRECTORY, 0, err);
	if (w->top < 0)
		return w->top;
	r = recursive ? add_tree(w, "") : add_dir(w, "");
	if (r == -ENOSPC)
		return pd_fail_field(err, ENOSPC, "path",
				     "more than %d directories to watch below '%s'",
				     PD_FSOPS_MAX_WATCHES, PD_ESC(w->path));
	if (r < 0)
		return pd_fail_field(err, r, "path", "watch '%s'", PD_ESC(w->path));
	*ret_watch = TAKE_PTR(w);
	return 0;
}

int pd_fsops_watch_fd(const paddock_watch *w)
{
	return w->fd;
}

static int emit_ev(paddock_watch *w, const char *type, const char *rel, const char *name,
		   bool is_dir, bool moved_to, paddock_watch_fn fn, void *userdata)
{
	_cleanup_free_ char *dir = pd_fsops_join(w->path, rel), *path = NULL;

	if (!dir)
		return -ENOMEM;
	if (name) {
		path = pd_fsops_join(dir, name);
		if (!path)
			return -ENOMEM;
	}
	fn(&(struct paddock_watch_event){ .type = type,
					  .path = path ? path : dir,
					  .is_dir = is_dir,
					  .moved_to = moved_to },
	   userdata);
	return 1;
}

static int emit(paddock_watch *w, const char *type, const char *rel, const char *name, bool is_dir,
		paddock_watch_fn fn, void *userdata)
{
	return emit_ev(w, type, rel, name, is_dir, false, fn, userdata);
}

/* Follows a directory created or moved in below a recursive watch. */
static int follow(paddock_watch *w, const char *rel, const char *name, paddock_watch_fn fn,
		  void *userdata)
{
	_cleanup_fsid_ struct pd_fsid old = { 0 };
	_cleanup_free_ char *child = pd_fsops_join(rel, name);
	int r;

	if (!child)
		return -ENOMEM;
	r = pd_fsops_become(w->uid, w->gid, &old, NULL);
	if (r < 0)
		return r;
	r = add_tree(w, child);
	pd_fsops_restore(&old); /* the caller's callback runs as the supervisor */
	if (r == -ENOSPC)
		return emit(w, "overflow", child, NULL, true, fn, userdata);
	return r < 0 && !gone(r) ? r : 0;
}

static int handle(paddock_watch *w, const struct inotify_event *ev, paddock_watch_fn fn,
		  void *userdata)
{
	_cleanup_free_ char *rel = NULL;
	const char *name = ev->len ? ev->name : NULL;
	bool is_dir = ev->mask & IN_ISDIR;
	struct watched *d;
	int r = 0;

	if (ev->mask & IN_Q_OVERFLOW)
		return emit(w, "overflow", "", NULL, true, fn, userdata);
	d = find(w, ev->wd);
	if (!d) /* a watch dropped meanwhile */
		return 0;
	if (ev->mask & IN_IGNORED) {
		forget(w, d);
		return 0;
	}
	/* the name is the sandbox's: NUL-terminated within the record, one component */
	if (name && (strnlen(name, ev->len) >= ev->len || strnlen(name, ev->len) > NAME_MAX ||
		     strchr(name, '/') || is_dot(name)))
		return -EPROTO;
	if (name && !name[0])
		name = NULL;
	/* a copy: following or dropping a tree moves w->dirs */
	rel = strdup(d->rel);
	if (!rel)
		return -ENOMEM;
	if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && rel[0])
		return 0; /* a subdirectory: its parent's watch reported it */
	if (ev->mask & IN_CREATE) {
		r = emit(w, "create", rel, name, is_dir, fn, userdata);
		if (r >= 0 && name && is_dir && w->recursive) {
			int f = follow(w, rel, name, fn, userdata);
			r = f < 0 ? f : r + f;
		}
	} else if (ev->mask & IN_MODIFY) {
		r = emit(w, "write", rel, name, is_dir, fn, userdata);
	} else if (ev->mask & IN_ATTRIB) {
		r = emit(w, "chmod", rel, name, is_dir, fn, userdata);
	} else if (ev->mask & IN_DELETE) {
		r = emit(w, "remove", rel, name, is_dir, fn, userdata);
	} else if (ev->mask & IN_MOVED_FROM) {
		if (name && is_dir && w->recursive) {
			_cleanup_free_ char *child = pd_fsops_join(rel, name);

			if (!child)
				return -ENOMEM;
			drop_tree(w, child);
		}
		r = emit(w, "rename", rel, name, is_dir, fn, userdata);
	} else if (ev->mask & IN_MOVED_TO) {
		r = emit_ev(w, "rename", rel, name, is_dir, true, fn, userdata);
		if (r >= 0 && name && is_dir && w->recursive) {
			int f = follow(w, rel, name, fn, userdata);
			r = f < 0 ? f : r + f;
		}
	} else if (ev->mask & IN_DELETE_SELF) {
		r = emit(w, "remove", "", NULL, true, fn, userdata);
	} else if (ev->mask & IN_MOVE_SELF) {
		r = emit(w, "rename", "", NULL, true, fn, userdata);
	}
	return r;
}

int pd_fsops_watch_read(paddock_watch *w, paddock_watch_fn fn, void *userdata, paddock_error *err)
{
	int count = 0;

	for (int reads = 0; reads < MAX_READS; reads++) {
		ssize_t n = read(w->fd, w->buf, sizeof(w->buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return pd_fail(err, errno, "read the watch of '%s'", PD_ESC(w->path));
		if (n == 0)
			break;
		for (size_t off = 0; off < (size_t)n;) {
			const struct inotify_event *ev = (const void *)(w->buf + off);
			int r;

			if ((size_t)n - off < sizeof(*ev) ||
			    (size_t)n - off - sizeof(*ev) < ev->len)
				return pd_fail(err, EPROTO, "a short inotify record");
			r = handle(w, ev, fn, userdata);
			if (r < 0)
				return pd_fail(err, r, "watch '%s'", PD_ESC(w->path));
			count += r;
			off += sizeof(*ev) + ev->len;
		}
	}
	return count;
}
