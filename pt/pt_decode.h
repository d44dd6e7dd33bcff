/*
 * pt_decode: walks a stored Intel PT trace with libipt's block decoder
 * over an image of the traced process's executable mappings, and feeds
 * the calls and returns it finds to a pt_latency analysis. The block
 * decoder (not the instruction decoder) because latency analysis needs
 * only where control flow changes: with end_on_call each block ends at a
 * call, return or branch, and the decoder skips the per-instruction work
 * (see bench/pt_bench.c for the throughput). Does not log.
 */
#ifndef PT_DECODE_H
#define PT_DECODE_H

#include <stddef.h>

#include "pt_latency.h"
#include "pt_trace.h"

/* Decodes every stream of t into a. Decode errors inside a stream are
 * resynchronised at the next PSB and counted (pt_latency_lost). Returns 0,
 * or a negative errno with a one-line reason in err: -ENOENT when a mapped
 * file cannot be read into the image, -ENOMEM. */
int pt_decode_trace(const struct pt_trace *t, struct pt_latency *a, char *err, size_t err_size);

#endif
