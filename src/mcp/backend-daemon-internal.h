/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the paddockd backend share (backend-daemon.c, backend-daemon-exec.c,
 * backend-daemon-files.c, backend-daemon-asks.c): its state, the sandboxes and processes it
 * made, and its requests to paddockd. Private to src/mcp.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "paddock/paddock.h"
#include "backend.h"
#include "client.h"
#include "paddock/cleanup.h"

#define ANSWER_MAX     (4u << 20) /* a JSON answer: a sandbox object holds its spec (<= 1 MiB) */
#define LINES_PER_WAKE 64	  /* then back to the loop, so a chatty command cannot hog it */
#define SANDBOX_ID_MAX 32

/* A background process this backend started: the tag that names it, what was read of it. */
struct dproc {
	char tag[16];
	uint64_t since[2]; /* offsets in stdout and stderr up to which bg_output() returned */
	struct dproc *next;
};

struct dsandbox {
	char id[SANDBOX_ID_MAX];
	struct dbackend *b;
	unsigned next_proc;
	struct dproc *procs; /* newest first */
	size_t n_procs;
	/* watch_asks(): its pending decisions, followed (GET .../network/pending?follow=1) */
	struct http_conn *ask_conn;
	struct event *ask_ev;
	mcp_ask_fn ask_fn;
	void *ask_ud;
	struct dsandbox *next;
};

struct dbackend {
	struct mcp_backend base; /* first: the ops get &base */
	struct event_base *ev_base;
	char socket_path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	unsigned idle_timeout_s;
	struct dsandbox *sandboxes;
	struct mcp_pending *pending;
	struct event *keepalive;
	time_t last_renew; /* CLOCK_MONOTONIC seconds */
};

#define _cleanup_json_ _cleanup_(json_decrefp)
PADDOCK_DEFINE_CLEANUP(struct http_conn, http_conn_free)
#define _cleanup_conn_ _cleanup_(http_conn_freep)

static inline struct dbackend *dbackend(struct mcp_backend *mb)
{
	return (struct dbackend *)mb;
}

/* for dopen() and dcall(): path segments and query pairs, each list NULL-terminated */
#define SEGS(...)  ((const char *const[]){ __VA_ARGS__, NULL })
#define QUERY(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* backend-daemon.c: requests */
/* The client's errors; a receive or send that timed out is the one it leaves unexplained. */
int dbackend_io_error(int r, paddock_error *err);
/*
 * Sends `req` to "/v1/sandboxes/SEG/SEG...?KEY=VALUE&..." (req->target instead when set):
 * `segs` NULL-terminated, each percent-encoded (a '/' too), `query` NULL-terminated KEY, VALUE
 * pairs, values encoded with '/' kept. Reads the answer's head into *ret_resp (also for an
 * error answer, whose status and Content-Range callers may want). A 2xx answer gives 0 and
 * the connection, positioned at the body; an error answer is read into err.
 */
int dopen(struct dbackend *b, const struct http_request *req, const char *const *segs,
	  const char *const *query, struct http_conn **ret_conn, struct http_response *ret_resp,
	  paddock_error *err);
/* dopen() of `method` with `body` as JSON (none when NULL), wiped once sent. */
int dopen_json(struct dbackend *b, const char *method, const char *const *segs,
	       const char *const *query, const json_t *body, struct http_conn **ret_conn,
	       struct http_response *ret_resp, paddock_error *err);
/*
 * dopen_json(), and its JSON answer (at most `max` bytes) in *ret_json when ret_json is not
 * NULL (NULL for an empty answer: 204).
 */
int dcall(struct dbackend *b, const char *method, const char *const *segs, const char *const *query,
	  const json_t *body, size_t max, json_t **ret_json, paddock_error *err);

/* backend-daemon.c: the sandboxes and processes this backend made */
struct dsandbox *dsandbox_find(struct mcp_backend *mb, const char *id, paddock_error *err);
/* The process `tag` of sandbox `id`, and that sandbox in *ret_s; NULL and err when none. */
struct dproc *dproc_find(struct mcp_backend *mb, const char *id, const char *tag,
			 struct dsandbox **ret_s, paddock_error *err);
void dproc_forget(struct dsandbox *s, struct dproc *p);
/* Remembers a new process; the oldest beyond PROCS_KEPT is forgotten (paddockd did too). */
struct dproc *dproc_add(struct dsandbox *s, paddock_error *err);

/* backend-daemon-exec.c: the ops for commands and background processes */
int d_exec(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
	   mcp_exec_done_fn fn, void *userdata, struct mcp_pending **ret_pending,
	   paddock_error *err);
void d_cancel(struct mcp_backend *mb, struct mcp_pending *p);
/* Frees a command and closes its stream: paddockd kills a foreground command whose client went. */
void dpending_free(struct mcp_pending *p);
int d_bg_start(struct mcp_backend *mb, const char *id, const struct mcp_exec_req *req,
	       char **ret_proc, int *ret_pid, paddock_error *err);
int d_bg_output(struct mcp_backend *mb, const char *id, const char *proc, size_t max, json_t **ret,
		paddock_error *err);
int d_bg_signal(struct mcp_backend *mb, const char *id, const char *proc, int sig,
		paddock_error *err);

/* backend-daemon-files.c */
int d_read_file(struct mcp_backend *mb, const char *id, const char *path, uint64_t offset,
		size_t max, char **ret_data, size_t *ret_len, uint64_t *ret_size,
		paddock_error *err);
int d_write_file(struct mcp_backend *mb, const char *id, const char *path, const void *data,
		 size_t len, unsigned mode, paddock_error *err);
int d_list_dir(struct mcp_backend *mb, const char *id, const char *path, unsigned depth,
	       size_t max_entries, json_t **ret_entries, paddock_error *err);

/* backend-daemon-asks.c: the decisions a sandbox asks for */
int d_watch_asks(struct mcp_backend *mb, const char *id, mcp_ask_fn fn, void *userdata,
		 paddock_error *err);
int d_answer(struct mcp_backend *mb, const char *id, uint64_t ask, enum paddock_ask_answer answer,
	     const char *who, paddock_error *err);
/* Stops following the sandbox's decisions. */
void dsandbox_asks_unwatch(struct dsandbox *s);
