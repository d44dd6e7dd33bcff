/*
 * collector_drain: emptying the double-buffered maps at each drain (the
 * flip of epoch, then the old buffer's maps), the task iterators that move
 * the threads' banks of exact totals into them, run the in-progress pass
 * and take the blocked snapshot, and the reads of the maps that are not
 * drained (counters, waker stacks, file names).
 */
#include "collector_internal.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"

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
static int empty_map(int fd, size_t key_size, size_t value_size, void **items, size_t *n)
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

int collector_waker_stack(struct collector *c, uint64_t hash, struct offcpu_stack *ret)
{
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.waker_stacks), &hash, ret) < 0)
		return -ENOENT;
	return 0;
}

unsigned collector_python_minor(struct collector *c, uint32_t tgid)
{
	struct offcpu_python_proc pp;

	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.python_procs), &tgid, &pp) < 0)
		return 0;
	return pp.layout.minor;
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
	       "empty_percpu_map's records: the value right after the key");

/*
 * Empties a per-CPU map into records of record_size bytes: the key, then at
 * key_size the value (value_size per CPU) summed over the CPUs by add().
 */
static int empty_percpu_map(struct collector *c, int fd, size_t key_size, size_t value_size,
			    size_t record_size, void (*add)(void *sum, const void *cpu), void **ret,
			    size_t *ret_n)
{
	size_t stride = key_size + value_size * c->ncpus, n = 0;
	char *items, *out;
	int r;

	*ret = NULL;
	*ret_n = 0;
	r = empty_map(fd, key_size, value_size * c->ncpus, (void **)&items, &n);
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
	r = empty_map(bpf_map__fd(agg), sizeof(struct offcpu_key), sizeof(struct offcpu_value),
		      &rows, &ret->n_rows);
	ret->rows = rows;
	if (r == 0) {
		r = empty_map(bpf_map__fd(stk), sizeof(uint64_t), sizeof(struct offcpu_stack),
			      &stacks, &ret->n_stacks);
		ret->stacks = stacks;
	}
	if (r == 0) {
		r = empty_map(bpf_map__fd(chn), sizeof(uint64_t), sizeof(struct offcpu_chain),
			      &chains, &ret->n_chains);
		ret->chains = chains;
	}
	if (r == 0)
		r = empty_percpu_map(c, bpf_map__fd(hst), sizeof(struct offcpu_hist_key),
				     sizeof(uint64_t), sizeof(struct collector_hist), count_sum,
				     (void **)&ret->hists, &ret->n_hists);
	if (r == 0)
		r = empty_percpu_map(c, bpf_map__fd(tot), sizeof(struct offcpu_key),
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
