/* SPDX-License-Identifier: Apache-2.0 */
#include "relay.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/select.h>
#include <unistd.h>

#define RELAY_CHUNK		    65536
#define RELAY_MAX_CHUNKS_PER_WAKEUP 16

struct relay {
	int in, out;
	bool eof;
	struct event *ev;
};

void relay_write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* the caller's side is non-blocking and full: wait for it */
			fd_set set;
			FD_ZERO(&set);
			FD_SET(fd, &set);
			(void)select(fd + 1, NULL, &set, NULL, NULL);
			continue;
		}
		if (w <= 0)
			return; /* the reader went away: drop the rest */
		p += w;
		n -= (size_t)w;
	}
}

static void pump(struct relay *r, int max_chunks)
{
	char buf[RELAY_CHUNK];

	for (int i = 0; i < max_chunks && !r->eof; i++) {
		ssize_t n = read(r->in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* EOF, or EIO from a pty master whose slaves are all closed */
			r->eof = true;
			if (r->ev)
				event_del(r->ev);
			return;
		}
		relay_write_all(r->out, buf, (size_t)n);
	}
}

static void relay_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg, RELAY_MAX_CHUNKS_PER_WAKEUP);
}

struct relay *relay_new(struct event_base *base, int in, int out)
{
	struct relay *r = calloc(1, sizeof(*r));
	int fl;

	if (!r)
		return NULL;
	r->in = in;
	r->out = out;
	fl = fcntl(in, F_GETFL);
	if (fl >= 0)
		(void)fcntl(in, F_SETFL, fl | O_NONBLOCK);
	r->ev = event_new(base, in, EV_READ | EV_PERSIST, relay_cb, r);
	if (!r->ev || event_add(r->ev, NULL) < 0)
		return relay_free(r);
	return r;
}

void relay_drain(struct relay *r)
{
	if (r)
		pump(r, 64); /* what was buffered at exit; a hostile writer cannot keep us here */
}

void relay_pause(struct relay *r, bool paused)
{
	if (!r || !r->ev || r->eof)
		return;
	if (paused)
		event_del(r->ev);
	else
		event_add(r->ev, NULL);
}

bool relay_eof(const struct relay *r)
{
	return !r || r->eof;
}

struct relay *relay_free(struct relay *r)
{
	if (!r)
		return NULL;
	if (r->ev)
		event_free(r->ev);
	free(r);
	return NULL;
}
