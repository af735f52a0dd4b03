/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decisions a sandbox asks for (network.unlisted "ask") through paddockd: GET
 * .../network/pending?follow=1 is read from the server's loop, each line checked before it
 * is told (host and rule are bounded and shaped: the sandbox chose them); answers are
 * POST .../network/decisions, recorded by paddockd with this backend's tenant.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "paddock/paddock.h"
#include "backend.h"
#include "backend-daemon-internal.h"
#include "client.h"
#include "paddock/cleanup.h"

#define ASK_LINE_MAX 4096 /* one decision: a name of 253 bytes and a few fields */

void dsandbox_asks_unwatch(struct dsandbox *s)
{
	if (s->ask_ev)
		event_free(s->ask_ev);
	s->ask_ev = NULL;
	http_conn_free(s->ask_conn);
	s->ask_conn = NULL;
	s->ask_fn = NULL;
}

static int64_t parse_time_ms(const char *s)
{
	struct tm tm = { 0 };
	const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	int64_t ms = 0;

	if (!rest)
		return 0;
	if (rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' && rest[2] >= '0' &&
	    rest[2] <= '9' && rest[3] >= '0' && rest[3] <= '9')
		ms = (rest[1] - '0') * 100 + (rest[2] - '0') * 10 + (rest[3] - '0');
	return (int64_t)timegm(&tm) * 1000 + ms;
}

/* One line of the follow stream: a decision, checked before it is told. */
static void ask_line(struct dsandbox *s, const char *line, size_t len)
{
	_cleanup_json_ json_t *o = json_loadb(line, len, 0, NULL);
	json_t *id = json_object_get(o, "id"), *port = json_object_get(o, "port");
	const char *host = json_string_value(json_object_get(o, "host"));
	const char *rule = json_string_value(json_object_get(o, "rule"));
	const char *answer = json_string_value(json_object_get(o, "answer"));

	/* what paddockd relays of a sandbox's choosing is bounded and shaped, or not told */
	if (!json_is_integer(id) || json_integer_value(id) < 1 || !json_is_integer(port) ||
	    json_integer_value(port) < 1 || json_integer_value(port) > 65535 || !host ||
	    strlen(host) > 253 || !rule || strlen(rule) > 270 ||
	    strspn(host, "abcdefghijklmnopqrstuvwxyz0123456789-.:") != strlen(host) ||
	    (answer && paddock_ask_answer_from_string(answer) < 0) || !s->ask_fn)
		return;
	struct mcp_ask a = {
		.sandbox = s->id,
		.id = (uint64_t)json_integer_value(id),
		.host = host,
		.port = (uint16_t)json_integer_value(port),
		.rule = rule,
		.expires_ms = parse_time_ms(json_string_value(json_object_get(o, "expires_at"))),
		.decided = answer != NULL,
		.answer = answer,
		.by = answer ? json_string_value(json_object_get(o, "by")) : NULL,
	};

	if (a.decided && !a.by)
		a.by = "paddockd";
	s->ask_fn(&a, s->ask_ud);
}

static void asks_readable(evutil_socket_t fd, short what, void *arg)
{
	struct dsandbox *s = arg;
	paddock_error err = { 0 };

	(void)fd;
	(void)what;
	for (int i = 0; i < LINES_PER_WAKE && s->ask_conn; i++) {
		const char *line;
		size_t len;
		int r = http_read_line(s->ask_conn, ASK_LINE_MAX, &line, &len, &err);

		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			/* the sandbox is gone, or paddockd stopped: nothing more will come */
			dsandbox_asks_unwatch(s);
			return;
		}
		ask_line(s, line, len); /* may unwatch */
	}
	if (s->ask_ev)
		event_active(s->ask_ev, EV_READ, 0);
}

int d_watch_asks(struct mcp_backend *mb, const char *id, mcp_ask_fn fn, void *userdata,
		 paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_conn_ struct http_conn *c = NULL;
	struct http_response resp;
	int r;

	if (!s)
		return -ENOENT;
	dsandbox_asks_unwatch(s);
	if (!fn)
		return 0;
	r = dopen_json(s->b, "GET", SEGS(s->id, "network", "pending"), QUERY("follow", "1"), NULL,
		       &c, &resp, err);
	if (r < 0)
		return r;
	http_conn_set_nonblocking(c, true);
	s->ask_ev =
		event_new(s->b->ev_base, http_conn_fd(c), EV_READ | EV_PERSIST, asks_readable, s);
	if (!s->ask_ev || event_add(s->ask_ev, NULL) < 0) {
		if (s->ask_ev)
			event_free(s->ask_ev);
		s->ask_ev = NULL;
		return paddock_fail(err, ENOMEM, "follow the sandbox's pending decisions");
	}
	s->ask_conn = TAKE_PTR(c);
	s->ask_fn = fn;
	s->ask_ud = userdata;
	event_active(s->ask_ev, EV_READ, 0); /* lines the head's read took along */
	return 0;
}

int d_answer(struct mcp_backend *mb, const char *id, uint64_t ask, enum paddock_ask_answer answer,
	     const char *who, paddock_error *err)
{
	struct dsandbox *s = dsandbox_find(mb, id, err);
	_cleanup_json_ json_t *body = NULL;

	if (!s)
		return -ENOENT;
	body = json_pack("{s:I, s:s, s:s?}", "id", (json_int_t)ask, "answer",
			 paddock_ask_answer_to_string(answer), "who", who);
	if (!body)
		return paddock_fail(err, ENOMEM, "out of memory");
	/* recorded by paddockd with this backend's tenant, and `who` */
	return dcall(s->b, "POST", SEGS(s->id, "network", "decisions"), NULL, body, ANSWER_MAX,
		     NULL, err);
}
