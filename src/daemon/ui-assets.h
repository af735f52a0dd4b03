/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web console's files, compiled into paddockd (embed-assets.py makes the table from
 * src/daemon/ui/ at build time): nothing is read from disk when they are served.
 */
#pragma once

#include <stddef.h>

struct pdd_ui_asset {
	const char *name; /* under /ui/, no slash: "console.js" */
	const char *content_type;
	const unsigned char *data;
	size_t len;
};

/* ends with an entry whose name is NULL */
extern const struct pdd_ui_asset pdd_ui_assets[];
