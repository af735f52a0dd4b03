/* SPDX-License-Identifier: Apache-2.0 */
#include "init-conf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strv.h"

#define CONF_MAGIC	 0x43494450u /* "PDIC" */
#define CONF_MAX_STRINGS 65536u
#define CONF_MAX_FD	 1048576

/* The packed form: this header, then cwd\0, env..., secret_env..., writable..., each \0-ended. */
struct wire {
	uint32_t magic;
	uint32_t flags;
	uint32_t rootless;
	uint32_t outside_uid, outside_gid, init_uid, init_gid, slot;
	struct pd_ctl_rlimits rlimits;
	uint64_t disk_bytes;
	int32_t ctl, lock_fd, listen_fd, orphan_timeout_s, landlock_fd, host_tree, proc_view,
		upper_fd, last_cap;
	uint32_t n_env, n_secret_env, n_writable;
};

/* any negative fd (-EBADF, say) is none: -1 */
static int32_t no_fd(int fd)
{
	return fd < 0 ? -1 : fd;
}

static size_t strings_size(char *const *v)
{
	size_t n = 0;

	for (; v && *v; v++)
		n += strlen(*v) + 1;
	return n;
}

static char *put_strings(char *pos, char *const *v)
{
	for (; v && *v; v++) {
		size_t l = strlen(*v) + 1;

		memcpy(pos, *v, l);
		pos += l;
	}
	return pos;
}

int pd_init_conf_pack(const struct pd_init_conf *c, char **ret_buf, size_t *ret_len)
{
	struct wire w = {
		.magic = CONF_MAGIC,
		.flags = c->flags,
		.rootless = c->idmap.rootless,
		.outside_uid = c->idmap.outside_uid,
		.outside_gid = c->idmap.outside_gid,
		.init_uid = c->idmap.init_uid,
		.init_gid = c->idmap.init_gid,
		.slot = c->idmap.slot,
		.rlimits = c->rlimits,
		.disk_bytes = c->disk_bytes,
		.ctl = c->ctl,
		.lock_fd = no_fd(c->lock_fd),
		.listen_fd = no_fd(c->listen_fd),
		.orphan_timeout_s = c->orphan_timeout_s,
		.landlock_fd = no_fd(c->landlock_fd),
		.host_tree = no_fd(c->host_tree),
		.proc_view = no_fd(c->proc_view),
		.upper_fd = no_fd(c->upper_fd),
		.last_cap = c->last_cap,
		.n_env = (uint32_t)pd_strv_length(c->env),
		.n_secret_env = (uint32_t)pd_strv_length(c->secret_env),
		.n_writable = (uint32_t)pd_strv_length(c->writable),
	};
	size_t len = sizeof(w) + strlen(c->cwd) + 1 + strings_size(c->env) +
		     strings_size(c->secret_env) + strings_size(c->writable);
	char *buf, *pos;

	if (len > PD_INIT_CONF_MAX)
		return -E2BIG;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &w, sizeof(w));
	pos = buf + sizeof(w);
	memcpy(pos, c->cwd, strlen(c->cwd) + 1);
	pos += strlen(c->cwd) + 1;
	pos = put_strings(pos, c->env);
	pos = put_strings(pos, c->secret_env);
	pos = put_strings(pos, c->writable);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

static bool absolute(const char *s)
{
	return s[0] == '/';
}

static bool fd_ok(int32_t fd, bool optional)
{
	return fd >= (optional ? -1 : 0) && fd < CONF_MAX_FD;
}

int pd_init_conf_parse(const char *buf, size_t len, struct pd_init_conf *ret)
{
	struct pd_init_conf c = { 0 };
	const char *pos, *end = buf + len, *z;
	struct wire w;
	int r;

	if (len < sizeof(w) || len > PD_INIT_CONF_MAX)
		return -EPROTO;
	memcpy(&w, buf, sizeof(w));
	if (w.magic != CONF_MAGIC ||
	    (w.flags & ~(uint32_t)(PD_INIT_POOLED | PD_INIT_EGRESS | PD_INIT_CA | PD_INIT_ROOT)) ||
	    w.rootless > 1 || w.rlimits.n > PD_CTL_MAX_RLIMITS || w.disk_bytes == 0 ||
	    !fd_ok(w.ctl, false) || !fd_ok(w.lock_fd, true) || !fd_ok(w.listen_fd, true) ||
	    !fd_ok(w.landlock_fd, true) || !fd_ok(w.host_tree, true) || !fd_ok(w.proc_view, true) ||
	    !fd_ok(w.upper_fd, true) || w.orphan_timeout_s < 0 || w.last_cap < 0 || w.last_cap > 63)
		return -EPROTO;
	pos = buf + sizeof(w);
	z = memchr(pos, '\0', (size_t)(end - pos));
	if (!z || !absolute(pos))
		return -EPROTO;
	c.cwd = pos;
	pos = z + 1;
	r = pd_strv_unpack(&pos, end, w.n_env, CONF_MAX_STRINGS, pd_str_is_named_assignment,
			   &c.env);
	if (r >= 0)
		r = pd_strv_unpack(&pos, end, w.n_secret_env, CONF_MAX_STRINGS,
				   pd_str_is_named_assignment, &c.secret_env);
	if (r >= 0)
		r = pd_strv_unpack(&pos, end, w.n_writable, CONF_MAX_STRINGS, absolute,
				   &c.writable);
	if (r >= 0 && pos != end)
		r = -EPROTO;
	if (r < 0) {
		pd_init_conf_release(&c);
		return r;
	}
	c.flags = w.flags;
	c.idmap = (struct pd_idmap){ .rootless = w.rootless,
				     .outside_uid = w.outside_uid,
				     .outside_gid = w.outside_gid,
				     .slot = w.slot,
				     .lock_fd = -1,
				     .init_uid = w.init_uid,
				     .init_gid = w.init_gid,
				     .root_user = (w.flags & PD_INIT_ROOT) != 0 };
	c.rlimits = w.rlimits;
	c.disk_bytes = w.disk_bytes;
	c.ctl = w.ctl;
	c.lock_fd = w.lock_fd;
	c.listen_fd = w.listen_fd;
	c.orphan_timeout_s = w.orphan_timeout_s;
	c.landlock_fd = w.landlock_fd;
	c.host_tree = w.host_tree;
	c.proc_view = w.proc_view;
	c.upper_fd = w.upper_fd;
	c.last_cap = w.last_cap;
	*ret = c;
	return 0;
}

void pd_init_conf_release(struct pd_init_conf *c)
{
	free(c->env);
	free(c->secret_env);
	free(c->writable);
	c->env = c->secret_env = c->writable = NULL;
}
