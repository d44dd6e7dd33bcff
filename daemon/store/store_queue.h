/*
 * store_queue: runs store jobs one at a time on the libuv thread pool, in
 * the order they were pushed, so the store (not thread-safe) is only ever
 * used by one thread and the event loop never waits on SQLite. Used by the
 * manager for window writes, listings and exports. Does not log.
 */
#ifndef STORE_QUEUE_H
#define STORE_QUEUE_H

#include <stdbool.h>
#include <uv.h>

#include "store.h"

struct store_queue;

struct store_job {
	/* On a worker thread, with the store to itself. */
	void (*work)(struct store_job *job, struct store *store);
	/* Back on the loop thread; frees the job. */
	void (*done)(struct store_job *job);
	/* private: */
	struct store_job *next;
	struct store_queue *queue;
	uv_work_t req;
};

int store_queue_new(uv_loop_t *loop, struct store *store, struct store_queue **ret);

/* Frees the queue. Precondition: store_queue_idle(). NULL-safe. */
void store_queue_free(struct store_queue *q);

void store_queue_push(struct store_queue *q, struct store_job *job);
bool store_queue_idle(const struct store_queue *q);

/* Called (on the loop) each time the queue becomes idle; NULL for none. */
void store_queue_on_idle(struct store_queue *q, void (*cb)(void *arg), void *arg);

#endif
