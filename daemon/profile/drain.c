/* drain: see drain.h. */
#define _GNU_SOURCE /* asprintf */
#include "drain.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "python_splice.h"

/* Names are cached per drain: kernel stacks by hash (tgid 0), user stacks by
 * (tgid, hash) because the same addresses mean different code in two
 * processes; a user stack of file frames alone (OFFCPU_FRAME_FILE) means
 * the same in every process, by hash alone (tgid 0). */
struct name_key {
	uint64_t hash;
	uint32_t tgid;
	uint32_t kind; /* 0 user stack, 1 kernel stack, 2 waker chain, 3 user stack + file,
			* 4 and 5 user and kernel stack + DRAIN_IN_PROGRESS_FRAME,
			* 6 cgroup path (hash: its id) */
};

/* A drain's name: its own, or one of struct drain_names' (kept). */
struct drain_name {
	char *name;
	bool kept;
};

/* Bounds of the names kept across drains: past either, they start afresh. */
#define DRAIN_NAMES_MAX	      65536
#define DRAIN_NAMES_MAX_BYTES ((size_t)16 << 20)

/* The names of stacks that mean the same in every drain and process:
 * kernel stacks (the kernel's symbols are read once) and user stacks of
 * file frames alone, while no file id has been forgotten (an id names one
 * file until then). A long-lived thread's stacks come back in every
 * drain, and a new process's stacks of file frames were often named for
 * an older process of its binary (under bench/churn.py, a third to a half
 * of the stacks a drain names). */
struct drain_names {
	struct hashtab *map; /* struct name_key (tgid 0) -> char * */
	size_t bytes;
	uint64_t epoch; /* drain_lookup.names_epoch when they were named */
};

int drain_names_new(struct drain_names **ret)
{
	struct drain_names *n = calloc(1, sizeof(*n));

	if (!n || hashtab_new(sizeof(struct name_key), sizeof(char *), &n->map) < 0) {
		free(n);
		return -ENOMEM;
	}
	*ret = n;
	return 0;
}

static void free_names(struct hashtab *map)
{
	char **name;
	size_t pos = 0;

	while (map && hashtab_next(map, &pos, NULL, (void **)&name))
		free(*name);
	hashtab_free(map);
}

static void drain_names_clear(struct drain_names *n)
{
	free_names(n->map);
	n->bytes = 0;
	if (hashtab_new(sizeof(struct name_key), sizeof(char *), &n->map) < 0)
		n->map = NULL; /* none kept from now on */
}

void drain_names_free(struct drain_names *n)
{
	if (!n)
		return;
	free_names(n->map);
	free(n);
}

size_t drain_names_count(const struct drain_names *n)
{
	return n && n->map ? hashtab_count(n->map) : 0;
}

/* At a drain's start, when no row names a kept name: drops them all if
 * they may be wrong now, or if they take more than their bounds. */
static void drain_names_check(struct drain_names *n, const struct drain_lookup *lk)
{
	uint64_t epoch;

	if (!n)
		return;
	epoch = lk->names_epoch ? lk->names_epoch(lk->arg) : 0;
	if (n->map && (epoch != n->epoch || hashtab_count(n->map) >= DRAIN_NAMES_MAX ||
		       n->bytes >= DRAIN_NAMES_MAX_BYTES))
		drain_names_clear(n);
	n->epoch = epoch;
}

/* The name kept under key; NULL if none. */
static char *drain_names_find(const struct drain_names *n, const struct name_key *key)
{
	char **name = n && n->map ? hashtab_get(n->map, key) : NULL;

	return name ? *name : NULL;
}

/* Keeps name (ownership passes) under key; false if there is no room. */
static bool drain_names_keep(struct drain_names *n, const struct name_key *key, char *name)
{
	char **slot;

	if (!n || !n->map)
		return false;
	slot = hashtab_put(n->map, key, NULL);
	if (!slot)
		return false;
	*slot = name;
	n->bytes += strlen(name) + 1;
	return true;
}

#define FRAME_NAME_MAX 4096 /* a user address's frames: its inline chain */

/* Appends s as frames: one frame name (';' in it made ':'), or with
 * joined set, a list already joined with ';'. */
static int append_frames(char **buf, size_t *len, size_t *cap, const char *s, bool joined)
{
	size_t n = strlen(s);

	if (*len + n + 2 > *cap) {
		size_t c = (*len + n + 2) * 2;
		char *b = realloc(*buf, c);

		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	if (*len)
		(*buf)[(*len)++] = ';';
	/* ';' separates frames in the folded format; keep it out of names. */
	for (size_t i = 0; i < n; i++)
		(*buf)[(*len)++] = s[i] == ';' && !joined ? ':' : s[i];
	(*buf)[*len] = '\0';
	return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const char *name)
{
	return append_frames(buf, len, cap, name, false);
}

/* The kernel stack is walked from inside the BPF program: its leaf frames
 * are the tracing machinery, not the thread's wait. */
static bool is_tracing_frame(const char *name)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
						"__traceiter_", "__bpf_prog_run" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* Appends the ';'-joined frames of one address in reverse order (the
 * symbolizer gives an inline chain root to leaf). */
static int append_reversed(char **buf, size_t *len, size_t *cap, const char *frames)
{
	const char *end = frames + strlen(frames);
	int r = 0;

	while (r == 0 && end > frames) {
		const char *start = end;
		char one[FRAME_NAME_MAX];

		while (start > frames && start[-1] != ';')
			start--;
		snprintf(one, sizeof(one), "%.*s", (int)(end - start), start);
		r = append(buf, len, cap, one);
		end = start > frames ? start - 1 : frames;
	}
	return r;
}

/* How many of the nr frames of st, a user stack the kernel walked with
 * frame pointers (bpf_get_stack: raw addresses, never our frame
 * encodings), come before the first that no user address can be: stack
 * garbage a walk through code that keeps data in rbp read as a return
 * address, which would read as a file or CPython frame. */
static uint32_t raw_user_frames(const struct offcpu_stack *st, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (st->ips[i] >= OFFCPU_USER_PC_END)
			return i;
	return nr;
}

/* Where a user stack's CPython frames start (bpf/python.bpf.h): after
 * every native frame; nr if it has none. */
static uint32_t python_frames_start(const struct offcpu_stack *st, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (OFFCPU_FRAME_IS_PYTHON(st->ips[i]))
			return i;
	return nr;
}

/* The name of one address of a user stack (all but ips[0] are return
 * addresses, looked up one byte earlier). */
static void user_frame_name(const struct drain_lookup *lk, const struct offcpu_stack *st,
			    uint32_t tgid, uint32_t i, char *frame, size_t size)
{
	lk->user_frames(lk->arg, tgid, st->ips[i] - (i > 0), frame, size);
}

/* As stack_name() for a user stack with CPython's frames from n_native
 * on: each activation's frames in place of its eval loop's frame
 * (python_splice.h). Appends to buf, which has the root's marker if any;
 * leaf_first: the leaf first, then end (if not NULL: the root's marker). */
static char *python_stack_name(const struct drain_lookup *lk, const struct offcpu_stack *st,
			       uint32_t tgid, uint32_t n_native, uint32_t nr, bool leaf_first,
			       const char *end, char *buf, size_t len, size_t cap)
{
	char **names = calloc(n_native ? n_native : 1, sizeof(*names)), frame[FRAME_NAME_MAX];
	uint8_t kinds[OFFCPU_MAX_STACK_DEPTH];
	int32_t order[OFFCPU_MAX_STACK_DEPTH];
	uint32_t n;
	int r = 0;

	if (!names) {
		free(buf);
		return NULL;
	}
	for (uint32_t i = 0; i < n_native && r == 0; i++) {
		kinds[i] = PYTHON_SPLICE_OTHER;
		if (!st->ips[i])
			continue;
		user_frame_name(lk, st, tgid, i, frame, sizeof(frame));
		kinds[i] = python_splice_classify(frame);
		if (!(names[i] = strdup(frame)))
			r = -ENOMEM;
	}
	n = r ? 0 : python_splice_plan(kinds, n_native, st->ips + n_native, nr - n_native, order);
	for (uint32_t k = 0; k < n && r == 0; k++) {
		int32_t at = order[leaf_first ? n - 1 - k : k];

		if (at >= 0) {
			if (names[at])
				r = leaf_first ? append_reversed(&buf, &len, &cap, names[at])
					       : append_frames(&buf, &len, &cap, names[at], true);
			continue;
		}
		if (lk->python_frame)
			lk->python_frame(lk->arg, tgid, st->ips[n_native + (uint32_t)(-1 - at)], frame,
					 sizeof(frame));
		else
			snprintf(frame, sizeof(frame), "[python]");
		r = append(&buf, &len, &cap, frame);
	}
	if (r == 0 && end)
		r = append(&buf, &len, &cap, end);
	for (uint32_t i = 0; i < n_native; i++)
		free(names[i]);
	free(names);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	return buf ? buf : strdup("");
}

/* Joins a leaf-first stack into "root;...;leaf". Return addresses point after
 * the call, so every frame but the leaf is looked up one byte earlier. */
static char *stack_name(const struct drain_lookup *lk, const struct offcpu_stack *st, uint32_t tgid,
			bool kernel, bool leaf_first)
{
	char *buf = NULL, frame[FRAME_NAME_MAX];
	size_t len = 0, cap = 0;
	uint32_t nr = st->nr < OFFCPU_MAX_STACK_DEPTH ? st->nr : OFFCPU_MAX_STACK_DEPTH;
	uint32_t leaf = 0;
	bool raw = !kernel && !(st->flags & OFFCPU_STACK_DWARF);
	uint32_t whole_nr = nr;
	/* A table walk that did not reach the thread's first frame says so
	 * at the root, where the missing callers would be; so does a
	 * frame-pointer walk cut at garbage. */
	bool truncated;

	if (raw)
		nr = raw_user_frames(st, nr);
	truncated = (!kernel && !raw && !(st->flags & OFFCPU_STACK_COMPLETE)) || nr < whole_nr;
	if (truncated && !leaf_first && append(&buf, &len, &cap, DRAIN_TRUNCATED_FRAME) < 0)
		return NULL;
	if (!kernel && !raw) {
		uint32_t n_native = python_frames_start(st, nr);

		if (n_native < nr)
			return python_stack_name(lk, st, tgid, n_native, nr, leaf_first,
						 truncated && leaf_first ? DRAIN_TRUNCATED_FRAME : NULL,
						 buf, len, cap);
	}
	while (kernel && leaf < nr) {
		lk->kernel_frame(lk->arg, st->ips[leaf] - (leaf > 0), frame, sizeof(frame));
		if (!is_tracing_frame(frame))
			break;
		leaf++;
	}
	for (uint32_t k = nr; k-- > leaf;) {
		uint32_t i = leaf_first ? nr - 1 - k + leaf : k;
		uint64_t addr = st->ips[i] - (i > 0); /* all but ips[0] are return addresses */

		if (!st->ips[i])
			continue;
		int r;

		if (kernel) {
			lk->kernel_frame(lk->arg, addr, frame, sizeof(frame));
			r = append(&buf, &len, &cap, frame);
		} else {
			/* one address, possibly several frames (inlined functions) */
			lk->user_frames(lk->arg, tgid, addr, frame, sizeof(frame));
			r = leaf_first ? append_reversed(&buf, &len, &cap, frame)
				       : append_frames(&buf, &len, &cap, frame, true);
		}
		if (r < 0) {
			free(buf);
			return NULL;
		}
	}
	/* Read off the CPU, the frames that name the wait could not be put
	 * back: the leaf says so, where they would be. */
	if (kernel && (st->flags & OFFCPU_STACK_SCHED_LOST) &&
	    append(&buf, &len, &cap, DRAIN_SCHED_LOST_FRAME) < 0) {
		free(buf);
		return NULL;
	}
	if (truncated && leaf_first && append(&buf, &len, &cap, DRAIN_TRUNCATED_FRAME) < 0) {
		free(buf);
		return NULL;
	}
	return buf ? buf : strdup("");
}

char *drain_stack_name(const struct drain_lookup *lk, const struct offcpu_stack *st, uint32_t tgid,
		       bool kernel)
{
	return stack_name(lk, st, tgid, kernel, false);
}

static int stack_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct collector_stack *)a)->hash;
	uint64_t y = ((const struct collector_stack *)b)->hash;

	return x < y ? -1 : x > y;
}

static const struct collector_stack *stack_find(const struct collector_batch *b, uint64_t hash)
{
	struct collector_stack probe = { .hash = hash };

	return b->n_stacks ? bsearch(&probe, b->stacks, b->n_stacks, sizeof(*b->stacks), stack_cmp)
			   : NULL;
}

/* Whether every frame of st is a file's (OFFCPU_FRAME_FILE): the stack
 * names the same code in every process. */
static bool stack_of_files(const struct offcpu_stack *st)
{
	uint32_t nr = st->nr < OFFCPU_MAX_STACK_DEPTH ? st->nr : OFFCPU_MAX_STACK_DEPTH;

	for (uint32_t i = 0; i < nr; i++)
		if (!(st->ips[i] & OFFCPU_FRAME_FILE))
			return false;
	return true;
}

static const char *name_get(struct drain_result *r, struct drain_names *kept,
			    const struct drain_lookup *lk, const struct collector_batch *b,
			    uint64_t hash, uint32_t tgid, bool kernel)
{
	struct name_key shared = { .hash = hash, .kind = kernel },
			own = { .hash = hash, .tgid = tgid, .kind = kernel };
	const struct collector_stack *found;
	struct drain_name *slot;
	bool is_shared;

	if (!hash)
		return "";
	/* Named already: the stack is found and scanned only the first time. */
	slot = hashtab_get(r->names, &shared);
	if (!slot && !kernel)
		slot = hashtab_get(r->names, &own);
	if (slot)
		return slot->name;
	found = stack_find(b, hash);
	is_shared = kernel || (found && stack_of_files(&found->stack));
	slot = hashtab_put(r->names, is_shared ? &shared : &own, NULL);
	if (!slot)
		return "[out of memory]";
	if (is_shared && found && (slot->name = drain_names_find(kept, &shared))) {
		slot->kept = true;
		return slot->name;
	}
	/* The stack map was full when this block was counted: keep the time. */
	slot->name =
		found ? stack_name(lk, &found->stack, tgid, kernel, false) : strdup("[stack lost]");
	if (!slot->name)
		return "[out of memory]";
	if (is_shared && found)
		slot->kept = drain_names_keep(kept, &shared, slot->name);
	return slot->name;
}

static int chain_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct collector_chain *)a)->hash;
	uint64_t y = ((const struct collector_chain *)b)->hash;

	return x < y ? -1 : x > y;
}

/*
 * The context a waker's kernel stack (leaf first) shows: the interrupt entry
 * or softirq frame nearest the leaf decides, since softirqs run on the way
 * out of hard interrupts.
 */
static enum offcpu_waker_ctx stack_context(const char *kframes_leaf_first)
{
	static const struct {
		const char *prefix;
		enum offcpu_waker_ctx ctx;
	} markers[] = {
		{ "handle_softirqs", OFFCPU_WAKER_SOFTIRQ },
		{ "__do_softirq", OFFCPU_WAKER_SOFTIRQ },
		{ "run_ksoftirqd", OFFCPU_WAKER_SOFTIRQ },
		{ "asm_sysvec_", OFFCPU_WAKER_HARDIRQ },
		{ "sysvec_", OFFCPU_WAKER_HARDIRQ },
		{ "__sysvec_", OFFCPU_WAKER_HARDIRQ },
		{ "asm_common_interrupt", OFFCPU_WAKER_HARDIRQ },
		{ "hrtimer_interrupt", OFFCPU_WAKER_HARDIRQ },
		{ "__hrtimer_run_queues", OFFCPU_WAKER_HARDIRQ },
		{ "handle_irq_event", OFFCPU_WAKER_HARDIRQ },
		{ "asm_exc_nmi", OFFCPU_WAKER_NMI },
	};
	const char *f = kframes_leaf_first;

	while (*f) {
		size_t len = strcspn(f, ";");

		for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
			if (!strncmp(f, markers[i].prefix, strlen(markers[i].prefix)))
				return markers[i].ctx;
		f += len + (f[len] == ';');
	}
	return OFFCPU_WAKER_TASK;
}

const char *drain_waker_name(const struct offcpu_waker *w, char *buf, size_t size)
{
	static const char *const labels[] = {
		[OFFCPU_WAKER_HARDIRQ] = "[hardirq]",
		[OFFCPU_WAKER_SOFTIRQ] = "[softirq]",
		[OFFCPU_WAKER_IDLE] = "[idle]",
		[OFFCPU_WAKER_NMI] = "[nmi]",
	};

	if (w->ctx != OFFCPU_WAKER_TASK && w->ctx < sizeof(labels) / sizeof(labels[0]))
		return labels[w->ctx];
	if (!strncmp(w->comm, "ksoftirqd/", 10))
		return "[softirq]"; /* softirq work deferred to its thread */
	snprintf(buf, size, "%.*s", OFFCPU_COMM_LEN, w->comm);
	return buf;
}

/*
 * One waker level, in the reversed order of wakeup graphs: kernel frames
 * leaf->root, "-", user frames leaf->root, then who it was. An interrupt
 * waker gets its label and no user part: the task it interrupted did not
 * wake anyone. Returns 1 if the level was an interrupt or idle (the chain
 * ends there), 0, or -ENOMEM.
 */
static int level_name(const struct drain_lookup *lk, const struct offcpu_waker *w, char **buf,
		      size_t *len, size_t *cap)
{
	struct offcpu_waker who = *w;
	struct offcpu_stack st;
	char comm[OFFCPU_COMM_LEN + 1], *part = NULL;
	int r = 0;

	if (w->kstack) {
		part = lk->waker_stack(lk->arg, w->kstack, &st) == 0
			       ? stack_name(lk, &st, 0, true, true)
			       : strdup("[stack lost]");
		if (!part)
			return -ENOMEM;
		if (who.ctx == OFFCPU_WAKER_TASK)
			who.ctx = stack_context(part);
		r = *part ? append_frames(buf, len, cap, part, true) : 0;
		free(part);
	}
	if (r == 0)
		r = append(buf, len, cap, "-");
	if (r == 0 && w->ustack && who.ctx == OFFCPU_WAKER_TASK) {
		part = lk->waker_stack(lk->arg, w->ustack, &st) == 0
			       ? stack_name(lk, &st, w->tgid, false, true)
			       : strdup("[stack lost]");
		r = part ? (*part ? append_frames(buf, len, cap, part, true) : 0) : -ENOMEM;
		free(part);
	}
	if (r == 0)
		r = append(buf, len, cap, drain_waker_name(&who, comm, sizeof(comm)));
	if (r < 0)
		return r;
	return who.ctx != OFFCPU_WAKER_TASK;
}

/* Whether key's stack with a leaf frame added is named in this drain
 * already: then *ret is its name. */
static bool named_leaf(struct drain_result *r, const struct name_key *key, const char **ret)
{
	struct drain_name *slot = hashtab_get(r->names, key);

	if (slot)
		*ret = slot->name ? slot->name : "[out of memory]";
	return slot;
}

/* Names key "stack;leaf" (leaf alone where stack is "") in this drain. */
static const char *leaf_add(struct drain_result *r, const struct name_key *key, const char *stack,
			    const char *leaf)
{
	struct drain_name *slot = hashtab_put(r->names, key, NULL);

	if (!slot)
		return "[out of memory]";
	if (asprintf(&slot->name, "%s%s%s", stack, *stack ? ";" : "", leaf) < 0)
		slot->name = NULL;
	return slot->name ? slot->name : "[out of memory]";
}

/* A --with-filename fileio row's user stack, its file's name as the leaf
 * frame: "stack;[file] NAME". */
static const char *file_leaf(struct drain_result *r, const struct drain_lookup *lk,
			     const char *ustack, const struct offcpu_key *k)
{
	struct name_key key = { .hash = k->ustack ^ (k->chain * 0x9e3779b97f4a7c15ULL),
				.tgid = k->tgid,
				.kind = 3 };
	struct offcpu_file_name f;
	char leaf[sizeof(DRAIN_FILE_FRAME_PREFIX) + sizeof(f.name)];
	const char *named;

	if (named_leaf(r, &key, &named))
		return named;
	if (lk->file_name(lk->arg, k->chain, &f) < 0)
		snprintf(f.name, sizeof(f.name), "[name lost]"); /* evicted: the time stays */
	for (char *p = f.name; *p; p++)
		if (*p == ';' || (unsigned char)*p < 0x20)
			*p = *p == ';' ? ':' : '?'; /* a frame holds no ';' and no line break */
	snprintf(leaf, sizeof(leaf), DRAIN_FILE_FRAME_PREFIX "%s", f.name);
	return leaf_add(r, &key, ustack, leaf);
}

/* stack (a row's user or kernel stack, by hash) with DRAIN_IN_PROGRESS_FRAME
 * as its leaf. */
static const char *in_progress_leaf(struct drain_result *r, const char *stack, uint64_t hash,
				    uint32_t tgid, bool kernel)
{
	struct name_key key = { .hash = hash, .tgid = kernel ? 0 : tgid, .kind = kernel ? 5 : 4 };
	const char *named;

	if (named_leaf(r, &key, &named))
		return named;
	return leaf_add(r, &key, stack, DRAIN_IN_PROGRESS_FRAME);
}

/* The waker part of a row: its levels joined by "--". */
static const char *chain_get(struct drain_result *r, const struct drain_lookup *lk,
			     const struct collector_batch *b, const struct offcpu_key *k)
{
	struct name_key key = { .hash = k->chain, .kind = 2 };
	struct collector_chain probe = { .hash = k->chain }, *found;
	struct drain_name *slot;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	bool created;
	int e = 0;

	if (k->kind != OFFCPU_KIND_WAKEUP && k->kind != OFFCPU_KIND_OFFWAKE &&
	    k->kind != OFFCPU_KIND_CHAIN)
		return "";
	if (!k->chain)
		return "[no wakeup seen]"; /* woken before the capture looked */
	slot = hashtab_put(r->names, &key, &created);
	if (!slot)
		return "[out of memory]";
	if (!created)
		return slot->name;
	found = b->n_chains ? bsearch(&probe, b->chains, b->n_chains, sizeof(*b->chains), chain_cmp)
			    : NULL;
	if (!found) {
		slot->name = strdup("[chain lost]");
		return slot->name ? slot->name : "[out of memory]";
	}
	for (uint32_t i = 0; i < found->chain.n && i < OFFCPU_MAX_CHAIN && e == 0; i++) {
		if (i)
			e = append(&buf, &len, &cap, "--");
		if (e == 0)
			e = level_name(lk, &found->chain.levels[i], &buf, &len, &cap);
	}
	if (e > 0)
		e = 0; /* ended at an interrupt or idle waker */
	if (e < 0) {
		free(buf);
		buf = NULL;
	}
	slot->name = buf ? buf : strdup("");
	return slot->name ? slot->name : "[out of memory]";
}

/* The path of row's cgroup, named once per drain. */
static const char *cgroup_get(struct drain_result *r, const struct drain_lookup *lk,
			      const struct offcpu_key *k)
{
	struct name_key key = { .hash = k->cgroup, .kind = 6 };
	struct drain_name *slot;
	char buf[4096];

	if (!k->cgroup || !lk->cgroup_path)
		return "";
	slot = hashtab_get(r->names, &key);
	if (slot)
		return slot->name;
	slot = hashtab_put(r->names, &key, NULL);
	if (!slot)
		return "";
	slot->name = strdup(lk->cgroup_path(lk->arg, k->cgroup, k->tgid, buf, sizeof(buf)) < 0
				    ? ""
				    : buf);
	return slot->name ? slot->name : "";
}

/* Process tgid's pid in its pid namespace, read once per drain. */
static uint32_t ns_pid_get(struct drain_result *r, const struct drain_lookup *lk, uint32_t tgid)
{
	uint32_t *ns_pid;
	bool created;

	if (!lk->ns_pid || !tgid)
		return 0;
	ns_pid = hashtab_put(r->ns_pids, &tgid, &created);
	if (!ns_pid)
		return 0;
	if (created)
		*ns_pid = lk->ns_pid(lk->arg, tgid);
	return *ns_pid;
}

void drain_unsampled_names(struct drain_row *row)
{
	row->kstack = "";
	row->ustack = DRAIN_UNSAMPLED_FRAME;
	row->chain = "";
}

int drain_run(struct collector_batch *b, const struct drain_lookup *lk,
	      struct sampling_carry *carry, struct drain_names *kept, struct drain_result *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	memcpy(ret->counters, b->counters, sizeof(ret->counters));
	drain_names_check(kept, lk);
	r = hashtab_new(sizeof(struct name_key), sizeof(struct drain_name), &ret->names);
	if (r == 0)
		r = hashtab_new(sizeof(uint32_t), sizeof(uint32_t), &ret->ns_pids);
	if (r < 0)
		return r;
	r = sampling_calibrate(&b->rows, &b->n_rows, b->totals, b->n_totals, carry, ret->sampling);
	if (r < 0)
		return r;
	ret->rows = calloc(b->n_rows ? b->n_rows : 1, sizeof(*ret->rows));
	if (!ret->rows)
		return -ENOMEM;
	if (b->n_stacks) /* b->stacks is NULL when there are none */
		qsort(b->stacks, b->n_stacks, sizeof(*b->stacks), stack_cmp);
	if (b->n_chains)
		qsort(b->chains, b->n_chains, sizeof(*b->chains), chain_cmp);
	for (size_t i = 0; i < b->n_rows; i++) {
		struct drain_row *row = &ret->rows[i];
		const struct collector_stack *ustack;

		row->key = b->rows[i].key;
		row->value = b->rows[i].value;
		row->value.comm[sizeof(row->value.comm) - 1] = '\0';
		row->cgroup = cgroup_get(ret, lk, &row->key);
		row->ns_pid = ns_pid_get(ret, lk, row->key.tgid);
		if (row->key.flags & OFFCPU_KEY_UNSAMPLED) {
			drain_unsampled_names(row);
			continue;
		}
		row->kstack = name_get(ret, kept, lk, b, row->key.kstack, row->key.tgid, true);
		row->ustack = name_get(ret, kept, lk, b, row->key.ustack, row->key.tgid, false);
		ustack = row->key.ustack ? stack_find(b, row->key.ustack) : NULL;
		row->ustack_flags = ustack ? ustack->stack.flags : 0;
		row->chain = chain_get(ret, lk, b, &row->key);
		if (row->key.kind == OFFCPU_KIND_FILEIO && row->key.chain)
			row->ustack = file_leaf(ret, lk, row->ustack, &row->key);
		/* On the kernel stack, the leaf of the folded line, where there is one. */
		if ((row->key.flags & OFFCPU_KEY_IN_PROGRESS) && row->key.kstack)
			row->kstack = in_progress_leaf(ret, row->kstack, row->key.kstack, 0, true);
		else if (row->key.flags & OFFCPU_KEY_IN_PROGRESS)
			row->ustack = in_progress_leaf(ret, row->ustack, row->key.ustack,
						       row->key.tgid, false);
	}
	ret->n_rows = b->n_rows;
	/* Histograms pass through as they are; the manager sorts them by slot. */
	ret->hists = b->hists;
	ret->n_hists = b->n_hists;
	ret->n_stacks = b->n_stacks;
	ret->n_chains = b->n_chains;
	b->hists = NULL;
	b->n_hists = 0;
	return 0;
}

void drain_result_release(struct drain_result *r)
{
	struct drain_name *name;
	size_t pos = 0;

	if (r->names)
		while (hashtab_next(r->names, &pos, NULL, (void **)&name))
			if (!name->kept)
				free(name->name);
	hashtab_free(r->names);
	hashtab_free(r->ns_pids);
	free(r->rows);
	free(r->hists);
	memset(r, 0, sizeof(*r));
}
