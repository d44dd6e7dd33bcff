// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The __sched frames of a sleeping task's kernel stack (sched_frames.bpf.h).
 *
 * Below the first frame R0 that the kernel's walk gives (a return address
 * into, say, hrtimer_nanosleep) lie, down to the saved stack pointer, the
 * frames it skipped: the return address into do_nanosleep, then into
 * schedule, then into __schedule (from its call of __switch_to_asm). One
 * scan finds where R0 is, above the stack pointer, and checks that a call
 * ends just before it; then, frame after frame, a scan goes down from the
 * last frame's place for the next: a word that returns into the section (an
 * address inside it that a call instruction ends just before), preferably
 * into the very function the last frame called (a direct call's target):
 * the words above that one were leftovers of dead frames. The callee cannot
 * be required (mutex_lock reaches __mutex_lock by tail calls; an indirect
 * call goes through a retpoline thunk), so where no word returns into it the
 * first word found is taken. A word whose call went anywhere but on into
 * the chain (a __sched function, a thunk or a register, or __switch_to_asm)
 * is a dead frame's. The chain ends at the return into __schedule from
 * __switch_to_asm, below which lie only the registers it saved.
 */
#include "sched_frames.bpf.h"

#define SCHED_SCAN_WORDS 2048 /* 16 KiB: where R0 is looked for, above sp */

const volatile bool sched_frames_on = false;
const volatile __u64 sched_text_start = 0, sched_text_end = 0;
const volatile __u64 switch_to_asm = 0; /* __switch_to_asm: the last frame's callee */
const volatile __u64 thunks_start = 0, thunks_end = 0; /* the retpoline thunks */

/* The search's room for programs that run to the end on their CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sched_scan);
} sched_scans SEC(".maps");

static __always_inline bool in_sched_text(__u64 addr)
{
	return addr >= sched_text_start && addr < sched_text_end;
}

#define NOT_A_CALL  (~0ull)
#define CALLEE_SPAN 4096 /* a return address this far past its callee's start is taken first */

/* What a call instruction that ends just before ra called: its target for
 * a direct one (call rel32), 0 for an indirect one (call *%reg, call
 * *rel32(%rip)); NOT_A_CALL if no call ends there. A global function: the
 * verifier checks it once. */
__noinline __u64 call_before(__u64 ra)
{
	__u8 c[8];

	if (bpf_probe_read_kernel(c, sizeof(c), (const void *)(ra - 8)))
		return NOT_A_CALL;
	if (c[3] == 0xe8)
		return ra + (__s64)(__s32)(c[4] | c[5] << 8 | c[6] << 16 | (__u32)c[7] << 24);
	if ((c[6] == 0xff && (c[7] & 0xf8) == 0xd0) || (c[2] == 0xff && c[3] == 0x15))
		return 0;
	return NOT_A_CALL;
}

/* bpf_loop's context must be on the stack: it points to the search's room. */
struct scan_ref {
	struct sched_scan *s;
};

/* Up from sp to R0's place (a bpf_loop callback). */
static long find_r0(__u32 i, void *arg)
{
	struct sched_scan *s = ((struct scan_ref *)arg)->s;
	__u64 at;

	if (!s)
		return 1;
	at = s->sp + (__u64)i * 8;
	if (kstack_word(at) != s->r0)
		return 0;
	s->at = at;
	return 1;
}

/*
 * Down from the last frame's place towards sp, for the next frame (a
 * bpf_loop callback): the first word that returns into the section after a
 * call, unless a later one returns into the function the last frame called
 * (s->callee, within CALLEE_SPAN of its start): that one is taken, and the
 * words above it were leftovers.
 */
static long find_next(__u32 i, void *arg)
{
	struct sched_scan *s = ((struct scan_ref *)arg)->s;
	__u64 at, w, target;

	if (!s)
		return 1;
	at = s->at - 8 * ((__u64)i + 1);
	if (at < s->sp)
		return 1;
	w = kstack_word(at);
	if (!in_sched_text(w))
		return 0;
	target = call_before(w);
	/* A frame of the chain called on into it: a __sched function, through
	 * a thunk or a register, or __switch_to_asm at its end. A return
	 * address after a call of anything else is a dead frame's. */
	if (target == NOT_A_CALL || (target && !in_sched_text(target) && target != switch_to_asm &&
				     !(target >= thunks_start && target < thunks_end)))
		return 0;
	if (s->callee && w > s->callee && w - s->callee < CALLEE_SPAN) {
		s->next = w, s->next_at = at, s->next_target = target;
		return 1;
	}
	if (!s->next) {
		s->next = w, s->next_at = at, s->next_target = target;
		if (!s->callee)
			return 1; /* no callee to prefer: the first one */
	}
	return 0;
}

/* The frames below R0, deepest last, into s->found. */
static __always_inline void find_frames(struct sched_scan *s, struct scan_ref *ref, __u64 target)
{
	for (int k = 0; k < SCHED_FRAMES_MAX; k++) {
		/* __switch_to_asm saved only registers below its return address */
		if (target == switch_to_asm && switch_to_asm)
			return;
		s->callee = in_sched_text(target) ? target : 0;
		s->next = 0;
		bpf_loop(SCHED_SCAN_WORDS, find_next, ref, 0);
		if (!s->next)
			return;
		s->found[k & (SCHED_FRAMES_MAX - 1)] = s->next;
		s->n = k + 1;
		s->at = s->next_at;
		target = s->next_target;
	}
}

__noinline int sched_frames_recover(struct offcpu_stack *st, __u64 sp, struct sched_scan *scan)
{
	__u32 n, nr, i, zero = 0;
	struct scan_ref ref;
	__u64 target;

	if (!scan)
		scan = bpf_map_lookup_elem(&sched_scans, &zero);
	if (!st || !sp || !scan)
		return 0;
	__builtin_memset(scan, 0, sizeof(*scan));
	scan->sp = sp;
	nr = st->nr;
	if (!nr || nr > OFFCPU_MAX_STACK_DEPTH)
		return 0;
	scan->r0 = st->ips[0];
	ref.s = scan;
	bpf_loop(SCHED_SCAN_WORDS, find_r0, &ref, 0);
	target = scan->at ? call_before(scan->r0) : NOT_A_CALL;
	if (target == NOT_A_CALL)
		return 0; /* not a return address where it was found: leave st be */
	find_frames(scan, &ref, target);
	n = scan->n;
	if (!n || n > SCHED_FRAMES_MAX)
		return 0;
	/* Make room at the front: the outermost frames go where there is none. */
	if (nr + n > OFFCPU_MAX_STACK_DEPTH)
		nr = OFFCPU_MAX_STACK_DEPTH - n;
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < nr; i++) {
		__u64 from = nr - 1 - i, to = from + n; /* 64-bit: no copy the bound misses */

		/* The verifier needs the bounds on the registers that index. */
		asm volatile("%[x] &= 0x7f" : [x] "+r"(from));
		asm volatile("%[x] &= 0x7f" : [x] "+r"(to));
		if (from >= OFFCPU_MAX_STACK_DEPTH || to >= OFFCPU_MAX_STACK_DEPTH)
			break;
		st->ips[to] = st->ips[from];
	}
	for (i = 0; i < SCHED_FRAMES_MAX && i < n; i++)
		st->ips[i] = scan->found[(n - 1 - i) & (SCHED_FRAMES_MAX - 1)];
	st->nr = nr + n;
	count_add(OFFCPU_CNT_KSTACK_SCHED_FRAMES, n);
	return n;
}
