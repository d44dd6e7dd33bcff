/*
 * history: the stored past. Turns profiles into store windows and answers
 * "windows" and "export" requests from the store, each as a job on the store
 * queue: the SQLite work and the reply's formatting happen on a worker
 * thread; the loop thread only sends the reply. Called by the manager.
 * Does not log: write failures are reported through a callback.
 */
#ifndef HISTORY_H
#define HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"
#include "profile.h"
#include "proto.h"
#include "server.h"
#include "store.h"
#include "store_queue.h"

/* Result of a window write, on the loop thread. msg is valid during the call. */
/* r: 0 or -errno (-ENOSPC: the disk is full), msg why; stats: the store's
 * after the write, NULL if they could not be read. */
typedef void (*history_written_fn)(void *arg, const struct store_window *w, int r, const char *msg,
				   const struct store_stats *stats);

/* Queues a write of profile, and of hists (NULL, or a hashtab of struct
 * offcpu_hist_key -> uint64_t count), as window w. Ownership of both passes
 * here. Returns 0 or -ENOMEM (both freed either way). */
int history_write(struct store_queue *q, struct profile *profile, struct hashtab *hists,
		  const struct store_window *w, history_written_fn written, void *arg);

/* Queues a "windows" request; its reply goes to conn. 0 or -ENOMEM. */
int history_windows(struct store_queue *q, struct server_conn *conn,
		    const struct proto_windows_request *req);

/* Queues an "export" request; its reply goes to conn. Returns 0, -ENOMEM,
 * or -EINVAL with a message in err (bad regex) and nothing queued. */
int history_export(struct store_queue *q, struct server_conn *conn,
		   const struct proto_export_request *req, char *err, size_t err_size);

/* Queues a "hist" request; its reply goes to conn. 0 or -ENOMEM. */
int history_hist(struct store_queue *q, struct server_conn *conn,
		 const struct proto_hist_request *req);

/* Queues a "heatmap" request; its reply goes to conn. 0 or -ENOMEM. */
int history_heatmap(struct store_queue *q, struct server_conn *conn,
		    const struct proto_heatmap_request *req);

#endif
