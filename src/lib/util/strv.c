/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>

#include "util/cleanup.h"
#include "util/strv.h"

void pd_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

size_t pd_strv_length(char *const *v)
{
	size_t n = 0;

	if (v)
		while (v[n])
			n++;
	return n;
}
