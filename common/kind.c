/* The rendering rules of the kinds: see proto.h. */
#include "proto.h"

enum proto_palette proto_palette_of_kind(enum proto_kind kind, bool oncpu)
{
	if (oncpu)
		return PROTO_PALETTE_HOTCOLD;
	switch (kind) {
	case PROTO_KIND_WAKEUP:
		return PROTO_PALETTE_WAKEUP;
	case PROTO_KIND_OFFWAKE:
	case PROTO_KIND_CHAIN:
		return PROTO_PALETTE_CHAIN;
	case PROTO_KIND_ONCPU:
		return PROTO_PALETTE_HOT;
	default:
		return PROTO_PALETTE_IO;
	}
}

const char *proto_metric_unit(enum proto_metric metric)
{
	return metric == PROTO_METRIC_BYTES   ? "bytes"
	       : metric == PROTO_METRIC_COUNT ? "I/Os"
					      : "us";
}

const char *proto_title_of_kind(enum proto_kind kind, bool oncpu)
{
	if (oncpu)
		return "Hot/Cold Flame Graph";
	switch (kind) {
	case PROTO_KIND_WAKEUP:
		return "Wakeup Time Flame Graph";
	case PROTO_KIND_OFFWAKE:
		return "Off-Wake Time Flame Graph";
	case PROTO_KIND_CHAIN:
		return "Chain Graph";
	case PROTO_KIND_RUNQ:
		return "Run-Queue Wait Flame Graph";
	case PROTO_KIND_ONCPU:
		return "On-CPU Time Flame Graph";
	case PROTO_KIND_BIO:
		return "Block I/O Flame Graph";
	case PROTO_KIND_FILEIO:
		return "File I/O Flame Graph";
	default:
		return "Off-CPU Time Flame Graph";
	}
}
