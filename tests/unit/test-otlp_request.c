/*
 * Unit test of daemon/push/otlp_request.c: the window of push_fixture.h as
 * an OTLP ExportProfilesServiceRequest, read back two ways: (a) protobuf-c's
 * unpacker: the spec's rules for the dictionary (entry 0 of each table its
 * zero value, no entry twice or unused, indices in range, one key once per
 * sample), a resource per service with its attributes, the profiles' types,
 * period, times and ids (stable across builds and row orders, new for
 * another window), each row's sample with its stack (leaf first) and
 * attributes, per-stack and per-thread totals as the rows put in, parts,
 * values past INT64_MAX, refused inputs; (b) Debian's `protoc --decode`
 * against proto/push/otlp/, skipped, saying why, where protoc is missing.
 */
#define _GNU_SOURCE /* asprintf, fmemopen, mkdtemp */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "otlp_request.h"
#include "push_fixture.h"
#include "utf8.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__Profile profile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample sample;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_value;

#define STRING_VALUE OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define INT_VALUE    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

static request *unpack(const uint8_t *buf, size_t len)
{
	return (request *)protobuf_c_message_unpack(
		&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		NULL, len, buf);
}

static void request_free(request *req)
{
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static request *build(const struct push_window *w, const struct push_request_opts *o,
		      uint8_t **ret_buf, size_t *ret_len)
{
	request *req;
	int r = otlp_request_build(w, o, ret_buf, ret_len);

	CHECK_MSG(r == 0, "(%s)", strerror(-r));
	if (r)
		return NULL;
	req = unpack(*ret_buf, *ret_len);
	CHECK(req && req->dictionary);
	if (req && !req->dictionary) {
		request_free(req);
		return NULL;
	}
	return req;
}

/* String i of the table; "?" (and a failed check) out of range. */
static const char *str(const dictionary *d, int32_t i)
{
	CHECK_MSG(i >= 0 && (size_t)i < d->n_string_table, "(string %" PRId32 ")", i);
	return i >= 0 && (size_t)i < d->n_string_table ? d->string_table[i] : "?";
}

/* The value of key among the attributes indices[0, n); NULL: none. */
static const any_value *attr(const dictionary *d, const int32_t *indices, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (indices[i] <= 0 || (size_t)indices[i] >= d->n_attribute_table)
			continue; /* check_dictionary() fails it */
		if (!strcmp(str(d, d->attribute_table[indices[i]]->key_strindex), key))
			return d->attribute_table[indices[i]]->value;
	}
	return NULL;
}

static const char *attr_str(const dictionary *d, const int32_t *indices, size_t n, const char *key)
{
	const any_value *v = attr(d, indices, n, key);

	return v && v->value_case == STRING_VALUE ? v->string_value : NULL;
}

/* The resource attribute key of rp; NULL: none. */
static const char *
resource_attr(const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp,
	      const char *key)
{
	for (size_t i = 0; rp->resource && i < rp->resource->n_attributes; i++) {
		const Opentelemetry__Proto__Common__V1__KeyValue *kv = rp->resource->attributes[i];

		if (!strcmp(kv->key, key))
			return kv->value && kv->value->value_case == STRING_VALUE
				       ? kv->value->string_value
				       : NULL;
	}
	return NULL;
}

/* ---- (a) the dictionary: the spec's rules ---- */

/* Whether entries a and b of a table are the same, by their packed bytes. */
static bool same_message(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la = protobuf_c_message_get_packed_size(a),
	       lb = protobuf_c_message_get_packed_size(b);
	uint8_t *pa = malloc(la + 1), *pb = malloc(lb + 1);
	bool same = pa && pb && la == lb && protobuf_c_message_pack(a, pa) == la &&
		    protobuf_c_message_pack(b, pb) == lb && !memcmp(pa, pb, la);

	free(pa);
	free(pb);
	return same;
}

/* No two entries of table[0, n) alike; entry 0 packs to nothing (the zero
 * value) unless zero_len says otherwise. */
static void check_table(const char *what, ProtobufCMessage *const *table, size_t n, size_t zero_len)
{
	CHECK_MSG(n >= 1, "(%s: no entry 0)", what);
	if (n >= 1)
		CHECK_MSG(protobuf_c_message_get_packed_size(table[0]) == zero_len,
			  "(%s[0] is not the zero value)", what);
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			CHECK_MSG(!same_message(table[i], table[j]), "(%s: %zu and %zu alike)",
				  what, j, i);
}

/* Marks string i used, failing a check if it is not there. */
static void use_str(const dictionary *d, int32_t i, bool *used)
{
	str(d, i);
	if (i > 0 && (size_t)i < d->n_string_table)
		used[i] = true;
}

/* Marks the attributes indices[0, n) used; each key once. */
static void use_attrs(const dictionary *d, const int32_t *indices, size_t n, bool *used)
{
	for (size_t i = 0; i < n; i++) {
		int32_t a = indices[i];

		CHECK_MSG(a > 0 && (size_t)a < d->n_attribute_table, "(attribute %" PRId32 ")", a);
		if (a <= 0 || (size_t)a >= d->n_attribute_table)
			continue;
		used[a] = true;
		for (size_t j = 0; j < i; j++)
			CHECK_MSG(indices[j] < 0 || (size_t)indices[j] >= d->n_attribute_table ||
					  d->attribute_table[indices[j]]->key_strindex !=
						  d->attribute_table[a]->key_strindex,
				  "(key %s twice)", str(d, d->attribute_table[a]->key_strindex));
	}
}

static void check_dictionary(const request *req)
{
	const dictionary *d = req->dictionary;
	bool *str_used = calloc(d->n_string_table + 1, 1),
	     *loc_used = calloc(d->n_location_table + 1, 1),
	     *fn_used = calloc(d->n_function_table + 1, 1),
	     *stack_used = calloc(d->n_stack_table + 1, 1),
	     *attr_used = calloc(d->n_attribute_table + 1, 1);

	if (!str_used || !loc_used || !fn_used || !stack_used || !attr_used) {
		CHECK(!"memory");
		goto out;
	}
	/* string_table[0] is "" and every entry is distinct, valid UTF-8. */
	CHECK(d->n_string_table >= 1 && !strcmp(d->string_table[0], ""));
	for (size_t i = 0; i < d->n_string_table; i++) {
		CHECK_MSG(utf8_valid(d->string_table[i]), "(string %zu)", i);
		for (size_t j = 0; j < i; j++)
			CHECK_MSG(strcmp(d->string_table[i], d->string_table[j]), "(\"%s\" twice)",
				  d->string_table[i]);
	}
	check_table("mapping_table", (ProtobufCMessage *const *)d->mapping_table,
		    d->n_mapping_table, 0);
	CHECK(d->n_mapping_table == 1); /* the frames come symbolized */
	check_table("location_table", (ProtobufCMessage *const *)d->location_table,
		    d->n_location_table, 0);
	check_table("function_table", (ProtobufCMessage *const *)d->function_table,
		    d->n_function_table, 0);
	check_table("stack_table", (ProtobufCMessage *const *)d->stack_table, d->n_stack_table, 0);
	check_table("attribute_table", (ProtobufCMessage *const *)d->attribute_table,
		    d->n_attribute_table, 0);
	/* link_table[0]: the zero link, with ids of their lengths (2 + 16, 2 + 8). */
	check_table("link_table", (ProtobufCMessage *const *)d->link_table, d->n_link_table, 28);
	if (d->n_link_table >= 1) {
		static const uint8_t zero[16];
		const Opentelemetry__Proto__Profiles__V1development__Link *l = d->link_table[0];

		CHECK(d->n_link_table == 1 && l->trace_id.len == 16 && l->span_id.len == 8 &&
		      !memcmp(l->trace_id.data, zero, 16) && !memcmp(l->span_id.data, zero, 8));
	}

	/* What each entry refers to is there, and marked used. */
	for (size_t i = 1; i < d->n_function_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Function *f =
			d->function_table[i];

		CHECK_MSG(f->name_strindex > 0 && f->system_name_strindex == f->name_strindex &&
				  !f->filename_strindex && !f->start_line,
			  "(function %zu)", i);
		use_str(d, f->name_strindex, str_used);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[i];
		int32_t f = l->n_lines == 1 ? l->lines[0]->function_index : -1;

		CHECK_MSG(!l->mapping_index && !l->address && !l->n_attribute_indices &&
				  l->n_lines == 1 && f > 0 && (size_t)f < d->n_function_table &&
				  !l->lines[0]->line && !l->lines[0]->column,
			  "(location %zu)", i);
		if (f > 0 && (size_t)f < d->n_function_table)
			fn_used[f] = true;
	}
	for (size_t i = 1; i < d->n_stack_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Stack *s = d->stack_table[i];

		for (size_t k = 0; k < s->n_location_indices; k++) {
			int32_t l = s->location_indices[k];

			CHECK_MSG(l > 0 && (size_t)l < d->n_location_table, "(stack %zu)", i);
			if (l > 0 && (size_t)l < d->n_location_table)
				loc_used[l] = true;
		}
	}
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a =
			d->attribute_table[i];

		CHECK_MSG(a->key_strindex > 0 && a->value && !a->unit_strindex &&
				  (a->value->value_case == STRING_VALUE ||
				   a->value->value_case == INT_VALUE),
			  "(attribute %zu)", i);
		use_str(d, a->key_strindex, str_used);
		if (a->value && a->value->value_case == STRING_VALUE)
			CHECK(utf8_valid(a->value->string_value));
	}
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			req->resource_profiles[r]->n_scope_profiles
				? req->resource_profiles[r]->scope_profiles[0]
				: NULL;

		for (size_t p = 0; sp && p < sp->n_profiles; p++) {
			const profile *pr = sp->profiles[p];

			use_attrs(d, pr->attribute_indices, pr->n_attribute_indices, attr_used);
			for (size_t k = 0; k < 2; k++) {
				const Opentelemetry__Proto__Profiles__V1development__ValueType *t =
					k ? pr->period_type : pr->sample_type;

				CHECK(t && t->type_strindex > 0 && t->unit_strindex > 0);
				if (!t)
					continue;
				use_str(d, t->type_strindex, str_used);
				use_str(d, t->unit_strindex, str_used);
			}
			for (size_t s = 0; s < pr->n_samples; s++) {
				const sample *sa = pr->samples[s];

				CHECK(sa->stack_index >= 0 &&
				      (size_t)sa->stack_index < d->n_stack_table);
				if (sa->stack_index >= 0 &&
				    (size_t)sa->stack_index < d->n_stack_table)
					stack_used[sa->stack_index] = true;
				CHECK(!sa->link_index);
				use_attrs(d, sa->attribute_indices, sa->n_attribute_indices,
					  attr_used);
			}
		}
	}
	/* Nothing orphaned: every entry but 0 is used. */
	for (size_t i = 1; i < d->n_string_table; i++)
		CHECK_MSG(str_used[i], "(string \"%s\" unused)", d->string_table[i]);
	for (size_t i = 1; i < d->n_location_table; i++)
		CHECK_MSG(loc_used[i], "(location %zu unused)", i);
	for (size_t i = 1; i < d->n_function_table; i++)
		CHECK_MSG(fn_used[i], "(function %zu unused)", i);
	for (size_t i = 1; i < d->n_stack_table; i++)
		CHECK_MSG(stack_used[i], "(stack %zu unused)", i);
	for (size_t i = 1; i < d->n_attribute_table; i++)
		CHECK_MSG(attr_used[i], "(attribute %zu unused)", i);
out:
	free(str_used);
	free(loc_used);
	free(fn_used);
	free(stack_used);
	free(attr_used);
}

/* ---- (a) the profiles and their samples ---- */

/* The frames of stack i, root first, joined by ';'. */
static void stack_text(const dictionary *d, int32_t i, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");
	const Opentelemetry__Proto__Profiles__V1development__Stack *s =
		i >= 0 && (size_t)i < d->n_stack_table ? d->stack_table[i] : NULL;

	for (size_t k = s ? s->n_location_indices : 0; f && k-- > 0;) { /* leaf first */
		int32_t l = s->location_indices[k], fn = -1;

		if (l > 0 && (size_t)l < d->n_location_table && d->location_table[l]->n_lines)
			fn = d->location_table[l]->lines[0]->function_index;
		fprintf(f, "%s%s", k + 1 == s->n_location_indices ? "" : ";",
			fn > 0 && (size_t)fn < d->n_function_table
				? str(d, d->function_table[fn]->name_strindex)
				: "?");
	}
	if (f)
		fclose(f);
}

/* The row of rows[0, N_ROWS) of kind and value_ns ns (the fixture's values
 * are distinct); N_ROWS: none. */
static size_t row_of(const char *kind, int64_t ns)
{
	for (size_t i = 0; i < N_ROWS; i++) {
		const char *k = rows[i].kind ? rows[i].kind : "offcpu";
		int64_t v = rows[i].value_ns > INT64_MAX ? INT64_MAX : (int64_t)rows[i].value_ns;

		if (!strcmp(k, kind) && v == ns)
			return i;
	}
	return N_ROWS;
}

/* The attributes of sample s are exactly those of row r. */
static void check_sample_attrs(const dictionary *d, const sample *s, const struct proto_sample *r)
{
	char *comm = utf8_fix(r->comm);
	const struct {
		const char *key, *str;
		int64_t num;
		bool has;
	} want[] = {
		{ "thread.name", comm, 0, true },
		{ "process.pid", NULL, r->tgid, true },
		{ "thread.id", NULL, r->pid, true },
		{ "offcpud.state", r->state, 0, true },
		{ "process.vpid", NULL, r->ns_pid, r->ns_pid != 0 },
		{ "container.id", r->container, 0, r->container != NULL },
		{ "k8s.pod.uid", r->pod, 0, r->pod != NULL },
		{ "offcpud.cgroup", r->cgroup, 0, r->cgroup != NULL },
		{ "offcpud.unit", r->unit, 0, r->unit != NULL },
	};
	size_t n = 0;

	for (size_t i = 0; i < N(want); i++) {
		const any_value *v =
			attr(d, s->attribute_indices, s->n_attribute_indices, want[i].key);

		if (!want[i].has) {
			CHECK_MSG(!v, "(%s: %s)", r->comm, want[i].key);
			continue;
		}
		n++;
		if (want[i].str)
			CHECK_MSG(v && v->value_case == STRING_VALUE &&
					  !strcmp(v->string_value, want[i].str),
				  "(%s: %s)", r->comm, want[i].key);
		else
			CHECK_MSG(v && v->value_case == INT_VALUE && v->int_value == want[i].num,
				  "(%s: %s)", r->comm, want[i].key);
	}
	CHECK_MSG(s->n_attribute_indices == n, "(%s: %zu attributes)", r->comm,
		  s->n_attribute_indices);
	free(comm);
}

/* Per-thread totals: "tgid/tid/thread.name" and its nanoseconds. */
static void thread_key(char *buf, size_t size, int64_t tgid, int64_t tid, const char *name)
{
	snprintf(buf, size, "%" PRId64 "/%" PRId64 "/%s", tgid, tid, name ? name : "?");
}

/* The request holds the rows of w as series by naming `by`, in parts of at
 * most max rows. */
static void check_request(const request *req, enum push_service_by by, const struct push_window *w,
			  size_t max)
{
	const dictionary *d = req->dictionary;
	size_t seen[N_ROWS] = { 0 }, n_services = 0, n_series = 0;
	struct totals threads = { 0 }, want_threads = { 0 };
	const char *services[N_ROWS];

	check_dictionary(req);
	/* One resource per service. */
	for (size_t i = 0; i < N_ROWS; i++) {
		const char *s = by == PUSH_SERVICE_BY_WHO ? cases[i].by_who : cases[i].by_process;
		size_t k;

		for (k = 0; k < n_services && strcmp(services[k], s); k++)
			;
		if (k == n_services)
			services[n_services++] = s;
	}
	CHECK_MSG(req->n_resource_profiles == n_services, "(%zu resources)",
		  req->n_resource_profiles);
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			req->resource_profiles[r];
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp;
		const char *service = resource_attr(rp, "service.name");

		CHECK(rp->resource && rp->resource->n_attributes == 2 + N(statics));
		CHECK_STR(resource_attr(rp, "host.name"), HOST);
		CHECK_STR(resource_attr(rp, "region"), "eu_west");
		CHECK_STR(resource_attr(rp, "env"), "prod");
		CHECK(service &&
		      (!r || strcmp(resource_attr(req->resource_profiles[r - 1], "service.name"),
				    service) < 0)); /* sorted, each once */
		CHECK(rp->n_scope_profiles == 1);
		if (!service || rp->n_scope_profiles != 1)
			continue;
		sp = rp->scope_profiles[0];
		CHECK(sp->scope && !strcmp(sp->scope->name, "offcpud") &&
		      !strcmp(sp->scope->version, OFFCPU_VERSION));
		for (size_t p = 0, part = 0; p < sp->n_profiles; p++) {
			const profile *pr = sp->profiles[p];
			const char *kind = attr_str(d, pr->attribute_indices,
						    pr->n_attribute_indices, "offcpud.kind");
			size_t idx[N_ROWS], n = kind ? expected_rows(by, service, kind, idx) : 0;
			struct totals got = { 0 }, want = { 0 };
			char id[UUID5_STR_SIZE], hex[33], what[256];

			CHECK_MSG(n > 0, "(unexpected profile %s/%s)", service, kind ? kind : "?");
			if (!n)
				continue;
			/* The parts of a series follow each other. */
			if (p && !strcmp(kind, attr_str(d, sp->profiles[p - 1]->attribute_indices,
							sp->profiles[p - 1]->n_attribute_indices,
							"offcpud.kind"))) {
				part++;
			} else {
				part = 0;
				n_series++;
			}
			CHECK_STR(str(d, pr->sample_type->type_strindex),
				  !strcmp(kind, "offcpu") ? "off_cpu" : kind);
			CHECK_STR(str(d, pr->sample_type->unit_strindex), "nanoseconds");
			CHECK(pr->period_type &&
			      pr->period_type->type_strindex == pr->sample_type->type_strindex &&
			      pr->period_type->unit_strindex == pr->sample_type->unit_strindex &&
			      pr->period == 1);
			CHECK(pr->time_unix_nano == (uint64_t)w->start_ms * 1000000);
			CHECK(pr->duration_nano == 10000000000ULL);
			push_request_id(HOST, w->id, w->start_ms, service, kind, part, id);
			for (size_t k = 0; pr->profile_id.len == 16 && k < 16; k++)
				sprintf(hex + 2 * k, "%02x", pr->profile_id.data[k]);
			CHECK_MSG(pr->profile_id.len == 16 && !strncmp(hex, id, 8) &&
					  !strncmp(hex + 8, id + 9, 4) &&
					  !strncmp(hex + 12, id + 14, 4) &&
					  !strncmp(hex + 16, id + 19, 4) &&
					  !strncmp(hex + 20, id + 24, 12),
				  "(%s/%s part %zu: id)", service, kind, part);
			CHECK_MSG(pr->n_samples ==
					  (part + 1 < (n + max - 1) / max ? max : n - part * max),
				  "(%s/%s part %zu: %zu samples)", service, kind, part,
				  pr->n_samples);

			for (size_t s = 0; s < pr->n_samples; s++) {
				const sample *sa = pr->samples[s];
				int64_t v = sa->n_values == 1 ? sa->values[0] : -1;
				size_t row = row_of(kind, v);
				const any_value *pid = attr(d, sa->attribute_indices,
							    sa->n_attribute_indices, "process.pid"),
						*tid = attr(d, sa->attribute_indices,
							    sa->n_attribute_indices, "thread.id");
				char stack[1024], want_stack[1024], key[256];

				CHECK(sa->n_values == 1 && !sa->n_timestamps_unix_nano);
				stack_text(d, sa->stack_index, stack, sizeof(stack));
				totals_add(&got, stack, 0, (uint64_t)v);
				thread_key(key, sizeof(key), pid ? pid->int_value : -1,
					   tid ? tid->int_value : -1,
					   attr_str(d, sa->attribute_indices,
						    sa->n_attribute_indices, "thread.name"));
				totals_add(&threads, key, 0, (uint64_t)v);
				CHECK_MSG(row < N_ROWS, "(%s/%s: no row of %" PRId64 " ns)",
					  service, kind, v);
				if (row == N_ROWS)
					continue;
				seen[row]++;
				check_sample_attrs(d, sa, &rows[row]);
				row_stack(&rows[row], want_stack, sizeof(want_stack));
				CHECK_STR(stack, want_stack);
			}
			/* Per stack, where the profile holds the whole series. */
			for (size_t k = 0; n <= max && k < n; k++) {
				char stack[1024];

				row_stack(&rows[idx[k]], stack, sizeof(stack));
				totals_add(&want, stack, 0, rows[idx[k]].value_ns);
			}
			snprintf(what, sizeof(what), "%s/%s", service, kind);
			if (n <= max)
				TOTALS_CHECK(&got, &want, what);
			totals_free(&got);
			totals_free(&want);
		}
	}
	CHECK_MSG(n_series == N_SERIES, "(%zu series)", n_series);
	for (size_t i = 0; i < N_ROWS; i++) {
		char *comm = utf8_fix(rows[i].comm), key[256];

		CHECK_MSG(seen[i] == 1, "(row %zu seen %zu times)", i, seen[i]);
		thread_key(key, sizeof(key), rows[i].tgid, rows[i].pid, comm);
		totals_add(&want_threads, key, 0, rows[i].value_ns);
		free(comm);
	}
	TOTALS_CHECK(&threads, &want_threads, "threads");
	totals_free(&threads);
	totals_free(&want_threads);
}

/* The ids of req, in order, with their services, joined. */
static char *ids_of(const request *req)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t r = 0; f && r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			req->resource_profiles[r];

		for (size_t p = 0; rp->n_scope_profiles && p < rp->scope_profiles[0]->n_profiles;
		     p++) {
			const profile *pr = rp->scope_profiles[0]->profiles[p];

			fprintf(f, "%s ", resource_attr(rp, "service.name"));
			for (size_t k = 0; k < pr->profile_id.len; k++)
				fprintf(f, "%02x", pr->profile_id.data[k]);
			fputc('\n', f);
		}
	}
	if (f)
		fclose(f);
	return out;
}

static void test_unpack(void)
{
	struct push_window w = window(WIN_ID, START_MS), other = window(WIN_ID + 1, END_MS);
	struct push_request_opts o = opts(PUSH_SERVICE_BY_WHO);
	uint8_t *b1, *b2, *b3, *b4;
	size_t l1, l2, l3, l4;
	request *r1 = build(&w, &o, &b1, &l1), *r2, *r3, *r4;
	char *ids1, *ids2, *ids4;

	if (!r1)
		return;
	check_request(r1, PUSH_SERVICE_BY_WHO, &w, PUSH_PROFILE_SAMPLES_MAX);
	ids1 = ids_of(r1);

	/* Built again: the same bytes. */
	r2 = build(&w, &o, &b2, &l2);
	if (r2) {
		CHECK(l1 == l2 && !memcmp(b1, b2, l1));
		request_free(r2);
		free(b2);
	}
	/* Rows reversed: the same profiles and ids. */
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[N_ROWS - 1 - i].s;
	r2 = build(&w, &o, &b2, &l2);
	if (r2) {
		check_dictionary(r2);
		ids2 = ids_of(r2);
		CHECK(ids1 && ids2 && !strcmp(ids1, ids2));
		free(ids2);
		request_free(r2);
		free(b2);
	}
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[i].s;

	/* Another window: no id in common. */
	r3 = build(&other, &o, &b3, &l3);
	if (r3) {
		char *ids3 = ids_of(r3), *line, *save = NULL;

		check_request(r3, PUSH_SERVICE_BY_WHO, &other, PUSH_PROFILE_SAMPLES_MAX);
		for (line = ids3 ? strtok_r(ids3, "\n", &save) : NULL; line;
		     line = strtok_r(NULL, "\n", &save))
			CHECK_MSG(ids1 && !strstr(ids1, strrchr(line, ' ') + 1), "(%s)", line);
		free(ids3);
		request_free(r3);
		free(b3);
	}

	/* By process name; one row per profile: every series in parts. */
	o = opts(PUSH_SERVICE_BY_PROCESS);
	o.max_samples = 1;
	r4 = build(&w, &o, &b4, &l4);
	if (r4) {
		size_t n = 0;

		check_request(r4, PUSH_SERVICE_BY_PROCESS, &w, 1);
		for (size_t i = 0; i < r4->n_resource_profiles; i++)
			n += r4->resource_profiles[i]->scope_profiles[0]->n_profiles;
		CHECK(n == N_ROWS);
		ids4 = ids_of(r4);
		CHECK(ids4 && strstr(ids4, "redis-server ") && !strstr(ids4, "docker:"));
		free(ids4);
		request_free(r4);
		free(b4);
	}
	/* Two rows per profile: the series of two rows in one part, whole. */
	o = opts(PUSH_SERVICE_BY_WHO);
	o.max_samples = 2;
	r4 = build(&w, &o, &b4, &l4);
	if (r4) {
		check_request(r4, PUSH_SERVICE_BY_WHO, &w, 2);
		request_free(r4);
		free(b4);
	}
	/* No static labels (and no array for them): two resource attributes. */
	o = opts(PUSH_SERVICE_BY_WHO);
	o.labels = NULL;
	o.n_labels = 0;
	r4 = build(&w, &o, &b4, &l4);
	if (r4) {
		check_dictionary(r4);
		CHECK(r4->n_resource_profiles >= 1 &&
		      r4->resource_profiles[0]->resource->n_attributes == 2);
		ids4 = ids_of(r4);
		CHECK(ids1 && ids4 && !strcmp(ids1, ids4)); /* static labels name no profile */
		free(ids4);
		request_free(r4);
		free(b4);
	}
	free(ids1);
	request_free(r1);
	free(b1);
}

/* Who beyond the fixture's (a pod, a pid namespace), a frame without a
 * name, and a value past INT64_MAX. */
static void test_values(void)
{
	static const char *const u_empty[] = { "main", "" };
	struct push_window w = window(WIN_ID, START_MS);
	struct push_request_opts o = opts(PUSH_SERVICE_BY_WHO);
	size_t found_max = 0, found_pod = 0;
	uint8_t *buf;
	size_t len;
	request *req;

	rows[8].value_ns = UINT64_MAX;
	rows[8].ustack = u_empty;
	rows[8].n_ustack = N(u_empty);
	rows[4].pod = "5f0c3a9e-1d2b-4c5e-8f7a-0b1c2d3e4f50";
	rows[4].ns_pid = 7;
	req = build(&w, &o, &buf, &len);
	for (size_t r = 0; req && r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			req->resource_profiles[r]->scope_profiles[0];

		for (size_t p = 0; p < sp->n_profiles; p++) {
			for (size_t s = 0; s < sp->profiles[p]->n_samples; s++) {
				const sample *sa = sp->profiles[p]->samples[s];
				char stack[256];

				if (sa->values[0] == INT64_MAX) {
					found_max++;
					check_sample_attrs(req->dictionary, sa, &rows[8]);
					stack_text(req->dictionary, sa->stack_index, stack,
						   sizeof(stack));
					CHECK_STR(stack, "main;[unknown]");
				} else if (sa->values[0] == (int64_t)rows[4].value_ns) {
					found_pod++;
					check_sample_attrs(req->dictionary, sa, &rows[4]);
				}
			}
		}
	}
	if (req) {
		check_dictionary(req);
		CHECK(found_max == 1 && found_pod == 1);
		request_free(req);
		free(buf);
	}
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[i].s;
}

/* ---- (b) Debian's protoc ---- */

static void test_protoc(void)
{
	struct push_window w = window(WIN_ID, START_MS);
	struct push_request_opts o = opts(PUSH_SERVICE_BY_WHO);
	char *protoc = have("protoc"), *path = NULL, *cmd = NULL, *text;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (!protoc) {
		printf("protoc --decode: skipped: protoc not found "
		       "(scripts/setup-tests.sh installs protobuf-compiler)\n");
		return;
	}
	if (!mkdtemp(tmpdir)) {
		CHECK(!"mkdtemp");
		free(protoc);
		return;
	}
	CHECK(otlp_request_build(&w, &o, &buf, &len) == 0);
	if (!buf || asprintf(&path, "%s/request.bin", tmpdir) < 0 ||
	    write_file(path, buf, len) < 0 ||
	    asprintf(&cmd,
		     "'%s' --decode "
		     "opentelemetry.proto.collector.profiles.v1development."
		     "ExportProfilesServiceRequest"
		     " -I " OTLP_PROTO_DIR " " OTLP_PROTO_DIR
		     "/opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"
		     " < '%s'",
		     protoc, path) < 0) {
		CHECK(!"protoc's input");
		goto out;
	}
	text = run(cmd);
	if (text) {
		static const char *const want[] = {
			"string_table: \"\"\n",
			"string_table: \"off_cpu\"",
			"string_table: \"runq\"",
			"string_table: \"[runqueue]\"",
			"string_table: \"nanoseconds\"",
			"string_table: \"thread.name\"",
			"key: \"service.name\"",
			"string_value: \"nginx.service\"",
			"string_value: \"docker:0123456789ab\"",
			"key: \"host.name\"",
			"string_value: \"" HOST "\"",
			"key: \"env\"",
			"string_value: \"prod\"",
			"name: \"offcpud\"",
			"string_value: \"bad\\357\\277\\275\"", /* U+FFFD, octal */
			"int_value: 401",
			"period: 1",
			"time_unix_nano: 1700000000000000000",
			"duration_nano: 10000000000",
		};

		for (size_t i = 0; i < N(want); i++)
			CHECK_MSG(strstr(text, want[i]), "(protoc's text lacks %s)", want[i]);
		free(text);
	}
out:
	if (path)
		unlink(path);
	rmdir(tmpdir);
	free(path);
	free(cmd);
	free(buf);
	free(protoc);
}

int main(void)
{
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[i].s;
	test_unpack();
	test_values();
	check_refused(otlp_request_build);
	test_protoc();
	return CHECK_DONE();
}
