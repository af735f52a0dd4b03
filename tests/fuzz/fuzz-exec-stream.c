/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the client library's reading of paddockd's exec stream events (exec-stream.h) with
 * any lines paddockd could relay: each line is an event or -EPROTO, an output event's bytes
 * are where it says and NUL-terminated, and nothing leaks on either path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec-stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		paddock_error err = { 0 };
		struct exec_event ev;
		int r = exec_event_parse(p, len, &ev, &err);

		if (r < 0 && r != -EPROTO && r != -ENOMEM)
			abort();
		if (r < 0 && err.code != -r)
			abort();
		if (r == 0) {
			if ((int)ev.type < 0 || ev.type >= _EXEC_EVENT_MAX)
				abort();
			if ((ev.type == EXEC_EVENT_STDOUT || ev.type == EXEC_EVENT_STDERR) &&
			    (!ev.data || ev.data[ev.len] != '\0'))
				abort();
			if (ev.type == EXEC_EVENT_EXIT && ev.result && !json_is_object(ev.result))
				abort();
			exec_event_release(&ev);
		}
		p += len + 1;
	}
	return 0;
}
