/* kind_status: see kind_status.h. */
#include <stdio.h>
#include <string.h>

#include "kind_status.h"
#include "proto.h"

static const char *const state_names[] = {
	[KIND_STATE_READY] = "ready",
	[KIND_STATE_IN_USE] = "in use",
	[KIND_STATE_UNAVAILABLE] = "unavailable",
};

const char *kind_status_state_name(enum kind_state state)
{
	return state_names[state];
}

static const char *kind_name(unsigned kind)
{
	switch (kind) {
	case KIND_STATUS_HOTCOLD:
		return "hotcold";
	case KIND_STATUS_REQUEST:
		return "request";
	case KIND_STATUS_LATENCY:
		return "latency";
	default:
		return proto_kind_name(kind); /* the BPF kinds: proto's names */
	}
}

/* "by the continuous profile and 2 captures" */
static void users(const struct kind_status_input *in, unsigned kind, char *buf, size_t size)
{
	unsigned n = in->captures[kind];
	const char *one = kind == KIND_STATUS_LATENCY ? "session" : "capture";

	if (in->continuous[kind] && n)
		snprintf(buf, size, "by the continuous profile and %u %s%s", n, one,
			 n == 1 ? "" : "s");
	else if (in->continuous[kind])
		snprintf(buf, size, "by the continuous profile");
	else
		snprintf(buf, size, "by %u %s%s", n, one, n == 1 ? "" : "s");
}

void kind_status_fill(const struct kind_status_input *in, struct kind_status *ret)
{
	for (unsigned kind = 0; kind < KIND_STATUS_COUNT; kind++) {
		struct kind_status *k = &ret[kind];
		const char *with = in->traced_with[kind];
		char by[96];

		k->name = kind_name(kind);
		if (in->unavailable[kind]) {
			k->state = KIND_STATE_UNAVAILABLE;
			snprintf(k->detail, sizeof(k->detail), "%s", in->unavailable[kind]);
		} else if (in->continuous[kind] || in->captures[kind]) {
			k->state = KIND_STATE_IN_USE;
			users(in, kind, by, sizeof(by));
			snprintf(k->detail, sizeof(k->detail), "%s%s%s", by, with ? "; " : "",
				 with ? with : "");
		} else {
			k->state = KIND_STATE_READY;
			snprintf(k->detail, sizeof(k->detail), "%s%s%s",
				 in->on_demand[kind] ? "its programs load on first use" : "",
				 in->on_demand[kind] && with ? "; " : "", with ? with : "");
		}
	}
}
