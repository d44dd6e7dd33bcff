/*
 * collector_slots: the filter slots captures occupy (published in the
 * programs' .bss and the id filter maps), and each slot's request uprobes
 * and their latency rows.
 */
#include "collector_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"

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

	r = filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, true);
	if (r == 0)
		r = filter_ids_update(tid_fd, f->tids, f->n_tids, slot, true);
	if (r < 0) {
		filter_ids_update(tgid_fd, f->tgids, f->n_tgids, slot, false);
		filter_ids_update(tid_fd, f->tids, f->n_tids, slot, false);
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

void collector_slot_release(struct collector *c, unsigned slot)
{
	if (slot >= OFFCPU_MAX_SLOTS || !(c->used_mask & (1u << slot)))
		return;
	collector_slot_deactivate(c, slot);
	collector_request_detach(c, slot);
	slot_latency_rows(c, slot, true, NULL);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tgids), slot);
	filter_ids_clear(bpf_map__fd(c->skel->maps.filter_tids), slot);
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
