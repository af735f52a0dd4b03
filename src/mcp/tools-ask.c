/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asking the person at the client (network.unlisted "ask", docs/mcp.md): a sandbox's pending
 * decision becomes an elicitation request; the client's answer, or anything but an accepted
 * valid decision (a no), goes back to the backend. The question is withdrawn when the
 * decision ends elsewhere or the sandbox goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp.h"
#include "tools-internal.h"

/* ---- asking the person (network.unlisted "ask", docs/mcp.md) ------------------------------- */

static void ask_free(struct mcp_tools *t, struct ask *a)
{
	for (struct ask **pp = &t->asks; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	free(a->sandbox);
	free(a);
}

/* The questions about `sandbox` (NULL: all) end: the client is told (if it is still there). */
void tools_asks_drop(struct mcp_tools *t, const char *sandbox, const char *reason)
{
	for (struct ask *a = t->asks, *next; a; a = next) {
		next = a->next;
		if (sandbox && strcmp(a->sandbox, sandbox) != 0)
			continue;
		if (t->server && reason)
			mcp_server_request_cancel(t->server, a->seq, reason);
		ask_free(t, a);
	}
}

void mcp_tools_set_server(struct mcp_tools *t, struct mcp_server *s)
{
	if (!t)
		return;
	if (!s)
		tools_asks_drop(t, NULL, NULL); /* the server went, and its requests with it */
	t->server = s;
}

static void answer_for(struct mcp_tools *t, const char *sandbox, uint64_t id,
		       enum paddock_ask_answer a, const char *who)
{
	paddock_error err = { 0 };

	/* a sandbox destroyed meanwhile, a decision that timed out: nothing left to answer */
	(void)t->backend->ops->answer(t->backend, sandbox, id, a, who, &err);
}

/* The client's answer: accept with a decision, or decline or cancel (a no). */
static void elicited(json_t *result, const char *error, void *userdata)
{
	struct ask *q = userdata;
	struct mcp_tools *t = q->t;
	const char *action = json_string_value(json_object_get(result, "action"));
	const char *decision =
		json_string_value(json_object_get(json_object_get(result, "content"), "decision"));
	int a = PADDOCK_ASK_DENY;
	char who[128], *sandbox = q->sandbox;
	uint64_t id = q->id;

	if (action && !strcmp(action, "accept") && decision &&
	    paddock_ask_answer_from_string(decision) >= 0)
		a = paddock_ask_answer_from_string(decision);
	snprintf(who, sizeof(who), "%.80s, elicitation %s",
		 t->server ? mcp_server_client(t->server) : "an MCP client",
		 error ? "error"
		 : action && (!strcmp(action, "accept") || !strcmp(action, "decline") ||
			      !strcmp(action, "cancel"))
			 ? action
			 : "invalid");
	/* SECURITY: anything but an accepted, valid decision is a no */
	q->sandbox = NULL;
	ask_free(t, q);
	answer_for(t, sandbox, id, (enum paddock_ask_answer)a, who);
	free(sandbox);
}

static json_t *ask_schema(const struct mcp_tools *t, const struct mcp_ask *a)
{
	char title[320];
	json_t *decision;

	snprintf(title, sizeof(title), "Allow %s?", a->rule);
	/* 2025-11-25 titles each choice with oneOf; 2025-06-18 had enumNames */
	if (strcmp(mcp_server_version(t->server), "2025-11-25") >= 0)
		decision = json_pack("{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}", "type",
				     "string", "title", title, "oneOf", "const", "allow_once",
				     "title", "Allow once", "const", "allow_always", "title",
				     "Allow for this sandbox", "const", "deny", "title", "Deny");
	else
		decision = json_pack("{s:s, s:s, s:[s, s, s], s:[s, s, s]}", "type", "string",
				     "title", title, "enum", "allow_once", "allow_always", "deny",
				     "enumNames", "Allow once", "Allow for this sandbox", "Deny");
	return json_pack("{s:s, s:{s:o}, s:[s]}", "type", "object", "properties", "decision",
			 decision, "required", "decision");
}

void tools_on_ask(const struct mcp_ask *a, void *userdata)
{
	struct mcp_tools *t = userdata;
	paddock_error err = { 0 };
	char message[768], within[40] = "";
	int64_t left_ms;
	struct ask *q;
	struct timespec now;

	if (a->decided) {
		/* answered here, elsewhere, or its time ran out: the question is moot */
		for (q = t->asks; q; q = q->next)
			if (q->id == a->id && !strcmp(q->sandbox, a->sandbox)) {
				snprintf(message, sizeof(message), "decided: %s by %s", a->answer,
					 a->by);
				mcp_server_request_cancel(t->server, q->seq, message);
				ask_free(t, q);
				break;
			}
		return;
	}
	if (!mcp_server_can_elicit(t->server))
		return answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY,
				  "the MCP client cannot ask a person (no elicitation)");
	clock_gettime(CLOCK_REALTIME, &now);
	left_ms = a->expires_ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	if (a->expires_ms > 0 && left_ms > 0)
		snprintf(within, sizeof(within), " within %lld s",
			 (long long)((left_ms + 999) / 1000));
	/* the host is a DNS name or an address (libpaddock's), nothing a sandbox can word */
	snprintf(message, sizeof(message),
		 "A command in sandbox %s wants to connect to %s, which its network policy does "
		 "not name. Allow it? \"Allow once\" lets the connections waiting now through; "
		 "\"Allow for this sandbox\" adds the rule %s. No answer%s denies it.",
		 a->sandbox, a->rule, a->rule, within);
	q = calloc(1, sizeof(*q));
	if (!q || !(q->sandbox = strdup(a->sandbox))) {
		free(q);
		return answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY, "out of memory");
	}
	q->t = t;
	q->id = a->id;
	q->next = t->asks;
	t->asks = q;
	if (mcp_server_elicit(t->server, message, ask_schema(t, a), elicited, q, &q->seq, &err) <
	    0) {
		ask_free(t, q);
		answer_for(t, a->sandbox, a->id, PADDOCK_ASK_DENY, err.msg);
	}
}
