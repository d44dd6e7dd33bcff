/*
 * array: the growable array every module uses: a pointer, a count and a
 * capacity of its own, and array_grow() to make room before an append.
 * Header-only, so libraries that share nothing else (render/, pt/) need no
 * link to common/. Does not log.
 */
#ifndef ARRAY_H
#define ARRAY_H

#include <errno.h>
#include <stdlib.h>

/*
 * Makes room in *p (a pointer to the array, passed as its address), which
 * holds *cap elements of size bytes, for need elements: the capacity doubles
 * from initial (16 if 0) until it holds need. Returns 0, or -ENOMEM with *p
 * and *cap unchanged.
 */
static inline int array_grow(void *p, size_t *cap, size_t need, size_t size, size_t initial)
{
	void **ptr = p, *q;
	size_t n;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : initial ? initial : 16;
	while (n < need)
		n *= 2;
	q = reallocarray(*ptr, n, size);
	if (!q)
		return -ENOMEM;
	*ptr = q;
	*cap = n;
	return 0;
}

#endif
