/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup, the house idiom of libpaddock and its front ends (STYLE.md): variables
 * released when they leave scope, ownership moved out explicitly with TAKE_PTR()/TAKE_FD().
 * Macros and one inline function over libc only: no library state, nothing in the ABI. The
 * library's own cleanups over its internals (fds, pidfds, string vectors) build on these in
 * src/lib/util/cleanup.h.
 */
#pragma once

#include <errno.h>
#include <stdlib.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -EBADF;                                                                     \
		_fd;                                                                               \
	})

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

static inline void paddock_freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(paddock_freep)

/* fn##p(type **), for _cleanup_(fnp): calls fn on a non-NULL pointer */
#define PADDOCK_DEFINE_CLEANUP(type, fn)                                                           \
	static inline void fn##p(type **p)                                                         \
	{                                                                                          \
		if (*p)                                                                            \
			fn(*p);                                                                    \
	}
