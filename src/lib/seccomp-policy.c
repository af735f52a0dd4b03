/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seccomp policy: allow by default, deny a fixed list. Namespaces, dropped capabilities
 * and Landlock already stop most of what the denied syscalls could do; the filter is the
 * second wall. It removes kernel attack surface a sandboxed process reaches even without
 * privileges (bpf, io_uring, userfaultfd, perf, keyrings), closes every way to make or
 * join namespaces (unshare, setns, clone with a namespace flag, clone3) and to rearrange
 * mounts (old and new mount API), stops terminal input injection (TIOCSTI, TIOCLINUX), makes
 * set-id files impossible to create (so none can come out through a writable bind), keeps
 * sockets to the families the sandbox's own network namespace governs (no AF_VSOCK to the
 * hypervisor, no AF_PACKET, AF_ALG, ...), and stops a command changing another process's
 * resource limits (its own init's, rootless, where they share a uid).
 * docs/security.md lists every rule with its reason; keep the two in step.
 *
 * Who runs what: this file runs at build time only. seccomp-gen links it, asks libseccomp
 * for the program and writes it out as C (seccomp-program.c), which libpaddock embeds; so no
 * sandbox pays for compiling a filter (libseccomp took ~5 ms per sandbox when init did it)
 * and libseccomp is not loaded at run time. test-seccomp rebuilds the program here and
 * checks it is identical to the embedded one. Each command's child loads the embedded
 * program with one seccomp(2) call after no_new_privs, as the last step before execve.
 *
 * SECURITY: every architecture the kernel will run for us gets the same rules (x86_64, and
 * i386 via int 0x80 or compat, and x32); any other arch kills the process, so a syscall
 * table we did not filter is never reachable.
 */
#include "seccomp-bpf.h"

#include <assert.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "error.h"
#include "util/cleanup.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE	  0
#define NETLINK_SOCK_DIAG 4
#endif

/*
 * Denied outright with EPERM. libseccomp must know each name: a syscall it cannot name is
 * a syscall it cannot filter, and we refuse to build a policy with that hole.
 */
static const char *const denied_syscalls[] = {
	/* loading code into the kernel, or replacing it */
	"init_module",
	"finit_module",
	"delete_module",
	"kexec_load",
	"kexec_file_load",
	"reboot",
	/* kernel attack surface reachable without privileges */
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"keyctl",
	"add_key",
	"request_key",
	/* file handles bypass the path walk (and so the mount namespace) */
	"open_by_handle_at",
	"name_to_handle_at",
	/* mounts, old and new API */
	"mount",
	"umount2",
	"pivot_root",
	"move_mount",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"open_tree",
	"mount_setattr",
	/* namespaces: the sandbox's are final */
	"unshare",
	"setns",
	/* other processes' memory and fds */
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	/* host-wide state: accounting, swap, clocks, kernel log, quotas, terminals, fanotify */
	"acct",
	"swapon",
	"swapoff",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"syslog",
	"quotactl",
	"quotactl_fd",
	"vhangup",
	"fanotify_init",
};

/*
 * Also denied with EPERM, but obsolete or present only on some architectures: skipped if
 * this libseccomp cannot name them (the running kernel then has no use for them either).
 */
static const char *const denied_syscalls_if_known[] = {
	"lookup_dcookie",  /* removed in Linux 6.8 */
	"nfsservctl",	   /* removed in Linux 3.1 */
	"uselib",	   /* a.out libraries */
	"create_module",   /* removed in Linux 2.6 */
	"get_kernel_syms", /* removed in Linux 2.6 */
	"query_module",	   /* removed in Linux 2.6 */
	"_sysctl",	   /* removed in Linux 5.5 */
	"iopl",		   /* x86 I/O ports */
	"ioperm",
	"vm86", /* i386 only */
	"vm86old",
	"umount",	   /* i386: the old umount */
	"stime",	   /* i386: sets the clock */
	"clock_settime64", /* i386: 64-bit time variants */
	"clock_adjtime64",
};

/*
 * clone() flags that make a namespace. CLONE_NEWTIME shares its bit with the exit signal
 * and the kernel never honours it in clone() (only clone3 and unshare); a value with that
 * bit set is no valid signal, so denying it costs nothing.
 */
static const uint64_t clone_namespace_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

/* ioctl() requests that push input into a terminal someone else reads. */
static const uint64_t denied_ioctls[] = { TIOCSTI, TIOCLINUX };

/*
 * Every syscall that takes a file mode, and the argument that holds it. A mode with S_ISUID
 * or S_ISGID is refused: a set-id file made inside could come out through a writable bind
 * (on the host it would be owned by the bind's owner). The kernel reads the mode as a
 * umode_t, so only the low 16 bits matter, and both bits sit there. openat2() passes its
 * mode in memory, where seccomp cannot look: it is refused outright (add_openat2_rule()).
 */
static const struct {
	const char *name;
	unsigned int arg;
} mode_syscalls[] = {
	{ "chmod", 1 },	  { "fchmod", 1 }, { "fchmodat", 2 }, { "fchmodat2", 2 },
	{ "creat", 1 },	  { "open", 2 },   { "openat", 3 },   { "mkdir", 1 },
	{ "mkdirat", 2 }, { "mknod", 1 },  { "mknodat", 2 },
};
static const uint64_t setid_bits[] = { S_ISUID, S_ISGID };

/*
 * socket(): the families a sandbox's own network namespace governs, and nothing else.
 * AF_VSOCK in particular is not namespaced: from a VM guest it reaches the hypervisor's
 * services, outside every egress rule. AF_PACKET, AF_ALG, AF_KEY, AF_TIPC, AF_RDS,
 * AF_BLUETOOTH and the rest are attack surface no sandboxed tool needs. netlink is kept for
 * the protocols tools use on their own netns: routes and addresses (getaddrinfo's
 * AI_ADDRCONFIG, `ip`) and socket diagnostics (`ss`).
 */
#define SOCKET_FAMILY_LAST_ALLOWED AF_NETLINK
static const int allowed_socket_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
#define NETLINK_LAST_ALLOWED NETLINK_SOCK_DIAG
static const int allowed_netlink_protocols[] = { NETLINK_ROUTE, NETLINK_SOCK_DIAG };

/*
 * personality(): the values Docker's default profile allows, PER_LINUX and PER_LINUX32
 * each with or without UNAME26, plus the query 0xffffffff. Everything else (notably
 * READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO) is denied.
 */
/*
 * A denied call is not refused by the filter itself: it is handed to init as a user
 * notification (SECCOMP_RET_USER_NOTIF), and init answers it with the errno the rule stands
 * for (pd_seccomp_denied_errno(): EAFNOSUPPORT or EPROTONOSUPPORT for socket(), EPERM for
 * everything else) and puts it on the record (seccomp.denied). Allowed calls never leave
 * the filter: the program is as long as with SECCOMP_RET_ERRNO, only the return value of
 * the deny branches differs. The ENOSYS rules (clone3, openat2) are compatibility paths
 * every runtime takes, not denials, and stay SECCOMP_RET_ERRNO: off the record.
 */
#define ACT_DENY SCMP_ACT_NOTIFY

#define PERSONALITY_QUERY	 0xffffffffULL
#define PERSONALITY_ALLOWED_BITS ((uint64_t)(PER_LINUX32 | UNAME26))

static void filter_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int add_rule(scmp_filter_ctx ctx, const char *name, bool must_know, uint32_t action,
		    unsigned int n_cmp, const struct scmp_arg_cmp *cmp, paddock_error *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	int r;

	if (nr == __NR_SCMP_ERROR) {
		if (!must_know)
			return 0;
		return pd_fail(err, ENOSYS, "libseccomp does not know syscall '%s'", name);
	}
	/*
	 * Not _exact: libseccomp translates the rule for each architecture of the filter and
	 * leaves out those where the syscall does not exist. -EDOM is its "does not apply to
	 * this architecture"; anything else is a real failure.
	 */
	r = seccomp_rule_add_array(ctx, action, nr, n_cmp, cmp);
	if (r == -EDOM)
		return 0;
	if (r < 0)
		return pd_fail(err, -r, "add seccomp rule for '%s'", name);
	return 0;
}

static int add_architectures(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	/* SECURITY: a syscall from an architecture not in the filter kills the process. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return pd_fail(err, -r, "set seccomp bad-arch action");
#ifdef __x86_64__
	/*
	 * SECURITY: an x86_64 process can still enter the kernel as i386 (int 0x80) or as x32
	 * (syscall numbers with bit 30 set); both get the same rules. Must come before the
	 * rules: libseccomp adds a rule only to the architectures present at the time.
	 */
	static const uint32_t extra[] = { SCMP_ARCH_X86, SCMP_ARCH_X32 };
	for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
		r = seccomp_arch_add(ctx, extra[i]);
		if (r < 0 && r != -EEXIST)
			return pd_fail(err, -r, "add seccomp architecture 0x%x", extra[i]);
	}
#endif
	/*
	 * TODO: other 64-bit hosts run their compat architecture (arm on aarch64) under the
	 * bad-arch action for now, which kills it.
	 */
	return 0;
}

static int add_denied_syscalls(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	for (size_t i = 0; i < ELEMENTSOF(denied_syscalls); i++) {
		r = add_rule(ctx, denied_syscalls[i], true, ACT_DENY, 0, NULL, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(denied_syscalls_if_known); i++) {
		r = add_rule(ctx, denied_syscalls_if_known[i], false, ACT_DENY, 0, NULL, err);
		if (r < 0)
			return r;
	}
	/*
	 * clone3 passes its flags in memory, where seccomp cannot look: it fails with ENOSYS,
	 * on which glibc (2.34+) falls back to clone, whose flags the rules below inspect.
	 */
	return add_rule(ctx, "clone3", true, SCMP_ACT_ERRNO(ENOSYS), 0, NULL, err);
}

static int add_clone_rules(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	/*
	 * The flags are argument 0 on x86_64, x32 and i386 alike (only s390 swaps the first
	 * two). One rule per flag: libseccomp ORs the rules of a syscall.
	 */
	for (size_t i = 0; i < ELEMENTSOF(clone_namespace_flags); i++) {
		uint64_t flag = clone_namespace_flags[i];
		struct scmp_arg_cmp cmp = {
			.arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = flag, .datum_b = flag
		};

		r = add_rule(ctx, "clone", true, ACT_DENY, 1, &cmp, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int add_ioctl_rules(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	/*
	 * SECURITY: the kernel reads the request as an unsigned int, so compare only the low
	 * 32 bits; otherwise TIOCSTI | 1 << 32 would pass an equality check and still inject.
	 */
	for (size_t i = 0; i < ELEMENTSOF(denied_ioctls); i++) {
		struct scmp_arg_cmp cmp = {
			.arg = 1,
			.op = SCMP_CMP_MASKED_EQ,
			.datum_a = 0xffffffffULL,
			.datum_b = denied_ioctls[i],
		};

		r = add_rule(ctx, "ioctl", true, ACT_DENY, 1, &cmp, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* set-id bits in any mode argument: EPERM, as for a caller that may not set them */
static int add_setid_rules(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	for (size_t i = 0; i < ELEMENTSOF(mode_syscalls); i++)
		for (size_t b = 0; b < ELEMENTSOF(setid_bits); b++) {
			struct scmp_arg_cmp cmp = { .arg = mode_syscalls[i].arg,
						    .op = SCMP_CMP_MASKED_EQ,
						    .datum_a = setid_bits[b],
						    .datum_b = setid_bits[b] };

			r = add_rule(ctx, mode_syscalls[i].name, true, ACT_DENY, 1, &cmp, err);
			if (r < 0)
				return r;
		}
	return 0;
}

/*
 * openat2(): its mode (and flags) are in a struct in memory. ENOSYS, as for clone3: every
 * library that uses it (Go's os.Root, systemd, Rust crates) falls back to openat on ENOSYS,
 * whose mode the rules above check.
 */
static int add_openat2_rule(scmp_filter_ctx ctx, paddock_error *err)
{
	return add_rule(ctx, "openat2", true, SCMP_ACT_ERRNO(ENOSYS), 0, NULL, err);
}

static bool int_in(int v, const int *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

/*
 * "Deny a 32-bit int argument unless it is one of a small set of values, all <= last", as
 * rules that each deny: one "greater than last" (compared on all 64 bits, so a value with
 * anything in its upper half is denied too, though the kernel would read only the lower),
 * and one "low 32 bits equal v" for each v <= last outside the set. extra, when given, is
 * ANDed into every rule (a condition on another argument).
 */
static int add_int_allowlist(scmp_filter_ctx ctx, const char *name, unsigned int arg,
			     const int *set, size_t n, int last, uint32_t action,
			     const struct scmp_arg_cmp *extra, paddock_error *err)
{
	struct scmp_arg_cmp cmp[2];
	unsigned int nc = extra ? 2 : 1;
	int r;

	if (extra)
		cmp[1] = *extra;
	cmp[0] = (struct scmp_arg_cmp){ .arg = arg, .op = SCMP_CMP_GT, .datum_a = (uint64_t)last };
	r = add_rule(ctx, name, true, action, nc, cmp, err);
	if (r < 0)
		return r;
	for (int v = 0; v <= last; v++) {
		if (int_in(v, set, n))
			continue;
		cmp[0] = (struct scmp_arg_cmp){ .arg = arg,
						.op = SCMP_CMP_MASKED_EQ,
						.datum_a = 0xffffffffULL,
						.datum_b = (uint64_t)v };
		r = add_rule(ctx, name, true, action, nc, cmp, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * socket(): other families get EAFNOSUPPORT, other netlink protocols EPROTONOSUPPORT, the
 * kernel's own answers for what it does not offer (pd_seccomp_denied_errno() picks them). On i386,
 * libseccomp also writes each rule for socketcall(SYS_SOCKET, args): its arguments are in memory,
 * so that rule drops the condition and denies every socketcall socket(); a 32-bit program whose
 * libc makes sockets through socketcall (glibc does) gets EAFNOSUPPORT for all of them
 * (docs/security.md).
 */
static int add_socket_rules(scmp_filter_ctx ctx, paddock_error *err)
{
	struct scmp_arg_cmp netlink = {
		.arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffULL, .datum_b = AF_NETLINK
	};
	int r;

	r = add_int_allowlist(ctx, "socket", 0, allowed_socket_families,
			      ELEMENTSOF(allowed_socket_families), SOCKET_FAMILY_LAST_ALLOWED,
			      ACT_DENY, NULL, err);
	if (r < 0)
		return r;
	return add_int_allowlist(ctx, "socket", 2, allowed_netlink_protocols,
				 ELEMENTSOF(allowed_netlink_protocols), NETLINK_LAST_ALLOWED,
				 ACT_DENY, &netlink, err);
}

/*
 * prlimit64(pid, resource, new, old) with a pid and new limits: EPERM. Setting one's own
 * limits (pid 0, as setrlimit() does) and reading anyone's stay allowed. Rootless, init and
 * the commands share a uid, and the kernel would let a command cut init's RLIMIT_NOFILE or
 * RLIMIT_NPROC, so that no later command could start.
 */
static int add_prlimit_rule(scmp_filter_ctx ctx, paddock_error *err)
{
	const struct scmp_arg_cmp cmp[2] = {
		{ .arg = 0, .op = SCMP_CMP_NE, .datum_a = 0 },
		{ .arg = 2, .op = SCMP_CMP_NE, .datum_a = 0 },
	};

	return add_rule(ctx, "prlimit64", true, ACT_DENY, 2, cmp, err);
}

static int add_personality_rule(scmp_filter_ctx ctx, uint64_t mask, uint64_t value,
				paddock_error *err)
{
	struct scmp_arg_cmp cmp = {
		.arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = mask, .datum_b = value
	};

	return add_rule(ctx, "personality", true, ACT_DENY, 1, &cmp, err);
}

/*
 * With ALLOW as the default, "personality(v) unless v is one of five values" has to be
 * written as EPERM rules whose union is exactly the complement of the allowed set, and
 * libseccomp takes at most one comparison per argument in a rule.
 *
 * Let v be the low 32 bits (what the kernel reads) and B = PER_LINUX32 | UNAME26 (bits 3
 * and 17). Allowed: v & ~B == 0 (the four combinations), or v == 0xffffffff. So v is to be
 * denied exactly when some bit outside B is set and some bit is clear. Walk the 32 bits as
 * a ring from a set bit j outside B to the first clear bit k: the bit i just before k is
 * set and i + 1 is clear. One rule "bit i set, bit i+1 clear" per i outside B catches v;
 * when i is in B, the walk came through i - 1 (outside B, since B's bits are isolated), so
 * one rule "bits i-1 and i set, bit i+1 clear" per bit of B finishes the cover. No allowed
 * value matches any of these rules: the four have no bit outside B set, the query has no
 * bit clear. 33 rules with the one below. The exported program was checked against all 2^32
 * low halves, on x86_64 and i386, with a BPF interpreter (libseccomp 2.5.4); the unit test
 * checks samples of both sides in the kernel.
 */
static int add_personality_rules(scmp_filter_ctx ctx, paddock_error *err)
{
	int r;

	/*
	 * SECURITY: the kernel ignores the upper 32 bits, but no caller has a reason to set
	 * them; deny rather than reason about them. (On i386 the argument is 32 bits wide and
	 * this rule never matches.)
	 */
	struct scmp_arg_cmp upper = { .arg = 0, .op = SCMP_CMP_GT, .datum_a = PERSONALITY_QUERY };
	r = add_rule(ctx, "personality", true, ACT_DENY, 1, &upper, err);
	if (r < 0)
		return r;

	for (unsigned int i = 0; i < 32; i++) {
		uint64_t bit = 1ULL << i, next = 1ULL << ((i + 1) % 32);

		if (bit & PERSONALITY_ALLOWED_BITS) {
			uint64_t prev = 1ULL << ((i + 31) % 32);

			assert(!(prev & PERSONALITY_ALLOWED_BITS));
			assert(!(next & PERSONALITY_ALLOWED_BITS));
			r = add_personality_rule(ctx, prev | bit | next, prev | bit, err);
		} else {
			r = add_personality_rule(ctx, bit | next, bit, err);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_all_at(int fd, void *buf, size_t size)
{
	for (size_t done = 0; done < size;) {
		ssize_t n = pread(fd, (char *)buf + done, size - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* libseccomp 2.5 exports only to an fd (seccomp_export_bpf_mem came in 2.6): use a memfd. */
static int export_program(scmp_filter_ctx ctx, struct pd_seccomp_prog *ret_prog, paddock_error *err)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ struct sock_filter *filter = NULL;
	struct stat st;
	size_t len;
	int r;

	fd = memfd_create("paddock-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return pd_fail(err, errno, "memfd_create for the seccomp program");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return pd_fail(err, -r, "export seccomp program");
	if (fstat(fd, &st) < 0)
		return pd_fail(err, errno, "stat seccomp program");
	if (st.st_size <= 0 || (size_t)st.st_size % sizeof(*filter) != 0)
		return pd_fail(err, EIO, "seccomp program has an odd size of %jd bytes",
			       (intmax_t)st.st_size);
	len = (size_t)st.st_size / sizeof(*filter);
	if (len > BPF_MAXINSNS)
		return pd_fail(err, E2BIG, "seccomp program has %zu instructions, over %d", len,
			       BPF_MAXINSNS);
	filter = calloc(len, sizeof(*filter));
	if (!filter)
		return pd_fail(err, ENOMEM, "allocate seccomp program");
	r = read_all_at(fd, filter, len * sizeof(*filter));
	if (r < 0)
		return pd_fail(err, r, "read back seccomp program");

	ret_prog->filter = TAKE_PTR(filter);
	ret_prog->len = (unsigned short)len;
	ret_prog->owned = true;
	return 0;
}

int pd_seccomp_policy_build(struct pd_seccomp_prog *ret_prog, paddock_error *err)
{
	_cleanup_(filter_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	assert(ret_prog);

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return pd_fail(err, ENOMEM, "create seccomp filter");
	/*
	 * A binary search over syscall numbers instead of a linear chain: every allowed
	 * syscall would otherwise walk all the deny rules. A speed-up only, so a libseccomp
	 * without it still gets a correct, slower filter.
	 */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	r = add_architectures(ctx, err);
	if (r < 0)
		return r;
	r = add_denied_syscalls(ctx, err);
	if (r < 0)
		return r;
	r = add_clone_rules(ctx, err);
	if (r < 0)
		return r;
	r = add_ioctl_rules(ctx, err);
	if (r < 0)
		return r;
	r = add_personality_rules(ctx, err);
	if (r < 0)
		return r;
	r = add_setid_rules(ctx, err);
	if (r < 0)
		return r;
	r = add_openat2_rule(ctx, err);
	if (r < 0)
		return r;
	r = add_socket_rules(ctx, err);
	if (r < 0)
		return r;
	r = add_prlimit_rule(ctx, err);
	if (r < 0)
		return r;
	return export_program(ctx, ret_prog, err);
}
