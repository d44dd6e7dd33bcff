/*
 * drain: one emptying of the kernel's aggregation maps, with every stack
 * already named. drain_run() blocks (it waits for in-flight BPF programs and
 * reads maps and ELF files), so the daemon runs it on a libuv worker thread,
 * one at a time; the symbolizer is used only from there. Does not log.
 */
#ifndef DRAIN_H
#define DRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "sampling.h"
#include "symbolizer.h"

/* The leaf frame of a fileio --with-filename row: the prefix, then the
 * file's name. */
#define DRAIN_FILE_FRAME_PREFIX "[file] "

/* The root frame of a user stack whose table walk stopped early. */
#define DRAIN_TRUNCATED_FRAME "[truncated]"

/* The stack of a sampled slot's time that no sample stands for. */
#define DRAIN_UNSAMPLED_FRAME "[unsampled]"

struct drain_row {
	struct offcpu_key key;
	struct offcpu_value value;
	const char *ustack; /* ';'-joined frames root->leaf; "" if none */
	const char *kstack;
	const char *chain;     /* the waker part (levels joined by "--"); "" if none */
	uint32_t ustack_flags; /* OFFCPU_STACK_* of the user stack */
};

struct drain_result {
	struct drain_row *rows;
	size_t n_rows;
	struct collector_hist *hists; /* log2 histogram counts, by slot */
	size_t n_hists;
	size_t n_stacks, n_chains;	   /* entries the stack and chain maps held */
	uint64_t counters[OFFCPU_CNT_MAX]; /* totals since the programs were loaded */
	struct sampling_summary sampling[OFFCPU_MAX_SLOTS]; /* of sampled slots */
	/* private: */
	struct hashtab *names;
};

/* Drains c and names the stacks. The maps of the n_tgids processes in tgids
 * (the captures' targets) are read too, so that a target that exits before
 * its stacks are drained is still named. Returns 0 or -errno; *ret must be
 * released with drain_result_release() either way. */
int drain_run(struct collector *c, struct symbolizer *s, const uint32_t *tgids, size_t n_tgids,
	      struct drain_result *ret);
void drain_result_release(struct drain_result *r);

#endif
