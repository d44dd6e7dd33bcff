/*
 * file_ids: see file_ids.h. An array sorted by id (ids are handed out in
 * increasing order until they wrap), searched by bisection, under one
 * mutex; forgotten entries are dropped when an id is added.
 */
#define _GNU_SOURCE
#include "file_ids.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"

#define NS_PER_S 1000000000ull

struct file_id_entry {
	uint32_t id;
	uint64_t retired_ns; /* 0: in use */
	struct file_id_info info;
};

struct file_ids {
	pthread_mutex_t lock;
	uint32_t max_id;
	uint64_t keep_ns;
	uint32_t next;			/* the id to try next */
	uint64_t serial;		/* the last handed out */
	uint64_t forgotten;		/* ids forgotten so far */
	struct file_id_entry **entries; /* sorted by id */
	size_t n, cap;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int file_ids_new(uint32_t max_id, uint32_t keep_s, struct file_ids **ret)
{
	struct file_ids *ids = calloc(1, sizeof(*ids));

	if (!ids || !max_id) {
		free(ids);
		return -ENOMEM;
	}
	pthread_mutex_init(&ids->lock, NULL);
	ids->max_id = max_id;
	ids->keep_ns = keep_s * NS_PER_S;
	ids->next = 1;
	*ret = ids;
	return 0;
}

void file_ids_free(struct file_ids *ids)
{
	if (!ids)
		return;
	for (size_t i = 0; i < ids->n; i++)
		free(ids->entries[i]);
	free(ids->entries);
	pthread_mutex_destroy(&ids->lock);
	free(ids);
}

/* The index of id, or where it would go. */
static size_t find(const struct file_ids *ids, uint32_t id)
{
	size_t lo = 0, hi = ids->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids->entries[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool known(const struct file_ids *ids, uint32_t id)
{
	size_t i = find(ids, id);

	return i < ids->n && ids->entries[i]->id == id;
}

/* Drops the entries retired longer ago than ids->keep_ns. */
static void forget_old(struct file_ids *ids, uint64_t now)
{
	size_t kept = 0;

	for (size_t i = 0; i < ids->n; i++) {
		struct file_id_entry *e = ids->entries[i];

		if (e->retired_ns && now - e->retired_ns >= ids->keep_ns) {
			free(e);
			ids->forgotten++;
		} else
			ids->entries[kept++] = e;
	}
	ids->n = kept;
}

uint32_t file_ids_add(struct file_ids *ids, const struct file_id_info *info)
{
	struct file_id_entry *e = NULL;
	uint32_t id = 0;
	size_t at;

	pthread_mutex_lock(&ids->lock);
	forget_old(ids, now_ns());
	/* The next id not known; after a wrap, one forgotten. */
	for (uint32_t tries = 0; tries < ids->max_id && !id; tries++) {
		uint32_t candidate = ids->next;

		ids->next = candidate >= ids->max_id ? 1 : candidate + 1;
		if (!known(ids, candidate))
			id = candidate;
	}
	if (!id || array_grow(&ids->entries, &ids->cap, ids->n + 1, sizeof(*ids->entries), 64) < 0)
		goto out;
	e = malloc(sizeof(*e));
	if (!e) {
		id = 0;
		goto out;
	}
	e->id = id;
	e->retired_ns = 0;
	e->info = *info;
	e->info.path[sizeof(e->info.path) - 1] = '\0';
	e->info.serial = ++ids->serial;
	at = find(ids, id);
	memmove(&ids->entries[at + 1], &ids->entries[at], (ids->n - at) * sizeof(*ids->entries));
	ids->entries[at] = e;
	ids->n++;
out:
	pthread_mutex_unlock(&ids->lock);
	return id;
}

void file_ids_retire(struct file_ids *ids, uint32_t id)
{
	size_t i;

	pthread_mutex_lock(&ids->lock);
	i = find(ids, id);
	if (i < ids->n && ids->entries[i]->id == id && !ids->entries[i]->retired_ns)
		ids->entries[i]->retired_ns = now_ns();
	pthread_mutex_unlock(&ids->lock);
}

int file_ids_get(struct file_ids *ids, uint32_t id, struct file_id_info *ret)
{
	int r = -ENOENT;
	size_t i;

	pthread_mutex_lock(&ids->lock);
	i = find(ids, id);
	if (i < ids->n && ids->entries[i]->id == id) {
		*ret = ids->entries[i]->info;
		r = 0;
	}
	pthread_mutex_unlock(&ids->lock);
	return r;
}

uint64_t file_ids_serial(struct file_ids *ids, uint32_t id)
{
	uint64_t serial = 0;
	size_t i;

	pthread_mutex_lock(&ids->lock);
	i = find(ids, id);
	if (i < ids->n && ids->entries[i]->id == id)
		serial = ids->entries[i]->info.serial;
	pthread_mutex_unlock(&ids->lock);
	return serial;
}

uint64_t file_ids_forgotten(struct file_ids *ids)
{
	uint64_t n;

	pthread_mutex_lock(&ids->lock);
	n = ids->forgotten;
	pthread_mutex_unlock(&ids->lock);
	return n;
}

size_t file_ids_count(struct file_ids *ids)
{
	size_t n;

	pthread_mutex_lock(&ids->lock);
	n = ids->n;
	pthread_mutex_unlock(&ids->lock);
	return n;
}
