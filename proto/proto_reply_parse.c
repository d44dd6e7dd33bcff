/*
 * proto_reply_parse: the daemon's replies, parsed back; used by offcpuctl
 * only (see proto.h and PROTOCOL.md).
 */
#include "proto.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto_json.h"

/* ---- reply parsing (offcpuctl) ----------------------------------------- */

/* The public reply plus what its pointers point into. */
struct proto__reply {
	struct proto_reply pub;
	cJSON *root; /* every string of pub lives here */
	struct proto_program *programs;
	struct proto_counter *counters;
	struct proto_counter *drops;
	struct proto_window_info *windows;
	struct proto_hist_process *processes;
	struct proto_request_stats *requests;
	struct proto_map_fill *maps;
	struct proto_kind_status *kinds;
	struct proto_blocked_thread *blocked;
	const char **frames; /* every blocked thread's ustack and kstack, one after another */
	struct proto_push_status *push; /* status's push targets */
	const char **push_targets;	/* a push reply's targets */
	const char **notes;		/* a capture's or an export's notes */
};

static int proto__reply_str(const cJSON *obj, const char *name, const char **ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsString(item))
		return -EINVAL;
	*ret = item->valuestring;
	return 0;
}

static int proto__reply_bool(const cJSON *obj, const char *name, bool *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsBool(item))
		return -EINVAL;
	*ret = cJSON_IsTrue(item);
	return 0;
}

static int proto__reply_double(const cJSON *obj, const char *name, double *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	*ret = item->valuedouble;
	return 0;
}

static int proto__reply_u64(const cJSON *obj, const char *name, uint64_t *ret)
{
	return proto__number_u64(cJSON_GetObjectItemCaseSensitive(obj, name), ret);
}

/* An integral number in int64_t's range. */
static int proto__reply_i64(const cJSON *obj, const char *name, int64_t *ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
	double d;

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	d = item->valuedouble;
	/* -2^63 and 2^63 are exact doubles; NaN fails both comparisons. */
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return -EINVAL;
	if (d != (double)(int64_t)d)
		return -EINVAL;
	*ret = (int64_t)d;
	return 0;
}

static int proto__reply_u32(const cJSON *obj, const char *name, uint32_t *ret)
{
	uint64_t v;

	if (proto__reply_u64(obj, name, &v) < 0 || v > UINT32_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* {"name":value,...} into a malloc'd array; names point into the tree. */
static int proto__reply_counters(const cJSON *obj, const char *name, struct proto_counter **ret,
				 size_t *ret_n)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, name), *item;
	struct proto_counter *c;
	size_t n = 0;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	c = calloc(cJSON_GetArraySize(o) + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	cJSON_ArrayForEach(item, o)
	{
		if (proto__number_u64(item, &c[n].value) < 0) {
			free(c);
			return -EINVAL;
		}
		c[n++].name = item->string;
	}
	*ret = c;
	*ret_n = n;
	return 0;
}

/* A bucket's meaning is its index: there must be exactly that many. */
static int proto__reply_buckets(const cJSON *o, const char *name, uint64_t *counts)
{
	const cJSON *c, *list = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t b = 0;

	if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != PROTO_HIST_BUCKETS)
		return -EINVAL;
	cJSON_ArrayForEach(c, list)
	{
		if (proto__number_u64(c, &counts[b++]) < 0)
			return -EINVAL;
	}
	return 0;
}

/* The optional "requests" list; each one's functions are not parsed. */
static int proto__reply_requests(struct proto__reply *r, const cJSON *o,
				 const struct proto_request_stats **ret, size_t *ret_n)
{
	const cJSON *p, *list = cJSON_GetObjectItemCaseSensitive(o, "requests");
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!list)
		return 0;
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->requests = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->requests));
	if (!r->requests)
		return -ENOMEM;
	cJSON_ArrayForEach(p, list)
	{
		struct proto_request_stats *q = &r->requests[n++];

		if (!cJSON_IsObject(p) || proto__reply_str(p, "symbol", &q->symbol) < 0 ||
		    proto__reply_u64(p, "count", &q->count) < 0 ||
		    proto__reply_u64(p, "wall_ns", &q->wall_ns) < 0 ||
		    proto__reply_u64(p, "offcpu_ns", &q->offcpu_ns) < 0 ||
		    proto__reply_buckets(p, "wall_hist", q->wall_hist) < 0 ||
		    proto__reply_buckets(p, "offcpu_hist", q->offcpu_hist) < 0)
			return -EINVAL;
		/* Optional: older daemons send neither. */
		if ((cJSON_GetObjectItemCaseSensitive(p, "calls") &&
		     proto__reply_u64(p, "calls", &q->calls) < 0) ||
		    (cJSON_GetObjectItemCaseSensitive(p, "warning") &&
		     proto__reply_str(p, "warning", &q->warning) < 0))
			return -EINVAL;
	}
	*ret = r->requests;
	*ret_n = n;
	return 0;
}

static bool proto__has(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name) != NULL;
}

/* Optional: daemons before per-kind status did not send "kinds". */
static int proto__reply_kinds(struct proto__reply *r, const cJSON *o)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "kinds"), *item;
	struct proto_status *s = &r->pub.status;
	size_t n = 0;

	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	r->kinds = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->kinds));
	if (!r->kinds)
		return -ENOMEM;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_kind_status *k = &r->kinds[n++];

		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &k->name) < 0 ||
		    proto__reply_str(item, "state", &k->state) < 0 ||
		    proto__reply_str(item, "detail", &k->detail) < 0)
			return -EINVAL;
	}
	s->kinds = r->kinds;
	s->n_kinds = n;
	return 0;
}

static int proto__reply_programs(struct proto__reply *r, const cJSON *o)
{
	struct proto_status *s = &r->pub.status;
	const cJSON *programs, *item;
	size_t n = 0;

	programs = cJSON_GetObjectItemCaseSensitive(o, "programs");
	if (!cJSON_IsArray(programs))
		return -EINVAL;
	r->programs = calloc(cJSON_GetArraySize(programs) + 1, sizeof(*r->programs));
	if (!r->programs)
		return -ENOMEM;
	cJSON_ArrayForEach(item, programs)
	{
		r->programs[n].loaded = true; /* older daemons loaded every program at start */
		if (!cJSON_IsObject(item) ||
		    proto__reply_str(item, "name", &r->programs[n].name) < 0 ||
		    proto__reply_bool(item, "attached", &r->programs[n].attached) < 0 ||
		    (proto__has(item, "loaded") &&
		     proto__reply_bool(item, "loaded", &r->programs[n].loaded) < 0) ||
		    (proto__has(item, "run_cnt") &&
		     (proto__reply_u64(item, "run_cnt", &r->programs[n].run_cnt) < 0 ||
		      proto__reply_u64(item, "run_time_ns", &r->programs[n].run_time_ns) < 0 ||
		      proto__reply_double(item, "events_per_s", &r->programs[n].events_per_s) < 0)))
			return -EINVAL;
		n++;
	}
	s->programs = r->programs;
	s->n_programs = n;
	return 0;
}

static int proto__reply_groups(struct proto_status *s, const cJSON *o)
{
	const cJSON *list, *item;

	/* Groups loaded on first use came later: absent from older daemons. */
	list = cJSON_GetObjectItemCaseSensitive(o, "program_groups");
	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_program_group *g = &s->groups[s->n_groups];

		if (s->n_groups == PROTO_MAX_GROUPS)
			break;
		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &g->name) < 0 ||
		    proto__reply_str(item, "state", &g->state) < 0 ||
		    proto__reply_str(item, "reason", &g->reason) < 0 ||
		    proto__reply_u64(item, "load_ms", &g->load_ms) < 0)
			return -EINVAL;
		s->n_groups++;
	}
	return 0;
}

static int proto__reply_maps(struct proto__reply *r, const cJSON *o)
{
	struct proto_status *s = &r->pub.status;
	const cJSON *list, *item;
	size_t n;

	/* Self-accounting came later: a reply without it is still whole. */
	list = cJSON_GetObjectItemCaseSensitive(o, "maps");
	if (list && !cJSON_IsArray(list))
		return -EINVAL;
	r->maps = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->maps));
	if (!r->maps)
		return -ENOMEM;
	n = 0;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_map_fill *mf = &r->maps[n++];

		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &mf->name) < 0 ||
		    proto__reply_u64(item, "entries", &mf->entries) < 0 ||
		    proto__reply_u64(item, "max_entries", &mf->max_entries) < 0 ||
		    proto__reply_double(item, "fill_pct", &mf->fill_pct) < 0)
			return -EINVAL;
	}
	s->maps = r->maps;
	s->n_maps = n;
	return 0;
}

static int proto__reply_store(struct proto_status *s, const cJSON *o)
{
	const cJSON *item;

	item = cJSON_GetObjectItemCaseSensitive(o, "store");
	s->store.path = s->store.last_error = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "path", &s->store.path) < 0 ||
		     proto__reply_u64(item, "bytes", &s->store.bytes) < 0 ||
		     proto__reply_u64(item, "windows", &s->store.windows) < 0 ||
		     proto__reply_u64(item, "windows_written", &s->store.windows_written) < 0 ||
		     proto__reply_u64(item, "windows_failed", &s->store.windows_failed) < 0 ||
		     proto__reply_bool(item, "disk_full", &s->store.disk_full) < 0 ||
		     proto__reply_str(item, "last_error", &s->store.last_error) < 0))
		return -EINVAL;
	return 0;
}

static int proto__reply_unwind(struct proto_status *s, const cJSON *o)
{
	const cJSON *item;

	item = cJSON_GetObjectItemCaseSensitive(o, "unwind");
	s->unwind.mode = s->unwind.build_max_path = s->unwind.python_unsupported_what = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "mode", &s->unwind.mode) < 0 ||
		     proto__reply_u64(item, "tables", &s->unwind.tables) < 0 ||
		     proto__reply_u64(item, "processes", &s->unwind.processes) < 0 ||
		     proto__reply_u64(item, "rows_used", &s->unwind.rows_used) < 0 ||
		     proto__reply_u64(item, "rows_max", &s->unwind.rows_max) < 0 ||
		     proto__reply_u64(item, "table_bytes", &s->unwind.table_bytes) < 0 ||
		     proto__reply_u64(item, "builds", &s->unwind.builds) < 0 ||
		     proto__reply_u64(item, "build_ns_total", &s->unwind.build_ns_total) < 0 ||
		     proto__reply_u64(item, "build_ns_max", &s->unwind.build_ns_max) < 0 ||
		     proto__reply_str(item, "build_max_path", &s->unwind.build_max_path) < 0 ||
		     proto__reply_u64(item, "evictions", &s->unwind.evictions) < 0 ||
		     proto__reply_u64(item, "no_room", &s->unwind.no_room) < 0 ||
		     proto__reply_u64(item, "failed", &s->unwind.failed) < 0 ||
		     proto__reply_u64(item, "requests", &s->unwind.requests) < 0))
		return -EINVAL;
	/* absent from daemons before them (issue 16) */
	if (item && cJSON_GetObjectItemCaseSensitive(item, "given_up") &&
	    (proto__reply_u64(item, "given_up", &s->unwind.given_up) < 0 ||
	     proto__reply_u64(item, "unknown_exited", &s->unwind.unknown_exited) < 0 ||
	     proto__reply_u64(item, "unknown_unmapped", &s->unwind.unknown_unmapped) < 0 ||
	     proto__reply_u64(item, "unknown_anonymous", &s->unwind.unknown_anonymous) < 0 ||
	     proto__reply_u64(item, "kept_processes", &s->unwind.kept_processes) < 0 ||
	     proto__reply_u64(item, "kept_files", &s->unwind.kept_files) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "from_vmas") &&
	    (proto__reply_bool(item, "from_vmas", &s->unwind.from_vmas) < 0 ||
	     proto__reply_bool(item, "loader_hook", &s->unwind.loader_hook) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "file_ids") &&
	    (proto__reply_u64(item, "file_ids", &s->unwind.file_ids) < 0 ||
	     proto__reply_u64(item, "unknown_forgotten", &s->unwind.unknown_forgotten) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "files_opened") &&
	    (proto__reply_u64(item, "files_opened", &s->unwind.files_opened) < 0 ||
	     proto__reply_u64(item, "files_known", &s->unwind.files_known) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "adopted") &&
	    proto__reply_u64(item, "adopted", &s->unwind.adopted) < 0)
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "loader_reads") &&
	    (proto__reply_u64(item, "loader_reads", &s->unwind.loader_reads) < 0 ||
	     proto__reply_u64(item, "loader_wait_ns_total", &s->unwind.loader_wait_ns_total) < 0 ||
	     proto__reply_u64(item, "loader_wait_ns_max", &s->unwind.loader_wait_ns_max) < 0 ||
	     proto__reply_u64(item, "loader_read_ns_total", &s->unwind.loader_read_ns_total) < 0 ||
	     proto__reply_u64(item, "loader_read_ns_max", &s->unwind.loader_read_ns_max) < 0 ||
	     proto__reply_i64(item, "unwinder_nice", &s->unwind.unwinder_nice) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "background_builds") &&
	    (proto__reply_u64(item, "background_builds", &s->unwind.background_builds) < 0 ||
	     proto__reply_u64(item, "background_wait_ns_max", &s->unwind.background_wait_ns_max) < 0))
		return -EINVAL;
	if (item && cJSON_GetObjectItemCaseSensitive(item, "python_frames") &&
	    (proto__reply_bool(item, "python_frames", &s->unwind.python_frames) < 0 ||
	     proto__reply_u64(item, "python_processes", &s->unwind.python_processes) < 0 ||
	     proto__reply_u64(item, "python_unsupported", &s->unwind.python_unsupported) < 0 ||
	     proto__reply_str(item, "python_unsupported_what",
				 &s->unwind.python_unsupported_what) < 0))
		return -EINVAL;
	return 0;
}

static int proto__reply_pt(struct proto_status *s, const cJSON *o)
{
	const cJSON *item;

	item = cJSON_GetObjectItemCaseSensitive(o, "pt");
	s->pt.event = s->pt.reason = "";
	if (item && (!cJSON_IsObject(item) || proto__reply_str(item, "event", &s->pt.event) < 0 ||
		     proto__reply_bool(item, "available", &s->pt.available) < 0 ||
		     proto__reply_str(item, "reason", &s->pt.reason) < 0 ||
		     proto__reply_u32(item, "address_ranges", &s->pt.address_ranges) < 0 ||
		     proto__reply_u32(item, "recording_pid", &s->pt.recording_pid) < 0))
		return -EINVAL;
	return 0;
}

static int proto__reply_sampling(struct proto_status *s, const cJSON *o)
{
	const cJSON *item;

	item = cJSON_GetObjectItemCaseSensitive(o, "sampling");
	s->sampling.stacks = s->sampling.walk = s->sampling.walk_reason = "";
	s->sampling.walk_return = s->sampling.walk_return_reason = "";
	if (item &&
	    (!cJSON_IsObject(item) || proto__reply_str(item, "stacks", &s->sampling.stacks) < 0 ||
	     proto__reply_u64(item, "period_us", &s->sampling.period_us) < 0 ||
	     proto__reply_str(item, "walk", &s->sampling.walk) < 0 ||
	     proto__reply_str(item, "walk_reason", &s->sampling.walk_reason) < 0 ||
	     proto__reply_str(item, "walk_return", &s->sampling.walk_return) < 0 ||
	     proto__reply_str(item, "walk_return_reason", &s->sampling.walk_return_reason) < 0 ||
	     proto__reply_double(item, "blocks_per_s", &s->sampling.blocks_per_s) < 0 ||
	     proto__reply_double(item, "samples_per_s", &s->sampling.samples_per_s) < 0 ||
	     proto__reply_double(item, "user_walks_per_s", &s->sampling.user_walks_per_s) < 0 ||
	     proto__reply_double(item, "kernel_walks_per_s", &s->sampling.kernel_walks_per_s) < 0 ||
	     proto__reply_double(item, "task_works_per_s", &s->sampling.task_works_per_s) < 0 ||
	     proto__reply_double(item, "task_work_us", &s->sampling.task_work_us) < 0 ||
	     proto__reply_u64(item, "samples_lost", &s->sampling.samples_lost) < 0 ||
	     proto__reply_u64(item, "window_blocks", &s->sampling.window_blocks) < 0 ||
	     proto__reply_u64(item, "window_samples", &s->sampling.window_samples) < 0 ||
	     proto__reply_double(item, "window_error_pct", &s->sampling.window_error_pct) < 0 ||
	     proto__reply_double(item, "window_unsampled_pct", &s->sampling.window_unsampled_pct) < 0))
		return -EINVAL;
	return 0;
}

/* Optional: daemons before cgroups did not send them. */
static int proto__reply_cgroups(struct proto_status *s, const cJSON *o)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, "cgroups");
	struct proto_cgroup_status *c = &s->cgroups;

	c->hierarchy = c->mount = c->reason = c->events_reason = "";
	if (item &&
	    (!cJSON_IsObject(item) || proto__reply_str(item, "hierarchy", &c->hierarchy) < 0 ||
	     proto__reply_str(item, "mount", &c->mount) < 0 ||
	     proto__reply_str(item, "reason", &c->reason) < 0 ||
	     proto__reply_bool(item, "events", &c->events) < 0 ||
	     proto__reply_str(item, "events_reason", &c->events_reason) < 0 ||
	     proto__reply_u64(item, "known", &c->known) < 0 ||
	     proto__reply_u64(item, "removed", &c->removed) < 0 ||
	     proto__reply_u64(item, "from_proc", &c->from_proc) < 0 ||
	     proto__reply_u64(item, "scans", &c->scans) < 0 ||
	     proto__reply_u64(item, "failures", &c->failures) < 0))
		return -EINVAL;
	return 0;
}

/* Optional: daemons before the pusher did not send "push"; status.push
 * then stays NULL (not reported). */
static int proto__reply_push_status(struct proto__reply *r, const cJSON *o)
{
	const cJSON *push = cJSON_GetObjectItemCaseSensitive(o, "push"), *list, *item;
	struct proto_status *s = &r->pub.status;
	size_t n = 0;

	if (!push)
		return 0;
	if (!cJSON_IsObject(push) || proto__reply_bool(push, "configured", &s->push_configured) < 0)
		return -EINVAL;
	list = cJSON_GetObjectItemCaseSensitive(push, "targets");
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->push = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->push));
	if (!r->push)
		return -ENOMEM;
	cJSON_ArrayForEach(item, list)
	{
		struct proto_push_status *t = &r->push[n++];

		if (!cJSON_IsObject(item) || proto__reply_str(item, "name", &t->name) < 0 ||
		    proto__reply_str(item, "api", &t->api) < 0 ||
		    proto__reply_str(item, "url", &t->url) < 0 ||
		    proto__reply_str(item, "state", &t->state) < 0 ||
		    proto__reply_i64(item, "last_success_ms", &t->last_success_ms) < 0 ||
		    proto__reply_u64(item, "lag_windows", &t->lag_windows) < 0 ||
		    proto__reply_u64(item, "lag_ms", &t->lag_ms) < 0 ||
		    proto__reply_u64(item, "sent", &t->sent) < 0 ||
		    proto__reply_u64(item, "set_aside", &t->set_aside) < 0 ||
		    proto__reply_u64(item, "lost", &t->lost) < 0 ||
		    proto__reply_u64(item, "retries", &t->retries) < 0 ||
		    proto__reply_u64(item, "bytes_sent", &t->bytes_sent) < 0 ||
		    proto__reply_i64(item, "next_try_ms", &t->next_try_ms) < 0 ||
		    proto__reply_u64(item, "backfill_windows", &t->backfill_windows) < 0 ||
		    proto__reply_str(item, "last_error", &t->last_error) < 0)
			return -EINVAL;
	}
	s->push = r->push;
	s->n_push = n;
	return 0;
}

static int proto__reply_status(struct proto__reply *r, const cJSON *o)
{
	struct proto_status *s = &r->pub.status;
	const cJSON *item;
	int e;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	e = proto__reply_programs(r, o);
	if (e == 0)
		e = proto__reply_groups(s, o);
	if (e == 0)
		e = proto__reply_maps(r, o);
	if (e == 0)
		e = proto__reply_store(s, o);
	if (e == 0)
		e = proto__reply_unwind(s, o);
	if (e == 0)
		e = proto__reply_pt(s, o);
	if (e == 0)
		e = proto__reply_sampling(s, o);
	if (e == 0)
		e = proto__reply_cgroups(s, o);
	if (e == 0)
		e = proto__reply_push_status(r, o);
	if (e < 0)
		return e;
	item = cJSON_GetObjectItemCaseSensitive(o, "daemon");
	if (item &&
	    (!cJSON_IsObject(item) || proto__reply_double(item, "cpu_pct", &s->cpu_pct) < 0 ||
	     proto__reply_u64(item, "rss_bytes", &s->rss_bytes) < 0))
		return -EINVAL;
	/* Optional: daemons before the memory figures did not send them. */
	if (item && cJSON_GetObjectItemCaseSensitive(item, "heap_in_use_bytes") &&
	    (proto__reply_u64(item, "heap_in_use_bytes", &s->heap_in_use_bytes) < 0 ||
	     proto__reply_u64(item, "heap_free_bytes", &s->heap_free_bytes) < 0 ||
	     proto__reply_u64(item, "store_cache_bytes", &s->store_cache_bytes) < 0 ||
	     proto__reply_u64(item, "symbol_cache_bytes", &s->symbol_cache_bytes) < 0))
		return -EINVAL;

	/* Optional: daemons before the I/O kinds did not send them. */
	s->bio_tracepoints = s->fileio_tracepoints = s->runq_clock = s->kstack_cache_reason = "";
	s->in_progress_reason = s->sched_frames_reason = "";
	if ((cJSON_GetObjectItemCaseSensitive(o, "runq_clock") &&
	     proto__reply_str(o, "runq_clock", &s->runq_clock) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "kstack_cache") &&
	     proto__reply_bool(o, "kstack_cache", &s->kstack_cache) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "kstack_cache_reason") &&
	     proto__reply_str(o, "kstack_cache_reason", &s->kstack_cache_reason) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "in_progress") &&
	     proto__reply_bool(o, "in_progress", &s->in_progress) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "in_progress_reason") &&
	     proto__reply_str(o, "in_progress_reason", &s->in_progress_reason) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "sched_frames") &&
	     proto__reply_bool(o, "sched_frames", &s->sched_frames) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "sched_frames_reason") &&
	     proto__reply_str(o, "sched_frames_reason", &s->sched_frames_reason) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "bpf_stats") &&
	     proto__reply_bool(o, "bpf_stats", &s->bpf_stats) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "bio_tracepoints") &&
	     proto__reply_str(o, "bio_tracepoints", &s->bio_tracepoints) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "fileio_tracepoints") &&
	     proto__reply_str(o, "fileio_tracepoints", &s->fileio_tracepoints) < 0))
		return -EINVAL;
	if (proto__reply_str(o, "version", &s->version) < 0 ||
	    proto__reply_u64(o, "uptime_s", &s->uptime_s) < 0 ||
	    proto__reply_u32(o, "pid", &s->pid) < 0 ||
	    proto__reply_str(o, "tracepoint", &s->tracepoint) < 0 ||
	    proto__reply_u32(o, "slots_active", &s->slots_active) < 0 ||
	    proto__reply_u32(o, "slots_max", &s->slots_max) < 0 ||
	    proto__reply_u32(o, "captures_running", &s->captures_running) < 0 ||
	    proto__reply_double(o, "switches_per_s", &s->switches_per_s) < 0 ||
	    proto__reply_double(o, "recorded_per_s", &s->recorded_per_s) < 0)
		return -EINVAL;
	e = proto__reply_counters(o, "counters", &r->counters, &s->n_counters);
	if (e < 0)
		return e;
	s->counters = r->counters;
	e = proto__reply_kinds(r, o);
	if (e < 0)
		return e;
	return proto__reply_requests(r, o, &s->requests, &s->n_requests);
}

/* An optional string of a reply ("folded", "output"): *ret stays as it is
 * if absent. */
static int proto__reply_opt_str(const cJSON *o, const char *name, const char **ret)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!item)
		return 0;
	if (!cJSON_IsString(item))
		return -EINVAL;
	*ret = item->valuestring;
	return 0;
}

/* The reply's "notes", into r->notes; none if absent (older daemons). */
static int proto__reply_notes(struct proto__reply *r, const cJSON *o, const char *const **ret,
			      size_t *ret_n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "notes"), *item;
	size_t n = 0;

	if (!a)
		return 0;
	if (!cJSON_IsArray(a))
		return -EINVAL;
	r->notes = calloc(cJSON_GetArraySize(a) + 1, sizeof(*r->notes));
	if (!r->notes)
		return -ENOMEM;
	cJSON_ArrayForEach(item, a)
	{
		if (!cJSON_IsString(item))
			return -EINVAL;
		r->notes[n++] = item->valuestring;
	}
	*ret = r->notes;
	*ret_n = n;
	return 0;
}

static int proto__reply_capture(struct proto__reply *r, const cJSON *o)
{
	struct proto_capture_result *c = &r->pub.capture;
	const cJSON *us, *sm;
	int e;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_u64(o, "id", &c->id) < 0 ||
	    proto__reply_u64(o, "duration_ns", &c->duration_ns) < 0 ||
	    proto__reply_u64(o, "total_ns", &c->total_ns) < 0 ||
	    proto__reply_u64(o, "samples_count", &c->n_samples) < 0 ||
	    proto__reply_bool(o, "target_exited", &c->target_exited) < 0)
		return -EINVAL;
	if (proto__reply_opt_str(o, "folded", &c->folded) < 0 ||
	    proto__reply_opt_str(o, "output", &c->output) < 0 ||
	    proto__reply_opt_str(o, "loaded", &c->loaded) < 0 ||
	    (c->loaded && proto__reply_u64(o, "load_ms", &c->load_ms) < 0))
		return -EINVAL;
	us = cJSON_GetObjectItemCaseSensitive(o, "user_stacks");
	if (us && (!cJSON_IsObject(us) ||
		   proto__reply_u64(us, "complete_ns", &c->user_stacks.complete_ns) < 0 ||
		   proto__reply_u64(us, "truncated_ns", &c->user_stacks.truncated_ns) < 0 ||
		   proto__reply_u64(us, "frame_pointer_ns", &c->user_stacks.frame_pointer_ns) < 0))
		return -EINVAL;
	sm = cJSON_GetObjectItemCaseSensitive(o, "sampling");
	if (sm && (!cJSON_IsObject(sm) ||
		   proto__reply_u64(sm, "period_us", &c->sampling.period_us) < 0 ||
		   proto__reply_u64(sm, "blocks", &c->sampling.blocks) < 0 ||
		   proto__reply_u64(sm, "samples", &c->sampling.samples) < 0 ||
		   proto__reply_double(sm, "error_pct", &c->sampling.error_pct) < 0 ||
		   proto__reply_double(sm, "unsampled_pct", &c->sampling.unsampled_pct) < 0))
		return -EINVAL;
	e = proto__reply_counters(o, "drops", &r->drops, &c->n_drops);
	if (e < 0)
		return e;
	c->drops = r->drops;
	e = proto__reply_notes(r, o, &c->notes, &c->n_notes);
	if (e < 0)
		return e;
	return proto__reply_requests(r, o, &c->requests, &c->n_requests);
}

/* The line before a capture's reply that says it counts (notify_started). */
static int proto__reply_started(struct proto__reply *r, const cJSON *o)
{
	if (!cJSON_IsObject(o) || proto__reply_u64(o, "id", &r->pub.started.id) < 0 ||
	    proto__reply_u32(o, "seconds", &r->pub.started.seconds) < 0)
		return -EINVAL;
	r->pub.has_started = true;
	return 0;
}

/* The reply's own array, not an object: {"cmd":"windows","windows":[...]}. */
static int proto__reply_windows(struct proto__reply *r, const cJSON *a)
{
	const cJSON *o;
	size_t n = 0;

	if (!cJSON_IsArray(a))
		return -EINVAL;
	r->windows = calloc(cJSON_GetArraySize(a) + 1, sizeof(*r->windows));
	if (!r->windows)
		return -ENOMEM;
	cJSON_ArrayForEach(o, a)
	{
		struct proto_window_info *w = &r->windows[n];

		if (!cJSON_IsObject(o) || proto__reply_u64(o, "id", &w->id) < 0 ||
		    proto__reply_i64(o, "start_ms", &w->start_ms) < 0 ||
		    proto__reply_i64(o, "end_ms", &w->end_ms) < 0 ||
		    proto__reply_u64(o, "capture_id", &w->capture_id) < 0 ||
		    proto__reply_u64(o, "stacks", &w->stacks) < 0 ||
		    proto__reply_u64(o, "samples", &w->samples) < 0 ||
		    proto__reply_u64(o, "bytes", &w->bytes) < 0 ||
		    proto__reply_opt_str(o, "kind", &w->kind) < 0 ||
		    proto__reply_opt_str(o, "targets", &w->targets) < 0)
			return -EINVAL;
		n++;
	}
	r->pub.windows = r->windows;
	r->pub.n_windows = n;
	return 0;
}

static int proto__reply_export(struct proto__reply *r, const cJSON *o)
{
	struct proto_export_result *e = &r->pub.export;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_i64(o, "from_ms", &e->from_ms) < 0 ||
	    proto__reply_i64(o, "to_ms", &e->to_ms) < 0 ||
	    proto__reply_u64(o, "capture_id", &e->capture_id) < 0 ||
	    proto__reply_u64(o, "windows", &e->windows) < 0 ||
	    proto__reply_u64(o, "total_ns", &e->total_ns) < 0 ||
	    proto__reply_u64(o, "samples_count", &e->n_samples) < 0)
		return -EINVAL;
	/* Daemons from before differential exports leave these out. */
	if ((cJSON_GetObjectItemCaseSensitive(o, "differential") &&
	     proto__reply_bool(o, "differential", &e->differential) < 0) ||
	    (cJSON_GetObjectItemCaseSensitive(o, "diff_windows") &&
	     proto__reply_u64(o, "diff_windows", &e->diff_windows) < 0))
		return -EINVAL;
	if (proto__reply_opt_str(o, "folded", &e->folded) < 0 ||
	    proto__reply_opt_str(o, "output", &e->output) < 0 ||
	    proto__reply_opt_str(o, "kind", &e->kind) < 0)
		return -EINVAL;
	return proto__reply_notes(r, o, &e->notes, &e->n_notes);
}

/* The figures of a latency reply; hist, children and timeline are left
 * unparsed (NULL, 0): offcpuctl prints the raw reply in JSON mode. */
static int proto__reply_latency(struct proto__reply *r, const cJSON *o)
{
	struct proto_latency_result *l = &r->pub.latency;

	if (!cJSON_IsObject(o) || proto__reply_str(o, "func", &l->func) < 0 ||
	    proto__reply_u64(o, "calls", &l->calls) < 0 ||
	    proto__reply_u64(o, "total_ns", &l->total_ns) < 0 ||
	    proto__reply_u64(o, "min_ns", &l->min_ns) < 0 ||
	    proto__reply_u64(o, "max_ns", &l->max_ns) < 0 ||
	    proto__reply_u64(o, "off_cpu_ns", &l->off_cpu_ns) < 0 ||
	    proto__reply_u64(o, "out_of_range", &l->out_of_range) < 0 ||
	    proto__reply_u64(o, "incomplete", &l->incomplete) < 0 ||
	    proto__reply_u64(o, "unmatched_returns", &l->unmatched_returns) < 0 ||
	    proto__reply_u64(o, "overflows", &l->overflows) < 0 ||
	    proto__reply_u64(o, "decode_errors", &l->decode_errors) < 0)
		return -EINVAL;
	return 0;
}

static int proto__reply_pt_trace(struct proto__reply *r, const cJSON *o)
{
	struct proto_pt_trace_result *t = &r->pub.trace;

	r->pub.has_trace = true;
	if (!cJSON_IsObject(o) || proto__reply_str(o, "path", &t->path) < 0 ||
	    proto__reply_str(o, "event", &t->event) < 0 ||
	    proto__reply_bool(o, "snapshot", &t->snapshot) < 0 ||
	    proto__reply_bool(o, "filtered", &t->filtered) < 0 ||
	    proto__reply_u64(o, "bytes", &t->bytes) < 0 ||
	    proto__reply_u64(o, "threads", &t->threads) < 0 ||
	    proto__reply_u64(o, "threads_lost", &t->threads_lost) < 0 ||
	    proto__reply_u64(o, "switches", &t->switches) < 0 ||
	    proto__reply_u64(o, "truncated", &t->truncated) < 0 ||
	    proto__reply_u64(o, "lost", &t->lost) < 0)
		return -EINVAL;
	return 0;
}

static int proto__reply_hist(struct proto__reply *r, const cJSON *o)
{
	struct proto_hist_result *h = &r->pub.hist;
	const cJSON *list, *p;
	size_t n = 0;

	if (!cJSON_IsObject(o))
		return -EINVAL;
	if (proto__reply_str(o, "kind", &h->kind) < 0 ||
	    proto__reply_i64(o, "from_ms", &h->from_ms) < 0 ||
	    proto__reply_i64(o, "to_ms", &h->to_ms) < 0 ||
	    proto__reply_u64(o, "capture_id", &h->capture_id) < 0 ||
	    proto__reply_u64(o, "windows", &h->windows) < 0)
		return -EINVAL;
	list = cJSON_GetObjectItemCaseSensitive(o, "processes");
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->processes = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->processes));
	if (!r->processes)
		return -ENOMEM;
	cJSON_ArrayForEach(p, list)
	{
		struct proto_hist_process *hp = &r->processes[n];

		if (!cJSON_IsObject(p) || proto__reply_u32(p, "tgid", &hp->tgid) < 0 ||
		    proto__reply_str(p, "comm", &hp->comm) < 0 ||
		    proto__reply_buckets(p, "counts", hp->counts) < 0)
			return -EINVAL;
		n++;
	}
	h->processes = r->processes;
	h->n_processes = n;
	return 0;
}

/* A blocked thread's fields, its stacks counted (not yet copied). */
static int proto__reply_blocked_thread(const cJSON *o, struct proto_blocked_thread *t)
{
	const cJSON *w;

	if (!cJSON_IsObject(o) || proto__reply_str(o, "comm", &t->comm) < 0 ||
	    proto__reply_u32(o, "tgid", &t->tgid) < 0 || proto__reply_u32(o, "pid", &t->pid) < 0 ||
	    proto__reply_str(o, "state", &t->state) < 0 ||
	    proto__reply_u64(o, "blocked_ns", &t->blocked_ns) < 0 ||
	    proto__reply_i64(o, "since_ms", &t->since_ms) < 0 ||
	    proto__reply_u64(o, "runq_ns", &t->runq_ns) < 0 ||
	    proto__frames_len(o, "ustack", false, &t->n_ustack) < 0 ||
	    proto__frames_len(o, "kstack", false, &t->n_kstack) < 0)
		return -EINVAL;
	if (cJSON_GetObjectItemCaseSensitive(o, "cgroup") &&
	    proto__reply_str(o, "cgroup", &t->cgroup) < 0)
		return -EINVAL;
	w = cJSON_GetObjectItemCaseSensitive(o, "waker"); /* only where known */
	if (w && (!cJSON_IsObject(w) || proto__reply_str(w, "comm", &t->waker_comm) < 0 ||
		  proto__reply_u32(w, "tgid", &t->waker_tgid) < 0 ||
		  proto__reply_u32(w, "pid", &t->waker_pid) < 0))
		return -EINVAL;
	return 0;
}

static int proto__reply_blocked(struct proto__reply *r, const cJSON *o)
{
	struct proto_blocked_result *b = &r->pub.blocked;
	size_t n = 0, n_frames = 0, k;
	const cJSON *list, *t;
	const char **next;
	uint64_t more;

	if (!cJSON_IsObject(o) || proto__reply_i64(o, "now_ms", &b->now_ms) < 0 ||
	    proto__reply_u64(o, "more", &more) < 0 || more > SIZE_MAX)
		return -EINVAL;
	b->n_more = more;
	list = cJSON_GetObjectItemCaseSensitive(o, "threads");
	if (!cJSON_IsArray(list))
		return -EINVAL;
	r->blocked = calloc(cJSON_GetArraySize(list) + 1, sizeof(*r->blocked));
	if (!r->blocked)
		return -ENOMEM;
	cJSON_ArrayForEach(t, list)
	{
		struct proto_blocked_thread *bt = &r->blocked[n++];

		if (proto__reply_blocked_thread(t, bt) < 0)
			return -EINVAL;
		k = bt->n_ustack + bt->n_kstack;
		if (k > SIZE_MAX / sizeof(*r->frames) - n_frames - 1)
			return -ENOMEM;
		n_frames += k;
	}
	r->frames = calloc(n_frames + 1, sizeof(*r->frames));
	if (!r->frames)
		return -ENOMEM;
	next = r->frames;
	n = 0;
	cJSON_ArrayForEach(t, list)
	{
		struct proto_blocked_thread *bt = &r->blocked[n++];

		bt->ustack = proto__frames_copy(t, "ustack", &next);
		bt->kstack = proto__frames_copy(t, "kstack", &next);
	}
	b->threads = r->blocked;
	b->n_threads = n;
	return 0;
}

/* A push reply: the range and the targets that got it (their names
 * point into the tree). */
static int proto__reply_push(struct proto__reply *r, const cJSON *o)
{
	struct proto_push_result *p = &r->pub.push;
	const char **next;

	if (!cJSON_IsObject(o) || proto__reply_i64(o, "from_ms", &p->from_ms) < 0 ||
	    proto__reply_i64(o, "to_ms", &p->to_ms) < 0 ||
	    proto__frames_len(o, "targets", false, &p->n_targets) < 0)
		return -EINVAL;
	r->push_targets = calloc(p->n_targets + 1, sizeof(*r->push_targets));
	if (!r->push_targets)
		return -ENOMEM;
	next = r->push_targets;
	p->targets = proto__frames_copy(o, "targets", &next);
	return 0;
}

static int proto__reply_fill(struct proto__reply *r)
{
	const cJSON *root = r->root, *error;
	const char *cmd;
	uint64_t version;

	if (!cJSON_IsObject(root))
		return -EINVAL;
	if (proto__reply_u64(root, "v", &version) < 0 || version != PROTO_VERSION)
		return -EINVAL;
	if (proto__reply_bool(root, "ok", &r->pub.ok) < 0)
		return -EINVAL;
	if (!r->pub.ok) {
		error = cJSON_GetObjectItemCaseSensitive(root, "error");
		if (!cJSON_IsObject(error) ||
		    proto__reply_str(error, "code", &r->pub.error_code) < 0 ||
		    proto__reply_str(error, "message", &r->pub.error_message) < 0)
			return -EINVAL;
		return 0;
	}
	if (proto__reply_str(root, "cmd", &cmd) < 0)
		return -EINVAL;
	if (!strcmp(cmd, "status")) {
		r->pub.cmd = PROTO_CMD_STATUS;
		return proto__reply_status(r, cJSON_GetObjectItemCaseSensitive(root, "status"));
	}
	if (!strcmp(cmd, "capture")) {
		const cJSON *started = cJSON_GetObjectItemCaseSensitive(root, "started");

		r->pub.cmd = PROTO_CMD_CAPTURE;
		if (started)
			return proto__reply_started(r, started);
		return proto__reply_capture(r, cJSON_GetObjectItemCaseSensitive(root, "capture"));
	}
	if (!strcmp(cmd, "windows")) {
		r->pub.cmd = PROTO_CMD_WINDOWS;
		return proto__reply_windows(r, cJSON_GetObjectItemCaseSensitive(root, "windows"));
	}
	if (!strcmp(cmd, "export")) {
		r->pub.cmd = PROTO_CMD_EXPORT;
		return proto__reply_export(r, cJSON_GetObjectItemCaseSensitive(root, "export"));
	}
	if (!strcmp(cmd, "hist")) {
		r->pub.cmd = PROTO_CMD_HIST;
		return proto__reply_hist(r, cJSON_GetObjectItemCaseSensitive(root, "hist"));
	}
	if (!strcmp(cmd, "heatmap")) { /* its body is for offcpuctl serve's page */
		r->pub.cmd = PROTO_CMD_HEATMAP;
		return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "heatmap")) ? 0
											 : -EINVAL;
	}
	if (!strcmp(cmd, "blocked")) {
		r->pub.cmd = PROTO_CMD_BLOCKED;
		return proto__reply_blocked(r, cJSON_GetObjectItemCaseSensitive(root, "blocked"));
	}
	if (!strcmp(cmd, "push")) {
		r->pub.cmd = PROTO_CMD_PUSH;
		return proto__reply_push(r, cJSON_GetObjectItemCaseSensitive(root, "push"));
	}
	if (!strcmp(cmd, "latency")) {
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(root, "trace");

		r->pub.cmd = PROTO_CMD_LATENCY;
		if (trace)
			return proto__reply_pt_trace(r, trace);
		return proto__reply_latency(r, cJSON_GetObjectItemCaseSensitive(root, "latency"));
	}
	return -EINVAL;
}

int proto_reply_parse(const char *buf, size_t len, struct proto_reply **ret)
{
	struct proto__reply *r;
	size_t offset;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->root = proto__parse_json(buf, len, &offset);
	if (!r->root) {
		free(r);
		return -EINVAL;
	}
	e = proto__reply_fill(r);
	if (e < 0) {
		proto_reply_free(&r->pub);
		return e;
	}
	*ret = &r->pub;
	return 0;
}

void proto_reply_free(struct proto_reply *reply)
{
	struct proto__reply *r;

	if (!reply)
		return;
	/* pub is the first member, so the reply is the private struct. */
	r = (struct proto__reply *)reply;
	cJSON_Delete(r->root);
	free(r->programs);
	free(r->counters);
	free(r->drops);
	free(r->windows);
	free(r->processes);
	free(r->requests);
	free(r->maps);
	free(r->kinds);
	free(r->blocked);
	free(r->frames);
	free(r->push);
	free(r->push_targets);
	free(r->notes);
	free(r);
}
