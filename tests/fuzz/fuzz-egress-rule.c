/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes egress rule parsing and the decisions made with them: the input's lines are rules
 * (a leading '!' makes a deny rule), then each line is asked for as a name, and the first
 * bytes as an address. Nothing may crash, and a refused rule must leave the policy as it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_egress_policy p;
	const struct pd_egress_rule *r;
	char *text, *line, *save = NULL;

	if (size > 8192)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	pd_egress_policy_init(&p, (enum pd_egress_mode)(size % _PD_EGRESS_MODE_MAX));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		paddock_error err = { 0 };
		bool deny = line[0] == '!';
		size_t before = p.n_rules;

		if (pd_egress_policy_add(&p, line + deny, deny, "network", &err) < 0 &&
		    p.n_rules != before)
			abort();
		(void)pd_egress_allow_name(&p, line, (uint16_t)size, &r);
		if (r && r->text[0] == '\0')
			abort();
	}
	if (size >= 16) {
		(void)pd_egress_allow_addr(&p, AF_INET6, data, (uint16_t)size, size & 1, &r);
		(void)pd_egress_allow_addr(&p, AF_INET, data, 443, false, &r);
		(void)pd_addr_classify(AF_INET6, data);
	}
	pd_egress_policy_release(&p);
	free(text);
	return 0;
}
