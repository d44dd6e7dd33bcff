/*
 * pt_trace: the stored Intel PT recording (see pt_trace.h).
 *
 * Layout, little-endian:
 *   "OFFCPUPT" u32 version(1) u32 reserved
 *   meta: u32 vendor family model stepping, u64 perf_config, u32 mtc_freq
 *         nom_freq cpuid_0x15_eax cpuid_0x15_ebx time_shift time_mult,
 *         u64 time_zero, u32 pid u32 reserved
 *   records: u32 type u32 reserved u64 payload_size, payload
 *     1 map:    u64 start end pgoff, u32 path_len build_id_len, bytes
 *     2 switch: u64 time_ns (perf clock), u32 tid out
 *     3 stream: u32 tid truncated, u64 lost, trace bytes
 * Unknown record types are skipped, so later versions can add sideband.
 */
#include "pt_trace.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"

#define PT_TRACE_MAGIC	  "OFFCPUPT"
#define PT_TRACE_VERSION  1
#define PT_TRACE_PATH_MAX 4096

enum { PT_REC_MAP = 1, PT_REC_SWITCH = 2, PT_REC_STREAM = 3 };

int pt_trace_add_map(struct pt_trace *t, uint64_t start, uint64_t end, uint64_t pgoff,
		     const char *path, const char *build_id)
{
	struct pt_trace_map m = { .start = start, .end = end, .pgoff = pgoff };

	if (array_grow(&t->maps, &t->cap_maps, t->n_maps + 1, sizeof(*t->maps), 4) < 0)
		return -ENOMEM;
	m.path = strdup(path);
	m.build_id = strdup(build_id ? build_id : "");
	if (!m.path || !m.build_id) {
		free(m.path);
		free(m.build_id);
		return -ENOMEM;
	}
	t->maps[t->n_maps++] = m;
	return 0;
}

void pt_trace_build_id_hex(const uint8_t *id, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		*out++ = hex[id[i] >> 4];
		*out++ = hex[id[i] & 15];
	}
	*out = '\0';
}

int pt_trace_add_switch(struct pt_trace *t, uint64_t time_ns, uint32_t tid, int out)
{
	if (array_grow(&t->switches, &t->cap_switches, t->n_switches + 1, sizeof(*t->switches), 4) <
	    0)
		return -ENOMEM;
	t->switches[t->n_switches++] =
		(struct pt_trace_switch){ .time_ns = time_ns, .tid = tid, .out = !!out };
	return 0;
}

int pt_trace_add_stream(struct pt_trace *t, uint32_t tid, const void *data, size_t size)
{
	struct pt_trace_stream s = { .tid = tid, .size = size };

	if (array_grow(&t->streams, &t->cap_streams, t->n_streams + 1, sizeof(*t->streams), 4) < 0)
		return -ENOMEM;
	s.data = malloc(size ? size : 1);
	if (!s.data)
		return -ENOMEM;
	memcpy(s.data, data, size);
	t->streams[t->n_streams++] = s;
	return 0;
}

static int pt_switch_cmp(const void *a, const void *b)
{
	const struct pt_trace_switch *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

void pt_trace_sort_switches(struct pt_trace *t)
{
	if (t->n_switches)
		qsort(t->switches, t->n_switches, sizeof(*t->switches), pt_switch_cmp);
}

void pt_trace_clear(struct pt_trace *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_maps; i++) {
		free(t->maps[i].path);
		free(t->maps[i].build_id);
	}
	for (size_t i = 0; i < t->n_streams; i++)
		free(t->streams[i].data);
	free(t->maps);
	free(t->switches);
	free(t->streams);
	memset(t, 0, sizeof(*t));
}

/* Writing: fields go through put_u32/put_u64 into one stdio stream. */
static void put_u32(FILE *f, uint32_t v)
{
	v = htole32(v);
	fwrite(&v, sizeof(v), 1, f);
}

static void put_u64(FILE *f, uint64_t v)
{
	v = htole64(v);
	fwrite(&v, sizeof(v), 1, f);
}

static void put_record(FILE *f, uint32_t type, uint64_t size)
{
	put_u32(f, type);
	put_u32(f, 0);
	put_u64(f, size);
}

static void put_meta(FILE *f, const struct pt_trace_meta *m)
{
	put_u32(f, m->cpu_vendor);
	put_u32(f, m->cpu_family);
	put_u32(f, m->cpu_model);
	put_u32(f, m->cpu_stepping);
	put_u64(f, m->perf_config);
	put_u32(f, m->mtc_freq);
	put_u32(f, m->nom_freq);
	put_u32(f, m->cpuid_0x15_eax);
	put_u32(f, m->cpuid_0x15_ebx);
	put_u32(f, m->time_shift);
	put_u32(f, m->time_mult);
	put_u64(f, m->time_zero);
	put_u32(f, m->pid);
	put_u32(f, 0);
}

int pt_trace_write(const struct pt_trace *t, const char *path)
{
	char tmp[PT_TRACE_PATH_MAX];
	FILE *f;
	int r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fwrite(PT_TRACE_MAGIC, 8, 1, f);
	put_u32(f, PT_TRACE_VERSION);
	put_u32(f, 0);
	put_meta(f, &t->meta);
	for (size_t i = 0; i < t->n_maps; i++) {
		const struct pt_trace_map *m = &t->maps[i];
		size_t pl = strlen(m->path), bl = strlen(m->build_id);

		put_record(f, PT_REC_MAP, 3 * 8 + 2 * 4 + pl + bl);
		put_u64(f, m->start);
		put_u64(f, m->end);
		put_u64(f, m->pgoff);
		put_u32(f, pl);
		put_u32(f, bl);
		fwrite(m->path, 1, pl, f);
		fwrite(m->build_id, 1, bl, f);
	}
	for (size_t i = 0; i < t->n_switches; i++) {
		put_record(f, PT_REC_SWITCH, 16);
		put_u64(f, t->switches[i].time_ns);
		put_u32(f, t->switches[i].tid);
		put_u32(f, t->switches[i].out);
	}
	for (size_t i = 0; i < t->n_streams; i++) {
		const struct pt_trace_stream *s = &t->streams[i];

		put_record(f, PT_REC_STREAM, 16 + s->size);
		put_u32(f, s->tid);
		put_u32(f, s->truncated);
		put_u64(f, s->lost);
		fwrite(s->data, 1, s->size, f);
	}
	if (ferror(f))
		r = -EIO;
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

/* Reading: a cursor over the whole file in memory; get_* fail past the end. */
struct pt_cursor {
	const uint8_t *p, *end;
};

static int get_bytes(struct pt_cursor *c, void *out, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return -EINVAL;
	memcpy(out, c->p, n);
	c->p += n;
	return 0;
}

static int get_u32(struct pt_cursor *c, uint32_t *v)
{
	uint32_t x = 0;
	int r = get_bytes(c, &x, sizeof(x));

	*v = le32toh(x);
	return r;
}

static int get_u64(struct pt_cursor *c, uint64_t *v)
{
	uint64_t x = 0;
	int r = get_bytes(c, &x, sizeof(x));

	*v = le64toh(x);
	return r;
}

static int get_meta(struct pt_cursor *c, struct pt_trace_meta *m)
{
	uint32_t pad;

	return get_u32(c, &m->cpu_vendor) | get_u32(c, &m->cpu_family) | get_u32(c, &m->cpu_model) |
	       get_u32(c, &m->cpu_stepping) | get_u64(c, &m->perf_config) |
	       get_u32(c, &m->mtc_freq) | get_u32(c, &m->nom_freq) |
	       get_u32(c, &m->cpuid_0x15_eax) | get_u32(c, &m->cpuid_0x15_ebx) |
	       get_u32(c, &m->time_shift) | get_u32(c, &m->time_mult) | get_u64(c, &m->time_zero) |
	       get_u32(c, &m->pid) | get_u32(c, &pad);
}

static int pt_read_map(struct pt_trace *t, struct pt_cursor *c)
{
	char path[PT_TRACE_PATH_MAX], bid[128];
	uint64_t start, end, pgoff;
	uint32_t pl, bl;

	if (get_u64(c, &start) | get_u64(c, &end) | get_u64(c, &pgoff) | get_u32(c, &pl) |
	    get_u32(c, &bl))
		return -EINVAL;
	if (pl >= sizeof(path) || bl >= sizeof(bid) || start >= end)
		return -EINVAL;
	if (get_bytes(c, path, pl) < 0 || get_bytes(c, bid, bl) < 0)
		return -EINVAL;
	path[pl] = bid[bl] = 0;
	return pt_trace_add_map(t, start, end, pgoff, path, bid);
}

static int pt_read_records(struct pt_trace *t, struct pt_cursor *c, char *err, size_t err_size)
{
	while (c->p < c->end) {
		struct pt_cursor rec;
		uint32_t type, pad, tid, flag;
		uint64_t size, time_ns, lost;
		int r = 0;

		if (get_u32(c, &type) | get_u32(c, &pad) | get_u64(c, &size) ||
		    size > (uint64_t)(c->end - c->p)) {
			snprintf(err, err_size, "trace file is cut short");
			return -EINVAL;
		}
		rec = (struct pt_cursor){ c->p, c->p + size };
		c->p += size;
		switch (type) {
		case PT_REC_MAP:
			r = pt_read_map(t, &rec);
			break;
		case PT_REC_SWITCH:
			r = get_u64(&rec, &time_ns) | get_u32(&rec, &tid) | get_u32(&rec, &flag);
			if (!r)
				r = pt_trace_add_switch(t, time_ns, tid, flag);
			break;
		case PT_REC_STREAM:
			r = get_u32(&rec, &tid) | get_u32(&rec, &flag) | get_u64(&rec, &lost);
			if (!r)
				r = pt_trace_add_stream(t, tid, rec.p, rec.end - rec.p);
			if (!r) {
				t->streams[t->n_streams - 1].truncated = flag;
				t->streams[t->n_streams - 1].lost = lost;
			}
			break;
		default:
			break;
		}
		if (r == -ENOMEM)
			return r;
		if (r) {
			snprintf(err, err_size, "malformed record of type %u", type);
			return -EINVAL;
		}
	}
	return 0;
}

int pt_trace_read(const char *path, struct pt_trace *ret, char *err, size_t err_size)
{
	struct pt_trace t = { 0 };
	struct pt_cursor c;
	char magic[8];
	uint32_t version, pad;
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if ((uint64_t)st.st_size > PT_TRACE_MAX_BYTES) {
		r = -EFBIG;
		goto out;
	}
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size && (n = read(fd, buf + got, st.st_size - got)) > 0)
		got += n;
	c = (struct pt_cursor){ buf, buf + got };
	if (get_bytes(&c, magic, 8) < 0 || memcmp(magic, PT_TRACE_MAGIC, 8)) {
		snprintf(err, err_size, "not an offcpud PT trace file");
		r = -EINVAL;
		goto out;
	}
	if (get_u32(&c, &version) | get_u32(&c, &pad) || version != PT_TRACE_VERSION) {
		snprintf(err, err_size, "PT trace file version %u (this offcpuctl reads %u)",
			 version, PT_TRACE_VERSION);
		r = -EINVAL;
		goto out;
	}
	if (get_meta(&c, &t.meta) < 0 || t.meta.time_shift > 63) {
		snprintf(err, err_size, "trace file header is cut short");
		r = -EINVAL;
		goto out;
	}
	r = pt_read_records(&t, &c, err, err_size);
	if (!r) {
		pt_trace_sort_switches(&t);
		*ret = t;
		memset(&t, 0, sizeof(t));
	}
out:
	pt_trace_clear(&t);
	free(buf);
	close(fd);
	return r;
}
