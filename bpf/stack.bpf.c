// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel unwinding: daemon/kernel/unwinder.c fills unwind_rows with the
 * tables of the files processes map, and unwind_procs with each process's executable
 * mappings and where their rows are. A process not in unwind_procs is asked
 * for through unwind_requests (once, unwind_requested remembers), and walked
 * with frame pointers meanwhile. Exec forgets a process; a walk that meets
 * code outside its known mappings (a library loaded since, JIT code) asks
 * again, at most once per UNWIND_REFRESH_NS. (Tracing mmap instead would need
 * a syscall tracepoint, which slows every system call on the machine.)
 *
 * User space publishes a process some 20 ms after it asks (an mmap may be
 * under way), and a new process often blocks before that. So the tables it
 * has loaded are also in unwind_files, by file identity: a process not
 * published yet gets its mappings here, from its VMAs, for the files whose
 * tables are there (unwind_proc_from_vmas()); user space's list replaces
 * them when it comes. The walk itself is in stack.bpf.h, inlined where
 * stacks are walked.
 */
#include "stack.bpf.h"

const volatile __u32 unwind_dwarf = 0;	    /* set by the loader: 0 frame pointers only */
const volatile __u32 unwind_max_depth = 64; /* frames, at most OFFCPU_MAX_STACK_DEPTH */
const volatile __u32 python_frames = 0;	    /* set by the loader: CPython's frames (python.bpf.h) */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space writes tables by memcpy */
	__uint(max_entries, 1);		   /* set by the loader */
	__type(key, __u32);
	__type(value, struct offcpu_unwind_row);
} unwind_rows SEC(".maps");

/* Written from user space only: a table, by the file it is of. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct offcpu_unwind_file_key);
	__type(value, struct offcpu_unwind_file);
} unwind_files SEC(".maps");

/* Bumped by user space before it rewrites rows that unwind_files pointed
 * at: a list built across a bump may point at another file's rows. */
__u32 unwind_files_gen;

/* Bumped by user space after it publishes a table in unwind_files: a list
 * built from the VMAs before may now cover more of its process. */
__u32 unwind_files_added;

/* The list unwind_proc_from_vmas() builds: 2.5 KiB, too large for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_unwind_proc);
} unwind_vma_scratch SEC(".maps");

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

#define VM_EXEC 0x4

/*
 * The row each recently unwound pc had, per CPU, by a hash of the pc: the
 * same call sites block again and again, and checking a row is two lookups
 * where the search is one per level of a table of thousands of rows. A
 * hint is only a guess, checked against the table as it is now (rows may
 * have been rewritten since), so a stale or colliding one costs a search.
 */
#define UNWIND_ROW_HINTS 1024

struct unwind_row_hint {
	__u64 pc;
	__u32 idx; /* in unwind_rows */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNWIND_ROW_HINTS);
	__type(key, __u32);
	__type(value, struct unwind_row_hint);
} unwind_row_hints SEC(".maps");

/* Whether row idx is the one unwind_find_row() would find for rel in m:
 * in m's table, the last row whose pc is at most rel. */
static __always_inline const struct offcpu_unwind_row *
unwind_row_check(const struct offcpu_unwind_mapping *m, __u32 idx, __u64 rel)
{
	const struct offcpu_unwind_row *row, *next;
	__u32 after = idx + 1;

	if (idx - m->first_row >= m->n_rows) /* (below first_row wraps) */
		return NULL;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row || row->pc > rel)
		return NULL;
	if (after - m->first_row >= m->n_rows)
		return row; /* the table's last row */
	next = bpf_map_lookup_elem(&unwind_rows, &after);
	return next && next->pc > rel ? row : NULL;
}

/* The row that covers pc in m's table; NULL if none does. */
static __always_inline const struct offcpu_unwind_row *
unwind_find_row(const struct offcpu_unwind_mapping *m, __u64 pc)
{
	const struct offcpu_unwind_row *row;
	__u32 lo = 0, hi = m->n_rows, idx; /* the row is in [lo, hi) once found */
	__u64 rel = pc - m->bias;
	__u32 slot = (__u32)(pc ^ (pc >> 11) ^ (pc >> 23)) & (UNWIND_ROW_HINTS - 1);
	struct unwind_row_hint *hint = bpf_map_lookup_elem(&unwind_row_hints, &slot);

	if (hint && hint->pc == pc) {
		row = unwind_row_check(m, hint->idx, rel);
		if (row)
			return row;
	}

	for (int i = 0; i < 24 && lo + 1 < hi; i++) { /* 2^24 rows: beyond any table */
		__u32 mid = lo + (hi - lo) / 2;

		idx = m->first_row + mid;
		row = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!row)
			return NULL;
		if (row->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	idx = m->first_row + lo;
	row = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row || row->pc > rel)
		return NULL;
	if (hint) {
		hint->pc = pc;
		hint->idx = idx;
	}
	return row;
}

/* Mappings are sorted by start and do not overlap. */
static __always_inline const struct offcpu_unwind_mapping *
unwind_find_mapping(const struct offcpu_unwind_proc *p, __u64 pc)
{
	__u32 lo = 0, hi = p->n < OFFCPU_UNWIND_MAPPINGS ? p->n : OFFCPU_UNWIND_MAPPINGS;
	const struct offcpu_unwind_mapping *m;

	if (!hi)
		return NULL;
	for (int i = 0; i < 7 && lo + 1 < hi; i++) { /* 2^7 > OFFCPU_UNWIND_MAPPINGS */
		__u32 mid = lo + (hi - lo) / 2;

		if (p->maps[mid & (OFFCPU_UNWIND_MAPPINGS - 1)].start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	m = &p->maps[lo & (OFFCPU_UNWIND_MAPPINGS - 1)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* m's row for pc into *row: 1 if its table has one, else 0. A global
 * function: verified apart from the search for m, whose paths it would
 * otherwise multiply past the verifier's limit. */
__noinline int unwind_row_get(const struct offcpu_unwind_mapping *m, __u64 pc,
			      struct offcpu_unwind_row *row)
{
	const struct offcpu_unwind_row *r;

	if (!m || !row)
		return 0;
	r = unwind_find_row(m, pc);
	if (!r)
		return 0;
	*row = *r;
	return 1;
}

/*
 * The unwind rule for pc in process p: 0 if no mapping of p covers pc, 1 if
 * one does but its table has no row for pc (rule NONE), 2 with *row filled;
 * *file is the covering mapping's file. A global function: the verifier
 * checks its searches once, not per frame.
 */
__noinline int unwind_rule(const struct offcpu_unwind_proc *p, __u64 pc,
			   struct offcpu_unwind_row *row, struct unwind_file_ref *file)
{
	const struct offcpu_unwind_mapping *m;

	if (!p || !row || !file)
		return 0;
	m = unwind_find_mapping(p, pc);
	if (!m)
		return 0;
	file->bias = m->bias;
	file->file_id = m->file_id;
	if (!m->n_rows)
		return 1;
	return unwind_row_get(m, pc, row) ? 2 : 1;
}

/* The address a mapping of f at start, from file offset pgoff, shifts f's
 * virtual addresses by (as mapping_bias() in daemon/kernel/unwinder.c). */
static __always_inline bool file_bias(const struct offcpu_unwind_file *f, __u64 start, __u64 pgoff,
				      __u64 *bias)
{
	/* The segment the mapping begins, else one it is inside (as
	 * mapping_bias(): segments may share a file page). */
	for (__u32 pass = 0; pass < 2; pass++) {
		for (__u32 i = 0; i < OFFCPU_UNWIND_FILE_LOADS; i++) {
			const struct offcpu_unwind_load *l = &f->loads[i];
			__u64 seg_start = l->offset & ~0xfffull;

			if (i >= f->n_loads)
				break;
			if (pass ? pgoff >= seg_start && pgoff < l->offset + l->filesz
				 : pgoff == seg_start) {
				*bias = start - pgoff + l->offset - l->vaddr;
				return true;
			}
		}
	}
	return false;
}

/* struct inode before 6.11: its ctime was one timespec64. */
struct inode___pre_6_11 {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));

/*
 * Whether inode is still the file f's table was made of: its size and
 * status change time are those user space saw then (a rewrite in place
 * keeps the inode and changes its ctime). *known is false where this
 * kernel's inode has neither ctime layout: then only the size is compared.
 */
static __always_inline bool inode_unchanged(struct inode *inode, const struct offcpu_unwind_file *f,
					    bool *known)
{
	struct inode___pre_6_11 *old = (void *)inode;
	__s64 sec;
	__u32 nsec;

	*known = true;
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		sec = BPF_CORE_READ(inode, i_ctime_sec);
		/* Its top bit is a flag (I_CTIME_QUERIED, multigrain timestamps,
		 * 6.13), set by the stat() that user space saw it with. */
		nsec = BPF_CORE_READ(inode, i_ctime_nsec) & ~(1u << 31);
	} else if (bpf_core_field_exists(old->__i_ctime)) {
		sec = BPF_CORE_READ(old, __i_ctime.tv_sec);
		nsec = BPF_CORE_READ(old, __i_ctime.tv_nsec);
	} else {
		*known = false;
		sec = f->ctime_sec;
		nsec = f->ctime_nsec;
	}
	return BPF_CORE_READ(inode, i_size) == f->size && sec == f->ctime_sec &&
	       nsec == f->ctime_nsec;
}

/*
 * Publishes the current process (tgid) in unwind_procs with the executable
 * file mappings among its VMAs whose files have tables in unwind_files
 * (and are unchanged since), flagged COMPLETE if that is all of them
 * (user space then adopts the list rather than read the process's maps:
 * daemon/kernel/unwinder.c). Returns the
 * list's flags if it did: 0 if it maps no such file, its VMAs cannot be
 * read now (the kernel lacks the VMA iterator; irqs are off, as in
 * sched_switch, or mmap_lock is held: the iterator fails rather than
 * waits), or an entry is there already. A global function: verified once.
 */
__noinline int unwind_proc_from_vmas(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct offcpu_unwind_file_key key = {};
	struct offcpu_unwind_proc *e;
	struct offcpu_python_proc python = {};
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	__u32 zero = 0, gen = unwind_files_gen,
	      flags = OFFCPU_UNWIND_FROM_VMAS | OFFCPU_UNWIND_COMPLETE;

	if (!bpf_iter_task_vma_new) /* a __weak kfunc: 0 if missing (before 6.7) */
		return 0;
	e = bpf_map_lookup_elem(&unwind_vma_scratch, &zero);
	if (!e)
		return 0;
	e->n = 0;
	e->files_added = unwind_files_added;
	bpf_iter_task_vma_new(&it, task, 0); /* on failure, _next() returns NULL */
	while ((vma = bpf_iter_task_vma_next(&it))) {
		const struct offcpu_unwind_file *f;
		struct inode *inode;
		__u64 pgoff, bias;
		__u32 n = e->n, dev;
		bool known;

		if (!(vma->vm_flags & VM_EXEC) || !vma->vm_file)
			continue;
		if (n >= OFFCPU_UNWIND_MAPPINGS) {
			flags &= ~OFFCPU_UNWIND_COMPLETE;
			break;
		}
		inode = BPF_CORE_READ(vma, vm_file, f_inode);
		dev = BPF_CORE_READ(inode, i_sb, s_dev);
		key.major = dev >> 20; /* the kernel's dev_t: MAJOR << 20 | MINOR */
		key.minor = dev & 0xfffff;
		key.ino = BPF_CORE_READ(inode, i_ino);
		f = bpf_map_lookup_elem(&unwind_files, &key);
		pgoff = vma->vm_pgoff << 12;
		if (!f || !inode_unchanged(inode, f, &known) ||
		    !file_bias(f, vma->vm_start, pgoff, &bias)) {
			flags &= ~OFFCPU_UNWIND_COMPLETE; /* user space reads this one */
			continue;
		}
		if (!known)
			flags &= ~OFFCPU_UNWIND_COMPLETE;
		if (f->python.layout.minor && python_frames) {
			python = f->python;
			python.runtime += bias; /* every segment of a file shares its bias */
		}
		e->maps[n & (OFFCPU_UNWIND_MAPPINGS - 1)] = (struct offcpu_unwind_mapping){
			.start = vma->vm_start,
			.end = vma->vm_end,
			.bias = bias,
			.first_row = f->first_row,
			.n_rows = f->n_rows,
			.file_id = f->file_id,
		};
		e->n = n + 1;
	}
	bpf_iter_task_vma_destroy(&it);
	/* The layout first: a walk that finds the list finds it too. */
	if (python.layout.minor && !bpf_map_update_elem(&python_procs, &tgid, &python, BPF_ANY))
		flags |= OFFCPU_UNWIND_PYTHON;
	e->flags = flags;
	if (!e->n || bpf_map_update_elem(&unwind_procs, &tgid, e, BPF_NOEXIST))
		return 0;
	if (unwind_files_gen != gen) { /* rows rewritten meanwhile: withdraw */
		bpf_map_delete_elem(&unwind_procs, &tgid);
		return 0;
	}
	count(OFFCPU_CNT_UNWIND_FROM_VMAS);
	return flags;
}

/* Never written; not const, because a global function's pointer arguments
 * must be writable memory. */
struct offcpu_unwind_proc no_tables;

/*
 * Never 0: 0 means "no stack" in struct offcpu_key. A global function, so the
 * verifier checks its data-dependent loop once rather than at every call path.
 */
__noinline __u64 stack_hash(const struct offcpu_stack *st)
{
	__u64 h;

	if (!st)
		return 0;
	h = 0xcbf29ce484222325ULL ^ st->nr ^ (__u64)st->flags << 32;

	for (__u32 i = 0; i < OFFCPU_MAX_STACK_DEPTH; i++) {
		if (i >= st->nr)
			break;
		h = (h ^ st->ips[i]) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* The ELF addresses of _dl_debug_state and of _r_debug.r_state in the
 * system's loader (collector_loader.c reads them from its symbols); 0: unknown. */
const volatile __u64 loader_debug_state = 0;
const volatile __u64 loader_r_state = 0;

#define RT_CONSISTENT 0 /* enum r_state (<link.h>): the link map is whole */

/* The loader's r_debug.r_state at this call of _dl_debug_state (ctx): its
 * libraries are mapped at RT_CONSISTENT, and about to be at RT_ADD; -1 if
 * it cannot be read. */
static __always_inline int loader_state(struct pt_regs *ctx)
{
	__u64 bias;
	int state;

	if (!loader_debug_state || !loader_r_state)
		return -1;
	/* The loader is mapped at a page boundary; the pc may be one past the
	 * breakpoint. */
	bias = (PT_REGS_IP(ctx) - loader_debug_state) & ~0xfffull;
	if (bpf_probe_read_user(&state, sizeof(state), (const void *)(bias + loader_r_state)))
		return -1;
	return state;
}

/*
 * The dynamic loader's debugger hook, _dl_debug_state(), a bare return that
 * ld.so calls before and once its initial libraries are mapped, and around
 * each dlopen, with r_state saying which: in a process some slot walks, the
 * mappings are built from the VMAs here once they are mapped, before
 * main(), so that even the first blocks of an exact capture are walked with
 * tables, and user space is asked to read the process at once. Attached to
 * the system's loader by user space (collector_loader.c); a list user space
 * published stays.
 */
SEC("uprobe")
int unwind_loader_ready(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	__u32 tgid = id >> 32;
	const struct offcpu_unwind_proc *proc;
	int state, built;

	if (!unwind_dwarf || !task_filter(active_mask & user_stack_slots, tgid, (__u32)id))
		return 0;
	state = loader_state(ctx);
	if (state > RT_CONSISTENT)
		return 0; /* mapping libraries: wait for the call that says it is done */
	proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (proc && !(proc->flags & OFFCPU_UNWIND_FROM_VMAS)) {
		/* A dlopen done: the list user space published lacks the
		 * library, whose code would end every walk through it until
		 * the next refresh (a second away). Asked for again now, read
		 * when the usual settling time has passed: a burst of
		 * dlopens (imports) is read once, and a process that exits
		 * by then not at all. The time asked is left as it is, or
		 * the list being read now would be withdrawn as stale. */
		if (state == RT_CONSISTENT)
			unwind_submit(tgid, 0, false);
		return 0;
	}
	if (proc) /* built at an earlier call: libraries mapped since */
		bpf_map_delete_elem(&unwind_procs, &tgid);
	if (state == RT_CONSISTENT) {
		/* User space reads the maps at once, not ~20 ms later, when a
		 * short-lived process may be gone: the files this list lacks
		 * (a binary no process ran before) get their tables now. A
		 * whole list is only to be taken as it is: that can wait for
		 * user space's next wakeup, which spares one per new process. */
		built = unwind_proc_from_vmas(tgid);
		now = bpf_ktime_get_ns();
		bpf_map_update_elem(&unwind_requested, &tgid, &now, BPF_ANY);
		unwind_submit(tgid, OFFCPU_UNWIND_REQUEST_NOW, built & OFFCPU_UNWIND_COMPLETE);
		return 0;
	}
	/* User space is asked too: a list here keeps walks from asking. */
	if (unwind_proc_from_vmas(tgid))
		unwind_request(tgid);
	return 0;
}

/* A new program image: its unwind tables are asked for at its next walk. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(unwind_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&unwind_requested, &tgid);
	return 0;
}
