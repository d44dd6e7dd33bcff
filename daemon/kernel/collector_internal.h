/*
 * collector_internal: what the collector's files share. collector.c loads
 * the programs and keeps their groups (and the groups' lock), the per-CPU
 * perf events and the links; collector_probe.c probes the kernel's features
 * and says why one is not used; collector_loader.c finds the system's
 * dynamic loader and hooks its _dl_debug_state(); collector_slots.c hands
 * out the filter slots and attaches their request uprobes;
 * collector_drain.c empties the maps, moves the threads' banks of totals,
 * and runs the in-progress pass and the blocked snapshot;
 * collector_cgroups.c attaches the cgroup v2 events' programs and reads
 * their ring; collector_follow.c attaches the programs that let a filter
 * follow its processes' children. Not for callers
 * outside daemon/kernel/collector*.c: they have collector.h.
 */
#ifndef COLLECTOR_INTERNAL_H
#define COLLECTOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "offcpu.skel.h"

/* One optional group: its own instance of the object, whose maps are the
 * core instance's (see group_open() in collector.c). */
struct collector_instance {
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
	struct bpf_link *pass_link;	/* the in-progress pass (collector_drain.c), or NULL */
	struct bpf_link *snapshot_link; /* offcpuctl blocked's (collector_drain.c), or NULL */
	const char *no_pass_why;	/* why it is not loaded; NULL if it is */
	/* sched_switch, sched_waking and walk_at_rseq (rseq_update) run at
	 * every context switch: attached only while a slot needs them
	 * (collector_sched_links_update()), so an idle daemon costs the
	 * switch nothing. A record a thread kept from before counts for no
	 * later slot: its start is older than the slot's. sched_progs[2] is
	 * NULL unless deferred walks wait for rseq_update. */
	struct bpf_program *sched_progs[3];
	struct bpf_link *sched_links[3];
	/* groups[].skel and .status: written by collector_group_load() on
	 * any thread, read on the event loop's. */
	pthread_mutex_t lock;
	pthread_mutex_t load_lock; /* one group load at a time */
	struct collector_instance groups[COLLECTOR_GROUP_COUNT];
	uint32_t oncpu_frequency;
	/* The I/O kinds' links ([0] bio's, [1] fileio's; see links_attach()
	 * in collector.c): bio's for good, fileio's only while a fileio slot
	 * is in use, since any syscall tracepoint slows every syscall of every
	 * process down. */
	struct bpf_link *io_links[2][16];
	size_t n_io_links[2];
	const char *bio_path, *fileio_path;
	uint32_t fileio_slots;	      /* slots of kind FILEIO handed out */
	uint32_t waker_slots;	      /* of kinds WAKEUP, OFFWAKE and CHAIN */
	bool runq_clock;	      /* the programs read run-queue waits at switch-in */
	bool unwind_from_vmas;	      /* new processes' mappings built from their VMAs */
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
	/* By index in the object: a group's program that loads here. */
	bool wanted[COLLECTOR_MAX_PROGRAMS];
	/* Levels (bit L) of each slot's cgroup filter, whose union is the
	 * programs' cgroup_filter_levels; 0: the slot has none. */
	uint32_t cgroup_levels[OFFCPU_MAX_SLOTS];
	/* The cgroup events (collector_cgroups.c): mkdir, rename, rmdir. */
	struct bpf_link *cgroup_links[3];
	struct ring_buffer *cgroup_ring; /* NULL: no events here */
	const char *no_cgroup_events_why; /* why not; NULL while they come */
	char cgroup_attach_why[128];	  /* no_cgroup_events_why where attaching failed */
	/* The collector_cgroup_events() call under way (the ring's callback). */
	int (*cgroup_fn)(void *arg, const struct offcpu_cgroup_event *ev);
	void *cgroup_arg;
	int cgroup_n;	/* events handed to cgroup_fn */
	int cgroup_ret; /* cgroup_fn's nonzero return, which stopped the call */
	/* Following children (collector_follow.c): fork, exit. */
	struct bpf_link *follow_links[2];
	const char *no_follow_why;   /* why captures cannot follow children; NULL: they can */
	char follow_attach_why[128]; /* no_follow_why where attaching failed */
	/* Slots that followed children since their filter entries were last
	 * scrubbed: a fork seen as the slot was released may have added one
	 * after, so they are scrubbed again before reuse. */
	uint32_t follow_scrub;
};

/* collector.c */

/* group's instance if it is loaded, else NULL. */
struct offcpu_bpf *collector_group_skel(struct collector *c, unsigned group);

/*
 * Attaches the scheduler's programs that slots used and waker_slots need,
 * and detaches the rest: sched_switch while any slot is in use,
 * sched_waking while a slot splits blocks at their wakeup and the kernel
 * cannot tell when a task was queued (queued_at()), or a waker kind's slot
 * is in use. Returns 0, or -errno with the links as c->used_mask and
 * c->waker_slots need them.
 */
int collector_sched_links_update(struct collector *c, uint32_t used, uint32_t waker_slots);

/* Attaches the loaded fileio programs (their group is loaded), or detaches
 * them: while a fileio slot is in use (see io_links). 0 or -errno. */
int collector_fileio_attach(struct collector *c);
void collector_fileio_detach(struct collector *c);

/* collector_probe.c */

/* What /proc/kallsyms shows of what the BPF side needs: all 0 where it is
 * not there or hidden (kptr_restrict shows zeros to the unprivileged). */
struct collector_kernel_text {
	uint64_t start;			   /* _stext */
	uint64_t sched_start, sched_end;   /* the __sched section */
	uint64_t switch_to_asm;		   /* __switch_to_asm (x86-64) */
	uint64_t thunks_start, thunks_end; /* the retpoline thunks (x86-64), if any */
};

/* What the core's load takes from the kernel's features and the options:
 * each no_*_why says why a feature is not used here (NULL: it is). */
struct collector_features {
	const char *no_defer_why;	 /* sampled slots' deferred user walks */
	const char *no_rseq_why;	 /* waiting for rseq_update, where it was asked for */
	const char *no_pass_why;	 /* the in-progress pass */
	const char *no_kstack_cache_why; /* cached exact kernel walks */
	const char *no_sched_frames_why; /* __sched frames put back in off-CPU walks */
	const char *no_cgroup_events_why; /* the cgroup_mkdir/rename/rmdir events */
	bool rseq_loaded;		 /* walk_at_rseq loads */
	bool rseq_on;			 /* and deferred walks wait for it from the start */
	bool runq_clock;		 /* run-queue waits read at switch-in */
	bool vma_iter;			 /* the VMA iterator kfuncs (6.7) */
	struct collector_kernel_text text;
};

/* Probes the running kernel (its BTF, /proc/kallsyms) for a load on the
 * tracepoint flavour raw_tp or tp_btf. */
void collector_features_probe(const struct collector_options *opts, bool raw_tp,
			      struct collector_features *ret);

/* The block tracepoints the bio programs use, as collector_io_path() says
 * them; NULL where there are none (raw_tp, no BTF). */
const char *collector_bio_path_probe(bool raw_tp);

/* collector_cgroups.c */

/* Attaches the cgroup events' programs (loaded unless the probe said why
 * not) and opens their ring; where either fails, sets why and goes on
 * without (user space names cgroups from /proc). */
void collector_cgroup_events_attach(struct collector *c);
void collector_cgroup_events_detach(struct collector *c);

/* Whether prog, a core program other than sched_progs', is attached: the
 * cgroup events' may not be, the others are. */
bool collector_cgroup_prog_attached(const struct collector *c, const struct bpf_program *prog);

/* collector_follow.c */

/* Attaches the follow programs (bpf/follow.bpf.c); where that fails, sets
 * no_follow_why and goes on without. */
void collector_follow_attach(struct collector *c);
void collector_follow_detach(struct collector *c);

/* Whether prog, if one of the follow programs, is attached (else true). */
bool collector_follow_prog_attached(const struct collector *c, const struct bpf_program *prog);

/* collector_loader.c */

/* The ELF addresses of _dl_debug_state and _r_debug.r_state in the
 * system's loader, for the hook to tell the call that says the loader has
 * mapped the libraries (unwind_loader_ready()); false if they cannot be
 * read (the hook then builds a list at every call). */
bool collector_loader_symbols(uint64_t *debug_state, uint64_t *r_state);

/* prog on the loader's _dl_debug_state(), in every process; NULL (the
 * hook is an extra: a process's first walk still builds its list) if the
 * loader has no such symbol or the kernel refuses. */
struct bpf_link *collector_loader_attach(struct bpf_program *prog);

#endif
