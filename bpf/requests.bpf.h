/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Request-synchronous slots count a block only if the thread was inside one
 * of the slot's request functions at switch-out. A uprobe and a uretprobe on
 * each request function (requests.bpf.c) keep a per-thread depth per slot;
 * they also time each request and the off-CPU part of it, which switch-out
 * and switch-in (these helpers) sum up for threads inside a request.
 * Requests need task storage: tp_btf only.
 */
#ifndef OFFCPU_REQUESTS_BPF_H
#define OFFCPU_REQUESTS_BPF_H

#include "offcpu.bpf.h"

/* A thread's requests, one entry per slot. A slot's entry is valid only
 * while its start_ns equals the slot's: a request still open when its
 * capture ended (its return no longer probed) must not leak into the next
 * capture of the slot. */
struct request_slot_state {
	__u64 slot_start_ns;
	__u64 entry_ns;
	__u64 offcpu_at_entry; /* offcpu_ns when the request began */
	__u32 depth;	       /* nested calls of the slot's request functions */
	__u32 request;	       /* index of the outermost call's symbol */
};

struct request_thread {
	__u32 in_slots; /* slots with depth > 0 (possibly stale, see above) */
	__u32 pad;
	__u64 offcpu_since; /* switch-out time while in a request; 0 on CPU */
	__u64 offcpu_ns;    /* off-CPU time summed while in any request */
	struct request_slot_state slots[OFFCPU_MAX_SLOTS];
};

struct request_threads_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct request_thread);
};

extern struct request_threads_map request_threads SEC(".maps");

__u32 request_valid_slots(struct request_thread *r);

/* Keeps request slots in matched only if prev is inside one of their
 * requests, and starts timing the off-CPU part of its open requests. */
static __always_inline __u32 request_switch_out(struct task_struct *prev, __u32 matched)
{
	struct request_thread *r = bpf_task_storage_get(&request_threads, prev, NULL, 0);
	__u32 inside = 0;

	if (r && r->in_slots) {
		inside = request_valid_slots(r) & active_mask;
		if (inside)
			r->offcpu_since = bpf_ktime_get_ns();
	}
	return matched & (~request_slots | inside);
}

/*
 * The block the gated slots record begins at ts, once switch-out has walked
 * its stacks: the request's off-CPU part begins there too, so that both
 * count the same time (the walks took 4 % of it in a MariaDB under sysbench,
 * whose user stacks are walked with unwind tables).
 */
static __always_inline void request_block_start(struct task_struct *prev, __u64 ts)
{
	struct request_thread *r = bpf_task_storage_get(&request_threads, prev, NULL, 0);

	if (r && r->offcpu_since)
		r->offcpu_since = ts;
}

/* Ends the off-CPU part begun at switch-out at now, the time the block ends. */
static __always_inline void request_switch_in(struct task_struct *next, __u64 now)
{
	struct request_thread *r = bpf_task_storage_get(&request_threads, next, NULL, 0);

	if (r && r->offcpu_since) {
		r->offcpu_ns += now - r->offcpu_since;
		r->offcpu_since = 0;
	}
}

#endif
