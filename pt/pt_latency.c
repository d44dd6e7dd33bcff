/*
 * pt_latency: function latency analysis (see pt_latency.h). Frames below
 * the target are nodes of one call tree rooted at it; while a target call
 * is open its frames' times are collected in a scratch list and merged into
 * the tree only when the call completes within the latency range, so
 * --latency-range applies to the children and the flame graph too.
 */
#include "pt_latency.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

_Static_assert(PT_LATENCY_HIST_BUCKETS == 64, "a bucket per bit of a u64 latency");

struct pt_frame {
	uint64_t ip, start_tsc, start_ns;
	uint64_t child_ns, child_off_ns;
	int node; /* call tree node, -1 outside a target call */
};

struct pt_node {
	uint64_t ip;
	int parent, first_child, next_sibling;
	uint64_t count, total_ns, self_ns, off_ns, self_off_ns;
};

struct pt_contrib {
	int node;
	uint64_t total_ns, self_ns, off_ns, self_off_ns;
};

struct pt_latency {
	const struct pt_trace *trace;
	uint64_t target_ip, min_ns, max_ns;
	struct pt_latency_summary sum;
	struct pt_frame stack[PT_LATENCY_DEPTH_MAX];
	size_t depth, skipped; /* frames beyond DEPTH_MAX are only counted */
	uint32_t tid;
	const struct pt_trace_switch *sw; /* this thread's switches */
	size_t n_sw;
	struct pt_node *nodes;
	size_t n_nodes, cap_nodes;
	struct pt_contrib *scratch;
	size_t n_scratch, cap_scratch;
	struct pt_latency_call *calls;
	size_t n_calls, cap_calls;
};

int pt_latency_new(const struct pt_trace *t, uint64_t target_ip, uint64_t min_ns, uint64_t max_ns,
		   struct pt_latency **ret)
{
	struct pt_latency *a = calloc(1, sizeof(*a));

	if (!a || array_grow(&a->nodes, &a->cap_nodes, 1, sizeof(*a->nodes), 0) < 0) {
		free(a);
		return -ENOMEM;
	}
	a->trace = t;
	a->target_ip = target_ip;
	a->min_ns = min_ns;
	a->max_ns = max_ns;
	a->sum.min_ns = UINT64_MAX;
	a->nodes[0] = (struct pt_node){
		.ip = target_ip, .parent = -1, .first_child = -1, .next_sibling = -1
	};
	a->n_nodes = 1;
	*ret = a;
	return 0;
}

void pt_latency_free(struct pt_latency *a)
{
	if (!a)
		return;
	free(a->nodes);
	free(a->scratch);
	free(a->calls);
	free(a);
}

void pt_latency_begin_thread(struct pt_latency *a, uint32_t tid)
{
	const struct pt_trace *t = a->trace;
	size_t lo = 0;

	a->tid = tid;
	a->depth = a->skipped = 0;
	while (lo < t->n_switches && t->switches[lo].tid < tid)
		lo++;
	a->sw = t->switches ? t->switches + lo : NULL; /* NULL + 0 is undefined */
	a->n_sw = 0;
	while (lo + a->n_sw < t->n_switches && t->switches[lo + a->n_sw].tid == tid)
		a->n_sw++;
}

static uint64_t pt_ns(const struct pt_latency *a, uint64_t tsc)
{
	return pt_trace_tsc_to_ns(&a->trace->meta, tsc);
}

/* Off-CPU ns of this thread within [s, e] (TSC): the overlap with each
 * switched-out interval of the sideband (perf clock ns). */
static uint64_t pt_off_cpu_ns(const struct pt_latency *a, uint64_t s_tsc, uint64_t e_tsc)
{
	uint64_t off = 0, s = pt_ns(a, s_tsc), e = pt_ns(a, e_tsc);
	size_t lo = 0, hi = a->n_sw;

	if (!hi)
		return 0;
	while (lo < hi) { /* first switch after s */
		size_t mid = (lo + hi) / 2;

		if (a->sw[mid].time_ns <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) /* an interval that began before s */
		lo--;
	for (size_t i = lo; i < a->n_sw && a->sw[i].time_ns < e; i++) {
		uint64_t out, in = e;

		if (!a->sw[i].out)
			continue;
		out = a->sw[i].time_ns > s ? a->sw[i].time_ns : s;
		if (i + 1 < a->n_sw && !a->sw[i + 1].out && a->sw[i + 1].time_ns < e)
			in = a->sw[i + 1].time_ns;
		if (in > out)
			off += in - out;
	}
	return off;
}

static int pt_node_child(struct pt_latency *a, int parent, uint64_t ip)
{
	int i;

	for (i = a->nodes[parent].first_child; i >= 0; i = a->nodes[i].next_sibling)
		if (a->nodes[i].ip == ip)
			return i;
	if (array_grow(&a->nodes, &a->cap_nodes, a->n_nodes + 1, sizeof(*a->nodes), 0) < 0)
		return -ENOMEM;
	i = a->n_nodes++;
	a->nodes[i] = (struct pt_node){ .ip = ip,
					.parent = parent,
					.first_child = -1,
					.next_sibling = a->nodes[parent].first_child };
	a->nodes[parent].first_child = i;
	return i;
}

int pt_latency_enter(struct pt_latency *a, uint64_t ip, uint64_t tsc)
{
	struct pt_frame *f;
	int node = -1;

	if (a->depth == PT_LATENCY_DEPTH_MAX) {
		a->skipped++;
		return 0;
	}
	if (a->depth && a->stack[a->depth - 1].node >= 0)
		node = pt_node_child(a, a->stack[a->depth - 1].node, ip);
	else if (ip == a->target_ip)
		node = 0;
	if (node == -ENOMEM)
		return node;
	f = &a->stack[a->depth++];
	*f = (struct pt_frame){
		.ip = ip, .start_tsc = tsc, .start_ns = pt_ns(a, tsc), .node = node
	};
	return 0;
}

static void pt_call_done(struct pt_latency *a, uint64_t start_ns, uint64_t latency_ns,
			 uint64_t off_ns)
{
	struct pt_latency_summary *s = &a->sum;

	if (latency_ns < a->min_ns || latency_ns > a->max_ns) {
		s->out_of_range++;
		return;
	}
	for (size_t i = 0; i < a->n_scratch; i++) {
		const struct pt_contrib *c = &a->scratch[i];
		struct pt_node *n = &a->nodes[c->node];

		n->count++;
		n->total_ns += c->total_ns;
		n->self_ns += c->self_ns;
		n->off_ns += c->off_ns;
		n->self_off_ns += c->self_off_ns;
	}
	s->hist[latency_ns ? 63 - __builtin_clzll(latency_ns) : 0]++; /* floor(log2) */
	s->calls++;
	s->total_ns += latency_ns;
	s->off_cpu_ns += off_ns;
	if (latency_ns < s->min_ns)
		s->min_ns = latency_ns;
	if (latency_ns > s->max_ns)
		s->max_ns = latency_ns;
	if (array_grow(&a->calls, &a->cap_calls, a->n_calls + 1, sizeof(*a->calls), 0) == 0)
		a->calls[a->n_calls++] = (struct pt_latency_call){
			.tid = a->tid,
			.start_ns = start_ns,
			.latency_ns = latency_ns,
			.off_cpu_ns = off_ns,
		};
}

int pt_latency_leave(struct pt_latency *a, uint64_t tsc)
{
	struct pt_frame *f;
	uint64_t total, off;

	if (a->skipped) {
		a->skipped--;
		return 0;
	}
	if (!a->depth) {
		a->sum.unmatched_returns++;
		return 0;
	}
	f = &a->stack[--a->depth];
	if (f->node < 0)
		return 0;
	total = tsc > f->start_tsc ? pt_ns(a, tsc) - f->start_ns : 0;
	off = pt_off_cpu_ns(a, f->start_tsc, tsc);
	if (array_grow(&a->scratch, &a->cap_scratch, a->n_scratch + 1, sizeof(*a->scratch), 0) < 0)
		return -ENOMEM;
	a->scratch[a->n_scratch++] = (struct pt_contrib){
		.node = f->node,
		.total_ns = total,
		.self_ns = total > f->child_ns ? total - f->child_ns : 0,
		.off_ns = off,
		.self_off_ns = off > f->child_off_ns ? off - f->child_off_ns : 0,
	};
	if (f->node == 0) {
		pt_call_done(a, f->start_ns, total, off);
		a->n_scratch = 0;
	} else {
		a->stack[a->depth - 1].child_ns += total;
		a->stack[a->depth - 1].child_off_ns += off;
	}
	return 0;
}

int pt_latency_lost(struct pt_latency *a, int overflow)
{
	for (size_t i = 0; i < a->depth; i++)
		if (a->stack[i].node == 0)
			a->sum.incomplete++;
	if (overflow)
		a->sum.overflows++;
	else
		a->sum.decode_errors++;
	a->depth = a->skipped = 0;
	a->n_scratch = 0;
	return 0;
}

int pt_latency_end_thread(struct pt_latency *a)
{
	for (size_t i = 0; i < a->depth; i++)
		if (a->stack[i].node == 0)
			a->sum.incomplete++;
	a->depth = a->skipped = 0;
	a->n_scratch = 0;
	return 0;
}

const struct pt_latency_summary *pt_latency_summary(const struct pt_latency *a)
{
	return &a->sum;
}

const struct pt_latency_call *pt_latency_calls(const struct pt_latency *a, size_t *ret_n)
{
	*ret_n = a->n_calls;
	return a->calls;
}

static int pt_child_cmp(const void *x, const void *y)
{
	const struct pt_latency_child *a = x, *b = y;

	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

int pt_latency_children(const struct pt_latency *a, struct pt_latency_child **ret, size_t *ret_n)
{
	struct pt_latency_child *c;
	size_t n = 0;

	c = malloc(a->n_nodes * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (int i = a->nodes[0].first_child; i >= 0; i = a->nodes[i].next_sibling)
		if (a->nodes[i].count)
			c[n++] = (struct pt_latency_child){
				.ip = a->nodes[i].ip,
				.count = a->nodes[i].count,
				.total_ns = a->nodes[i].total_ns,
				.off_cpu_ns = a->nodes[i].off_ns,
			};
	qsort(c, n, sizeof(*c), pt_child_cmp);
	*ret = c;
	*ret_n = n;
	return 0;
}

/* Appends node i's path ("a;b;c") to the stream, root first. */
static void pt_path_print(FILE *f, const struct pt_latency *a, int i, pt_latency_name_fn name,
			  void *ctx)
{
	if (a->nodes[i].parent >= 0) {
		pt_path_print(f, a, a->nodes[i].parent, name, ctx);
		fputc(';', f);
	}
	fputs(name(ctx, a->nodes[i].ip), f);
}

int pt_latency_folded(const struct pt_latency *a, pt_latency_name_fn name, void *ctx, char **ret)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < a->n_nodes; i++) {
		const struct pt_node *n = &a->nodes[i];
		uint64_t on = n->self_ns - n->self_off_ns;

		if (on) {
			pt_path_print(f, a, i, name, ctx);
			fprintf(f, " %llu\n", (unsigned long long)on);
		}
		if (n->self_off_ns) {
			pt_path_print(f, a, i, name, ctx);
			fprintf(f, ";[off-cpu] %llu\n", (unsigned long long)n->self_off_ns);
		}
	}
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return 0;
}
