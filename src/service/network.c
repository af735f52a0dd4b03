/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A live sandbox's egress policy replaced (service.h, svc_box_set_network()): checked as a
 * create's would be (the spec's validation, --max-network), put in force by libpaddock
 * (which closes the open connections the new policy refuses), and recorded; a change that
 * cannot be recorded is undone. paddockd's PUT .../network and E2B's network update are its
 * adapters. And a sandbox's decisions (network.unlisted "ask"): the context's ask handler is
 * the core's (svc_ask()), which keeps an allow_always rule in the sandbox's spec and record,
 * then tells the adapter's hook (paddockd's followers, MCP's elicitation).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

/* b's spec with `net` as its network section, checked: the rest of the spec is its own */
static int spec_with_network(struct box *b, json_t *net, paddock_spec **ret, char **ret_json,
			     paddock_error *err)
{
	_cleanup_json_ json_t *doc = json_pack("{s:O}", "network", net);
	_cleanup_free_ char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL, *json = NULL;
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	int k;

	if (!text)
		return paddock_fail(err, ENOMEM, "network policy");
	k = paddock_spec_new(&spec, err);
	if (k >= 0)
		k = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), err);
	if (k >= 0)
		k = paddock_spec_load_json(spec, text, strlen(text), err);
	if (k >= 0)
		k = paddock_spec_validate(spec, err);
	if (k >= 0)
		k = svc_check_max_network(b->d, spec, err);
	if (k >= 0)
		k = paddock_spec_to_json(spec, &json, err);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(spec);
	*ret_json = TAKE_PTR(json);
	return 0;
}

/* The policy in force goes back to the one recorded (b->spec_json). */
static void restore_network(struct box *b)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;

	if (paddock_spec_new(&spec, NULL) >= 0 &&
	    paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), NULL) >= 0)
		(void)paddock_sandbox_set_network(b->sb, spec, NULL);
}

int svc_box_set_network(struct box *b, json_t *net, paddock_error *err)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	_cleanup_free_ char *json = NULL;
	char *recorded;
	int closed, k;

	k = spec_with_network(b, net, &spec, &json, err);
	if (k < 0)
		return k;
	closed = paddock_sandbox_set_network(b->sb, spec, err);
	if (closed < 0)
		return closed;
	/* a restarted daemon re-adopts the sandbox with this policy */
	recorded = b->spec_json;
	b->spec_json = TAKE_PTR(json);
	json = recorded; /* freed on the way out, or put back */
	k = svc_box_persist(b, err);
	if (k < 0) {
		/* not recorded: the policy in force goes back to the one that is */
		free(b->spec_json);
		b->spec_json = TAKE_PTR(json);
		restore_network(b);
		return k;
	}
	return closed;
}

/* allow_always added a rule to the sandbox's policy: its spec says so, and so does its row. */
static void keep_rule(struct box *b, const char *rule)
{
	_cleanup_(paddock_spec_freep) paddock_spec *spec = NULL;
	char *json = NULL;

	if (paddock_spec_new(&spec, NULL) < 0 ||
	    paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), NULL) < 0 ||
	    paddock_spec_set(spec, "network.allow", rule, NULL) < 0 ||
	    paddock_spec_to_json(spec, &json, NULL) < 0)
		return; /* the rule is in force; GET .../network will not show it */
	free(b->spec_json);
	b->spec_json = json;
	svc_box_persist_or_warn(b); /* a restarted daemon re-adopts the sandbox with the rule */
}

void svc_ask(paddock_sandbox *sb, const struct paddock_ask *a, void *userdata)
{
	struct daemon *d = userdata;
	struct box *b;

	for (b = d->boxes; b && b->sb != sb; b = b->next)
		;
	if (!b)
		return; /* a sandbox being torn down or released: nobody follows it */
	if (a->decided && a->answer == PADDOCK_ASK_ALLOW_ALWAYS && strcmp(a->by, "policy") != 0)
		keep_rule(b, a->rule);
	if (d->hooks && d->hooks->box_asked)
		d->hooks->box_asked(b, a);
}
