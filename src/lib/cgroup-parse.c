/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroups: the parsers of the kernel's text. /proc/self/mountinfo says which hierarchies are
 * mounted where and so which backend we use; control files hold a number or "max", flat-keyed
 * lines or word lists; /proc/<pid>/cgroup says which cgroup a process is in. Pure functions
 * over text (mountinfo comes as a FILE), called by cgroup.c and the backends, fuzzed by
 * tests/fuzz/fuzz-cgroup.c.
 *
 * The text is the kernel's, but a sandbox's processes drive the counters and the pids it
 * lists: each parser bounds what it reads, refuses a value it does not expect, and skips a
 * mountinfo line it cannot parse rather than guess at it.
 */
#include "cgroup-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "util/cleanup.h"

#define MOUNTINFO_LINE_MAX (3 * PATH_MAX)

static const char *const controller_names[PD_CGROUP_CONTROLLER_MAX] = {
	[PD_CGROUP_MEMORY] = "memory",	 [PD_CGROUP_PIDS] = "pids",	  [PD_CGROUP_CPU] = "cpu",
	[PD_CGROUP_FREEZER] = "freezer", [PD_CGROUP_CPUACCT] = "cpuacct",
};

const char *pd_cgroup_controller_to_string(enum pd_cgroup_controller c)
{
	return c < PD_CGROUP_CONTROLLER_MAX ? controller_names[c] : NULL;
}

int pd_cgroup_controller_from_string(const char *s)
{
	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
		if (strcmp(s, controller_names[c]) == 0)
			return c;
	return -1;
}

int pd_cgroup_parse_u64_n(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 3 && memcmp(s, "max", 3) == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (len == 0 || len > 20)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int pd_cgroup_parse_u64(const char *s, uint64_t *ret)
{
	size_t len = strcspn(s, "\n");

	/* one value, at most one newline after it */
	if (s[len] == '\n' && s[len + 1] != '\0')
		return -EINVAL;
	return pd_cgroup_parse_u64_n(s, len, ret);
}

int pd_cgroup_parse_key(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);

	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");

		if (len > klen && memcmp(line, key, klen) == 0 && line[klen] == ' ')
			return pd_cgroup_parse_u64_n(line + klen + 1, len - klen - 1, ret);
		line += len;
		if (*line == '\n')
			line++;
	}
	return -ENODATA;
}

bool pd_cgroup_has_word(const char *list, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = list; *p;) {
		size_t len;

		p += strspn(p, " \t\n");
		len = strcspn(p, " \t\n");
		if (len == wlen && len > 0 && memcmp(p, word, len) == 0)
			return true;
		p += len;
	}
	return false;
}

/* Whether a comma-separated list (p, len) holds `word`. */
static bool has_item(const char *p, size_t len, const char *word)
{
	size_t wlen = strlen(word);

	while (len > 0) {
		const char *comma = memchr(p, ',', len);
		size_t ilen = comma ? (size_t)(comma - p) : len;

		if (ilen == wlen && memcmp(p, word, wlen) == 0)
			return true;
		if (!comma)
			break;
		len -= ilen + 1;
		p = comma + 1;
	}
	return false;
}

bool pd_cgroup_proc_in(const char *text, const char *controller, const char *cgpath)
{
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;

		if (c2) {
			const char *ctl = c1 + 1, *path = c2 + 1;
			size_t ctl_len = (size_t)(c2 - ctl), path_len = len - (size_t)(path - line);
			bool hier;

			if (controller[0] == '\0')
				hier = c1 - line == 1 && line[0] == '0' && ctl_len == 0;
			else
				hier = has_item(ctl, ctl_len, controller);
			if (hier)
				return path_len == strlen(cgpath) &&
				       memcmp(path, cgpath, path_len) == 0;
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	return false;
}

/* Undoes mountinfo's octal escapes ("\040" for a space) in place. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (const char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

static void set_hierarchy(struct pd_cgroup_hierarchy *h, const char *root, const char *point,
			  unsigned controllers)
{
	/* lengths were checked by the caller */
	snprintf(h->mount_point, sizeof(h->mount_point), "%s", point);
	snprintf(h->mount_root, sizeof(h->mount_root), "%s", root);
	h->controllers = controllers;
}

/*
 * One line: "id parent maj:min root mount-point options [optional...] - fstype source
 * super-options". Lines that do not parse, or mount nothing we use, are skipped.
 */
static void parse_mountinfo_line(char *line, struct pd_cgroup_layout *l)
{
	char *p = line, *field[6], *tail[3], *tok, *fstype, *super;
	unsigned mask = 0;

	line[strcspn(line, "\n")] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(field); i++) {
		field[i] = strsep(&p, " ");
		if (!p)
			return;
	}
	do
		tok = strsep(&p, " ");
	while (tok && strcmp(tok, "-") != 0);
	if (!tok)
		return;
	/* after the separator: fstype, source, super options */
	for (size_t i = 0; i < ELEMENTSOF(tail); i++) {
		tail[i] = strsep(&p, " ");
		if (!tail[i])
			return;
	}
	fstype = tail[0];
	super = tail[2];
	unescape_octal(field[3]);
	unescape_octal(field[4]);
	if (strlen(field[3]) >= PATH_MAX || strlen(field[4]) >= PATH_MAX || field[4][0] != '/')
		return;
	if (strcmp(fstype, "cgroup2") == 0) {
		if (l->v2.mount_point[0] == '\0')
			set_hierarchy(&l->v2, field[3], field[4], 0);
		return;
	}
	if (strcmp(fstype, "cgroup") != 0)
		return;
	while ((tok = strsep(&super, ","))) {
		int c = pd_cgroup_controller_from_string(tok);

		/* a controller mounted twice (a bind of its hierarchy): the first mount wins */
		if (c >= 0 && l->v1_index[c] < 0)
			mask |= 1u << c;
	}
	if (!mask || l->n_v1 >= ELEMENTSOF(l->v1))
		return;
	set_hierarchy(&l->v1[l->n_v1], field[3], field[4], mask);
	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
		if (mask & (1u << c))
			l->v1_index[c] = (int)l->n_v1;
	l->n_v1++;
}

/* Orders v1[] by controller (memory, pids, cpu, cpuacct), so v1[0] holds memory. */
static void order_v1(struct pd_cgroup_layout *l)
{
	size_t k = 0;

	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++) {
		int i = l->v1_index[c];
		struct pd_cgroup_hierarchy tmp;

		if (i < 0 || (size_t)i < k)
			continue; /* not mounted, or placed with an earlier controller */
		if ((size_t)i != k) {
			tmp = l->v1[k];
			l->v1[k] = l->v1[i];
			l->v1[i] = tmp;
			for (int d = 0; d < PD_CGROUP_CONTROLLER_MAX; d++) {
				if (l->v1_index[d] == i)
					l->v1_index[d] = (int)k;
				else if (l->v1_index[d] == (int)k)
					l->v1_index[d] = i;
			}
		}
		k++;
	}
}

void pd_cgroup_layout_init(struct pd_cgroup_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->version = PD_CGROUP_NONE;
	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
		l->v1_index[c] = -1;
}

int pd_cgroup_parse_mountinfo(FILE *f, struct pd_cgroup_layout *l)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	pd_cgroup_layout_init(l);
	while ((n = getline(&line, &cap, f)) >= 0) {
		if ((size_t)n > MOUNTINFO_LINE_MAX)
			continue;
		parse_mountinfo_line(line, l);
	}
	if (ferror(f))
		return -EIO;
	order_v1(l);
	return 0;
}

void pd_cgroup_layout_decide(struct pd_cgroup_layout *l, const char *v2_controllers)
{
	l->version = PD_CGROUP_NONE;
	if (l->v2.mount_point[0] && v2_controllers &&
	    pd_cgroup_has_word(v2_controllers, "memory") &&
	    pd_cgroup_has_word(v2_controllers, "pids") &&
	    pd_cgroup_has_word(v2_controllers, "cpu")) {
		l->v2.controllers =
			(1u << PD_CGROUP_MEMORY) | (1u << PD_CGROUP_PIDS) | (1u << PD_CGROUP_CPU);
		l->version = PD_CGROUP_V2;
		return;
	}
	/* cpuacct is optional: without it v1 reports no CPU usage */
	if (l->v1_index[PD_CGROUP_MEMORY] >= 0 && l->v1_index[PD_CGROUP_PIDS] >= 0 &&
	    l->v1_index[PD_CGROUP_CPU] >= 0)
		l->version = PD_CGROUP_V1;
}
