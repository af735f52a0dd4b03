/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1 of a sandbox. Entered in the child of clone3(), inside fresh user, mount, pid, net,
 * ipc, uts and cgroup namespaces; never returns. init.c builds the sandbox, then execs the
 * init image (init-image.h), which runs it (init-run.c).
 */
#pragma once

#include <stdbool.h>

#include "control.h"
#include "idmap.h"
#include "init-conf.h"
#include "spec.h"

/* init's control socket, at this fd from the clone on: the image reports a bad start there */
#define PD_INIT_CTL_FD 3

/*
 * `ctl` is init's end of the control socket, `image` the init image (pd_init_image_fd()).
 * Exits when the supervisor goes away.
 */
_Noreturn void pd_init_main(const paddock_spec *spec, const struct pd_idmap *idmap, int ctl,
			    int image);

/* The init image's half: confine, report READY, (pooled) bind a claim, serve commands. */
_Noreturn void pd_init_run(const struct pd_init_conf *conf);

/* Reports setup's failure to the supervisor (PD_CTL_FAILED) and exits. */
_Noreturn void pd_init_fail(int ctl, paddock_error *err);

/*
 * Ties init's life to its supervisor's (`outlive`: it has a reconnect socket and waits for
 * a new one instead) and makes init non-dumpable. 0 or -errno.
 */
int pd_init_bind_lifetime(int ctl, bool outlive, paddock_error *err);

/*
 * The rlimits every command of a sandbox of `spec` starts with, when a cgroup enforces its
 * memory and pids (`cgroup_limits`) or not (rlimits stand in). A cold init plans them itself
 * once the supervisor says which; a claim (sandbox-pool.c) plans the claim's with this same
 * function and sends them in PD_CTL_BIND.
 */
void pd_init_plan_rlimits(const paddock_spec *spec, bool cgroup_limits,
			  struct pd_ctl_rlimits *ret_plan);
