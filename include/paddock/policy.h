/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libpaddock: the operator's policy over specs that someone less trusted wrote (a paddockd
 * tenant, an agent behind `paddock mcp`). One engine, on the typed spec, for every front end:
 * a spec is checked after it was parsed, so a rule reads the same field whatever the wire
 * format was, and a refusal names that field ("binds[2].source", "network.mode",
 * "limits.memory") in err->field, with -EPERM.
 *
 * A new policy allows any network and any limits, and no host path: a host path is the one
 * thing a spec names that lies outside every sandbox (docs/security.md). Each setter adds a
 * ceiling. A policy is not shared between threads; checks do not change it.
 */
#pragma once

#include "paddock/paddock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct paddock_policy paddock_policy;

PADDOCK_API int paddock_policy_new(paddock_policy **ret_policy, paddock_error *err);
/* A deep copy: a tenant's policy made from the operator's base. Caller frees *ret_copy. */
PADDOCK_API int paddock_policy_dup(const paddock_policy *policy, paddock_policy **ret_copy,
				   paddock_error *err);
PADDOCK_API paddock_policy *paddock_policy_free(paddock_policy *policy);

/*
 * Lets specs name host paths (workspace, rootfs, binds[].source) at or below `dir`. The
 * directory is resolved now (symlinks, ".."): -ENOENT and friends when it cannot be,
 * -ENOTDIR when it is not a directory. On error the policy is unchanged.
 */
PADDOCK_API int paddock_policy_allow_host_path(paddock_policy *policy, const char *dir,
					       paddock_error *err);

/*
 * The widest network.mode a spec may ask for: "none", "allowlist" or "open" (the default).
 * -EINVAL for anything else.
 */
PADDOCK_API int paddock_policy_set_max_network(paddock_policy *policy, const char *mode,
					       paddock_error *err);

/*
 * Makes `ceiling` (copied; the caller keeps its own) the operator's spec that checked specs
 * may narrow but not widen: network.mode at most its mode; each allow rule covered by its
 * rules (a name its policy allows on that port, a wildcard under one of its wildcards, an
 * address range inside one of its ranges; a rule it holds verbatim); each limit at most its
 * limit; secrets only its own (same source, hosts among its hosts); host paths it names
 * itself allowed as they are. Replaces an earlier ceiling. -EINVAL when it is not valid.
 */
PADDOCK_API int paddock_policy_set_ceiling(paddock_policy *policy, const paddock_spec *ceiling,
					   paddock_error *err);

/*
 * Checks `spec` against every ceiling of the policy: 0 when it is within them, else -EPERM
 * naming the first field at fault (-EINVAL for NULL arguments or a rule that does not parse).
 * Host paths are checked resolved, as paddock_policy_check_host_path() does; a check cannot
 * pin what it resolved, so a front end that must use the checked path resolves it with
 * paddock_policy_check_host_path() and puts the result in the spec first.
 */
PADDOCK_API int paddock_policy_check(const paddock_policy *policy, const paddock_spec *spec,
				     paddock_error *err);

/*
 * Checks only the network section of `spec` (network.mode, network.allow, network.deny), as
 * paddock_policy_check() does: for a change that touches nothing else (a live sandbox's new
 * egress policy) or a front end that checks its other fields elsewhere.
 */
PADDOCK_API int paddock_policy_check_network(const paddock_policy *policy, const paddock_spec *spec,
					     paddock_error *err);

/*
 * Checks one host path a spec would name, as `field` ("workspace", "binds[0].source"):
 * absolute, and once resolved at or below an allowed directory. *ret_resolved (caller frees)
 * is the resolved path, the one to use: the check holds for it, not for the path as given.
 * -EPERM when it is outside or cannot be resolved (the answer must not tell whether a host
 * path exists), -EINVAL when it is not absolute.
 */
PADDOCK_API int paddock_policy_check_host_path(const paddock_policy *policy, const char *path,
					       const char *field, char **ret_resolved,
					       paddock_error *err);

#ifdef __cplusplus
}
#endif
