/*
 * web_assets: the files of `offcpuctl serve`'s page (ctl/web/), embedded at
 * build time by ctl/CMakeLists.txt, so the page works offline and the
 * binary is all there is to install.
 */
#ifndef WEB_ASSETS_H
#define WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path; /* "/index.html" */
	const char *type; /* Content-Type */
	const unsigned char *data;
	size_t len;
};

/* The file served at path, or NULL. */
const struct web_asset *web_asset_find(const char *path);

#endif
