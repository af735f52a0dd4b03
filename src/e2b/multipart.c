/* SPDX-License-Identifier: Apache-2.0 */
/* multipart/form-data for envd's POST /files: see multipart.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "multipart.h"

char *e2b_header_param(const char *v, size_t vlen, const char *key)
{
	const char *p = v, *end = v + vlen;
	size_t klen = strlen(key);

	/* skip the disposition type */
	p = memchr(p, ';', vlen);
	while (p && p < end) {
		const char *name;
		size_t nlen;

		p++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		name = p;
		while (p < end && *p != '=' && *p != ';')
			p++;
		nlen = (size_t)(p - name);
		while (nlen > 0 && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
			nlen--;
		if (p >= end || *p == ';')
			continue;
		p++; /* '=' */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		char *val = malloc((size_t)(end - p) + 1), *o = val;

		if (!val)
			return NULL;
		if (p < end && *p == '"') {
			/* quoted-string: backslash escapes, ends at the closing quote */
			for (p++; p < end && *p != '"'; p++) {
				if (*p == '\\' && p + 1 < end)
					p++;
				*o++ = *p;
			}
			if (p < end)
				p++;
		} else {
			while (p < end && *p != ';' && *p != ' ' && *p != '\t')
				*o++ = *p++;
		}
		*o = '\0';
		if (nlen == klen && strncasecmp(name, key, klen) == 0)
			return val;
		free(val);
		p = memchr(p, ';', (size_t)(end - p));
	}
	return NULL;
}

/* RFC 5987 ext-value "utf-8''%e2%82%ac" decoded in place; false when it is not one. */
static bool ext_value_decode(char *s)
{
	char *v = strstr(s, "''"), *o = s;

	if (!v || strncasecmp(s, "utf-8", 5) != 0 || v != s + 5)
		return false;
	for (v += 2; *v; v++) {
		if (*v == '%' && v[1] && v[2] && strchr("0123456789abcdefABCDEF", v[1]) &&
		    strchr("0123456789abcdefABCDEF", v[2])) {
			char hx[3] = { v[1], v[2], 0 };

			*o++ = (char)strtol(hx, NULL, 16);
			v += 2;
		} else {
			*o++ = *v;
		}
	}
	*o = '\0';
	return true;
}

void e2b_parts_free(struct e2b_part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(parts[i].name);
		free(parts[i].filename);
	}
	free(parts);
}

/* The part's Content-Disposition name and filename. */
static void part_headers(const char *h, size_t hlen, struct e2b_part *pt)
{
	const char *end = h + hlen;

	for (const char *line = h; line < end;) {
		const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
		const char *colon = memchr(line, ':', len);

		if (colon && (size_t)(colon - line) == 19 &&
		    strncasecmp(line, "Content-Disposition", 19) == 0) {
			const char *v = colon + 1;
			size_t vlen = len - 20;
			char *ext;

			free(pt->name);
			free(pt->filename);
			pt->name = e2b_header_param(v, vlen, "name");
			pt->filename = e2b_header_param(v, vlen, "filename");
			ext = e2b_header_param(v, vlen, "filename*");
			if (ext && ext_value_decode(ext)) {
				free(pt->filename);
				pt->filename = ext;
			} else {
				free(ext);
			}
		}
		line += len + (eol ? 2 : 0);
	}
}

bool e2b_multipart_parse(const char *body, size_t len, const char *boundary, struct e2b_part **ret,
			 size_t *ret_n, char *why, size_t why_size)
{
	char delim[FILES_MAX_BOUNDARY + 5];
	size_t dl = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary), n = 0;
	struct e2b_part *parts = NULL;
	const char *p, *end = body + len;

	/* the first delimiter may open the body (no preamble, so no CRLF before it) */
	if (len >= dl - 2 && memcmp(body, delim + 2, dl - 2) == 0) {
		p = body + dl - 2;
	} else {
		p = memmem(body, len, delim, dl);
		if (!p) {
			snprintf(why, why_size, "no multipart boundary in the body");
			return false;
		}
		p += dl;
	}
	for (;;) {
		const char *hend, *next;

		/* after a delimiter: "--" closes the body; else padding, then CRLF */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
			snprintf(why, why_size,
				 "malformed multipart body: expected CRLF after "
				 "a boundary");
			goto fail;
		}
		p += 2;
		if (n == FILES_MAX_PARTS) {
			snprintf(why, why_size, "more than %d parts in one upload",
				 FILES_MAX_PARTS);
			goto fail;
		}
		struct e2b_part *np = reallocarray(parts, n + 1, sizeof(*parts));
		if (!np) {
			snprintf(why, why_size, "out of memory");
			goto fail;
		}
		parts = np;
		parts[n] = (struct e2b_part){ 0 };
		n++;
		/* the part's headers, up to an empty line */
		if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
			hend = p;
		} else {
			size_t room = (size_t)(end - p);

			hend = memmem(p,
				      room < FILES_MAX_PART_HEADER + 4 ? room
								       : FILES_MAX_PART_HEADER + 4,
				      "\r\n\r\n", 4);
			if (!hend) {
				snprintf(why, why_size,
					 "malformed multipart body: a part's headers "
					 "do not end within %u bytes",
					 FILES_MAX_PART_HEADER);
				goto fail;
			}
			part_headers(p, (size_t)(hend - p), &parts[n - 1]);
			hend += 2;
		}
		p = hend + 2;
		next = memmem(p, (size_t)(end - p), delim, dl);
		if (!next) {
			snprintf(why, why_size,
				 "malformed multipart body: a part does not end "
				 "with the boundary");
			goto fail;
		}
		parts[n - 1].data = p;
		parts[n - 1].len = (size_t)(next - p);
		p = next + dl;
	}
	*ret = parts;
	*ret_n = n;
	return true;
fail:
	e2b_parts_free(parts, n);
	return false;
}

char *e2b_multipart_boundary(const char *ct)
{
	char *b = e2b_header_param(ct, strlen(ct), "boundary");

	if (b && (!*b || strlen(b) > FILES_MAX_BOUNDARY)) {
		free(b);
		return NULL;
	}
	return b;
}
