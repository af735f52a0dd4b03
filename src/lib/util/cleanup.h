/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup: variables released when they leave scope, and ownership moved out
 * explicitly with TAKE_PTR()/TAKE_FD(). fds start at -EBADF so a close of an unset one is
 * a no-op that the compiler can see.
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "paddock/cleanup.h"

/* Closes fd if it is valid, keeping errno; returns -EBADF for "fd = pd_close(fd)". */
static inline int pd_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		(void)close(fd); /* Linux releases the fd even when close() fails */
		errno = saved;
	}
	return -EBADF;
}

static inline void pd_closep(int *fd)
{
	*fd = pd_close(*fd);
}
#define _cleanup_close_ _cleanup_(pd_closep)

static inline void pd_fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(pd_fclosep)

void pd_strv_free(char **v);
static inline void pd_strv_freep(char ***v)
{
	pd_strv_free(*v);
}
#define _cleanup_strv_ _cleanup_(pd_strv_freep)

/*
 * A child process held by pidfd that an early return must not orphan: kill it and reap it.
 */
static inline void pd_pidfd_killp(int *pidfd)
{
	if (*pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		(void)waitid(P_PIDFD, (id_t)*pidfd, &si, WEXITED);
		*pidfd = pd_close(*pidfd);
	}
}
#define _cleanup_pidfd_ _cleanup_(pd_pidfd_killp)

#define PD_DEFINE_CLEANUP(type, fn) PADDOCK_DEFINE_CLEANUP(type, fn)
