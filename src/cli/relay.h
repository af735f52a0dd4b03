/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Copying bytes between the caller's terminal and a sandbox's pty or pipes, on the event
 * loop. The sandbox side is hostile: it can send any bytes at any rate, so reads are bounded
 * per wakeup and the supervisor never interprets what it copies. Limits on what is copied
 * (limits.output) are libpaddock's exec session's, not the relay's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct relay;

/* Copies from `in` (made non-blocking; borrowed) to `out` (borrowed) until EOF or error. */
struct relay *relay_new(struct event_base *base, int in, int out);
/* Copies whatever `in` holds right now, without waiting. */
void relay_drain(struct relay *r);
bool relay_eof(const struct relay *r);
/* Stops copying (the bytes wait where they are) or starts again; NULL is fine. */
void relay_pause(struct relay *r, bool paused);
struct relay *relay_free(struct relay *r);
/* Writes all of it to `fd`, waiting while a non-blocking fd is full; a reader gone: dropped. */
void relay_write_all(int fd, const void *data, size_t n);
