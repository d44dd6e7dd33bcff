/*
 * proto_reply: the daemon's replies, formatted (see proto.h and PROTOCOL.md).
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

char *proto_reply_error(const char *code, const char *message)
{
	cJSON *root = proto__new_message();
	cJSON *error;

	if (!root || !proto__add_bool(root, "ok", false))
		goto fail;
	error = cJSON_AddObjectToObject(root, "error");
	if (!proto__add_string(error, "code", code ? code : PROTO_ERR_INTERNAL) ||
	    !proto__add_string(error, "message", message))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* {"v":1,"ok":true,"cmd":CMD}, to which the caller adds the body. */
static cJSON *proto__new_ok_head(const char *cmd)
{
	cJSON *root = proto__new_message();

	if (!root || !proto__add_bool(root, "ok", true) || !proto__add_string(root, "cmd", cmd)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* {"v":1,"ok":true,"cmd":CMD,CMD:{}}, with *ret_body pointing at the last object. */
static cJSON *proto__new_ok(const char *cmd, cJSON **ret_body)
{
	cJSON *root = proto__new_ok_head(cmd);

	if (root && !(*ret_body = cJSON_AddObjectToObject(root, cmd))) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static bool proto__add_counts(cJSON *o, const char *name, const uint64_t *counts, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, name);

	if (!a)
		return false;
	for (size_t b = 0; b < n; b++) {
		cJSON *n = proto__u64(counts[b]);

		if (!n || !cJSON_AddItemToArray(a, n)) {
			cJSON_Delete(n);
			return false;
		}
	}
	return true;
}

static bool proto__add_buckets(cJSON *o, const char *name, const uint64_t *counts)
{
	return proto__add_counts(o, name, counts, PROTO_HIST_BUCKETS);
}

/* "requests": [...], left out when there are none. */
static bool proto__add_requests(cJSON *body, const struct proto_request_stats *r, size_t n)
{
	cJSON *list;

	if (!n)
		return true;
	list = cJSON_AddArrayToObject(body, "requests");
	for (size_t i = 0; list && i < n; i++) {
		cJSON *funcs, *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			return false;
		}
		if (!proto__add_string(o, "symbol", r[i].symbol) ||
		    !(funcs = cJSON_AddArrayToObject(o, "functions")))
			return false;
		for (size_t f = 0; f < r[i].n_functions; f++) {
			cJSON *fo = cJSON_CreateObject();

			if (!fo || !cJSON_AddItemToArray(funcs, fo)) {
				cJSON_Delete(fo);
				return false;
			}
			if (!proto__add_string(fo, "name", r[i].functions[f].name) ||
			    !proto__add_string(fo, "binary", r[i].functions[f].binary))
				return false;
		}
		if (!proto__add_u64(o, "count", r[i].count) ||
		    !proto__add_u64(o, "calls", r[i].calls) ||
		    (r[i].warning && !proto__add_string(o, "warning", r[i].warning)) ||
		    !proto__add_u64(o, "wall_ns", r[i].wall_ns) ||
		    !proto__add_u64(o, "offcpu_ns", r[i].offcpu_ns) ||
		    !proto__add_buckets(o, "wall_hist", r[i].wall_hist) ||
		    !proto__add_buckets(o, "offcpu_hist", r[i].offcpu_hist))
			return false;
	}
	return list != NULL;
}

static bool proto__add_kinds(cJSON *body, const struct proto_kind_status *k, size_t n)
{
	cJSON *kinds = cJSON_AddArrayToObject(body, "kinds");

	if (!kinds)
		return false;
	for (size_t i = 0; k && i < n; i++) {
		cJSON *ko = cJSON_CreateObject();

		if (!ko || !cJSON_AddItemToArray(kinds, ko)) {
			cJSON_Delete(ko);
			return false;
		}
		if (!proto__add_string(ko, "name", k[i].name) ||
		    !proto__add_string(ko, "state", k[i].state) ||
		    !proto__add_string(ko, "detail", k[i].detail ? k[i].detail : ""))
			return false;
	}
	return true;
}

static bool proto__add_programs(cJSON *body, const struct proto_status *s)
{
	cJSON *programs = cJSON_AddArrayToObject(body, "programs");

	if (!programs)
		return false;
	for (size_t i = 0; s->programs && i < s->n_programs; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p || !cJSON_AddItemToArray(programs, p)) {
			cJSON_Delete(p);
			return false;
		}
		if (!proto__add_string(p, "name", s->programs[i].name) ||
		    !proto__add_bool(p, "loaded", s->programs[i].loaded) ||
		    !proto__add_bool(p, "attached", s->programs[i].attached) ||
		    !proto__add_u64(p, "run_cnt", s->programs[i].run_cnt) ||
		    !proto__add_u64(p, "run_time_ns", s->programs[i].run_time_ns) ||
		    !proto__add_rate(p, "events_per_s", s->programs[i].events_per_s))
			return false;
	}
	return true;
}

static bool proto__add_groups(cJSON *body, const struct proto_status *s)
{
	cJSON *groups = cJSON_AddArrayToObject(body, "program_groups");

	if (!groups)
		return false;
	for (size_t i = 0; i < s->n_groups && i < PROTO_MAX_GROUPS; i++) {
		cJSON *g = cJSON_CreateObject();

		if (!g || !cJSON_AddItemToArray(groups, g)) {
			cJSON_Delete(g);
			return false;
		}
		if (!proto__add_string(g, "name", s->groups[i].name) ||
		    !proto__add_string(g, "state", s->groups[i].state) ||
		    !proto__add_string(g, "reason",
				       s->groups[i].reason ? s->groups[i].reason : "") ||
		    !proto__add_u64(g, "load_ms", s->groups[i].load_ms))
			return false;
	}
	return true;
}

static bool proto__add_maps(cJSON *body, const struct proto_status *s)
{
	cJSON *maps = cJSON_AddArrayToObject(body, "maps");

	if (!maps)
		return false;
	for (size_t i = 0; s->maps && i < s->n_maps; i++) {
		cJSON *mo = cJSON_CreateObject();

		if (!mo || !cJSON_AddItemToArray(maps, mo)) {
			cJSON_Delete(mo);
			return false;
		}
		if (!proto__add_string(mo, "name", s->maps[i].name) ||
		    !proto__add_u64(mo, "entries", s->maps[i].entries) ||
		    !proto__add_u64(mo, "max_entries", s->maps[i].max_entries) ||
		    !proto__add_rate(mo, "fill_pct", s->maps[i].fill_pct))
			return false;
	}
	return true;
}

/* "store", and "daemon": the daemon's own CPU and memory. */
static bool proto__add_store(cJSON *body, const struct proto_status *s)
{
	cJSON *store, *daemon;

	return (store = cJSON_AddObjectToObject(body, "store")) &&
	       proto__add_string(store, "path", s->store.path ? s->store.path : "") &&
	       proto__add_u64(store, "bytes", s->store.bytes) &&
	       proto__add_u64(store, "windows", s->store.windows) &&
	       proto__add_u64(store, "windows_written", s->store.windows_written) &&
	       proto__add_u64(store, "windows_failed", s->store.windows_failed) &&
	       proto__add_bool(store, "disk_full", s->store.disk_full) &&
	       proto__add_string(store, "last_error",
				 s->store.last_error ? s->store.last_error : "") &&
	       (daemon = cJSON_AddObjectToObject(body, "daemon")) &&
	       proto__add_rate(daemon, "cpu_pct", s->cpu_pct) &&
	       proto__add_u64(daemon, "rss_bytes", s->rss_bytes) &&
	       proto__add_u64(daemon, "heap_in_use_bytes", s->heap_in_use_bytes) &&
	       proto__add_u64(daemon, "heap_free_bytes", s->heap_free_bytes) &&
	       proto__add_u64(daemon, "store_cache_bytes", s->store_cache_bytes) &&
	       proto__add_u64(daemon, "symbol_cache_bytes", s->symbol_cache_bytes);
}

static bool proto__add_unwind(cJSON *body, const struct proto_status *s)
{
	cJSON *unwind = cJSON_AddObjectToObject(body, "unwind");

	return unwind &&
	       proto__add_string(unwind, "mode", s->unwind.mode ? s->unwind.mode : "fp") &&
	       proto__add_u64(unwind, "tables", s->unwind.tables) &&
	       proto__add_u64(unwind, "processes", s->unwind.processes) &&
	       proto__add_u64(unwind, "rows_used", s->unwind.rows_used) &&
	       proto__add_u64(unwind, "rows_max", s->unwind.rows_max) &&
	       proto__add_u64(unwind, "table_bytes", s->unwind.table_bytes) &&
	       proto__add_u64(unwind, "builds", s->unwind.builds) &&
	       proto__add_u64(unwind, "build_ns_total", s->unwind.build_ns_total) &&
	       proto__add_u64(unwind, "build_ns_max", s->unwind.build_ns_max) &&
	       proto__add_string(unwind, "build_max_path",
				 s->unwind.build_max_path ? s->unwind.build_max_path : "") &&
	       proto__add_u64(unwind, "evictions", s->unwind.evictions) &&
	       proto__add_u64(unwind, "no_room", s->unwind.no_room) &&
	       proto__add_u64(unwind, "given_up", s->unwind.given_up) &&
	       proto__add_u64(unwind, "failed", s->unwind.failed) &&
	       proto__add_u64(unwind, "requests", s->unwind.requests) &&
	       proto__add_u64(unwind, "unknown_exited", s->unwind.unknown_exited) &&
	       proto__add_u64(unwind, "unknown_unmapped", s->unwind.unknown_unmapped) &&
	       proto__add_u64(unwind, "unknown_anonymous", s->unwind.unknown_anonymous) &&
	       proto__add_u64(unwind, "kept_processes", s->unwind.kept_processes) &&
	       proto__add_u64(unwind, "kept_files", s->unwind.kept_files) &&
	       proto__add_bool(unwind, "from_vmas", s->unwind.from_vmas) &&
	       proto__add_bool(unwind, "loader_hook", s->unwind.loader_hook) &&
	       proto__add_u64(unwind, "file_ids", s->unwind.file_ids) &&
	       proto__add_u64(unwind, "unknown_forgotten", s->unwind.unknown_forgotten) &&
	       proto__add_u64(unwind, "files_opened", s->unwind.files_opened) &&
	       proto__add_u64(unwind, "files_known", s->unwind.files_known) &&
	       proto__add_u64(unwind, "adopted", s->unwind.adopted) &&
	       proto__add_u64(unwind, "loader_reads", s->unwind.loader_reads) &&
	       proto__add_u64(unwind, "loader_wait_ns_total", s->unwind.loader_wait_ns_total) &&
	       proto__add_u64(unwind, "loader_wait_ns_max", s->unwind.loader_wait_ns_max) &&
	       proto__add_u64(unwind, "loader_read_ns_total", s->unwind.loader_read_ns_total) &&
	       proto__add_u64(unwind, "loader_read_ns_max", s->unwind.loader_read_ns_max) &&
	       proto__add_i64(unwind, "unwinder_nice", s->unwind.unwinder_nice) &&
	       proto__add_u64(unwind, "background_builds", s->unwind.background_builds) &&
	       proto__add_u64(unwind, "background_wait_ns_max", s->unwind.background_wait_ns_max) &&
	       proto__add_bool(unwind, "python_frames", s->unwind.python_frames) &&
	       proto__add_u64(unwind, "python_processes", s->unwind.python_processes) &&
	       proto__add_u64(unwind, "python_unsupported", s->unwind.python_unsupported) &&
	       proto__add_string(unwind, "python_unsupported_what",
				 s->unwind.python_unsupported_what ? s->unwind.python_unsupported_what
								   : "");
}

static bool proto__add_pt(cJSON *body, const struct proto_status *s)
{
	cJSON *pt = cJSON_AddObjectToObject(body, "pt");

	return pt && proto__add_string(pt, "event", s->pt.event ? s->pt.event : "intel_pt") &&
	       proto__add_bool(pt, "available", s->pt.available) &&
	       proto__add_string(pt, "reason", s->pt.reason ? s->pt.reason : "") &&
	       proto__add_u64(pt, "address_ranges", s->pt.address_ranges) &&
	       proto__add_u64(pt, "recording_pid", s->pt.recording_pid);
}

static bool proto__add_sampling(cJSON *body, const struct proto_status *s)
{
	cJSON *sampling = cJSON_AddObjectToObject(body, "sampling");

	return sampling &&
	       proto__add_string(sampling, "stacks",
				 s->sampling.stacks ? s->sampling.stacks : "") &&
	       proto__add_u64(sampling, "period_us", s->sampling.period_us) &&
	       proto__add_string(sampling, "walk", s->sampling.walk ? s->sampling.walk : "") &&
	       proto__add_string(sampling, "walk_reason",
				 s->sampling.walk_reason ? s->sampling.walk_reason : "") &&
	       proto__add_string(sampling, "walk_return",
				 s->sampling.walk_return ? s->sampling.walk_return : "") &&
	       proto__add_string(sampling, "walk_return_reason",
				 s->sampling.walk_return_reason ? s->sampling.walk_return_reason
								: "") &&
	       proto__add_rate(sampling, "blocks_per_s", s->sampling.blocks_per_s) &&
	       proto__add_rate(sampling, "samples_per_s", s->sampling.samples_per_s) &&
	       proto__add_rate(sampling, "user_walks_per_s", s->sampling.user_walks_per_s) &&
	       proto__add_rate(sampling, "kernel_walks_per_s", s->sampling.kernel_walks_per_s) &&
	       proto__add_rate(sampling, "task_works_per_s", s->sampling.task_works_per_s) &&
	       proto__add_rate(sampling, "task_work_us", s->sampling.task_work_us) &&
	       proto__add_u64(sampling, "samples_lost", s->sampling.samples_lost) &&
	       proto__add_u64(sampling, "window_blocks", s->sampling.window_blocks) &&
	       proto__add_u64(sampling, "window_samples", s->sampling.window_samples) &&
	       proto__add_rate(sampling, "window_error_pct", s->sampling.window_error_pct) &&
	       proto__add_rate(sampling, "window_unsampled_pct", s->sampling.window_unsampled_pct);
}

/* A string field written only where it is known. */
static bool proto__add_known(cJSON *o, const char *name, const char *value)
{
	return !value || !*value || proto__add_string(o, name, value);
}

static bool proto__add_cgroups(cJSON *body, const struct proto_status *s)
{
	const struct proto_cgroup_status *c = &s->cgroups;
	cJSON *o;

	if (!c->hierarchy || !*c->hierarchy)
		return true;
	o = cJSON_AddObjectToObject(body, "cgroups");
	return o && proto__add_string(o, "hierarchy", c->hierarchy) &&
	       proto__add_string(o, "mount", c->mount ? c->mount : "") &&
	       proto__add_string(o, "reason", c->reason ? c->reason : "") &&
	       proto__add_bool(o, "events", c->events) &&
	       proto__add_string(o, "events_reason", c->events_reason ? c->events_reason : "") &&
	       proto__add_u64(o, "known", c->known) && proto__add_u64(o, "removed", c->removed) &&
	       proto__add_u64(o, "from_proc", c->from_proc) && proto__add_u64(o, "scans", c->scans) &&
	       proto__add_u64(o, "failures", c->failures);
}

/* An object appended to list, or NULL. */
static cJSON *proto__append_object(cJSON *list)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(list, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* "push": always there, its targets an empty array when none is
 * configured, so that a client can tell that from an older daemon's. */
static bool proto__add_push(cJSON *body, const struct proto_status *s)
{
	cJSON *o = cJSON_AddObjectToObject(body, "push"), *targets, *t;

	if (!o || !proto__add_bool(o, "configured", s->push_configured) ||
	    !(targets = cJSON_AddArrayToObject(o, "targets")))
		return false;
	for (size_t i = 0; s->push && i < s->n_push; i++) {
		const struct proto_push_status *p = &s->push[i];

		if (!(t = proto__append_object(targets)) ||
		    !proto__add_string(t, "name", p->name) ||
		    !proto__add_string(t, "api", p->api) || !proto__add_string(t, "url", p->url) ||
		    !proto__add_string(t, "state", p->state) ||
		    !proto__add_i64(t, "last_success_ms", p->last_success_ms) ||
		    !proto__add_u64(t, "lag_windows", p->lag_windows) ||
		    !proto__add_u64(t, "lag_ms", p->lag_ms) ||
		    !proto__add_u64(t, "sent", p->sent) ||
		    !proto__add_u64(t, "set_aside", p->set_aside) ||
		    !proto__add_u64(t, "lost", p->lost) ||
		    !proto__add_u64(t, "retries", p->retries) ||
		    !proto__add_u64(t, "bytes_sent", p->bytes_sent) ||
		    !proto__add_i64(t, "next_try_ms", p->next_try_ms) ||
		    !proto__add_u64(t, "backfill_windows", p->backfill_windows) ||
		    !proto__add_string(t, "last_error", p->last_error ? p->last_error : ""))
			return false;
	}
	return true;
}

char *proto_reply_status(const struct proto_status *s)
{
	cJSON *body, *root = proto__new_ok("status", &body);

	if (!root)
		return NULL;
	if (!proto__add_string(body, "version", s->version) ||
	    !proto__add_u64(body, "uptime_s", s->uptime_s) ||
	    !proto__add_u64(body, "pid", s->pid) ||
	    !proto__add_string(body, "tracepoint", s->tracepoint) ||
	    !proto__add_string(body, "runq_clock", s->runq_clock ? s->runq_clock : "") ||
	    !proto__add_bool(body, "bpf_stats", s->bpf_stats) ||
	    !proto__add_bool(body, "kstack_cache", s->kstack_cache) ||
	    !proto__add_string(body, "kstack_cache_reason",
			       s->kstack_cache_reason ? s->kstack_cache_reason : "") ||
	    !proto__add_bool(body, "in_progress", s->in_progress) ||
	    !proto__add_string(body, "in_progress_reason",
			       s->in_progress_reason ? s->in_progress_reason : "") ||
	    !proto__add_bool(body, "sched_frames", s->sched_frames) ||
	    !proto__add_string(body, "sched_frames_reason",
			       s->sched_frames_reason ? s->sched_frames_reason : "") ||
	    !proto__add_string(body, "bio_tracepoints", s->bio_tracepoints) ||
	    !proto__add_string(body, "fileio_tracepoints", s->fileio_tracepoints) ||
	    !proto__add_programs(body, s) || !proto__add_groups(body, s) ||
	    !proto__add_maps(body, s) || !proto__add_store(body, s) ||
	    !proto__add_unwind(body, s) || !proto__add_pt(body, s) || !proto__add_sampling(body, s))
		goto fail;
	if (!proto__add_u64(body, "slots_active", s->slots_active) ||
	    !proto__add_u64(body, "slots_max", s->slots_max) ||
	    !proto__add_u64(body, "captures_running", s->captures_running) ||
	    !proto__add_rate(body, "switches_per_s", s->switches_per_s) ||
	    !proto__add_rate(body, "recorded_per_s", s->recorded_per_s) ||
	    !proto__add_counters(body, "counters", s->counters, s->n_counters) ||
	    !proto__add_requests(body, s->requests, s->n_requests) ||
	    !proto__add_kinds(body, s->kinds, s->n_kinds) || !proto__add_cgroups(body, s) ||
	    !proto__add_push(body, s))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* A row's or histogram's kind name; rows made before kinds existed are offcpu. */
static const char *proto__kind_or_default(const char *kind)
{
	return kind ? kind : proto_kind_names[PROTO_KIND_OFFCPU];
}

/* Whether s's leaf frame, the kernel stack's or else the user stack's, is
 * PROTO_IN_PROGRESS_FRAME. */
static bool proto__sample_in_progress(const struct proto_sample *s)
{
	const char *leaf = s->n_kstack	 ? s->kstack[s->n_kstack - 1]
			   : s->n_ustack ? s->ustack[s->n_ustack - 1]
					 : NULL;

	return leaf && !strcmp(leaf, PROTO_IN_PROGRESS_FRAME);
}

/* Who a sample's thread is beside its pids: cgroup, unit, container. */
static bool proto__add_identity(cJSON *o, const struct proto_sample *s)
{
	return proto__add_known(o, "cgroup", s->cgroup) && proto__add_known(o, "unit", s->unit) &&
	       proto__add_known(o, "container", s->container) &&
	       proto__add_known(o, "runtime", s->runtime) && proto__add_known(o, "pod", s->pod) &&
	       (!s->ns_pid || proto__add_u64(o, "ns_pid", s->ns_pid));
}

static bool proto__add_sample(cJSON *samples, const struct proto_sample *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(samples, o)) {
		cJSON_Delete(o);
		return false;
	}
	return proto__add_identity(o, s) && proto__add_string(o, "comm", s->comm) && proto__add_u64(o, "tgid", s->tgid) &&
	       proto__add_u64(o, "pid", s->pid) && proto__add_string(o, "state", s->state) &&
	       proto__add_string(o, "kind", proto__kind_or_default(s->kind)) &&
	       proto__add_u64(o, "value_ns", s->value_ns) && proto__add_u64(o, "count", s->count) &&
	       proto__add_frames(o, "ustack", s->ustack, s->n_ustack) &&
	       proto__add_frames(o, "kstack", s->kstack, s->n_kstack) &&
	       (!s->n_chain || proto__add_frames(o, "chain", s->chain, s->n_chain)) &&
	       (!proto__sample_in_progress(s) || cJSON_AddTrueToObject(o, "in_progress"));
}

/* The result's "folded" text or "samples" array, whichever is set. */
static bool proto__add_rows(cJSON *body, const char *folded, const struct proto_sample *samples,
			    size_t n_samples)
{
	cJSON *a;

	if (folded && !proto__add_string(body, "folded", folded))
		return false;
	if (!samples)
		return true;
	a = cJSON_AddArrayToObject(body, "samples");
	if (!a)
		return false;
	for (size_t i = 0; i < n_samples; i++)
		if (!proto__add_sample(a, &samples[i]))
			return false;
	return true;
}

char *proto_reply_capture(const struct proto_capture_result *r, size_t n_samples)
{
	cJSON *body, *us, *sm, *root = proto__new_ok("capture", &body);

	if (!root)
		return NULL;

	if (!proto__add_u64(body, "id", r->id) ||
	    !proto__add_u64(body, "duration_ns", r->duration_ns) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !(us = cJSON_AddObjectToObject(body, "user_stacks")) ||
	    !proto__add_u64(us, "complete_ns", r->user_stacks.complete_ns) ||
	    !proto__add_u64(us, "truncated_ns", r->user_stacks.truncated_ns) ||
	    !proto__add_u64(us, "frame_pointer_ns", r->user_stacks.frame_pointer_ns) ||
	    !proto__add_u64(body, "samples_count", r->n_samples) ||
	    !proto__add_bool(body, "target_exited", r->target_exited) ||
	    !proto__add_counters(body, "drops", r->drops, r->n_drops) ||
	    !proto__add_rows(body, r->folded, r->samples, n_samples) ||
	    (r->output && !proto__add_string(body, "output", r->output)) ||
	    !proto__add_requests(body, r->requests, r->n_requests) ||
	    (r->loaded && *r->loaded &&
	     (!proto__add_string(body, "loaded", r->loaded) ||
	      !proto__add_u64(body, "load_ms", r->load_ms))) ||
	    (r->n_notes && !proto__add_frames(body, "notes", r->notes, r->n_notes)))
		goto fail;
	if (r->sampling.period_us &&
	    (!(sm = cJSON_AddObjectToObject(body, "sampling")) ||
	     !proto__add_u64(sm, "period_us", r->sampling.period_us) ||
	     !proto__add_u64(sm, "blocks", r->sampling.blocks) ||
	     !proto__add_u64(sm, "samples", r->sampling.samples) ||
	     !proto__add_rate(sm, "error_pct", r->sampling.error_pct) ||
	     !proto__add_rate(sm, "unsampled_pct", r->sampling.unsampled_pct)))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* {"v":1,"ok":true,"cmd":"capture","started":{...}}: not the capture's reply,
 * which follows; only a capture that asked (notify_started) sends it. */
char *proto_reply_capture_started(const struct proto_capture_started *st)
{
	cJSON *body, *root = proto__new_ok_head("capture");

	if (!root)
		return NULL;
	if (!(body = cJSON_AddObjectToObject(root, "started")) ||
	    !proto__add_u64(body, "id", st->id) || !proto__add_u64(body, "seconds", st->seconds)) {
		cJSON_Delete(root);
		return NULL;
	}
	return proto__finish(root);
}

char *proto_reply_windows(const struct proto_window_info *w, size_t n)
{
	cJSON *list, *root = proto__new_ok_head("windows");

	if (!root || !(list = cJSON_AddArrayToObject(root, "windows")))
		goto fail;
	for (size_t i = 0; w && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!proto__add_u64(o, "id", w[i].id) ||
		    !proto__add_i64(o, "start_ms", w[i].start_ms) ||
		    !proto__add_i64(o, "end_ms", w[i].end_ms) ||
		    !proto__add_u64(o, "capture_id", w[i].capture_id) ||
		    !proto__add_u64(o, "stacks", w[i].stacks) ||
		    !proto__add_u64(o, "samples", w[i].samples) ||
		    !proto__add_u64(o, "bytes", w[i].bytes) ||
		    (w[i].kind &&
		     (!proto__add_string(o, "kind", w[i].kind) ||
		      !proto__add_string(o, "targets", w[i].targets ? w[i].targets : ""))))
			goto fail;
	}
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_export(const struct proto_export_result *r, size_t n_samples)
{
	cJSON *body, *root = proto__new_ok("export", &body);

	if (!root)
		return NULL;
	if (!proto__add_i64(body, "from_ms", r->from_ms) ||
	    !proto__add_i64(body, "to_ms", r->to_ms) ||
	    !proto__add_u64(body, "capture_id", r->capture_id) ||
	    !proto__add_u64(body, "windows", r->windows) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !proto__add_u64(body, "samples_count", r->n_samples) ||
	    !proto__add_bool(body, "differential", r->differential) ||
	    !proto__add_u64(body, "diff_windows", r->diff_windows) ||
	    !proto__add_rows(body, r->folded, r->samples, n_samples) ||
	    (r->output && !proto__add_string(body, "output", r->output)) ||
	    !proto__add_known(body, "kind", r->kind) ||
	    (r->n_notes && !proto__add_frames(body, "notes", r->notes, r->n_notes)))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_notes_json(const char *const *notes, size_t n)
{
	cJSON *root = proto__new_ok_head("export");

	if (!root || !proto__add_frames(root, "notes", notes, n)) {
		cJSON_Delete(root);
		return NULL;
	}
	return proto__finish(root);
}

static bool proto__add_hist_process(cJSON *list, const struct proto_hist_process *p)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(list, o)) {
		cJSON_Delete(o);
		return false;
	}
	return proto__add_u64(o, "tgid", p->tgid) && proto__add_string(o, "comm", p->comm) &&
	       proto__add_buckets(o, "counts", p->counts);
}

char *proto_reply_hist(const struct proto_hist_result *r)
{
	cJSON *body, *list, *root = proto__new_ok("hist", &body);

	if (!root)
		return NULL;
	if (!proto__add_string(body, "kind", proto__kind_or_default(r->kind)) ||
	    !proto__add_i64(body, "from_ms", r->from_ms) ||
	    !proto__add_i64(body, "to_ms", r->to_ms) ||
	    !proto__add_u64(body, "capture_id", r->capture_id) ||
	    !proto__add_u64(body, "windows", r->windows) ||
	    !(list = cJSON_AddArrayToObject(body, "processes")))
		goto fail;
	for (size_t i = 0; r->processes && i < r->n_processes; i++)
		if (!proto__add_hist_process(list, &r->processes[i]))
			goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

/* One thread of a blocked reply. Its ids are named as in samples: "tgid"
 * the process, "pid" the thread. */
static bool proto__add_blocked_thread(cJSON *list, const struct proto_blocked_thread *t)
{
	cJSON *w, *o = proto__append_object(list);

	if (!o || !proto__add_string(o, "comm", t->comm) || !proto__add_u64(o, "tgid", t->tgid) ||
	    !proto__add_u64(o, "pid", t->pid) || !proto__add_string(o, "state", t->state) ||
	    !proto__add_u64(o, "blocked_ns", t->blocked_ns) ||
	    !proto__add_i64(o, "since_ms", t->since_ms) ||
	    !proto__add_u64(o, "runq_ns", t->runq_ns) || !proto__add_known(o, "cgroup", t->cgroup))
		return false;
	if (t->waker_comm &&
	    (!(w = cJSON_AddObjectToObject(o, "waker")) ||
	     !proto__add_string(w, "comm", t->waker_comm) ||
	     !proto__add_u64(w, "tgid", t->waker_tgid) || !proto__add_u64(w, "pid", t->waker_pid)))
		return false;
	return proto__add_frames(o, "ustack", t->ustack, t->n_ustack) &&
	       proto__add_frames(o, "kstack", t->kstack, t->n_kstack);
}

char *proto_reply_blocked(const struct proto_blocked_result *r)
{
	cJSON *body, *list, *root = proto__new_ok("blocked", &body);

	if (!root)
		return NULL;
	if (!proto__add_i64(body, "now_ms", r->now_ms) ||
	    !(list = cJSON_AddArrayToObject(body, "threads")))
		goto fail;
	for (size_t i = 0; r->threads && i < r->n_threads; i++)
		if (!proto__add_blocked_thread(list, &r->threads[i]))
			goto fail;
	if (!proto__add_u64(body, "more", r->n_more))
		goto fail;
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_latency(const struct proto_latency_result *r)
{
	cJSON *body, *children, *timeline, *o, *root = proto__new_ok("latency", &body);
	size_t n_hist = PROTO_LATENCY_BUCKETS;

	if (!root)
		return NULL;
	while (n_hist && !r->hist[n_hist - 1]) /* up to the last bucket used */
		n_hist--;
	if (!proto__add_string(body, "func", r->func) || !proto__add_u64(body, "calls", r->calls) ||
	    !proto__add_u64(body, "total_ns", r->total_ns) ||
	    !proto__add_u64(body, "min_ns", r->calls ? r->min_ns : 0) ||
	    !proto__add_u64(body, "max_ns", r->max_ns) ||
	    !proto__add_u64(body, "off_cpu_ns", r->off_cpu_ns) ||
	    !proto__add_u64(body, "out_of_range", r->out_of_range) ||
	    !proto__add_u64(body, "incomplete", r->incomplete) ||
	    !proto__add_u64(body, "unmatched_returns", r->unmatched_returns) ||
	    !proto__add_u64(body, "overflows", r->overflows) ||
	    !proto__add_u64(body, "decode_errors", r->decode_errors) ||
	    !proto__add_counts(body, "hist_log2_ns", r->hist, n_hist) ||
	    !(children = cJSON_AddArrayToObject(body, "children")) ||
	    !(timeline = cJSON_AddArrayToObject(body, "timeline")))
		goto fail;
	for (size_t i = 0; i < r->n_children; i++) {
		const struct proto_latency_child *c = &r->children[i];

		if (!(o = proto__append_object(children)) ||
		    !proto__add_string(o, "name", c->name) ||
		    !proto__add_u64(o, "count", c->count) ||
		    !proto__add_u64(o, "total_ns", c->total_ns) ||
		    !proto__add_u64(o, "off_cpu_ns", c->off_cpu_ns))
			goto fail;
	}
	for (size_t i = 0; i < r->n_timeline; i++) {
		const struct proto_latency_call *c = &r->timeline[i];

		if (!(o = proto__append_object(timeline)) || !proto__add_u64(o, "tid", c->tid) ||
		    !proto__add_u64(o, "start_ns", c->start_ns) ||
		    !proto__add_u64(o, "latency_ns", c->latency_ns) ||
		    !proto__add_u64(o, "off_cpu_ns", c->off_cpu_ns))
			goto fail;
	}
	return proto__finish(root);
fail:
	cJSON_Delete(root);
	return NULL;
}

char *proto_reply_pt_trace(const struct proto_pt_trace_result *r)
{
	cJSON *body, *root = proto__new_ok_head("latency");

	if (!root)
		return NULL;
	if (!(body = cJSON_AddObjectToObject(root, "trace")) ||
	    !proto__add_string(body, "path", r->path) ||
	    !proto__add_string(body, "event", r->event) ||
	    !proto__add_bool(body, "snapshot", r->snapshot) ||
	    !proto__add_bool(body, "filtered", r->filtered) ||
	    !proto__add_u64(body, "bytes", r->bytes) ||
	    !proto__add_u64(body, "threads", r->threads) ||
	    !proto__add_u64(body, "threads_lost", r->threads_lost) ||
	    !proto__add_u64(body, "switches", r->switches) ||
	    !proto__add_u64(body, "truncated", r->truncated) ||
	    !proto__add_u64(body, "lost", r->lost)) {
		cJSON_Delete(root);
		return NULL;
	}
	return proto__finish(root);
}

char *proto_reply_push(const struct proto_push_result *r)
{
	cJSON *body, *root = proto__new_ok("push", &body);

	if (!root)
		return NULL;
	if (!proto__add_i64(body, "from_ms", r->from_ms) ||
	    !proto__add_i64(body, "to_ms", r->to_ms) ||
	    !proto__add_frames(body, "targets", r->targets, r->n_targets)) {
		cJSON_Delete(root);
		return NULL;
	}
	return proto__finish(root);
}
