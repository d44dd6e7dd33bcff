/* proc_maps: a /proc/PID/maps line (see proc_maps.h). */
#include "proc_maps.h"

#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

/*
 * The number in base (16 or 10) at *p: at least one digit, no sign, prefix
 * or space (the kernel writes none), and no overflow. *p moves past it.
 * strtoull() took most of the parsing time: the daemon reads the maps of
 * every new process (bench/churn.py).
 */
static bool number(const char **p, unsigned base, uint64_t *ret)
{
	const char *q = *p;
	uint64_t v = 0;

	for (;; q++) {
		unsigned c = (unsigned char)*q, d;

		if (c - '0' < 10)
			d = c - '0';
		else if (base == 16 && (c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	if (q == *p)
		return false;
	*p = q;
	*ret = v;
	return true;
}

bool proc_maps_parse(char *line, struct proc_map *ret)
{
	static const char deleted[] = " (deleted)";
	struct proc_map m = { 0 };
	const char *q = line;
	uint64_t major, minor;
	char *path;
	size_t len;

	if (!number(&q, 16, &m.start) || *q++ != '-' || !number(&q, 16, &m.end) || *q++ != ' ' ||
	    m.start >= m.end)
		return false;
	if (strnlen(q, 5) < 5 || q[4] != ' ')
		return false;
	memcpy(m.perms, q, 4);
	q += 5;
	if (!number(&q, 16, &m.pgoff) || *q++ != ' ' || !number(&q, 16, &major) || *q++ != ':' ||
	    !number(&q, 16, &minor) || *q++ != ' ' || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	m.dev = makedev(major, minor);
	if (!number(&q, 10, &m.ino) || (*q != ' ' && *q != '\n' && *q))
		return false;
	path = line + (q - line);
	path += strspn(path, " ");
	len = strcspn(path, "\n");
	path[len] = '\0';
	if (len > sizeof(deleted) - 1 && !strcmp(path + len - (sizeof(deleted) - 1), deleted)) {
		path[len - (sizeof(deleted) - 1)] = '\0';
		m.deleted = true;
	}
	m.path = path;
	*ret = m;
	return true;
}

bool proc_maps_line_exec(const char *line)
{
	const char *space = memchr(line, ' ', strnlen(line, 40));

	return space && strnlen(space, 5) == 5 && space[3] == 'x';
}
