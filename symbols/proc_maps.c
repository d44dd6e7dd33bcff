/* proc_maps: a /proc/PID/maps line (see proc_maps.h). */
#include "proc_maps.h"

#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

bool proc_maps_parse(char *line, struct proc_map *ret)
{
	static const char deleted[] = " (deleted)";
	struct proc_map m = { 0 };
	char *q = line, *e;
	unsigned long major, minor;
	size_t len;

	m.start = strtoull(q, &e, 16);
	if (e == q || *e != '-')
		return false;
	q = e + 1;
	m.end = strtoull(q, &e, 16);
	if (e == q || *e != ' ' || m.start >= m.end)
		return false;
	q = e + 1;
	if (strnlen(q, 5) < 5 || q[4] != ' ')
		return false;
	memcpy(m.perms, q, 4);
	q += 5;
	m.pgoff = strtoull(q, &e, 16);
	if (e == q || *e != ' ')
		return false;
	q = e + 1;
	major = strtoul(q, &e, 16);
	if (e == q || *e != ':')
		return false;
	q = e + 1;
	minor = strtoul(q, &e, 16);
	if (e == q || *e != ' ')
		return false;
	m.dev = makedev(major, minor);
	q = e + 1;
	m.ino = strtoull(q, &e, 10);
	if (e == q || (*e != ' ' && *e != '\n' && *e))
		return false;
	q = e + strspn(e, " ");
	len = strcspn(q, "\n");
	q[len] = '\0';
	if (len > sizeof(deleted) - 1 && !strcmp(q + len - (sizeof(deleted) - 1), deleted)) {
		q[len - (sizeof(deleted) - 1)] = '\0';
		m.deleted = true;
	}
	m.path = q;
	*ret = m;
	return true;
}
