/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A live sandbox's egress policy replaced (service.h, svc_box_set_network()): checked as a
 * create's would be (the spec's validation, --max-network), put in force by libpaddock
 * (which closes the open connections the new policy refuses), and recorded; a change that
 * cannot be recorded is undone. paddockd's PUT .../network and E2B's network update are its
 * adapters.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

int svc_box_set_network(struct box *b, json_t *net, paddock_error *err)
{
	json_t *doc = json_pack("{s:O}", "network", net);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL, *spec_json = NULL;
	paddock_spec *spec = NULL;
	int k;

	/* the rest of the spec is the sandbox's own: only its network section changes */
	k = text ? paddock_spec_new(&spec, err) : paddock_fail(err, ENOMEM, "network policy");
	if (k >= 0)
		k = paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json), err);
	if (k >= 0)
		k = paddock_spec_load_json(spec, text, strlen(text), err);
	if (k >= 0)
		k = paddock_spec_validate(spec, err);
	if (k >= 0)
		k = paddock_spec_to_json(spec, &spec_json, err);
	if (k >= 0)
		k = svc_check_max_network(b->d, spec_json, err);
	if (k >= 0)
		k = paddock_sandbox_set_network(b->sb, spec, err);
	if (k >= 0) {
		char *old = b->spec_json;
		int closed = k;

		b->spec_json = spec_json;
		spec_json = NULL;
		/* a restarted daemon re-adopts the sandbox with this policy */
		k = svc_box_persist(b, err);
		if (k >= 0)
			k = closed;
		if (k < 0) {
			/* not recorded: the policy in force goes back to the one that is */
			spec_json = b->spec_json;
			b->spec_json = old;
			old = NULL;
			paddock_spec_free(spec);
			spec = NULL;
			if (paddock_spec_new(&spec, NULL) >= 0 &&
			    paddock_spec_load_json(spec, b->spec_json, strlen(b->spec_json),
						   NULL) >= 0)
				(void)paddock_sandbox_set_network(b->sb, spec, NULL);
		}
		free(old);
	}
	free(spec_json);
	free(text);
	json_decref(doc);
	paddock_spec_free(spec);
	return k;
}
