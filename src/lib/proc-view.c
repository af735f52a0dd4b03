/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox's view of /proc: see proc-view.h. */
#include "proc-view.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "error.h"
#include "util/cleanup.h"
#include "util/fd.h"

#define VIEW_MAX	 (64u << 10) /* bytes of one file of the view */
#define HOST_CPUINFO_MAX (4u << 20)  /* bytes of the host's cpuinfo we keep */

const char *const pd_proc_view_files[] = {
	"meminfo",    "cpuinfo", "stat",    "loadavg", "diskstats",
	"partitions", "swaps",	 "cmdline", NULL,
};

/*
 * Not cpuinfo and stat: LXCFS counts CPUs from the cpuset, or from the CFS quota only where
 * it can read it (not with cpu and cpuacct on hierarchies of their own, as on this
 * project's v1 test machine: LXCFS 5.0.3 showed all CPUs under a quota of one). The written
 * ones always agree with the affinity.
 */
const char *const pd_proc_view_lxcfs_files[] = {
	"meminfo", "loadavg", "diskstats", "swaps", NULL,
};

unsigned pd_proc_view_cpus(double cpus)
{
	cpu_set_t set;
	unsigned have = 1, want;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		have = (unsigned)CPU_COUNT(&set);
	want = cpus > 0 && cpus < (double)have ? (unsigned)ceil(cpus) : have;
	return want < 1 ? 1 : want;
}

int pd_proc_view_pin(unsigned cpus, unsigned seed)
{
	cpu_set_t have, want;
	unsigned n, skip;

	if (sched_getaffinity(0, sizeof(have), &have) < 0)
		return -errno;
	n = (unsigned)CPU_COUNT(&have);
	if (n == 0 || cpus >= n)
		return 0;
	CPU_ZERO(&want);
	skip = seed % n;
	/* CPUs `skip` .. `skip + cpus - 1` of the allowed ones, wrapping round */
	for (unsigned pass = 0, seen = 0, taken = 0; pass < 2 && taken < cpus; pass++)
		for (int c = 0; c < CPU_SETSIZE && taken < cpus; c++) {
			if (!CPU_ISSET(c, &have))
				continue;
			if (pass == 0 && seen++ < skip)
				continue;
			if (CPU_ISSET(c, &want))
				continue;
			CPU_SET(c, &want);
			taken++;
		}
	if (sched_setaffinity(0, sizeof(want), &want) < 0)
		return -errno;
	return 0;
}

/* Replaces the content of dirfd/name (same inode: binds of it see the new content). */
static int put(int dirfd, const char *name, const char *data, size_t len, paddock_error *err)
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	int r;

	if (fd < 0)
		return pd_fail(err, errno, "open the sandbox's /proc/%s", name);
	r = pd_write_all(fd, data, len);
	if (r < 0)
		return pd_fail(err, -r, "write the sandbox's /proc/%s", name);
	return 0;
}

/* A file built with snprintf-style appends into a fixed buffer. */
struct text {
	char buf[VIEW_MAX];
	size_t len;
	bool full;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(t->buf) - t->len)
		t->full = true;
	else
		t->len += (size_t)n;
}

static uint64_t host_memory(void)
{
	struct sysinfo si;

	if (sysinfo(&si) < 0)
		return UINT64_MAX;
	return (uint64_t)si.totalram * si.mem_unit;
}

static void meminfo(struct text *t, const struct pd_proc_view *v)
{
	static const char *const zero[] = {
		"Buffers",	"Cached",	  "SwapCached",	  "Active",	    "Inactive",
		"Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)", "Unevictable",
		"Mlocked",	"SwapTotal",	  "SwapFree",	  "Dirty",	    "Writeback",
		"AnonPages",	"Mapped",	  "Shmem",	  "KReclaimable",   "Slab",
		"SReclaimable", "SUnreclaim",	  "KernelStack",  "PageTables",
	};
	uint64_t host = host_memory();
	uint64_t kb = (v->memory_bytes && v->memory_bytes < host ? v->memory_bytes : host) / 1024;

	/* all of it free: a written file cannot follow use (LXCFS's does) */
	add(t, "%-16s%8" PRIu64 " kB\n", "MemTotal:", kb);
	add(t, "%-16s%8" PRIu64 " kB\n", "MemFree:", kb);
	add(t, "%-16s%8" PRIu64 " kB\n", "MemAvailable:", kb);
	for (size_t i = 0; i < ELEMENTSOF(zero); i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s:", zero[i]);
		add(t, "%-16s%8d kB\n", key, 0);
	}
}

static void stat_file(struct text *t, const struct pd_proc_view *v)
{
	add(t, "cpu  0 0 0 0 0 0 0 0 0 0\n");
	for (unsigned c = 0; c < v->cpus; c++)
		add(t, "cpu%u 0 0 0 0 0 0 0 0 0 0\n", c);
	add(t,
	    "intr 0\nctxt 0\nbtime %" PRId64 "\nprocesses 0\nprocs_running 1\n"
	    "procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
	    v->boot_time);
}

/*
 * The first `cpus` blocks of the host's cpuinfo (one per CPU, separated by a blank line),
 * numbered from 0; where the host's is not there, blocks that say only their number.
 */
static void cpuinfo(struct text *t, int dirfd, const struct pd_proc_view *v)
{
	_cleanup_close_ int fd =
		openat(dirfd, PD_PROC_VIEW_HOST_CPUINFO, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ char *host = NULL;
	unsigned done = 0;
	ssize_t n = 0;

	if (fd >= 0 && (host = malloc(HOST_CPUINFO_MAX + 1)))
		n = pd_read_full(fd, host, HOST_CPUINFO_MAX);
	if (n > 0) {
		char *pos = host, *end;

		host[n] = '\0';
		while (done < v->cpus && *pos) {
			end = strstr(pos, "\n\n");
			if (!end)
				break;
			*end = '\0';
			for (char *line = strtok(pos, "\n"); line; line = strtok(NULL, "\n")) {
				if (!strncmp(line, "processor", 9) && strchr(line, ':'))
					add(t, "processor\t: %u\n", done);
				else
					add(t, "%s\n", line);
			}
			add(t, "\n");
			done++;
			pos = end + 2;
		}
	}
	for (; done < v->cpus; done++)
		add(t, "processor\t: %u\n\n", done);
}

int pd_proc_view_write(int dirfd, const struct pd_proc_view *v, paddock_error *err)
{
	static struct text t; /* 64 KiB: off the stack of init */
	static const struct {
		const char *name, *content;
	} fixed[] = {
		/* no load of its own to show without LXCFS; never the host's */
		{ "loadavg", "0.00 0.00 0.00 1/1 1\n" },
		{ "diskstats", "" },
		{ "partitions", "major minor  #blocks  name\n\n" },
		{ "swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" },
		/* the host's kernel command line is the host's business */
		{ "cmdline", "\n" },
	};
	int r;

	t.len = 0;
	t.full = false;
	meminfo(&t, v);
	r = t.full ? pd_fail(err, E2BIG, "the sandbox's /proc/meminfo is too long")
		   : put(dirfd, "meminfo", t.buf, t.len, err);
	if (r < 0)
		return r;
	t.len = 0;
	stat_file(&t, v);
	r = t.full ? pd_fail(err, E2BIG, "the sandbox's /proc/stat is too long")
		   : put(dirfd, "stat", t.buf, t.len, err);
	if (r < 0)
		return r;
	t.len = 0;
	cpuinfo(&t, dirfd, v);
	/* a cpuinfo past 64 KiB (hundreds of CPUs' flags) ends at a whole line, not refused */
	r = put(dirfd, "cpuinfo", t.buf, t.len, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
		r = put(dirfd, fixed[i].name, fixed[i].content, strlen(fixed[i].content), err);
		if (r < 0)
			return r;
	}
	return 0;
}
