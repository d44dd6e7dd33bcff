/*
 * result_notes: the "notes" of a capture's or an export's reply: one
 * sentence each saying why a result is empty and what would fill it, or
 * what the user can do about frames it could not name ([unknown: anonymous]
 * JIT code, [truncated] roots). The daemon writes them once; offcpuctl
 * prints them, --json carries them, the web UI shows them. Used by
 * capture.c and the store's export job. Reads <proc>/TID/status for
 * result_notes_thread_of() only; does not log.
 */
#ifndef RESULT_NOTES_H
#define RESULT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define RESULT_NOTES_MAX 8

/* A frame kind gets its note where its rows hold at least this share of the
 * result's time: below it, the picture is right and the note is noise. */
#define RESULT_NOTES_FRAME_SHARE_PCT 5

#define RESULT_NOTES_ANONYMOUS_FRAME "[unknown: anonymous]"

struct result_notes {
	char *v[RESULT_NOTES_MAX]; /* malloc'd; the first n are set */
	size_t n;
};

/* Adds a printf-formatted note. Beyond RESULT_NOTES_MAX, notes are left
 * out (0). Returns 0 or -ENOMEM. */
int result_notes_add(struct result_notes *notes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void result_notes_free(struct result_notes *notes); /* leaves it empty */

/* The no_data error reply of an svg or speedscope of nothing, its message
 * saying why: "nothing to draw: NOTE; NOTE". NULL on ENOMEM. */
char *result_notes_no_data(const struct result_notes *notes);

/* The time of p's rows with a frame [unknown: anonymous] in their user
 * stack, and with [truncated] as its root. */
struct result_frame_shares {
	uint64_t total_ns, anonymous_ns, truncated_ns;
};
void result_frame_shares(const struct profile *p, struct result_frame_shares *ret);

/* Adds the notes that shares call for (see RESULT_NOTES_FRAME_SHARE_PCT).
 * Returns 0 or -ENOMEM. */
int result_notes_frames(struct result_notes *notes, const struct result_frame_shares *shares);

/*
 * The filters of a request as offcpuctl spells them, into buf (always
 * NUL-terminated): "--pid 12 --comm nginx --grep 'x y'"; "" if none. States
 * are named only where state_mask is not all of them. pids: n_pids of them.
 */
void result_notes_filters(char *buf, size_t size, const uint32_t *pids, size_t n_pids,
			  uint32_t state_mask, const char *comm, const char *grep,
			  const char *exclude, const char *cgroup, const char *unit,
			  const char *container);

/* Whether tid is a thread of another process under proc_root (its status's
 * Tgid differs): true and *ret_tgid set; false if it is a process, does not
 * exist or cannot be read. */
bool result_notes_thread_of(const char *proc_root, uint32_t tid, uint32_t *ret_tgid);

#endif
