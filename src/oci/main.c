/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `paddock-oci`: runc's command line (global options, then a command), a table of commands
 * in cmd-<name>.c. Errors go to stderr and to --log (text, or JSON lines with
 * --log-format json, as containerd and Podman read them), and exit with status 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oci.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "create", cmd_create, "create a container from a bundle; its process waits for start" },
	{ "start", cmd_start, "start the process of a created container" },
	{ "run", cmd_run, "create and start a container, and wait for it" },
	{ "state", cmd_state, "print a container's state (JSON)" },
	{ "list", cmd_list, "list the containers of --root" },
	{ "kill", cmd_kill, "send a signal to a container's process" },
	{ "delete", cmd_delete, "delete a stopped container (--force: a running one too)" },
	{ "exec", cmd_exec, "run a process in a running container" },
	{ "ps", cmd_ps, "list a container's processes" },
	{ "pause", cmd_pause, "freeze every process of a container" },
	{ "resume", cmd_resume, "thaw a paused container" },
	{ "update", cmd_update, "change a running container's resources" },
	{ "events", cmd_events, "print a container's resource use (--stats: once)" },
	{ "features", cmd_features, "print what this runtime supports (JSON)" },
};

int oci_parse_signal(const char *s)
{
	char *end;
	long n;

	if (!s || !*s)
		return -EINVAL;
	n = strtol(s, &end, 10);
	if (!*end)
		return n > 0 && n < NSIG ? (int)n : -EINVAL;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *name = sigabbrev_np(sig);

		if (name && !strcasecmp(name, s))
			return sig;
	}
	return -EINVAL;
}

int oci_write_pid_file(const char *path, pid_t pid, paddock_error *err)
{
	char tmp[4096 + 16], buf[32];
	int fd, n;

	if (strlen(path) > 4096) {
		snprintf(err->field, sizeof(err->field), "--pid-file");
		snprintf(err->msg, sizeof(err->msg), "path too long");
		err->code = ENAMETOOLONG;
		return -ENAMETOOLONG;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		goto fail;
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	if (write(fd, buf, (size_t)n) != n) {
		close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) < 0)
		goto fail;
	return 0;
fail:
	err->code = errno;
	snprintf(err->field, sizeof(err->field), "--pid-file");
	snprintf(err->msg, sizeof(err->msg), "write pid file '%s'", path);
	(void)unlink(tmp);
	return -err->code;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: paddock-oci [--root DIR] [--log FILE] [--log-format text|json] "
		   "[--systemd-cgroup] [--resolve-hosts FILE] [--upstream-ca FILE] COMMAND "
		   "[OPTIONS] ID\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\ndocs/oci.md tells more.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "log", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "systemd-cgroup", no_argument, NULL, 's' },
		{ "debug", no_argument, NULL, 'd' },
		{ "rootless", required_argument, NULL, 'R' },
		{ "criu", required_argument, NULL, 'c' },
		{ "resolve-hosts", required_argument, NULL, 'H' },
		{ "upstream-ca", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
		{ 0 },
	};
	int c;

	/* "+": options end at the command; the command parses its own */
	while ((c = getopt_long_only(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			arg_root = optarg;
			break;
		case 'l':
			arg_log = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") && strcmp(optarg, "text"))
				return oci_failf(
					"--log-format: expected 'text' or 'json', got '%s'",
					optarg);
			arg_log_json = !strcmp(optarg, "json");
			break;
		case 's':
			/*
			 * Accepted: the container's processes live in paddock's own cgroup
			 * (paddock/<slot>) whichever manager the engine uses; docs/oci.md.
			 */
			arg_systemd_cgroup = true;
			break;
		case 'd':
			arg_debug = true;
			break;
		case 'H':
			arg_resolve_hosts = optarg;
			break;
		case 'C': {
			size_t n = 0;

			while (n < 7 && arg_upstream_ca[n])
				n++;
			if (n == 7)
				return oci_failf("--upstream-ca: at most 7");
			arg_upstream_ca[n] = optarg;
			break;
		}
		case 'R':
		case 'c':
			break; /* rootless is detected, checkpoints are not supported */
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("paddock-oci version %s\nspec: 1.0.2\n", PADDOCK_VERSION);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 1;
	}
	if (arg_root[0] != '/')
		return oci_failf("--root: expected an absolute path, got '%s'", arg_root);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name)) {
			char **sub = argv + optind;
			int subc = argc - optind;

			optind = 0; /* getopt starts over for the command */
			return commands[i].run(subc, sub);
		}
	return oci_failf("unknown command '%s'", argv[optind]);
}
