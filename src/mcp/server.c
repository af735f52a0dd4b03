/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON-RPC 2.0 and the MCP lifecycle, for one session (docs/mcp.md). No I/O: a message comes
 * in through mcp_server_message(), answers leave through the send callback. A message from
 * the client is hostile; each one earns at most one answer, an error when it is not a valid
 * request, and nothing else happens.
 *
 * The server's own requests (elicitation/create: a person is asked, docs/mcp.md "Asking the
 * person") go out only on a transport that can carry them, to a client that declared the
 * capability; a response is taken only for an id this server sent and is still waiting for,
 * once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

/* The revisions this server speaks, newest first: the first is offered to others. */
static const char *const protocol_versions[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

#define INSTRUCTIONS                                                                               \
	"paddock runs code in isolated Linux sandboxes. Without sandbox_id, tools use a "          \
	"default sandbox made on first use. Files live under /workspace (relative paths "          \
	"resolve there). run_command runs a shell command and returns its exit code and "          \
	"output; start_process and read_process_output follow long-running commands. Network "     \
	"access is only what the operator allowed."

bool mcp_protocol_supported(const char *version)
{
	for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++)
		if (!strcmp(version, protocol_versions[i]))
			return true;
	return false;
}

struct mcp_call {
	struct mcp_server *srv;
	json_t *id;
	void (*cancel)(struct mcp_call *c, void *data);
	void *cancel_data;
	struct mcp_call *prev, *next;
};

/* A request this server sent and waits to hear back of. */
struct mcp_request {
	uint64_t seq; /* its id is "paddock-<seq>" */
	mcp_elicit_fn fn;
	void *userdata;
	struct mcp_request *next;
};

struct mcp_server {
	struct mcp_tools *tools;
	mcp_send_fn send;
	void *userdata;
	bool initialized;	/* initialize was answered */
	struct mcp_call *calls; /* in flight */
	unsigned n_calls;
	/* what initialize said: the revision agreed, and whether the client can elicit */
	const char *version;
	bool can_request; /* the transport carries the server's requests (stdio) */
	bool elicit_form;
	char client[96]; /* clientInfo's name and version, printable */
	struct mcp_request *requests;
	unsigned n_requests;
	uint64_t next_seq;
};

int mcp_server_new(struct mcp_tools *tools, mcp_send_fn send, void *userdata,
		   struct mcp_server **ret, paddock_error *err)
{
	struct mcp_server *s = calloc(1, sizeof(*s));

	if (!s)
		return paddock_fail(err, ENOMEM, "allocate the MCP server");
	s->tools = tools;
	s->send = send;
	s->userdata = userdata;
	mcp_tools_set_server(tools, s);
	*ret = s;
	return 0;
}

static void call_free(struct mcp_call *c)
{
	struct mcp_server *s = c->srv;

	s->n_calls--;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	json_decref(c->id);
	free(c);
}

static void call_cancel(struct mcp_call *c)
{
	if (c->cancel)
		c->cancel(c, c->cancel_data);
	call_free(c);
}

struct mcp_server *mcp_server_free(struct mcp_server *s)
{
	if (!s)
		return NULL;
	while (s->calls)
		call_cancel(s->calls);
	/* requests still out: nobody hears back of them (their owners end with the session) */
	while (s->requests) {
		struct mcp_request *q = s->requests;

		s->requests = q->next;
		free(q);
	}
	mcp_tools_set_server(s->tools, NULL);
	free(s);
	return NULL;
}

bool mcp_server_busy(const struct mcp_server *s)
{
	return s->calls != NULL;
}

/* ---- sending ---------------------------------------------------------------------------- */

static void send_message(struct mcp_server *s, json_t *msg)
{
	char *text;

	if (!msg)
		return;
	text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(15));
	json_decref(msg);
	if (!text)
		return; /* out of memory: the client's request times out */
	s->send(text, strlen(text), s->userdata);
	free(text);
}

/* `id` borrowed (NULL: null); `data` stolen (may be NULL) */
static void send_error(struct mcp_server *s, json_t *id, int code, const char *message,
		       json_t *data)
{
	json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);

	if (e && data)
		json_object_set_new(e, "data", data);
	else
		json_decref(data);
	send_message(s, json_pack("{s:s, s:O, s:o*}", "jsonrpc", "2.0", "id", id ? id : json_null(),
				  "error", e));
}

static void send_result(struct mcp_server *s, json_t *id, json_t *result)
{
	send_message(s,
		     json_pack("{s:s, s:O, s:o*}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* ---- calls ------------------------------------------------------------------------------ */

void mcp_call_result(struct mcp_call *c, json_t *structured)
{
	mcp_call_result_with(c, structured, NULL);
}

void mcp_call_result_with(struct mcp_call *c, json_t *structured, json_t *more)
{
	char *text =
		structured ? json_dumps(structured, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
	json_t *result;

	if (!text) {
		json_decref(structured);
		json_decref(more);
		send_error(c->srv, c->id, MCP_INTERNAL_ERROR, "out of memory", NULL);
		call_free(c);
		return;
	}
	result = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
			   "structuredContent", structured, "isError", 0);
	if (result && more)
		json_array_extend(json_object_get(result, "content"), more);
	json_decref(more);
	free(text);
	send_result(c->srv, c->id, result);
	call_free(c);
}

void mcp_call_error(struct mcp_call *c, const paddock_error *err)
{
	char buf[sizeof(err->msg) + sizeof(err->field) + 128];
	int n = 0;

	if (err->field[0] && strncmp(err->msg, err->field, strlen(err->field)) != 0)
		n = snprintf(buf, sizeof(buf), "%s: ", err->field);
	/* a refusal says why in its own words; a failed system call adds what the system said */
	if (err->code == EPERM || err->code == EINVAL || err->code == 0)
		snprintf(buf + n, sizeof(buf) - (size_t)n, "%s", err->msg);
	else
		paddock_error_format(err, buf + n, sizeof(buf) - (size_t)n);
	send_result(c->srv, c->id,
		    json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", buf,
			      "isError", 1));
	call_free(c);
}

void mcp_call_set_cancel(struct mcp_call *c, void (*cancel)(struct mcp_call *c, void *data),
			 void *data)
{
	c->cancel = cancel;
	c->cancel_data = data;
}

struct mcp_tools *mcp_call_tools(const struct mcp_call *c)
{
	return c->srv->tools;
}

/* ---- methods ---------------------------------------------------------------------------- */

/*
 * Elicitation is 2025-06-18's and later's (ISO dates compare as strings). A client declares
 * "elicitation": {} (form mode, as 2025-06-18 had it) or {"form": {}, "url": {}}; form is
 * what this server asks with.
 */
static void record_client(struct mcp_server *s, json_t *caps, json_t *info)
{
	json_t *e = json_object_get(caps, "elicitation");
	const char *name = json_string_value(json_object_get(info, "name"));
	const char *ver = json_string_value(json_object_get(info, "version"));
	size_t n = 0;

	s->elicit_form = strcmp(s->version, "2025-06-18") >= 0 && json_is_object(e) &&
			 (json_object_get(e, "form") || !json_object_get(e, "url"));
	snprintf(s->client, sizeof(s->client), "%.60s%s%.30s", name ? name : "an MCP client",
		 ver ? " " : "", ver ? ver : "");
	/* a name the client gave goes into records: printable ASCII only */
	for (char *p = s->client; *p; p++, n++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

static void do_initialize(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *v = params ? json_object_get(params, "protocolVersion") : NULL;
	const char *version = protocol_versions[0];

	if (s->initialized) {
		send_error(s, id, MCP_INVALID_REQUEST, "the session is already initialized", NULL);
		return;
	}
	if (!json_is_string(v)) {
		send_error(s, id, MCP_INVALID_PARAMS,
			   "params.protocolVersion: expected a string such as \"2025-11-25\"",
			   NULL);
		return;
	}
	for (size_t i = 0; i < sizeof(protocol_versions) / sizeof(protocol_versions[0]); i++)
		if (!strcmp(json_string_value(v), protocol_versions[i]))
			version = protocol_versions[i];
	s->initialized = true;
	s->version = version;
	record_client(s, json_object_get(params, "capabilities"),
		      json_object_get(params, "clientInfo"));
	send_result(s, id,
		    json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
			      version, "capabilities", "tools", "listChanged", 0, "serverInfo",
			      "name", MCP_SERVER_NAME, "title", "paddock sandboxes", "version",
			      PADDOCK_VERSION, "instructions", INSTRUCTIONS));
}

static void do_tools_list(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *cursor = params ? json_object_get(params, "cursor") : NULL;

	if (cursor) {
		/* the whole list fits one page: no cursor was ever handed out */
		send_error(s, id, MCP_INVALID_PARAMS, "params.cursor: no such page", NULL);
		return;
	}
	send_result(s, id, json_pack("{s:o}", "tools", mcp_tools_list(s->tools)));
}

static void do_tools_call(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *name = params ? json_object_get(params, "name") : NULL;
	json_t *args = params ? json_object_get(params, "arguments") : NULL;
	struct mcp_call *c;
	json_t *empty = NULL;

	if (!json_is_string(name)) {
		send_error(s, id, MCP_INVALID_PARAMS, "params.name: expected the tool's name",
			   NULL);
		return;
	}
	if (args && !json_is_object(args) && !json_is_null(args)) {
		send_error(s, id, MCP_INVALID_PARAMS, "params.arguments: expected an object", NULL);
		return;
	}
	if (!mcp_tools_has(json_string_value(name))) {
		char msg[160];

		snprintf(msg, sizeof(msg), "params.name: no tool '%s'; tools/list names them",
			 PADDOCK_ESC(json_string_value(name)));
		send_error(s, id, MCP_INVALID_PARAMS, msg, NULL);
		return;
	}
	if (s->n_calls >= MCP_MAX_CALLS) {
		send_error(s, id, MCP_SERVER_BUSY,
			   "too many calls in flight; wait for some to answer", NULL);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		send_error(s, id, MCP_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	s->n_calls++;
	c->srv = s;
	c->id = json_incref(id);
	c->next = s->calls;
	if (s->calls)
		s->calls->prev = c;
	s->calls = c;
	if (!args || json_is_null(args))
		args = empty = json_object();
	/* answers now or later; c may be gone when this returns */
	mcp_tools_call(s->tools, c, json_string_value(name), args);
	json_decref(empty);
}

static void do_cancelled(struct mcp_server *s, json_t *params)
{
	json_t *id = params ? json_object_get(params, "requestId") : NULL;

	if (!id)
		return;
	for (struct mcp_call *c = s->calls; c; c = c->next)
		if (json_equal(c->id, id)) {
			call_cancel(c);
			return;
		}
	/* unknown or already answered: the race the specification allows; nothing to do */
}

static void handle_request(struct mcp_server *s, const char *method, json_t *id, json_t *params)
{
	if (!strcmp(method, "initialize"))
		return do_initialize(s, id, params);
	if (!strcmp(method, "ping"))
		return send_result(s, id, json_object());
	if (!s->initialized) {
		send_error(s, id, MCP_INVALID_REQUEST,
			   "the session is not initialized: send initialize first", NULL);
		return;
	}
	if (!strcmp(method, "tools/list"))
		return do_tools_list(s, id, params);
	if (!strcmp(method, "tools/call"))
		return do_tools_call(s, id, params);
	char msg[160];

	snprintf(msg, sizeof(msg), "no method '%s' (this server offers tools only)",
		 PADDOCK_ESC(method));
	send_error(s, id, MCP_METHOD_NOT_FOUND, msg, NULL);
}

static void handle_notification(struct mcp_server *s, const char *method, json_t *params)
{
	if (!strcmp(method, "notifications/cancelled"))
		do_cancelled(s, params);
	/* notifications/initialized and any other notification need nothing */
}

/* ---- the server's own requests ------------------------------------------------------------ */

void mcp_server_set_requests(struct mcp_server *s, bool can)
{
	s->can_request = can;
}

bool mcp_server_can_elicit(const struct mcp_server *s)
{
	return s && s->initialized && s->can_request && s->elicit_form;
}

const char *mcp_server_client(const struct mcp_server *s)
{
	return s->client[0] ? s->client : "an MCP client";
}

const char *mcp_server_version(const struct mcp_server *s)
{
	return s->version ? s->version : protocol_versions[0];
}

static void request_id(uint64_t seq, char *buf, size_t size)
{
	snprintf(buf, size, "paddock-%llu", (unsigned long long)seq);
}

int mcp_server_elicit(struct mcp_server *s, const char *message, json_t *schema, mcp_elicit_fn fn,
		      void *userdata, uint64_t *ret_seq, paddock_error *err)
{
	struct mcp_request *q;
	char id[32];

	if (!mcp_server_can_elicit(s)) {
		json_decref(schema);
		return paddock_fail(err, EOPNOTSUPP, "the client cannot be asked (no elicitation)");
	}
	if (s->n_requests >= MCP_MAX_REQUESTS) {
		json_decref(schema);
		return paddock_fail(err, EBUSY, "%u questions wait for the client already",
				    s->n_requests);
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		json_decref(schema);
		return paddock_fail(err, ENOMEM, "out of memory");
	}
	q->seq = ++s->next_seq;
	q->fn = fn;
	q->userdata = userdata;
	q->next = s->requests;
	s->requests = q;
	s->n_requests++;
	request_id(q->seq, id, sizeof(id));
	send_message(s, json_pack("{s:s, s:s, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", id,
				  "method", "elicitation/create", "params", "message", message,
				  "requestedSchema", schema));
	*ret_seq = q->seq;
	return 0;
}

static struct mcp_request *request_take(struct mcp_server *s, uint64_t seq)
{
	for (struct mcp_request **pp = &s->requests; *pp; pp = &(*pp)->next)
		if ((*pp)->seq == seq) {
			struct mcp_request *q = *pp;

			*pp = q->next;
			s->n_requests--;
			return q;
		}
	return NULL;
}

void mcp_server_request_cancel(struct mcp_server *s, uint64_t seq, const char *reason)
{
	struct mcp_request *q = s ? request_take(s, seq) : NULL;
	char id[32];

	if (!q)
		return;
	free(q);
	request_id(seq, id, sizeof(id));
	send_message(s, json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method",
				  "notifications/cancelled", "params", "requestId", id, "reason",
				  reason));
}

/* A response: its request's callback hears it, once; any other response is ignored. */
static void take_response(struct mcp_server *s, json_t *id, json_t *result, json_t *error)
{
	const char *text = json_string_value(id);
	struct mcp_request *q;
	unsigned long long seq;
	char *end;

	if (!text || strncmp(text, "paddock-", 8) != 0)
		return;
	errno = 0;
	seq = strtoull(text + 8, &end, 10);
	if (errno || *end || end == text + 8)
		return;
	q = request_take(s, seq);
	if (!q)
		return; /* cancelled, answered already, or never sent */
	/* a result that is no object is no answer: the callback hears an error */
	q->fn(json_is_object(result) ? result : NULL,
	      json_is_object(result) ? NULL
	      : json_is_string(json_object_get(error, "message"))
		      ? json_string_value(json_object_get(error, "message"))
		      : "the client answered with no result",
	      q->userdata);
	free(q);
}

void mcp_server_message(struct mcp_server *s, const char *data, size_t len)
{
	json_error_t jerr;
	json_t *msg, *id, *method, *params;
	size_t i;

	for (i = 0; i < len && strchr(" \t\r\n", data[i]); i++)
		;
	if (i == len)
		return; /* a blank line */
	msg = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!msg) {
		char m[256];

		snprintf(m, sizeof(m), "not JSON: %s at byte %d", jerr.text, jerr.position);
		send_error(s, NULL, MCP_PARSE_ERROR, m, NULL);
		return;
	}
	if (!json_is_object(msg)) {
		send_error(s, NULL, MCP_INVALID_REQUEST,
			   json_is_array(msg)
				   ? "batches are not supported: send one message per line"
				   : "a message must be a JSON object",
			   NULL);
		goto out;
	}
	id = json_object_get(msg, "id");
	method = json_object_get(msg, "method");
	params = json_object_get(msg, "params");
	if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
		send_error(s, NULL, MCP_INVALID_REQUEST, "jsonrpc: expected \"2.0\"", NULL);
		goto out;
	}
	if (!method) {
		/* a response: to a request of this server's, or to nothing (then ignored) */
		if (!json_object_get(msg, "result") && !json_object_get(msg, "error"))
			send_error(s, NULL, MCP_INVALID_REQUEST,
				   "a message needs a method (or result/error)", NULL);
		else
			take_response(s, id, json_object_get(msg, "result"),
				      json_object_get(msg, "error"));
		goto out;
	}
	if (!json_is_string(method)) {
		send_error(s, NULL, MCP_INVALID_REQUEST, "method: expected a string", NULL);
		goto out;
	}
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		send_error(s, NULL, MCP_INVALID_REQUEST, "id: expected a string or an integer",
			   NULL);
		goto out;
	}
	if (params && !json_is_object(params)) {
		if (id)
			send_error(s, id, MCP_INVALID_PARAMS, "params: expected an object", NULL);
		goto out;
	}
	if (id)
		handle_request(s, json_string_value(method), id, params);
	else
		handle_notification(s, json_string_value(method), params);
out:
	json_decref(msg);
}

void mcp_server_oversized(struct mcp_server *s, size_t limit)
{
	char m[128];

	snprintf(m, sizeof(m), "message longer than %zu bytes: dropped", limit);
	send_error(s, NULL, MCP_INVALID_REQUEST, m, NULL);
}
