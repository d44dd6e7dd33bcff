/* pt_perf: a PT recording's sideband from perf records (see pt_perf.h). */
#include "pt_perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>

/* Every record ends with what sample_id_all adds for TID | TIME. */
struct pt_perf_sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

#define PT_PERF_MMAP2_FILENAME 64 /* offset of MMAP2's filename after the header */

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* An executable file mapping of the process: a map, with the build-id
 * the kernel read if the event asked for it (attr.build_id). */
static int pt_perf_mmap2(struct pt_perf_sink *s, const uint8_t *body, size_t size, uint16_t misc)
{
	char build_id[2 * 20 + 1] = "";
	const char *name = (const char *)body + PT_PERF_MMAP2_FILENAME;
	size_t name_max = size - PT_PERF_MMAP2_FILENAME - sizeof(struct pt_perf_sample_id);
	uint32_t prot = get_u32(body + 56);
	uint64_t start = get_u64(body + 8), len = get_u64(body + 16);

	if (get_u32(body) != s->pid || !(prot & PROT_EXEC) || !memchr(name, 0, name_max))
		return 0;
	if (!len || start + len < start) {
		s->counts.malformed++;
		return 0;
	}
	if (name[0] != '/' && strcmp(name, "[vdso]"))
		return 0; /* anonymous or JIT code: nothing to decode it with */
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
		pt_trace_build_id_hex(body + 36, body[32] < 20 ? body[32] : 20, build_id);
	return pt_trace_add_map(s->trace, start, start + len, get_u64(body + 24), name, build_id);
}

/* Bytes after the header each record type needs, sample_id included. */
static size_t pt_perf_min_size(uint32_t type)
{
	size_t id = sizeof(struct pt_perf_sample_id);

	switch (type) {
	case PERF_RECORD_MMAP2:
		return PT_PERF_MMAP2_FILENAME + 8 + id;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return 24 + id;
	case PERF_RECORD_AUX:
		return 24 + id;
	case PERF_RECORD_LOST:
		return 16 + id;
	case PERF_RECORD_ITRACE_START:
		return 8 + id;
	default:
		return id;
	}
}

long pt_perf_parse(struct pt_perf_sink *s, struct pt_trace_stream *stream, const uint8_t *buf,
		   size_t size)
{
	size_t off = 0;

	while (size - off >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		struct pt_perf_sample_id id;
		const uint8_t *body;
		size_t body_size;
		int r = 0;

		memcpy(&h, buf + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8) {
			/* The ring's framing is lost: nothing after this can
			 * be trusted, so all of it is skipped. */
			s->counts.malformed++;
			return (long)size;
		}
		if (h.size > size - off)
			break; /* cut at the end: the rest comes next time */
		body = buf + off + sizeof(h);
		body_size = h.size - sizeof(h);
		off += h.size;
		if (body_size < pt_perf_min_size(h.type)) {
			s->counts.malformed++;
			continue;
		}
		memcpy(&id, body + body_size - sizeof(id), sizeof(id));
		s->counts.records++;
		switch (h.type) {
		case PERF_RECORD_MMAP2:
			r = pt_perf_mmap2(s, body, body_size, h.misc);
			break;
		case PERF_RECORD_SWITCH:
			if (id.pid == s->pid)
				r = pt_trace_add_switch(s->trace, id.time, id.tid,
							!!(h.misc & PERF_RECORD_MISC_SWITCH_OUT));
			break;
		case PERF_RECORD_FORK:
			/* a thread of the process, not a child process */
			if (get_u32(body) == s->pid && get_u32(body + 4) == s->pid) {
				s->counts.forks++;
				if (s->new_thread)
					r = s->new_thread(s->ctx, get_u32(body + 8));
			}
			break;
		case PERF_RECORD_AUX: {
			uint64_t flags = get_u64(body + 16);

			if (flags & PERF_AUX_FLAG_TRUNCATED) {
				s->counts.truncated++;
				if (stream)
					stream->truncated = 1;
			}
			if (flags & PERF_AUX_FLAG_COLLISION)
				s->counts.collisions++;
			break;
		}
		case PERF_RECORD_LOST:
			s->counts.lost += get_u64(body + 8);
			if (stream)
				stream->lost += get_u64(body + 8);
			break;
		default:
			break; /* EXIT, ITRACE_START, COMM: nothing to keep */
		}
		if (r < 0)
			return r;
	}
	return (long)off;
}
