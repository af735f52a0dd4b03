/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public file API of a sandbox (include/paddock/files.h): every call resolves its path
 * beneath the root fd init sent at READY (fsops.c), with the sandbox user's identity, and
 * reports owners as the sandbox sees them.
 */
#include <errno.h>

#include "error.h"
#include "fsops.h"
#include "sandbox.h"

#define OVERFLOW_ID 65534u /* what the kernel shows for an id with no mapping */

/* The sandbox user's host ids: its range's 1000 as root, the invoker rootless. */
static uid_t user_uid(const paddock_sandbox *sb)
{
	return sb->idmap.rootless ? sb->idmap.outside_uid : sb->idmap.outside_uid + PD_SANDBOX_UID;
}

static gid_t user_gid(const paddock_sandbox *sb)
{
	return sb->idmap.rootless ? sb->idmap.outside_gid : sb->idmap.outside_gid + PD_SANDBOX_GID;
}

/* A host id as the sandbox sees it, through its user namespace's map (idmap.h). */
static uint32_t inside_id(const struct pd_idmap *m, uint32_t host, uint32_t outside, uint32_t user)
{
	if (m->rootless)
		return host == outside ? user : OVERFLOW_ID;
	if (host >= outside && host - outside < PD_IDMAP_RANGE)
		return host - outside;
	return OVERFLOW_ID;
}

static void map_owner(const paddock_sandbox *sb, struct paddock_file_info *info)
{
	info->uid = inside_id(&sb->idmap, info->uid, sb->idmap.outside_uid, PD_SANDBOX_UID);
	info->gid = inside_id(&sb->idmap, info->gid, sb->idmap.outside_gid, PD_SANDBOX_GID);
}

static int root_fd(paddock_sandbox *sb, paddock_error *err)
{
	if (sb->state != PD_SB_RUNNING || sb->root_fd < 0)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	return sb->root_fd;
}

static int check_mode(unsigned mode, paddock_error *err)
{
	if (mode & ~07777u)
		return pd_fail_field(err, EINVAL, "mode", "expected permission bits, got %o", mode);
	return 0;
}

int paddock_sandbox_read_file(paddock_sandbox *sb, const char *path, size_t max_bytes,
			      char **ret_data, size_t *ret_len, paddock_error *err)
{
	int fd;

	if (!sb || !path || !ret_data || !ret_len)
		return pd_fail(err, EINVAL, "paddock_sandbox_read_file: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_read_file(fd, path, max_bytes, user_uid(sb), user_gid(sb), ret_data,
				  ret_len, err);
}

int paddock_sandbox_write_file(paddock_sandbox *sb, const char *path, const void *data, size_t len,
			       unsigned mode, paddock_error *err)
{
	int fd, r;

	if (!sb || !path || (!data && len))
		return pd_fail(err, EINVAL, "paddock_sandbox_write_file: arguments are required");
	r = check_mode(mode, err);
	if (r < 0)
		return r;
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_write_file(fd, path, data, len, mode, user_uid(sb), user_gid(sb), err);
}

/* ---- metadata -------------------------------------------------------------------------- */

const char *paddock_file_type_to_string(enum paddock_file_type t)
{
	static const char *const names[_PADDOCK_FILE_TYPE_MAX] = {
		[PADDOCK_FILE_REGULAR] = "file",
		[PADDOCK_FILE_DIR] = "dir",
		[PADDOCK_FILE_SYMLINK] = "symlink",
		[PADDOCK_FILE_OTHER] = "other",
	};

	return (unsigned)t < _PADDOCK_FILE_TYPE_MAX ? names[t] : NULL;
}

void paddock_file_info_release(struct paddock_file_info *info)
{
	pd_fsops_info_release(info);
}

void paddock_file_infos_free(struct paddock_file_info *infos, size_t n)
{
	pd_fsops_infos_free(infos, n);
}

int paddock_sandbox_stat(paddock_sandbox *sb, const char *path, struct paddock_file_info *ret_info,
			 paddock_error *err)
{
	int fd, r;

	if (!sb || !path || !ret_info)
		return pd_fail(err, EINVAL, "paddock_sandbox_stat: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	r = pd_fsops_stat(fd, path, user_uid(sb), user_gid(sb), ret_info, err);
	if (r < 0)
		return r;
	map_owner(sb, ret_info);
	return 0;
}

int paddock_sandbox_list_dir(paddock_sandbox *sb, const char *path, unsigned depth,
			     size_t max_entries, struct paddock_file_info **ret_infos,
			     size_t *ret_n, paddock_error *err)
{
	int fd, r;

	if (!sb || !path || !ret_infos || !ret_n)
		return pd_fail(err, EINVAL, "paddock_sandbox_list_dir: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	r = pd_fsops_list(fd, path, depth, max_entries, user_uid(sb), user_gid(sb), ret_infos,
			  ret_n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < *ret_n; i++)
		map_owner(sb, &(*ret_infos)[i]);
	return 0;
}

/* ---- changes --------------------------------------------------------------------------- */

int paddock_sandbox_mkdir(paddock_sandbox *sb, const char *path, unsigned mode, bool parents,
			  paddock_error *err)
{
	int fd, r;

	if (!sb || !path)
		return pd_fail(err, EINVAL, "paddock_sandbox_mkdir: arguments are required");
	r = check_mode(mode, err);
	if (r < 0)
		return r;
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_mkdir(fd, path, mode, parents, user_uid(sb), user_gid(sb), err);
}

int paddock_sandbox_move(paddock_sandbox *sb, const char *from, const char *to, bool overwrite,
			 paddock_error *err)
{
	int fd;

	if (!sb || !from || !to)
		return pd_fail(err, EINVAL, "paddock_sandbox_move: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_move(fd, from, to, overwrite, user_uid(sb), user_gid(sb), err);
}

int paddock_sandbox_remove(paddock_sandbox *sb, const char *path, bool recursive,
			   paddock_error *err)
{
	int fd;

	if (!sb || !path)
		return pd_fail(err, EINVAL, "paddock_sandbox_remove: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_remove(fd, path, recursive, user_uid(sb), user_gid(sb), err);
}

/* ---- streams --------------------------------------------------------------------------- */

int paddock_sandbox_open_read(paddock_sandbox *sb, const char *path, uint64_t offset, int *ret_fd,
			      uint64_t *ret_size, paddock_error *err)
{
	int fd;

	if (!sb || !path || !ret_fd || !ret_size)
		return pd_fail(err, EINVAL, "paddock_sandbox_open_read: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_open_read(fd, path, offset, user_uid(sb), user_gid(sb), ret_fd, ret_size,
				  err);
}

int paddock_sandbox_open_write(paddock_sandbox *sb, const char *path, unsigned mode, bool parents,
			       paddock_file_writer **ret_writer, paddock_error *err)
{
	int fd, r;

	if (!sb || !path || !ret_writer)
		return pd_fail(err, EINVAL, "paddock_sandbox_open_write: arguments are required");
	r = check_mode(mode, err);
	if (r < 0)
		return r;
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_writer_open(fd, path, mode, parents, user_uid(sb), user_gid(sb), ret_writer,
				    err);
}

int paddock_file_writer_fd(const paddock_file_writer *w)
{
	return w ? pd_fsops_writer_fd(w) : -1;
}

int paddock_file_writer_commit(paddock_file_writer *w, paddock_error *err)
{
	if (!w)
		return pd_fail(err, EINVAL, "paddock_file_writer_commit: a writer is required");
	return pd_fsops_writer_commit(w, err);
}

paddock_file_writer *paddock_file_writer_free(paddock_file_writer *w)
{
	return pd_fsops_writer_free(w);
}

/* ---- watching -------------------------------------------------------------------------- */

int paddock_sandbox_watch(paddock_sandbox *sb, const char *path, bool recursive,
			  paddock_watch **ret_watch, paddock_error *err)
{
	int fd;

	if (!sb || !path || !ret_watch)
		return pd_fail(err, EINVAL, "paddock_sandbox_watch: arguments are required");
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_watch_open(fd, path, recursive, user_uid(sb), user_gid(sb), ret_watch, err);
}

int paddock_watch_fd(const paddock_watch *w)
{
	return w ? pd_fsops_watch_fd(w) : -1;
}

int paddock_watch_read(paddock_watch *w, paddock_watch_fn fn, void *userdata, paddock_error *err)
{
	if (!w || !fn)
		return pd_fail(err, EINVAL,
			       "paddock_watch_read: a watch and a callback are required");
	return pd_fsops_watch_read(w, fn, userdata, err);
}

paddock_watch *paddock_watch_free(paddock_watch *w)
{
	return pd_fsops_watch_free(w);
}
