/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The events of paddockd's exec streams (docs/api.md): POST .../exec with stream:true and
 * GET .../processes/{pid}/output answer NDJSON, one event a line: {"type":"start","pid"},
 * {"type":"stdout"|"stderr","data"|"data_b64"[,"offset"]}, {"type":"exit","result"}. This
 * turns a line into a typed event, the output bytes decoded, so that every client of paddockd
 * (`paddock exec`, `paddock mcp --connect`) reads them one way.
 *
 * Trust: the output is the sandbox's, relayed: a line is bounded by the caller (max_line),
 * the bytes are handed on as they are (NUL included, never interpreted), and a line that is
 * not an event, or output without valid data, is -EPROTO, never a guess. What a field of an
 * event means past that (a missing result, an offset) is the caller's to judge.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "paddock/paddock.h"
#include "client.h"

enum exec_event_type {
	/* 0 and 1: an event of these indexes a pair of streams, stdout first */
	EXEC_EVENT_STDOUT,
	EXEC_EVENT_STDERR,
	EXEC_EVENT_START,
	EXEC_EVENT_EXIT,
	EXEC_EVENT_OTHER, /* a type newer than us: nothing a client must act on */
	_EXEC_EVENT_MAX,
};

struct exec_event {
	enum exec_event_type type;
	int64_t pid;	  /* START: the command's pid in the sandbox; -1 when not given */
	const char *data; /* STDOUT, STDERR: the bytes, any of them (NUL too), NUL-terminated */
	size_t len;
	int64_t offset; /* STDOUT, STDERR: where the bytes are in their stream; -1 when not given */
	json_t *result; /* EXIT: the result (docs/report.md); NULL when it is not an object */
	/* private: what the fields above point into */
	json_t *json;
	char *decoded;
};

/*
 * Parses one line (without its "\n") into *ret_ev, to be released with exec_event_release();
 * the event's pointers are valid until then. -EPROTO when the line is not a JSON object with
 * a string "type", or is output without a string "data" or a valid base64 "data_b64";
 * -ENOMEM. *ret_ev is written only on success.
 */
int exec_event_parse(const char *line, size_t len, struct exec_event *ret_ev, paddock_error *err);
void exec_event_release(struct exec_event *ev);

/*
 * The next event of a stream: http_read_line() (lines longer than max_line are -EMSGSIZE)
 * and exec_event_parse(); empty lines are skipped. 1 with *ret_ev filled (release it), 0 at
 * the end of the stream, -EAGAIN in non-blocking mode when no whole line is there yet, or
 * -errno.
 */
int exec_stream_next(struct http_conn *c, size_t max_line, struct exec_event *ret_ev,
		     paddock_error *err);
