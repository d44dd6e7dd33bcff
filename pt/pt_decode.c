/* pt_decode: libipt block decoding into pt_latency (see pt_decode.h). */
#include "pt_decode.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Instructions decoded without reading a packet before the decoder counts
 * as stuck. Real code reaches a conditional or indirect branch (which
 * needs trace) long before: blocks end at calls, and a TNT packet's bits
 * cover at most 47 branches. The trace offset is sampled once per this
 * many instructions rather than asked for after every block, so a stuck
 * stretch is seen after at most twice as many. */
#define PT_WALK_STUCK_INSNS (1u << 18)
/* Stuck stretches after which the rest of a stream is given up: its trace
 * does not fit the image, and each stretch costs PT_WALK_STUCK_INSNS. */
#define PT_STREAM_MAX_STUCK 4

/* What the walk of one stream remembers between blocks. */

struct pt_walk {
	struct pt_block_decoder *dec;
	struct pt_latency *a;
	bool call_pending; /* the last block ended with a call */
	uint64_t call_tsc; /* its time */
	bool outside_call; /* tracing stopped at a call out of the filtered range */
	unsigned stuck;	   /* stretches given up as stuck */
};

static void pt_config_from_meta(struct pt_config *c, const struct pt_trace_meta *m)
{
	pt_config_init(c);
	c->cpu.vendor = m->cpu_vendor == 1 ? pcv_intel : pcv_unknown;
	c->cpu.family = m->cpu_family;
	c->cpu.model = m->cpu_model;
	c->cpu.stepping = m->cpu_stepping;
	if (c->cpu.vendor == pcv_intel)
		pt_cpu_errata(&c->errata, &c->cpu);
	c->mtc_freq = m->mtc_freq;
	c->nom_freq = m->nom_freq;
	c->cpuid_0x15_eax = m->cpuid_0x15_eax;
	c->cpuid_0x15_ebx = m->cpuid_0x15_ebx;
	c->flags.variant.block.end_on_call = 1;
	/* libipt 2.0.5 recurses once per direct jump it follows through its
	 * block cache: a jump loop ("jmp .") would overflow the stack. Ending
	 * blocks at jumps returns to pt_walk_run, whose guard sees the loop
	 * (1 % slower on bench/pt_bench). */
	c->flags.variant.block.end_on_jump = 1;
}

static uint64_t pt_walk_time(const struct pt_walk *w)
{
	uint64_t tsc = 0;
	uint32_t lost_mtc, lost_cyc;

	pt_blk_time(w->dec, &tsc, &lost_mtc, &lost_cyc);
	return tsc;
}

/* The time of an event: its own, or the decoder's for events without. */
static uint64_t pt_walk_event_time(const struct pt_walk *w, const struct pt_event *ev)
{
	return ev->has_tsc ? ev->tsc : pt_walk_time(w);
}

static int pt_walk_event(struct pt_walk *w, const struct pt_event *ev)
{
	int r = 0;

	switch (ev->type) {
	case ptev_enabled:
		/* Back from a callee outside the filter, or the filter's start. */
		if (w->outside_call)
			r = pt_latency_leave(w->a, pt_walk_event_time(w, ev));
		else if (!ev->ip_suppressed && !ev->variant.enabled.resumed)
			r = pt_latency_enter(w->a, ev->variant.enabled.ip,
					     pt_walk_event_time(w, ev));
		w->outside_call = false;
		break;
	case ptev_disabled:
		/* A call that left the filtered range: its callee is a frame
		 * until tracing resumes. */
		if (w->call_pending) {
			r = pt_latency_enter(w->a, ev->ip_suppressed ? 0 : ev->variant.disabled.ip,
					     w->call_tsc);
			w->outside_call = true;
		}
		w->call_pending = false;
		break;
	case ptev_overflow:
		w->call_pending = w->outside_call = false;
		r = pt_latency_lost(w->a, 1);
		break;
	default:
		break;
	}
	return r;
}

/* Only calls and returns need the time: pt_blk_time is asked for nothing
 * else. */
static int pt_walk_block(struct pt_walk *w, const struct pt_block *b)
{
	int r;

	if (!b->ninsn)
		return 0;
	if (w->call_pending) {
		w->call_pending = false;
		r = pt_latency_enter(w->a, b->ip, w->call_tsc);
		if (r < 0)
			return r;
	}
	switch (b->iclass) {
	case ptic_call:
	case ptic_far_call:
		w->call_pending = true;
		w->call_tsc = pt_walk_time(w);
		return 0;
	case ptic_return:
	case ptic_far_return:
		return pt_latency_leave(w->a, pt_walk_time(w));
	default:
		return 0;
	}
}

/* Decodes from a synchronisation point until an error or the end, and
 * puts the libipt status that stopped it (-pte_*) in *ret_status. Returns
 * 0, or -ENOMEM from the analysis. (libipt's codes are not errnos:
 * -pte_ip_suppressed is -12, so the two are kept apart.) */
static int pt_walk_run(struct pt_walk *w, int status, int *ret_status)
{
	uint64_t last_offset = UINT64_MAX, offset;
	uint64_t insns = 0; /* decoded since the trace offset was last sampled */

	pt_blk_get_offset(w->dec, &last_offset);
	for (;;) {
		struct pt_block block;
		int r;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(w->dec, &ev, sizeof(ev));
			if (status < 0)
				goto stop;
			r = pt_walk_event(w, &ev);
			if (r < 0)
				return r;
		}
		if (status & pts_eos) {
			status = -pte_eos;
			goto stop;
		}
		status = pt_blk_next(w->dec, &block, sizeof(block));
		if (status < 0)
			goto stop;
		/* Code that only jumps and calls directly (a "jmp ." in a wrong
		 * image, a damaged trace) decodes forever without reading a
		 * packet: give up on this stretch and resync at the next PSB. */
		insns += block.ninsn;
		if (insns > PT_WALK_STUCK_INSNS) {
			if (pt_blk_get_offset(w->dec, &offset) < 0)
				offset = last_offset + 1; /* unknown: not stuck */
			if (offset == last_offset) {
				w->stuck++;
				status = -pte_internal;
				goto stop;
			}
			last_offset = offset;
			insns = 0;
		}
		r = pt_walk_block(w, &block);
		if (r < 0)
			return r;
	}
stop:
	*ret_status = status;
	return 0;
}

static int pt_decode_stream(const struct pt_config *base, struct pt_image *image,
			    const struct pt_trace_stream *s, struct pt_latency *a)
{
	struct pt_config config = *base;
	struct pt_walk w = { .a = a };
	int status, r = 0;

	config.begin = s->data;
	config.end = s->data + s->size;
	w.dec = pt_blk_alloc_decoder(&config);
	if (!w.dec)
		return -ENOMEM;
	status = pt_blk_set_image(w.dec, image);
	if (status < 0) {
		pt_blk_free_decoder(w.dec);
		return -EINVAL;
	}
	pt_latency_begin_thread(a, s->tid);
	for (;;) {
		status = pt_blk_sync_forward(w.dec);
		if (status < 0)
			break; /* no further PSB: the end of the stream */
		r = pt_walk_run(&w, status, &status);
		if (r < 0 || status == -pte_eos)
			break;
		/* An error: what was open is lost; the next PSB resumes. */
		w.call_pending = w.outside_call = false;
		pt_latency_lost(a, 0);
		if (w.stuck >= PT_STREAM_MAX_STUCK)
			break;
	}
	pt_latency_end_thread(a);
	pt_blk_free_decoder(w.dec);
	return r;
}

int pt_decode_trace(const struct pt_trace *t, struct pt_latency *a, char *err, size_t err_size)
{
	struct pt_image_section_cache *iscache;
	struct pt_config config;
	struct pt_image *image;
	int r = 0;

	pt_config_from_meta(&config, &t->meta);
	/* Sections from a cache, not the image's own: libipt 2.0.5 frees a
	 * section's block cache when no one maps it, and a decoder maps one
	 * section at a time. The cache keeps them mapped across section
	 * switches and streams; with pt_image_add_file, code split over two
	 * sections decoded 40 times slower. Its locks cost about 6 % on
	 * bench/pt_bench, where everything is in one section. */
	iscache = pt_iscache_alloc(NULL);
	image = pt_image_alloc(NULL);
	if (!image || !iscache) {
		pt_image_free(image);
		pt_iscache_free(iscache);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n_maps && !r; i++) {
		const struct pt_trace_map *m = &t->maps[i];
		int isid = pt_iscache_add_file(iscache, m->path, m->pgoff, m->end - m->start,
					       m->start);

		if (isid < 0 || pt_image_add_cached(image, iscache, isid, NULL) < 0) {
			snprintf(err, err_size, "cannot read %s for the trace's image", m->path);
			r = -ENOENT;
		}
	}
	for (size_t i = 0; i < t->n_streams && !r; i++)
		r = pt_decode_stream(&config, image, &t->streams[i], a);
	if (r == -ENOMEM)
		snprintf(err, err_size, "out of memory decoding the trace");
	pt_image_free(image);
	pt_iscache_free(iscache);
	return r;
}
