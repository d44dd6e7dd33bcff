/* sampling: see sampling.h. */
#include "sampling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

/* What rows are grouped by: their key without stacks, chain and flags. */
static struct offcpu_key group_of(const struct offcpu_key *k)
{
	return (struct offcpu_key){
		.slot = k->slot, .tgid = k->tgid, .pid = k->pid, .state = k->state, .kind = k->kind
	};
}

struct group {
	const struct offcpu_total *total;
	uint64_t weight_ns;	     /* the samples' estimated time, summed */
	uint64_t seen_ns;	     /* of it, in rows scaled so far */
	uint64_t given_ns, given_n;  /* what those rows were given */
};

/* Share of whole that part's cumulative weight gives, rounded: rows get
 * the differences, so they add up to whole exactly. */
static uint64_t scaled(uint64_t whole, uint64_t part, uint64_t of)
{
	return (uint64_t)(((unsigned __int128)whole * part + of / 2) / of);
}

int sampling_calibrate(struct collector_row **rows, size_t *n_rows,
		       const struct collector_total *totals, size_t n_totals,
		       struct sampling_summary ret[OFFCPU_MAX_SLOTS])
{
	struct collector_row *r = *rows, *grown;
	size_t n = *n_rows, kept = 0, extra = 0, pos;
	const struct offcpu_key *key;
	struct hashtab *groups;
	struct group *g;
	int e;

	if (!n_totals)
		return 0;
	e = hashtab_new(sizeof(struct offcpu_key), sizeof(struct group), &groups);
	if (e < 0)
		return e;
	for (size_t i = 0; i < n_totals; i++) {
		struct offcpu_key k = group_of(&totals[i].key);
		struct sampling_summary *sum = &ret[k.slot % OFFCPU_MAX_SLOTS];

		g = hashtab_put(groups, &k, NULL);
		if (!g) {
			hashtab_free(groups);
			return -ENOMEM;
		}
		g->total = &totals[i].total;
		sum->blocks += g->total->count;
		sum->samples += g->total->samples;
		sum->sum_ns += g->total->sum_ns;
		sum->short_ns += g->total->short_ns;
	}
	for (size_t i = 0; i < n; i++) {
		struct offcpu_key k = group_of(&r[i].key);

		if (!(r[i].key.flags & OFFCPU_KEY_SAMPLED))
			continue;
		g = hashtab_get(groups, &k);
		if (g)
			g->weight_ns += r[i].value.sum_ns;
	}
	pos = 0;
	while (hashtab_next(groups, &pos, (const void **)&key, (void **)&g))
		extra += !g->weight_ns; /* a row each, appended below */
	grown = realloc(r, (n + extra ? n + extra : 1) * sizeof(*r));
	if (!grown) {
		hashtab_free(groups);
		return -ENOMEM;
	}
	r = grown;
	for (size_t i = 0; i < n; i++) {
		struct offcpu_key k = group_of(&r[i].key);
		uint64_t ns, count;

		if (r[i].key.flags & OFFCPU_KEY_SAMPLED) {
			g = hashtab_get(groups, &k);
			if (!g || !g->weight_ns) {
				ret[k.slot % OFFCPU_MAX_SLOTS].late_rows++;
				continue;
			}
			g->seen_ns += r[i].value.sum_ns;
			ns = scaled(g->total->sum_ns, g->seen_ns, g->weight_ns) - g->given_ns;
			count = scaled(g->total->count, g->seen_ns, g->weight_ns) - g->given_n;
			g->given_ns += ns;
			g->given_n += count;
			if (!ns && !count)
				continue;
			r[i].value.sum_ns = ns;
			r[i].value.count = count;
		}
		r[kept++] = r[i];
	}
	pos = 0;
	while (hashtab_next(groups, &pos, (const void **)&key, (void **)&g)) {
		struct collector_row *u;

		if (g->weight_ns)
			continue;
		u = &r[kept++];
		memset(u, 0, sizeof(*u));
		u->key = *key;
		u->key.flags = OFFCPU_KEY_UNSAMPLED;
		u->value.sum_ns = g->total->sum_ns;
		u->value.count = g->total->count;
		memcpy(u->value.comm, g->total->comm, sizeof(u->value.comm));
	}
	hashtab_free(groups);
	*rows = r;
	*n_rows = kept;
	return 0;
}

void sampling_summary_add(struct sampling_summary *a, const struct sampling_summary *b)
{
	a->blocks += b->blocks;
	a->samples += b->samples;
	a->sum_ns += b->sum_ns;
	a->short_ns += b->short_ns;
	a->late_rows += b->late_rows;
}

double sampling_relative_error(uint64_t period_ns, uint64_t short_ns, double share)
{
	if (!period_ns || !short_ns || share <= 0)
		return 0;
	return sqrt((double)period_ns / (share * (double)short_ns));
}
