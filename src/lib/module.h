/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The halves of libpaddock that link big libraries, and how a program gets them.
 *
 * The egress half (egress-module.h: the proxy, the DNS filter, TLS interception, secrets)
 * links OpenSSL and libevent's TLS and DNS modules; the images half (image-module.h: pull,
 * import, unpack) links libarchive (and with it libxml2, ICU, libstdc++) and OpenSSL. Merely
 * loading them costs a program its start: on the 2-core development VM `paddock --version`
 * took 2.5 ms with them against 0.7 ms for a C hello world (2026-12, 22 libraries mapped,
 * ~8600 symbol relocations under -z now), a third of a whole `paddock run -- /bin/true`
 * that uses neither. And the supervisor's clone3() copies the page tables of all of it.
 *
 * So each half is a static library of its own, and everything outside it reaches it
 * through an ops table: pd_egress_ops(), pd_image_ops(). A program chooses at link time
 * where the tables come from:
 *   module-linked.c  the halves are linked in: paddockd (which serves many sandboxes and
 *                    starts once), libpaddock.so, the tests;
 *   module-loaded.c  the halves are shared modules, paddock-egress.so and paddock-images.so,
 *                    dlopen()ed by the first caller that needs one: `paddock`, whose
 *                    one-shot runs mostly need neither (a run without egress, secrets or
 *                    an image to pull loads nothing).
 * Why modules rather than a second binary that `paddock run` would exec for egress: the
 * decision stays where the knowledge is (libpaddock loads what the spec needs, no front end
 * re-derives it), a run with egress pays the libraries' load only, not a second exec and
 * argument parse, and `paddock mcp` (embedded) gets the same for free.
 *
 * A module carries its own copies of the small stateless helpers it uses (errors, spec
 * accessors, events); calls that need the program's own state go through a host table the
 * loader hands to the module's init function. The program finds a module through its
 * RUNPATH (the build tree's src/lib, or <libdir>/paddock when installed), and both must come
 * from one build: the table starts with a pd_module_abi that the loader compares with its
 * own, and refuses a module from another build.
 */
#pragma once

#include <stdint.h>

#include "paddock/paddock.h"

#ifndef PD_BUILD_VERSION
#define PD_BUILD_VERSION "unknown"
#endif

/* Sizes of the structures both sides use, and the version: equal on both sides of one build. */
struct pd_module_abi {
	uint32_t ops_size;
	uint32_t ctx_size, sandbox_size, spec_size;
	char version[32];
};

/* The pd_module_abi of an ops table of type `ops_type` (needs sandbox.h and spec.h). */
#define PD_MODULE_ABI(ops_type)                                                                    \
	{                                                                                          \
		.ops_size = sizeof(ops_type), .ctx_size = sizeof(struct paddock_ctx),              \
		.sandbox_size = sizeof(struct paddock_sandbox),                                    \
		.spec_size = sizeof(struct paddock_spec), .version = PD_BUILD_VERSION,             \
	}

/* A module's one entry point: it keeps `host` (may be NULL) and returns its ops table. */
typedef const void *(*pd_module_init_fn)(const void *host);

/* Exported from a module's shared object (its only exports). */
#define PD_MODULE_EXPORT __attribute__((visibility("default")))
