/* SPDX-License-Identifier: Apache-2.0 */
#include "init-image.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

/* init-image.S: the bytes of the static init executable */
extern const char pd_init_image_start[];
extern const char pd_init_image_end[];

static pthread_mutex_t image_lock = PTHREAD_MUTEX_INITIALIZER;
static int image_fd = -1; /* the feature-probe-like cache STYLE.md allows: made once */

static int make_image(paddock_error *err)
{
	_cleanup_close_ int rw = -EBADF;
	char path[64];
	int fd, r;

	/* MFD_EXEC: kernels since 6.3 ask for it (vm.memfd_noexec); older ones refuse the flag */
	rw = memfd_create("paddock-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (rw < 0 && errno == EINVAL)
		rw = memfd_create("paddock-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (rw < 0 && errno == EACCES)
		return pd_fail(err, errno,
			       "memfd for the init image: the kernel forbids executable "
			       "memfds (vm.memfd_noexec = 2)");
	if (rw < 0)
		return pd_fail(err, errno, "memfd for the init image");
	r = pd_write_all(rw, pd_init_image_start,
			 (size_t)(pd_init_image_end - pd_init_image_start));
	if (r < 0)
		return pd_fail(err, -r, "write the init image");
	if (fchmod(rw, 0555) < 0)
		return pd_fail(err, errno, "make the init image read-only");
	/* SECURITY: nothing can change the image from here on, nor its mode (F_SEAL_EXEC) */
	if (fcntl(rw, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_EXEC) < 0 &&
	    (errno != EINVAL ||
	     fcntl(rw, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0))
		return pd_fail(err, errno, "seal the init image");
	if (fcntl(rw, F_ADD_SEALS, F_SEAL_SEAL) < 0)
		return pd_fail(err, errno, "seal the init image");
	/* exec refuses a file open for writing (ETXTBSY): keep a read-only open of it only */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rw);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pd_fail(err, errno, "reopen the init image read-only (is /proc mounted?)");
	return fd;
}

int pd_init_image_fd(paddock_error *err)
{
	int r;

	pthread_mutex_lock(&image_lock);
	if (image_fd < 0) {
		r = make_image(err);
		if (r >= 0)
			image_fd = r;
	} else {
		r = image_fd;
	}
	pthread_mutex_unlock(&image_lock);
	return r;
}
