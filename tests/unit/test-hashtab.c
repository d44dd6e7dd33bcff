/* Unit test of common/hashtab.c. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "hashtab.h"

struct key {
	uint32_t a, b;
};

int main(void)
{
	struct hashtab *h;
	uint64_t *v, sum = 0;
	const struct key *k;
	size_t pos = 0, seen = 0;
	bool created;

	CHECK(hashtab_new(sizeof(struct key), sizeof(uint64_t), &h) == 0);
	CHECK(hashtab_get(h, &(struct key){ 1, 2 }) == NULL);
	/* Enough keys to force several grows; keys that differ only in b. */
	for (uint32_t i = 0; i < 10000; i++) {
		v = hashtab_put(h, &(struct key){ i % 100, i / 100 }, &created);
		CHECK(v && created && *v == 0);
		*v = i;
	}
	CHECK(hashtab_count(h) == 10000);
	v = hashtab_put(h, &(struct key){ 5, 7 }, &created);
	CHECK(v && !created && *v == 705);
	CHECK(hashtab_count(h) == 10000);
	v = hashtab_get(h, &(struct key){ 99, 99 });
	CHECK(v && *v == 9999);
	CHECK(hashtab_get(h, &(struct key){ 100, 0 }) == NULL);
	while (hashtab_next(h, &pos, (const void **)&k, (void **)&v)) {
		CHECK(*v == k->b * 100 + k->a);
		sum += *v;
		seen++;
	}
	CHECK(seen == 10000 && sum == 10000ULL * 9999 / 2);
	CHECK(!hashtab_next(h, &pos, NULL, NULL));

	/* Removed keys are gone and every other key is still found, across
	 * the probe runs that removals shift back. */
	for (uint32_t i = 0; i < 10000; i += 3)
		CHECK(hashtab_remove(h, &(struct key){ i % 100, i / 100 }));
	CHECK(!hashtab_remove(h, &(struct key){ 0, 0 }));
	CHECK(hashtab_count(h) == 10000 - 3334);
	for (uint32_t i = 0; i < 10000; i++) {
		v = hashtab_get(h, &(struct key){ i % 100, i / 100 });
		CHECK(i % 3 ? v && *v == i : v == NULL);
	}
	for (uint32_t i = 0; i < 10000; i += 3) {
		v = hashtab_put(h, &(struct key){ i % 100, i / 100 }, &created);
		CHECK(v && created && *v == 0);
		*v = i;
	}
	CHECK(hashtab_count(h) == 10000);

	/* Room reserved on a full table keeps its entries; a smaller reserve
	 * changes nothing. */
	CHECK(hashtab_reserve(h, 100000) == 0);
	CHECK(hashtab_reserve(h, 10) == 0);
	CHECK(hashtab_count(h) == 10000);
	for (uint32_t i = 0; i < 10000; i += 999) {
		v = hashtab_get(h, &(struct key){ i % 100, i / 100 });
		CHECK(v && *v == i);
	}
	hashtab_free(h);
	hashtab_free(NULL);

	/* Reserved before the puts: the same table as grown. */
	CHECK(hashtab_new(sizeof(struct key), sizeof(uint64_t), &h) == 0);
	CHECK(hashtab_reserve(h, 5000) == 0);
	for (uint32_t i = 0; i < 5000; i++) {
		v = hashtab_put(h, &(struct key){ i, 0 }, &created);
		CHECK(v && created);
		*v = i;
	}
	CHECK(hashtab_count(h) == 5000);
	v = hashtab_get(h, &(struct key){ 4999, 0 });
	CHECK(v && *v == 4999);
	CHECK(hashtab_reserve(h, SIZE_MAX / 2) == -ENOMEM && hashtab_count(h) == 5000);
	/* A table whose bytes size_t cannot hold: refused before calloc(). */
	CHECK(hashtab_reserve(h, SIZE_MAX / 16) == -ENOMEM && hashtab_count(h) == 5000);
	hashtab_free(h);
	hashtab_free(NULL);
	return CHECK_DONE();
}
