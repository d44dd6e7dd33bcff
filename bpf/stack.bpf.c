// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel unwinding: daemon/unwinder.c fills unwind_rows with the tables of
 * the files processes map, and unwind_procs with each process's executable
 * mappings and where their rows are. A process not in unwind_procs is asked
 * for through unwind_requests (once, unwind_requested remembers), and walked
 * with frame pointers meanwhile. Exec forgets a process; a walk that meets
 * code outside its known mappings (a library loaded since, JIT code) asks
 * again, at most once per UNWIND_REFRESH_NS. (Tracing mmap instead would need
 * a syscall tracepoint, which slows every system call on the machine.) The
 * walk itself is in stack.bpf.h, inlined where stacks are walked.
 */
#include "stack.bpf.h"

const volatile __u32 unwind_dwarf = 0;	    /* set by the loader: 0 frame pointers only */
const volatile __u32 unwind_max_depth = 64; /* frames, at most OFFCPU_MAX_STACK_DEPTH */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space writes tables by memcpy */
	__uint(max_entries, 1);		   /* set by the loader */
	__type(key, __u32);
	__type(value, struct offcpu_unwind_row);
} unwind_rows SEC(".maps");

/*
 * The row each recently unwound pc had, per CPU, by a hash of the pc: the
 * same call sites block again and again, and checking a row is two lookups
 * where the search is one per level of a table of thousands of rows. A
 * hint is only a guess, checked against the table as it is now (rows may
 * have been rewritten since), so a stale or colliding one costs a search.
 */
#define UNWIND_ROW_HINTS 1024

struct unwind_row_hint {
	__u64 pc;
	__u32 idx; /* in unwind_rows */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNWIND_ROW_HINTS);
	__type(key, __u32);
	__type(value, struct unwind_row_hint);
} unwind_row_hints SEC(".maps");

/* Whether row idx is the one unwind_find_row() would find for rel in m:
 * in m's table, the last row whose pc is at most rel. */
static __always_inline const struct offcpu_unwind_row *
unwind_row_check(const struct offcpu_unwind_mapping *m, __u32 idx, __u64 rel)
{
	const struct offcpu_unwind_row *row, *next;
	__u32 after = idx + 1;

	if (idx - m->first_row >= m->n_rows) /* (below first_row wraps) */
		return NULL;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row || row->pc > rel)
		return NULL;
	if (after - m->first_row >= m->n_rows)
		return row; /* the table's last row */
	next = bpf_map_lookup_elem(&unwind_rows, &after);
	return next && next->pc > rel ? row : NULL;
}

/* The row that covers pc in m's table; NULL if none does. */
static __always_inline const struct offcpu_unwind_row *
unwind_find_row(const struct offcpu_unwind_mapping *m, __u64 pc)
{
	const struct offcpu_unwind_row *row;
	__u32 lo = 0, hi = m->n_rows, idx; /* the row is in [lo, hi) once found */
	__u64 rel = pc - m->bias;
	__u32 slot = (__u32)(pc ^ (pc >> 11) ^ (pc >> 23)) & (UNWIND_ROW_HINTS - 1);
	struct unwind_row_hint *hint = bpf_map_lookup_elem(&unwind_row_hints, &slot);

	if (hint && hint->pc == pc) {
		row = unwind_row_check(m, hint->idx, rel);
		if (row)
			return row;
	}

	for (int i = 0; i < 24 && lo + 1 < hi; i++) { /* 2^24 rows: beyond any table */
		__u32 mid = lo + (hi - lo) / 2;

		idx = m->first_row + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!row)
			return NULL;
		if (row->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	idx = m->first_row + lo;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row || row->pc > rel)
		return NULL;
	if (hint) {
		hint->pc = pc;
		hint->idx = idx;
	}
	return row;
}

/* Mappings are sorted by start and do not overlap. */
static __always_inline const struct offcpu_unwind_mapping *
unwind_find_mapping(const struct offcpu_unwind_proc *p, __u64 pc)
{
	__u32 lo = 0, hi = p->n < OFFCPU_UNWIND_MAPPINGS ? p->n : OFFCPU_UNWIND_MAPPINGS;
	const struct offcpu_unwind_mapping *m;

	if (!hi)
		return NULL;
	for (int i = 0; i < 7 && lo + 1 < hi; i++) { /* 2^7 > OFFCPU_UNWIND_MAPPINGS */
		__u32 mid = lo + (hi - lo) / 2;

		if (p->maps[mid & (OFFCPU_UNWIND_MAPPINGS - 1)].start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	m = &p->maps[lo & (OFFCPU_UNWIND_MAPPINGS - 1)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* m's row for pc into *row: 1 if its table has one, else 0. A global
 * function: verified apart from the search for m, whose paths it would
 * otherwise multiply past the verifier's limit. */
__noinline int unwind_row_get(const struct offcpu_unwind_mapping *m, __u64 pc,
			      struct offcpu_unwind_row *row)
{
	const struct offcpu_unwind_row *r;

	if (!m || !row)
		return 0;
	r = unwind_find_row(m, pc);
	if (!r)
		return 0;
	*row = *r;
	return 1;
}

/*
 * The unwind rule for pc in process p: 0 if no mapping of p covers pc, 1 if
 * one does but its table has no row for pc (rule NONE), 2 with *row filled.
 * A global function: the verifier checks its searches once, not per frame.
 */
__noinline int unwind_rule(const struct offcpu_unwind_proc *p, __u64 pc,
			   struct offcpu_unwind_row *row)
{
	const struct offcpu_unwind_mapping *m;

	if (!p || !row)
		return 0;
	m = unwind_find_mapping(p, pc);
	if (!m)
		return 0;
	if (!m->n_rows)
		return 1;
	return unwind_row_get(m, pc, row) ? 2 : 1;
}

/* Never written; not const, because a global function's pointer arguments
 * must be writable memory. */
struct offcpu_unwind_proc no_tables;

/*
 * Never 0: 0 means "no stack" in struct offcpu_key. A global function, so the
 * verifier checks its data-dependent loop once rather than at every call path.
 */
__noinline __u64 stack_hash(const struct offcpu_stack *st)
{
	__u64 h;

	if (!st)
		return 0;
	h = 0xcbf29ce484222325ULL ^ st->nr ^ (__u64)st->flags << 32;

	for (__u32 i = 0; i < OFFCPU_MAX_STACK_DEPTH; i++) {
		if (i >= st->nr)
			break;
		h = (h ^ st->ips[i]) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* A new program image: its unwind tables are asked for at its next walk. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(unwind_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&unwind_requested, &tgid);
	return 0;
}
