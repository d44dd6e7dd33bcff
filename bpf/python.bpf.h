/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython's frames in a user stack: after a table walk of a CPython
 * process's thread, the thread's chain of interpreter frames, appended to
 * the stack as OFFCPU_FRAME_PYTHON values (bpf/offcpu.h), newest first.
 * The thread's state is found in the interpreter's list by its id (and
 * remembered per thread); the layout of each version comes from user space
 * with the process's unwind tables (symbols/cpython_layout.c). Every read
 * is of the process's memory as it is at that moment: a chain that cannot
 * be read, loops or has no room ends in a reason frame, and the native
 * frames stay as walked. Inlined where user stacks are walked
 * (stack.bpf.h); the maps are in maps.bpf.c.
 */
#ifndef OFFCPU_PYTHON_BPF_H
#define OFFCPU_PYTHON_BPF_H

#include "offcpu.bpf.h"

#define PYTHON_THREADS_MAX  256 /* thread states looked at for a thread's own */
#define PYTHON_SCRATCH_NEST 4	/* walks one CPU may have under way at once */

extern const volatile __u32 python_frames;

struct python_procs_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_python_proc);
};

/* A thread's state, by tid, as last found; checked before each use. */
struct python_threads_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
};

/* One frame's bytes per walk under way: a switch's walk, a perf sample's
 * that interrupts it (NMI), a sleepable pass's preempted mid-walk. */
struct python_scratch {
	__u32 depth;
	__u32 pad;
	__u8 frame[PYTHON_SCRATCH_NEST][OFFCPU_PYTHON_FRAME_READ];
};

struct python_scratch_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_scratch);
};

extern struct python_procs_map python_procs SEC(".maps");
extern struct python_threads_map python_threads SEC(".maps");
extern struct python_scratch_map python_scratch SEC(".maps");

struct python_walk {
	struct offcpu_stack *st;
	const struct offcpu_python_layout *l;
	struct task_struct *task;
	__u8 *buf; /* OFFCPU_PYTHON_FRAME_READ bytes */
	__u64 frame;
	__u64 id, tstate; /* the thread's, while its state is looked for */
	__u32 at;	  /* where the next frame goes in st->ips */
	__u32 last;	  /* the last frame written, or OFFCPU_MAX_STACK_DEPTH */
	__u32 frames;
	bool cut;   /* a reason frame was written */
	bool found; /* tstate is the thread's own */
};

static __always_inline long python_read(struct python_walk *w, bool remote, void *dst, __u32 size,
					__u64 addr)
{
	if (remote)
		return bpf_copy_from_user_task(dst, size, (const void *)addr, w->task, 0);
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

static __always_inline bool python_read_u64(struct python_walk *w, bool remote, __u64 addr,
					    __u64 *v)
{
	*v = 0;
	return !python_read(w, remote, v, sizeof(*v), addr);
}

/* A field of the frame read into w->buf; 0 where the layout has none. */
static __always_inline __u64 python_field(const struct python_walk *w, __u16 off, __u32 size)
{
	__u64 v = 0;
	__u32 o = off;

	if (o > OFFCPU_PYTHON_FRAME_READ - 8)
		return 0;
	if (size == 1)
		return w->buf[o];
	if (size == 4)
		return *(__u32 *)(w->buf + o);
	__builtin_memcpy(&v, w->buf + o, sizeof(v));
	return v;
}

/* Writes frame v where the next frame goes; false if that is the last slot
 * and frames remain (it then says so). */
static __always_inline bool python_put(struct python_walk *w, __u64 v)
{
	struct offcpu_stack *st = w->st;
	__u64 at = w->at; /* 64 bits: a 32-bit one is checked in a copy, and used unchecked */

	asm volatile("%[at] &= 0x7f" : [at] "+r"(at));
	if (!st || at >= OFFCPU_MAX_STACK_DEPTH)
		return false;
	if (at == OFFCPU_MAX_STACK_DEPTH - 1 && v > OFFCPU_FRAME_PYTHON + 0xfff)
		v = OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_DEPTH);
	if (v <= OFFCPU_FRAME_PYTHON + 0xfff)
		w->cut = true;
	st->ips[at] = v;
	st->nr = at + 1;
	w->last = at;
	w->at = at + 1;
	return !w->cut;
}

static __always_inline void python_mark_entry(struct python_walk *w)
{
	__u64 last = w->last;

	asm volatile("%[last] &= 0x7f" : [last] "+r"(last));
	if (w->st && last < OFFCPU_MAX_STACK_DEPTH)
		w->st->ips[last] |= OFFCPU_FRAME_PYTHON_ENTRY;
}

/* One interpreter frame: records it, moves to its caller. 1 stops. */
static __always_inline long python_step_in(__u32 i, struct python_walk *w, bool remote)
{
	const struct offcpu_python_layout *l = w->l;
	__u64 code, prev, units, v;
	__u8 owner;

	if (!w->frame || !l || !w->buf)
		return 1;
	if (python_read(w, remote, w->buf, OFFCPU_PYTHON_FRAME_READ, w->frame)) {
		python_put(w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_READ));
		return 1;
	}
	code = python_field(w, l->frame_code, 8);
	prev = python_field(w, l->frame_previous, 8);
	owner = l->frame_owner == OFFCPU_PYTHON_NO_FIELD ? 0 : python_field(w, l->frame_owner, 1);
	if (prev == w->frame) {
		python_put(w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_LOOP));
		return 1;
	}
	w->frame = prev;
	/* 3.12+: the C stack's own frame before each activation of the eval
	 * loop; it runs no code of the program. */
	if ((l->flags & OFFCPU_PYTHON_ENTRY_SHIM) && owner == OFFCPU_PYTHON_OWNER_CSTACK) {
		python_mark_entry(w);
		return 0;
	}
	if (l->flags & OFFCPU_PYTHON_INSTR_INDEX) {
		__s32 index = (__s32)python_field(w, l->frame_instr, 4);

		units = index > 0 ? index : 0;
	} else {
		__u64 instr = python_field(w, l->frame_instr, 8), first = code + l->code_instrs;

		units = instr > first ? (instr - first) / 2 : 0;
	}
	if (units > OFFCPU_FRAME_PYTHON_INSTR_MAX)
		units = OFFCPU_FRAME_PYTHON_INSTR_MAX;
	/* A code address below 4096 would read as a reason: not a frame. */
	if (code < 4096 || code >= (1ull << 47)) {
		python_put(w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_READ));
		return 1;
	}
	v = OFFCPU_FRAME_PYTHON | units << OFFCPU_FRAME_PYTHON_INSTR_SHIFT |
	    OFFCPU_FRAME_PYTHON_CODE(code);
	if (!python_put(w, v))
		return 1;
	w->frames++;
	/* 3.10 runs each frame in an activation of its own; 3.11 marks the
	 * first an activation ran. */
	if (!(l->flags & (OFFCPU_PYTHON_ENTRY_SHIM | OFFCPU_PYTHON_ENTRY_FLAG)) ||
	    ((l->flags & OFFCPU_PYTHON_ENTRY_FLAG) && owner))
		python_mark_entry(w);
	return 0;
}

/* One thread state of the interpreter's list: stops at the thread's own. */
static __always_inline long python_thread_in(__u32 i, struct python_walk *w, bool remote)
{
	const struct offcpu_python_layout *l = w->l;
	__u64 id, next;

	if (!w->tstate || !l)
		return 1;
	if (!python_read_u64(w, remote, w->tstate + l->tstate_id, &id))
		return 1;
	if (id == w->id) {
		w->found = true;
		return 1;
	}
	if (!python_read_u64(w, remote, w->tstate + l->tstate_next, &next) || next == w->tstate)
		next = 0;
	w->tstate = next;
	return 0;
}

__attribute__((unused)) static long python_step(__u32 i, void *arg)
{
	return python_step_in(i, arg, false);
}

__attribute__((unused)) static long python_step_remote(__u32 i, void *arg)
{
	return python_step_in(i, arg, true);
}

__attribute__((unused)) static long python_thread(__u32 i, void *arg)
{
	return python_thread_in(i, arg, false);
}

__attribute__((unused)) static long python_thread_remote(__u32 i, void *arg)
{
	return python_thread_in(i, arg, true);
}

/* t's thread state in the CPython process pp, into w->tstate (0: t runs no
 * Python, a thread of the C side alone). false: the interpreter's state
 * could not be read. */
static __always_inline bool python_find_tstate(struct python_walk *w,
					       const struct offcpu_python_proc *pp, __u32 tid,
					       bool remote)
{
	const struct offcpu_python_layout *l = &pp->layout;
	__u64 *known = bpf_map_lookup_elem(&python_threads, &tid), interp, id;

	struct task_struct *t = w->task;

	/* 3.10 knows a thread by pthread_self(): glibc's thread pointer, the
	 * FS base set when the thread was made. */
	w->id = l->flags & OFFCPU_PYTHON_ID_PTHREAD ? BPF_CORE_READ(t, thread.fsbase) : tid;
	if (known && python_read_u64(w, remote, *known + l->tstate_id, &id) && id == w->id) {
		w->tstate = *known;
		return true;
	}
	if (!python_read_u64(w, remote, pp->runtime + l->runtime_interp, &interp) || !interp ||
	    !python_read_u64(w, remote, interp + l->interp_threads, &w->tstate))
		return false;
	bpf_loop(PYTHON_THREADS_MAX, remote ? python_thread_remote : python_thread, w, 0);
	/* Not found (the list ended, could not be read, or was longer than we
	 * look): a thread of the C side alone, as far as we can tell. */
	if (!w->found)
		w->tstate = 0;
	else
		bpf_map_update_elem(&python_threads, &tid, &w->tstate, BPF_ANY);
	return true;
}

/*
 * Appends t's interpreter frames to st, after its native frames, if its
 * process runs CPython (proc_flags has OFFCPU_UNWIND_PYTHON). remote as
 * for unwind_user_stack_of().
 */
static __always_inline void python_walk(struct task_struct *t, __u32 tgid, __u32 proc_flags,
					struct offcpu_stack *st, bool remote)
{
	const struct offcpu_python_proc *pp;
	struct python_scratch *scr;
	struct python_walk w = { .st = st, .task = t, .last = OFFCPU_MAX_STACK_DEPTH };
	__u32 zero = 0, nest;
	__u64 cur;

	if (!python_frames || !(proc_flags & OFFCPU_UNWIND_PYTHON))
		return;
	pp = bpf_map_lookup_elem(&python_procs, &tgid);
	scr = bpf_map_lookup_elem(&python_scratch, &zero);
	if (!pp || !scr)
		return;
	w.l = &pp->layout;
	w.at = st->nr;
	count(OFFCPU_CNT_PYTHON_WALKS);
	if (!python_find_tstate(&w, pp, BPF_CORE_READ(t, pid), remote)) {
		python_put(&w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_READ));
		count(OFFCPU_CNT_PYTHON_CUT);
		return;
	}
	if (!w.tstate) {
		count(OFFCPU_CNT_PYTHON_NO_THREAD);
		return;
	}
	if (!python_read_u64(&w, remote, w.tstate + w.l->tstate_frame, &cur) ||
	    (w.l->cframe_frame != OFFCPU_PYTHON_NO_FIELD && cur &&
	     !python_read_u64(&w, remote, cur + w.l->cframe_frame, &cur))) {
		python_put(&w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_READ));
		count(OFFCPU_CNT_PYTHON_CUT);
		return;
	}
	w.frame = cur;
	nest = scr->depth++;
	asm volatile("%[nest] &= 3" : [nest] "+r"(nest));
	w.buf = scr->frame[nest];
	bpf_loop(OFFCPU_MAX_STACK_DEPTH, remote ? python_step_remote : python_step, &w, 0);
	scr->depth--;
	if (w.frame && !w.cut) /* the loop's bound: shim frames took turns too */
		python_put(&w, OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_DEPTH));
	if (w.frame)
		count(OFFCPU_CNT_PYTHON_CUT);
	if (w.frames)
		count_add(OFFCPU_CNT_PYTHON_FRAMES, w.frames);
}

#endif
