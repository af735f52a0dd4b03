/* SPDX-License-Identifier: Apache-2.0 */
#include "control.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "util/cleanup.h"

int pd_ctl_send(int sock, uint32_t type, const void *payload, size_t len, const int *fds,
		size_t nfds)
{
	struct pd_ctl_hdr hdr = { .type = type, .len = (uint32_t)len };
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PD_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cmsg = { 0 };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t n;

	if (len > PD_CTL_MAX_MSG - sizeof(hdr) || nfds > PD_CTL_MAX_FDS)
		return -EMSGSIZE;
	if (nfds > 0) {
		struct cmsghdr *c;

		mh.msg_control = cmsg.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != sizeof(hdr) + len)
		return -EMSGSIZE;
	return 0;
}

ssize_t pd_ctl_recv(int sock, uint32_t *type, void *buf, size_t size, int *fds, size_t *nfds)
{
	struct pd_ctl_hdr hdr;
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = buf, .iov_len = size },
	};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PD_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cmsg;
	struct msghdr mh = {
		.msg_iov = iov,
		.msg_iovlen = 2,
		.msg_control = cmsg.buf,
		.msg_controllen = sizeof(cmsg.buf),
	};
	size_t cap = nfds ? *nfds : 0, got = 0;
	bool bad = false;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (nfds)
		*nfds = 0;
	/* SECURITY: take every fd the peer sent before judging the message, so none leaks. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int tmp[PD_CTL_MAX_FDS * 4];

		if (k > ELEMENTSOF(tmp))
			k = ELEMENTSOF(tmp);
		memcpy(tmp, CMSG_DATA(c), k * sizeof(int));
		for (size_t i = 0; i < k; i++) {
			if (got < cap)
				fds[got++] = tmp[i];
			else
				pd_close(tmp[i]);
		}
	}
	if (nfds)
		*nfds = got;
	if (n == 0) {
		*type = 0;
		return 0;
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		bad = true;
	if ((size_t)n < sizeof(hdr) || hdr.len != (size_t)n - sizeof(hdr) || hdr.type == 0 ||
	    hdr.type >= _PD_CTL_MAX)
		bad = true;
	if (bad) {
		for (size_t i = 0; i < got; i++)
			pd_close(fds[i]);
		if (nfds)
			*nfds = 0;
		return -EPROTO;
	}
	*type = hdr.type;
	return (ssize_t)hdr.len;
}

ssize_t pd_ctl_recv_wait(int sock, int timeout_ms, uint32_t *type, void *buf, size_t size,
			 int *fds, size_t *nfds)
{
	size_t cap = nfds ? *nfds : 0;

	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		ssize_t n;
		int r = poll(&p, 1, timeout_ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (nfds)
			*nfds = cap;
		n = pd_ctl_recv(sock, type, buf, size, fds, nfds);
		if (n != -EAGAIN)
			return n;
	}
}
