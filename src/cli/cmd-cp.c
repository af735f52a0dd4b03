/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock cp SRC DST`: one file into or out of a sandbox of paddockd, streamed
 * (PUT / GET /v1/sandboxes/{id}/files?path=P). One side is ID:PATH.
 *
 * A download is written with the caller's own identity (this process's), into a file this
 * call creates (O_EXCL: an existing file is never overwritten or followed as a symlink), and
 * only once paddockd has answered 200; a transfer cut short removes the partial file. What
 * the sandbox put in the file is copied as bytes, never interpreted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paddock/paddock.h"
#include "api.h"
#include "cli.h"

enum {
	OPT_MODE = 0x100,
};

static const struct option options[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "help", no_argument, NULL, 'h' },
	API_LONG_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: paddock cp [OPTIONS] SRC ID:PATH\n"
	      "       paddock cp [OPTIONS] ID:PATH DST\n"
	      "\n"
	      "Copies one regular file into a sandbox, or out of it. PATH is as the sandbox\n"
	      "sees it. An argument is ID:PATH when it has a ':' with no '/' before it (write\n"
	      "a local 'a:b' as './a:b').\n"
	      "\n"
	      "Into a sandbox: SRC '-' is stdin. Parent directories are made, and the file is\n"
	      "replaced whole. When PATH ends with '/' or is a directory, SRC's name is added.\n"
	      "Out of a sandbox: DST '-' is stdout. DST must not exist (it is never\n"
	      "overwritten); when it is a directory, PATH's name is added.\n"
	      "Directories are not copied (not supported yet): copy files one by one.\n"
	      "\n"
	      "  --mode MODE          into a sandbox: octal permissions of the file (default:\n"
	      "                       SRC's, or paddockd's for stdin)\n" API_OPTIONS_HELP
	      "  -h, --help           this text\n"
	      "\n"
	      "Output: nothing; with --json, into a sandbox: the new file's entry.\n"
	      "Exit status: 0; 1 if paddockd refused; 125 if paddock failed.\n",
	      f);
}

/* "ID:PATH" -> id and path; false for a local path. */
static bool split_remote(const char *arg, char **ret_id, const char **ret_path)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)))
		return false;
	*ret_id = api_oom(strndup(arg, (size_t)(colon - arg)));
	*ret_path = colon + 1;
	return true;
}

/* The last component of a path, without trailing slashes; NULL when there is none. */
static char *last_name(const char *path)
{
	size_t n = strlen(path);
	const char *slash;
	size_t start;
	char *name;

	while (n > 0 && path[n - 1] == '/')
		n--;
	slash = memrchr(path, '/', n);
	start = slash ? (size_t)(slash + 1 - path) : 0;
	name = api_oom(strndup(path + start, n - start));
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		free(name);
		return NULL;
	}
	return name;
}

static char *join(const char *dir, const char *name)
{
	char *out;

	bool slash = dir[0] && dir[strlen(dir) - 1] == '/';

	if (asprintf(&out, "%s%s%s", dir, slash ? "" : "/", name) < 0)
		api_oom(NULL);
	return out;
}

/* Whether PATH in the sandbox is a directory; errors are not shown (the PUT tells). */
static int remote_is_dir(struct api *api, const char *id, const char *path, bool *ret)
{
	struct api quiet = *api;
	struct api_reply reply = { 0 };
	char *url = API_URL("sandboxes", id, "files", "stat");
	int r;

	api_url_query(&url, "path", path);
	quiet.quiet_status = -1;
	r = api_call(&quiet, "GET", url, NULL, &reply);
	free(url);
	*ret = r == 0 && !strcmp(api_str(reply.json, "type", ""), "dir");
	api_reply_release(&reply);
	return r == PADDOCK_EXIT_FAILURE ? r : 0;
}

static int upload(struct api *api, const char *src, const char *id, const char *path,
		  const char *mode)
{
	struct http_request req = { .method = "PUT",
				    .content_type = "application/octet-stream",
				    .expect_continue = true };
	struct api_reply reply = { 0 };
	struct http_response resp;
	struct http_conn *c = NULL;
	paddock_error err = { 0 };
	char *target = NULL, *url, mode_buf[8];
	bool is_stdin = !strcmp(src, "-"), dir = false;
	struct stat st;
	int fd, r;

	fd = is_stdin ? STDIN_FILENO : open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return api_failf("open '%s': %s", src, strerror(errno));
	if (fstat(fd, &st) < 0) {
		r = api_failf("stat '%s': %s", src, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = api_failf("'%s' is a directory: paddock cp copies single files (directories "
			      "are not supported yet)",
			      src);
		goto out;
	}
	req.body_fd = fd;
	req.body_fd_len = -1; /* a pipe, a terminal: chunks until EOF */
	if (S_ISREG(st.st_mode)) {
		off_t pos = lseek(fd, 0, SEEK_CUR);
		req.body_fd_len = st.st_size - (pos > 0 && pos <= st.st_size ? pos : 0);
		if (!is_stdin && !mode) {
			snprintf(mode_buf, sizeof(mode_buf), "%04o", (unsigned)(st.st_mode & 0777));
			mode = mode_buf;
		}
	}
	if (path[0] && path[strlen(path) - 1] != '/') {
		r = remote_is_dir(api, id, path, &dir);
		if (r != 0)
			goto out;
	}
	if (!path[0] || path[strlen(path) - 1] == '/' || dir) {
		char *name = is_stdin ? NULL : last_name(src);
		if (!name) {
			r = api_failf("cp: '%s' in the sandbox is a directory: name the file to "
				      "write",
				      path);
			goto out;
		}
		target = join(path, name);
		free(name);
	}
	url = API_URL("sandboxes", id, "files");
	api_url_query(&url, "path", target ? target : path);
	if (mode)
		api_url_query(&url, "mode", mode);
	req.target = url;
	r = api_open(api, &req, &c, &resp);
	free(url);
	if (r != 0)
		goto out;
	r = http_read_body_all(c, API_ERROR_BODY_MAX, &reply.body, &reply.len, &err);
	if (r < 0) {
		r = api_fail("read paddockd's answer", &err);
		goto out;
	}
	r = 0;
	if (api->json)
		r = api_print_raw(&reply);
out:
	api_reply_release(&reply);
	http_conn_free(c);
	free(target);
	if (!is_stdin && fd >= 0)
		close(fd);
	return r;
}

static int download(struct api *api, const char *id, const char *path, const char *dst)
{
	struct http_request req = { .method = "GET", .body_fd = -1 };
	struct http_response resp;
	struct http_conn *c = NULL;
	paddock_error err = { 0 };
	bool is_stdout = !strcmp(dst, "-"), dir = false;
	char *url, *created = NULL, *buf = NULL;
	struct stat st;
	int fd = STDOUT_FILENO, r;
	ssize_t n;

	r = remote_is_dir(api, id, path, &dir);
	if (r != 0)
		return r;
	if (dir)
		return api_failf(
			"'%s' in the sandbox is a directory: paddock cp copies single files "
			"(directories are not supported yet)",
			path);
	if (!is_stdout && stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *name = last_name(path);
		if (!name)
			return api_failf("cp: name the file to copy out of the sandbox, not '%s'",
					 path);
		created = join(dst, name);
		free(name);
	} else if (!is_stdout) {
		created = api_oom(strdup(dst));
	}
	url = API_URL("sandboxes", id, "files");
	api_url_query(&url, "path", path);
	req.target = url;
	r = api_open(api, &req, &c, &resp);
	free(url);
	if (r != 0)
		goto out;
	if (created) {
		/* SECURITY: a new file, ours; an existing one or a symlink is never written */
		fd = open(created, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
		if (fd < 0) {
			if (errno == EEXIST)
				r = api_failf("'%s' exists: paddock cp does not overwrite (remove "
					      "it first, or copy to '-')",
					      created);
			else
				r = api_failf("create '%s': %s", created, strerror(errno));
			free(created);
			created = NULL;
			goto out;
		}
	}
	buf = api_oom(malloc(65536));
	while ((n = http_read_body(c, buf, 65536, &err)) > 0) {
		int w = http_write_all(fd, buf, (size_t)n);
		if (w < 0) {
			r = api_failf("write '%s': %s", created ? created : "stdout", strerror(-w));
			goto out;
		}
	}
	if (n < 0) {
		r = api_fail("read the file from paddockd", &err);
		goto out;
	}
	if (created && close(fd) < 0) {
		fd = -1;
		r = api_failf("write '%s': %s", created, strerror(errno));
		goto out;
	}
	fd = -1;
	free(created);
	created = NULL; /* complete: keep it */
out:
	if (created) {
		if (fd >= 0)
			close(fd);
		(void)unlink(created); /* a partial copy is no copy */
	}
	free(created);
	free(buf);
	http_conn_free(c);
	return r;
}

int cmd_cp(int argc, char **argv)
{
	struct api api = { 0 };
	const char *mode = NULL, *src_path, *dst_path;
	char *src_id = NULL, *dst_id = NULL;
	bool src_remote, dst_remote;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (api_option(&api, c, optarg))
			continue;
		if (c == OPT_MODE) {
			size_t n = strlen(optarg);
			if ((n != 3 && n != 4) || strspn(optarg, "01234567") != n)
				return api_failf("--mode: expected octal permissions such as 0644, "
						 "got '%s'",
						 optarg);
			mode = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "paddock: see 'paddock cp --help'\n");
			return PADDOCK_EXIT_FAILURE;
		}
	}
	if (argc - optind != 2)
		return api_failf("cp: expected SRC and DST (paddock cp SRC ID:PATH, or paddock cp "
				 "ID:PATH DST)");
	src_remote = split_remote(argv[optind], &src_id, &src_path);
	dst_remote = split_remote(argv[optind + 1], &dst_id, &dst_path);
	if (src_remote == dst_remote)
		r = api_failf("cp: exactly one of SRC and DST must be ID:PATH (a file in a "
			      "sandbox)");
	else if (dst_remote)
		r = upload(&api, argv[optind], dst_id, dst_path, mode);
	else if (mode)
		r = api_failf("cp: --mode applies to a copy into a sandbox");
	else
		r = download(&api, src_id, src_path, argv[optind + 1]);
	free(src_id);
	free(dst_id);
	return r;
}
