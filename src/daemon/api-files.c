/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files of a sandbox (docs/api.md "Files"). Every path goes to libpaddock's file API, which
 * resolves it beneath the sandbox's root fd (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
 * as the sandbox user: a symlink the agent planted never reaches a host file.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "paddock/files.h"

#define LIST_MAX  10000
#define DEPTH_MAX 16

static json_t *entry_json(const struct paddock_file_info *f)
{
	char mode[8];

	snprintf(mode, sizeof(mode), "%04o", f->mode & 07777);
	return json_pack("{s:o,s:o,s:s,s:I,s:s,s:I,s:I,s:o,s:o}", "name", svc_json_text(f->name),
			 "path", svc_json_text(f->path), "type",
			 paddock_file_type_to_string(f->type), "size", (json_int_t)f->size, "mode",
			 mode, "uid", (json_int_t)f->uid, "gid", (json_int_t)f->gid, "mtime",
			 svc_time_json(f->mtime_ns / 1000000), "symlink_target",
			 svc_json_text(f->symlink_target));
}

static bool parse_mode(struct request *r, const char *s, unsigned def, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (!s) {
		*ret = def;
		return true;
	}
	v = strtoul(s, &end, 8);
	if (!*s || *end || v > 07777) {
		pdd_reply_error(r, 400, "invalid", "mode",
				"expected octal permission bits such as 0644");
		return false;
	}
	*ret = (unsigned)v;
	return true;
}

static void reply_entry(struct request *r, struct box *b, const char *path, int status)
{
	struct paddock_file_info f = { 0 };
	paddock_error err = { 0 };

	if (paddock_sandbox_stat(b->sb, path, &f, &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	pdd_reply_json(r, status, entry_json(&f));
	paddock_file_info_release(&f);
}

/* "bytes=a-b", "bytes=a-", "bytes=-n" of a file of `size`: 1 ok, 0 absent, -1 unsatisfiable */
static int parse_range(const char *h, uint64_t size, uint64_t *ret_off, uint64_t *ret_len)
{
	unsigned long long a = 0, b = 0;
	char *end;

	if (!h)
		return 0;
	if (strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return -1;
	h += 6;
	if (*h == '-') {
		b = strtoull(h + 1, &end, 10);
		if (*end || b == 0)
			return -1;
		*ret_off = b >= size ? 0 : size - b;
		*ret_len = size - *ret_off;
		return size ? 1 : -1;
	}
	a = strtoull(h, &end, 10);
	if (*end != '-' || a >= size)
		return -1;
	if (end[1]) {
		b = strtoull(end + 1, &end, 10);
		if (*end || b < a)
			return -1;
		if (b >= size)
			b = size - 1;
	} else {
		b = size - 1;
	}
	*ret_off = a;
	*ret_len = b - a + 1;
	return 1;
}

static void read_file(struct request *r, struct box *b, const char *path)
{
	const char *range = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Range");
	paddock_error err = { 0 };
	uint64_t size = 0, off = 0, len;
	struct evbuffer *out;
	char hdr[96];
	int fd, rr;

	if (paddock_sandbox_open_read(b->sb, path, 0, &fd, &size, &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	len = size;
	rr = parse_range(range, size, &off, &len);
	if (rr < 0) {
		close(fd);
		snprintf(hdr, sizeof(hdr), "bytes */%" PRIu64, size);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Range", hdr);
		return pdd_reply_error(r, 416, "invalid", "Range",
				       "expected a range within %" PRIu64 " bytes", size);
	}
	out = evbuffer_new();
	/* the file's pages go out by sendfile, not through our memory */
	if (!out || (len > 0 && evbuffer_add_file(out, fd, (ev_off_t)off, (ev_off_t)len) < 0)) {
		if (out)
			evbuffer_free(out);
		close(fd);
		return pdd_reply_error(r, 500, "internal", NULL, "read '%s'", path);
	}
	if (len == 0)
		close(fd);
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
			  "application/octet-stream");
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Accept-Ranges", "bytes");
	if (rr > 0) {
		snprintf(hdr, sizeof(hdr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
			 off + len - 1, size);
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Range", hdr);
	}
	r->d->http->http_by_class[2]++;
	evhttp_send_reply(r->req, rr > 0 ? 206 : 200, rr > 0 ? "Partial Content" : "OK", out);
	evbuffer_free(out);
}

static void write_file(struct request *r, struct box *b, const char *path)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	paddock_file_writer *w = NULL;
	paddock_error err = { 0 };
	unsigned mode;
	int fd;

	if (evbuffer_get_length(in) > r->d->http->max_upload)
		return pdd_reply_error(r, 413, "too_large", "max_upload",
				       "uploads are limited to %" PRIu64 " bytes",
				       r->d->http->max_upload);
	if (!parse_mode(r, pdd_query(r, "mode"), 0644, &mode))
		return;
	if (paddock_sandbox_open_write(b->sb, path, mode, true, &w, &err) < 0)
		return pdd_reply_paddock_error(r, &err);
	fd = paddock_file_writer_fd(w);
	while (evbuffer_get_length(in) > 0) {
		int n = evbuffer_write(in, fd);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			paddock_file_writer_free(w);
			if (e == ENOSPC || e == EFBIG || e == EDQUOT)
				return pdd_reply_error(r, 413, "too_large", "disk",
						       "the sandbox's disk is full");
			return pdd_reply_error(r, 500, "internal", NULL, "write '%s': %s", path,
					       strerror(e));
		}
	}
	if (paddock_file_writer_commit(w, &err) < 0) {
		paddock_file_writer_free(w);
		return pdd_reply_paddock_error(r, &err);
	}
	paddock_file_writer_free(w);
	reply_entry(r, b, path, 201);
}

static void list(struct request *r, struct box *b, const char *path)
{
	const char *ds = pdd_query(r, "depth");
	struct paddock_file_info *infos = NULL;
	paddock_error err = { 0 };
	size_t n = 0;
	long depth = 1;
	char *end = NULL;
	json_t *a;

	if (ds) {
		depth = strtol(ds, &end, 10);
		if (*end || depth < 1 || depth > DEPTH_MAX)
			return pdd_reply_error(r, 400, "invalid", "depth",
					       "expected a depth from 1 to %d", DEPTH_MAX);
	}
	if (paddock_sandbox_list_dir(b->sb, path, (unsigned)depth, LIST_MAX, &infos, &n, &err) <
	    0) {
		if (err.code == E2BIG)
			return pdd_reply_error(r, 413, "too_large", "depth",
					       "more than %d entries: list a smaller tree",
					       LIST_MAX);
		return pdd_reply_paddock_error(r, &err);
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, entry_json(&infos[i]));
	paddock_file_infos_free(infos, n);
	pdd_reply_json(r, 200, json_pack("{s:o}", "entries", a));
}

static void mkdir_(struct request *r, struct box *b)
{
	static const char *const fields[] = { "path", "parents", "mode", NULL };
	json_t *body = pdd_body_object(r, false), *path, *parents, *mode;
	paddock_error err = { 0 };
	unsigned m = 0755;

	if (!body)
		return;
	if (!pdd_check_fields(r, body, fields))
		goto out;
	path = json_object_get(body, "path");
	parents = json_object_get(body, "parents");
	mode = json_object_get(body, "mode");
	if (!json_is_string(path)) {
		pdd_reply_error(r, 400, "invalid", "path", "expected a path");
		goto out;
	}
	if (parents && !json_is_boolean(parents)) {
		pdd_reply_error(r, 400, "invalid", "parents", "expected true or false");
		goto out;
	}
	if (mode && (!json_is_string(mode) || !parse_mode(r, json_string_value(mode), 0755, &m))) {
		if (!json_is_string(mode))
			pdd_reply_error(r, 400, "invalid", "mode",
					"expected a string such as \"0755\"");
		goto out;
	}
	if (paddock_sandbox_mkdir(b->sb, json_string_value(path), m,
				  !parents || json_is_true(parents), &err) < 0) {
		pdd_reply_paddock_error(r, &err);
		goto out;
	}
	reply_entry(r, b, json_string_value(path), 201);
out:
	json_decref(body);
}

static void move(struct request *r, struct box *b)
{
	static const char *const fields[] = { "from", "to", "overwrite", NULL };
	json_t *body = pdd_body_object(r, false), *from, *to, *ow;
	paddock_error err = { 0 };

	if (!body)
		return;
	if (!pdd_check_fields(r, body, fields))
		goto out;
	from = json_object_get(body, "from");
	to = json_object_get(body, "to");
	ow = json_object_get(body, "overwrite");
	if (!json_is_string(from) || !json_is_string(to)) {
		pdd_reply_error(r, 400, "invalid", json_is_string(from) ? "to" : "from",
				"expected a path");
		goto out;
	}
	if (ow && !json_is_boolean(ow)) {
		pdd_reply_error(r, 400, "invalid", "overwrite", "expected true or false");
		goto out;
	}
	if (paddock_sandbox_move(b->sb, json_string_value(from), json_string_value(to),
				 json_is_true(ow), &err) < 0) {
		pdd_reply_paddock_error(r, &err);
		goto out;
	}
	reply_entry(r, b, json_string_value(to), 200);
out:
	json_decref(body);
}

/* ---- watch ------------------------------------------------------------------------------ */

struct file_watch {
	paddock_watch *pw;
	struct event *ev;
	struct watcher *w;
	struct watcher *list; /* owns w */
	struct box *box;
	struct file_watch *next;
};

static void watch_free(struct file_watch *fw)
{
	for (struct file_watch **pp = &fw->box->file_watches; *pp; pp = &(*pp)->next)
		if (*pp == fw) {
			*pp = fw->next;
			break;
		}
	if (fw->w)
		fw->w->on_gone = NULL;
	if (fw->ev)
		event_free(fw->ev);
	paddock_watch_free(fw->pw);
	if (fw->w) {
		pdd_stream_end(fw->w);
		pdd_watcher_free(fw->w, &fw->list);
	}
	free(fw);
}

static void watch_event(const struct paddock_watch_event *ev, void *userdata)
{
	struct file_watch *fw = userdata;

	pdd_stream_line(fw->w, json_pack("{s:s,s:o,s:b}", "type", ev->type, "path",
					 svc_json_text(ev->path), "is_dir", ev->is_dir));
}

static void watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct file_watch *fw = arg;

	(void)fd;
	(void)what;
	if (!fw->w->req || paddock_watch_read(fw->pw, watch_event, fw, NULL) < 0)
		watch_free(fw);
}

static void watch_gone(struct watcher *w)
{
	struct file_watch *fw = w->owner;

	/* the connection is going: free from the loop, not from inside evhttp's callback */
	event_active(fw->ev, EV_READ, 0);
}

static void watch(struct request *r, struct box *b, const char *path)
{
	const char *rec = pdd_query(r, "recursive");
	struct file_watch *fw = calloc(1, sizeof(*fw));
	paddock_error err = { 0 };

	if (!fw)
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	fw->box = b;
	fw->next = b->file_watches;
	b->file_watches = fw;
	if (paddock_sandbox_watch(b->sb, path, rec && strcmp(rec, "1") == 0, &fw->pw, &err) < 0) {
		watch_free(fw);
		return pdd_reply_paddock_error(r, &err);
	}
	fw->ev =
		event_new(r->d->base, paddock_watch_fd(fw->pw), EV_READ | EV_PERSIST, watch_cb, fw);
	fw->w = pdd_watcher_new(r, W_EVENTS, fw, &fw->list);
	if (!fw->ev || !fw->w || event_add(fw->ev, NULL) < 0) {
		watch_free(fw);
		return pdd_reply_error(r, 500, "internal", NULL, "out of memory");
	}
	fw->w->on_gone = watch_gone;
	pdd_stream_start(fw->w, "application/x-ndjson");
}

void pdd_files_release(struct box *b)
{
	while (b->file_watches)
		watch_free(b->file_watches);
}

void pdd_api_files(struct request *r, struct box *b)
{
	const char *path = pdd_query(r, "path");
	const char *op = r->n_seg == 5 ? r->seg[4] : NULL;

	if (r->n_seg > 5)
		return pdd_reply_error(r, 404, "not_found", "path", "no such route");
	if (!b->sb || !paddock_sandbox_running(b->sb))
		return pdd_reply_error(r, 409, "conflict", "id", "the sandbox is not running");
	if (op && (strcmp(op, "mkdir") == 0 || strcmp(op, "move") == 0)) {
		if (r->method != EVHTTP_REQ_POST)
			return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected POST");
		return op[0] == 'm' && op[1] == 'k' ? mkdir_(r, b) : move(r, b);
	}
	if (!path || !path[0])
		return pdd_reply_error(r, 400, "invalid", "path",
				       "expected ?path=<path in the sandbox>");
	if (!op) {
		switch (r->method) {
		case EVHTTP_REQ_GET:
			return read_file(r, b, path);
		case EVHTTP_REQ_PUT:
			return write_file(r, b, path);
		case EVHTTP_REQ_DELETE: {
			const char *rec = pdd_query(r, "recursive");
			paddock_error err = { 0 };

			if (paddock_sandbox_remove(b->sb, path, rec && strcmp(rec, "1") == 0,
						   &err) < 0)
				return pdd_reply_paddock_error(r, &err);
			return pdd_reply_empty(r, 204);
		}
		default:
			return pdd_reply_error(r, 405, "method_not_allowed", NULL,
					       "expected GET, PUT or DELETE");
		}
	}
	if (r->method != EVHTTP_REQ_GET)
		return pdd_reply_error(r, 405, "method_not_allowed", NULL, "expected GET");
	if (strcmp(op, "stat") == 0)
		return reply_entry(r, b, path, 200);
	if (strcmp(op, "list") == 0)
		return list(r, b, path);
	if (strcmp(op, "watch") == 0)
		return watch(r, b, path);
	pdd_reply_error(r, 404, "not_found", "path", "no such route");
}
