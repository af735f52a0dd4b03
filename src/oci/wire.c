/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commands and their container's supervisor speak over <--root>/<id>/sock: SOCK_SEQPACKET,
 * one JSON object per message (at most OCI_MSG_MAX bytes), fds by SCM_RIGHTS. A request
 * has "op"; an answer is an object, or {"error": {...}} with the errno name, the field and
 * the message. The directory is 0700: whoever reaches the socket may drive the container,
 * as whoever may run runc on its --root may.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci.h"

#define WIRE_MAX_FDS	3
#define CALL_TIMEOUT_MS 30000

static int fail(paddock_error *err, int code, const char *msg)
{
	err->code = code;
	err->field[0] = '\0';
	snprintf(err->msg, sizeof(err->msg), "%s", msg);
	return -code;
}

int oci_sock_addr(const char *id, struct sockaddr_un *sa, int *ret_dirfd, paddock_error *err)
{
	char dir[4096];
	int dfd, r;

	r = oci_state_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	/*
	 * Engines put --root deep (Docker: .../runtime-NAME/moby/<64 hex>): past sun_path's 108
	 * bytes. The socket is named through the directory's fd instead, /proc/self/fd/N/sock.
	 */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, errno, "open the container's state directory");
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/sock", dfd);
	*ret_dirfd = dfd;
	return 0;
}

int oci_wire_connect(const char *id, int *ret_fd, paddock_error *err)
{
	struct sockaddr_un sa;
	int fd, dfd, r;

	r = oci_sock_addr(id, &sa, &dfd, err);
	if (r < 0)
		return r == -ENOENT ? fail(err, ENOENT, "container does not exist") : r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		close(dfd);
		return fail(err, errno, "socket");
	}
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
	close(dfd);
	if (r) {
		close(fd);
		return fail(err, r, "reach the container's supervisor");
	}
	*ret_fd = fd;
	return 0;
}

int oci_wire_send(int fd, json_t *msg, const int *fds, size_t nfds, paddock_error *err)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	union {
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (!s)
		return fail(err, ENOMEM, "out of memory");
	if (strlen(s) > OCI_MSG_MAX || nfds > WIRE_MAX_FDS) {
		free(s);
		return fail(err, E2BIG, "message too large");
	}
	iov = (struct iovec){ .iov_base = s, .iov_len = strlen(s) };
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	free(s);
	if (n < 0)
		return fail(err, errno, "send to the container's supervisor");
	return 0;
}

json_t *oci_wire_error(const paddock_error *err)
{
	return json_pack("{s:{s:s,s:i,s:s,s:s}}", "error", "code", paddock_errno_name(err->code),
			 "errno", err->code, "field", err->field, "message", err->msg);
}

int oci_wire_recv(int fd, int timeout_ms, json_t **ret, int *fds, size_t *nfds, paddock_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
		struct cmsghdr align;
	} u;
	char *buf = malloc(OCI_MSG_MAX + 1);
	struct iovec iov = { .iov_base = buf, .iov_len = OCI_MSG_MAX };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t cap = nfds ? *nfds : 0, got = 0;
	json_t *j, *e;
	ssize_t n;
	int r;

	if (nfds)
		*nfds = 0;
	if (!buf)
		return fail(err, ENOMEM, "out of memory");
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		free(buf);
		return fail(err, r == 0 ? ETIMEDOUT : errno, "wait for the container's supervisor");
	}
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n >= 0 && c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(c);

		for (size_t i = 0; i < k; i++) {
			if (got < cap)
				fds[got++] = in[i];
			else
				close(in[i]);
		}
	}
	if (nfds)
		*nfds = got;
	if (n <= 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		int e2 = n < 0 ? errno : n == 0 ? EPIPE : E2BIG;

		free(buf);
		for (size_t i = 0; i < got; i++)
			close(fds[i]);
		if (nfds)
			*nfds = 0;
		return fail(err, e2,
			    n == 0 ? "the container's supervisor went away"
				   : "receive from the container's supervisor");
	}
	j = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
	free(buf);
	if (!json_is_object(j)) {
		json_decref(j);
		for (size_t i = 0; i < got; i++)
			close(fds[i]);
		if (nfds)
			*nfds = 0;
		return fail(err, EPROTO, "malformed message");
	}
	e = json_object_get(j, "error");
	if (e) {
		json_int_t code = json_integer_value(json_object_get(e, "errno"));

		err->code = code > 0 && code < 4096 ? (int)code : EIO;
		snprintf(err->field, sizeof(err->field), "%s",
			 json_string_value(json_object_get(e, "field")) ?: "");
		snprintf(err->msg, sizeof(err->msg), "%s",
			 json_string_value(json_object_get(e, "message")) ?: "");
		json_decref(j);
		for (size_t i = 0; i < got; i++)
			close(fds[i]);
		if (nfds)
			*nfds = 0;
		return -err->code;
	}
	*ret = j;
	return 0;
}

int oci_wire_call(const char *id, json_t *req, const int *fds, size_t nfds, json_t **ret,
		  paddock_error *err)
{
	int fd, r;

	r = oci_wire_connect(id, &fd, err);
	if (r < 0)
		return r;
	r = oci_wire_send(fd, req, fds, nfds, err);
	if (r >= 0)
		r = oci_wire_recv(fd, CALL_TIMEOUT_MS, ret, NULL, NULL, err);
	close(fd);
	return r;
}

int oci_send_console(const char *path, int fd, paddock_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char name[] = "/dev/ptmx";
	struct iovec iov = { .iov_base = name, .iov_len = sizeof(name) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int s, r = 0;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fail(err, ENAMETOOLONG, "console socket path too long");
		snprintf(err->field, sizeof(err->field), "--console-socket");
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path));
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail(err, errno, "socket");
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = fail(err, errno, "connect to the console socket");
		snprintf(err->field, sizeof(err->field), "--console-socket");
		close(s);
		return r;
	}
	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
		r = fail(err, errno, "send the terminal to the console socket");
	close(s);
	return r;
}
