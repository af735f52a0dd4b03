/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What init hands across its exec into the init image (init-conf.h): a configuration
 * round-trips, and the image's parser refuses every malformed one (init then exits and the
 * sandbox fails to start, instead of running with half a configuration).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "init.h"
#include "init-conf.h"

static char *env[] = { "A=1", "EMPTY=", "B=two=2", NULL };
static char *secret_env[] = { "TOKEN=pd-secret-placeholder-0001", NULL };
static char *writable[] = { "/workspace", "/tmp", "/dev/shm", NULL };

static struct pd_init_conf sample(void)
{
	return (struct pd_init_conf){
		.flags = PD_INIT_POOLED | PD_INIT_CA,
		.idmap = { .rootless = true,
			   .outside_uid = 4242,
			   .outside_gid = 4243,
			   .init_uid = 1000,
			   .init_gid = 1000,
			   .slot = 7,
			   .lock_fd = 99 },
		.rlimits = { .n = 1, .r = { { .resource = 1, .soft = 10, .hard = 20 } } },
		.disk_bytes = 1u << 30,
		.ctl = 3,
		.lock_fd = -9, /* -EBADF: none */
		.listen_fd = 7,
		.orphan_timeout_s = 60,
		.landlock_fd = 8,
		.host_tree = -1,
		.proc_view = 7,
		.upper_fd = 8,
		.last_cap = 40,
		.cwd = "/workspace",
		.env = env,
		.secret_env = secret_env,
		.writable = writable,
	};
}

static void assert_strv_equal(char **a, char **b)
{
	for (; *a || *b; a++, b++) {
		assert_non_null(*a);
		assert_non_null(*b);
		assert_string_equal(*a, *b);
	}
}

static void test_round_trip(void **state)
{
	struct pd_init_conf in = sample(), out;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(pd_init_conf_pack(&in, &buf, &len), 0);
	assert_int_equal(pd_init_conf_parse(buf, len, &out), 0);
	assert_int_equal(out.flags, in.flags);
	assert_true(out.idmap.rootless);
	assert_int_equal(out.idmap.outside_uid, 4242);
	assert_int_equal(out.idmap.outside_gid, 4243);
	assert_int_equal(out.idmap.init_uid, 1000);
	assert_int_equal(out.idmap.slot, 7);
	assert_int_equal(out.idmap.lock_fd, -1); /* the supervisor's fd means nothing to init */
	assert_memory_equal(&out.rlimits, &in.rlimits, sizeof(in.rlimits));
	assert_int_equal(out.disk_bytes, in.disk_bytes);
	assert_int_equal(out.ctl, 3);
	assert_int_equal(out.lock_fd, -1); /* any negative fd is none */
	assert_int_equal(out.listen_fd, 7);
	assert_int_equal(out.orphan_timeout_s, 60);
	assert_int_equal(out.landlock_fd, 8);
	assert_int_equal(out.host_tree, -1);
	assert_int_equal(out.proc_view, 7);
	assert_int_equal(out.upper_fd, 8);
	assert_int_equal(out.last_cap, 40);
	assert_string_equal(out.cwd, "/workspace");
	assert_strv_equal(out.env, env);
	assert_strv_equal(out.secret_env, secret_env);
	assert_strv_equal(out.writable, writable);
	pd_init_conf_release(&out);
	free(buf);

	/* no environment, no secrets, nothing writable: empty lists, not NULL */
	in.env = in.secret_env = in.writable = NULL;
	assert_int_equal(pd_init_conf_pack(&in, &buf, &len), 0);
	assert_int_equal(pd_init_conf_parse(buf, len, &out), 0);
	assert_non_null(out.env);
	assert_null(out.env[0]);
	assert_null(out.secret_env[0]);
	assert_null(out.writable[0]);
	pd_init_conf_release(&out);
	free(buf);
}

/* Packs `c`, lets `mutate` change the bytes, and parses the result. */
static int parse_mutated(struct pd_init_conf c, void (*mutate)(char *buf, size_t *len))
{
	struct pd_init_conf out;
	char *buf = NULL;
	size_t len = 0;
	int r;

	assert_int_equal(pd_init_conf_pack(&c, &buf, &len), 0);
	if (mutate)
		mutate(buf, &len);
	r = pd_init_conf_parse(buf, len, &out);
	if (r == 0)
		pd_init_conf_release(&out);
	free(buf);
	return r;
}

static void bad_magic(char *buf, size_t *len)
{
	(void)len;
	buf[0] ^= 1;
}

static void cut_last_nul(char *buf, size_t *len)
{
	(void)buf;
	(*len)--;
}

static void cut_header(char *buf, size_t *len)
{
	(void)buf;
	*len = 16;
}

static void test_refused(void **state)
{
	struct pd_init_conf c;
	char *bad_env[] = { "NOEQUALS", NULL }, *bad_env2[] = { "=value", NULL };
	char *relative[] = { "tmp", NULL };

	(void)state;
	assert_int_equal(parse_mutated(sample(), NULL), 0);
	assert_int_equal(parse_mutated(sample(), bad_magic), -EPROTO);
	assert_int_equal(parse_mutated(sample(), cut_last_nul), -EPROTO);
	assert_int_equal(parse_mutated(sample(), cut_header), -EPROTO);
	/* a byte after the last string */
	c = sample();
	{
		char *buf = NULL, *more;
		size_t len = 0;

		assert_int_equal(pd_init_conf_pack(&c, &buf, &len), 0);
		more = calloc(1, len + 1);
		assert_non_null(more);
		memcpy(more, buf, len);
		assert_int_equal(pd_init_conf_parse(more, len + 1, &c), -EPROTO);
		free(more);
		free(buf);
	}
	c = sample();
	c.flags |= 1u << 7;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.ctl = -1; /* the control socket is not optional */
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.disk_bytes = 0;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.last_cap = 64;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.orphan_timeout_s = -1;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.rlimits.n = PD_CTL_MAX_RLIMITS + 1;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.cwd = "workspace";
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.env = bad_env;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.secret_env = bad_env2;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	c = sample();
	c.writable = relative;
	assert_int_equal(parse_mutated(c, NULL), -EPROTO);
	/* not a byte past what was given is read */
	assert_int_equal(pd_init_conf_parse("PDIC", 4, &c), -EPROTO);
}

static void test_too_big(void **state)
{
	struct pd_init_conf c = sample();
	char *big = malloc(PD_INIT_CONF_MAX + 2);
	char *one[] = { big, NULL };
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', PD_INIT_CONF_MAX);
	memcpy(big, "X=", 2);
	big[PD_INIT_CONF_MAX] = '\0';
	c.env = one;
	assert_int_equal(pd_init_conf_pack(&c, &buf, &len), -E2BIG);
	assert_null(buf);
	free(big);
}

/*
 * The built init image, run as init runs it, with `conf` as its configuration: fd 3 is
 * `ctl_fd` (-1: /dev/null). Returns its exit status; what it sent on ctl is left there.
 */
static int run_image(const void *conf, size_t len, int ctl_fd)
{
	const char *dir = getenv("PADDOCK_BUILD_DIR");
	char image[4096], arg[16];
	int first, memfd, status = -1;
	pid_t pid;

	assert_non_null(dir);
	snprintf(image, sizeof(image), "%s/src/lib/paddock-init", dir);
	first = memfd_create("conf", 0);
	assert_true(first >= 0);
	memfd = fcntl(first, F_DUPFD, 10); /* above 3, where the control socket goes */
	close(first);
	assert_true(memfd >= 10);
	assert_int_equal(write(memfd, conf, len), (ssize_t)len);
	assert_int_equal(lseek(memfd, 0, SEEK_SET), 0);
	snprintf(arg, sizeof(arg), "%d", memfd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int three = ctl_fd >= 0 ? ctl_fd : open("/dev/null", O_RDWR);

		if (three < 0 || dup2(three, 3) < 0)
			_exit(99);
		execl(image, "paddock-init", arg, (char *)NULL);
		_exit(98);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(memfd);
	return status;
}

static void test_image_refuses_bad_conf(void **state)
{
	static const char garbage[] = "PDIC but not a configuration";
	paddock_error err = { 0 };
	uint32_t type = 0;
	int sv[2], status;
	ssize_t n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	/* as init: the sandbox fails to start, naming why, on the control socket */
	status = run_image(garbage, sizeof(garbage), sv[1]);
	close(sv[1]); /* what the image sent, or EOF */
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
	n = pd_ctl_recv(sv[0], &type, &err, sizeof(err), NULL, NULL);
	assert_int_equal(n, (ssize_t)sizeof(err));
	assert_int_equal(type, PD_CTL_FAILED);
	assert_int_equal(err.code, EPROTO);
	assert_non_null(strstr(err.msg, "init image: malformed configuration"));
	close(sv[0]);
	/* by hand, with no control socket: it exits 2 and writes nothing anywhere */
	status = run_image(garbage, sizeof(garbage), -1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_image_refuses_bad_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
