/*
 * cpython_layout: finds CPython in one ELF file (a python executable or a
 * libpython3.X.so) and says where that interpreter keeps what the BPF walk
 * of its frames reads: _PyRuntime's address and a struct
 * offcpu_python_layout (bpf/offcpu.h). 3.10 to 3.12 come from a table
 * checked against each version's DWARF; 3.13 from the _Py_DebugOffsets the
 * interpreter keeps at the start of _PyRuntime. Called by whoever reads a
 * process's mappings to publish its offcpu_python_proc. Does not log.
 */
#ifndef CPYTHON_LAYOUT_H
#define CPYTHON_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h> /* the __u16 of offcpu.h */

#include "offcpu.h"

enum cpython_status {
	CPYTHON_NONE,		 /* not CPython: no _PyRuntime defined here */
	CPYTHON_KNOWN,		 /* the layout is known */
	CPYTHON_UNKNOWN_VERSION, /* CPython, but no layout for its version (or build) */
	CPYTHON_FREE_THREADED,	 /* a free-threaded (3.13t) build: the walk does not
				    know its thread states */
};

#define CPYTHON_VERSION_LEN 16 /* "3.13.0", "3.14.0rc1", "3.10" */

struct cpython_file {
	enum cpython_status status;
	/* _PyRuntime's ELF virtual address (all but NONE): add the load
	 * bias of the mapping to get the process's address. */
	uint64_t runtime_vaddr;
	/* As much of the version as is known ("3.11.2"; "3.10" from a file
	 * name; "" if nothing tells). */
	char version[CPYTHON_VERSION_LEN];
	struct offcpu_python_layout layout; /* KNOWN only; zero otherwise */
};

/*
 * Looks at the ELF file open at fd; path is its name (may be NULL), used
 * only for the version that "python3.N[t]" / "libpython3.N[t]" in it gives
 * when the file says none (3.10 has no Py_Version). Reads with pread(): fd's
 * offset is left as it was, and fd stays open. Returns 0 with *ret filled
 * (status NONE for an ELF file without _PyRuntime), or -errno if the file
 * cannot be read as ELF (-ENOEXEC: not a regular ELF file); *ret is left
 * unchanged on error. Never trusts the file: a corrupt or hostile one
 * gives NONE or UNKNOWN_VERSION (or FREE_THREADED), never a layout with
 * an offset past what the walk reads.
 */
int cpython_layout_of_file(int fd, const char *path, struct cpython_file *ret);

/* The layout of the table for 3.minor (10 to 12); false, with *ret
 * unchanged, for any other (3.13's is read from the file itself). */
bool cpython_layout_for_minor(unsigned minor, struct offcpu_python_layout *ret);

/* "none", "known", "unknown version", "free-threaded"; "?" if out of range. */
const char *cpython_status_name(enum cpython_status s);

#endif
