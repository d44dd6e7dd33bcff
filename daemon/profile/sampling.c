/* sampling: see sampling.h. */
#include "sampling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"

/* What rows are grouped by: their key without stacks, chain and flags
 * (the cgroup stays: a thread's totals are kept per cgroup, as its rows). */
static struct offcpu_key group_of(const struct offcpu_key *k)
{
	return (struct offcpu_key){ .slot = k->slot,
				    .tgid = k->tgid,
				    .pid = k->pid,
				    .state = k->state,
				    .kind = k->kind,
				    .cgroup = k->cgroup };
}

struct group {
	struct offcpu_total total;  /* this drain's and what earlier ones carried */
	uint64_t weight_ns;	    /* the samples' weight, summed */
	uint64_t short_weight_ns;   /* of it, samples of short blocks: the estimate */
	uint64_t seen_ns, seen_short_ns, seen_long_ns; /* of these, in rows scaled so far */
	uint64_t given_ns, given_n; /* what those rows were given */
	uint64_t given_short_ns, given_long_ns;
};

/* Share of whole that part's cumulative weight gives, rounded: rows get
 * the differences, so they add up to whole exactly. */
static uint64_t scaled(uint64_t whole, uint64_t part, uint64_t of)
{
	if (!of)
		return 0;
	return (uint64_t)(((unsigned __int128)whole * part + of / 2) / of);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void total_add(struct offcpu_total *a, const struct offcpu_total *b)
{
	a->sum_ns += b->sum_ns;
	a->count += b->count;
	a->short_ns += b->short_ns;
	a->samples += b->samples;
	if (!a->comm[0])
		memcpy(a->comm, b->comm, sizeof(a->comm));
}

/* Appends group key's total t to carry. 0 or -ENOMEM. */
static int carry_push(struct sampling_carry *carry, const struct offcpu_key *key,
		      const struct offcpu_total *t)
{
	if (carry->n == carry->cap) {
		size_t cap = carry->cap ? 2 * carry->cap : 64;
		struct collector_total *grown = realloc(carry->groups, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		carry->groups = grown;
		carry->cap = cap;
	}
	carry->groups[carry->n].key = *key;
	carry->groups[carry->n].total = *t;
	carry->n++;
	return 0;
}

/* A group's unsampled row: the time t less what its sampled rows were given. */
static void unsampled_row(struct collector_row *u, const struct offcpu_key *key,
			  const struct offcpu_total *t, uint64_t given_ns, uint64_t given_n)
{
	memset(u, 0, sizeof(*u));
	u->key = *key;
	u->key.flags = OFFCPU_KEY_UNSAMPLED;
	u->value.sum_ns = t->sum_ns - given_ns;
	u->value.count = t->count - min_u64(given_n, t->count);
	memcpy(u->value.comm, t->comm, sizeof(u->value.comm));
}

/*
 * A sampled row's time: its long blocks at their true length (never more,
 * summed over the group's rows, than the group's long time: a late sample
 * could repeat one), and its short samples' share of the group's exact
 * short time. Its count, the group's count by the row's share of weight.
 */
static void scale_row(struct group *g, struct offcpu_value *v)
{
	const struct offcpu_total *t = &g->total;
	uint64_t row_short = min_u64(v->short_ns, v->sum_ns), short_ns, long_ns, count;

	g->seen_ns += v->sum_ns;
	g->seen_short_ns += row_short;
	g->seen_long_ns += v->sum_ns - row_short;
	short_ns = scaled(t->short_ns, g->seen_short_ns, g->short_weight_ns) - g->given_short_ns;
	long_ns = min_u64(g->seen_long_ns, t->sum_ns - t->short_ns) - g->given_long_ns;
	count = scaled(t->count, g->seen_ns, g->weight_ns) - g->given_n;
	g->given_short_ns += short_ns;
	g->given_long_ns += long_ns;
	g->given_ns += short_ns + long_ns;
	g->given_n += count;
	v->sum_ns = short_ns + long_ns;
	v->count = count;
	v->short_ns = 0;
}

int sampling_calibrate(struct collector_row **rows, size_t *n_rows,
		       const struct collector_total *totals, size_t n_totals,
		       struct sampling_carry *carry, struct sampling_summary ret[OFFCPU_MAX_SLOTS])
{
	struct collector_row *r = *rows, *grown;
	size_t n = *n_rows, kept = 0, extra = 0, pos;
	const struct offcpu_key *key;
	struct hashtab *groups;
	struct group *g;
	int e;

	if (!n_totals && !(carry && carry->n))
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
		total_add(&g->total, &totals[i].total);
		sum->blocks += totals[i].total.count;
		sum->samples += totals[i].total.samples;
		sum->sum_ns += totals[i].total.sum_ns;
		sum->short_ns += totals[i].total.short_ns;
	}
	/* Carried time joins its group (counted in the summary of its own drain):
	 * this drain's samples of the group stand for it too. */
	for (size_t i = 0; carry && i < carry->n; i++) {
		g = hashtab_put(groups, &carry->groups[i].key, NULL);
		if (!g) {
			hashtab_free(groups);
			return -ENOMEM;
		}
		total_add(&g->total, &carry->groups[i].total);
	}
	for (size_t i = 0; i < n; i++) {
		struct offcpu_key k = group_of(&r[i].key);

		if (!(r[i].key.flags & OFFCPU_KEY_SAMPLED))
			continue;
		g = hashtab_get(groups, &k);
		if (g) {
			g->weight_ns += r[i].value.sum_ns;
			g->short_weight_ns += min_u64(r[i].value.short_ns, r[i].value.sum_ns);
		}
	}
	/* Each group may need a row for the time its samples do not stand for:
	 * all of it, or long blocks whose samples were lost. */
	extra = hashtab_count(groups);
	grown = realloc(r, (n + extra ? n + extra : 1) * sizeof(*r));
	if (!grown) {
		hashtab_free(groups);
		return -ENOMEM;
	}
	r = grown;
	if (carry)
		carry->n = 0; /* all of it is in groups now; nothing fails from here */
	for (size_t i = 0; i < n; i++) {
		struct offcpu_key k = group_of(&r[i].key);

		if (r[i].key.flags & OFFCPU_KEY_SAMPLED) {
			g = hashtab_get(groups, &k);
			if (!g || !g->weight_ns) {
				ret[k.slot % OFFCPU_MAX_SLOTS].late_rows++;
				continue;
			}
			scale_row(g, &r[i].value);
			if (!r[i].value.sum_ns && !r[i].value.count)
				continue;
		}
		r[kept++] = r[i];
	}
	pos = 0;
	while (hashtab_next(groups, &pos, (const void **)&key, (void **)&g)) {
		if (g->given_ns >= g->total.sum_ns)
			continue;
		/* No sample of the group in this drain: a later one's may stand for
		 * it. Its row comes now only if it cannot be carried. */
		if (carry && !g->weight_ns && carry_push(carry, key, &g->total) == 0)
			continue;
		unsampled_row(&r[kept], key, &g->total, g->given_ns, g->given_n);
		ret[key->slot % OFFCPU_MAX_SLOTS].unsampled_ns += r[kept++].value.sum_ns;
	}
	hashtab_free(groups);
	*rows = r;
	*n_rows = kept;
	return 0;
}

size_t sampling_carry_take(struct sampling_carry *carry, uint32_t slots,
			   void (*row)(void *arg, const struct collector_row *r), void *arg)
{
	size_t kept = 0, taken = 0;

	for (size_t i = 0; i < carry->n; i++) {
		const struct collector_total *c = &carry->groups[i];
		struct collector_row u;

		if (!(slots & (1u << (c->key.slot % OFFCPU_MAX_SLOTS)))) {
			carry->groups[kept++] = *c;
			continue;
		}
		taken++;
		if (row) {
			unsampled_row(&u, &c->key, &c->total, 0, 0);
			row(arg, &u);
		}
	}
	carry->n = kept;
	return taken;
}

void sampling_carry_release(struct sampling_carry *carry)
{
	free(carry->groups);
	memset(carry, 0, sizeof(*carry));
}

void sampling_summary_add(struct sampling_summary *a, const struct sampling_summary *b)
{
	a->blocks += b->blocks;
	a->samples += b->samples;
	a->sum_ns += b->sum_ns;
	a->short_ns += b->short_ns;
	a->late_rows += b->late_rows;
	a->unsampled_ns += b->unsampled_ns;
}

double sampling_unsampled_pct(const struct sampling_summary *s)
{
	return s->sum_ns ? 100.0 * (double)s->unsampled_ns / (double)s->sum_ns : 0;
}

double sampling_relative_error(uint64_t period_ns, uint64_t short_ns, double share)
{
	if (!period_ns || !short_ns || share <= 0)
		return 0;
	return sqrt((double)period_ns / (share * (double)short_ns));
}
