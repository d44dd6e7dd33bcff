/*
 * collector_probe: what the running kernel lets the programs do (its BTF,
 * /proc/kallsyms), decided once before the core loads, and why a feature
 * is not used where it is not.
 */
#include "collector_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kallsyms.h"

/* The block tracepoints the bio programs use: block_io_start/done (6.5+),
 * else block_rq_insert/issue/complete; none without BTF (tp_btf only). A
 * tracepoint tp_btf can attach to has a btf_trace_<name> typedef. */
const char *collector_bio_path_probe(bool raw_tp)
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

/* What the core's load asks of the running kernel's BTF, parsed once. */
struct kernel_features {
	bool task_work;	  /* the BPF task work kfunc deferred walks need */
	bool rseq_update; /* the rseq_update tracepoint and task_struct.rseq (walk_at_rseq) */
	bool runq_clock;  /* sched_info.last_queued and a task's run queue (queued_at()) */
	bool vma_iter;	  /* the VMA iterator kfuncs (6.7) unwind_proc_from_vmas() needs */
	bool rdonly_cast; /* bpf_rdonly_cast() (6.2): loads from the kernel stack */
	bool copy_from_user_task; /* the helper (5.18) the in-progress pass reads stacks with */
	/* cgroup_mkdir/rename/rmdir as (struct cgroup *, const char *path),
	 * 4.20+, and cgroup ids as kernfs_node.id, a u64 (5.5+) */
	bool cgroup_tracepoints;
};

static bool struct_has_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (unsigned i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), member))
			return true;
	return false;
}

/* Whether tracepoint name's BTF typedef (btf_trace_NAME) takes n arguments
 * after the context. */
static bool tracepoint_has_args(const struct btf *btf, const char *name, unsigned n)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	if (!t)
		return false;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_ptr(t))
		return false;
	t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) && btf_vlen(t) == n + 1;
}

/* Whether struct type's member is an integer of size bytes. */
static bool member_is_int(const struct btf *btf, const char *type, const char *member, size_t size)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (unsigned i = 0; t && i < btf_vlen(t); i++) {
		const struct btf_type *mt;
		int tid;

		if (strcmp(btf__name_by_offset(btf, m[i].name_off), member))
			continue;
		tid = btf__resolve_type(btf, m[i].type);
		mt = tid > 0 ? btf__type_by_id(btf, tid) : NULL;
		return mt && btf_is_int(mt) && mt->size == size;
	}
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
		struct_has_member(vmlinux, "task_struct", "rseq");
	f.rdonly_cast = btf__find_by_name_kind(vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
	f.copy_from_user_task =
		btf__find_by_name_kind(vmlinux, "bpf_copy_from_user_task", BTF_KIND_FUNC) > 0;
	f.runq_clock = struct_has_member(vmlinux, "task_struct", "sched_info") &&
		       struct_has_member(vmlinux, "sched_info", "last_queued") &&
		       struct_has_member(vmlinux, "sched_entity", "cfs_rq") &&
		       struct_has_member(vmlinux, "cfs_rq", "rq") &&
		       struct_has_member(vmlinux, "rq", "clock");
	f.cgroup_tracepoints = tracepoint_has_args(vmlinux, "btf_trace_cgroup_mkdir", 2) &&
			       tracepoint_has_args(vmlinux, "btf_trace_cgroup_rename", 2) &&
			       tracepoint_has_args(vmlinux, "btf_trace_cgroup_rmdir", 2) &&
			       member_is_int(vmlinux, "kernfs_node", "id", 8);
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

/* Why the cgroup events (bpf/cgroups.bpf.c) cannot come here; NULL if they
 * can. */
static const char *no_cgroup_events_reason(const struct kernel_features *kernel)
{
	if (!kernel->cgroup_tracepoints)
		return "the kernel's BTF has no cgroup_mkdir/rename/rmdir tracepoints with a "
		       "path (4.20) or no 64-bit cgroup ids (5.5)";
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) <= 0)
		return "the kernel has no BPF ring buffer (5.8)";
	return NULL;
}

/* Notes what the BPF side needs (struct collector_kernel_text) of one
 * kernel symbol; modules' are not the kernel's text. */
static int kernel_text_visit(void *arg, const struct kallsyms_sym *sym)
{
	struct collector_kernel_text *t = arg;
	const char *name = sym->name;
	uint64_t addr = sym->addr;

	if (sym->module)
		return 0;
	if (!strncmp(name, "__x86_indirect_", 15) && strstr(name, "thunk")) {
		if (!t->thunks_start || addr < t->thunks_start)
			t->thunks_start = addr;
		if (addr + 64 > t->thunks_end) /* a thunk is at most 64 bytes */
			t->thunks_end = addr + 64;
	}
	if (!strcmp(name, "_stext"))
		t->start = addr;
	else if (!strcmp(name, "__sched_text_start"))
		t->sched_start = addr;
	else if (!strcmp(name, "__sched_text_end"))
		t->sched_end = addr;
	else if (!strcmp(name, "__switch_to_asm"))
		t->switch_to_asm = addr;
	return 0;
}

static struct collector_kernel_text kernel_text_read(void)
{
	struct collector_kernel_text t = { 0 };

	kallsyms_read("/proc/kallsyms", kernel_text_visit, &t);
	return t;
}

/* Why the __sched frames of kernel stacks walked off-CPU are not put back
 * here; NULL if they are. */
static const char *no_sched_frames_reason(bool raw_tp, const struct kernel_features *kernel,
					  const struct collector_kernel_text *text)
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

void collector_features_probe(const struct collector_options *opts, bool raw_tp,
			      struct collector_features *ret)
{
	struct kernel_features kernel = kernel_features();

	memset(ret, 0, sizeof(*ret));
	ret->text = kernel_text_read();
	ret->no_defer_why = no_defer_reason(opts, raw_tp, &kernel);
	ret->no_rseq_why = opts->walk_return != COLLECTOR_RETURN_TASK_WORK
				   ? no_rseq_reason(ret->no_defer_why, &kernel)
				   : NULL;
	ret->rseq_loaded = opts->walk_return != COLLECTOR_RETURN_TASK_WORK && !ret->no_rseq_why;
	ret->rseq_on = ret->rseq_loaded && opts->walk_return == COLLECTOR_RETURN_RSEQ;
	ret->runq_clock = kernel.runq_clock && !raw_tp;
	ret->no_pass_why = no_pass_reason(raw_tp, &kernel);
	ret->vma_iter = kernel.vma_iter;
	ret->no_kstack_cache_why = no_kstack_cache_reason(opts, raw_tp, &kernel, ret->text.start);
	ret->no_sched_frames_why = no_sched_frames_reason(raw_tp, &kernel, &ret->text);
	ret->no_cgroup_events_why = no_cgroup_events_reason(&kernel);
}

const char *collector_runq_clock(const struct collector *c)
{
	return c->runq_clock ? "sched_info" : "sched_waking";
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
