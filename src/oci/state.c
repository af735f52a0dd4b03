/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's state directory, <--root>/<id> (0700, in a 0700 --root): state.json, which
 * the supervisor rewrites at each change (written whole and renamed), and the supervisor's
 * socket. Whether a container runs is the supervisor's liveness (same pid, same start
 * time), never the file's word alone: a supervisor killed with SIGKILL leaves "running"
 * behind, which reads as "stopped".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

static const char *const status_names[_OCI_STATUS_MAX] = {
	[OCI_CREATING] = "creating", [OCI_CREATED] = "created", [OCI_RUNNING] = "running",
	[OCI_PAUSED] = "paused",     [OCI_STOPPED] = "stopped",
};

const char *oci_status_to_string(enum oci_status s)
{
	return (unsigned)s < _OCI_STATUS_MAX ? status_names[s] : "unknown";
}

int oci_check_id(const char *id, paddock_error *err)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > OCI_ID_MAX ||
	    !strchr("0123456789abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		    id[0]) ||
	    strspn(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-") != n) {
		oci_error(err, EINVAL, "",
			  "expected a container id of [A-Za-z0-9_.-], at most 128 bytes, "
			  "got '%.128s'",
			  id ? id : "");
		snprintf(err->field, sizeof(err->field), "id");
		return -EINVAL;
	}
	return 0;
}

int oci_state_dir(const char *id, char *buf, size_t size, paddock_error *err)
{
	int r = oci_check_id(id, err);

	if (r < 0)
		return r;
	if ((size_t)snprintf(buf, size, "%s/%s", arg_root, id) >= size)
		return oci_error(err, ENAMETOOLONG, "", "--root '%.200s' is too long", arg_root);
	return 0;
}

int oci_state_mkdir(const char *id, paddock_error *err)
{
	char dir[PATH_MAX];
	int r = oci_state_dir(id, dir, sizeof(dir), err);

	if (r < 0)
		return r;
	/* --root, and its parents (engines name one below their own run directory) */
	for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return oci_error(err, errno, "", "mkdir '%.200s'", dir);
		*p = '/';
	}
	if (mkdir(dir, 0700) < 0) {
		if (errno == EEXIST)
			return oci_error(err, EEXIST, "", "container '%.200s' exists already", id);
		return oci_error(err, errno, "", "mkdir '%.200s'", dir);
	}
	return 0;
}

unsigned long long oci_proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	/* a zombie is no supervisor: its state letter (field 3) is Z */
	p = strrchr(buf, ')');
	if (p && p[1] == ' ' && p[2] == 'Z')
		return 0;
	return start;
}

bool oci_state_alive(const struct oci_state *st)
{
	return st->pid > 0 && st->start && oci_proc_start(st->pid) == st->start;
}

void oci_state_release(struct oci_state *st)
{
	free(st->bundle);
	free(st->created);
	json_decref(st->annotations);
	json_decref(st->hooks);
	*st = (struct oci_state){ 0 };
}

int oci_state_load(const char *id, struct oci_state *ret, paddock_error *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct oci_state st = { 0 };
	json_t *j = NULL;
	const char *s;
	int r;

	r = oci_state_dir(id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/state.json", dir);
	r = oci_read_json(path, 1u << 20, &j, NULL, err);
	if (r < 0) {
		if (r == -ENOENT)
			oci_error(err, ENOENT, "", "container '%.200s' does not exist", id);
		return r;
	}
	snprintf(st.id, sizeof(st.id), "%s", id);
	s = json_string_value(json_object_get(j, "status"));
	st.status = OCI_STOPPED;
	for (int i = 0; s && i < _OCI_STATUS_MAX; i++)
		if (!strcmp(s, status_names[i]))
			st.status = (enum oci_status)i;
	st.pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	st.start = (unsigned long long)json_integer_value(json_object_get(j, "start"));
	st.init_pid = (pid_t)json_integer_value(json_object_get(j, "init_pid"));
	st.exit_status = (int)json_integer_value(json_object_get(j, "exit_status"));
	st.bundle = strdup(json_string_value(json_object_get(j, "bundle")) ?: "");
	st.created = strdup(json_string_value(json_object_get(j, "created")) ?: "");
	st.annotations = json_incref(json_object_get(j, "annotations"));
	st.hooks = json_incref(json_object_get(j, "hooks"));
	json_decref(j);
	if (!st.annotations)
		st.annotations = json_object();
	if (st.status != OCI_STOPPED && st.status != OCI_CREATING && !oci_state_alive(&st))
		st.status = OCI_STOPPED;
	if (st.status == OCI_CREATING && !oci_state_alive(&st))
		st.status = OCI_STOPPED;
	*ret = st;
	return 0;
}

int oci_state_save(const struct oci_state *st, paddock_error *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 32], path[PATH_MAX + 16];
	json_t *j;
	int r;

	r = oci_state_dir(st->id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	j = json_pack("{s:s,s:s,s:i,s:I,s:i,s:i,s:s,s:s,s:O}", "id", st->id, "status",
		      oci_status_to_string(st->status), "pid", (int)st->pid, "start",
		      (json_int_t)st->start, "init_pid", (int)st->init_pid, "exit_status",
		      st->exit_status, "bundle", st->bundle ? st->bundle : "", "created",
		      st->created ? st->created : "", "annotations",
		      st->annotations ? st->annotations : json_object());
	if (j && st->hooks)
		json_object_set(j, "hooks", st->hooks);
	snprintf(tmp, sizeof(tmp), "%s/.state.json.%d", dir, (int)getpid());
	snprintf(path, sizeof(path), "%s/state.json", dir);
	if (!j || json_dump_file(j, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
		r = errno ? errno : EIO;
		json_decref(j);
		(void)unlink(tmp);
		return oci_error(err, r, "", "write '%.200s'", path);
	}
	json_decref(j);
	return 0;
}

char *oci_state_json(const struct oci_state *st)
{
	bool live = st->status != OCI_STOPPED;
	json_t *j = json_pack("{s:s,s:s,s:s,s:i,s:s,s:O}", "ociVersion", "1.0.2", "id", st->id,
			      "status", oci_status_to_string(st->status), "pid",
			      live ? (int)st->init_pid : 0, "bundle", st->bundle ? st->bundle : "",
			      "annotations", st->annotations ? st->annotations : json_object());
	char *s;

	if (!j)
		return NULL;
	if (st->created && *st->created)
		json_object_set_new(j, "created", json_string(st->created));
	s = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	return s;
}

int oci_state_remove(const char *id, paddock_error *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	int r = oci_state_dir(id, dir, sizeof(dir), err);

	if (r < 0)
		return r;
	static const char *const files[] = { "state.json", "sock" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		(void)unlink(path);
	}
	if (rmdir(dir) < 0 && errno != ENOENT)
		return oci_error(err, errno, "", "remove '%.200s'", dir);
	return 0;
}
