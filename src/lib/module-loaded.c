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
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
/*
 * dlopen() of a bare name searches the RUNPATH of the object that called it, which is not
 * this program's when something sits between (AddressSanitizer's dlopen interceptor is the
 * caller then, and has none). So the program's own search list, in the loader's order
 * (RTLD_DI_SERINFO of the main program: its RPATH, LD_LIBRARY_PATH, its RUNPATH, the
 * system's), is walked here and the module opened by its full path; the bare name last,
 * for its error message.
 */
static void *open_module(const char *file)
{
	Dl_serinfo size, *si = NULL;
	void *self = dlopen(NULL, RTLD_NOW), *h = NULL;

	if (self && dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && (si = malloc(size.dls_size)) &&
	    dlinfo(self, RTLD_DI_SERINFOSIZE, si) == 0 && dlinfo(self, RTLD_DI_SERINFO, si) == 0) {
		for (unsigned i = 0; !h && i < si->dls_cnt; i++) {
			char path[PATH_MAX];
			int n = snprintf(path, sizeof(path), "%s/%s", si->dls_serpath[i].dls_name,
					 file);

			if (n > 0 && (size_t)n < sizeof(path) && access(path, R_OK) == 0)
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
	}
	free(si);
	if (self)
		(void)dlclose(self);
	return h ? h : dlopen(file, RTLD_NOW | RTLD_LOCAL);
}

static int load(const char *file, const char *init_name, const void *host,
		const struct pd_module_abi *want, const void **ret_ops, paddock_error *err)
{
	const struct pd_module_abi *abi;
	pd_module_init_fn init;
	void *h;

	h = open_module(file);
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
		return pd_fail(err, ELIBBAD,
			       "%s is from another build of paddock than this "
			       "program (%s): install them together",
			       file, PD_BUILD_VERSION);
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
