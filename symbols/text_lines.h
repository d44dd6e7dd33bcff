/*
 * text_lines: a text file read line by line, as the kernel's and the
 * processes' lists (/proc/kallsyms, /proc/PID/maps) are: through one
 * buffer of our own (stdio's costs an fstat, and procfs's block size makes
 * it 1 KiB, a read() per few lines), each line handed over without its
 * '\n'. Lines longer than the caller's buffer are skipped whole. Does not
 * log.
 */
#ifndef TEXT_LINES_H
#define TEXT_LINES_H

#include <stddef.h>

/* Called with each line (NUL-terminated, changeable); 0 goes on, a negative
 * errno stops the read. */
typedef int (*text_lines_fn)(void *arg, char *line);

/* Calls fn(arg, line) on each line of the file at path that fits in
 * line[size]. Returns 0, fn's negative result, or a positive errno if path
 * cannot be opened. */
int text_lines_read(const char *path, char *line, size_t size, text_lines_fn fn, void *arg);

#endif
