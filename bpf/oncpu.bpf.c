// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * On-CPU samples (OFFCPU_KIND_ONCPU). A perf_event program, attached to one CPU-clock event per
 * CPU, samples the thread on that CPU. Each sample adds the event's period (ns of CPU time) to the
 * slots in oncpu_slots whose task filters accept the thread: ONCPU slots, and OFFCPU slots that put
 * on-CPU time beside off-CPU time (hot/cold), as ONCPU rows of the same maps. State and
 * block-length filters are about blocks and do not apply; request-synchronous slots take no
 * samples.
 */
#include "stack.bpf.h"

__u32 oncpu_slots;			  /* slots that take on-CPU samples */
const volatile __u64 oncpu_period_ns = 0; /* the events' period, if a sample lacks it */

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	__u32 matched = active_mask & oncpu_slots & ~request_slots, zero = 0, pid, tgid;
	__u64 id, period, khash = 0, uhash = 0;
	struct offcpu_key key = {};
	char comm[OFFCPU_COMM_LEN];
	struct buffers b = {};
	struct scratch *scr;

	if (!matched)
		return 0;
	id = bpf_get_current_pid_tgid();
	pid = (__u32)id;
	tgid = id >> 32;
	if (!pid || (self_tgid && tgid == self_tgid))
		return 0; /* the idle task, or the daemon */
	matched = task_filter(matched, tgid, pid);
	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!matched || !scr || !buffers_get(&b))
		return 0;
	count(OFFCPU_CNT_ONCPU_SAMPLES);
	period = ctx->sample_period ? ctx->sample_period : oncpu_period_ns;
	bpf_get_current_comm(comm, sizeof(comm));
	if (matched & kernel_stack_slots) {
		walk_stack(ctx, &scr->stack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
		khash = intern_stack(b.stacks, &scr->stack);
	}
	if ((matched & user_stack_slots) &&
	    !(BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), flags) & PF_KTHREAD)) {
		walk_user_stack(ctx, bpf_get_current_task_btf(), tgid, &scr->stack, true);
		uhash = intern_stack(b.stacks, &scr->stack);
	}
	key.tgid = tgid;
	key.pid = pid;
	key.state = OFFCPU_STATE_RUNNING;
	key.kind = OFFCPU_KIND_ONCPU;
	key.cgroup = bpf_get_current_cgroup_id();
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		__u32 bit = 1u << i;

		if (!(matched & bit))
			continue;
		key.slot = i;
		key.kstack = (kernel_stack_slots & bit) ? khash : 0;
		key.ustack = (user_stack_slots & bit) ? uhash : 0;
		aggregate(b.agg, &key, period, comm);
	}
	return 0;
}
