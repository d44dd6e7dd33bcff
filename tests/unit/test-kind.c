/*
 * Unit test of common/kind.c, the table of kinds: each kind's name, the
 * pseudo-frame its folded lines end in, the parts they hold, its graph's
 * palette and title, as the protocol, the folded writer and the renderers
 * have always spelled them.
 */
#include <stdlib.h>

#include "check.h"
#include "kind.h"

int main(void)
{
	static const struct {
		enum proto_kind kind;
		const char *name, *leaf, *title;
		enum kind_parts parts;
		enum proto_palette palette;
	} want[] = {
		{ PROTO_KIND_OFFCPU, "offcpu", NULL, "Off-CPU Time Flame Graph", KIND_PARTS_TARGET,
		  PROTO_PALETTE_IO },
		{ PROTO_KIND_WAKEUP, "wakeup", NULL, "Wakeup Time Flame Graph", KIND_PARTS_WAKER,
		  PROTO_PALETTE_WAKEUP },
		{ PROTO_KIND_OFFWAKE, "offwake", NULL, "Off-Wake Time Flame Graph", KIND_PARTS_BOTH,
		  PROTO_PALETTE_CHAIN },
		{ PROTO_KIND_CHAIN, "chain", NULL, "Chain Graph", KIND_PARTS_BOTH,
		  PROTO_PALETTE_CHAIN },
		{ PROTO_KIND_RUNQ, "runq", "[runqueue]", "Run-Queue Wait Flame Graph",
		  KIND_PARTS_TARGET, PROTO_PALETTE_IO },
		{ PROTO_KIND_ONCPU, "oncpu", "[on-cpu]", "On-CPU Time Flame Graph",
		  KIND_PARTS_TARGET, PROTO_PALETTE_HOT },
		{ PROTO_KIND_BIO, "bio", NULL, "Block I/O Flame Graph", KIND_PARTS_TARGET,
		  PROTO_PALETTE_IO },
		{ PROTO_KIND_FILEIO, "fileio", NULL, "File I/O Flame Graph", KIND_PARTS_TARGET,
		  PROTO_PALETTE_IO },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		enum proto_kind k = want[i].kind;
		const char *leaf = kind_leaf(k, 2); /* state D: a bio row's device time */

		CHECK_STR(proto_kind_name(k), want[i].name);
		CHECK_STR(proto_kind_names[k], want[i].name);
		CHECK(want[i].leaf ? leaf && !strcmp(leaf, want[i].leaf) : !leaf);
		CHECK(kind_parts(k) == want[i].parts);
		CHECK_STR(proto_title_of_kind(k, false), want[i].title);
		CHECK(proto_palette_of_kind(k, false) == want[i].palette);
		/* Hot/cold: on-CPU samples beside, whatever the kind. */
		CHECK_STR(proto_title_of_kind(k, true), "Hot/Cold Flame Graph");
		CHECK(proto_palette_of_kind(k, true) == PROTO_PALETTE_HOTCOLD);
	}
	CHECK(proto_kind_names[PROTO_KIND_FILEIO + 1] == NULL);
	/* A bio row's queue time ends in its own leaf; other kinds' do not
	 * depend on the state. */
	CHECK_STR(kind_leaf(PROTO_KIND_BIO, KIND_IO_STATE_QUEUE), "[queued]");
	CHECK(kind_leaf(PROTO_KIND_FILEIO, KIND_IO_STATE_QUEUE) == NULL);
	CHECK_STR(kind_leaf(PROTO_KIND_RUNQ, KIND_IO_STATE_QUEUE), "[runqueue]");
	/* Out of range: a name that says so, the off-CPU kind's rules. */
	CHECK_STR(proto_kind_name(99), "?");
	CHECK_STR(proto_title_of_kind(99, false), "Off-CPU Time Flame Graph");
	CHECK(proto_palette_of_kind(99, false) == PROTO_PALETTE_IO);
	CHECK(kind_parts(99) == KIND_PARTS_TARGET && kind_leaf(99, 0) == NULL);
	CHECK_STR(proto_metric_unit(PROTO_METRIC_TIME), "us");
	CHECK_STR(proto_metric_unit(PROTO_METRIC_COUNT), "I/Os");
	CHECK_STR(proto_metric_unit(PROTO_METRIC_BYTES), "bytes");
	return check_failures ? 1 : 0;
}
