/* The store's jobs: see store_jobs.h. */
#include "store_jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h> /* the __u32/__u64 of offcpu.h */

#include "clock.h"
#include "flame.h"
#include "offcpu.h"
#include "proto_heatmap.h"
#include "reply_render.h"
#include "result_notes.h"
#include "stack_filter.h"
#include "store_heatmap.h"
#include "thread_state.h"
#include "who_match.h"

/* The end of a query's range: a request's to_ms of 0 means now (windows
 * that start by now); a capture is selected by its id, not by time. */
static int64_t query_to_ms(int64_t to_ms, uint64_t capture_id)
{
	if (capture_id)
		return 0;
	return to_ms ? to_ms : clock_realtime_ms() + 1;
}

/* The row kinds an export of kind sums, and the heatmap of it: an offcpu
 * export includes the run-queue part kept apart (split), and on-CPU samples
 * if asked (hot/cold). */
static uint32_t export_kind_mask(uint32_t kind, bool oncpu)
{
	return (1u << kind) | (kind == PROTO_KIND_OFFCPU ? 1u << PROTO_KIND_RUNQ : 0) |
	       (oncpu ? 1u << PROTO_KIND_ONCPU : 0);
}

/* ---- writing a window ---- */

struct write_job {
	struct store_job job;
	struct profile *profile;
	struct hashtab *hists;
	struct store_window window;
	store_jobs_written_fn written;
	void *arg;
	int r;
	char msg[256];
	struct store_stats stats;
	bool have_stats;
};

struct samples_vec {
	struct store_sample *v;
	size_t n;
};

static int collect_sample(void *arg, const struct profile_row *row)
{
	struct samples_vec *s = arg;

	s->v[s->n++] = (struct store_sample){
		.tgid = row->tgid,
		.pid = row->pid,
		.comm = row->comm,
		.state = row->state,
		.sum_ns = row->sum_ns,
		.count = row->count,
		.bytes = row->bytes,
		.ustack = row->ustack,
		.kstack = row->kstack,
		.kind = row->kind,
		.chain = row->chain,
		.cgroup = row->cgroup,
		.ns_pid = row->ns_pid,
	};
	return 0;
}

/* A process's name for its histograms: its main thread's, else any. */
static int note_comm(void *arg, const struct profile_row *row)
{
	struct hashtab *comms = arg;
	const char **comm;
	bool created;

	comm = hashtab_put(comms, &row->tgid, &created);
	if (comm && (created || row->pid == row->tgid))
		*comm = row->comm;
	return 0;
}

/* The window's histogram counts as store rows. 0 or -ENOMEM. */
static int hists_collect(struct write_job *w, struct store_hist **ret, size_t *ret_n)
{
	const struct offcpu_hist_key *key;
	struct hashtab *comms = NULL;
	struct store_hist *h;
	const char **comm;
	uint64_t *count;
	size_t pos = 0, n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!w->hists || !hashtab_count(w->hists))
		return 0;
	h = calloc(hashtab_count(w->hists), sizeof(*h));
	if (!h || hashtab_new(sizeof(uint32_t), sizeof(char *), &comms) < 0) {
		free(h);
		return -ENOMEM;
	}
	profile_foreach(w->profile, note_comm, comms);
	while (hashtab_next(w->hists, &pos, (const void **)&key, (void **)&count)) {
		comm = hashtab_get(comms, &key->tgid);
		h[n++] = (struct store_hist){
			.tgid = key->tgid,
			.comm = comm ? *comm : "",
			.type = key->type,
			.bucket = key->bucket,
			.count = *count,
		};
	}
	hashtab_free(comms); /* the names stay: they belong to the profile */
	*ret = h;
	*ret_n = n;
	return 0;
}

static void write_work(struct store_job *job, struct store *store)
{
	struct write_job *w = (struct write_job *)job;
	struct samples_vec s = { .v = calloc(profile_rows(w->profile) + 1, sizeof(*s.v)) };

	if (!s.v) {
		w->r = -ENOMEM;
		snprintf(w->msg, sizeof(w->msg), "out of memory");
		return;
	}
	struct store_hist *hists = NULL;
	size_t n_hists = 0;

	profile_foreach(w->profile, collect_sample, &s);
	if (hists_collect(w, &hists, &n_hists) < 0) {
		w->r = -ENOMEM;
		snprintf(w->msg, sizeof(w->msg), "out of memory");
	} else {
		w->r = store_window_add(store, &w->window, s.v, s.n, hists, n_hists, w->msg,
					sizeof(w->msg));
	}
	free(hists);
	free(s.v);
	w->have_stats = store_stats(store, &w->stats) == 0;
}

static void write_done(struct store_job *job)
{
	struct write_job *w = (struct write_job *)job;

	if (w->written)
		w->written(w->arg, &w->window, w->r, w->msg, w->have_stats ? &w->stats : NULL);
	profile_free(w->profile);
	hashtab_free(w->hists);
	free(w);
}

int store_jobs_write(struct store_queue *q, struct profile *profile, struct hashtab *hists,
		     const struct store_window *win, store_jobs_written_fn written, void *arg)
{
	struct write_job *w = calloc(1, sizeof(*w));

	if (!w) {
		profile_free(profile);
		hashtab_free(hists);
		return -ENOMEM;
	}
	w->job.work = write_work;
	w->job.done = write_done;
	w->profile = profile;
	w->hists = hists;
	w->window = *win;
	w->written = written;
	w->arg = arg;
	store_queue_push(q, &w->job);
	return 0;
}

/* ---- requests answered from the store ---- */

/* A job that ends in a reply line. */
struct reply_job {
	struct store_job job;
	store_jobs_reply_fn done;
	void *arg;
	char *reply;
};

static void reply_done(struct store_job *job)
{
	struct reply_job *r = (struct reply_job *)job;

	r->done(r->arg, r->reply);
	free(r);
}

static char *job_error_reply(int r, const char *msg)
{
	char text[320];

	snprintf(text, sizeof(text), "the profile store failed: %s (%s)", msg, strerror(-r));
	return proto_reply_error(PROTO_ERR_STORE, text);
}

struct windows_job {
	struct reply_job base;
	int64_t since_ms;
};

static void windows_work(struct store_job *job, struct store *store)
{
	struct windows_job *j = (struct windows_job *)job;
	struct proto_window_info *info = NULL;
	struct store_window *w = NULL;
	char msg[256] = "";
	size_t n = 0;
	int r;

	r = store_windows_list(store, j->since_ms, &w, &n, msg, sizeof(msg));
	if (r < 0) {
		j->base.reply = job_error_reply(r, msg);
		return;
	}
	info = calloc(n + 1, sizeof(*info));
	if (info) {
		for (size_t i = 0; i < n; i++)
			info[i] = (struct proto_window_info){
				.id = w[i].id,
				.start_ms = w[i].start_ms,
				.end_ms = w[i].end_ms,
				.capture_id = w[i].capture_id,
				.stacks = w[i].n_stacks,
				.samples = w[i].n_samples,
				.bytes = w[i].bytes,
				.kind = w[i].capture_id && w[i].kind >= 0
						? proto_kind_name(w[i].kind)
						: NULL,
				.targets = w[i].targets,
			};
		j->base.reply = proto_reply_windows(info, n);
	}
	free(info);
	free(w);
}

static struct reply_job *reply_job_new(size_t size, store_jobs_reply_fn done, void *arg,
				       void (*work)(struct store_job *, struct store *))
{
	struct reply_job *r = calloc(1, size);

	if (!r)
		return NULL;
	r->job.work = work;
	r->job.done = reply_done;
	r->done = done;
	r->arg = arg;
	return r;
}

int store_jobs_windows(struct store_queue *q, const struct proto_windows_request *req,
		       store_jobs_reply_fn reply, void *arg)
{
	struct windows_job *j =
		(struct windows_job *)reply_job_new(sizeof(*j), reply, arg, windows_work);

	if (!j)
		return -ENOMEM;
	j->since_ms = req->since_ms;
	store_queue_push(q, &j->base.job);
	return 0;
}

struct export_job {
	struct reply_job base;
	struct proto_export_request req;
	struct stack_filter *filter; /* all of the request's filters */
	struct who_match *who;	     /* its cgroup, unit or container; NULL: none */
	struct profile *profile;     /* the rows being added by export_row() */
	/* What the notes say about the daemon's setup; has_setup false: none. */
	struct store_jobs_export_setup setup;
	bool has_setup;
	char config_path[256]; /* setup's copy */
	struct result_notes notes;
};

void store_jobs_row(const struct store_sample *s, struct profile_row *ret)
{
	*ret = (struct profile_row){
		.comm = s->comm,
		.tgid = s->tgid,
		.pid = s->pid,
		.state = s->state,
		.sum_ns = s->sum_ns,
		.count = s->count,
		.bytes = s->bytes,
		.ustack = s->ustack,
		.kstack = s->kstack,
		.kind = s->kind,
		.chain = s->chain,
		.cgroup = s->cgroup,
		.ns_pid = s->ns_pid,
	};
}

static int export_row(void *arg, const struct store_sample *s)
{
	struct export_job *j = arg;
	struct profile_row row;
	struct stack_filter_sample fs = {
		.comm = s->comm,
		.tgid = s->tgid,
		.state = s->state,
		.kind = s->kind,
		.ustack = s->ustack,
		.kstack = s->kstack,
		.chain = s->chain,
	};

	if (!stack_filter_keep(j->filter, &fs) || (j->who && !who_match_keep(j->who, s->cgroup)))
		return 0;
	store_jobs_row(s, &row);
	return j->req.lines ? profile_add_row(j->profile, &row)
			    : profile_add_row_without_lines(j->profile, &row);
}

/* Runs one selection (range or capture) with the request's filters into a
 * new profile. The query's pids, comm and states only narrow the rows in
 * SQL, for speed, with the same meaning; export_row() decides. Returns 0 or
 * -errno (msg set for store errors). */
static int export_select(struct export_job *j, struct store *store, int64_t from_ms, int64_t to_ms,
			 uint64_t capture_id, struct profile **ret, uint64_t *ret_windows,
			 int64_t *ret_to_ms, char *msg, size_t msg_size)
{
	struct store_query q = {
		.from_ms = from_ms,
		.to_ms = query_to_ms(to_ms, capture_id),
		.capture_id = capture_id,
		.pids = j->req.pids,
		.n_pids = j->req.n_pids,
		.comm = j->req.comm,
		.state_mask = j->req.state_mask,
		.kind_mask = export_kind_mask(j->req.kind, j->req.oncpu),
	};
	int r;

	r = profile_new(&j->profile);
	if (r < 0)
		return r;
	r = store_query(store, &q, export_row, j, ret_windows, msg, msg_size);
	if (r < 0) {
		profile_free(j->profile);
		j->profile = NULL;
		return r;
	}
	*ret = j->profile;
	j->profile = NULL;
	if (ret_to_ms)
		*ret_to_ms = q.to_ms;
	return 0;
}

/* The reply's text for the folded, svg and speedscope formats (see
 * reply_render()). 0, or -ENOMEM. */
static int export_text(struct export_job *j, struct profile *after, struct profile *before,
		       const struct proto_export_result *res, int64_t diff_to_ms, char **ret_folded,
		       char **ret_output, char **ret_error)
{
	struct render_input input = {
		.widths_from_old = j->req.diff_widths_from_old,
		.negate = j->req.negate,
	};
	char *text;

	/* stored: both stack kinds */
	text = profile_folded_by(after, true, true, j->req.metric, j->req.group_by);
	if (text && before) {
		char *old = profile_folded_by(before, true, true, j->req.metric, j->req.group_by);
		char *both = NULL;

		if (old)
			both = flame_diff_folded(old, strlen(old), text, strlen(text),
						 j->req.normalize, j->req.strip_hex, NULL, NULL);
		free(old);
		free(text);
		text = both;
	}
	return reply_render(text,
			    &(struct reply_render_opts){
				    .format = j->req.format,
				    .render = &j->req.render,
				    .input = &input,
				    .kind = j->req.kind,
				    .oncpu = j->req.oncpu,
				    .metric = j->req.metric,
				    .differential = before != NULL,
				    .subject = {
					    .pids = j->req.pids,
					    .n_pids = j->req.n_pids,
					    .comm = j->req.comm,
					    .who = &j->req.who,
					    .from_ms = res->from_ms,
					    .to_ms = res->to_ms,
					    .capture_id = res->capture_id,
					    .diff_from_ms = j->req.diff_from_ms,
					    .diff_to_ms = diff_to_ms,
					    .diff_capture = j->req.diff_capture,
				    },
			    },
			    ret_folded, ret_output, ret_error);
}

/* "offcpu only", "offcpu and runq", "offcpu, runq and bio": the kinds of
 * mask, into buf. */
static void kinds_list(uint32_t mask, char *buf, size_t size)
{
	unsigned n = 0, total = __builtin_popcount(mask);
	const char *sep;

	buf[0] = '\0';
	for (unsigned k = 0; k < 32 && n < total; k++) {
		if (!(mask & (1u << k)))
			continue;
		n++;
		sep = n == 1 ? "" : n == total ? " and " : ", ";
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", sep, proto_kind_name(k));
	}
	if (total == 1)
		snprintf(buf + strlen(buf), size - strlen(buf), " only");
}

/* Why an export with windows holds no rows: the first reason that applies. */
static int export_empty_note(struct export_job *j, const struct proto_export_result *res,
			     int32_t capture_kind)
{
	const struct proto_export_request *q = &j->req;
	const char *kind = proto_kind_name(q->kind);
	char filters[1024], kinds[128];
	uint32_t tgid;

	for (size_t i = 0; j->has_setup && i < q->n_pids; i++)
		if (result_notes_thread_of(j->setup.proc_root, q->pids[i], &tgid))
			return result_notes_add(&j->notes,
						"--pid %u is a thread of process %u: stored stacks "
						"are kept by process; use --pid %u",
						q->pids[i], tgid, tgid);
	if (q->capture_id && capture_kind >= 0 && (uint32_t)capture_kind != q->kind)
		return result_notes_add(&j->notes,
					"capture %" PRIu64 " recorded %s, not %s: leave out --kind "
					"(an export of a capture takes its kind) or give --kind %s",
					q->capture_id, proto_kind_name(capture_kind), kind,
					proto_kind_name(capture_kind));
	if (!q->capture_id && j->has_setup && !j->setup.continuous)
		return result_notes_add(&j->notes,
					"the always-on profile is off (continuous = false in %s): "
					"only captures are stored",
					j->setup.config_path);
	if (!q->capture_id && j->has_setup && !(j->setup.recorded_kinds & (1u << q->kind))) {
		kinds_list(j->setup.recorded_kinds, kinds, sizeof(kinds));
		return result_notes_add(&j->notes,
					"the always-on profile records %s; add %s to "
					"continuous_kinds in %s to record it",
					kinds, kind, j->setup.config_path);
	}
	result_notes_filters(filters, sizeof(filters), q->pids, q->n_pids, q->state_mask, q->comm,
			     q->grep, q->exclude, q->who.cgroup, q->who.unit, q->who.container);
	if (*filters)
		return result_notes_add(&j->notes,
					"%" PRIu64 " window%s matched, but no stack passed the "
					"filters: %s",
					res->windows, res->windows == 1 ? "" : "s", filters);
	return result_notes_add(&j->notes, "%" PRIu64 " window%s matched, but %s no %s stacks",
				res->windows, res->windows == 1 ? "" : "s",
				res->windows == 1 ? "it holds" : "they hold", kind);
}

/* The reply's notes: why it is empty, what to do about frames it could not
 * name. 0 or -ENOMEM. */
static int export_notes(struct export_job *j, const struct proto_export_result *res,
			const struct profile *after, int32_t capture_kind)
{
	struct result_frame_shares shares;
	int r = 0;

	if (!res->windows && res->capture_id)
		r = result_notes_add(&j->notes, "no window of capture %" PRIu64 " is stored",
				     res->capture_id);
	else if (!res->windows)
		r = result_notes_add(&j->notes, "no stored window starts in that range");
	else if (!res->n_samples)
		r = export_empty_note(j, res, capture_kind);
	if (r == 0 && res->differential && !res->diff_windows)
		r = result_notes_add(&j->notes, "no stored window matches the baseline; "
						"everything shows as new");
	if (r == 0 && res->n_samples) {
		result_frame_shares(after, &shares);
		r = result_notes_frames(&j->notes, &shares);
	}
	return r;
}

static void export_work(struct store_job *job, struct store *store)
{
	struct export_job *j = (struct export_job *)job;
	struct proto_export_result res = {
		.from_ms = j->req.from_ms,
		.capture_id = j->req.capture_id,
		.differential = j->req.diff_from_ms || j->req.diff_capture,
	};
	struct profile *after = NULL, *before = NULL;
	struct proto_sample *samples = NULL;
	char msg[1024] = "", *folded = NULL, *output = NULL, *error = NULL;
	size_t n_samples = 0;
	int64_t diff_to_ms = 0;
	int32_t capture_kind = -1;
	int r = 0;

	if (j->req.capture_id)
		r = store_capture_kind(store, j->req.capture_id, &capture_kind, msg, sizeof(msg));
	/* An export of a capture shows what the capture recorded. */
	if (r == 0 && capture_kind >= 0 && !j->req.kind_given && !j->req.oncpu)
		j->req.kind = capture_kind;
	res.kind = proto_kind_name(j->req.kind);
	if (r == 0)
		r = export_select(j, store, j->req.from_ms, j->req.to_ms, j->req.capture_id, &after,
				  &res.windows, &res.to_ms, msg, sizeof(msg));
	if (r == 0 && res.differential)
		r = export_select(j, store, j->req.diff_from_ms, j->req.diff_to_ms,
				  j->req.diff_capture, &before, &res.diff_windows, &diff_to_ms, msg,
				  sizeof(msg));
	if (r < 0) {
		j->base.reply = r == -ENOMEM ? NULL : job_error_reply(r, msg);
		goto out;
	}
	/* A name the windows do not hold is an error naming what they hold;
	 * windows that hold nothing are not (as for any other filter). */
	if (j->who && (res.windows || res.diff_windows) &&
	    who_match_verdict(j->who, msg, sizeof(msg)) < 0) {
		j->base.reply = proto_reply_error(PROTO_ERR_NO_SUCH_CGROUP, msg);
		goto out;
	}
	res.total_ns = profile_total_ns(after);
	res.n_samples = profile_rows(after);
	if (export_notes(j, &res, after, capture_kind) < 0)
		goto out;
	res.notes = (const char *const *)j->notes.v;
	res.n_notes = j->notes.n;
	if (j->req.format == PROTO_FORMAT_JSON) {
		if (profile_samples(after, &samples, &n_samples) < 0)
			goto out;
		res.samples = samples;
	} else if (export_text(j, after, before, &res, diff_to_ms, &folded, &output, &error) < 0) {
		goto out;
	}
	res.folded = folded;
	res.output = output;
	if (error && j->notes.n) { /* nothing to draw: say why */
		free(error);
		error = result_notes_no_data(&j->notes);
		if (!error)
			goto out;
	}
	j->base.reply = error ? error : proto_reply_export(&res, n_samples);
out:
	profile_samples_free(samples, n_samples);
	profile_free(after);
	profile_free(before);
	free(folded);
	free(output);
	/* An export's profiles can take hundreds of MB of this thread's malloc
	 * arena; glibc keeps freed arena memory otherwise (RSS grew to 400 MB
	 * under 50 clients with process churn). */
	malloc_trim(0);
}

static void export_done(struct store_job *job)
{
	struct export_job *j = (struct export_job *)job;

	stack_filter_free(j->filter);
	who_match_free(j->who);
	result_notes_free(&j->notes);
	reply_done(job);
}

int store_jobs_export(struct store_queue *q, const struct proto_export_request *req,
		      store_jobs_reply_fn reply, void *arg, char *err, size_t err_size)
{
	return store_jobs_export_noted(q, req, NULL, reply, arg, err, err_size);
}

int store_jobs_export_noted(struct store_queue *q, const struct proto_export_request *req,
			    const struct store_jobs_export_setup *setup, store_jobs_reply_fn reply,
			    void *arg, char *err, size_t err_size)
{
	struct stack_filter_spec spec = {
		.comm = req->comm,
		.pids = req->pids,
		.n_pids = req->n_pids,
		.state_mask = req->state_mask,
		.grep = req->grep,
		.exclude = req->exclude,
	};
	struct export_job *j;
	int r;

	/* struct proto_export_request is large: the job holds its own copy. */
	j = (struct export_job *)reply_job_new(sizeof(*j), reply, arg, export_work);
	if (!j)
		return -ENOMEM;
	j->base.job.done = export_done;
	j->req = *req;
	if (setup) {
		j->setup = *setup;
		j->has_setup = true;
		snprintf(j->config_path, sizeof(j->config_path), "%s", setup->config_path);
		j->setup.config_path = j->config_path;
	}
	r = stack_filter_new(&spec, &j->filter, err, err_size);
	if (r == 0 && who_given(&req->who) && (r = who_match_new(&req->who, &j->who)) < 0)
		stack_filter_free(j->filter);
	if (r < 0) {
		free(j);
		return r;
	}
	store_queue_push(q, &j->base.job);
	return 0;
}

struct hist_job {
	struct reply_job base;
	struct proto_hist_request req;
	struct proto_hist_process *procs;
	size_t n, cap;
	struct who_match *who; /* its cgroup, unit or container; NULL: none */
	struct hashtab *tgids; /* with who: the processes whose samples are in (-> 1) */
};

/* A sample of the hist's windows: is its process in? */
static int hist_who_row(void *arg, const struct store_sample *s)
{
	struct hist_job *j = arg;

	if (who_match_keep(j->who, s->cgroup) && !hashtab_put(j->tgids, &s->tgid, NULL))
		return -ENOMEM;
	return 0;
}

/* The processes whose samples in q's windows who keeps, into j->tgids:
 * histograms are kept per process, samples by cgroup. 0 or -errno. */
static int hist_who_select(struct hist_job *j, struct store *store, const struct store_query *q,
			   char *msg, size_t msg_size)
{
	struct store_query samples = *q;

	samples.kind_mask = export_kind_mask(j->req.kind, false);
	if (hashtab_new(sizeof(uint32_t), 1, &j->tgids) < 0)
		return -ENOMEM;
	return store_query(store, &samples, hist_who_row, j, NULL, msg, msg_size);
}

static int hist_row(void *arg, const struct store_hist *h)
{
	struct hist_job *j = arg;
	struct proto_hist_process *p = j->n ? &j->procs[j->n - 1] : NULL;

	if (j->tgids && !hashtab_get(j->tgids, &h->tgid))
		return 0;

	if (!p || p->tgid != h->tgid) { /* rows come ordered by tgid */
		if (j->n == j->cap) {
			size_t cap = j->cap ? j->cap * 2 : 16;
			struct proto_hist_process *procs = realloc(j->procs, cap * sizeof(*procs));

			if (!procs)
				return -ENOMEM;
			j->procs = procs;
			j->cap = cap;
		}
		p = &j->procs[j->n++];
		memset(p, 0, sizeof(*p));
		p->tgid = h->tgid;
		p->comm = strdup(h->comm ? h->comm : "");
		if (!p->comm)
			return -ENOMEM;
	}
	if (h->bucket < PROTO_HIST_BUCKETS)
		p->counts[h->bucket] += h->count;
	return 0;
}

static void hist_work(struct store_job *job, struct store *store)
{
	struct hist_job *j = (struct hist_job *)job;
	struct store_query q = {
		.from_ms = j->req.from_ms,
		.to_ms = query_to_ms(j->req.to_ms, j->req.capture_id),
		.capture_id = j->req.capture_id,
		.pids = j->req.pids,
		.n_pids = j->req.n_pids,
	};
	struct proto_hist_result res = {
		.kind = proto_kind_name(j->req.kind),
		.from_ms = q.from_ms,
		.to_ms = q.to_ms,
		.capture_id = q.capture_id,
	};
	uint32_t type = j->req.kind == PROTO_KIND_RUNQ ? OFFCPU_HIST_RUNQ : OFFCPU_HIST_OFFCPU;
	char msg[1024] = "";
	int r = 0;

	if (j->who)
		r = hist_who_select(j, store, &q, msg, sizeof(msg));
	if (r == 0)
		r = store_hist_query(store, &q, type, hist_row, j, &res.windows, msg, sizeof(msg));
	if (r < 0) {
		j->base.reply = r == -ENOMEM ? NULL : job_error_reply(r, msg);
		return;
	}
	if (j->who && res.windows && who_match_verdict(j->who, msg, sizeof(msg)) < 0) {
		j->base.reply = proto_reply_error(PROTO_ERR_NO_SUCH_CGROUP, msg);
		return;
	}
	res.processes = j->procs;
	res.n_processes = j->n;
	j->base.reply = proto_reply_hist(&res);
}

static void hist_done(struct store_job *job)
{
	struct hist_job *j = (struct hist_job *)job;

	for (size_t i = 0; i < j->n; i++)
		free((void *)j->procs[i].comm);
	free(j->procs);
	who_match_free(j->who);
	hashtab_free(j->tgids);
	reply_done(job);
}

int store_jobs_hist(struct store_queue *q, const struct proto_hist_request *req,
		    store_jobs_reply_fn reply, void *arg)
{
	struct hist_job *j = (struct hist_job *)reply_job_new(sizeof(*j), reply, arg, hist_work);

	if (!j)
		return -ENOMEM;
	j->base.job.done = hist_done;
	j->req = *req;
	if (who_given(&req->who) && who_match_new(&req->who, &j->who) < 0) {
		free(j);
		return -ENOMEM;
	}
	store_queue_push(q, &j->base.job);
	return 0;
}

/* ---- heatmap ---- */

struct heatmap_job {
	struct reply_job base;
	struct proto_heatmap_request req;
};

static void heatmap_work(struct store_job *job, struct store *store)
{
	static const enum store_heatmap_key keys[] = {
		[PROTO_HEATMAP_ROWS_PROCESS] = STORE_HEATMAP_TGID,
		[PROTO_HEATMAP_ROWS_THREAD] = STORE_HEATMAP_PID,
		[PROTO_HEATMAP_ROWS_STATE] = STORE_HEATMAP_STATE,
	};
	struct heatmap_job *j = (struct heatmap_job *)job;
	struct store_heatmap_query q = {
		.from_ms = j->req.from_ms,
		.to_ms = query_to_ms(j->req.to_ms, 0),
		.pids = j->req.pids,
		.n_pids = j->req.n_pids,
		.comm = j->req.comm,
		.state_mask = j->req.state_mask,
		.kind_mask = export_kind_mask(j->req.kind, j->req.oncpu),
		.key = keys[j->req.rows],
		.max_rows = j->req.max_rows,
	};
	struct proto_heatmap_row *rows = NULL;
	struct store_heatmap h = { 0 };
	char msg[256] = "";
	int r;

	r = store_heatmap_query(store, &q, &h, msg, sizeof(msg));
	if (r < 0) {
		j->base.reply = r == -ENOMEM ? NULL : job_error_reply(r, msg);
		return;
	}
	rows = calloc(h.n_rows + 1, sizeof(*rows));
	if (rows) {
		for (size_t i = 0; i < h.n_rows; i++)
			rows[i] = (struct proto_heatmap_row){
				.key = h.rows[i].key,
				.label = q.key == STORE_HEATMAP_STATE && !h.rows[i].other
						 ? thread_state_name(h.rows[i].key)
						 : h.rows[i].label,
				.other = h.rows[i].other,
				.total_ns = h.rows[i].total_ns,
				.cells = h.rows[i].cells,
			};
		j->base.reply = proto_reply_heatmap(&(struct proto_heatmap_result){
			.req = &j->req,
			.from_ms = q.from_ms,
			.to_ms = q.to_ms,
			.n_windows = h.n_windows,
			.start_ms = h.start_ms,
			.end_ms = h.end_ms,
			.rows = rows,
			.n_rows = h.n_rows,
		});
	}
	free(rows);
	store_heatmap_free(&h);
}

int store_jobs_heatmap(struct store_queue *q, const struct proto_heatmap_request *req,
		       store_jobs_reply_fn reply, void *arg)
{
	struct heatmap_job *j =
		(struct heatmap_job *)reply_job_new(sizeof(*j), reply, arg, heatmap_work);

	if (!j)
		return -ENOMEM;
	j->req = *req;
	store_queue_push(q, &j->base.job);
	return 0;
}
