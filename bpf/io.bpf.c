// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * I/O kinds: block requests (BIO) and
 * file I/O syscalls (FILEIO), aggregated into the same agg and stack maps as
 * off-CPU blocks, through the same slots.
 *
 * BIO: a request is keyed by its struct request address. Its issuing
 * thread, comm and stacks are taken where it starts, in the submitter's
 * context (completion is asynchronous, in an interrupt): block_io_start
 * where the kernel has it (6.5+), else block_rq_insert, or block_rq_issue
 * for requests issued directly, without insert. Completion is
 * block_rq_complete (see bio_rq_complete). The loader turns off the unused
 * path's programs.
 *
 * FILEIO: the syscall tracepoints of read, pread64, readv, write, pwrite64,
 * writev, fsync and fdatasync (fentry on vfs_* does not attach everywhere,
 * e.g. under lockdown). Entry keeps a timestamp per thread; the exit walks
 * the user stack, only if a slot's --min/--max filter keeps the call.
 */
#include "stack.bpf.h"

struct bio_rec {
	__u64 start_ns;
	__u64 issue_ns; /* 0: issue not seen; then all of it counts as device time */
	__u64 bytes;
	__u64 cgroup; /* the issuer's */
	__u32 slots;
	__u32 tgid, pid;
	__u32 pad;
	char comm[OFFCPU_COMM_LEN];
	struct offcpu_stack kstack;
	struct offcpu_stack ustack;
};

static const struct bio_rec zero_bio;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct bio_rec);
} bio_requests SEC(".maps");

struct fileio_call {
	__u64 start_ns;
	__u64 cgroup; /* at entry, where the filters were decided */
	__u32 slots;
	__s32 fd; /* every traced call's first argument */
};

/* File names of --with-filename rows, by hash (see struct offcpu_file_name):
 * interned at the call's exit, read (not emptied) by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct offcpu_file_name);
} file_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct fileio_call);
} fileio_calls SEC(".maps");

/* One finished I/O, as io_account() adds it to a slot's rows. */
struct io_done_event {
	__u64 start_ns;
	__u64 device_ns; /* BIO: issue to completion; FILEIO: the call's latency */
	__u64 queue_ns;	 /* BIO: insert to issue; FILEIO: 0 */
	__u64 bytes;
	__u64 khash, uhash;
	__u64 fhash; /* FILEIO: the file's name in file_names; 0: none */
	__u64 cgroup;
	__u32 tgid, pid;
	__u32 kind;
	__u32 pad;
	char comm[OFFCPU_COMM_LEN];
};

/* fileio's user stack at a syscall's exit. Not the shared scratch map:
 * sched_waking may interrupt a syscall exit on the same CPU and use that
 * one. (Events themselves live on the BPF stack, for the same reason: a
 * block completion interrupts a syscall exit.) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_stack);
} fileio_stack SEC(".maps");

/* Slots of kind whose filters accept the current thread, and that are
 * traced at all; 0 for the daemon itself. */
static __always_inline __u32 io_match(__u32 kind, __u32 *ret_tgid, __u32 *ret_pid)
{
	__u32 of_kind = kind == OFFCPU_KIND_BIO ? kind_slots[OFFCPU_KIND_BIO]
						: kind_slots[OFFCPU_KIND_FILEIO];
	__u64 id;

	if (!(active_mask & of_kind))
		return 0;
	id = bpf_get_current_pid_tgid();
	*ret_tgid = id >> 32;
	*ret_pid = (__u32)id;
	if (self_tgid && *ret_tgid == self_tgid)
		return 0;
	/* A BIO slot may want only the queue part (state R, see offcpu.h).
	 * One task_filter() for both states: it only clears slots' bits. */
	return task_filter(
		active_mask & of_kind &
			(state_slots[OFFCPU_IO_STATE_DEVICE] |
			 (kind == OFFCPU_KIND_BIO ? state_slots[OFFCPU_IO_STATE_QUEUE] : 0)),
		*ret_tgid, *ret_pid);
}

/* Of the slots in matched, those that keep ev: begun after the slot's
 * start, latency within its bounds. Global functions, here and below: their
 * loops are verified once, not once per path of the caller. */
__noinline __u32 io_passing(const struct io_done_event *ev, __u32 matched)
{
	__u64 total;
	__u32 passing = 0;

	if (!ev)
		return 0;
	total = ev->device_ns + ev->queue_ns;
	matched &= active_mask;
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++) {
		const struct offcpu_slot *s = &slots[i];

		if ((matched & (1u << i)) && ev->start_ns >= s->start_ns &&
		    total >= s->min_block_ns && (!s->max_block_ns || total <= s->max_block_ns))
			passing |= 1u << i;
	}
	return passing;
}

/* Adds ev to slot's rows: device time with the count and bytes, queue time
 * apart (see OFFCPU_IO_STATE_*), each if the slot's states want it. */
__noinline int io_account(struct io_done_event *ev, __u32 slot)
{
	__u32 i = slot & (OFFCPU_MAX_SLOTS - 1), bit = 1u << i;
	struct offcpu_key key = {};
	struct buffers b = {};

	if (!ev || !buffers_get(&b))
		return 0;
	key.slot = i;
	key.tgid = ev->tgid;
	key.pid = ev->pid;
	key.state = OFFCPU_IO_STATE_DEVICE;
	key.kind = ev->kind;
	key.kstack = (kernel_stack_slots & bit) ? ev->khash : 0;
	key.ustack = (user_stack_slots & bit) ? ev->uhash : 0;
	key.chain = (filename_slots & bit) ? ev->fhash : 0;
	key.cgroup = ev->cgroup;
	if (state_slots[OFFCPU_IO_STATE_DEVICE] & bit)
		aggregate_io(b.agg, &key, ev->device_ns, 1, ev->bytes, ev->comm);
	if (ev->queue_ns && (state_slots[OFFCPU_IO_STATE_QUEUE] & bit)) {
		key.state = OFFCPU_IO_STATE_QUEUE;
		aggregate_io(b.agg, &key, ev->queue_ns, 0, 0, ev->comm);
	}
	return 0;
}

__noinline int io_account_all(struct io_done_event *ev, __u32 passing)
{
	for (__u32 i = 0; i < OFFCPU_MAX_SLOTS; i++)
		if (passing & (1u << i))
			io_account(ev, i);
	count(OFFCPU_CNT_IO_EVENTS);
	return 0;
}

/* ---- BIO ---- */

static __always_inline void bio_start(void *ctx, struct request *rq)
{
	__u64 key = (__u64)rq;
	__u32 matched, tgid, pid;
	struct task_struct *cur;
	struct bio_rec *r;

	matched = io_match(OFFCPU_KIND_BIO, &tgid, &pid);
	if (!matched)
		return;
	if (bpf_map_update_elem(&bio_requests, &key, &zero_bio, BPF_ANY) ||
	    !(r = bpf_map_lookup_elem(&bio_requests, &key))) {
		count(OFFCPU_CNT_DROP_IO_ALLOC);
		return;
	}
	r->tgid = tgid;
	r->pid = pid;
	r->cgroup = bpf_get_current_cgroup_id();
	r->bytes = BPF_CORE_READ(rq, __data_len);
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	if (matched & kernel_stack_slots)
		walk_stack(ctx, &r->kstack, 0, OFFCPU_CNT_DROP_KSTACK_ERROR);
	cur = bpf_get_current_task_btf();
	if ((matched & user_stack_slots) && !(cur->flags & PF_KTHREAD))
		walk_user_stack(ctx, cur, tgid, &r->ustack, true);
	r->slots = matched;
	r->start_ns = bpf_ktime_get_ns();
}

static __always_inline void bio_issue(void *ctx, struct request *rq, bool start_here)
{
	__u64 key = (__u64)rq;
	struct bio_rec *r = bpf_map_lookup_elem(&bio_requests, &key);

	if (!r && start_here) {
		bio_start(ctx, rq);
		r = bpf_map_lookup_elem(&bio_requests, &key);
	}
	if (!r || r->issue_ns)
		return;
	r->bytes = BPF_CORE_READ(rq, __data_len); /* merges may have grown it */
	r->issue_ns = bpf_ktime_get_ns();
}

static __always_inline void bio_done(struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), issue;
	struct io_done_event ev = {};
	struct buffers b = {};
	struct bio_rec *r;
	__u32 passing;

	r = bpf_map_lookup_elem(&bio_requests, &key);
	if (!r)
		return;
	if (now < r->start_ns)
		goto out;
	issue = r->issue_ns >= r->start_ns && r->issue_ns <= now ? r->issue_ns : r->start_ns;
	ev.start_ns = r->start_ns;
	ev.queue_ns = issue - r->start_ns;
	ev.device_ns = now - issue;
	ev.bytes = r->bytes;
	ev.tgid = r->tgid;
	ev.pid = r->pid;
	ev.cgroup = r->cgroup;
	ev.kind = OFFCPU_KIND_BIO;
	__builtin_memcpy(ev.comm, r->comm, sizeof(ev.comm));
	passing = io_passing(&ev, r->slots);
	if (!passing || !buffers_get(&b))
		goto out;
	ev.khash = intern_stack(b.stacks, &r->kstack);
	ev.uhash = intern_stack(b.stacks, &r->ustack);
	io_account_all(&ev, passing);
out:
	bpf_map_delete_elem(&bio_requests, &key);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(bio_io_start, struct request *rq)
{
	bio_start(ctx, rq);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(bio_rq_issue, struct request *rq)
{
	bio_issue(ctx, rq, false);
	return 0;
}

/* Fallback path, kernels without block_io_start. */
SEC("tp_btf/block_rq_insert")
int BPF_PROG(bio_rq_insert, struct request *rq)
{
	bio_start(ctx, rq);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(bio_rq_issue_start, struct request *rq)
{
	bio_issue(ctx, rq, true); /* issued directly, without insert */
	return 0;
}

/* The end of a request on both paths: block_rq_complete fires before the
 * request's bios end and wake their waiters; block_io_done comes after, so
 * a busy CPU can stretch the time to it past the I/O the waiter saw. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(bio_rq_complete, struct request *rq)
{
	bio_done(rq);
	return 0;
}

/* ---- FILEIO ---- */

static __always_inline void fileio_enter(long fd)
{
	struct fileio_call call = {};
	__u32 tgid, pid;

	call.slots = io_match(OFFCPU_KIND_FILEIO, &tgid, &pid);
	if (!call.slots)
		return;
	call.start_ns = bpf_ktime_get_ns();
	call.cgroup = bpf_get_current_cgroup_id();
	call.fd = (__s32)fd;
	if (bpf_map_update_elem(&fileio_calls, &pid, &call, BPF_ANY))
		count(OFFCPU_CNT_DROP_IO_ALLOC);
}

/*
 * Interns the name (last path component) of the current task's file fd in
 * file_names; returns its hash, 0 if fd is not open. Files without a name
 * of their own (pipes, sockets: the name is made up when asked) are
 * "[anonymous]". A global function: its loop is verified once.
 */
__noinline __u64 file_name_hash(int fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct offcpu_file_name n = {};
	const unsigned char *name;
	struct file **fds, *f = NULL;
	struct fdtable *fdt;
	__u64 h = 0xcbf29ce484222325ULL;

	fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || fd < 0 || (unsigned)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return 0;
	name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (!name || bpf_probe_read_kernel_str(n.name, sizeof(n.name), name) <= 1)
		__builtin_memcpy(n.name, "[anonymous]", sizeof("[anonymous]"));
	for (int i = 0; i < OFFCPU_FILE_NAME_LEN && n.name[i]; i++)
		h = (h ^ (unsigned char)n.name[i]) * 0x100000001b3ULL;
	h = h ? h : 1;
	bpf_map_update_elem(&file_names, &h, &n, BPF_ANY);
	return h;
}

static __always_inline void fileio_exit(void *ctx, long ret)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct fileio_call *call;
	struct io_done_event ev = {};
	struct buffers b = {};
	struct offcpu_stack *ust;
	__u32 pid = (__u32)id, zero = 0, passing;

	call = bpf_map_lookup_elem(&fileio_calls, &pid);
	if (!call)
		return;
	if (now < call->start_ns)
		goto out;
	ev.start_ns = call->start_ns;
	ev.device_ns = now - call->start_ns;
	ev.bytes = ret > 0 ? ret : 0;
	ev.tgid = id >> 32;
	ev.pid = pid;
	ev.cgroup = call->cgroup;
	ev.kind = OFFCPU_KIND_FILEIO; /* no kernel stack: the syscall's exit path says nothing */
	passing = io_passing(&ev, call->slots);
	if (!passing)
		goto out;
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	ust = bpf_map_lookup_elem(&fileio_stack, &zero);
	if (!ust || !buffers_get(&b))
		goto out;
	ust->nr = 0;
	if (passing & user_stack_slots)
		walk_user_stack(ctx, bpf_get_current_task_btf(), ev.tgid, ust, true);
	ev.uhash = intern_stack(b.stacks, ust);
	if (passing & filename_slots)
		ev.fhash = file_name_hash(call->fd);
	io_account_all(&ev, passing);
out:
	bpf_map_delete_elem(&fileio_calls, &pid);
}

#define FILEIO_SYSCALL(name)                                                                       \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                                \
	int fileio_enter_##name(struct trace_event_raw_sys_enter *ctx)                             \
	{                                                                                          \
		fileio_enter(ctx->args[0]);                                                        \
		return 0;                                                                          \
	}                                                                                          \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                                 \
	int fileio_exit_##name(struct trace_event_raw_sys_exit *ctx)                               \
	{                                                                                          \
		fileio_exit(ctx, ctx->ret);                                                        \
		return 0;                                                                          \
	}

FILEIO_SYSCALL(read)
FILEIO_SYSCALL(pread64)
FILEIO_SYSCALL(readv)
FILEIO_SYSCALL(write)
FILEIO_SYSCALL(pwrite64)
FILEIO_SYSCALL(writev)
FILEIO_SYSCALL(fsync)
FILEIO_SYSCALL(fdatasync)
