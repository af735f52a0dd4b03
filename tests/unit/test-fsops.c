/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsops against a temporary directory standing in for a sandbox's "/": a fresh one per
 * test (mkdtemp under /tmp, held O_PATH), with the test's own uid/gid as the sandbox user,
 * and a second one "outside" that escapes aim at. Every call is checked to give the
 * supervisor its file-system identity back. Runs unprivileged; the identity test needs root
 * and skips without it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsops-internal.h"
#include "fsops.h"
#include "util/cleanup.h"

#define CHECK(call, err)                                                                           \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		if (r_ < 0)                                                                        \
			fail_msg("%s = %d (%s): %s", #call, r_, strerror(-r_), (err).msg);         \
	} while (0)

struct fx {
	char root[64];
	char outside[64];
	int root_fd;
	uid_t uid;
	gid_t gid;
};

/* ---- helpers (test-controlled paths only) ---------------------------------------------- */

static void rm_tree_at(int dir, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			DIR *d = fdopendir(fd);
			struct dirent *de;

			while (d && (de = readdir(d)))
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					rm_tree_at(dirfd(d), de->d_name);
			if (d)
				closedir(d);
			else
				close(fd);
		}
		(void)unlinkat(dir, name, AT_REMOVEDIR);
	} else {
		(void)unlinkat(dir, name, 0);
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/paddock-fsops-XXXXXX");
	snprintf(f->outside, sizeof(f->outside), "/tmp/paddock-fsops-out-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_non_null(mkdtemp(f->outside));
	f->root_fd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->root_fd >= 0);
	f->uid = getuid();
	f->gid = getgid();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	close(f->root_fd);
	rm_tree_at(AT_FDCWD, f->root);
	rm_tree_at(AT_FDCWD, f->outside);
	free(f);
	return 0;
}

/* The supervisor is itself again: fsuid and fsgid back to the real ones. */
static void assert_identity_restored(void)
{
	assert_int_equal(setfsuid((uid_t)-1), geteuid());
	assert_int_equal(setfsgid((gid_t)-1), getegid());
}

static void put(int dir, const char *rel, const char *content, mode_t mode)
{
	int fd = openat(dir, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

/* The content of a test file, in a static buffer; NULL when it cannot be opened. */
static const char *slurp(int dir, const char *rel)
{
	static char buf[256];
	int fd = openat(dir, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static bool exists(int dir, const char *rel)
{
	struct stat st;

	return fstatat(dir, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* ---- paths ----------------------------------------------------------------------------- */

static void test_clean_path(void **state)
{
	static const char *const cases[][2] = {
		{ "a", "/a" },		 { "/a/b/", "/a/b" },  { "//a//./b/../c", "/a/c" },
		{ "..", "/" },		 { "/../../x", "/x" }, { ".", "/" },
		{ "a/b/../../..", "/" }, { "/", "/" },	       { "...", "/..." },
	};
	paddock_error err = { 0 };
	char *clean = NULL;
	char *big;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		CHECK(pd_fsops_clean_path("path", cases[i][0], &clean, &err), err);
		assert_string_equal(clean, cases[i][1]);
		free(clean);
	}
	assert_int_equal(pd_fsops_clean_path("from", "", &clean, &err), -EINVAL);
	assert_string_equal(err.field, "from");
	big = malloc(PD_FSOPS_MAX_PATH + 2);
	assert_non_null(big);
	memset(big, 'a', PD_FSOPS_MAX_PATH + 1);
	big[PD_FSOPS_MAX_PATH + 1] = '\0';
	assert_int_equal(pd_fsops_clean_path("to", big, &clean, &err), -EINVAL);
	assert_string_equal(err.field, "to");
	big[PD_FSOPS_MAX_PATH] = '\0';
	CHECK(pd_fsops_clean_path("to", big, &clean, &err), err);
	free(clean);
	free(big);
}

/* ---- stat and list --------------------------------------------------------------------- */

static void test_stat(void **state)
{
	struct fx *f = *state;
	struct paddock_file_info info;
	paddock_error err = { 0 };

	put(f->root_fd, "a.txt", "hello", 0640);
	assert_int_equal(fchmodat(f->root_fd, "a.txt", 0640, 0), 0);
	assert_int_equal(mkdirat(f->root_fd, "d", 0750), 0);
	assert_int_equal(fchmodat(f->root_fd, "d", 0750, 0), 0);
	assert_int_equal(symlinkat("/etc", f->root_fd, "link"), 0);

	CHECK(pd_fsops_stat(f->root_fd, "/a.txt", f->uid, f->gid, &info, &err), err);
	assert_string_equal(info.path, "/a.txt");
	assert_string_equal(info.name, "a.txt");
	assert_int_equal(info.type, PADDOCK_FILE_REGULAR);
	assert_int_equal(info.size, 5);
	assert_int_equal(info.mode, 0640);
	assert_int_equal(info.uid, f->uid);
	assert_int_equal(info.gid, f->gid);
	assert_true(info.mtime_ns > 0);
	assert_null(info.symlink_target);
	pd_fsops_info_release(&info);

	CHECK(pd_fsops_stat(f->root_fd, "d/", f->uid, f->gid, &info, &err), err);
	assert_string_equal(info.path, "/d");
	assert_int_equal(info.type, PADDOCK_FILE_DIR);
	assert_int_equal(info.mode, 0750);
	pd_fsops_info_release(&info);

	/* lstat: the link, never /etc */
	CHECK(pd_fsops_stat(f->root_fd, "d/../link", f->uid, f->gid, &info, &err), err);
	assert_string_equal(info.path, "/link");
	assert_int_equal(info.type, PADDOCK_FILE_SYMLINK);
	assert_string_equal(info.symlink_target, "/etc");
	assert_int_equal(info.size, 4);
	pd_fsops_info_release(&info);

	CHECK(pd_fsops_stat(f->root_fd, "/", f->uid, f->gid, &info, &err), err);
	assert_string_equal(info.path, "/");
	assert_string_equal(info.name, "/");
	assert_int_equal(info.type, PADDOCK_FILE_DIR);
	pd_fsops_info_release(&info);

	assert_int_equal(pd_fsops_stat(f->root_fd, "nope", f->uid, f->gid, &info, &err), -ENOENT);
	assert_string_equal(err.field, "path");
	assert_int_equal(pd_fsops_stat(f->root_fd, "", f->uid, f->gid, &info, &err), -EINVAL);
	assert_string_equal(paddock_file_type_to_string(PADDOCK_FILE_SYMLINK), "symlink");
	assert_null(paddock_file_type_to_string(_PADDOCK_FILE_TYPE_MAX));
	assert_identity_restored();
}

static void expect_paths(const struct paddock_file_info *v, size_t n, const char *const *want,
			 size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i].path, want[i]);
}

static void test_list(void **state)
{
	static const char *const depth1[] = { "/a", "/a.txt", "/link", "/z" };
	static const char *const depth2[] = { "/a", "/a/b", "/a/x", "/a.txt", "/link", "/z" };
	static const char *const below_a[] = { "/a/b", "/a/b/c", "/a/x" };
	struct fx *f = *state;
	struct paddock_file_info *v = NULL;
	paddock_error err = { 0 };
	size_t n = 0;

	assert_int_equal(mkdirat(f->root_fd, "a", 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "a/b", 0755), 0);
	put(f->root_fd, "a/b/c", "c", 0644);
	put(f->root_fd, "a/x", "x", 0644);
	put(f->root_fd, "a.txt", "t", 0644);
	put(f->root_fd, "z", "z", 0644);
	assert_int_equal(symlinkat("/", f->root_fd, "link"), 0); /* a loop, if followed */

	CHECK(pd_fsops_list(f->root_fd, "/", 1, 100, f->uid, f->gid, &v, &n, &err), err);
	expect_paths(v, n, depth1, ELEMENTSOF(depth1));
	assert_string_equal(v[2].name, "link");
	assert_int_equal(v[2].type, PADDOCK_FILE_SYMLINK);
	assert_string_equal(v[2].symlink_target, "/");
	pd_fsops_infos_free(v, n);

	CHECK(pd_fsops_list(f->root_fd, "/", 2, 100, f->uid, f->gid, &v, &n, &err), err);
	expect_paths(v, n, depth2, ELEMENTSOF(depth2));
	pd_fsops_infos_free(v, n);

	CHECK(pd_fsops_list(f->root_fd, "a", 16, 100, f->uid, f->gid, &v, &n, &err), err);
	expect_paths(v, n, below_a, ELEMENTSOF(below_a));
	pd_fsops_infos_free(v, n);

	/* through the symlink named: its target, inside the root */
	CHECK(pd_fsops_list(f->root_fd, "link/a", 1, 100, f->uid, f->gid, &v, &n, &err), err);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].path, "/link/a/b");
	pd_fsops_infos_free(v, n);

	assert_int_equal(pd_fsops_list(f->root_fd, "/", 2, 5, f->uid, f->gid, &v, &n, &err),
			 -E2BIG);
	assert_int_equal(pd_fsops_list(f->root_fd, "/", 0, 5, f->uid, f->gid, &v, &n, &err),
			 -EINVAL);
	assert_string_equal(err.field, "depth");
	assert_int_equal(pd_fsops_list(f->root_fd, "/", 17, 5, f->uid, f->gid, &v, &n, &err),
			 -EINVAL);
	assert_int_equal(pd_fsops_list(f->root_fd, "/", 1, 0, f->uid, f->gid, &v, &n, &err),
			 -EINVAL);
	assert_string_equal(err.field, "max_entries");
	assert_int_equal(pd_fsops_list(f->root_fd, "a.txt", 1, 5, f->uid, f->gid, &v, &n, &err),
			 -ENOTDIR);
	assert_int_equal(pd_fsops_list(f->root_fd, "nope", 1, 5, f->uid, f->gid, &v, &n, &err),
			 -ENOENT);
	assert_identity_restored();
}

/* ---- changes --------------------------------------------------------------------------- */

static void test_mkdir(void **state)
{
	struct fx *f = *state;
	paddock_error err = { 0 };
	mode_t umask_was = umask(077);
	struct stat st;

	CHECK(pd_fsops_mkdir(f->root_fd, "d", 0755, false, f->uid, f->gid, &err), err);
	assert_int_equal(fstatat(f->root_fd, "d", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* the umask does not apply */
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "d", 0755, false, f->uid, f->gid, &err),
			 -EEXIST);
	assert_string_equal(err.field, "path");
	CHECK(pd_fsops_mkdir(f->root_fd, "d", 0755, true, f->uid, f->gid, &err), err);

	CHECK(pd_fsops_mkdir(f->root_fd, "/p/q/./r/", 0700, true, f->uid, f->gid, &err), err);
	assert_int_equal(fstatat(f->root_fd, "p/q/r", &st, 0), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	CHECK(pd_fsops_mkdir(f->root_fd, "p/q/r", 0700, true, f->uid, f->gid, &err), err);
	CHECK(pd_fsops_mkdir(f->root_fd, "/", 0700, true, f->uid, f->gid, &err), err);
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "/", 0700, false, f->uid, f->gid, &err),
			 -EEXIST);

	assert_int_equal(pd_fsops_mkdir(f->root_fd, "x/y", 0755, false, f->uid, f->gid, &err),
			 -ENOENT);
	put(f->root_fd, "file", "", 0644);
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "file/sub", 0755, true, f->uid, f->gid, &err),
			 -EEXIST);
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "file", 0755, true, f->uid, f->gid, &err),
			 -EEXIST);
	/* a symlink to a directory is fine with parents, as for mkdir -p */
	assert_int_equal(symlinkat("/p", f->root_fd, "lp"), 0);
	CHECK(pd_fsops_mkdir(f->root_fd, "lp/new", 0755, true, f->uid, f->gid, &err), err);
	assert_true(exists(f->root_fd, "p/new"));
	umask(umask_was);
	assert_identity_restored();
}

static void test_move(void **state)
{
	struct fx *f = *state;
	paddock_error err = { 0 };

	put(f->root_fd, "a", "A", 0644);
	put(f->root_fd, "b", "B", 0644);
	assert_int_equal(mkdirat(f->root_fd, "d", 0755), 0);

	CHECK(pd_fsops_move(f->root_fd, "a", "/d/a2", false, f->uid, f->gid, &err), err);
	assert_false(exists(f->root_fd, "a"));
	assert_string_equal(slurp(f->root_fd, "d/a2"), "A");

	assert_int_equal(pd_fsops_move(f->root_fd, "d/a2", "b", false, f->uid, f->gid, &err),
			 -EEXIST);
	assert_string_equal(err.field, "to");
	assert_string_equal(slurp(f->root_fd, "b"), "B");
	CHECK(pd_fsops_move(f->root_fd, "d/a2", "b", true, f->uid, f->gid, &err), err);
	assert_string_equal(slurp(f->root_fd, "b"), "A");

	assert_int_equal(pd_fsops_move(f->root_fd, "nope", "c", false, f->uid, f->gid, &err),
			 -ENOENT);
	assert_string_equal(err.field, "from");
	assert_int_equal(pd_fsops_move(f->root_fd, "/", "c", false, f->uid, f->gid, &err), -EINVAL);
	assert_string_equal(err.field, "from");
	assert_int_equal(pd_fsops_move(f->root_fd, "b", "..", false, f->uid, f->gid, &err),
			 -EINVAL);
	assert_string_equal(err.field, "to");
	assert_int_equal(pd_fsops_move(f->root_fd, "b", "nodir/b", false, f->uid, f->gid, &err),
			 -ENOENT);
	assert_string_equal(err.field, "to");
	assert_identity_restored();
}

static void test_remove(void **state)
{
	struct fx *f = *state;
	paddock_error err = { 0 };

	put(f->root_fd, "file", "x", 0644);
	assert_int_equal(mkdirat(f->root_fd, "empty", 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "t", 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "t/u", 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "t/u/v", 0755), 0);
	put(f->root_fd, "t/u/v/w", "w", 0644);
	put(f->root_fd, "t/x", "x", 0644);
	assert_int_equal(symlinkat("/file", f->root_fd, "t/u/link"), 0);
	assert_int_equal(symlinkat("/t", f->root_fd, "tlink"), 0);

	CHECK(pd_fsops_remove(f->root_fd, "file", false, f->uid, f->gid, &err), err);
	assert_false(exists(f->root_fd, "file"));
	CHECK(pd_fsops_remove(f->root_fd, "empty", false, f->uid, f->gid, &err), err);
	assert_false(exists(f->root_fd, "empty"));
	assert_int_equal(pd_fsops_remove(f->root_fd, "t", false, f->uid, f->gid, &err), -ENOTEMPTY);
	/* a symlink to a tree: the link goes, the tree stays */
	CHECK(pd_fsops_remove(f->root_fd, "tlink", true, f->uid, f->gid, &err), err);
	assert_false(exists(f->root_fd, "tlink"));
	assert_true(exists(f->root_fd, "t/u/v/w"));
	CHECK(pd_fsops_remove(f->root_fd, "/t/", true, f->uid, f->gid, &err), err);
	assert_false(exists(f->root_fd, "t"));

	assert_int_equal(pd_fsops_remove(f->root_fd, "/", true, f->uid, f->gid, &err), -EINVAL);
	assert_int_equal(pd_fsops_remove(f->root_fd, "a/..", true, f->uid, f->gid, &err), -EINVAL);
	assert_string_equal(err.field, "path");
	assert_int_equal(pd_fsops_remove(f->root_fd, "nope", false, f->uid, f->gid, &err), -ENOENT);
	assert_identity_restored();
}

/* ---- streams --------------------------------------------------------------------------- */

/* The names of the writer's temporary files in the root. */
static int count_temp_files(int root_fd)
{
	int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".paddock-write-", 15))
			n++;
	closedir(d);
	return n;
}

static void test_writer(void **state)
{
	struct fx *f = *state;
	paddock_file_writer *w = NULL;
	paddock_error err = { 0 };
	mode_t umask_was = umask(077);
	struct stat st;

	/* parents created; the content appears at commit only, with the mode asked for */
	CHECK(pd_fsops_writer_open(f->root_fd, "/w/x/f.txt", 0644, true, f->uid, f->gid, &w, &err),
	      err);
	assert_int_equal(write(pd_fsops_writer_fd(w), "hello", 5), 5);
	assert_false(exists(f->root_fd, "w/x/f.txt"));
	CHECK(pd_fsops_writer_commit(w, &err), err);
	assert_int_equal(pd_fsops_writer_fd(w), -1);
	assert_int_equal(pd_fsops_writer_commit(w, &err), -EALREADY);
	w = pd_fsops_writer_free(w);
	assert_string_equal(slurp(f->root_fd, "w/x/f.txt"), "hello");
	assert_int_equal(fstatat(f->root_fd, "w/x/f.txt", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_uid, f->uid);

	/* atomic: the old content until commit; freed without commit, nothing changes */
	put(f->root_fd, "t", "old", 0600);
	CHECK(pd_fsops_writer_open(f->root_fd, "t", 0600, false, f->uid, f->gid, &w, &err), err);
	assert_int_equal(write(pd_fsops_writer_fd(w), "new content", 11), 11);
	assert_string_equal(slurp(f->root_fd, "t"), "old");
	assert_int_equal(count_temp_files(f->root_fd), 1);
	w = pd_fsops_writer_free(w);
	assert_string_equal(slurp(f->root_fd, "t"), "old");
	assert_int_equal(count_temp_files(f->root_fd), 0);

	CHECK(pd_fsops_write_file(f->root_fd, "t", "whole", 5, 0640, f->uid, f->gid, &err), err);
	assert_string_equal(slurp(f->root_fd, "t"), "whole");
	assert_int_equal(count_temp_files(f->root_fd), 0);

	assert_int_equal(
		pd_fsops_writer_open(f->root_fd, "w/", 0644, false, f->uid, f->gid, &w, &err),
		-EINVAL);
	assert_int_equal(
		pd_fsops_writer_open(f->root_fd, "w/..", 0644, false, f->uid, f->gid, &w, &err),
		-EINVAL);
	assert_int_equal(
		pd_fsops_writer_open(f->root_fd, "nodir/f", 0644, false, f->uid, f->gid, &w, &err),
		-ENOENT);
	/* over a directory: refused at commit, and the temporary file goes */
	CHECK(pd_fsops_writer_open(f->root_fd, "w", 0644, false, f->uid, f->gid, &w, &err), err);
	assert_true(pd_fsops_writer_commit(w, &err) < 0);
	w = pd_fsops_writer_free(w);
	assert_int_equal(count_temp_files(f->root_fd), 0);
	umask(umask_was);
	assert_identity_restored();
}

static void test_open_read(void **state)
{
	struct fx *f = *state;
	paddock_error err = { 0 };
	uint64_t size = 0;
	char buf[32] = { 0 };
	char *data = NULL;
	size_t len = 0;
	int fd = -1;

	put(f->root_fd, "digits", "0123456789", 0644);
	CHECK(pd_fsops_open_read(f->root_fd, "/digits", 4, f->uid, f->gid, &fd, &size, &err), err);
	assert_int_equal(size, 10);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "456789");
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	CHECK(pd_fsops_open_read(f->root_fd, "digits", 10, f->uid, f->gid, &fd, &size, &err), err);
	close(fd);
	assert_int_equal(
		pd_fsops_open_read(f->root_fd, "digits", 11, f->uid, f->gid, &fd, &size, &err),
		-EINVAL);
	assert_string_equal(err.field, "offset");

	/* not a file: a directory, a fifo (without hanging) */
	assert_int_equal(pd_fsops_open_read(f->root_fd, "/", 0, f->uid, f->gid, &fd, &size, &err),
			 -EINVAL);
	assert_int_equal(mkfifoat(f->root_fd, "fifo", 0644), 0);
	assert_int_equal(
		pd_fsops_open_read(f->root_fd, "fifo", 0, f->uid, f->gid, &fd, &size, &err),
		-EINVAL);
	assert_string_equal(err.field, "path");

	CHECK(pd_fsops_read_file(f->root_fd, "digits", 10, f->uid, f->gid, &data, &len, &err), err);
	assert_int_equal(len, 10);
	assert_string_equal(data, "0123456789");
	free(data);
	assert_int_equal(
		pd_fsops_read_file(f->root_fd, "digits", 9, f->uid, f->gid, &data, &len, &err),
		-EFBIG);
	assert_identity_restored();
}

/* ---- watching -------------------------------------------------------------------------- */

struct seen {
	char ev[32][96];
	size_t n;
};

static void record(const struct paddock_watch_event *ev, void *userdata)
{
	struct seen *s = userdata;

	if (s->n < ELEMENTSOF(s->ev))
		snprintf(s->ev[s->n++], sizeof(s->ev[0]), "%s %s%s", ev->type, ev->path,
			 ev->is_dir ? "/" : "");
}

/* Reads what the watch has; waits up to 1 s for the first event. */
static void drain(paddock_watch *w, struct seen *s)
{
	struct pollfd p = { .fd = pd_fsops_watch_fd(w), .events = POLLIN };
	paddock_error err = { 0 };

	s->n = 0;
	if (poll(&p, 1, 1000) <= 0)
		return;
	CHECK(pd_fsops_watch_read(w, record, s, &err), err);
}

static bool saw(const struct seen *s, const char *what)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->ev[i], what))
			return true;
	return false;
}

#define assert_saw(s, what)                                                                        \
	do {                                                                                       \
		if (!saw((s), (what)))                                                             \
			fail_msg("no event '%s' among %zu (first: '%s')", (what), (s)->n,          \
				 (s)->n ? (s)->ev[0] : "");                                        \
	} while (0)

static void test_watch(void **state)
{
	struct fx *f = *state;
	paddock_watch *w = NULL, *flat = NULL;
	paddock_error err = { 0 };
	struct seen s = { 0 };

	assert_int_equal(mkdirat(f->root_fd, "ws", 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "ws/old", 0755), 0);
	CHECK(pd_fsops_watch_open(f->root_fd, "/ws", true, f->uid, f->gid, &w, &err), err);
	CHECK(pd_fsops_watch_open(f->root_fd, "ws", false, f->uid, f->gid, &flat, &err), err);
	assert_identity_restored();

	put(f->root_fd, "ws/f", "data", 0644);
	drain(w, &s);
	assert_saw(&s, "create /ws/f");
	assert_saw(&s, "write /ws/f");

	assert_int_equal(fchmodat(f->root_fd, "ws/f", 0600, 0), 0);
	assert_int_equal(renameat(f->root_fd, "ws/f", f->root_fd, "ws/g"), 0);
	assert_int_equal(unlinkat(f->root_fd, "ws/g", 0), 0);
	drain(w, &s);
	assert_saw(&s, "chmod /ws/f");
	assert_saw(&s, "rename /ws/f");
	assert_saw(&s, "rename /ws/g");
	assert_saw(&s, "remove /ws/g");

	/* recursive: a directory that was there, and one created since */
	put(f->root_fd, "ws/old/a", "", 0644);
	drain(w, &s);
	assert_saw(&s, "create /ws/old/a");
	assert_int_equal(mkdirat(f->root_fd, "ws/new", 0755), 0);
	drain(w, &s);
	assert_saw(&s, "create /ws/new/");
	put(f->root_fd, "ws/new/b", "", 0644);
	drain(w, &s);
	assert_saw(&s, "create /ws/new/b");
	/* a directory renamed: its events under the new name */
	assert_int_equal(renameat(f->root_fd, "ws/new", f->root_fd, "ws/moved"), 0);
	drain(w, &s);
	assert_saw(&s, "rename /ws/new/");
	assert_saw(&s, "rename /ws/moved/");
	put(f->root_fd, "ws/moved/c", "", 0644);
	drain(w, &s);
	assert_saw(&s, "create /ws/moved/c");

	/* not recursive: only the directory itself */
	drain(flat, &s);
	assert_saw(&s, "create /ws/f");
	assert_saw(&s, "create /ws/new/");
	assert_false(saw(&s, "create /ws/new/b"));
	assert_false(saw(&s, "create /ws/old/a"));

	assert_int_equal(
		pd_fsops_watch_open(f->root_fd, "nope", false, f->uid, f->gid, &flat, &err),
		-ENOENT);
	put(f->root_fd, "file", "", 0644);
	assert_int_equal(
		pd_fsops_watch_open(f->root_fd, "file", false, f->uid, f->gid, &flat, &err),
		-ENOTDIR);
	pd_fsops_watch_free(w);
	pd_fsops_watch_free(flat);
	assert_identity_restored();
}

/* ---- escapes --------------------------------------------------------------------------- */

/*
 * Symlinks planted in the "sandbox" aim at the host: /etc, "../../..", the outside
 * directory by its absolute host path, /tmp. Every operation through them stays in the root.
 */
static void test_escapes(void **state)
{
	struct fx *f = *state;
	int out = open(f->outside, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct paddock_file_info *v = NULL, info;
	paddock_file_writer *w = NULL;
	paddock_watch *wa = NULL;
	paddock_error err = { 0 };
	char name[64], rel[96], host[96];
	char *data = NULL;
	uint64_t size;
	size_t n, len;
	int fd;

	assert_true(out >= 0);
	put(out, "secret", "host secret", 0644);
	assert_int_equal(mkdirat(out, "dir", 0755), 0);
	put(out, "dir/keep", "keep", 0644);
	assert_int_equal(symlinkat("/etc", f->root_fd, "hostetc"), 0);
	assert_int_equal(symlinkat("../../..", f->root_fd, "up"), 0);
	assert_int_equal(symlinkat(f->outside, f->root_fd, "abs"), 0);
	assert_int_equal(symlinkat("/tmp", f->root_fd, "hosttmp"), 0);
	put(f->root_fd, "mine", "mine", 0644);

	/* read and stat */
	assert_int_equal(pd_fsops_read_file(f->root_fd, "hostetc/passwd", 1 << 20, f->uid, f->gid,
					    &data, &len, &err),
			 -ENOENT);
	assert_int_equal(pd_fsops_read_file(f->root_fd, "abs/secret", 100, f->uid, f->gid, &data,
					    &len, &err),
			 -ENOENT);
	CHECK(pd_fsops_read_file(f->root_fd, "up/up/mine", 100, f->uid, f->gid, &data, &len, &err),
	      err);
	assert_string_equal(data, "mine"); /* "../../.." from the root is the root */
	free(data);
	assert_int_equal(
		pd_fsops_open_read(f->root_fd, "abs/secret", 0, f->uid, f->gid, &fd, &size, &err),
		-ENOENT);
	assert_int_equal(pd_fsops_stat(f->root_fd, "abs/secret", f->uid, f->gid, &info, &err),
			 -ENOENT);
	CHECK(pd_fsops_stat(f->root_fd, "abs", f->uid, f->gid, &info, &err), err);
	assert_int_equal(info.type, PADDOCK_FILE_SYMLINK);
	pd_fsops_info_release(&info);

	/* list: through "up" is the root itself, nothing of the host */
	CHECK(pd_fsops_list(f->root_fd, "up", 1, 100, f->uid, f->gid, &v, &n, &err), err);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(v[i].path, "paddock-fsops"));
	pd_fsops_infos_free(v, n);
	assert_int_equal(pd_fsops_list(f->root_fd, "abs", 2, 100, f->uid, f->gid, &v, &n, &err),
			 -ENOENT);
	assert_int_equal(pd_fsops_list(f->root_fd, "hostetc", 1, 100, f->uid, f->gid, &v, &n, &err),
			 -ENOENT);

	/* write: "hosttmp/x" is the root's own /tmp/x, or nothing; never the host's /tmp/x */
	snprintf(name, sizeof(name), "paddock-fsops-escape-%d", (int)getpid());
	snprintf(rel, sizeof(rel), "hosttmp/%s", name);
	snprintf(host, sizeof(host), "/tmp/%s", name);
	assert_int_equal(pd_fsops_write_file(f->root_fd, rel, "x", 1, 0644, f->uid, f->gid, &err),
			 -ENOENT);
	assert_int_equal(
		pd_fsops_writer_open(f->root_fd, rel, 0644, true, f->uid, f->gid, &w, &err),
		-ENOENT);
	assert_false(exists(AT_FDCWD, host));
	assert_int_equal(mkdirat(f->root_fd, "tmp", 0755), 0);
	CHECK(pd_fsops_write_file(f->root_fd, rel, "x", 1, 0644, f->uid, f->gid, &err), err);
	snprintf(rel, sizeof(rel), "tmp/%s", name);
	assert_string_equal(slurp(f->root_fd, rel), "x");
	assert_false(exists(AT_FDCWD, host));
	assert_int_equal(pd_fsops_write_file(f->root_fd, "abs/secret", "pwned", 5, 0644, f->uid,
					     f->gid, &err),
			 -ENOENT);
	assert_string_equal(slurp(out, "secret"), "host secret");
	/* a symlink at the target is replaced, not followed */
	snprintf(host, sizeof(host), "%s/secret", f->outside);
	assert_int_equal(symlinkat(host, f->root_fd, "victim"), 0);
	CHECK(pd_fsops_write_file(f->root_fd, "victim", "mine", 4, 0644, f->uid, f->gid, &err),
	      err);
	assert_string_equal(slurp(f->root_fd, "victim"), "mine");
	assert_string_equal(slurp(out, "secret"), "host secret");
	assert_int_equal(unlinkat(f->root_fd, "victim", 0), 0);
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "abs/newdir", 0755, true, f->uid, f->gid, &err),
			 -ENOENT);
	assert_false(exists(out, "newdir"));

	/* move: neither end reaches the host */
	assert_int_equal(
		pd_fsops_move(f->root_fd, "abs/secret", "stolen", false, f->uid, f->gid, &err),
		-ENOENT);
	assert_string_equal(err.field, "from");
	assert_int_equal(
		pd_fsops_move(f->root_fd, "mine", "abs/planted", false, f->uid, f->gid, &err),
		-ENOENT);
	assert_string_equal(err.field, "to");
	assert_false(exists(out, "planted"));
	/* moving the link moves the link */
	CHECK(pd_fsops_move(f->root_fd, "abs", "abs2", false, f->uid, f->gid, &err), err);
	assert_string_equal(slurp(out, "secret"), "host secret");

	/* remove: through links, or the links themselves, and never what they point at */
	assert_int_equal(pd_fsops_remove(f->root_fd, "abs2/dir", true, f->uid, f->gid, &err),
			 -ENOENT);
	assert_int_equal(pd_fsops_remove(f->root_fd, "abs2/secret", false, f->uid, f->gid, &err),
			 -ENOENT);
	assert_int_equal(mkdirat(f->root_fd, "tree", 0755), 0);
	assert_int_equal(symlinkat(f->outside, f->root_fd, "tree/out"), 0);
	assert_int_equal(symlinkat("../../..", f->root_fd, "tree/up"), 0);
	CHECK(pd_fsops_remove(f->root_fd, "tree", true, f->uid, f->gid, &err), err);
	CHECK(pd_fsops_remove(f->root_fd, "abs2", true, f->uid, f->gid, &err), err);
	CHECK(pd_fsops_remove(f->root_fd, "up", true, f->uid, f->gid, &err), err);
	assert_string_equal(slurp(out, "secret"), "host secret");
	assert_string_equal(slurp(out, "dir/keep"), "keep");
	assert_true(exists(f->root_fd, "mine"));

	/* watch: the link's target inside the root, or nothing */
	assert_int_equal(symlinkat(f->outside, f->root_fd, "abs"), 0);
	assert_int_equal(pd_fsops_watch_open(f->root_fd, "abs", true, f->uid, f->gid, &wa, &err),
			 -ENOENT);
	close(out);
	assert_identity_restored();
}

/* ---- identity (root) ------------------------------------------------------------------- */

static void test_identity(void **state)
{
	struct fx *f = *state;
	const uid_t u = 61234;
	const gid_t g = 61235;
	paddock_file_writer *w = NULL;
	paddock_error err = { 0 };
	struct stat st;

	if (geteuid() != 0)
		skip();
	/* the root is the "sandbox user's"; "locked" is host root's, 0755 */
	assert_int_equal(chown(f->root, u, g), 0);
	assert_int_equal(chmod(f->root, 0755), 0);
	assert_int_equal(mkdirat(f->root_fd, "locked", 0755), 0);
	assert_int_equal(fchmodat(f->root_fd, "locked", 0755, 0), 0);
	put(f->root_fd, "rootfile", "r", 0600);

	CHECK(pd_fsops_writer_open(f->root_fd, "mine", 0644, false, u, g, &w, &err), err);
	CHECK(pd_fsops_writer_commit(w, &err), err);
	w = pd_fsops_writer_free(w);
	assert_int_equal(fstatat(f->root_fd, "mine", &st, 0), 0);
	assert_int_equal(st.st_uid, u);
	assert_int_equal(st.st_gid, g);
	CHECK(pd_fsops_mkdir(f->root_fd, "d/e", 0755, true, u, g, &err), err);
	assert_int_equal(fstatat(f->root_fd, "d/e", &st, 0), 0);
	assert_int_equal(st.st_uid, u);

	/* what the sandbox user may not do, the supervisor does not do for it */
	assert_int_equal(pd_fsops_mkdir(f->root_fd, "locked/x", 0755, false, u, g, &err), -EACCES);
	assert_identity_restored();
	assert_int_equal(pd_fsops_writer_open(f->root_fd, "locked/x", 0644, true, u, g, &w, &err),
			 -EACCES);
	assert_identity_restored();
	assert_int_equal(pd_fsops_remove(f->root_fd, "locked", false, u, g, &err), 0);
	assert_int_equal(mkdirat(f->root_fd, "locked", 0755), 0);
	put(f->root_fd, "locked/f", "f", 0644);
	assert_int_equal(pd_fsops_remove(f->root_fd, "locked", true, u, g, &err), -EACCES);
	assert_true(exists(f->root_fd, "locked/f"));
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(pd_fsops_read_file(f->root_fd, "rootfile", 10, u, g, &data, &len, &err),
			 -EACCES);
	assert_identity_restored();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_path),
		cmocka_unit_test_setup_teardown(test_stat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_move, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
