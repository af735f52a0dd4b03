/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Landlock, the second wall around the filesystem. The mount namespace already decides
 * what exists; Landlock decides what a command may do with it: read and execute anywhere,
 * write (create, remove, rename, truncate) only below the paths the sandbox owns, and use
 * the devices in /dev.
 *
 * Who runs what: init builds the ruleset once per sandbox, after pivot_root, from paths
 * paddock chose (not the agent); the rules hold the paths' inodes, so later renames inside
 * the sandbox change nothing. Each command's child enforces it with one
 * landlock_restrict_self() after no_new_privs. Landlock stacks: a command may add its own
 * rules but never lift these.
 *
 * The ABI is probed at runtime and the ruleset handles every filesystem right that ABI
 * knows, so a right the kernel adds later is simply not handled until we list it here.
 * Network rights (ABI 4) and scopes (ABI 6) are deliberately not handled: the network
 * namespace governs the network and abstract unix sockets, and the pid namespace already
 * limits whom a command can signal.
 */
#include "landlock.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"

/* The installed uapi header may predate the rights we use (Debian 12 has ABI 2's). */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
/* The same numbers on every architecture (they came after the tables were unified). */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

/* ABI 1: everything but REFER (2), TRUNCATE (3) and IOCTL_DEV (5). */
#define ACCESS_FS_ABI1                                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |                              \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |                          \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |                              \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                              \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |                            \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/*
 * The rights that mean something on a file rather than a directory tree (the kernel's
 * ACCESS_FILE); landlock_add_rule() on a non-directory rejects any other with EINVAL.
 */
#define ACCESS_FS_FILE                                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |                              \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |                              \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define ACCESS_FS_READ_EXEC                                                                        \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/*
 * On top of read and execute: write to the devices (/dev/null, /dev/tty, /dev/pts/N) and
 * use their ioctls (terminal modes). Making device nodes stays denied.
 */
#define ACCESS_FS_DEV (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

int pd_landlock_abi(void)
{
	/* The feature-probe cache, the one mutable global src/lib allows; -1: not probed. */
	static int cached_abi = -1;
	int abi = __atomic_load_n(&cached_abi, __ATOMIC_RELAXED);

	if (abi < 0) {
		/* ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot. */
		long r = syscall(__NR_landlock_create_ruleset, NULL, 0,
				 LANDLOCK_CREATE_RULESET_VERSION);

		abi = r > 0 ? (int)r : 0;
		__atomic_store_n(&cached_abi, abi, __ATOMIC_RELAXED);
	}
	return abi;
}

static uint64_t handled_access_fs(int abi)
{
	uint64_t access = ACCESS_FS_ABI1;

	if (abi >= 2)
		access |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		access |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		access |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return access;
}

/* Grants `access` (limited to what the ruleset handles) below `path`; skips a missing path. */
static int add_path_rule(int ruleset_fd, const char *path, uint64_t access, uint64_t handled,
			 paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	if (path[0] != '/')
		return pd_fail(err, EINVAL, "landlock path '%s' is not absolute", PD_ESC(path));
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return pd_fail(err, errno, "open '%s' for a landlock rule", PD_ESC(path));
	if (fstat(fd, &st) < 0)
		return pd_fail(err, errno, "stat '%s' for a landlock rule", PD_ESC(path));
	if (!S_ISDIR(st.st_mode))
		access &= ACCESS_FS_FILE;

	struct landlock_path_beneath_attr attr = {
		.allowed_access = access & handled,
		.parent_fd = fd,
	};

	if (attr.allowed_access == 0)
		return 0; /* the kernel refuses an empty rule, and it would grant nothing */
	if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
		return pd_fail(err, errno, "add landlock rule for '%s'", PD_ESC(path));
	return 0;
}

int pd_landlock_prepare(const char *const *rw_paths, int *ret_ruleset_fd, paddock_error *err)
{
	_cleanup_close_ int ruleset_fd = -EBADF;
	int abi = pd_landlock_abi();
	int r;

	assert(ret_ruleset_fd);

	if (abi == 0)
		return pd_fail(err, EOPNOTSUPP, "landlock is not available in this kernel");

	uint64_t handled = handled_access_fs(abi);
	/*
	 * Only handled_access_fs: the older struct is a valid prefix of the newer ones, and
	 * the kernel treats fields it is not given as zero (nothing handled).
	 */
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled };

	/* The kernel always makes the ruleset fd close-on-exec. */
	ruleset_fd = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (ruleset_fd < 0)
		return pd_fail(err, errno, "create landlock ruleset (abi %d)", abi);

	r = add_path_rule(ruleset_fd, "/", ACCESS_FS_READ_EXEC, handled, err);
	if (r < 0)
		return r;
	r = add_path_rule(ruleset_fd, "/dev", ACCESS_FS_DEV, handled, err);
	if (r < 0)
		return r;
	for (const char *const *p = rw_paths; p && *p; p++) {
		/* Everything handled, REFER included from ABI 2 on (renames across directories). */
		r = add_path_rule(ruleset_fd, *p, handled, handled, err);
		if (r < 0)
			return r;
	}

	*ret_ruleset_fd = TAKE_FD(ruleset_fd);
	return 0;
}

int pd_landlock_apply(int ruleset_fd)
{
	if (syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0)
		return -errno;
	return 0;
}
