/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the BPF files of offcpud share: the slots, the start records, the
 * double-buffered maps and the helpers that write them. Globals are defined
 * once, in maps.bpf.c, and declared here; bpftool gen object links the
 * files into one object, so the loader sees one set of programs over one
 * set of maps.
 *
 * Aggregation and stack maps are double-buffered: "epoch" selects the buffer
 * that receives new data, so user space can drain the other one completely.
 * A start record carries its stacks by value, not by id, so a thread that
 * blocks across an epoch flip lands whole in the new buffer.
 */
#ifndef OFFCPU_BPF_H
#define OFFCPU_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "offcpu.h"
#include "hist_bucket.h"
#include "sampling.h"

#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_NOLOAD	     0x0400
#define PF_EXITING	     0x00000004
#define PF_KTHREAD	     0x00200000

extern const volatile __u32 self_tgid; /* the daemon; not traced unless 0 */

/*
 * Written by user space through the mmapped .bss. Each mask has one bit per
 * slot. A slot's bit is set in active_mask only after everything else about
 * it is written, and cleared before it is reused; the other masks are always
 * ANDed with active_mask, so stale bits in them are harmless.
 */
extern struct offcpu_slot slots[OFFCPU_MAX_SLOTS];
extern __u32 active_mask;
extern __u32 state_slots[OFFCPU_STATE_COUNT]; /* slots that accept each state class */
extern __u32 tgid_filter_slots;		      /* slots limited to the tgids in filter_tgids */
extern __u32 tid_filter_slots;		      /* slots limited to the tids in filter_tids */
extern __u32 cgroup_filter_slots;	      /* slots limited to filter_cgroups' subtrees */
extern __u32 cgroup_filter_levels;	      /* bit L: a filter_cgroups entry is at level L */
extern __u32 user_stack_slots;		      /* slots that want user stacks */
extern __u32 kernel_stack_slots;	      /* slots that want kernel stacks */
extern __u32 kind_slots[OFFCPU_KIND_COUNT];   /* slots of each kind */
extern __u32 split_runq_slots; /* OFFCPU slots that count run-queue wait apart (as RUNQ) */
extern __u32 hist_slots;       /* slots that keep log2 histograms */
extern __u32 request_slots;    /* slots that count only inside a request */
extern __u32 filename_slots;   /* FILEIO slots that key rows by file name too */
extern __u32 sampled_slots;    /* slots that sample stacks (slot.sample_period_ns) */
extern __u32 epoch;	       /* its low bit selects the buffer being written */
extern __u32 progress_slots;   /* slots whose open blocks the in-progress pass counts in parts */

/*
 * A thread's exact totals and histogram counts for a sampled slot, kept in
 * its start record (task storage, tp_btf only) so that a block that takes no
 * sample writes no map (banks.bpf.c). Keyed as total_add() keys the totals
 * map, and moved into it by bank_flush(): at each drain (the
 * flush_thread_totals task iterator), when the thread exits and when it is
 * freed, and when the bank is wanted for another slot. One bank per epoch
 * buffer.
 */
struct thread_total_cell {
	__u64 sum_ns;
	__u64 short_ns; /* of blocks shorter than the period */
	__u32 count;
	__u32 samples; /* blocks whose stacks were taken */
};

struct thread_totals {
	__u64 slot_start; /* slots[slot].start_ns of the slot counted; 0: empty */
	__u32 slot;
	__u32 kind;   /* the slot's kind: cells[0]'s; cells[1] is its run-queue part */
	__u64 cgroup; /* the blocks' (start_rec.cgroup): a bank holds one cgroup's */
	struct thread_total_cell cells[2][OFFCPU_STATE_COUNT];
	__u32 hist[2][OFFCPU_HIST_BUCKETS]; /* by enum offcpu_hist_type */
};

/*
 * A start record's slots while the in-progress pass (bpf/in_progress.bpf.c)
 * counts a part of its block for progress_slots. The block's end takes the
 * slots with one exchange (block_end()), so that the pass and the end never
 * both count the same time: an end that finds this bit counts from
 * charging_to, one that does not from charged_ts.
 */
#define START_CHARGING (1ull << 32)

struct start_rec {
	__u64 ts;
	__u64 wake_ts; /* first sched_waking of this block; 0: none yet */
	__u64 slots;   /* matched at switch-out (a __u32 mask), START_CHARGING; 0 once consumed */
	__u32 state;
	__u32 walked; /* slots whose stacks were walked at switch-out */
	__u64 cgroup; /* the thread's cgroup v2 id at switch-out (offcpu_key.cgroup) */
	/* A sampled block waiting for its user stack (see sample_stacks()): its
	 * slots, and the user registers it must still have when walked. */
	__u32 walk_pending;
	__u64 walk_ip, walk_sp;
	__u64 tables_mm; /* the mm whose unwind tables this thread asked for */
	/* What the in-progress pass counted of this block for progress_slots:
	 * up to charged_ts (none if not after ts), or charging_to while it
	 * holds START_CHARGING. Either may be an older block's: always older
	 * than this one's ts, and so harmless. */
	__u64 charged_ts, charging_to;
	/* Filled at switch-in for slot_account(): the whole block, and the
	 * part after charged_ts that progress_slots count (part_charged). */
	__u64 delta, blocked, runq;
	__u64 part_delta, part_blocked, part_runq;
	__u32 part_charged, pad2;
	/* Written by the in-progress pass only: the block (its ts) it walked
	 * last, and its stacks' hashes in open_stacks (in_progress.bpf.c). */
	__u64 walked_ts, walked_khash, walked_uhash;
	__u64 khash, uhash;
	__u32 tgid, pid;
	char comm[OFFCPU_COMM_LEN];	/* at switch-out, when the thread is current */
	struct thread_totals banks[2];	/* by epoch & 1 */
	struct offcpu_chain chain;	/* who woke this block */
	struct offcpu_chain last_chain; /* who woke this thread last: its wakees' next levels */
	struct offcpu_stack kstack;
	struct offcpu_stack ustack;
};

/* The types of the shared maps (maps.bpf.c defines them). */
struct task_starts_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct start_rec);
};

struct hash_starts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct start_rec);
};

struct agg_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_value);
};

struct aggs_outer {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct agg_map);
};

struct stack_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
};

struct stacks_outer {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct stack_map);
};

struct chain_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct offcpu_chain);
};

struct chains_outer {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct chain_map);
};

struct hist_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_hist_key);
	__type(value, __u64);
};

struct hists_outer {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct hist_map);
};

struct total_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_total);
};

struct totals_outer {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct total_map);
};

/* Scratch space too large for the 512-byte BPF stack. */
struct scratch {
	struct offcpu_stack stack;
	struct offcpu_chain chain;
	__u64 addr; /* address_of() (stack_cache.bpf.h) */
};

struct scratch_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
};

struct counters_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
};

struct id_filter_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
};

/* cgroup v2 id -> the slots limited to its subtree: room for every slot's
 * COLLECTOR_MAX_CGROUPS (daemon/kernel/collector.h). */
struct cgroup_filter_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
};

/*
 * Map definitions name their key and value types through pointers, which
 * clang's BTF may keep as forward declarations where nothing else names
 * them whole; the static linker cannot size those. These name them whole.
 * (Seen with clang 14.)
 */
static struct offcpu_key btf_key __attribute__((used));
static struct offcpu_hist_key btf_hist_key __attribute__((used));
static struct offcpu_total btf_total __attribute__((used));
static struct offcpu_value btf_value __attribute__((used));
static struct offcpu_stack btf_stack __attribute__((used));
static struct offcpu_chain btf_chain __attribute__((used));

/* The shared maps, defined in maps.bpf.c. */
extern struct task_starts_map task_starts SEC(".maps"); /* tp_btf: start records by task */
extern struct hash_starts_map hash_starts SEC(".maps"); /* raw_tp: by thread id */
extern struct agg_map agg0 SEC(".maps"), agg1 SEC(".maps");
extern struct aggs_outer aggs SEC(".maps");
extern struct stack_map stacks0 SEC(".maps"), stacks1 SEC(".maps");
extern struct stacks_outer stacks SEC(".maps");
extern struct chain_map chains0 SEC(".maps"), chains1 SEC(".maps");
extern struct chains_outer chains SEC(".maps");
extern struct hist_map hists0 SEC(".maps"), hists1 SEC(".maps");
extern struct hists_outer hists SEC(".maps");
extern struct total_map totals0 SEC(".maps"), totals1 SEC(".maps");
extern struct totals_outer totals SEC(".maps");
extern struct scratch_map scratch SEC(".maps");
extern struct counters_map counters SEC(".maps");
extern struct id_filter_map filter_tgids SEC(".maps"), filter_tids SEC(".maps");
extern struct cgroup_filter_map filter_cgroups SEC(".maps");

struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline void count_add(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		*c += n;
}

static __always_inline void count(__u32 idx)
{
	count_add(idx, 1);
}

/* btf: t is a BTF-typed pointer (tp_btf), read with a plain load rather
 * than a helper call. */
static __always_inline __u32 task_state(struct task_struct *t, bool btf)
{
	if (bpf_core_field_exists(t->__state))
		return btf ? t->__state : BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *)t, state);
}

static __always_inline __u32 state_class(bool preempt, __u32 state)
{
	if (preempt || state == 0)
		return OFFCPU_STATE_RUNNING;
	if (state & TASK_UNINTERRUPTIBLE)
		return (state & TASK_NOLOAD) ? OFFCPU_STATE_OTHER : OFFCPU_STATE_DISK;
	if (state & TASK_INTERRUPTIBLE)
		return OFFCPU_STATE_SLEEPING;
	return OFFCPU_STATE_OTHER;
}

/*
 * Splits [from, to] of rec's block into blocked and run-queue time: blocked
 * until woken, then waiting for a CPU. A preempted thread was runnable all
 * along; without a wakeup seen, all of it counts as blocked.
 */
static __always_inline void block_split(const struct start_rec *rec, __u64 from, __u64 to,
					__u64 *blocked, __u64 *runq)
{
	__u64 woken = rec->wake_ts;

	if (rec->state == OFFCPU_STATE_RUNNING) {
		*blocked = 0;
		*runq = to - from;
	} else if (woken >= rec->ts && woken <= to) {
		if (woken < from)
			woken = from;
		*blocked = woken - from;
		*runq = to - woken;
	} else {
		*blocked = to - from;
		*runq = 0;
	}
}

/* Those of slots whose tgid and tid filters accept thread pid of tgid. */
static __always_inline __u32 id_filter(__u32 matched, __u32 tgid, __u32 pid)
{
	__u32 *allowed;

	if (matched & tgid_filter_slots) {
		allowed = bpf_map_lookup_elem(&filter_tgids, &tgid);
		matched &= ~tgid_filter_slots | (allowed ? *allowed : 0);
	}
	if (matched & tid_filter_slots) {
		allowed = bpf_map_lookup_elem(&filter_tids, &pid);
		matched &= ~tid_filter_slots | (allowed ? *allowed : 0);
	}
	return matched;
}

/* The slots whose filter_cgroups subtrees hold the current thread, or a
 * thread in the cgroup at address cgrp (cgroups.bpf.c). */
int current_cgroup_slots(void);
int cgroup_slots_of(__u64 cgrp);

/* Those of slots whose task filters (ids, cgroups) accept the current
 * thread, pid of tgid. Without a cgroup filter, one AND more. */
static __always_inline __u32 task_filter(__u32 matched, __u32 tgid, __u32 pid)
{
	matched = id_filter(matched, tgid, pid);
	if (matched & cgroup_filter_slots)
		matched &= ~cgroup_filter_slots | (__u32)current_cgroup_slots();
	return matched;
}

/* Slots whose task and state filters accept the current thread. */
static __always_inline __u32 match_slots(__u32 tgid, __u32 pid, __u32 state)
{
	return task_filter(active_mask & state_slots[state & (OFFCPU_STATE_COUNT - 1)], tgid, pid);
}

static __always_inline struct start_rec *start_get(struct task_struct *t, __u32 pid, bool btf,
						   bool create)
{
	static const struct start_rec zero_rec;
	struct start_rec *rec;

	if (btf)
		return bpf_task_storage_get(&task_starts, t, NULL,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	rec = bpf_map_lookup_elem(&hash_starts, &pid);
	if (rec || !create)
		return rec;
	bpf_map_update_elem(&hash_starts, &pid, &zero_rec, BPF_NOEXIST);
	return bpf_map_lookup_elem(&hash_starts, &pid);
}

/*
 * Inserts init, the first values, as key's in map, where a lookup found
 * none. Returns 1 if it went in; 0 with *ret the value another CPU put in
 * meanwhile, for the caller to add to; -1 if the map is full (counted).
 */
static __always_inline int map_insert(void *map, const void *key, const void *init,
				      __u32 full_counter, void **ret)
{
	void *v;

	if (!bpf_map_update_elem(map, key, init, BPF_NOEXIST))
		return 1;
	v = bpf_map_lookup_elem(map, key); /* lost a race to another CPU */
	if (!v) {
		count(full_counter);
		return -1;
	}
	*ret = v;
	return 0;
}

/* Adds delta, n events, bytes and short_ns (struct offcpu_value) to key's row. */
static __always_inline void aggregate_add(void *agg_map, struct offcpu_key *key, __u64 delta,
					  __u64 n, __u64 bytes, __u64 short_ns, const char *comm)
{
	struct offcpu_value *v, init = {};
	int r;

	v = bpf_map_lookup_elem(agg_map, key);
	if (!v) {
		__builtin_memcpy(init.comm, comm, sizeof(init.comm));
		init.sum_ns = delta;
		init.count = n;
		init.bytes = bytes;
		init.short_ns = short_ns;
		r = map_insert(agg_map, key, &init, OFFCPU_CNT_DROP_AGG_FULL, (void **)&v);
		if (r < 0)
			return;
		if (r)
			goto recorded;
	}
	__sync_fetch_and_add(&v->sum_ns, delta);
	if (n)
		__sync_fetch_and_add(&v->count, n);
	if (bytes)
		__sync_fetch_and_add(&v->bytes, bytes);
	if (short_ns)
		__sync_fetch_and_add(&v->short_ns, short_ns);
recorded:
	count(OFFCPU_CNT_RECORDED);
}

static __always_inline void aggregate_io(void *agg_map, struct offcpu_key *key, __u64 delta,
					 __u64 n, __u64 bytes, const char *comm)
{
	aggregate_add(agg_map, key, delta, n, bytes, 0, comm);
}

static __always_inline void aggregate(void *agg_map, struct offcpu_key *key, __u64 delta,
				      const char *comm)
{
	aggregate_add(agg_map, key, delta, 1, 0, 0, comm);
}

/* Adds cell c to key's total in total_map, this CPU's copy; atomic, as a
 * flush may interrupt another on this CPU. */
static __always_inline void total_merge(void *total_map, struct offcpu_key *key,
					const struct thread_total_cell *c, const char *comm)
{
	struct offcpu_total *t, init = {};

	t = bpf_map_lookup_elem(total_map, key);
	if (!t) {
		__builtin_memcpy(init.comm, comm, sizeof(init.comm));
		init.sum_ns = c->sum_ns;
		init.count = c->count;
		init.short_ns = c->short_ns;
		init.samples = c->samples;
		if (map_insert(total_map, key, &init, OFFCPU_CNT_DROP_TOTAL_FULL, (void **)&t))
			return;
	}
	__sync_fetch_and_add(&t->sum_ns, c->sum_ns);
	__sync_fetch_and_add(&t->count, c->count);
	__sync_fetch_and_add(&t->short_ns, c->short_ns);
	__sync_fetch_and_add(&t->samples, c->samples);
}

static __always_inline void hist_add(void *hist_map, __u32 slot, __u32 tgid, __u32 type, __u64 ns)
{
	struct offcpu_hist_key k = {
		.slot = slot, .tgid = tgid, .type = type, .bucket = log2_bucket(ns)
	};
	__u64 one = 1, *v;

	v = bpf_map_lookup_elem(hist_map, &k);
	if (!v && map_insert(hist_map, &k, &one, OFFCPU_CNT_DROP_HIST_FULL, (void **)&v))
		return; /* in, as 1, or no room */
	*v += 1; /* this CPU's copy */
}

/* Buffers of the current epoch. */
struct buffers {
	void *agg, *stacks, *chains, *hists, *totals;
};

static __always_inline bool buffers_get(struct buffers *b)
{
	__u32 buf = epoch & 1;

	b->agg = bpf_map_lookup_elem(&aggs, &buf);
	b->stacks = bpf_map_lookup_elem(&stacks, &buf);
	b->chains = bpf_map_lookup_elem(&chains, &buf);
	b->hists = bpf_map_lookup_elem(&hists, &buf);
	b->totals = bpf_map_lookup_elem(&totals, &buf);
	if (b->agg && b->stacks && b->chains && b->hists && b->totals)
		return true;
	count(OFFCPU_CNT_BUFFER_MISSING);
	return false;
}

#endif
