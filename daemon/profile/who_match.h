/*
 * who_match: a request's cgroup, unit or container filter (struct
 * proto_cgroup_filter) decided on rows' cgroup paths, as export and hist
 * decide it on stored windows (a capture's is decided in the kernel). It
 * also notes what it saw, so that a name that matched nothing is an error
 * naming what the rows had instead, and a container prefix that matched
 * two containers is an error naming both. Pure; does not log.
 */
#ifndef WHO_MATCH_H
#define WHO_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

struct who_match;

/* Whether who names anything to filter by. */
bool who_given(const struct proto_cgroup_filter *who);

/* Whether the cgroup at path is the outermost of a subtree who names:
 * the cgroup who.cgroup itself, or one whose unit or container is who's
 * and whose parent's is not. A capture's kernel filter takes such a
 * cgroup made while it runs (a unit or container restarted). */
bool who_names_subtree(const struct proto_cgroup_filter *who, const char *path);

/* A matcher of who (copied). Returns 0 or -ENOMEM. */
int who_match_new(const struct proto_cgroup_filter *who, struct who_match **ret);
void who_match_free(struct who_match *w); /* NULL-safe */

/* Whether a row of this cgroup path (NULL or "": not known) is in. */
bool who_match_keep(struct who_match *w, const char *cgroup);

/*
 * After the rows: 0 if some row was in and, for a container prefix, all of
 * one container; -ENOENT if none was, with err naming the closest of what
 * the rows had (or that they had none); -EEXIST if the prefix matched
 * several containers, with err naming them.
 */
int who_match_verdict(const struct who_match *w, char *err, size_t err_size);

#endif
