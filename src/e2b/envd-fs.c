/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's `filesystem.Filesystem` service over libpaddock's file API (paddock/files.h), the
 * way paddockd's own files API (src/daemon/api-files.c) uses it: every path is resolved
 * beneath the sandbox's root fd as the sandbox user, so nothing here opens a file itself.
 *
 *  - Stat, MakeDir, Move, ListDir, Remove: one call each, answered at once.
 *  - WatchDir: a server stream. A paddock_watch (inotify) is read from the loop; each change
 *    goes out as a FilesystemEvent, with keepalives and the client's deadline on timers.
 *  - CreateWatcher / GetWatcherEvents / RemoveWatcher: the same watch, its events kept in a
 *    bounded queue until the client polls.
 *
 * Trust: the request comes from a client holding the sandbox's access token; what the
 * sandbox controls (file names, symlink targets, how fast it makes events) is hostile and
 * bounded: names are JSON-escaped, listings and queues have limits, a client that does not
 * read its stream is cut off rather than buffered for without end.
 */
#include "e2b.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paddock/files.h"

#define FS_LIST_MAX	   50000      /* entries one ListDir answers with */
#define FS_WATCHES_PER_BOX 16	      /* WatchDir streams + polling watchers of one sandbox */
#define FS_QUEUE_MAX	   10000      /* events a polling watcher keeps until it is read */
#define FS_STREAM_PENDING  (8u << 20) /* bytes of events a stream client may leave unread */
#define FS_DRAIN_ROUNDS	   64 /* paddock_watch_read() calls before GetWatcherEvents answers */

struct e2b_fswatch {
	struct e2b *e;
	struct box *box;
	char id[24]; /* polling watchers: "w<n>"; streams: "" */
	char *root;  /* the watched directory, cleaned: event names are relative to it */
	bool include_entry;
	paddock_watch *pw;
	struct event *ev; /* the watch's fd readable (or made active: the client left) */
	/* WatchDir stream */
	struct watcher *w; /* the client (daemon.h): NULL for polling watchers */
	struct watcher *wlist;
	bool started; /* the 200 went out */
	bool sent;    /* a message went out since the last keepalive tick */
	struct event *keepalive, *deadline;
	/* polling watcher */
	json_t *queue; /* FilesystemEvent messages not yet read */
	/* a libpaddock write's temporary file was renamed in this directory: see watch_event() */
	char commit_dir[PADDOCK_FILES_MAX_PATH + 1];
	size_t commit_dir_len; /* strlen(commit_dir) + 1, 0: none */
	/* set while reading events (the watch must not be freed from inside its callback) */
	int fail_code; /* enum e2b_connect_code, -1: none */
	char fail_msg[256];
	struct e2b_fswatch *next;
};

/* ---- EntryInfo ------------------------------------------------------------------------ */

static const char *owner_name(uint32_t uid, char buf[12])
{
	/* the names of the /etc/passwd every sandbox gets (src/lib/rootfs.c) */
	switch (uid) {
	case 0:
		return "root";
	case 1000:
		return "user";
	case 65534:
		return "nobody";
	default:
		snprintf(buf, 12, "%" PRIu32, uid);
		return buf;
	}
}

static const char *group_name(uint32_t gid, char buf[12])
{
	/* and of its /etc/group */
	switch (gid) {
	case 0:
		return "root";
	case 5:
		return "tty";
	case 1000:
		return "user";
	case 65534:
		return "nogroup";
	default:
		snprintf(buf, 12, "%" PRIu32, gid);
		return buf;
	}
}

/*
 * envd's `permissions`: Go's os.FileMode.String() of the entry, so clients see what E2B
 * shows: type and special-bit letters in Go's order (d L u g t ?), "-" when there is none,
 * then rwxrwxrwx.
 */
static void permissions_string(const struct paddock_file_info *fi, char out[20])
{
	static const char rwx[] = "rwxrwxrwx";
	size_t n = 0;

	if (fi->type == PADDOCK_FILE_DIR)
		out[n++] = 'd';
	if (fi->type == PADDOCK_FILE_SYMLINK)
		out[n++] = 'L';
	if (fi->mode & 04000)
		out[n++] = 'u';
	if (fi->mode & 02000)
		out[n++] = 'g';
	if (fi->mode & 01000)
		out[n++] = 't';
	if (fi->type == PADDOCK_FILE_OTHER)
		out[n++] = '?'; /* a fifo, socket or device: libpaddock does not say which */
	if (n == 0)
		out[n++] = '-';
	for (int i = 0; i < 9; i++)
		out[n++] = fi->mode & (0400u >> i) ? rwx[i] : '-';
	out[n] = '\0';
}

static const char *file_type_name(enum paddock_file_type t)
{
	switch (t) {
	case PADDOCK_FILE_REGULAR:
		return "FILE_TYPE_FILE";
	case PADDOCK_FILE_DIR:
		return "FILE_TYPE_DIRECTORY";
	case PADDOCK_FILE_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	case PADDOCK_FILE_OTHER:
	case _PADDOCK_FILE_TYPE_MAX:
		break;
	}
	return "FILE_TYPE_UNSPECIFIED"; /* the SDK skips such entries, as for envd */
}

json_t *e2b_entry_info(const struct paddock_file_info *fi)
{
	char perms[20], size[24], ob[12], gb[12];
	int64_t sec = fi->mtime_ns / 1000000000, nsec = fi->mtime_ns % 1000000000;
	json_t *o;

	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	permissions_string(fi, perms);
	snprintf(size, sizeof(size), "%" PRIu64, fi->size);
	/* proto3 JSON: int64 as a string, uint32 as a number, enums by name */
	o = json_pack("{s:o,s:s,s:o,s:s,s:I,s:s,s:s,s:s,s:o}", "name",
		      svc_json_text(fi->name ? fi->name : ""), "type", file_type_name(fi->type),
		      "path", svc_json_text(fi->path ? fi->path : ""), "size", size, "mode",
		      (json_int_t)(fi->mode & 0777), "permissions", perms, "owner",
		      owner_name(fi->uid, ob), "group", group_name(fi->gid, gb), "modifiedTime",
		      e2b_pbjson_timestamp_new(sec, (long)nsec));
	if (o && fi->type == PADDOCK_FILE_SYMLINK && fi->symlink_target)
		json_object_set_new(o, "symlinkTarget", svc_json_text(fi->symlink_target));
	return o;
}

/* ---- request fields ------------------------------------------------------------------- */

/*
 * A string field as a path in the sandbox (malloc'ed), or NULL with invalid_argument
 * answered. proto3 JSON leaves out empty strings, so a missing field is "", which envd and
 * e2b_path() read as the user's home; `required` refuses that (Remove, Move: a client that
 * sent no path did not mean the home directory).
 */
static char *path_field(struct e2b_req *r, json_t *msg, const char *field, bool required)
{
	const char *s = NULL;
	char *p;

	if (!e2b_pbjson_string(json_object_get(msg, field), &s)) {
		e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					"%s: expected a string", field);
		return NULL;
	}
	if (!s)
		s = "";
	if (required && !*s) {
		e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					"%s: expected a path in the sandbox", field);
		return NULL;
	}
	p = e2b_path(r, s);
	if (!p)
		e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					"%s: expected at most %d bytes", field,
					PADDOCK_FILES_MAX_PATH);
	return p;
}

static bool bool_field(json_t *msg, const char *field, bool *ret, char *why, size_t size)
{
	*ret = false;
	if (!e2b_pbjson_bool(json_object_get(msg, field), ret)) {
		snprintf(why, size, "%s: expected true or false", field);
		return false;
	}
	return true;
}

/* "<what failed>: <errno text>", for stream errors (unary ones go to e2b_reply_paddock_error) */
static const char *err_text(const paddock_error *err, char *buf, size_t size)
{
	return paddock_error_format(err, buf, size);
}

/* {"entry": EntryInfo of path} */
static void reply_entry(struct e2b_req *r, const char *path)
{
	struct paddock_file_info fi = { 0 };
	paddock_error err = { 0 };
	json_t *entry;

	if (paddock_sandbox_stat(r->box->sb, path, &fi, &err) < 0)
		return e2b_reply_paddock_error(r, &err);
	entry = e2b_entry_info(&fi);
	paddock_file_info_release(&fi);
	if (!entry)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INTERNAL, "out of memory");
	e2b_connect_reply(r->req, json_pack("{s:o}", "entry", entry));
}

/* ---- unary calls ---------------------------------------------------------------------- */

static void fs_stat(struct e2b_req *r, json_t *msg)
{
	char *path = path_field(r, msg, "path", false);

	if (!path)
		return;
	reply_entry(r, path);
	free(path);
}

static void fs_make_dir(struct e2b_req *r, json_t *msg)
{
	char *path = path_field(r, msg, "path", false);
	struct paddock_file_info fi = { 0 };
	paddock_error err = { 0 };
	int k;

	if (!path)
		return;
	/*
	 * envd: an existing directory is already_exists (the SDK's makeDir() then returns
	 * false), anything else there invalid_argument; missing parents are created.
	 */
	k = paddock_sandbox_mkdir(r->box->sb, path, 0755, false, &err);
	if (k == -ENOENT) {
		err = (paddock_error){ 0 };
		k = paddock_sandbox_mkdir(r->box->sb, path, 0755, true, &err);
	}
	if (k == -EEXIST) {
		paddock_error serr = { 0 };

		if (paddock_sandbox_stat(r->box->sb, path, &fi, &serr) == 0 &&
		    fi.type != PADDOCK_FILE_DIR && fi.type != PADDOCK_FILE_SYMLINK)
			e2b_connect_reply_error(
				r->req, E2B_CONNECT_INVALID_ARGUMENT,
				"path already exists but it is not a directory: '%s'", fi.path);
		else
			e2b_connect_reply_error(r->req, E2B_CONNECT_ALREADY_EXISTS,
						"directory already exists: '%s'",
						fi.path ? fi.path : path);
		paddock_file_info_release(&fi);
	} else if (k < 0) {
		e2b_reply_paddock_error(r, &err);
	} else {
		reply_entry(r, path);
	}
	free(path);
}

/* The directory part of a path ("/a/b" -> "/a"), malloc'ed; NULL at "/" or out of memory. */
static char *parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	while (slash && slash > path && slash[1] == '\0') { /* "/a/b/" */
		const char *p = slash;

		while (p > path && p[-1] == '/')
			p--;
		if (p == path)
			return NULL;
		slash = memrchr(path, '/', (size_t)(p - path));
	}
	if (!slash || slash == path)
		return NULL;
	return strndup(path, (size_t)(slash - path));
}

static void fs_move(struct e2b_req *r, json_t *msg)
{
	char *from = path_field(r, msg, "source", true), *to = NULL, *parent = NULL;
	paddock_error err = { 0 };
	int k;

	if (!from)
		return;
	to = path_field(r, msg, "destination", true);
	if (!to)
		goto out;
	/* envd renames over what is there (rename(2)) and creates the destination's parents */
	k = paddock_sandbox_move(r->box->sb, from, to, true, &err);
	if (k == -ENOENT) {
		struct paddock_file_info fi = { 0 };
		paddock_error serr = { 0 };

		/* only when the source is there: a failed move leaves nothing behind */
		parent = parent_of(to);
		if (paddock_sandbox_stat(r->box->sb, from, &fi, &serr) < 0) {
			err = serr; /* the source is what is missing: say so, as envd */
		} else if (parent &&
			   paddock_sandbox_mkdir(r->box->sb, parent, 0755, true, &serr) == 0) {
			err = (paddock_error){ 0 };
			k = paddock_sandbox_move(r->box->sb, from, to, true, &err);
		}
		paddock_file_info_release(&fi);
	}
	if (k < 0)
		e2b_reply_paddock_error(r, &err);
	else
		reply_entry(r, to);
out:
	free(from);
	free(to);
	free(parent);
}

static void fs_list_dir(struct e2b_req *r, json_t *msg)
{
	struct paddock_file_info *infos = NULL;
	paddock_error err = { 0 };
	uint32_t depth = 0;
	size_t n = 0;
	char *path;
	json_t *a;

	if (!e2b_pbjson_uint32(json_object_get(msg, "depth"), &depth))
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					       "depth: expected a number from 1 to %d",
					       PADDOCK_FILES_MAX_DEPTH);
	if (depth == 0)
		depth = 1; /* proto3's default: the directory's own entries, as envd */
	if (depth > PADDOCK_FILES_MAX_DEPTH)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					       "depth: at most %d levels, got %" PRIu32,
					       PADDOCK_FILES_MAX_DEPTH, depth);
	path = path_field(r, msg, "path", false);
	if (!path)
		return;
	if (paddock_sandbox_list_dir(r->box->sb, path, depth, FS_LIST_MAX, &infos, &n, &err) < 0) {
		free(path);
		if (err.code == E2BIG)
			return e2b_connect_reply_error(
				r->req, E2B_CONNECT_INVALID_ARGUMENT,
				"more than %d entries: list with a smaller depth", FS_LIST_MAX);
		return e2b_reply_paddock_error(r, &err);
	}
	free(path);
	a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, e2b_entry_info(&infos[i])) < 0) {
			json_decref(a);
			a = NULL;
		}
	paddock_file_infos_free(infos, n);
	if (!a)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INTERNAL, "out of memory");
	e2b_connect_reply(r->req, json_pack("{s:o}", "entries", a));
}

static void fs_remove(struct e2b_req *r, json_t *msg)
{
	char *path = path_field(r, msg, "path", true);
	paddock_error err = { 0 };

	if (!path)
		return;
	/* envd: os.RemoveAll: a tree goes whole, and a path that is not there is no error */
	if (paddock_sandbox_remove(r->box->sb, path, true, &err) < 0 && err.code != ENOENT)
		e2b_reply_paddock_error(r, &err);
	else
		e2b_connect_reply(r->req, json_object());
	free(path);
}

/* ---- watches -------------------------------------------------------------------------- */

static unsigned box_watches(struct e2b *e, struct box *b)
{
	unsigned n = 0;

	for (struct e2b_fswatch *fw = e->fswatches; fw; fw = fw->next)
		n += fw->box == b;
	return n;
}

static void fswatch_unlink(struct e2b_fswatch *fw)
{
	for (struct e2b_fswatch **pp = &fw->e->fswatches; *pp; pp = &(*pp)->next)
		if (*pp == fw) {
			*pp = fw->next;
			break;
		}
}

/*
 * Frees a watch. A stream whose client is still there gets its end-of-stream first: {} for
 * code < 0, else the error.
 */
static void fswatch_free(struct e2b_fswatch *fw, int code, const char *msg)
{
	if (!fw)
		return;
	fswatch_unlink(fw);
	if (fw->ev)
		event_free(fw->ev);
	if (fw->keepalive)
		event_free(fw->keepalive);
	if (fw->deadline)
		event_free(fw->deadline);
	paddock_watch_free(fw->pw);
	if (fw->w) {
		struct evhttp_request *req = fw->w->req;

		if (req) {
			/* evhttp may free the connection inside the reply's end: detach first */
			pdd_watcher_detach(fw->w);
			fw->w->req = NULL;
			if (code < 0)
				e2b_connect_stream_end(req, &fw->started, -1, "%s", "");
			else
				e2b_connect_stream_end(req, &fw->started, code, "%s",
						       msg ? msg : "");
		}
		pdd_watcher_free(fw->w, &fw->wlist);
	}
	json_decref(fw->queue);
	free(fw->root);
	free(fw);
}

static void fswatch_fail(struct e2b_fswatch *fw, enum e2b_connect_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fswatch_fail(struct e2b_fswatch *fw, enum e2b_connect_code code, const char *fmt, ...)
{
	va_list ap;

	if (fw->fail_code >= 0)
		return; /* the first reason stands */
	fw->fail_code = (int)code;
	va_start(ap, fmt);
	vsnprintf(fw->fail_msg, sizeof(fw->fail_msg), fmt, ap);
	va_end(ap);
}

/* An event's path relative to the watched directory, as envd's names are ("." for itself). */
static const char *relative_name(const struct e2b_fswatch *fw, const char *path)
{
	size_t n = strlen(fw->root);

	if (strcmp(fw->root, "/") == 0)
		return path[1] ? path + 1 : ".";
	if (strncmp(path, fw->root, n) != 0)
		return path; /* not below it: never seen, but keep the whole path then */
	if (path[n] == '\0')
		return ".";
	return path[n] == '/' ? path + n + 1 : path;
}

static const char *event_type_name(const char *type)
{
	static const struct {
		const char *paddock, *envd;
	} map[] = {
		{ "create", "EVENT_TYPE_CREATE" }, { "write", "EVENT_TYPE_WRITE" },
		{ "remove", "EVENT_TYPE_REMOVE" }, { "rename", "EVENT_TYPE_RENAME" },
		{ "chmod", "EVENT_TYPE_CHMOD" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(type, map[i].paddock) == 0)
			return map[i].envd;
	return NULL;
}

/* The FilesystemEvent message of an event at path (envd's type name). */
static json_t *event_message(struct e2b_fswatch *fw, const char *type, const char *path)
{
	json_t *o = json_pack("{s:o,s:s}", "name", svc_json_text(relative_name(fw, path)), "type",
			      type);

	/*
	 * envd attaches the entry (best effort) to create, write and chmod only: after a remove
	 * or a rename the path may already hold another file.
	 */
	if (o && fw->include_entry && strcmp(type, "EVENT_TYPE_REMOVE") != 0 &&
	    strcmp(type, "EVENT_TYPE_RENAME") != 0 && fw->box->sb) {
		struct paddock_file_info fi = { 0 };
		paddock_error err = { 0 };

		if (paddock_sandbox_stat(fw->box->sb, path, &fi, &err) == 0) {
			json_t *entry = e2b_entry_info(&fi);

			if (entry)
				json_object_set_new(o, "entry", entry);
			paddock_file_info_release(&fi);
		}
	}
	return o;
}

/* Bytes the stream's client has not taken yet. */
static size_t stream_pending(struct e2b_fswatch *fw)
{
	struct evhttp_connection *c = fw->w->req ? evhttp_request_get_connection(fw->w->req) : NULL;
	struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;

	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void stream_send(struct e2b_fswatch *fw, json_t *msg_take)
{
	if (!fw->w->req || !msg_take) {
		json_decref(msg_take);
		return;
	}
	e2b_connect_stream_send(fw->w->req, &fw->started, msg_take);
	fw->sent = true;
}

/* One event to the client: sent on the stream, or queued for GetWatcherEvents. */
static void deliver(struct e2b_fswatch *fw, const char *type, const char *path)
{
	json_t *m;

	if (fw->fail_code >= 0)
		return;
	m = event_message(fw, type, path);
	if (!m)
		return;
	if (fw->w) {
		/* SECURITY: a sandbox making events faster than the client reads them */
		if (stream_pending(fw) > FS_STREAM_PENDING) {
			json_decref(m);
			return fswatch_fail(fw, E2B_CONNECT_DATA_LOSS,
					    "the client left more than %u bytes of events unread: "
					    "events were lost",
					    FS_STREAM_PENDING);
		}
		return stream_send(fw, json_pack("{s:o}", "filesystem", m));
	}
	if (json_array_size(fw->queue) >= FS_QUEUE_MAX) {
		json_decref(m);
		return fswatch_fail(fw, E2B_CONNECT_DATA_LOSS,
				    "more than %d events were not read: events were lost; poll "
				    "more often or watch a smaller tree",
				    FS_QUEUE_MAX);
	}
	json_array_append_new(fw->queue, m);
}

/* The length of path's directory part ("/a/b" -> 2). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? (size_t)(slash - path) : 0;
}

/*
 * libpaddock writes a file as ".paddock-write-XXXXXXXX" next to it, renamed over the
 * target at commit (docs/files.md "Atomic writes"): the name is not one envd would ever show.
 */
static bool is_write_temp(const char *path)
{
	const char *base = path + dir_len(path) + (strchr(path, '/') ? 1 : 0);

	if (strncmp(base, ".paddock-write-", 15) != 0 || strlen(base) != 23)
		return false;
	return strspn(base + 15, "0123456789abcdef") == 8;
}

static void watch_event(const struct paddock_watch_event *ev, void *userdata)
{
	struct e2b_fswatch *fw = userdata;
	const char *type = event_type_name(ev->type);

	if (fw->fail_code >= 0)
		return;
	if (strcmp(ev->type, "overflow") == 0)
		return fswatch_fail(fw, E2B_CONNECT_DATA_LOSS,
				    "events were lost below '%.200s' (too many at once, or too "
				    "many directories to watch): list the directory again",
				    fw->root);
	if (!type)
		return;
	/*
	 * A file written through /files or the SDK: envd writes in place and shows "create"
	 * (a new file) and "write"; here the temporary file comes and is renamed over the
	 * target. Its events are left out, and the rename onto the target (the next event, in
	 * the same directory: inotify queues both halves of a rename together) becomes
	 * "create" + "write", what a client waiting for either expects.
	 */
	if (is_write_temp(ev->path)) {
		fw->commit_dir_len = strcmp(ev->type, "rename") == 0 ? dir_len(ev->path) + 1 : 0;
		if (fw->commit_dir_len)
			snprintf(fw->commit_dir, sizeof(fw->commit_dir), "%.*s",
				 (int)fw->commit_dir_len - 1, ev->path);
		return;
	}
	if (fw->commit_dir_len) {
		bool commit = strcmp(ev->type, "rename") == 0 && !ev->is_dir &&
			      dir_len(ev->path) == fw->commit_dir_len - 1 &&
			      strncmp(ev->path, fw->commit_dir, fw->commit_dir_len - 1) == 0;

		fw->commit_dir_len = 0;
		if (commit) {
			deliver(fw, "EVENT_TYPE_CREATE", ev->path);
			return deliver(fw, "EVENT_TYPE_WRITE", ev->path);
		}
	}
	/*
	 * envd (fsnotify on inotify) reports a rename's old name as "rename" and its new name
	 * as "create", as the new name appears
	 */
	if (strcmp(ev->type, "rename") == 0 && ev->moved_to)
		type = "EVENT_TYPE_CREATE";
	deliver(fw, type, ev->path);
}

/*
 * Reads what the watch has. false when the watch is finished: a stream then ended and was
 * freed; a polling watcher keeps its failure for GetWatcherEvents to report.
 */
static bool watch_read(struct e2b_fswatch *fw)
{
	paddock_error err = { 0 };
	char buf[512];

	if (fw->fail_code < 0 && paddock_watch_read(fw->pw, watch_event, fw, &err) < 0)
		fswatch_fail(fw, e2b_connect_code_from_errno(err.code), "%s",
			     err_text(&err, buf, sizeof(buf)));
	if (fw->fail_code < 0)
		return true;
	if (fw->w) {
		fswatch_free(fw, fw->fail_code, fw->fail_msg);
		return false;
	}
	/* a failed polling watcher reads no more; its queue is of no use now */
	if (fw->ev)
		event_del(fw->ev);
	json_array_clear(fw->queue);
	return false;
}

static void watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_fswatch *fw = arg;

	(void)fd;
	(void)what;
	if (fw->w && !fw->w->req) /* the client left (client_gone) */
		return fswatch_free(fw, -1, NULL);
	(void)watch_read(fw); /* a failure is kept, or ended the stream */
}

static void client_gone(struct watcher *w)
{
	struct e2b_fswatch *fw = w->owner;

	/* from inside evhttp's connection close: free from the loop, not from here */
	event_active(fw->ev, EV_READ, 0);
}

static void keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_fswatch *fw = arg;

	(void)fd;
	(void)what;
	if (!fw->w->req)
		return fswatch_free(fw, -1, NULL);
	/* envd sends one when the interval passed without an event */
	if (!fw->sent)
		stream_send(fw, json_pack("{s:{}}", "keepalive"));
	fw->sent = false;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_fswatch *fw = arg;

	(void)fd;
	(void)what;
	fswatch_free(fw, E2B_CONNECT_DEADLINE_EXCEEDED,
		     "the watch reached the deadline the client set (Connect-Timeout-Ms)");
}

static int timer_add(struct event *ev, double s)
{
	struct timeval tv = { .tv_sec = (time_t)s,
			      .tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6) };

	return event_add(ev, &tv);
}

struct watch_args {
	char *path;
	bool recursive, include_entry;
	char why[96]; /* the bad field */
};

static bool watch_args_parse(struct e2b_req *r, json_t *msg, struct watch_args *a)
{
	const char *s = NULL;
	bool network = false;

	*a = (struct watch_args){ 0 };
	if (!bool_field(msg, "recursive", &a->recursive, a->why, sizeof(a->why)) ||
	    !bool_field(msg, "includeEntry", &a->include_entry, a->why, sizeof(a->why)) ||
	    /* no network mounts in a paddock sandbox: nothing to allow */
	    !bool_field(msg, "allowNetworkMounts", &network, a->why, sizeof(a->why)))
		return false;
	if (!e2b_pbjson_string(json_object_get(msg, "path"), &s)) {
		snprintf(a->why, sizeof(a->why), "path: expected a string");
		return false;
	}
	a->path = e2b_path(r, s ? s : "");
	if (!a->path) {
		snprintf(a->why, sizeof(a->why), "path: expected at most %d bytes",
			 PADDOCK_FILES_MAX_PATH);
		return false;
	}
	return true;
}

/* A new watch of a->path, linked, its fd event not yet added; NULL with err filled. */
static struct e2b_fswatch *fswatch_new(struct e2b_req *r, const struct watch_args *a,
				       paddock_error *err)
{
	struct paddock_file_info fi = { 0 };
	struct e2b_fswatch *fw;

	if (box_watches(r->e, r->box) >= FS_WATCHES_PER_BOX) {
		(void)paddock_fail(err, EMFILE,
				   "more than %d watches of this sandbox: remove one first",
				   FS_WATCHES_PER_BOX);
		return NULL;
	}
	fw = calloc(1, sizeof(*fw));
	if (!fw) {
		(void)paddock_fail(err, ENOMEM, "out of memory");
		return NULL;
	}
	fw->e = r->e;
	fw->box = r->box;
	fw->fail_code = -1;
	fw->include_entry = a->include_entry;
	fw->next = r->e->fswatches;
	r->e->fswatches = fw;
	if (paddock_sandbox_watch(r->box->sb, a->path, a->recursive, &fw->pw, err) < 0)
		goto fail;
	/* the cleaned path libpaddock names events with (stat cleans the same way) */
	if (paddock_sandbox_stat(r->box->sb, a->path, &fi, err) < 0)
		goto fail;
	fw->root = fi.path;
	fi.path = NULL;
	paddock_file_info_release(&fi);
	fw->ev =
		event_new(r->d->base, paddock_watch_fd(fw->pw), EV_READ | EV_PERSIST, watch_cb, fw);
	if (!fw->ev) {
		(void)paddock_fail(err, ENOMEM, "out of memory");
		goto fail;
	}
	return fw;
fail:
	fswatch_free(fw, -1, NULL);
	return NULL;
}

static void fs_watch_dir(struct e2b_req *r, json_t *msg)
{
	struct e2b_fswatch *fw = NULL;
	paddock_error err = { 0 };
	struct watch_args a;
	bool started = false;
	char buf[512];

	if (!watch_args_parse(r, msg, &a)) {
		free(a.path);
		return e2b_connect_stream_end(r->req, &started, E2B_CONNECT_INVALID_ARGUMENT, "%s",
					      a.why);
	}
	fw = fswatch_new(r, &a, &err);
	free(a.path);
	if (!fw)
		return e2b_connect_stream_end(r->req, &started,
					      e2b_connect_code_from_errno(err.code), "%s",
					      err_text(&err, buf, sizeof(buf)));
	/* the client going away (closecb, EPOLLRDHUP) ends the watch: daemon.h's watcher */
	fw->w = pdd_watcher_open(r->d, r->req, W_EVENTS, fw, &fw->wlist);
	if (fw->w)
		fw->w->on_gone = client_gone;
	if (fw->w && r->keepalive_s > 0)
		fw->keepalive = event_new(r->d->base, -1, EV_PERSIST, keepalive_cb, fw);
	if (fw->w && r->timeout_s > 0)
		fw->deadline = evtimer_new(r->d->base, deadline_cb, fw);
	if (!fw->w || (r->keepalive_s > 0 && !fw->keepalive) ||
	    (r->timeout_s > 0 && !fw->deadline) || event_add(fw->ev, NULL) < 0 ||
	    (fw->keepalive && timer_add(fw->keepalive, r->keepalive_s) < 0) ||
	    (fw->deadline && timer_add(fw->deadline, r->timeout_s) < 0)) {
		if (!fw->w)
			e2b_connect_stream_end(r->req, &started, E2B_CONNECT_INTERNAL,
					       "out of memory");
		return fswatch_free(fw, E2B_CONNECT_INTERNAL, "out of memory");
	}
	stream_send(fw, json_pack("{s:{}}", "start"));
	fw->sent = false;
}

static void fs_create_watcher(struct e2b_req *r, json_t *msg)
{
	struct e2b_fswatch *fw = NULL;
	paddock_error err = { 0 };
	struct watch_args a;

	if (!watch_args_parse(r, msg, &a)) {
		free(a.path);
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT, "%s", a.why);
	}
	fw = fswatch_new(r, &a, &err);
	free(a.path);
	if (!fw)
		return e2b_reply_paddock_error(r, &err);
	fw->queue = json_array();
	if (!fw->queue || event_add(fw->ev, NULL) < 0) {
		fswatch_free(fw, -1, NULL);
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INTERNAL, "out of memory");
	}
	snprintf(fw->id, sizeof(fw->id), "w%" PRIu64, ++r->e->next_watch);
	e2b_connect_reply(r->req, json_pack("{s:s}", "watcherId", fw->id));
}

/* The polling watcher a request names, or NULL with not_found answered. */
static struct e2b_fswatch *find_watcher(struct e2b_req *r, json_t *msg)
{
	const char *id = NULL;

	if (!e2b_pbjson_string(json_object_get(msg, "watcherId"), &id)) {
		e2b_connect_reply_error(r->req, E2B_CONNECT_INVALID_ARGUMENT,
					"watcherId: expected a string");
		return NULL;
	}
	/* SECURITY: another sandbox's watcher is as absent as one that never was */
	for (struct e2b_fswatch *fw = r->e->fswatches; fw && id; fw = fw->next)
		if (fw->box == r->box && fw->id[0] && strcmp(fw->id, id) == 0)
			return fw;
	e2b_connect_reply_error(r->req, E2B_CONNECT_NOT_FOUND, "watcher with id '%.32s' not found",
				id ? id : "");
	return NULL;
}

static void fs_get_watcher_events(struct e2b_req *r, json_t *msg)
{
	struct e2b_fswatch *fw = find_watcher(r, msg);
	json_t *events;

	if (!fw)
		return;
	/* what the kernel has queued and the loop has not read yet belongs to this answer */
	for (int i = 0; i < FS_DRAIN_ROUNDS && fw->fail_code < 0; i++) {
		size_t before = json_array_size(fw->queue);

		if (!watch_read(fw) || json_array_size(fw->queue) == before)
			break;
	}
	/* envd: once the watcher failed, every read reports it */
	if (fw->fail_code >= 0)
		return e2b_connect_reply_error(r->req, (enum e2b_connect_code)fw->fail_code, "%s",
					       fw->fail_msg);
	events = fw->queue;
	fw->queue = json_array();
	if (!fw->queue) {
		fw->queue = events;
		return e2b_connect_reply_error(r->req, E2B_CONNECT_INTERNAL, "out of memory");
	}
	e2b_connect_reply(r->req, json_pack("{s:o}", "events", events));
}

static void fs_remove_watcher(struct e2b_req *r, json_t *msg)
{
	struct e2b_fswatch *fw = find_watcher(r, msg);

	if (!fw)
		return;
	fswatch_free(fw, -1, NULL);
	e2b_connect_reply(r->req, json_object());
}

void e2b_fs_release(struct e2b *e, struct box *b)
{
	struct e2b_fswatch **pp = &e->fswatches;

	while (*pp) {
		struct e2b_fswatch *fw = *pp;

		if (fw->box != b) {
			pp = &fw->next;
			continue;
		}
		/* unlinks fw: *pp is the next one */
		fswatch_free(fw, E2B_CONNECT_UNAVAILABLE, "the sandbox was removed");
	}
}

/* ---- dispatch ------------------------------------------------------------------------- */

void e2b_filesystem(struct e2b_req *r, const char *method, json_t *msg, bool streaming)
{
	static const struct {
		const char *name;
		void (*fn)(struct e2b_req *r, json_t *msg);
	} unary[] = {
		{ "Stat", fs_stat },
		{ "MakeDir", fs_make_dir },
		{ "Move", fs_move },
		{ "ListDir", fs_list_dir },
		{ "Remove", fs_remove },
		{ "CreateWatcher", fs_create_watcher },
		{ "GetWatcherEvents", fs_get_watcher_events },
		{ "RemoveWatcher", fs_remove_watcher },
	};

	if (streaming) {
		bool started = false;

		if (strcmp(method, "WatchDir") == 0)
			return fs_watch_dir(r, msg);
		return e2b_connect_stream_end(r->req, &started, E2B_CONNECT_UNIMPLEMENTED,
					      "filesystem.Filesystem/%.64s is not a server stream",
					      method);
	}
	for (size_t i = 0; i < sizeof(unary) / sizeof(unary[0]); i++)
		if (strcmp(method, unary[i].name) == 0)
			return unary[i].fn(r, msg);
	if (strcmp(method, "WatchDir") == 0)
		return e2b_connect_reply_error(r->req, E2B_CONNECT_UNIMPLEMENTED,
					       "WatchDir is a server stream: use Content-Type "
					       "application/connect+json");
	e2b_connect_reply_error(r->req, E2B_CONNECT_UNIMPLEMENTED,
				"filesystem.Filesystem/%.64s is not implemented", method);
}
