// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Request probes: see requests.bpf.h. */
#include "requests.bpf.h"

/* Not double-buffered: a capture's requests are read once, at its end;
 * the continuous profile's add up from the daemon's start. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OFFCPU_MAX_SLOTS *OFFCPU_MAX_REQUESTS *(2 * OFFCPU_HIST_BUCKETS + 1));
	__type(key, struct offcpu_request_key);
	__type(value, struct offcpu_request_value);
} request_stats SEC(".maps");

/* Slots whose request r is inside; clears r's stale bits (see struct
 * request_slot_state). A global function: its loop is verified once. */
__noinline __u32 request_valid_slots(struct request_thread *r)
{
	__u32 valid = 0;

	if (!r)
		return 0;
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		const struct request_slot_state *st = &r->slots[i];

		if ((r->in_slots & (1u << i)) && st->depth &&
		    st->slot_start_ns == slots[i].start_ns)
			valid |= 1u << i;
	}
	r->in_slots = valid;
	return valid;
}

static __always_inline void request_add(__u32 slot, __u32 request, __u32 measure, __u64 ns)
{
	struct offcpu_request_key k = {
		.slot = slot, .request = request, .measure = measure, .bucket = log2_bucket(ns)
	};
	struct offcpu_request_value *v, init = { .count = 1, .sum_ns = ns };

	v = bpf_map_lookup_elem(&request_stats, &k);
	if (!v && map_insert(&request_stats, &k, &init, OFFCPU_CNT_DROP_REQUEST_FULL, (void **)&v))
		return; /* in, with this request, or no room */
	__sync_fetch_and_add(&v->count, 1);
	if (ns)
		__sync_fetch_and_add(&v->sum_ns, ns);
}

/* The slot a request probe belongs to, if that slot is counting. */
static __always_inline bool request_probe_slot(void *ctx, __u32 *slot, __u32 *request)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	*slot = (cookie / OFFCPU_MAX_REQUESTS) & (OFFCPU_MAX_SLOTS - 1);
	*request = cookie % OFFCPU_MAX_REQUESTS;
	return active_mask & request_slots & (1u << *slot);
}

SEC("uprobe")
int request_enter(struct pt_regs *ctx)
{
	struct request_slot_state *st;
	struct request_thread *r;
	__u32 slot, request;

	if (!request_probe_slot(ctx, &slot, &request))
		return 0;
	r = bpf_task_storage_get(&request_threads, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!r) {
		count(OFFCPU_CNT_DROP_REQUEST_ALLOC);
		return 0;
	}
	st = &r->slots[slot];
	if (st->slot_start_ns != slots[slot].start_ns) { /* left over from an earlier capture */
		st->slot_start_ns = slots[slot].start_ns;
		st->depth = 0;
	}
	if (st->depth++ == 0) {
		request_add(slot, request, OFFCPU_REQUEST_CALLS, 0);
		st->entry_ns = bpf_ktime_get_ns();
		st->offcpu_at_entry = r->offcpu_ns;
		st->request = request;
		r->in_slots |= 1u << slot;
	}
	return 0;
}

SEC("uretprobe")
int request_exit(struct pt_regs *ctx)
{
	struct request_slot_state *st;
	struct request_thread *r;
	__u32 slot, request;
	__u64 wall;

	if (!request_probe_slot(ctx, &slot, &request))
		return 0;
	r = bpf_task_storage_get(&request_threads, bpf_get_current_task_btf(), NULL, 0);
	if (!r)
		return 0;
	st = &r->slots[slot];
	/* A return whose call began before the probes were attached. */
	if (!st->depth || st->slot_start_ns != slots[slot].start_ns)
		return 0;
	if (--st->depth)
		return 0;
	r->in_slots &= ~(1u << slot);
	wall = bpf_ktime_get_ns() - st->entry_ns;
	request_add(slot, st->request, OFFCPU_REQUEST_WALL, wall);
	request_add(slot, st->request, OFFCPU_REQUEST_OFFCPU, r->offcpu_ns - st->offcpu_at_entry);
	count(OFFCPU_CNT_REQUESTS);
	return 0;
}
