/* pid_ns: see pid_ns.h. */
#include "pid_ns.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pid_ns_innermost(const char *proc_root, uint32_t tgid, uint32_t *ret)
{
	char path[64 + 4096], line[512];
	unsigned long last = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/status", proc_root, tgid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line + strlen("NSpid:"), *end;

		if (strncmp(line, "NSpid:", strlen("NSpid:")))
			continue;
		found = true;
		for (;;) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			last = v;
			p = end;
		}
	}
	fclose(f);
	if (!found || last > UINT32_MAX)
		return -ENOENT;
	*ret = last == tgid ? 0 : (uint32_t)last;
	return 0;
}
