/*
 * proc_files: see proc_files.h.
 *
 * Two small arrays under one lock: kept processes (their executable maps
 * lines, and the files they hold a reference on), indexed by tgid, and held
 * files, searched linearly. A process is looked up once per drain that
 * names it and once per note (every new process under churn: a linear
 * search of 4096 tgids was a twelfth of the unwinder thread's time).
 */
#define _GNU_SOURCE
#include "proc_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hashtab.h"
#include "pid_ns.h"
#include "proc_maps.h"

#define PF_SWEEP_NS   (5 * 1000000000ull)
#define PF_LINE_MAX   (PATH_MAX + 128)
#define PF_MAPS_BYTES (1u << 20) /* executable maps text kept per process */
/* Processes dropped at once when PROC_FILES_PROCS_MAX are kept. */
#define PF_EVICT_BATCH (PROC_FILES_PROCS_MAX / 16)

struct pf_file {
	uint64_t dev, ino;
	int fd;
	uint32_t refs; /* kept processes that map it */
};

struct pf_proc {
	uint32_t tgid;
	uint64_t noted_ns;
	uint64_t exited_ns; /* 0: alive when last looked at */
	char *lines;	    /* its executable maps lines, '\n'-terminated */
	size_t len;
	uint32_t ns_pid; /* its pid in its own pid namespace (pid_ns.h), when noted */
	struct pf_file_ref {
		uint64_t dev, ino;
	} * files; /* the files it holds a reference on */
	size_t n_files;
};

struct proc_files {
	char proc_root[64];
	pthread_mutex_t lock;
	struct pf_proc *procs;
	size_t n_procs, cap_procs;
	struct hashtab *by_tgid; /* tgid -> its index in procs */
	struct pf_file files[PROC_FILES_FILES_MAX];
	size_t n_files;
	uint64_t last_sweep_ns;
	uint64_t files_not_held;
};

static uint64_t pf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct pf_file *pf_file_find(struct proc_files *pf, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < pf->n_files; i++)
		if (pf->files[i].dev == dev && pf->files[i].ino == ino)
			return &pf->files[i];
	return NULL;
}

static void pf_file_unref(struct proc_files *pf, uint64_t dev, uint64_t ino)
{
	struct pf_file *f = pf_file_find(pf, dev, ino);

	if (!f || --f->refs)
		return;
	close(f->fd);
	*f = pf->files[--pf->n_files];
}

static void pf_proc_release(struct proc_files *pf, struct pf_proc *p)
{
	for (size_t i = 0; i < p->n_files; i++)
		pf_file_unref(pf, p->files[i].dev, p->files[i].ino);
	free(p->files);
	free(p->lines);
}

/* Drops procs[i]; the last process takes its place. */
static void pf_proc_drop(struct proc_files *pf, size_t i)
{
	size_t *at;

	hashtab_remove(pf->by_tgid, &pf->procs[i].tgid);
	pf_proc_release(pf, &pf->procs[i]);
	pf->procs[i] = pf->procs[--pf->n_procs];
	if (i < pf->n_procs && (at = hashtab_get(pf->by_tgid, &pf->procs[i].tgid)))
		*at = i;
}

static struct pf_proc *pf_proc_find(struct proc_files *pf, uint32_t tgid)
{
	const size_t *at = hashtab_get(pf->by_tgid, &tgid);

	return at ? &pf->procs[*at] : NULL;
}

static bool pf_alive(struct proc_files *pf, uint32_t tgid)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%" PRIu32, pf->proc_root, tgid) >= (int)sizeof(path))
		return false;
	return stat(path, &st) == 0;
}

/* Notices exits, and forgets processes exited PROC_FILES_KEEP_S ago. */
static void pf_sweep(struct proc_files *pf, uint64_t now)
{
	if (now - pf->last_sweep_ns < PF_SWEEP_NS)
		return;
	pf->last_sweep_ns = now;
	for (size_t i = 0; i < pf->n_procs;) {
		struct pf_proc *p = &pf->procs[i];

		if (!p->exited_ns && !pf_alive(pf, p->tgid))
			p->exited_ns = now;
		if (p->exited_ns && now - p->exited_ns > PROC_FILES_KEEP_S * 1000000000ull) {
			pf_proc_drop(pf, i);
			continue;
		}
		i++;
	}
}

/* An eviction rank: exited processes first, then the longest noted. */
struct pf_rank {
	uint64_t exited_first; /* 0 for an exited process */
	uint64_t noted_ns;
	size_t index;
};

static int pf_rank_cmp(const void *a, const void *b)
{
	const struct pf_rank *x = a, *y = b;

	if (x->exited_first != y->exited_first)
		return x->exited_first < y->exited_first ? -1 : 1;
	return x->noted_ns < y->noted_ns ? -1 : x->noted_ns > y->noted_ns;
}

static int pf_index_desc(const void *a, const void *b)
{
	const struct pf_rank *x = a, *y = b;

	return x->index < y->index ? 1 : x->index > y->index ? -1 : 0;
}

/* Drops the first PF_EVICT_BATCH processes by rank: one ranking per batch,
 * not a scan of every process for every new one of a churning host. */
static void pf_evict_batch(struct proc_files *pf)
{
	size_t n = pf->n_procs, victims = n < PF_EVICT_BATCH ? n : PF_EVICT_BATCH;
	struct pf_rank *rank = malloc(n * sizeof(*rank));

	if (!rank) { /* room for this one, at least */
		pf_proc_drop(pf, 0);
		return;
	}
	for (size_t i = 0; i < n; i++)
		rank[i] = (struct pf_rank){ .exited_first = pf->procs[i].exited_ns ? 0 : 1,
					    .noted_ns = pf->procs[i].noted_ns,
					    .index = i };
	qsort(rank, n, sizeof(*rank), pf_rank_cmp);
	/* From the highest index down: dropping one moves the last process
	 * into its place, and that one was kept or is already dropped. */
	qsort(rank, victims, sizeof(*rank), pf_index_desc);
	for (size_t i = 0; i < victims; i++)
		pf_proc_drop(pf, rank[i].index);
	free(rank);
}

/* Takes a reference on the file of mapping m, opening it through
 * map_files if it is not held yet. Returns false if it is not held. */
static bool pf_file_ref(struct proc_files *pf, uint32_t tgid, const struct proc_map *m)
{
	struct pf_file *f = pf_file_find(pf, m->dev, m->ino);
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (f) {
		f->refs++;
		return true;
	}
	if (pf->n_files >= PROC_FILES_FILES_MAX) {
		pf->files_not_held++;
		return false;
	}
	if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
		     pf->proc_root, tgid, m->start, m->end) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != m->ino) {
		close(fd);
		return false;
	}
	pf->files[pf->n_files++] =
		(struct pf_file){ .dev = m->dev, .ino = m->ino, .fd = fd, .refs = 1 };
	return true;
}

/* References the files of p's file-backed mappings, once each. */
static int pf_proc_hold(struct proc_files *pf, struct pf_proc *p)
{
	char *line = p->lines, *end = p->lines + p->len;
	char copy[PF_LINE_MAX];

	while (line < end) {
		char *nl = memchr(line, '\n', end - line);
		size_t n = nl - line;
		struct proc_map m;
		bool seen = false;
		void *q;

		memcpy(copy, line, n);
		copy[n] = '\0';
		line = nl + 1;
		if (!proc_maps_parse(copy, &m) || m.path[0] != '/' || !m.ino)
			continue;
		for (size_t i = 0; i < p->n_files && !seen; i++)
			seen = p->files[i].dev == m.dev && p->files[i].ino == m.ino;
		if (seen)
			continue;
		q = reallocarray(p->files, p->n_files + 1, sizeof(*p->files));
		if (!q)
			return -ENOMEM;
		p->files = q;
		if (pf_file_ref(pf, p->tgid, &m))
			p->files[p->n_files++] = (struct pf_file_ref){ m.dev, m.ino };
	}
	return 0;
}

/* Keeps fresh (its lines read) as what is known of its process, in place
 * of what was kept of it. */
static int pf_store(struct proc_files *pf, struct pf_proc fresh, uint64_t now)
{
	struct pf_proc *p;
	int r;

	fresh.noted_ns = now;
	pthread_mutex_lock(&pf->lock);
	pf_sweep(pf, now);
	/* Hold the new references before the old go: an exec'd or re-noted
	 * process keeps the files it shares with its old image open. */
	r = pf_proc_hold(pf, &fresh);
	p = pf_proc_find(pf, fresh.tgid);
	if (r < 0) {
		pf_proc_release(pf, &fresh);
	} else if (p) {
		pf_proc_release(pf, p);
		*p = fresh;
	} else {
		size_t *at;

		if (pf->n_procs >= PROC_FILES_PROCS_MAX)
			pf_evict_batch(pf);
		if (pf->n_procs == pf->cap_procs) {
			size_t cap = pf->cap_procs ? pf->cap_procs * 2 : 64;
			void *q = reallocarray(pf->procs, cap, sizeof(*pf->procs));

			if (!q)
				goto oom;
			pf->procs = q;
			pf->cap_procs = cap;
		}
		at = hashtab_put(pf->by_tgid, &fresh.tgid, NULL);
		if (!at)
			goto oom;
		*at = pf->n_procs;
		pf->procs[pf->n_procs++] = fresh;
	}
	pthread_mutex_unlock(&pf->lock);
	return r;
oom:
	pf_proc_release(pf, &fresh);
	pthread_mutex_unlock(&pf->lock);
	return -ENOMEM;
}

/* Stores a copy of lines for tgid, exited at exited_ns (0: alive). */
static int pf_store_lines(struct proc_files *pf, uint32_t tgid, const char *lines, size_t len,
			  uint64_t now, uint64_t exited_ns)
{
	struct pf_proc fresh = { .tgid = tgid, .len = len, .exited_ns = exited_ns };

	if (!len || lines[len - 1] != '\n' || len > PF_MAPS_BYTES)
		return -EINVAL;
	/* Read while it lives: the drain that names its rows may come after. */
	if (!exited_ns)
		pid_ns_innermost(pf->proc_root, tgid, &fresh.ns_pid);
	fresh.lines = malloc(len + 1);
	if (!fresh.lines)
		return -ENOMEM;
	memcpy(fresh.lines, lines, len);
	fresh.lines[len] = '\0';
	return pf_store(pf, fresh, now);
}

int proc_files_note(struct proc_files *pf, uint32_t tgid, const char *lines, size_t len)
{
	if (!len)
		return -ESRCH;
	if (len > PF_MAPS_BYTES) { /* the lines that fit */
		const char *nl = memrchr(lines, '\n', PF_MAPS_BYTES);

		if (!nl)
			return -EINVAL;
		len = (size_t)(nl - lines) + 1;
	}
	return pf_store_lines(pf, tgid, lines, len, pf_now_ns(), 0);
}

int proc_files_ns_pid(struct proc_files *pf, uint32_t tgid, uint32_t *ret)
{
	struct pf_proc *p;
	int r = -ENOENT;

	pthread_mutex_lock(&pf->lock);
	p = pf_proc_find(pf, tgid);
	if (p) {
		*ret = p->ns_pid;
		r = 0;
	}
	pthread_mutex_unlock(&pf->lock);
	return r;
}

int proc_files_keep(struct proc_files *pf, uint32_t tgid, const char *lines, size_t len)
{
	uint64_t now = pf_now_ns();

	return pf_store_lines(pf, tgid, lines, len, now, now);
}

int proc_files_maps(struct proc_files *pf, uint32_t tgid, int (*parse)(void *arg, char *line),
		    void *arg)
{
	char *lines = NULL, *line, *end;
	struct pf_proc *p;
	size_t len = 0;
	int r = 0;

	pthread_mutex_lock(&pf->lock);
	pf_sweep(pf, pf_now_ns());
	p = pf_proc_find(pf, tgid);
	if (p) {
		len = p->len;
		lines = malloc(len + 1);
		if (lines)
			memcpy(lines, p->lines, len + 1);
	}
	pthread_mutex_unlock(&pf->lock);
	if (!p)
		return -ENOENT;
	if (!lines)
		return -ENOMEM;
	for (line = lines, end = lines + len; r >= 0 && line < end;) {
		char *nl = memchr(line, '\n', end - line);

		*nl = '\0';
		r = parse(arg, line);
		line = nl + 1;
	}
	free(lines);
	return r < 0 ? r : 0;
}

int proc_files_open(struct proc_files *pf, uint64_t dev, uint64_t ino)
{
	char path[64];
	struct pf_file *f;
	int fd = -ENOENT;

	pthread_mutex_lock(&pf->lock);
	f = pf_file_find(pf, dev, ino);
	/* Through /proc/self/fd, not dup(): a reader of its own (libelf and
	 * libdw read with offsets), and it reaches a file deleted since. */
	if (f) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	pthread_mutex_unlock(&pf->lock);
	return fd;
}

int proc_files_stat(struct proc_files *pf, uint64_t dev, uint64_t ino, struct stat *ret)
{
	struct pf_file *f;
	int r = -ENOENT;

	pthread_mutex_lock(&pf->lock);
	f = pf_file_find(pf, dev, ino);
	if (f && fstat(f->fd, ret) == 0)
		r = 0;
	pthread_mutex_unlock(&pf->lock);
	return r;
}

void proc_files_stats(struct proc_files *pf, struct proc_files_stats *ret)
{
	*ret = (struct proc_files_stats){ 0 };
	pthread_mutex_lock(&pf->lock);
	ret->processes = pf->n_procs;
	for (size_t i = 0; i < pf->n_procs; i++)
		ret->exited += !!pf->procs[i].exited_ns;
	ret->files = pf->n_files;
	ret->files_not_held = pf->files_not_held;
	pthread_mutex_unlock(&pf->lock);
}

int proc_files_new(const char *proc_root, struct proc_files **ret)
{
	struct proc_files *pf = calloc(1, sizeof(*pf));

	if (!pf || hashtab_new(sizeof(uint32_t), sizeof(size_t), &pf->by_tgid) < 0) {
		free(pf);
		return -ENOMEM;
	}
	snprintf(pf->proc_root, sizeof(pf->proc_root), "%s", proc_root);
	pthread_mutex_init(&pf->lock, NULL);
	*ret = pf;
	return 0;
}

void proc_files_free(struct proc_files *pf)
{
	if (!pf)
		return;
	while (pf->n_procs)
		pf_proc_drop(pf, pf->n_procs - 1);
	free(pf->procs);
	hashtab_free(pf->by_tgid);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}
