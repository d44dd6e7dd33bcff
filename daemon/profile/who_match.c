/* who_match: see who_match.h. */
#include "who_match.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_identity.h"

/* Distinct names kept for the error: enough to pick the closest few. */
#define WHO_SEEN_MAX 64
#define WHO_SUGGEST  5

struct who_match {
	struct proto_cgroup_filter who;
	char *last;	  /* the last row's cgroup and its verdict: rows come in runs */
	bool last_keep;
	bool any;	  /* some row was in */
	char *seen[WHO_SEEN_MAX]; /* names of the filter's sort the rows had */
	size_t n_seen;
	char *containers[2]; /* the first two containers matched */
};

bool who_given(const struct proto_cgroup_filter *who)
{
	return who->cgroup[0] || who->unit[0] || who->container[0];
}

/* Whether the identity of path (len bytes) is who's unit or container. */
static bool names_who(const struct proto_cgroup_filter *who, const char *path, size_t len)
{
	struct cgroup_identity_names id;
	char *copy = strndup(path, len);
	bool match;

	if (!copy)
		return false;
	cgroup_identity_names(copy, &id);
	free(copy);
	if (who->unit[0])
		match = id.unit[0] && cgroup_unit_matches(id.unit, who->unit);
	else
		match = cgroup_container_matches(id.container, who->container);
	return match;
}

bool who_names_subtree(const struct proto_cgroup_filter *who, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (who->cgroup[0])
		return !strcmp(path, who->cgroup);
	if ((!who->unit[0] && !who->container[0]) || !slash)
		return false;
	return names_who(who, path, strlen(path)) && !names_who(who, path, slash - path);
}

int who_match_new(const struct proto_cgroup_filter *who, struct who_match **ret)
{
	struct who_match *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->who = *who;
	*ret = w;
	return 0;
}

void who_match_free(struct who_match *w)
{
	if (!w)
		return;
	free(w->last);
	for (size_t i = 0; i < w->n_seen; i++)
		free(w->seen[i]);
	free(w->containers[0]);
	free(w->containers[1]);
	free(w);
}

/* Notes name in list (of n, at most max), once. */
static void note(char **list, size_t *n, size_t max, const char *name)
{
	char *copy;

	if (!*name || *n == max)
		return;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list[i], name))
			return;
	copy = strdup(name);
	if (copy)
		list[(*n)++] = copy;
}

static bool decide(struct who_match *w, const char *cgroup)
{
	struct cgroup_identity_names id;
	char label[CGROUP_CONTAINER_SIZE + 32];
	size_t n_containers;
	bool keep;

	if (w->who.cgroup[0]) {
		note(w->seen, &w->n_seen, WHO_SEEN_MAX, cgroup);
		return cgroup_path_within(cgroup, w->who.cgroup);
	}
	cgroup_identity_names(cgroup, &id);
	if (w->who.unit[0]) {
		note(w->seen, &w->n_seen, WHO_SEEN_MAX, id.unit);
		return id.unit[0] && cgroup_unit_matches(id.unit, w->who.unit);
	}
	snprintf(label, sizeof(label), "%s:%s", id.runtime, id.container);
	if (id.container[0])
		note(w->seen, &w->n_seen, WHO_SEEN_MAX, label);
	keep = cgroup_container_matches(id.container, w->who.container);
	n_containers = !!w->containers[0] + !!w->containers[1];
	if (keep)
		note(w->containers, &n_containers, 2, label);
	return keep;
}

bool who_match_keep(struct who_match *w, const char *cgroup)
{
	if (!cgroup || !*cgroup)
		return false;
	if (!w->last || strcmp(w->last, cgroup)) {
		free(w->last);
		w->last = strdup(cgroup);
		w->last_keep = decide(w, cgroup);
	}
	w->any |= w->last_keep;
	return w->last_keep;
}

/* How alike a name is to what was asked: the longer the shared start,
 * and a name that holds it, the closer. */
static size_t likeness(const char *name, const char *asked)
{
	size_t n = 0;

	while (name[n] && name[n] == asked[n])
		n++;
	return n + (strstr(name, asked) ? 1000 : 0);
}

static const char *asked_of(const struct who_match *w)
{
	return w->who.cgroup[0] ? w->who.cgroup : w->who.unit[0] ? w->who.unit : w->who.container;
}

int who_match_verdict(const struct who_match *w, char *err, size_t err_size)
{
	const char *asked = asked_of(w);
	const char *what = w->who.cgroup[0] ? "in cgroup '%s' or below"
			   : w->who.unit[0] ? "of unit '%s'"
					    : "of a container with id prefix '%s'";
	const char *order[WHO_SEEN_MAX];
	size_t n = w->n_seen, len;

	if (w->containers[1]) {
		snprintf(err, err_size,
			 "container id prefix '%s' matches several containers in these windows: %s, "
			 "%s; give more of its digits",
			 asked, w->containers[0], w->containers[1]);
		return -EEXIST;
	}
	if (w->any)
		return 0;
	len = snprintf(err, err_size, "no samples ");
	len += snprintf(err + len, len < err_size ? err_size - len : 0, what, asked);
	len += snprintf(err + len, len < err_size ? err_size - len : 0, " in these windows");
	if (!n) {
		snprintf(err + len, len < err_size ? err_size - len : 0, "; their samples name no %s",
			 w->who.cgroup[0] ? "cgroup" : w->who.unit[0] ? "unit" : "container");
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = w->seen[i];
	/* Closest first (a handful of names: insertion sort). */
	for (size_t i = 1; i < n; i++) {
		const char *x = order[i];
		size_t j = i;

		for (; j > 0 && (likeness(order[j - 1], asked) < likeness(x, asked) ||
				 (likeness(order[j - 1], asked) == likeness(x, asked) &&
				  strcmp(order[j - 1], x) > 0));
		     j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
	for (size_t i = 0; i < n && i < WHO_SUGGEST && len < err_size; i++)
		len += snprintf(err + len, err_size - len, "%s%s", i ? ", " : "; closest there: ",
				order[i]);
	return -ENOENT;
}
