/* profile: see profile.h. */
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "cgroup_identity.h"
#include "frame.h"
#include "hashtab.h"
#include "thread_state.h"

struct profile_value {
	uint64_t sum_ns;
	uint64_t count;
	uint64_t bytes;
	char comm[OFFCPU_COMM_LEN];
	const char *ustack; /* the profile's names; NULL if out of memory */
	const char *kstack;
	const char *chain;
	const char *cgroup;
	uint32_t ustack_flags; /* of the first row: rows with the same names were walked alike */
	uint32_t ns_pid;       /* of the first row: a process's, as its tgid */
};

struct profile {
	struct hashtab *rows; /* struct offcpu_key (slot 0) -> struct profile_value */
	/* name_hash() -> char *: one copy of each stack name, however many
	 * threads' rows have it (a window's store write sees one pointer). */
	struct hashtab *names;
	uint64_t total_ns;
};

int profile_new(struct profile **ret)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p || hashtab_new(sizeof(struct offcpu_key), sizeof(struct profile_value), &p->rows)) {
		free(p);
		return -ENOMEM;
	}
	if (hashtab_new(sizeof(uint64_t), sizeof(char *), &p->names)) {
		hashtab_free(p->rows);
		free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

void profile_free(struct profile *p)
{
	char **name;
	size_t pos = 0;

	if (!p)
		return;
	while (hashtab_next(p->names, &pos, NULL, (void **)&name))
		free(*name);
	hashtab_free(p->names);
	hashtab_free(p->rows);
	free(p);
}

/* 0 for "": the same convention as the kernel's "no stack". */
static uint64_t name_hash(const char *s)
{
	uint64_t h;

	if (!*s)
		return 0;
	h = hashtab_hash(s, strlen(s));
	return h ? h : 1;
}

/* The profile's copy of name s, whose name_hash() is hash; NULL if out of
 * memory. Names are told apart by their hash, as rows are. */
static const char *name_get(struct profile *p, uint64_t hash, const char *s)
{
	char **slot;

	if (!hash)
		return "";
	slot = hashtab_put(p->names, &hash, NULL);
	if (!slot)
		return NULL;
	if (!*slot)
		*slot = strdup(s);
	return *slot;
}

/*
 * Rows are keyed by names, not by the kernel's address-stack hashes: two
 * address stacks that name the same frames (a different return address in
 * the same function) are one row, in JSON as in folded output and in the
 * store.
 */
int profile_add_row(struct profile *p, const struct profile_row *row)
{
	struct offcpu_key key = {
		.tgid = row->tgid,
		.pid = row->pid,
		.state = row->state,
		.kind = row->kind,
		.kstack = name_hash(row->kstack),
		.ustack = name_hash(row->ustack),
		.chain = name_hash(row->chain ? row->chain : ""),
		.cgroup = name_hash(row->cgroup ? row->cgroup : ""),
	};
	struct profile_value *v;
	bool created;

	v = hashtab_put(p->rows, &key, &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		snprintf(v->comm, sizeof(v->comm), "%s", row->comm);
		v->ustack = name_get(p, key.ustack, row->ustack);
		v->kstack = name_get(p, key.kstack, row->kstack);
		v->chain = name_get(p, key.chain, row->chain ? row->chain : "");
		v->cgroup = name_get(p, key.cgroup, row->cgroup ? row->cgroup : "");
		v->ustack_flags = row->ustack_flags;
		v->ns_pid = row->ns_pid;
		if (!v->ustack || !v->kstack || !v->chain || !v->cgroup)
			return -ENOMEM; /* the row stays, named "" by the readers */
	}
	v->sum_ns += row->sum_ns;
	v->count += row->count;
	v->bytes += row->bytes;
	p->total_ns += row->sum_ns;
	return 0;
}

int profile_add_row_without_lines(struct profile *p, const struct profile_row *row)
{
	struct profile_row r = *row;
	char *ustack = NULL, *chain = NULL;
	int e = 0;

	/* Only user frames have lines: the user stack and the wakers'. */
	if (frame_list_has_lines(row->ustack) &&
	    !(r.ustack = ustack = frame_list_strip_lines(row->ustack)))
		e = -ENOMEM;
	if (!e && row->chain && frame_list_has_lines(row->chain) &&
	    !(r.chain = chain = frame_list_strip_lines(row->chain)))
		e = -ENOMEM;
	if (!e)
		e = profile_add_row(p, &r);
	free(ustack);
	free(chain);
	return e;
}

static int profile_copy_row_without_lines(void *arg, const struct profile_row *row)
{
	return profile_add_row_without_lines(arg, row);
}

int profile_without_lines(const struct profile *p, struct profile **ret)
{
	struct profile *q;
	int r;

	r = profile_new(&q);
	if (r < 0)
		return r;
	r = profile_foreach(p, profile_copy_row_without_lines, q);
	if (r < 0) {
		profile_free(q);
		return r;
	}
	*ret = q;
	return 0;
}

int profile_add(struct profile *p, const struct drain_row *row)
{
	struct profile_row r = {
		.comm = row->value.comm,
		.tgid = row->key.tgid,
		.pid = row->key.pid,
		.state = row->key.state,
		.sum_ns = row->value.sum_ns,
		.count = row->value.count,
		.bytes = row->value.bytes,
		.ustack = row->ustack,
		.kstack = row->kstack,
		.kind = row->key.kind,
		.chain = row->chain,
		.ustack_flags = row->ustack_flags,
		.cgroup = row->cgroup,
		.ns_pid = row->ns_pid,
	};

	return profile_add_row(p, &r);
}

int profile_foreach(const struct profile *p, int (*fn)(void *arg, const struct profile_row *row),
		    void *arg)
{
	const struct offcpu_key *key;
	struct profile_value *v;
	size_t pos = 0;
	int r;

	while (hashtab_next(p->rows, &pos, (const void **)&key, (void **)&v)) {
		struct profile_row row = {
			.comm = v->comm,
			.tgid = key->tgid,
			.pid = key->pid,
			.state = key->state,
			.sum_ns = v->sum_ns,
			.count = v->count,
			.bytes = v->bytes,
			.ustack = v->ustack ? v->ustack : "",
			.kstack = v->kstack ? v->kstack : "",
			.kind = key->kind,
			.chain = v->chain ? v->chain : "",
			.ustack_flags = v->ustack_flags,
			.cgroup = v->cgroup ? v->cgroup : "",
			.ns_pid = v->ns_pid,
		};

		r = fn(arg, &row);
		if (r)
			return r;
	}
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

struct folded_args {
	struct folded *f;
	bool want_user, want_kernel;
	enum proto_metric metric;
	enum proto_group_by group_by;
	struct hashtab *process_names; /* PROCESS: tgid -> char[OFFCPU_COMM_LEN] */
};

/* A process's name: its main thread's, else the first of its threads seen. */
static int note_process_name(void *arg, const struct profile_row *row)
{
	char *name;
	bool created;

	name = hashtab_put(arg, &row->tgid, &created);
	if (!name)
		return -ENOMEM;
	if (created || row->pid == row->tgid)
		snprintf(name, OFFCPU_COMM_LEN, "%s", row->comm);
	return 0;
}

/* The root frame of row as a grouped by; NULL for none (by comm). */
static const char *group_frame(const struct folded_args *a, const struct profile_row *row,
			       char *buf, size_t size)
{
	struct cgroup_identity_names names;
	const char *name;

	switch (a->group_by) {
	case PROTO_GROUP_BY_PROCESS:
		name = hashtab_get(a->process_names, &row->tgid);
		snprintf(buf, size, "%s [%u]", name ? name : row->comm, row->tgid);
		return buf;
	case PROTO_GROUP_BY_UNIT:
		cgroup_identity_names(row->cgroup, &names);
		snprintf(buf, size, "%s", names.unit[0] ? names.unit : PROTO_NO_UNIT);
		return buf;
	case PROTO_GROUP_BY_CONTAINER:
		cgroup_identity_names(row->cgroup, &names);
		if (!names.container[0])
			return PROTO_NO_CONTAINER;
		snprintf(buf, size, "%s:%.12s", names.runtime, names.container);
		return buf;
	case PROTO_GROUP_BY_CGROUP:
		return row->cgroup && *row->cgroup ? row->cgroup : PROTO_NO_CGROUP;
	case PROTO_GROUP_BY_COMM:
		break;
	}
	return NULL;
}

static int add_folded(void *arg, const struct profile_row *row)
{
	struct folded_args *a = arg;
	char group[CGROUP_UNIT_SIZE + 32];

	struct folded_stack st = {
		.group = group_frame(a, row, group, sizeof(group)),
		.comm = row->comm,
		.ustack = row->ustack,
		.kstack = row->kstack,
		.kind = row->kind,
		.chain = row->chain,
		.state = row->state,
	};
	uint64_t value = a->metric == PROTO_METRIC_BYTES   ? row->bytes
			 : a->metric == PROTO_METRIC_COUNT ? row->count
							   : row->sum_ns;

	return folded_add(a->f, &st, a->want_user, a->want_kernel, value);
}

char *profile_folded(const struct profile *p, bool want_user, bool want_kernel,
		     enum proto_metric metric)
{
	return profile_folded_by(p, want_user, want_kernel, metric, PROTO_GROUP_BY_COMM);
}

char *profile_folded_by(const struct profile *p, bool want_user, bool want_kernel,
			enum proto_metric metric, enum proto_group_by group_by)
{
	struct folded_args a = { .want_user = want_user,
				 .want_kernel = want_kernel,
				 .metric = metric,
				 .group_by = group_by };
	char *text = NULL;

	if (group_by == PROTO_GROUP_BY_PROCESS &&
	    (hashtab_new(sizeof(uint32_t), OFFCPU_COMM_LEN, &a.process_names) < 0 ||
	     profile_foreach(p, note_process_name, a.process_names) < 0))
		goto out;
	if (folded_new(&a.f) < 0)
		goto out;
	if (profile_foreach(p, add_folded, &a) == 0)
		text = folded_text(a.f, metric == PROTO_METRIC_TIME ? 1000 : 1);
	folded_free(a.f);
out:
	hashtab_free(a.process_names);
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

struct samples_args {
	struct proto_sample *samples;
	size_t n;
};

/* A sample's identity strings, one allocation freed with the sample. */
static int sample_identity(struct proto_sample *s, const struct profile_row *row)
{
	struct cgroup_identity_names *names;

	s->ns_pid = row->ns_pid;
	if (!row->cgroup || !*row->cgroup)
		return 0;
	names = malloc(sizeof(*names));
	if (!names)
		return -ENOMEM;
	cgroup_identity_names(row->cgroup, names);
	s->identity = names;
	s->cgroup = row->cgroup;
	s->unit = names->unit[0] ? names->unit : NULL;
	s->container = names->container[0] ? names->container : NULL;
	s->runtime = names->container[0] ? names->runtime : NULL;
	s->pod = names->pod[0] ? names->pod : NULL;
	return 0;
}

static int add_sample(void *arg, const struct profile_row *row)
{
	struct samples_args *a = arg;
	struct proto_sample *s = &a->samples[a->n++];

	*s = (struct proto_sample){
		.comm = row->comm,
		.tgid = row->tgid,
		.pid = row->pid,
		.state = thread_state_name(row->state),
		.value_ns = row->sum_ns,
		.count = row->count,
		.kind = proto_kind_name(row->kind),
	};
	s->ustack = frames_split(row->ustack, &s->n_ustack);
	s->kstack = frames_split(row->kstack, &s->n_kstack);
	s->chain = frames_split(row->chain, &s->n_chain);
	if (sample_identity(s, row) < 0)
		return -ENOMEM;
	return s->ustack && s->kstack && s->chain ? 0 : -ENOMEM;
}

int profile_samples(const struct profile *p, struct proto_sample **ret, size_t *ret_n)
{
	size_t n = hashtab_count(p->rows);
	struct samples_args a = { .samples = calloc(n ? n : 1, sizeof(*a.samples)) };

	if (!a.samples)
		return -ENOMEM;
	if (profile_foreach(p, add_sample, &a) < 0) {
		profile_samples_free(a.samples, a.n);
		return -ENOMEM;
	}
	*ret = a.samples;
	*ret_n = a.n;
	return 0;
}

void profile_samples_free(struct proto_sample *samples, size_t n)
{
	if (!samples)
		return;
	for (size_t i = 0; i < n; i++) {
		free((void *)samples[i].ustack);
		free((void *)samples[i].kstack);
		free((void *)samples[i].chain);
		free(samples[i].identity);
	}
	free(samples);
}
