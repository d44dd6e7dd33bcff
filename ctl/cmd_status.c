/*
 * cmd_status: offcpuctl status.
 */
#include "ctl.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "output.h"
#include "transact.h"

static uint64_t counter_value(const struct proto_status *st, const char *name)
{
	for (size_t i = 0; i < st->n_counters; i++)
		if (!strcmp(st->counters[i].name, name))
			return st->counters[i].value;
	return 0;
}

/* CPython's frames in user stacks: how many processes, walks and frames,
 * and the processes the walk does not know. */
static void python_status(const struct proto_status *st, const struct proto_unwind_status *u)
{
	uint64_t walks = counter_value(st, "python_walks"), cut = counter_value(st, "python_cut");

	if (!u->python_frames) {
		printf("python frames: off (python_frames = false)\n");
		return;
	}
	printf("python frames: %" PRIu64 " CPython processes (3.10 to 3.13); %" PRIu64
	       " walks, %" PRIu64 " frames, %" PRIu64 " cut short, %" PRIu64
	       " threads without Python",
	       u->python_processes, walks, counter_value(st, "python_frames"), cut,
	       counter_value(st, "python_no_thread"));
	if (u->python_unsupported)
		printf("; native frames only for %" PRIu64 " processes of versions it does not know"
		       " (last: %s)",
		       u->python_unsupported, u->python_unsupported_what);
	printf("\n");
}

static void unwind_summary(const struct proto_status *st)
{
	const struct proto_unwind_status *u = &st->unwind;
	uint64_t walks = counter_value(st, "ustack_table_walks");
	uint64_t truncated = counter_value(st, "ustack_truncated");
	uint64_t fallback = counter_value(st, "ustack_fp_fallback");
	uint64_t from_vmas = counter_value(st, "unwind_from_vmas");

	if (!*u->mode)
		return;
	if (strcmp(u->mode, "dwarf")) {
		printf("user stacks: frame pointers only\n");
		return;
	}
	printf("user stacks: unwind tables of %" PRIu64 " files for %" PRIu64 " processes (%" PRIu64
	       " of %" PRIu64 " rows, %.1f MiB); %" PRIu64 " built in %.2f s",
	       u->tables, u->processes, u->rows_used, u->rows_max, u->table_bytes / 1048576.0,
	       u->builds, u->build_ns_total / 1e9);
	if (u->build_ns_max)
		printf(" (longest %.3f s: %s)", u->build_ns_max / 1e9, u->build_max_path);
	if (u->no_room || u->failed || u->evictions)
		printf("; %" PRIu64 " files without room, %" PRIu64 " without CFI, %" PRIu64
		       " evicted",
		       u->no_room, u->failed, u->evictions);
	if (u->given_up)
		printf(" (%" PRIu64 " not built again for a minute: no room)", u->given_up);
	if (walks)
		printf("; %" PRIu64 " walks, %.1f%% reached the thread's first frame", walks,
		       100.0 * (walks - truncated) / walks);
	if (fallback)
		printf("; %" PRIu64 " with frame pointers, before their process's tables", fallback);
	if (u->from_vmas)
		printf("; %" PRIu64 " new processes mapped from their VMAs%s, %" PRIu64
		       " taken whole from there (maps unread)",
		       from_vmas, u->loader_hook ? " (also when their loader is done)" : "",
		       u->adopted);
	if (u->loader_reads)
		printf("; %" PRIu64 " read when their loader was done, %.1f ms later on average "
		       "(at most %.1f), taking %.1f ms (at most %.1f), at nice %" PRId64,
		       u->loader_reads, u->loader_wait_ns_total / 1e6 / u->loader_reads,
		       u->loader_wait_ns_max / 1e6, u->loader_read_ns_total / 1e6 / u->loader_reads,
		       u->loader_read_ns_max / 1e6, u->unwinder_nice);
	if (u->background_builds)
		printf("; %" PRIu64 " large tables built apart, off those reads (the longest wait "
		       "there %.1f ms)",
		       u->background_builds, u->background_wait_ns_max / 1e6);
	printf("\n");
	python_status(st, u);
	printf("user frames: by file and address for %" PRIu64 " files; names kept for %" PRIu64
	       " processes (%" PRIu64 " files held)",
	       u->file_ids, u->kept_processes, u->kept_files);
	if (u->unknown_exited || u->unknown_unmapped || u->unknown_anonymous ||
	    u->unknown_forgotten)
		printf("; [unknown]: %" PRIu64 " exited, %" PRIu64 " unmapped, %" PRIu64
		       " anonymous, %" PRIu64 " file forgotten",
		       u->unknown_exited, u->unknown_unmapped, u->unknown_anonymous,
		       u->unknown_forgotten);
	printf("\n");
}

/* The continuous profile's stacks: sampled (how, at what cost, how
 * accurate the last window is) or exact. */
static void sampling_summary(const struct proto_sampling_status *sm)
{
	if (!*sm->stacks)
		return;
	if (strcmp(sm->stacks, "sampled")) {
		printf("always-on stacks: exact (every block's)\n");
		return;
	}
	printf("always-on stacks: sampled, T = %" PRIu64 " us; user stacks walked ", sm->period_us);
	if (strcmp(sm->walk, "deferred"))
		printf("at switch-out%s%s\n", *sm->walk_reason ? ": " : "", sm->walk_reason);
	else if (!strcmp(sm->walk_return, "rseq_update"))
		printf("when the thread is current again (at rseq_update, else by BPF task "
		       "work%s%s)\n",
		       *sm->walk_return_reason ? "; " : "", sm->walk_return_reason);
	else /* sampled_walk = auto's reasons say both ways; the others say why not rseq */
		printf("when the thread is current again (by BPF task work%s%s)\n",
		       !*sm->walk_return_reason			      ? ""
		       : !strncmp(sm->walk_return_reason, "auto:", 5) ? "; "
								      : ", not rseq_update: ",
		       sm->walk_return_reason);
	printf("  %.0f samples/s of %.0f blocks/s; %.0f user and %.0f kernel stack walks/s",
	       sm->samples_per_s, sm->blocks_per_s, sm->user_walks_per_s, sm->kernel_walks_per_s);
	if (sm->samples_lost)
		printf("; %" PRIu64 " samples lost (their time kept)", sm->samples_lost);
	printf("\n");
	/* What task works cost here: what sampled_walk = auto weighs against
	 * rseq_update (docs/SAMPLING.md, "Deferred walks"). */
	if (sm->task_works_per_s > 0)
		printf("  %.0f BPF task works/s, %.1f us each to schedule in the switch: %.2f%% "
		       "of a CPU, not counting their self-IPIs\n",
		       sm->task_works_per_s, sm->task_work_us,
		       sm->task_works_per_s * sm->task_work_us / 1e4);
	if (sm->window_blocks)
		printf("  last window: %" PRIu64 " samples of %" PRIu64
		       " blocks; a stack holding 1%% of it is within +-%.1f%% (one standard "
		       "error); %.2f%% of its time no sample stood for ([unsampled])\n",
		       sm->window_samples, sm->window_blocks, sm->window_error_pct,
		       sm->window_unsampled_pct);
}

/* Exact kernel stacks: how many came from the verified cache, and what
 * its audits found (bpf/stack_cache.bpf.c). */
static void kstack_cache_summary(const struct proto_status *st)
{
	uint64_t hits = counter_value(st, "kstack_cache_hits");
	uint64_t audits = counter_value(st, "kstack_cache_audits");

	if (!*st->kstack_cache_reason && !st->kstack_cache)
		return; /* an older daemon */
	if (!st->kstack_cache) {
		printf("exact kernel stacks: walked at every block (%s)\n",
		       st->kstack_cache_reason);
		return;
	}
	printf("exact kernel stacks: %" PRIu64 " from the cache, %" PRIu64 " walked; %" PRIu64
	       " cache hits walked again to check: %" PRIu64 " differed\n",
	       hits - audits, counter_value(st, "kernel_stack_walks"), audits,
	       counter_value(st, "kstack_cache_mismatches"));
}

/* Blocks still open and the frames that name a wait (docs/OPEN_BLOCKS.md). */
static void open_blocks_summary(const struct proto_status *st)
{
	if (!*st->in_progress_reason && !st->in_progress && !*st->sched_frames_reason)
		return; /* an older daemon */
	if (st->in_progress)
		printf("open blocks: counted where windows and captures end (%" PRIu64
		       " parts so far)\n",
		       counter_value(st, "in_progress_parts"));
	else
		printf("open blocks: counted only when they end (%s)\n", st->in_progress_reason);
	if (st->sched_frames)
		printf("kernel stacks read off the CPU: %" PRIu64 " __sched frames put back\n",
		       counter_value(st, "kstack_sched_frames"));
	else
		printf("kernel stacks read off the CPU: without their __sched frames (%s)\n",
		       st->sched_frames_reason);
}

/* Which cgroup hierarchy names samples (docs/CGROUPS.md). */
static void cgroups_summary(const struct proto_cgroup_status *c)
{
	if (!*c->hierarchy)
		return; /* an older daemon */
	if (!strcmp(c->hierarchy, "none")) {
		printf("cgroups: none (%s)\n", c->reason);
		return;
	}
	printf("cgroups: v2 at %s%s; %" PRIu64 " known (%" PRIu64 " removed), %" PRIu64
	       " named from /proc, %" PRIu64 " walks, %" PRIu64 " not named",
	       c->mount, strcmp(c->hierarchy, "hybrid") ? "" : " (hybrid, beside v1)", c->known,
	       c->removed, c->from_proc, c->scans, c->failures);
	if (!c->events)
		printf("; new ones by /proc only: %s", c->events_reason);
	printf("\n");
}

/* "12.0 s ago (2026-11-28 10:00:00)", or for a time to come "in 4.0 s (...)". */
static void print_when(int64_t ms, int64_t now)
{
	char rel[32], abs[32];

	format_duration(ms > now ? ms - now : now - ms, rel, sizeof(rel));
	format_local(ms, abs, sizeof(abs));
	printf(ms > now ? "in %s (%s)" : "%s ago (%s)", rel, abs);
}

/* Each push target: where it sends, how far behind, what it sent and
 * refused, and its last error (daemon/push/). */
static void push_summary(const struct proto_status *st)
{
	int64_t now = now_ms();
	char lag[32];

	if (!st->push)
		return; /* an older daemon */
	if (!st->push_configured) {
		printf("push: off (no push target in offcpud.conf; see offcpud(8), Push targets)\n");
		return;
	}
	for (size_t i = 0; i < st->n_push; i++) {
		const struct proto_push_status *t = &st->push[i];

		printf("push %s: %s to %s, %s\n", t->name, t->api, t->url, t->state);
		if (t->lag_windows) {
			format_duration(t->lag_ms > INT64_MAX ? INT64_MAX : (int64_t)t->lag_ms, lag,
					sizeof(lag));
			printf("  lag: %" PRIu64 " window%s, %s behind", t->lag_windows,
			       t->lag_windows == 1 ? "" : "s", lag);
		} else {
			printf("  lag: up to date");
		}
		printf("; last success: ");
		if (t->last_success_ms)
			print_when(t->last_success_ms, now);
		else
			printf("never");
		printf("\n  windows: %" PRIu64 " sent, %" PRIu64 " set aside (refused), %" PRIu64
		       " lost (evicted unsent); since start: %" PRIu64 " retr%s, %.1f MiB sent\n",
		       t->sent, t->set_aside, t->lost, t->retries, t->retries == 1 ? "y" : "ies",
		       t->bytes_sent / 1048576.0);
		if (!strcmp(t->state, "retrying") && t->next_try_ms) {
			printf("  next try: ");
			print_when(t->next_try_ms, now);
			printf("\n");
		}
		if (t->backfill_windows)
			printf("  backfill: %" PRIu64 " window%s to send (offcpuctl push)\n",
			       t->backfill_windows, t->backfill_windows == 1 ? "" : "s");
		if (*t->last_error)
			printf("  last error: %s\n", t->last_error);
	}
}

static void pt_summary(const struct proto_pt_status *pt)
{
	if (!*pt->event)
		return;
	if (!pt->available) {
		printf("Intel PT (latency --pid): %s\n", pt->reason);
		return;
	}
	printf("Intel PT (latency --pid): %s", !strcmp(pt->event, "sideband")
						       ? "sideband only (pt_event = sideband)"
						       : "available");
	if (pt->address_ranges)
		printf(", %u address filter%s", pt->address_ranges,
		       pt->address_ranges == 1 ? "" : "s");
	if (pt->recording_pid)
		printf("; recording process %u", pt->recording_pid);
	printf("\n");
}

/* Each kind: ready, in use or unavailable, and why (daemon/profile/kind_status.c). */
static void kinds_summary(const struct proto_status *st)
{
	if (!st->n_kinds) { /* an older daemon: its I/O paths */
		printf("block I/O (--kind bio): %s\n",
		       *st->bio_tracepoints ? st->bio_tracepoints : "unavailable on this kernel");
		printf("file I/O (--kind fileio): %s\n", *st->fileio_tracepoints
								 ? st->fileio_tracepoints
								 : "unavailable on this kernel");
		return;
	}
	printf("kinds:\n");
	for (size_t i = 0; i < st->n_kinds; i++)
		if (*st->kinds[i].detail)
			printf("  %-8s %-11s %s\n", st->kinds[i].name, st->kinds[i].state,
			       st->kinds[i].detail);
		else
			printf("  %-8s %s\n", st->kinds[i].name, st->kinds[i].state);
}

int cmd_status(int argc, char **argv)
{
	const struct proto_status *st;
	struct proto_request req = { .cmd = PROTO_CMD_STATUS };
	struct proto_reply *reply;
	size_t n_loaded;
	char *raw;
	int r;

	bool verbose = argc == 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose"));

	if (argc > 1 && !verbose)
		return usage_error("status takes only --verbose, got '%s'", argv[1]);
	r = transact(&req, NULL, NULL, &reply, &raw);
	if (r != EXIT_OK)
		return r;
	if (json_output) {
		printf("%s\n", raw);
	} else {
		st = &reply->status;
		printf("offcpud %s, pid %u, up %" PRIu64 " s\n", st->version, st->pid,
		       st->uptime_s);
		kinds_summary(st);
		n_loaded = 0;
		for (size_t i = 0; i < st->n_programs; i++)
			n_loaded += st->programs[i].loaded;
		printf("programs (via %s): %zu of %zu loaded%s\n", st->tracepoint, n_loaded,
		       st->n_programs, verbose ? "" : "; --verbose lists them");
		if (verbose && !st->bpf_stats)
			printf("  (runs and run times: off; bpf_stats = true in offcpud.conf "
			       "turns them on, at two clock reads per run of any BPF program)\n");
		for (size_t i = 0; verbose && i < st->n_programs; i++) {
			const struct proto_program *p = &st->programs[i];

			printf("  %-18s %-9s %10.0f runs/s", p->name,
			       p->attached ? "attached"
			       : p->loaded ? "idle"
					   : "unloaded",
			       p->events_per_s);
			if (p->run_cnt && p->run_time_ns)
				printf(", %6.0f ns/run, %5.2f%% of a CPU",
				       (double)p->run_time_ns / p->run_cnt,
				       p->events_per_s * p->run_time_ns / p->run_cnt / 1e7);
			printf("\n");
		}
		for (size_t i = 0; i < st->n_groups; i++) {
			const struct proto_program_group *g = &st->groups[i];

			printf("%s %s", i ? ";" : "program groups:", g->name);
			if (!strcmp(g->state, "loaded"))
				printf(" loaded (%.1f s)", g->load_ms / 1e3);
			else if (!strcmp(g->state, "on_demand"))
				printf(" loads on first use");
			else
				printf(" unavailable: %s", g->reason);
		}
		if (st->n_groups)
			printf("\n");
		printf("maps (last drain):");
		for (size_t i = 0; i < st->n_maps; i++)
			printf(" %s %" PRIu64 "/%" PRIu64 " (%.0f%%)", st->maps[i].name,
			       st->maps[i].entries, st->maps[i].max_entries, st->maps[i].fill_pct);
		printf("\noffcpud: %.1f%% of a CPU, %.1f MiB resident", st->cpu_pct,
		       st->rss_bytes / 1048576.0);
		/* All 0: a daemon from before these figures. The heap alone 0:
		 * its allocator cannot say (a sanitizer's). */
		if (st->heap_in_use_bytes || st->store_cache_bytes || st->symbol_cache_bytes) {
			printf(" (");
			if (st->heap_in_use_bytes)
				printf("heap %.1f MiB in use, %.1f free; ",
				       st->heap_in_use_bytes / 1048576.0,
				       st->heap_free_bytes / 1048576.0);
			printf("caches: store %.1f, symbols %.1f, unwind tables %.1f MiB)",
			       st->store_cache_bytes / 1048576.0, st->symbol_cache_bytes / 1048576.0,
			       st->unwind.table_bytes / 1048576.0);
		}
		printf("\n");
		printf("store: %s, %.1f MiB, %" PRIu64 " windows (%" PRIu64 " written, %" PRIu64
		       " failed since start)%s%s\n",
		       st->store.path, st->store.bytes / 1048576.0, st->store.windows,
		       st->store.windows_written, st->store.windows_failed,
		       st->store.disk_full     ? "; DISK FULL: "
		       : *st->store.last_error ? "; last error: "
					       : "",
		       st->store.last_error);
		push_summary(st);
		unwind_summary(st);
		sampling_summary(&st->sampling);
		kstack_cache_summary(st);
		open_blocks_summary(st);
		cgroups_summary(&st->cgroups);
		if (!st->n_kinds || st->pt.available) /* else kinds said why not */
			pt_summary(&st->pt);
		printf("slots: %u of %u in use, %u capture%s running\n", st->slots_active,
		       st->slots_max, st->captures_running, st->captures_running == 1 ? "" : "s");
		printf("events: %.0f context switches/s, %.0f blocks recorded/s\n",
		       st->switches_per_s, st->recorded_per_s);
		printf("counters:");
		for (size_t i = 0; i < st->n_counters; i++)
			printf(" %s=%" PRIu64, st->counters[i].name, st->counters[i].value);
		printf("\n");
		requests_summary(stdout, "continuous requests: ", st->requests, st->n_requests);
	}
	proto_reply_free(reply);
	free(raw);
	return EXIT_OK;
}
