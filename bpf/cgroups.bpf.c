// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cgroup v2: the filter of slots limited to subtrees (filter_cgroups,
 * which task_filter() asks only where such a slot matched), and the
 * events through which user space learns the hierarchy's paths: the
 * cgroup_mkdir, cgroup_rename and cgroup_rmdir tracepoints of the default
 * hierarchy, as struct offcpu_cgroup_event in the cgroup_events ring. The
 * events' programs are the core's, attached from the start where the
 * kernel lets them (daemon/kernel/collector_cgroups.c).
 */
#include "offcpu.bpf.h"

/* Read by user space at each drain; a cgroup is made rarely. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} cgroup_events SEC(".maps");

static __always_inline __u32 cgroup_filter_lookup(__u64 id)
{
	__u32 *allowed = bpf_map_lookup_elem(&filter_cgroups, &id);

	return allowed ? *allowed : 0;
}

/*
 * The slots of the filter_cgroups entries that hold the current thread's
 * cgroup: its ancestor at each level some entry is at. A global function:
 * verified once, and out of the way of the callers' paths that need none.
 */
__noinline int current_cgroup_slots(void)
{
	__u32 levels = cgroup_filter_levels, found = 0;

	for (__u32 l = 1; l < OFFCPU_CGROUP_FILTER_LEVELS; l++) {
		if (!(levels >> l))
			break;
		/* 0 where the thread's cgroup is above level l: no entry */
		if (levels & (1u << l))
			found |= cgroup_filter_lookup(bpf_get_current_ancestor_cgroup_id(l));
	}
	return found;
}

/* Kernels before 6.0 kept the ancestors' ids rather than the ancestors. */
struct cgroup___ids {
	__u64 ancestor_ids[0];
} __attribute__((preserve_access_index));

/*
 * current_cgroup_slots() of a thread that is not current, in the cgroup at
 * address cgrp (its css_set's dfl_cgrp), read with probes: a scalar, as a
 * global function cannot take a kernel pointer.
 */
__noinline int cgroup_slots_of(__u64 cgrp)
{
	__u32 levels = cgroup_filter_levels, found = 0;
	struct cgroup *cg = (struct cgroup *)cgrp;
	bool ids = false;
	__u64 base, id;
	int level;

	if (!cg)
		return 0;
	level = BPF_CORE_READ(cg, level);
	if (bpf_core_field_exists(cg->ancestors)) {
		base = cgrp + bpf_core_field_offset(cg->ancestors);
	} else {
		ids = true;
		base = cgrp + bpf_core_field_offset(((struct cgroup___ids *)cg)->ancestor_ids);
	}
	for (__u32 l = 1; l < OFFCPU_CGROUP_FILTER_LEVELS; l++) {
		if (!(levels >> l) || (int)l > level)
			break;
		if (!(levels & (1u << l)))
			continue;
		if (bpf_probe_read_kernel(&id, sizeof(id), (void *)(base + l * sizeof(id))))
			continue;
		if (!ids)
			id = id ? BPF_CORE_READ((struct cgroup *)id, kn, id) : 0;
		found |= cgroup_filter_lookup(id);
	}
	return found;
}

/* Queues the event of cgrp (at path) if it is of the default hierarchy. */
static __always_inline void cgroup_event(struct cgroup *cgrp, const char *path, __u32 type,
					 bool btf)
{
	struct offcpu_cgroup_event *ev;

	/* cgrp_dfl_root's hierarchy id is 0; v1 hierarchies' are 1 and up */
	if (btf ? cgrp->root->hierarchy_id : BPF_CORE_READ(cgrp, root, hierarchy_id))
		return;
	ev = bpf_ringbuf_reserve(&cgroup_events, sizeof(*ev), 0);
	if (!ev) {
		count(OFFCPU_CNT_CGROUP_EVENTS_LOST);
		return;
	}
	ev->id = btf ? cgrp->kn->id : BPF_CORE_READ(cgrp, kn, id);
	ev->type = type;
	ev->level = btf ? cgrp->level : BPF_CORE_READ(cgrp, level);
	if (bpf_probe_read_kernel_str(ev->path, sizeof(ev->path), path) <= 0) {
		bpf_ringbuf_discard(ev, 0); /* a nameless event is no use */
		count(OFFCPU_CNT_CGROUP_EVENTS_LOST);
		return;
	}
	bpf_ringbuf_submit(ev, 0);
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(cgroup_mkdir_btf, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_MKDIR, true);
	return 0;
}

SEC("tp_btf/cgroup_rename")
int BPF_PROG(cgroup_rename_btf, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_RENAME, true);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir_btf, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_RMDIR, true);
	return 0;
}

SEC("raw_tp/cgroup_mkdir")
int BPF_PROG(cgroup_mkdir_raw, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_MKDIR, false);
	return 0;
}

SEC("raw_tp/cgroup_rename")
int BPF_PROG(cgroup_rename_raw, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_RENAME, false);
	return 0;
}

SEC("raw_tp/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir_raw, struct cgroup *cgrp, const char *path)
{
	cgroup_event(cgrp, path, OFFCPU_CGROUP_RMDIR, false);
	return 0;
}
