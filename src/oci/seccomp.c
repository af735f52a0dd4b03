/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.json's linux.seccomp compiled to a BPF program with libseccomp, which each of the
 * container's processes loads on top of paddock's own filter right before its exec
 * (paddock_exec_opts.filter): the profile narrows what paddock allows, never widens it
 * (filters only stack). The profile is the engine's (Docker's and Podman's default
 * profiles, a pod's seccompProfile), parsed strictly: an unknown action, operator or
 * architecture is refused by name; a syscall this libseccomp does not know is left out,
 * as runc does; SCMP_ACT_NOTIFY is refused (the sandbox's filter holds the listener).
 */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "oci.h"

static int fail(paddock_error *err, int code, const char *field, const char *msg, const char *arg)
{
	err->code = code;
	snprintf(err->field, sizeof(err->field), "%s", field);
	snprintf(err->msg, sizeof(err->msg), "%s '%.200s'", msg, arg ? arg : "");
	return -code;
}

static int action(json_t *a, json_t *errno_ret, const char *field, uint32_t *ret,
		  paddock_error *err)
{
	const char *s = json_string_value(a);
	json_int_t e = json_is_integer(errno_ret) ? json_integer_value(errno_ret) : EPERM;

	if (!s)
		return fail(err, EINVAL, field, "expected an action, got", "");
	if (e < 0 || e > 4095)
		return fail(err, EINVAL, field, "errnoRet out of range for", s);
	if (!strcmp(s, "SCMP_ACT_ALLOW"))
		*ret = SCMP_ACT_ALLOW;
	else if (!strcmp(s, "SCMP_ACT_ERRNO"))
		*ret = SCMP_ACT_ERRNO((uint16_t)e);
	else if (!strcmp(s, "SCMP_ACT_KILL") || !strcmp(s, "SCMP_ACT_KILL_THREAD"))
		*ret = SCMP_ACT_KILL_THREAD;
	else if (!strcmp(s, "SCMP_ACT_KILL_PROCESS"))
		*ret = SCMP_ACT_KILL_PROCESS;
	else if (!strcmp(s, "SCMP_ACT_TRAP"))
		*ret = SCMP_ACT_TRAP;
	else if (!strcmp(s, "SCMP_ACT_TRACE"))
		*ret = SCMP_ACT_TRACE((uint16_t)e);
	else if (!strcmp(s, "SCMP_ACT_LOG"))
		*ret = SCMP_ACT_LOG;
	else if (!strcmp(s, "SCMP_ACT_NOTIFY"))
		return fail(err, EOPNOTSUPP, field,
			    "paddock's own filter holds the sandbox's notifications: refused", s);
	else
		return fail(err, EINVAL, field, "unknown action", s);
	return 0;
}

static int operator(const char *s, enum scmp_compare *ret)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
		{ "SCMP_CMP_NE", SCMP_CMP_NE },
		{ "SCMP_CMP_LT", SCMP_CMP_LT },
		{ "SCMP_CMP_LE", SCMP_CMP_LE },
		{ "SCMP_CMP_EQ", SCMP_CMP_EQ },
		{ "SCMP_CMP_GE", SCMP_CMP_GE },
		{ "SCMP_CMP_GT", SCMP_CMP_GT },
		{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
	};

	for (size_t i = 0; s && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(s, ops[i].name)) {
			*ret = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static int add_rule(scmp_filter_ctx ctx, json_t *rule, size_t i, uint32_t def, paddock_error *err)
{
	struct scmp_arg_cmp cmp[6];
	json_t *names = json_object_get(rule, "names"), *args = json_object_get(rule, "args"), *a;
	const char *one = json_string_value(json_object_get(rule, "name"));
	char field[64];
	unsigned n = 0;
	uint32_t act;
	size_t k;
	int r;

	snprintf(field, sizeof(field), "linux.seccomp.syscalls[%zu].action", i);
	r = action(json_object_get(rule, "action"), json_object_get(rule, "errnoRet"), field, &act,
		   err);
	if (r < 0)
		return r;
	snprintf(field, sizeof(field), "linux.seccomp.syscalls[%zu].args", i);
	if (json_array_size(args) > 6)
		return fail(err, EINVAL, field, "at most 6 arguments", "");
	json_array_foreach(args, k, a)
	{
		enum scmp_compare op;
		json_int_t idx = json_integer_value(json_object_get(a, "index"));

		if (operator(json_string_value(json_object_get(a, "op")), &op) < 0 || idx < 0 ||
		    idx > 5)
			return fail(err, EINVAL, field,
				    "expected an index 0-5 and an operator, got",
				    json_string_value(json_object_get(a, "op")));
		cmp[n++] = (struct scmp_arg_cmp){
			.arg = (unsigned)idx,
			.op = op,
			.datum_a = (scmp_datum_t)json_integer_value(json_object_get(a, "value")),
			.datum_b = (scmp_datum_t)json_integer_value(json_object_get(a, "valueTwo")),
		};
	}
	if (act == def)
		return 0; /* libseccomp refuses a rule that says what the default says */
	for (k = 0; k < json_array_size(names) || (one && k == 0); k++) {
		const char *name =
			one && !names ? one : json_string_value(json_array_get(names, k));
		int nr = name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;

		if (nr == __NR_SCMP_ERROR) {
			oci_debug("linux.seccomp.syscalls[%zu]: '%s' unknown here, left out", i,
				  name ? name : "");
			continue;
		}
		r = seccomp_rule_add_array(ctx, act, nr, n, cmp);
		if (r < 0 && r != -EEXIST) {
			snprintf(field, sizeof(field), "linux.seccomp.syscalls[%zu]", i);
			return fail(err, -r, field, "cannot add a rule for", name);
		}
	}
	return 0;
}

int oci_seccomp_compile(json_t *sec, void **ret_prog, size_t *ret_len, paddock_error *err)
{
	scmp_filter_ctx ctx = NULL;
	json_t *v;
	uint32_t def;
	size_t i, len = 0;
	char *prog = NULL;
	int fd = -1, r;

	*ret_prog = NULL;
	*ret_len = 0;
	if (!sec)
		return 0;
	if (!json_is_object(sec))
		return fail(err, EINVAL, "linux.seccomp", "expected an object", "");
	if (json_object_get(sec, "listenerPath"))
		return fail(err, EOPNOTSUPP, "linux.seccomp.listenerPath",
			    "paddock's own filter holds the sandbox's notifications: refused", "");
	r = action(json_object_get(sec, "defaultAction"), json_object_get(sec, "defaultErrnoRet"),
		   "linux.seccomp.defaultAction", &def, err);
	if (r < 0)
		return r;
	ctx = seccomp_init(def);
	if (!ctx)
		return fail(err, ENOMEM, "linux.seccomp", "out of memory", "");
	/* no_new_privs is paddock's (init-run.c); the program is exported, not loaded here */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	json_array_foreach(json_object_get(sec, "architectures"), i, v)
	{
		const char *s = json_string_value(v);
		uint32_t arch = 0;

		if (s && !strncmp(s, "SCMP_ARCH_", 10)) {
			char lower[32];
			size_t k;

			for (k = 0; s[10 + k] && k < sizeof(lower) - 1; k++)
				lower[k] = (char)(s[10 + k] >= 'A' && s[10 + k] <= 'Z'
							  ? s[10 + k] - 'A' + 'a'
							  : s[10 + k]);
			lower[k] = '\0';
			arch = seccomp_arch_resolve_name(!strcmp(lower, "x86") ? "x86" : lower);
		}
		if (!arch) {
			char f[64];

			snprintf(f, sizeof(f), "linux.seccomp.architectures[%zu]", i);
			r = fail(err, EINVAL, f, "unknown architecture", s);
			goto out;
		}
		r = seccomp_arch_add(ctx, arch);
		if (r < 0 && r != -EEXIST) {
			oci_debug("linux.seccomp: architecture '%s' left out (%s)", s,
				  strerror(-r));
			continue;
		}
	}
	json_array_foreach(json_object_get(sec, "syscalls"), i, v)
	{
		r = add_rule(ctx, v, i, def, err);
		if (r < 0)
			goto out;
	}
	fd = memfd_create("oci-seccomp", MFD_CLOEXEC);
	r = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
	if (r >= 0) {
		off_t end = lseek(fd, 0, SEEK_END);

		len = end > 0 ? (size_t)end : 0;
		if (len == 0 || len > 4096 * 8 || len % 8)
			r = -E2BIG;
	}
	if (r >= 0 && !(prog = malloc(len)))
		r = -ENOMEM;
	if (r >= 0 && pread(fd, prog, len, 0) != (ssize_t)len)
		r = -EIO;
	if (r < 0) {
		free(prog);
		r = fail(err, -r, "linux.seccomp",
			 "cannot compile the profile (at most 4096 instructions)", "");
		goto out;
	}
	*ret_prog = prog;
	*ret_len = len;
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return r;
}
