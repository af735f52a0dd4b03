/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store, on a real file in a fresh temporary directory per test: rows in and out,
 * cascades, pruning, transactions, durability across a close and across a SIGKILL, the file's
 * mode and journal, and files that are not (or no longer) a store. No privileges needed.
 * The SQLite file format is checked by reading its header bytes, so this test does not
 * include sqlite3.h (only store.c does).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "paddock/store.h"
#include "util/cleanup.h"

#define CHECK(call, err)                                                                           \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		if (r_ < 0)                                                                        \
			fail_msg("%s = %d (%s): %s", #call, r_, strerror(-r_), (err).msg);         \
	} while (0)

struct fixture {
	char dir[256];
	char path[300];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *tmp = getenv("TMPDIR");

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "%s/paddock-test-store-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/state.db", fx->dir);
	*state = fx;
	return 0;
}

/* The directory is flat: the store, its -wal and -shm, and what a test put there. */
static int teardown(void **state)
{
	struct fixture *fx = *state;
	DIR *d = opendir(fx->dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* a directory or a file, whichever the test made */
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 &&
		    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
			r = -1;
	}
	closedir(d);
	if (rmdir(fx->dir) < 0)
		r = -1;
	free(fx);
	return r;
}

static paddock_store *open_store(const struct fixture *fx)
{
	paddock_error err = { 0 };
	paddock_store *st = NULL;

	CHECK(paddock_store_open(fx->path, &st, &err), err);
	assert_non_null(st);
	return st;
}

static void put_sandbox(paddock_store *st, const char *id, int64_t created_ms)
{
	paddock_error err = { 0 };
	const struct paddock_store_sandbox sb = {
		.id = id,
		.tenant = "t1",
		.state = "running",
		.spec_json = "{\"image\":\"base\"}",
		.metadata_json = "{\"k\":\"v\"}",
		.handle_json = "{\"pid\":42}",
		.created_ms = created_ms,
		.expires_ms = created_ms + 3600000,
		.last_active_ms = created_ms,
		.ttl_s = 3600,
		.idle_timeout_s = 600,
	};

	CHECK(paddock_store_put_sandbox(st, &sb, &err), err);
}

static int64_t add_event(paddock_store *st, const char *sandbox_id, const char *json)
{
	paddock_error err = { 0 };
	int64_t seq = -1;

	CHECK(paddock_store_add_event(st, sandbox_id, 1000, "exec.started", json, &seq, &err), err);
	assert_true(seq > 0);
	return seq;
}

/* ---- collectors: copy what a walk shows, since its strings die with the callback ---- */

#define MAX_ROWS 16

struct sandbox_row {
	char id[256], tenant[256], state[64], spec[256], metadata[256], handle[256];
	char on_timeout[16];
	bool handle_null;
	int64_t created_ms, expires_ms, last_active_ms, ttl_s, idle_timeout_s, next_seq;
};

struct sandbox_rows {
	size_t n;
	struct sandbox_row row[MAX_ROWS];
};

static int collect_sandbox(const struct paddock_store_sandbox *sb, void *userdata)
{
	struct sandbox_rows *rows = userdata;

	assert_true(rows->n < MAX_ROWS);
	struct sandbox_row *r = &rows->row[rows->n++];
	snprintf(r->id, sizeof(r->id), "%s", sb->id);
	snprintf(r->tenant, sizeof(r->tenant), "%s", sb->tenant);
	snprintf(r->state, sizeof(r->state), "%s", sb->state);
	snprintf(r->spec, sizeof(r->spec), "%s", sb->spec_json);
	snprintf(r->metadata, sizeof(r->metadata), "%s", sb->metadata_json);
	r->handle_null = !sb->handle_json;
	snprintf(r->handle, sizeof(r->handle), "%s", sb->handle_json ? sb->handle_json : "");
	r->created_ms = sb->created_ms;
	r->expires_ms = sb->expires_ms;
	r->last_active_ms = sb->last_active_ms;
	r->ttl_s = sb->ttl_s;
	r->idle_timeout_s = sb->idle_timeout_s;
	snprintf(r->on_timeout, sizeof(r->on_timeout), "%s", sb->on_timeout);
	r->next_seq = sb->next_seq;
	return 0;
}

static void list_sandboxes(paddock_store *st, struct sandbox_rows *rows)
{
	paddock_error err = { 0 };
	int n;

	memset(rows, 0, sizeof(*rows));
	n = paddock_store_list_sandboxes(st, collect_sandbox, rows, &err);
	CHECK(n, err);
	assert_int_equal(n, rows->n);
}

struct exec_row {
	char sandbox_id[64], tag[64], argv[128], result[128];
	bool tag_null, result_null, background, pty;
	uint64_t exec_id;
	int32_t pid;
	int64_t started_ms, ended_ms;
};

struct exec_rows {
	size_t n;
	struct exec_row row[MAX_ROWS];
};

static int collect_exec(const struct paddock_store_exec *ex, void *userdata)
{
	struct exec_rows *rows = userdata;

	assert_true(rows->n < MAX_ROWS);
	struct exec_row *r = &rows->row[rows->n++];
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", ex->sandbox_id);
	r->tag_null = !ex->tag;
	snprintf(r->tag, sizeof(r->tag), "%s", ex->tag ? ex->tag : "");
	snprintf(r->argv, sizeof(r->argv), "%s", ex->argv_json);
	r->result_null = !ex->result_json;
	snprintf(r->result, sizeof(r->result), "%s", ex->result_json ? ex->result_json : "");
	r->background = ex->background;
	r->pty = ex->pty;
	r->exec_id = ex->exec_id;
	r->pid = ex->pid;
	r->started_ms = ex->started_ms;
	r->ended_ms = ex->ended_ms;
	return 0;
}

static void list_execs(paddock_store *st, const char *sandbox_id, struct exec_rows *rows)
{
	paddock_error err = { 0 };
	int n;

	memset(rows, 0, sizeof(*rows));
	n = paddock_store_list_execs(st, sandbox_id, collect_exec, rows, &err);
	CHECK(n, err);
	assert_int_equal(n, rows->n);
}

struct event_rows {
	size_t n;
	int64_t seq[MAX_ROWS];
	char json[MAX_ROWS][256];
};

static int collect_event(int64_t seq, const char *json, void *userdata)
{
	struct event_rows *rows = userdata;

	assert_true(rows->n < MAX_ROWS);
	rows->seq[rows->n] = seq;
	snprintf(rows->json[rows->n], sizeof(rows->json[0]), "%s", json);
	rows->n++;
	return 0;
}

static void list_events(paddock_store *st, const char *sandbox_id, int64_t after_seq,
			unsigned limit, struct event_rows *rows)
{
	paddock_error err = { 0 };
	int n;

	memset(rows, 0, sizeof(*rows));
	n = paddock_store_list_events(st, sandbox_id, after_seq, limit, collect_event, rows, &err);
	CHECK(n, err);
	assert_int_equal(n, rows->n);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_sandboxes(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct sandbox_rows rows;

	put_sandbox(st, "sb_b", 200);
	put_sandbox(st, "sb_a", 100);
	list_sandboxes(st, &rows);
	assert_int_equal(rows.n, 2);
	/* by created_ms, not by id or insertion */
	assert_string_equal(rows.row[0].id, "sb_a");
	assert_string_equal(rows.row[1].id, "sb_b");
	assert_string_equal(rows.row[0].tenant, "t1");
	assert_string_equal(rows.row[0].state, "running");
	assert_string_equal(rows.row[0].spec, "{\"image\":\"base\"}");
	assert_string_equal(rows.row[0].metadata, "{\"k\":\"v\"}");
	assert_string_equal(rows.row[0].handle, "{\"pid\":42}");
	assert_int_equal(rows.row[0].created_ms, 100);
	assert_int_equal(rows.row[0].expires_ms, 3600100);
	assert_int_equal(rows.row[0].last_active_ms, 100);
	assert_int_equal(rows.row[0].ttl_s, 3600);
	assert_int_equal(rows.row[0].idle_timeout_s, 600);
	assert_int_equal(rows.row[0].next_seq, 1);
	assert_string_equal(rows.row[0].on_timeout, "kill"); /* NULL is stored as "kill" */

	CHECK(paddock_store_set_state(st, "sb_a", "stopped", &err), err);
	CHECK(paddock_store_set_times(st, "sb_b", 999999, 555, &err), err);
	list_sandboxes(st, &rows);
	assert_string_equal(rows.row[0].state, "stopped");
	assert_string_equal(rows.row[1].state, "running");
	assert_int_equal(rows.row[1].expires_ms, 999999);
	assert_int_equal(rows.row[1].last_active_ms, 555);
	assert_int_equal(rows.row[0].expires_ms, 3600100);

	/* put replaces the whole row; NULL metadata becomes {}, NULL handle stays NULL */
	const struct paddock_store_sandbox sb = {
		.id = "sb_a",
		.tenant = "t2",
		.state = "running",
		.spec_json = "{}",
		.created_ms = 300,
		.expires_ms = 400,
		.last_active_ms = 350,
		.ttl_s = 1,
		.idle_timeout_s = 2,
		.on_timeout = "pause",
		.next_seq = 12345, /* ignored */
	};
	CHECK(paddock_store_put_sandbox(st, &sb, &err), err);
	list_sandboxes(st, &rows);
	assert_int_equal(rows.n, 2);
	assert_string_equal(rows.row[1].id, "sb_a");
	assert_string_equal(rows.row[1].tenant, "t2");
	assert_string_equal(rows.row[1].metadata, "{}");
	assert_true(rows.row[1].handle_null);
	assert_int_equal(rows.row[1].created_ms, 300);
	assert_int_equal(rows.row[1].idle_timeout_s, 2);
	assert_string_equal(rows.row[1].on_timeout, "pause");
	assert_int_equal(rows.row[1].next_seq, 1);

	CHECK(paddock_store_delete_sandbox(st, "sb_b", &err), err);
	list_sandboxes(st, &rows);
	assert_int_equal(rows.n, 1);
	assert_string_equal(rows.row[0].id, "sb_a");

	/* unknown ids */
	memset(&err, 0, sizeof(err));
	assert_int_equal(paddock_store_set_state(st, "sb_nope", "stopped", &err), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "sb_nope"));
	assert_int_equal(paddock_store_set_times(st, "sb_nope", 1, 1, &err), -ENOENT);
	assert_int_equal(paddock_store_delete_sandbox(st, "sb_b", &err), -ENOENT);

	paddock_store_free(st);
}

static void test_bad_arguments(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	paddock_store *none = NULL;

	assert_int_equal(paddock_store_open(NULL, &none, &err), -EINVAL);
	assert_int_equal(paddock_store_open("", &none, &err), -EINVAL);
	assert_null(none);
	const struct paddock_store_sandbox no_spec = { .id = "x", .tenant = "t", .state = "s" };
	assert_int_equal(paddock_store_put_sandbox(st, &no_spec, &err), -EINVAL);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(paddock_store_put_sandbox(st, NULL, &err), -EINVAL);
	assert_int_equal(paddock_store_set_state(st, "x", NULL, &err), -EINVAL);
	assert_int_equal(paddock_store_list_sandboxes(st, NULL, NULL, &err), -EINVAL);
	assert_int_equal(paddock_store_add_event(st, NULL, 1, "n", NULL, NULL, &err), -EINVAL);
	assert_int_equal(paddock_store_end_exec(st, "x", 1, 0, "{}", &err), -EINVAL);
	assert_int_equal(paddock_store_begin(NULL, &err), -EINVAL);
	assert_null(paddock_store_free(NULL));
	paddock_store_free(st);
}

static void test_execs(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct exec_rows rows;

	put_sandbox(st, "sb_1", 1);
	put_sandbox(st, "sb_2", 2);
	for (uint64_t i = 1; i <= 5; i++) {
		const struct paddock_store_exec ex = {
			.sandbox_id = "sb_1",
			.exec_id = 6 - i, /* inserted out of order */
			.pid = (int32_t)(100 + i),
			.tag = i == 1 ? "build" : NULL,
			.argv_json = "[\"sh\",\"-c\",\"true\"]",
			.background = i % 2 == 0,
			.pty = i == 3,
			.started_ms = (int64_t)(1000 + i),
		};
		CHECK(paddock_store_put_exec(st, &ex, &err), err);
	}
	const struct paddock_store_exec other = {
		.sandbox_id = "sb_2",
		.exec_id = 1,
		.argv_json = "[]",
		.started_ms = 1,
		.ended_ms = 2,
		.result_json = "{\"exit\":0}",
	};
	CHECK(paddock_store_put_exec(st, &other, &err), err);

	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.n, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(rows.row[i].exec_id, i + 1);
		assert_string_equal(rows.row[i].sandbox_id, "sb_1");
		assert_true(rows.row[i].result_null);
		assert_int_equal(rows.row[i].ended_ms, 0);
	}
	/* exec 5 was put first (i = 1) */
	assert_int_equal(rows.row[4].pid, 101);
	assert_false(rows.row[4].tag_null);
	assert_string_equal(rows.row[4].tag, "build");
	assert_true(rows.row[0].tag_null);
	assert_true(rows.row[3].background); /* exec 4: i = 2 */
	assert_false(rows.row[4].background);
	assert_true(rows.row[2].pty); /* exec 3: i = 3 */
	assert_false(rows.row[1].pty);
	assert_string_equal(rows.row[0].argv, "[\"sh\",\"-c\",\"true\"]");
	assert_int_equal(rows.row[0].started_ms, 1005);

	/* end 1..4, exec 1 last: the most recently ended are 1 and 4 */
	CHECK(paddock_store_end_exec(st, "sb_1", 2, 2000, "{\"exit\":2}", &err), err);
	CHECK(paddock_store_end_exec(st, "sb_1", 3, 3000, "{\"exit\":3}", &err), err);
	CHECK(paddock_store_end_exec(st, "sb_1", 4, 4000, "{\"exit\":4}", &err), err);
	CHECK(paddock_store_end_exec(st, "sb_1", 1, 5000, "{\"reason\":\"oom\"}", &err), err);
	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.row[0].ended_ms, 5000);
	assert_string_equal(rows.row[0].result, "{\"reason\":\"oom\"}");
	assert_true(rows.row[4].result_null);

	int pruned = paddock_store_prune_execs(st, "sb_1", 2, &err);
	CHECK(pruned, err);
	assert_int_equal(pruned, 2);
	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.n, 3);
	assert_int_equal(rows.row[0].exec_id, 1);
	assert_int_equal(rows.row[1].exec_id, 4);
	assert_int_equal(rows.row[2].exec_id, 5); /* still running: never pruned */
	pruned = paddock_store_prune_execs(st, "sb_1", 0, &err);
	assert_int_equal(pruned, 2);
	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.n, 1);
	assert_int_equal(rows.row[0].exec_id, 5);
	/* another sandbox's execs are untouched */
	list_execs(st, "sb_2", &rows);
	assert_int_equal(rows.n, 1);
	assert_string_equal(rows.row[0].result, "{\"exit\":0}");

	/* put replaces */
	const struct paddock_store_exec again = {
		.sandbox_id = "sb_1",
		.exec_id = 5,
		.pid = 7,
		.argv_json = "[\"x\"]",
		.started_ms = 9,
	};
	CHECK(paddock_store_put_exec(st, &again, &err), err);
	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.n, 1);
	assert_int_equal(rows.row[0].pid, 7);
	assert_true(rows.row[0].tag_null);

	/* the largest exec id round-trips and sorts last; beyond it is refused */
	struct paddock_store_exec big = again;
	big.exec_id = INT64_MAX;
	CHECK(paddock_store_put_exec(st, &big, &err), err);
	list_execs(st, "sb_1", &rows);
	assert_int_equal(rows.n, 2);
	assert_true(rows.row[1].exec_id == (uint64_t)INT64_MAX);
	big.exec_id = (uint64_t)INT64_MAX + 1;
	assert_int_equal(paddock_store_put_exec(st, &big, &err), -EINVAL);

	/* unknown sandbox or exec */
	assert_int_equal(paddock_store_end_exec(st, "sb_1", 99, 1, "{}", &err), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(paddock_store_end_exec(st, "sb_9", 5, 1, "{}", &err), -ENOENT);
	struct paddock_store_exec orphan = again;
	orphan.sandbox_id = "sb_9";
	memset(&err, 0, sizeof(err));
	assert_int_equal(paddock_store_put_exec(st, &orphan, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "sb_9"));
	list_execs(st, "sb_9", &rows);
	assert_int_equal(rows.n, 0);

	paddock_store_free(st);
}

static void test_events(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct event_rows rows;
	struct sandbox_rows sbs;
	int64_t seq[10], last = 0;

	put_sandbox(st, "sb_a", 1);
	put_sandbox(st, "sb_b", 2);
	int64_t daemon_seq = add_event(st, NULL, "{\"event\":\"daemon.started\"}");
	for (int i = 0; i < 10; i++) {
		char json[64];

		snprintf(json, sizeof(json), "{\"i\":%d}", i);
		seq[i] = add_event(st, "sb_a", json);
		assert_true(seq[i] > last);
		last = add_event(st, "sb_b", "{}");
		assert_true(last > seq[i]);
	}

	list_events(st, "sb_a", 0, 100, &rows);
	assert_int_equal(rows.n, 10);
	for (int i = 0; i < 10; i++) {
		char json[64];

		snprintf(json, sizeof(json), "{\"i\":%d}", i);
		assert_int_equal(rows.seq[i], seq[i]);
		assert_string_equal(rows.json[i], json);
	}
	list_events(st, "sb_a", seq[4], 3, &rows);
	assert_int_equal(rows.n, 3);
	assert_int_equal(rows.seq[0], seq[5]);
	assert_int_equal(rows.seq[2], seq[7]);
	list_events(st, "sb_a", seq[9], 100, &rows);
	assert_int_equal(rows.n, 0);
	list_events(st, "sb_a", 0, 0, &rows);
	assert_int_equal(rows.n, 0);
	list_events(st, NULL, 0, 100, &rows);
	assert_int_equal(rows.n, 1);
	assert_int_equal(rows.seq[0], daemon_seq);
	assert_string_equal(rows.json[0], "{\"event\":\"daemon.started\"}");

	/* next_seq: just above the sandbox's newest event */
	list_sandboxes(st, &sbs);
	assert_string_equal(sbs.row[0].id, "sb_a");
	assert_int_equal(sbs.row[0].next_seq, seq[9] + 1);
	assert_int_equal(sbs.row[1].next_seq, last + 1);

	int pruned = paddock_store_prune_events(st, "sb_a", 3, &err);
	CHECK(pruned, err);
	assert_int_equal(pruned, 7);
	list_events(st, "sb_a", 0, 100, &rows);
	assert_int_equal(rows.n, 3);
	assert_int_equal(rows.seq[0], seq[7]);
	assert_int_equal(rows.seq[2], seq[9]);
	assert_int_equal(paddock_store_prune_events(st, "sb_a", 3, &err), 0);
	assert_int_equal(paddock_store_prune_events(st, "sb_a", 0, &err), 3);
	list_events(st, "sb_a", 0, 100, &rows);
	assert_int_equal(rows.n, 0);
	/* the others are untouched */
	list_events(st, "sb_b", 0, 100, &rows);
	assert_int_equal(rows.n, 10);
	list_events(st, NULL, 0, 100, &rows);
	assert_int_equal(rows.n, 1);
	assert_int_equal(paddock_store_prune_events(st, NULL, 0, &err), 1);

	/* a seq is never reused, even when the newest events were pruned */
	assert_int_equal(paddock_store_prune_events(st, "sb_b", 0, &err), 10);
	assert_true(add_event(st, "sb_a", "{}") > last);

	/* NULL ret_seq is fine; an unknown sandbox is refused */
	CHECK(paddock_store_add_event(st, "sb_a", 1, "x.y", "{}", NULL, &err), err);
	memset(&err, 0, sizeof(err));
	assert_int_equal(paddock_store_add_event(st, "sb_zz", 1, "x.y", "{}", NULL, &err), -ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "sb_zz"));

	paddock_store_free(st);
}

/* put_sandbox is an update: it must not delete and re-insert, which would cascade */
static void test_put_keeps_execs_and_events(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct exec_rows execs;
	struct event_rows events;

	put_sandbox(st, "sb_1", 1);
	const struct paddock_store_exec ex = {
		.sandbox_id = "sb_1",
		.exec_id = 1,
		.argv_json = "[]",
		.started_ms = 1,
	};
	CHECK(paddock_store_put_exec(st, &ex, &err), err);
	add_event(st, "sb_1", "{}");
	put_sandbox(st, "sb_1", 5);
	CHECK(paddock_store_set_state(st, "sb_1", "stopped", &err), err);
	list_execs(st, "sb_1", &execs);
	assert_int_equal(execs.n, 1);
	list_events(st, "sb_1", 0, 10, &events);
	assert_int_equal(events.n, 1);
	paddock_store_free(st);
}

static void test_delete_cascades(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct exec_rows execs;
	struct event_rows events;

	put_sandbox(st, "sb_gone", 1);
	put_sandbox(st, "sb_kept", 2);
	for (uint64_t i = 1; i <= 3; i++) {
		struct paddock_store_exec ex = {
			.sandbox_id = "sb_gone",
			.exec_id = i,
			.argv_json = "[]",
			.started_ms = 1,
		};
		CHECK(paddock_store_put_exec(st, &ex, &err), err);
		ex.sandbox_id = "sb_kept";
		CHECK(paddock_store_put_exec(st, &ex, &err), err);
		add_event(st, "sb_gone", "{}");
		add_event(st, "sb_kept", "{}");
	}
	add_event(st, NULL, "{}");

	CHECK(paddock_store_delete_sandbox(st, "sb_gone", &err), err);
	list_execs(st, "sb_gone", &execs);
	assert_int_equal(execs.n, 0);
	list_events(st, "sb_gone", 0, 100, &events);
	assert_int_equal(events.n, 0);
	list_execs(st, "sb_kept", &execs);
	assert_int_equal(execs.n, 3);
	list_events(st, "sb_kept", 0, 100, &events);
	assert_int_equal(events.n, 3);
	list_events(st, NULL, 0, 100, &events);
	assert_int_equal(events.n, 1);

	/* the same id again starts empty */
	put_sandbox(st, "sb_gone", 3);
	list_execs(st, "sb_gone", &execs);
	assert_int_equal(execs.n, 0);
	list_events(st, "sb_gone", 0, 100, &events);
	assert_int_equal(events.n, 0);
	paddock_store_free(st);
}

static void read_header(const char *path, unsigned char hdr[100])
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, 100, 0), 100);
}

static void assert_mode_0600(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		fail_msg("stat '%s': %s", path, strerror(errno));
	if ((sb.st_mode & 07777) != 0600)
		fail_msg("'%s' has mode %04o, expected 0600", path, sb.st_mode & 07777);
}

static void test_file_mode_and_wal(void **state)
{
	struct fixture *fx = *state;
	char wal[320];
	unsigned char hdr[100];

	/* a umask that would leave the owner without write: still 0600 */
	mode_t old = umask(0277);
	paddock_store *st = open_store(fx);
	put_sandbox(st, "sb_1", 1);
	add_event(st, "sb_1", "{}");
	umask(old);

	assert_mode_0600(fx->path);
	/* the WAL exists while the store is open, with the main file's mode */
	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	assert_mode_0600(wal);

	/* file format bytes 18 and 19 (write and read version) are 2 in WAL mode */
	read_header(fx->path, hdr);
	assert_memory_equal(hdr, "SQLite format 3", 16);
	assert_int_equal(hdr[18], 2);
	assert_int_equal(hdr[19], 2);
	paddock_store_free(st);

	/* an existing file keeps its mode */
	assert_int_equal(chmod(fx->path, 0640), 0);
	st = open_store(fx);
	paddock_store_free(st);
	struct stat sb;
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0640);
}

/* PADDOCK_STORE_MEMORY: a whole store that touches no file, and is gone when freed */
static void test_memory(void **state)
{
	struct fixture *fx = *state;
	char cwd[4096], probe[320];
	struct sandbox_rows rows;
	paddock_error err = { 0 };
	paddock_store *st = NULL;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fx->dir), 0);
	CHECK(paddock_store_open(PADDOCK_STORE_MEMORY, &st, &err), err);
	put_sandbox(st, "sb_m", 7);
	add_event(st, "sb_m", "{}");
	list_sandboxes(st, &rows);
	assert_int_equal(rows.n, 1);
	assert_string_equal(rows.row[0].id, "sb_m");
	paddock_store_free(st);
	/* no file in the working directory, nor anywhere a path could name */
	snprintf(probe, sizeof(probe), "%s/:memory:", fx->dir);
	assert_int_equal(access(probe, F_OK), -1);
	/* a new one starts empty */
	CHECK(paddock_store_open(PADDOCK_STORE_MEMORY, &st, &err), err);
	list_sandboxes(st, &rows);
	assert_int_equal(rows.n, 0);
	paddock_store_free(st);
	assert_int_equal(chdir(cwd), 0);
}

static void test_reopen(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct sandbox_rows sbs;
	struct exec_rows execs;
	struct event_rows events;

	put_sandbox(st, "sb_1", 1);
	const struct paddock_store_exec ex = {
		.sandbox_id = "sb_1",
		.exec_id = 3,
		.pid = 9,
		.argv_json = "[\"a\"]",
		.started_ms = 1,
	};
	CHECK(paddock_store_put_exec(st, &ex, &err), err);
	int64_t seq = add_event(st, "sb_1", "{\"a\":1}");
	paddock_store_free(st);

	st = open_store(fx);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 1);
	assert_string_equal(sbs.row[0].handle, "{\"pid\":42}");
	assert_int_equal(sbs.row[0].next_seq, seq + 1);
	list_execs(st, "sb_1", &execs);
	assert_int_equal(execs.n, 1);
	assert_int_equal(execs.row[0].pid, 9);
	list_events(st, "sb_1", 0, 10, &events);
	assert_int_equal(events.n, 1);
	assert_string_equal(events.json[0], "{\"a\":1}");
	assert_true(add_event(st, "sb_1", "{}") > seq);
	paddock_store_free(st);
}

/* paddockd killed with SIGKILL: everything it committed is there at the next open */
static void test_survives_sigkill(void **state)
{
	struct fixture *fx = *state;
	struct sandbox_rows sbs;
	struct event_rows events;
	int status;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		paddock_error err = { 0 };
		paddock_store *st = NULL;
		const struct paddock_store_sandbox sb = {
			.id = "sb_k",
			.tenant = "t",
			.state = "running",
			.spec_json = "{}",
			.handle_json = "{\"init_pid\":1234}",
		};

		if (paddock_store_open(fx->path, &st, &err) < 0 ||
		    paddock_store_put_sandbox(st, &sb, &err) < 0 ||
		    paddock_store_add_event(st, "sb_k", 1, "a.b", "{\"n\":1}", NULL, &err) < 0 ||
		    paddock_store_begin(st, &err) < 0 ||
		    paddock_store_add_event(st, "sb_k", 2, "a.b", "{\"n\":2}", NULL, &err) < 0 ||
		    paddock_store_commit(st, &err) < 0 ||
		    /* left open: lost with the process */
		    paddock_store_begin(st, &err) < 0 ||
		    paddock_store_add_event(st, "sb_k", 3, "a.b", "{\"n\":3}", NULL, &err) < 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);

	paddock_store *st = open_store(fx);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 1);
	assert_string_equal(sbs.row[0].handle, "{\"init_pid\":1234}");
	list_events(st, "sb_k", 0, 10, &events);
	assert_int_equal(events.n, 2);
	assert_string_equal(events.json[1], "{\"n\":2}");
	paddock_store_free(st);
}

static void write_file(const char *path, const void *data, size_t len, off_t offset)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, offset), (ssize_t)len);
}

static void test_not_a_store(void **state)
{
	struct fixture *fx = *state;
	paddock_error err = { 0 };
	paddock_store *st = NULL;
	char text[4096], other[320], link[320];

	memset(text, 'x', sizeof(text));
	memcpy(text, "not a database\n", 15);
	write_file(fx->path, text, sizeof(text), 0);
	assert_int_equal(paddock_store_open(fx->path, &st, &err), -EUCLEAN);
	assert_null(st);
	assert_int_equal(err.code, EUCLEAN);
	assert_non_null(strstr(err.msg, "state.db"));
	assert_non_null(strstr(err.msg, "not a database"));
	/* and it was left alone */
	unsigned char hdr[100];
	read_header(fx->path, hdr);
	assert_memory_equal(hdr, "not a database\n", 15);

	/* a directory */
	snprintf(other, sizeof(other), "%s/dir.db", fx->dir);
	assert_int_equal(mkdir(other, 0700), 0);
	assert_true(paddock_store_open(other, &st, &err) < 0);
	assert_null(st);

	/* a symlink to a good path is refused, not followed */
	snprintf(other, sizeof(other), "%s/real.db", fx->dir);
	snprintf(link, sizeof(link), "%s/link.db", fx->dir);
	assert_int_equal(symlink(other, link), 0);
	assert_int_equal(paddock_store_open(link, &st, &err), -ELOOP);
	assert_null(st);
	assert_int_equal(access(other, F_OK), -1);

	/* a missing directory */
	snprintf(other, sizeof(other), "%s/missing/state.db", fx->dir);
	assert_int_equal(paddock_store_open(other, &st, &err), -ENOENT);
}

/* Every page but the first overwritten: errors from open or from a walk, never a crash. */
static void test_corrupt_store(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	unsigned char hdr[100];
	struct stat sb;
	int r;

	put_sandbox(st, "sb_1", 1);
	add_event(st, "sb_1", "{}");
	paddock_store_free(st);

	read_header(fx->path, hdr);
	size_t page = (size_t)hdr[16] << 8 | hdr[17];
	if (page == 1)
		page = 65536;
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_true((size_t)sb.st_size > page);
	char *junk = malloc((size_t)sb.st_size - page);
	assert_non_null(junk);
	memset(junk, 0xa5, (size_t)sb.st_size - page);
	write_file(fx->path, junk, (size_t)sb.st_size - page, (off_t)page);
	free(junk);

	st = NULL;
	r = paddock_store_open(fx->path, &st, &err);
	if (r >= 0) {
		struct sandbox_rows rows = { 0 };

		memset(&err, 0, sizeof(err));
		r = paddock_store_list_sandboxes(st, collect_sandbox, &rows, &err);
		paddock_store_free(st);
	}
	assert_int_equal(r, -EUCLEAN);
	assert_int_equal(err.code, EUCLEAN);
	assert_non_null(strstr(err.msg, "malformed"));
}

static void test_newer_schema_refused(void **state)
{
	struct fixture *fx = *state;
	paddock_error err = { 0 };
	paddock_store *st = open_store(fx);
	unsigned char hdr[100];

	paddock_store_free(st);
	/* PRAGMA user_version is the big-endian int at offset 60 of the header */
	write_file(fx->path, (const unsigned char[]){ 0, 0, 0, 99 }, 4, 60);
	st = NULL;
	assert_int_equal(paddock_store_open(fx->path, &st, &err), -EPROTO);
	assert_null(st);
	assert_non_null(strstr(err.msg, "schema version 99"));
	read_header(fx->path, hdr);
	assert_int_equal(hdr[63], 99);
}

static void test_hostile_strings(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct sandbox_rows sbs;
	struct exec_rows execs;
	struct event_rows events;
	const char *id = "sb_'\"; DROP TABLE sandboxes; --";
	const char *tenant = "%s%n%x \\ ?1 :a @b $c";
	/* not valid UTF-8, control bytes, a 4-byte sequence: stored as bytes */
	const char *spec = "{\"x\":\"\xff\xfe\x01\x1b[31m\x7f\xf0\x9f\xa6\x99 caf\xc3\xa9\"}";
	const char *meta = "{\"k\":\"line1\\nline2\",\"like\":\"%_\"}\n\r\t";
	const char *tag = "'); DELETE FROM execs; SELECT ('";

	const struct paddock_store_sandbox sb = {
		.id = id,
		.tenant = tenant,
		.state = "running'--",
		.spec_json = spec,
		.metadata_json = meta,
		.handle_json = "\"\"''",
		.created_ms = 1,
	};
	CHECK(paddock_store_put_sandbox(st, &sb, &err), err);
	put_sandbox(st, "sb_plain", 2);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 2);
	assert_string_equal(sbs.row[0].id, id);
	assert_string_equal(sbs.row[0].tenant, tenant);
	assert_string_equal(sbs.row[0].state, "running'--");
	assert_string_equal(sbs.row[0].spec, spec);
	assert_string_equal(sbs.row[0].metadata, meta);
	assert_string_equal(sbs.row[0].handle, "\"\"''");

	CHECK(paddock_store_set_state(st, id, tag, &err), err);
	const struct paddock_store_exec ex = {
		.sandbox_id = id,
		.exec_id = 1,
		.tag = tag,
		.argv_json = spec,
		.started_ms = 1,
	};
	CHECK(paddock_store_put_exec(st, &ex, &err), err);
	CHECK(paddock_store_end_exec(st, id, 1, 2, meta, &err), err);
	add_event(st, id, spec);

	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 2);
	assert_string_equal(sbs.row[0].state, tag);
	list_execs(st, id, &execs);
	assert_int_equal(execs.n, 1);
	assert_string_equal(execs.row[0].tag, tag);
	assert_string_equal(execs.row[0].argv, spec);
	assert_string_equal(execs.row[0].result, meta);
	list_events(st, id, 0, 10, &events);
	assert_int_equal(events.n, 1);
	assert_string_equal(events.json[0], spec);
	/* a LIKE-ish or prefix id matches nothing */
	list_execs(st, "sb_%", &execs);
	assert_int_equal(execs.n, 0);
	assert_int_equal(paddock_store_set_state(st, "sb_'", "x", &err), -ENOENT);
	/* the message quotes the id escaped */
	assert_int_equal(paddock_store_delete_sandbox(st, "sb_\n\x1b", &err), -ENOENT);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strchr(err.msg, '\x1b'));

	CHECK(paddock_store_delete_sandbox(st, id, &err), err);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 1);
	assert_string_equal(sbs.row[0].id, "sb_plain");
	paddock_store_free(st);
}

static void test_transactions(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct sandbox_rows sbs;
	struct event_rows events;

	assert_int_equal(paddock_store_commit(st, &err), -EINVAL);
	assert_int_equal(paddock_store_rollback(st, &err), 0);

	CHECK(paddock_store_begin(st, &err), err);
	assert_int_equal(paddock_store_begin(st, &err), -EALREADY);
	put_sandbox(st, "sb_1", 1);
	put_sandbox(st, "sb_2", 2);
	add_event(st, "sb_1", "{}");
	CHECK(paddock_store_rollback(st, &err), err);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 0);

	CHECK(paddock_store_begin(st, &err), err);
	put_sandbox(st, "sb_1", 1);
	/* a failed statement does not end the transaction */
	assert_int_equal(paddock_store_add_event(st, "sb_x", 1, "a.b", "{}", NULL, &err), -ENOENT);
	add_event(st, "sb_1", "{}");
	CHECK(paddock_store_commit(st, &err), err);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 1);
	list_events(st, "sb_1", 0, 10, &events);
	assert_int_equal(events.n, 1);

	/* free with a transaction open rolls it back */
	CHECK(paddock_store_begin(st, &err), err);
	put_sandbox(st, "sb_2", 2);
	paddock_store_free(st);
	st = open_store(fx);
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 1);
	paddock_store_free(st);
}

struct walk {
	paddock_store *st;
	int calls;
	int inner;
};

static int stop_at_second(const struct paddock_store_sandbox *sb, void *userdata)
{
	struct walk *w = userdata;

	(void)sb;
	return ++w->calls == 2 ? -ECANCELED : 0;
}

static int count_sandbox(const struct paddock_store_sandbox *sb, void *userdata)
{
	(void)sb;
	(*(int *)userdata)++;
	return 0;
}

/* the daemon's re-adoption walk: for each sandbox, look at it again and update it */
static int reenter(const struct paddock_store_sandbox *sb, void *userdata)
{
	struct walk *w = userdata;
	paddock_error err = { 0 };
	int n = 0;

	w->calls++;
	CHECK(paddock_store_list_sandboxes(w->st, count_sandbox, &n, &err), err);
	w->inner += n;
	CHECK(paddock_store_set_state(w->st, sb->id, "stopped", &err), err);
	CHECK(paddock_store_add_event(w->st, sb->id, 1, "sandbox.stopped", "{}", NULL, &err), err);
	return 0;
}

static void test_walks(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct sandbox_rows sbs;
	struct walk w = { .st = st };

	put_sandbox(st, "sb_1", 1);
	put_sandbox(st, "sb_2", 2);
	put_sandbox(st, "sb_3", 3);
	assert_int_equal(paddock_store_list_sandboxes(st, stop_at_second, &w, &err), -ECANCELED);
	assert_int_equal(err.code, ECANCELED);
	assert_int_equal(w.calls, 2);
	/* the cached statement was reset: the next walk starts over */
	list_sandboxes(st, &sbs);
	assert_int_equal(sbs.n, 3);

	w.calls = 0;
	CHECK(paddock_store_list_sandboxes(st, reenter, &w, &err), err);
	assert_int_equal(w.calls, 3);
	assert_int_equal(w.inner, 9);
	list_sandboxes(st, &sbs);
	for (size_t i = 0; i < sbs.n; i++) {
		assert_string_equal(sbs.row[i].state, "stopped");
		assert_true(sbs.row[i].next_seq > 1);
	}
	paddock_store_free(st);
}

/* The highest exec id of any sandbox: where a restarted supervisor starts. */
static void test_max_exec_id(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	uint64_t max = 99;

	CHECK(paddock_store_max_exec_id(st, &max, &err), err);
	assert_int_equal(max, 0);
	put_sandbox(st, "sb_1", 1);
	put_sandbox(st, "sb_2", 2);
	for (uint64_t id = 3; id <= 7; id += 4) {
		const struct paddock_store_exec ex = { .sandbox_id = id == 3 ? "sb_1" : "sb_2",
						       .exec_id = id,
						       .argv_json = "[]" };
		CHECK(paddock_store_put_exec(st, &ex, &err), err);
	}
	CHECK(paddock_store_max_exec_id(st, &max, &err), err);
	assert_int_equal(max, 7);
	/* a deleted sandbox's execs go with it */
	CHECK(paddock_store_delete_sandbox(st, "sb_2", &err), err);
	CHECK(paddock_store_max_exec_id(st, &max, &err), err);
	assert_int_equal(max, 3);
	paddock_store_free(st);
}

struct key_row {
	char sandbox_id[32], fingerprint[32];
	int64_t created_ms;
};

static int collect_key(const struct paddock_store_idempotency *k, void *userdata)
{
	struct key_row *row = userdata;

	snprintf(row->sandbox_id, sizeof(row->sandbox_id), "%s", k->sandbox_id);
	snprintf(row->fingerprint, sizeof(row->fingerprint), "%s", k->fingerprint);
	row->created_ms = k->created_ms;
	return 0;
}

static void test_idempotency(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct key_row row = { 0 };
	struct paddock_store_idempotency k = { .tenant = "alice",
					       .key = "k1",
					       .sandbox_id = "sb_1",
					       .fingerprint = "f1",
					       .created_ms = 1000 };

	assert_int_equal(paddock_store_get_idempotency(st, "alice", "k1", collect_key, &row, &err),
			 0);
	CHECK(paddock_store_put_idempotency(st, &k, &err), err);
	assert_int_equal(paddock_store_get_idempotency(st, "alice", "k1", collect_key, &row, &err),
			 1);
	assert_string_equal(row.sandbox_id, "sb_1");
	assert_string_equal(row.fingerprint, "f1");
	assert_int_equal(row.created_ms, 1000);
	/* one key per tenant: another's is another key */
	assert_int_equal(paddock_store_get_idempotency(st, "bob", "k1", collect_key, &row, &err),
			 0);
	k.sandbox_id = "sb_2";
	assert_int_equal(paddock_store_put_idempotency(st, &k, &err), -EEXIST);
	k.tenant = "bob";
	k.created_ms = 3000;
	CHECK(paddock_store_put_idempotency(st, &k, &err), err);
	/* kept without a sandbox row, and pruned by age */
	assert_int_equal(paddock_store_prune_idempotency(st, 2000, &err), 1);
	assert_int_equal(paddock_store_get_idempotency(st, "alice", "k1", collect_key, &row, &err),
			 0);
	assert_int_equal(paddock_store_get_idempotency(st, "bob", "k1", collect_key, &row, &err),
			 1);
	assert_string_equal(row.sandbox_id, "sb_2");
	k.key = NULL;
	assert_int_equal(paddock_store_put_idempotency(st, &k, &err), -EINVAL);
	paddock_store_free(st);
}

struct template_rows {
	int n;
	char names[4][32];
	char spec[4][64];
};

static int collect_template(const struct paddock_store_template *t, void *userdata)
{
	struct template_rows *rows = userdata;

	if (rows->n < 4) {
		snprintf(rows->names[rows->n], sizeof(rows->names[0]), "%s", t->name);
		snprintf(rows->spec[rows->n], sizeof(rows->spec[0]), "%s", t->spec_json);
	}
	rows->n++;
	return 0;
}

static void test_templates(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	struct template_rows rows = { 0 };
	struct paddock_store_template t = {
		.tenant = "alice", .name = "py", .spec_json = "{\"cwd\":\"/a\"}", .created_ms = 1
	};

	CHECK(paddock_store_put_template(st, &t, &err), err);
	t.name = "base";
	CHECK(paddock_store_put_template(st, &t, &err), err);
	/* a put of the same name replaces it */
	t.spec_json = "{\"cwd\":\"/b\"}";
	CHECK(paddock_store_put_template(st, &t, &err), err);
	t.tenant = "bob";
	CHECK(paddock_store_put_template(st, &t, &err), err);
	assert_int_equal(
		paddock_store_list_templates(st, "alice", NULL, collect_template, &rows, &err), 2);
	assert_string_equal(rows.names[0], "base");
	assert_string_equal(rows.spec[0], "{\"cwd\":\"/b\"}");
	assert_string_equal(rows.names[1], "py");
	/* one by name, and each tenant's own */
	rows.n = 0;
	assert_int_equal(
		paddock_store_list_templates(st, "alice", "py", collect_template, &rows, &err), 1);
	assert_string_equal(rows.spec[0], "{\"cwd\":\"/a\"}");
	assert_int_equal(
		paddock_store_list_templates(st, "carol", NULL, collect_template, &rows, &err), 0);
	CHECK(paddock_store_delete_template(st, "alice", "py", &err), err);
	assert_int_equal(paddock_store_delete_template(st, "alice", "py", &err), -ENOENT);
	assert_string_equal(err.field, "name");
	/* survives a reopen */
	paddock_store_free(st);
	st = open_store(fx);
	rows.n = 0;
	assert_int_equal(
		paddock_store_list_templates(st, "bob", "base", collect_template, &rows, &err), 1);
	t.spec_json = NULL;
	assert_int_equal(paddock_store_put_template(st, &t, &err), -EINVAL);
	paddock_store_free(st);
}

/* quick_check: a sound file is "ok", one whose pages were overwritten is -EUCLEAN. */
static void test_check(void **state)
{
	struct fixture *fx = *state;
	paddock_store *st = open_store(fx);
	paddock_error err = { 0 };
	unsigned char hdr[100];
	struct stat sb;

	for (int i = 0; i < 40; i++) {
		char id[16];

		snprintf(id, sizeof(id), "sb_%d", i);
		put_sandbox(st, id, i);
		add_event(st, id,
			  "{\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}");
	}
	CHECK(paddock_store_check(st, &err), err);
	paddock_store_free(st);
	/* the WAL is folded into the file at the last close: damage a page of the file */
	read_header(fx->path, hdr);
	size_t page = (size_t)hdr[16] << 8 | hdr[17];
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_true((size_t)sb.st_size >= 3 * page);
	char *junk = malloc(page);
	assert_non_null(junk);
	memset(junk, 0x5a, page);
	write_file(fx->path, junk, page, (off_t)(2 * page));
	free(junk);
	st = NULL;
	if (paddock_store_open(fx->path, &st, &err) >= 0) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(paddock_store_check(st, &err), -EUCLEAN);
		assert_int_equal(err.code, EUCLEAN);
		paddock_store_free(st);
	} else {
		assert_int_equal(err.code, EUCLEAN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sandboxes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_execs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_keeps_execs_and_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_cascades, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_mode_and_wal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_survives_sigkill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_strings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_exec_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idempotency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_templates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
