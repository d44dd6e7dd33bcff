/* latency: offline Intel PT function latency (see latency.h). */
#define _GNU_SOURCE /* asprintf */
#include "latency.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_funcs.h"
#include "frame.h"
#include "latency_plot.h"
#include "pt_decode.h"
#include "pt_latency.h"
#include "proto.h"
#include "pt_trace.h"
#include "symbolizer.h"

#define LATENCY_NAME_MAX 512

/* Names through the symbolizer, fed a proc root whose only process (pid 1)
 * has the trace's mappings: the trace may come from another host or from a
 * process that has exited. */
struct latency_names {
	char root[64];
	struct symbolizer *sym;
	char buf[LATENCY_NAME_MAX];
};

static void latency_names_free(struct latency_names *n)
{
	char path[128];

	symbolizer_free(n->sym);
	snprintf(path, sizeof(path), "%s/1/maps", n->root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/1", n->root);
	rmdir(path);
	rmdir(n->root);
}

static int latency_names_init(struct latency_names *n, const struct pt_trace *t)
{
	char path[128];
	FILE *f;
	int r;

	snprintf(n->root, sizeof(n->root), "/tmp/offcpuctl-pt-XXXXXX");
	if (!mkdtemp(n->root))
		return -errno;
	snprintf(path, sizeof(path), "%s/1", n->root);
	if (mkdir(path, 0700) < 0) {
		r = -errno;
		rmdir(n->root);
		return r;
	}
	snprintf(path, sizeof(path), "%s/1/maps", n->root);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	for (size_t i = 0; i < t->n_maps; i++) /* inode 0: no inode check */
		fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " 00:00 0 %s\n",
			t->maps[i].start, t->maps[i].end, t->maps[i].pgoff, t->maps[i].path);
	if (fclose(f) != 0)
		return -EIO;
	return symbolizer_new(n->root, "/usr/lib/debug", &n->sym);
}

static const char *latency_name(void *ctx, uint64_t ip)
{
	struct latency_names *n = ctx;

	if (!ip)
		return "[outside filter]";
	symbolizer_user(n->sym, 1, ip, n->buf, sizeof(n->buf));
	n->buf[frame_name_len(n->buf, strlen(n->buf))] = '\0'; /* the function, not its line */
	return n->buf;
}

/* The entry address of o->func in the first mapped file that has it. */
static int latency_target(const struct pt_trace *t, const char *func, uint64_t *ret, char *err,
			  size_t err_size)
{
	int r = -ESRCH;

	snprintf(err, err_size, "the trace maps no executable file");
	for (size_t i = 0; i < t->n_maps; i++) {
		const struct pt_trace_map *m = &t->maps[i];
		struct elf_func *f;
		int n = elf_funcs_find(m->path, func, &f, err, err_size);

		if (n < 0) {
			r = n;
			continue;
		}
		for (int k = 0; k < n; k++)
			if (f[k].offset >= m->pgoff &&
			    f[k].offset < m->pgoff + (m->end - m->start)) {
				*ret = m->start + (f[k].offset - m->pgoff);
				elf_funcs_free(f, n);
				return 0;
			}
		elf_funcs_free(f, n);
	}
	return r;
}

static void latency_report(FILE *out, const struct pt_latency *a, const char *func,
			   struct latency_names *names)
{
	const struct pt_latency_summary *s = pt_latency_summary(a);
	struct pt_latency_child *ch = NULL;
	uint64_t peak = 0;
	size_t n = 0;

	fprintf(out, "%s: %" PRIu64 " calls", func, s->calls);
	if (s->calls)
		fprintf(out,
			", mean %" PRIu64 " ns, min %" PRIu64 " ns, max %" PRIu64
			" ns, on-CPU %" PRIu64 " ns, off-CPU %" PRIu64 " ns",
			s->total_ns / s->calls, s->min_ns, s->max_ns, s->total_ns - s->off_cpu_ns,
			s->off_cpu_ns);
	fprintf(out,
		"\nnot counted: %" PRIu64 " outside the latency range, %" PRIu64
		" incomplete (trace lost), %" PRIu64 " returns without entry; %" PRIu64
		" overflows, %" PRIu64 " decode errors\n",
		s->out_of_range, s->incomplete, s->unmatched_returns, s->overflows,
		s->decode_errors);
	for (int i = 0; i < PT_LATENCY_HIST_BUCKETS; i++)
		if (s->hist[i] > peak)
			peak = s->hist[i];
	if (peak)
		fprintf(out, "\n%24s : %-10s %s\n", "latency (ns)", "count", "distribution");
	for (int i = 0; peak && i < PT_LATENCY_HIST_BUCKETS; i++) {
		char range[48];
		int bar = (int)(s->hist[i] * 40 / peak);

		if (!s->hist[i])
			continue;
		snprintf(range, sizeof(range), "%llu -> %llu", i ? 1ULL << i : 0ULL,
			 (2ULL << i) - 1);
		fprintf(out, "%24s : %-10" PRIu64 " |%-40.*s|\n", range, s->hist[i], bar,
			"****************************************");
	}
	if (pt_latency_children(a, &ch, &n) == 0 && n) {
		fprintf(out, "\n%-32s %10s %12s %8s %14s\n", "child", "count", "avg ns", "share",
			"off-CPU ns");
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%-32s %10" PRIu64 " %12" PRIu64 " %7.1f%% %14" PRIu64 "\n",
				latency_name(names, ch[i].ip), ch[i].count,
				ch[i].total_ns / ch[i].count,
				s->total_ns ? 100.0 * ch[i].total_ns / s->total_ns : 0.0,
				ch[i].off_cpu_ns);
	}
	free(ch);
}

static void latency_timeline(FILE *out, const struct pt_latency *a)
{
	const struct pt_latency_call *c;
	size_t n;

	c = pt_latency_calls(a, &n);
	fprintf(out, "# tid start_ns latency_ns off_cpu_ns\n");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", c[i].tid, c[i].start_ns,
			c[i].latency_ns, c[i].off_cpu_ns);
}

/* The timeline as an SVG plot. */
static int latency_plot(const struct pt_latency *a, const struct latency_opts *o, char **ret,
			char *err, size_t err_size)
{
	const struct latency_plot_opts po = {
		.func = o->func, .title = o->title, .subtitle = o->subtitle, .width = o->width
	};
	const struct pt_latency_call *c;
	struct latency_plot_call *calls;
	char *text = NULL;
	size_t n, len = 0;
	FILE *out = NULL;
	int r;

	c = pt_latency_calls(a, &n);
	calls = calloc(n + 1, sizeof(*calls));
	if (calls)
		out = open_memstream(&text, &len);
	if (!out) {
		free(calls);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		calls[i] = (struct latency_plot_call){ c[i].tid, c[i].start_ns, c[i].latency_ns,
						       c[i].off_cpu_ns };
	r = latency_plot_svg(calls, n, &po, out);
	if (fclose(out) != 0 && r >= 0)
		r = -ENOMEM;
	free(calls);
	if (r == -ENODATA)
		snprintf(err, err_size, "nothing to plot: no complete calls of %s%s", o->func,
			 o->min_ns || o->max_ns != UINT64_MAX ? " in the latency range" : "");
	else if (r < 0)
		snprintf(err, err_size, "cannot draw the timeline: %s", strerror(-r));
	if (r < 0) {
		free(text);
		return r;
	}
	*ret = text;
	return 0;
}

/* The analysis as the protocol's latency reply (proto_reply_latency). */
static int latency_json(const struct pt_latency *a, const char *func, struct latency_names *names,
			char **ret)
{
	const struct pt_latency_summary *s = pt_latency_summary(a);
	struct proto_latency_result res = {
		.func = func,
		.calls = s->calls,
		.total_ns = s->total_ns,
		.min_ns = s->min_ns,
		.max_ns = s->max_ns,
		.off_cpu_ns = s->off_cpu_ns,
		.out_of_range = s->out_of_range,
		.incomplete = s->incomplete,
		.unmatched_returns = s->unmatched_returns,
		.overflows = s->overflows,
		.decode_errors = s->decode_errors,
		.hist = s->hist,
	};
	struct proto_latency_child *children = NULL;
	struct proto_latency_call *calls = NULL;
	const struct pt_latency_call *c;
	struct pt_latency_child *ch = NULL;
	char **name_copies = NULL;
	size_t n_ch = 0, n_calls;
	char *text = NULL, *line;
	int r = -ENOMEM;

	_Static_assert(PROTO_LATENCY_BUCKETS == PT_LATENCY_HIST_BUCKETS, "histogram buckets");
	c = pt_latency_calls(a, &n_calls);
	if (pt_latency_children(a, &ch, &n_ch) < 0)
		return -ENOMEM;
	children = calloc(n_ch + 1, sizeof(*children));
	name_copies = calloc(n_ch + 1, sizeof(*name_copies));
	calls = calloc(n_calls + 1, sizeof(*calls));
	if (!children || !name_copies || !calls)
		goto out;
	for (size_t i = 0; i < n_ch; i++) {
		name_copies[i] = strdup(latency_name(names, ch[i].ip));
		if (!name_copies[i])
			goto out;
		children[i] = (struct proto_latency_child){ name_copies[i], ch[i].count,
							    ch[i].total_ns, ch[i].off_cpu_ns };
	}
	for (size_t i = 0; i < n_calls; i++)
		calls[i] = (struct proto_latency_call){ c[i].tid, c[i].start_ns, c[i].latency_ns,
							c[i].off_cpu_ns };
	res.children = children;
	res.n_children = n_ch;
	res.timeline = calls;
	res.n_timeline = n_calls;
	line = proto_reply_latency(&res);
	if (line && asprintf(&text, "%s\n", line) >= 0) {
		*ret = text;
		r = 0;
	}
	free(line);
out:
	for (size_t i = 0; name_copies && i < n_ch; i++)
		free(name_copies[i]);
	free(name_copies);
	free(children);
	free(calls);
	free(ch);
	return r;
}

int latency_from_trace(const struct latency_opts *o, char **ret, char *err, size_t err_size)
{
	struct latency_names names = { 0 };
	struct pt_latency *a = NULL;
	struct pt_trace t = { 0 };
	uint64_t target;
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int r;

	r = pt_trace_read(o->trace_path, &t, err, err_size);
	if (r < 0) {
		if (r == -EACCES)
			snprintf(err, err_size,
				 "%s: %s (offcpud's traces are for root and, if pt_dir lets "
				 "them in, socket_group: see docs/SECURITY.md)",
				 o->trace_path, strerror(-r));
		else if (r != -EINVAL)
			snprintf(err, err_size, "%s: %s", o->trace_path, strerror(-r));
		return r;
	}
	r = latency_target(&t, o->func, &target, err, err_size);
	if (r == 0)
		r = pt_latency_new(&t, target, o->min_ns, o->max_ns, &a);
	if (r == 0)
		r = pt_decode_trace(&t, a, err, err_size);
	if (r == 0 && (r = latency_names_init(&names, &t)) < 0)
		snprintf(err, err_size, "cannot set up symbol names: %s", strerror(-r));
	if (r == 0 && o->output == LATENCY_TIMELINE_SVG) {
		r = latency_plot(a, o, ret, err, err_size);
	} else if (r == 0 && (o->output == LATENCY_FOLDED || o->output == LATENCY_JSON)) {
		r = o->output == LATENCY_FOLDED ? pt_latency_folded(a, latency_name, &names, ret)
						: latency_json(a, o->func, &names, ret);
		if (r < 0)
			snprintf(err, err_size, "out of memory");
	} else if (r == 0) {
		out = open_memstream(&text, &len);
		if (!out) {
			r = -ENOMEM;
		} else {
			if (o->output == LATENCY_TIMELINE)
				latency_timeline(out, a);
			else
				latency_report(out, a, o->func, &names);
			fclose(out);
			*ret = text;
		}
	}
	if (names.root[0])
		latency_names_free(&names);
	pt_latency_free(a);
	pt_trace_clear(&t);
	return r;
}

int latency_parse_range(const char *s, uint64_t *ret_min, uint64_t *ret_max)
{
	const char *comma = strchr(s, ',');
	uint64_t lo = 0, hi = UINT64_MAX;
	char *end;

	if (!comma)
		return -EINVAL;
	if (comma != s) {
		errno = 0;
		lo = strtoull(s, &end, 10);
		if (errno || end != comma || *s == '-')
			return -EINVAL;
	}
	if (comma[1]) {
		errno = 0;
		hi = strtoull(comma + 1, &end, 10);
		if (errno || *end || comma[1] == '-')
			return -EINVAL;
	}
	if (lo > hi)
		return -EINVAL;
	*ret_min = lo;
	*ret_max = hi;
	return 0;
}
