/* flame_palette: see flame_palette.h. The formulas are flamegraph.pl's, so
 * that a graph drawn here has the colours it would have there. */
#include "flame_palette.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pl_names[] = {
	[FLAME_PL_HOT] = "hot",	      [FLAME_PL_MEM] = "mem",	    [FLAME_PL_IO] = "io",
	[FLAME_PL_WAKEUP] = "wakeup", [FLAME_PL_CHAIN] = "chain",   [FLAME_PL_JAVA] = "java",
	[FLAME_PL_JS] = "js",	      [FLAME_PL_PERL] = "perl",	    [FLAME_PL_RED] = "red",
	[FLAME_PL_GREEN] = "green",   [FLAME_PL_BLUE] = "blue",	    [FLAME_PL_AQUA] = "aqua",
	[FLAME_PL_YELLOW] = "yellow", [FLAME_PL_PURPLE] = "purple", [FLAME_PL_ORANGE] = "orange",
};

int flame_pl_palette_from_name(const char *name)
{
	for (size_t i = 1; i < sizeof(pl_names) / sizeof(pl_names[0]); i++) {
		if (!strcmp(name, pl_names[i]))
			return (int)i;
	}
	return -1;
}

bool flame_pl_background(enum flame_pl_palette p, const char *name, const char **ret_top,
			 const char **ret_bottom)
{
	static const struct {
		const char *name, *top, *bottom;
	} bg[] = {
		{ "yellow", "#eeeeee", "#eeeeb0" },
		{ "blue", "#eeeeee", "#e0e0ff" },
		{ "green", "#eef2ee", "#e0ffe0" },
		{ "grey", "#f8f8f8", "#e8e8e8" },
	};

	if (!name) {
		if (p == FLAME_PL_MEM)
			name = "green";
		else if (p == FLAME_PL_IO || p == FLAME_PL_WAKEUP || p == FLAME_PL_CHAIN)
			name = "blue";
		else if (p >= FLAME_PL_RED)
			name = "grey";
		else
			name = "yellow";
	}
	if (name[0] == '#' && strlen(name) == 7) { /* a flat colour */
		for (size_t i = 1; i < 7; i++) {
			if (!strchr("0123456789abcdefABCDEF", name[i]))
				return false;
		}
		*ret_top = *ret_bottom = name;
		return true;
	}
	for (size_t i = 0; i < sizeof(bg) / sizeof(bg[0]); i++) {
		if (!strcmp(name, bg[i].name)) {
			*ret_top = bg[i].top;
			*ret_bottom = bg[i].bottom;
			return true;
		}
	}
	return false;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

size_t flame_annotation_strip(const char *name, size_t len)
{
	if (len >= 4 && name[len - 4] == '_' && name[len - 3] == '[' && name[len - 1] == ']' &&
	    name[len - 2] && strchr("kjiw", name[len - 2]))
		return len - 4;
	return len;
}

/* Perl reads the input as UTF-8 (flamegraph.pl: use open qw(:std :utf8)):
 * its hashes go by characters. A byte that is not UTF-8 counts as itself.
 * Decodes up to max characters of *s into out and moves *s past them. */
static size_t code_points(const char **s, uint32_t *out, size_t max)
{
	const unsigned char *p = (const unsigned char *)*s;
	size_t n = 0;

	while (*p && n < max) {
		uint32_t c = *p;
		int more = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
		int i;

		for (i = 1; i <= more && (p[i] & 0xc0) == 0x80; i++)
			;
		if (more && i == more + 1) {
			c &= 0x3fu >> more;
			for (i = 1; i <= more; i++)
				c = c << 6 | (p[i] & 0x3f);
			p += more + 1;
		} else {
			p++;
		}
		out[n++] = c;
	}
	*s = (const char *)p;
	return n;
}

/* flamegraph.pl's namehash: the first three characters, weighted, after a
 * "module`" prefix. */
static double namehash(const uint32_t *c, size_t n)
{
	double vector = 0, weight = 1, max = 1;
	unsigned mod = 10;
	size_t start = 0;

	for (size_t i = 1; i < n; i++) {
		if (c[i] == '`') {
			start = i + 1;
			break;
		}
	}
	for (size_t i = start; i < n; i++) {
		vector += (double)(c[i] % mod) / (mod - 1) * weight;
		mod++;
		max += weight;
		weight *= 0.70;
		if (mod > 12)
			break;
	}
	return 1 - vector / max;
}

/* Perl's rand(1) right after srand(seed): its own drand48 (since 5.20). */
static double perl_rand_after_srand(uint32_t seed)
{
	uint64_t x = 0x330e + ((uint64_t)seed << 16);

	x = (x * 0x5deece66dULL + 0xb) & ((1ULL << 48) - 1);
	return ldexp((double)x, -48);
}

#define NAME_CHARS_MAX 1024 /* --hash reads the first 3 of a name and of its reverse */

static void key_values(enum flame_colour_key key, const char *name, double v[3])
{
	uint32_t c[NAME_CHARS_MAX], r[NAME_CHARS_MAX], sum = 0;
	const char *p = name;
	size_t n;

	switch (key) {
	case FLAME_KEY_RANDOM:
		for (int i = 0; i < 3; i++)
			v[i] = drand48();
		return;
	case FLAME_KEY_HASH:
		n = code_points(&p, c, NAME_CHARS_MAX);
		if (*p) { /* a longer name: its last characters for the reverse */
			size_t len = strlen(p);
			const char *tail = p + (len > NAME_CHARS_MAX ? len - NAME_CHARS_MAX : 0);

			while ((*tail & 0xc0) == 0x80)
				tail++;
			n = code_points(&tail, c, NAME_CHARS_MAX);
			p = name;
			v[0] = namehash(c, code_points(&p, r, NAME_CHARS_MAX));
		} else {
			v[0] = namehash(c, n);
		}
		for (size_t i = 0; i < n; i++)
			r[i] = c[n - 1 - i];
		v[1] = v[2] = namehash(r, n);
		return;
	case FLAME_KEY_NAME:
		/* unpack("%32W*", $name): the characters' sum, mod 2^32 */
		while (*p) {
			n = code_points(&p, c, NAME_CHARS_MAX);
			for (size_t i = 0; i < n; i++)
				sum += c[i];
		}
		v[0] = v[1] = v[2] = perl_rand_after_srand(sum);
		return;
	}
}

/* The flat palettes each multi palette falls through to. */
static enum flame_pl_palette pl_resolve(enum flame_pl_palette p, const char *name, bool waker)
{
	size_t len = strlen(name);
	const char *slash;

	switch (p) {
	case FLAME_PL_JAVA:
		if (ends_with(name, len, "_[j]"))
			return FLAME_PL_GREEN;
		if (ends_with(name, len, "_[i]"))
			return FLAME_PL_AQUA;
		slash = strchr(name, '/');
		if (slash) { /* ^L?(java|javax|jdk|net|org|com|io|sun)/ */
			static const char *const pkg[] = { "java", "javax", "jdk", "net",
							   "org",  "com",   "io",  "sun" };
			const char *s = name[0] == 'L' ? name + 1 : name;

			for (size_t i = 0; i < sizeof(pkg) / sizeof(pkg[0]); i++) {
				if ((size_t)(slash - s) == strlen(pkg[i]) &&
				    !memcmp(s, pkg[i], strlen(pkg[i])))
					return FLAME_PL_GREEN;
			}
		}
		if (strstr(name, ":::"))
			return FLAME_PL_GREEN;
		if (strstr(name, "::"))
			return FLAME_PL_YELLOW;
		if (ends_with(name, len, "_[k]"))
			return FLAME_PL_ORANGE;
		return FLAME_PL_RED;
	case FLAME_PL_PERL:
		if (strstr(name, "::"))
			return FLAME_PL_YELLOW;
		if (strstr(name, "Perl") || strstr(name, ".pl"))
			return FLAME_PL_GREEN;
		if (ends_with(name, len, "_[k]"))
			return FLAME_PL_ORANGE;
		return FLAME_PL_RED;
	case FLAME_PL_JS:
		if (ends_with(name, len, "_[j]"))
			return strchr(name, '/') ? FLAME_PL_GREEN : FLAME_PL_AQUA;
		if (strstr(name, "::"))
			return FLAME_PL_YELLOW;
		slash = strchr(name, '/');
		if (slash && strstr(slash + 1, ".js") && strstr(slash + 1, ".js") > slash + 1)
			return FLAME_PL_GREEN; /* m:/.*\.js: */
		if (strchr(name, ':'))
			return FLAME_PL_AQUA;
		if (!strcmp(name, " "))
			return FLAME_PL_GREEN; /* a missing symbol */
		if (strstr(name, "_[k]"))
			return FLAME_PL_ORANGE;
		return FLAME_PL_RED;
	case FLAME_PL_WAKEUP:
		return FLAME_PL_AQUA;
	case FLAME_PL_CHAIN:
		return waker || strstr(name, "_[w]") ? FLAME_PL_AQUA : FLAME_PL_BLUE;
	default:
		return p;
	}
	return FLAME_PL_RED;
}

void flame_pl_colour(char *buf, enum flame_pl_palette p, enum flame_colour_key key,
		     const char *name, bool waker)
{
	int r = 0, g = 0, b = 0;
	double v[3];
	char *w = NULL;

	/* flamegraph.pl renames a chain graph's waker frames NAME_[w]. */
	if (waker && p == FLAME_PL_CHAIN) {
		size_t len = strlen(name);

		w = malloc(len + 5);
		if (w) {
			memcpy(w, name, len);
			memcpy(w + len, "_[w]", 5);
			name = w;
		}
	}
	key_values(key, name, v);
	switch (pl_resolve(p, name, waker)) {
	case FLAME_PL_HOT:
		r = 205 + (int)(50 * v[2]);
		g = (int)(230 * v[0]);
		b = (int)(55 * v[1]);
		break;
	case FLAME_PL_MEM:
		g = 190 + (int)(50 * v[1]);
		b = (int)(210 * v[0]);
		break;
	case FLAME_PL_IO:
		r = g = 80 + (int)(60 * v[0]);
		b = 190 + (int)(55 * v[1]);
		break;
	case FLAME_PL_RED:
		r = 200 + (int)(55 * v[0]);
		g = b = 50 + (int)(80 * v[0]);
		break;
	case FLAME_PL_GREEN:
		g = 200 + (int)(55 * v[0]);
		r = b = 50 + (int)(60 * v[0]);
		break;
	case FLAME_PL_BLUE:
		b = 205 + (int)(50 * v[0]);
		r = g = 80 + (int)(60 * v[0]);
		break;
	case FLAME_PL_YELLOW:
		r = g = 175 + (int)(55 * v[0]);
		b = 50 + (int)(20 * v[0]);
		break;
	case FLAME_PL_PURPLE:
		r = b = 190 + (int)(65 * v[0]);
		g = 80 + (int)(60 * v[0]);
		break;
	case FLAME_PL_AQUA:
		r = 50 + (int)(60 * v[0]);
		g = b = 165 + (int)(55 * v[0]);
		break;
	case FLAME_PL_ORANGE:
		r = 190 + (int)(65 * v[0]);
		g = 90 + (int)(65 * v[0]);
		break;
	default:
		break;
	}
	free(w);
	snprintf(buf, FLAME_COLOUR_MAX, "rgb(%d,%d,%d)", r & 0xff, g & 0xff, b & 0xff);
}

unsigned flame_diff_shade(double delta, double max)
{
	double share = fabs(delta) / fmax(max, 1);

	if (!(share <= 1)) /* beyond max, inf, NaN: huge counts overflow to inf */
		share = 1;
	return (unsigned)(210 * (1 - share));
}

void flame_pl_diff_colour(char *buf, double delta, double max)
{
	unsigned r = 255, g = 255, b = 255;

	if (delta > 0)
		g = b = flame_diff_shade(delta, max);
	else if (delta < 0)
		r = g = flame_diff_shade(delta, max);
	snprintf(buf, FLAME_COLOUR_MAX, "rgb(%u,%u,%u)", r, g, b);
}

/* The palette map: an open-addressing table of (name, colour) strings. */
struct map_entry {
	char *name, *colour;
};

struct flame_palette_map {
	struct map_entry *slots;
	size_t mask, n;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct map_entry *map_slot(const struct flame_palette_map *m, const char *name)
{
	size_t i = str_hash(name) & m->mask;

	while (m->slots[i].name && strcmp(m->slots[i].name, name))
		i = (i + 1) & m->mask;
	return &m->slots[i];
}

const char *flame_palette_map_get(const struct flame_palette_map *m, const char *name)
{
	return m ? map_slot(m, name)->colour : NULL;
}

int flame_palette_map_put(struct flame_palette_map *m, const char *name, const char *colour)
{
	struct map_entry *e;
	char *c;

	if ((m->n + 1) * 2 > m->mask + 1) {
		struct flame_palette_map bigger = { .mask = (m->mask + 1) * 2 - 1, .n = m->n };

		bigger.slots = calloc(bigger.mask + 1, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -ENOMEM;
		for (size_t i = 0; i <= m->mask; i++) {
			if (m->slots[i].name)
				*map_slot(&bigger, m->slots[i].name) = m->slots[i];
		}
		free(m->slots);
		*m = bigger;
	}
	e = map_slot(m, name);
	c = strdup(colour);
	if (!c)
		return -ENOMEM;
	if (!e->name) {
		e->name = strdup(name);
		if (!e->name) {
			free(c);
			return -ENOMEM;
		}
		m->n++;
	}
	free(e->colour);
	e->colour = c;
	return 0;
}

static struct flame_palette_map *map_new(void)
{
	struct flame_palette_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mask = 63;
	m->slots = calloc(m->mask + 1, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

/* "NAME->COLOUR" lines; the last "->" splits, so that a name may hold one
 * (C++'s operator->), where flamegraph.pl would cut it at the first. */
int flame_palette_map_load(const char *path, struct flame_palette_map **ret)
{
	struct flame_palette_map *m = map_new();
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	if (!m)
		return -ENOMEM;
	in = fopen(path, "re");
	if (!in) {
		if (errno == ENOENT) {
			*ret = m;
			return 0;
		}
		r = -errno;
		flame_palette_map_free(m);
		return r;
	}
	while ((n = getline(&line, &cap, in)) >= 0) {
		char *arrow = NULL;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		for (char *p = strstr(line, "->"); p; p = strstr(p + 1, "->"))
			arrow = p;
		if (!arrow)
			continue;
		*arrow = '\0';
		r = flame_palette_map_put(m, line, arrow + 2);
		if (r < 0)
			break;
	}
	if (r == 0 && ferror(in))
		r = -EIO;
	free(line);
	fclose(in);
	if (r < 0) {
		flame_palette_map_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct map_entry *)a)->name, ((const struct map_entry *)b)->name);
}

int flame_palette_map_save(const struct flame_palette_map *m, const char *path)
{
	struct map_entry *e = malloc((m->n + 1) * sizeof(*e));
	size_t n = 0;
	FILE *out;
	int r = 0;

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i <= m->mask; i++) {
		if (m->slots[i].name)
			e[n++] = m->slots[i];
	}
	qsort(e, n, sizeof(*e), cmp_entry);
	out = fopen(path, "we");
	if (!out) {
		r = -errno;
		free(e);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s->%s\n", e[i].name, e[i].colour);
	if (ferror(out))
		r = -EIO;
	if (fclose(out) != 0 && r == 0)
		r = -errno;
	free(e);
	return r;
}

void flame_palette_map_free(struct flame_palette_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->slots && i <= m->mask; i++) {
		free(m->slots[i].name);
		free(m->slots[i].colour);
	}
	free(m->slots);
	free(m);
}
