/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.json onto a paddock spec (docs/oci.md has the table). Every field is honoured,
 * honoured by what paddock does anyway (its /proc, /dev, namespaces), ignored with a
 * warning where ignoring it only takes privilege away (AppArmor and SELinux labels,
 * capabilities beyond paddock's set), or refused with an error naming the field. The
 * engine is trusted to name host paths; their form is still checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "paddock/oci.h"
#include "oci.h"

#define CONFIG_MAX (4u << 20)

int oci_read_json(const char *path, size_t max, json_t **ret, char **ret_text, paddock_error *err)
{
	json_error_t jerr;
	struct stat st;
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd;
	json_t *j;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return oci_error(err, errno, "", "open '%s'", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		close(fd);
		return oci_error(err, EFBIG, "",
				 "'%s': expected a regular file of at most %zu bytes", path, max);
	}
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		return oci_error(err, ENOMEM, "", "out of memory");
	}
	while (len < max && (n = read(fd, buf + len, max - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			close(fd);
			return oci_error(err, errno, "", "read '%s'", path);
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		free(buf);
		return oci_error(err, EINVAL, "", "'%s': expected a JSON object (line %d: %s)",
				 path, jerr.line, j ? "not an object" : jerr.text);
	}
	*ret = j;
	if (ret_text)
		*ret_text = buf;
	else
		free(buf);
	return 0;
}

/* An array of strings as a NULL-terminated copy; NULL json gives an empty one. */
static int strv_from_json(json_t *a, const char *field, size_t max, char ***ret, paddock_error *err)
{
	size_t n = a ? json_array_size(a) : 0;
	char **v;

	if (a && !json_is_array(a))
		return oci_error(err, EINVAL, field, "expected an array of strings");
	if (n > max)
		return oci_error(err, E2BIG, field, "expected at most %zu entries, got %zu", max,
				 n);
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return oci_error(err, ENOMEM, field, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(a, i);

		if (!json_is_string(s) || !(v[i] = strdup(json_string_value(s)))) {
			char f[96];

			for (size_t k = 0; k < i; k++)
				free(v[k]);
			free(v);
			snprintf(f, sizeof(f), "%s[%zu]", field, i);
			return oci_error(err, EINVAL, f, "expected a string");
		}
	}
	*ret = v;
	return 0;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void oci_process_release(struct oci_process *p)
{
	strv_free(p->args);
	strv_free(p->env);
	free(p->cwd);
	*p = (struct oci_process){ 0 };
}

static int get_u32(json_t *o, const char *key, const char *field, uint32_t *ret, paddock_error *err)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX)
		return oci_error(err, EINVAL, field, "expected an integer from 0 to 4294967295");
	*ret = (uint32_t)json_integer_value(v);
	return 0;
}

int oci_process_load(json_t *obj, const char *field, struct oci_process *ret, paddock_error *err)
{
	struct oci_process p = { .uid = 0, .gid = 0 };
	char f[96];
	json_t *v, *user;
	int r;

	if (!json_is_object(obj))
		return oci_error(err, EINVAL, field, "expected an object");
	snprintf(f, sizeof(f), "%s.args", field);
	v = json_object_get(obj, "args");
	r = strv_from_json(v, f, 4096, &p.args, err);
	if (r < 0)
		return r;
	if (!p.args[0] || !p.args[0][0]) {
		oci_process_release(&p);
		return oci_error(err, EINVAL, f, "expected a command (a non-empty first argument)");
	}
	snprintf(f, sizeof(f), "%s.env", field);
	r = strv_from_json(json_object_get(obj, "env"), f, 4096, &p.env, err);
	for (size_t i = 0; r >= 0 && p.env[i]; i++)
		if (!strchr(p.env[i], '=') || p.env[i][0] == '=') {
			snprintf(f, sizeof(f), "%s.env[%zu]", field, i);
			r = oci_error(err, EINVAL, f, "expected NAME=VALUE");
		}
	if (r < 0)
		goto out;
	v = json_object_get(obj, "cwd");
	snprintf(f, sizeof(f), "%s.cwd", field);
	if (v && (!json_is_string(v) || json_string_value(v)[0] != '/')) {
		r = oci_error(err, EINVAL, f, "expected an absolute path");
		goto out;
	}
	p.cwd = strdup(v ? json_string_value(v) : "/");
	v = json_object_get(obj, "terminal");
	p.terminal = json_is_true(v);
	v = json_object_get(obj, "consoleSize");
	if (json_is_object(v)) {
		json_int_t h = json_integer_value(json_object_get(v, "height"));
		json_int_t w = json_integer_value(json_object_get(v, "width"));

		p.rows = h > 0 && h < 65536 ? (unsigned short)h : 0;
		p.cols = w > 0 && w < 65536 ? (unsigned short)w : 0;
	}
	user = json_object_get(obj, "user");
	if (user) {
		snprintf(f, sizeof(f), "%s.user.uid", field);
		r = get_u32(user, "uid", f, &p.uid, err);
		if (r >= 0) {
			snprintf(f, sizeof(f), "%s.user.gid", field);
			r = get_u32(user, "gid", f, &p.gid, err);
		}
		if (r < 0)
			goto out;
	}
	/*
	 * uid 0 is root of the container's own user namespace (paddock's root set of
	 * capabilities over it); any other id runs without capabilities. The ids must exist in
	 * the sandbox's namespace: as root its 65536, rootless only 1000 (the invoker).
	 */
	if ((p.uid == 0) != (p.gid == 0) ||
	    (paddock_host_root() ? (p.uid >= 65536 || p.gid >= 65536)
				 : (p.uid != 0 && (p.uid != 1000 || p.gid != 1000)))) {
		snprintf(f, sizeof(f), "%s.user", field);
		r = oci_error(
			err, EINVAL, f,
			"expected uid:gid 0:0 (root of the container's own user namespace) or "
			"both non-zero %s, got %u:%u",
			paddock_host_root() ? "below 65536" : "and 1000:1000 (rootless)", p.uid,
			p.gid);
		goto out;
	}
	if (!p.cwd) {
		r = oci_error(err, ENOMEM, field, "out of memory");
		goto out;
	}
	*ret = p;
	return 0;
out:
	oci_process_release(&p);
	return r;
}

/* ---- mounts --------------------------------------------------------------------------- */

static bool has_option(json_t *opts, const char *name)
{
	size_t i;
	json_t *o;

	json_array_foreach(opts, i, o) if (json_is_string(o) &&
					   !strcmp(json_string_value(o), name)) return true;
	return false;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/*
 * A mount's destination as the container's root resolves it: engines name paths through
 * the image's symlinks (Kubernetes mounts its service account token at /var/run/secrets,
 * and /var/run is a link to /run in most images), which paddock's root build refuses to
 * cross. The longest existing prefix is resolved with openat2(RESOLVE_IN_ROOT) in the
 * engine's root (every link stays inside it), the rest appended as it is.
 */
static int resolve_in_root(const char *root, const char *dst, char *buf, size_t size)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char prefix[PATH_MAX], link[64], got[PATH_MAX];
	size_t rootlen = strlen(root), n = strlen(dst);
	int rfd, fd = -1;
	ssize_t k;

	if (n >= sizeof(prefix))
		return -ENAMETOOLONG;
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	memcpy(prefix, dst, n + 1);
	/* shorten to the longest prefix that exists */
	while (n > 1) {
		fd = (int)syscall(SYS_openat2, rfd, prefix, &how, sizeof(how));
		if (fd >= 0)
			break;
		while (n > 1 && prefix[n - 1] != '/')
			n--;
		prefix[n > 1 ? --n : n] = '\0';
	}
	close(rfd);
	if (fd < 0) {
		snprintf(buf, size, "%s", dst);
		return 0;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, got, sizeof(got) - 1);
	close(fd);
	if (k < 0)
		return -errno;
	got[k] = '\0';
	if (strncmp(got, root, rootlen) || (got[rootlen] && got[rootlen] != '/'))
		return -EXDEV; /* resolved outside the root: cannot be, but never bind it */
	if ((size_t)snprintf(buf, size, "%s%s", got[rootlen] ? got + rootlen : "", dst + n) >= size)
		return -ENAMETOOLONG;
	if (!buf[0])
		snprintf(buf, size, "/");
	return 0;
}

/* What paddock makes itself or leaves out, whatever the engine mounts there: said, and true. */
static bool paddock_makes(size_t i, const char *dst)
{
	if (!strcmp(dst, "/proc") || !strcmp(dst, "/dev") || !strcmp(dst, "/dev/pts") ||
	    !strcmp(dst, "/dev/shm")) {
		oci_debug("mounts[%zu] '%s': paddock's own", i, dst);
		return true;
	}
	if (!strcmp(dst, "/dev/mqueue")) {
		oci_debug("mounts[%zu] '%s': not mounted; the IPC namespace is private and "
			  "mq_open() works without it",
			  i, dst);
		return true;
	}
	if (under(dst, "/sys")) {
		oci_debug("mounts[%zu] '%s': paddock gives a container no /sys", i, dst);
		return true;
	}
	if (!strcmp(dst, "/dev/termination-log")) {
		oci_warn("mounts[%zu] '%s': not mounted (paddock builds /dev itself); the kubelet "
			 "reads no termination message: use terminationMessagePolicy "
			 "FallbackToLogsOnError",
			 i, dst);
		return true;
	}
	return false;
}

/* A bind mount becomes one of the spec's binds, at `dst` resolved inside the root. */
static int map_bind(struct oci_bundle *b, json_t *opts, const char *src, const char *dst, size_t i,
		    paddock_error *err)
{
	char f[64], bind[PATH_MAX * 2 + 8], resolved[PATH_MAX];
	int r;

	snprintf(f, sizeof(f), "mounts[%zu].source", i);
	if (!src || src[0] != '/')
		return oci_error(err, EINVAL, f, "expected an absolute host path");
	if (strchr(src, ':') || strchr(dst, ':'))
		return oci_error(err, EINVAL, f, "a path with ':' cannot be bound yet");
	if (has_option(opts, "rshared") || has_option(opts, "shared") ||
	    has_option(opts, "rslave") || has_option(opts, "slave")) {
		snprintf(f, sizeof(f), "mounts[%zu].options", i);
		return oci_error(err, EINVAL, f,
				 "'%s': mounts propagate nothing in or out of a paddock container "
				 "(private only)",
				 dst);
	}
	r = resolve_in_root(b->rootfs, dst, resolved, sizeof(resolved));
	if (r < 0) {
		snprintf(f, sizeof(f), "mounts[%zu].destination", i);
		return oci_error(err, -r, f, "'%s' cannot be resolved in the container's root",
				 dst);
	}
	if (strcmp(resolved, dst))
		oci_debug("mounts[%zu] '%s': at '%s' (symlinks in the root followed, inside it)", i,
			  dst, resolved);
	dst = resolved;
	snprintf(bind, sizeof(bind), "%s:%s:%s", src, dst, has_option(opts, "ro") ? "ro" : "rw");
	r = paddock_spec_set(b->spec, "binds", bind, err);
	if (r < 0) {
		snprintf(err->field, sizeof(err->field), "mounts[%zu]", i);
		return r;
	}
	return 0;
}

/*
 * One mount. paddock builds /proc, /dev (null, zero, full, random, urandom, tty, a private
 * devpts, shm), and has no /sys: those the engine asks for are what paddock makes anyway.
 * Binds become the spec's binds (nosuid, nodev; read-write directories idmapped to their
 * owner as root). A tmpfs elsewhere is the sandbox's writable disk already (its root is).
 */
static int map_mount(struct oci_bundle *b, json_t *m, size_t i, paddock_error *err)
{
	const char *dst = json_string_value(json_object_get(m, "destination"));
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *src = json_string_value(json_object_get(m, "source"));
	json_t *opts = json_object_get(m, "options");
	char f[64];
	bool is_bind;

	snprintf(f, sizeof(f), "mounts[%zu].destination", i);
	if (!dst || dst[0] != '/')
		return oci_error(err, EINVAL, f, "expected an absolute path");
	if (opts && !json_is_array(opts)) {
		snprintf(f, sizeof(f), "mounts[%zu].options", i);
		return oci_error(err, EINVAL, f, "expected an array of strings");
	}
	is_bind = (type && !strcmp(type, "bind")) || has_option(opts, "bind") ||
		  has_option(opts, "rbind");
	if (!type && !is_bind) {
		snprintf(f, sizeof(f), "mounts[%zu].type", i);
		return oci_error(err, EINVAL, f, "expected a type, or \"bind\" in options");
	}
	if (paddock_makes(i, dst))
		return 0;
	if (under(dst, "/proc") || under(dst, "/dev")) {
		snprintf(f, sizeof(f), "mounts[%zu].destination", i);
		return oci_error(
			err, EINVAL, f,
			"'%s': paddock builds /proc and /dev itself; nothing is mounted below "
			"them",
			dst);
	}
	if (!is_bind) {
		if (!strcmp(type, "tmpfs")) {
			/* the root is writable and on the sandbox's size-limited tmpfs already */
			oci_debug("mounts[%zu] '%s': on the sandbox's own disk (tmpfs)", i, dst);
			return 0;
		}
		snprintf(f, sizeof(f), "mounts[%zu].type", i);
		return oci_error(
			err, EINVAL, f,
			"'%s' at '%s': paddock mounts binds; proc, sysfs, devpts, mqueue, tmpfs "
			"and cgroup are its own",
			type, dst);
	}
	return map_bind(b, opts, src, dst, i, err);
}

/* ---- namespaces, resources ----------------------------------------------------------- */

static int map_namespaces(struct oci_bundle *b, json_t *linux_, paddock_error *err)
{
	json_t *ns = json_object_get(linux_, "namespaces"), *n;
	bool seen_net = false, seen_pid = false, seen_mnt = false;
	size_t i;

	if (ns && !json_is_array(ns))
		return oci_error(err, EINVAL, "linux.namespaces", "expected an array");
	json_array_foreach(ns, i, n)
	{
		const char *type = json_string_value(json_object_get(n, "type"));
		const char *path = json_string_value(json_object_get(n, "path"));
		char f[64];

		snprintf(f, sizeof(f), "linux.namespaces[%zu]", i);
		if (!type)
			return oci_error(err, EINVAL, f, "expected a \"type\"");
		if (!strcmp(type, "network")) {
			seen_net = true;
			if (path && !(b->netns = strdup(path)))
				return oci_error(err, ENOMEM, f, "out of memory");
		} else if (!strcmp(type, "pid")) {
			seen_pid = true;
			if (path)
				return oci_error(
					err, EINVAL, f,
					"joining a pid namespace ('%s'): every paddock "
					"container has its own, with paddock's init as PID 1",
					path);
		} else if (!strcmp(type, "mount")) {
			seen_mnt = true;
			if (path)
				return oci_error(err, EINVAL, f,
						 "joining a mount namespace is refused");
		} else if (!strcmp(type, "user")) {
			if (path)
				return oci_error(
					err, EINVAL, f,
					"joining a user namespace is refused: each paddock "
					"container has its own id range");
		} else if (!strcmp(type, "ipc") || !strcmp(type, "uts") ||
			   !strcmp(type, "cgroup")) {
			/* a pod's shared IPC and UTS: the container keeps private ones */
			if (path)
				oci_warn("%s: '%s' not joined: the container has a private %s "
					 "namespace",
					 f, path, type);
		} else {
			return oci_error(err, EINVAL, f, "unknown namespace type '%s'", type);
		}
	}
	/* SECURITY: a namespace left out would be the host's: never shared */
	if (!seen_net)
		return oci_error(
			err, EINVAL, "linux.namespaces",
			"no network namespace means the host's network, which a paddock "
			"container never shares (use a network namespace, e.g. --network none)");
	if (!seen_pid || !seen_mnt)
		return oci_error(
			err, EINVAL, "linux.namespaces",
			"no %s namespace means the host's, which a paddock container never "
			"shares",
			!seen_pid ? "pid" : "mount");
	return 0;
}

/*
 * A given network namespace (a Kubernetes pod's): without egress rules the container joins
 * it, and its network is the pod's. With them (dev.paddock.network.mode), paddock's proxy
 * must stand between the container and that network: the container gets a namespace of
 * paddock's own (loopback and the proxy), and the supervisor moves into the given one, so
 * that what the proxy lets out leaves from the pod's address, under the pod's network
 * policies. Nothing reaches the container from outside then (docs/oci.md).
 */
static int map_netns(struct oci_bundle *b, paddock_error *err)
{
	char *text = NULL;
	json_t *spec;
	const char *mode;
	bool egress;
	int r;

	if (!b->netns)
		return 0;
	r = paddock_spec_to_json(b->spec, &text, err);
	if (r < 0)
		return r;
	spec = json_loads(text, 0, NULL);
	free(text);
	mode = json_string_value(json_object_get(json_object_get(spec, "network"), "mode"));
	egress = mode && strcmp(mode, "none");
	json_decref(spec);
	if (egress) {
		b->supervisor_netns = b->netns;
		b->netns = NULL;
		return 0;
	}
	return paddock_spec_set_netns(b->spec, b->netns, err);
}

static int set_limit(paddock_spec *spec, const char *name, const char *value, const char *field,
		     paddock_error *err)
{
	int r = paddock_spec_set(spec, name, value, err);

	if (r < 0)
		snprintf(err->field, sizeof(err->field), "%s", field);
	return r;
}

static int map_resources(struct oci_bundle *b, json_t *linux_, paddock_error *err)
{
	json_t *res = json_object_get(linux_, "resources"), *v;
	char buf[64];
	int r;

	if (!res)
		return 0;
	if (!json_is_object(res))
		return oci_error(err, EINVAL, "linux.resources", "expected an object");
	v = json_object_get(json_object_get(res, "memory"), "limit");
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		r = set_limit(b->spec, "limits.memory", buf, "linux.resources.memory.limit", err);
		if (r < 0)
			return r;
	}
	v = json_object_get(json_object_get(res, "pids"), "limit");
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		r = set_limit(b->spec, "limits.pids", buf, "linux.resources.pids.limit", err);
		if (r < 0)
			return r;
	}
	v = json_object_get(res, "cpu");
	if (json_is_object(v)) {
		json_int_t quota = json_integer_value(json_object_get(v, "quota"));
		json_int_t period = json_integer_value(json_object_get(v, "period"));

		if (quota > 0) {
			snprintf(buf, sizeof(buf), "%.3f",
				 (double)quota / (double)(period > 0 ? period : 100000));
			r = set_limit(b->spec, "limits.cpus", buf, "linux.resources.cpu.quota",
				      err);
			if (r < 0)
				return r;
		}
		if (json_object_get(v, "shares"))
			oci_debug("linux.resources.cpu.shares: no weights under paddock; the "
				  "quota bounds the container");
	}
	return 0;
}

static int map_rlimits(struct oci_bundle *b, json_t *process, paddock_error *err)
{
	json_t *rl = json_object_get(process, "rlimits"), *l;
	size_t i;

	json_array_foreach(rl, i, l)
	{
		const char *type = json_string_value(json_object_get(l, "type"));
		json_int_t hard = json_integer_value(json_object_get(l, "hard"));
		char f[64], buf[32];

		snprintf(f, sizeof(f), "process.rlimits[%zu]", i);
		if (!type)
			return oci_error(err, EINVAL, f, "expected a \"type\"");
		snprintf(buf, sizeof(buf), "%lld", (long long)hard);
		if (!strcmp(type, "RLIMIT_NOFILE")) {
			struct rlimit have;

			/* a user namespace cannot raise a hard limit: at most what we hold */
			if (getrlimit(RLIMIT_NOFILE, &have) == 0 && (rlim_t)hard > have.rlim_max) {
				oci_debug("%s: %lld lowered to this process's hard limit %llu", f,
					  (long long)hard, (unsigned long long)have.rlim_max);
				snprintf(buf, sizeof(buf), "%llu",
					 (unsigned long long)have.rlim_max);
				hard = (json_int_t)have.rlim_max;
			}
			if (hard >= 16 && hard <= 1048576 &&
			    set_limit(b->spec, "limits.nofile", buf, f, err) < 0)
				return -err->code;
		} else if (!strcmp(type, "RLIMIT_FSIZE")) {
			if (hard > 0 && set_limit(b->spec, "limits.file_size", buf, f, err) < 0)
				return -err->code;
		} else {
			/* paddock's own limits stand (RLIMIT_CORE is always 0) */
			oci_debug("%s: %s left to paddock's limits", f, type);
		}
	}
	return 0;
}

/*
 * Engines set these two by default (Podman: ping_group_range; Docker:
 * ip_unprivileged_port_start) to let an unprivileged process ping or bind a low port in the
 * container's own network namespace. paddock leaves its sysctls at the kernel's defaults
 * (/proc/sys is read-only inside): the container can do less, never more. Any other sysctl
 * is refused by name.
 */
static int map_sysctls(json_t *sysctl, paddock_error *err)
{
	static const char *const loosening[] = { "net.ipv4.ping_group_range",
						 "net.ipv4.ip_unprivileged_port_start" };
	const char *key;
	json_t *v;

	json_object_foreach(sysctl, key, v)
	{
		bool known = false;
		char f[96];

		for (size_t i = 0; i < sizeof(loosening) / sizeof(loosening[0]); i++)
			known |= !strcmp(key, loosening[i]);
		snprintf(f, sizeof(f), "linux.sysctl.%s", key);
		if (!known)
			return oci_error(err, EINVAL, f, "sysctls are not set by paddock");
		oci_debug("%s: left at the kernel's default", f);
	}
	return 0;
}

/* ---- the whole config ----------------------------------------------------------------- */

void oci_bundle_release(struct oci_bundle *b)
{
	free(b->netns);
	free(b->supervisor_netns);
	free(b->rootfs);
	free(b->filter);
	free(b->dir);
	free(b->config_json);
	paddock_spec_free(b->spec);
	oci_process_release(&b->process);
	oci_hooks_release(&b->hooks);
	json_decref(b->annotations);
	*b = (struct oci_bundle){ 0 };
}

static void warn_ignored(json_t *process, json_t *linux_)
{
	const char *label;

	if ((label = json_string_value(json_object_get(process, "apparmorProfile"))) && *label)
		oci_warn("process.apparmorProfile '%s' ignored: paddock's seccomp, Landlock and "
			 "namespaces confine the container",
			 label);
	if ((label = json_string_value(json_object_get(process, "selinuxLabel"))) && *label)
		oci_warn("process.selinuxLabel '%s' ignored", label);
	if (json_is_false(json_object_get(process, "noNewPrivileges")))
		oci_debug("process.noNewPrivileges false: paddock sets it for every process");
	if (json_object_get(linux_, "seccomp"))
		oci_debug("linux.seccomp: the container's profile is not loaded yet; paddock's "
			  "own filter applies (docs/oci.md)");
	if (json_object_get(process, "capabilities"))
		oci_debug("process.capabilities: paddock's set applies (root: CHOWN, "
			  "DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, "
			  "SYS_CHROOT over the container's own namespaces; others: none)");
}

/*
 * The root's directories: a plain directory is one layer; an overlay an engine mounted
 * there cannot be idmapped, its layers can, so they are read from mountinfo (absolute paths
 * only) and stacked the same way, the engine's upper layer as the top read-only one.
 */
static int root_layers(const char *root, char ***ret, paddock_error *err);

/* root: its path (relative to the bundle unless absolute), its layers, read-only or not */
static int map_root(struct oci_bundle *b, json_t *root, paddock_error *err)
{
	const char *rp = json_string_value(json_object_get(root, "path"));
	char path[PATH_MAX], rootp[PATH_MAX];
	char **layers = NULL;
	int r;

	if (!rp || !*rp)
		return oci_error(err, EINVAL, "root.path", "expected the root filesystem's path");
	snprintf(path, sizeof(path), "%s%s%s", rp[0] == '/' ? "" : b->dir, rp[0] == '/' ? "" : "/",
		 rp);
	if (!realpath(path, rootp))
		return oci_error(err, errno, "root.path", "'%s'", path);
	b->rootfs = strdup(rootp);
	if (!b->rootfs)
		return oci_error(err, ENOMEM, "", "out of memory");
	r = root_layers(rootp, &layers, err);
	if (r >= 0)
		r = paddock_spec_set_root_layers(b->spec, (const char *const *)layers, err);
	if (r >= 0)
		r = paddock_spec_set_root_readonly(
			b->spec, json_is_true(json_object_get(root, "readonly")), err);
	strv_free(layers);
	return r < 0 ? r : 0;
}

/* process: what runs, as whom, where, within which rlimits */
static int map_process(struct oci_bundle *b, json_t *process, paddock_error *err)
{
	int r;

	if (!process)
		return oci_error(err, EINVAL, "process", "expected the container's process");
	r = oci_process_load(process, "process", &b->process, err);
	if (r < 0)
		return r;
	if (b->process.uid == 0) {
		r = paddock_spec_set(b->spec, "user", "root", err);
		if (r < 0)
			return r;
	}
	r = paddock_spec_set(b->spec, "cwd", b->process.cwd, err);
	if (r < 0) {
		snprintf(err->field, sizeof(err->field), "process.cwd");
		return r;
	}
	return map_rlimits(b, process, err);
}

static int map_hostname(struct oci_bundle *b, json_t *hostname, paddock_error *err)
{
	int r;

	if (!json_is_string(hostname) || !*json_string_value(hostname))
		return 0;
	r = paddock_spec_set(b->spec, "hostname", json_string_value(hostname), err);
	if (r < 0) {
		snprintf(err->field, sizeof(err->field), "hostname");
		return r;
	}
	return 0;
}

static int map_mounts(struct oci_bundle *b, json_t *mounts, paddock_error *err)
{
	json_t *m;
	size_t i;
	int r;

	if (mounts && !json_is_array(mounts))
		return oci_error(err, EINVAL, "mounts", "expected an array");
	json_array_foreach(mounts, i, m)
	{
		r = map_mount(b, m, i, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* linux: namespaces, resources, sysctls and the container's seccomp profile */
static int map_linux(struct oci_bundle *b, json_t *linux_, json_t *process, paddock_error *err)
{
	int r;

	if (!json_is_object(linux_))
		return oci_error(err, EINVAL, "linux", "expected the linux section");
	if (json_array_size(json_object_get(linux_, "uidMappings")) ||
	    json_array_size(json_object_get(linux_, "gidMappings")))
		return oci_error(
			err, EINVAL, "linux.uidMappings",
			"paddock maps every container's ids itself (a private range each): no "
			"mappings are taken from the engine");
	r = map_namespaces(b, linux_, err);
	if (r >= 0)
		r = map_resources(b, linux_, err);
	if (r < 0)
		return r;
	r = map_sysctls(json_object_get(linux_, "sysctl"), err);
	if (r < 0)
		return r;
	if (json_object_get(linux_, "devices") &&
	    json_array_size(json_object_get(linux_, "devices")))
		oci_debug("linux.devices: paddock's /dev has null, zero, full, random, urandom, "
			  "tty, pts and shm only");
	warn_ignored(process, linux_);
	return oci_seccomp_compile(json_object_get(linux_, "seccomp"), &b->filter, &b->filter_len,
				   err);
}

/* annotations: dev.paddock.* */
static int map_annotations(struct oci_bundle *b, json_t *annotations, paddock_error *err)
{
	if (annotations && !json_is_object(annotations))
		return oci_error(err, EINVAL, "annotations", "expected an object of strings");
	b->annotations = annotations ? json_incref(annotations) : json_object();
	return oci_annotations_apply(b->annotations, &b->process, b->spec, err);
}

int oci_bundle_load(const char *dir, struct oci_bundle *ret, paddock_error *err)
{
	struct oci_bundle b = { 0 };
	char path[PATH_MAX];
	json_t *cfg = NULL, *v;
	int r;

	if (!realpath(dir, path))
		return oci_error(err, errno, "--bundle", "'%s'", dir);
	b.dir = strdup(path);
	if (!b.dir)
		return oci_error(err, ENOMEM, "", "out of memory");
	snprintf(path, sizeof(path), "%s/config.json", b.dir);
	r = oci_read_json(path, CONFIG_MAX, &cfg, &b.config_json, err);
	if (r < 0)
		goto out;
	v = json_object_get(cfg, "ociVersion");
	if (!json_is_string(v) || strncmp(json_string_value(v), "1.", 2)) {
		r = oci_error(err, EINVAL, "ociVersion", "expected a 1.x version");
		goto out;
	}
	r = paddock_spec_new(&b.spec, err);
	if (r >= 0)
		r = map_root(&b, json_object_get(cfg, "root"), err);
	if (r >= 0)
		r = map_process(&b, json_object_get(cfg, "process"), err);
	if (r >= 0)
		r = map_hostname(&b, json_object_get(cfg, "hostname"), err);
	if (r >= 0)
		r = map_mounts(&b, json_object_get(cfg, "mounts"), err);
	if (r >= 0)
		r = map_linux(&b, json_object_get(cfg, "linux"), json_object_get(cfg, "process"),
			      err);
	if (r >= 0)
		r = oci_hooks_load(json_object_get(cfg, "hooks"), &b.hooks, err);
	if (r >= 0)
		r = map_annotations(&b, json_object_get(cfg, "annotations"), err);
	if (r >= 0)
		r = map_netns(&b, err);
	if (r >= 0)
		r = paddock_spec_validate(b.spec, err);
	if (r < 0)
		goto out;
	json_decref(cfg);
	*ret = b;
	return 0;
out:
	json_decref(cfg);
	oci_bundle_release(&b);
	return r;
}

/* ---- the root's layers ---------------------------------------------------------------- */

/* Undoes mountinfo's octal escapes (\040 for a space, ...) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The value of option `key` in a comma-separated list (overlay's options have no commas). */
static char *option(const char *opts, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = opts; p && *p;) {
		const char *e = strchrnul(p, ',');

		if ((size_t)(e - p) > n && !strncmp(p, key, n) && p[n] == '=')
			return strndup(p + n + 1, (size_t)(e - p) - n - 1);
		p = *e ? e + 1 : e;
	}
	return NULL;
}

static int push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static int root_layers(const char *root, char ***ret, paddock_error *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *lower = NULL, *upper = NULL;
	size_t cap = 0, n = 0;
	char **v = NULL;
	int r = 0;

	/* the last mount at root wins: it is the one on top */
	while (f && getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], fstype[64];
		char *dash = strstr(line, " - "), *super;

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		unescape(mnt);
		if (strcmp(mnt, root))
			continue;
		free(lower);
		free(upper);
		lower = upper = NULL;
		if (sscanf(dash + 3, "%63s", fstype) != 1 || strcmp(fstype, "overlay"))
			continue;
		super = strrchr(dash, ' ');
		if (!super)
			continue;
		super[strcspn(super, "\n")] = '\0';
		lower = option(super + 1, "lowerdir");
		upper = option(super + 1, "upperdir");
	}
	free(line);
	if (f)
		fclose(f);
	if (!lower) {
		free(upper);
		if (push(&v, &n, root) < 0)
			return oci_error(err, ENOMEM, "root.path", "out of memory");
		*ret = v;
		return 0;
	}
	/* overlay's lowerdir is top first ("a:b:c", a on top); ours is bottom first */
	{
		char *dirs[130];
		size_t k = 0;

		for (char *save = NULL, *d = strtok_r(lower, ":", &save); d;
		     d = strtok_r(NULL, ":", &save)) {
			if (k >= 128) {
				r = oci_error(err, E2BIG, "root.path", "more than 128 layers");
				break;
			}
			dirs[k++] = d;
		}
		for (size_t i = 0; r >= 0 && i < k; i++) {
			unescape(dirs[k - 1 - i]);
			if (dirs[k - 1 - i][0] != '/')
				r = oci_error(
					err, EINVAL, "root.path",
					"'%s' is an overlay whose layers are given by relative "
					"paths; paddock cannot find them",
					root);
			else if (push(&v, &n, dirs[k - 1 - i]) < 0)
				r = oci_error(err, ENOMEM, "root.path", "out of memory");
		}
	}
	if (r >= 0 && upper) {
		unescape(upper);
		if (upper[0] == '/' && push(&v, &n, upper) < 0)
			r = oci_error(err, ENOMEM, "root.path", "out of memory");
	}
	free(lower);
	free(upper);
	if (r < 0) {
		strv_free(v);
		return r;
	}
	oci_debug("root '%s': an overlay of %zu layers", root, n);
	*ret = v;
	return 0;
}
