// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Who woke a thread, recorded at sched_waking, which runs in the waker's
 * context (sched_wakeup may run on the target's CPU, after an IPI, where the
 * current task is not the waker). Waker stacks are interned at once into an
 * LRU map that is not double-buffered, because a chain refers to stacks
 * walked long before (a waker's own last wakeup); user space only reads it.
 */
#include "stack.bpf.h"
#include "wakers.bpf.h"

/* Waker stacks: interned when walked, read (not emptied) by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
} waker_stacks SEC(".maps");

/*
 * levels[0] = first, then the waker's own chain (src, may be NULL), stopping
 * at depth OFFCPU_MAX_CHAIN, after an idle waker (nobody woke on its behalf;
 * user space also ends chains at interrupt wakers, see drain.c), and before
 * a thread already in the chain or the target itself (a loop). A global
 * function: the verifier checks its loops once.
 */
__noinline int chain_build(struct offcpu_chain *dst, const struct offcpu_waker *first,
			   const struct offcpu_chain *src, __u32 target_pid)
{
	__u32 n = 1;

	if (!dst || !first)
		return 0;
	dst->levels[0] = *first;
	if (src && first->ctx == OFFCPU_WAKER_TASK) {
		for (__u32 i = 0; i < OFFCPU_MAX_CHAIN - 1; i++) {
			const struct offcpu_waker *l;
			bool seen = false;

			if (i >= src->n || n >= OFFCPU_MAX_CHAIN)
				break;
			l = &src->levels[i];
			if (l->pid == target_pid && l->pid)
				break;
			for (__u32 j = 0; j < OFFCPU_MAX_CHAIN; j++)
				if (j < n && l->pid && dst->levels[j].pid == l->pid)
					seen = true;
			if (seen)
				break;
			dst->levels[n & (OFFCPU_MAX_CHAIN - 1)] = *l;
			n++;
			if (l->ctx != OFFCPU_WAKER_TASK)
				break; /* the idle task ends a chain: it woke on nobody's behalf */
		}
	}
	dst->n = n;
	return n;
}

/* Hash of the first depth levels of a chain; never 0. Global, as above. */
__noinline __u64 chain_hash(const struct offcpu_chain *c, __u32 depth)
{
	__u64 h = 0x84222325cbf29ce4ULL;

	if (!c)
		return 0;
	for (__u32 i = 0; i < OFFCPU_MAX_CHAIN; i++) {
		const struct offcpu_waker *l = &c->levels[i];

		if (i >= c->n || i >= depth)
			break;
		h = (h ^ l->kstack) * 0x100000001b3ULL;
		h = (h ^ l->ustack) * 0x100000001b3ULL;
		h = (h ^ ((__u64)l->pid << 32 | l->ctx)) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/*
 * Only the idle task is told apart here. The preempt count would show
 * interrupt context, but __preempt_count has no kallsyms address on kernels
 * without CONFIG_KALLSYMS_ALL; user space recognizes interrupt entry frames
 * in the waker's kernel stack instead (drain.c).
 */
static __always_inline __u32 waker_context(__u32 cur_pid)
{
	return cur_pid ? OFFCPU_WAKER_TASK : OFFCPU_WAKER_IDLE;
}

/* Interns the stack in buf in the waker_stacks map; returns its hash, 0
 * if empty. */
static __always_inline __u64 waker_stack_intern(struct offcpu_stack *buf)
{
	__u64 h;

	if (!buf->nr)
		return 0;
	h = stack_hash(buf);
	if (!bpf_map_lookup_elem(&waker_stacks, &h))
		bpf_map_update_elem(&waker_stacks, &h, buf, BPF_ANY);
	return h;
}

static __always_inline void waking(void *ctx, struct task_struct *p, bool btf)
{
	__u32 active = active_mask, zero = 0, pid, cur_pid, waker_kinds;
	struct start_rec *rec, *wrec = NULL;
	struct offcpu_waker w = {};
	struct task_struct *cur;
	struct scratch *scr;
	bool pending, chains_on;
	__u64 id;

	if (!active)
		return;
	pid = btf ? p->pid : BPF_CORE_READ(p, pid);
	chains_on = active & kind_slots[OFFCPU_KIND_CHAIN];
	/* A chain needs every thread's last waker, so it may create storage. */
	rec = start_get(p, pid, btf, chains_on);
	if (!rec)
		return;
	pending = (rec->slots & active) && !rec->wake_ts;
	if (pending) {
		rec->wake_ts = bpf_ktime_get_ns();
		count(OFFCPU_CNT_WAKEUPS);
	}
	waker_kinds = kind_slots[OFFCPU_KIND_WAKEUP] | kind_slots[OFFCPU_KIND_OFFWAKE] |
		      kind_slots[OFFCPU_KIND_CHAIN];
	if (!chains_on && !(pending && (rec->slots & active & waker_kinds)))
		return;

	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!scr)
		return;
	id = bpf_get_current_pid_tgid();
	cur_pid = (__u32)id;
	w.ctx = waker_context(cur_pid);
	walk_stack(ctx, &scr->stack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	w.kstack = waker_stack_intern(&scr->stack);
	if (w.ctx == OFFCPU_WAKER_TASK) {
		cur = btf ? bpf_get_current_task_btf()
			  : (struct task_struct *)bpf_get_current_task();
		w.tgid = id >> 32;
		w.pid = cur_pid;
		bpf_get_current_comm(w.comm, sizeof(w.comm));
		/* With the unwind tables, as blocked threads' stacks are: whole
		 * through code without frame pointers. */
		if (!((btf ? cur->flags : BPF_CORE_READ(cur, flags)) & PF_KTHREAD)) {
			walk_user_stack(ctx, cur, w.tgid, &scr->stack, btf);
			w.ustack = waker_stack_intern(&scr->stack);
		}
		if (chains_on)
			wrec = start_get(cur, cur_pid, btf, false);
	}
	chain_build(&rec->last_chain, &w, wrec ? &wrec->last_chain : NULL, pid);
	if (pending)
		__builtin_memcpy(&rec->chain, &rec->last_chain, sizeof(rec->chain));
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking_btf, struct task_struct *p)
{
	waking(ctx, p, true);
	return 0;
}

SEC("raw_tp/sched_waking")
int BPF_PROG(sched_waking_raw, struct task_struct *p)
{
	waking(ctx, p, false);
	return 0;
}
