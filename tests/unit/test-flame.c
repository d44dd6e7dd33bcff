/*
 * Unit test of render/flame.c and render/flame_speedscope.c: parsing edge
 * cases, the merged tree's exact shape and values, differential input, the
 * differential folded text, and the speedscope JSON. With a path argument,
 * also writes a speedscope file with awkward names there, for the schema
 * check (tests/integration/validate_speedscope.js).
 */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flame.h"

static struct flame *parse_opts(const char *text, const struct flame_parse_opts *opts)
{
	struct flame *f = NULL;

	CHECK(flame_new(opts, &f) == 0);
	CHECK(flame_parse(f, text, strlen(text)) == 0);
	return f;
}

static struct flame *parse(const char *text)
{
	return parse_opts(text, NULL);
}

enum { DUMP_DELTA = 1, DUMP_KERNEL = 2, DUMP_SELF = 4 };

static void dump_node(FILE *out, const struct flame_node *n, int flags)
{
	if (n->depth)
		fprintf(out, "%s%s %g", n->name, (flags & DUMP_KERNEL) && n->kernel ? "*" : "",
			n->value);
	else
		fprintf(out, "%g", n->value);
	if (flags & DUMP_SELF)
		fprintf(out, "/%g", flame_node_self(n));
	if (flags & DUMP_DELTA)
		fprintf(out, ":%g", n->delta);
	if (!n->n_children)
		return;
	fputc('{', out);
	for (size_t i = 0; i < n->n_children; i++) {
		if (i)
			fputc(',', out);
		dump_node(out, &n->children[i], flags);
	}
	fputc('}', out);
}

/* The tree as text: "total{name value{...},...}"; NULL if no tree. */
static char *dump(struct flame *f, int flags)
{
	const struct flame_node *root = flame_root(f);
	char *s = NULL;
	size_t len;
	FILE *out;

	if (!root)
		return NULL;
	out = open_memstream(&s, &len);
	if (!out)
		abort();
	dump_node(out, root, flags);
	fclose(out);
	return s;
}

/* Parse options; parentheses keep their commas inside a macro argument. */
#define OPTS(...) (&(struct flame_parse_opts){ __VA_ARGS__ })

/* Parses text, dumps the tree, frees both; checks against want. */
#define CHECK_TREE(text, opts, flags, want)                                                        \
	do {                                                                                       \
		struct flame *f_ = parse_opts(text, opts);                                         \
		char *d_ = dump(f_, flags);                                                        \
		CHECK_STR(d_, want);                                                               \
		free(d_);                                                                          \
		flame_free(f_);                                                                    \
	} while (0)

static void test_basic(void)
{
	struct flame *f = parse("a;b 3\na;c 2\nb 1\n");
	const struct flame_node *r = flame_root(f);
	const struct flame_parse_stats *st = flame_stats(f);

	CHECK(r && r->value == 6 && flame_node_self(r) == 0 && r->depth == 0 &&
	      !strcmp(r->name, ""));
	CHECK(r && r->n_children == 2);
	if (r && r->n_children == 2) {
		const struct flame_node *a = &r->children[0];

		CHECK_STR(a->name, "a");
		CHECK(a->value == 5 && flame_node_self(a) == 0 && a->depth == 1 &&
		      a->n_children == 2);
		CHECK_STR(a->children[0].name, "b");
		CHECK(a->children[0].value == 3 && flame_node_self(&a->children[0]) == 3);
		CHECK(a->children[0].depth == 2 && a->children[0].n_children == 0);
		CHECK(a->children[0].children == NULL);
		CHECK_STR(a->children[1].name, "c");
		CHECK_STR(r->children[1].name, "b");
		CHECK(r->children[1].value == 1 && r->children[1].delta == 0);
	}
	CHECK(st->lines == 3 && st->invalid == 0 && st->first_invalid == 0);
	CHECK(!st->differential && st->total == 6 && st->total_other == 0);
	CHECK(flame_root(f) == r); /* merged once */
	flame_free(f);
	flame_free(NULL);

	/* Self where a stack ends inside another; duplicates summed; a
	 * frame that is a prefix of a sibling's name. */
	CHECK_TREE("a 1\na;b 2\na 4\nab;c 1\na;b 1\n", NULL, DUMP_SELF,
		   "9/0{a 8/5{b 3/3},ab 1/0{c 1/1}}");
}

static void test_lines(void)
{
	struct flame *f;
	const struct flame_parse_stats *st;

	/* Spaces in names; one whitespace character before the count goes,
	 * more stay in the name (flamegraph.pl's \s+?); trailing whitespace
	 * is dropped; decimals; "3." as flamegraph.pl reads it. */
	CHECK_TREE("main;do work;read file 5\n", NULL, 0, "5{main 5{do work 5{read file 5}}}");
	CHECK_TREE("a;b   4   \na;b\t1\n", NULL, 0, "5{a 5{b   4,b 1}}");
	CHECK_TREE("main;write0;  3\nmain;write0 1\n", NULL, 0, "4{main 4{write0 4{  3}}}");
	CHECK_TREE("a 3.5\na 1.25\nb 3.\n", NULL, 0, "7.75{a 4.75,b 3}");
	CHECK_TREE("a 0.1\na 0.2\n", NULL, 0, "0.3{a 0.3}");

	/* CRLF, empty and blank lines, no final newline. */
	f = parse("a;b 2\r\n\r\n\n   \na 1\r\n\nc 1");
	st = flame_stats(f);
	CHECK(st->lines == 3 && st->invalid == 0);
	{
		char *d = dump(f, 0);

		CHECK_STR(d, "4{a 3{b 2},c 1}");
		free(d);
	}
	flame_free(f);

	/* Invalid lines are counted and skipped; the first one's number
	 * (empty lines counted) is kept. */
	f = parse("a;b 1\n"
		  "\n"
		  "garbage\n"
		  "c -1\n"
		  "d 1e3\n"
		  "e inf\n"
		  "  5\n"
		  "5\n"
		  "f 0x10\n"
		  "g 2\n"
		  "h NaN\n"
		  "i 1.5.2\n"
		  ";;; 4\n"
		  "j .5\n");
	/* "  5" is a frame named " "; ";;; 4" has no frame: the root's own. */
	st = flame_stats(f);
	CHECK_MSG(st->lines == 13, "%llu", (unsigned long long)st->lines);
	CHECK_MSG(st->invalid == 9, "%llu", (unsigned long long)st->invalid);
	CHECK(st->first_invalid == 3);
	{
		char *d = dump(f, 0);

		CHECK_STR(d, "12{  5,a 1{b 1},g 2}");
		free(d);
	}
	flame_free(f);

	/* Nothing valid: no tree. */
	f = parse("\n\nnope\n");
	CHECK(flame_root(f) == NULL);
	CHECK(flame_stats(f)->lines == 1 && flame_stats(f)->invalid == 1);
	CHECK(flame_stats(f)->first_invalid == 3);
	flame_free(f);
	f = parse("");
	CHECK(flame_root(f) == NULL && flame_stats(f)->lines == 0);
	flame_free(f);

	/* A zero count is a valid line that adds nothing. */
	f = parse("a 0\nb;c 2\nb;d 0\n");
	CHECK(flame_stats(f)->lines == 3 && flame_stats(f)->invalid == 0);
	{
		char *d = dump(f, 0);

		CHECK_STR(d, "2{b 2{c 2}}");
		free(d);
	}
	flame_free(f);
	f = parse("a 0\n");
	CHECK(flame_root(f) && flame_root(f)->value == 0 && flame_root(f)->n_children == 0);
	flame_free(f);

	/* Empty frames: kept inside a stack, dropped at its end (as Perl's
	 * split does). */
	CHECK_TREE("a;;b 1\na;b; 2\n", NULL, 0, "3{a 3{ 1{b 1},b 2}}");

	/* Several calls: line numbers go on; each call's end ends a line. */
	CHECK(flame_new(NULL, &f) == 0);
	CHECK(flame_parse(f, "a 1\nbad\n", 8) == 0);
	CHECK(flame_parse(f, "b 2\nworse", 9) == 0);
	CHECK(flame_parse(f, "a 3", 3) == 0);
	st = flame_stats(f);
	CHECK(st->lines == 5 && st->invalid == 2 && st->first_invalid == 2);
	CHECK(st->total == 6); /* running total before the merge */
	{
		char *d = dump(f, 0);

		CHECK_STR(d, "6{a 4,b 2}");
		free(d);
	}
	flame_free(f);

	/* Only the given length is read. */
	CHECK(flame_new(NULL, &f) == 0);
	CHECK(flame_parse(f, "a 12", 3) == 0);
	CHECK(flame_root(f) && flame_root(f)->value == 1);
	flame_free(f);
}

static void test_columns(void)
{
	struct flame *f;
	const struct flame_parse_stats *st;

	/* 2- and 3-column lines mix, as flamegraph.pl reads them: a line of
	 * one count is unchanged (OLD = NEW), before or after the first
	 * 3-column one. */
	f = parse("bad\na 1 2\nb 3\nc 4 5\n");
	st = flame_stats(f);
	CHECK(st->differential && st->lines == 4 && st->invalid == 1 && st->first_invalid == 1);
	CHECK(st->total == 10 && st->total_other == 8);
	flame_free(f);

	f = parse("a 1\nb 1 2\nc 3\n");
	st = flame_stats(f);
	CHECK(st->differential && st->invalid == 0);
	CHECK(st->total == 6 && st->total_other == 5);
	{
		char *d = dump(f, DUMP_DELTA);

		CHECK_STR(d, "6:1{a 1:0,b 2:1,c 3:0}");
		free(d);
	}
	{
		/* Only b's path had 3 columns: flamegraph.pl colours a and c
		 * by the palette. */
		const struct flame_node *r = flame_root(f);

		CHECK(r->changed && !r->children[0].changed && r->children[1].changed &&
		      !r->children[2].changed);
	}
	flame_free(f);

	/* A frame name that ends in a number would look like a column. */
	f = parse("x;y 1 7\n");
	CHECK(flame_stats(f)->differential);
	flame_free(f);
}

static void test_order(void)
{
	/* strcmp order, as flamegraph.pl sorts ("A b" < "B" < "a" < "z"). */
	CHECK_TREE("z 1\nB 1\na 1\nA b 1\na;y 1\na;x 1\n", NULL, 0,
		   "6{A b 1,B 1,a 3{x 1,y 1},z 1}");

	/* Flame chart: input order, merged only with the previous sibling. */
	CHECK_TREE("a;b 1\na;c 1\na;b 1\nb 1\na 1\na;c 2\n", OPTS(.flamechart = true), 0,
		   "7{a 3{b 1,c 1,b 1},b 1,a 3{c 2}}");
	/* ... a zero or invalid line in between does not break the run. */
	CHECK_TREE("a;b 1\nc 0\nbad\na;b 2\n", OPTS(.flamechart = true), 0, "3{a 3{b 3}}");
}

static void test_options(void)
{
	/* strip_hex: addresses merge; "0x" without digits stays. */
	CHECK_TREE("a;[unknown] 0x7fff1234;bar 1\na;[unknown] 0x7FFF9999;bar 2\n0xg;0x 1\n",
		   OPTS(.strip_hex = true), 0, "4{0xg 1{0x 1},a 3{[unknown] 0x... 3{bar 3}}}");
	CHECK_TREE("a;f 0x1 1\na;f 0x2 1\n", NULL, 0, "2{a 2{f 0x1 1,f 0x2 1}}");
	/* ... also in a flame chart, where only the previous sibling merges. */
	CHECK_TREE("a;f 0x1;g 1\na;f 0x2;g 1\na;h 1\na;f 0x3 1\n",
		   OPTS(.strip_hex = true, .flamechart = true), 0,
		   "4{a 4{f 0x... 2{g 2},h 1,f 0x... 1}}");

	/* leaf_root: each stack reversed before merging. */
	CHECK_TREE("a;b;c 1\nd;c 2\nc 4\n", OPTS(.leaf_root = true), 0, "7{c 7{b 1{a 1},d 2}}");

	/* Kernel frames: after "-" (not "-" itself), or perf's "_[k]". */
	CHECK_TREE("app;main;-;sys_read;vfs_read 1\napp;foo_[k];bar 1\n-;x 1\n", NULL, DUMP_KERNEL,
		   "3{- 1{x* 1},app 2{foo_[k]* 1{bar 1},main 1{- 1{sys_read* 1{vfs_read* 1}}}}}");
	/* ... and with the leaf first, from the same line's "-". */
	CHECK_TREE("app;main;-;sys_read 1\napp;-;sys_read 1\napp;sys_read 1\n",
		   OPTS(.leaf_root = true), DUMP_KERNEL,
		   "3{sys_read* 3{- 2{app 1,main 1{app 1}},app 1}}");
}

static void test_differential(void)
{
	/* OLD: a;b 1, a;c 3, d 0 (total 4). NEW: a;b 2, a;c 0, d 4 (6). */
	static const char text[] = "a;b 1 2\na;c 3 0\nd 0 4\n";
	struct flame *f;
	const struct flame_node *r;
	const struct flame_parse_stats *st;

	/* Widths from NEW; b grew, c shrank (and vanished: width 0), d is new. */
	CHECK_TREE(text, NULL, DUMP_DELTA, "6:2{a 2:-2{b 2:1,c 0:-3},d 4:4}");
	f = parse(text);
	r = flame_root(f);
	st = flame_stats(f);
	CHECK(r && st->differential && st->total == 6 && st->total_other == 4);
	CHECK(r && flame_node_self(&r->children[0].children[0]) == 2);
	flame_free(f);

	/* normalize: OLD scaled by 6/4. */
	CHECK_TREE(text, OPTS(.normalize = true), DUMP_DELTA,
		   "6:0{a 2:-4{b 2:0.5,c 0:-4.5},d 4:4}");

	/* widths_from_old: the vanished path keeps its width; delta still
	 * NEW - OLD. */
	f = parse_opts(text, OPTS(.widths_from_old = true));
	{
		char *d = dump(f, DUMP_DELTA | DUMP_SELF);

		CHECK_STR(d, "4/0:2{a 4/0:-2{b 1/1:1,c 3/3:-3},d 0/0:4}");
		free(d);
	}
	st = flame_stats(f);
	CHECK(st->total == 4 && st->total_other == 6);
	flame_free(f);
	CHECK_TREE(text, OPTS(.widths_from_old = true, .normalize = true), DUMP_DELTA,
		   "4:0{a 4:-4{b 1:0.5,c 3:-4.5},d 0:4}");

	/* negate: the sign flips. */
	CHECK_TREE(text, OPTS(.negate = true), DUMP_DELTA, "6:-2{a 2:2{b 2:-1,c 0:3},d 4:-4}");

	/* Options for 3 columns do nothing to 2 columns. */
	CHECK_TREE("a 1\n", OPTS(.normalize = true, .negate = true), DUMP_DELTA, "1:0{a 1:0}");
}

static void check_diff(const char *old, const char *new, bool normalize, bool strip_hex,
		       const char *want, int line)
{
	struct flame_parse_stats so, sn;
	char *t = flame_diff_folded(old, strlen(old), new, strlen(new), normalize, strip_hex, &so,
				    &sn);

	CHECK_AT(__FILE__, line, t && !strcmp(t, want), "got \"%s\"", t ? t : "(null)");
	free(t);
}

static void test_diff_folded(void)
{
	struct flame_parse_stats so, sn;
	char *t;

	check_diff("a;b 10\na;c 5\n", "a;b 20\nd 10\n", false, false,
		   "a;b 10 20\na;c 5 0\nd 0 10\n", __LINE__);
	check_diff("a;b 10\na;c 5\n", "a;b 20\nd 10\n", true, false,
		   "a;b 20 20\na;c 10 0\nd 0 10\n", __LINE__);
	/* Duplicates summed; normalized counts truncated as difffolded.pl -n
	 * does: int(OLD * total NEW / total OLD), an integer even where the
	 * input has decimals. */
	check_diff("x 1\ny 1\ny 1\n", "x 1\n", true, false, "x 0 1\ny 0 0\n", __LINE__);
	check_diff("x 5\ny 7\n", "x 3\ny 3\nz 1\n", true, false, "x 2 3\ny 4 3\nz 0 1\n", __LINE__);
	/* Decimals: up to 6 of them, trailing zeros dropped. */
	check_diff("x 1.5\ny 1.5\n", "x 1\n", true, false, "x 0 1\ny 0 0\n", __LINE__);
	check_diff("x 1.5\ny 1.25\n", "x 2\n", false, false, "x 1.5 2\ny 1.25 0\n", __LINE__);
	check_diff("x 1.5\n", "x 1\ny 2\n", true, false, "x 3 1\ny 0 2\n", __LINE__);
	check_diff("x 1\n", "x 3\ny 0.5\n", true, false, "x 3 3\ny 0 0.5\n", __LINE__);
	check_diff("x 3\n", "x 1\n", true, false, "x 1 1\n", __LINE__);
	check_diff("x 1\n", "x 0.000001\n", false, false, "x 1 0.000001\n", __LINE__);
	/* Whole stacks in strcmp order (' ' < ';'); strip_hex merges. */
	check_diff("a;x 1\na b;x 2\n", "", false, false, "a b;x 2 0\na;x 1 0\n", __LINE__);
	check_diff("f 0x1a;g 1\nf 0x2b;g 2\n", "f 0x3c;g 4\n", false, true, "f 0x...;g 3 4\n",
		   __LINE__);
	check_diff("", "", true, false, "", __LINE__);

	/* Invalid lines counted per input; a line of 3 columns is a stack
	 * that ends in a number, as difffolded.pl reads it. */
	t = flame_diff_folded("a 1\nbad\n", 8, "a 1 2\r\n\nb 2", 11, false, false, &so, &sn);
	CHECK_STR(t, "a 1 0\na 1 0 2\nb 0 2\n");
	free(t);
	CHECK(so.lines == 2 && so.invalid == 1 && so.first_invalid == 2 && so.total == 1);
	CHECK(sn.lines == 2 && sn.invalid == 0 && sn.total == 4);
	t = flame_diff_folded("a 1\n", 4, "a 2\n", 4, false, false, NULL, NULL);
	CHECK_STR(t, "a 1 2\n");
	free(t);

	/* The output reads back as the same differential. */
	t = flame_diff_folded("a;b 1\na;c 3\n", 12, "a;b 2\nd 4\n", 10, false, false, NULL, NULL);
	CHECK_STR(t, "a;b 1 2\na;c 3 0\nd 0 4\n");
	if (t)
		CHECK_TREE(t, NULL, DUMP_DELTA, "6:2{a 2:-2{b 2:1,c 0:-3},d 4:4}");
	free(t);
}

/* Minimal JSON syntax check: one value, strings valid UTF-8 without raw
 * control characters. Returns the end of the value or NULL. */
static const char *json_value(const char *s);

static const char *json_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

static const char *json_string(const char *s)
{
	const unsigned char *u = (const unsigned char *)s + 1;

	if (*s != '"')
		return NULL;
	while (*u != '"') {
		if (*u < 0x20)
			return NULL;
		if (*u == '\\') {
			u++;
			if (*u == 'u') {
				for (int i = 1; i <= 4; i++) {
					if (!strchr("0123456789abcdefABCDEF", u[i]) || !u[i])
						return NULL;
				}
				u += 5;
			} else if (*u && strchr("\"\\/bfnrt", *u)) {
				u++;
			} else {
				return NULL;
			}
		} else if (*u < 0x80) {
			u++;
		} else {
			int n = *u >= 0xf0 ? 3 : *u >= 0xe0 ? 2 : *u >= 0xc2 ? 1 : -1;

			if (n < 0 || *u > 0xf4)
				return NULL;
			for (int i = 1; i <= n; i++) {
				if ((u[i] & 0xc0) != 0x80)
					return NULL;
			}
			if ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] >= 0xa0) ||
			    (u[0] == 0xf0 && u[1] < 0x90) || (u[0] == 0xf4 && u[1] >= 0x90))
				return NULL;
			u += n + 1;
		}
	}
	return (const char *)u + 1;
}

static const char *json_members(const char *s, char close, bool object)
{
	s = json_ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (object) {
			s = json_string(json_ws(s));
			if (!s)
				return NULL;
			s = json_ws(s);
			if (*s++ != ':')
				return NULL;
		}
		s = json_value(s);
		if (!s)
			return NULL;
		s = json_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *s)
{
	char *end;

	s = json_ws(s);
	if (*s == '{')
		return json_members(s, '}', true);
	if (*s == '[')
		return json_members(s, ']', false);
	if (*s == '"')
		return json_string(s);
	if (*s == '-' || (*s >= '0' && *s <= '9')) {
		if (s[*s == '-'] == '0' && s[(*s == '-') + 1] >= '0' && s[(*s == '-') + 1] <= '9')
			return NULL; /* leading zero */
		strtod(s, &end);
		return end > s ? end : NULL;
	}
	if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4))
		return s + 4;
	if (!strncmp(s, "false", 5))
		return s + 5;
	return NULL;
}

static bool json_valid(const char *s)
{
	s = s ? json_value(s) : NULL;
	return s && *json_ws(s) == '\0';
}

static char *speedscope_text(struct flame *f, const char *name, const char *unit, int *ret)
{
	char *s = NULL;
	size_t len;
	FILE *out = open_memstream(&s, &len);

	if (!out)
		abort();
	*ret = flame_speedscope(f, name, unit, out);
	fclose(out);
	return s;
}

static void test_speedscope(void)
{
	struct flame *f;
	char *s, all[300], *text;
	size_t n = 0;
	int r;

	f = parse("a;b 3\na 1\nc;d 2\nx;x 1\n");
	s = speedscope_text(f, "test", "us", &r);
	CHECK(r == 0);
	CHECK_STR(s, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		     "\"profiles\":[{\"type\":\"sampled\",\"name\":\"test\","
		     "\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":7,"
		     "\"samples\":[[0],[0,1],[2,3],[4,4]],\"weights\":[1,3,2,1]}],"
		     "\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\"},"
		     "{\"name\":\"c\"},{\"name\":\"d\"},{\"name\":\"x\"}]},"
		     "\"name\":\"test\",\"activeProfileIndex\":0,\"exporter\":\"offcpud\"}\n");
	CHECK(json_valid(s));
	free(s);
	/* Units: offcpud's names mapped, the unknown ones "none". */
	s = speedscope_text(f, NULL, "ns", &r);
	CHECK(r == 0 && s && strstr(s, "\"unit\":\"nanoseconds\"") && strstr(s, "\"name\":\"\""));
	free(s);
	s = speedscope_text(f, "p", "samples", &r);
	CHECK(r == 0 && s && strstr(s, "\"unit\":\"none\""));
	free(s);
	s = speedscope_text(f, "p", NULL, &r);
	CHECK(r == 0 && s && strstr(s, "\"unit\":\"none\""));
	free(s);
	flame_free(f);

	/* Fractions in the fewest digits that read back the same. */
	f = parse("a 0.1\na 0.2\nb 0.25\n");
	s = speedscope_text(f, "d", "s", &r);
	CHECK(r == 0 && s && strstr(s, "\"weights\":[0.30000000000000004,0.25]") &&
	      strstr(s, "\"endValue\":0.55,") && strstr(s, "\"seconds\""));
	free(s);
	flame_free(f);

	/* Decimal weights; differential input weighs by the width column. */
	f = parse("a 0.5\nb 2.25\n");
	s = speedscope_text(f, "d", "ms", &r);
	CHECK(r == 0 && s && strstr(s, "\"endValue\":2.75,") && strstr(s, "[0.5,2.25]") &&
	      strstr(s, "milliseconds"));
	free(s);
	flame_free(f);
	f = parse_opts("a 5 1\nb 0 2\n", OPTS(.widths_from_old = true));
	s = speedscope_text(f, "d", "us", &r);
	CHECK(r == 0 && s && strstr(s, "\"endValue\":5,") && strstr(s, "\"samples\":[[0]]") &&
	      strstr(s, "\"weights\":[5]"));
	free(s);
	flame_free(f);

	/* Escapes; bytes that are not UTF-8 become U+FFFD, valid ones stay. */
	f = parse("q\"b\\s\x01\x1f\t\r\xc3\xa9\xff\xe2\x82 1\n\xed\xa0\x80;\xf0\x9f\x94\xa5 1\n");
	s = speedscope_text(f, "n\nm\"", "us", &r);
	CHECK(r == 0);
	CHECK(s && strstr(s, "{\"name\":\"q\\\"b\\\\s\\u0001\\u001f\\t\\u000d\xc3\xa9"
			     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}"));
	CHECK(s && strstr(s, "{\"name\":\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}"));
	CHECK(s && strstr(s, "{\"name\":\"\xf0\x9f\x94\xa5\"}"));
	CHECK(s && strstr(s, "\"name\":\"n\\nm\\\"\""));
	CHECK(json_valid(s));
	free(s);
	flame_free(f);

	/* Every byte but '\n', ';' and NUL in one name: still valid JSON. */
	for (int c = 1; c < 256; c++) {
		if (c != '\n' && c != ';')
			all[n++] = (char)c;
	}
	all[n] = '\0';
	if (asprintf(&text, "a;%s 1\n", all) < 0)
		abort();
	f = parse(text);
	s = speedscope_text(f, all, "us", &r);
	CHECK(r == 0 && json_valid(s));
	free(s);
	free(text);
	flame_free(f);

	/* No valid input: an empty profile, still valid. */
	f = parse("bad\n");
	s = speedscope_text(f, "e", "us", &r);
	CHECK(r == 0 && json_valid(s) && strstr(s, "\"samples\":[],\"weights\":[]") &&
	      strstr(s, "\"frames\":[]"));
	free(s);
	flame_free(f);
}

/* Random stacks over a small alphabet: a tree of many nodes, checked
 * against what any merge must give. */
static uint64_t rng = 88172645463325252ULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* flamegraph.pl's sibling order: names as if followed by ';'. */
static int frame_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned x = *a ? (unsigned char)*a : ';', y = *b ? (unsigned char)*b : ';';

		if (x != y)
			return x < y ? -1 : 1;
		if (!*a)
			return 0;
	}
}

static size_t count_nodes(const struct flame_node *n, double *ret_self, int *ret_bad)
{
	size_t c = 1;
	double sum = flame_node_self(n);

	*ret_self += flame_node_self(n);
	for (size_t i = 0; i < n->n_children; i++) {
		const struct flame_node *k = &n->children[i];

		if (k->depth != n->depth + 1 ||
		    (i && frame_cmp(n->children[i - 1].name, k->name) >= 0))
			(*ret_bad)++;
		c += count_nodes(k, ret_self, ret_bad);
		sum += k->value;
	}
	if (sum != n->value)
		(*ret_bad)++;
	return c;
}

/* The frames of line (without the count), reversed. */
static char *reverse_stack(const char *line)
{
	size_t len = (size_t)(strrchr(line, ' ') - line);
	char *r = malloc(len + 1);
	size_t at = 0;

	if (!r)
		abort();
	for (size_t end = len; end > 0;) {
		size_t start = end;

		while (start > 0 && line[start - 1] != ';')
			start--;
		memcpy(r + at, line + start, end - start);
		at += end - start;
		if (start > 0)
			r[at++] = ';';
		end = start ? start - 1 : 0;
	}
	r[at] = '\0';
	return r;
}

static void test_random(void)
{
	enum { LINES = 5000 };
	static const char *const names[] = { "f0", "f1", "f2", "f 3x", "f4", "-", "sched_[k]" };
	char *lines[LINES], *prefixes[LINES * 12], *text, *sorted, *reversed, *d1, *d2;
	size_t n_prefixes = 0, len = 0, unique = 0, nodes;
	double sum = 0, self = 0;
	struct flame *f;
	int bad = 0;
	FILE *out;

	for (int i = 0; i < LINES; i++) {
		char stack[256] = "";
		unsigned depth = 1 + rnd(12), count = rnd(10);

		for (unsigned d = 0; d < depth; d++) {
			if (d)
				strcat(stack, ";");
			strcat(stack, names[rnd(d < 2 ? 2 : 7)]);
			if (count)
				prefixes[n_prefixes++] = strdup(stack);
		}
		if (asprintf(&lines[i], "%s %u\n", stack, count) < 0)
			abort();
		sum += count;
	}
	qsort(prefixes, n_prefixes, sizeof(*prefixes), cmp_line);
	for (size_t i = 0; i < n_prefixes; i++)
		unique += !i || strcmp(prefixes[i], prefixes[i - 1]);

	/* In input order, then sorted, then in chunks: the same tree. */
	out = open_memstream(&text, &len);
	for (int i = 0; i < LINES; i++)
		fputs(lines[i], out);
	fclose(out);
	f = parse(text);
	CHECK(flame_stats(f)->lines == LINES && flame_stats(f)->invalid == 0);
	nodes = count_nodes(flame_root(f), &self, &bad);
	CHECK_MSG(nodes == unique + 1, "%zu nodes, %zu distinct prefixes", nodes, unique);
	CHECK(bad == 0 && self == sum && flame_root(f)->value == sum);
	d1 = dump(f, DUMP_KERNEL | DUMP_SELF);
	flame_free(f);

	qsort(lines, LINES, sizeof(*lines), cmp_line);
	out = open_memstream(&sorted, &len);
	for (int i = 0; i < LINES; i++)
		fputs(lines[i], out);
	fclose(out);
	f = parse(sorted);
	d2 = dump(f, DUMP_KERNEL | DUMP_SELF);
	CHECK(d1 && d2 && !strcmp(d1, d2));
	free(d2);
	flame_free(f);

	CHECK(flame_new(NULL, &f) == 0);
	for (size_t at = 0, n = strlen(text); at < n;) {
		size_t take = 1 + rnd(300);
		const char *nl;

		if (at + take > n)
			take = n - at;
		nl = memchr(text + at + take - 1, '\n', n - at - take + 1);
		take = (size_t)(nl - text) + 1 - at;
		CHECK(flame_parse(f, text + at, take) == 0);
		at += take;
	}
	d2 = dump(f, DUMP_KERNEL | DUMP_SELF);
	CHECK(d1 && d2 && !strcmp(d1, d2));
	free(d2);
	flame_free(f);
	free(d1);

	/* leaf_root is the tree of the reversed stacks (kernel flags aside). */
	out = open_memstream(&reversed, &len);
	for (int i = 0; i < LINES; i++) {
		char *r = reverse_stack(lines[i]);

		fprintf(out, "%s%s", r, strrchr(lines[i], ' '));
		free(r);
	}
	fclose(out);
	f = parse(reversed);
	d1 = dump(f, DUMP_SELF);
	flame_free(f);
	f = parse_opts(sorted, OPTS(.leaf_root = true));
	d2 = dump(f, DUMP_SELF);
	CHECK(d1 && d2 && !strcmp(d1, d2));
	free(d1);
	free(d2);
	flame_free(f);

	/* A flame chart of sorted input is the flame graph. */
	f = parse(sorted);
	d1 = dump(f, DUMP_SELF);
	flame_free(f);
	f = parse_opts(sorted, OPTS(.flamechart = true));
	d2 = dump(f, DUMP_SELF);
	CHECK(d1 && d2 && !strcmp(d1, d2));
	free(d1);
	free(d2);
	flame_free(f);

	free(text);
	free(sorted);
	free(reversed);
	for (int i = 0; i < LINES; i++)
		free(lines[i]);
	for (size_t i = 0; i < n_prefixes; i++)
		free(prefixes[i]);
}

/* Enough nodes for the big tables (mapped, grown by mremap) and their
 * growth from small ones; 3 columns for the OLD array too. */
static void test_big(void)
{
	enum { LINES = 30000, DEPTH = 8 };
	size_t len = 0, nodes;
	double self = 0;
	struct flame *f;
	char *text;
	int bad = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		abort();
	for (int i = 0; i < LINES; i++) {
		fputs("root", out);
		for (int d = 0; d < DEPTH; d++)
			fprintf(out, ";frame_%d_%d", d, i);
		fprintf(out, " %d %d\n", i % 3, 1 + i % 2);
	}
	fclose(out);
	f = parse_opts(text, OPTS(.normalize = true));
	nodes = count_nodes(flame_root(f), &self, &bad);
	CHECK(nodes == 2 + (size_t)LINES * DEPTH && bad == 0);
	CHECK(flame_stats(f)->total == LINES / 2 * 3 && flame_stats(f)->total_other == LINES);
	CHECK(flame_root(f)->delta == 0); /* normalized */
	flame_free(f);
	free(text);

	/* Speedscope of many frames (their table grows) and of a name longer
	 * than the output buffer; a write error is reported. */
	out = open_memstream(&text, &len);
	if (!out)
		abort();
	for (int i = 0; i < 3000; i++)
		fprintf(out, "a;b%d;c%d %d\n", i % 700, i, 1 + i % 5);
	fputs("long;", out);
	for (int i = 0; i < 100000; i++)
		fputc('a' + i % 26, out);
	fputs(" 1\n", out);
	fclose(out);
	f = parse(text);
	free(text);
	{
		int r;
		char *js = speedscope_text(f, "big", "us", &r);
		FILE *full = fopen("/dev/full", "w");

		CHECK(r == 0 && json_valid(js) && strlen(js) > 100000);
		free(js);
		if (full) {
			CHECK(flame_speedscope(f, "big", "us", full) == -ENOSPC);
			fclose(full);
		}
	}
	flame_free(f);
}

/* For the schema check: awkward names, decimals, a deep stack. */
static int write_sample(const char *path)
{
	struct flame *f;
	FILE *out;
	char *text;
	size_t len;
	int r;

	out = open_memstream(&text, &len);
	if (!out)
		return -ENOMEM;
	fputs("app;main;do \"work\";-;sys_read\\x 10\n"
	      "app;main;\xff\xfe bad utf-8;\xc3\xa9t\xc3\xa9 2.5\n"
	      "app;\x01\x7f;\xf0\x9f\x94\xa5 1\n"
	      "other 3\n",
	      out);
	for (int i = 0; i < 300; i++)
		fprintf(out, "deep%s", i < 299 ? ";" : " 1\n");
	fclose(out);
	f = parse(text);
	out = fopen(path, "w");
	if (!out) {
		r = -errno;
	} else {
		r = flame_speedscope(f, "sample \"profile\"", "us", out);
		if (fclose(out) == EOF && r >= 0)
			r = -errno;
	}
	free(text);
	flame_free(f);
	return r;
}

int main(int argc, char **argv)
{
	test_basic();
	test_lines();
	test_columns();
	test_order();
	test_options();
	test_differential();
	test_diff_folded();
	test_speedscope();
	test_random();
	test_big();
	if (argc > 1 && write_sample(argv[1]) < 0) {
		fprintf(stderr, "writing %s failed\n", argv[1]);
		check_failures++;
	}
	return CHECK_DONE();
}
