/*
 * folded_line: the layout of a profile row's folded line (flamegraph.pl's
 * input), written once, for the daemon's writer (daemon/profile/folded.c) and the
 * stack filter (stack_filter.c), so a filter sees the frames the line holds:
 *   offcpu   comm;user;-;kernel
 *   runq     comm;user;-;kernel;[runqueue]
 *   oncpu    comm;user;-;kernel;[on-cpu]
 *   bio      comm;user;-;kernel            (device time; queue time ends ;[queued])
 *   fileio   comm;user;-;kernel
 *   wakeup   comm;chain                  (the waker part only)
 *   offwake  comm;user;-;kernel;--;chain (also chain: levels are in chain)
 * The "-" delimiter (as in offcputime -d) stands between the two parts
 * whenever both were collected, even if one is empty, so a reader can
 * always tell kernel from user frames. Which kind has which parts and
 * pseudo-frames is the table of kinds' (kind.h). Does not log.
 */
#ifndef FOLDED_LINE_H
#define FOLDED_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row; the strings are ';'-joined frames, NULL or "" if none. */
struct folded_line_row {
	uint32_t kind;	    /* enum proto_kind */
	uint32_t state;	    /* its thread state; for bio, KIND_IO_STATE_QUEUE or not */
	const char *ustack; /* root->leaf */
	const char *kstack; /* root->leaf */
	const char *chain;  /* the waker part (wakeup, offwake, chain kinds) */
	bool want_user;	    /* which target parts were collected */
	bool want_kernel;
};

#define FOLDED_LINE_MAX_PARTS 6

/* One part of a line after its comm, in order. */
struct folded_line_part {
	const char *text; /* ';'-joined frames, or a delimiter; never NULL */
	bool delimiter;	  /* "-" or "--": not a frame */
	bool always;	  /* written (after its ';') even when text is "" */
};

/* Fills parts[FOLDED_LINE_MAX_PARTS] with row's parts; returns how many. */
size_t folded_line_parts(const struct folded_line_row *row, struct folded_line_part *parts);

/* The line's stack: comm, then each part after a ';' (a part that is ""
 * and not always is left out). malloc'd; NULL on ENOMEM. */
char *folded_line_format(const char *comm, const struct folded_line_row *row);

#endif
