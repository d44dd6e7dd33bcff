/* check: the unit tests' assertion macros. A failed check prints where and
 * what, and the test's exit status becomes 1. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

/* CHECK with a printf-style note (format: a string literal) after the
 * condition; CHECK_AT reports file and line given by a helper's caller. */
#define CHECK_AT(file, line, cond, ...)                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s", file, line, #cond);             \
			fprintf(stderr, " " __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                       \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECK_MSG(cond, ...) CHECK_AT(__FILE__, __LINE__, cond, __VA_ARGS__)

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!g_ || strcmp(g_, w_)) {                                                       \
			fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,    \
				g_ ? g_ : "(null)", w_);                                           \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECK_DONE()                                                                               \
	(check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

#endif
