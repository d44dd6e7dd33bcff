/* tracefs: see tracefs.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tracefs.h"

/* A mounted tracefs has an events/ directory; the empty mount point has not. */
static int tracefs_mounted(const char *dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/events", dir);
	return access(path, F_OK) == 0;
}

int tracefs_ensure(const char *dir, char *why, size_t why_size)
{
	int r;

	if (why_size)
		*why = '\0';
	if (tracefs_mounted(dir) || tracefs_mounted(TRACEFS_DEBUG_DIR))
		return 0;
	/* The flags systemd's sys-kernel-tracing.mount uses. */
	if (mount("nodev", dir, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
		return 1;
	r = -errno;
	snprintf(why, why_size, "tracefs is not mounted at %s (mounting it failed: %s)", dir,
		 strerror(-r));
	return r;
}
