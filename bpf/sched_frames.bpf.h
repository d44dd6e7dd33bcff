/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The frames that name a wait, put back into a sleeping task's kernel stack
 * (sched_frames.bpf.c). The kernel's walk of a task that is not current
 * (bpf_get_task_stack(), as /proc/PID/stack) leaves out every function of
 * the scheduler's text section (__sched): schedule and __schedule, but also
 * do_nanosleep, mutex_lock, rwsem_down_write_slowpath, io_schedule,
 * schedule_timeout, wait_for_completion, __wait_on_bit... Their return
 * addresses lie on the task's stack between its saved stack pointer and the
 * first frame the walk gave; sched_frames_recover() finds them there, each
 * an address in the section that a call instruction ends just before.
 */
#ifndef OFFCPU_SCHED_FRAMES_BPF_H
#define OFFCPU_SCHED_FRAMES_BPF_H

#include "stack_cache.bpf.h"

/* Set by the loader where the kernel has bpf_rdonly_cast() and kallsyms
 * shows the __sched section (x86-64 only: the stack pointer a switched-out
 * task saved, and the call instructions, are read as that architecture's). */
extern const volatile bool sched_frames_on;

#define SCHED_FRAMES_MAX 8 /* frames put back at most */

/* The search's state: in the caller's memory (a map value), since the
 * program stack has no room for it below the sleepable pass's frames. */
struct sched_scan {
	__u64 sp;
	__u64 at;     /* the scan's address: where R0 was found, then going down */
	__u64 r0;     /* st's first frame */
	__u64 callee; /* the function the last frame called, where a direct call says; 0 */
	__u64 next, next_at, next_target; /* the next frame found: its word, place, callee */
	__u64 found[SCHED_FRAMES_MAX];
	__u32 n;
	__u32 pad;
};

/* Inserts the __sched frames into st, a kernel stack (leaf first) that
 * bpf_get_task_stack() gave for a task not running, whose switch saved its
 * stack pointer sp; scan is the search's room (NULL: a per-CPU one, for
 * programs that are not sleepable). Returns the frames added (0 if none
 * were found). */
int sched_frames_recover(struct offcpu_stack *st, __u64 sp, struct sched_scan *scan);

/* The kernel stack of t, which is not running (its switch saved sp), with
 * its __sched frames: what an exact walk at its switch-out gave. scan: room
 * for the search, a sleepable program's own (it may be preempted by another
 * on its CPU); NULL for the others. */
static __always_inline long task_kernel_stack(struct task_struct *t, struct offcpu_stack *st,
					      struct sched_scan *scan)
{
	long n = bpf_get_task_stack(t, st->ips, sizeof(st->ips), 0);

	count(OFFCPU_CNT_KERNEL_STACK_WALKS);
	st->flags = 0;
	if (n < 0) {
		count(OFFCPU_CNT_DROP_KSTACK_ERROR);
		st->nr = 0;
		return n;
	}
	st->nr = n / sizeof(__u64);
	/* A task off the CPU has at least __schedule to put back: none found
	 * (or none looked for) is said in the stack. */
	if (st->nr && !(sched_frames_on && bpf_core_field_exists(t->thread.sp) &&
			sched_frames_recover(st, BPF_CORE_READ(t, thread.sp), scan) > 0))
		st->flags |= OFFCPU_STACK_SCHED_LOST;
	return 0;
}

#endif
