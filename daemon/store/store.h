/*
 * store: the SQLite ring of windows. One database file (WAL, incremental
 * auto-vacuum) holding windows of aggregated samples of every kind (off-CPU,
 * wakeup, off-wake, chain, run queue) and per-process log2 latency
 * histograms, with frames and stacks interned so a window costs bytes in
 * proportion to its unique stacks. Bounded by bytes and age: the oldest
 * windows are evicted first, histograms with them. Schema versioned with
 * PRAGMA user_version and migrated on open (version 1 files keep their data).
 *
 * Not thread-safe: the daemon runs every store call on one worker thread at
 * a time. Does not log. SQLite errors are translated to -errno at this edge:
 * SQLITE_FULL -> -ENOSPC, SQLITE_CORRUPT/NOTADB -> -EIO, SQLITE_BUSY/LOCKED
 * -> -EBUSY, SQLITE_NOMEM -> -ENOMEM, SQLITE_CANTOPEN -> -EACCES or -ENOENT,
 * SQLITE_READONLY -> -EROFS, anything else -> -EIO; a message is written to
 * err where a function takes one. Besides: -EINVAL for bad arguments, and
 * -EPROTO from store_open for a database of a newer schema version or of
 * another program.
 */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct store_limits {
	uint64_t max_db_bytes; /* the file (plus WAL) stays within this; 0: no limit */
	uint64_t max_age_ms;   /* windows that ended longer ago are evicted; 0: no limit */
};

#define STORE_QUERY_MAX_PIDS 256

/* One aggregated row. Stacks and the chain are ';'-joined frame names in
 * the order given (stacks root->leaf); "" means none was collected. Strings
 * may hold any byte but NUL; NULL is taken as "". Sums saturate at
 * UINT64_MAX. A row is identified by (tgid, pid, comm, kind, state, ustack,
 * kstack, chain, cgroup, ns_pid): rows that differ in the chain alone are
 * distinct. */
struct store_sample {
	uint32_t tgid;
	uint32_t pid;
	const char *comm;
	uint32_t kind;	/* enum offcpu_kind: off-CPU, wakeup, offwake, chain, runq, bio, fileio */
	uint32_t state; /* enum offcpu_state */
	uint64_t sum_ns;
	uint64_t count;
	const char *ustack;
	const char *kstack;
	const char *chain; /* the waker part (wakeup, offwake, chain kinds); "" if none */
	uint64_t bytes;	   /* I/O kinds; 0 for the others and for windows stored before */
	/* The thread's cgroup v2 path ("/system.slice/nginx.service"); "": not
	 * known (windows stored before schema version 6, hosts without v2). */
	const char *cgroup;
	/* The process's pid in its own pid namespace, where it has one; 0: the
	 * same as tgid, or not known. */
	uint32_t ns_pid;
};

#define STORE_HIST_BUCKETS 32 /* log2 of microseconds, as OFFCPU_HIST_BUCKETS */

/* One log2 histogram bucket of a process in a window. */
struct store_hist {
	uint32_t tgid;
	const char *comm; /* NULL is taken as "" */
	uint32_t type;	  /* 0: off-CPU time, 1: run-queue latency (enum offcpu_hist_type) */
	uint32_t bucket;  /* [2^b, 2^(b+1)) microseconds, b < STORE_HIST_BUCKETS; 0: [0, 2) */
	uint64_t count;	  /* saturates at UINT64_MAX */
};

#define STORE_TARGETS_MAX 511 /* bytes of a capture's targets, without the NUL */

struct store_window {
	uint64_t id;	  /* set by store_window_add */
	int64_t start_ms; /* CLOCK_REALTIME, unix milliseconds */
	int64_t end_ms;
	uint64_t capture_id; /* 0: the continuous profile; else an ad-hoc capture */
	/* A capture's kind (enum proto_kind) and targets as its request named
	 * them ("pid 12, comm x"; "": every thread). kind -1: continuous, or
	 * stored before schema version 8. Read back by store_windows_list. */
	int32_t kind;
	char targets[STORE_TARGETS_MAX + 1];
	/* Set by store_window_add, read back by store_windows_list: */
	uint64_t n_stacks;  /* distinct (ustack, kstack, chain) triples */
	uint64_t n_samples; /* rows stored (samples with equal keys merged) */
	uint64_t bytes;	    /* estimated bytes the window takes in the file */
};

/* Opens or creates path (parent directory must exist), migrating an older
 * schema. A file that is not a database or fails its quick integrity check
 * is not touched: returns -EIO with a message. -EPROTO, also without
 * touching the file: a newer schema version, or another program's database.
 * limits may be NULL (no limits). */
int store_open(const char *path, const struct store_limits *limits, struct store **ret, char *err,
	       size_t err_size);
void store_close(struct store *s); /* NULL-safe */

/* Another connection, for another thread (the pusher's), to a database that
 * store_open() has opened (its schema current: else -EPROTO). No check, no
 * migration, no limits: it never adds windows. WAL lets it read while the
 * first connection writes. */
int store_open_another(const char *path, struct store **ret, char *err, size_t err_size);

/*
 * Adds a window, its samples and its histogram buckets in one transaction
 * (a continuous window, capture_id 0, with its heatmap cells: see
 * store_heatmap.h), then evicts by age and size (oldest first, in their own
 * transactions).
 * Samples with the same identity (see struct store_sample) are summed, and
 * so are buckets with the same (tgid, type, bucket), which keep the comm of
 * the first of them; the buckets of a tgid and type are stored together,
 * with the comm of the lowest. On failure nothing of the window is stored; earlier
 * windows are untouched. -ENOSPC: the disk (or SQLite's page limit) is full;
 * the store stays usable. -EINVAL, before anything is written: end_ms <
 * start_ms, samples NULL with n_samples > 0, hists NULL with n_hists > 0, or
 * a bucket with type > 1 or bucket >= STORE_HIST_BUCKETS. On success w->id,
 * n_stacks, n_samples and bytes (histograms and heatmap cells included)
 * are set.
 *
 * Retention runs only after a successful add and never evicts the window
 * just added; an evicted window's histograms and cells go with it. Age: windows with
 * end_ms < now - max_age_ms go. Size: when db_bytes (see store_stats)
 * exceeds max_db_bytes, the oldest windows (by start_ms, then id) go until
 * the pages in use fit 7/8 of it, then the file is vacuumed and the WAL
 * truncated. A window that alone exceeds max_db_bytes is kept (everything
 * older is evicted) and 0 is returned: the bound is exceeded until the next
 * add evicts it. A retention failure leaves the added window stored,
 * returns 0 and is retried at the next add.
 */
int store_window_add(struct store *s, struct store_window *w, const struct store_sample *samples,
		     size_t n_samples, const struct store_hist *hists, size_t n_hists, char *err,
		     size_t err_size);

/* Bytes the writer's caches of frame, stack and series ids take: at most
 * 38 MiB (two generations of each; store_write.c). store_stats() says it
 * too, for the writer's connection. */
size_t store_cache_bytes(const struct store *s);

/* Windows that start at or after since_ms, oldest first. *ret is malloc'd
 * (free()); 0 or -errno. */
int store_windows_list(struct store *s, int64_t since_ms, struct store_window **ret, size_t *ret_n,
		       char *err, size_t err_size);

/* The kind capture_id's window was recorded as, into *ret_kind: -1 if no
 * window of it is stored or it predates stored kinds. 0 or -errno. */
int store_capture_kind(struct store *s, uint64_t capture_id, int32_t *ret_kind, char *err,
		       size_t err_size);

struct store_query {
	int64_t from_ms; /* a window is in range if from_ms <= start_ms < to_ms */
	int64_t to_ms;
	uint64_t capture_id;  /* nonzero: that capture's windows instead of a range */
	uint64_t window_id;   /* nonzero: that window alone (range and capture_id unused) */
	const uint32_t *pids; /* tgids; n_pids == 0: all */
	size_t n_pids;	      /* at most STORE_QUERY_MAX_PIDS, else -EINVAL */
	const char *comm;     /* NULL or "": all; else exact match */
	uint32_t state_mask;  /* 1 << state; 0: all */
	uint32_t kind_mask;   /* 1 << kind; 0: all */
};

/*
 * Calls row(arg, sample) for each merged row of the windows in range:
 * samples with the same identity (see struct store_sample) summed in SQL,
 * in no particular order. A range selects continuous windows (capture_id 0)
 * only. *ret_windows (may be NULL) gets the number of windows that matched,
 * whatever the pid, comm, state and kind filters. The sample's strings
 * (chain and cgroup included, "" if none) are valid during the call only; row
 * must not call into the store. A nonzero return from row stops the query
 * and is returned. 0 or -errno; -EINVAL for too many pids.
 */
int store_query(struct store *s, const struct store_query *q,
		int (*row)(void *arg, const struct store_sample *sample), void *arg,
		uint64_t *ret_windows, char *err, size_t err_size);

/*
 * Calls row(arg, hist) for each (tgid, bucket) of histogram type (0 off-CPU,
 * 1 run queue) in the windows q selects (a range or a capture, as
 * store_query; the pids and comm filters apply, state_mask and kind_mask do
 * not): counts summed over the windows, saturating. Rows come ordered by
 * tgid, then bucket. A window keeps one comm per tgid and type (that of its
 * lowest bucket, where the buckets added had several): the comm filter
 * matches it, and h->comm is that of the newest window (by start_ms, then
 * id) that has a bucket of this type for the tgid. h->type is type.
 * *ret_windows (may be NULL) gets the number of windows that matched, as
 * store_query. Strings are valid during the call only; row must not call
 * into the store. A nonzero return from row stops the query and is
 * returned. 0 or -errno; -EINVAL for type > 1 or too many pids, -EIO for a
 * stored histogram that is corrupt.
 */
int store_hist_query(struct store *s, const struct store_query *q, uint32_t type,
		     int (*row)(void *arg, const struct store_hist *h), void *arg,
		     uint64_t *ret_windows, char *err, size_t err_size);

struct store_stats {
	uint64_t db_bytes; /* page_count * page_size, plus the WAL file (not -shm) */
	uint64_t windows;
	int64_t oldest_start_ms; /* 0 if empty */
	int64_t newest_end_ms;
	uint64_t cache_bytes; /* store_cache_bytes() */
};

/* 0 or -errno. */
int store_stats(struct store *s, struct store_stats *ret);

/* For unit tests, and for the store's own query modules (store_heatmap.c):
 * the connection, e.g. to simulate a full disk with PRAGMA max_page_count. */
struct sqlite3 *store__db(struct store *s);

/* For the store's query modules: an SQLite result code as -errno, as above. */
int store__errno(struct sqlite3 *db, int rc);

#endif
