/*
 * continuous: what the always-on profile records, decided from the
 * configuration alone: each kind's collector filter, the request specs its
 * slots count inside, and where a window closes. Pure functions, called by
 * manager_continuous.c (which loads, attaches and fills the windows). Does
 * not log.
 */
#ifndef CONTINUOUS_H
#define CONTINUOUS_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "config.h"

/* Splits cfg->continuous_requests (checked by config) into its words, in
 * buf (size: sizeof(cfg->continuous_requests)); returns how many, at most
 * CONFIG_MAX_REQUESTS. */
size_t continuous_specs(const struct config *cfg, char *buf, size_t size,
			const char *specs[CONFIG_MAX_REQUESTS]);

/* The filter of the continuous slot of kind (enum offcpu_kind), whether or
 * not cfg->continuous_kinds has it; requests: the profile is request-
 * synchronous (continuous_specs() found words). */
void continuous_filter(const struct config *cfg, unsigned kind, bool requests,
		       struct collector_filter *ret);

/* Where a window that starts at now_ms closes: the next multiple of the
 * window length, so windows line up with the clock (…:00, …:10, …:20).
 * window_seconds > 0 (config checks it). */
int64_t continuous_window_close_ms(int64_t now_ms, uint32_t window_seconds);

#endif
