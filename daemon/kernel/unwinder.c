/* See unwinder.h. */
#define _GNU_SOURCE
#include "unwinder.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <linux/types.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "cpython_layout.h"
#include "elf_build_id.h"
#include "file_ids.h"
#include "offcpu.h"
#include "proc_files.h"
#include "proc_maps.h"
#include "unwind_table.h"

#define LOADS_MAX	  8
#define ALIASES_MAX	  8 /* other files (device, inode) of the same build-id, published */
#define KNOWN_FILES_MAX	  4096 /* struct known_file: forgotten all at once when full */
#define SETTLE_NS	  (20 * 1000 * 1000ull)	      /* let an mmap under way finish */
#define SWEEP_INTERVAL_NS (5 * 1000 * 1000 * 1000ull) /* forget processes that are gone */
#define PROCESSES_MAX	  65536
/* A file whose table found no room is not built again for this long: each
 * build costs the CFI parse (cc1's: 0.3 s) and would find no room again. */
#define NO_ROOM_RETRY_NS  (60 * 1000 * 1000 * 1000ull)
/* A file with more functions than this (its .eh_frame_hdr's count) has its
 * table built by the builder thread, not by the thread that reads new
 * processes: libLLVM's 95,000 take 150 ms, cc1's 45,000 200 ms, and every
 * new process waited behind them. Below it a build takes 1.5-4.5 us a
 * function (bench/unwind_tables): python3.11's 10,000, whose first
 * process's Python frames need its layout at once, 15 ms. */
#define INLINE_BUILD_FDES_MAX 16384

struct elf_load {
	uint64_t offset, vaddr, filesz;
};

struct file_identity {
	dev_t dev;
	ino_t ino;
};

/* One file's table: where its rows are in the BPF array, who uses it. */
struct table {
	dev_t dev;
	ino_t ino;
	/* Other files with its build-id (copies, other layers of a container
	 * image): the kernel side finds tables by device and inode. */
	struct file_identity aliases[ALIASES_MAX];
	size_t n_aliases;
	uint8_t build_id[ELF_BUILD_ID_MAX];
	size_t build_id_len;
	struct elf_load loads[LOADS_MAX];
	size_t n_loads;
	char *path;		    /* as the process it was built for maps it, or NULL */
	uint32_t first_row, n_rows; /* n_rows 0: no table (none built, or no room) */
	uint32_t file_id;	    /* its frames' file (file_ids.h); 0: none */
	uint32_t refs;		    /* processes whose published mappings use it */
	uint64_t fdes;		    /* functions in .eh_frame_hdr: what a build costs; 0 if none */
	bool building;		    /* queued to the builder thread: no rows yet, not evictable */
	bool no_room;		    /* rows were full: built again when asked for after retry_ns */
	uint64_t rows_needed;	    /* what the build that found no room made */
	uint64_t retry_ns;
	uint64_t last_used;
	bool live; /* false: a free entry of u->tables */
	struct cpython_file python; /* CPython, if the file is its runtime */
};

/* A mapped file recognized by what /proc/PID/maps says of it (device and
 * inode), so that the next process mapping it needs no open and no ELF
 * read: the open through map_files is a path walk in procfs, and a churn
 * of new processes does it for every library of every process. Trusted
 * while proc_files holds the file (its inode cannot be reused meanwhile)
 * and the held file's status is the one seen (a rewrite in place changes
 * its ctime). */
struct known_file {
	uint64_t maps_dev, maps_ino;
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
	off_t size;
	uint32_t table; /* index into u->tables */
};

struct proc {
	uint32_t tgid;
	bool python; /* published in python_procs */
	uint32_t n_tables;
	uint32_t tables[OFFCPU_UNWIND_MAPPINGS]; /* indexes into u->tables, with a ref each */
};

/* A large table to build off the reader thread (INLINE_BUILD_FDES_MAX). */
struct build_job {
	uint32_t table; /* index into u->tables; building, so it stays */
	int fd;		/* the file, owned by the job */
	struct stat st;
	uint64_t queued_ns;
};

struct pending {
	uint32_t tgid;
	uint64_t due_ns;
	uint64_t ready_ns; /* when the loader said it was done (the first time); 0: it did not */
};

struct unwinder {
	struct unwinder_maps maps;
	char proc_root[64];
	struct proc_files *files;	/* NULL, or told each process read */
	struct file_ids *file_ids;	/* NULL, or told each file a table is made for */
	struct offcpu_unwind_row *rows; /* the BPF array, mmapped */
	size_t rows_bytes;
	struct ring_buffer *rb;
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int stop_fd;  /* eventfd: wakes the thread to stop */
	int epoll_fd; /* the ring buffer's epoll fd and stop_fd */

	pthread_mutex_t lock; /* the rest: the thread holds it while it works */
	struct table *tables;
	size_t n_tables;
	struct proc *procs;
	size_t n_procs;
	struct known_file *known;
	size_t n_known;
	struct pending *pending;
	size_t n_pending, cap_pending;
	uint64_t clock;
	uint64_t last_sweep_ns;
	bool built; /* a table was built since the last malloc_trim() */
	/* Large tables, built by the builder thread smallest first; built
	 * tables' processes are read again by it, then `built_cond` told. */
	struct build_job *jobs;
	size_t n_jobs, cap_jobs;
	pthread_t builder;
	bool builder_started;
	pthread_cond_t jobs_cond, built_cond;

	pthread_mutex_t stats_lock; /* stats only: status must not wait for a build */
	struct unwinder_stats stats;
};

/* Identity and load segments of the ELF file fd, whose status is st; false
 * if it is not ELF. */
static bool read_identity(int fd, const struct stat *st, struct table *t)
{
	size_t phnum;
	Elf *elf;

	t->dev = st->st_dev;
	t->ino = st->st_ino;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) < 0) {
		if (elf)
			elf_end(elf);
		return false;
	}
	t->build_id_len = elf_build_id(elf, phnum, (uint64_t)st->st_size, t->build_id);
	for (size_t i = 0; i < phnum && t->n_loads < LOADS_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph))
			continue;
		if (ph.p_type == PT_LOAD)
			t->loads[t->n_loads++] =
				(struct elf_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
		/* A 12-byte header, then 8 bytes per function (the usual
		 * encoding; the estimate decides where and when it is built). */
		else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz > 12)
			t->fdes = (ph.p_filesz - 12) / 8;
	}
	elf_end(elf);
	return true;
}

static bool same_file(const struct table *a, const struct table *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len &&
		       !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->dev == b->dev && a->ino == b->ino;
}

static int cmp_by_first_row(const void *a, const void *b)
{
	const struct table *x = *(struct table *const *)a, *y = *(struct table *const *)b;

	return x->first_row < y->first_row ? -1 : x->first_row > y->first_row;
}

/* First fit among the gaps between tables that hold rows; -1 if none fits. */
static int64_t find_room(struct unwinder *u, uint32_t n)
{
	struct table **used = calloc(u->n_tables + 1, sizeof(*used));
	size_t n_used = 0;
	uint64_t at = 0;
	int64_t found = -1;

	if (!used)
		return -1;
	for (size_t i = 0; i < u->n_tables; i++)
		if (u->tables[i].live && u->tables[i].n_rows)
			used[n_used++] = &u->tables[i];
	qsort(used, n_used, sizeof(*used), cmp_by_first_row);
	for (size_t i = 0; i <= n_used; i++) {
		uint64_t end = i < n_used ? used[i]->first_row : u->maps.rows_max;

		if (end >= at + n) {
			found = (int64_t)at;
			break;
		}
		if (i == n_used)
			break;
		at = used[i]->first_row + used[i]->n_rows;
	}
	free(used);
	return found;
}

static struct proc *proc_find(struct unwinder *u, uint32_t tgid);
static void keep_kernel_built(struct unwinder *u, uint32_t tgid);

static struct offcpu_unwind_file_key file_key(dev_t dev, ino_t ino)
{
	return (struct offcpu_unwind_file_key){ .major = major(dev),
						 .minor = minor(dev),
						 .ino = ino };
}

/* Tells the kernel side t's rows as those of the file st is the status of
 * (its device and inode; its size and ctime, which a rewrite in place
 * changes), for the processes it has not been told of yet
 * (unwind_proc_from_vmas() in bpf/stack.bpf.c). */
static void file_publish(struct unwinder *u, const struct table *t, const struct stat *st)
{
	struct offcpu_unwind_file_key key = file_key(st->st_dev, st->st_ino);
	struct offcpu_unwind_file f = {
		.first_row = t->first_row,
		.n_rows = t->n_rows,
		.file_id = t->file_id,
		.size = st->st_size,
		.ctime_sec = st->st_ctim.tv_sec,
		.ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
	};

	for (size_t i = 0; i < t->n_loads && i < OFFCPU_UNWIND_FILE_LOADS; i++)
		f.loads[f.n_loads++] = (struct offcpu_unwind_load){ t->loads[i].offset,
								     t->loads[i].vaddr,
								     t->loads[i].filesz };
	if (t->python.status == CPYTHON_KNOWN) /* a new process's first walks read it too */
		f.python = (struct offcpu_python_proc){ .runtime = t->python.runtime_vaddr,
							.layout = t->python.layout };
	/* Full: the file's processes walk it with frame pointers until they are read. */
	if (bpf_map_update_elem(u->maps.files_fd, &key, &f, BPF_ANY) == 0)
		__atomic_fetch_add(u->maps.files_added, 1, __ATOMIC_SEQ_CST);
}

/* Deletes the unwind_procs entries the kernel side built itself (those of
 * processes not in u->procs); with only_gone, only those of processes
 * that are gone. */
static void drop_kernel_built(struct unwinder *u, bool only_gone)
{
	uint32_t key, next;
	bool more = bpf_map_get_next_key(u->maps.procs_fd, NULL, &next) == 0;

	while (more) {
		key = next;
		/* The next key before key goes: after a deleted key, the
		 * iteration would start over. */
		more = bpf_map_get_next_key(u->maps.procs_fd, &key, &next) == 0;
		if (proc_find(u, key) || (only_gone && !(kill((pid_t)key, 0) < 0 && errno == ESRCH)))
			continue;
		if (only_gone)
			keep_kernel_built(u, key);
		bpf_map_delete_elem(u->maps.procs_fd, &key);
		if (only_gone) {
			bpf_map_delete_elem(u->maps.requested_fd, &key);
			if (u->maps.python_procs_fd >= 0) /* built with the list, maybe */
				bpf_map_delete_elem(u->maps.python_procs_fd, &key);
		}
	}
}

/* Withdraws t's rows, which are about to be rewritten, from the kernel
 * side: its unwind_files entry, and every list it built that may point at
 * them. The bump makes a list built meanwhile withdraw itself. */
static void file_withdraw(struct unwinder *u, const struct table *t)
{
	struct offcpu_unwind_file_key key = file_key(t->dev, t->ino);

	bpf_map_delete_elem(u->maps.files_fd, &key);
	for (size_t i = 0; i < t->n_aliases; i++) {
		key = file_key(t->aliases[i].dev, t->aliases[i].ino);
		bpf_map_delete_elem(u->maps.files_fd, &key);
	}
	__atomic_fetch_add(u->maps.files_gen, 1, __ATOMIC_SEQ_CST);
	drop_kernel_built(u, false);
}

static void stat_add(struct unwinder *u, uint64_t *counter)
{
	pthread_mutex_lock(&u->stats_lock);
	++*counter;
	pthread_mutex_unlock(&u->stats_lock);
}

static void known_files_forget(struct unwinder *u, uint32_t table)
{
	for (size_t i = 0; i < u->n_known;) {
		if (u->known[i].table == table)
			u->known[i] = u->known[--u->n_known];
		else
			i++;
	}
}

/* Drops the least recently used table no process uses, other than keep
 * (the one being loaded); false if none. */
static bool evict_one(struct unwinder *u, const struct table *keep)
{
	struct table *victim = NULL;

	for (size_t i = 0; i < u->n_tables; i++) {
		struct table *t = &u->tables[i];

		if (t != keep && t->live && !t->refs && !t->building &&
		    (!victim || t->last_used < victim->last_used))
			victim = t;
	}
	if (!victim)
		return false;
	known_files_forget(u, (uint32_t)(victim - u->tables));
	victim->live = false;
	free(victim->path);
	victim->path = NULL;
	if (u->file_ids && victim->file_id)
		file_ids_retire(u->file_ids, victim->file_id);
	victim->file_id = 0;
	if (victim->n_rows) {
		file_withdraw(u, victim);
		stat_add(u, &u->stats.evictions);
	}
	return true;
}

/* Rows held by tables that some process uses: what no eviction frees. */
static uint64_t rows_in_use(const struct unwinder *u)
{
	uint64_t rows = 0;

	for (size_t i = 0; i < u->n_tables; i++)
		if (u->tables[i].live && u->tables[i].refs)
			rows += u->tables[i].n_rows;
	return rows;
}

/* Whether t, if its table found no room, is to be built again now: its
 * retry is due, and its rows would fit with every unused table evicted.
 * One that would not is put off again unbuilt: under churn beside large
 * libraries, such retries rebuilt cc1's 480,000 rows (0.2 s) every minute
 * to find no room again. */
static bool rebuild_due(struct unwinder *u, struct table *t)
{
	uint64_t now = clock_monotonic_ns();

	if (!t->no_room || now < t->retry_ns)
		return false;
	if (t->rows_needed > u->maps.rows_max - rows_in_use(u)) {
		t->retry_ns = now + NO_ROOM_RETRY_NS;
		return false;
	}
	return true;
}

static void stats_add_build(struct unwinder *u, const char *path, uint64_t ns, int err)
{
	pthread_mutex_lock(&u->stats_lock);
	if (err == -E2BIG || err == -ENOSPC) {
		u->stats.no_room++;
	} else if (err) {
		u->stats.failed++;
	} else {
		u->stats.builds++;
		u->stats.build_ns_total += ns;
		if (ns > u->stats.build_ns_max) {
			u->stats.build_ns_max = ns;
			snprintf(u->stats.build_max_path, sizeof(u->stats.build_max_path), "%s",
				 path);
		}
	}
	pthread_mutex_unlock(&u->stats_lock);
}

/* Puts built (unwind_table_build()'s table, err its result, ns its time)
 * into the rows array as t's, evicting unused tables if need be; a table
 * that finds no room is not built again for a while. */
static void place_rows(struct unwinder *u, struct table *t, const struct unwind_table *built,
		       int err, uint64_t ns)
{
	int64_t at;

	if (!err) {
		/* A table that would not fit even with every unused table
		 * evicted evicts none: they would only be built again (under
		 * churn, next to a file too large for the rows left, that
		 * emptied the array of unused tables at each retry). */
		if (built->n_rows > u->maps.rows_max - rows_in_use(u))
			at = -1;
		else
			while ((at = find_room(u, built->n_rows)) < 0 && evict_one(u, t))
				;
		if (at < 0) {
			err = -ENOSPC;
		} else {
			memcpy(&u->rows[at], built->rows, built->n_rows * sizeof(*built->rows));
			t->first_row = (uint32_t)at;
			t->n_rows = (uint32_t)built->n_rows;
		}
	}
	stats_add_build(u, t->path ? t->path : "", ns, err);
	t->no_room = err == -ENOSPC || err == -E2BIG;
	t->rows_needed = err == -E2BIG ? (uint64_t)u->maps.rows_max + 1 : built->n_rows;
	t->retry_ns = clock_monotonic_ns() + NO_ROOM_RETRY_NS;
}

/* Builds the table of fd (and reads its CPython layout) into t, here. */
static void build_now(struct unwinder *u, int fd, struct table *t)
{
	struct unwind_table built;
	uint64_t t0 = clock_monotonic_ns();
	int err;

	if (u->maps.python_procs_fd >= 0)
		cpython_layout_of_file(fd, t->path, &t->python); /* status NONE if it cannot tell */
	err = unwind_table_build(fd, u->maps.rows_max, &built);
	u->built = true;
	place_rows(u, t, &built, err, clock_monotonic_ns() - t0);
	unwind_table_free(&built);
}

/* Queues t's build (file fd, status st) for the builder thread; false if
 * it cannot (no memory, no thread): then it is built here. */
static bool build_later(struct unwinder *u, int fd, const struct stat *st, struct table *t)
{
	struct build_job job = { .table = (uint32_t)(t - u->tables), .st = *st };

	if (!u->builder_started || t->fdes <= INLINE_BUILD_FDES_MAX ||
	    array_grow(&u->jobs, &u->cap_jobs, u->n_jobs + 1, sizeof(*u->jobs), 8) < 0)
		return false;
	job.fd = dup(fd);
	if (job.fd < 0)
		return false;
	job.queued_ns = clock_monotonic_ns();
	u->jobs[u->n_jobs++] = job;
	t->building = true;
	pthread_cond_signal(&u->jobs_cond);
	return true;
}

/* Publishes t's rows for the file of st: t's own file, or another file
 * with t's build-id (a copy of a binary has the same code and table, but
 * the kernel side finds tables by device and inode). Again for a file
 * published before: its status may have changed (a chmod, a link) with
 * its content the same, and the kernel side checks it. */
static void table_publish(struct unwinder *u, struct table *t, const struct stat *st)
{
	bool known = t->dev == st->st_dev && t->ino == st->st_ino;

	for (size_t i = 0; i < t->n_aliases && !known; i++)
		known = t->aliases[i].dev == st->st_dev && t->aliases[i].ino == st->st_ino;
	if (!known) {
		if (t->n_aliases == ALIASES_MAX)
			return; /* its processes: frame pointers until they are read */
		t->aliases[t->n_aliases++] = (struct file_identity){ st->st_dev, st->st_ino };
	}
	file_publish(u, t, st);
}

/* An id for t's frames (OFFCPU_FRAME_FILE), told to u->file_ids; 0 if
 * there is none to give (the frames keep their process's addresses). */
static uint32_t file_id_add(struct unwinder *u, const struct table *t, uint32_t tgid,
			    const char *path)
{
	struct file_id_info info = { .dev = t->dev, .ino = t->ino, .tgid = tgid };

	if (!u->file_ids)
		return 0;
	memcpy(info.build_id, t->build_id, t->build_id_len);
	info.build_id_len = t->build_id_len;
	snprintf(info.path, sizeof(info.path), "%s", path);
	return file_ids_add(u->file_ids, &info);
}

/* The table of the file fd (status st), mapped at path by process tgid,
 * loading it if no table of that file is loaded. Returns its index, or -1
 * (no memory, not ELF). */
static ssize_t table_get(struct unwinder *u, int fd, const struct stat *st, uint32_t tgid,
			 const char *path)
{
	struct table key = { 0 }, *t = NULL;
	size_t idx;

	if (!read_identity(fd, st, &key))
		return -1;
	for (idx = 0; idx < u->n_tables; idx++)
		if (u->tables[idx].live && same_file(&u->tables[idx], &key) &&
		    !rebuild_due(u, &u->tables[idx]))
			goto found;
	for (idx = 0; idx < u->n_tables && u->tables[idx].live; idx++)
		;
	if (idx == u->n_tables) {
		void *p = reallocarray(u->tables, u->n_tables + 1, sizeof(*u->tables));

		if (!p)
			return -1;
		u->tables = p;
		u->n_tables++;
	}
	t = &u->tables[idx];
	*t = key;
	t->live = true;
	t->path = strdup(path);
	t->file_id = file_id_add(u, t, tgid, path);
	/* On failure the file keeps a table of 0 rows (frame pointers); so
	 * does a large one until the builder thread is done with it. */
	if (!build_later(u, fd, st, t))
		build_now(u, fd, t);
found:
	t = &u->tables[idx];
	if (t->n_rows)
		table_publish(u, t, st);
	t->last_used = ++u->clock;
	return (ssize_t)idx;
}

/* The process address the file's virtual addresses are shifted by, for a
 * mapping of the file from file offset pgoff at start. */
static bool mapping_bias(const struct table *t, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	/* The segment the mapping begins, else one it is inside: two segments
	 * may share a file page (lld puts code right after read-only data),
	 * and the first one's range holds the next one's first page. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->n_loads; i++) {
			const struct elf_load *l = &t->loads[i];
			uint64_t seg_start = l->offset & ~0xfffull;

			if (pass ? pgoff >= seg_start && pgoff < l->offset + l->filesz
				 : pgoff == seg_start) {
				*bias = start - pgoff + l->offset - l->vaddr;
				return true;
			}
		}
	}
	return false;
}

/* The file offset a mapping at start with bias maps from: mapping_bias()
 * inverted, for the load segment it falls in. */
static bool mapping_pgoff(const struct table *t, uint64_t start, uint64_t bias, uint64_t *pgoff)
{
	for (size_t i = 0; i < t->n_loads; i++) {
		const struct elf_load *l = &t->loads[i];
		uint64_t off = start - bias + l->offset - l->vaddr;

		if (!(off & 0xfff) && off >= (l->offset & ~0xfffull) && off < l->offset + l->filesz) {
			*pgoff = off;
			return true;
		}
	}
	return false;
}

/* The index of the live table of mapping m (the kernel side's); -1 if
 * none is, or it is not the table m was made from. */
static ssize_t table_of_mapping(const struct unwinder *u, const struct offcpu_unwind_mapping *m)
{
	for (size_t i = 0; i < u->n_tables; i++) {
		const struct table *t = &u->tables[i];

		if (t->live && t->n_rows && t->first_row == m->first_row)
			return t->n_rows == m->n_rows && t->file_id == m->file_id ? (ssize_t)i : -1;
	}
	return -1;
}

/* Writes the maps lines of e's mappings (a list the kernel side built from
 * VMAs) to f, for proc_files: its mappings with their files' paths. */
static void kernel_built_lines(const struct unwinder *u, const struct offcpu_unwind_proc *e,
			       FILE *f)
{
	for (uint32_t i = 0; i < e->n && i < OFFCPU_UNWIND_MAPPINGS; i++) {
		const struct offcpu_unwind_mapping *m = &e->maps[i];
		ssize_t idx = table_of_mapping(u, m);
		const struct table *t = idx >= 0 ? &u->tables[idx] : NULL;
		uint64_t pgoff;

		if (t && t->path && mapping_pgoff(t, m->start, m->bias, &pgoff))
			fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %" PRIu64 " %s\n",
				(uint64_t)m->start, (uint64_t)m->end, pgoff, major(t->dev), minor(t->dev),
				(uint64_t)t->ino, t->path);
	}
}

/*
 * tgid exited before its maps were read: keeps what the kernel side built
 * of them from its VMAs (if it did), as maps lines, for its stacks to be
 * named after all (proc_files_keep()). Call before its entry is deleted.
 */
static void keep_kernel_built(struct unwinder *u, uint32_t tgid)
{
	struct offcpu_unwind_proc e;
	char *lines = NULL;
	size_t len = 0;
	FILE *f;

	if (!u->files || bpf_map_lookup_elem(u->maps.procs_fd, &tgid, &e) < 0 ||
	    !(e.flags & OFFCPU_UNWIND_FROM_VMAS))
		return;
	f = open_memstream(&lines, &len);
	if (!f)
		return;
	kernel_built_lines(u, &e, f);
	if (fclose(f) == 0 && len)
		proc_files_keep(u->files, tgid, lines, len);
	free(lines);
}

static int open_mapping(struct unwinder *u, uint32_t tgid, uint64_t start, uint64_t end,
			const char *path)
{
	char buf[PATH_MAX];
	int fd = -1;

	/* map_files reaches deleted files and other mount namespaces */
	if (snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
		     u->proc_root, tgid, start, end) < (int)sizeof(buf))
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/root%s", u->proc_root, tgid,
			       path) < (int)sizeof(buf))
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	return fd;
}

static struct proc *proc_find(struct unwinder *u, uint32_t tgid)
{
	for (size_t i = 0; i < u->n_procs; i++)
		if (u->procs[i].tgid == tgid)
			return &u->procs[i];
	return NULL;
}

static void proc_release(struct unwinder *u, struct proc *p)
{
	for (uint32_t i = 0; i < p->n_tables; i++)
		u->tables[p->tables[i]].refs--;
	p->n_tables = 0;
}

static void proc_forget(struct unwinder *u, struct proc *p)
{
	proc_release(u, p);
	*p = u->procs[--u->n_procs];
}

/* The known file of m's maps line; NULL if none. */
static struct known_file *known_file_find(struct unwinder *u, const struct proc_map *m)
{
	for (size_t i = 0; i < u->n_known; i++)
		if (u->known[i].maps_dev == m->dev && u->known[i].maps_ino == m->ino)
			return &u->known[i];
	return NULL;
}

/* The table of a file m maps that a mapping seen before recognized
 * (struct known_file); -1 if none may be trusted. */
static ssize_t known_file_table(struct unwinder *u, const struct proc_map *m)
{
	const struct known_file *k = u->files ? known_file_find(u, m) : NULL;
	struct table *t;
	struct stat st;

	if (!k)
		return -1;
	t = &u->tables[k->table];
	if (!t->live || rebuild_due(u, t) || proc_files_stat(u->files, m->dev, m->ino, &st) < 0 || st.st_dev != k->dev ||
	    st.st_ino != k->ino || st.st_size != k->size || st.st_ctim.tv_sec != k->ctime.tv_sec ||
	    st.st_ctim.tv_nsec != k->ctime.tv_nsec)
		return -1;
	t->last_used = ++u->clock;
	return (ssize_t)k->table;
}

static void known_file_learn(struct unwinder *u, const struct proc_map *m, const struct stat *st,
			     size_t table)
{
	struct known_file k = {
		.maps_dev = m->dev,
		.maps_ino = m->ino,
		.dev = st->st_dev,
		.ino = st->st_ino,
		.ctime = st->st_ctim,
		.size = st->st_size,
		.table = (uint32_t)table,
	};
	struct known_file *slot = known_file_find(u, m);

	if (!slot) {
		if (!u->known && !(u->known = calloc(KNOWN_FILES_MAX, sizeof(*u->known))))
			return;
		if (u->n_known == KNOWN_FILES_MAX)
			u->n_known = 0;
		slot = &u->known[u->n_known++];
	}
	*slot = k;
}

/* The table of the file mapping m of tgid maps, made if need be; -1 if
 * there is none (not ELF, unreadable). */
static ssize_t mapping_table(struct unwinder *u, uint32_t tgid, const struct proc_map *m)
{
	ssize_t idx = known_file_table(u, m);
	struct stat st;
	int fd;

	if (idx >= 0) {
		stat_add(u, &u->stats.files_known);
		return idx;
	}
	stat_add(u, &u->stats.files_opened);
	fd = open_mapping(u, tgid, m->start, m->end, m->path);
	if (fd < 0)
		return -1;
	idx = fstat(fd, &st) == 0 ? table_get(u, fd, &st, tgid, m->path) : -1;
	close(fd);
	if (idx >= 0)
		known_file_learn(u, m, &st, (size_t)idx);
	return idx;
}

/* Reads tgid's executable file mappings into e (and their tables into p),
 * and writes their maps lines to lines. Returns 0, or -ESRCH
 * if it is gone (or a zombie: its maps are empty). */
static int read_maps(struct unwinder *u, uint32_t tgid, struct offcpu_unwind_proc *e,
		     struct proc *p, FILE *lines)
{
	char path[PATH_MAX], line[PATH_MAX + 128], parsed[sizeof(line)], buf[16384];
	bool any = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", u->proc_root, tgid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	/* Our buffer: stdio's own costs an fstat, and procfs's block size
	 * makes it 1 KiB, a read() per few lines. */
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		struct proc_map m;
		uint64_t bias;
		ssize_t idx;

		if (!n || line[n - 1] != '\n')
			continue; /* longer than PATH_MAX: no file of ours */
		if (!proc_maps_line_exec(line))
			continue;
		memcpy(parsed, line, n + 1);
		if (!proc_maps_parse(parsed, &m) || !proc_map_exec(&m))
			continue;
		fwrite(line, 1, n, lines);
		any = true;
		if (m.path[0] != '/' || e->n >= OFFCPU_UNWIND_MAPPINGS)
			continue; /* [vdso], anonymous (JIT) code: frame pointers */
		idx = mapping_table(u, tgid, &m);
		if (idx < 0 || !mapping_bias(&u->tables[idx], m.start, m.pgoff, &bias))
			continue;
		u->tables[idx].refs++;
		p->tables[p->n_tables++] = (uint32_t)idx;
		e->maps[e->n++] = (struct offcpu_unwind_mapping){
			.start = m.start,
			.end = m.end,
			.bias = bias,
			.first_row = u->tables[idx].first_row,
			.n_rows = u->tables[idx].n_rows,
			.file_id = u->tables[idx].file_id,
		};
	}
	fclose(f);
	return any ? 0 : -ESRCH; /* a zombie's maps are empty */
}

/* When the kernel side last asked for tgid's tables; 0 if it did not. */
static uint64_t asked_at(struct unwinder *u, uint32_t tgid)
{
	uint64_t at;

	return bpf_map_lookup_elem(u->maps.requested_fd, &tgid, &at) == 0 ? at : 0;
}

/* Publishes e, tgid's mappings read into fresh when the kernel side had
 * last asked at asked, and keeps fresh as tgid's. */
static int publish(struct unwinder *u, uint32_t tgid, uint64_t asked,
		   const struct offcpu_unwind_proc *e, struct proc *fresh)
{
	struct proc *p;
	int err;

	/* Publish first, then drop the old refs: the old tables stay until then. */
	if (bpf_map_update_elem(u->maps.procs_fd, &tgid, e, BPF_ANY) < 0) {
		err = -errno;
		proc_release(u, fresh);
		return err;
	}
	/* An exec (or a new request) while the maps were read: these mappings
	 * may be the old image's. Withdraw them; the new request redoes the work. */
	if (asked_at(u, tgid) != asked) {
		bpf_map_delete_elem(u->maps.procs_fd, &tgid);
		proc_release(u, fresh);
		return -EAGAIN;
	}
	p = proc_find(u, tgid);
	if (p) {
		proc_release(u, p);
	} else if (u->n_procs < PROCESSES_MAX) {
		void *q = reallocarray(u->procs, u->n_procs + 1, sizeof(*u->procs));

		if (!q) {
			proc_release(u, fresh);
			bpf_map_delete_elem(u->maps.procs_fd, &tgid);
			return -ENOMEM;
		}
		u->procs = q;
		p = &u->procs[u->n_procs++];
	} else {
		proc_release(u, fresh);
		bpf_map_delete_elem(u->maps.procs_fd, &tgid);
		return -ENOSPC;
	}
	*p = *fresh;
	return 0;
}

/*
 * As read_maps(), from the list the kernel side built of tgid's mappings
 * from its VMAs, where it covers every executable file mapping
 * (OFFCPU_UNWIND_COMPLETE): the list a read of its maps would make, taken
 * without the read, to be published as user space's own. Under process
 * churn most new processes map only files seen before, and reading their
 * maps (the kernel formats every VMA) was most of this thread's time.
 * Returns 0, or -ENOENT if there is no such list (or a table of it is
 * gone; e and p are left as they were): the maps are read then.
 */
static int adopt_kernel_built(struct unwinder *u, uint32_t tgid, struct offcpu_unwind_proc *e,
			      struct proc *p, FILE *lines)
{
	const uint32_t both = OFFCPU_UNWIND_FROM_VMAS | OFFCPU_UNWIND_COMPLETE;
	struct offcpu_unwind_proc built;

	if (bpf_map_lookup_elem(u->maps.procs_fd, &tgid, &built) < 0 ||
	    (built.flags & both) != both || built.n > OFFCPU_UNWIND_MAPPINGS)
		return -ENOENT;
	for (uint32_t i = 0; i < built.n; i++) {
		ssize_t idx = table_of_mapping(u, &built.maps[i]);

		if (idx < 0) {
			proc_release(u, p);
			return -ENOENT;
		}
		u->tables[idx].refs++;
		u->tables[idx].last_used = ++u->clock;
		p->tables[p->n_tables++] = (uint32_t)idx;
	}
	kernel_built_lines(u, &built, lines);
	built.flags &= OFFCPU_UNWIND_PYTHON; /* user space's now; python_publish() decides that flag */
	built.files_added = 0;
	*e = built;
	return 0;
}

/*
 * Publishes tgid's CPython layout if one of its files (fresh's tables, in
 * e's order) is CPython's runtime of a version the walk knows, and marks e
 * for the walk; else withdraws any published before (an exec). A process
 * whose runtime is of another version is counted (once: not when its
 * mappings are read again), with its version, for status.
 */
static void python_publish(struct unwinder *u, uint32_t tgid, struct offcpu_unwind_proc *e,
			   struct proc *fresh)
{
	const struct proc *old = proc_find(u, tgid);
	/* Published before: by this thread, or by the kernel side with the
	 * list adopted. Only then is there an entry to withdraw; a process
	 * that runs no CPython costs no syscall here. */
	bool published = (old && old->python) || (e->flags & OFFCPU_UNWIND_PYTHON);

	fresh->python = false;
	e->flags &= ~OFFCPU_UNWIND_PYTHON;
	if (u->maps.python_procs_fd < 0)
		return;
	for (uint32_t i = 0; i < fresh->n_tables && i < e->n; i++) {
		const struct cpython_file *py = &u->tables[fresh->tables[i]].python;
		struct offcpu_python_proc pp = { .layout = py->layout };

		if (py->status == CPYTHON_NONE)
			continue;
		if (py->status != CPYTHON_KNOWN) {
			if (old)
				break;
			pthread_mutex_lock(&u->stats_lock);
			u->stats.python_unsupported++;
			snprintf(u->stats.python_unsupported_what,
				 sizeof(u->stats.python_unsupported_what), "%s%s%s",
				 py->version, py->version[0] ? ": " : "",
				 cpython_status_name(py->status));
			pthread_mutex_unlock(&u->stats_lock);
			break;
		}
		/* Every segment of a file shares its mapping's bias. */
		pp.runtime = py->runtime_vaddr + e->maps[i].bias;
		if (bpf_map_update_elem(u->maps.python_procs_fd, &tgid, &pp, BPF_ANY) == 0) {
			e->flags |= OFFCPU_UNWIND_PYTHON;
			fresh->python = true;
			return;
		}
		break;
	}
	if (published)
		bpf_map_delete_elem(u->maps.python_procs_fd, &tgid);
}

static int prepare(struct unwinder *u, uint32_t tgid)
{
	struct offcpu_unwind_proc e = { 0 };
	struct proc fresh = { .tgid = tgid };
	uint64_t asked = asked_at(u, tgid);
	char *lines = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&lines, &len);
	bool adopted;
	int err;

	if (!mem)
		return -ENOMEM;
	err = adopt_kernel_built(u, tgid, &e, &fresh, mem);
	adopted = !err;
	if (err == -ENOENT)
		err = read_maps(u, tgid, &e, &fresh, mem);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (!err)
		python_publish(u, tgid, &e, &fresh);
	if (err)
		proc_release(u, &fresh);
	else
		err = publish(u, tgid, asked, &e, &fresh);
	if (!err && adopted)
		stat_add(u, &u->stats.adopted);
	/* Its mappings and files kept, for naming its stacks once it exits. */
	if (!err && u->files)
		proc_files_note(u->files, tgid, lines, len);
	free(lines);
	return err;
}

/* Forgets processes that exited or exec'd (exec deletes their entry), and
 * the lists the kernel side built for processes gone before they were read. */
static void sweep(struct unwinder *u)
{
	drop_kernel_built(u, true);
	for (size_t i = 0; i < u->n_procs;) {
		struct offcpu_unwind_proc e;
		uint32_t tgid = u->procs[i].tgid;

		if (kill((pid_t)tgid, 0) < 0 && errno == ESRCH) {
			bpf_map_delete_elem(u->maps.procs_fd, &tgid);
			bpf_map_delete_elem(u->maps.requested_fd, &tgid);
		} else if (bpf_map_lookup_elem(u->maps.procs_fd, &tgid, &e) == 0) {
			i++;
			continue;
		}
		/* Exited, or exec'd (the exec deleted its list, not its layout). */
		if (u->procs[i].python)
			bpf_map_delete_elem(u->maps.python_procs_fd, &tgid);
		proc_forget(u, &u->procs[i]);
	}
}

static void update_counts(struct unwinder *u)
{
	uint64_t rows = 0, now = clock_monotonic_ns();
	uint32_t tables = 0, given_up = 0, python = 0;

	for (size_t i = 0; i < u->n_tables; i++) {
		if (u->tables[i].live && u->tables[i].n_rows) {
			tables++;
			rows += u->tables[i].n_rows;
		}
		given_up +=
			u->tables[i].live && u->tables[i].no_room && now < u->tables[i].retry_ns;
	}
	for (size_t i = 0; i < u->n_procs; i++)
		python += u->procs[i].python;
	pthread_mutex_lock(&u->stats_lock);
	u->stats.python_processes = python;
	u->stats.tables = tables;
	u->stats.rows_used = rows;
	u->stats.table_bytes = rows * sizeof(struct offcpu_unwind_row);
	u->stats.processes = (uint32_t)u->n_procs;
	u->stats.given_up = given_up;
	pthread_mutex_unlock(&u->stats_lock);
}

static int on_request(void *ctx, void *data, size_t size)
{
	struct unwinder *u = ctx;
	struct offcpu_unwind_request req;
	uint64_t due, ready;

	if (size < sizeof(req))
		return 0;
	memcpy(&req, data, sizeof(req));
	/* An mmap may be under way (a new process's loader maps its libraries
	 * right after exec; a dlopen): the maps are read a little later,
	 * unless the loader said it is done. */
	due = clock_monotonic_ns() + (req.flags & OFFCPU_UNWIND_REQUEST_NOW ? 0 : SETTLE_NS);
	/* Its wait is timed only if user space was woken for it. */
	ready = (req.flags & (OFFCPU_UNWIND_REQUEST_NOW | OFFCPU_UNWIND_REQUEST_QUEUED)) ==
				OFFCPU_UNWIND_REQUEST_NOW
			? req.asked_ns
			: 0;
	for (size_t i = 0; i < u->n_pending; i++) {
		if (u->pending[i].tgid != req.tgid)
			continue;
		if (due < u->pending[i].due_ns)
			u->pending[i].due_ns = due;
		if (!u->pending[i].ready_ns)
			u->pending[i].ready_ns = ready;
		return 0;
	}
	if (array_grow(&u->pending, &u->cap_pending, u->n_pending + 1, sizeof(*u->pending), 64) <
	    0) { /* ask again at the next walk */
		bpf_map_delete_elem(u->maps.requested_fd, &req.tgid);
		return 0;
	}
	u->pending[u->n_pending++] = (struct pending){ req.tgid, due, ready };
	stat_add(u, &u->stats.requests);
	return 0;
}

/* Whether a table tgid's published mappings use is still being built. */
static bool proc_waits_for_build(struct unwinder *u, uint32_t tgid)
{
	const struct proc *p = proc_find(u, tgid);

	for (uint32_t i = 0; p && i < p->n_tables; i++)
		if (u->tables[p->tables[i]].building)
			return true;
	return false;
}

int unwinder_prepare(struct unwinder *u, uint32_t tgid)
{
	int err;

	pthread_mutex_lock(&u->lock);
	err = prepare(u, tgid);
	/* The builder thread reads it again once its large tables are built. */
	while (!err && !atomic_load(&u->stop) && proc_waits_for_build(u, tgid))
		pthread_cond_wait(&u->built_cond, &u->lock);
	update_counts(u);
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* Reads again the processes that use table idx, just built: their
 * published mappings have no rows for it yet. */
static void prepare_users(struct unwinder *u, uint32_t idx)
{
	uint32_t *tgids = calloc(u->n_procs + 1, sizeof(*tgids));
	size_t n = 0;

	if (!tgids)
		return; /* they ask again when a walk leaves their mappings */
	for (size_t i = 0; i < u->n_procs; i++)
		for (uint32_t k = 0; k < u->procs[i].n_tables; k++)
			if (u->procs[i].tables[k] == idx) {
				tgids[n++] = u->procs[i].tgid;
				break;
			}
	for (size_t i = 0; i < n; i++)
		prepare(u, tgids[i]);
	free(tgids);
}

/* The queued job with the fewest functions: a new program's table is not
 * built after a larger one queued before it. */
static struct build_job take_smallest_job(struct unwinder *u)
{
	size_t best = 0;
	struct build_job job;

	for (size_t i = 1; i < u->n_jobs; i++)
		if (u->tables[u->jobs[i].table].fdes < u->tables[u->jobs[best].table].fdes)
			best = i;
	job = u->jobs[best];
	u->jobs[best] = u->jobs[--u->n_jobs];
	return job;
}

/*
 * Builds large tables (INLINE_BUILD_FDES_MAX) so that the reader thread
 * never waits for one. It runs at the daemon's niceness: a build is
 * background work, the reads that new processes wait for are not. The
 * build runs unlocked; only placing its rows takes the lock.
 */
static void *builder_thread(void *arg)
{
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->lock);
	while (!atomic_load(&u->stop)) {
		struct cpython_file python = { 0 };
		struct unwind_table built;
		struct build_job job;
		struct table *t;
		uint64_t t0;
		char *path;
		int err;

		if (!u->n_jobs) {
			pthread_cond_wait(&u->jobs_cond, &u->lock);
			continue;
		}
		job = take_smallest_job(u);
		path = strdup(u->tables[job.table].path ? u->tables[job.table].path : "");
		pthread_mutex_unlock(&u->lock);

		t0 = clock_monotonic_ns();
		if (u->maps.python_procs_fd >= 0 && path)
			cpython_layout_of_file(job.fd, path, &python);
		err = unwind_table_build(job.fd, u->maps.rows_max, &built);
		close(job.fd);
		free(path);

		pthread_mutex_lock(&u->lock);
		t = &u->tables[job.table]; /* u->tables may have moved meanwhile */
		t->python = python;
		place_rows(u, t, &built, err, clock_monotonic_ns() - t0);
		t->building = false;
		if (t->n_rows)
			table_publish(u, t, &job.st);
		prepare_users(u, job.table);
		update_counts(u);
		pthread_mutex_lock(&u->stats_lock);
		u->stats.background_builds++;
		if (t0 - job.queued_ns > u->stats.background_wait_ns_max)
			u->stats.background_wait_ns_max = t0 - job.queued_ns;
		pthread_mutex_unlock(&u->stats_lock);
		pthread_cond_broadcast(&u->built_cond);
		pthread_mutex_unlock(&u->lock);
		unwind_table_free(&built);
		malloc_trim(0); /* the build's buffers */
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* Milliseconds until the next pending process is due or the next sweep. */
static int next_timeout_ms(const struct unwinder *u, uint64_t now)
{
	uint64_t due = u->last_sweep_ns + SWEEP_INTERVAL_NS;

	for (size_t i = 0; i < u->n_pending; i++)
		if (u->pending[i].due_ns < due)
			due = u->pending[i].due_ns;
	return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

/* A read the loader asked for (a new process, a dlopen): how long it
 * waited for this thread, and how long it took, tables built included. */
static void note_loader_read(struct unwinder *u, uint64_t wait_ns, uint64_t read_ns)
{
	struct unwinder_stats *s = &u->stats;

	pthread_mutex_lock(&u->stats_lock);
	s->loader_reads++;
	s->loader_wait_ns_total += wait_ns;
	s->loader_read_ns_total += read_ns;
	if (wait_ns > s->loader_wait_ns_max)
		s->loader_wait_ns_max = wait_ns;
	if (read_ns > s->loader_read_ns_max)
		s->loader_read_ns_max = read_ns;
	pthread_mutex_unlock(&u->stats_lock);
}

/*
 * A new process's walks stop at files whose tables are not loaded until
 * this thread has read it; on a host whose CPUs are busy it waited for one
 * 23-62 ms on average at nice 0, 8-9 ms at nice -10 (bench/first_blocks.py
 * --busy). Its work is the same either way, only sooner. Needs
 * CAP_SYS_NICE; without it the thread stays at the daemon's niceness.
 */
#define UNWINDER_NICE (-10)

static void raise_priority(struct unwinder *u)
{
	int nice = UNWINDER_NICE;

	if (setpriority(PRIO_PROCESS, (id_t)gettid(), nice) < 0) {
		errno = 0;
		nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	}
	pthread_mutex_lock(&u->stats_lock);
	u->stats.nice = nice;
	pthread_mutex_unlock(&u->stats_lock);
}

static void *unwinder_thread(void *arg)
{
	struct unwinder *u = arg;
	struct epoll_event ev;
	int err;

	raise_priority(u);
	while (!atomic_load(&u->stop)) {
		uint64_t now = clock_monotonic_ns();

		/* Sleeps until the kernel asks, a request is due, or we stop;
		 * then takes every request, those queued without a wakeup
		 * (lazy: a whole list to adopt) included. */
		epoll_wait(u->epoll_fd, &ev, 1, next_timeout_ms(u, now));
		ring_buffer__consume(u->rb);
		now = clock_monotonic_ns();
		pthread_mutex_lock(&u->lock);
		for (size_t i = 0; i < u->n_pending;) {
			uint32_t tgid = u->pending[i].tgid;
			uint64_t ready = u->pending[i].ready_ns, start;

			if (u->pending[i].due_ns > now) {
				i++;
				continue;
			}
			u->pending[i] = u->pending[--u->n_pending];
			start = clock_monotonic_ns();
			err = prepare(u, tgid);
			if (ready)
				note_loader_read(u, start - ready, clock_monotonic_ns() - start);
			if (err == -ENOMEM)
				bpf_map_delete_elem(u->maps.requested_fd, &tgid);
			else if (err == -ESRCH) /* gone before it was read */
				keep_kernel_built(u, tgid);
		}
		if (now - u->last_sweep_ns >= SWEEP_INTERVAL_NS) {
			sweep(u);
			u->last_sweep_ns = now;
		}
		update_counts(u);
		/* Builds free large buffers: give the memory back. Only then:
		 * a trim walks the whole heap, and under process churn (65
		 * requests a second, most of them building nothing) it was the
		 * daemon's largest cost (20 % of its CPU, bench/churn.py). */
		if (u->built) {
			u->built = false;
			pthread_mutex_unlock(&u->lock);
			malloc_trim(0);
		} else {
			pthread_mutex_unlock(&u->lock);
		}
	}
	return NULL;
}

int unwinder_new(const struct unwinder_maps *maps, const char *proc_root, struct proc_files *files,
		 struct file_ids *file_ids, struct unwinder **ret)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	long page = sysconf(_SC_PAGESIZE);
	void *rows;
	int err;

	if (!u)
		return -ENOMEM;
	u->maps = *maps;
	u->files = files;
	u->file_ids = file_ids;
	u->stop_fd = u->epoll_fd = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->jobs_cond, NULL);
	pthread_cond_init(&u->built_cond, NULL);
	snprintf(u->proc_root, sizeof(u->proc_root), "%s", proc_root);
	pthread_mutex_init(&u->stats_lock, NULL);
	u->stats.rows_max = maps->rows_max;
	u->rows_bytes = ((size_t)maps->rows_max * sizeof(*u->rows) + page - 1) / page * page;
	rows = mmap(NULL, u->rows_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, maps->rows_fd, 0);
	if (rows == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	u->rows = rows;
	u->rb = ring_buffer__new(maps->requests_fd, on_request, u, NULL);
	if (!u->rb) {
		err = -errno;
		goto fail;
	}
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	u->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (u->stop_fd < 0 || u->epoll_fd < 0 ||
	    epoll_ctl(u->epoll_fd, EPOLL_CTL_ADD, u->stop_fd,
		      &(struct epoll_event){ .events = EPOLLIN }) < 0 ||
	    epoll_ctl(u->epoll_fd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(u->rb),
		      &(struct epoll_event){ .events = EPOLLIN }) < 0) {
		err = -errno;
		goto fail;
	}
	u->last_sweep_ns = clock_monotonic_ns();
	err = -pthread_create(&u->thread, NULL, unwinder_thread, u);
	if (err)
		goto fail;
	u->thread_started = true;
	pthread_setname_np(u->thread, "offcpud-unwind"); /* its CPU apart in top, bench/churn.py */
	/* Without it large tables are built by the reader, as small ones are. */
	u->builder_started = pthread_create(&u->builder, NULL, builder_thread, u) == 0;
	if (u->builder_started)
		pthread_setname_np(u->builder, "offcpud-tables");
	*ret = u;
	return 0;
fail:
	unwinder_free(u);
	return err;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->thread_started) {
		atomic_store(&u->stop, true);
		eventfd_write(u->stop_fd, 1);
		pthread_join(u->thread, NULL);
	}
	if (u->builder_started) {
		pthread_mutex_lock(&u->lock);
		pthread_cond_broadcast(&u->jobs_cond);
		pthread_cond_broadcast(&u->built_cond);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->builder, NULL);
	}
	for (size_t i = 0; i < u->n_jobs; i++)
		close(u->jobs[i].fd);
	free(u->jobs);
	if (u->stop_fd >= 0)
		close(u->stop_fd);
	if (u->epoll_fd >= 0)
		close(u->epoll_fd);
	ring_buffer__free(u->rb);
	if (u->rows)
		munmap(u->rows, u->rows_bytes);
	for (size_t i = 0; i < u->n_tables; i++)
		free(u->tables[i].path);
	free(u->tables);
	free(u->known);
	free(u->procs);
	free(u->pending);
	pthread_mutex_destroy(&u->stats_lock);
	pthread_cond_destroy(&u->jobs_cond);
	pthread_cond_destroy(&u->built_cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void unwinder_stats(struct unwinder *u, struct unwinder_stats *ret)
{
	pthread_mutex_lock(&u->stats_lock);
	*ret = u->stats;
	pthread_mutex_unlock(&u->stats_lock);
}
