/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references (image-ref.h), following the distribution project's grammar
 * (reference/regexp.go) closely enough that what docker, podman and skopeo accept parses
 * the same here, and nothing else does.
 */
#include "image-ref.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static bool path_component_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	while (i < n) {
		if (lower_alnum(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.' || (s[i] == '_' && (i + 1 >= n || s[i + 1] != '_'))) {
			i++;
		} else if (s[i] == '_') {
			i += 2;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i >= n || !lower_alnum(s[i]))
			return false;
	}
	return true;
}

/* host[:port]: labels of [A-Za-z0-9-] joined by '.', or a bracketed IPv6 address. */
static bool domain_ok(const char *s, size_t n)
{
	const char *colon = NULL;
	size_t host_n = n;

	if (n == 0 || n > PD_REF_DOMAIN_MAX)
		return false;
	if (s[0] == '[') {
		const char *end = memchr(s, ']', n);

		if (!end || end - s < 3)
			return false;
		for (const char *p = s + 1; p < end; p++)
			if (!(alnum(*p) || *p == ':' || *p == '.'))
				return false;
		host_n = (size_t)(end - s) + 1;
		if (host_n < n && s[host_n] != ':')
			return false;
		colon = host_n < n ? s + host_n : NULL;
	} else {
		colon = memchr(s, ':', n);
		host_n = colon ? (size_t)(colon - s) : n;
		for (size_t i = 0; i < host_n; i++) {
			char c = s[i];

			if (!(alnum(c) || c == '-' || c == '.'))
				return false;
			if ((c == '.' || c == '-') && (i == 0 || i + 1 == host_n))
				return false;
			if (c == '.' && s[i - 1] == '.')
				return false;
		}
		if (host_n == 0)
			return false;
	}
	if (colon) {
		size_t port_n = n - (size_t)(colon - s) - 1;

		if (port_n == 0 || port_n > 5)
			return false;
		for (size_t i = 1; i <= port_n; i++)
			if (colon[i] < '0' || colon[i] > '9')
				return false;
	}
	return true;
}

static bool tag_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PD_REF_TAG_MAX || !(alnum(s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

int pd_image_ref_parse(const char *s, const char *field, struct pd_image_ref *ret,
		       paddock_error *err)
{
	struct pd_image_ref r = { 0 };
	char buf[PD_REF_MAX + PD_DIGEST_MAX + 8];
	char *at, *rest, *slash, *colon;
	size_t n;

	if (!s || !s[0])
		return pd_fail_field(err, EINVAL, field,
				     "expected an image reference, got nothing");
	if (strlen(s) >= sizeof(buf) - 1)
		return pd_fail_field(err, EINVAL, field,
				     "expected an image reference of at most %d bytes", PD_REF_MAX);
	snprintf(buf, sizeof(buf), "%s", s);
	at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		if (!pd_digest_valid(at + 1))
			return pd_fail_field(err, EINVAL, field,
					     "expected a digest 'sha256:' and 64 hex digits after "
					     "'@', got '%s'",
					     PD_ESC(at + 1));
		snprintf(r.digest, sizeof(r.digest), "%s", at + 1);
	}
	rest = buf;
	slash = strchr(rest, '/');
	/* the first component is a domain when it looks like one (docker's rule) */
	if (slash &&
	    (memchr(rest, '.', (size_t)(slash - rest)) ||
	     memchr(rest, ':', (size_t)(slash - rest)) ||
	     ((size_t)(slash - rest) == 9 && !strncmp(rest, "localhost", 9)) || rest[0] == '[')) {
		n = (size_t)(slash - rest);
		if (!domain_ok(rest, n))
			return pd_fail_field(err, EINVAL, field,
					     "expected a registry host[:port] in '%s'", PD_ESC(s));
		memcpy(r.domain, rest, n);
		rest = slash + 1;
	} else {
		snprintf(r.domain, sizeof(r.domain), "%s", PD_REF_DEFAULT_DOMAIN);
	}
	/* a tag is after the last ':' of the last component */
	slash = strrchr(rest, '/');
	colon = strrchr(slash ? slash : rest, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_ok(colon + 1))
			return pd_fail_field(err, EINVAL, field,
					     "expected a tag of letters, digits, '_', '.' and '-' "
					     "(at most %d), got '%s'",
					     PD_REF_TAG_MAX, PD_ESC(colon + 1));
		snprintf(r.tag, sizeof(r.tag), "%s", colon + 1);
	}
	if (!rest[0])
		return pd_fail_field(err, EINVAL, field, "expected a repository name in '%s'",
				     PD_ESC(s));
	for (const char *p = rest; *p;) {
		size_t k = strcspn(p, "/");

		if (!path_component_ok(p, k))
			return pd_fail_field(err, EINVAL, field,
					     "expected lowercase path components of [a-z0-9._-] "
					     "in '%s'",
					     PD_ESC(s));
		p += k;
		if (*p == '/') {
			p++;
			if (!*p)
				return pd_fail_field(err, EINVAL, field,
						     "expected no trailing '/' in '%s'", PD_ESC(s));
		}
	}
	if (!strcmp(r.domain, PD_REF_DEFAULT_DOMAIN) && !strchr(rest, '/'))
		n = (size_t)snprintf(r.path, sizeof(r.path), "library/%s", rest);
	else
		n = (size_t)snprintf(r.path, sizeof(r.path), "%s", rest);
	if (n >= sizeof(r.path) || strlen(r.domain) + 1 + n >= PD_REF_MAX)
		return pd_fail_field(err, EINVAL, field,
				     "expected an image reference of at most %d bytes", PD_REF_MAX);
	if (!r.tag[0] && !r.digest[0])
		snprintf(r.tag, sizeof(r.tag), "latest");
	*ret = r;
	return 0;
}

void pd_image_ref_repository(const struct pd_image_ref *r, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", r->domain, r->path);
}

void pd_image_ref_format(const struct pd_image_ref *r, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s%s%s%s%s", r->domain, r->path, r->tag[0] ? ":" : "", r->tag,
		 r->digest[0] ? "@" : "", r->digest);
}

const char *pd_image_ref_registry_host(const struct pd_image_ref *r)
{
	if (!strcmp(r->domain, PD_REF_DEFAULT_DOMAIN))
		return "registry-1.docker.io";
	return r->domain;
}

bool pd_image_ref_is_loopback(const struct pd_image_ref *r)
{
	char host[PD_REF_DOMAIN_MAX + 1];
	unsigned a, b, c, d;
	char tail;

	snprintf(host, sizeof(host), "%s", r->domain);
	if (!strncmp(host, "[::1]", 5))
		return host[5] == '\0' || host[5] == ':';
	host[strcspn(host, ":")] = '\0';
	if (!strcmp(host, "localhost"))
		return true;
	/* 127.0.0.0/8 written as an address, not a name that starts with "127." */
	return sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 &&
	       c < 256 && d < 256;
}
