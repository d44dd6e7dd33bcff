/*
 * cpython_code: names the CPython interpreter frames the BPF walk records
 * (OFFCPU_FRAME_PYTHON in bpf/offcpu.h: a code object's address and an
 * instruction) by reading the code object from the live process with
 * process_vm_readv (root): "QUALNAME (FILE:LINE)", or "[python: WHY]".
 * Caches what it read per (process, code object). Used by the drain worker
 * only: not thread-safe. Does not log.
 *
 * Reasons (WHY), the whole set:
 *   "exited"                 the process cannot be read (gone, or a zombie) and
 *                            the code object was not read before
 *   "unreadable frame"       the walk could not read a frame (ERR_READ)
 *   "deeper than the stack"  the walk had no room for older frames (ERR_DEPTH)
 *   "frame chain loops"      the walk came back to a frame (ERR_LOOP)
 *   "unreadable code"        the code object's address is not readable memory
 *   "not a code object"      what is there fails the checks (a stale or
 *                            forged address), or a code field below 4096
 *                            that is no known reason
 *   "unknown version"        minor is not 10 to 13
 *   "out of memory"          (and -ENOMEM)
 */
#ifndef CPYTHON_CODE_H
#define CPYTHON_CODE_H

#include <stddef.h>
#include <stdint.h>

/* At most this many code objects are cached, holding at most this many
 * bytes; when either would be passed, the entries not used in the current
 * pass are dropped (all of them if every entry was). */
#define CPYTHON_CODE_ENTRIES_MAX   16384u
#define CPYTHON_CODE_BYTES_MAX	   (64u << 20)
/* Bounds on what is read: longer names keep their first code points, file
 * names their last (the base name is at the end); a larger line table is
 * "not a code object". */
#define CPYTHON_CODE_NAME_MAX	   256u	 /* code points */
#define CPYTHON_CODE_FILE_MAX	   4096u /* code points */
#define CPYTHON_CODE_LINETABLE_MAX (1u << 20)

struct cpython_code;

int cpython_code_new(struct cpython_code **ret); /* 0 or -ENOMEM */
void cpython_code_free(struct cpython_code *c);	 /* NULL-safe */

/*
 * Starts a naming pass (one drain). A cached code object is checked against
 * the process's memory at most once a pass (its header fields re-read and
 * compared), so one freed and its address reused by another is read again,
 * not named by the old one.
 */
void cpython_code_pass(struct cpython_code *c);

/*
 * Names frame (an OFFCPU_FRAME_PYTHON value; its entry bit is ignored) of
 * process tgid, which runs CPython 3.minor, into buf (size > 0; always
 * NUL-terminated, truncated to size): frame_format() of common/frame.h with
 * the code's co_qualname (co_name in 3.10), the base name of co_filename
 * and the source line of the instruction. The line is co_firstlineno where
 * the instruction has none or lies past the line table, and the table's
 * last line where the position saturated (OFFCPU_FRAME_PYTHON_INSTR_MAX).
 * An error code in the code field is the code address ERR << 4
 * (OFFCPU_FRAME_PYTHON_ERR(err)). A process that cannot be read (it
 * exited) is named from the cache, as last read; minor 0 (its version no
 * longer known: its layout was withdrawn) names from the cache alone.
 * Returns 0 if named; -ENOENT if buf holds "[python: WHY]"; -ENOMEM (buf
 * holds "[python: out of memory]").
 */
int cpython_code_name(struct cpython_code *c, uint32_t tgid, unsigned minor, uint64_t frame,
		      char *buf, size_t size);

/* Drops the entries of tgid (it exited or exec'd). */
void cpython_code_forget(struct cpython_code *c, uint32_t tgid);

/* The number of code objects cached. */
size_t cpython_code_count(const struct cpython_code *c);

#endif
