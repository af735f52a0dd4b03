/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main() of the init image (init-image.h): `paddock-init FD`, exec'ed by a sandbox's init
 * once its root is built, FD a memfd with its pd_init_conf. Nobody else runs it: it is never
 * installed, and a run by hand finds no such fd and exits 2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init.h"
#include "init-conf.h"
#include "util/fd.h"

int main(int argc, char **argv)
{
	static struct pd_init_conf conf;
	struct stat st;
	char *buf, *end;
	long fd;
	ssize_t n;

	if (argc != 2)
		return 2;
	errno = 0;
	fd = strtol(argv[1], &end, 10);
	if (errno || end == argv[1] || *end || fd < 3 || fd > 1048576)
		return 2;
	if (fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > PD_INIT_CONF_MAX)
		return 2;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return 2;
	n = pd_read_full((int)fd, buf, (size_t)st.st_size);
	close((int)fd);
	if (n != st.st_size || pd_init_conf_parse(buf, (size_t)n, &conf) < 0)
		return 2;
	pd_init_run(&conf);
}
