/* profile: see profile.h. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "hashtab.h"
#include "thread_state.h"

struct profile_value {
	uint64_t sum_ns;
	uint64_t count;
	char comm[OFFCPU_COMM_LEN];
	char *ustack;
	char *kstack;
};

struct profile {
	struct hashtab *rows; /* struct offcpu_key (slot 0) -> struct profile_value */
	uint64_t total_ns;
};

int profile_new(struct profile **ret)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p || hashtab_new(sizeof(struct offcpu_key), sizeof(struct profile_value), &p->rows)) {
		free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

void profile_free(struct profile *p)
{
	struct profile_value *v;
	size_t pos = 0;

	if (!p)
		return;
	while (hashtab_next(p->rows, &pos, NULL, (void **)&v)) {
		free(v->ustack);
		free(v->kstack);
	}
	hashtab_free(p->rows);
	free(p);
}

int profile_add(struct profile *p, const struct drain_row *row)
{
	struct offcpu_key key = row->key;
	struct profile_value *v;
	bool created;

	key.slot = 0;
	v = hashtab_put(p->rows, &key, &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		memcpy(v->comm, row->value.comm, sizeof(v->comm));
		v->ustack = strdup(row->ustack);
		v->kstack = strdup(row->kstack);
		if (!v->ustack || !v->kstack)
			return -ENOMEM; /* the row stays, named "" by the readers */
	}
	v->sum_ns += row->value.sum_ns;
	v->count += row->value.count;
	p->total_ns += row->value.sum_ns;
	return 0;
}

uint64_t profile_total_ns(const struct profile *p)
{
	return p->total_ns;
}

size_t profile_rows(const struct profile *p)
{
	return hashtab_count(p->rows);
}

char *profile_folded(const struct profile *p, bool want_user, bool want_kernel)
{
	struct profile_value *v;
	struct folded *f;
	size_t pos = 0;
	char *text = NULL;

	if (folded_new(&f) < 0)
		return NULL;
	while (hashtab_next(p->rows, &pos, NULL, (void **)&v))
		if (folded_add(f, v->comm, v->ustack ? v->ustack : "", v->kstack ? v->kstack : "",
			       want_user, want_kernel, v->sum_ns) < 0)
			goto out;
	text = folded_text(f, 1000);
out:
	folded_free(f);
	return text;
}

/* Splits "a;b;c" into a NULL-terminated array sharing one copy of the text. */
static const char **frames_split(const char *joined, size_t *ret_n)
{
	size_t n = *joined ? 1 : 0, len = strlen(joined);
	const char **frames;
	char *copy;

	for (const char *c = joined; *c; c++)
		n += *c == ';';
	frames = malloc((n + 1) * sizeof(*frames) + len + 1);
	if (!frames)
		return NULL;
	copy = (char *)(frames + n + 1);
	memcpy(copy, joined, len + 1);
	for (size_t i = 0; i < n; i++) {
		frames[i] = copy;
		copy += strcspn(copy, ";");
		*copy++ = '\0';
	}
	frames[n] = NULL;
	*ret_n = n;
	return frames;
}

int profile_samples(const struct profile *p, struct proto_sample **ret, size_t *ret_n)
{
	size_t n = hashtab_count(p->rows), i = 0, pos = 0;
	struct proto_sample *samples = calloc(n ? n : 1, sizeof(*samples));
	const struct offcpu_key *key;
	struct profile_value *v;

	if (!samples)
		return -ENOMEM;
	while (hashtab_next(p->rows, &pos, (const void **)&key, (void **)&v)) {
		struct proto_sample *s = &samples[i++];

		s->comm = v->comm;
		s->tgid = key->tgid;
		s->pid = key->pid;
		s->state = thread_state_name(key->state);
		s->value_ns = v->sum_ns;
		s->count = v->count;
		s->ustack = frames_split(v->ustack ? v->ustack : "", &s->n_ustack);
		s->kstack = frames_split(v->kstack ? v->kstack : "", &s->n_kstack);
		if (!s->ustack || !s->kstack) {
			profile_samples_free(samples, i);
			return -ENOMEM;
		}
	}
	*ret = samples;
	*ret_n = n;
	return 0;
}

void profile_samples_free(struct proto_sample *samples, size_t n)
{
	if (!samples)
		return;
	for (size_t i = 0; i < n; i++) {
		free((void *)samples[i].ustack);
		free((void *)samples[i].kstack);
	}
	free(samples);
}
