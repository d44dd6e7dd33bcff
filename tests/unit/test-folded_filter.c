/*
 * Unit test of the folded line layout's two readers agreeing: for a row of
 * every kind and state, the frames stack_filter_keep() matches a grep against
 * are exactly the frames of the line daemon/profile/folded.c writes for that row
 * (comm, stacks, pseudo-frames such as "[queued]", the waker part), no more,
 * no fewer. A layout written twice drifts; this catches it.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "folded.h"
#include "proto.h"
#include "stack_filter.h"

#define MAX_FRAMES 32

static const char *const ustack = "main;wait";
static const char *const kstack = "futex_wait;schedule";

/* The waker part as the daemon's rows carry it (see drain.c). */
static const char *chain_of(uint32_t kind)
{
	if (kind == PROTO_KIND_CHAIN)
		return "try_to_wake_up;-;produce;--;[softirq]";
	if (kind == PROTO_KIND_WAKEUP || kind == PROTO_KIND_OFFWAKE)
		return "try_to_wake_up;-;produce";
	return "";
}

/* The line folded.c writes for one row, its count cut off; malloc'd. */
static char *written_line(uint32_t kind, uint32_t state)
{
	struct folded_stack st = {
		.comm = "app",
		.ustack = ustack,
		.kstack = kstack,
		.kind = kind,
		.chain = chain_of(kind),
		.state = state,
	};
	struct folded *f;
	char *text, *space;

	if (folded_new(&f) < 0 || folded_add(f, &st, true, true, 1000) < 0)
		abort();
	text = folded_text(f, 1000);
	folded_free(f);
	if (!text || !(space = strrchr(text, ' ')))
		abort();
	*space = '\0';
	return text;
}

/* Splits line (changed in place) into its frames, leaving out the
 * delimiters "-" and "--", which are not frames. */
static size_t frames_of(char *line, char **frames)
{
	size_t n = 0;

	for (char *tok = strtok(line, ";"); tok; tok = strtok(NULL, ";"))
		if (strcmp(tok, "-") && strcmp(tok, "--") && n < MAX_FRAMES)
			frames[n++] = tok;
	return n;
}

static bool has(char *const *frames, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(frames[i], name))
			return true;
	return false;
}

/* Whether a filter grepping for exactly the frame name keeps the row. */
static bool filter_sees(uint32_t kind, uint32_t state, const char *name)
{
	struct stack_filter_sample s = {
		.comm = "app",
		.tgid = 1,
		.state = state,
		.kind = kind,
		.ustack = ustack,
		.kstack = kstack,
		.chain = chain_of(kind),
	};
	struct stack_filter_spec spec = { 0 };
	struct stack_filter *f = NULL;
	char pattern[128], err[256];
	size_t at = 0;
	bool keep;

	pattern[at++] = '^';
	for (const char *p = name; *p && at < sizeof(pattern) - 3; p++) {
		if (strchr("[](){}.*+?|^$\\", *p))
			pattern[at++] = '\\';
		pattern[at++] = *p;
	}
	pattern[at++] = '$';
	pattern[at] = '\0';
	spec.grep = pattern;
	if (stack_filter_new(&spec, &f, err, sizeof(err)) < 0) {
		fprintf(stderr, "pattern %s: %s\n", pattern, err);
		abort();
	}
	keep = stack_filter_keep(f, &s);
	stack_filter_free(f);
	return keep;
}

int main(void)
{
	/* Every frame any row's line holds, and frames no line should. */
	static const char *const candidates[] = {
		"app",	   "main",	"wait",	      "futex_wait", "schedule", "try_to_wake_up",
		"produce", "[softirq]", "[runqueue]", "[on-cpu]",   "[queued]", "[nothing]",
	};
	bool queued_seen = false;

	for (uint32_t kind = PROTO_KIND_OFFCPU; kind <= PROTO_KIND_FILEIO; kind++) {
		for (uint32_t state = 0; state < 4; state++) {
			char *line = written_line(kind, state), *frames[MAX_FRAMES];
			char *copy = strdup(line);
			size_t n = frames_of(copy, frames);

			if (kind == PROTO_KIND_BIO && has(frames, n, "[queued]"))
				queued_seen = true;
			for (size_t c = 0; c < sizeof(candidates) / sizeof(candidates[0]); c++)
				CHECK_MSG(filter_sees(kind, state, candidates[c]) ==
						  has(frames, n, candidates[c]),
					  "(kind %u, state %u, frame '%s', line '%s')", kind, state,
					  candidates[c], line);
			free(copy);
			free(line);
		}
	}
	/* The case that drifted: a bio queue row's leaf. */
	CHECK(queued_seen);
	return check_failures ? 1 : 0;
}
