// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Captures that follow children (follow_children: offcpuctl capture -- CMD):
 * a process forked by a process in such a slot's tgid filter joins that
 * filter as it is made, before it can run, so none of its blocks is missed;
 * its entry goes when its last thread exits, so a build that forks
 * thousands of processes does not fill filter_tgids. User space clears
 * follow_slots' bit before it scrubs a slot's filter entries, and again
 * scrubs a slot that followed before it reuses it
 * (daemon/kernel/collector_slots.c). Attached from the start where the
 * kernel lets them (daemon/kernel/collector_follow.c): with no bit set a
 * fork costs a load and a branch.
 */
#include "offcpu.bpf.h"

__u32 follow_slots; /* slots whose tgid filter takes in the processes its members fork */

/* Adds child's process to the follow slots that hold its parent's. */
static __always_inline void follow_fork(__u32 parent_tgid, __u32 child_pid, __u32 child_tgid)
{
	__u32 follow = follow_slots, *parent, *old, mask;

	/* A new thread (clone with CLONE_THREAD) is already its process's. */
	if (!follow || child_pid != child_tgid)
		return;
	parent = bpf_map_lookup_elem(&filter_tgids, &parent_tgid);
	if (!parent || !(*parent & follow))
		return;
	mask = *parent & follow;
	old = bpf_map_lookup_elem(&filter_tgids, &child_tgid);
	if (old)
		mask |= *old;
	if (bpf_map_update_elem(&filter_tgids, &child_tgid, &mask, BPF_ANY))
		count(OFFCPU_CNT_DROP_FOLLOW_FULL);
}

/* Takes the follow slots' bits off an exiting process's entry once its
 * last thread goes: the other slots listed it, and keep it. */
static __always_inline void follow_exit(__u32 tgid, int live)
{
	__u32 follow = follow_slots, *cur, mask;

	if (!follow || live)
		return;
	cur = bpf_map_lookup_elem(&filter_tgids, &tgid);
	if (!cur || !(*cur & follow))
		return;
	mask = *cur & ~follow;
	if (mask)
		bpf_map_update_elem(&filter_tgids, &tgid, &mask, BPF_ANY);
	else
		bpf_map_delete_elem(&filter_tgids, &tgid);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(parent->tgid, child->pid, child->tgid);
	return 0;
}

/* do_exit() counts the thread out of signal->live before this fires. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(follow_exit_btf, struct task_struct *t)
{
	follow_exit(t->tgid, t->signal->live.counter);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(follow_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	follow_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, pid),
		    BPF_CORE_READ(child, tgid));
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(follow_exit_raw, struct task_struct *t)
{
	follow_exit(BPF_CORE_READ(t, tgid), BPF_CORE_READ(t, signal, live.counter));
	return 0;
}
