// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kernel stack cache of exact walks (stack_cache.bpf.h).
 *
 * A kernel stack walk (ORC, from inside this program) reads the return
 * address of each frame from the stack, at a place that the frames below
 * decide. So a walk that starts in the same place and finds the same
 * return addresses where the last one found them gives the same stack.
 * Each thread keeps a few stacks it was walked in (ways), each with where
 * its return addresses were; a switch-out that finds all of them in place
 * takes that stack without walking. Where they were is learned after a
 * walk, by looking for each return address on the stack, frame after
 * frame, upwards from the program's ctx:
 *   - a system call's frames shift by a random gap at every call
 *     (randomize_kstack_offset, above the system call's own frames): the
 *     frames below it keep their distance from ctx, the entry frame (the
 *     walk's last) its distance from the stack's top, the pt_regs;
 *   - a copy of a later frame's address met before an earlier frame means
 *     dead frames' leftovers lie between them: such a stack is not learned
 *     (nor another for a while), since a leftover copy could be found in
 *     place of the real one.
 * One hit in kstack_audit_period (stack_cache_audit, 64 by default) is
 * walked anyway and compared: a mismatch is counted (kstack_cache_mismatches,
 * in status) and drops the stack.
 */
#include "stack_cache.bpf.h"

#define KSTACK_CACHE_WAYS    4	  /* stacks kept per thread */
#define KSTACK_CACHE_DEPTH   32	  /* frames; deeper stacks are always walked */
#define KSTACK_SCAN_WORDS    4096 /* 32 KiB: any kernel stack */
#define KSTACK_SCAN_BELOW    256  /* bytes: this program's caller's frame is below ctx */
#define KSTACK_SPAN_MAX	     (64u << 10)
#define KSTACK_LEARN_BACKOFF 16 /* misses not learned from after a stack that was not */

const volatile bool kstack_cache_on = false;
const volatile __u32 kstack_audit_period = 64; /* hits per audit; 1: every hit */
/* _stext: kernel and module code lie above it, the kernel's data mostly
 * below (a first sieve for words that may be return addresses). */
const volatile __u64 kernel_text_start = 0;

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The word at addr on a kernel stack: an ordinary load, which the JIT
 * guards (a fault reads 0), not a helper call. */
static __always_inline __u64 stack_word(__u64 addr)
{
	struct rb_node *w = bpf_rdonly_cast((void *)addr, bpf_core_type_id_kernel(struct rb_node));

	return w->__rb_parent_color;
}

__noinline __u64 kstack_word(__u64 addr)
{
	return bpf_rdonly_cast ? stack_word(addr) : 0;
}

struct kstack_way {
	__u32 n;       /* frames; 0: empty */
	__u16 top_off; /* the last frame's: words below the pt_regs */
	__u16 pad;
	__s16 ctx_off[KSTACK_CACHE_DEPTH]; /* frames 1 to n - 2: words from ctx */
	__u64 ips[KSTACK_CACHE_DEPTH];	   /* as the walk gave them */
};

struct kstack_cache {
	__u32 next;    /* the way a stack learned next replaces */
	__u32 audit;   /* 1 + the way a hit being audited came from; 0: none */
	__u32 hits;    /* since the last audit */
	__u32 backoff; /* misses left before learning again */
	struct kstack_way ways[KSTACK_CACHE_WAYS];
};

/* Only threads walked by exact slots have one. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kstack_cache);
} kstack_caches SEC(".maps");

/* Whether every return address of w is in its place: the stack a walk
 * from ctx_addr would give now. */
__noinline int kstack_way_matches(const struct kstack_way *w, __u64 ctx_addr, __u64 regs_addr)
{
	__u32 n;

	if (!w)
		return 0;
	n = w->n;
	if (n < 3 || n > KSTACK_CACHE_DEPTH)
		return 0;
	for (__u32 i = 1; i < KSTACK_CACHE_DEPTH; i++) {
		if (i + 1 >= n)
			break;
		if (stack_word(ctx_addr + (__s64)w->ctx_off[i] * 8) != w->ips[i])
			return 0;
	}
	return stack_word(regs_addr - (__u64)w->top_off * 8) ==
	       w->ips[(n - 1) & (KSTACK_CACHE_DEPTH - 1)];
}

/* Where the current task's user registers are: the top of its stack. */
static __always_inline __u64 stack_top(void)
{
	return address_of((void *)bpf_task_pt_regs(bpf_get_current_task_btf()));
}

__noinline int kstack_cache_lookup(struct offcpu_stack *st, __u64 ctx_addr)
{
	struct kstack_cache *c;
	__u64 top;

	if (!st || !bpf_rdonly_cast)
		return KSTACK_CACHE_MISS;
	c = bpf_task_storage_get(&kstack_caches, bpf_get_current_task_btf(), NULL,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return KSTACK_CACHE_MISS;
	c->audit = 0;
	top = stack_top();
	if (top <= ctx_addr || top - ctx_addr > KSTACK_SPAN_MAX)
		return KSTACK_CACHE_MISS; /* not on its own stack: walk */
	for (__u32 i = 0; i < KSTACK_CACHE_WAYS; i++) {
		struct kstack_way *w = &c->ways[i];

		if (!kstack_way_matches(w, ctx_addr, top))
			continue;
		count(OFFCPU_CNT_KSTACK_CACHE_HITS);
		if (++c->hits >= kstack_audit_period) {
			c->hits = 0;
			c->audit = i + 1;
			return KSTACK_CACHE_AUDIT;
		}
		st->nr = w->n;
		st->flags = 0;
		for (__u32 f = 0; f < KSTACK_CACHE_DEPTH; f++) {
			if (f >= w->n)
				break;
			st->ips[f] = w->ips[f];
		}
		return KSTACK_CACHE_HIT;
	}
	return KSTACK_CACHE_MISS;
}

/* The frame in 1 to n - 2 of st whose address is word; -1 if none. */
__noinline int kstack_frame_of(const struct offcpu_stack *st, __u32 n, __u64 word)
{
	if (!st)
		return -1;
	for (__u32 i = 1; i < KSTACK_CACHE_DEPTH; i++) {
		if (i + 1 >= n)
			break;
		if (st->ips[i] == word)
			return i;
	}
	return -1;
}

struct kstack_scan {
	const struct offcpu_stack *st;
	struct kstack_way *w;
	__u64 from, ctx, top;
	__u32 n;
	__u32 next; /* the frame looked for */
	bool stale; /* a later frame's address came first */
	__u64 last_at;
};

/* Upwards from s->from: frames 1 to n - 2, in order. */
static long kstack_scan_up(__u32 i, void *arg)
{
	struct kstack_scan *s = arg;
	__u64 at = s->from + (__u64)i * 8, word;
	__u32 next = s->next;
	int f;

	if (at >= s->top)
		return 1;
	word = stack_word(at);
	if (word < kernel_text_start)
		return 0;
	f = kstack_frame_of(s->st, s->n, word);
	if (f < 0 || (__u32)f < next)
		return 0; /* not a frame, or a copy of one found already */
	if ((__u32)f > next) {
		s->stale = true;
		return 1;
	}
	s->w->ctx_off[next & (KSTACK_CACHE_DEPTH - 1)] = (__s16)((__s64)(at - s->ctx) >> 3);
	s->last_at = at;
	s->next = next + 1;
	return s->next + 1 >= s->n;
}

/* Downwards from the pt_regs: the last frame, the nearest copy. */
static long kstack_scan_down(__u32 i, void *arg)
{
	struct kstack_scan *s = arg;
	__u64 at = s->top - 8 - (__u64)i * 8;

	if (at <= s->last_at)
		return 1;
	if (stack_word(at) != s->st->ips[(s->n - 1) & (KSTACK_CACHE_DEPTH - 1)])
		return 0;
	s->w->top_off = i + 1;
	s->next = s->n;
	return 1;
}

/* Learns st, just walked from ctx_addr, into w; 0 if it cannot be. */
__noinline int kstack_learn(struct kstack_way *w, const struct offcpu_stack *st, __u64 ctx_addr)
{
	struct kstack_scan s = { .st = st, .w = w, .ctx = ctx_addr, .next = 1 };

	if (!w || !st)
		return 0;
	w->n = 0;
	s.n = st->nr;
	s.top = stack_top();
	if (s.n < 3 || s.n > KSTACK_CACHE_DEPTH || s.top <= ctx_addr ||
	    s.top - ctx_addr > KSTACK_SPAN_MAX)
		return 0;
	s.from = ctx_addr - KSTACK_SCAN_BELOW;
	s.last_at = s.from;
	bpf_loop(KSTACK_SCAN_WORDS, kstack_scan_up, &s, 0);
	if (s.stale || s.next + 1 != s.n)
		return 0;
	bpf_loop(KSTACK_SCAN_WORDS, kstack_scan_down, &s, 0);
	if (s.next != s.n)
		return 0;
	for (__u32 f = 0; f < KSTACK_CACHE_DEPTH; f++) {
		if (f >= s.n)
			break;
		w->ips[f] = st->ips[f];
	}
	w->n = s.n;
	return 1;
}

/* Whether w holds the stack st (return addresses from frame 1: frame 0 is
 * where this program called the walk). */
__noinline int kstack_way_holds(const struct kstack_way *w, const struct offcpu_stack *st)
{
	if (!w || !st || w->n != st->nr)
		return 0;
	for (__u32 f = 1; f < KSTACK_CACHE_DEPTH; f++) {
		if (f >= w->n)
			break;
		if (w->ips[f] != st->ips[f])
			return 0;
	}
	return 1;
}

__noinline int kstack_cache_update(const struct offcpu_stack *st, __u64 ctx_addr)
{
	struct kstack_cache *c;
	struct kstack_way *w;

	if (!st || !bpf_rdonly_cast)
		return 0;
	c = bpf_task_storage_get(&kstack_caches, bpf_get_current_task_btf(), NULL, 0);
	if (!c)
		return 0;
	if (c->audit) {
		w = &c->ways[(c->audit - 1) & (KSTACK_CACHE_WAYS - 1)];
		c->audit = 0;
		count(OFFCPU_CNT_KSTACK_CACHE_AUDITS);
		if (!kstack_way_holds(w, st)) {
			count(OFFCPU_CNT_KSTACK_CACHE_MISMATCHES);
			w->n = 0;
			c->backoff = KSTACK_LEARN_BACKOFF;
		}
		return 0;
	}
	if (c->backoff) {
		c->backoff--;
		return 0;
	}
	w = &c->ways[c->next++ & (KSTACK_CACHE_WAYS - 1)];
	if (kstack_learn(w, st, ctx_addr))
		count(OFFCPU_CNT_KSTACK_CACHE_LEARNED);
	else if (st->nr >= 3 && st->nr <= KSTACK_CACHE_DEPTH)
		c->backoff = KSTACK_LEARN_BACKOFF;
	return 0;
}
