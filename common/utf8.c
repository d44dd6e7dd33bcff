/* utf8: see utf8.h. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/*
 * Length of the well-formed UTF-8 sequence at s, or 0 if there is none
 * (overlong forms, surrogates and code points past U+10FFFF are not).
 * Stops at the first bad byte, so never reads past a NUL.
 */
size_t utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n) {
		n = utf8_seq(p);
		if (!n)
			return false;
	}
	return true;
}

/* A malloc'd copy of s with each byte that does not start valid UTF-8
 * replaced by U+FFFD; NULL on ENOMEM. */
char *utf8_fix(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char *fixed, *q;
	size_t n;

	fixed = malloc(strlen(s) * 3 + 1);
	if (!fixed)
		return NULL;
	for (q = fixed; *p; p += n ? n : 1) {
		n = utf8_seq(p);
		if (n) {
			memcpy(q, p, n);
			q += n;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
		}
	}
	*q = '\0';
	return (char *)fixed;
}
