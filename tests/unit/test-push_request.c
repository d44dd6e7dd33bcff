/*
 * Unit test of daemon/push/push_request.c (and uuid5.c): a window of
 * synthetic rows (two units, a container, a process without a cgroup, a
 * comm that is not UTF-8; kinds offcpu and runq) as a Pyroscope PushRequest,
 * read back three ways: (a) protobuf-c's unpacker: series, labels, ids
 * (stable across builds and row orders, new for another window, pinned to
 * the RFC 4122 version 5 scheme), parts, refused inputs; (b) Debian's
 * `protoc --decode` against proto/push/pyroscope.proto; (c) each profile gunzipped
 * and read by `go tool pprof -raw`: the same total per stack as the rows
 * put in. (b) and (c) are skipped, saying why, where the tool is missing.
 */
#define _GNU_SOURCE /* asprintf, mkdtemp */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "push_fixture.h"
#include "push_request.h"
#include "pyroscope.pb-c.h"
#include "uuid5.h"

static Push__V1__PushRequest *build(const struct push_window *w, const struct push_request_opts *o,
				    uint8_t **ret_buf, size_t *ret_len)
{
	Push__V1__PushRequest *req;
	int r = push_request_build(w, o, ret_buf, ret_len);

	CHECK_MSG(r == 0, "(%s)", strerror(-r));
	if (r)
		return NULL;
	req = push__v1__push_request__unpack(NULL, *ret_len, *ret_buf);
	CHECK(req);
	return req;
}

static const char *label(const Push__V1__RawProfileSeries *s, const char *name)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i]->name, name))
			return s->labels[i]->value;
	return NULL;
}

/* ---- uuid5 ---- */

static void test_uuid5(void)
{
	/* FIPS 180-4's examples, and RFC 4122's DNS namespace with Python's
	 * uuid.uuid5(uuid.NAMESPACE_DNS, "python.org"). */
	static const uint8_t dns_ns[16] = { 0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1,
					    0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8 };
	static const struct {
		const char *in, *hex;
	} sha[] = {
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	char id[UUID5_STR_SIZE], *million = malloc(1000000);

	for (size_t i = 0; i < N(sha); i++) {
		uint8_t d[20];
		char hex[41];

		uuid5_sha1(sha[i].in, strlen(sha[i].in), d);
		for (int k = 0; k < 20; k++)
			sprintf(hex + 2 * k, "%02x", d[k]);
		CHECK_STR(hex, sha[i].hex);
	}
	if (million) { /* a million 'a's: many blocks */
		uint8_t d[20];
		char hex[41];

		memset(million, 'a', 1000000);
		uuid5_sha1(million, 1000000, d);
		for (int k = 0; k < 20; k++)
			sprintf(hex + 2 * k, "%02x", d[k]);
		CHECK_STR(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
		free(million);
	}
	uuid5_make(dns_ns, "python.org", 10, id);
	CHECK_STR(id, "886313e1-3b8a-5372-9b90-0c9aee199e5d");
	/* The push ids' scheme, pinned: a change would make a retried push of a
	 * window sent before an upgrade a new push. Python:
	 * uuid5(UUID("e9d913a1-2873-4608-aaa6-36163407f341"),
	 *       "host-a\0" "42\0" "1700000000000\0" "nginx.service\0" "offcpu\0" "0") */
	push_request_id(HOST, WIN_ID, START_MS, "nginx.service", "offcpu", 0, id);
	CHECK_STR(id, "0782e344-56e4-5374-8a6b-028e24df9b11");
}

/* ---- (a) read back with protobuf-c ---- */

static void check_request(const Push__V1__PushRequest *req, enum push_service_by by,
			  const struct push_window *w, size_t max_samples)
{
	static const char *const names[] = { "__name__", "env",	   "host",
					     "kind",	 "region", "service_name" };
	size_t rows_seen = 0;

	CHECK_MSG(req->n_series == N_SERIES, "(%zu series)", req->n_series);
	for (size_t i = 0; i < req->n_series; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];
		const char *service = label(s, "service_name"), *kind = label(s, "kind");
		size_t idx[N_ROWS], n;

		CHECK(s->n_labels == N(names));
		for (size_t k = 0; k < s->n_labels && k < N(names); k++)
			CHECK_STR(s->labels[k]->name, names[k]); /* sorted */
		if (!service || !kind)
			continue;
		CHECK_STR(label(s, "__name__"), kind);
		CHECK_STR(label(s, "host"), HOST);
		CHECK_STR(label(s, "env"), "prod");
		CHECK_STR(label(s, "region"), "eu_west");
		n = expected_rows(by, service, kind, idx);
		CHECK_MSG(n > 0, "(unexpected series %s/%s)", service, kind);
		CHECK_MSG(s->n_samples == (n + max_samples - 1) / max_samples, "(%s/%s: %zu)",
			  service, kind, s->n_samples);
		rows_seen += n;
		for (size_t p = 0; p < s->n_samples; p++) {
			char id[UUID5_STR_SIZE];

			push_request_id(HOST, w->id, w->start_ms, service, kind, p, id);
			CHECK_STR(s->samples[p]->id, id);
			CHECK(strlen(s->samples[p]->id) == 36 && s->samples[p]->id[14] == '5' &&
			      strchr("89ab", s->samples[p]->id[19]));
			/* gzip's magic */
			CHECK(s->samples[p]->raw_profile.len > 18 &&
			      s->samples[p]->raw_profile.data[0] == 0x1f &&
			      s->samples[p]->raw_profile.data[1] == 0x8b);
		}
	}
	CHECK(rows_seen == N_ROWS);
}

/* The ids of req, in order, joined. */
static char *ids_of(const Push__V1__PushRequest *req)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = 0; f && i < req->n_series; i++)
		for (size_t p = 0; p < req->series[i]->n_samples; p++)
			fprintf(f, "%s %s\n", label(req->series[i], "service_name"),
				req->series[i]->samples[p]->id);
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
	Push__V1__PushRequest *r1 = build(&w, &o, &b1, &l1), *r2, *r3, *r4;
	char *ids1, *ids2, *ids3, *ids4;

	if (!r1)
		return;
	check_request(r1, PUSH_SERVICE_BY_WHO, &w, PUSH_PROFILE_SAMPLES_MAX);
	ids1 = ids_of(r1);

	/* Built again, rows reversed: the same series and ids. */
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[N_ROWS - 1 - i].s;
	r2 = build(&w, &o, &b2, &l2);
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[i].s;
	if (r2) {
		ids2 = ids_of(r2);
		CHECK(ids1 && ids2 && !strcmp(ids1, ids2));
		free(ids2);
		push__v1__push_request__free_unpacked(r2, NULL);
		free(b2);
	}

	/* Another window: no id in common. */
	r3 = build(&other, &o, &b3, &l3);
	if (r3) {
		check_request(r3, PUSH_SERVICE_BY_WHO, &other, PUSH_PROFILE_SAMPLES_MAX);
		ids3 = ids_of(r3);
		for (size_t i = 0; i < r3->n_series; i++)
			CHECK(ids1 && !strstr(ids1, r3->series[i]->samples[0]->id));
		free(ids3);
		push__v1__push_request__free_unpacked(r3, NULL);
		free(b3);
	}

	/* By process name; one row per profile: every series in parts. */
	o = opts(PUSH_SERVICE_BY_PROCESS);
	o.max_samples = 1;
	r4 = build(&w, &o, &b4, &l4);
	if (r4) {
		size_t n = 0;

		check_request(r4, PUSH_SERVICE_BY_PROCESS, &w, 1);
		for (size_t i = 0; i < r4->n_series; i++)
			n += r4->series[i]->n_samples;
		CHECK(n == N_ROWS);
		ids4 = ids_of(r4);
		CHECK(ids4 && strstr(ids4, "redis-server ") && !strstr(ids4, "docker:"));
		free(ids4);
		push__v1__push_request__free_unpacked(r4, NULL);
		free(b4);
	}
	/* No static labels (and no array for them): the four of our own. */
	o = opts(PUSH_SERVICE_BY_WHO);
	o.labels = NULL;
	o.n_labels = 0;
	r4 = build(&w, &o, &b4, &l4);
	if (r4) {
		CHECK(r4->n_series == N_SERIES && r4->series[0]->n_labels == PUSH_LABELS_OWN);
		ids4 = ids_of(r4);
		CHECK(ids1 && ids4 && !strcmp(ids1, ids4)); /* static labels name no series */
		free(ids4);
		push__v1__push_request__free_unpacked(r4, NULL);
		free(b4);
	}
	free(ids1);
	push__v1__push_request__free_unpacked(r1, NULL);
	free(b1);
}

static void test_refused(void)
{
	struct push_label many[PUSH_LABELS_MAX];
	char names[PUSH_LABELS_MAX][8];
	static const struct push_label bad[][1] = {
		{ { "__x", "1" } },  { { "1abc", "1" } },   { { "a-b", "1" } },
		{ { "host", "1" } }, { { "kind", "1" } },   { { "service_name", "1" } },
		{ { "env", "" } },   { { "env", "\xc3" } }, { { "env", "\xed\xa0\x80" } },
		{ { "", "x" } },
	};
	static const struct push_label dup[] = { { "env", "a" }, { "env", "b" } };

	for (size_t i = 0; i < PUSH_LABELS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "l%zu", i);
		many[i] = (struct push_label){ names[i], "v" };
	}
	CHECK(push_request_labels_check(many, PUSH_LABELS_MAX - PUSH_LABELS_OWN) == 0);
	CHECK(push_request_labels_check(many, PUSH_LABELS_MAX - PUSH_LABELS_OWN + 1) == -E2BIG);
	for (size_t i = 0; i < N(bad); i++)
		CHECK_MSG(push_request_labels_check(bad[i], 1) == -EINVAL, "(%s=%s)",
			  bad[i][0].name, bad[i][0].value);
	CHECK(push_request_labels_check(dup, 2) == -EINVAL);
	CHECK(push_request_labels_check((struct push_label[]){ { "env", "caf\xc3\xa9" } }, 1) == 0);

	check_refused(push_request_build);
}

/* ---- (b) and (c): the reference readers ---- */

static void test_protoc(const uint8_t *buf, size_t len, const Push__V1__PushRequest *req)
{
	char *protoc = have("protoc"), *path = NULL, *cmd = NULL, *text;

	if (!protoc) {
		printf("protoc --decode: skipped: protoc not found "
		       "(scripts/setup-tests.sh installs protobuf-compiler)\n");
		return;
	}
	if (asprintf(&path, "%s/request.bin", tmpdir) < 0 || write_file(path, buf, len) < 0 ||
	    asprintf(&cmd,
		     "'%s' --decode push.v1.PushRequest -I " PUSH_PROTO_DIR " " PUSH_PROTO_DIR
		     "/pyroscope.proto < '%s'",
		     protoc, path) < 0) {
		CHECK(!"protoc's input");
		goto out;
	}
	text = run(cmd);
	if (text) {
		static const char *const want[] = {
			"name: \"__name__\"",	    "value: \"offcpu\"",
			"value: \"runq\"",	    "name: \"service_name\"",
			"value: \"nginx.service\"", "value: \"docker:0123456789ab\"",
			"value: \"worker-1\"",	    "name: \"host\"",
			"value: \"" HOST "\"",	    "name: \"env\"",
			"value: \"prod\"",	    "raw_profile: \"\\037\\213",
		};

		for (size_t i = 0; i < N(want); i++)
			CHECK_MSG(strstr(text, want[i]), "(protoc's text lacks %s)", want[i]);
		for (size_t i = 0; i < req->n_series; i++) {
			char *id;

			if (asprintf(&id, "ID: \"%s\"", req->series[i]->samples[0]->id) < 0)
				continue;
			CHECK_MSG(strstr(text, id), "(protoc's text lacks %s)", id);
			free(id);
		}
		free(text);
	}
out:
	if (path)
		unlink(path);
	free(path);
	free(cmd);
	free(protoc);
}

/* The gunzipped bytes of gz; malloc'd, NULL if gz is not gzip. */
static uint8_t *gunzip(const uint8_t *gz, size_t len, size_t *ret_len)
{
	z_stream z = { 0 };
	size_t cap = 4096, n = 0;
	uint8_t *out = malloc(cap), *o;
	int r = Z_DATA_ERROR;

	if (!out || inflateInit2(&z, 15 + 16) != Z_OK) { /* gzip only */
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	do {
		if (n == cap) {
			o = realloc(out, cap * 2);
			if (!o)
				break;
			out = o;
			cap *= 2;
		}
		z.next_out = out + n;
		z.avail_out = (uInt)(cap - n);
		r = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
	} while (r == Z_OK);
	inflateEnd(&z);
	if (r != Z_STREAM_END || z.avail_in) {
		free(out);
		return NULL;
	}
	*ret_len = n;
	return out;
}

#define MAX_LOCS 64

/*
 * Go's pprof's reading of a profile file (`go tool pprof -raw`): its samples'
 * values by stack. The text has a "Samples:" section, a header line of
 * sample types, then per sample "COUNT NS: LOC LOC ..." (leaf first) and
 * its label lines; then "Locations", one "ID: 0x0 M=1 NAME :0 s=0" each.
 */
static int pprof_read(const char *text, struct totals *ret, char **ret_header)
{
	char *copy = strdup(text), *line, *save = NULL, *names[MAX_LOCS + 1] = { 0 };
	struct {
		uint64_t v[2];
		unsigned loc[MAX_LOCS];
		size_t n;
	} s[MAX_STACKS * 4];
	size_t n_s = 0;
	int section = 0; /* 0 header, 1 samples, 2 locations, 3 after */

	if (!copy)
		return -ENOMEM;
	*ret_header = NULL;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long c, ns;
		unsigned id;
		int used;
		char name[256];

		if (!strcmp(line, "Samples:")) {
			section = 1;
			continue;
		}
		if (!strcmp(line, "Locations")) {
			section = 2;
			continue;
		}
		if (!strcmp(line, "Mappings")) {
			section = 3;
			continue;
		}
		if (section == 0 && !strncmp(line, "Duration: ", 10))
			*ret_header = strdup(line);
		if (section == 1 && sscanf(line, " %llu %llu:%n", &c, &ns, &used) == 2 &&
		    n_s < sizeof(s) / sizeof(s[0])) {
			const char *p = line + used;
			int k;

			s[n_s].v[0] = c;
			s[n_s].v[1] = ns;
			s[n_s].n = 0;
			while (s[n_s].n < MAX_LOCS && sscanf(p, " %u%n", &id, &k) == 1) {
				s[n_s].loc[s[n_s].n++] = id;
				p += k;
			}
			n_s++;
		} else if (section == 2 &&
			   sscanf(line, " %u: 0x0 M=1 %255s :0 s=0", &id, name) == 2 &&
			   id <= MAX_LOCS) {
			free(names[id]);
			names[id] = strdup(name);
		}
	}
	for (size_t i = 0; i < n_s; i++) {
		char stack[1024] = "";
		size_t len = 0;

		for (size_t k = s[i].n; k-- > 0;) { /* leaf first in the profile */
			const char *nm = s[i].loc[k] <= MAX_LOCS && names[s[i].loc[k]]
						 ? names[s[i].loc[k]]
						 : "?";

			len += (size_t)snprintf(stack + len, sizeof(stack) - len, "%s%s",
						len ? ";" : "", nm);
			if (len >= sizeof(stack))
				break;
		}
		totals_add(ret, stack, s[i].v[0], s[i].v[1]);
	}
	for (size_t i = 0; i <= MAX_LOCS; i++)
		free(names[i]);
	free(copy);
	return 0;
}

static void test_go_pprof(const Push__V1__PushRequest *req, enum push_service_by by)
{
	char *go = have("go");
	size_t checked = 0;

	if (!go) {
		printf("go tool pprof: skipped: go not found (scripts/setup-tests.sh installs "
		       "golang-go)\n");
		return;
	}
	for (size_t i = 0; i < req->n_series; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];
		const char *service = label(s, "service_name"), *kind = label(s, "kind");
		size_t idx[N_ROWS], n = expected_rows(by, service, kind, idx), plain_len = 0;
		uint8_t *plain = gunzip(s->samples[0]->raw_profile.data,
					s->samples[0]->raw_profile.len, &plain_len);
		char *path = NULL, *cmd = NULL, *text = NULL, *header = NULL, what[256];
		struct totals got = { 0 }, want = { 0 };

		CHECK_MSG(plain, "(%s/%s: not gzip)", service, kind);
		if (!plain || asprintf(&path, "%s/profile-%zu.pb", tmpdir, i) < 0 ||
		    write_file(path, plain, plain_len) < 0 ||
		    asprintf(&cmd, "TZ=UTC '%s' tool pprof -raw -symbolize=none '%s'", go, path) <
			    0)
			goto next;
		text = run(cmd);
		if (!text || pprof_read(text, &got, &header) < 0)
			goto next;
		CHECK_MSG(header && !strcmp(header, "Duration: 10s"), "(%s)",
			  header ? header : "no duration");
		for (size_t k = 0; k < n; k++) {
			char stack[1024];

			row_stack(&cases[idx[k]].s, stack, sizeof(stack));
			totals_add(&want, stack, cases[idx[k]].s.count, cases[idx[k]].s.value_ns);
		}
		snprintf(what, sizeof(what), "%s/%s", service, kind);
		TOTALS_CHECK(&got, &want, what);
		checked++;
	next:
		totals_free(&got);
		totals_free(&want);
		if (path)
			unlink(path);
		free(path);
		free(cmd);
		free(text);
		free(header);
		free(plain);
	}
	CHECK(checked == req->n_series);
	free(go);
}

static void test_readers(void)
{
	struct push_window w = window(WIN_ID, START_MS);
	struct push_request_opts o = opts(PUSH_SERVICE_BY_WHO);
	uint8_t *buf;
	size_t len;
	Push__V1__PushRequest *req;

	if (!mkdtemp(tmpdir)) {
		CHECK(!"mkdtemp");
		return;
	}
	req = build(&w, &o, &buf, &len);
	if (req) {
		test_protoc(buf, len, req);
		test_go_pprof(req, PUSH_SERVICE_BY_WHO);
		push__v1__push_request__free_unpacked(req, NULL);
		free(buf);
	}
	rmdir(tmpdir);
}

int main(void)
{
	for (size_t i = 0; i < N_ROWS; i++)
		rows[i] = cases[i].s;
	test_uuid5();
	test_unpack();
	test_refused();
	test_readers();
	return CHECK_DONE();
}
