// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Deferred user stack walks (deferred_walk.bpf.h): their settings, and the
 * walk at the rseq_update tracepoint. The switch hooks (sched.bpf.c) defer
 * the walks and schedule the task works, whose callback is compiled there.
 */
#include "deferred_walk.bpf.h"

const volatile bool defer_walks = false; /* set by the loader */

bool rseq_walks = false; /* set by user space while walk_at_rseq is attached */

/*
 * A thread with rseq registered on its way back to user mode after a switch
 * (__rseq_handle_notify_resume()): the deferred walk of the thread switched
 * in last on this CPU, if that is this one.
 */
SEC("tp_btf/rseq_update")
int BPF_PROG(walk_at_rseq, struct task_struct *t)
{
	__u32 zero = 0, *tid = bpf_map_lookup_elem(&rseq_walk_tid, &zero);
	struct start_rec *rec;

	if (!tid || *tid != t->pid)
		return 0;
	*tid = 0;
	rec = bpf_task_storage_get(&task_starts, t, NULL, 0);
	if (rec && rec->walk_pending)
		sample_finish(rec, t, OFFCPU_CNT_WALK_AT_RSEQ);
	return 0;
}
