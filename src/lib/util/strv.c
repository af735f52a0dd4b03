/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int pd_strv_unpack(const char **pos, const char *end, uint32_t n, uint32_t max,
		   bool (*ok)(const char *s), char ***ret)
{
	const char *p = *pos;
	char **v;

	if (n > max)
		return -EPROTO;
	v = calloc((size_t)n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));

		if (!z || (ok && !ok(p))) {
			free(v);
			return -EPROTO;
		}
		v[i] = (char *)p;
		p = z + 1;
	}
	*pos = p;
	*ret = v;
	return 0;
}

bool pd_str_has_assignment(const char *s)
{
	return strchr(s, '=') != NULL;
}

bool pd_str_is_named_assignment(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq && eq != s;
}
