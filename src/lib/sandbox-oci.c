/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the OCI runtime needs of a live sandbox beyond paddock.h (include/paddock/oci.h): a
 * terminal made before its command. runc's `create --console-socket` hands the engine the
 * master at once, and the process starts only at `start`; init makes a command's pty when
 * it forks the command, too late. So the supervisor opens the sandbox's own ptmx through
 * the root fd init sent with READY (resolved inside it, as every file access from outside
 * is), and the command gets the slave as its stdio and controlling terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "paddock/oci.h"
#include "error.h"
#include "sandbox.h"
#include "util/cleanup.h"

/* the devpts "tty" group inside, where a whole range is mapped (as root) */
#define TTY_GID 5

int paddock_sandbox_open_pty(paddock_sandbox *sb, unsigned short rows, unsigned short cols,
			     int *ret_master, int *ret_slave, paddock_error *err)
{
	struct open_how how = {
		.flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int master = -EBADF, slave = -EBADF;
	struct winsize ws = { .ws_row = rows ? rows : 24, .ws_col = cols ? cols : 80 };
	const struct pd_idmap *m;
	int unlock = 0;

	if (!sb || !ret_master || !ret_slave)
		return pd_fail(err, EINVAL, "paddock_sandbox_open_pty: arguments are required");
	if (sb->state != PD_SB_RUNNING || sb->root_fd < 0)
		return pd_fail(err, ESRCH, "sandbox '%s' is not running", sb->id);
	m = &sb->idmap;
	master = (int)syscall(SYS_openat2, sb->root_fd, "dev/pts/ptmx", &how, sizeof(how));
	if (master < 0)
		return pd_fail(err, errno, "open the sandbox's /dev/pts/ptmx");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return pd_fail(err, errno, "unlock a pseudo-terminal");
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return pd_fail(err, errno, "open a pseudo-terminal's slave");
	(void)ioctl(master, TIOCSWINSZ, &ws); /* a default size is still usable */
	/* the command, not host root (nobody inside), owns its terminal, as init-run.c does */
	if (!m->rootless &&
	    fchown(slave, m->outside_uid + pd_idmap_user_uid(m),
		   m->outside_gid + (m->root_user ? pd_idmap_user_gid(m) : TTY_GID)) < 0)
		return pd_fail(err, errno, "give the pseudo-terminal to the command's user");
	*ret_master = TAKE_FD(master);
	*ret_slave = TAKE_FD(slave);
	return 0;
}
