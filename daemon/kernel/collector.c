/*
 * collector: see collector.h; collector_internal.h says which of its files
 * does what. This one loads the core and the groups (their status under
 * c->lock, one load at a time under c->load_lock), and keeps the links:
 * the scheduler's, the per-CPU perf events of on-CPU sampling, the I/O
 * kinds' tracepoints.
 */
#include "collector_internal.h"
#include "unwinder.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"

_Static_assert(sizeof(((struct offcpu_bpf *)0)->progs) <=
		       COLLECTOR_MAX_PROGRAMS * sizeof(struct bpf_program *),
	       "the object has more programs than COLLECTOR_MAX_PROGRAMS");

/* The core's programs have no group: the scheduler hooks, unwind_exec. */
#define GROUP_CORE COLLECTOR_GROUP_COUNT

static const char *const group_names[COLLECTOR_GROUP_COUNT] = {
	[COLLECTOR_GROUP_ONCPU] = "oncpu",
	[COLLECTOR_GROUP_REQUESTS] = "requests",
	[COLLECTOR_GROUP_BIO] = "bio",
	[COLLECTOR_GROUP_FILEIO] = "fileio",
};

const char *collector_group_name(unsigned group)
{
	return group < COLLECTOR_GROUP_COUNT ? group_names[group] : "core";
}

/* A program's group, by its name's prefix; any other program is the core's. */
static unsigned program_group(const char *name)
{
	static const struct {
		const char *prefix;
		unsigned group;
	} prefixes[] = {
		{ "oncpu_", COLLECTOR_GROUP_ONCPU },
		{ "request_", COLLECTOR_GROUP_REQUESTS },
		{ "bio_", COLLECTOR_GROUP_BIO },
		{ "fileio_", COLLECTOR_GROUP_FILEIO },
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i].prefix, strlen(prefixes[i].prefix)))
			return prefixes[i].group;
	return GROUP_CORE;
}

struct offcpu_bpf *collector_group_skel(struct collector *c, unsigned group)
{
	struct offcpu_bpf *skel;

	pthread_mutex_lock(&c->lock);
	skel = c->groups[group].status.state == COLLECTOR_GROUP_LOADED ? c->groups[group].skel
								       : NULL;
	pthread_mutex_unlock(&c->lock);
	return skel;
}

static void group_set_unavailable(struct collector *c, unsigned group, int error, const char *fmt,
				  ...) __attribute__((format(printf, 4, 5)));

static void group_set_unavailable(struct collector *c, unsigned group, int error, const char *fmt,
				  ...)
{
	struct collector_group_status *st = &c->groups[group].status;
	va_list ap;

	pthread_mutex_lock(&c->lock);
	st->state = COLLECTOR_GROUP_UNAVAILABLE;
	st->error = error;
	va_start(ap, fmt);
	vsnprintf(st->reason, sizeof(st->reason), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&c->lock);
}

static void oncpu_detach(struct collector *c)
{
	for (int cpu = 0; c->oncpu_links && cpu < c->ncpus; cpu++)
		bpf_link__destroy(c->oncpu_links[cpu]);
	free(c->oncpu_links);
	c->oncpu_links = NULL;
}

/*
 * One CPU-clock event per CPU, sampling at freq Hz, each running prog. The
 * kernel turns a CPU-clock frequency into a fixed period in ns, which each
 * sample carries. CPUs that are offline (ENODEV) are skipped; any other
 * failure leaves no events. Returns 0 or -errno.
 */
static int oncpu_attach(struct collector *c, struct bpf_program *prog, uint32_t freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq,
	};
	int attached = 0, r = -ENODEV;

	c->oncpu_links = calloc(c->ncpus, sizeof(*c->oncpu_links));
	if (!c->oncpu_links)
		return -ENOMEM;
	for (int cpu = 0; cpu < c->ncpus; cpu++) {
		int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			r = -errno;
			if (r == -ENODEV)
				continue; /* offline */
			goto fail;
		}
		/* The link owns fd from here, and closes it. */
		c->oncpu_links[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!c->oncpu_links[cpu]) {
			r = -errno;
			close(fd);
			goto fail;
		}
		attached++;
	}
	if (attached)
		return 0;
fail:
	oncpu_detach(c);
	return r;
}

static void bio_autoload(struct offcpu_bpf *skel, const char *path)
{
	bool io_start = path && !strncmp(path, "block_io_start", 14);
	bool rq = path && !io_start;

	bpf_program__set_autoload(skel->progs.bio_io_start, io_start);
	bpf_program__set_autoload(skel->progs.bio_rq_issue, io_start);
	bpf_program__set_autoload(skel->progs.bio_rq_insert, rq);
	bpf_program__set_autoload(skel->progs.bio_rq_issue_start, rq);
	bpf_program__set_autoload(skel->progs.bio_rq_complete, !!path);
}

/* Sets which of skel's programs load: group's, and of those the ones that
 * work here (the sched hooks' flavour, the bio path). */
static void group_autoload(const struct collector *c, struct offcpu_bpf *skel, unsigned group)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, skel->obj)
	{
		bpf_program__set_autoload(prog, program_group(bpf_program__name(prog)) == group);
	}
	switch (group) {
	case GROUP_CORE:
		bpf_program__set_autoload(skel->progs.sched_switch_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.sched_switch_raw, c->raw_tp);
		bpf_program__set_autoload(skel->progs.sched_process_free_raw, c->raw_tp);
		bpf_program__set_autoload(skel->progs.sched_process_free_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.sched_process_exit_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.flush_thread_totals, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.pass_in_progress, !c->no_pass_why);
		bpf_program__set_autoload(skel->progs.snapshot_blocked, !c->no_pass_why);
		bpf_program__set_autoload(skel->progs.sched_waking_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.sched_waking_raw, c->raw_tp);
		bpf_program__set_autoload(skel->progs.unwind_exec, skel->rodata->unwind_dwarf);
		bpf_program__set_autoload(skel->progs.unwind_loader_ready, c->unwind_from_vmas);
		bpf_program__set_autoload(skel->progs.walk_at_rseq, c->rseq_loaded);
		bpf_program__set_autoload(skel->progs.cgroup_mkdir_btf,
					  !c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.cgroup_rename_btf,
					  !c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.cgroup_rmdir_btf,
					  !c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.cgroup_mkdir_raw,
					  c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.cgroup_rename_raw,
					  c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.cgroup_rmdir_raw,
					  c->raw_tp && !c->no_cgroup_events_why);
		bpf_program__set_autoload(skel->progs.follow_fork_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.follow_exit_btf, !c->raw_tp);
		bpf_program__set_autoload(skel->progs.follow_fork_raw, c->raw_tp);
		bpf_program__set_autoload(skel->progs.follow_exit_raw, c->raw_tp);
		break;
	case COLLECTOR_GROUP_BIO:
		bio_autoload(skel, c->bio_path);
		break;
	}
}

/* Puts each double buffer's two maps into its outer map (epoch & 1 picks
 * one): the linked object cannot carry them as initial values. */
static int buffers_publish(struct offcpu_bpf *skel)
{
	const struct {
		struct bpf_map *outer, *inner[2];
	} pairs[] = {
		{ skel->maps.aggs, { skel->maps.agg0, skel->maps.agg1 } },
		{ skel->maps.stacks, { skel->maps.stacks0, skel->maps.stacks1 } },
		{ skel->maps.chains, { skel->maps.chains0, skel->maps.chains1 } },
		{ skel->maps.hists, { skel->maps.hists0, skel->maps.hists1 } },
		{ skel->maps.totals, { skel->maps.totals0, skel->maps.totals1 } },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		for (uint32_t k = 0; k < 2; k++) {
			int fd = bpf_map__fd(pairs[i].inner[k]);

			if (bpf_map_update_elem(bpf_map__fd(pairs[i].outer), &k, &fd, BPF_ANY) < 0)
				return -errno;
		}
	return 0;
}

/* Opens, loads and attaches the core, which creates every map. */
static int load(struct collector *c, const struct collector_options *opts)
{
	struct collector_features f;
	uint64_t debug_state, r_state;
	struct offcpu_bpf *skel;
	int r;

	collector_features_probe(opts, c->raw_tp, &f);
	skel = offcpu_bpf__open();
	if (!skel)
		return -errno;
	skel->rodata->self_tgid = opts->trace_self ? 0 : (uint32_t)getpid();
	if (opts->oncpu_frequency)
		skel->rodata->oncpu_period_ns = 1000000000ull / opts->oncpu_frequency;
	bpf_map__set_max_entries(skel->maps.agg0, opts->agg_map_entries);
	bpf_map__set_max_entries(skel->maps.agg1, opts->agg_map_entries);
	bpf_map__set_max_entries(skel->maps.stacks0, opts->stack_map_entries);
	bpf_map__set_max_entries(skel->maps.stacks1, opts->stack_map_entries);
	bpf_map__set_autocreate(skel->maps.task_starts, !c->raw_tp);
	bpf_map__set_autocreate(skel->maps.hash_starts, c->raw_tp);
	bpf_map__set_autocreate(skel->maps.request_threads, !c->raw_tp);
	/* Tables need bpf_task_pt_regs(), which needs tp_btf's typed task. */
	skel->rodata->unwind_dwarf = opts->unwind_dwarf && !c->raw_tp;
	skel->rodata->unwind_max_depth = opts->unwind_max_depth;
	skel->rodata->python_frames = opts->python_frames && skel->rodata->unwind_dwarf;
	c->no_defer_why = f.no_defer_why;
	skel->rodata->defer_walks = !c->no_defer_why;
	c->no_rseq_why = f.no_rseq_why;
	c->rseq_loaded = f.rseq_loaded;
	c->rseq_on = f.rseq_on;
	c->runq_clock = f.runq_clock;
	c->no_pass_why = f.no_pass_why;
	/* Built in task works and the loader's uprobe only: the iterator refuses
	 * to run with irqs off, as in sched_switch. */
	c->unwind_from_vmas = f.vma_iter && skel->rodata->unwind_dwarf && !c->no_defer_why;
	if (c->unwind_from_vmas && collector_loader_symbols(&debug_state, &r_state)) {
		skel->rodata->loader_debug_state = debug_state;
		skel->rodata->loader_r_state = r_state;
	}
	skel->rodata->runq_from_sched_info = c->runq_clock;
	c->no_kstack_cache_why = f.no_kstack_cache_why;
	skel->rodata->kstack_cache_on = !c->no_kstack_cache_why;
	skel->rodata->kstack_audit_period = opts->stack_cache_audit;
	skel->rodata->kernel_text_start = f.text.start;
	c->no_sched_frames_why = f.no_sched_frames_why;
	skel->rodata->sched_frames_on = !c->no_sched_frames_why;
	skel->rodata->sched_text_start = f.text.sched_start;
	skel->rodata->sched_text_end = f.text.sched_end;
	skel->rodata->switch_to_asm = f.text.switch_to_asm;
	c->no_cgroup_events_why = f.no_cgroup_events_why;
	bpf_map__set_autocreate(skel->maps.cgroup_events, !c->no_cgroup_events_why);
	skel->rodata->thunks_start = f.text.thunks_start;
	skel->rodata->thunks_end = f.text.thunks_end;
	bpf_map__set_autocreate(skel->maps.kstack_caches, !c->raw_tp);
	skel->rodata->thread_banks = !c->raw_tp;
	bpf_map__set_max_entries(skel->maps.unwind_rows,
				 skel->rodata->unwind_dwarf ? opts->unwind_rows : 1);
	bpf_map__set_max_entries(skel->maps.unwind_procs, opts->unwind_processes);
	bpf_map__set_max_entries(skel->maps.unwind_requested, opts->unwind_processes);
	group_autoload(c, skel, GROUP_CORE);

	r = offcpu_bpf__load(skel);
	if (r == 0)
		r = buffers_publish(skel);
	if (r < 0) {
		offcpu_bpf__destroy(skel);
		return r;
	}
	c->skel = skel;
	return 0;
}

/*
 * A second instance of the object for one group: only the group's programs
 * load, and every map is the core's (bpf_map__reuse_fd: slots, masks,
 * buffers and the frozen .rodata, whose values the verifier reads from the
 * kernel's copy; a reused map is neither created nor written by libbpf).
 */
static int group_open(struct collector *c, unsigned group, struct offcpu_bpf **ret)
{
	struct offcpu_bpf *skel;
	struct bpf_map *map;
	int r;

	skel = offcpu_bpf__open();
	if (!skel)
		return -errno;
	group_autoload(c, skel, group);
	bpf_object__for_each_map(map, skel->obj)
	{
		struct bpf_map *core =
			bpf_object__find_map_by_name(c->skel->obj, bpf_map__name(map));
		int fd = core ? bpf_map__fd(core) : -1;

		if (fd < 0) {
			/* Not created for this flavour (task_starts on raw_tp). */
			bpf_map__set_autocreate(map, false);
			continue;
		}
		r = bpf_map__reuse_fd(map, fd);
		if (r < 0)
			goto fail;
	}
	r = offcpu_bpf__load(skel);
	if (r < 0)
		goto fail;
	*ret = skel;
	return 0;
fail:
	offcpu_bpf__destroy(skel);
	return r;
}

enum { IO_BIO, IO_FILEIO };

/* rseq_walks tells sched_switch whether walk_at_rseq is there to take a
 * deferred walk: set once it is attached, cleared before it goes. */
static void sched_link_set(struct collector *c, unsigned i, bool on)
{
	if (!on) {
		if (i == 2)
			c->skel->bss->rseq_walks = false;
		bpf_link__destroy(c->sched_links[i]);
		c->sched_links[i] = NULL;
	} else if (!c->sched_links[i]) {
		c->sched_links[i] = bpf_program__attach(c->sched_progs[i]);
		if (i == 2 && c->sched_links[i])
			c->skel->bss->rseq_walks = true;
	}
}

int collector_sched_links_update(struct collector *c, uint32_t used, uint32_t waker_slots)
{
	bool want[3] = { used != 0, used && (!c->runq_clock || waker_slots),
			 used && c->sched_progs[2] && c->rseq_on };

	for (unsigned i = 0; i < 3; i++) {
		sched_link_set(c, i, want[i]);
		if (want[i] && !c->sched_links[i]) {
			int r = -errno;

			/* Back as they were: those links are attached, so this
			 * only detaches. */
			collector_sched_links_update(c, c->used_mask, c->waker_slots);
			return r;
		}
	}
	return 0;
}

bool collector_walk_return_switchable(const struct collector *c)
{
	return c->sched_progs[2] != NULL;
}

int collector_walk_return_set(struct collector *c, bool rseq)
{
	if (!c->sched_progs[2])
		return -EOPNOTSUPP;
	c->rseq_on = rseq;
	sched_link_set(c, 2, rseq && c->used_mask);
	if (rseq && c->used_mask && !c->sched_links[2]) {
		int r = -errno;

		c->rseq_on = false;
		return r < 0 ? r : -EINVAL;
	}
	return 0;
}

static void links_destroy(struct bpf_link **links, size_t *n)
{
	while (*n)
		bpf_link__destroy(links[--*n]);
}

/* Attaches every loaded program of obj whose name starts with prefix, all
 * or none, into links (max of them). 0, or a negative errno (-ENOENT: none
 * loaded). */
static int links_attach(struct bpf_object *obj, const char *prefix, struct bpf_link **links,
			size_t max, size_t *n)
{
	struct bpf_program *prog;
	int r = 0;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_link *link;

		if (strncmp(bpf_program__name(prog), prefix, strlen(prefix)) ||
		    bpf_program__fd(prog) < 0)
			continue;
		if (*n == max) {
			r = -E2BIG;
			break;
		}
		link = bpf_program__attach(prog);
		if (!link) {
			r = -errno;
			break;
		}
		links[(*n)++] = link;
	}
	if (r == 0 && !*n)
		r = -ENOENT;
	if (r < 0)
		links_destroy(links, n);
	return r;
}

static void io_detach(struct collector *c, int which)
{
	links_destroy(c->io_links[which], &c->n_io_links[which]);
}

void collector_fileio_detach(struct collector *c)
{
	io_detach(c, IO_FILEIO);
}

int collector_fileio_attach(struct collector *c)
{
	return links_attach(collector_group_skel(c, COLLECTOR_GROUP_FILEIO)->obj, "fileio_",
			    c->io_links[IO_FILEIO], 16, &c->n_io_links[IO_FILEIO]);
}

/* Which of the groups' programs would load here (group_autoload() on an
 * instance that is only opened), for collector_programs(). */
static int wanted_probe(struct collector *c)
{
	struct offcpu_bpf *skel = offcpu_bpf__open();
	struct bpf_program *prog;

	if (!skel)
		return -errno;
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		size_t i = 0;

		group_autoload(c, skel, g);
		bpf_object__for_each_program(prog, skel->obj)
		{
			if (i < COLLECTOR_MAX_PROGRAMS &&
			    program_group(bpf_program__name(prog)) == g)
				c->wanted[i] = bpf_program__autoload(prog);
			i++;
		}
	}
	offcpu_bpf__destroy(skel);
	return 0;
}

/* What can be known without loading: a group that cannot work here is
 * unavailable from the start, the others load on first use. */
static int groups_probe(struct collector *c)
{
	c->bio_path = collector_bio_path_probe(c->raw_tp);
	c->fileio_path = "syscall tracepoints (fentry on vfs_* not used)";
	if (!c->oncpu_frequency)
		group_set_unavailable(c, COLLECTOR_GROUP_ONCPU, -ECANCELED,
				      "on-CPU sampling is off (oncpu_frequency = 0)");
	if (c->raw_tp) {
		group_set_unavailable(c, COLLECTOR_GROUP_REQUESTS, -EOPNOTSUPP,
				      "it needs the tp_btf tracepoint (task storage); "
				      "this daemon runs on raw_tp");
		group_set_unavailable(
			c, COLLECTOR_GROUP_BIO, -EOPNOTSUPP,
			"the block tracepoints need tp_btf; this daemon runs on raw_tp");
	} else if (!c->bio_path) {
		group_set_unavailable(c, COLLECTOR_GROUP_BIO, -ENOENT,
				      "no block tracepoints in the kernel's BTF");
	}
	return wanted_probe(c);
}

/* Attaches what a group keeps attached from its load on; fileio's is only
 * tried (and detached), to find out now whether it attaches. On failure
 * sets the group's reason. */
static int group_attach(struct collector *c, unsigned group, struct offcpu_bpf *skel)
{
	struct bpf_link *probe[16];
	size_t n_probe = 0;
	int r = 0;

	switch (group) {
	case COLLECTOR_GROUP_ONCPU:
		r = oncpu_attach(c, skel->progs.oncpu_sample, c->oncpu_frequency);
		if (r < 0)
			group_set_unavailable(
				c, group, r, "perf_event_open failed: %s%s", strerror(-r),
				r == -EACCES || r == -EPERM
					? " (see /proc/sys/kernel/perf_event_paranoid)"
					: "");
		break;
	case COLLECTOR_GROUP_BIO:
		r = links_attach(skel->obj, "bio_", c->io_links[IO_BIO], 16,
				 &c->n_io_links[IO_BIO]);
		if (r < 0)
			group_set_unavailable(c, group, r,
					      "the block tracepoints (%s) did not attach: %s",
					      c->bio_path, strerror(-r));
		break;
	case COLLECTOR_GROUP_FILEIO:
		r = links_attach(skel->obj, "fileio_", probe, 16, &n_probe);
		links_destroy(probe, &n_probe);
		if (r < 0)
			group_set_unavailable(
				c, group, r,
				"the syscall tracepoints did not attach: %s; is tracefs "
				"mounted?",
				strerror(-r));
		break;
	}
	return r;
}

int collector_group_load(struct collector *c, unsigned group, uint64_t *ret_load_ns)
{
	struct collector_group_status st;
	struct offcpu_bpf *skel = NULL;
	uint64_t start_ns;
	int r;

	if (ret_load_ns)
		*ret_load_ns = 0;
	if (group >= COLLECTOR_GROUP_COUNT)
		return -EINVAL;
	/* Loaded already: no wait behind another group's load. */
	collector_group_status(c, group, &st);
	if (st.state != COLLECTOR_GROUP_ON_DEMAND)
		return st.state == COLLECTOR_GROUP_LOADED ? 0 : st.error;
	pthread_mutex_lock(&c->load_lock);
	collector_group_status(c, group, &st);
	if (st.state != COLLECTOR_GROUP_ON_DEMAND) {
		pthread_mutex_unlock(&c->load_lock);
		return st.state == COLLECTOR_GROUP_LOADED ? 0 : st.error;
	}
	start_ns = clock_monotonic_ns();
	r = group_open(c, group, &skel);
	if (r < 0)
		group_set_unavailable(c, group, r,
				      "loading its programs failed: %s (the daemon's log has the "
				      "verifier's output)",
				      strerror(-r));
	else
		r = group_attach(c, group, skel);
	if (r < 0) {
		offcpu_bpf__destroy(skel);
	} else {
		pthread_mutex_lock(&c->lock);
		c->groups[group].skel = skel;
		c->groups[group].status.state = COLLECTOR_GROUP_LOADED;
		c->groups[group].status.load_ns = clock_monotonic_ns() - start_ns;
		if (ret_load_ns)
			*ret_load_ns = c->groups[group].status.load_ns;
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->load_lock);
	return r;
}

void collector_group_status(struct collector *c, unsigned group, struct collector_group_status *ret)
{
	pthread_mutex_lock(&c->lock);
	*ret = c->groups[group].status;
	pthread_mutex_unlock(&c->lock);
}

uint32_t collector_filter_groups(const struct collector_filter *f)
{
	uint32_t groups = 0;

	if (f->kind == OFFCPU_KIND_ONCPU || f->oncpu)
		groups |= 1u << COLLECTOR_GROUP_ONCPU;
	if (f->requests)
		groups |= 1u << COLLECTOR_GROUP_REQUESTS;
	if (f->kind == OFFCPU_KIND_BIO)
		groups |= 1u << COLLECTOR_GROUP_BIO;
	if (f->kind == OFFCPU_KIND_FILEIO)
		groups |= 1u << COLLECTOR_GROUP_FILEIO;
	return groups;
}

int collector_new(const struct collector_options *opts, struct collector **ret)
{
	struct collector *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->load_lock, NULL);
	c->oncpu_frequency = opts->oncpu_frequency;
	/* Off unless asked: while on, every BPF program on the host pays two
	 * clock reads per run, a sixth of the always-on profile's cost. */
	c->stats_fd = opts->bpf_stats ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0) {
		r = c->ncpus ? c->ncpus : -EINVAL;
		goto fail;
	}

	/* tp_btf gives typed pointers and task storage; kernels before 5.5
	 * (or without BTF) only have raw_tp. Probe by trying. */
	c->raw_tp = opts->attach == COLLECTOR_ATTACH_RAW_TP;
	r = load(c, opts);
	if (r < 0 && r != -EPERM && opts->attach == COLLECTOR_ATTACH_AUTO) {
		c->raw_tp = true;
		r = load(c, opts);
	}
	if (r < 0)
		goto fail;

	if (c->raw_tp) {
		c->sched_progs[0] = c->skel->progs.sched_switch_raw;
		c->sched_progs[1] = c->skel->progs.sched_waking_raw;
		c->links[c->n_links++] = bpf_program__attach(c->skel->progs.sched_process_free_raw);
	} else {
		c->sched_progs[0] = c->skel->progs.sched_switch_btf;
		c->sched_progs[1] = c->skel->progs.sched_waking_btf;
		if (c->rseq_loaded)
			c->sched_progs[2] = c->skel->progs.walk_at_rseq;
		c->links[c->n_links++] = bpf_program__attach(c->skel->progs.sched_process_exit_btf);
		c->links[c->n_links++] = bpf_program__attach(c->skel->progs.sched_process_free_btf);
		c->banks_link = bpf_program__attach_iter(c->skel->progs.flush_thread_totals, NULL);
		c->links[c->n_links++] = c->banks_link;
		if (!c->no_pass_why) {
			c->pass_link =
				bpf_program__attach_iter(c->skel->progs.pass_in_progress, NULL);
			c->links[c->n_links++] = c->pass_link;
			c->snapshot_link =
				bpf_program__attach_iter(c->skel->progs.snapshot_blocked, NULL);
			c->links[c->n_links++] = c->snapshot_link;
		}
	}
	if (c->skel->rodata->unwind_dwarf)
		c->links[c->n_links++] = bpf_program__attach(c->skel->progs.unwind_exec);
	if (c->unwind_from_vmas)
		c->loader_link = collector_loader_attach(c->skel->progs.unwind_loader_ready);
	for (size_t i = 0; i < c->n_links; i++) {
		if (!c->links[i]) {
			r = -errno;
			goto fail;
		}
	}
	collector_cgroup_events_attach(c); /* not needed: may fail */
	collector_follow_attach(c);	   /* the same */
	r = groups_probe(c);
	if (r < 0)
		goto fail;
	*ret = c;
	return 0;
fail:
	collector_free(c);
	return r;
}

void collector_free(struct collector *c)
{
	if (!c)
		return;
	for (unsigned slot = 0; slot < OFFCPU_MAX_SLOTS; slot++)
		collector_request_detach(c, slot);
	oncpu_detach(c);
	collector_sched_links_update(c, 0, 0);
	for (size_t i = 0; i < c->n_links; i++)
		bpf_link__destroy(c->links[i]);
	collector_cgroup_events_detach(c);
	collector_follow_detach(c);
	bpf_link__destroy(c->loader_link);
	io_detach(c, IO_BIO);
	io_detach(c, IO_FILEIO);
	/* The groups' instances first: they hold the core's maps too. */
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++)
		offcpu_bpf__destroy(c->groups[g].skel);
	offcpu_bpf__destroy(c->skel);
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->load_lock);
	free(c);
}

bool collector_unwind_maps(const struct collector *c, struct unwinder_maps *ret)
{
	if (!c->skel->rodata->unwind_dwarf)
		return false;
	*ret = (struct unwinder_maps){
		.rows_fd = bpf_map__fd(c->skel->maps.unwind_rows),
		.rows_max = bpf_map__max_entries(c->skel->maps.unwind_rows),
		.procs_fd = bpf_map__fd(c->skel->maps.unwind_procs),
		.requested_fd = bpf_map__fd(c->skel->maps.unwind_requested),
		.requests_fd = bpf_map__fd(c->skel->maps.unwind_requests),
		.files_fd = bpf_map__fd(c->skel->maps.unwind_files),
		.files_gen = &c->skel->bss->unwind_files_gen,
		.files_added = &c->skel->bss->unwind_files_added,
		.python_procs_fd = c->skel->rodata->python_frames
					   ? bpf_map__fd(c->skel->maps.python_procs)
					   : -1,
	};
	return true;
}

bool collector_python_frames(const struct collector *c)
{
	return c->skel->rodata->python_frames;
}

const char *collector_tracepoint(const struct collector *c)
{
	return c->raw_tp ? "raw_tp" : "tp_btf";
}

const char *collector_io_path(struct collector *c, unsigned kind)
{
	unsigned group = kind == OFFCPU_KIND_BIO ? COLLECTOR_GROUP_BIO : COLLECTOR_GROUP_FILEIO;
	struct collector_group_status st;

	if (kind != OFFCPU_KIND_BIO && kind != OFFCPU_KIND_FILEIO)
		return NULL;
	collector_group_status(c, group, &st);
	if (st.state == COLLECTOR_GROUP_UNAVAILABLE)
		return NULL;
	return kind == OFFCPU_KIND_BIO ? c->bio_path : c->fileio_path;
}

const char *collector_program_name(const struct collector *c)
{
	return c->raw_tp ? "sched_switch_raw" : "sched_switch_btf";
}

size_t collector_programs(struct collector *c, struct collector_program *ret, size_t max)
{
	bool requests = false;
	struct bpf_program *prog;
	size_t n = 0, i = 0;

	for (unsigned slot = 0; slot < OFFCPU_MAX_SLOTS; slot++)
		requests |= c->n_request_links[slot] > 0;
	bpf_object__for_each_program(prog, c->skel->obj)
	{
		const char *name = bpf_program__name(prog);
		unsigned group = program_group(name);
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		bool wanted = i < COLLECTOR_MAX_PROGRAMS && c->wanted[i];
		struct offcpu_bpf *skel;
		int fd = -1;

		i++;
		if (group == GROUP_CORE) {
			fd = bpf_program__fd(prog);
			wanted = fd >= 0;
		} else if (wanted && (skel = collector_group_skel(c, group))) {
			fd = bpf_program__fd(bpf_object__find_program_by_name(skel->obj, name));
		}
		if (n == max || !wanted)
			continue; /* never loaded here: the other tracepoint flavour */
		ret[n] = (struct collector_program){
			.name = name,
			.loaded = fd >= 0,
			.attached =
				fd >= 0 &&
				(group == COLLECTOR_GROUP_REQUESTS ? requests
				 : group == COLLECTOR_GROUP_FILEIO ? c->n_io_links[IO_FILEIO] > 0
				 : prog == c->sched_progs[0]	   ? c->sched_links[0] != NULL
				 : prog == c->sched_progs[1]	   ? c->sched_links[1] != NULL
				 : prog == c->sched_progs[2]	   ? c->sched_links[2] != NULL
								   : true),
		};
		ret[n].attached &= collector_cgroup_prog_attached(c, prog) &&
				   collector_follow_prog_attached(c, prog);
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			ret[n].run_cnt = info.run_cnt;
			ret[n].run_time_ns = info.run_time_ns;
		}
		n++;
	}
	return n;
}

bool collector_bpf_stats(const struct collector *c)
{
	return c->stats_fd >= 0;
}

void collector_map_sizes(const struct collector *c, struct collector_map_sizes *ret)
{
	ret->agg = bpf_map__max_entries(c->skel->maps.agg0);
	ret->stacks = bpf_map__max_entries(c->skel->maps.stacks0);
	ret->chains = bpf_map__max_entries(c->skel->maps.chains0);
	ret->hists = bpf_map__max_entries(c->skel->maps.hists0);
}
