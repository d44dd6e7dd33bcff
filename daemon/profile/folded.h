/*
 * folded: writes folded stacks, the input format of flamegraph.pl:
 *   comm;user frames root->leaf;-;kernel frames root->leaf VALUE
 * one line per unique stack, identical stacks summed, lines sorted. The "-"
 * delimiter (as in offcputime -d) stands between the two parts whenever both
 * were collected, even if one is empty, so a reader can always tell kernel
 * from user frames. Used by the daemon to answer captures. Does not log.
 */
#ifndef FOLDED_H
#define FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h> /* the __u32/__u64 of offcpu.h */

#include "offcpu.h"

struct folded;

int folded_new(struct folded **ret); /* 0 or -ENOMEM */
void folded_free(struct folded *f);  /* NULL-safe */

/* One stack to add; the strings are ';'-joined frames ("" if none). */
struct folded_stack {
	const char *group; /* the root frame above comm (--group-by); NULL or "": none */
	const char *comm;
	const char *ustack; /* root->leaf */
	const char *kstack; /* root->leaf */
	uint32_t kind;	    /* enum offcpu_kind: decides the layout */
	const char *chain;  /* the waker part (wakeup, offwake, chain kinds) */
	uint32_t state;	    /* enum offcpu_state; for BIO, OFFCPU_IO_STATE_* */
};

/*
 * Adds one stack in its kind's layout (common/folded_line.h).
 * want_user/want_kernel say which target parts were collected. value is in
 * any unit; folded_text() converts. Returns 0 or -ENOMEM.
 */
int folded_add(struct folded *f, const struct folded_stack *st, bool want_user, bool want_kernel,
	       uint64_t value);

/* Sorted, merged text; each merged value is divided by divisor (rounded to
 * nearest), so sums are rounded once; lines that round to 0 are left out.
 * malloc'd (caller frees), NULL on ENOMEM. */
char *folded_text(struct folded *f, uint64_t divisor);

#endif
