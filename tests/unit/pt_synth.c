/* pt_synth: synthetic PT streams of pt_target (see pt_synth.h). */
#include "pt_synth.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_funcs.h"

static int synth_load(struct pt_synth *s)
{
	GElf_Phdr ph;
	size_t n;
	Elf *elf;
	int fd, r = -1;

	elf_version(EV_CURRENT);
	fd = open(s->path, O_RDONLY);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X)) {
				s->map_start = ph.p_vaddr;
				s->map_end = ph.p_vaddr + ph.p_memsz;
				s->map_pgoff = ph.p_offset;
				r = 0;
				break;
			}
	elf_end(elf);
	close(fd);
	return r;
}

static int synth_func(struct pt_synth *s, const char *name, uint64_t *ret)
{
	struct elf_func *f;
	char err[256];
	int n = elf_funcs_find(s->path, name, &f, err, sizeof(err));

	if (n < 1) {
		fprintf(stderr, "pt_synth: %s\n", err);
		return -1;
	}
	*ret = s->map_start + (f[0].offset - s->map_pgoff);
	elf_funcs_free(f, n);
	return 0;
}

int pt_synth_open(struct pt_synth *s, const char *binary, size_t cap)
{
	memset(s, 0, sizeof(*s));
	/* absolute: the trace's maps are read like /proc/PID/maps */
	if (!realpath(binary, s->path)) {
		fprintf(stderr, "pt_synth: %s: %m\n", binary);
		return -1;
	}
	if (synth_load(s) < 0) {
		fprintf(stderr, "pt_synth: no executable segment in %s\n", binary);
		return -1;
	}
	if (synth_func(s, "handle", &s->handle) || synth_func(s, "parse", &s->parse) ||
	    synth_func(s, "lookup", &s->lookup) || synth_func(s, "reply", &s->reply) || synth_func(s, "spin", &s->spin))
		return -1;
	s->buf = calloc(1, cap);
	s->cap = cap;
	pt_config_init(&s->config);
	s->config.begin = s->buf;
	s->config.end = s->buf + cap;
	s->enc = s->buf ? pt_alloc_encoder(&s->config) : NULL;
	return s->enc ? 0 : -1;
}

void pt_synth_close(struct pt_synth *s)
{
	pt_free_encoder(s->enc);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static int synth_packet(struct pt_synth *s, struct pt_packet p)
{
	int r = pt_enc_next(s->enc, &p);

	if (r < 0)
		fprintf(stderr, "pt_synth: encoding packet %d: %s\n", p.type,
			pt_errstr(pt_errcode(r)));
	return r < 0 ? -1 : 0;
}

int pt_synth_tsc(struct pt_synth *s, uint64_t tsc)
{
	uint64_t ctc = (tsc - s->psb_tsc) / 2;

	if (!s->mtc_freq)
		return synth_packet(s,
				    (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc });
	if (tsc < s->psb_tsc || ctc % (1u << s->mtc_freq)) {
		fprintf(stderr, "pt_synth: %llu is not on an MTC boundary\n",
			(unsigned long long)tsc);
		return -1;
	}
	return synth_packet(
		s, (struct pt_packet){ .type = ppt_mtc, .payload.mtc.ctc = ctc >> s->mtc_freq });
}

static int synth_tnt(struct pt_synth *s, int taken)
{
	return synth_packet(
		s, (struct pt_packet){ .type = ppt_tnt_8,
				       .payload.tnt = { .bit_size = 1, .payload = !!taken } });
}

static int synth_ip(struct pt_synth *s, enum pt_packet_type type, enum pt_ip_compression ipc,
		    uint64_t ip)
{
	return synth_packet(s, (struct pt_packet){ .type = type, .payload.ip = { ipc, ip } });
}

int pt_synth_psb(struct pt_synth *s, uint64_t tsc)
{
	s->psb_tsc = tsc;
	if (synth_packet(s, (struct pt_packet){ .type = ppt_psb }) ||
	    synth_packet(s, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc }))
		return -1;
	/* MTC counts from the crystal clock value the TMA gives for this TSC */
	if (s->mtc_freq &&
	    synth_packet(s, (struct pt_packet){ .type = ppt_tma, .payload.tma = { 0, 0 } }))
		return -1;
	return synth_packet(s, (struct pt_packet){ .type = ppt_psbend });
}

static int synth_mode64(struct pt_synth *s)
{
	struct pt_packet mode = { .type = ppt_mode, .payload.mode.leaf = pt_mol_exec };

	mode.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return synth_packet(s, mode);
}

int pt_synth_psb_at(struct pt_synth *s, uint64_t tsc, uint64_t ip)
{
	return synth_packet(s, (struct pt_packet){ .type = ppt_psb }) || pt_synth_tsc(s, tsc) ||
	       synth_mode64(s) || synth_ip(s, ppt_fup, pt_ipc_sext_48, ip) ||
	       synth_packet(s, (struct pt_packet){ .type = ppt_psbend });
}

int pt_synth_enter(struct pt_synth *s, uint64_t enter, uint64_t parse_ret)
{
	/* parse() returns with a compressed return: a taken TNT bit. */
	return pt_synth_tsc(s, enter) || synth_mode64(s) ||
	       synth_ip(s, ppt_tip_pge, pt_ipc_sext_48, s->handle) || pt_synth_tsc(s, parse_ret) ||
	       synth_tnt(s, 1);
}

int pt_synth_call(struct pt_synth *s, const struct pt_synth_call *c)
{
	if (pt_synth_enter(s, c->enter, c->parse_ret) || synth_tnt(s, c->need_lookup))
		return -1;
	if (c->need_lookup && (pt_synth_tsc(s, c->lookup_ret) || synth_tnt(s, 1)))
		return -1;
	/* handle's own return leaves the filtered range: TIP.PGD. */
	return synth_tnt(s, 1) || pt_synth_tsc(s, c->leave) ||
	       synth_ip(s, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

/* Return addresses of handle's calls in pt_target (objdump; a layout
 * change shows as decode errors in the tests). */
#define RET_PARSE  0x10
#define RET_REPLY  0x19
#define RET_LOOKUP 0x24

/* Out of the filter at a call to callee, back in at ret at time back. */
static int synth_outside(struct pt_synth *s, uint64_t callee, uint64_t back, uint64_t ret)
{
	return synth_ip(s, ppt_tip_pgd, pt_ipc_sext_48, callee) || pt_synth_tsc(s, back) ||
	       synth_mode64(s) || synth_ip(s, ppt_tip_pge, pt_ipc_sext_48, s->handle + ret);
}

int pt_synth_call_handle_only(struct pt_synth *s, const struct pt_synth_call *c)
{
	if (pt_synth_tsc(s, c->enter) || synth_mode64(s) ||
	    synth_ip(s, ppt_tip_pge, pt_ipc_sext_48, s->handle) ||
	    synth_outside(s, s->parse, c->parse_ret, RET_PARSE) || synth_tnt(s, c->need_lookup))
		return -1;
	if (c->need_lookup && synth_outside(s, s->lookup, c->lookup_ret, RET_LOOKUP))
		return -1;
	return synth_outside(s, s->reply, c->leave, RET_REPLY) || pt_synth_tsc(s, c->leave + 10) ||
	       synth_ip(s, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

int pt_synth_tail(struct pt_synth *s, uint64_t leave)
{
	return synth_tnt(s, 0) || synth_tnt(s, 1) || pt_synth_tsc(s, leave) ||
	       synth_ip(s, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

int pt_synth_bad(struct pt_synth *s)
{
	return synth_ip(s, ppt_tip, pt_ipc_sext_48, 0x1000);
}

int pt_synth_spin(struct pt_synth *s, uint64_t tsc)
{
	/* then a TNT bit the code never asks for: no event is pending, so
	 * the decoder walks the jump without reading further */
	return pt_synth_tsc(s, tsc) || synth_mode64(s) ||
	       synth_ip(s, ppt_tip_pge, pt_ipc_sext_48, s->spin) || synth_tnt(s, 1);
}

int pt_synth_ovf(struct pt_synth *s)
{
	return synth_packet(s, (struct pt_packet){ .type = ppt_ovf });
}

size_t pt_synth_size(const struct pt_synth *s)
{
	uint64_t off = 0;

	pt_enc_get_offset(s->enc, &off);
	return off;
}

int pt_synth_trace_meta(const struct pt_synth *s, struct pt_trace *t, uint32_t pid)
{
	t->meta = (struct pt_trace_meta){ .time_shift = 10, .time_mult = 1024, .pid = pid };
	if (s->mtc_freq) {
		t->meta.mtc_freq = s->mtc_freq;
		t->meta.cpuid_0x15_eax = 1;
		t->meta.cpuid_0x15_ebx = 2;
	}
	return pt_trace_add_map(t, s->map_start, s->map_end, s->map_pgoff, s->path, "");
}
