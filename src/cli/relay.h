/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Copying bytes between the caller's terminal and a sandbox's pty or pipes, on the event
 * loop. The sandbox side is hostile: it can send any bytes at any rate, so reads are bounded
 * per wakeup and the supervisor never interprets what it copies.
 */
#pragma once

#include <stdbool.h>

#include <stdint.h>

struct event_base;
struct relay;

/*
 * A byte budget shared by the relays of one command (stdout and stderr together). Past it
 * the rest is read and dropped, `hit` is set and on_hit runs once.
 */
struct relay_budget {
	uint64_t left;
	bool hit;
	void (*on_hit)(void *arg);
	void *arg;
};

/*
 * Copies from `in` (made non-blocking; borrowed) to `out` (borrowed) until EOF or error,
 * charging `budget` when it is not NULL.
 */
struct relay *relay_new(struct event_base *base, int in, int out, struct relay_budget *budget);
/* Copies whatever `in` holds right now, without waiting. */
void relay_drain(struct relay *r);
bool relay_eof(const struct relay *r);
struct relay *relay_free(struct relay *r);
