/*
 * kind: the kinds of profile rows, and how each is drawn.
 */
#ifndef KIND_H
#define KIND_H

#include <stdbool.h>

/*
 * What a profile records: whose stacks, and what time they are charged.
 * The values equal enum offcpu_kind in bpf/offcpu.h (the daemon
 * static-asserts it); the names are proto_kind_name()'s.
 */
enum proto_kind {
	PROTO_KIND_OFFCPU,  /* "offcpu": target stacks; switch-out to switch-in */
	PROTO_KIND_WAKEUP,  /* "wakeup": the waker's stacks; blocked time */
	PROTO_KIND_OFFWAKE, /* "offwake": target stacks, "--", the waker's; blocked time */
	PROTO_KIND_CHAIN,   /* "chain": off-wake through chain_depth waker levels */
	PROTO_KIND_RUNQ,    /* "runq": target stacks; run-queue wait (woken to running) */
	PROTO_KIND_ONCPU,   /* "oncpu": stacks sampled on CPU; samples x period */
	PROTO_KIND_BIO,	    /* "bio": block requests by issuing stacks; state D device
			     * time (issue to completion), R queue time (insert to issue) */
	PROTO_KIND_FILEIO,  /* "fileio": read/write/fsync syscalls by user stack; latency */
};

/* What a flame graph's widths measure: the rows' time, events or bytes
 * (bytes: I/O kinds only). */
enum proto_metric {
	PROTO_METRIC_TIME,
	PROTO_METRIC_COUNT,
	PROTO_METRIC_BYTES,
};

/* The leaf frame that marks on-CPU time in folded lines, flame graphs and
 * pprof (kind oncpu rows), so hot/cold graphs tell it from off-CPU time. */
#define PROTO_ONCPU_FRAME "[on-cpu]"

enum proto_palette {
	PROTO_PALETTE_AUTO, /* the daemon picks: diff for a differential export, else io */
	PROTO_PALETTE_HOT,
	PROTO_PALETTE_IO,
	PROTO_PALETTE_WAKEUP,
	PROTO_PALETTE_CHAIN,
	PROTO_PALETTE_DIFF,
	PROTO_PALETTE_HOTCOLD, /* on-CPU ("[on-cpu]" leaves) warm, off-CPU cool */
};

int proto_kind_from_name(const char *name);

/* The name of an enum proto_kind value ("offcpu", ...); "?" if out of range. */
const char *proto_kind_name(unsigned kind);

/* The unit a folded line's value is in for this metric ("us", "I/Os", "bytes"). */
const char *proto_metric_unit(enum proto_metric metric);

/* The palette and default title a graph of this kind is drawn with;
 * oncpu: with on-CPU samples beside (hot/cold, kind offcpu). */
enum proto_palette proto_palette_of_kind(enum proto_kind kind, bool oncpu);
const char *proto_title_of_kind(enum proto_kind kind, bool oncpu);

#endif
