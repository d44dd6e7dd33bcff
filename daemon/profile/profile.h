/*
 * profile: what one capture (or window, or export) has collected so far.
 * Rows are keyed by thread, state and stack names and summed; a name is
 * copied once, at its first sight, and every row that has it shares that
 * copy (profile_foreach() gives the same pointer). Fed with drain rows
 * and read out as folded text or protocol samples by one thread at a time
 * (the loop's, or a worker's for a reply). Does not log.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drain.h"
#include "proto.h"

struct profile;

/* One accumulated row, by name. */
struct profile_row {
	const char *comm;
	uint32_t tgid;
	uint32_t pid;
	uint32_t state; /* enum offcpu_state */
	uint64_t sum_ns;
	uint64_t count;
	uint64_t bytes;	    /* I/O kinds; 0 for the others */
	const char *ustack; /* ';'-joined frames root->leaf; "" if none */
	const char *kstack;
	uint32_t kind;	       /* enum offcpu_kind */
	const char *chain;     /* the waker part, folded order; "" if none */
	uint32_t ustack_flags; /* OFFCPU_STACK_*: how the user stack was walked */
	/* The thread's cgroup v2 path (cgroup_paths.h); "": not known. */
	const char *cgroup;
	uint32_t ns_pid; /* the process's pid in its own pid namespace; 0: tgid, or not known */
};

int profile_new(struct profile **ret); /* 0 or -ENOMEM */
void profile_free(struct profile *p);  /* NULL-safe */

/* Adds a drained row (its slot is ignored). Returns 0 or -ENOMEM. */
int profile_add(struct profile *p, const struct drain_row *row);

/* Adds a row given by name, e.g. read back from the store; rows with equal
 * thread, state and stack names are summed. Returns 0 or -ENOMEM. */
int profile_add_row(struct profile *p, const struct profile_row *row);

/* profile_add_row() with the source lines cut from the frames
 * (common/frame.h), so rows that differ only in lines are summed. */
int profile_add_row_without_lines(struct profile *p, const struct profile_row *row);

/* A copy of p without source lines, as above. Returns 0 or -ENOMEM. */
int profile_without_lines(const struct profile *p, struct profile **ret);

/* Calls fn for every row, in no particular order; stops at and returns the
 * first nonzero result of fn. */
int profile_foreach(const struct profile *p, int (*fn)(void *arg, const struct profile_row *row),
		    void *arg);

uint64_t profile_total_ns(const struct profile *p);
size_t profile_rows(const struct profile *p);

/* Folded text (see folded.h) of the metric: time in microseconds, counts,
 * or bytes (proto_metric_unit()). NULL on ENOMEM. */
char *profile_folded(const struct profile *p, bool want_user, bool want_kernel,
		     enum proto_metric metric);

/* The same, with group_by's root frame above each line's comm. */
char *profile_folded_by(const struct profile *p, bool want_user, bool want_kernel,
			enum proto_metric metric, enum proto_group_by group_by);

/* Rows as protocol samples, frames root->leaf. Returns 0 or -ENOMEM; free
 * with profile_samples_free(). */
int profile_samples(const struct profile *p, struct proto_sample **ret, size_t *ret_n);
void profile_samples_free(struct proto_sample *samples, size_t n);

#endif
