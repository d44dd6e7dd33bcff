/*
 * output: writing a result (folded, svg, speedscope, JSON, pprof) to a file or
 * standard output, the summaries capture and status print, durations and
 * times.
 */
#define _GNU_SOURCE /* asprintf, open_memstream */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "pprof.h"
#include "proto_samples.h"

void requests_summary(FILE *out, const char *prefix, const struct proto_request_stats *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double n_req = r[i].count ? (double)r[i].count : 1;

		fprintf(out, "%s%s: %" PRIu64 " request%s, mean %.3f ms, of which %.3f ms off-CPU",
			prefix, r[i].symbol, r[i].count, r[i].count == 1 ? "" : "s",
			r[i].wall_ns / n_req / 1e6, r[i].offcpu_ns / n_req / 1e6);
		if (r[i].wall_ns)
			fprintf(out, " (%.0f %%)", 100.0 * r[i].offcpu_ns / r[i].wall_ns);
		fprintf(out, "\n");
		if (r[i].warning)
			fprintf(stderr, "offcpuctl: warning: %s: %s\n", r[i].symbol, r[i].warning);
	}
}

void format_duration(int64_t ms, char *buf, size_t size)
{
	if (ms < 0)
		snprintf(buf, size, "?");
	else if (ms < 1000)
		snprintf(buf, size, "%" PRId64 " ms", ms);
	else if (ms < 60 * 1000)
		snprintf(buf, size, "%.1f s", ms / 1000.0);
	else if (ms < 3600 * 1000)
		snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", ms / 60000, ms / 1000 % 60);
	else if (ms < 86400 * 1000)
		snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, ms / 60000 % 60);
	else
		snprintf(buf, size, "%" PRId64 "d%02" PRId64 "h", ms / 86400000, ms / 3600000 % 24);
}

void format_local(int64_t ms, char *buf, size_t size)
{
	time_t t = ms / 1000;
	struct tm tm;

	if (ms < 0 || !localtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, size, "?");
}

int write_output(const char *path, const char *text)
{
	FILE *out = path ? fopen(path, "w") : stdout;

	if (!out)
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", path,
			    strerror(errno));
	fputs(text, out);
	if ((path ? fclose(out) : fflush(out)) != 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    path ? path : "standard output", strerror(errno));
	return EXIT_OK;
}

int write_result(const char *path, const char *raw, enum proto_format format, const char *folded,
		 const char *output)
{
	char *text = NULL;
	int r;

	if (json_output) {
		if (asprintf(&text, "%s\n", raw) < 0)
			return fail(EXIT_ERROR, "internal", "out of memory");
		r = write_output(path, text);
		free(text);
		return r;
	}
	if (format == PROTO_FORMAT_SVG || format == PROTO_FORMAT_SPEEDSCOPE) {
		if (!output)
			return fail(EXIT_ERROR, "bad_reply",
				    "offcpud's reply has no rendered output");
		return write_output(path, output);
	}
	return write_output(path, folded ? folded : "");
}

/* --format pprof: the JSON rows of raw, a capture's or export's reply, as a
 * pprof profile in path (NULL: stdout). */
static int write_pprof(const char *path, const char *raw, const struct pprof_opts *opts)
{
	struct proto_samples *s;
	FILE *out;
	int r;

	r = proto_samples_parse(raw, strlen(raw), &s);
	if (r == -ENOMEM)
		return fail(EXIT_ERROR, "internal", "out of memory");
	if (r < 0)
		return fail(EXIT_ERROR, "bad_reply",
			    "offcpud's reply has rows this offcpuctl cannot read");
	out = path ? fopen(path, "wb") : stdout;
	if (!out) {
		proto_samples_free(s);
		return fail(EXIT_ERROR, "output_error", "cannot open %s: %s", path,
			    strerror(errno));
	}
	r = pprof_write(s->rows, s->n, opts, out);
	proto_samples_free(s);
	if (path && fclose(out) != 0 && r == 0)
		r = errno ? -errno : -EIO;
	if (r == -ENOMEM)
		return fail(EXIT_ERROR, "internal", "out of memory");
	if (r < 0)
		return fail(EXIT_ERROR, "output_error", "cannot write %s: %s",
			    path ? path : "standard output", strerror(-r));
	return EXIT_OK;
}

int write_capture_pprof(const char *path, const char *raw, const struct proto_capture_result *res,
			enum proto_kind kind, bool oncpu)
{
	struct pprof_opts opts = { .kind = kind, .oncpu = oncpu };
	char comment[64];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (res->duration_ns <= (uint64_t)INT64_MAX) {
		opts.duration_nanos = (int64_t)res->duration_ns;
		opts.time_nanos =
			(int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - opts.duration_nanos;
	}
	snprintf(comment, sizeof(comment), "offcpud capture %" PRIu64, res->id);
	opts.comment = comment;
	return write_pprof(path, raw, &opts);
}

int write_export_pprof(const char *path, const char *raw, const struct proto_export_result *res,
		       enum proto_kind kind, bool oncpu)
{
	struct pprof_opts opts = { .kind = kind, .oncpu = oncpu };
	char comment[64];

	if (res->capture_id) {
		snprintf(comment, sizeof(comment), "offcpud export of capture %" PRIu64,
			 res->capture_id);
	} else {
		snprintf(comment, sizeof(comment), "offcpud export");
		if (res->from_ms > 0 && res->to_ms > res->from_ms &&
		    res->to_ms <= INT64_MAX / 1000000) {
			opts.time_nanos = res->from_ms * 1000000;
			opts.duration_nanos = (res->to_ms - res->from_ms) * 1000000;
		}
	}
	opts.comment = comment;
	return write_pprof(path, raw, &opts);
}

void print_notes(const char *const *notes, size_t n)
{
	for (size_t i = 0; notes && i < n; i++)
		fprintf(stderr, "offcpuctl: note: %s\n", notes[i]);
}
