/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the cgroup parsers of cgroup-internal.h. The supervisor runs them as root on text
 * that the kernel writes but others partly choose: mount points in /proc/self/mountinfo (any
 * directory name, octal-escaped), the counters in keyed control files (memory.events,
 * pids.events, cpu.stat, ...) and the /proc/<pid>/cgroup lines of pids read from
 * cgroup.procs. No cgroup file is touched here.
 *
 * The first input byte modulo 6 picks the parser; the seeds start with the digits '0' to '5'
 * ('0' % 6 == 0). The rest is copied into a buffer of exactly the input's size, NUL-terminated
 * (so a read past its end is caught), and split at NUL bytes where a parser takes more than
 * one string:
 *
 *   0  mountinfo text [NUL cgroup.controllers text]: parse, check the layout, then decide
 *   1  a single-value file ("max" or a decimal)
 *   2  KEY NUL keyed text; without a NUL, the text against the keys paddock reads
 *   3  WORD NUL list; without a NUL, the list against the controllers v2 needs
 *   4  CONTROLLER NUL CGPATH NUL /proc/<pid>/cgroup text; with fewer NULs, the text against
 *      each controller and a few cgroup paths
 *   5  a controller name
 *
 * Each answer is checked against a plain reference written with strsep()/strtoull(), and a
 * parsed layout against what the backends rely on: a parser that answers wrongly aborts as
 * surely as one that reads out of bounds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-internal.h"
#include "util/cleanup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The keys paddock reads from keyed files, and what a hostile file may put next to them. */
static const char *const keys[] = {
	"oom_kill", "populated", "usage_usec", "user_usec", "system_usec", "max",
	"user",	    "system",	 "anon",       "file",	    "oom",	   "",
};

static const char *const cgpaths[] = { "/paddock/7", "/", "", "/paddock/7 (deleted)" };

/* Splits text (ending at text_end) at NUL bytes into at most n parts; returns how many. */
static size_t split(char *text, const char *text_end, char **part, size_t n)
{
	size_t k = 0;

	for (char *p = text; k < n; k++) {
		part[k] = p;
		p += strlen(p);
		if (p >= text_end)
			return k + 1;
		p++;
	}
	return k;
}

/* The reference for a value: "max", or 1 to 20 decimal digits that fit in 64 bits. */
static int ref_u64_body(const char *s, uint64_t *ret)
{
	size_t len = strlen(s);
	unsigned long long v;
	char *end;

	if (strcmp(s, "max") == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (len == 0 || len > 20 || strspn(s, "0123456789") != len)
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

static void check_same(int r, uint64_t v, int ref, uint64_t ref_v)
{
	if (r != ref || (r == 0 && v != ref_v))
		abort();
}

static void fuzz_u64(const char *text)
{
	_cleanup_free_ char *copy = strdup(text);
	uint64_t v = 0, ref_v = 0;
	size_t len = strcspn(text, "\n");
	int r, ref = -EINVAL;

	if (!copy)
		return;
	r = pd_cgroup_parse_u64(text, &v);
	if (r != 0 && r != -EINVAL)
		abort();
	/* one value, then nothing or a single newline */
	if (text[len] == '\0' || strcmp(text + len, "\n") == 0) {
		copy[len] = '\0';
		ref = ref_u64_body(copy, &ref_v);
	}
	check_same(r, v, ref, ref_v);
}

/*
 * The reference, on a copy it cuts up: the first line "KEY VALUE" decides, VALUE running to
 * the line's end.
 */
static int ref_key(char *copy, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	char *line;

	while ((line = strsep(&copy, "\n")))
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return ref_u64_body(line + klen + 1, ret);
	return -ENODATA;
}

static void check_key(const char *text, const char *key)
{
	_cleanup_free_ char *copy = strdup(text);
	uint64_t v = 0, ref_v = 0;
	int r, ref;

	if (!copy)
		return;
	r = pd_cgroup_parse_key(text, key, &v);
	if (r != 0 && r != -EINVAL && r != -ENODATA)
		abort();
	ref = ref_key(copy, key, &ref_v);
	check_same(r, v, ref, ref_v);
}

static void fuzz_key(char *text, const char *end)
{
	char *part[2] = { 0 };

	if (split(text, end, part, 2) == 2) {
		check_key(part[1], part[0]);
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		check_key(text, keys[i]);
}

/* The reference, on a copy it cuts up. */
static bool ref_has_word(char *copy, const char *word)
{
	char *tok;

	while ((tok = strsep(&copy, " \t\n")))
		if (tok[0] != '\0' && strcmp(tok, word) == 0)
			return true;
	return false;
}

static void check_word(const char *list, const char *word)
{
	_cleanup_free_ char *copy = strdup(list);

	if (!copy)
		return;
	if (pd_cgroup_has_word(list, word) != ref_has_word(copy, word))
		abort();
}

static void fuzz_word(char *text, const char *end)
{
	char *part[2] = { 0 };

	if (split(text, end, part, 2) == 2) {
		check_word(part[1], part[0]);
		return;
	}
	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
		check_word(text, pd_cgroup_controller_to_string(c));
	check_word(text, "");
}

/*
 * The reference, on a copy it cuts up: "ID:CONTROLLERS:PATH" lines, PATH running to the
 * line's end; the first line of the hierarchy decides. v2 ("") is the line "0::", a v1
 * hierarchy a line whose comma-separated list names the controller.
 */
static bool ref_proc_in(char *copy, const char *controller, const char *cgpath)
{
	char *line;

	while ((line = strsep(&copy, "\n"))) {
		char *id = strsep(&line, ":"), *ctl = strsep(&line, ":"), *item;
		bool hier = false;

		if (!line)
			continue; /* fewer than two colons */
		if (controller[0] == '\0')
			hier = strcmp(id, "0") == 0 && ctl[0] == '\0';
		else
			while (!hier && (item = strsep(&ctl, ",")))
				hier = strcmp(item, controller) == 0;
		if (hier)
			return strcmp(line, cgpath) == 0;
	}
	return false;
}

static void check_proc(const char *text, const char *controller, const char *cgpath)
{
	_cleanup_free_ char *copy = strdup(text);

	if (!copy)
		return;
	if (pd_cgroup_proc_in(text, controller, cgpath) != ref_proc_in(copy, controller, cgpath))
		abort();
}

static void fuzz_proc(char *text, const char *end)
{
	char *part[3] = { 0 };

	if (split(text, end, part, 3) == 3) {
		check_proc(part[2], part[0], part[1]);
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(cgpaths); i++) {
		check_proc(text, "", cgpaths[i]);
		for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
			check_proc(text, pd_cgroup_controller_to_string(c), cgpaths[i]);
		check_proc(text, "name=systemd", cgpaths[i]);
	}
}

static void fuzz_controller(const char *text)
{
	int c = pd_cgroup_controller_from_string(text);

	if (c >= 0) {
		if (c >= PD_CGROUP_CONTROLLER_MAX ||
		    strcmp(pd_cgroup_controller_to_string(c), text) != 0)
			abort();
		return;
	}
	if (c != -1)
		abort();
	for (int d = 0; d < PD_CGROUP_CONTROLLER_MAX; d++)
		if (strcmp(pd_cgroup_controller_to_string(d), text) == 0)
			abort();
}

static bool valid_path(const char *s, bool may_be_empty)
{
	const char *nul = memchr(s, '\0', PATH_MAX);

	return nul && (s[0] == '/' || (may_be_empty && s[0] == '\0'));
}

/* What the backends rely on: v1[0] holds memory, every index names a hierarchy carrying it. */
static void check_layout(const struct pd_cgroup_layout *l)
{
	unsigned seen = 0;
	size_t placed = 0;

	if (l->version != PD_CGROUP_NONE || l->n_v1 > ELEMENTSOF(l->v1))
		abort();
	if (!valid_path(l->v2.mount_point, true) || !memchr(l->v2.mount_root, '\0', PATH_MAX))
		abort();
	if (l->v2.mount_point[0] == '\0' && l->v2.mount_root[0] != '\0')
		abort();
	for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++) {
		int i = l->v1_index[c];

		if (i < -1 || i >= (int)l->n_v1)
			abort();
		if (i < 0)
			continue;
		if (!(l->v1[i].controllers & (1u << c)))
			abort();
		/* ordered by controller: a hierarchy not met yet comes right after those met */
		if (!(seen & (1u << i)) && (size_t)i != placed++)
			abort();
		seen |= 1u << i;
	}
	/* every hierarchy carries one of our controllers; memory's comes first */
	if (placed != l->n_v1 || l->v1_index[PD_CGROUP_MEMORY] > 0)
		abort();
	for (size_t i = 0; i < l->n_v1; i++) {
		const struct pd_cgroup_hierarchy *h = &l->v1[i];

		if (!valid_path(h->mount_point, false) || !memchr(h->mount_root, '\0', PATH_MAX))
			abort();
		if (h->controllers == 0 || h->controllers >= 1u << PD_CGROUP_CONTROLLER_MAX)
			abort();
		for (int c = 0; c < PD_CGROUP_CONTROLLER_MAX; c++)
			if ((h->controllers & (1u << c)) && l->v1_index[c] != (int)i)
				abort();
	}
}

/*
 * v2 when its controllers are all enabled, else v1 when all are mounted (cpuacct and freezer
 * optional).
 */
static void check_decide(struct pd_cgroup_layout *l, const char *controllers)
{
	bool v1 = l->v1_index[PD_CGROUP_MEMORY] >= 0 && l->v1_index[PD_CGROUP_PIDS] >= 0 &&
		  l->v1_index[PD_CGROUP_CPU] >= 0;
	bool v2 = l->v2.mount_point[0] != '\0' && controllers;

	for (int c = 0; v2 && c < PD_CGROUP_CONTROLLER_MAX; c++) {
		_cleanup_free_ char *copy = NULL;

		if (c == PD_CGROUP_CPUACCT || c == PD_CGROUP_FREEZER)
			continue; /* v1 only */
		copy = strdup(controllers);
		if (!copy)
			return;
		v2 = ref_has_word(copy, pd_cgroup_controller_to_string(c));
	}
	pd_cgroup_layout_decide(l, controllers);
	if (l->version != (v2 ? PD_CGROUP_V2 : v1 ? PD_CGROUP_V1 : PD_CGROUP_NONE))
		abort();
}

static int parse_mountinfo(char *text, struct pd_cgroup_layout *l)
{
	/* glibc >= 2.22 opens 0 bytes too: an empty mountinfo */
	_cleanup_fclose_ FILE *f = fmemopen(text, strlen(text), "r");

	if (!f)
		return -errno;
	return pd_cgroup_parse_mountinfo(f, l);
}

static void fuzz_mountinfo(char *text, const char *end)
{
	/* large (two PATH_MAX strings per hierarchy) and the fuzzer is single-threaded */
	static struct pd_cgroup_layout l, again;
	char *part[2] = { 0 };
	size_t n = split(text, end, part, 2);

	if (parse_mountinfo(part[0], &l) < 0)
		return;
	check_layout(&l);
	/* nothing carried over from the last parse */
	if (parse_mountinfo(part[0], &again) < 0)
		return;
	if (memcmp(&l, &again, sizeof(l)) != 0)
		abort();
	if (n == 2)
		check_decide(&l, part[1]);
	check_decide(&l, NULL);
	check_decide(&l, "cpuset cpu io memory hugetlb pids rdma misc\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = NULL;
	const char *end;

	if (size == 0)
		return 0;
	/* exactly the input's size: the selector's byte becomes the terminating NUL */
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	end = text + size - 1;

	switch (data[0] % 6) {
	case 0:
		fuzz_mountinfo(text, end);
		break;
	case 1:
		fuzz_u64(text);
		break;
	case 2:
		fuzz_key(text, end);
		break;
	case 3:
		fuzz_word(text, end);
		break;
	case 4:
		fuzz_proc(text, end);
		break;
	default:
		fuzz_controller(text);
		break;
	}
	return 0;
}
