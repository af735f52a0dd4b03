/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files through paddockd (backend-daemon.c says how the backend works): a Range request for
 * read_file (its size from Content-Range), a PUT for write_file, files/list for list_dir.
 * Names and entries come from the sandbox: each entry is checked before it is passed on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "paddock/paddock.h"
#include "backend.h"
#include "backend-daemon-internal.h"
#include "client.h"
#include "paddock/cleanup.h"

#define LIST_ANSWER_MAX (64u << 20) /* files/list: up to 10 000 entries */
#define READ_MAX	(64u << 20) /* bytes of a file one read_file() returns */

/* ---- files -------------------------------------------------------------------------------- */

/* The size after the '/' of "bytes A-B/SIZE" or "bytes *" "/SIZE". */
static int parse_content_range(const char *s, uint64_t *ret)
{
	const char *slash = strrchr(s, '/');
	uint64_t n = 0;

	if (strncmp(s, "bytes ", 6) != 0 || !slash || !slash[1])
		return -EPROTO;
	for (const char *p = slash + 1; *p; p++) {
		if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10)
			return -EPROTO;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*ret = n;
	return 0;
}

/* Reads `max` bytes of the body at most (what follows is left unread), after skipping `skip`. */
static int read_some(struct http_conn *c, uint64_t skip, size_t max, char **ret_data,
		     size_t *ret_len, paddock_error *err)
{
	_cleanup_free_ char *data = malloc(max + 1);
	char scratch[16384];
	size_t len = 0;

	if (!data)
		return paddock_fail(err, ENOMEM, "out of memory");
	while (len < max) {
		bool skipping = skip > 0;
		size_t want = skipping ? (skip < sizeof(scratch) ? (size_t)skip : sizeof(scratch))
				       : max - len;
		ssize_t n = http_read_body(c, skipping ? scratch : data + len, want, err);

		if (n < 0)
			return dbackend_io_error((int)n, err);
		if (n == 0)
			break;
		if (skipping)
			skip -= (uint64_t)n;
		else
			len += (size_t)n;
	}
	data[len] = '\0';
	*ret_data = TAKE_PTR(data);
	*ret_len = len;
	return 0;
}

int d_read_file(struct mcp_backend *mb, const char *id, const char *path, uint64_t offset,
		size_t max, char **ret_data, size_t *ret_len, uint64_t *ret_size,
		paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_response resp;
	char range[64];
	uint64_t size, last;
	int r;

	if (!s)
		return -ENOENT;
	if (max > READ_MAX)
		max = READ_MAX; /* fewer bytes than asked is a short read, which callers expect */
	/* at least one byte is asked for, so the answer also says the size when max is 0 */
	last = max > 0 && offset + (max - 1) >= offset ? offset + (max - 1) : offset;
	snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, offset, last);
	r = dopen(s->b, &(struct http_request){ .method = "GET", .body_fd = -1, .range = range },
		  SEGS(s->id, "files"), QUERY("path", path), &c, &resp, err);
	if (r < 0 && resp.status == 416 && parse_content_range(resp.content_range, &size) == 0) {
		/* from at or past the end (an empty file too): nothing to read */
		char *empty = strdup("");

		if (!empty)
			return paddock_fail(err, ENOMEM, "out of memory");
		paddock_error_clear(err);
		*ret_data = empty;
		*ret_len = 0;
		*ret_size = size;
		return 0;
	}
	if (r < 0)
		return r;
	if (resp.status == 206) {
		if (parse_content_range(resp.content_range, &size) < 0)
			return paddock_fail(err, EPROTO,
					    "paddockd's answer has no valid Content-Range");
		r = read_some(c, 0, max, ret_data, ret_len, err);
	} else {
		/* the whole file: a server that ignored the range */
		if (resp.content_length < 0)
			return paddock_fail(err, EPROTO, "paddockd's answer has no Content-Length");
		size = (uint64_t)resp.content_length;
		r = read_some(c, offset, max, ret_data, ret_len, err);
	}
	if (r < 0)
		return r;
	*ret_size = size;
	return 0;
}

int d_write_file(struct mcp_backend *mb, const char *id, const char *path, const void *data,
		 size_t len, unsigned mode, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_response resp;
	char m[8];

	if (!s)
		return -ENOENT;
	snprintf(m, sizeof(m), "%04o", mode & 07777);
	struct http_request req = { .method = "PUT",
				    .content_type = "application/octet-stream",
				    .body = len ? data : "",
				    .body_len = len,
				    .body_fd = -1,
				    /* a refusal (413) before a large body is sent in vain */
				    .expect_continue = len > 65536 };
	/* 201 and the entry, which we do not need */
	return dopen(s->b, &req, SEGS(s->id, "files"), QUERY("path", path, "mode", m), &c, &resp,
		     err);
}

/* paddockd's entry, checked, as backend.h's: without uid and gid, mtime never null. */
static json_t *entry_from(json_t *e)
{
	json_t *size = json_object_get(e, "size"), *target = json_object_get(e, "symlink_target");
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *path = json_string_value(json_object_get(e, "path"));
	const char *type = json_string_value(json_object_get(e, "type"));
	const char *mode = json_string_value(json_object_get(e, "mode"));
	const char *mtime = json_string_value(json_object_get(e, "mtime"));
	char epoch[32];

	if (!name || !path || !type || !mode || !json_is_integer(size) ||
	    (target && !json_is_string(target) && !json_is_null(target)))
		return NULL;
	if (strcmp(type, "file") && strcmp(type, "dir") && strcmp(type, "symlink"))
		type = "other";
	return json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:O}", "path", path, "name", name, "type", type,
			 "size", json_integer_value(size), "mode", mode, "mtime",
			 mtime ? mtime : mcp_rfc3339(0, epoch, sizeof(epoch)), "symlink_target",
			 target ? target : json_null());
}

int d_list_dir(struct mcp_backend *mb, const char *id, const char *path, unsigned depth,
	       size_t max_entries, json_t **ret_entries, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_json_ json_t *answer = NULL, *out = NULL;
	char d[16];
	json_t *entries, *e;
	size_t i;
	int r;

	if (!s)
		return -ENOENT;
	snprintf(d, sizeof(d), "%u", depth);
	r = dcall(s->b, "GET", SEGS(s->id, "files", "list"), QUERY("path", path, "depth", d), NULL,
		  LIST_ANSWER_MAX, &answer, err);
	if (r == -EFBIG) /* over paddockd's 10 000 entries (413), or over our bound */
		return paddock_fail_field(err, E2BIG, "depth",
					  "more entries below '%s' than can be "
					  "listed: list a smaller tree",
					  PADDOCK_ESC(path));
	if (r < 0)
		return r;
	entries = json_object_get(answer, "entries");
	if (!json_is_array(entries))
		return paddock_fail(err, EPROTO, "paddockd's answer has no entries");
	if (json_array_size(entries) > max_entries)
		return paddock_fail_field(err, E2BIG, "depth", "more than %zu entries below '%s'",
					  max_entries, PADDOCK_ESC(path));
	out = json_array();
	if (!out)
		return paddock_fail(err, ENOMEM, "out of memory");
	json_array_foreach(entries, i, e)
	{
		json_t *mine = entry_from(e);

		if (!mine)
			return paddock_fail(err, EPROTO, "paddockd sent a malformed entry");
		if (json_array_append_new(out, mine) < 0)
			return paddock_fail(err, ENOMEM, "out of memory");
	}
	*ret_entries = TAKE_PTR(out);
	return 0;
}
