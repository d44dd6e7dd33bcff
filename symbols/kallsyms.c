/* kallsyms: see kallsyms.h. */
#include "kallsyms.h"
#include "text_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

struct kallsyms_walk {
	kallsyms_visit_fn visit;
	void *arg;
	int result; /* visit's nonzero result, which stopped the walk */
};

static int kallsyms_line(void *arg, char *line)
{
	struct kallsyms_walk *w = arg;
	struct kallsyms_sym sym;

	if (!line_parse(line, &sym))
		return 0;
	w->result = w->visit(w->arg, &sym);
	return w->result ? -ECANCELED : 0;
}

int kallsyms_read(const char *path, kallsyms_visit_fn visit, void *arg)
{
	struct kallsyms_walk w = { .visit = visit, .arg = arg };
	char line[KALLSYMS_LINE_MAX];
	int r = text_lines_read(path, line, sizeof(line), kallsyms_line, &w);

	if (r > 0)
		return -r;
	return w.result;
}
