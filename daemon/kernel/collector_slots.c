/*
 * collector_slots: the filter slots captures occupy (published in the
 * programs' .bss and the id and cgroup filter maps), and each slot's
 * request uprobes and their latency rows.
 */
#include "collector_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"

/* Adds or removes slot's bit in key's slot mask in a filter map. */
static int filter_key_update(int map_fd, const void *key, unsigned slot, bool add)
{
	uint32_t mask = 0;

	bpf_map_lookup_elem(map_fd, key, &mask);
	if (add)
		mask |= 1u << slot;
	else
		mask &= ~(1u << slot);
	if (mask) {
		if (bpf_map_update_elem(map_fd, key, &mask, BPF_ANY) < 0)
			return -errno;
	} else {
		bpf_map_delete_elem(map_fd, key);
	}
	return 0;
}

/* Adds or removes slot's bit in the id -> slot mask filter map. */
static int filter_ids_update(int map_fd, const uint32_t *ids, size_t n, unsigned slot, bool add)
{
	for (size_t i = 0; i < n; i++) {
		int r = filter_key_update(map_fd, &ids[i], slot, add);

		if (r < 0)
			return r;
	}
	return 0;
}

/* The same for the cgroup id -> slot mask map and f's cgroups. */
static int filter_cgroups_update(int map_fd, const struct collector_filter *f, unsigned slot,
				 bool add)
{
	for (size_t i = 0; i < f->n_cgroups; i++) {
		int r = filter_key_update(map_fd, &f->cgroups[i].id, slot, add);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The levels (bit L) of f's cgroups into *ret: 0 where f has no cgroup
 * filter, none given or the root among them (every thread is in its
 * subtree). Returns 0, -E2BIG or -EINVAL as collector_slot_add() says.
 */
static int filter_cgroup_levels(const struct collector_filter *f, uint32_t *ret)
{
	uint32_t levels = 0;
	bool root = false;

	if (f->n_cgroups > COLLECTOR_MAX_CGROUPS)
		return -E2BIG;
	for (size_t i = 0; i < f->n_cgroups; i++) {
		if (f->cgroups[i].level >= OFFCPU_CGROUP_FILTER_LEVELS)
			return -EINVAL;
		root |= f->cgroups[i].level == 0;
		levels |= 1u << f->cgroups[i].level;
	}
	*ret = root ? 0 : levels;
	return 0;
}

/* The programs' cgroup_filter_levels: the union of the slots' levels. */
static void cgroup_levels_publish(struct collector *c)
{
	uint32_t levels = 0;

	for (unsigned slot = 0; slot < OFFCPU_MAX_SLOTS; slot++)
		levels |= c->cgroup_levels[slot];
	__atomic_store_n(&c->skel->bss->cgroup_filter_levels, levels, __ATOMIC_SEQ_CST);
}

/* Removes slot from every key in a filter map (keys are not kept here):
 * ids (__u32) or cgroup ids (__u64), whichever the map's key is. */
static void filter_ids_clear(int map_fd, unsigned slot)
{
	uint64_t key = 0, next = 0;
	uint32_t mask;
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
	int cgroup_fd = bpf_map__fd(c->skel->maps.filter_cgroups);
	uint32_t bit, groups, levels;
	struct offcpu_bpf__bss *bss;
	unsigned slot;
	bool waker;
	int r;

	for (slot = 0; slot < OFFCPU_MAX_SLOTS; slot++)
		if (!(c->used_mask & (1u << slot)))
			break;
	if (slot == OFFCPU_MAX_SLOTS)
		return -EBUSY;
	if (f->follow_children && (c->no_follow_why || !f->n_tgids))
		return -EOPNOTSUPP;
	r = filter_cgroup_levels(f, &levels);
	if (r < 0)
		return r;
	groups = collector_filter_groups(f);
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++)
		if ((groups & (1u << g)) && collector_group_load(c, g, NULL) < 0)
			return -EOPNOTSUPP;
	bit = 1u << slot;
	waker = f->kind == OFFCPU_KIND_WAKEUP || f->kind == OFFCPU_KIND_OFFWAKE ||
		f->kind == OFFCPU_KIND_CHAIN;
	r = collector_sched_links_update(c, c->used_mask | bit, c->waker_slots | (waker ? bit : 0));
	if (r < 0)
		return r;
	if (f->kind == OFFCPU_KIND_FILEIO && !c->fileio_slots) {
		r = collector_fileio_attach(c);
		if (r < 0) {
			collector_sched_links_update(c, c->used_mask, c->waker_slots);
			return r;
		}
	}

	if (c->follow_scrub & bit) {
		filter_ids_clear(tgid_fd, slot);
		c->follow_scrub &= ~bit;
	}
	r = filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, true);
	if (r == 0)
		r = filter_ids_update(tid_fd, f->tids, f->n_tids, slot, true);
	if (r == 0 && levels)
		r = filter_cgroups_update(cgroup_fd, f, slot, true);
	if (r < 0) {
		filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, false);
		filter_ids_update(tid_fd, f->tids, f->n_tids, slot, false);
		if (levels)
			filter_cgroups_update(cgroup_fd, f, slot, false);
		if (!c->fileio_slots)
			collector_fileio_detach(c);
		collector_sched_links_update(c, c->used_mask, c->waker_slots);
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
	/* Levels only grow here: a slot still on keeps its own. */
	c->cgroup_levels[slot] = levels;
	__atomic_fetch_or(&bss->cgroup_filter_levels, levels, __ATOMIC_SEQ_CST);
	mask_set(&bss->cgroup_filter_slots, bit, levels != 0);
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
	/* Its tgids are in: their forks may join from here. */
	mask_set(&bss->follow_slots, bit, f->follow_children && f->n_tgids);
	if (f->follow_children)
		c->follow_scrub |= bit;
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

static int slot_probe_attach(struct collector *c, unsigned slot, struct bpf_program *prog, bool ret,
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
	skel = collector_group_skel(c, COLLECTOR_GROUP_REQUESTS);
	r = slot_probe_attach(c, slot, skel->progs.request_exit, true, cookie, pid, path, offset);
	if (r == 0)
		r = slot_probe_attach(c, slot, skel->progs.request_enter, false, cookie, pid, path,
				      offset);
	return r;
}

/* Visits slot's rows of the request latency map; deletes them if asked. */
static void slot_latency_rows(struct collector *c, unsigned slot, bool delete,
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
	slot_latency_rows(c, slot, false, ret);
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

int collector_slot_cgroup_add(struct collector *c, unsigned slot, const struct collector_cgroup *cg)
{
	uint32_t bit = 1u << slot;

	if (slot >= OFFCPU_MAX_SLOTS || !(c->used_mask & bit) || !c->cgroup_levels[slot] ||
	    !cg->level || cg->level >= OFFCPU_CGROUP_FILTER_LEVELS)
		return -EINVAL;
	/* The entry first, then its level: the kernel looks only at levels
	 * it is told of. */
	if (filter_key_update(bpf_map__fd(c->skel->maps.filter_cgroups), &cg->id, slot, true) < 0)
		return -ENOSPC;
	c->cgroup_levels[slot] |= 1u << cg->level;
	__atomic_fetch_or(&c->skel->bss->cgroup_filter_levels, 1u << cg->level, __ATOMIC_SEQ_CST);
	return 0;
}

void collector_slot_release(struct collector *c, unsigned slot)
{
	if (slot >= OFFCPU_MAX_SLOTS || !(c->used_mask & (1u << slot)))
		return;
	collector_slot_deactivate(c, slot);
	collector_request_detach(c, slot);
	slot_latency_rows(c, slot, true, NULL);
	/* No fork adds the slot's bit once this is clear. */
	mask_set(&c->skel->bss->follow_slots, 1u << slot, false);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tgids), slot);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tids), slot);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_cgroups), slot);
	mask_set(&c->skel->bss->cgroup_filter_slots, 1u << slot, false);
	c->cgroup_levels[slot] = 0;
	cgroup_levels_publish(c);
	c->used_mask &= ~(1u << slot);
	if (c->fileio_slots & (1u << slot)) {
		c->fileio_slots &= ~(1u << slot);
		if (!c->fileio_slots)
			collector_fileio_detach(c);
	}
	c->waker_slots &= ~(1u << slot);
	collector_sched_links_update(c, c->used_mask, c->waker_slots);
}

unsigned collector_slots_active(const struct collector *c)
{
	return __builtin_popcount(c->used_mask);
}
