/* folded: see folded.h. Lines are collected, then sorted and merged once. */
#include "folded.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded_line.h"
#include "kind.h"

_Static_assert(KIND_IO_STATE_QUEUE == OFFCPU_IO_STATE_QUEUE, "a bio row's queue state");

struct folded_line {
	char *stack;
	uint64_t value;
};

struct folded {
	struct folded_line *lines;
	size_t n, cap;
};

int folded_new(struct folded **ret)
{
	struct folded *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	*ret = f;
	return 0;
}

void folded_free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->lines[i].stack);
	free(f->lines);
	free(f);
}

/* A comm (or a group's name) may hold any byte but NUL; ';' or a newline
 * would break the line. */
static void comm_sanitize(char *dst, size_t size, const char *comm)
{
	size_t i;

	for (i = 0; comm[i] && i + 1 < size; i++)
		dst[i] = (comm[i] == ';' || comm[i] == '\n' || comm[i] == '\r') ? '_' : comm[i];
	dst[i] = '\0';
}

int folded_add(struct folded *f, const struct folded_stack *st, bool want_user, bool want_kernel,
	       uint64_t value)
{
	struct folded_line_row row = {
		.kind = st->kind,
		.state = st->state,
		.ustack = st->ustack,
		.kstack = st->kstack,
		.chain = st->chain,
		.want_user = want_user,
		.want_kernel = want_kernel,
	};
	char name[64], *line;

	comm_sanitize(name, sizeof(name), st->comm);
	line = folded_line_format(name, &row);
	if (!line)
		return -ENOMEM;
	if (st->group && *st->group) {
		size_t n = strlen(st->group) + 1;
		char *grouped = malloc(n + strlen(line) + 1);

		if (!grouped) {
			free(line);
			return -ENOMEM;
		}
		comm_sanitize(grouped, n, st->group);
		grouped[n - 1] = ';';
		strcpy(grouped + n, line);
		free(line);
		line = grouped;
	}

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct folded_line *l = realloc(f->lines, cap * sizeof(*l));

		if (!l) {
			free(line);
			return -ENOMEM;
		}
		f->lines = l;
		f->cap = cap;
	}
	f->lines[f->n++] = (struct folded_line){ .stack = line, .value = value };
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

char *folded_text(struct folded *f, uint64_t divisor)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out;

	if (f->n) /* qsort of NULL is undefined, even for 0 items */
		qsort(f->lines, f->n, sizeof(*f->lines), line_cmp);
	out = open_memstream(&text, &size);
	if (!out)
		return NULL;
	for (size_t i = 0; i < f->n;) {
		uint64_t sum = 0;
		size_t j;

		for (j = i; j < f->n && !strcmp(f->lines[j].stack, f->lines[i].stack); j++)
			sum += f->lines[j].value;
		sum = (sum + divisor / 2) / divisor;
		if (sum)
			fprintf(out, "%s %" PRIu64 "\n", f->lines[i].stack, sum);
		i = j;
	}
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
