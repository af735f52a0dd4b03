/* SPDX-License-Identifier: Apache-2.0 */
#include "control.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "util/cleanup.h"
#include "util/strv.h"

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

	bool reset = false;

	/*
	 * A peer that exited with our messages unread leaves ECONNRESET pending on the socket,
	 * and the kernel reports it before the messages the peer queued for us first
	 * (datagram receive checks the socket's error before its queue): an init that failed
	 * would lose its reason. Reading the error consumed it; what the peer sent comes next,
	 * then EOF (a socketpair: the peer is gone, nothing blocks).
	 */
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == ECONNRESET && !reset) {
			reset = true;
			errno = EINTR; /* read again, once */
		}
	} while (n < 0 && errno == EINTR);
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

ssize_t pd_ctl_recv_wait(int sock, int timeout_ms, uint32_t *type, void *buf, size_t size, int *fds,
			 size_t *nfds)
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

int pd_ctl_bind_pack(const struct pd_ctl_bind *hdr, const struct pd_ctl_bind_strings *s,
		     char **ret_buf, size_t *ret_len)
{
	struct pd_ctl_bind h = *hdr;
	size_t secretc = 0, len, ca_len = s->ca_pem ? strlen(s->ca_pem) : 0;
	char *buf, *p;

	while (s->secret_env && s->secret_env[secretc])
		secretc++;
	if (secretc > PD_CTL_MAX_SECRETS || (secretc > 0) != (ca_len > 0) ||
	    ca_len > PD_CTL_MAX_CA_PEM)
		return -EINVAL;
	if (s->envc > PD_CTL_MAX_ARGS)
		return -E2BIG;
	if (h.workspace > PD_BIND_WORKSPACE_PATH ||
	    (h.workspace == PD_BIND_WORKSPACE_PATH) != (s->workspace_path != NULL) ||
	    (s->workspace_path &&
	     (s->workspace_path[0] != '/' || strlen(s->workspace_path) >= PATH_MAX)))
		return -EINVAL;
	len = sizeof(h) + strlen(s->hostname) + 1 + ca_len + 1;
	if (s->workspace_path)
		len += strlen(s->workspace_path) + 1;
	for (size_t i = 0; i < s->envc; i++)
		len += strlen(s->env[i]) + 1;
	for (size_t i = 0; i < secretc; i++)
		len += strlen(s->secret_env[i]) + 1;
	if (len > PD_CTL_MAX_MSG - sizeof(struct pd_ctl_hdr))
		return -E2BIG;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	h.envc = (uint32_t)s->envc;
	h.secretc = (uint32_t)secretc;
	memcpy(buf, &h, sizeof(h));
	p = stpcpy(buf + sizeof(h), s->hostname) + 1;
	for (size_t i = 0; i < s->envc; i++)
		p = stpcpy(p, s->env[i]) + 1;
	for (size_t i = 0; i < secretc; i++)
		p = stpcpy(p, s->secret_env[i]) + 1;
	if (s->workspace_path)
		p = stpcpy(p, s->workspace_path) + 1;
	(void)stpcpy(p, s->ca_pem ? s->ca_pem : "");
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

static bool rlimits_valid(const struct pd_ctl_rlimits *rl)
{
	/* the first four are in every plan */
	static const int known[] = { RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU,
				     RLIMIT_CORE,  RLIMIT_DATA,	  RLIMIT_NPROC };
	unsigned seen = 0;

	if (rl->n > PD_CTL_MAX_RLIMITS)
		return false;
	for (uint32_t i = 0; i < rl->n; i++) {
		size_t k = 0;

		while (k < ELEMENTSOF(known) && known[k] != rl->r[i].resource)
			k++;
		if (k == ELEMENTSOF(known) || (seen & (1u << k)) || rl->r[i].soft > rl->r[i].hard)
			return false;
		/* SECURITY: core files are off in every plan (pd_init_plan_rlimits()) */
		if (known[k] == RLIMIT_CORE && rl->r[i].hard != 0)
			return false;
		seen |= 1u << k;
	}
	/* SECURITY: a plan without the limits every command has would run it without them */
	return (seen & 15u) == 15u;
}
/* A certificate in PEM: printable ASCII and newlines. */
static bool pem_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\n' && (s[i] < 0x20 || s[i] > 0x7e))
			return false;
	return true;
}

int pd_ctl_bind_parse(const char *buf, size_t len, struct pd_ctl_bind_msg *ret)
{
	struct pd_ctl_bind h;
	const char *pos, *end = buf + len, *z, *hostname, *ca, *workspace_path = NULL;
	char **env = NULL, **secret_env = NULL;
	int r;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.envc > PD_CTL_MAX_ARGS || h.secretc > PD_CTL_MAX_SECRETS ||
	    h.workspace > PD_BIND_WORKSPACE_PATH ||
	    (h.workspace != PD_BIND_WORKSPACE_PATH && (h.workspace_dev || h.workspace_ino)) ||
	    h.cpus_milli == 0 || h.cpus_milli > 1024000 || h.memory_bytes == 0 ||
	    h.memory_bytes > INT64_MAX || h.disk_bytes == 0 || h.disk_bytes > INT64_MAX ||
	    !rlimits_valid(&h.rlimits))
		return -EPROTO;
	pos = buf + sizeof(h);
	z = memchr(pos, '\0', (size_t)(end - pos));
	if (!z || z == pos || z - pos > 64)
		return -EPROTO;
	hostname = pos;
	pos = z + 1;
	r = pd_strv_unpack(&pos, end, h.envc, PD_CTL_MAX_ARGS, pd_str_has_assignment, &env);
	if (r < 0)
		return r;
	r = pd_strv_unpack(&pos, end, h.secretc, PD_CTL_MAX_SECRETS, pd_str_is_named_assignment,
			   &secret_env);
	if (r < 0)
		goto fail;
	r = -EPROTO;
	if (h.workspace == PD_BIND_WORKSPACE_PATH) {
		z = memchr(pos, '\0', (size_t)(end - pos));
		if (!z || *pos != '/' || z - pos >= PATH_MAX)
			goto fail;
		workspace_path = pos;
		pos = z + 1;
	}
	/* the CA: the last string, ending the message; present exactly when secrets are */
	z = memchr(pos, '\0', (size_t)(end - pos));
	if (!z || z + 1 != end || (size_t)(z - pos) > PD_CTL_MAX_CA_PEM ||
	    (z > pos) != (h.secretc > 0) || !pem_text(pos, (size_t)(z - pos)))
		goto fail;
	ca = z > pos ? pos : NULL;
	ret->hdr = h;
	ret->hostname = hostname;
	ret->env = env;
	ret->secret_env = secret_env;
	ret->ca_pem = ca;
	ret->workspace_path = workspace_path;
	return 0;
fail:
	free(env);
	free(secret_env);
	return r;
}
