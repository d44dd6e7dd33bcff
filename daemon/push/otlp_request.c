/*
 * otlp_request: see otlp_request.h. The dictionary's tables fill as the
 * rows come, each entry found again by its content through a hash table
 * of (hash, probe) -> index; the rows' samples and the profiles are
 * protobuf-c messages from the start, the tables become messages at the
 * end, and protobuf-c packs the lot.
 */
#include "otlp_request.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hashtab.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "pprof.h"
#include "utf8.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue pb_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue pb_key_value;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope pb_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource pb_resource;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary pb_dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles pb_resource_profiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles pb_scope_profiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile pb_profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType pb_value_type;
typedef Opentelemetry__Proto__Profiles__V1development__Sample pb_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping pb_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Link pb_link;
typedef Opentelemetry__Proto__Profiles__V1development__Stack pb_stack;
typedef Opentelemetry__Proto__Profiles__V1development__Location pb_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line pb_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function pb_function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit pb_attribute;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	pb_request;

#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT	   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

#define UNKNOWN_FRAME "[unknown]"
#define SAMPLE_ATTRS  9 /* the most attributes a sample has: row_attrs() */

/* ---- finding entries again ---- */

/* Entries of one content hash are told apart by their probe, 0, 1, ... */
struct probe_key {
	uint64_t hash;
	uint64_t probe;
};

/* Whether entry i of table is the one arg describes. */
typedef bool same_fn(const void *table, int32_t i, const void *arg);

/*
 * The index of the entry of hash in h that same() takes for arg's; if none,
 * next, filed under hash (the caller then adds it: *ret_new). 0, or -ENOMEM
 * (also for tables past int32, the dictionary's index type).
 */
static int index_find(struct hashtab *h, uint64_t hash, same_fn *same, const void *table,
		      const void *arg, size_t next, int32_t *ret, bool *ret_new)
{
	if (next >= INT32_MAX)
		return -ENOMEM;
	for (uint64_t probe = 0;; probe++) {
		struct probe_key k = { hash, probe };
		int32_t *v = hashtab_put(h, &k, ret_new);

		if (!v)
			return -ENOMEM;
		if (*ret_new)
			*v = (int32_t)next;
		if (*ret_new || same(table, *v, arg)) {
			*ret = *v;
			return 0;
		}
	}
}

/* A table of distinct strings. */
struct strs {
	const char **s; /* by index */
	size_t n, cap;
	char **owned; /* the fixed copies of strings that were not valid UTF-8 */
	size_t n_owned, owned_cap;
	struct hashtab *index;
};

static bool str_same(const void *table, int32_t i, const void *s)
{
	return !strcmp(((const struct strs *)table)->s[i], s);
}

/* The index of s in t, added if new: s itself, which must outlive t, or if
 * it is not valid UTF-8 a fixed copy. 0 or -ENOMEM. */
static int strs_index(struct strs *t, const char *s, int32_t *ret)
{
	char *fixed = NULL;
	bool added = false;
	int r = 0;

	if (!utf8_valid(s)) {
		fixed = utf8_fix(s);
		s = fixed;
		if (!s ||
		    array_grow(&t->owned, &t->owned_cap, t->n_owned + 1, sizeof(*t->owned), 0))
			r = -ENOMEM;
	}
	if (!r)
		r = array_grow(&t->s, &t->cap, t->n + 1, sizeof(*t->s), 0);
	if (!r)
		r = index_find(t->index, hashtab_hash(s, strlen(s)), str_same, t, s, t->n, ret,
			       &added);
	if (added) {
		t->s[t->n++] = s;
		if (fixed)
			t->owned[t->n_owned++] = fixed;
	} else {
		free(fixed);
	}
	return r;
}

static void strs_free(struct strs *t)
{
	for (size_t i = 0; i < t->n_owned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->s);
	hashtab_free(t->index);
}

/* ---- the build ---- */

/* An entry of the attribute table (bytes compared: no padding). */
struct attr {
	int32_t key; /* string index */
	int32_t str; /* 1 + index into the build's attr_strs; 0: num is the value */
	int64_t num;
};

/* A stack: locations stack_locs[at, at + n), leaf first. */
struct span {
	size_t at, n;
};

/* What a request holds, all of it freed by build_free(). */
struct build {
	struct push_split split;
	int err; /* the first error of frame_cb() */

	/* The dictionary's tables; entry 0 of each is the zero value. */
	struct strs strs;
	struct strs attr_strs; /* the attributes' string values (not in strs) */
	int32_t *loc_of;       /* by string index: the location of that frame, 0: none */
	size_t loc_of_cap;     /* zeroed as it grows */
	int32_t *func_name;    /* by location (and function) index: its name */
	size_t n_locs, locs_cap;
	int32_t *stack_locs; /* every stack's locations */
	size_t n_stack_locs, stack_locs_cap;
	struct span *stacks;
	size_t n_stacks, stacks_cap;
	struct hashtab *stack_index;
	struct attr *attrs;
	size_t n_attrs, attrs_cap;
	struct hashtab *attr_index;
	int32_t *frames; /* one row's locations, root first */
	size_t n_frames, frames_cap;

	/* The request's messages, but for the dictionary's. */
	pb_profile *profiles, **profiles_p;
	pb_value_type *types; /* by profile: sample and period type */
	uint8_t (*ids)[16];   /* by profile */
	int32_t *kind_attrs;  /* by profile */
	size_t n_profiles;    /* filled so far */
	pb_sample *samples, **samples_p;
	int64_t *sample_values; /* by sample */
	int32_t *sample_attrs;	/* SAMPLE_ATTRS by sample */
	size_t n_samples;	/* filled so far */
	pb_resource_profiles *rps, **rps_p;
	pb_resource *resources;
	pb_scope_profiles *sps, **sps_p;
	pb_key_value *kvs, **kvs_p; /* by resource, its attributes */
	pb_any *kv_values;
	size_t n_resources, n_kvs;
	pb_scope scope;

	/* The dictionary's messages. */
	pb_mapping mapping, *mapping_p;
	pb_link link, *link_p;
	uint8_t zero_id[16];
	pb_location *locs, **locs_p;
	pb_line *lines, **lines_p;
	pb_function *funcs, **funcs_p;
	pb_stack *stacks_pb, **stacks_p;
	pb_attribute *attrs_pb, **attrs_p;
	pb_any *attr_values;
};

static void build_free(struct build *b)
{
	push_series_split_free(&b->split);
	strs_free(&b->strs);
	strs_free(&b->attr_strs);
	free(b->loc_of);
	free(b->func_name);
	free(b->stack_locs);
	free(b->stacks);
	hashtab_free(b->stack_index);
	free(b->attrs);
	hashtab_free(b->attr_index);
	free(b->frames);
	free(b->profiles);
	free(b->profiles_p);
	free(b->types);
	free(b->ids);
	free(b->kind_attrs);
	free(b->samples);
	free(b->samples_p);
	free(b->sample_values);
	free(b->sample_attrs);
	free(b->rps);
	free(b->rps_p);
	free(b->resources);
	free(b->sps);
	free(b->sps_p);
	free(b->kvs);
	free(b->kvs_p);
	free(b->kv_values);
	free(b->locs);
	free(b->locs_p);
	free(b->lines);
	free(b->lines_p);
	free(b->funcs);
	free(b->funcs_p);
	free(b->stacks_pb);
	free(b->stacks_p);
	free(b->attrs_pb);
	free(b->attrs_p);
	free(b->attr_values);
}

/* The location of the frame named by string index s, new ones numbered
 * from 1 as they come, each with a function of its own. */
static int loc_index(struct build *b, int32_t s, int32_t *ret)
{
	size_t old = b->loc_of_cap;

	if (array_grow(&b->loc_of, &b->loc_of_cap, (size_t)s + 1, sizeof(*b->loc_of), 0))
		return -ENOMEM;
	memset(b->loc_of + old, 0, (b->loc_of_cap - old) * sizeof(*b->loc_of));
	if (!b->loc_of[s]) {
		if (array_grow(&b->func_name, &b->locs_cap, b->n_locs + 1, sizeof(*b->func_name),
			       0))
			return -ENOMEM;
		b->func_name[b->n_locs] = s;
		b->loc_of[s] = (int32_t)b->n_locs++; /* fewer than strings */
	}
	*ret = b->loc_of[s];
	return 0;
}

/* pprof_row_frames()'s callback: each frame's location into b->frames. */
static void frame_cb(void *arg, const char *frame)
{
	struct build *b = arg;
	int32_t s, loc;

	if (b->err)
		return;
	b->err = strs_index(&b->strs, *frame ? frame : UNKNOWN_FRAME, &s);
	if (!b->err)
		b->err = loc_index(b, s, &loc);
	if (!b->err)
		b->err = array_grow(&b->frames, &b->frames_cap, b->n_frames + 1, sizeof(*b->frames),
				    0);
	if (!b->err)
		b->frames[b->n_frames++] = loc;
}

/* Stack i against the one being added, at the end of stack_locs. */
static bool stack_same(const void *table, int32_t i, const void *arg)
{
	const struct build *b = table;
	const struct span *s = &b->stacks[i];
	size_t n = *(const size_t *)arg;

	return s->n == n && !memcmp(b->stack_locs + s->at, b->stack_locs + b->n_stack_locs,
				    n * sizeof(*b->stack_locs));
}

/* The index of the stack of b->frames (root first), leaf first. */
static int stack_index(struct build *b, int32_t *ret)
{
	size_t n = b->n_frames;
	int32_t *leaf_first;
	bool added = false;
	int r;

	if (array_grow(&b->stack_locs, &b->stack_locs_cap, b->n_stack_locs + n,
		       sizeof(*b->stack_locs), 0) ||
	    array_grow(&b->stacks, &b->stacks_cap, b->n_stacks + 1, sizeof(*b->stacks), 0))
		return -ENOMEM;
	leaf_first = b->stack_locs + b->n_stack_locs;
	for (size_t i = 0; i < n; i++)
		leaf_first[i] = b->frames[n - 1 - i];
	r = index_find(b->stack_index, hashtab_hash(leaf_first, n * sizeof(*leaf_first)),
		       stack_same, b, &n, b->n_stacks, ret, &added);
	if (added) {
		b->stacks[b->n_stacks++] = (struct span){ b->n_stack_locs, n };
		b->n_stack_locs += n;
	}
	return r;
}

static bool attr_same(const void *table, int32_t i, const void *arg)
{
	return !memcmp(&((const struct build *)table)->attrs[i], arg, sizeof(struct attr));
}

/* The index of the attribute key=str, or key=num where str is NULL. */
static int attr_index(struct build *b, const char *key, const char *str, int64_t num, int32_t *ret)
{
	struct attr a;
	bool added = false;
	int r;

	memset(&a, 0, sizeof(a));
	r = strs_index(&b->strs, key, &a.key);
	if (!r && str) {
		r = strs_index(&b->attr_strs, str, &a.str);
		a.str++;
	} else {
		a.num = num;
	}
	if (!r)
		r = array_grow(&b->attrs, &b->attrs_cap, b->n_attrs + 1, sizeof(*b->attrs), 0);
	if (!r)
		r = index_find(b->attr_index, hashtab_hash(&a, sizeof(a)), attr_same, b, &a,
			       b->n_attrs, ret, &added);
	if (added)
		b->attrs[b->n_attrs++] = a;
	return r;
}

/* The attributes of row r's sample, into ret[0, *ret_n). */
static int row_attrs(struct build *b, const struct proto_sample *r, int32_t *ret, size_t *ret_n)
{
	const struct {
		const char *key, *str;
		int64_t num;
		bool has;
	} a[] = {
		{ "thread.name", r->comm, 0, r->comm != NULL },
		{ "process.pid", NULL, r->tgid, true },
		{ "thread.id", NULL, r->pid, true },
		{ "offcpud.state", r->state, 0, r->state != NULL },
		/* Who, where known, as pprof.c labels it. */
		{ "process.vpid", NULL, r->ns_pid, r->ns_pid != 0 },
		{ "container.id", r->container, 0, r->container != NULL },
		{ "k8s.pod.uid", r->pod, 0, r->pod != NULL },
		{ "offcpud.cgroup", r->cgroup, 0, r->cgroup && *r->cgroup },
		{ "offcpud.unit", r->unit, 0, r->unit != NULL },
	};
	size_t n = 0;
	int err = 0;

	_Static_assert(sizeof(a) / sizeof(a[0]) == SAMPLE_ATTRS, "room for each attribute");
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]) && !err; i++) {
		if (a[i].has)
			err = attr_index(b, a[i].key, a[i].str, a[i].num, &ret[n++]);
	}
	*ret_n = n;
	return err;
}

/* Row r as the next sample. */
static int build_sample(struct build *b, const struct proto_sample *r)
{
	size_t i = b->n_samples;
	pb_sample *s = &b->samples[i];
	int err;

	opentelemetry__proto__profiles__v1development__sample__init(s);
	b->n_frames = 0;
	pprof_row_frames(r, frame_cb, b);
	err = b->err;
	if (!err)
		err = stack_index(b, &s->stack_index);
	if (!err)
		err = row_attrs(b, r, &b->sample_attrs[i * SAMPLE_ATTRS], &s->n_attribute_indices);
	if (err)
		return err;
	s->attribute_indices = &b->sample_attrs[i * SAMPLE_ATTRS];
	/* Sample values are int64. */
	b->sample_values[i] = r->value_ns > INT64_MAX ? INT64_MAX : (int64_t)r->value_ns;
	s->n_values = 1;
	s->values = &b->sample_values[i];
	b->samples_p[b->n_samples++] = s;
	return 0;
}

/* The 16 bytes of a UUID in RFC 4122's text form. */
static void uuid_bytes(const char *s, uint8_t ret[16])
{
	for (int i = 0; i < 16; s += 2, i++) {
		if (*s == '-')
			s++;
		ret[i] = (uint8_t)((s[0] <= '9' ? s[0] - '0' : s[0] - 'a' + 10) << 4 |
				   (s[1] <= '9' ? s[1] - '0' : s[1] - 'a' + 10));
	}
}

/* The profiles of series ser and their samples. */
static int build_series(struct build *b, const struct push_series *ser, const struct push_window *w,
			const struct push_request_opts *o)
{
	const char *kind = push_request_profile_name(ser->kind);
	int32_t type, unit, kind_attr;
	int r = strs_index(&b->strs, pprof_sample_type_name(ser->kind, false), &type);

	if (!r)
		r = strs_index(&b->strs, "nanoseconds", &unit);
	if (!r)
		r = attr_index(b, "offcpud.kind", kind, 0, &kind_attr);
	for (size_t part = 0; !r && part < ser->n_parts; part++) {
		size_t i = b->n_profiles, n;
		pb_profile *p = &b->profiles[i];
		const size_t *rows;
		char id[UUID5_STR_SIZE];

		opentelemetry__proto__profiles__v1development__profile__init(p);
		opentelemetry__proto__profiles__v1development__value_type__init(&b->types[i]);
		b->types[i].type_strindex = type;
		b->types[i].unit_strindex = unit;
		p->sample_type = &b->types[i];
		/* Every event counted, none sampled. */
		p->period_type = &b->types[i];
		p->period = 1;
		p->time_unix_nano = (uint64_t)w->start_ms * 1000000;
		p->duration_nano = (uint64_t)(w->end_ms - w->start_ms) * 1000000;
		push_request_id(o->host, w->id, w->start_ms, ser->service, kind, part, id);
		uuid_bytes(id, b->ids[i]);
		p->profile_id.data = b->ids[i];
		p->profile_id.len = sizeof(b->ids[i]);
		b->kind_attrs[i] = kind_attr;
		p->n_attribute_indices = 1;
		p->attribute_indices = &b->kind_attrs[i];
		p->samples = &b->samples_p[b->n_samples];
		push_series_part(&b->split, ser, part, &rows, &n);
		for (size_t k = 0; k < n && !r; k++)
			r = build_sample(b, &w->rows[rows[k]]);
		p->n_samples = n;
		b->profiles_p[b->n_profiles++] = p;
	}
	return r;
}

static void any_string(pb_any *v, const char *s)
{
	opentelemetry__proto__common__v1__any_value__init(v);
	v->value_case = ANY_STRING;
	v->string_value = (char *)s;
}

/* The next resource attribute, key=value. */
static void resource_attr(struct build *b, const char *key, const char *value)
{
	pb_key_value *kv = &b->kvs[b->n_kvs];

	opentelemetry__proto__common__v1__key_value__init(kv);
	kv->key = (char *)key;
	any_string(&b->kv_values[b->n_kvs], value);
	kv->value = &b->kv_values[b->n_kvs];
	b->kvs_p[b->n_kvs++] = kv;
}

/* One resource per service, of the profiles its series have: the series
 * come sorted by service, and their profiles in the same order. */
static void build_resources(struct build *b, const struct push_request_opts *o)
{
	const struct push_split *sp = &b->split;
	size_t profile = 0;

	opentelemetry__proto__common__v1__instrumentation_scope__init(&b->scope);
	b->scope.name = OTLP_SCOPE_NAME;
	b->scope.version = OFFCPU_VERSION;
	for (size_t i = 0, j; i < sp->n_series; i = j) {
		size_t k = b->n_resources, n_profiles = 0;
		pb_resource *res = &b->resources[k];
		pb_scope_profiles *sps = &b->sps[k];
		pb_resource_profiles *rp = &b->rps[k];

		for (j = i;
		     j < sp->n_series && !strcmp(sp->series[j].service, sp->series[i].service); j++)
			n_profiles += sp->series[j].n_parts;
		opentelemetry__proto__resource__v1__resource__init(res);
		res->attributes = &b->kvs_p[b->n_kvs];
		resource_attr(b, "service.name", sp->series[i].service);
		resource_attr(b, "host.name", o->host);
		for (size_t l = 0; l < o->n_labels; l++)
			resource_attr(b, o->labels[l].name, o->labels[l].value);
		res->n_attributes = 2 + o->n_labels;
		opentelemetry__proto__profiles__v1development__scope_profiles__init(sps);
		sps->scope = &b->scope;
		sps->profiles = &b->profiles_p[profile];
		sps->n_profiles = n_profiles;
		profile += n_profiles;
		b->sps_p[k] = sps;
		opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
		rp->resource = res;
		rp->scope_profiles = &b->sps_p[k];
		rp->n_scope_profiles = 1;
		b->rps_p[b->n_resources++] = rp;
	}
}

/* The tables as messages, into d. */
static int build_dictionary(struct build *b, pb_dictionary *d)
{
	size_t n_locs = b->n_locs, n_stacks = b->n_stacks, n_attrs = b->n_attrs;

	b->locs = calloc(n_locs, sizeof(*b->locs));
	b->locs_p = calloc(n_locs, sizeof(*b->locs_p));
	b->lines = calloc(n_locs, sizeof(*b->lines));
	b->lines_p = calloc(n_locs, sizeof(*b->lines_p));
	b->funcs = calloc(n_locs, sizeof(*b->funcs));
	b->funcs_p = calloc(n_locs, sizeof(*b->funcs_p));
	b->stacks_pb = calloc(n_stacks, sizeof(*b->stacks_pb));
	b->stacks_p = calloc(n_stacks, sizeof(*b->stacks_p));
	b->attrs_pb = calloc(n_attrs, sizeof(*b->attrs_pb));
	b->attrs_p = calloc(n_attrs, sizeof(*b->attrs_p));
	b->attr_values = calloc(n_attrs, sizeof(*b->attr_values));
	if (!b->locs || !b->locs_p || !b->lines || !b->lines_p || !b->funcs || !b->funcs_p ||
	    !b->stacks_pb || !b->stacks_p || !b->attrs_pb || !b->attrs_p || !b->attr_values)
		return -ENOMEM;

	opentelemetry__proto__profiles__v1development__mapping__init(&b->mapping);
	b->mapping_p = &b->mapping;
	d->n_mapping_table = 1;
	d->mapping_table = &b->mapping_p;
	/* The zero link with ids of their lengths, as the spec prefers. */
	opentelemetry__proto__profiles__v1development__link__init(&b->link);
	b->link.trace_id = (ProtobufCBinaryData){ 16, b->zero_id };
	b->link.span_id = (ProtobufCBinaryData){ 8, b->zero_id };
	b->link_p = &b->link;
	d->n_link_table = 1;
	d->link_table = &b->link_p;
	d->n_string_table = b->strs.n;
	d->string_table = (char **)b->strs.s;

	for (size_t i = 0; i < n_locs; i++) {
		opentelemetry__proto__profiles__v1development__location__init(&b->locs[i]);
		opentelemetry__proto__profiles__v1development__function__init(&b->funcs[i]);
		if (i) { /* [0]: the zero value */
			opentelemetry__proto__profiles__v1development__line__init(&b->lines[i]);
			b->lines[i].function_index = (int32_t)i;
			b->lines_p[i] = &b->lines[i];
			b->locs[i].n_lines = 1;
			b->locs[i].lines = &b->lines_p[i];
			b->funcs[i].name_strindex = b->func_name[i];
			b->funcs[i].system_name_strindex = b->func_name[i];
		}
		b->locs_p[i] = &b->locs[i];
		b->funcs_p[i] = &b->funcs[i];
	}
	d->n_location_table = d->n_function_table = n_locs;
	d->location_table = b->locs_p;
	d->function_table = b->funcs_p;

	for (size_t i = 0; i < n_stacks; i++) {
		opentelemetry__proto__profiles__v1development__stack__init(&b->stacks_pb[i]);
		b->stacks_pb[i].n_location_indices = b->stacks[i].n;
		b->stacks_pb[i].location_indices = b->stack_locs + b->stacks[i].at;
		b->stacks_p[i] = &b->stacks_pb[i];
	}
	d->n_stack_table = n_stacks;
	d->stack_table = b->stacks_p;

	for (size_t i = 0; i < n_attrs; i++) {
		const struct attr *a = &b->attrs[i];
		pb_attribute *p = &b->attrs_pb[i];

		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(p);
		if (i) { /* [0]: the zero value, without one */
			p->key_strindex = a->key;
			if (a->str) {
				any_string(&b->attr_values[i], b->attr_strs.s[a->str - 1]);
			} else {
				pb_any *v = &b->attr_values[i];

				opentelemetry__proto__common__v1__any_value__init(v);
				v->value_case = ANY_INT;
				v->int_value = a->num;
			}
			p->value = &b->attr_values[i];
		}
		b->attrs_p[i] = p;
	}
	d->n_attribute_table = n_attrs;
	d->attribute_table = b->attrs_p;
	return 0;
}

/* Room for the split's profiles, samples and resources, and the tables
 * with their zero values. */
static int build_alloc(struct build *b, const struct push_request_opts *o)
{
	const struct push_split *sp = &b->split;
	size_t n_parts = sp->n_parts, n_rows = sp->n_rows, n_res = 0;
	int32_t zero;
	int r;

	for (size_t i = 0; i < sp->n_series; i++)
		n_res += !i || strcmp(sp->series[i - 1].service, sp->series[i].service);
	b->profiles = calloc(n_parts, sizeof(*b->profiles));
	b->profiles_p = calloc(n_parts, sizeof(*b->profiles_p));
	b->types = calloc(n_parts, sizeof(*b->types));
	b->ids = calloc(n_parts, sizeof(*b->ids));
	b->kind_attrs = calloc(n_parts, sizeof(*b->kind_attrs));
	b->samples = calloc(n_rows, sizeof(*b->samples));
	b->samples_p = calloc(n_rows, sizeof(*b->samples_p));
	b->sample_values = calloc(n_rows, sizeof(*b->sample_values));
	b->sample_attrs = calloc(n_rows * SAMPLE_ATTRS, sizeof(*b->sample_attrs));
	b->rps = calloc(n_res, sizeof(*b->rps));
	b->rps_p = calloc(n_res, sizeof(*b->rps_p));
	b->resources = calloc(n_res, sizeof(*b->resources));
	b->sps = calloc(n_res, sizeof(*b->sps));
	b->sps_p = calloc(n_res, sizeof(*b->sps_p));
	b->kvs = calloc(n_res * (2 + o->n_labels), sizeof(*b->kvs));
	b->kvs_p = calloc(n_res * (2 + o->n_labels), sizeof(*b->kvs_p));
	b->kv_values = calloc(n_res * (2 + o->n_labels), sizeof(*b->kv_values));
	if (!b->profiles || !b->profiles_p || !b->types || !b->ids || !b->kind_attrs ||
	    !b->samples || !b->samples_p || !b->sample_values || !b->sample_attrs || !b->rps ||
	    !b->rps_p || !b->resources || !b->sps || !b->sps_p || !b->kvs || !b->kvs_p ||
	    !b->kv_values)
		return -ENOMEM;

	if (hashtab_new(sizeof(struct probe_key), sizeof(int32_t), &b->strs.index) < 0 ||
	    hashtab_new(sizeof(struct probe_key), sizeof(int32_t), &b->attr_strs.index) < 0 ||
	    hashtab_new(sizeof(struct probe_key), sizeof(int32_t), &b->stack_index) < 0 ||
	    hashtab_new(sizeof(struct probe_key), sizeof(int32_t), &b->attr_index) < 0)
		return -ENOMEM;
	/* Entry 0 of each table: "", no location (and no function), the
	 * empty stack, the zero attribute (found by no key: keys are never ""). */
	r = strs_index(&b->strs, "", &zero);
	if (!r)
		r = array_grow(&b->func_name, &b->locs_cap, 1, sizeof(*b->func_name), 0);
	if (!r) {
		b->func_name[b->n_locs++] = 0;
		b->n_frames = 0;
		r = stack_index(b, &zero);
	}
	if (!r)
		r = array_grow(&b->attrs, &b->attrs_cap, 1, sizeof(*b->attrs), 0);
	if (!r)
		memset(&b->attrs[b->n_attrs++], 0, sizeof(*b->attrs));
	return r;
}

int otlp_request_build(const struct push_window *w, const struct push_request_opts *o,
		       uint8_t **ret, size_t *ret_len)
{
	pb_request req;
	pb_dictionary dict;
	struct build b = { 0 };
	int r = push_series_split(w, o, &b.split);

	if (!r && !b.split.n_series) {
		*ret = NULL;
		*ret_len = 0;
	} else if (!r) {
		r = build_alloc(&b, o);
		for (size_t i = 0; !r && i < b.split.n_series; i++)
			r = build_series(&b, &b.split.series[i], w, o);
		opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&dict);
		if (!r) {
			build_resources(&b, o);
			r = build_dictionary(&b, &dict);
		}
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
			&req);
		req.n_resource_profiles = b.n_resources;
		req.resource_profiles = b.rps_p;
		req.dictionary = &dict;
		if (!r)
			r = push_series_pack(&req.base, ret, ret_len);
	}
	build_free(&b);
	return r;
}
