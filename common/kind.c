/* kind: see kind.h. */
#include "kind.h"

#include <stddef.h>

static const struct kind_info {
	enum kind_parts parts;
	const char *leaf; /* ends every row's folded line; NULL: none */
	enum proto_palette palette;
	const char *title; /* of its flame graph */
} kinds[] = {
	[PROTO_KIND_OFFCPU] = { KIND_PARTS_TARGET, NULL, PROTO_PALETTE_IO,
				"Off-CPU Time Flame Graph" },
	[PROTO_KIND_WAKEUP] = { KIND_PARTS_WAKER, NULL, PROTO_PALETTE_WAKEUP,
				"Wakeup Time Flame Graph" },
	[PROTO_KIND_OFFWAKE] = { KIND_PARTS_BOTH, NULL, PROTO_PALETTE_CHAIN,
				 "Off-Wake Time Flame Graph" },
	[PROTO_KIND_CHAIN] = { KIND_PARTS_BOTH, NULL, PROTO_PALETTE_CHAIN, "Chain Graph" },
	[PROTO_KIND_RUNQ] = { KIND_PARTS_TARGET, KIND_FRAME_RUNQUEUE, PROTO_PALETTE_IO,
			      "Run-Queue Wait Flame Graph" },
	[PROTO_KIND_ONCPU] = { KIND_PARTS_TARGET, KIND_FRAME_ONCPU, PROTO_PALETTE_HOT,
			       "On-CPU Time Flame Graph" },
	/* Its queue rows end in KIND_FRAME_QUEUED: see kind_leaf(). */
	[PROTO_KIND_BIO] = { KIND_PARTS_TARGET, NULL, PROTO_PALETTE_IO, "Block I/O Flame Graph" },
	[PROTO_KIND_FILEIO] = { KIND_PARTS_TARGET, NULL, PROTO_PALETTE_IO, "File I/O Flame Graph" },
};

#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

const char *const proto_kind_names[] = {
	[PROTO_KIND_OFFCPU] = "offcpu",
	[PROTO_KIND_WAKEUP] = "wakeup",
	[PROTO_KIND_OFFWAKE] = "offwake",
	[PROTO_KIND_CHAIN] = "chain",
	[PROTO_KIND_RUNQ] = "runq",
	[PROTO_KIND_ONCPU] = "oncpu",
	[PROTO_KIND_BIO] = "bio",
	[PROTO_KIND_FILEIO] = "fileio",
	NULL,
};

_Static_assert(sizeof(proto_kind_names) / sizeof(proto_kind_names[0]) == N_KINDS + 1,
	       "a name for every kind");

/* The row of kind; out of range, the off-CPU kind's (the default). */
static const struct kind_info *kind_info(unsigned kind)
{
	return &kinds[kind < N_KINDS ? kind : PROTO_KIND_OFFCPU];
}

const char *proto_kind_name(unsigned kind)
{
	return kind < N_KINDS ? proto_kind_names[kind] : "?";
}

enum kind_parts kind_parts(unsigned kind)
{
	return kind_info(kind)->parts;
}

const char *kind_leaf(unsigned kind, uint32_t state)
{
	if (kind == PROTO_KIND_BIO && state == KIND_IO_STATE_QUEUE)
		return KIND_FRAME_QUEUED;
	return kind_info(kind)->leaf;
}

enum proto_palette proto_palette_of_kind(enum proto_kind kind, bool oncpu)
{
	return oncpu ? PROTO_PALETTE_HOTCOLD : kind_info(kind)->palette;
}

const char *proto_metric_unit(enum proto_metric metric)
{
	return metric == PROTO_METRIC_BYTES   ? "bytes"
	       : metric == PROTO_METRIC_COUNT ? "I/Os"
					      : "us";
}

const char *proto_title_of_kind(enum proto_kind kind, bool oncpu)
{
	return oncpu ? "Hot/Cold Flame Graph" : kind_info(kind)->title;
}
