/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main() of the init image (init-image.h): `paddock-init FD`, exec'ed by a sandbox's init
 * once its root is built, FD a memfd with its pd_init_conf. Nobody else runs it: it is never
 * installed. A configuration it cannot read fails the sandbox's start with a message on the
 * control socket (PD_INIT_CTL_FD), as any failure of init's setup does; run by hand, without
 * that socket, it exits 2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "init.h"
#include "init-conf.h"
#include "util/fd.h"

/* The configuration named by argv, read whole; its fd is closed. 0 or -errno. */
static int read_conf(int argc, char **argv, struct pd_init_conf *ret, paddock_error *err)
{
	struct stat st;
	char *buf, *end;
	long fd;
	ssize_t n;
	int r;

	if (argc != 2)
		return pd_fail(err, EINVAL,
			       "init image: expected one argument, the fd of its "
			       "configuration");
	errno = 0;
	fd = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || fd <= PD_INIT_CTL_FD || fd > 1048576)
		return pd_fail(err, EINVAL, "init image: '%s' is not a configuration fd",
			       PD_ESC(argv[1]));
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > PD_INIT_CONF_MAX)
		return pd_fail(err, EINVAL, "init image: fd %ld is not a configuration", fd);
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return pd_fail(err, ENOMEM, "init image: read its configuration");
	n = pd_read_full((int)fd, buf, (size_t)st.st_size);
	close((int)fd);
	r = n == st.st_size ? pd_init_conf_parse(buf, (size_t)n, ret) : (n < 0 ? (int)n : -EIO);
	if (r < 0) {
		free(buf);
		return pd_fail(err, -r, "init image: malformed configuration");
	}
	return 0; /* buf stays: the strings of *ret point into it */
}

int main(int argc, char **argv)
{
	static struct pd_init_conf conf;
	paddock_error err = { 0 };
	int type = 0;
	socklen_t len = sizeof(type);

	if (read_conf(argc, argv, &conf, &err) >= 0)
		pd_init_run(&conf);
	/* only to init's control socket: a SOCK_SEQPACKET there, as the clone left it */
	if (getsockopt(PD_INIT_CTL_FD, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    type == SOCK_SEQPACKET)
		pd_init_fail(PD_INIT_CTL_FD, &err);
	return 2;
}
