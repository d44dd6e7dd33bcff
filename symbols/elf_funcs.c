/*
 * elf_funcs: see elf_funcs.h.
 *
 * A request is resolved once, when it is set up, so the symbol tables are read
 * afresh each time and nothing is cached. A lookup walks every function symbol
 * of the file once; only when nothing matches is the file walked a second time
 * to collect close matches, the one part that costs more than reading.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* FNM_CASEFOLD, strcasestr */
#endif
#include "elf_funcs.h"

#include "array.h"
#include "elf_symtab.h"
#include "demangle.h"
#include "proc_maps.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EF_PATTERN_MAX_BYTES 4096
#define EF_MATCHES_MAX	     (1u << 20) /* symbols collected before giving up with -E2BIG */
#define EF_SUGGESTIONS	     5
#define EF_SUGGEST_MAX_BYTES 1024
#define EF_PHDRS_MAX	     4096
#define EF_MAPS_LINE_MAX     (PATH_MAX + 256)
#define EF_DEFAULT_PATH	     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define EF_GLOB_CHARS	     "*?["
#define EF_OPERATOR_CHARS    "<>=!+-*/%^&|~,"

#if defined(__x86_64__)
#define EF_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define EF_MULTIARCH "aarch64-linux-gnu"
#endif

__attribute__((format(printf, 3, 4))) static void ef_err(char *err, size_t size, const char *fmt,
							 ...)
{
	va_list ap;

	if (!err || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
}

/*
 * Demangled names that are not "[return type] name(params)" but a phrase
 * about one: for the functions among them (thunks, clones, TLS helpers) the
 * phrase stays part of the qualified name, so that "app::Server::handle"
 * names the method and not also the thunk that jumps to it.
 */
static const char *const ef_special_prefixes[] = {
	"non-virtual thunk to ",     "virtual thunk to ",	   "covariant return thunk to ",
	"transaction clone for ",    "non-transaction clone for ", "TLS init function for ",
	"TLS wrapper function for ", "hidden alias for ",
};

/* True if d[i..] is the keyword "operator" (not part of a longer identifier). */
static bool ef_is_operator(const char *d, size_t i, size_t end)
{
	if (end - i < 8 || memcmp(d + i, "operator", 8))
		return false;
	if (i && d[i - 1] != ':' && d[i - 1] != ' ')
		return false;
	return i + 8 == end || !(isalnum((unsigned char)d[i + 8]) || d[i + 8] == '_');
}

/* Where the name starts in d[0, end) ("[return type ]name"): after the last
 * space outside brackets, not counting the punctuation of operator names. */
static size_t ef_name_start(const char *d, size_t end)
{
	size_t start = 0;
	int depth = 0;

	for (size_t i = 0; i < end; i++) {
		if (ef_is_operator(d, i, end)) {
			size_t j = i + 8;

			/* operator new, operator delete[], operator bool: to the end */
			if (j < end && d[j] == ' ')
				break;
			if (end - j >= 2 &&
			    ((d[j] == '(' && d[j + 1] == ')') || (d[j] == '[' && d[j + 1] == ']')))
				j += 2;
			else
				while (j < end && strchr(EF_OPERATOR_CHARS, d[j]))
					j++;
			/* "operator< <int>": the space keeps "<<" apart */
			if (end - j >= 2 && d[j] == ' ' && d[j + 1] == '<')
				j++;
			i = j - 1;
			continue;
		}
		switch (d[i]) {
		case '<':
		case '(':
		case '[':
		case '{':
			depth++;
			break;
		case '>':
		case ')':
		case ']':
		case '}':
			if (depth)
				depth--;
			break;
		case ' ':
			if (!depth)
				start = i + 1;
			break;
		}
	}
	return start;
}

/* Appends s[0, len) to out at *pos, leaving out "[abi:...]" tags. */
static void ef_append_without_abi_tags(char *out, size_t *pos, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (len - i >= 5 && !memcmp(s + i, "[abi:", 5)) {
			const char *close = memchr(s + i, ']', len - i);

			if (close) {
				i = close - s;
				continue;
			}
		}
		out[(*pos)++] = s[i];
	}
}

/*
 * The qualified name of a demangled function name: "int app::max<int>(int,
 * int) const" -> "app::max<int>"; "foo(int) [clone .constprop.0]" ->
 * "foo.constprop.0". Returns a malloc'd string or NULL (out of memory).
 */
static char *ef_qualify(const char *d)
{
	const char *clone = strstr(d, " [clone ");
	size_t len = clone ? (size_t)(clone - d) : strlen(d);
	size_t prefix_len = 0, name_end = len, start, pos = 0;
	char *out = malloc(strlen(d) + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < sizeof(ef_special_prefixes) / sizeof(ef_special_prefixes[0]); i++) {
		size_t n = strlen(ef_special_prefixes[i]);

		if (len >= n && !memcmp(d, ef_special_prefixes[i], n)) {
			prefix_len = n;
			break;
		}
	}
	/* The parameter list: the last ')' before any " const", matched back. */
	for (size_t i = len; i-- > prefix_len;) {
		int depth = 0;

		if (d[i] != ')')
			continue;
		for (size_t k = i + 1; k-- > prefix_len;) {
			if (d[k] == ')')
				depth++;
			else if (d[k] == '(' && !--depth) {
				name_end = k;
				break;
			}
		}
		break;
	}
	start = prefix_len + ef_name_start(d + prefix_len, name_end - prefix_len);
	memcpy(out, d, prefix_len);
	pos = prefix_len;
	ef_append_without_abi_tags(out, &pos, d + start, name_end - start);
	/* " [clone .isra.0] [clone .cold]" -> ".isra.0.cold" */
	while (clone) {
		const char *s = clone + strlen(" [clone ");
		size_t n = strcspn(s, "]");

		memcpy(out + pos, s, n);
		pos += n;
		clone = strstr(s + n, " [clone ");
	}
	out[pos] = '\0';
	return out;
}

/* The names a function symbol goes by. */
struct ef_forms {
	const char *name; /* as in the symbol table */
	const char *base; /* name without "@VERSION" */
	char *demangled;  /* NULL if not a C++ mangled name */
	char *qualified;  /* NULL if not a C++ mangled name: then base */
	char *base_owned;
};

static void ef_forms_done(struct ef_forms *f)
{
	free(f->base_owned);
	free(f->demangled);
	free(f->qualified);
	*f = (struct ef_forms){ 0 };
}

/* Returns 0 or -ENOMEM (f is then empty). */
static int ef_forms_get(struct ef_forms *f, const char *name)
{
	size_t len = strcspn(name, "@");
	int r = 0;

	*f = (struct ef_forms){ .name = name, .base = name };
	if (name[len]) {
		f->base_owned = strndup(name, len);
		if (!f->base_owned)
			return -ENOMEM;
		f->base = f->base_owned;
	}
	if (!demangle_is_mangled(f->base))
		return 0;
	f->demangled = demangle(f->base, &r);
	if (!f->demangled) {
		if (r != -ENOMEM)
			return 0; /* not a valid mangled name: just a name */
		ef_forms_done(f);
		return -ENOMEM;
	}
	f->qualified = ef_qualify(f->demangled);
	if (!f->qualified) {
		ef_forms_done(f);
		return -ENOMEM;
	}
	return 0;
}

static const char *ef_forms_qualified(const struct ef_forms *f)
{
	return f->qualified ? f->qualified : f->base;
}

static bool ef_form_matches(const char *pattern, bool glob, const char *s)
{
	return s && (!strcmp(pattern, s) || (glob && !fnmatch(pattern, s, 0)));
}

static bool ef_forms_match(const struct ef_forms *f, const char *pattern, bool glob)
{
	return ef_form_matches(pattern, glob, f->name) || ef_form_matches(pattern, glob, f->base) ||
	       ef_form_matches(pattern, glob, f->demangled) ||
	       ef_form_matches(pattern, glob, f->qualified);
}

/* A function symbol of the file. */
struct ef_sym {
	const char *name; /* in libelf's string table: valid until elf_end */
	uint64_t offset;
	uint64_t size;
	unsigned rank; /* among aliases at one offset, the lowest names it */
};

/*
 * Global before weak before local, a public name before a '_' one (glibc's
 * poll is a weak alias of a global __poll), as the symbolizer ranks them;
 * "name@VERSION" after all of those.
 */
static unsigned ef_rank(unsigned char bind, const char *name)
{
	unsigned r;

	switch (bind) {
	case STB_GLOBAL:
		r = 0;
		break;
	case STB_WEAK:
		r = 1;
		break;
	default:
		r = 4;
		break;
	}
	if (name[0] == '_')
		r += r == 4 ? 1 : 2;
	if (strchr(name, '@'))
		r += 6;
	return r;
}

/* True if [offset, offset + size) lies inside a file of file_size bytes. */
/* The file offset of a symbol's address: through its section, else through
 * the PT_LOAD segment holding it. */
static bool ef_file_offset(Elf *elf, const GElf_Sym *sym, uint64_t file_size, uint64_t *ret)
{
	uint64_t v = sym->st_value;
	size_t phnum;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (sym->st_shndx < SHN_LORESERVE && (scn = elf_getscn(elf, sym->st_shndx)) &&
	    gelf_getshdr(scn, &sh) && elf_section_usable(&sh, file_size) && v >= sh.sh_addr &&
	    v - sh.sh_addr < sh.sh_size) {
		*ret = v - sh.sh_addr + sh.sh_offset;
		return true;
	}
	if (elf_getphdrnum(elf, &phnum) < 0)
		return false;
	if (phnum > EF_PHDRS_MAX)
		phnum = EF_PHDRS_MAX;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (v >= ph.p_vaddr && v - ph.p_vaddr < ph.p_filesz &&
		    elf_in_file(ph.p_offset, ph.p_filesz, file_size)) {
			*ret = v - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

typedef int (*ef_visit_fn)(void *arg, const struct ef_sym *s);

struct ef_walk_ctx {
	Elf *elf;
	uint64_t file_size;
	ef_visit_fn visit;
	void *arg;
};

/* A function symbol as elf_funcs sees it: named, at a file offset, ranked. */
static int ef_walk_visit(void *arg, const GElf_Sym *sym, const char *name)
{
	struct ef_walk_ctx *c = arg;
	struct ef_sym s = { .name = name, .size = sym->st_size };

	if (!ef_file_offset(c->elf, sym, c->file_size, &s.offset))
		return 0;
	s.rank = ef_rank(GELF_ST_BIND(sym->st_info), name);
	return c->visit(c->arg, &s);
}

/* Calls visit on each defined function symbol of one symbol table; stops at
 * the first nonzero result and returns it (an unreadable table has none). */
static int ef_walk_table(Elf *elf, Elf_Scn *scn, uint64_t file_size, ef_visit_fn visit, void *arg)
{
	struct ef_walk_ctx c = { elf, file_size, visit, arg };
	int r = elf_symtab_funcs(elf, scn, file_size, ef_walk_visit, &c);

	return r == -EINVAL ? 0 : r;
}

/* Walks .symtab and .dynsym. Returns visit's nonzero result, 0, or -ENOEXEC
 * if the file has neither. */
static int ef_walk(Elf *elf, uint64_t file_size, ef_visit_fn visit, void *arg)
{
	Elf_Scn *scn = NULL;
	bool any = false;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		int r;

		if (!gelf_getshdr(scn, &sh))
			break;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (!elf_section_usable(&sh, file_size))
			continue;
		any = true;
		r = ef_walk_table(elf, scn, file_size, visit, arg);
		if (r)
			return r;
	}
	return any ? 0 : -ENOEXEC;
}

struct ef_match_ctx {
	const char *pattern;
	bool glob;
	struct ef_sym *syms;
	size_t n, cap;
	bool truncated;
};

static int ef_match_visit(void *arg, const struct ef_sym *s)
{
	struct ef_match_ctx *c = arg;
	struct ef_forms f;
	bool match;

	if (ef_forms_get(&f, s->name) < 0)
		return -ENOMEM;
	match = ef_forms_match(&f, c->pattern, c->glob);
	ef_forms_done(&f);
	if (!match)
		return 0;
	if (c->n >= EF_MATCHES_MAX) {
		c->truncated = true;
		return 1;
	}
	if (array_grow(&c->syms, &c->cap, c->n + 1, sizeof(*c->syms), 16) < 0)
		return -ENOMEM;
	c->syms[c->n++] = *s;
	return 0;
}

static int ef_sym_cmp(const void *a, const void *b)
{
	const struct ef_sym *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorts by offset and keeps the best-ranked name of each. Returns the count. */
static size_t ef_syms_unique(struct ef_sym *syms, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(syms, n, sizeof(*syms), ef_sym_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || syms[k - 1].offset != syms[i].offset)
			syms[k++] = syms[i];
	return k;
}

void elf_funcs_free(struct elf_func *f, size_t n)
{
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].demangled);
	}
	free(f);
}

/* Copies the (unique, sorted) matches out. Returns 0 or -ENOMEM. */
static int ef_funcs_build(const struct ef_sym *syms, size_t n, struct elf_func **ret)
{
	struct elf_func *funcs = calloc(n, sizeof(*funcs));

	if (!funcs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ef_forms f;

		funcs[i].offset = syms[i].offset;
		funcs[i].size = syms[i].size;
		funcs[i].name = strdup(syms[i].name);
		if (!funcs[i].name || ef_forms_get(&f, syms[i].name) < 0) {
			elf_funcs_free(funcs, n);
			return -ENOMEM;
		}
		funcs[i].demangled = f.demangled;
		f.demangled = NULL;
		ef_forms_done(&f);
	}
	*ret = funcs;
	return 0;
}

/* Case-insensitive edit distance between a[0, alen) and b, or max + 1 if it
 * is more than max. row: alen + 1 entries of scratch. */
static size_t ef_distance(const char *a, size_t alen, const char *b, size_t max, size_t *row)
{
	size_t blen = strlen(b);

	if ((blen > alen ? blen - alen : alen - blen) > max)
		return max + 1;
	for (size_t i = 0; i <= alen; i++)
		row[i] = i;
	for (size_t j = 1; j <= blen; j++) {
		size_t diag = row[0], best = j;
		int bc = tolower((unsigned char)b[j - 1]);

		row[0] = j;
		for (size_t i = 1; i <= alen; i++) {
			size_t up = row[i];
			size_t v = diag + (tolower((unsigned char)a[i - 1]) != bc);

			if (up + 1 < v)
				v = up + 1;
			if (row[i - 1] + 1 < v)
				v = row[i - 1] + 1;
			diag = up;
			row[i] = v;
			if (v < best)
				best = v;
		}
		if (best > max)
			return max + 1;
	}
	return row[alen] > max ? max + 1 : row[alen];
}

struct ef_suggestion {
	char *name;
	unsigned kind; /* 0: contains the pattern, 1: within the edit distance */
	size_t key;    /* kind 0: length, kind 1: distance */
};

struct ef_suggest_ctx {
	const char *pattern;
	size_t pattern_len, max_distance;
	bool glob;
	size_t *row;
	struct ef_suggestion best[EF_SUGGESTIONS];
	size_t n;
};

/* True if (kind, key, name) ranks before y. */
static bool ef_suggestion_before(unsigned kind, size_t key, const char *name,
				 const struct ef_suggestion *y)
{
	if (kind != y->kind)
		return kind < y->kind;
	if (key != y->key)
		return key < y->key;
	return strcmp(name, y->name) < 0;
}

/* Inserts a copy of name into the sorted best list if it ranks there. */
static int ef_suggest_add(struct ef_suggest_ctx *c, const char *name, unsigned kind, size_t key)
{
	char *copy;
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->best[i].name, name))
			return 0;
	if (c->n == EF_SUGGESTIONS && !ef_suggestion_before(kind, key, name, &c->best[c->n - 1]))
		return 0;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	if (c->n == EF_SUGGESTIONS)
		free(c->best[--c->n].name);
	for (i = c->n; i > 0 && ef_suggestion_before(kind, key, name, &c->best[i - 1]); i--)
		c->best[i] = c->best[i - 1];
	c->best[i] = (struct ef_suggestion){ .name = copy, .kind = kind, .key = key };
	c->n++;
	return 0;
}

static int ef_suggest_visit(void *arg, const struct ef_sym *sym)
{
	struct ef_suggest_ctx *c = arg;
	const char *name;
	struct ef_forms f;
	size_t d;
	int r = 0;

	if (ef_forms_get(&f, sym->name) < 0)
		return -ENOMEM;
	name = ef_forms_qualified(&f);
	if (c->glob ? !fnmatch(c->pattern, name, FNM_CASEFOLD) : !!strcasestr(name, c->pattern))
		r = ef_suggest_add(c, name, 0, strlen(name));
	else if (!c->glob && (d = ef_distance(c->pattern, c->pattern_len, name, c->max_distance,
					      c->row)) <= c->max_distance)
		r = ef_suggest_add(c, name, 1, d);
	ef_forms_done(&f);
	return r;
}

/* Writes up to EF_SUGGESTIONS close matches, ", "-separated, into buf ("" if
 * none). Returns 0 or -ENOMEM. */
static int ef_suggest(Elf *elf, uint64_t file_size, const char *pattern, char *buf, size_t size)
{
	struct ef_suggest_ctx c = {
		.pattern = pattern,
		.pattern_len = strlen(pattern),
		.glob = !!strpbrk(pattern, EF_GLOB_CHARS),
	};
	size_t pos = 0;
	int r;

	buf[0] = '\0';
	c.max_distance = c.pattern_len / 3 > 2 ? c.pattern_len / 3 : 2;
	c.row = calloc(c.pattern_len + 1, sizeof(*c.row));
	if (!c.row)
		return -ENOMEM;
	r = ef_walk(elf, file_size, ef_suggest_visit, &c);
	for (size_t i = 0; i < c.n; i++) {
		int n = snprintf(buf + pos, size - pos, "%s%s", pos ? ", " : "", c.best[i].name);

		/* a name that does not fit is left out whole */
		if (n < 0 || (size_t)n >= size - pos)
			buf[pos] = '\0';
		else
			pos += n;
		free(c.best[i].name);
	}
	free(c.row);
	return r == -ENOMEM ? r : 0;
}

/*
 * elf_funcs_find, naming the file display in messages. If suggest is
 * non-NULL, -ESRCH fills it with the close matches ("" if none) and puts them
 * in the message; otherwise they are not looked for.
 */
static int ef_find(const char *path, const char *display, const char *pattern,
		   struct elf_func **ret, char *suggest, size_t suggest_size, char *err,
		   size_t err_size)
{
	struct ef_match_ctx c = { .pattern = pattern, .glob = !!strpbrk(pattern, EF_GLOB_CHARS) };
	struct stat st;
	Elf *elf = NULL;
	size_t n;
	int fd, r;

	if (!pattern[0] || strlen(pattern) > EF_PATTERN_MAX_BYTES) {
		ef_err(err, err_size, "function pattern must be 1 to %d bytes",
		       EF_PATTERN_MAX_BYTES);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT)
			ef_err(err, err_size, "%s: no such file", display);
		else
			ef_err(err, err_size, "%s: %s", display, strerror(-r));
		return r;
	}
	elf_version(EV_CURRENT);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !(elf = elf_begin(fd, ELF_C_READ, NULL)) || elf_kind(elf) != ELF_K_ELF) {
		ef_err(err, err_size, "%s is not an ELF file", display);
		r = -ENOEXEC;
		goto out;
	}
	r = ef_walk(elf, st.st_size, ef_match_visit, &c);
	if (r == -ENOEXEC) {
		ef_err(err, err_size, "%s has no symbol table (.symtab or .dynsym)", display);
		goto out;
	}
	if (r < 0)
		goto out_nomem;
	n = ef_syms_unique(c.syms, c.n);
	if (c.truncated || n > ELF_FUNCS_MAX) {
		ef_err(err, err_size,
		       "'%s' matches %s%zu functions in %s (at most %d): be more specific", pattern,
		       c.truncated ? "over " : "", n, display, ELF_FUNCS_MAX);
		r = -E2BIG;
		goto out;
	}
	if (!n) {
		if (suggest && ef_suggest(elf, st.st_size, pattern, suggest, suggest_size) < 0)
			goto out_nomem;
		ef_err(err, err_size, "no function '%s' in %s%s%s", pattern, display,
		       suggest && suggest[0] ? "; close matches: " : "", suggest ? suggest : "");
		r = -ESRCH;
		goto out;
	}
	if (ef_funcs_build(c.syms, n, ret) < 0)
		goto out_nomem;
	r = n;
	goto out;
out_nomem:
	ef_err(err, err_size, "out of memory reading %s", display);
	r = -ENOMEM;
out:
	free(c.syms);
	elf_end(elf);
	close(fd);
	return r;
}

int elf_funcs_find(const char *path, const char *pattern, struct elf_func **ret, char *err,
		   size_t err_size)
{
	char suggest[EF_SUGGEST_MAX_BYTES];

	return ef_find(path, path, pattern, ret, suggest, sizeof(suggest), err, err_size);
}

void elf_funcs_paths_free(char **paths, size_t n)
{
	if (!paths)
		return;
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

struct ef_paths {
	char **v;
	size_t n, cap;
};

/* Adds a copy of prefix + path unless already there. Returns 0 or -ENOMEM. */
static int ef_paths_add(struct ef_paths *p, const char *prefix, const char *path)
{
	char *s;

	for (size_t i = 0; i < p->n; i++)
		if (!strncmp(p->v[i], prefix, strlen(prefix)) &&
		    !strcmp(p->v[i] + strlen(prefix), path))
			return 0;
	if (array_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v), 16) < 0)
		return -ENOMEM;
	if (asprintf(&s, "%s%s", prefix, path) < 0)
		return -ENOMEM;
	p->v[p->n++] = s;
	return 0;
}

static bool ef_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* path equals spec, or its basename equals spec or starts with spec and
 * then '.' or '-'. */
static bool ef_binary_matches(const char *path, const char *spec)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(spec);

	if (!strcmp(path, spec) || !strcmp(base, spec))
		return true;
	return !strncmp(base, spec, n) && (base[n] == '.' || base[n] == '-');
}

/* Adds path (as the process sees it) if it is a usable candidate. */
static int ef_paths_add_mapped(struct ef_paths *p, const char *root, const char *path,
			       const char *spec)
{
	if (path[0] != '/' || ef_ends_with(path, " (deleted)"))
		return 0;
	if (spec && !ef_binary_matches(path, spec))
		return 0;
	if (p->n >= ELF_FUNCS_CANDIDATES_MAX)
		return 0;
	return ef_paths_add(p, root, path);
}

/* The executable and mapped files of process pid, as candidates. */
static int ef_candidates_pid(int pid, const char *spec, struct ef_paths *p, char *err,
			     size_t err_size)
{
	char path[64], root[64], target[PATH_MAX], *line = NULL;
	size_t line_cap = 0;
	ssize_t len;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		if (r == -ENOENT)
			ef_err(err, err_size, "no process %d", pid);
		else
			ef_err(err, err_size, "cannot read %s: %s", path, strerror(-r));
		return r == -ENOENT ? -ESRCH : r;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	len = readlink(path, target, sizeof(target) - 1);
	if (len > 0) {
		target[len] = '\0';
		r = ef_paths_add_mapped(p, root, target, spec);
	}
	while (!r && (len = getline(&line, &line_cap, f)) > 0) {
		struct proc_map m;

		if (len <= EF_MAPS_LINE_MAX && proc_maps_parse(line, &m) && proc_map_exec(&m) &&
		    !m.deleted)
			r = ef_paths_add_mapped(p, root, m.path, spec);
	}
	free(line);
	fclose(f);
	if (r < 0) {
		ef_err(err, err_size, "out of memory");
		return r;
	}
	if (!p->n) {
		if (spec)
			ef_err(err, err_size, "no binary '%s' in process %d", spec, pid);
		else
			ef_err(err, err_size, "process %d maps no files", pid);
		return -ENOENT;
	}
	return 0;
}

static bool ef_is_file(const char *path, bool executable)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && (!executable || !access(path, X_OK));
}

/* A binary named on the command line: an absolute path, or a bare name
 * looked up in $PATH and then in the library directories. */
static int ef_candidates_name(const char *spec, struct ef_paths *p, char *err, size_t err_size)
{
	static const char *const lib_dirs[] = {
#ifdef EF_MULTIARCH
		"/lib/" EF_MULTIARCH,
		"/usr/lib/" EF_MULTIARCH,
#endif
		"/lib",
		"/usr/lib",
	};
	const char *search = getenv("PATH");
	char buf[PATH_MAX];

	if (spec[0] == '/')
		return ef_paths_add(p, "", spec) < 0 ? -ENOMEM : 0;
	if (strchr(spec, '/')) {
		ef_err(err, err_size, "binary '%s': give an absolute path", spec);
		return -EINVAL;
	}
	if (!search || !search[0])
		search = EF_DEFAULT_PATH;
	while (*search) {
		size_t n = strcspn(search, ":");

		if (n &&
		    snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, search, spec) <
			    (int)sizeof(buf) &&
		    ef_is_file(buf, true))
			return ef_paths_add(p, "", buf) < 0 ? -ENOMEM : 0;
		search += n + (search[n] == ':');
	}
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		if (snprintf(buf, sizeof(buf), "%s/%s", lib_dirs[i], spec) < (int)sizeof(buf) &&
		    ef_is_file(buf, false))
			return ef_paths_add(p, "", buf) < 0 ? -ENOMEM : 0;
	}
	ef_err(err, err_size, "binary '%s' not found (give a path)", spec);
	return -ENOENT;
}

int elf_funcs_candidates(int pid, const char *spec_binary, char ***ret, char *err, size_t err_size)
{
	struct ef_paths p = { 0 };
	int r;

	if (spec_binary && !spec_binary[0])
		spec_binary = NULL;
	if (pid > 0)
		r = ef_candidates_pid(pid, spec_binary, &p, err, err_size);
	else if (!spec_binary) {
		ef_err(err, err_size, "--request SYM without @BINARY needs a pid");
		r = -EINVAL;
	} else
		r = ef_candidates_name(spec_binary, &p, err, err_size);
	if (r == -ENOMEM)
		ef_err(err, err_size, "out of memory");
	if (r < 0) {
		elf_funcs_paths_free(p.v, p.n);
		return r;
	}
	*ret = p.v;
	return p.n;
}

/* A candidate as the user knows it: without the "/proc/PID/root" prefix. */
const char *elf_funcs_display_path(int pid, const char *path)
{
	char root[64];
	int n;

	if (pid <= 0)
		return path;
	n = snprintf(root, sizeof(root), "/proc/%d/root", pid);
	return strncmp(path, root, n) || path[n] != '/' ? path : path + n;
}

int elf_funcs_resolve(int pid, const char *spec_binary, const char *pattern, char **ret_path,
		      struct elf_func **ret, char *err, size_t err_size)
{
	char suggest[EF_SUGGEST_MAX_BYTES] = "", scratch[EF_SUGGEST_MAX_BYTES];
	int n, r = -ESRCH, first_r = 0;
	struct elf_func *funcs;
	bool searched = false;
	char **paths;

	n = elf_funcs_candidates(pid, spec_binary, &paths, err, err_size);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		/* The first candidate's message may reach the user as is, and
		 * only its close matches are looked for (the main executable's). */
		char *e = i ? scratch : err;
		size_t e_size = i ? sizeof(scratch) : err_size;

		r = ef_find(paths[i], elf_funcs_display_path(pid, paths[i]), pattern, &funcs,
			    i ? NULL : suggest, sizeof(suggest), e, e_size);
		if (r > 0) {
			*ret_path = strdup(paths[i]);
			if (*ret_path) {
				*ret = funcs;
				goto out;
			}
			elf_funcs_free(funcs, r);
			ef_err(err, err_size, "out of memory");
			r = -ENOMEM;
			goto out;
		}
		if (r == -E2BIG || r == -ENOMEM || r == -EINVAL) {
			if (i)
				ef_err(err, err_size, "%s", scratch);
			goto out;
		}
		if (!i)
			first_r = r;
		searched |= r == -ESRCH;
	}
	/* One candidate: its own message stands. None readable: the first
	 * failure says why. */
	r = first_r;
	if (n > 1 && searched) {
		ef_err(err, err_size, "no function '%s' in %s or %d other mapped file%s%s%s",
		       pattern, elf_funcs_display_path(pid, paths[0]), n - 1, n > 2 ? "s" : "",
		       suggest[0] ? "; close matches: " : "", suggest);
		r = -ESRCH;
	}
out:
	elf_funcs_paths_free(paths, n);
	return r;
}

int elf_funcs_split_spec(const char *spec, char *sym, size_t sym_size, char *bin, size_t bin_size)
{
	const char *at = strrchr(spec, '@');
	size_t sym_len = at ? (size_t)(at - spec) : strlen(spec);
	const char *b = at ? at + 1 : "";
	size_t bin_len = strlen(b);

	if (!sym_len || (at && !bin_len))
		return -EINVAL;
	if (sym_len >= sym_size || bin_len >= bin_size)
		return -ENAMETOOLONG;
	memcpy(sym, spec, sym_len);
	sym[sym_len] = '\0';
	memcpy(bin, b, bin_len + 1);
	return 0;
}
