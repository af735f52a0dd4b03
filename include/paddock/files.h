/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: file access into a running sandbox from outside. Every path is a path as the
 * sandbox sees it; symlinks and ".." resolve inside the sandbox and never reach a host file.
 *
 * Paths: absolute, or relative to the sandbox's "/"; 1 to PADDOCK_FILES_MAX_PATH bytes.
 * They are cleaned lexically first: repeated slashes and "." are dropped, ".." drops the
 * component before it (and stays at "/"), so "/a/link/.." is "/a" whatever "link" is. The
 * cleaned path is what is resolved and what comes back in paddock_file_info.path. Symlinks
 * inside the path resolve beneath the sandbox's "/" (an absolute target or a "../.." chain
 * never leaves it); /proc magic links are refused.
 *
 * Identity: every call acts with the sandbox user's identity (uid/gid 1000 inside): it can
 * read, create and remove what a command of the sandbox could, nothing more, and what it
 * creates belongs to the sandbox user.
 *
 * Errors: -errno with the paddock_error filled; its field names the argument at fault
 * ("path", "from", "to", "mode", "offset"). A sandbox that is not running gives -ESRCH.
 * The calls are for the thread that runs the sandbox's event loop.
 */
#pragma once

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PADDOCK_FILES_MAX_PATH	  4096	 /* bytes of a path argument */
#define PADDOCK_FILES_MAX_DEPTH	  16	 /* paddock_sandbox_list_dir() depth */
#define PADDOCK_FILES_MAX_ENTRIES 100000 /* paddock_sandbox_list_dir() max_entries */
#define PADDOCK_WATCH_MAX_DIRS	  4096	 /* directories one watch follows */

/*
 * Reads a regular file of the sandbox (a path as the sandbox sees it) of at most max_bytes:
 * -EFBIG beyond, -EINVAL when it is not a regular file. Symlinks and ".." resolve inside the
 * sandbox and never reach a host file. Caller frees *ret_data (NUL-terminated).
 */
PADDOCK_API int paddock_sandbox_read_file(paddock_sandbox *sb, const char *path, size_t max_bytes,
					  char **ret_data, size_t *ret_len, paddock_error *err);

/*
 * Writes a regular file of the sandbox atomically, owned by the sandbox user (uid 1000),
 * with `mode`. The directory must exist. Resolves like paddock_sandbox_read_file().
 */
PADDOCK_API int paddock_sandbox_write_file(paddock_sandbox *sb, const char *path, const void *data,
					   size_t len, unsigned mode, paddock_error *err);

/* ---- metadata ------------------------------------------------------------------------ */

enum paddock_file_type {
	PADDOCK_FILE_REGULAR,
	PADDOCK_FILE_DIR,
	PADDOCK_FILE_SYMLINK,
	PADDOCK_FILE_OTHER, /* fifo, socket, device */
	_PADDOCK_FILE_TYPE_MAX,
};

/* "file", "dir", "symlink", "other"; NULL when out of range. These strings are API. */
PADDOCK_API const char *paddock_file_type_to_string(enum paddock_file_type t);

struct paddock_file_info {
	char *path;	  /* absolute, cleaned, as the sandbox sees it */
	const char *name; /* last component, points into path ("/" for the root) */
	enum paddock_file_type type;
	uint64_t size;
	unsigned mode; /* permission bits (07777) */
	uint32_t uid;  /* as seen inside the sandbox; 65534 when it has no name there */
	uint32_t gid;
	int64_t mtime_ns;     /* since the epoch */
	char *symlink_target; /* symlinks only, never followed; else NULL */
};

/* Frees what an info holds (not the struct itself) and zeroes it. NULL is fine. */
PADDOCK_API void paddock_file_info_release(struct paddock_file_info *info);
/* Releases n infos and frees the array. NULL is fine. */
PADDOCK_API void paddock_file_infos_free(struct paddock_file_info *infos, size_t n);

/*
 * Describes `path` with lstat semantics: a symlink is reported as a symlink, with its target,
 * and not followed (the components before it are). Caller releases *ret_info.
 */
PADDOCK_API int paddock_sandbox_stat(paddock_sandbox *sb, const char *path,
				     struct paddock_file_info *ret_info, paddock_error *err);

/*
 * The entries below the directory `path` (symlinks in `path` itself are followed, inside
 * the sandbox), down to `depth` levels (1: its children; 1..PADDOCK_FILES_MAX_DEPTH).
 * Sorted by path, a directory's entries right after it. Symlinks below are reported, never
 * followed; other mounts are entered. Subdirectories the sandbox user cannot open are
 * reported without their entries. -E2BIG when there are more than max_entries
 * (1..PADDOCK_FILES_MAX_ENTRIES). Caller frees with paddock_file_infos_free(*ret_infos, *ret_n).
 */
PADDOCK_API int paddock_sandbox_list_dir(paddock_sandbox *sb, const char *path, unsigned depth,
					 size_t max_entries, struct paddock_file_info **ret_infos,
					 size_t *ret_n, paddock_error *err);

/* ---- changes ------------------------------------------------------------------------- */

/*
 * Creates the directory `path` with `mode` (exactly: the umask does not apply). -EEXIST
 * when it exists, unless `parents`: then missing parents are created too (with `mode`, plus
 * owner write and search) and an existing directory, or a symlink to one, is fine.
 */
PADDOCK_API int paddock_sandbox_mkdir(paddock_sandbox *sb, const char *path, unsigned mode,
				      bool parents, paddock_error *err);

/*
 * Renames `from` to `to` (a symlink at either end is the link itself). -EEXIST when `to`
 * exists, unless `overwrite` (then a file replaces a file, a directory an empty directory).
 * -EXDEV across mounts: nothing is copied. -EINVAL for "/" at either end.
 */
PADDOCK_API int paddock_sandbox_move(paddock_sandbox *sb, const char *from, const char *to,
				     bool overwrite, paddock_error *err);

/*
 * Removes a file, a symlink (the link itself), or an empty directory. With `recursive`, a
 * directory and everything below it: symlinks below are removed, never followed, and the
 * walk never enters another mount (-EXDEV, -EBUSY for a mount point at `path`). "/" is
 * refused (-EINVAL). On failure part of a tree may be gone.
 */
PADDOCK_API int paddock_sandbox_remove(paddock_sandbox *sb, const char *path, bool recursive,
				       paddock_error *err);

/* ---- streams ------------------------------------------------------------------------- */

/*
 * Opens the regular file `path` for reading (symlinks followed inside the sandbox),
 * positioned at `offset` (-EINVAL with field "offset" past its end), and gives its size at
 * open. The caller owns and closes *ret_fd (O_RDONLY, close-on-exec).
 */
PADDOCK_API int paddock_sandbox_open_read(paddock_sandbox *sb, const char *path, uint64_t offset,
					  int *ret_fd, uint64_t *ret_size, paddock_error *err);

/*
 * A streamed, atomic write. paddock_sandbox_open_write() creates a temporary file in the
 * target's directory (created first when `parents`, mode 0755), owned by the sandbox user
 * with `mode`; the caller writes the content to paddock_file_writer_fd() and calls
 * paddock_file_writer_commit(), which renames the file over the target (a symlink there is
 * replaced, never followed). Until then the target is unchanged. The writer is freed with
 * paddock_file_writer_free() in every case; freed without a commit, the temporary file is
 * removed. A path ending in "/", "." or ".." is -EINVAL.
 */
typedef struct paddock_file_writer paddock_file_writer;

PADDOCK_API int paddock_sandbox_open_write(paddock_sandbox *sb, const char *path, unsigned mode,
					   bool parents, paddock_file_writer **ret_writer,
					   paddock_error *err);
/* The fd to write to (blocking), owned by the writer; -1 once committed. */
PADDOCK_API int paddock_file_writer_fd(const paddock_file_writer *w);
/* Closes the file and renames it over the target. Once only: -EALREADY after. */
PADDOCK_API int paddock_file_writer_commit(paddock_file_writer *w, paddock_error *err);
PADDOCK_API paddock_file_writer *paddock_file_writer_free(paddock_file_writer *w);

/* ---- watching ------------------------------------------------------------------------ */

/*
 * Changes below a directory, by inotify. With `recursive`, every directory below it is
 * watched too, and those created or moved in later (their content from before the watch
 * reached them is not reported); at most PADDOCK_WATCH_MAX_DIRS: -ENOSPC at creation past
 * it, an "overflow" event when a later one does not fit. Symlinks are never followed.
 */
typedef struct paddock_watch paddock_watch;

struct paddock_watch_event {
	/*
	 * "create", "write", "remove", "rename" (sent for the old name and the new one),
	 * "chmod" (attributes or owner changed), or "overflow": events were lost or a
	 * directory could not be watched; `path` is the watched directory, rescan it.
	 */
	const char *type;
	const char *path; /* absolute, as the sandbox sees it */
	bool is_dir;
	bool moved_to; /* "rename": the new name (else the old one) */
};

typedef void (*paddock_watch_fn)(const struct paddock_watch_event *ev, void *userdata);

PADDOCK_API int paddock_sandbox_watch(paddock_sandbox *sb, const char *path, bool recursive,
				      paddock_watch **ret_watch, paddock_error *err);
/* Nonblocking, owned by the watch: read with paddock_watch_read() when it is readable. */
PADDOCK_API int paddock_watch_fd(const paddock_watch *w);
/*
 * Calls fn for each event pending (the event is valid during the call; fn must not free the
 * watch) and returns how many, 0 when none. It stops after a bounded amount; while the fd is
 * readable there is more.
 */
PADDOCK_API int paddock_watch_read(paddock_watch *w, paddock_watch_fn fn, void *userdata,
				   paddock_error *err);
PADDOCK_API paddock_watch *paddock_watch_free(paddock_watch *w);

#ifdef __cplusplus
}
#endif
