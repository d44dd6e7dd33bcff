/*
 * hashtab: an open-addressing hash table with fixed-size keys and values,
 * stored inline (no per-entry allocation). Keys are compared bytewise, so key
 * structs must have no uninitialized padding. Used by the profile accumulator
 * and the drain step. Not thread-safe. Does not log.
 */
#ifndef HASHTAB_H
#define HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashtab;

/* Returns 0 or -ENOMEM. */
int hashtab_new(size_t key_size, size_t value_size, struct hashtab **ret);
void hashtab_free(struct hashtab *h); /* NULL-safe */

/* Value of key, or NULL. Valid until the next insertion. */
void *hashtab_get(const struct hashtab *h, const void *key);

/* Value of key, inserted zero-filled if absent (then *ret_created = true).
 * NULL on ENOMEM (table unchanged). Valid until the next insertion. */
void *hashtab_put(struct hashtab *h, const void *key, bool *ret_created);

/* Removes key's entry; false if there was none. Other entries' values got
 * before may have moved: get them again. */
bool hashtab_remove(struct hashtab *h, const void *key);

/* Room for n entries without growing (each growth moves every entry), for
 * a caller that knows about how many come. 0 or -ENOMEM (table unchanged). */
int hashtab_reserve(struct hashtab *h, size_t n);

size_t hashtab_count(const struct hashtab *h);

/* Bytes the table takes (its entries and itself), for memory accounting. */
size_t hashtab_bytes(const struct hashtab *h);

/* The hash the table uses, for callers that key by a hash of their own
 * (content of any length: a stack string of kilobytes). Not stable across
 * versions or byte orders: never store it. */
uint64_t hashtab_hash(const void *p, size_t n);

/* Iteration: start with *pos = 0; returns false at the end. Insertions during
 * iteration are not allowed. */
bool hashtab_next(const struct hashtab *h, size_t *pos, const void **ret_key, void **ret_value);

#endif
