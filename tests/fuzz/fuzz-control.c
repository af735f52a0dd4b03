/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor's reading of messages from init (hostile: init runs inside the sandbox's
 * namespaces). The input is sent as one SOCK_SEQPACKET datagram, then received with
 * pd_ctl_recv() into the buffer sizes the supervisor uses; whatever it returns must be
 * consistent: a length within the buffer, a known type, or an error.
 *
 * The same input is also a PD_CTL_BIND payload for init's strict parser
 * (pd_ctl_bind_parse()), and the configuration init hands across its exec
 * (pd_init_conf_parse()): what they accept lies within the input and keeps its promises.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "init-conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_bind(const uint8_t *data, size_t size)
{
	struct pd_ctl_bind_msg m;
	const char *end = (const char *)data + size;

	if (pd_ctl_bind_parse((const char *)data, size, &m) < 0)
		return;
	if (m.hdr.rlimits.n > PD_CTL_MAX_RLIMITS || m.hdr.disk_bytes == 0 || !m.hostname[0] ||
	    strlen(m.hostname) > 64 || m.hostname + strlen(m.hostname) >= end)
		abort();
	for (uint32_t i = 0; i < m.hdr.envc; i++)
		if (!m.env[i] || m.env[i] + strlen(m.env[i]) >= end || !strchr(m.env[i], '='))
			abort();
	if (m.env[m.hdr.envc])
		abort();
	if (m.hdr.secretc > PD_CTL_MAX_SECRETS)
		abort();
	for (uint32_t i = 0; i < m.hdr.secretc; i++)
		if (!m.secret_env[i] || m.secret_env[i] + strlen(m.secret_env[i]) >= end ||
		    !strchr(m.secret_env[i], '=') || m.secret_env[i][0] == '=')
			abort();
	if (m.secret_env[m.hdr.secretc])
		abort();
	/* a CA exactly with secrets, bounded, the message's last string */
	if ((m.ca_pem != NULL) != (m.hdr.secretc > 0))
		abort();
	if (m.ca_pem &&
	    (strlen(m.ca_pem) > PD_CTL_MAX_CA_PEM || m.ca_pem + strlen(m.ca_pem) + 1 != end))
		abort();
	/* a workspace path exactly with its flag: absolute, bounded, within the input */
	if ((m.workspace_path != NULL) != (m.hdr.workspace == PD_BIND_WORKSPACE_PATH))
		abort();
	if (!m.workspace_path && (m.hdr.workspace_dev || m.hdr.workspace_ino))
		abort();
	if (m.workspace_path && (m.workspace_path[0] != '/' || strlen(m.workspace_path) >= 4096 ||
				 m.workspace_path + strlen(m.workspace_path) >= end))
		abort();
	free(m.env);
	free(m.secret_env);
}

static bool strv_within(char **v, const char *start, const char *end, bool assignment)
{
	for (; *v; v++)
		if (*v < start || *v + strlen(*v) >= end ||
		    (assignment && (!strchr(*v, '=') || **v == '=')))
			return false;
	return true;
}

static void check_conf(const uint8_t *data, size_t size)
{
	const char *start = (const char *)data, *end = start + size;
	struct pd_init_conf c;

	if (pd_init_conf_parse(start, size, &c) < 0)
		return;
	if (c.ctl < 0 || c.lock_fd < -1 || c.listen_fd < -1 || c.landlock_fd < -1 ||
	    c.host_tree < -1 || c.proc_view < -1 || c.last_cap < 0 || c.last_cap > 63 ||
	    c.disk_bytes == 0 || c.rlimits.n > PD_CTL_MAX_RLIMITS || c.idmap.lock_fd != -1 ||
	    c.cwd[0] != '/' || c.cwd < start || c.cwd + strlen(c.cwd) >= end)
		abort();
	if (!strv_within(c.env, start, end, true) || !strv_within(c.secret_env, start, end, true) ||
	    !strv_within(c.writable, start, end, false))
		abort();
	for (char **w = c.writable; *w; w++)
		if (**w != '/')
			abort();
	pd_init_conf_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t buffers[] = { sizeof(struct pd_ctl_exec_error) + 64, 16, 0 };
	int sv[2];

	if (size > 65536)
		return 0;
	check_bind(data, size);
	check_conf(data, size);
	for (size_t b = 0; b < sizeof(buffers) / sizeof(buffers[0]); b++) {
		char buf[sizeof(struct pd_ctl_exec_error) + 64];
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t type = 0;
		ssize_t n;

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		/* an empty datagram is how a peer could fake EOF: send it too */
		if (send(sv[1], data, size, 0) != (ssize_t)size)
			abort();
		n = pd_ctl_recv(sv[0], &type, buf, buffers[b], fds, &nfds);
		if (n > 0 && ((size_t)n > buffers[b] || type == 0 || type >= _PD_CTL_MAX))
			abort();
		/* an empty datagram reads as EOF (type 0), never as a message */
		if (size == 0 && (n != 0 || type != 0))
			abort();
		if (nfds != 0) /* nothing sent fds */
			abort();
		close(sv[0]);
		close(sv[1]);
	}
	return 0;
}
