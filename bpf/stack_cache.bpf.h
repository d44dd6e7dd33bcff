/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A verified cache of the kernel stacks exact slots walk at switch-out
 * (stack_cache.bpf.c). Most threads block again and again in the same
 * place, and a walk (bpf_get_stack) is the costliest part of an exact
 * block; the cache answers with the stack the walk would give, after
 * checking that every return address it holds is still where the walk
 * found it.
 */
#ifndef OFFCPU_STACK_CACHE_BPF_H
#define OFFCPU_STACK_CACHE_BPF_H

#include "stack.bpf.h"

enum kstack_cache_answer {
	KSTACK_CACHE_MISS,  /* walk, then kstack_cache_update() */
	KSTACK_CACHE_HIT,   /* the stack is in st */
	KSTACK_CACHE_AUDIT, /* a hit to check: walk, then kstack_cache_update() */
};

/* Set by the loader: the kernel has bpf_rdonly_cast() (6.2) and the
 * configuration asks for the cache (stack_cache = on). */
extern const volatile bool kstack_cache_on;

int kstack_cache_lookup(struct offcpu_stack *st, __u64 ctx_addr);
int kstack_cache_update(const struct offcpu_stack *st, __u64 ctx_addr);

/* The word at addr on a kernel stack, for the files beside
 * stack_cache.bpf.c: 0 where the kernel has no bpf_rdonly_cast (6.2). (Only
 * that file declares the kfunc: libbpf 1.1's linker fails on an extern
 * function that two objects declare.) */
__u64 kstack_word(__u64 addr);

/*
 * A pointer as a number, for the cache's address arithmetic: the verifier
 * tracks a pointer's type through registers and forbids that arithmetic,
 * but not through a map value (privileged programs may store pointers).
 */
static __always_inline __u64 address_of(const void *p)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return 0;
	s->addr = (__u64)p;
	return *(volatile __u64 *)&s->addr;
}

/* The current task's kernel stack, from the cache or walked (and then
 * learned): a tp_btf program's ctx is on that stack, where the walk starts. */
static __always_inline void walk_kernel_stack(void *ctx, struct offcpu_stack *st, __u32 err_counter)
{
	int answer = KSTACK_CACHE_MISS;
	__u64 at = 0;

	if (kstack_cache_on) {
		at = address_of(ctx);
		answer = at ? kstack_cache_lookup(st, at) : KSTACK_CACHE_MISS;
		if (answer == KSTACK_CACHE_HIT)
			return;
	}
	walk_stack(ctx, st, 0, err_counter);
	if (at)
		kstack_cache_update(st, at);
}

#endif
