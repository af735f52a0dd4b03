/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1 of a sandbox. Entered in the child of clone3(), inside fresh user, mount, pid, net,
 * ipc, uts and cgroup namespaces; never returns.
 */
#pragma once

#include <stdbool.h>

#include "control.h"
#include "idmap.h"
#include "spec.h"

/* `ctl` is init's end of the control socket. Exits when the supervisor goes away. */
_Noreturn void pd_init_main(const paddock_spec *spec, const struct pd_idmap *idmap, int ctl);

/*
 * The rlimits every command of a sandbox of `spec` starts with, when a cgroup enforces its
 * memory and pids (`cgroup_limits`) or not (rlimits stand in). A cold init plans them itself
 * once the supervisor says which; a claim (sandbox-pool.c) plans the claim's with this same
 * function and sends them in PD_CTL_BIND.
 */
void pd_init_plan_rlimits(const paddock_spec *spec, bool cgroup_limits,
			  struct pd_ctl_rlimits *ret_plan);
