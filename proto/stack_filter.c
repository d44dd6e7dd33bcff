/* stack_filter: see stack_filter.h. */
#include "stack_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
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

static int compile(regex_t *re, bool *has, const char *pattern, const char *what, char *err,
		   size_t err_size)
{
	char msg[256];
	int r;

	*has = false;
	if (!pattern || !*pattern)
		return 0;
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

static bool frame_matches(const regex_t *re, struct span s)
{
	char buf[1024], *big;
	bool hit;

	if (!is_frame(s))
		return false;
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
	struct span parts[3];
	size_t n = 0;

	/* The parts of the kind's folded line (daemon/folded.c). */
	if (s->kind != PROTO_KIND_WAKEUP) {
		parts[n++] = span_of(s->ustack);
		parts[n++] = span_of(s->kstack);
	}
	if (s->kind == PROTO_KIND_RUNQ)
		parts[n++] = span_of("[runqueue]");
	else if (s->kind != PROTO_KIND_OFFCPU)
		parts[n++] = span_of(s->chain);
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
