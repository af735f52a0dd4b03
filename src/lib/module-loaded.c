/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The halves of libpaddock as shared modules (module.h), dlopen()ed by the first caller that
 * needs one and kept for the life of the process (their code ends up on the event loop's
 * callbacks: never unloaded). `paddock` links this.
 *
 * Trust: a module runs with the program's privileges, so it comes only from where the
 * program's own libraries do: its RUNPATH (the build tree, or <libdir>/paddock installed),
 * then the dynamic loader's usual places. A module of another build is refused by its
 * table's pd_module_abi before any of its code but its init function runs.
 */
#include "module.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "egress-module.h"
#include "error.h"
#include "image-module.h"
#include "sandbox.h"
#include "spec.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Loads `file` and returns its ops table, which must start with `want`. The handle is never
 * closed.
 */
static int load(const char *file, const char *init_name, const void *host,
		const struct pd_module_abi *want, const void **ret_ops, paddock_error *err)
{
	const struct pd_module_abi *abi;
	pd_module_init_fn init;
	void *h;

	h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return pd_fail(err, ELIBACC, "load %s (installed with paddock in its libdir): %s",
			       file, dlerror());
	*(void **)&init = dlsym(h, init_name);
	if (!init) {
		(void)dlclose(h);
		return pd_fail(err, ELIBBAD, "%s has no %s: not paddock's", file, init_name);
	}
	abi = init(host);
	if (!abi || memcmp(abi, want, sizeof(*want)) != 0) {
		(void)dlclose(h);
		return pd_fail(err, ELIBBAD, "%s is from another build of paddock than this "
				"program (%s): install them together", file, PD_BUILD_VERSION);
	}
	*ret_ops = abi;
	return 0;
}

static const struct pd_egress_host egress_host = {
	.sandbox_socket = paddock_sandbox_socket,
};

int pd_egress_ops(const struct pd_egress_ops **ret_ops, paddock_error *err)
{
	static const struct pd_egress_ops *ops;
	static const struct pd_module_abi want = PD_MODULE_ABI(struct pd_egress_ops);
	const void *p = NULL;
	int r = 0;

	pthread_mutex_lock(&lock);
	if (!ops) {
		r = load("paddock-egress.so", "pd_egress_module_init", &egress_host, &want, &p,
			 err);
		if (r >= 0)
			ops = p;
	}
	if (r >= 0)
		*ret_ops = ops;
	pthread_mutex_unlock(&lock);
	return r;
}

int pd_image_ops(const struct pd_image_ops **ret_ops, paddock_error *err)
{
	static const struct pd_image_ops *ops;
	static const struct pd_module_abi want = PD_MODULE_ABI(struct pd_image_ops);
	const void *p = NULL;
	int r = 0;

	pthread_mutex_lock(&lock);
	if (!ops) {
		r = load("paddock-images.so", "pd_image_module_init", NULL, &want, &p, err);
		if (r >= 0)
			ops = p;
	}
	if (r >= 0)
		*ret_ops = ops;
	pthread_mutex_unlock(&lock);
	return r;
}
