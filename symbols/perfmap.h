/*
 * perfmap: the symbols a JIT compiler writes for its code, in perf's
 * /tmp/perf-PID.map format: one "START SIZE name" line per function, START
 * and SIZE in hex. One perfmap per process, owned by the symbolizer, which
 * consults it for addresses in anonymous executable mappings. The file is
 * re-read when it has grown or changed since the last read. Does not log.
 */
#ifndef PERFMAP_H
#define PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_BYTES   (64u << 20) /* a larger file is read up to this */
#define PERFMAP_ENTRIES_MAX (1u << 20)

struct perfmap;

int perfmap_new(struct perfmap **ret); /* 0 or -ENOMEM */
void perfmap_free(struct perfmap *m);  /* NULL-safe */

/*
 * Reads the map at path if it changed (size, mtime or inode) since the last
 * read. Malformed lines are skipped. Returns 0 (entries unchanged if the
 * file did not change), -ENOENT if there is no such file, or -ENOMEM; on
 * error the entries are kept (the process may have exited, its last
 * stacks are still to be named).
 */
int perfmap_refresh(struct perfmap *m, const char *path);

/* The name of the function containing addr, or NULL. Of overlapping
 * entries, the one starting nearest below addr wins; of entries with the
 * same start, the later line (a JIT reuses freed code memory). */
const char *perfmap_find(const struct perfmap *m, uint64_t addr);

#endif
