/* blocked: see blocked.h. */
#include "blocked.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "thread_state.h"

struct blocked_thread {
	struct proto_blocked_thread pub;
	char comm[OFFCPU_COMM_LEN + 1];
	char waker_comm[OFFCPU_COMM_LEN + 1];
	char *ustack, *kstack; /* the names, split in place into the frames */
	char *cgroup;	       /* its cgroup's path; NULL: not known */
	const char **frames;   /* ustack's, then kstack's */
	size_t rec;	       /* its record's index */
};

struct blocked_answer {
	struct proto_blocked_result pub;
	struct blocked_thread *threads;
	size_t n;
	struct proto_blocked_thread *list; /* pub.threads */
};

static bool id_in(uint32_t id, const uint32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static bool wanted(const struct offcpu_blocked *b, const struct proto_blocked_request *req,
		   uint64_t blocked_ns)
{
	return (!req->n_pids || id_in(b->tgid, req->pids, req->n_pids)) &&
	       (!req->n_tids || id_in(b->pid, req->tids, req->n_tids)) &&
	       (req->state_mask & (1u << (b->state % THREAD_STATE_COUNT))) &&
	       blocked_ns >= req->min_ns;
}

/* How long b has been off the CPU: since its record's start, or (none)
 * at least since the programs were loaded. */
static uint64_t blocked_for(const struct offcpu_blocked *b, const struct blocked_clock *clock)
{
	uint64_t since = b->since_ns ? b->since_ns : clock->loaded_ns;

	return clock->now_ns > since ? clock->now_ns - since : 0;
}

/* Splits names (root;...;leaf) into frames from *next on; returns how many. */
static size_t frames_split(char *names, const char ***next)
{
	size_t n = 0;

	if (!names || !*names)
		return 0;
	for (char *p = names;; p++) {
		char *end = strchr(p, ';');

		*(*next)++ = p;
		n++;
		if (!end)
			return n;
		*end = '\0';
		p = end;
	}
}

static size_t frames_count(const char *names)
{
	size_t n = names && *names ? 1 : 0;

	for (; names && *names; names++)
		n += *names == ';';
	return n;
}

/* The frames of st, without source lines, as captures give them by default. */
static char *stack_names(const struct drain_lookup *lk, const struct offcpu_stack *st,
			 uint32_t tgid, bool kernel)
{
	char *names = drain_stack_name(lk, st, tgid, kernel), *stripped;

	if (!names || !frame_list_has_lines(names))
		return names;
	stripped = frame_list_strip_lines(names);
	free(names);
	return stripped;
}

static int thread_name(struct blocked_thread *t, const struct offcpu_blocked *b,
		       const struct drain_lookup *lk)
{
	const char **next;

	char path[4096];

	t->ustack = stack_names(lk, &b->ustack, b->tgid, false);
	t->kstack = stack_names(lk, &b->kstack, b->tgid, true);
	if (!t->ustack || !t->kstack)
		return -ENOMEM;
	if (b->cgroup && lk->cgroup_path &&
	    lk->cgroup_path(lk->arg, b->cgroup, b->tgid, path, sizeof(path)) == 0 &&
	    !(t->cgroup = strdup(path)))
		return -ENOMEM;
	t->frames =
		calloc(frames_count(t->ustack) + frames_count(t->kstack) + 1, sizeof(*t->frames));
	if (!t->frames)
		return -ENOMEM;
	next = t->frames;
	t->pub.ustack = next;
	t->pub.n_ustack = frames_split(t->ustack, &next);
	t->pub.kstack = next;
	t->pub.n_kstack = frames_split(t->kstack, &next);
	return 0;
}

static int longest_first(const void *a, const void *b)
{
	uint64_t x = ((const struct blocked_thread *)a)->pub.blocked_ns;
	uint64_t y = ((const struct blocked_thread *)b)->pub.blocked_ns;

	return x > y ? -1 : x < y;
}

int blocked_answer_new(const struct offcpu_blocked *recs, size_t n,
		       const struct proto_blocked_request *req, const struct blocked_clock *clock,
		       const struct drain_lookup *lk, struct blocked_answer **ret)
{
	struct blocked_answer *a = calloc(1, sizeof(*a));
	size_t kept = 0, shown;

	if (!a)
		return -ENOMEM;
	a->threads = calloc(n ? n : 1, sizeof(*a->threads));
	if (!a->threads)
		goto oom;
	/* Filter and sort first: only the threads shown are named. */
	for (size_t i = 0; i < n; i++) {
		const struct offcpu_blocked *b = &recs[i];
		struct blocked_thread *t = &a->threads[kept];
		uint64_t ns = blocked_for(b, clock);

		if (!wanted(b, req, ns))
			continue;
		t->pub.tgid = b->tgid;
		t->pub.pid = b->pid;
		t->pub.state = thread_state_name(b->state);
		t->pub.blocked_ns = ns;
		t->pub.since_ms = b->since_ns ? clock->now_ms - (int64_t)(ns / 1000000) : 0;
		t->pub.runq_ns =
			b->wake_ns && clock->now_ns > b->wake_ns ? clock->now_ns - b->wake_ns : 0;
		memcpy(t->comm, b->comm, OFFCPU_COMM_LEN);
		if (b->waker.pid || b->waker.ctx != OFFCPU_WAKER_TASK) {
			const char *name =
				drain_waker_name(&b->waker, t->waker_comm, sizeof(t->waker_comm));

			if (name != t->waker_comm)
				snprintf(t->waker_comm, sizeof(t->waker_comm), "%s", name);
			t->pub.waker_tgid = b->waker.tgid;
			t->pub.waker_pid = b->waker.pid;
		}
		t->rec = i;
		kept++;
	}
	qsort(a->threads, kept, sizeof(*a->threads), longest_first);
	shown = req->limit && kept > req->limit ? req->limit : kept;
	a->n = shown;
	a->list = calloc(shown ? shown : 1, sizeof(*a->list));
	if (!a->list)
		goto oom;
	for (size_t i = 0; i < shown; i++) {
		struct blocked_thread *t = &a->threads[i];

		if (thread_name(t, &recs[t->rec], lk) < 0)
			goto oom;
		/* Pointers into t only now: sorting moved it. */
		t->pub.comm = t->comm;
		t->pub.waker_comm = t->waker_comm[0] ? t->waker_comm : NULL;
		t->pub.cgroup = t->cgroup;
		a->list[i] = t->pub;
	}
	a->pub.now_ms = clock->now_ms;
	a->pub.threads = a->list;
	a->pub.n_threads = shown;
	a->pub.n_more = kept - shown;
	*ret = a;
	return 0;
oom:
	blocked_answer_free(a);
	return -ENOMEM;
}

const struct proto_blocked_result *blocked_answer_result(const struct blocked_answer *a)
{
	return &a->pub;
}

void blocked_answer_free(struct blocked_answer *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free(a->threads[i].ustack);
		free(a->threads[i].kstack);
		free(a->threads[i].frames);
		free(a->threads[i].cgroup);
	}
	free(a->threads);
	free(a->list);
	free(a);
}
