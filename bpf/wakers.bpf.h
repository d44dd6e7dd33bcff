/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Waker chains as the blocked thread's rows name them (wakers.bpf.c
 * records them).
 */
#ifndef OFFCPU_WAKERS_BPF_H
#define OFFCPU_WAKERS_BPF_H

#include "offcpu.bpf.h"

__u64 chain_hash(const struct offcpu_chain *c, __u32 depth);

/* The first depth levels of the block's chain, in the current buffer. */
static __always_inline __u64 intern_chain(void *chain_map, const struct offcpu_chain *c,
					  __u32 depth)
{
	__u32 zero = 0;
	struct scratch *scr;
	__u64 h;

	if (!c->n)
		return 0; /* no wakeup seen: woken before we looked */
	h = chain_hash(c, depth);
	if (bpf_map_lookup_elem(chain_map, &h))
		return h;
	scr = bpf_map_lookup_elem(&scratch, &zero);
	if (!scr)
		return h;
	__builtin_memcpy(&scr->chain, c, sizeof(*c));
	scr->chain.n = c->n < depth ? c->n : depth;
	if (bpf_map_update_elem(chain_map, &h, &scr->chain, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(chain_map, &h))
		count(OFFCPU_CNT_DROP_CHAIN_FULL); /* the time is still counted */
	return h;
}

#endif
