/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack walking: kernel stacks with bpf_get_stack, user stacks with the
 * unwind tables of stack.bpf.c (frame pointers where none cover a PC), and
 * interning walked stacks by hash into the current buffer.
 */
#ifndef OFFCPU_STACK_BPF_H
#define OFFCPU_STACK_BPF_H

#include "offcpu.bpf.h"
#include "python.bpf.h"

#define UNWIND_REFRESH_NS 1000000000ull /* 1 s */
#define MAX_FRAME_BYTES	  (8u << 20)	/* the default stack rlimit */

extern const volatile __u32 unwind_dwarf;
extern const volatile __u32 unwind_max_depth;
extern __u32 unwind_files_added;

struct unwind_procs_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 2.5 KiB each, written from user space only */
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_unwind_proc);
};

struct unwind_requested_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
};

struct unwind_requests_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
};

extern struct unwind_procs_map unwind_procs SEC(".maps");
extern struct unwind_requested_map unwind_requested SEC(".maps");
extern struct unwind_requests_map unwind_requests SEC(".maps");

/* A process with no mappings known: every frame is walked with frame pointers. */
extern struct offcpu_unwind_proc no_tables;

/* The file a pc of a mapping is in, for its frame (OFFCPU_FRAME_FILE). */
struct unwind_file_ref {
	__u64 bias;
	__u32 file_id; /* 0: none */
	__u32 pad;
};

int unwind_rule(const struct offcpu_unwind_proc *p, __u64 pc, struct offcpu_unwind_row *row,
		struct unwind_file_ref *file);
int unwind_proc_from_vmas(__u32 tgid);
__u64 stack_hash(const struct offcpu_stack *st);

static __always_inline void walk_stack(void *ctx, struct offcpu_stack *st, __u64 flags,
				       __u32 err_counter)
{
	long n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);

	count(flags & BPF_F_USER_STACK ? OFFCPU_CNT_USER_STACK_WALKS
				       : OFFCPU_CNT_KERNEL_STACK_WALKS);
	if (n < 0) {
		count(err_counter);
		n = 0;
	}
	st->nr = n / sizeof(__u64);
	st->flags = 0;
}

/* Requests queued without waking user space, at most (in bytes of the
 * ring's 64 KiB): past this a lazy one wakes it too. */
#define UNWIND_LAZY_BYTES (16 * 1024)

/* Sends user space a request for tgid; a lazy one does not wake it (it is
 * taken at user space's next wakeup, within seconds), unless the ring
 * fills. */
static __always_inline bool unwind_submit(__u32 tgid, __u32 flags, bool lazy)
{
	struct offcpu_unwind_request *req =
		bpf_ringbuf_reserve(&unwind_requests, sizeof(*req), 0);

	if (!req)
		return false;
	lazy = lazy && bpf_ringbuf_query(&unwind_requests, BPF_RB_AVAIL_DATA) < UNWIND_LAZY_BYTES;
	req->tgid = tgid;
	req->flags = flags | (lazy ? OFFCPU_UNWIND_REQUEST_QUEUED : 0);
	req->asked_ns = bpf_ktime_get_ns();
	/* Forced: by default a submit wakes user space only if it has taken
	 * every request before, which it has not while lazy ones wait. */
	bpf_ringbuf_submit(req, lazy ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	return true;
}

/* Asks user space for tgid's unwind tables, unless it was asked already. */
static __always_inline void unwind_request(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&unwind_requested, &tgid, &now, BPF_NOEXIST))
		return;
	if (!unwind_submit(tgid, 0, false))
		bpf_map_delete_elem(&unwind_requested, &tgid); /* ask again next time */
}

/* Asks again for the tables of tgid, which has code its published mappings
 * do not cover, unless it asked less than UNWIND_REFRESH_NS ago. The new
 * time also tells user space that maps it is reading may be stale. */
static __always_inline void unwind_refresh(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns(), *asked = bpf_map_lookup_elem(&unwind_requested, &tgid);

	if (!asked) { /* published unasked (a capture's targets), or its entry evicted */
		unwind_request(tgid);
		return;
	}
	if (now - *asked < UNWIND_REFRESH_NS)
		return;
	*asked = now;
	unwind_submit(tgid, 0, false);
}

/* Whether tgid's tables were asked for less than UNWIND_REFRESH_NS ago: a
 * new process user space has not read yet, not one it could not read (a
 * full map, say), whose every walk would try its VMAs again. */
static __always_inline bool unwind_asked_lately(__u32 tgid)
{
	__u64 *asked = bpf_map_lookup_elem(&unwind_requested, &tgid);

	return asked && bpf_ktime_get_ns() - *asked < UNWIND_REFRESH_NS;
}

struct user_walk {
	struct offcpu_stack *st;
	const struct offcpu_unwind_proc *proc;
	__u64 ip, sp, bp;
	bool bp_known;
	bool unknown_pc;    /* met code outside the published mappings */
	bool unknown_first; /* the thread's own PC was outside them */
	/* A uretprobe replaces a return address with its trampoline; the real
	 * ones are in the task's return instances, newest first. */
	__u64 trampoline;
	struct return_instance *ri;
	/* Whose memory the stack is in, for a walk from outside its process
	 * (the in-progress pass, sleepable: bpf_copy_from_user_task()). */
	struct task_struct *task;
};

/* The return address a uretprobe trampoline stands for, popping the
 * instances of that one frame (a chained one shares its caller's slot). */
static __always_inline __u64 uretprobe_return_address(struct user_walk *s)
{
	struct return_instance *ri = s->ri;
	__u64 ra = BPF_CORE_READ(ri, orig_ret_vaddr);

	for (int i = 0; i < 8 && ri && BPF_CORE_READ(ri, chained); i++)
		ri = BPF_CORE_READ(ri, next);
	s->ri = ri ? BPF_CORE_READ(ri, next) : NULL;
	return ra;
}

/* Reads size bytes of the walked stack at addr: the current task's memory,
 * or (remote, a constant) s->task's. 0 or a negative error. */
static __always_inline long read_user(struct user_walk *s, bool remote, void *dst, __u32 size,
				      __u64 addr)
{
	if (remote)
		return bpf_copy_from_user_task(dst, size, (const void *)addr, s->task, 0);
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

static __always_inline bool read_user_u64(struct user_walk *s, bool remote, __u64 addr, __u64 *v)
{
	return !read_user(s, remote, v, sizeof(*v), addr);
}

/*
 * CPython's perf trampolines (3.12 and 3.13 with -X perf) are copies of
 * "sub $8,%rsp; call *%rcx; add $8,%rsp; ret" in anonymous memory, with
 * neither CFI nor a frame pointer: a return address at "add $8,%rsp; ret"
 * in a CPython process's code outside its files is one's, whose caller's
 * frame starts 16 bytes up, rbp untouched.
 */
#define PYTHON_TRAMPOLINE_RETURN 0xc308c48348ull /* add $8,%rsp; ret */

static __always_inline bool python_trampoline_row(struct user_walk *s, bool remote,
						  struct offcpu_unwind_row *row)
{
	__u64 code;

	if (!(s->proc->flags & OFFCPU_UNWIND_PYTHON) || !read_user_u64(s, remote, s->ip, &code) ||
	    (code & 0xffffffffffull) != PYTHON_TRAMPOLINE_RETURN)
		return false;
	row->cfa_rule = OFFCPU_CFA_RSP;
	row->cfa_off = 16;
	row->rbp_rule = OFFCPU_RBP_SAME;
	return true;
}

/*
 * One frame of an unwind: records ip, then finds the caller's ip, sp and bp
 * from the table row that covers ip (a return address: ip - 1 is in the
 * call), or from frame pointers where no table covers it. Returns 1 to stop.
 */
static __always_inline long unwind_step_in(__u32 i, struct user_walk *s, bool remote)
{
	struct offcpu_unwind_row row = { .cfa_rule = OFFCPU_CFA_NONE };
	struct unwind_file_ref file = {};
	__u64 pc = i ? s->ip - 1 : s->ip, cfa, ra, bp = s->bp, pair[2];
	bool saved_at_16;
	struct offcpu_stack *st = s->st;
	__u32 at = i;
	int known;

	/* The verifier needs the bound on the register that indexes. */
	asm volatile("%[at] &= 0x7f" : [at] "+r"(at));
	if (!st || !s->proc || at >= OFFCPU_MAX_STACK_DEPTH)
		return 1;
	st->ips[at] = s->ip;
	st->nr = at + 1;
	known = unwind_rule(s->proc, pc, &row, &file);
	if (file.file_id && s->ip - file.bias <= OFFCPU_FRAME_VADDR_MASK)
		st->ips[at] = OFFCPU_FRAME_FILE | (__u64)file.file_id << OFFCPU_FRAME_FILE_SHIFT |
			      (s->ip - file.bias);
	if (!known && i && !python_trampoline_row(s, remote, &row))
		s->unknown_pc = true; /* a preempted thread's own PC is often in the vDSO */
	else if (!known && !i)
		s->unknown_first = true;
	switch (row.cfa_rule) {
	case OFFCPU_CFA_END:
		st->flags |= OFFCPU_STACK_COMPLETE;
		return 1;
	case OFFCPU_CFA_RSP:
		cfa = s->sp + row.cfa_off;
		break;
	case OFFCPU_CFA_RBP:
		if (!s->bp_known)
			return 1;
		cfa = s->bp + row.cfa_off;
		break;
	case OFFCPU_CFA_PLT:
		cfa = s->sp + 8 + ((s->ip & 15) >= 11 ? 8 : 0);
		break;
	case OFFCPU_CFA_NONE:
		/* Frame pointers: rbp 0 ends the chain, by the psABI's convention. */
		if (!s->bp_known)
			return 1;
		if (!s->bp) {
			if (known) /* a file's code, not JIT code that may clobber rbp */
				st->flags |= OFFCPU_STACK_COMPLETE;
			return 1;
		}
		cfa = s->bp + 16;
		break;
	default:
		return 1;
	}
	/* The stack grows down: a caller's frame is above, and not far above
	 * (a frame-pointer walk through code that uses rbp otherwise can
	 * land anywhere). */
	if (cfa <= s->sp || cfa - s->sp > MAX_FRAME_BYTES)
		return 1;
	/* The saved rbp is most often just below the return address (a
	 * frame-pointer frame, or push %rbp first): one read gets both. */
	saved_at_16 = row.cfa_rule == OFFCPU_CFA_NONE ||
		      (row.rbp_rule == OFFCPU_RBP_AT_CFA && row.rbp_off == -16);
	if (saved_at_16) {
		if (read_user(s, remote, pair, sizeof(pair), cfa - 16))
			return 1;
		bp = pair[0];
		ra = pair[1];
	} else if (!read_user_u64(s, remote, cfa - 8, &ra)) {
		return 1;
	}
	if (ra && ra == s->trampoline && s->ri)
		ra = uretprobe_return_address(s);
	if (row.rbp_rule == OFFCPU_RBP_AT_CFA && row.cfa_rule != OFFCPU_CFA_NONE) {
		if (!saved_at_16 && !read_user_u64(s, remote, cfa + row.rbp_off, &bp))
			return 1;
	} else if (row.rbp_rule == OFFCPU_RBP_UNDEFINED) {
		s->bp_known = false;
	}
	if (!ra) {
		st->flags |= OFFCPU_STACK_COMPLETE; /* a thread's first frame has none */
		return 1;
	}
	if (ra >= OFFCPU_USER_PC_END)
		return 1;
	s->ip = ra;
	s->sp = cfa;
	s->bp = bp;
	return 0;
}

__attribute__((unused)) /* files that walk no user stack include this too */
static long
unwind_step(__u32 i, void *arg)
{
	return unwind_step_in(i, arg, false);
}

/* For sleepable programs only: the verifier refuses the helper elsewhere. */
__attribute__((unused)) static long unwind_step_remote(__u32 i, void *arg)
{
	return unwind_step_in(i, arg, true);
}

/* t's native frames, as unwind_user_stack_of() walks them. */
static __always_inline void unwind_native_stack_of(struct task_struct *t, __u32 tgid,
						   const struct offcpu_unwind_proc *proc,
						   struct offcpu_stack *st, bool remote)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct user_walk s = {
		.st = st, .proc = proc ? proc : &no_tables, .bp_known = true, .task = t
	};
	__u32 depth = unwind_max_depth;

	st->nr = 0;
	st->flags = proc ? OFFCPU_STACK_DWARF : 0;
	count(OFFCPU_CNT_USER_STACK_WALKS);
	if (!regs)
		return;
	s.ip = BPF_CORE_READ(regs, ip);
	s.sp = BPF_CORE_READ(regs, sp);
	s.bp = BPF_CORE_READ(regs, bp);
	s.ri = BPF_CORE_READ(t, utask, return_instances);
	if (s.ri)
		s.trampoline = BPF_CORE_READ(t, mm, uprobes_state.xol_area, vaddr);
	if (depth > OFFCPU_MAX_STACK_DEPTH)
		depth = OFFCPU_MAX_STACK_DEPTH;
	bpf_loop(depth, remote ? unwind_step_remote : unwind_step, &s, 0);
	if (!proc)
		return;
	/* A list built from the VMAs lacks the files that had no table yet
	 * (the first process of a binary, until user space builds its table):
	 * one that met code outside it (and did not reach the first frame
	 * anyway) is built again at the next chance, if tables were published
	 * since; else it would come out the same, at the cost of a VMA walk
	 * per block. User space's list is refreshed. */
	if (proc->flags & OFFCPU_UNWIND_FROM_VMAS) {
		if ((s.unknown_pc || (s.unknown_first && !(st->flags & OFFCPU_STACK_COMPLETE))) &&
		    proc->files_added != unwind_files_added)
			bpf_map_delete_elem(&unwind_procs, &tgid);
	} else if (s.unknown_pc) {
		unwind_refresh(tgid);
	}
	count(OFFCPU_CNT_USTACK_TABLE_WALKS);
	if (!(st->flags & OFFCPU_STACK_COMPLETE))
		count(OFFCPU_CNT_USTACK_TRUNCATED);
}

/* t's user stack, walked with its process's unwind tables (proc), or with
 * frame pointers alone (proc NULL), and then a CPython process's
 * interpreter frames. t's mm must be the current task's, or (remote, a
 * constant; sleepable programs only) t's memory is read as t's. (Two
 * functions: the native walk's state is off the stack before the Python
 * walk's is on it, within the 512 bytes of the in-progress pass.) */
static __always_inline void unwind_user_stack_of(struct task_struct *t, __u32 tgid,
						 const struct offcpu_unwind_proc *proc,
						 struct offcpu_stack *st, bool remote)
{
	unwind_native_stack_of(t, tgid, proc, st, remote);
	if (proc)
		python_walk(t, tgid, proc->flags, st, remote);
}

static __always_inline void unwind_user_stack(struct task_struct *t, __u32 tgid,
					      const struct offcpu_unwind_proc *proc,
					      struct offcpu_stack *st)
{
	unwind_user_stack_of(t, tgid, proc, st, false);
}

/* The unwind tables of tgid; NULL (asking for them) if it has none yet. */
static __always_inline const struct offcpu_unwind_proc *unwind_proc(__u32 tgid)
{
	const struct offcpu_unwind_proc *proc = bpf_map_lookup_elem(&unwind_procs, &tgid);

	if (!proc)
		unwind_request(tgid);
	return proc;
}

/* As unwind_proc(), for a walk of the current task's process from a task
 * work (irqs on: the VMA iterator refuses to run with them off, as in
 * sched_switch): one that has none yet gets its mappings from its VMAs,
 * where it maps files whose tables are loaded already. */
static __always_inline const struct offcpu_unwind_proc *unwind_proc_current(__u32 tgid)
{
	const struct offcpu_unwind_proc *proc = unwind_proc(tgid);

	if (!proc && unwind_asked_lately(tgid) && unwind_proc_from_vmas(tgid))
		proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	return proc;
}

/* prev's user stack: with unwind tables when its process has them, else
 * (and meanwhile) with frame pointers. prev is the current task. */
static __always_inline void walk_user_stack(void *ctx, struct task_struct *prev, __u32 tgid,
					    struct offcpu_stack *st, bool btf)
{
	const struct offcpu_unwind_proc *proc;

	if (btf && unwind_dwarf) {
		proc = unwind_proc(tgid);
		if (proc) {
			unwind_user_stack(prev, tgid, proc, st);
			return;
		}
		count(OFFCPU_CNT_USTACK_FP_FALLBACK);
	}
	walk_stack(ctx, st, BPF_F_USER_STACK, OFFCPU_CNT_DROP_USTACK_ERROR);
}

/* t's user stack where there is no program context to walk from (a task
 * work, or t not current but of the current mm). tp_btf only. in_task_work:
 * t is current, in a task work (irqs on). */
static __always_inline void walk_task_user_stack(struct task_struct *t, __u32 tgid,
						 struct offcpu_stack *st, bool in_task_work)
{
	const struct offcpu_unwind_proc *proc = NULL;

	if (unwind_dwarf)
		proc = in_task_work ? unwind_proc_current(tgid) : unwind_proc(tgid);

	if (unwind_dwarf && !proc)
		count(OFFCPU_CNT_USTACK_FP_FALLBACK);
	unwind_user_stack(t, tgid, proc, st);
}

/* Store the stack under its hash in the current buffer; 0 if it has none. */
static __always_inline __u64 intern_stack(void *stack_map, const struct offcpu_stack *st)
{
	__u64 h;

	if (!st->nr)
		return 0;
	h = stack_hash(st);
	if (!bpf_map_lookup_elem(stack_map, &h) &&
	    bpf_map_update_elem(stack_map, &h, st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(stack_map, &h))
		count(OFFCPU_CNT_DROP_STACK_FULL); /* the time is still counted */
	return h;
}

#endif
