/* folded_line: see folded_line.h. */
#include "folded_line.h"

#include <stdlib.h>
#include <string.h>

#include "kind.h"

static struct folded_line_part part(const char *text, bool always)
{
	return (struct folded_line_part){ .text = text ? text : "", .always = always };
}

static struct folded_line_part delimiter(const char *text)
{
	return (struct folded_line_part){ .text = text, .delimiter = true, .always = true };
}

size_t folded_line_parts(const struct folded_line_row *row, struct folded_line_part *parts)
{
	enum kind_parts which = kind_parts(row->kind);
	const char *leaf = kind_leaf(row->kind, row->state);
	bool kernel = row->want_kernel || !row->want_user; /* one part at least */
	size_t n = 0;

	if (which == KIND_PARTS_WAKER) {
		parts[n++] = part(row->chain, true);
		return n;
	}
	if (row->want_user)
		parts[n++] = part(row->ustack, false);
	if (row->want_user && kernel)
		parts[n++] = delimiter("-");
	if (kernel)
		parts[n++] = part(row->kstack, false);
	if (which == KIND_PARTS_BOTH) {
		parts[n++] = delimiter("--");
		parts[n++] = part(row->chain, true);
	} else if (leaf) {
		parts[n++] = part(leaf, true);
	}
	return n;
}

char *folded_line_format(const char *comm, const struct folded_line_row *row)
{
	struct folded_line_part parts[FOLDED_LINE_MAX_PARTS];
	size_t n = folded_line_parts(row, parts), len = strlen(comm), at;
	char *line;

	for (size_t i = 0; i < n; i++)
		len += 1 + strlen(parts[i].text);
	line = malloc(len + 1);
	if (!line)
		return NULL;
	at = strlen(comm);
	memcpy(line, comm, at);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i].text);

		if (!l && !parts[i].always)
			continue;
		line[at++] = ';';
		memcpy(line + at, parts[i].text, l);
		at += l;
	}
	line[at] = '\0';
	return line;
}
