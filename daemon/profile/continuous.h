/*
 * continuous: what the always-on profile records, decided from its
 * settings alone: each kind's collector filter and the request specs its
 * slots count inside. Pure functions, called by manager_continuous.c
 * (which loads and attaches the slots). Does not log.
 */
#ifndef CONTINUOUS_H
#define CONTINUOUS_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

/* The config's continuous_* keys and sample_period_us. */
struct continuous_settings {
	uint32_t states;	   /* thread_state mask */
	uint64_t min_block_us;	   /* shortest block kept; 0: all */
	bool split_runq;	   /* the offcpu slot keeps run-queue wait apart */
	bool sampled;		   /* continuous_stacks = sampled */
	uint32_t sample_period_us; /* T of sampled stacks (bpf/sampling.h) */
	const char *requests;	   /* "SYMBOL@/PATH ..."; "": not request-synchronous */
};

/* Splits set->requests (checked by config) into its words, in buf; returns
 * how many, at most OFFCPU_MAX_REQUESTS. */
size_t continuous_specs(const struct continuous_settings *set, char *buf, size_t size,
			const char *specs[OFFCPU_MAX_REQUESTS]);

/* The filter of the continuous slot of kind (enum offcpu_kind), whether or
 * not the config's continuous_kinds has it; requests: the profile is
 * request-synchronous (continuous_specs() found words). */
void continuous_filter(const struct continuous_settings *set, unsigned kind, bool requests,
		       struct collector_filter *ret);

#endif
