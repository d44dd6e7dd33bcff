/* text_lines: see text_lines.h. */
#include "text_lines.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

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

int text_lines_read(const char *path, char *line, size_t size, text_lines_fn fn, void *arg)
{
	FILE *f = fopen(path, "re");
	char buf[16384];
	int n, r = 0;

	if (!f)
		return errno;
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (r >= 0 && (n = line_get(f, line, size)) != 0) {
		if (n > 0)
			r = fn(arg, line);
	}
	fclose(f);
	return r;
}
