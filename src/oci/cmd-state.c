/* SPDX-License-Identifier: Apache-2.0 */
/* `state`, `list`, `ps`, `events`, `features`: what a container is, and what we support. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

int cmd_state(int argc, char **argv)
{
	paddock_error err = { 0 };
	struct oci_state st;
	char *s;

	while (getopt_long_only(argc, argv, "", (struct option[]){ { 0 } }, NULL) != -1)
		return oci_failf("usage: state ID");
	if (optind != argc - 1)
		return oci_failf("state: expected one container id");
	if (oci_state_load(argv[optind], &st, &err) < 0)
		return oci_fail(&err);
	s = oci_state_json(&st);
	oci_state_release(&st);
	if (!s)
		return oci_failf("out of memory");
	printf("%s\n", s);
	free(s);
	return 0;
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = { { "format", required_argument, NULL, 'f' },
					      { "quiet", no_argument, NULL, 'q' },
					      { 0 } };
	bool json = false, quiet = false;
	json_t *a = json_array();
	DIR *d;
	struct dirent *de;
	int c;

	while ((c = getopt_long_only(argc, argv, "f:q", opts, NULL)) != -1) {
		if (c == 'f')
			json = !strcmp(optarg, "json");
		else if (c == 'q')
			quiet = true;
		else
			return oci_failf("usage: list [--format table|json] [--quiet]");
	}
	d = opendir(arg_root);
	if (!json && !quiet)
		printf("%-40s %-8s %-9s %s\n", "ID", "PID", "STATUS", "BUNDLE");
	while (d && (de = readdir(d))) {
		paddock_error err = { 0 };
		struct oci_state st;

		if (de->d_name[0] == '.' || oci_state_load(de->d_name, &st, &err) < 0)
			continue;
		if (json)
			json_array_append_new(a,
					      json_pack("{s:s,s:i,s:s,s:s,s:s}", "id", st.id, "pid",
							(int)st.init_pid, "status",
							oci_status_to_string(st.status), "bundle",
							st.bundle, "created", st.created));
		else if (quiet)
			printf("%s\n", st.id);
		else
			printf("%-40s %-8d %-9s %s\n", st.id, (int)st.init_pid,
			       oci_status_to_string(st.status), st.bundle);
		oci_state_release(&st);
	}
	if (d)
		closedir(d);
	if (json) {
		char *s = json_dumps(a, JSON_COMPACT);

		printf("%s\n", s ? s : "[]");
		free(s);
	}
	json_decref(a);
	return 0;
}

static int call(const char *id, const char *op, json_t **ret)
{
	paddock_error err = { 0 };
	json_t *req = json_pack("{s:s}", "op", op);
	int r = oci_wire_call(id, req, NULL, 0, ret, &err);

	json_decref(req);
	if (r == -ENOENT || r == -ECONNREFUSED)
		return oci_failf("container not running: '%s'", id);
	return r < 0 ? oci_fail(&err) : 0;
}

int cmd_ps(int argc, char **argv)
{
	static const struct option opts[] = { { "format", required_argument, NULL, 'f' }, { 0 } };
	bool json = false;
	json_t *ans = NULL, *pids, *v;
	size_t i;
	int c;

	while ((c = getopt_long_only(argc, argv, "f:", opts, NULL)) != -1) {
		if (c != 'f')
			return oci_failf("usage: ps [--format table|json] ID");
		json = !strcmp(optarg, "json");
	}
	if (optind >= argc)
		return oci_failf("ps: expected a container id");
	if (call(argv[optind], "ps", &ans))
		return 1;
	pids = json_object_get(ans, "pids");
	if (json) {
		char *s = json_dumps(pids, JSON_COMPACT);

		printf("%s\n", s ? s : "[]");
		free(s);
	} else {
		/* runc runs ps(1) here; the pids alone say as much */
		printf("PID\n");
		json_array_foreach(pids, i, v) printf("%lld\n", (long long)json_integer_value(v));
	}
	json_decref(ans);
	return 0;
}

int cmd_events(int argc, char **argv)
{
	static const struct option opts[] = { { "stats", no_argument, NULL, 's' },
					      { "interval", required_argument, NULL, 'i' },
					      { 0 } };
	bool once = false;
	int interval = 5, c;

	while ((c = getopt_long_only(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			once = true;
		else if (c == 'i')
			interval = atoi(optarg) > 0 ? atoi(optarg) : 5;
		else
			return oci_failf("usage: events [--stats] [--interval SECONDS] ID");
	}
	if (optind != argc - 1)
		return oci_failf("events: expected one container id");
	for (;;) {
		json_t *ans = NULL;
		char *s;

		if (call(argv[optind], "stats", &ans))
			return once ? 1 : 0; /* the container ended: so do its events */
		json_object_set_new(ans, "type", json_string("stats"));
		json_object_set_new(ans, "id", json_string(argv[optind]));
		s = json_dumps(ans, JSON_COMPACT);
		json_decref(ans);
		printf("%s\n", s ? s : "{}");
		fflush(stdout);
		free(s);
		if (once)
			return 0;
		sleep((unsigned)interval);
	}
}

int cmd_features(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* runtime-spec features.md: what engines may ask of this runtime */
	printf("{\n"
	       "  \"ociVersionMin\": \"1.0.0\",\n"
	       "  \"ociVersionMax\": \"1.1.0\",\n"
	       "  \"hooks\": [\"prestart\", \"createRuntime\", \"poststart\", \"poststop\"],\n"
	       "  \"mountOptions\": [\"bind\", \"rbind\", \"ro\", \"rw\", \"nosuid\", \"nodev\", "
	       "\"noexec\", \"private\", \"rprivate\"],\n"
	       "  \"linux\": {\n"
	       "    \"namespaces\": [\"cgroup\", \"ipc\", \"mount\", \"network\", \"pid\", "
	       "\"user\", "
	       "\"uts\"],\n"
	       "    \"capabilities\": [\"CAP_CHOWN\", \"CAP_DAC_OVERRIDE\", \"CAP_FOWNER\", "
	       "\"CAP_KILL\", \"CAP_SETGID\", \"CAP_SETUID\", \"CAP_SETPCAP\", "
	       "\"CAP_NET_BIND_SERVICE\", \"CAP_SYS_CHROOT\"],\n"
	       "    \"cgroup\": { \"v1\": true, \"v2\": true, \"systemd\": false, "
	       "\"systemdUser\": false },\n"
	       "    \"seccomp\": { \"enabled\": true, \"actions\": [], \"operators\": [], "
	       "\"archs\": [] },\n"
	       "    \"apparmor\": { \"enabled\": false },\n"
	       "    \"selinux\": { \"enabled\": false }\n"
	       "  },\n"
	       "  \"annotations\": {\n"
	       "    \"dev.paddock.version\": \"%s\",\n"
	       "    \"dev.paddock.annotations\": \"dev.paddock.network.mode, "
	       "dev.paddock.network.allow, dev.paddock.network.deny, "
	       "dev.paddock.network.transparent, dev.paddock.secret.NAME, "
	       "dev.paddock.limits.FIELD, dev.paddock.landlock\"\n"
	       "  }\n"
	       "}\n",
	       PADDOCK_VERSION);
	return 0;
}
