/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1 of a sandbox. Entered in the child of clone3(), inside fresh user, mount, pid, net,
 * ipc, uts and cgroup namespaces; never returns.
 */
#pragma once

#include "idmap.h"
#include "spec.h"

/* `ctl` is init's end of the control socket. Exits when the supervisor goes away. */
_Noreturn void pd_init_main(const paddock_spec *spec, const struct pd_idmap *idmap, int ctl);
