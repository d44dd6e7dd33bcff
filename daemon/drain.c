/* drain: see drain.h. */
#include "drain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

/* Names are cached per drain: kernel stacks by hash (tgid 0), user stacks by
 * (tgid, hash) because the same addresses mean different code in two
 * processes. */
struct name_key {
	uint64_t hash;
	uint32_t tgid;
	uint32_t kernel;
};

#define FRAME_NAME_MAX 512

static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 2 > *cap) {
		size_t c = (*len + n + 2) * 2;
		char *b = realloc(*buf, c);

		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	if (*len)
		(*buf)[(*len)++] = ';';
	/* ';' separates frames in the folded format; keep it out of names. */
	for (size_t i = 0; i < n; i++)
		(*buf)[(*len)++] = s[i] == ';' ? ':' : s[i];
	(*buf)[*len] = '\0';
	return 0;
}

/* The kernel stack is walked from inside the BPF program: its leaf frames
 * are the tracing machinery, not the thread's wait. */
static bool is_tracing_frame(const char *name)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
						"__traceiter_", "__bpf_prog_run" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Joins a leaf-first stack into "root;...;leaf". Return addresses point after
 * the call, so every frame but the leaf is looked up one byte earlier. */
static char *stack_name(struct symbolizer *s, const struct offcpu_stack *st, uint32_t tgid,
			bool kernel)
{
	char *buf = NULL, frame[FRAME_NAME_MAX];
	size_t len = 0, cap = 0;
	uint32_t nr = st->nr < OFFCPU_MAX_STACK_DEPTH ? st->nr : OFFCPU_MAX_STACK_DEPTH;
	uint32_t leaf = 0;

	while (kernel && leaf < nr) {
		symbolizer_kernel(s, st->ips[leaf] - (leaf > 0), frame, sizeof(frame));
		if (!is_tracing_frame(frame))
			break;
		leaf++;
	}
	for (uint32_t i = nr; i-- > leaf;) {
		uint64_t addr = st->ips[i] - (i > 0); /* all but ips[0] are return addresses */

		if (!st->ips[i])
			continue;
		if (kernel)
			symbolizer_kernel(s, addr, frame, sizeof(frame));
		else
			symbolizer_user(s, tgid, addr, frame, sizeof(frame));
		if (append(&buf, &len, &cap, frame) < 0) {
			free(buf);
			return NULL;
		}
	}
	return buf ? buf : strdup("");
}

static int stack_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct collector_stack *)a)->hash;
	uint64_t y = ((const struct collector_stack *)b)->hash;

	return x < y ? -1 : x > y;
}

static const char *name_get(struct drain_result *r, struct symbolizer *s,
			    const struct collector_batch *b, uint64_t hash, uint32_t tgid,
			    bool kernel)
{
	struct name_key key = { .hash = hash, .tgid = kernel ? 0 : tgid, .kernel = kernel };
	struct collector_stack probe = { .hash = hash }, *found;
	char **slot;
	bool created;

	if (!hash)
		return "";
	slot = hashtab_put(r->names, &key, &created);
	if (!slot)
		return "[out of memory]";
	if (!created)
		return *slot;
	found = b->n_stacks ? bsearch(&probe, b->stacks, b->n_stacks, sizeof(*b->stacks), stack_cmp)
			    : NULL;
	/* The stack map was full when this block was counted: keep the time. */
	*slot = found ? stack_name(s, &found->stack, tgid, kernel) : strdup("[stack lost]");
	return *slot ? *slot : "[out of memory]";
}

int drain_run(struct collector *c, struct symbolizer *s, const uint32_t *tgids, size_t n_tgids,
	      struct drain_result *ret)
{
	struct collector_batch b;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = hashtab_new(sizeof(struct name_key), sizeof(char *), &ret->names);
	if (r < 0)
		return r;
	r = collector_drain(c, &b);
	memcpy(ret->counters, b.counters, sizeof(ret->counters));
	if (r < 0)
		return r;
	ret->rows = calloc(b.n_rows ? b.n_rows : 1, sizeof(*ret->rows));
	if (!ret->rows) {
		collector_batch_release(&b);
		return -ENOMEM;
	}
	if (b.n_stacks) /* b.stacks is NULL when there are none */
		qsort(b.stacks, b.n_stacks, sizeof(*b.stacks), stack_cmp);
	symbolizer_refresh_processes(s); /* mappings may have changed since the last drain */
	for (size_t i = 0; i < n_tgids; i++)
		symbolizer_prime(s, tgids[i]);
	for (size_t i = 0; i < b.n_rows; i++) {
		struct drain_row *row = &ret->rows[i];

		row->key = b.rows[i].key;
		row->value = b.rows[i].value;
		row->value.comm[sizeof(row->value.comm) - 1] = '\0';
		row->kstack = name_get(ret, s, &b, row->key.kstack, row->key.tgid, true);
		row->ustack = name_get(ret, s, &b, row->key.ustack, row->key.tgid, false);
	}
	ret->n_rows = b.n_rows;
	collector_batch_release(&b);
	return 0;
}

void drain_result_release(struct drain_result *r)
{
	const void *key;
	char **name;
	size_t pos = 0;

	if (r->names)
		while (hashtab_next(r->names, &pos, &key, (void **)&name))
			free(*name);
	hashtab_free(r->names);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
