/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public file API of a sandbox (include/paddock/files.h): every call resolves its path
 * beneath the root fd init sent at READY (fsops.c), with the sandbox user's identity.
 */
#include <errno.h>

#include "error.h"
#include "fsops.h"
#include "sandbox.h"

/* The sandbox user's host ids: its range's 1000 as root, the invoker rootless. */
static uid_t user_uid(const paddock_sandbox *sb)
{
	return sb->idmap.rootless ? sb->idmap.outside_uid : sb->idmap.outside_uid + PD_SANDBOX_UID;
}

static gid_t user_gid(const paddock_sandbox *sb)
{
	return sb->idmap.rootless ? sb->idmap.outside_gid : sb->idmap.outside_gid + PD_SANDBOX_GID;
}

static int root_fd(paddock_sandbox *sb, paddock_error *err)
{
	if (sb->state != PD_SB_RUNNING || sb->root_fd < 0)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	return sb->root_fd;
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

int paddock_sandbox_write_file(paddock_sandbox *sb, const char *path, const void *data,
			       size_t len, unsigned mode, paddock_error *err)
{
	int fd;

	if (!sb || !path || (!data && len))
		return pd_fail(err, EINVAL, "paddock_sandbox_write_file: arguments are required");
	if (mode & ~07777u)
		return pd_fail_field(err, EINVAL, "mode", "expected permission bits, got %o", mode);
	fd = root_fd(sb, err);
	if (fd < 0)
		return fd;
	return pd_fsops_write_file(fd, path, data, len, mode, user_uid(sb), user_gid(sb), err);
}
