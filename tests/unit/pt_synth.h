/*
 * pt_synth: Intel PT packet streams for known runs of tests/workloads/pt_target,
 * written with libipt's encoder. The function addresses come from the
 * binary's ELF (elf_funcs and its executable PT_LOAD), so a decoder walks
 * the real instructions. Used by tests/unit/test-pt.c and bench/pt_bench.c.
 * Address filtering is modelled as tracing only [parse, end of handle]:
 * main is outside, so each handle() call opens with TIP.PGE at its entry
 * and closes with TIP.PGD at its return.
 */
#ifndef PT_SYNTH_H
#define PT_SYNTH_H

#include <intel-pt.h>
#include <stddef.h>
#include <stdint.h>

#include "pt_trace.h"

struct pt_synth {
	struct pt_encoder *enc;
	struct pt_config config;
	uint8_t *buf;
	size_t cap;
	uint64_t map_start, map_end, map_pgoff; /* the executable PT_LOAD */
	uint64_t handle, parse, lookup, reply, spin; /* entry addresses */
	char path[4096];
	/* Timing by MTC (after a TSC + TMA at each PSB) instead of TSC
	 * packets: 0 for TSC. The crystal clock runs at half the TSC rate
	 * (CPUID 0x15: eax 1, ebx 2), so an MTC stands for 2 << mtc_freq TSC
	 * ticks and times must be multiples of that after the PSB's TSC. */
	uint32_t mtc_freq;
	uint64_t psb_tsc;
};

/* The times of one handle() call's packets, in TSC ticks. reply() has no
 * TSC of its own: its return's TNT bit is followed by handle's TSC and
 * TIP.PGD, which libipt reads ahead to, so reply returns at leave. */
struct pt_synth_call {
	int need_lookup;
	uint64_t enter, parse_ret, lookup_ret, leave;
};

/* Returns 0, or -1 with a message on stderr. cap: trace buffer bytes. */
int pt_synth_open(struct pt_synth *s, const char *binary, size_t cap);
void pt_synth_close(struct pt_synth *s);
/* PSB+ with tracing off (outside the filter): PSB, TSC, PSBEND. */
int pt_synth_psb(struct pt_synth *s, uint64_t tsc);
/* PSB+ with tracing on at ip (FUP): a snapshot that starts inside a call. */
int pt_synth_psb_at(struct pt_synth *s, uint64_t tsc, uint64_t ip);
/* The tail of a handle() call after parse() returned: the lookup branch
 * not taken, reply, and the return out of the filter at leave. */
int pt_synth_tail(struct pt_synth *s, uint64_t leave);
int pt_synth_call(struct pt_synth *s, const struct pt_synth_call *c);
/* The same call traced with the filter on handle() alone: each callee is
 * outside, so each call leaves the filter (TIP.PGD at the callee) and its
 * return comes back in (TIP.PGE at the return address). Here reply() has
 * its own time: c->leave is when it returns and handle returns at
 * c->leave + 10. */
int pt_synth_call_handle_only(struct pt_synth *s, const struct pt_synth_call *c);
/* The head of a call: TSC, MODE.exec, TIP.PGE at handle and parse's return. */
int pt_synth_enter(struct pt_synth *s, uint64_t enter, uint64_t parse_ret);
/* A TIP to an unmapped address where the code needs a TNT bit: the
 * decoder must fail there and resynchronise at the next PSB. */
int pt_synth_bad(struct pt_synth *s);
/* Tracing enabled at spin()'s endless "jmp .", code that needs no trace,
 * followed by a TNT bit: a trace that does not fit the code. */
int pt_synth_spin(struct pt_synth *s, uint64_t tsc);
/* An internal buffer overflow (OVF) while tracing is off. */
int pt_synth_ovf(struct pt_synth *s);
int pt_synth_tsc(struct pt_synth *s, uint64_t tsc);
size_t pt_synth_size(const struct pt_synth *s);
/* Sets t's metadata (1 TSC tick = 1 ns) and map for this binary. */
int pt_synth_trace_meta(const struct pt_synth *s, struct pt_trace *t, uint32_t pid);

#endif
