/* manager_status: the status reply and the service status line. */

#include <errno.h>
#include <grp.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>

#include "access.h"
#include "capture.h"
#include "clock.h"
#include "collector.h"
#include "drain.h"
#include "hashtab.h"
#include "kind_status.h"
#include "store_jobs.h"
#include "log.h"
#include "proto.h"
#include "request.h"
#include "server.h"
#include "pt_capture.h"
#include "store.h"
#include "state_lock.h"
#include "store_queue.h"
#include "tracefs.h"
#include "file_ids.h"
#include "proc_files.h"
#include "symbolizer.h"
#include "unwinder.h"
#include "manager_internal.h"
#include "pusher.h"

void manager_notify_status(struct manager *m)
{
	unsigned running = manager_captures_running(m);

	sd_notifyf(0, "STATUS=attached (%s); %u capture%s running",
		   collector_tracepoint(m->collector), running, running == 1 ? "" : "s");
}

/* ---- status ---- */

static void fill_sampling_status(const struct manager *m, struct proto_sampling_status *ret)
{
	const struct sampling_summary *w = &m->windows.last_window_sampling;
	bool sampled = m->cfg.continuous_stacks == CONFIG_STACKS_SAMPLED;
	const char *why, *walk = collector_walk_mode(m->collector, &why);
	const char *return_why, *walk_return = collector_walk_return(m->collector, &return_why);

	*ret = (struct proto_sampling_status){
		.stacks = sampled ? "sampled" : "exact",
		.period_us = sampled ? m->cfg.sample_period_us : 0,
		.walk = walk,
		.walk_reason = why,
		.walk_return = walk_return,
		.walk_return_reason = *m->walk_return.why ? m->walk_return.why : return_why,
		.blocks_per_s = manager_counter_rate(m, OFFCPU_CNT_SAMPLED_BLOCKS),
		.samples_per_s = manager_counter_rate(m, OFFCPU_CNT_SAMPLES),
		.user_walks_per_s = manager_counter_rate(m, OFFCPU_CNT_USER_STACK_WALKS),
		.kernel_walks_per_s = manager_counter_rate(m, OFFCPU_CNT_KERNEL_STACK_WALKS),
		.task_works_per_s = manager_counter_rate(m, OFFCPU_CNT_TASK_WORKS),
		.task_work_us = manager_task_work_mean_ns(m) / 1e3,
		.samples_lost = m->stats.counters[OFFCPU_CNT_DEFER_LOST],
		.window_blocks = w->blocks,
		.window_samples = w->samples,
		.window_error_pct =
			100 * sampling_relative_error((uint64_t)m->cfg.sample_period_us * 1000,
						      w->short_ns, 0.01),
		.window_unsampled_pct = sampling_unsampled_pct(w),
	};
	if (!sampled)
		ret->window_error_pct = 0;
}

static const char *io_path_or_empty(const struct manager *m, unsigned kind)
{
	const char *path = collector_io_path(m->collector, kind);

	return path ? path : "";
}

static const char *const counter_names[OFFCPU_CNT_MAX] = {
#define COUNTER_NAME(name, status, drop) [OFFCPU_CNT_##name] = status,
	OFFCPU_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

/* Per second, over the last drain interval. */
static double per_second(const struct manager *m, uint64_t now, uint64_t before)
{
	double secs = (m->stats.counters_ns - m->stats.counters_prev_ns) / 1e9;

	if (!m->stats.counters_prev_ns || secs <= 0 || now < before)
		return 0;
	return (now - before) / secs;
}

double manager_counter_rate(const struct manager *m, unsigned idx)
{
	return per_second(m, m->stats.counters[idx], m->stats.counters_prev[idx]);
}

double manager_task_work_mean_ns(const struct manager *m)
{
	double works = manager_counter_rate(m, OFFCPU_CNT_TASK_WORKS);

	return works > 0 ? manager_counter_rate(m, OFFCPU_CNT_TASK_WORK_NS) / works : 0;
}

static uint64_t rss_bytes(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* malloc's heap: in use (mapped blocks included), and free but held by its
 * arenas. mallinfo2() walks the arenas: a status's cost, not a drain's. */
static void heap_bytes(struct proto_status *st)
{
	struct mallinfo2 mi = mallinfo2();

	st->heap_in_use_bytes = mi.uordblks + mi.hblkhd;
	st->heap_free_bytes = mi.fordblks;
}

static void map_fill(struct proto_map_fill *f, const char *name, size_t entries, uint32_t max)
{
	*f = (struct proto_map_fill){
		.name = name,
		.entries = entries,
		.max_entries = max,
		.fill_pct = max ? 100.0 * entries / max : 0,
	};
}

/*
 * Each kind's state for status: the one place that decides whether a kind
 * is ready, in use or unavailable (and why), from what the collector, the
 * configuration and the running captures say.
 */
static void kinds_status(struct manager *m, const struct proto_pt_status *pt,
			 struct kind_status ret[KIND_STATUS_COUNT],
			 struct collector_group_status groups[COLLECTOR_GROUP_COUNT])
{
	/* The kinds whose programs are a group of their own (loaded on first use). */
	static const struct {
		unsigned kind, group;
	} grouped[] = {
		{ OFFCPU_KIND_ONCPU, COLLECTOR_GROUP_ONCPU },
		{ KIND_STATUS_HOTCOLD, COLLECTOR_GROUP_ONCPU },
		{ OFFCPU_KIND_BIO, COLLECTOR_GROUP_BIO },
		{ OFFCPU_KIND_FILEIO, COLLECTOR_GROUP_FILEIO },
		{ KIND_STATUS_REQUEST, COLLECTOR_GROUP_REQUESTS },
	};
	struct kind_status_input in = { 0 };

	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++)
		collector_group_status(m->collector, g, &groups[g]);
	for (size_t i = 0; i < sizeof(grouped) / sizeof(grouped[0]); i++) {
		const struct collector_group_status *st = &groups[grouped[i].group];

		if (st->state == COLLECTOR_GROUP_UNAVAILABLE)
			in.unavailable[grouped[i].kind] =
				grouped[i].kind == OFFCPU_KIND_FILEIO && *m->tracefs_why
					? m->tracefs_why
					: st->reason;
		in.on_demand[grouped[i].kind] = st->state == COLLECTOR_GROUP_ON_DEMAND;
	}
	if (*m->tracefs_why) /* the syscall tracepoints cannot even be named */
		in.unavailable[OFFCPU_KIND_FILEIO] = m->tracefs_why;
	if (!pt->available)
		in.unavailable[KIND_STATUS_LATENCY] = pt->reason;
	in.traced_with[OFFCPU_KIND_BIO] = collector_io_path(m->collector, OFFCPU_KIND_BIO);
	in.traced_with[OFFCPU_KIND_FILEIO] = collector_io_path(m->collector, OFFCPU_KIND_FILEIO);
	for (unsigned kind = 0; kind < OFFCPU_KIND_COUNT; kind++)
		in.continuous[kind] =
			m->windows.continuous && (m->cfg.continuous_kinds & (1u << kind)) &&
			!in.unavailable[kind]; /* manager_continuous_start skipped those */
	in.continuous[KIND_STATUS_REQUEST] = m->windows.continuous && *m->cfg.continuous_requests;
	for (unsigned i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		const struct capture *c = m->cap.captures[i];

		if (!c)
			continue;
		in.captures[c->req.oncpu ? KIND_STATUS_HOTCOLD : c->req.kind]++;
		in.captures[KIND_STATUS_REQUEST] += c->req.n_requests > 0;
	}
	in.captures[KIND_STATUS_LATENCY] = m->pt.pt_work != NULL;
	kind_status_fill(&in, ret);
}

/* The unwind tables' state; ustats holds what ret points to. */
static void unwind_status(struct manager *m, struct unwinder_stats *ustats,
			  struct proto_unwind_status *ret)
{
	unwinder_stats(m->unwinder, ustats);
	*ret = (struct proto_unwind_status){
		.mode = "dwarf",
		.tables = ustats->tables,
		.processes = ustats->processes,
		.rows_used = ustats->rows_used,
		.rows_max = ustats->rows_max,
		.table_bytes = ustats->table_bytes,
		.builds = ustats->builds,
		.build_ns_total = ustats->build_ns_total,
		.build_ns_max = ustats->build_ns_max,
		.build_max_path = ustats->build_max_path,
		.evictions = ustats->evictions,
		.no_room = ustats->no_room,
		.given_up = ustats->given_up,
		.failed = ustats->failed,
		.requests = ustats->requests,
		.files_opened = ustats->files_opened,
		.files_known = ustats->files_known,
		.adopted = ustats->adopted,
		.loader_reads = ustats->loader_reads,
		.unwinder_nice = ustats->nice,
		.loader_wait_ns_total = ustats->loader_wait_ns_total,
		.loader_wait_ns_max = ustats->loader_wait_ns_max,
		.loader_read_ns_total = ustats->loader_read_ns_total,
		.loader_read_ns_max = ustats->loader_read_ns_max,
		.background_builds = ustats->background_builds,
		.background_wait_ns_max = ustats->background_wait_ns_max,
		.python_frames = collector_python_frames(m->collector),
		.python_processes = ustats->python_processes,
		.python_unsupported = ustats->python_unsupported,
		.python_unsupported_what = ustats->python_unsupported_what,
		.from_vmas = collector_unwind_from_vmas(m->collector),
		.loader_hook = collector_unwind_loader_hook(m->collector),
	};
}

/* User frames left unnamed, by why, and the names kept for processes gone. */
static void names_status(struct manager *m, struct proto_unwind_status *ret)
{
	uint64_t unnamed[SYMBOLIZER_UNNAMED_COUNT];
	struct proc_files_stats fst;

	if (!m->symbolizer || !m->proc_files)
		return;
	symbolizer_unnamed(m->symbolizer, unnamed);
	proc_files_stats(m->proc_files, &fst);
	ret->unknown_exited = unnamed[SYMBOLIZER_UNNAMED_EXITED];
	ret->unknown_unmapped = unnamed[SYMBOLIZER_UNNAMED_UNMAPPED];
	ret->unknown_anonymous = unnamed[SYMBOLIZER_UNNAMED_ANONYMOUS];
	ret->unknown_forgotten = unnamed[SYMBOLIZER_UNNAMED_FORGOTTEN];
	ret->file_ids = m->file_ids ? file_ids_count(m->file_ids) : 0;
	ret->kept_processes = fst.processes;
	ret->kept_files = fst.files;
}

/* Each program group's state, into groups (whose reasons st points to). */
static void groups_status(struct manager *m,
			  struct collector_group_status groups[COLLECTOR_GROUP_COUNT],
			  struct proto_status *st)
{
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT && g < PROTO_MAX_GROUPS; g++) {
		static const char *const states[] = {
			[COLLECTOR_GROUP_ON_DEMAND] = "on_demand",
			[COLLECTOR_GROUP_LOADED] = "loaded",
			[COLLECTOR_GROUP_UNAVAILABLE] = "unavailable",
		};

		collector_group_status(m->collector, g, &groups[g]);
		st->groups[st->n_groups++] = (struct proto_program_group){
			.name = collector_group_name(g),
			.state = states[groups[g].state],
			.reason = groups[g].state == COLLECTOR_GROUP_UNAVAILABLE ? groups[g].reason
										 : "",
			.load_ms = groups[g].load_ns / 1000000,
		};
	}
}

/* The programs as of the last drain, with their event rates. */
static void programs_status(const struct manager *m, struct proto_program *programs)
{
	for (size_t i = 0; i < m->stats.n_programs; i++)
		programs[i] = (struct proto_program){
			.name = m->stats.programs[i].name,
			.loaded = m->stats.programs[i].loaded,
			.attached = m->stats.programs[i].attached,
			.run_cnt = m->stats.programs[i].run_cnt,
			.run_time_ns = m->stats.programs[i].run_time_ns,
			.events_per_s = per_second(m, m->stats.programs[i].run_cnt,
						   m->stats.programs_prev[i].run_cnt),
		};
}

/* How full the last drain found the maps. */
static void maps_status(struct manager *m, struct proto_map_fill maps[4])
{
	struct collector_map_sizes sizes;

	collector_map_sizes(m->collector, &sizes);
	map_fill(&maps[0], "aggregation", m->stats.drained_rows, sizes.agg);
	map_fill(&maps[1], "stacks", m->stats.drained_stacks, sizes.stacks);
	map_fill(&maps[2], "chains", m->stats.drained_chains, sizes.chains);
	map_fill(&maps[3], "histograms", m->stats.drained_hists, sizes.hists);
}

void manager_handle_status(struct manager *m, struct server_conn *conn)
{
	struct proto_program programs[COLLECTOR_MAX_PROGRAMS];
	struct collector_group_status groups[COLLECTOR_GROUP_COUNT];
	struct proto_map_fill maps[4];
	struct proto_counter counters[OFFCPU_CNT_MAX];
	struct proto_request_stats requests[OFFCPU_MAX_REQUESTS];
	struct proto_request_function funcs[ELF_FUNCS_MAX];
	uint64_t now[OFFCPU_CNT_MAX];
	unsigned first_continuous;
	struct unwinder_stats ustats;
	char pt_reason[512];
	struct pt_capture_limits pt_limits;
	struct kind_status kinds[KIND_STATUS_COUNT];
	struct proto_kind_status pkinds[KIND_STATUS_COUNT];
	const char *kstack_cache_why, *in_progress_why, *sched_frames_why;
	struct pusher_status push_st[CONFIG_MAX_PUSH_TARGETS];
	struct proto_push_status push[CONFIG_MAX_PUSH_TARGETS];
	struct proto_status st;

	collector_counters(m->collector, now);
	for (unsigned i = 0; i < OFFCPU_CNT_MAX; i++) {
		counters[i].name = counter_names[i];
		counters[i].value = now[i];
	}
	st = (struct proto_status){
		.version = OFFCPU_VERSION,
		.uptime_s = (clock_monotonic_ns() - m->stats.started_ns) / 1000000000ULL,
		.pid = getpid(),
		.tracepoint = collector_tracepoint(m->collector),
		.runq_clock = collector_runq_clock(m->collector),
		.bpf_stats = collector_bpf_stats(m->collector),
		.kstack_cache = collector_kstack_cache(m->collector, &kstack_cache_why),
		.kstack_cache_reason = kstack_cache_why,
		.in_progress = collector_in_progress(m->collector, &in_progress_why),
		.in_progress_reason = in_progress_why,
		.sched_frames = collector_sched_frames(m->collector, &sched_frames_why),
		.sched_frames_reason = sched_frames_why,
		.bio_tracepoints = io_path_or_empty(m, OFFCPU_KIND_BIO),
		.fileio_tracepoints = io_path_or_empty(m, OFFCPU_KIND_FILEIO),
		.programs = programs,
		.n_programs = m->stats.n_programs,
		.slots_active = collector_slots_active(m->collector),
		.slots_max = OFFCPU_MAX_SLOTS,
		.captures_running = manager_captures_running(m),
		.switches_per_s = manager_counter_rate(m, OFFCPU_CNT_SWITCHES),
		.recorded_per_s = manager_counter_rate(m, OFFCPU_CNT_RECORDED),
		.counters = counters,
		.n_counters = OFFCPU_CNT_MAX,
		.requests = requests,
		.maps = maps,
		.n_maps = 4,
		.store = {
			.path = m->cfg.database,
			.bytes = m->windows.store_stats.db_bytes,
			.windows = m->windows.store_stats.windows,
			.windows_written = m->windows.windows_written,
			.windows_failed = m->windows.windows_failed,
			.disk_full = m->windows.disk_full,
			.last_error = m->windows.store_error,
		},
		.cpu_pct = per_second(m, m->stats.cpu_ns, m->stats.cpu_prev_ns) / 1e7,
		.rss_bytes = rss_bytes(),
		.store_cache_bytes = m->windows.store_stats.cache_bytes,
		.symbol_cache_bytes = m->symbolizer ? symbolizer_cache_bytes(m->symbolizer) : 0,
		.unwind.mode = "fp", /* set whole below when tables are used */
	};
	manager_pt_limits(&m->cfg, &pt_limits);
	pt_capture_status(&pt_limits, &st.pt, pt_reason, sizeof(pt_reason));
	fill_sampling_status(m, &st.sampling);
	heap_bytes(&st);
	if (m->pt.pt_work)
		st.pt.recording_pid = m->pt.pt_work->req.pid;
	kinds_status(m, &st.pt, kinds, groups);
	for (unsigned i = 0; i < KIND_STATUS_COUNT; i++)
		pkinds[i] =
			(struct proto_kind_status){ .name = kinds[i].name,
						    .state = kind_status_state_name(kinds[i].state),
						    .detail = kinds[i].detail };
	st.kinds = pkinds;
	st.n_kinds = KIND_STATUS_COUNT;
	manager_cgroups_status(m, &st.cgroups);
	st.push_configured = m->cfg.n_push > 0;
	st.n_push = manager_push_status(m, push_st, push, CONFIG_MAX_PUSH_TARGETS);
	st.push = push;
	if (m->unwinder)
		unwind_status(m, &ustats, &st.unwind);
	names_status(m, &st.unwind);
	groups_status(m, groups, &st);
	programs_status(m, programs);
	maps_status(m, maps);
	/* Each continuous slot has the same requests: the first one's say it all. */
	if (m->windows.continuous_slots) {
		first_continuous = __builtin_ctz(m->windows.continuous_slots);
		st.n_requests =
			request_probes_stats(&m->cap.requests[first_continuous], m->collector,
					     first_continuous, requests, funcs, ELF_FUNCS_MAX);
	}
	server_conn_send(conn, proto_reply_status(&st));
}
