/*
 * output: a capture's or export's result written to a file or standard
 * output (folded, svg, speedscope, JSON, pprof), the summaries capture and
 * status print, and durations and times as windows, blocked, status and
 * push print them.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"

/* "do_command: 1200 requests, mean 1.250 ms, of which 0.800 ms off-CPU (64 %)" */
void requests_summary(FILE *out, const char *prefix, const struct proto_request_stats *r, size_t n);

/* A duration as offcpuctl prints them: "850 ms", "12.3 s", "4m05s", "2h10m",
 * "3d04h"; "?" if negative. */
void format_duration(int64_t ms, char *buf, size_t size);

/* A time as offcpuctl prints them, local: "2026-11-22 01:00:00"; "?" if
 * it cannot be shown. */
void format_local(int64_t ms, char *buf, size_t size);

/* The daemon's notes on a result (why it is empty, what to do about
 * frames it could not name), one "offcpuctl: note: " line each on stderr. */
void print_notes(const char *const *notes, size_t n);

int write_output(const char *path, const char *text);

/* A capture's or export's result: the raw reply in JSON mode, else the
 * folded text, or the svg or speedscope text. */
int write_result(const char *path, const char *raw, enum proto_format format, const char *folded,
		 const char *output);

/* A pprof profile of a capture: it ended (about) now, after duration_ns. */
int write_capture_pprof(const char *path, const char *raw, const struct proto_capture_result *res,
			enum proto_kind kind, bool oncpu);

/* A pprof profile of an export: a range's time is known, a capture's not. */
int write_export_pprof(const char *path, const char *raw, const struct proto_export_result *res,
		       enum proto_kind kind, bool oncpu);

#endif
