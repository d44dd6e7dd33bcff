/*
 * kind_status: what `offcpuctl status` says about each kind of recording
 * (offcpu, wakeup, offwake, chain, runq, oncpu, bio, fileio, and hotcold,
 * request and latency): ready, in use (by what) or unavailable (why). One
 * table, filled from what the manager gathers, so that a new state (a kind
 * whose programs load on first use) is one more case here. Pure: no I/O,
 * does not log. Called by the manager for each status request.
 */
#ifndef KIND_STATUS_H
#define KIND_STATUS_H

#include <stdbool.h>

#include <linux/types.h>

#include "offcpu.h"

enum kind_state {
	KIND_STATE_READY,	/* can record now; nothing records it */
	KIND_STATE_IN_USE,	/* the continuous profile or a capture records it */
	KIND_STATE_UNAVAILABLE, /* cannot record here; the detail says why */
};

/* The kinds: OFFCPU_KIND_* (the BPF kinds, same numbers), then these. */
enum {
	KIND_STATUS_HOTCOLD = OFFCPU_KIND_COUNT, /* offcpu with on-CPU samples beside */
	KIND_STATUS_REQUEST,			 /* --request: uprobes on a function */
	KIND_STATUS_LATENCY,			 /* Intel PT function latency */
	KIND_STATUS_COUNT,
};

/* What the manager knows about each kind. */
struct kind_status_input {
	const char *unavailable[KIND_STATUS_COUNT]; /* why not; NULL: available */
	const char *traced_with[KIND_STATUS_COUNT]; /* e.g. the tracepoints; NULL: say nothing */
	bool on_demand[KIND_STATUS_COUNT];	    /* its programs load on first use */
	bool continuous[KIND_STATUS_COUNT];	    /* the always-on profile records it */
	unsigned captures[KIND_STATUS_COUNT];	    /* ad-hoc captures (sessions) recording it */
};

struct kind_status {
	const char *name;
	enum kind_state state;
	char detail[400];
};

/* Fills ret[KIND_STATUS_COUNT], in kind order. */
void kind_status_fill(const struct kind_status_input *in, struct kind_status *ret);

/* "ready", "in use", "unavailable". */
const char *kind_status_state_name(enum kind_state state);

#endif
