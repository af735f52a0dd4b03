/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandboxes that outlive their supervisor. A sandbox created with a reconnect_path keeps
 * running when its supervisor dies: its init holds the id slot's lock and listens on that
 * path (launch.c, init.c). A restarted supervisor calls paddock_sandbox_adopt() with the
 * handle it stored: it connects, gets init's pidfd from the kernel (SO_PEERPIDFD, never a
 * pid from a file), receives every command init still knows with its pipes and terminal,
 * then READY with the root fd, and takes the cgroup back without touching its members.
 *
 * Trust: the handle is the supervisor's own record (its state directory). What init sends
 * is checked like any other message from inside (sandbox.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "error.h"
#include "events.h"
#include "image-digest.h"
#include "sandbox.h"
#include "util/cleanup.h"

#define ADOPT_TIMEOUT_MS 5000
#define HANDLE_VERSION	 1
#define RECORD_VERSION	 1
/* what init hands back: the supervisor's record, its handle and the spec, escaped as JSON */
#define RECORD_RAW_MAX (8u * PADDOCK_RECORD_MAX)
#define RECORD_SEALS   (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int paddock_sandbox_handle(const paddock_sandbox *sb, char **ret_json, paddock_error *err)
{
	json_t *o;
	char *s;

	if (!sb || !ret_json)
		return pd_fail(err, EINVAL, "paddock_sandbox_handle: arguments are required");
	if (!sb->reconnect_path)
		return pd_fail(err, EINVAL,
			       "sandbox '%s' was created without a reconnect directory", sb->id);
	o = json_pack("{s:i,s:s,s:s,s:b,s:I,s:I,s:i,s:b,s:i}", "v", HANDLE_VERSION, "id", sb->id,
		      "socket", sb->reconnect_path, "rootless", sb->idmap.rootless, "uid",
		      (json_int_t)sb->idmap.outside_uid, "gid", (json_int_t)sb->idmap.outside_gid,
		      /* no sandbox has a wall clock of its own now; earlier readers want it */
		      "slot", (int)sb->idmap.slot, "no_timeout", 1, "orphan_timeout_s",
		      sb->orphan_timeout_s);
	/* the image it was made from, by id: a name may have moved on by the next start */
	if (o && sb->image_id[0])
		(void)json_object_set_new(o, "image_id", json_string(sb->image_id));
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return pd_fail(err, ENOMEM, "format handle");
	*ret_json = s;
	return 0;
}

static int parse_handle(paddock_sandbox *sb, const char *handle_json, paddock_error *err)
{
	_cleanup_(json_decrefp) json_t *o = NULL;
	const char *id = NULL, *path = NULL, *image_id = NULL;
	json_int_t uid = 0, gid = 0;
	int v = 0, rootless = 0, slot = 0, no_timeout = 0, orphan = 0;
	json_error_t jerr;

	o = json_loads(handle_json, 0, &jerr);
	if (!o || json_unpack_ex(o, &jerr, 0, "{s:i,s:s,s:s,s:b,s:I,s:I,s:i,s?b,s:i,s?s}", "v", &v,
				 "id", &id, "socket", &path, "rootless", &rootless, "uid", &uid,
				 "gid", &gid, "slot", &slot, "no_timeout", &no_timeout,
				 "orphan_timeout_s", &orphan, "image_id", &image_id) < 0)
		return pd_fail_field(err, EINVAL, "handle", "malformed sandbox handle: %s",
				     jerr.text);
	if (v != HANDLE_VERSION || strlen(id) >= sizeof(sb->id) || strncmp(id, "sb_", 3) != 0 ||
	    strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path) || slot < 0 ||
	    slot >= (json_int_t)PD_IDMAP_SLOTS || uid < 0 || gid < 0 || uid > UINT32_MAX ||
	    gid > UINT32_MAX || (image_id && !pd_digest_valid(image_id)))
		return pd_fail_field(err, EINVAL, "handle", "unsupported sandbox handle");
	snprintf(sb->image_id, sizeof(sb->image_id), "%s", image_id ?: "");
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	free(sb->reconnect_path);
	sb->reconnect_path = strdup(path);
	if (!sb->reconnect_path)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	sb->idmap.rootless = rootless;
	sb->idmap.outside_uid = (uid_t)uid;
	sb->idmap.outside_gid = (gid_t)gid;
	sb->idmap.slot = (unsigned)slot;
	sb->idmap.init_uid = rootless ? PD_SANDBOX_UID : 0;
	sb->idmap.init_gid = rootless ? PD_SANDBOX_GID : 0;
	pd_idmap_own_slot(&sb->idmap);
	(void)no_timeout; /* read and ignored: a sandbox has no wall clock of its own now */
	sb->orphan_timeout_s = orphan;
	return 0;
}

/* Connects to init and takes its pidfd from the kernel's view of the peer. */
static int connect_init(paddock_sandbox *sb, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int pidfd = -EBADF;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pd_fail(err, errno, "socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sb->reconnect_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return pd_fail(err, errno, "connect to the init of '%s'", sb->id);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return pd_fail(err, errno, "peer credentials");
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		/* COMPAT(kernel 6.5): no SO_PEERPIDFD; the listener's pid is pinned by its socket
		 */
		pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
		if (pidfd < 0)
			return pd_fail(err, errno, "pidfd of the init of '%s'", sb->id);
	}
	sb->pidfd = pidfd;
	sb->init_pid = cred.pid;
	sb->ctl = TAKE_FD(fd);
	return 0;
}

static int adopt_exec(paddock_sandbox *sb, const struct pd_ctl_exec_state *s, int *fds, size_t nfds,
		      paddock_error *err)
{
	paddock_exec *ex;

	for (ex = sb->execs; ex; ex = ex->next)
		if (ex->id == s->id)
			return pd_fail(err, EPROTO, "init reported command %llu twice",
				       (unsigned long long)s->id);
	ex = pd_exec_new(sb, s->id, NULL, NULL);
	if (!ex)
		return pd_fail(err, ENOMEM, "allocate exec");
	/*
	 * COMPAT(paddock 0.1 inits): an init of before kept the stdin flag of a command whose
	 * stdin was closed and sends one fd fewer: the missing one can only be stdin's
	 */
	if (!pd_exec_assign_fds(ex, s->flags, fds, nfds) &&
	    (!(s->flags & PD_EXEC_PIPE_STDIN) ||
	     !pd_exec_assign_fds(ex, s->flags & ~PD_EXEC_PIPE_STDIN, fds, nfds)))
		return pd_fail(err, EPROTO, "init sent the wrong fds for command %llu",
			       (unsigned long long)s->id);
	ex->pid = s->pid;
	ex->flags = s->flags;
	ex->output_captured = s->flags & (PD_EXEC_PIPE_STDOUT | PD_EXEC_PIPE_STDERR);
	/* exec ids stay unique in the sandbox across supervisors */
	if (sb->ctx->next_exec_id <= s->id)
		sb->ctx->next_exec_id = s->id + 1;
	sb->n_execs++;
	if (s->exited) {
		struct pd_ctl_exited x = s->exit;

		x.id = s->id;
		if (!WIFEXITED(x.status) && !WIFSIGNALED(x.status))
			return pd_fail(err, EPROTO, "impossible exit status from init");
		if (!sb->spec) {
			/* recovering: the spec comes with the record, after (end_held_execs()) */
			ex->held_exit = x;
			ex->exit_held = true;
		} else if (pd_exec_exited(ex, &x) < 0) {
			return pd_fail(err, EPROTO, "impossible exit status from init");
		}
	} else if (s->flags & PD_EXEC_CODE_SERVER) {
		pd_code_adopt(sb, ex);
	}
	return 0;
}

/*
 * The record init kept (PD_CTL_RECORD): a memfd the supervisor sealed, so nothing has changed
 * it since; it is still hostile input (init runs in the sandbox's namespaces), so its seals,
 * size and content are checked before use.
 */
static int read_record(paddock_sandbox *sb, int fd, paddock_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t got = 0;

	if (fstat(fd, &st) < 0)
		return pd_fail(err, errno, "stat the record of '%s'", sb->id);
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > RECORD_RAW_MAX ||
	    (fcntl(fd, F_GET_SEALS) & RECORD_SEALS) != RECORD_SEALS)
		return pd_fail(err, EPROTO,
			       "init sent a record that is not a sealed file of at "
			       "most %u bytes",
			       RECORD_RAW_MAX);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return pd_fail(err, ENOMEM, "read the record of '%s'", sb->id);
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return pd_fail(err, n < 0 ? errno : EPROTO, "read the record of '%s'",
				       sb->id);
		got += (size_t)n;
	}
	buf[got] = '\0';
	sb->record_raw = TAKE_PTR(buf);
	return 0;
}

/* The parts of what init kept: the supervisor's record, the handle, the spec (borrowed). */
struct record_parts {
	json_t *doc;
	const char *record;
	json_t *handle, *spec;
};

static void record_parts_release(struct record_parts *p)
{
	json_decref(p->doc);
}

static int record_parse(paddock_sandbox *sb, struct record_parts *ret, paddock_error *err)
{
	json_error_t jerr;
	int v = 0;

	ret->doc = json_loads(sb->record_raw, JSON_REJECT_DUPLICATES, &jerr);
	if (!ret->doc ||
	    json_unpack_ex(ret->doc, &jerr, JSON_STRICT, "{s:i,s:s,s:o,s:o}", "v", &v, "record",
			   &ret->record, "handle", &ret->handle, "spec", &ret->spec) < 0 ||
	    v != RECORD_VERSION || !json_is_object(ret->handle) || !json_is_object(ret->spec) ||
	    strlen(ret->record) > PADDOCK_RECORD_MAX)
		return pd_fail_field(err, EPROTO, "record",
				     "malformed record from the init of "
				     "'%s'",
				     sb->id);
	return 0;
}

int paddock_sandbox_set_record(paddock_sandbox *sb, const char *record, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *handle = NULL, *spec = NULL, *text = NULL;
	_cleanup_(json_decrefp) json_t *doc = NULL;
	size_t len, done = 0;
	int r;

	if (!sb || !record)
		return pd_fail(err, EINVAL, "paddock_sandbox_set_record: arguments are required");
	if (strlen(record) > PADDOCK_RECORD_MAX)
		return pd_fail(err, EMSGSIZE, "a record of more than %u bytes", PADDOCK_RECORD_MAX);
	if (sb->ctl < 0 || sb->state == PD_SB_DEAD)
		return pd_fail(err, ESRCH, "the init of '%s' is gone", sb->id);
	r = paddock_sandbox_handle(sb, &handle, err);
	if (r >= 0)
		r = paddock_spec_to_json(sb->spec, &spec, err);
	if (r < 0)
		return r;
	doc = json_pack("{s:i,s:s,s:o,s:o}", "v", RECORD_VERSION, "record", record, "handle",
			json_loads(handle, 0, NULL), "spec", json_loads(spec, 0, NULL));
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (!text)
		return pd_fail(err, ENOMEM, "format the record of '%s'", sb->id);
	len = strlen(text);
	fd = memfd_create("paddock-record", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return pd_fail(err, errno, "memfd for the record of '%s'", sb->id);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_fail(err, errno, "write the record of '%s'", sb->id);
		done += (size_t)n;
	}
	/* SECURITY: sealed, so what init hands back later is what this supervisor wrote */
	if (fcntl(fd, F_ADD_SEALS, RECORD_SEALS) < 0)
		return pd_fail(err, errno, "seal the record of '%s'", sb->id);
	r = pd_ctl_send(sb->ctl, PD_CTL_RECORD, NULL, 0, &fd, 1);
	if (r < 0)
		return pd_fail(err, -r, "give the record of '%s' to its init", sb->id);
	return 0;
}

const char *paddock_sandbox_record(const paddock_sandbox *sb)
{
	return sb ? sb->record : NULL;
}

/* EXEC_STATE for each command init knows, then READY with the root fd. */
static int resync(paddock_sandbox *sb, paddock_error *err)
{
	for (;;) {
		union {
			struct pd_ctl_exec_state state;
			struct pd_ctl_ready ready;
		} msg;
		int fds[PD_CTL_MAX_FDS];
		size_t nfds = PD_CTL_MAX_FDS;
		uint32_t type = 0;
		ssize_t n;
		int r;

		memset(&msg, 0, sizeof(msg));
		n = pd_ctl_recv_wait(sb->ctl, ADOPT_TIMEOUT_MS, &type, &msg, sizeof(msg), fds,
				     &nfds);
		if (n < 0 || type == 0)
			return pd_fail(err, n < 0 ? (int)-n : EPIPE, "receive from init");
		/* an init of an earlier version sends no seccomp count at the end: it stays 0 */
		if (type == PD_CTL_EXEC_STATE &&
		    (n == (ssize_t)sizeof(msg.state) ||
		     n == (ssize_t)(sizeof(msg.state) - sizeof(msg.state.exit.denied)))) {
			r = adopt_exec(sb, &msg.state, fds, nfds, err);
			if (r < 0) {
				for (size_t i = 0; i < nfds; i++)
					pd_close(fds[i]);
				return r;
			}
			continue;
		}
		if (type == PD_CTL_RECORD && n == 0 && nfds == 1 && !sb->record_raw) {
			r = read_record(sb, fds[0], err);
			pd_close(fds[0]);
			if (r < 0)
				return r;
			continue;
		}
		/* an init of the previous version sends landlock_abi alone */
		if (type == PD_CTL_READY && (nfds == 1 || nfds == 2) &&
		    (n == (ssize_t)sizeof(msg.ready) || n == (ssize_t)sizeof(int32_t))) {
			struct stat st;

			if (fstat(fds[0], &st) < 0 || !S_ISDIR(st.st_mode)) {
				for (size_t i = 0; i < nfds; i++)
					pd_close(fds[i]);
				return pd_fail(err, EPROTO, "init sent no root directory");
			}
			sb->root_fd = fds[0];
			/* an image's writable layer, for snapshots (sandbox-snapshot.c) */
			if (nfds == 2 && fstat(fds[1], &st) == 0 && S_ISDIR(st.st_mode))
				sb->upper_fd = fds[1];
			else if (nfds == 2)
				pd_close(fds[1]);
			sb->landlock_abi = msg.ready.landlock_abi > 0 && msg.ready.landlock_abi < 64
						   ? msg.ready.landlock_abi
						   : 0;
			return 0;
		}
		for (size_t i = 0; i < nfds; i++)
			pd_close(fds[i]);
		return pd_fail(err, EPROTO, "unexpected message %u from init", type);
	}
}

/*
 * After the reconnect (r: how it went): the cgroup, the loop's events, the egress listeners.
 * What cannot be supervised is killed; sb is the caller's (a cleanup frees it on failure).
 */
static int adopt_finish(paddock_sandbox **psb, int r, paddock_sandbox **ret_sandbox,
			paddock_error *err)
{
	paddock_sandbox *sb = *psb;

	if (r >= 0 && !sb->cg && !sb->idmap.rootless && pd_cgroup_probe() != PD_CGROUP_NONE)
		r = pd_cgroup_adopt(sb->idmap.slot, &sb->cg, err);
	if (r >= 0)
		r = pd_sandbox_arm(sb, err);
	/* its image is held again, as at its create: image rm answers EBUSY while it runs */
	if (r >= 0)
		pd_sandbox_image_hold(sb);
	/* the listeners died with the old supervisor: ask init for new ones, same ports */
	if (r >= 0)
		r = pd_sandbox_egress_start(sb, err);
	if (r < 0) {
		pd_error_prefix(err, "adopt sandbox '%s'", sb->id);
		/*
		 * SECURITY: what cannot be supervised is ended, never left running unwatched.
		 * A frozen task takes its SIGKILL only once thawed: thaw it, or it stays.
		 */
		if (sb->pidfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		if (sb->cg)
			(void)pd_cgroup_freeze(sb->cg, false, NULL);
		return r;
	}
	pd_emit(sb->ctx, PADDOCK_LEVEL_INFO, "sandbox.adopted", sb->id, NULL,
		json_pack("{s:i}", "commands", (int)sb->n_execs));
	*ret_sandbox = TAKE_PTR(*psb);
	return 0;
}

static paddock_sandbox *sandbox_alloc(paddock_ctx *ctx);

/* --user root: rootless, such a sandbox's invoker is its uid 0 (pd_idmap_acquire()) */
static void adopt_user(paddock_sandbox *sb)
{
	if (sb->spec->user != PD_USER_ROOT)
		return;
	sb->idmap.root_user = true;
	if (sb->idmap.rootless)
		sb->idmap.init_uid = sb->idmap.init_gid = 0;
}

int paddock_sandbox_adopt(paddock_ctx *ctx, const paddock_spec *spec, const char *handle_json,
			  paddock_sandbox **ret_sandbox, paddock_error *err)
{
	_cleanup_(paddock_sandbox_freep) paddock_sandbox *sb = NULL;
	int r;

	if (!ctx || !spec || !handle_json || !ret_sandbox)
		return pd_fail(err, EINVAL, "paddock_sandbox_adopt: arguments are required");
	sb = sandbox_alloc(ctx);
	if (!sb)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	r = parse_handle(sb, handle_json, err);
	if (r < 0)
		return r;
	r = pd_spec_dup(spec, &sb->spec, err);
	if (r >= 0)
		adopt_user(sb);
	if (r >= 0 && !sb->idmap.rootless && pd_cgroup_probe() != PD_CGROUP_NONE)
		r = pd_cgroup_adopt(sb->idmap.slot, &sb->cg, err);
	/*
	 * A sandbox paused by the supervisor before is frozen, init with it, and could answer
	 * nothing: it is thawed first. Its supervisor pauses it again if it should stay paused
	 * (paddock_sandbox_pause(): the state is the supervisor's record, not the library's).
	 */
	if (r >= 0 && sb->cg)
		(void)pd_cgroup_freeze(sb->cg, false, NULL);
	if (r >= 0)
		r = connect_init(sb, err);
	if (r >= 0)
		r = resync(sb, err);
	if (r >= 0 && sb->record_raw) {
		struct record_parts p = { 0 };

		/* the supervisor's own part, for paddock_sandbox_record(); the rest it has */
		r = record_parse(sb, &p, err);
		if (r >= 0 && !(sb->record = strdup(p.record)))
			r = pd_fail(err, ENOMEM, "copy the record of '%s'", sb->id);
		record_parts_release(&p);
	}
	return adopt_finish(&sb, r, ret_sandbox, err);
}

static paddock_sandbox *sandbox_alloc(paddock_ctx *ctx)
{
	paddock_sandbox *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return NULL;
	sb->ctx = ctx;
	sb->pidfd = -EBADF;
	sb->ctl = -EBADF;
	sb->root_fd = -EBADF;
	sb->upper_fd = -EBADF;
	sb->image_lock = -EBADF;
	sb->death_reason = PADDOCK_END_KILLED;
	pd_idmap_init(&sb->idmap);
	return sb;
}

/* The outside start of the first line of /proc/PID/<file> (uid_map, gid_map). */
static int map_start(pid_t pid, const char *file, long long *ret_inside, long long *ret_outside,
		     paddock_error *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64];
	long long in, out, count;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "re");
	if (!f)
		return pd_fail(err, errno, "open '%s'", path);
	if (fscanf(f, "%lld %lld %lld", &in, &out, &count) != 3)
		return pd_fail(err, EPROTO, "read '%s'", path);
	*ret_inside = in;
	*ret_outside = out;
	return 0;
}

/*
 * SECURITY: a recovered handle comes from inside. What it says of the ids must be what the
 * kernel says of init's user namespace (the supervisor wrote those maps at create), and as
 * root the slot must be the one those ids belong to: a lying init cannot make the
 * supervisor take another sandbox's slot or cgroup.
 */
static int check_recovered_ids(paddock_sandbox *sb, paddock_error *err)
{
	long long uin, uout, gin, gout;
	int r;

	r = map_start(sb->init_pid, "uid_map", &uin, &uout, err);
	if (r >= 0)
		r = map_start(sb->init_pid, "gid_map", &gin, &gout, err);
	if (r < 0)
		return r;
	/* the pid was init's when the maps were read: its pidfd still names a live process */
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0)
		return pd_fail(err, errno, "the init of '%s' went away", sb->id);
	if (uout != (long long)sb->idmap.outside_uid || gout != (long long)sb->idmap.outside_gid ||
	    uin != (sb->idmap.rootless && !sb->idmap.root_user ? PD_SANDBOX_UID : 0) ||
	    gin != (sb->idmap.rootless && !sb->idmap.root_user ? PD_SANDBOX_GID : 0) ||
	    (!sb->idmap.rootless &&
	     (uint64_t)sb->idmap.outside_uid !=
		     PD_IDMAP_BASE + (uint64_t)sb->idmap.slot * PD_IDMAP_RANGE))
		return pd_fail_field(err, EPROTO, "record",
				     "the record of '%s' names ids its init does not have", sb->id);
	return 0;
}

/*
 * A sandbox paused before its supervisor died is frozen, init with it, and would answer
 * nothing: it is thawed before the resync, as paddock_sandbox_adopt() does. Without a handle
 * its cgroup is the kernel's word (/proc/PID/cgroup of the peer of the reconnect socket),
 * not anything init would say; only a slot of paddock's own hierarchy is thawed, and
 * adopt_finish() takes the cgroup by the record's slot once that is checked.
 */
static void thaw_frozen_init(paddock_sandbox *sb)
{
	struct pd_cgroup *cg = NULL;
	unsigned slot;

	if (pd_cgroup_probe() == PD_CGROUP_NONE || pd_cgroup_freezer_slot(sb->init_pid, &slot) < 0)
		return; /* rootless, or no freezer: nothing was frozen */
	if (pd_cgroup_adopt(slot, &cg, NULL) < 0)
		return; /* the resync fails and says why */
	(void)pd_cgroup_freeze(cg, false, NULL);
	pd_cgroup_free(cg);
}

/* The ends init reported before the recovered sandbox had its spec, now that it has. */
static int end_held_execs(paddock_sandbox *sb, paddock_error *err)
{
	for (paddock_exec *ex = sb->execs; ex; ex = ex->next) {
		if (!ex->exit_held)
			continue;
		ex->exit_held = false;
		if (pd_exec_exited(ex, &ex->held_exit) < 0)
			return pd_fail(err, EPROTO, "impossible exit status from init");
	}
	return 0;
}

int paddock_sandbox_recover(paddock_ctx *ctx, const char *socket_path,
			    paddock_sandbox **ret_sandbox, paddock_error *err)
{
	_cleanup_(paddock_sandbox_freep) paddock_sandbox *sb = NULL;
	struct record_parts p = { 0 };
	_cleanup_free_ char *handle = NULL, *spec = NULL;
	const char *name;
	int r;

	if (!ctx || !socket_path || !ret_sandbox)
		return pd_fail(err, EINVAL, "paddock_sandbox_recover: arguments are required");
	name = strrchr(socket_path, '/');
	name = name ? name + 1 : socket_path;
	sb = sandbox_alloc(ctx);
	if (!sb)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	snprintf(sb->id, sizeof(sb->id), "%.31s", name);
	sb->reconnect_path = strdup(socket_path);
	if (!sb->reconnect_path)
		return pd_fail(err, ENOMEM, "allocate sandbox");
	r = connect_init(sb, err);
	if (r >= 0)
		thaw_frozen_init(sb);
	if (r >= 0)
		r = resync(sb, err);
	if (r >= 0 && !sb->record_raw)
		r = pd_fail(err, ENODATA, "the init of '%s' keeps no record", sb->id);
	if (r >= 0)
		r = record_parse(sb, &p, err);
	handle = r >= 0 ? json_dumps(p.handle, JSON_COMPACT) : NULL;
	spec = r >= 0 ? json_dumps(p.spec, JSON_COMPACT) : NULL;
	if (r >= 0 && (!handle || !spec || !(sb->record = strdup(p.record))))
		r = pd_fail(err, ENOMEM, "copy the record of '%s'", name);
	record_parts_release(&p);
	if (r >= 0)
		r = parse_handle(sb, handle, err);
	if (r >= 0 && (strcmp(sb->id, name) != 0 || strcmp(sb->reconnect_path, socket_path) != 0))
		r = pd_fail_field(err, EPROTO, "record", "the record at '%s' is another sandbox's",
				  PD_ESC(socket_path));
	if (r >= 0)
		r = paddock_spec_new(&sb->spec, err);
	if (r >= 0)
		r = paddock_spec_load_json(sb->spec, spec, strlen(spec), err);
	if (r >= 0)
		r = end_held_execs(sb, err);
	if (r >= 0)
		adopt_user(sb);
	if (r >= 0)
		r = check_recovered_ids(sb, err);
	return adopt_finish(&sb, r, ret_sandbox, err);
}
