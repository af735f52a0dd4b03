/* SPDX-License-Identifier: Apache-2.0 */
#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"

static const char *const level_names[_PADDOCK_LEVEL_MAX] = {
	[PADDOCK_LEVEL_DEBUG] = "debug",
	[PADDOCK_LEVEL_INFO] = "info",
	[PADDOCK_LEVEL_WARN] = "warn",
	[PADDOCK_LEVEL_ERROR] = "error",
};

const char *paddock_event_level_to_string(enum paddock_event_level level)
{
	if ((unsigned)level >= _PADDOCK_LEVEL_MAX)
		return NULL;
	return level_names[level];
}

static void format_ts(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ",
		 (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
		 (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
		 (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
		 (unsigned)(ts.tv_nsec / 1000000) % 1000u);
}

bool pd_events_wanted(const paddock_ctx *ctx)
{
	return ctx && ctx->sink;
}

void pd_emit(paddock_ctx *ctx, enum paddock_event_level level, const char *name,
	     const char *sandbox_id, const char *exec_id, json_t *fields)
{
	char ts[48];
	json_t *o;
	char *line;

	if (!ctx || !ctx->sink) {
		json_decref(fields);
		return;
	}
	format_ts(ts, sizeof(ts));
	/* jansson keeps insertion order: the envelope comes first. */
	o = json_object();
	if (!o) {
		json_decref(fields);
		return;
	}
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(paddock_event_level_to_string(level)));
	json_object_set_new(o, "event", json_string(name));
	if (sandbox_id)
		json_object_set_new(o, "sandbox", json_string(sandbox_id));
	if (exec_id)
		json_object_set_new(o, "exec", json_string(exec_id));
	if (fields)
		json_object_update(o, fields);
	json_decref(fields);
	line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER |
				     JSON_REAL_PRECISION(6));
	json_decref(o);
	if (!line)
		return;
	ctx->sink(&(struct paddock_event){ .level = level, .name = name, .json = line },
		  ctx->sink_userdata);
	free(line);
}

void pd_event_add_error(json_t *fields, const paddock_error *err)
{
	if (!fields || !err || err->code == 0)
		return;
	json_object_set_new(fields, "errno", json_string(paddock_errno_name(err->code)));
	json_object_set_new(fields, "error", json_string(err->msg));
	if (err->field[0])
		json_object_set_new(fields, "field", json_string(err->field));
}
