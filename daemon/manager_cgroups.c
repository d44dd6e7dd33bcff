/*
 * manager_cgroups: the daemon's names for cgroups. The drain names each
 * row's cgroup id through cgroup_paths (daemon/profile/cgroup_paths.h),
 * fed first with the kernel's cgroup events, so a cgroup removed before its
 * rows are drained keeps its name; captures turn a request's cgroup, unit
 * or container into the subtrees their slot's kernel filter takes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cgroup_paths.h"
#include "collector.h"
#include "log.h"
#include "pid_ns.h"
#include "proc_files.h"
#include "who_match.h"
#include "manager_internal.h"

int manager_cgroups_start(struct manager *m)
{
	const char *mount, *why;
	enum cgroup_hierarchy h;
	int r;

	r = cgroup_paths_new(NULL, PROC_ROOT, &m->cgroups);
	if (r < 0) {
		log_error("cannot set up cgroup names: %s", strerror(-r));
		return r;
	}
	h = cgroup_paths_hierarchy(m->cgroups, &mount, &why);
	if (h == CGROUP_HIERARCHY_NONE)
		log_info("%s", why);
	else if (!collector_cgroup_events_available(m->collector, &why))
		log_info("cgroups named from /proc and %s only: %s", mount, why);
	return 0;
}

/* Notes a cgroup made, for manager_cgroups_follow() (a few a drain: the
 * ring holds 256). */
static void note_made(struct manager *m, const struct offcpu_cgroup_event *ev)
{
	struct manager_drain *d = &m->drain;
	char *path;

	if (array_grow(&d->made, &d->cap_made, d->n_made + 1, sizeof(*d->made), 0) < 0 ||
	    !(path = strdup(ev->path)))
		return; /* out of memory: the capture does not follow this one */
	d->made[d->n_made++] = (struct made_cgroup){ .id = ev->id, .level = ev->level, .path = path };
}

static int take_event(void *arg, const struct offcpu_cgroup_event *ev)
{
	struct manager *m = arg;
	bool removed = ev->type == OFFCPU_CGROUP_RMDIR;
	/* The kernel cuts paths at its buffer's size: such a cgroup is named
	 * from /proc or a walk instead, while it exists. */
	bool cut = strnlen(ev->path, sizeof(ev->path)) >= sizeof(ev->path) - 1;

	if (cut && !removed)
		return 0;
	if (ev->type == OFFCPU_CGROUP_MKDIR)
		note_made(m, ev);
	if (cgroup_paths_event(m->cgroups, ev->id, cut ? NULL : ev->path, removed) < 0)
		return -ENOMEM;
	return 0;
}

/* Adds made to capture c's kernel filter if its who names it. */
static void follow_one(struct manager *m, struct capture *c, const struct made_cgroup *made)
{
	struct collector_cgroup cg = { .id = made->id, .level = made->level };

	if (!who_names_subtree(&c->req.who, made->path))
		return;
	for (size_t i = 0; i < c->n_cgroups; i++)
		if (c->cgroups[i].id == made->id)
			return; /* resolved when it started */
	if (c->n_cgroups == COLLECTOR_MAX_CGROUPS ||
	    collector_slot_cgroup_add(m->collector, c->slot, &cg) < 0) {
		log_warning("capture %llu cannot follow the new cgroup %s: its filter is full",
			    (unsigned long long)c->id, made->path);
		return;
	}
	c->cgroups[c->n_cgroups++] = cg;
}

void manager_cgroups_follow(struct manager *m)
{
	struct manager_drain *d = &m->drain;

	for (size_t k = 0; k < d->n_made; k++) {
		for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
			struct capture *c = m->cap.captures[i];

			if (c && c->n_cgroups && c->phase != CAPTURE_LOADING)
				follow_one(m, c, &d->made[k]);
		}
		free(d->made[k].path);
	}
	d->n_made = 0;
}

void manager_cgroups_take_events(struct manager *m)
{
	if (m->cgroups)
		collector_cgroup_events(m->collector, take_event, m);
}

int manager_cgroup_path(void *arg, uint64_t id, uint32_t tgid, char *buf, size_t size)
{
	struct manager *m = arg;
	int r;

	r = cgroup_paths_name(m->cgroups, id, tgid, buf, size);
	if (r == -ENOENT) /* named by its id: a filter by path will not find it */
		snprintf(buf, size, "[cgroup %llu]", (unsigned long long)id);
	return r == -ENOENT ? 0 : r;
}

uint32_t manager_ns_pid(void *arg, uint32_t tgid)
{
	struct manager *m = arg;
	uint32_t ns_pid = 0;

	/* Gone before its rows were drained: as read when it was first walked. */
	if (pid_ns_innermost(PROC_ROOT, tgid, &ns_pid) < 0 && m->proc_files)
		proc_files_ns_pid(m->proc_files, tgid, &ns_pid);
	return ns_pid;
}

int manager_cgroups_resolve(struct manager *m, const struct proto_cgroup_filter *who,
			    struct collector_cgroup *ret, size_t max, size_t *ret_n,
			    const char **ret_code, char *err, size_t err_size)
{
	struct cgroup_ref refs[COLLECTOR_MAX_CGROUPS];
	int r = 0;

	*ret_n = 0;
	if (!who->cgroup[0] && !who->unit[0] && !who->container[0])
		return 0;
	if (max > COLLECTOR_MAX_CGROUPS)
		max = COLLECTOR_MAX_CGROUPS;
	if (who->cgroup[0]) {
		r = cgroup_paths_find(m->cgroups, who->cgroup, &refs[0], err, err_size);
		if (r == 0)
			r = 1;
	} else {
		r = cgroup_paths_find_identity(m->cgroups, who->unit[0] ? who->unit : NULL,
					       who->container[0] ? who->container : NULL, refs, max,
					       err, err_size);
	}
	if (r < 0) {
		*ret_code = r == -EOPNOTSUPP ? PROTO_ERR_UNSUPPORTED
			    : r == -E2BIG    ? PROTO_ERR_TOO_LARGE
					     : PROTO_ERR_NO_SUCH_CGROUP;
		if (r == -E2BIG)
			snprintf(err, err_size, "more than %zu cgroups match; name fewer", max);
		return r;
	}
	for (int i = 0; i < r; i++)
		ret[i] = (struct collector_cgroup){ .id = refs[i].id, .level = refs[i].level };
	*ret_n = r;
	return 0;
}

void manager_cgroups_status(struct manager *m, struct proto_cgroup_status *ret)
{
	struct cgroup_paths_stats st;
	const char *mount = "", *why = "", *events_why = "";
	enum cgroup_hierarchy h;

	if (!m->cgroups)
		return;
	h = cgroup_paths_hierarchy(m->cgroups, &mount, &why);
	cgroup_paths_stats(m->cgroups, &st);
	*ret = (struct proto_cgroup_status){
		.hierarchy = cgroup_hierarchy_name(h),
		.mount = mount,
		.reason = h == CGROUP_HIERARCHY_NONE ? why : "",
		.events = collector_cgroup_events_available(m->collector, &events_why),
		.known = st.known,
		.removed = st.removed,
		.from_proc = st.from_proc,
		.scans = st.scans,
		.failures = st.failures,
	};
	ret->events_reason = ret->events ? "" : events_why;
}

bool manager_cgroups_ready(struct manager *m, struct server_conn *conn,
			    struct proto_cgroup_filter *who)
{
	const char *mount, *why;
	size_t n;

	if (!who->cgroup[0] && !who->unit[0] && !who->container[0])
		return true;
	if (cgroup_paths_hierarchy(m->cgroups, &mount, &why) == CGROUP_HIERARCHY_NONE) {
		manager_reply_error(conn, PROTO_ERR_UNSUPPORTED, why);
		return false;
	}
	n = strlen(mount);
	if (!strncmp(who->cgroup, mount, n) && (who->cgroup[n] == '/' || !who->cgroup[n]))
		memmove(who->cgroup, who->cgroup[n] ? who->cgroup + n : "/",
			strlen(who->cgroup[n] ? who->cgroup + n : "/") + 1);
	return true;
}

void manager_cgroups_free(struct manager *m)
{
	for (size_t k = 0; k < m->drain.n_made; k++)
		free(m->drain.made[k].path);
	free(m->drain.made);
	cgroup_paths_free(m->cgroups);
}
