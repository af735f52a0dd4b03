/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file tools (docs/mcp.md): write_file, read_file (text when the bytes are UTF-8, else
 * base64) and list_files. Relative paths are under /workspace; the backend resolves them
 * inside the sandbox.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "tools-internal.h"

#define MAX_LIST_ENTRIES 1000

/* ---- files ------------------------------------------------------------------------------ */

void tool_write_file(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *content = json_object_get(args, "content");
	const char *encoding = json_string_value(json_object_get(args, "encoding"));
	bool exe = json_is_true(json_object_get(args, "executable"));
	paddock_error err = { 0 };
	char *path = NULL, *decoded = NULL;
	const char *data = json_string_value(content);
	size_t len = json_string_length(content);
	struct sandbox *sb;

	if (encoding && !strcmp(encoding, "base64")) {
		int r = paddock_base64_decode(data, len, &decoded, &len);

		if (r < 0) {
			paddock_fail_field(
				&err, EINVAL, "content",
				r == -ENOMEM ? "out of memory"
					     : "not valid base64 (standard alphabet, '=' padding)");
			return mcp_call_error(c, &err);
		}
		data = decoded;
	}
	path = tools_sandbox_path(json_string_value(json_object_get(args, "path")));
	if (!path)
		paddock_fail(&err, ENOMEM, "path");
	if (path && tools_get_sandbox(t, args, &sb, &err) >= 0 &&
	    t->backend->ops->write_file(t->backend, sb->id, path, data, len, exe ? 0755 : 0644,
					&err) >= 0)
		mcp_call_result(c, json_pack("{s:s, s:s, s:I}", "sandbox_id", sb->id, "path", path,
					     "size", (json_int_t)len));
	else
		mcp_call_error(c, &err);
	free(path);
	free(decoded);
}

void tool_read_file(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *off = json_object_get(args, "offset"), *max = json_object_get(args, "max_bytes");
	uint64_t offset = off ? (uint64_t)json_number_value(off) : 0, size = 0;
	size_t limit = t->policy->max_read, len = 0, keep;
	paddock_error err = { 0 };
	char *path = NULL, *data = NULL;
	json_t *text = NULL, *out;
	struct sandbox *sb;

	if (max && json_number_value(max) < (double)limit)
		limit = (size_t)json_number_value(max);
	path = tools_sandbox_path(json_string_value(json_object_get(args, "path")));
	if (!path) {
		(void)tools_fail_oom(c);
		return;
	}
	if (tools_get_sandbox(t, args, &sb, &err) < 0 ||
	    t->backend->ops->read_file(t->backend, sb->id, path, offset, limit, &data, &len, &size,
				       &err) < 0) {
		mcp_call_error(c, &err);
		goto out;
	}
	/* text when the bytes are UTF-8; a part may end inside a character: keep that for next */
	keep = len;
	for (int cut = 0; cut <= 3 && cut <= (int)len && !text; cut++) {
		if (cut && offset + len >= size)
			break; /* the whole rest of the file: it is not text */
		keep = len - (size_t)cut;
		text = json_stringn(data, keep);
	}
	if (!text) {
		char *b64 = paddock_base64_encode(data, len);

		keep = len;
		text = b64 ? json_string(b64) : NULL;
		free(b64);
		out = json_pack("{s:s}", "encoding", "base64");
	} else {
		out = json_pack("{s:s}", "encoding", "utf-8");
	}
	if (!text || !out ||
	    json_object_update_new(
		    out, json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:b}", "sandbox_id", sb->id,
				   "path", path, "size", (json_int_t)size, "offset",
				   (json_int_t)offset, "next_offset", (json_int_t)(offset + keep),
				   "content", text, "truncated", offset + keep < size)) < 0) {
		json_decref(out);
		(void)tools_fail_oom(c);
		goto out;
	}
	mcp_call_result(c, out);
out:
	free(path);
	free(data);
}

void tool_list_files(struct mcp_tools *t, struct mcp_call *c, json_t *args)
{
	json_t *depth = json_object_get(args, "depth"), *path_arg = json_object_get(args, "path");
	paddock_error err = { 0 };
	json_t *entries = NULL;
	struct sandbox *sb;
	char *path;
	int r;

	path = tools_sandbox_path(path_arg ? json_string_value(path_arg) : WORKSPACE);
	if (!path) {
		(void)tools_fail_oom(c);
		return;
	}
	r = tools_get_sandbox(t, args, &sb, &err);
	if (r >= 0)
		r = t->backend->ops->list_dir(t->backend, sb->id, path,
					      depth ? (unsigned)json_number_value(depth) : 1,
					      MAX_LIST_ENTRIES, &entries, &err);
	if (r == -E2BIG)
		paddock_fail_field(
			&err, E2BIG, "depth",
			"more than %d entries below '%s': list a subdirectory or less deep",
			MAX_LIST_ENTRIES, PADDOCK_ESC(path));
	if (r < 0)
		mcp_call_error(c, &err);
	else
		mcp_call_result(c, json_pack("{s:s, s:s, s:o}", "sandbox_id", sb->id, "path", path,
					     "entries", entries));
	free(path);
}
