/*
 * kind: the table of kinds, the one place that says what each kind of profile
 * row is: its name, the parts and pseudo-frames of its folded line (laid out
 * by common/folded_line.h for the daemon's writer and the stack filter), and
 * the palette and title its flame graph is drawn with. Shared by the
 * protocol, the daemon, the renderers and offcpuctl. Does not log.
 */
#ifndef KIND_H
#define KIND_H

#include <stdbool.h>
#include <stdint.h>

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

/*
 * The pseudo-frames that end a row's folded line, as leaves: run-queue wait
 * (kind runq), on-CPU time (kind oncpu; hot/cold graphs and pprof tell it from
 * off-CPU time by it) and a block request's queue time (kind bio, state
 * KIND_IO_STATE_QUEUE).
 */
#define KIND_FRAME_RUNQUEUE "[runqueue]"
#define KIND_FRAME_ONCPU    "[on-cpu]"
#define KIND_FRAME_QUEUED   "[queued]"

/* The state of a bio row's queue time (insert to issue): OFFCPU_IO_STATE_QUEUE
 * in bpf/offcpu.h, R (daemon/profile/folded.c static-asserts it). */
#define KIND_IO_STATE_QUEUE 0

/* Which stacks a kind's folded line holds after its comm. */
enum kind_parts {
	KIND_PARTS_TARGET, /* the target's user and kernel frames */
	KIND_PARTS_WAKER,  /* the waker part only (wakeup) */
	KIND_PARTS_BOTH,   /* the target's, "--", the waker part (offwake, chain) */
};

enum proto_palette {
	PROTO_PALETTE_AUTO, /* the daemon picks: diff for a differential export, else io */
	PROTO_PALETTE_HOT,
	PROTO_PALETTE_IO,
	PROTO_PALETTE_WAKEUP,
	PROTO_PALETTE_CHAIN,
	PROTO_PALETTE_DIFF,
	PROTO_PALETTE_HOTCOLD, /* on-CPU ("[on-cpu]" leaves) warm, off-CPU cool */
};

/* The kinds' names as requests spell them, indexed by enum proto_kind,
 * NULL-terminated. */
extern const char *const proto_kind_names[];

int proto_kind_from_name(const char *name);

/* The name of an enum proto_kind value ("offcpu", ...); "?" if out of range. */
const char *proto_kind_name(unsigned kind);

/* Which stacks the folded line of a row of kind holds (KIND_PARTS_TARGET if
 * out of range). */
enum kind_parts kind_parts(unsigned kind);

/* The pseudo-frame that ends the folded line of a row of kind in state
 * (KIND_FRAME_*), or NULL if none does. */
const char *kind_leaf(unsigned kind, uint32_t state);

/* The unit a folded line's value is in for this metric ("us", "I/Os", "bytes"). */
const char *proto_metric_unit(enum proto_metric metric);

/* The palette and default title a graph of this kind is drawn with;
 * oncpu: with on-CPU samples beside (hot/cold, kind offcpu). */
enum proto_palette proto_palette_of_kind(enum proto_kind kind, bool oncpu);
const char *proto_title_of_kind(enum proto_kind kind, bool oncpu);

#endif
