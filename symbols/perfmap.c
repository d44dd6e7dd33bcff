/* perfmap: see perfmap.h. Entries sorted by start, then by line. */
#include "perfmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PERFMAP_LINE_MAX 4096

struct perfmap_entry {
	uint64_t start, size;
	uint32_t order; /* line number: the later wins */
	uint32_t name;	/* offset in names */
};

struct perfmap {
	struct perfmap_entry *entries;
	size_t n;
	char *names;
	struct stat seen; /* of the file last read; st_ino 0: none */
};

int perfmap_new(struct perfmap **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void perfmap_free(struct perfmap *m)
{
	if (!m)
		return;
	free(m->entries);
	free(m->names);
	free(m);
}

static int perfmap_entry_cmp(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Parses "START SIZE name"; false if malformed. */
static bool perfmap_parse_line(char *line, uint64_t *start, uint64_t *size, char **name)
{
	char *end;

	*start = strtoull(line, &end, 16);
	if (end == line || *end != ' ')
		return false;
	line = end + 1;
	*size = strtoull(line, &end, 16);
	if (end == line || *end != ' ' || !*size || *start + *size < *start)
		return false;
	*name = end + 1;
	(*name)[strcspn(*name, "\r\n")] = '\0';
	for (char *p = *name; *p; p++)
		if (*p == ';')
			*p = ':'; /* ';' joins frames */
	return **name != '\0';
}

/* Reads the whole file into fresh arrays, swapped in on success. */
static int perfmap_read(struct perfmap *m, FILE *f)
{
	struct perfmap_entry *entries = NULL;
	size_t n = 0, cap = 0, names_len = 0, names_cap = 0, total = 0;
	char line[PERFMAP_LINE_MAX], *names = NULL;

	while (fgets(line, sizeof(line), f) && total < PERFMAP_MAX_BYTES &&
	       n < PERFMAP_ENTRIES_MAX) {
		uint64_t start, size;
		size_t len;
		char *name;

		total += strlen(line);
		if (!strchr(line, '\n') && !feof(f)) {
			int c; /* too long: skip the rest of it */

			while ((c = getc(f)) != EOF && c != '\n')
				total++;
			continue;
		}
		if (!perfmap_parse_line(line, &start, &size, &name))
			continue;
		len = strlen(name) + 1;
		if (n == cap) {
			void *p = reallocarray(entries, cap ? cap * 2 : 256, sizeof(*entries));

			if (!p)
				goto nomem;
			entries = p;
			cap = cap ? cap * 2 : 256;
		}
		if (names_len + len > names_cap) {
			size_t c = (names_len + len) * 2;
			void *p = realloc(names, c);

			if (!p)
				goto nomem;
			names = p;
			names_cap = c;
		}
		memcpy(names + names_len, name, len);
		entries[n] = (struct perfmap_entry){
			.start = start, .size = size, .order = n, .name = names_len
		};
		names_len += len;
		n++;
	}
	if (n)
		qsort(entries, n, sizeof(*entries), perfmap_entry_cmp);
	free(m->entries);
	free(m->names);
	m->entries = entries;
	m->names = names;
	m->n = n;
	return 0;
nomem:
	free(entries);
	free(names);
	return -ENOMEM;
}

int perfmap_refresh(struct perfmap *m, const char *path)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	int r;

	if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		if (f)
			fclose(f);
		return -ENOENT;
	}
	if (m->seen.st_ino == st.st_ino && m->seen.st_dev == st.st_dev &&
	    m->seen.st_size == st.st_size && m->seen.st_mtim.tv_sec == st.st_mtim.tv_sec &&
	    m->seen.st_mtim.tv_nsec == st.st_mtim.tv_nsec) {
		fclose(f);
		return 0;
	}
	r = perfmap_read(m, f);
	fclose(f);
	if (r == 0)
		m->seen = st;
	return r;
}

const char *perfmap_find(const struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->entries[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The latest entry that starts at or before addr and covers it; an
	 * earlier, larger one may cover it when the nearest does not. */
	for (size_t i = lo; i-- > 0;) {
		const struct perfmap_entry *e = &m->entries[i];

		if (addr - e->start < e->size)
			return m->names + e->name;
		if (lo - i > 64)
			break; /* bounded: nested JIT entries are few */
	}
	return NULL;
}
