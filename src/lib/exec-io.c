/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exec session: what a command writes and reads, when libpaddock handles it for the front
 * end (paddock_exec_opts.capture). One behaviour for every front end:
 *
 *   output  stdout and stderr (a pty's one stream: stdout) are read from the pipes init made,
 *           on the context's loop, and kept in order: PADDOCK_CAPTURE_ALL keeps all of it up
 *           to the output limit (limits.output unless the request says less; stdout and
 *           stderr together), past which the rest is dropped, the command ends with reason
 *           "output" and its result says output_truncated; PADDOCK_CAPTURE_RING keeps the
 *           newest ring bytes of each stream and never ends the command; PADDOCK_CAPTURE_RELAY
 *           counts as ALL does and keeps nothing (the callback gets it). Readers come by
 *           offset (paddock_exec_read_output()), live ones get each chunk as it is read
 *           (paddock_exec_set_output_callback()); a reader that falls behind pauses the
 *           reading (paddock_exec_pause_output()): the command then blocks on a full pipe,
 *           as it would on a slow terminal.
 *   stdin   a queue (at most PD_EXEC_STDIN_MAX bytes waiting) written as the command reads;
 *           closing it waits for the queue to drain, then init's copy goes too (EOF).
 *   end     when init reports the command's end, what its pipes hold is read, then they are
 *           closed: a child still holding them is not waited for.
 *
 * Trust: output is hostile bytes, bounded as it is read and never interpreted here.
 */
#include "sandbox.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"

#define READ_CHUNK   65536
#define READ_ROUNDS  16		/* chunks per stream per wakeup: fairness between commands */
#define END_ROUNDS   64		/* chunks read from a pipe once its command has ended */
#define RING_DEFAULT (1u << 20) /* PADDOCK_CAPTURE_RING, per stream */

static bool captured(const paddock_exec *ex)
{
	return ex->io.mode != PADDOCK_CAPTURE_NONE;
}

static void stream_close(struct pd_exec_stream *s)
{
	if (s->ev) {
		event_free(s->ev);
		s->ev = NULL;
	}
	s->fd = pd_close(s->fd);
}

/* Keeps what the mode allows of one chunk; returns how much of it was kept. */
static size_t keep(paddock_exec *ex, int i, const char *buf, size_t n)
{
	struct pd_exec_io *io = &ex->io;
	struct pd_exec_stream *s = &io->out[i];
	size_t have;

	s->read += n;
	if (io->mode == PADDOCK_CAPTURE_RING) {
		if (evbuffer_add(s->buf, buf, n) < 0)
			return 0;
		s->end += n;
		have = evbuffer_get_length(s->buf);
		if (have > io->ring)
			evbuffer_drain(s->buf, have - io->ring);
		return n;
	}
	/* ALL, RELAY: stdout and stderr share the limit; past it, the command ends */
	if (io->kept + n > io->limit) {
		n = io->limit > io->kept ? (size_t)(io->limit - io->kept) : 0;
		if (!io->truncated) {
			io->truncated = true;
			(void)paddock_exec_terminate(ex, PADDOCK_END_OUTPUT, NULL);
		}
	}
	if (n == 0 || (io->mode == PADDOCK_CAPTURE_ALL && evbuffer_add(s->buf, buf, n) < 0))
		return 0;
	s->end += n;
	io->kept += n;
	return n;
}

/* Reads what one stream's pipe holds, up to `rounds` chunks; EOF (or EIO: a pty whose last
 * user left) closes it. */
static void drain(paddock_exec *ex, int i, int rounds)
{
	struct pd_exec_stream *s = &ex->io.out[i];
	char buf[READ_CHUNK];

	while (rounds-- > 0 && s->fd >= 0) {
		ssize_t n = read(s->fd, buf, sizeof(buf));

		if (n > 0) {
			size_t k = keep(ex, i, buf, (size_t)n);

			if (k > 0 && ex->io.fn)
				ex->io.fn(ex, i + 1, buf, k, ex->io.userdata);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		stream_close(s);
	}
}

static void out_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_exec *ex = arg;
	int i = fd == ex->io.out[0].fd ? 0 : 1;

	(void)what;
	paddock_exec_ref(ex); /* the output callback may drop the front end's reference */
	drain(ex, i, READ_ROUNDS);
	paddock_exec_unref(ex);
}

/* ---- stdin ------------------------------------------------------------------------------ */

static void stdin_closed(paddock_exec *ex)
{
	struct pd_exec_io *io = &ex->io;

	if (io->in_ev) {
		event_free(io->in_ev);
		io->in_ev = NULL;
	}
	if (io->in_q)
		evbuffer_drain(io->in_q, evbuffer_get_length(io->in_q));
	io->in_fd = pd_close(io->in_fd);
	io->in_closing = false;
	/* init's copy too, so the command sees EOF (a pty has none: the master is the tty) */
	if (!ex->done && !(ex->pty_streams & 1u))
		(void)pd_exec_send_close_stdin(ex, NULL);
}

static void stdin_cb(evutil_socket_t fd, short what, void *arg)
{
	paddock_exec *ex = arg;
	struct pd_exec_io *io = &ex->io;

	(void)what;
	if (evbuffer_write(io->in_q, fd) < 0 && errno != EAGAIN && errno != EINTR)
		return stdin_closed(ex); /* EPIPE: the command closed its stdin */
	if (evbuffer_get_length(io->in_q) == 0) {
		event_del(io->in_ev);
		if (io->in_closing)
			stdin_closed(ex);
	}
}

int paddock_exec_write_stdin(paddock_exec *ex, const void *data, size_t len, paddock_error *err)
{
	struct pd_exec_io *io;
	const char *p = data;

	if (!ex || (!data && len))
		return pd_fail(err, EINVAL, "paddock_exec_write_stdin: bad arguments");
	io = &ex->io;
	if (!captured(ex))
		return pd_fail(err, EINVAL, "command '%s' was not started with capture",
			       ex->id_str);
	if (ex->done || io->in_fd < 0 || io->in_closing)
		return pd_fail_field(err, EPIPE, "stdin", "the stdin of command '%s' is closed",
				     ex->id_str);
	if (!io->in_q && !(io->in_q = evbuffer_new()))
		return pd_fail(err, ENOMEM, "allocate a stdin queue");
	/* all or nothing: over the bound nothing is taken, and the caller tries again later */
	if (evbuffer_get_length(io->in_q) + len > PD_EXEC_STDIN_MAX)
		return pd_fail_field(err, EAGAIN, "stdin",
				     "the command has not read the %zu bytes of stdin before these "
				     "(at most %u wait)",
				     evbuffer_get_length(io->in_q), PD_EXEC_STDIN_MAX);
	while (len > 0 && evbuffer_get_length(io->in_q) == 0) {
		ssize_t n = write(io->in_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			int e = errno;

			stdin_closed(ex);
			return pd_fail_field(err, e, "stdin", "write the stdin of command '%s'",
					     ex->id_str);
		}
		p += n;
		len -= (size_t)n;
	}
	if (len == 0)
		return 0;
	if (evbuffer_add(io->in_q, p, len) < 0)
		return pd_fail(err, ENOMEM, "queue stdin");
	if (!io->in_ev)
		io->in_ev = event_new(ex->sb->ctx->base, io->in_fd, EV_WRITE | EV_PERSIST, stdin_cb,
				      ex);
	if (!io->in_ev || event_add(io->in_ev, NULL) < 0)
		return pd_fail(err, ENOMEM, "watch stdin");
	return 0;
}

/* With capture: EOF once the queue has drained. */
int pd_exec_io_close_stdin(paddock_exec *ex)
{
	struct pd_exec_io *io = &ex->io;

	if (io->in_q && evbuffer_get_length(io->in_q) > 0 && io->in_fd >= 0)
		io->in_closing = true;
	else
		stdin_closed(ex);
	return 0;
}

/* ---- setup and end ---------------------------------------------------------------------- */

void pd_exec_io_init(paddock_exec *ex)
{
	ex->io = (struct pd_exec_io){ .in_fd = -EBADF };
	for (int i = 0; i < 2; i++)
		ex->io.out[i].fd = -EBADF;
}

static int watch(paddock_exec *ex, int i, int fd, paddock_error *err)
{
	struct pd_exec_stream *s = &ex->io.out[i];

	s->fd = fd;
	if (fd < 0)
		return 0;
	(void)fcntl(fd, F_SETFL, O_NONBLOCK);
	s->ev = event_new(ex->sb->ctx->base, fd, EV_READ | EV_PERSIST, out_cb, ex);
	if (!s->ev || (!ex->io.paused && event_add(s->ev, NULL) < 0))
		return pd_fail(err, ENOMEM, "watch the output of command '%s'", ex->id_str);
	return 0;
}

int paddock_exec_capture(paddock_exec *ex, enum paddock_capture mode, uint64_t bytes,
			 paddock_error *err)
{
	struct pd_exec_io *io;
	int r;

	if (!ex || mode == PADDOCK_CAPTURE_NONE || (unsigned)mode >= _PADDOCK_CAPTURE_MAX)
		return pd_fail(err, EINVAL, "paddock_exec_capture: bad arguments");
	io = &ex->io;
	if (captured(ex))
		return pd_fail(err, EBUSY, "command '%s' is captured already", ex->id_str);
	if (ex->done || !ex->sb)
		return pd_fail(err, ESRCH, "command '%s' has ended", ex->id_str);
	io->mode = mode;
	io->limit = bytes ? bytes : ex->sb->spec->limits.output_bytes;
	io->ring = bytes ? (size_t)bytes : RING_DEFAULT;
	for (int i = 0; i < 2; i++)
		if (!(io->out[i].buf = evbuffer_new()))
			return pd_fail(err, ENOMEM, "allocate output buffers");
	/* its pipes, or the pty master (one stream, both ways) */
	if (ex->pty_streams) {
		r = watch(ex, 0, paddock_exec_take_fd(ex, 1), err);
		io->in_fd = (ex->pty_streams & 1u) ? paddock_exec_take_fd(ex, 0) : -EBADF;
	} else {
		r = watch(ex, 0, paddock_exec_take_fd(ex, 1), err);
		if (r >= 0)
			r = watch(ex, 1, paddock_exec_take_fd(ex, 2), err);
		io->in_fd = paddock_exec_take_fd(ex, 0);
	}
	if (io->in_fd >= 0)
		(void)fcntl(io->in_fd, F_SETFL, O_NONBLOCK);
	return r;
}

void pd_exec_io_end(paddock_exec *ex)
{
	struct pd_exec_io *io = &ex->io;

	if (!captured(ex))
		return;
	for (int i = 0; i < 2; i++) {
		drain(ex, i, END_ROUNDS);
		stream_close(&io->out[i]);
	}
	if (io->in_ev) {
		event_free(io->in_ev);
		io->in_ev = NULL;
	}
	io->in_fd = pd_close(io->in_fd);
	ex->result.output_truncated = ex->result.output_truncated || io->truncated;
}

void pd_exec_io_release_events(paddock_exec *ex)
{
	struct pd_exec_io *io = &ex->io;

	for (int i = 0; i < 2; i++)
		stream_close(&io->out[i]);
	if (io->in_ev)
		event_free(io->in_ev);
	io->in_ev = NULL;
	io->in_fd = pd_close(io->in_fd);
	io->fn = NULL;
}

void pd_exec_io_release(paddock_exec *ex)
{
	struct pd_exec_io *io = &ex->io;

	for (int i = 0; i < 2; i++) {
		stream_close(&io->out[i]);
		if (io->out[i].buf)
			evbuffer_free(io->out[i].buf);
		io->out[i].buf = NULL;
	}
	if (io->in_ev)
		event_free(io->in_ev);
	io->in_ev = NULL;
	if (io->in_q)
		evbuffer_free(io->in_q);
	io->in_q = NULL;
	io->in_fd = pd_close(io->in_fd);
}

/* ---- readers ------------------------------------------------------------------------------ */

void paddock_exec_set_output_callback(paddock_exec *ex, paddock_output_fn fn, void *userdata)
{
	if (!ex)
		return;
	ex->io.fn = fn;
	ex->io.userdata = userdata;
}

size_t paddock_exec_read_output(const paddock_exec *ex, int stream, uint64_t *from, void *buf,
				size_t size)
{
	const struct pd_exec_stream *s;
	struct evbuffer_ptr ptr;
	uint64_t start;
	size_t len, n;

	if (!ex || !from || (stream != 1 && stream != 2) || !captured(ex))
		return 0;
	s = &ex->io.out[stream - 1];
	len = evbuffer_get_length(s->buf);
	start = s->end - len;
	if (*from < start)
		*from = start; /* the ring dropped what came before */
	if (*from >= s->end || size == 0)
		return 0;
	n = (size_t)(s->end - *from) < size ? (size_t)(s->end - *from) : size;
	if (evbuffer_ptr_set(s->buf, &ptr, (size_t)(*from - start), EVBUFFER_PTR_SET) < 0)
		return 0;
	if (evbuffer_copyout_from(s->buf, &ptr, buf, n) != (ssize_t)n)
		return 0;
	*from += n;
	return n;
}

uint64_t paddock_exec_output_end(const paddock_exec *ex, int stream)
{
	if (!ex || (stream != 1 && stream != 2) || !captured(ex))
		return 0;
	return ex->io.out[stream - 1].end;
}

uint64_t paddock_exec_output_read(const paddock_exec *ex, int stream)
{
	if (!ex || (stream != 1 && stream != 2) || !captured(ex))
		return 0;
	return ex->io.out[stream - 1].read;
}

void paddock_exec_pause_output(paddock_exec *ex, bool paused)
{
	if (!ex || ex->io.paused == paused)
		return;
	ex->io.paused = paused;
	for (int i = 0; i < 2; i++) {
		struct pd_exec_stream *s = &ex->io.out[i];

		if (!s->ev)
			continue;
		if (paused)
			event_del(s->ev);
		else
			(void)event_add(s->ev, NULL);
	}
}
