/*
 * utf8: well-formed UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF, as Go's utf8.ValidString and cJSON's readers have it), for what
 * goes out as text: the protocol's JSON and Pyroscope's labels. Does not log.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the sequence at s (NUL-terminated), 0 if none starts there;
 * never reads past a NUL. */
size_t utf8_seq(const unsigned char *s);

/* Whether all of s is well-formed. */
bool utf8_valid(const char *s);

/* A malloc'd copy of s with each byte that starts no sequence replaced by
 * U+FFFD; NULL on ENOMEM. */
char *utf8_fix(const char *s);

#endif
