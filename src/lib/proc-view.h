/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What /proc says about the machine, as a sandbox should see it: its own memory limit, the
 * CPUs its quota amounts to, its own boot id and start, no host kernel command line, no host
 * disks. The kernel's /proc answers these host-wide (meminfo, cpuinfo, stat, loadavg,
 * diskstats, partitions, swaps, cmdline, sys/kernel/random/boot_id), so `free`, `nproc`,
 * Python's os.cpu_count() and every runtime that sizes a heap or a worker pool would size
 * them for the host.
 *
 * Files of the sandbox's own disk (disk/proc, outside its root) are bound read-only over
 * those of its fresh /proc, written once when the root is built and again at a pooled
 * sandbox's claim. As root with LXCFS mounted on the host, its live files (meminfo, loadavg,
 * diskstats, swaps: computed from the reader's cgroup) are bound instead of the written
 * ones. Uptime and stat's btime come from the sandbox's own time
 * namespace (init.c), CPU counting from its affinity (pd_proc_view_pin()).
 *
 * libc only: linked into the init image, which rewrites the view at a claim.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "paddock/paddock.h"

/* disk/proc: the directory of the view's files, outside the sandbox's root */
#define PD_PROC_VIEW_DIR "proc"
/* the host's /proc/cpuinfo, kept in that directory: the view takes its first N blocks */
#define PD_PROC_VIEW_HOST_CPUINFO ".cpuinfo.host"

struct pd_proc_view {
	uint64_t memory_bytes; /* limits.memory; the view shows the smaller of it and the host's */
	unsigned cpus;	       /* whole CPUs, at least 1: pd_proc_view_cpus() */
	int64_t boot_time;     /* stat's btime: when the sandbox started (Unix seconds) */
};

/* The files the view writes, in the order they are bound over /proc/NAME. */
extern const char *const pd_proc_view_files[];
/* Those LXCFS serves live (PD_LXCFS_DIR/proc/NAME), a subset of the above. */
extern const char *const pd_proc_view_lxcfs_files[];

/* The CPUs a quota of `cpus` amounts to: rounded up, at least 1, at most this process's. */
unsigned pd_proc_view_cpus(double cpus);

/*
 * Writes every file of the view into dirfd (disk/proc): from `v`, and cpuinfo from the
 * PD_PROC_VIEW_HOST_CPUINFO there. The files are replaced in place (same inode), so binds
 * of them show the new content.
 */
int pd_proc_view_write(int dirfd, const struct pd_proc_view *v, paddock_error *err);

/*
 * Restricts the calling process (init: its commands inherit it) to `cpus` CPUs of those it
 * may run on, starting at `seed` modulo their number, so that sandboxes spread over the
 * machine. Counting only: a command may widen its own affinity again, the CPU quota is what
 * limits. 0 or -errno.
 */
int pd_proc_view_pin(unsigned cpus, unsigned seed);
