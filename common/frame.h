/*
 * frame: how a frame name carries what the symbolizer knew besides the
 * function: "NAME[ [inlined]][ (FILE:LINE)]". " [inlined]" marks a function
 * inlined into the frame before it (same return address); " (FILE:LINE)" is
 * the source line, FILE a base name. Stored windows keep the lines;
 * replies drop them unless asked (--lines), and stack filters match a
 * frame with and without them. Shared by the daemon and offcpuctl. Does not
 * log.
 */
#ifndef FRAME_H
#define FRAME_H

#include <stdbool.h>
#include <stddef.h>

#define FRAME_INLINED_SUFFIX " [inlined]"

/* The length of frame[0, len) without its " (FILE:LINE)" suffix (len if it
 * has none). */
size_t frame_name_len(const char *frame, size_t len);

/* Writes "NAME[ [inlined]][ (FILE:LINE)]" into buf (NUL-terminated,
 * truncated to size; the line part is left out when file is NULL, line is
 * 0, or file holds a character a frame cannot: '(', ')', ';' or a line
 * break). A ';' in name becomes ':', as frames are ';'-joined. Returns what
 * snprintf returns. */
int frame_format(char *buf, size_t size, const char *name, bool inlined, const char *file,
		 unsigned line);

/* True if some frame of the ';'-joined list has a line suffix. */
bool frame_list_has_lines(const char *frames);

/* A copy of the ';'-joined list with the line suffixes cut off; NULL on
 * ENOMEM. */
char *frame_list_strip_lines(const char *frames);

#endif
