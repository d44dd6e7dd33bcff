/* frame: see frame.h. */
#include "frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t frame_name_len(const char *frame, size_t len)
{
	size_t i = len, digits;

	/* " (" FILE ":" DIGITS ")" at the end, FILE without parentheses */
	if (i < 6 || frame[i - 1] != ')')
		return len;
	i--;
	for (digits = 0; i > 0 && frame[i - 1] >= '0' && frame[i - 1] <= '9'; i--)
		digits++;
	if (!digits || i < 4 || frame[i - 1] != ':')
		return len;
	i--;
	while (i > 0 && frame[i - 1] != '(' && frame[i - 1] != ')')
		i--;
	if (i < 2 || frame[i - 1] != '(' || frame[i - 2] != ' ' || frame[i] == ':')
		return len;
	return i - 2;
}

int frame_format(char *buf, size_t size, const char *name, bool inlined, const char *file,
		 unsigned line)
{
	const char *inl = inlined ? FRAME_INLINED_SUFFIX : "";
	int n;

	if (!file || !file[0] || !line || strpbrk(file, "();\r\n"))
		n = snprintf(buf, size, "%s%s", name, inl);
	else
		n = snprintf(buf, size, "%s%s (%s:%u)", name, inl, file, line);
	/* ';' separates frames in lists and folded lines */
	for (char *p = size ? strchr(buf, ';') : NULL; p; p = strchr(p + 1, ';'))
		*p = ':';
	return n;
}

bool frame_list_has_lines(const char *frames)
{
	const char *p = frames;

	while (*p) {
		size_t len = strcspn(p, ";");

		if (frame_name_len(p, len) != len)
			return true;
		p += len + (p[len] == ';');
	}
	return false;
}

char *frame_list_strip_lines(const char *frames)
{
	char *out = malloc(strlen(frames) + 1), *o = out;
	const char *p = frames;

	if (!out)
		return NULL;
	while (*p) {
		size_t len = strcspn(p, ";");

		memcpy(o, p, frame_name_len(p, len));
		o += frame_name_len(p, len);
		if (p[len] == ';')
			*o++ = ';';
		p += len + (p[len] == ';');
	}
	*o = '\0';
	return out;
}
