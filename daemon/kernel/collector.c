/* collector: see collector.h. */
#include "collector.h"
#include "unwinder.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stddef.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "elf_symtab.h"
#include "offcpu.skel.h"

#define MAX_PROGRAMS 64 /* in the object */

/* The core's programs have no group: the scheduler hooks, unwind_exec. */
#define GROUP_CORE COLLECTOR_GROUP_COUNT

/* One optional group: its own instance of the object, whose maps are the
 * core instance's (see group_open()). */
struct group {
	struct offcpu_bpf *skel; /* NULL until loaded */
	struct collector_group_status status;
};

struct collector {
	struct offcpu_bpf *skel; /* the core; its maps are every group's */
	struct bpf_link *links[8];
	size_t n_links;
	/* The task iterator that moves threads' banks of exact totals into the
	 * maps at each drain (tp_btf only; see struct thread_totals). */
	struct bpf_link *banks_link;
	struct bpf_link *pass_link;	/* the in-progress pass (pass_in_progress), or NULL */
	struct bpf_link *snapshot_link; /* offcpuctl blocked's (snapshot_blocked), or NULL */
	const char *no_pass_why;	/* why it is not loaded; NULL if it is */
	/* sched_switch, sched_waking and walk_at_rseq (rseq_update) run at
	 * every context switch: attached only while a slot needs them
	 * (sched_links_update()), so an idle daemon costs the switch nothing.
	 * A record a thread kept from before counts for no later slot: its
	 * start is older than the slot's. sched_progs[2] is NULL unless
	 * deferred walks wait for rseq_update. */
	struct bpf_program *sched_progs[3];
	struct bpf_link *sched_links[3];
	/* groups[].skel and .status: written by collector_group_load() on
	 * any thread, read on the event loop's. */
	pthread_mutex_t lock;
	pthread_mutex_t load_lock; /* one group load at a time */
	struct group groups[COLLECTOR_GROUP_COUNT];
	uint32_t oncpu_frequency;
	/* The I/O kinds' links (see links_attach()): bio's for good, fileio's
	 * only while a fileio slot is in use, since any syscall tracepoint
	 * slows every syscall of every process down. */
	struct bpf_link *io_links[2][16];
	size_t n_io_links[2];
	const char *bio_path, *fileio_path;
	uint32_t fileio_slots; /* slots of kind FILEIO handed out */
	uint32_t waker_slots;  /* of kinds WAKEUP, OFFWAKE and CHAIN */
	bool runq_clock;       /* the programs read run-queue waits at switch-in */
	bool unwind_from_vmas; /* new processes' mappings built from their VMAs */
	struct bpf_link *loader_link; /* unwind_loader_ready on ld.so, or NULL */
	bool raw_tp;
	uint32_t used_mask; /* slots handed out, as seen by this thread */
	int ncpus;
	struct bpf_link *request_links[OFFCPU_MAX_SLOTS][COLLECTOR_MAX_REQUEST_PROBES];
	size_t n_request_links[OFFCPU_MAX_SLOTS];
	int stats_fd; /* keeps the kernel's BPF run-time stats on; -1: off or refused */
	struct bpf_link **oncpu_links; /* one per CPU that has an event; NULL entries: none */
	const char *no_defer_why;      /* why sampled walks are not deferred; NULL if they are */
	bool rseq_loaded;	       /* walk_at_rseq (rseq_update) is loaded: sched_progs[2] */
	bool rseq_on;		       /* deferred walks wait for it while a slot is in use */
	const char *no_rseq_why;       /* why it is not loaded, where it was asked for; else NULL */
	const char *no_kstack_cache_why; /* why exact kernel walks are not cached; NULL: they are */
	const char *no_sched_frames_why; /* why off-CPU walks lack __sched frames; NULL: not */
	bool wanted[MAX_PROGRAMS]; /* by index in the object: a group's program that loads here */
};

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

/* group's instance if it is loaded, else NULL. */
static struct offcpu_bpf *group_skel(struct collector *c, unsigned group)
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

/* The block tracepoints the bio programs use: block_io_start/done (6.5+),
 * else block_rq_insert/issue/complete; none without BTF (tp_btf only). A
 * tracepoint tp_btf can attach to has a btf_trace_<name> typedef. */
static const char *bio_path_probe(bool raw_tp)
{
	static const char *const names[] = { "btf_trace_block_io_start", "btf_trace_block_rq_issue",
					     "btf_trace_block_rq_complete" };
	const char *path = NULL;
	bool has[3];
	struct btf *btf;

	if (raw_tp)
		return NULL;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return NULL;
	for (int i = 0; i < 3; i++)
		has[i] = btf__find_by_name_kind(btf, names[i], BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	if (has[0] && has[2])
		path = "block_io_start/block_rq_issue/block_rq_complete";
	else if (has[1] && has[2])
		path = "block_rq_insert/block_rq_issue/block_rq_complete";
	return path;
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
		break;
	case COLLECTOR_GROUP_BIO:
		bio_autoload(skel, c->bio_path);
		break;
	}
}

bool collector_kstack_cache(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_kstack_cache_why ? c->no_kstack_cache_why : "";
	return !c->no_kstack_cache_why;
}

const char *collector_walk_mode(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_defer_why ? c->no_defer_why : "";
	return c->no_defer_why ? "switch-out" : "deferred";
}

bool collector_sched_frames(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_sched_frames_why ? c->no_sched_frames_why : "";
	return !c->no_sched_frames_why;
}

bool collector_in_progress(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_pass_why ? c->no_pass_why : "";
	return !c->no_pass_why;
}

const char *collector_walk_return(const struct collector *c, const char **ret_why)
{
	*ret_why = c->no_rseq_why ? c->no_rseq_why : "";
	return c->no_defer_why ? "" : c->rseq_on ? "rseq_update" : "task work";
}

/* What the loader asks of the running kernel's BTF, parsed once. */
struct kernel_features {
	bool task_work;	  /* the BPF task work kfunc deferred walks need */
	bool rseq_update; /* the rseq_update tracepoint and task_struct.rseq (walk_at_rseq) */
	bool runq_clock;  /* sched_info.last_queued and a task's run queue (queued_at()) */
	bool vma_iter;	  /* the VMA iterator kfuncs (6.7) unwind_proc_from_vmas() needs */
	bool rdonly_cast; /* bpf_rdonly_cast() (6.2): loads from the kernel stack */
	bool copy_from_user_task; /* the helper (5.18) the in-progress pass reads stacks with */
};

static bool btf_has_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (unsigned i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), member))
			return true;
	return false;
}

static struct kernel_features kernel_features(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	struct kernel_features f = { 0 };

	if (!vmlinux)
		return f;
	f.task_work = btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
					     BTF_KIND_FUNC) > 0;
	f.vma_iter = btf__find_by_name_kind(vmlinux, "bpf_iter_task_vma_new", BTF_KIND_FUNC) > 0;
	f.rseq_update =
		btf__find_by_name_kind(vmlinux, "btf_trace_rseq_update", BTF_KIND_TYPEDEF) > 0 &&
		btf_has_member(vmlinux, "task_struct", "rseq");
	f.rdonly_cast = btf__find_by_name_kind(vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	f.copy_from_user_task =
		btf__find_by_name_kind(vmlinux, "bpf_copy_from_user_task", BTF_KIND_FUNC) > 0;
	f.runq_clock = btf_has_member(vmlinux, "task_struct", "sched_info") &&
		       btf_has_member(vmlinux, "sched_info", "last_queued") &&
		       btf_has_member(vmlinux, "sched_entity", "cfs_rq") &&
		       btf_has_member(vmlinux, "cfs_rq", "rq") && btf_has_member(vmlinux, "rq", "clock");
	btf__free(vmlinux);
	return f;
}

/* Why sampled slots cannot defer their user walks here; NULL if they can. */
static const char *no_defer_reason(const struct collector_options *opts, bool raw_tp,
				   const struct kernel_features *kernel)
{
	if (!opts->defer_walks)
		return "sampled_walk = switch-out";
	if (raw_tp)
		return "the raw_tp fallback has no task storage";
	if (!kernel->task_work)
		return "the kernel has no BPF task work (bpf_task_work_schedule_resume_impl, 6.18)";
	return NULL;
}

/* Why the in-progress pass cannot run here; NULL if it can. */
static const char *no_pass_reason(bool raw_tp, const struct kernel_features *kernel)
{
	if (raw_tp)
		return "the raw_tp fallback has no task storage";
	if (!kernel->copy_from_user_task)
		return "the kernel has no bpf_copy_from_user_task() (5.18)";
	return NULL;
}

/* Why deferred walks cannot wait for rseq_update here, as asked; NULL if
 * they can. */
static const char *no_rseq_reason(const char *no_defer_why, const struct kernel_features *kernel)
{
	if (no_defer_why)
		return "walks are not deferred";
	if (!kernel->rseq_update)
		return "the kernel has no rseq_update tracepoint (CONFIG_RSEQ)";
	return NULL;
}

/* What the BPF side needs of /proc/kallsyms: all 0 where it is not there or
 * hidden (kptr_restrict shows zeros to the unprivileged). */
struct kernel_text {
	uint64_t start;			   /* _stext */
	uint64_t sched_start, sched_end;   /* the __sched section */
	uint64_t switch_to_asm;		   /* __switch_to_asm (x86-64) */
	uint64_t thunks_start, thunks_end; /* the retpoline thunks (x86-64), if any */
};

static struct kernel_text kernel_text_read(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	struct kernel_text t = { 0 };
	unsigned long long addr;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || strchr(line, '['))
			continue;
		if (!strncmp(name, "__x86_indirect_", 15) && strstr(name, "thunk")) {
			if (!t.thunks_start || addr < t.thunks_start)
				t.thunks_start = addr;
			if (addr + 64 > t.thunks_end) /* a thunk is at most 64 bytes */
				t.thunks_end = addr + 64;
		}
		if (!strcmp(name, "_stext"))
			t.start = addr;
		else if (!strcmp(name, "__sched_text_start"))
			t.sched_start = addr;
		else if (!strcmp(name, "__sched_text_end"))
			t.sched_end = addr;
		else if (!strcmp(name, "__switch_to_asm"))
			t.switch_to_asm = addr;
	}
	if (f)
		fclose(f);
	return t;
}

/* Why the __sched frames of kernel stacks walked off-CPU are not put back
 * here; NULL if they are. */
static const char *no_sched_frames_reason(bool raw_tp, const struct kernel_features *kernel,
					  const struct kernel_text *text)
{
#if !defined(__x86_64__)
	return "only on x86-64";
#endif
	if (raw_tp)
		return "the raw_tp fallback reads no kernel stack words";
	if (!kernel->rdonly_cast)
		return "the kernel has no bpf_rdonly_cast (6.2)";
	if (text->sched_end <= text->sched_start)
		return "/proc/kallsyms does not show the __sched section";
	return NULL;
}

/* Why exact kernel stack walks are not cached here; NULL if they are. */
static const char *no_kstack_cache_reason(const struct collector_options *opts, bool raw_tp,
					  const struct kernel_features *kernel, uint64_t text)
{
	if (!opts->stack_cache)
		return "stack_cache = off";
	if (raw_tp)
		return "the raw_tp fallback has no task storage";
	if (!kernel->rdonly_cast)
		return "the kernel has no bpf_rdonly_cast (6.2)";
	if (!text)
		return "/proc/kallsyms does not show _stext";
	return NULL;
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

/* The dynamic loader this daemon runs under (its PT_INTERP), which is the
 * system's: the one dynamically linked programs here start in. */
static bool loader_path(char *buf, size_t size)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	bool found = false;
	size_t n;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	for (size_t i = 0; elf && !elf_getphdrnum(elf, &n) && i < n && !found; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP && ph.p_filesz < size &&
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz) {
			buf[ph.p_filesz] = '\0';
			found = buf[0] == '/';
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

struct loader_symbols {
	uint64_t debug_state, r_debug;
};

static int loader_symbol(void *arg, const GElf_Sym *sym, const char *name)
{
	struct loader_symbols *l = arg;

	if (!strcmp(name, "_dl_debug_state"))
		l->debug_state = sym->st_value;
	else if (!strcmp(name, "_r_debug"))
		l->r_debug = sym->st_value;
	return l->debug_state && l->r_debug;
}

/* The ELF addresses of _dl_debug_state and _r_debug.r_state in the
 * system's loader, for the hook to tell the call that says the loader has
 * mapped the libraries (unwind_loader_ready()); false if they cannot be
 * read (the hook then builds a list at every call). */
static bool loader_symbols(uint64_t *debug_state, uint64_t *r_state)
{
	struct loader_symbols l = { 0 };
	char path[4096];
	Elf_Scn *scn = NULL;
	struct stat st;
	Elf *elf = NULL;
	int fd = -1;

	if (!loader_path(path, sizeof(path)) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)))
		goto out;
	while ((scn = elf_nextscn(elf, scn)) && !(l.debug_state && l.r_debug)) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			elf_symtab_defined(elf, scn, (uint64_t)st.st_size, loader_symbol, &l);
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	*debug_state = l.debug_state;
	*r_state = l.r_debug ? l.r_debug + offsetof(struct r_debug, r_state) : 0;
	return l.debug_state && l.r_debug;
}

/* prog on the loader's _dl_debug_state(), in every process; NULL (the
 * hook is an extra: a process's first walk still builds its list) if the
 * loader has no such symbol or the kernel refuses. */
static struct bpf_link *loader_attach(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "_dl_debug_state");
	char path[4096];

	if (!loader_path(path, sizeof(path)))
		return NULL;
	return bpf_program__attach_uprobe_opts(prog, -1, path, 0, &opts);
}

/* Opens, loads and attaches the core, which creates every map. */
static int load(struct collector *c, const struct collector_options *opts)
{
	struct kernel_features kernel = kernel_features();
	uint64_t debug_state, r_state;
	struct kernel_text text = kernel_text_read();
	struct offcpu_bpf *skel;
	int r;

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
	c->no_defer_why = no_defer_reason(opts, c->raw_tp, &kernel);
	skel->rodata->defer_walks = !c->no_defer_why;
	c->no_rseq_why = opts->walk_return != COLLECTOR_RETURN_TASK_WORK
				 ? no_rseq_reason(c->no_defer_why, &kernel)
				 : NULL;
	c->rseq_loaded = opts->walk_return != COLLECTOR_RETURN_TASK_WORK && !c->no_rseq_why;
	c->rseq_on = c->rseq_loaded && opts->walk_return == COLLECTOR_RETURN_RSEQ;
	c->runq_clock = kernel.runq_clock && !c->raw_tp;
	c->no_pass_why = no_pass_reason(c->raw_tp, &kernel);
	/* Built in task works and the loader's uprobe only: the iterator refuses
	 * to run with irqs off, as in sched_switch. */
	c->unwind_from_vmas = kernel.vma_iter && skel->rodata->unwind_dwarf && !c->no_defer_why;
	if (c->unwind_from_vmas && loader_symbols(&debug_state, &r_state)) {
		skel->rodata->loader_debug_state = debug_state;
		skel->rodata->loader_r_state = r_state;
	}
	skel->rodata->runq_from_sched_info = c->runq_clock;
	c->no_kstack_cache_why = no_kstack_cache_reason(opts, c->raw_tp, &kernel, text.start);
	skel->rodata->kstack_cache_on = !c->no_kstack_cache_why;
	skel->rodata->kstack_audit_period = opts->stack_cache_audit;
	skel->rodata->kernel_text_start = text.start;
	c->no_sched_frames_why = no_sched_frames_reason(c->raw_tp, &kernel, &text);
	skel->rodata->sched_frames_on = !c->no_sched_frames_why;
	skel->rodata->sched_text_start = text.sched_start;
	skel->rodata->sched_text_end = text.sched_end;
	skel->rodata->switch_to_asm = text.switch_to_asm;
	skel->rodata->thunks_start = text.thunks_start;
	skel->rodata->thunks_end = text.thunks_end;
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

/*
 * Attaches the scheduler's programs that slots used and waker_slots need,
 * and detaches the rest: sched_switch while any slot is in use,
 * sched_waking while a slot splits blocks at their wakeup and the kernel
 * cannot tell when a task was queued (queued_at()), or a waker kind's slot
 * is in use.
 */
static int sched_links_update(struct collector *c, uint32_t used, uint32_t waker_slots)
{
	bool want[3] = { used != 0, used && (!c->runq_clock || waker_slots),
			 used && c->sched_progs[2] && c->rseq_on };

	for (unsigned i = 0; i < 3; i++) {
		sched_link_set(c, i, want[i]);
		if (want[i] && !c->sched_links[i]) {
			int r = -errno;

			/* Back as they were: those links are attached, so this
			 * only detaches. */
			sched_links_update(c, c->used_mask, c->waker_slots);
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

/* Attaches the loaded fileio programs (their group is loaded). */
static int fileio_attach(struct collector *c)
{
	return links_attach(group_skel(c, COLLECTOR_GROUP_FILEIO)->obj, "fileio_",
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
			if (i < MAX_PROGRAMS && program_group(bpf_program__name(prog)) == g)
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
	c->bio_path = bio_path_probe(c->raw_tp);
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
		c->loader_link = loader_attach(c->skel->progs.unwind_loader_ready);
	for (size_t i = 0; i < c->n_links; i++) {
		if (!c->links[i]) {
			r = -errno;
			goto fail;
		}
	}
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
	sched_links_update(c, 0, 0);
	for (size_t i = 0; i < c->n_links; i++)
		bpf_link__destroy(c->links[i]);
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
	};
	return true;
}

const char *collector_tracepoint(const struct collector *c)
{
	return c->raw_tp ? "raw_tp" : "tp_btf";
}

const char *collector_runq_clock(const struct collector *c)
{
	return c->runq_clock ? "sched_info" : "sched_waking";
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

/* Adds or removes slot's bit in the id -> slot mask filter map. */
static int filter_ids_update(int map_fd, const uint32_t *ids, size_t n, unsigned slot, bool add)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t mask = 0;

		bpf_map_lookup_elem(map_fd, &ids[i], &mask);
		if (add)
			mask |= 1u << slot;
		else
			mask &= ~(1u << slot);
		if (mask) {
			if (bpf_map_update_elem(map_fd, &ids[i], &mask, BPF_ANY) < 0)
				return -errno;
		} else {
			bpf_map_delete_elem(map_fd, &ids[i]);
		}
	}
	return 0;
}

/* Removes slot from every id in a filter map (ids are not kept here). */
static void filter_ids_clear(int map_fd, unsigned slot)
{
	uint32_t key, next, mask;
	bool first = true;

	while (bpf_map_get_next_key(map_fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(map_fd, &key, &mask) < 0 || !(mask & (1u << slot)))
			continue;
		mask &= ~(1u << slot);
		if (mask)
			bpf_map_update_elem(map_fd, &key, &mask, BPF_ANY);
		else
			bpf_map_delete_elem(map_fd, &key); /* iteration restarts safely */
	}
}

static void mask_set(uint32_t *mask, uint32_t bit, bool on)
{
	if (on)
		__atomic_fetch_or(mask, bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(mask, ~bit, __ATOMIC_SEQ_CST);
}

int collector_slot_add(struct collector *c, const struct collector_filter *f, unsigned *ret_slot)
{
	int tgid_fd = bpf_map__fd(c->skel->maps.filter_tgids);
	int tid_fd = bpf_map__fd(c->skel->maps.filter_tids);
	struct offcpu_bpf__bss *bss;
	uint32_t bit, groups;
	unsigned slot;
	bool waker;
	int r;

	for (slot = 0; slot < OFFCPU_MAX_SLOTS; slot++)
		if (!(c->used_mask & (1u << slot)))
			break;
	if (slot == OFFCPU_MAX_SLOTS)
		return -EBUSY;
	groups = collector_filter_groups(f);
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++)
		if ((groups & (1u << g)) && collector_group_load(c, g, NULL) < 0)
			return -EOPNOTSUPP;
	bit = 1u << slot;
	waker = f->kind == OFFCPU_KIND_WAKEUP || f->kind == OFFCPU_KIND_OFFWAKE ||
		f->kind == OFFCPU_KIND_CHAIN;
	r = sched_links_update(c, c->used_mask | bit, c->waker_slots | (waker ? bit : 0));
	if (r < 0)
		return r;
	if (f->kind == OFFCPU_KIND_FILEIO && !c->fileio_slots) {
		r = fileio_attach(c);
		if (r < 0) {
			sched_links_update(c, c->used_mask, c->waker_slots);
			return r;
		}
	}

	r = filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, true);
	if (r == 0)
		r = filter_ids_update(tid_fd, f->tids, f->n_tids, slot, true);
	if (r < 0) {
		filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, false);
		filter_ids_update(tid_fd, f->tids, f->n_tids, slot, false);
		if (!c->fileio_slots)
			io_detach(c, IO_FILEIO);
		sched_links_update(c, c->used_mask, c->waker_slots);
		return r == -E2BIG ? -ENOSPC : r;
	}

	bss = c->skel->bss;
	bss->slots[slot].start_ns = clock_monotonic_ns();
	bss->slots[slot].min_block_ns = f->min_block_ns;
	bss->slots[slot].max_block_ns = f->max_block_ns;
	/* An ONCPU slot takes no blocks: no state lets sched_switch match it. */
	for (unsigned st = 0; st < OFFCPU_STATE_COUNT; st++)
		mask_set(&bss->state_slots[st], bit,
			 f->kind != OFFCPU_KIND_ONCPU && (f->state_mask & (1u << st)));
	mask_set(&bss->tgid_filter_slots, bit, f->n_tgids > 0);
	mask_set(&bss->tid_filter_slots, bit, f->n_tids > 0);
	mask_set(&bss->user_stack_slots, bit, f->user_stacks);
	mask_set(&bss->kernel_stack_slots, bit, f->kernel_stacks);
	bss->slots[slot].kind = f->kind;
	bss->slots[slot].chain_depth = f->chain_depth ? f->chain_depth : 1;
	bss->slots[slot].sample_period_ns = f->sample_period_ns;
	mask_set(&bss->sampled_slots, bit, f->sample_period_ns > 0);
	for (unsigned k = 0; k < OFFCPU_KIND_COUNT; k++)
		mask_set(&bss->kind_slots[k], bit, f->kind == k);
	mask_set(&bss->split_runq_slots, bit, f->split_runq);
	mask_set(&bss->oncpu_slots, bit, f->kind == OFFCPU_KIND_ONCPU || f->oncpu);
	mask_set(&bss->hist_slots, bit, f->hist);
	mask_set(&bss->request_slots, bit, f->requests);
	mask_set(&bss->filename_slots, bit, f->filename);
	if (f->kind == OFFCPU_KIND_FILEIO)
		c->fileio_slots |= bit;
	if (waker)
		c->waker_slots |= bit;
	/* Publish: the slot must be complete before a program sees its bit. */
	__atomic_fetch_or(&bss->active_mask, bit, __ATOMIC_SEQ_CST);
	c->used_mask |= 1u << slot;
	*ret_slot = slot;
	return 0;
}

uint64_t collector_slot_activate(struct collector *c, unsigned slot)
{
	uint64_t now = clock_monotonic_ns();

	if (slot >= OFFCPU_MAX_SLOTS)
		return now;
	/* Blocks and requests that began earlier are not the slot's (and a
	 * thread's request state from before is stale, see requests.bpf.h). */
	c->skel->bss->slots[slot].start_ns = now;
	__atomic_fetch_or(&c->skel->bss->active_mask, 1u << slot, __ATOMIC_SEQ_CST);
	return now;
}

void collector_slot_deactivate(struct collector *c, unsigned slot)
{
	if (slot < OFFCPU_MAX_SLOTS)
		__atomic_fetch_and(&c->skel->bss->active_mask, ~(1u << slot), __ATOMIC_SEQ_CST);
}

static int request_probe(struct collector *c, unsigned slot, struct bpf_program *prog, bool ret,
			 uint64_t cookie, int pid, const char *path, uint64_t offset)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = ret);
	struct bpf_link *link;

	if (c->n_request_links[slot] >= COLLECTOR_MAX_REQUEST_PROBES)
		return -E2BIG;
	link = bpf_program__attach_uprobe_opts(prog, pid > 0 ? pid : -1, path, offset, &opts);
	if (!link)
		return -errno;
	c->request_links[slot][c->n_request_links[slot]++] = link;
	return 0;
}

int collector_request_attach(struct collector *c, unsigned slot, unsigned request, int pid,
			     const char *path, uint64_t offset)
{
	uint64_t cookie = (uint64_t)slot * OFFCPU_MAX_REQUESTS + request;
	struct offcpu_bpf *skel;
	int r;

	if (c->raw_tp)
		return -EOPNOTSUPP;
	if (slot >= OFFCPU_MAX_SLOTS || request >= OFFCPU_MAX_REQUESTS)
		return -EINVAL;
	r = collector_group_load(c, COLLECTOR_GROUP_REQUESTS, NULL);
	if (r < 0)
		return r;
	skel = group_skel(c, COLLECTOR_GROUP_REQUESTS);
	r = request_probe(c, slot, skel->progs.request_exit, true, cookie, pid, path, offset);
	if (r == 0)
		r = request_probe(c, slot, skel->progs.request_enter, false, cookie, pid, path,
				  offset);
	return r;
}

/* Visits slot's rows of the request latency map; deletes them if asked. */
static void request_rows(struct collector *c, unsigned slot, bool delete,
			 struct collector_request_stats *stats)
{
	int fd = bpf_map__fd(c->skel->maps.request_stats);
	struct offcpu_request_key key, next;
	struct offcpu_request_value v;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (key.slot != slot)
			continue;
		if (stats && key.request < OFFCPU_MAX_REQUESTS && key.measure < 2 &&
		    key.bucket < OFFCPU_HIST_BUCKETS && bpf_map_lookup_elem(fd, &key, &v) == 0) {
			stats[key.request].count[key.measure][key.bucket] += v.count;
			stats[key.request].sum_ns[key.measure][key.bucket] += v.sum_ns;
		} else if (stats && key.request < OFFCPU_MAX_REQUESTS &&
			   key.measure == OFFCPU_REQUEST_CALLS &&
			   bpf_map_lookup_elem(fd, &key, &v) == 0) {
			stats[key.request].calls += v.count;
		}
		if (delete)
			bpf_map_delete_elem(fd, &key); /* iteration restarts safely */
	}
}

int collector_request_stats(struct collector *c, unsigned slot,
			    struct collector_request_stats ret[OFFCPU_MAX_REQUESTS])
{
	if (slot >= OFFCPU_MAX_SLOTS)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret) * OFFCPU_MAX_REQUESTS);
	request_rows(c, slot, false, ret);
	return 0;
}

void collector_request_detach(struct collector *c, unsigned slot)
{
	if (slot >= OFFCPU_MAX_SLOTS)
		return;
	for (size_t i = 0; i < c->n_request_links[slot]; i++)
		bpf_link__destroy(c->request_links[slot][i]);
	c->n_request_links[slot] = 0;
}

void collector_slot_release(struct collector *c, unsigned slot)
{
	if (slot >= OFFCPU_MAX_SLOTS || !(c->used_mask & (1u << slot)))
		return;
	collector_slot_deactivate(c, slot);
	collector_request_detach(c, slot);
	request_rows(c, slot, true, NULL);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tgids), slot);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tids), slot);
	c->used_mask &= ~(1u << slot);
	if (c->fileio_slots & (1u << slot)) {
		c->fileio_slots &= ~(1u << slot);
		if (!c->fileio_slots)
			io_detach(c, IO_FILEIO);
	}
	c->waker_slots &= ~(1u << slot);
	sched_links_update(c, c->used_mask, c->waker_slots);
}

unsigned collector_slots_active(const struct collector *c)
{
	return __builtin_popcount(c->used_mask);
}

/*
 * Waits until every BPF program run that began before the call has ended:
 * they run inside RCU read-side sections, and MEMBARRIER_CMD_GLOBAL is
 * synchronize_rcu(). Where membarrier is refused (nohz_full), a sleep far
 * longer than one program run stands in.
 */
static void wait_for_programs(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) < 0)
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
}

/* Empties a hash map into a growing array of key/value records. */
static int drain_map(int fd, size_t key_size, size_t value_size, void **items, size_t *n)
{
	size_t cap = 0, chunk = 256;
	char *keys = NULL, *values = NULL, *out = NULL;
	uint32_t in_batch = 0, out_batch = 0;
	bool first = true;
	int r = 0;

	*items = NULL;
	*n = 0;
	for (;;) {
		__u32 count = chunk;
		char *k = realloc(keys, chunk * key_size), *v;

		if (!k) {
			r = -ENOMEM;
			break;
		}
		keys = k;
		v = realloc(values, chunk * value_size);
		if (!v) {
			r = -ENOMEM;
			break;
		}
		values = v;
		r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in_batch, &out_batch, keys,
						    values, &count, NULL);
		if (r < 0 && errno == ENOSPC && count == 0) {
			chunk *= 2; /* one bucket holds more than chunk entries */
			continue;
		}
		if (r < 0 && errno != ENOENT) {
			r = -errno;
			break;
		}
		if (*n + count > cap) {
			size_t new_cap = (*n + count) * 2;
			char *o = realloc(out, new_cap * (key_size + value_size));

			if (!o) {
				r = -ENOMEM;
				break;
			}
			out = o;
			cap = new_cap;
		}
		for (__u32 i = 0; i < count; i++) {
			char *rec = out + (*n + i) * (key_size + value_size);

			memcpy(rec, keys + i * key_size, key_size);
			memcpy(rec + key_size, values + i * value_size, value_size);
		}
		*n += count;
		if (r < 0) { /* ENOENT: that was the last batch */
			r = 0;
			break;
		}
		in_batch = out_batch;
		first = false;
	}
	free(keys);
	free(values);
	*items = out;
	return r;
}

void collector_counters(struct collector *c, uint64_t out[OFFCPU_CNT_MAX])
{
	int fd = bpf_map__fd(c->skel->maps.counters);
	uint64_t per_cpu[c->ncpus];

	for (uint32_t i = 0; i < OFFCPU_CNT_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, per_cpu) < 0)
			continue;
		for (int cpu = 0; cpu < c->ncpus; cpu++)
			out[i] += per_cpu[cpu];
	}
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
		bool wanted = i < MAX_PROGRAMS && c->wanted[i];
		struct offcpu_bpf *skel;
		int fd = -1;

		i++;
		if (group == GROUP_CORE) {
			fd = bpf_program__fd(prog);
			wanted = fd >= 0;
		} else if (wanted && (skel = group_skel(c, group))) {
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
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			ret[n].run_cnt = info.run_cnt;
			ret[n].run_time_ns = info.run_time_ns;
		}
		n++;
	}
	return n;
}

bool collector_unwind_from_vmas(const struct collector *c)
{
	return c->unwind_from_vmas;
}

bool collector_unwind_loader_hook(const struct collector *c)
{
	return c->loader_link != NULL;
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

int collector_waker_stack(struct collector *c, uint64_t hash, struct offcpu_stack *ret)
{
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.waker_stacks), &hash, ret) < 0)
		return -ENOENT;
	return 0;
}

int collector_file_name(struct collector *c, uint64_t hash, struct offcpu_file_name *ret)
{
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.file_names), &hash, ret) < 0)
		return -ENOENT;
	ret->name[sizeof(ret->name) - 1] = '\0';
	return 0;
}

_Static_assert(offsetof(struct collector_hist, count) == sizeof(struct offcpu_hist_key) &&
		       offsetof(struct collector_total, total) == sizeof(struct offcpu_key),
	       "drain_percpu_map's records: the value right after the key");

/*
 * Empties a per-CPU map into records of record_size bytes: the key, then at
 * key_size the value (value_size per CPU) summed over the CPUs by add().
 */
static int drain_percpu_map(struct collector *c, int fd, size_t key_size, size_t value_size,
			    size_t record_size, void (*add)(void *sum, const void *cpu),
			    void **ret, size_t *ret_n)
{
	size_t stride = key_size + value_size * c->ncpus, n = 0;
	char *items, *out;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = drain_map(fd, key_size, value_size * c->ncpus, (void **)&items, &n);
	if (r < 0 || !n) {
		free(items);
		return r;
	}
	out = calloc(n, record_size);
	if (!out) {
		free(items);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *item = items + i * stride;
		char *rec = out + i * record_size;

		memcpy(rec, item, key_size);
		for (int k = 0; k < c->ncpus; k++)
			add(rec + key_size, item + key_size + k * value_size);
	}
	free(items);
	*ret = out;
	*ret_n = n;
	return 0;
}

static void total_sum(void *sum, const void *cpu)
{
	struct offcpu_total *t = sum;
	const struct offcpu_total *v = cpu;

	t->sum_ns += v->sum_ns;
	t->count += v->count;
	t->short_ns += v->short_ns;
	t->samples += v->samples;
	if (!t->comm[0] && v->comm[0])
		memcpy(t->comm, v->comm, sizeof(t->comm));
}

static void count_sum(void *sum, const void *cpu)
{
	*(uint64_t *)sum += *(const uint64_t *)cpu;
}

/* Runs a task iterator that prints nothing to its end (reading runs it). */
static int iter_run(struct bpf_link *link)
{
	char buf[64];
	ssize_t n;
	int fd;

	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

/*
 * Moves every thread's bank of the buffer being drained into its totals and
 * hists maps: one pass of the flush_thread_totals task iterator.
 */
static int banks_flush(struct collector *c)
{
	return c->banks_link ? iter_run(c->banks_link) : 0;
}

int collector_blocked(struct collector *c, uint32_t tgid, uint64_t min_ns,
		      struct offcpu_blocked **ret, size_t *ret_n, uint64_t *ret_now_ns)
{
	const size_t max = COLLECTOR_BLOCKED_MAX * sizeof(struct offcpu_blocked);
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;
	int fd, r = 0;

	*ret = NULL;
	*ret_n = 0;
	*ret_now_ns = clock_monotonic_ns(); /* bpf_ktime_get_ns()'s clock */
	if (!c->snapshot_link)
		return -EOPNOTSUPP;
	c->skel->bss->snapshot_now_ns = *ret_now_ns;
	c->skel->bss->snapshot_min_ns = min_ns;
	c->skel->bss->snapshot_tgid = tgid;
	fd = bpf_iter_create(bpf_link__fd(c->snapshot_link));
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len > max) {
			r = -E2BIG;
			break;
		}
		if (cap - len < 64 * 1024) {
			size_t grown_cap = cap ? 2 * cap : 256 * 1024;
			char *grown = realloc(buf, grown_cap);

			if (!grown) {
				r = -ENOMEM;
				break;
			}
			buf = grown;
			cap = grown_cap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : 0;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = (struct offcpu_blocked *)buf;
	*ret_n = len / sizeof(struct offcpu_blocked);
	return 0;
}

void collector_progress_slots_set(struct collector *c, uint32_t slots)
{
	__atomic_store_n(&c->skel->bss->progress_slots, slots, __ATOMIC_SEQ_CST);
}

int collector_pass_in_progress(struct collector *c, bool progress, uint32_t final_slots,
			       uint64_t *ret_now_ns)
{
	int r = 0;

	*ret_now_ns = clock_monotonic_ns(); /* bpf_ktime_get_ns()'s clock */
	if (!c->pass_link || (!progress && !final_slots))
		return 0;
	c->skel->bss->pass_now_ns = *ret_now_ns;
	c->skel->bss->pass_progress = progress;
	c->skel->bss->pass_final_slots = final_slots;
	r = iter_run(c->pass_link);
	c->skel->bss->pass_final_slots = 0;
	return r;
}

int collector_drain(struct collector *c, struct collector_batch *ret)
{
	uint32_t old;
	struct bpf_map *agg, *stk, *chn, *hst, *tot;
	void *rows = NULL, *stacks = NULL, *chains = NULL;
	int r;

	memset(ret, 0, sizeof(*ret));
	/* A slot removed before this drain must not write to the new buffer. */
	wait_for_programs();
	old = __atomic_fetch_add(&c->skel->bss->epoch, 1, __ATOMIC_SEQ_CST) & 1;
	wait_for_programs();
	/* Where the iterator fails, the banks are moved at a later drain: late
	 * by a window, not lost (a bank keeps adding until it is moved). */
	ret->banks_error = banks_flush(c);

	agg = old ? c->skel->maps.agg1 : c->skel->maps.agg0;
	stk = old ? c->skel->maps.stacks1 : c->skel->maps.stacks0;
	chn = old ? c->skel->maps.chains1 : c->skel->maps.chains0;
	hst = old ? c->skel->maps.hists1 : c->skel->maps.hists0;
	tot = old ? c->skel->maps.totals1 : c->skel->maps.totals0;
	r = drain_map(bpf_map__fd(agg), sizeof(struct offcpu_key), sizeof(struct offcpu_value),
		      &rows, &ret->n_rows);
	ret->rows = rows;
	if (r == 0) {
		r = drain_map(bpf_map__fd(stk), sizeof(uint64_t), sizeof(struct offcpu_stack),
			      &stacks, &ret->n_stacks);
		ret->stacks = stacks;
	}
	if (r == 0) {
		r = drain_map(bpf_map__fd(chn), sizeof(uint64_t), sizeof(struct offcpu_chain),
			      &chains, &ret->n_chains);
		ret->chains = chains;
	}
	if (r == 0)
		r = drain_percpu_map(c, bpf_map__fd(hst), sizeof(struct offcpu_hist_key),
				     sizeof(uint64_t), sizeof(struct collector_hist), count_sum,
				     (void **)&ret->hists, &ret->n_hists);
	if (r == 0)
		r = drain_percpu_map(c, bpf_map__fd(tot), sizeof(struct offcpu_key),
				     sizeof(struct offcpu_total), sizeof(struct collector_total),
				     total_sum, (void **)&ret->totals, &ret->n_totals);
	collector_counters(c, ret->counters);
	if (r < 0)
		collector_batch_release(ret);
	return r;
}

void collector_batch_release(struct collector_batch *b)
{
	free(b->rows);
	free(b->stacks);
	free(b->chains);
	free(b->hists);
	free(b->totals);
	b->rows = NULL;
	b->stacks = NULL;
	b->chains = NULL;
	b->hists = NULL;
	b->totals = NULL;
	b->n_rows = b->n_stacks = b->n_chains = b->n_hists = b->n_totals = 0; /* counters stay */
}
