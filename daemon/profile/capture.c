/* capture: see capture.h. */
#include "capture.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reply_render.h"
#include "result_notes.h"
#include "stack_filter.h"
#include "thread_state.h"

_Static_assert((int)PROTO_KIND_OFFCPU == (int)OFFCPU_KIND_OFFCPU &&
		       (int)PROTO_KIND_WAKEUP == (int)OFFCPU_KIND_WAKEUP &&
		       (int)PROTO_KIND_OFFWAKE == (int)OFFCPU_KIND_OFFWAKE &&
		       (int)PROTO_KIND_CHAIN == (int)OFFCPU_KIND_CHAIN &&
		       (int)PROTO_KIND_RUNQ == (int)OFFCPU_KIND_RUNQ &&
		       (int)PROTO_KIND_ONCPU == (int)OFFCPU_KIND_ONCPU &&
		       (int)PROTO_KIND_BIO == (int)OFFCPU_KIND_BIO &&
		       (int)PROTO_KIND_FILEIO == (int)OFFCPU_KIND_FILEIO,
	       "the protocol's kinds are the BPF program's");
_Static_assert(PROTO_MAX_SAMPLE_PERIOD_US * 1000ull == OFFCPU_MAX_SAMPLE_PERIOD_NS,
	       "the protocol's sample period limit is the BPF program's");
_Static_assert(PROTO_MAX_REQUESTS == OFFCPU_MAX_REQUESTS &&
		       PROTO_HIST_BUCKETS == OFFCPU_HIST_BUCKETS,
	       "the protocol's request limit and buckets are the BPF program's");

/* The names a capture reports drop counters (enum offcpu_counter) under;
 * NULL for the counters that are not drops. */
static const char *const drop_names[OFFCPU_CNT_MAX] = {
#define DROP_NAME(name, status, drop) [OFFCPU_CNT_##name] = drop,
	OFFCPU_COUNTERS(DROP_NAME)
#undef DROP_NAME
};

static bool id_exists(const char *proc_root, uint32_t pid, uint32_t tid)
{
	char path[128];

	if (tid)
		snprintf(path, sizeof(path), "%s/%u/task/%u", proc_root, pid, tid);
	else
		snprintf(path, sizeof(path), "%s/%u", proc_root, pid);
	return access(path, F_OK) == 0;
}

int capture_check_targets(const char *proc_root, const struct proto_capture_request *req, char *err,
			  size_t err_size)
{
	uint32_t tgid;

	for (size_t i = 0; i < req->n_pids; i++) {
		if (!id_exists(proc_root, req->pids[i], 0)) {
			snprintf(err, err_size, "no process with pid %u", req->pids[i]);
			return -ESRCH;
		}
		/* The kernel would match it against process ids only: nothing. */
		if (result_notes_thread_of(proc_root, req->pids[i], &tgid)) {
			snprintf(err, err_size,
				 "pid %u is a thread of process %u, not a process: give --tid %u "
				 "for that thread, or --pid %u for its process",
				 req->pids[i], tgid, req->pids[i], tgid);
			return -ESRCH;
		}
	}
	/* /proc/TID exists for any thread, though it is not listed. */
	for (size_t i = 0; i < req->n_tids; i++) {
		if (!id_exists(proc_root, req->tids[i], 0)) {
			snprintf(err, err_size, "no thread with tid %u", req->tids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

/* Appends a printf-formatted piece to buf, which stays NUL-terminated. */
static void __attribute__((format(printf, 3, 4)))
append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

void capture_targets_describe(const struct proto_capture_request *req, char *buf, size_t size)
{
	const char *who_names[] = { "cgroup", "unit", "container" };
	const char *who[] = { req->who.cgroup, req->who.unit, req->who.container };

	if (!size)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < req->n_pids; i++)
		append(buf, size, "%s%u", i ? "," : "pid ", req->pids[i]);
	for (size_t i = 0; i < req->n_tids; i++)
		append(buf, size, "%s%u", i ? "," : *buf ? "; tid " : "tid ", req->tids[i]);
	if (req->comm[0])
		append(buf, size, "%scomm %s", *buf ? "; " : "", req->comm);
	for (size_t i = 0; i < 3; i++)
		if (who[i][0])
			append(buf, size, "%s%s %s", *buf ? "; " : "", who_names[i], who[i]);
}

bool capture_target_exited(const char *proc_root, const struct proto_capture_request *req)
{
	char err[64];

	return (req->n_pids || req->n_tids) &&
	       capture_check_targets(proc_root, req, err, sizeof(err)) < 0;
}

void capture_filter(const struct capture *c, struct collector_filter *ret)
{
	const struct proto_capture_request *req = &c->req;
	/* A wakeup graph shows only the waker: the target's stacks are not walked. */
	bool target_stacks = req->kind != PROTO_KIND_WAKEUP;

	*ret = (struct collector_filter){
		.tgids = req->pids,
		.n_tgids = req->n_pids,
		.tids = req->tids,
		.n_tids = req->n_tids,
		.cgroups = c->cgroups,
		.n_cgroups = c->n_cgroups,
		.state_mask = req->state_mask,
		.min_block_ns = req->min_block_us * 1000,
		.max_block_ns = req->max_block_us * 1000,
		.user_stacks = target_stacks && req->stacks != PROTO_STACKS_KERNEL,
		.kernel_stacks = target_stacks && req->stacks != PROTO_STACKS_USER,
		.kind = req->kind,
		.chain_depth = req->chain_depth,
		.split_runq = req->split_runq,
		.filename = req->with_filename,
		.oncpu = req->oncpu,
		.requests = req->n_requests > 0,
		.sample_period_ns = req->sampled ? (uint64_t)req->sample_period_us * 1000 : 0,
		.follow_children = req->follow_children,
	};
}

struct filter_rows {
	const struct stack_filter *filter;
	struct profile *kept;
};

static int filter_row(void *arg, const struct profile_row *row)
{
	struct filter_rows *fr = arg;
	struct stack_filter_sample s = {
		.comm = row->comm,
		.tgid = row->tgid,
		.state = row->state,
		.kind = row->kind,
		.ustack = row->ustack,
		.kstack = row->kstack,
		.chain = row->chain,
	};

	return stack_filter_keep(fr->filter, &s) ? profile_add_row(fr->kept, row) : 0;
}

/* Replaces c->profile with the rows the request's stack filters keep (the
 * pids, tids and states were applied in the kernel). 0 or -ENOMEM, with
 * c->profile untouched then. */
static int capture_apply_filters(struct capture *c)
{
	struct stack_filter_spec spec = {
		.comm = c->req.comm,
		.grep = c->req.grep,
		.exclude = c->req.exclude,
	};
	struct filter_rows fr = { 0 };
	struct stack_filter *filter;
	char err[256];
	int r;

	if (!c->req.comm[0] && !c->req.grep[0] && !c->req.exclude[0])
		return 0;
	/* The request's patterns compiled when it was parsed: only memory can fail. */
	r = stack_filter_new(&spec, &filter, err, sizeof(err));
	if (r < 0)
		return -ENOMEM;
	fr.filter = filter;
	r = profile_new(&fr.kept);
	if (r == 0)
		r = profile_foreach(c->profile, filter_row, &fr);
	stack_filter_free(filter);
	if (r < 0) {
		profile_free(fr.kept);
		return r;
	}
	profile_free(c->profile);
	c->profile = fr.kept;
	return 0;
}

static int add_user_stack_time(void *arg, const struct profile_row *row)
{
	struct proto_user_stacks *us = arg;

	if (!*row->ustack)
		return 0;
	if (!(row->ustack_flags & OFFCPU_STACK_DWARF))
		us->frame_pointer_ns += row->sum_ns;
	else if (row->ustack_flags & OFFCPU_STACK_COMPLETE)
		us->complete_ns += row->sum_ns;
	else
		us->truncated_ns += row->sum_ns;
	return 0;
}

/* The reply line for profile p, the rows of c to show. */
static char *capture_reply_profile(const struct capture *c, const struct profile *p,
				   const uint64_t counters_now[OFFCPU_CNT_MAX], bool target_exited,
				   const struct proto_request_stats *requests, size_t n_requests,
				   const struct result_notes *notes)
{
	struct proto_counter drops[OFFCPU_CNT_MAX];
	size_t n_drops = 0;
	struct proto_capture_result res;
	bool want_user = c->req.stacks != PROTO_STACKS_KERNEL;
	bool want_kernel = c->req.stacks != PROTO_STACKS_USER;
	struct proto_sample *samples = NULL;
	char *folded = NULL, *output = NULL, *line = NULL, loaded[64] = "";
	size_t n_samples = 0;
	int r;

	res = (struct proto_capture_result){
		.id = c->id,
		.duration_ns = c->end_ns - c->start_ns,
		.total_ns = profile_total_ns(p),
		.n_samples = profile_rows(p),
		.target_exited = target_exited,
		.drops = drops,
		.requests = requests,
		.n_requests = n_requests,
		.notes = (const char *const *)notes->v,
		.n_notes = notes->n,
	};
	for (unsigned g = 0; g < COLLECTOR_GROUP_COUNT; g++) {
		if (!(c->groups_loaded & (1u << g)))
			continue;
		snprintf(loaded + strlen(loaded), sizeof(loaded) - strlen(loaded), "%s%s",
			 *loaded ? "," : "", collector_group_name(g));
		res.load_ms = c->load_ns / 1000000;
	}
	res.loaded = loaded;
	profile_foreach(p, add_user_stack_time, &res.user_stacks);
	for (size_t i = 0; i < OFFCPU_CNT_MAX; i++) {
		if (!drop_names[i])
			continue;
		drops[n_drops].name = drop_names[i];
		drops[n_drops++].value = counters_now[i] - c->counters_start[i];
	}
	res.n_drops = n_drops;
	if (c->req.sampled)
		res.sampling = (struct proto_capture_sampling){
			.period_us = c->req.sample_period_us,
			.blocks = c->sampling.blocks,
			.samples = c->sampling.samples,
			.error_pct = 100 * sampling_relative_error(
						   (uint64_t)c->req.sample_period_us * 1000,
						   c->sampling.short_ns, 0.01),
			.unsampled_pct = sampling_unsampled_pct(&c->sampling),
		};
	if (c->req.format == PROTO_FORMAT_JSON) {
		if (profile_samples(p, &samples, &n_samples) < 0)
			return NULL;
		res.samples = samples;
		line = proto_reply_capture(&res, n_samples);
		profile_samples_free(samples, n_samples);
		return line;
	}
	r = reply_render(profile_folded_by(p, want_user, want_kernel, c->req.metric,
					   c->req.group_by),
			 &(struct reply_render_opts){
				 .format = c->req.format,
				 .render = &c->req.render,
				 .kind = c->req.kind,
				 .oncpu = c->req.oncpu,
				 .metric = c->req.metric,
				 .subject = {
					 .pids = c->req.pids,
					 .n_pids = c->req.n_pids,
					 .tids = c->req.tids,
					 .n_tids = c->req.n_tids,
					 .comm = c->req.comm,
					 .who = &c->req.who,
					 .from_ms = c->start_ms,
					 .to_ms = c->start_ms +
						  (int64_t)((c->end_ns - c->start_ns) / 1000000),
				 },
			 },
			 &folded, &output, &line);
	if (r == 0 && line && notes->n) { /* nothing to draw: say why */
		free(line);
		line = result_notes_no_data(notes);
	} else if (r == 0 && !line) {
		res.folded = folded;
		res.output = output;
		line = proto_reply_capture(&res, 0);
	}
	free(output);
	free(folded);
	return line;
}

/* The reply's notes: why c holds nothing (recorded: its rows before the
 * stack filters), what to do about frames it could not name. */
static int capture_notes(const struct capture *c, size_t recorded, struct result_notes *notes)
{
	const struct proto_capture_request *q = &c->req;
	struct result_frame_shares shares;
	char filters[1024], targets[CAPTURE_TARGETS_MAX + 1];

	if (profile_rows(c->profile)) {
		result_frame_shares(c->profile, &shares);
		return result_notes_frames(notes, &shares);
	}
	if (recorded) {
		result_notes_filters(filters, sizeof(filters), NULL, 0, THREAD_STATE_ALL, q->comm,
				     q->grep, q->exclude, NULL, NULL, NULL);
		return result_notes_add(notes,
					"%zu stack%s recorded, but none passed the filters: %s",
					recorded, recorded == 1 ? " was" : "s were", filters);
	}
	capture_targets_describe(q, targets, sizeof(targets));
	return result_notes_add(notes, "no %s stacks were recorded%s%s%s", proto_kind_name(q->kind),
				*targets ? " (targets: " : "", targets, *targets ? ")" : "");
}

char *capture_reply(struct capture *c, const uint64_t counters_now[OFFCPU_CNT_MAX],
		    bool target_exited, const struct proto_request_stats *requests,
		    size_t n_requests)
{
	struct result_notes notes = { 0 };
	struct profile *shown = NULL;
	size_t recorded = profile_rows(c->profile);
	char *line;

	if (capture_apply_filters(c) < 0 || capture_notes(c, recorded, &notes) < 0) {
		result_notes_free(&notes);
		return NULL;
	}
	/* The stored window keeps the lines; the reply shows them if asked. */
	if (!c->req.lines) {
		if (profile_without_lines(c->profile, &shown) < 0)
			return NULL;
	}
	line = capture_reply_profile(c, shown ? shown : c->profile, counters_now, target_exited,
				     requests, n_requests, &notes);
	profile_free(shown);
	result_notes_free(&notes);
	return line;
}
