/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paddockd's exec stream events, decoded once for every client (exec-stream.h). A line is
 * parsed as hostile: bounded before it gets here, JSON with NULs allowed (output may hold
 * them, escaped), and anything that is not the shape of an event is refused.
 */
#include "exec-stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(paddock_error *err, int code, const char *msg)
{
	if (err) {
		err->code = code;
		err->field[0] = '\0';
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return -code;
}

static enum exec_event_type type_from_string(const char *type)
{
	static const char *const names[_EXEC_EVENT_MAX] = {
		[EXEC_EVENT_STDOUT] = "stdout",
		[EXEC_EVENT_STDERR] = "stderr",
		[EXEC_EVENT_START] = "start",
		[EXEC_EVENT_EXIT] = "exit",
	};

	for (int t = 0; t < _EXEC_EVENT_MAX; t++)
		if (names[t] && strcmp(type, names[t]) == 0)
			return (enum exec_event_type)t;
	return EXEC_EVENT_OTHER;
}

/* An integer member that is not negative, or -1. */
static int64_t count_or_none(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
								: -1;
}

/* The output's bytes: "data" (valid UTF-8 as it is) or "data_b64" (anything else). */
static int output_bytes(struct exec_event *ev, paddock_error *err)
{
	json_t *d = json_object_get(ev->json, "data"), *b = json_object_get(ev->json, "data_b64");
	int r;

	if (json_is_string(d)) {
		ev->data = json_string_value(d);
		ev->len = json_string_length(d);
		return 0;
	}
	if (!json_is_string(b))
		return fail(err, EPROTO, "an output event without data");
	r = paddock_base64_decode(json_string_value(b), json_string_length(b), &ev->decoded,
				  &ev->len);
	if (r == -ENOMEM)
		return fail(err, ENOMEM, "out of memory");
	if (r < 0)
		return fail(err, EPROTO, "an output event whose data_b64 is not base64");
	ev->data = ev->decoded;
	return 0;
}

int exec_event_parse(const char *line, size_t len, struct exec_event *ret_ev, paddock_error *err)
{
	struct exec_event ev = { .pid = -1, .offset = -1 };
	const char *type;
	int r;

	ev.json = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	type = json_string_value(json_object_get(ev.json, "type"));
	if (!json_is_object(ev.json) || !type) {
		json_decref(ev.json);
		return fail(err, EPROTO,
			    "a line of the stream is not an event (a JSON object with a \"type\")");
	}
	ev.type = type_from_string(type);
	switch (ev.type) {
	case EXEC_EVENT_STDOUT:
	case EXEC_EVENT_STDERR:
		r = output_bytes(&ev, err);
		if (r < 0) {
			exec_event_release(&ev);
			return r;
		}
		ev.offset = count_or_none(ev.json, "offset");
		break;
	case EXEC_EVENT_START:
		ev.pid = count_or_none(ev.json, "pid");
		break;
	case EXEC_EVENT_EXIT:
		ev.result = json_object_get(ev.json, "result");
		if (!json_is_object(ev.result))
			ev.result = NULL;
		break;
	case EXEC_EVENT_OTHER:
	case _EXEC_EVENT_MAX:
		break;
	}
	*ret_ev = ev;
	return 0;
}

void exec_event_release(struct exec_event *ev)
{
	json_decref(ev->json);
	free(ev->decoded);
	*ev = (struct exec_event){ .pid = -1, .offset = -1 };
}

int exec_stream_next(struct http_conn *c, size_t max_line, struct exec_event *ret_ev,
		     paddock_error *err)
{
	for (;;) {
		const char *line;
		size_t len;
		int r = http_read_line(c, max_line, &line, &len, err);

		if (r <= 0)
			return r;
		if (len == 0)
			continue; /* an empty line carries nothing */
		r = exec_event_parse(line, len, ret_ev, err);
		return r < 0 ? r : 1;
	}
}
