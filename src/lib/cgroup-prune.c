/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroups: pruning the pool (paddock gc, and a supervisor's start). Removes the slot cgroups
 * <hierarchy>/paddock/<slot> that no sandbox holds and no process is in, then the pools left
 * empty. Runs as root in the supervisor, concurrently with sandboxes opening slots.
 *
 * A slot is removed only while this holds its slot lock (cgroup.c), so a sandbox between two
 * commands keeps its cgroup; a pool only while this holds the pool lock exclusively, so an
 * open that is creating directories is never raced. A cgroup with processes in it stays: the
 * kernel refuses the rmdir, and the next open of that slot kills them.
 */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "error.h"
#include "util/cleanup.h"

#define PRUNE_SLOTS_MAX 65536

PD_DEFINE_CLEANUP(DIR, closedir)

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

/* One hierarchy's <root>/paddock: 1 opened, 0 none there; `create` makes it when missing. */
static int open_pool(const struct pd_cgroup_hierarchy *h, bool create,
		     struct pd_cgroup_dir *ret_pool, paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir root = PD_CGROUP_DIR_INIT;
	int r;

	r = pd_cgroup_open_root(h, &root, err);
	if (r < 0)
		return r;
	r = pd_cgroup_open_pool(&root, create, ret_pool, err);
	if (r == -ENOENT && !create)
		return 0;
	return r < 0 ? r : 1;
}

/* Adds the slot names found in one hierarchy's pool to *slots. */
static int list_slots(const struct pd_cgroup_hierarchy *h, unsigned **slots, size_t *n,
		      paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT;
	_cleanup_(closedirp) DIR *dir = NULL;
	struct dirent *de;
	int r;

	r = open_pool(h, false, &pool, err);
	if (r <= 0)
		return r;
	dir = fdopendir(pool.fd);
	if (!dir)
		return pd_fail(err, errno, "list '%s'", pool.label);
	pool.fd = -EBADF; /* closedir() closes it */
	while ((errno = 0, de = readdir(dir))) {
		uint64_t v;
		unsigned *grown;

		if (de->d_type != DT_DIR ||
		    pd_cgroup_parse_u64_n(de->d_name, strlen(de->d_name), &v) < 0 || v > UINT32_MAX)
			continue; /* not ours: a pool slot is named by its number */
		if (*n >= PRUNE_SLOTS_MAX)
			break;
		grown = reallocarray(*slots, *n + 1, sizeof(**slots));
		if (!grown)
			return pd_fail(err, ENOMEM, "list '%s'", pool.label);
		*slots = grown;
		(*slots)[(*n)++] = (unsigned)v;
	}
	if (errno != 0)
		return pd_fail(err, errno, "list '%s'", pool.label);
	return 0;
}

/* rmdir <pool>/<name> of one hierarchy: 1 removed, 0 nothing there, -EBUSY in use. */
static int remove_slot_dir(const struct pd_cgroup_hierarchy *h, const char *name,
			   paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT;
	int r;

	r = open_pool(h, false, &pool, err);
	if (r <= 0)
		return r;
	if (unlinkat(pool.fd, name, AT_REMOVEDIR) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	if (errno == EBUSY || errno == ENOTEMPTY)
		return -EBUSY; /* processes (or child cgroups) inside */
	return pd_fail(err, errno, "rmdir '%s/%s'", pool.label, name);
}

/*
 * Removes one slot from every hierarchy, holding its lock (on h[0], created there if an
 * earlier crash left only the others) so that no sandbox takes it meanwhile. Returns 1
 * when something was removed, 0 when the slot is held or in use.
 */
static int prune_slot(const struct pd_cgroup_hierarchy *const *h, size_t n, unsigned slot,
		      paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir pool = PD_CGROUP_DIR_INIT;
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir d = PD_CGROUP_DIR_INIT;
	bool created = false, removed = false, busy = false;
	char name[16];
	int r;

	snprintf(name, sizeof(name), "%u", slot);
	r = open_pool(h[0], true, &pool, err);
	if (r == -ESTALE)
		return 0; /* pruned by someone else */
	if (r < 0)
		return r;
	r = pd_cgroup_dir_open(h[0], &pool, "", slot, PD_CGROUP_LOCK_TRY, &d, &created, err);
	if (r == -EBUSY || r == -ESTALE)
		return 0; /* held by a sandbox, or pruned by someone else */
	if (r < 0)
		return r;
	for (size_t i = n; i-- > 1;) {
		r = remove_slot_dir(h[i], name, err);
		if (r == -EBUSY)
			busy = true;
		else if (r < 0)
			return r;
		else if (r > 0)
			removed = true;
	}
	/* a slot with processes in any hierarchy keeps its first one: the next open kills them */
	if (busy)
		return removed;
	if (unlinkat(pool.fd, name, AT_REMOVEDIR) == 0)
		return removed || !created;
	if (errno == EBUSY || errno == ENOTEMPTY)
		return removed;
	return pd_fail(err, errno, "rmdir '%s/%s'", pool.label, name);
}

int pd_cgroup_prune_hierarchies(const struct pd_cgroup_hierarchy *const *h, size_t n,
				paddock_error *err)
{
	_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir lock = PD_CGROUP_DIR_INIT;
	_cleanup_free_ unsigned *slots = NULL;
	size_t n_slots = 0;
	int pruned = 0, r;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		r = list_slots(h[i], &slots, &n_slots, err);
		if (r < 0)
			return r;
	}
	if (n_slots > 0)
		qsort(slots, n_slots, sizeof(*slots), cmp_unsigned);
	for (size_t i = 0; i < n_slots; i++) {
		if (i > 0 && slots[i] == slots[i - 1])
			continue;
		r = prune_slot(h, n, slots[i], err);
		if (r < 0)
			return r;
		pruned += r;
	}
	/* then the pools themselves, where empty, unless an open is creating directories */
	r = pd_cgroup_lock_pools(h[0], true, &lock, err);
	if (r == -EBUSY)
		return pruned;
	if (r < 0)
		return r;
	for (size_t i = n; i-- > 0;) {
		_cleanup_(pd_cgroup_dir_release) struct pd_cgroup_dir root = PD_CGROUP_DIR_INIT;

		r = pd_cgroup_open_root(h[i], &root, err);
		if (r < 0)
			return r;
		if (unlinkat(root.fd, PD_CGROUP_POOL, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    errno != EBUSY && errno != ENOTEMPTY)
			return pd_fail(err, errno, "rmdir '%s/%s'", root.label, PD_CGROUP_POOL);
	}
	return pruned;
}

int pd_cgroup_prune(paddock_error *err)
{
	const struct pd_cgroup_layout *l = pd_cgroup_layout();
	const struct pd_cgroup_hierarchy *h[PD_CGROUP_CONTROLLER_MAX];
	size_t n = 0;

	switch (pd_cgroup_probe()) {
	case PD_CGROUP_NONE:
		return 0; /* nothing this process could have made */
	case PD_CGROUP_V1:
		for (size_t i = 0; i < l->n_v1; i++)
			h[n++] = &l->v1[i];
		break;
	case PD_CGROUP_V2:
		h[n++] = &l->v2;
		break;
	}
	return pd_cgroup_prune_hierarchies(h, n, err);
}
