/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Deferred user stack walks. A sampled thread's user stack is walked when it
 * is current again: at its return to user mode, or at its next switch-out if
 * it blocks again in the kernel first. The return to user mode is met by a
 * BPF task work (its callback runs in the thread's context; one entry of
 * deferred_walks per thread with one scheduled), or while walk_at_rseq is attached at the
 * rseq_update tracepoint, which every return after a switch of a thread
 * with rseq registered passes (glibc registers it since 2.35).
 *
 * Which costs less depends on the host and the load: a task work queues an
 * irq_work, a self-IPI, that a VM pays for in exits (22 us a sample on the
 * development VM), while walk_at_rseq runs at every switch (~80 ns there).
 * sampled_walk = auto attaches it while it costs less (daemon/kernel/walk_return.h).
 *
 * deferred_walk.bpf.c holds the settings and walk_at_rseq. The rest is
 * here, inline: sample_finish(), for every place a walk completes, and the
 * part that defers the walks, for the switch hooks (sched.bpf.c). Both maps
 * are shared, so maps.bpf.c defines them.
 */
#ifndef OFFCPU_DEFERRED_WALK_BPF_H
#define OFFCPU_DEFERRED_WALK_BPF_H

#include "sched_frames.bpf.h"

struct deferred_walk {
	struct bpf_task_work tw;
};

struct deferred_walks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct deferred_walk);
};

struct rseq_walk_tid_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};

/* By thread: its task work, while one is scheduled. */
extern struct deferred_walks_map deferred_walks SEC(".maps");

/* By CPU: the thread switched in there last with a walk for walk_at_rseq
 * (0: none). The thread stays current on its CPU until it returns to user
 * mode or blocks again (sample_finish() at its switch-out): a per-CPU word
 * the tracepoint reads, where task storage would cost every return a lookup. */
extern struct rseq_walk_tid_map rseq_walk_tid SEC(".maps");

/* Set by the loader: defer user walks of sampled slots (the kernel has BPF
 * task work and the configuration allows it); else walk them at switch-out. */
extern const volatile bool defer_walks;

/* Set by user space while walk_at_rseq is attached: a deferred walk of a
 * thread with rseq registered waits for that tracepoint, not a task work. */
extern bool rseq_walks;

/* Adds a sampled block, its stacks in rec, to the sampled slots in slots
 * (sched.bpf.c). */
int sample_account(struct start_rec *rec, __u32 slots);

/*
 * Completes the sample rec waits for with the user stack of t, the current
 * task, if t has not been back in user mode since the block (its user
 * registers are those of then) and still has its memory (an exiting thread
 * has until exit_mm(), which its task works run after); else the sample is
 * lost, and counted.
 */
static __always_inline void sample_finish(struct start_rec *rec, struct task_struct *t,
					  __u32 walk_counter)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	__u32 slots = rec->walk_pending;

	rec->walk_pending = 0;
	if (!regs || BPF_CORE_READ(regs, ip) != rec->walk_ip ||
	    BPF_CORE_READ(regs, sp) != rec->walk_sp || !t->mm) {
		count(OFFCPU_CNT_DEFER_LOST);
		return;
	}
	/* At the return to user mode, irqs are on: a process's mappings can be
	 * read from its VMAs there. */
	walk_task_user_stack(t, rec->tgid, &rec->ustack,
			     walk_counter != OFFCPU_CNT_WALK_NEXT_SWITCH);
	count(walk_counter);
	sample_account(rec, slots);
}

/*
 * The switch hooks' part, which sched.bpf.c alone uses: choosing where a
 * sampled block's stacks are walked, and scheduling the task work. It stays
 * inline in that object: the task work's callback must be a static function
 * of the object that schedules it (the verifier takes no global callback),
 * the kfunc takes the task as the switch hook has it (a trusted pointer,
 * which a global function does not take on every kernel), and one object
 * only may declare a kfunc (libbpf 1.1's linker). clang emits the kfunc's
 * declaration and the callback only where they are used: the other files
 * that include this header carry neither.
 */
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/*
 * The callback of a deferred walk, in the sampled thread's context on its
 * way back to user mode: its user registers and stack are those of the
 * block. (Task work callbacks may sleep; nothing here does.)
 */
static int deferred_walk_cb(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct start_rec *rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	__u32 tgid = t->tgid;

	if (rec && rec->walk_pending)
		sample_finish(rec, t, OFFCPU_CNT_WALK_DEFERRED);
	else if (unwind_dwarf)
		unwind_proc_current(tgid); /* asked for by switch_out() */
	bpf_map_delete_elem(&deferred_walks, key);
	return 0;
}

/* Schedules deferred_walk_cb for next, unless one is scheduled already
 * (it will find rec's pending walk). Returns false if it cannot be. */
static __always_inline bool walk_defer(struct task_struct *next, __u32 pid)
{
	struct deferred_walk *w;
	__u64 zero = 0, t0;
	long err;

	if (!defer_walks || !bpf_task_work_schedule_resume_impl) /* a __weak kfunc: 0 if missing */
		return false;
	if (bpf_map_update_elem(&deferred_walks, &pid, &zero, BPF_NOEXIST))
		return bpf_map_lookup_elem(&deferred_walks, &pid) != NULL;
	w = bpf_map_lookup_elem(&deferred_walks, &pid);
	if (w) {
		/* Timed: its self-IPI is what a VM makes dear (status shows it),
		 * and two clock reads are little beside it. */
		t0 = bpf_ktime_get_ns();
		err = bpf_task_work_schedule_resume_impl(next, &w->tw, &deferred_walks,
							 deferred_walk_cb, NULL);
		count_add(OFFCPU_CNT_TASK_WORK_NS, bpf_ktime_get_ns() - t0);
		if (!err) {
			count(OFFCPU_CNT_TASK_WORKS);
			return true;
		}
	}
	bpf_map_delete_elem(&deferred_walks, &pid);
	return false;
}

/*
 * The stacks of a block that sampled slots took, for next, the thread being
 * switched in by prev. Its kernel stack is still there: it has not run yet.
 * Its user stack stays as it was until it returns to user mode; it can be
 * read now only if prev shares its memory, else it is walked when next is
 * current again (sample_finish()).
 */
static __always_inline void sample_stacks(struct task_struct *prev, struct task_struct *next,
					  struct start_rec *rec, __u32 need)
{
	struct pt_regs *regs;
	struct mm_struct *mm;
	bool published;

	rec->kstack.nr = 0;
	rec->kstack.flags = 0;
	rec->ustack.nr = 0;
	rec->ustack.flags = 0;
	if (need & kernel_stack_slots)
		task_kernel_stack(next, &rec->kstack, NULL);
	mm = next->mm;
	if (!(need & user_stack_slots) || !mm || (next->flags & PF_KTHREAD)) {
		sample_account(rec, need);
		return;
	}
	/* A process not published yet is walked from the task work, where its
	 * mappings can be read from its VMAs. */
	published = !unwind_dwarf || bpf_map_lookup_elem(&unwind_procs, &rec->tgid);
	if (mm == prev->mm && published) {
		walk_task_user_stack(next, rec->tgid, &rec->ustack, false);
		count(OFFCPU_CNT_WALK_SAME_MM);
		sample_account(rec, need);
		return;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(next);
	if (!regs) {
		count(OFFCPU_CNT_DEFER_LOST);
		return;
	}
	rec->walk_ip = BPF_CORE_READ(regs, ip);
	rec->walk_sp = BPF_CORE_READ(regs, sp);
	rec->walk_pending = need;
	if (rseq_walks && bpf_core_field_exists(next->rseq) && next->rseq) {
		__u32 zero = 0, *tid = bpf_map_lookup_elem(&rseq_walk_tid, &zero);

		if (tid) {
			*tid = rec->pid;
			return;
		}
	}
	if (!walk_defer(next, rec->pid)) {
		rec->walk_pending = 0;
		count(OFFCPU_CNT_DEFER_LOST);
	}
}

#endif
