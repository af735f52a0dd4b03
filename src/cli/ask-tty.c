/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The terminal of `paddock run --net ask` answers the sandbox's pending decisions
 * (ask-tty.h). One question at a time, oldest first:
 *
 *   paddock: the sandbox wants to reach api.example.com:443, which no rule allows.
 *   paddock: allow it? o = once, a = always (this sandbox), d = deny [denied in 30 s]:
 *
 * Trust: the sandbox must not be able to answer. It never holds this terminal (`paddock run`
 * gives it a pty of its own, or pipes), the question is read from /dev/tty opened here, and
 * while it is on the terminal nothing moves between the terminal and the sandbox (its output
 * would be the place for escape sequences that make a terminal type an answer). Keystrokes
 * typed before the question are discarded (tcflush), and an answer is a whole line of
 * printable ASCII: anything else, a control character or an escape sequence in it, denies.
 * The host in the question is what libpaddock gives: a normalised DNS name or an address.
 */
#include "ask-tty.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 64

struct question {
	paddock_sandbox *sb;
	uint64_t id;
	char target[300]; /* host:port, as the rule would say it */
	int64_t expires_ms;
	struct question *next;
};

struct ask_tty {
	struct event_base *base;
	paddock_ctx *ctx;
	void (*pause)(bool paused, void *ud);
	void *ud;
	int fd; /* /dev/tty, opened at the first question; -1: none */
	bool opened;
	char who[80];		/* the terminal's name, recorded with each answer */
	struct question *queue; /* oldest first: the head is on the terminal while asking */
	bool asking, in_next;
	struct termios saved;
	bool saved_ok;
	struct event *rd;
	char line[LINE_MAX_BYTES + 1];
	size_t len;
	bool bad; /* the line being typed is no answer already (too long, not printable) */
};

static void start_next(struct ask_tty *t);
static void on_read(evutil_socket_t fd, short what, void *arg);

static void say(struct ask_tty *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct ask_tty *t, const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (t->fd >= 0 && n > 0)
		(void)!write(t->fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_tty(struct ask_tty *t);

static void open_tty(struct ask_tty *t)
{
	const char *name;

	if (t->opened)
		return;
	t->opened = true;
	/* the controlling terminal of this process: never the sandbox's (it has none of ours) */
	t->fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (t->fd < 0)
		return;
	/* who answers: this user, at the terminal by its name where stdin or stderr is it */
	name = isatty(STDIN_FILENO)    ? ttyname(STDIN_FILENO)
	       : isatty(STDERR_FILENO) ? ttyname(STDERR_FILENO)
				       : NULL;
	snprintf(t->who, sizeof(t->who), "uid %u on %.60s", (unsigned)getuid(),
		 name ? name : "/dev/tty");
	t->rd = event_new(t->base, t->fd, EV_READ | EV_PERSIST, on_read, t);
	if (!t->rd)
		close_tty(t); /* nobody can be asked: denied */
}

static void close_tty(struct ask_tty *t)
{
	if (t->rd)
		event_free(t->rd);
	t->rd = NULL;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

static void remove_question(struct ask_tty *t, struct question *q)
{
	for (struct question **pp = &t->queue; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	free(q);
}

static struct question *find(struct ask_tty *t, paddock_sandbox *sb, uint64_t id)
{
	for (struct question *q = t->queue; q; q = q->next)
		if (q->sb == sb && q->id == id)
			return q;
	return NULL;
}

/* The terminal as it was before the question; the sandbox's I/O moves again. */
static void end_prompt(struct ask_tty *t)
{
	if (!t->asking)
		return;
	t->asking = false;
	if (t->rd)
		event_del(t->rd);
	if (t->saved_ok && t->fd >= 0)
		(void)tcsetattr(t->fd, TCSADRAIN, &t->saved);
	t->saved_ok = false;
	if (t->pause)
		t->pause(false, t->ud);
}

/* Answers q (the handler's second call removes it), or drops it if it is gone already. */
static void answer(struct ask_tty *t, struct question *q, enum paddock_ask_answer a,
		   const char *who)
{
	if (paddock_sandbox_answer(q->sb, q->id, a, "terminal", who, NULL) < 0)
		remove_question(t, q);
}

static bool foreground(const struct ask_tty *t)
{
	pid_t fg = tcgetpgrp(t->fd);

	return fg >= 0 && fg == getpgrp();
}

static void prompt(struct ask_tty *t, struct question *q)
{
	struct termios tt;
	double left = (double)(q->expires_ms - now_ms()) / 1000;

	if (t->pause)
		t->pause(true, t->ud);
	t->asking = true;
	t->len = 0;
	t->bad = false;
	/* a line with echo, whatever the relay made of the terminal (raw for a pty) */
	t->saved_ok = tcgetattr(t->fd, &t->saved) == 0;
	if (t->saved_ok) {
		tt = t->saved;
		tt.c_lflag |= ICANON | ECHO | ECHOE | ECHOK;
		tt.c_iflag |= ICRNL;
		tt.c_iflag &= ~(tcflag_t)(INLCR | IGNCR);
		tt.c_oflag |= OPOST | ONLCR;
		(void)tcsetattr(t->fd, TCSADRAIN, &tt);
	}
	/* SECURITY: what was typed (or made to be typed) before the question is no answer */
	(void)tcflush(t->fd, TCIFLUSH);
	say(t,
	    "\npaddock: the sandbox wants to reach %s, which no rule allows.\n"
	    "paddock: allow it? o = once, a = always (this sandbox), d = deny [denied in %.0f s]: ",
	    q->target, left > 0 ? left : 0);
	event_add(t->rd, NULL);
}

static void start_next(struct ask_tty *t)
{
	if (t->in_next)
		return;
	t->in_next = true;
	while (t->queue && !t->asking) {
		struct question *q = t->queue;

		if (t->fd < 0)
			answer(t, q, PADDOCK_ASK_DENY, "no terminal to ask on");
		else if (!foreground(t))
			answer(t, q, PADDOCK_ASK_DENY,
			       "paddock run is not in the foreground of its "
			       "terminal");
		else
			prompt(t, q);
	}
	t->in_next = false;
}

/* A whole line: o/once, a/always, d/deny/n/no. -1: no answer (ask again); -2: refused. */
static int parse_line(const char *s, size_t len)
{
	static const struct {
		const char *word;
		enum paddock_ask_answer a;
	} words[] = {
		{ "o", PADDOCK_ASK_ALLOW_ONCE },   { "once", PADDOCK_ASK_ALLOW_ONCE },
		{ "a", PADDOCK_ASK_ALLOW_ALWAYS }, { "always", PADDOCK_ASK_ALLOW_ALWAYS },
		{ "d", PADDOCK_ASK_DENY },	   { "deny", PADDOCK_ASK_DENY },
		{ "n", PADDOCK_ASK_DENY },	   { "no", PADDOCK_ASK_DENY },
	};
	char w[LINE_MAX_BYTES + 1];
	size_t a = 0, b = len, n = 0;

	while (a < b && s[a] == ' ')
		a++;
	while (b > a && s[b - 1] == ' ')
		b--;
	for (size_t i = a; i < b; i++)
		w[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	w[n] = '\0';
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(w, words[i].word) == 0)
			return (int)words[i].a;
	return -1;
}

static void on_line(struct ask_tty *t)
{
	struct question *q = t->queue;
	int a;

	if (t->bad) {
		/* SECURITY: control characters or escape sequences in the line: fail closed */
		say(t, "paddock: not an answer: %s denied\n", q->target);
		end_prompt(t);
		return answer(t, q, PADDOCK_ASK_DENY, t->who);
	}
	a = parse_line(t->line, t->len);
	t->len = 0;
	if (a < 0) {
		say(t, "paddock: answer o (once), a (always, for this sandbox) or d (deny): ");
		return;
	}
	say(t, "paddock: %s %s\n",
	    a == PADDOCK_ASK_ALLOW_ONCE	    ? "allowed once:"
	    : a == PADDOCK_ASK_ALLOW_ALWAYS ? "allowed for this sandbox:"
					    : "denied:",
	    q->target);
	end_prompt(t);
	answer(t, q, (enum paddock_ask_answer)a, t->who);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct ask_tty *t = arg;
	char buf[256];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* the terminal went away: nobody can be asked any more */
		struct question *q = t->queue;

		end_prompt(t);
		close_tty(t);
		if (q)
			answer(t, q, PADDOCK_ASK_DENY, "the terminal closed");
		return start_next(t);
	}
	for (ssize_t i = 0; i < n && t->asking; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\n') {
			on_line(t);
			continue;
		}
		if (ch < 0x20 || ch > 0x7e || t->len >= LINE_MAX_BYTES)
			t->bad = true;
		else
			t->line[t->len++] = (char)ch;
	}
	start_next(t);
}

static void on_ask(paddock_sandbox *sb, const struct paddock_ask *ask, void *userdata)
{
	struct ask_tty *t = userdata;
	struct question *q;

	if (ask->decided) {
		q = find(t, sb, ask->id);
		if (!q)
			return;
		if (q == t->queue && t->asking) {
			/* decided elsewhere while on the terminal: its time ran out, or the API */
			if (ask->timed_out)
				say(t, "\npaddock: no answer in time: %s denied\n", q->target);
			else
				say(t, "\npaddock: %s was decided elsewhere (%s by %s)\n",
				    q->target, paddock_ask_answer_to_string(ask->answer), ask->by);
			end_prompt(t);
		}
		remove_question(t, q);
		return start_next(t);
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		(void)paddock_sandbox_answer(sb, ask->id, PADDOCK_ASK_DENY, "terminal",
					     "out of memory", NULL);
		return;
	}
	q->sb = sb;
	q->id = ask->id;
	q->expires_ms = ask->expires_ms;
	snprintf(q->target, sizeof(q->target), "%s", ask->rule);
	struct question **pp = &t->queue;

	while (*pp)
		pp = &(*pp)->next;
	*pp = q;
	open_tty(t);
	start_next(t);
}

int ask_tty_new(struct event_base *base, paddock_ctx *ctx, void (*pause)(bool paused, void *ud),
		void *userdata, struct ask_tty **ret)
{
	struct ask_tty *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->base = base;
	t->ctx = ctx;
	t->pause = pause;
	t->ud = userdata;
	t->fd = -1;
	paddock_ctx_set_ask_handler(ctx, on_ask, t);
	*ret = t;
	return 0;
}

struct ask_tty *ask_tty_free(struct ask_tty *t)
{
	if (!t)
		return NULL;
	paddock_ctx_set_ask_handler(t->ctx, NULL, NULL);
	end_prompt(t);
	close_tty(t);
	while (t->queue)
		remove_question(t, t->queue);
	free(t);
	return NULL;
}
