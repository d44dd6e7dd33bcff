// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The maps and globals BPF files share (declared in offcpu.bpf.h,
 * stack.bpf.h, requests.bpf.h and deferred_walk.bpf.h). User space writes
 * the slot globals through the mmapped .bss. Every shared map is defined here, in the first
 * file linked: libbpf's static linker (1.1) misplaces an extern map whose
 * definition comes in a later file.
 */
#include "deferred_walk.bpf.h"
#include "requests.bpf.h"
#include "stack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 self_tgid = 0;

struct offcpu_slot slots[OFFCPU_MAX_SLOTS];
__u32 active_mask;
__u32 state_slots[OFFCPU_STATE_COUNT]; /* slots that accept each state class */
__u32 tgid_filter_slots;	       /* slots limited to the tgids in filter_tgids */
__u32 tid_filter_slots;		       /* slots limited to the tids in filter_tids */
__u32 cgroup_filter_slots;	       /* slots limited to the subtrees in filter_cgroups */
__u32 cgroup_filter_levels;	       /* bit L: some filter_cgroups entry is at level L */
__u32 user_stack_slots;		       /* slots that want user stacks */
__u32 kernel_stack_slots;	       /* slots that want kernel stacks */
__u32 kind_slots[OFFCPU_KIND_COUNT];   /* slots of each kind */
__u32 split_runq_slots;		       /* OFFCPU slots that count run-queue wait apart (as RUNQ) */
__u32 hist_slots;		       /* slots that keep log2 histograms */
__u32 request_slots;		       /* slots that count only inside a request */
__u32 filename_slots;		       /* FILEIO slots that key rows by file name too */
__u32 sampled_slots;		       /* slots that sample stacks (slot.sample_period_ns) */
__u32 epoch;			       /* its low bit selects the buffer being written */
__u32 progress_slots;		       /* counted in parts while open (bpf/in_progress.bpf.c) */

/* tp_btf path: start records live with the task, no hashing, no cleanup. */
struct task_starts_map task_starts SEC(".maps");

/* raw_tp fallback: older kernels cannot use task storage from raw_tp. */
struct hash_starts_map hash_starts SEC(".maps");

/*
 * Double buffers: the outer map of each pair holds its two maps (epoch & 1
 * picks one). The loader puts them in: libbpf's linker cannot carry a map
 * of maps' initial values over into the linked object.
 */
struct agg_map agg0 SEC(".maps"), agg1 SEC(".maps");

struct aggs_outer aggs SEC(".maps");

/* Preallocated: allocating at run time fails under bursts of new stacks. */
struct stack_map stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct stacks_outer stacks SEC(".maps");

struct chain_map chains0 SEC(".maps"), chains1 SEC(".maps");

struct chains_outer chains SEC(".maps");

/* Per CPU: histograms are kept for every block, sampled or not. */
struct hist_map hists0 SEC(".maps"), hists1 SEC(".maps");

struct hists_outer hists SEC(".maps");

/* Sampled slots' exact totals (struct offcpu_total), per CPU. */
struct total_map totals0 SEC(".maps"), totals1 SEC(".maps");

struct totals_outer totals SEC(".maps");

/* Scratch space too large for the 512-byte BPF stack. */
struct scratch_map scratch SEC(".maps");

struct counters_map counters SEC(".maps");

/* Task filters: id -> bit mask of the slots that include it. */
struct id_filter_map filter_tgids SEC(".maps"), filter_tids SEC(".maps");

/* cgroup v2 filters: the subtree's cgroup id -> the slots it includes. */
struct cgroup_filter_map filter_cgroups SEC(".maps");

/* Unwind tables of processes (stack.bpf.h); written from user space only. */
struct unwind_procs_map unwind_procs SEC(".maps");

/* tgid -> when its tables were asked for: user space publishes tables only
 * if this did not change while it read the process's maps (an exec). */
struct unwind_requested_map unwind_requested SEC(".maps");

struct unwind_requests_map unwind_requests SEC(".maps");

/* CPython processes' layouts and Python threads' states (python.bpf.h). */
struct python_procs_map python_procs SEC(".maps");
struct python_threads_map python_threads SEC(".maps");
struct python_scratch_map python_scratch SEC(".maps");

/* A thread's requests (requests.bpf.h). */
struct request_threads_map request_threads SEC(".maps");

/* Deferred walks (deferred_walk.bpf.h): the task works scheduled, by
 * thread, and by CPU the thread walk_at_rseq waits for. */
struct deferred_walks_map deferred_walks SEC(".maps");

struct rseq_walk_tid_map rseq_walk_tid SEC(".maps");
