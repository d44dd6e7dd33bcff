/*
 * kallsyms: the one reader of the kernel's symbol list (<proc>/kallsyms),
 * shared by the symbolizer (kernel addresses to names) and the collector
 * (the text bounds the BPF side needs, see collector_probe.c). Its lines are
 *   "ffffffff81000000 T _stext"
 *   "ffffffffc0a01000 t name\t[module]"
 * with every address 0 where kptr_restrict hides them from the reader.
 * Does not log.
 */
#ifndef KALLSYMS_H
#define KALLSYMS_H

#include <stdbool.h>
#include <stdint.h>

#define KALLSYMS_LINE_MAX 1024 /* longer lines are skipped; KSYM_NAME_LEN is 512 */

struct kallsyms_sym {
	uint64_t addr;	  /* 0 where hidden */
	char type;	  /* as the file has it: 'T', 't', 'W', 'd', ... */
	const char *name; /* NUL-terminated, non-empty; valid during the call only */
	bool module;	  /* a module's (or BPF's): "[name]" follows the symbol */
};

/* Called with each symbol; a nonzero return stops the walk. */
typedef int (*kallsyms_visit_fn)(void *arg, const struct kallsyms_sym *sym);

/*
 * Calls visit on each well-formed line of the file at path ("/proc/kallsyms"
 * or a fixture's), in file order; lines that are not "ADDR TYPE NAME..." or
 * do not fit KALLSYMS_LINE_MAX are skipped. Returns 0, the first nonzero
 * result of visit, or -errno if path cannot be opened.
 */
int kallsyms_read(const char *path, kallsyms_visit_fn visit, void *arg);

#endif
