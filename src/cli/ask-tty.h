/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock run --net ask`: a person at the terminal answers the sandbox's pending decisions
 * (docs/cli.md, docs/network.md "Asking a person"). The question goes to the controlling
 * terminal of `paddock run` itself (/dev/tty), never through the sandbox's own pty or
 * pipes, and the sandbox's output and the relay of keystrokes to it are paused while it is
 * asked. Without a terminal (or in the background of one) every decision is denied at once.
 */
#pragma once

#include <stdbool.h>

#include "paddock/paddock.h"

struct event_base;
struct ask_tty;

/*
 * Installs the context's ask handler. `pause` (may be NULL) stops (true) and resumes (false)
 * what moves between the terminal and the sandbox while a question is on the terminal.
 */
int ask_tty_new(struct event_base *base, paddock_ctx *ctx, void (*pause)(bool paused, void *ud),
		void *userdata, struct ask_tty **ret);
/* Puts the terminal back as it was; NULL is fine. Returns NULL. */
struct ask_tty *ask_tty_free(struct ask_tty *t);
