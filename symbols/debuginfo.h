/*
 * debuginfo: the DWARF of one ELF file, through libdwfl, turned into frame
 * names: the function at an address, the functions inlined there
 * (innermost last, marked " [inlined]") and source lines (" (file:line)",
 * see common/frame.h). DWARF comes from the file itself or from a separate
 * debug file that libdwfl's standard search finds: by build-id under
 * DEBUG_ROOT/.build-id/xx/rest.debug, else by .gnu_debuglink (CRC checked)
 * next to the file, in its .debug directory and under DEBUG_ROOT. Used by
 * the symbolizer, one per cached ELF file. Does not log.
 */
#ifndef DEBUGINFO_H
#define DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

struct debuginfo;

/*
 * fd: the ELF file, consumed (closed by debuginfo_free, or here on failure).
 * path: its name as the process sees it, for the .gnu_debuglink search.
 * debug_root: the root of separate debug files, usually "/usr/lib/debug".
 * DWARF is read lazily, at the first lookup. Returns 0, -ENOEXEC (libdwfl
 * refuses the file) or -ENOMEM.
 */
int debuginfo_open(int fd, const char *path, const char *debug_root, struct debuginfo **ret);
void debuginfo_free(struct debuginfo *d); /* NULL-safe */

/*
 * Names the code at ELF virtual address vaddr: the enclosing function, then
 * each function inlined at vaddr ("f;g [inlined];h [inlined]", root to leaf),
 * each with its source line where DWARF has one. outer_name, if not NULL,
 * names the enclosing function instead of DWARF (an ELF symbol's public name
 * reads better than glibc's internal "__GI___libc_read"). Writes the frames
 * ';'-joined into buf (NUL-terminated, a frame that does not fit is left
 * out). Returns the number of frames (>= 1), or 0 if no DWARF covers vaddr
 * (buf unchanged).
 */
int debuginfo_frames(struct debuginfo *d, uint64_t vaddr, const char *outer_name, char *buf,
		     size_t size);

/*
 * An estimate of the memory d holds: the debug sections libdw has mapped or
 * read (a mapped one's pages count in RSS once touched), the line tables of
 * the compile units named so far (libdw keeps both until the reader is
 * freed) and d's own index. Grows as frames are named.
 */
size_t debuginfo_bytes(const struct debuginfo *d);

#endif
