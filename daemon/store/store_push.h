/*
 * store_push: the push outbox in the store. The ring is the outbox: each
 * push target (daemon/push/) has a cursor, the id of the newest continuous
 * window it has acknowledged or set aside; the continuous windows after it,
 * oldest first, are still to send. Cursors and counts live in the database,
 * so a restart or a kill -9 resumes where the target was; a window evicted
 * from the ring before its target had it is counted lost by the eviction
 * (store_gc.c). Window ids only grow (AUTOINCREMENT), so "after the
 * cursor" is "newer than it". Called on the pusher's own connection
 * (store_open_another); same error conventions as store.h.
 */
#ifndef STORE_PUSH_H
#define STORE_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct store_push_cursor {
	uint64_t cursor;	 /* continuous windows with greater ids are to send */
	uint64_t sent;		 /* windows the target acknowledged */
	uint64_t set_aside;	 /* windows it refused (a 4xx other than 429) */
	uint64_t lost;		 /* windows evicted before they were sent */
	int64_t last_success_ms; /* unix ms of the last acknowledgement; 0: never */
};

/* The cursor of target name. A target seen for the first time starts at
 * the newest continuous window: the windows stored before it was
 * configured are not sent unless asked for (offcpuctl push). 0 or -errno. */
int store_push_target(struct store *s, const char *name, struct store_push_cursor *ret, char *err,
		      size_t err_size);

/* The oldest continuous window with an id greater than after: 0, or
 * -ENOENT if there is none (yet). */
int store_push_next(struct store *s, uint64_t after, struct store_window *ret, char *err,
		    size_t err_size);

/* Continuous windows with ids greater than after: how many, and the
 * end_ms of the newest of all continuous windows (0 if none). */
int store_push_backlog(struct store *s, uint64_t after, uint64_t *ret_windows,
		       int64_t *ret_newest_end_ms, char *err, size_t err_size);

/* Continuous windows that start in [from_ms, to_ms), oldest first: *ret
 * malloc'd. For a push asked for by hand. 0 or -errno. */
int store_push_range(struct store *s, int64_t from_ms, int64_t to_ms, struct store_window **ret,
		     size_t *ret_n, char *err, size_t err_size);

/* Target name has window id: the cursor moves to id (never back) and sent
 * counts one. */
int store_push_sent(struct store *s, const char *name, uint64_t id, int64_t now_ms, char *err,
		    size_t err_size);

/* Target name refused window id with HTTP status and message (cut to 1
 * KiB): recorded in push_set_aside, the cursor moves to id (never back). */
int store_push_set_aside(struct store *s, const char *name, uint64_t id, int64_t now_ms, int status,
			 const char *message, char *err, size_t err_size);

#endif
