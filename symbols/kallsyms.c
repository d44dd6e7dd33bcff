/* kallsyms: see kallsyms.h. */
#include "kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads one line without its '\n' into buf. Returns 1, 0 at end of file, or
 * -EOVERFLOW for a line that did not fit (consumed, buf holds its start). */
static int line_get(FILE *f, char *buf, size_t size)
{
	bool overflow = false;
	size_t len = 0;
	int c;

	while ((c = getc_unlocked(f)) != EOF && c != '\n') {
		if (len + 1 < size)
			buf[len++] = c;
		else
			overflow = true;
	}
	if (c == EOF && !len && !overflow)
		return 0;
	buf[len] = '\0';
	return overflow ? -EOVERFLOW : 1;
}

/* "ffffffff81000000 T name\t[module]", parsed in place (the name is
 * NUL-terminated there). False for a line of another shape. */
static bool line_parse(char *line, struct kallsyms_sym *ret)
{
	char *end, *name;
	size_t len;

	ret->addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return false;
	ret->type = end[1];
	name = end + 3;
	len = strcspn(name, " \t");
	if (!len)
		return false;
	ret->module = strchr(name + len, '[') != NULL;
	name[len] = '\0';
	ret->name = name;
	return true;
}

int kallsyms_read(const char *path, kallsyms_visit_fn visit, void *arg)
{
	FILE *f = fopen(path, "re");
	char buf[16384], line[KALLSYMS_LINE_MAX];
	struct kallsyms_sym sym;
	int n, r = 0;

	if (!f)
		return -errno;
	/* Our buffer: stdio's own costs an fstat, and procfs's block size
	 * makes it 1 KiB, a read() per few lines. */
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (!r && (n = line_get(f, line, sizeof(line))) != 0) {
		if (n > 0 && line_parse(line, &sym))
			r = visit(arg, &sym);
	}
	fclose(f);
	return r;
}
