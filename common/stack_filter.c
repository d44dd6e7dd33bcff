/* stack_filter: see stack_filter.h. */
#include "stack_filter.h"

#include "frame.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded_line.h"
#include "thread_state.h"

struct stack_filter {
	char *comm; /* NULL: any */
	size_t comm_len;
	uint32_t *pids; /* sorted; n_pids 0: any */
	size_t n_pids;
	uint32_t state_mask; /* 0: any */
	regex_t grep, exclude;
	bool has_grep, has_exclude;
};

/* A run of text that need not end in a NUL. */
struct span {
	const char *p;
	size_t len;
};

static struct span span_of(const char *s)
{
	return (struct span){ s ? s : "", s ? strlen(s) : 0 };
}

/* What stack_filter_regex_cheap() lets regcomp() build. */
#define REGEX_DUP_MAX	 255  /* a bound of {m,n}: POSIX's RE_DUP_MAX; glibc takes 32767 */
#define REGEX_NEST_MAX	 2    /* repetitions of repetitions, "(a+)*" */
#define REGEX_PARTS_MAX	 1024 /* atoms and groups, each copy a repetition makes counted */
#define REGEX_GROUPS_MAX 32   /* groups open at once */
#define REGEX_EMPTY_MAX	 64   /* with an anchor: copies of what may match nothing */

/* A group of the pattern (level 0: the whole pattern) as it is scanned. */
struct regex_level {
	size_t parts;	     /* so far, copies included */
	size_t last;	     /* parts of the last atom or group: what a repetition copies */
	unsigned nest;	     /* repetitions applied in and to the last atom */
	unsigned nest_max;   /* the deepest nest in the group */
	bool last_empty;     /* the last atom matches the empty string */
	unsigned alt_solid;  /* atoms of the current alternative that do not */
	unsigned empty_alts; /* alternatives before the current one that do */
	bool anchored;	     /* the last atom holds an anchor (^, $, \b, ...) */
	bool anchors;	     /* so has an atom of the group */
	bool wide;	     /* an atom of the group can match a character */
};

static bool regex_refuse(char *why, size_t why_size, const char *reason)
{
	snprintf(why, why_size, "too costly for the regex engine: %s", reason);
	return false;
}

/* The last character of the bracket expression that opens at p: its ']',
 * or the character before the NUL if it is not closed. */
static const char *regex_bracket_end(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']') /* first, it is a member */
		p++;
	for (; *p && *p != ']'; p++) {
		/* [:class:], [.coll.] and [=equiv=] may hold a ']' */
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			const char *close = strchr(p + 2, p[1]);

			while (close && close[1] != ']')
				close = strchr(close + 1, p[1]);
			if (!close)
				break;
			p = close + 1;
		}
	}
	return *p ? p : p - 1;
}

/* One token of an interval as glibc's fetch_number() reads it: a character
 * or a backslash and the character it escapes. */
struct regex_token {
	char c;	      /* the character; '\0' at the pattern's end */
	bool escaped; /* after a backslash */
};

static struct regex_token regex_token_next(const char **p)
{
	struct regex_token t = { **p, false };

	if (t.c == '\\' && (*p)[1]) {
		t = (struct regex_token){ (*p)[1], true };
		(*p)++;
	}
	if (t.c)
		(*p)++;
	return t;
}

/* A bound of an interval, read up to its ',' or '}' (at *p, as t); -1 if
 * none, -2 if not a number, capped at REGEX_DUP_MAX + 1. glibc takes any
 * token whose character is a comma for the comma ("\,") and an escaped
 * zero for a digit ("\0" is not a back-reference); *escaped tells whether
 * the bound held an escape. */
static int regex_bound(const char **p, struct regex_token *t, bool *escaped)
{
	int n = -1;

	for (;;) {
		*t = regex_token_next(p);
		*escaped |= t->escaped;
		if (!t->c || t->c == ',' || (t->c == '}' && !t->escaped))
			return n;
		if (n == -2 || t->c < '0' || t->c > '9' || (t->escaped && t->c != '0'))
			n = -2;
		else if ((n = (n == -1 ? 0 : n * 10) + t->c - '0') > REGEX_DUP_MAX)
			n = REGEX_DUP_MAX + 1;
	}
}

/* The copies an interval makes at p ("{2}", "{2,}", "{,5}", "{2,5}"),
 * with *end at its '}' and *ret_min its lower bound; 0 if glibc reads no
 * valid interval there (regcomp() then fails). UINT_MAX and a reason in
 * *refused if the check does not take it: a bound above REGEX_DUP_MAX, or
 * an escape in it. Read token by token as glibc's parse_dup_op() does: a
 * fuzzer's "{1\,25544}" and "{\0,25544}" took 2 GB in regcomp() while a
 * character-wise reading here saw no interval in them. Escapes are refused
 * outright, so that only plain digits, which every reading agrees on, make
 * an interval's copies. */
static unsigned regex_interval(const char *p, const char **end, unsigned *ret_min,
			       const char **refused)
{
	struct regex_token t;
	bool escaped = false;
	int min, max;

	p++;
	min = regex_bound(&p, &t, &escaped);
	if (min == -1 && t.c == ',')
		min = 0; /* "{,5}" */
	if (min < 0)
		return 0;
	if (t.c == ',')
		max = regex_bound(&p, &t, &escaped); /* -1: "{2,}" */
	else
		max = min;
	if (max == -2 || t.c != '}' || t.escaped || (max != -1 && min > max))
		return 0;
	*end = p - 1;
	*ret_min = (unsigned)min;
	*refused = escaped ? "an escaped character in an interval"
		   : min > REGEX_DUP_MAX || max > REGEX_DUP_MAX ? "a bound above 255"
								: NULL;
	if (*refused)
		return UINT_MAX;
	/* glibc: {m} makes m copies, {m,} m and a starred one, {m,n} n */
	if (max == -1)
		max = min + 1;
	return max > min ? (unsigned)max : min > 0 ? (unsigned)min : 1;
}

/*
 * One pass over the pattern as glibc parses an ERE, counting for each atom
 * (a character, bracket expression, escape or group) its parts and how
 * deeply repetitions nest in it. An atom that matches the empty string
 * counts as repeated once already (twice if it can in two ways, as "(a?|)"
 * or "(a?|b?)" can), an anchor or a group that matches nothing but the
 * empty string ("()") is not repeated at all, and
 * a pattern with an anchor has few copies of atoms that may match nothing:
 * glibc's closures over repeated empty matches, and anchors' contexts along
 * them, are what grows fastest ("(){1,255}+", "(a?|b?){64,}",
 * "(a?\b){1,255}" and "\b(a?){,255}\b(b?){,255}\b" take minutes).
 */
bool stack_filter_regex_cheap(const char *pattern, char *why, size_t why_size)
{
	struct regex_level levels[REGEX_GROUPS_MAX + 1] = { { 0 } };
	size_t empty_copies = 0;
	bool anchors = false;
	unsigned depth = 0;

	for (const char *p = pattern; *p; p++) {
		struct regex_level *l = &levels[depth];
		size_t atom = 1, copies = 0;
		unsigned nest = 0, min = 1;
		const char *refused;
		bool empty = false;    /* the atom matches the empty string */
		bool anchored = false; /* it holds an anchor */

		switch (*p) {
		case '\\':
			if (p[1] >= '1' && p[1] <= '9')
				return regex_refuse(why, why_size, "a back-reference");
			/* GNU's word and buffer anchors match no character */
			empty = anchored = p[1] && strchr("bB<>`'", p[1]);
			if (p[1])
				p++;
			break;
		case '^':
		case '$':
			empty = anchored = true;
			break;
		case '[':
			p = regex_bracket_end(p);
			break;
		case '(':
			if (depth == REGEX_GROUPS_MAX)
				return regex_refuse(why, why_size, "more than 32 nested groups");
			levels[++depth] = (struct regex_level){ 0 };
			continue;
		case ')':
			if (!depth)
				break; /* an ordinary character in ERE */
			atom = l->parts + 1;
			nest = l->nest_max;
			l->empty_alts += !l->alt_solid;
			empty = l->empty_alts > 0;
			if (l->empty_alts > 1 && nest < 2)
				nest = 2;
			anchored = l->anchors || !l->wide; /* "()" repeats like an anchor */
			l = &levels[--depth];
			break;
		case '|':
			l->parts++;
			l->empty_alts += !l->alt_solid;
			l->alt_solid = 0;
			l->last = 0;
			l->nest = 0;
			l->last_empty = false;
			l->anchored = false;
			continue;
		case '*':
		case '?':
			copies = 1;
			min = 0;
			break;
		case '+':
			copies = 2;
			break;
		case '{':
			copies = regex_interval(p, &p, &min, &refused);
			if (copies == UINT_MAX)
				return regex_refuse(why, why_size, refused);
			break;
		}
		if (copies) { /* a repetition of the last atom */
			if (l->anchored)
				return regex_refuse(why, why_size,
						    "a repeated anchor or empty group");
			if (++l->nest > REGEX_NEST_MAX)
				return regex_refuse(why, why_size,
						    "repetitions nested more than 2 deep");
			l->parts += l->last * (copies - 1);
			if (!min || l->last_empty)
				empty_copies += l->last * copies;
			l->last *= copies;
			if (!min && !l->last_empty && l->alt_solid) {
				l->last_empty = true;
				l->alt_solid--;
			}
		} else { /* an atom or a group */
			l->parts += atom;
			l->last = atom;
			l->nest = empty && nest < 1 ? 1 : nest;
			l->last_empty = empty;
			l->alt_solid += !empty;
			l->anchored = anchored;
			l->anchors |= anchored;
			l->wide |= !anchored;
			anchors |= anchored;
		}
		if (l->nest > l->nest_max)
			l->nest_max = l->nest;
		if (l->parts > REGEX_PARTS_MAX)
			return regex_refuse(why, why_size, "it grows past 1024 parts");
		if (anchors && empty_copies > REGEX_EMPTY_MAX)
			return regex_refuse(why, why_size,
					    "an anchor and more than 64 copies of what may match "
					    "nothing");
	}
	return true;
}

static int compile(regex_t *re, bool *has, const char *pattern, const char *what, char *err,
		   size_t err_size)
{
	char msg[256];
	int r;

	*has = false;
	if (!pattern || !*pattern)
		return 0;
	if (!stack_filter_regex_cheap(pattern, msg, sizeof(msg))) {
		snprintf(err, err_size, "bad %s pattern '%s': %s", what, pattern, msg);
		return -EINVAL;
	}
	r = regcomp(re, pattern, STACK_FILTER_REGEX_FLAGS);
	if (r) {
		regerror(r, re, msg, sizeof(msg));
		snprintf(err, err_size, "bad %s pattern '%s': %s", what, pattern, msg);
		return r == REG_ESPACE ? -ENOMEM : -EINVAL;
	}
	*has = true;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int stack_filter_new(const struct stack_filter_spec *spec, struct stack_filter **ret, char *err,
		     size_t err_size)
{
	uint32_t mask = spec->state_mask & THREAD_STATE_ALL;
	struct stack_filter *f;
	int r;

	if (mask == THREAD_STATE_ALL)
		mask = 0;
	if (spec->folded && (spec->n_pids || mask)) {
		snprintf(err, err_size, "folded stacks do not record pids or thread states");
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->state_mask = mask;
	if (spec->comm && *spec->comm) {
		f->comm = strdup(spec->comm);
		f->comm_len = strlen(spec->comm);
	}
	if (spec->n_pids) {
		f->pids = malloc(spec->n_pids * sizeof(*f->pids));
		if (f->pids) {
			memcpy(f->pids, spec->pids, spec->n_pids * sizeof(*f->pids));
			qsort(f->pids, spec->n_pids, sizeof(*f->pids), cmp_u32);
			f->n_pids = spec->n_pids;
		}
	}
	if ((spec->comm && *spec->comm && !f->comm) || (spec->n_pids && !f->pids)) {
		stack_filter_free(f);
		return -ENOMEM;
	}
	r = compile(&f->grep, &f->has_grep, spec->grep, "grep", err, err_size);
	if (r == 0)
		r = compile(&f->exclude, &f->has_exclude, spec->exclude, "exclude", err, err_size);
	if (r < 0) {
		stack_filter_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

void stack_filter_free(struct stack_filter *f)
{
	if (!f)
		return;
	if (f->has_grep)
		regfree(&f->grep);
	if (f->has_exclude)
		regfree(&f->exclude);
	free(f->comm);
	free(f->pids);
	free(f);
}

/* The delimiters of the folded format ("-" between user and kernel, "--"
 * before a waker) and empty names are no frames. */
static bool is_frame(struct span s)
{
	return s.len && !(s.len == 1 && s.p[0] == '-') &&
	       !(s.len == 2 && s.p[0] == '-' && s.p[1] == '-');
}

static bool frame_matches_exactly(const regex_t *re, struct span s)
{
	char buf[1024], *big;
	bool hit;

	if (s.len < sizeof(buf)) {
		memcpy(buf, s.p, s.len);
		buf[s.len] = '\0';
		return !regexec(re, buf, 0, NULL, 0);
	}
	big = strndup(s.p, s.len); /* a frame name this long is rare */
	hit = big && !regexec(re, big, 0, NULL, 0);
	free(big);
	return hit;
}

/* A frame with a source line (frame.h) matches with or without it, so
 * '^do_command$' finds the function whether or not lines were recorded. */
static bool frame_matches(const regex_t *re, struct span s)
{
	struct span name = { s.p, frame_name_len(s.p, s.len) };

	if (!is_frame(s))
		return false;
	return frame_matches_exactly(re, name) ||
	       (name.len != s.len && frame_matches_exactly(re, s));
}

/* True if re matches a frame of the ';'-joined list. */
static bool any_frame(const regex_t *re, struct span list)
{
	const char *p = list.p, *end = list.p + list.len;

	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		struct span frame = { p, (size_t)((semi ? semi : end) - p) };

		if (frame_matches(re, frame))
			return true;
		if (!semi)
			break;
		p = semi + 1;
	}
	return false;
}

static bool stack_matches(const regex_t *re, struct span comm, const struct span *parts,
			  size_t n_parts)
{
	if (frame_matches(re, comm))
		return true;
	for (size_t i = 0; i < n_parts; i++)
		if (any_frame(re, parts[i]))
			return true;
	return false;
}

/* The one decision, for rows and folded lines alike: comm is the first
 * frame, parts hold the others. */
static bool keep(const struct stack_filter *f, struct span comm, uint32_t tgid, uint32_t state,
		 const struct span *parts, size_t n_parts)
{
	if (f->comm && (comm.len != f->comm_len || memcmp(comm.p, f->comm, comm.len)))
		return false;
	if (f->n_pids && (tgid == STACK_FILTER_UNKNOWN ||
			  !bsearch(&tgid, f->pids, f->n_pids, sizeof(*f->pids), cmp_u32)))
		return false;
	if (f->state_mask && (state >= THREAD_STATE_COUNT || !(f->state_mask & (1u << state))))
		return false;
	if (f->has_grep && !stack_matches(&f->grep, comm, parts, n_parts))
		return false;
	return !(f->has_exclude && stack_matches(&f->exclude, comm, parts, n_parts));
}

bool stack_filter_keep(const struct stack_filter *f, const struct stack_filter_sample *s)
{
	/* The frames of the row's folded line, both target parts included
	 * (a row holds only the parts its capture collected). */
	struct folded_line_row row = {
		.kind = s->kind,
		.state = s->state,
		.ustack = s->ustack,
		.kstack = s->kstack,
		.chain = s->chain,
		.want_user = true,
		.want_kernel = true,
	};
	struct folded_line_part line[FOLDED_LINE_MAX_PARTS];
	struct span parts[FOLDED_LINE_MAX_PARTS];
	size_t n_line = folded_line_parts(&row, line), n = 0;

	for (size_t i = 0; i < n_line; i++)
		if (!line[i].delimiter)
			parts[n++] = span_of(line[i].text);
	return keep(f, span_of(s->comm), s->tgid, s->state, parts, n);
}

bool stack_filter_keep_folded(const struct stack_filter *f, const char *stack, size_t len)
{
	const char *semi = memchr(stack, ';', len);
	struct span comm = { stack, semi ? (size_t)(semi - stack) : len };
	struct span rest = { semi ? semi + 1 : stack + len, semi ? len - comm.len - 1 : 0 };

	return keep(f, comm, STACK_FILTER_UNKNOWN, STACK_FILTER_UNKNOWN, &rest, 1);
}

/* Perl's \s, as flamegraph.pl (and render/flame.c) read a line. */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Cuts a count (\d+(\.\d*)?) with whitespace before it off the end of
 * p[0..*len); *len then ends before that whitespace. */
static bool cut_count(const char *p, size_t *len)
{
	size_t start = *len, i;

	while (start > 0 && !is_space(p[start - 1]))
		start--;
	if (start == 0 || start == *len || p[start] < '0' || p[start] > '9')
		return false;
	for (i = start; i < *len && p[i] >= '0' && p[i] <= '9'; i++)
		;
	if (i < *len && p[i] == '.')
		for (i++; i < *len && p[i] >= '0' && p[i] <= '9'; i++)
			;
	if (i != *len)
		return false;
	while (start > 0 && is_space(p[start - 1]))
		start--;
	*len = start;
	return true;
}

size_t stack_filter_folded(const struct stack_filter *f, char *text, size_t len)
{
	size_t out = 0, at = 0;

	while (at < len) {
		char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) + 1 : len, stack_len = end - at;
		bool drop = false;

		while (stack_len > 0 && is_space(text[at + stack_len - 1]))
			stack_len--;
		if (cut_count(text + at, &stack_len)) {
			cut_count(text + at, &stack_len); /* a 3-column line's first count */
			drop = stack_len && !stack_filter_keep_folded(f, text + at, stack_len);
		}
		if (drop) {
			if (nl)
				text[out++] = '\n';
		} else {
			memmove(text + out, text + at, end - at);
			out += end - at;
		}
		at = end;
	}
	return out;
}
