/* store_queue: see store_queue.h. */
#include "store_queue.h"

#include <errno.h>
#include <stdlib.h>

struct store_queue {
	uv_loop_t *loop;
	struct store *store;
	struct store_job *head, *tail;
	bool running;
	void (*on_idle)(void *arg);
	void *on_idle_arg;
};

int store_queue_new(uv_loop_t *loop, struct store *store, struct store_queue **ret)
{
	struct store_queue *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->loop = loop;
	q->store = store;
	*ret = q;
	return 0;
}

void store_queue_free(struct store_queue *q)
{
	free(q);
}

static void start_next(struct store_queue *q);

static void work_cb(uv_work_t *req)
{
	struct store_job *job = req->data;

	job->work(job, job->queue->store);
}

static void after_cb(uv_work_t *req, int status)
{
	struct store_job *job = req->data;
	struct store_queue *q = job->queue;

	(void)status; /* jobs are never cancelled */
	q->running = false;
	q->head = job->next;
	if (!q->head)
		q->tail = NULL;
	job->done(job);
	start_next(q);
	if (!q->running && q->on_idle)
		q->on_idle(q->on_idle_arg);
}

static void start_next(struct store_queue *q)
{
	struct store_job *job = q->head;

	if (q->running || !job)
		return;
	q->running = true;
	job->req.data = job;
	if (uv_queue_work(q->loop, &job->req, work_cb, after_cb) < 0) {
		/* Only fails for a NULL work callback: run it here, still in order. */
		job->work(job, q->store);
		after_cb(&job->req, 0);
	}
}

void store_queue_push(struct store_queue *q, struct store_job *job)
{
	job->queue = q;
	job->next = NULL;
	if (q->tail)
		q->tail->next = job;
	else
		q->head = job;
	q->tail = job;
	start_next(q);
}

bool store_queue_idle(const struct store_queue *q)
{
	return !q->head;
}

void store_queue_on_idle(struct store_queue *q, void (*cb)(void *arg), void *arg)
{
	q->on_idle = cb;
	q->on_idle_arg = arg;
}
