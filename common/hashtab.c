/* hashtab: see hashtab.h. Linear probing, grown to keep the load under 70 %.
 * Each entry starts with its key's hash (never 0; 0 marks an empty entry):
 * a probe compares keys only where the hashes are equal, and growing does
 * not hash again. */
#include "hashtab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct hashtab {
	size_t key_size;
	size_t value_size;
	size_t entry_size; /* hash, key, value; padded for alignment */
	size_t value_offset;
	size_t capacity; /* power of two */
	size_t count;
	unsigned char *entries;
};

/* Eight bytes a step (a multiply and a rotate, as MurmurHash3's), the
 * length in the seed, then MurmurHash3's final mix, so that every bit of
 * the result depends on every byte: a byte a step (FNV-1a) took
 * microseconds on the store's stack strings. */
uint64_t hashtab_hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ (n * 0x9e3779b97f4a7c15ULL), w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h ^= w * 0x87c37b91114253d5ULL;
		h = ((h << 31) | (h >> 33)) * 0x4cf5ad432745937fULL;
	}
	w = 0;
	if (n) /* (p may be NULL when n is 0) */
		memcpy(&w, b, n);
	h ^= w * 0x87c37b91114253d5ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static unsigned char *entry_at(const struct hashtab *h, size_t i)
{
	return h->entries + i * h->entry_size;
}

int hashtab_new(size_t key_size, size_t value_size, struct hashtab **ret)
{
	struct hashtab *h = calloc(1, sizeof(*h));
	size_t align = sizeof(uint64_t);

	if (!h)
		return -ENOMEM;
	h->key_size = key_size;
	h->value_size = value_size;
	h->value_offset = (align + key_size + align - 1) / align * align;
	h->entry_size = (h->value_offset + value_size + align - 1) / align * align;
	h->capacity = 16;
	h->entries = calloc(h->capacity, h->entry_size);
	if (!h->entries) {
		free(h);
		return -ENOMEM;
	}
	*ret = h;
	return 0;
}

void hashtab_free(struct hashtab *h)
{
	if (!h)
		return;
	free(h->entries);
	free(h);
}

/* The hash an entry keeps: never 0, which marks an empty entry. */
static uint64_t key_hash(const struct hashtab *h, const void *key)
{
	uint64_t hash = hashtab_hash(key, h->key_size);

	return hash ? hash : 1;
}

static uint64_t entry_hash(const unsigned char *e)
{
	uint64_t hash;

	memcpy(&hash, e, sizeof(hash));
	return hash;
}

/* Index of the entry of key (whose key_hash() is hash), or of the empty
 * entry where it would go. */
static size_t find(const struct hashtab *h, const void *key, uint64_t hash)
{
	size_t mask = h->capacity - 1;
	size_t i = hash & mask;

	for (;;) {
		unsigned char *e = entry_at(h, i);
		uint64_t at = entry_hash(e);

		if (!at || (at == hash && !memcmp(e + sizeof(uint64_t), key, h->key_size)))
			return i;
		i = (i + 1) & mask;
	}
}

void *hashtab_get(const struct hashtab *h, const void *key)
{
	unsigned char *e = entry_at(h, find(h, key, key_hash(h, key)));

	return entry_hash(e) ? e + h->value_offset : NULL;
}

/* Moves the entries into a table of capacity (a power of two that holds
 * them under the load limit). */
static int resize(struct hashtab *h, size_t capacity)
{
	struct hashtab bigger = *h;

	if (capacity > SIZE_MAX / h->entry_size) /* (ASan aborts on calloc's overflow) */
		return -ENOMEM;
	bigger.capacity = capacity;
	bigger.entries = calloc(bigger.capacity, h->entry_size);
	if (!bigger.entries)
		return -ENOMEM;
	for (size_t i = 0; i < h->capacity; i++) {
		unsigned char *e = entry_at(h, i);
		uint64_t hash = entry_hash(e);

		if (hash)
			memcpy(entry_at(&bigger, find(&bigger, e + sizeof(uint64_t), hash)), e,
			       h->entry_size);
	}
	free(h->entries);
	*h = bigger;
	return 0;
}

void *hashtab_put(struct hashtab *h, const void *key, bool *ret_created)
{
	uint64_t hash = key_hash(h, key);
	unsigned char *e;

	e = entry_at(h, find(h, key, hash));
	if (entry_hash(e)) {
		if (ret_created)
			*ret_created = false;
		return e + h->value_offset;
	}
	if ((h->count + 1) * 10 > h->capacity * 7) {
		if (resize(h, h->capacity * 2) < 0)
			return NULL;
		e = entry_at(h, find(h, key, hash));
	}
	memcpy(e, &hash, sizeof(hash));
	memcpy(e + sizeof(uint64_t), key, h->key_size);
	memset(e + h->value_offset, 0, h->value_size);
	h->count++;
	if (ret_created)
		*ret_created = true;
	return e + h->value_offset;
}

/* Backward-shift deletion: the entries after the freed one, up to the next
 * empty entry, move back into it where their probe would pass it, so no
 * probe meets an empty entry before its key's (no tombstones). */
bool hashtab_remove(struct hashtab *h, const void *key)
{
	size_t mask = h->capacity - 1;
	size_t hole = find(h, key, key_hash(h, key)), i = hole;

	if (!entry_hash(entry_at(h, hole)))
		return false;
	for (;;) {
		unsigned char *e;
		size_t home;

		i = (i + 1) & mask;
		e = entry_at(h, i);
		if (!entry_hash(e))
			break;
		home = entry_hash(e) & mask;
		/* e stays where its home lies cyclically in (hole, i] */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		memcpy(entry_at(h, hole), e, h->entry_size);
		hole = i;
	}
	memset(entry_at(h, hole), 0, h->entry_size);
	h->count--;
	return true;
}

int hashtab_reserve(struct hashtab *h, size_t n)
{
	size_t capacity = h->capacity;

	if (n > SIZE_MAX / 10)
		return -ENOMEM;
	while (n * 10 > capacity * 7) {
		if (capacity > SIZE_MAX / 14) /* capacity * 7 must not wrap */
			return -ENOMEM;
		capacity *= 2;
	}
	return capacity == h->capacity ? 0 : resize(h, capacity);
}

size_t hashtab_count(const struct hashtab *h)
{
	return h->count;
}

size_t hashtab_bytes(const struct hashtab *h)
{
	return sizeof(*h) + h->capacity * h->entry_size;
}

bool hashtab_next(const struct hashtab *h, size_t *pos, const void **ret_key, void **ret_value)
{
	for (size_t i = *pos; i < h->capacity; i++) {
		unsigned char *e = entry_at(h, i);

		if (entry_hash(e)) {
			*pos = i + 1;
			if (ret_key)
				*ret_key = e + sizeof(uint64_t);
			if (ret_value)
				*ret_value = e + h->value_offset;
			return true;
		}
	}
	*pos = h->capacity;
	return false;
}
