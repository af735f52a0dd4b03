/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes paddockd's request parsers with hostile JSON bodies: the first byte picks the
 * parser ('d': a decision of network/decisions; else odd: exec request, even: sandbox create:
 * spec + ttl_s + idle_timeout_s + metadata), the rest is the body. A parser must answer every input
 * with a status and never crash or leak.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pdd_http http;
	static struct daemon d = { .http = &http };
	struct box b = { .d = &d };
	struct request r = { .d = &d };
	json_t *o;

	if (size < 1 || size > 65536)
		return 0;
	o = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return 0;
	}
	if (data[0] == 'd') {
		struct decision_req q;

		/* POST .../network/decisions */
		if (!pdd_decision_parse(&r, o, &q) && (r.status < 400 || r.status > 499))
			abort();
	} else if (data[0] & 1) {
		struct exec_req q = { 0 };
		paddock_error err = { 0 };

		/* a refusal is always a client error (running out of memory is not a refusal) */
		if ((pdd_exec_parse(o, &q, &err) < 0 || svc_exec_check(&b, &q.q, &err) < 0) &&
		    err.code != ENOMEM) {
			int status = pdd_http_status(&err, NULL);

			if (status < 400 || status > 499)
				abort();
		}
		pdd_exec_req_release(&q);
	} else {
		paddock_spec *spec = NULL;
		paddock_error err = { 0 };
		int64_t ttl = 0, idle = 0;

		if (svc_create_parse(&d, "tenant", o, &spec, &ttl, &idle, &err) >= 0) {
			if (ttl < 0 || idle < 0 || !spec)
				abort();
			paddock_spec_free(spec);
		} else if (err.code <= 0) {
			abort();
		}
	}
	json_decref(o);
	return 0;
}
