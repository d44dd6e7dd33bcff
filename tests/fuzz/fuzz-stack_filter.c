/*
 * fuzz-stack_filter: stack_filter_folded() on any folded text, with a fixed
 * set of filters (comm, grep, exclude and their mixes), as offcpuctl filters
 * folded files; and stack_filter_keep() on a row cut from the same bytes, as
 * capture and export filter rows. Properties checked (abort() if not): the
 * filtered text keeps every line break, and each of its lines is the input's
 * line at the same place, or empty (a dropped line); a filter that keeps
 * everything changes nothing.
 *
 * An input whose first line is "#re:PATTERN" also makes a filter of its
 * own with PATTERN as grep, as a request or offcpuctl's --grep would, and
 * filters the rest with it: a pattern that stack_filter_regex_cheap() lets
 * through but that regcomp() or regexec() takes long over (a timeout) or
 * much memory on is a bug. Build and run: scripts/fuzz.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "stack_filter.h"

static void fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-stack_filter: property violated: %s\n", what);
		abort();
	}
}

static const struct stack_filter_spec fuzz_specs[] = {
	{ .folded = true }, /* keeps everything */
	{ .comm = "app", .folded = true },
	{ .grep = "^do_", .folded = true },
	{ .exclude = "poll|futex", .folded = true },
	{ .grep = "^(schedule|io_schedule)$", .exclude = "^\\[softirq\\]$", .folded = true },
	{ .comm = "a", .grep = "[0-9]+x", .exclude = "^-?$", .folded = true },
	{ .grep = "é|\\.", .folded = true },
};

#define FUZZ_N_SPECS (sizeof(fuzz_specs) / sizeof(fuzz_specs[0]))

static struct stack_filter *fuzz_filters[FUZZ_N_SPECS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256];

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < FUZZ_N_SPECS; i++)
		fuzz_check(stack_filter_new(&fuzz_specs[i], &fuzz_filters[i], err, sizeof(err)) ==
				   0,
			   err);
	return 0;
}

/* out[0..out_len) against in[0..len): line by line, equal or empty. */
static void fuzz_compare(const char *in, size_t len, const char *out, size_t out_len,
			 bool keeps_all)
{
	size_t i = 0, o = 0;

	fuzz_check(out_len <= len, "output grew");
	if (keeps_all)
		fuzz_check(out_len == len && !memcmp(in, out, len), "an empty filter dropped");
	while (i < len) {
		const char *nl = memchr(in + i, '\n', len - i);
		size_t line = (nl ? (size_t)(nl - in) : len) - i;
		const char *onl = memchr(out + o, '\n', out_len - o);
		size_t oline = (onl ? (size_t)(onl - out) : out_len) - o;

		if (!nl) { /* the last line, unterminated: kept whole or gone */
			fuzz_check(o + oline == out_len && !onl, "text after the last line");
			fuzz_check(oline == 0 || (oline == line && !memcmp(in + i, out + o, line)),
				   "last line changed");
			return;
		}
		fuzz_check(onl != NULL, "a line break was lost");
		fuzz_check(oline == 0 || (oline == line && !memcmp(in + i, out + o, line)),
			   "a line changed");
		i += line + 1;
		o += oline + 1;
	}
	fuzz_check(o == out_len, "text after the last line");
}

/* A row of the bytes: NUL-separated comm, ustack, kstack, chain; the
 * first byte picks the kind. */
static void fuzz_row(const uint8_t *data, size_t size, char *buf)
{
	struct stack_filter_sample s = { .tgid = STACK_FILTER_UNKNOWN,
					 .state = STACK_FILTER_UNKNOWN };
	const char *parts[4] = { NULL };
	size_t n = 0, at = 1;

	if (!size)
		return;
	s.kind = data[0] % (PROTO_KIND_ONCPU + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	while (n < 4 && at <= size) {
		parts[n++] = buf + at;
		at += strlen(buf + at) + 1;
	}
	s.comm = parts[0];
	s.ustack = parts[1];
	s.kstack = parts[2];
	s.chain = parts[3];
	for (size_t i = 0; i < FUZZ_N_SPECS; i++) {
		bool keep = stack_filter_keep(fuzz_filters[i], &s);

		fuzz_check(i != 0 || keep, "an empty filter dropped a row");
	}
}

/* A "#re:PATTERN" line and the text after it. */
static void fuzz_pattern(const uint8_t *data, size_t size, char *buf)
{
	const char *nl = memchr(data, '\n', size);
	struct stack_filter_spec spec = { .folded = true };
	struct stack_filter *f;
	size_t n = nl ? (size_t)(nl - (const char *)data) : size, len, rest;
	char err[512];
	int r;

	memcpy(buf, data + 4, n - 4);
	buf[n - 4] = '\0';
	spec.grep = buf;
	r = stack_filter_new(&spec, &f, err, sizeof(err));
	fuzz_check(r == 0 || r == -EINVAL, "stack_filter_new() failed");
	if (r < 0)
		return;
	rest = nl ? size - n - 1 : 0;
	memcpy(buf, data + size - rest, rest);
	len = stack_filter_folded(f, buf, rest);
	fuzz_compare((const char *)data + size - rest, rest, buf, len, false);
	stack_filter_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);

	fuzz_check(buf != NULL, "out of memory");
	if (size >= 4 && !memcmp(data, "#re:", 4))
		fuzz_pattern(data, size, buf);
	for (size_t i = 0; i < FUZZ_N_SPECS; i++) {
		size_t len;

		memcpy(buf, data, size);
		len = stack_filter_folded(fuzz_filters[i], buf, size);
		fuzz_compare((const char *)data, size, buf, len, i == 0);
	}
	fuzz_row(data, size, buf);
	free(buf);
	return 0;
}
