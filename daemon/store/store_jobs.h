/*
 * The store's jobs: turns profiles into store windows and answers the
 * requests on the stored past ("windows", "export", "hist", "heatmap"),
 * each as a job on the store queue: the SQLite work and the reply's formatting and drawing happen
 * on a worker thread; the loop thread only gets the reply line, to send. Called by the manager;
 * knows nothing of clients. Does not log: write failures are reported through a callback.
 */
#ifndef STORE_JOBS_H
#define STORE_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "profile.h"
#include "proto.h"
#include "store.h"
#include "store_queue.h"

/* A stored row as a profile's (its strings are the sample's): how exports
 * and the pusher read windows back. */
void store_jobs_row(const struct store_sample *s, struct profile_row *ret);

/* Result of a window write, on the loop thread. msg is valid during the call. */
/* r: 0 or -errno (-ENOSPC: the disk is full), msg why; stats: the store's
 * after the write, NULL if they could not be read. */
typedef void (*store_jobs_written_fn)(void *arg, const struct store_window *w, int r,
				      const char *msg, const struct store_stats *stats);

/* Queues a write of profile, and of hists (NULL, or a hashtab of struct
 * offcpu_hist_key -> uint64_t count), as window w. Ownership of both passes
 * here. Returns 0 or -ENOMEM (both freed either way). */
int store_jobs_write(struct store_queue *q, struct profile *profile, struct hashtab *hists,
		     const struct store_window *w, store_jobs_written_fn written, void *arg);

/* A request's reply line, on the loop thread: malloc'd, '\n'-terminated,
 * ownership passes; NULL when out of memory. Called once for each request
 * queued (the functions below returned 0). */
typedef void (*store_jobs_reply_fn)(void *arg, char *line);

/* Queues a "windows" request. 0 or -ENOMEM. */
int store_jobs_windows(struct store_queue *q, const struct proto_windows_request *req,
		       store_jobs_reply_fn reply, void *arg);

/* Queues an "export" request. Returns 0, -ENOMEM, or -EINVAL with a
 * message in err (bad regex) and nothing queued. */
int store_jobs_export(struct store_queue *q, const struct proto_export_request *req,
		      store_jobs_reply_fn reply, void *arg, char *err, size_t err_size);

/* What an export's notes (result_notes.h) say about the daemon's setup. */
struct store_jobs_export_setup {
	bool continuous;	   /* the always-on profile runs */
	uint32_t recorded_kinds;   /* 1 << enum proto_kind of each kind its windows hold */
	const char *config_path;   /* where continuous_kinds is set (copied) */
	const char *proc_root;	   /* for a --pid that is a thread; static */
};

/* store_jobs_export(), with notes that name setup where an empty result
 * comes from it (setup NULL: none). */
int store_jobs_export_noted(struct store_queue *q, const struct proto_export_request *req,
			    const struct store_jobs_export_setup *setup, store_jobs_reply_fn reply,
			    void *arg, char *err, size_t err_size);

/* Queues a "hist" request. 0 or -ENOMEM. */
int store_jobs_hist(struct store_queue *q, const struct proto_hist_request *req,
		    store_jobs_reply_fn reply, void *arg);

/* Queues a "heatmap" request. 0 or -ENOMEM. */
int store_jobs_heatmap(struct store_queue *q, const struct proto_heatmap_request *req,
		       store_jobs_reply_fn reply, void *arg);

#endif
