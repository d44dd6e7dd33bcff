/*
 * symbolizer: see symbolizer.h.
 *
 * Three caches: the kernel table (loaded once), process maps (hash by tgid,
 * LRU-bounded, each with its JIT perf map) and ELF files (a fixed pool of
 * slots, LRU), each slot with its symbol table, its DWARF reader and the
 * names made so far by address. A mapping points at its ELF slot together
 * with the slot's serial, so an evicted and reused slot is noticed without
 * reference counts. Not thread-safe.
 */
#include "symbolizer.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "debuginfo.h"
#include "demangle.h"
#include "elf_build_id.h"
#include "elf_symtab.h"
#include "file_ids.h"
#include "frame.h"
#include "hashtab.h"
#include "kallsyms.h"
#include "perfmap.h"
#include "pid_ns.h"
#include "proc_files.h"
#include "proc_maps.h"
#include "text_lines.h"

#define SYM_MAPS_LINE_MAX	  (PATH_MAX + 256)
#define SYM_KERNEL_FUNC_MAX_BYTES (1u << 20) /* farther from a symbol: not inside it */
#define SYM_TABLE_MAX		  (1u << 24) /* symbols per table */
#define SYM_NAME_BITS		  29	     /* low bits of sym_func.name: offset in names */
#define SYM_NAMES_MAX_BYTES	  (1u << SYM_NAME_BITS)
#define SYM_PROC_MAPS_MAX	  65536 /* executable mappings per process */
#define SYM_PROCS_MAX		  4096
#define SYM_PROC_BUCKETS	  1024 /* power of two */
#define SYM_ELFS_MAX		  256
#define SYM_ELF_LOADS_MAX	  32
#define SYM_ELF_PHDRS_MAX	  4096
#define SYM_ELF_CACHE_MAX	  (1u << 16) /* named addresses kept per ELF file */
/* Named addresses kept in all, their table included: 256 files of 65,536
 * names each could take gigabytes. */
#define SYM_NAMED_MAX_BYTES	  ((size_t)32 << 20)
/* What the DWARF readers hold in all (debuginfo_bytes(): line tables grow
 * with each compile unit named): past this, the least recently used file
 * with DWARF is dropped from the cache, to be read again on its next use. */
#define SYM_DWARF_MAX_BYTES	  ((size_t)96 << 20)
#define SYM_FRAMES_MAX_BYTES	  4096	     /* one address's frames, inlines included */
#define SYM_FILES_MAX		  65536	     /* file ids remembered (file_ids.h) */

enum sym_bind {
	SYM_BIND_GLOBAL,
	SYM_BIND_WEAK,
	SYM_BIND_LOCAL,
};

struct sym_func {
	uint64_t addr;
	uint32_t size; /* 0: up to the next symbol */
	/* rank << SYM_NAME_BITS | offset in names: sorting on (addr, name) puts
	 * the preferred name of an address first, then the table's order. */
	uint32_t name;
};

struct sym_table {
	struct sym_func *funcs;
	size_t n_funcs, cap_funcs;
	char *names;
	size_t names_len, names_cap;
};

struct sym_elf_key {
	uint8_t build_id[ELF_BUILD_ID_MAX];
	size_t build_id_len; /* 0: identified by dev and ino */
	uint64_t dev, ino;
};

struct sym_elf_load {
	uint64_t offset, vaddr, filesz;
};

struct sym_elf {
	uint64_t serial; /* 0: free slot */
	uint64_t last_used;
	struct sym_elf_key key;
	struct sym_elf_load loads[SYM_ELF_LOADS_MAX];
	size_t n_loads;
	struct sym_table syms;
	struct debuginfo *dbg;	/* NULL: no DWARF reader (the file's or a separate one) */
	struct hashtab *frames; /* vaddr -> struct sym_frames: names made so far */
	size_t names_bytes;	/* frames' table and names */
	size_t dwarf_bytes;	/* debuginfo_bytes(dbg) when last counted */
};

struct sym_frames {
	char *names; /* ';'-joined, root to leaf; NULL: not named yet */
	int r;	     /* what symbolizer_user returned for it */
};

enum sym_map_elf_state {
	SYM_MAP_ELF_UNKNOWN,
	SYM_MAP_ELF_OK,
	SYM_MAP_ELF_NONE,
};

struct sym_map {
	uint64_t start, end, pgoff, dev, ino;
	uint32_t path; /* offset in sym_proc.paths */
	enum sym_map_elf_state elf_state;
	struct sym_elf *elf; /* valid while elf->serial == elf_serial */
	uint64_t elf_serial;
};

/* What a file id (file_ids.h) was found to be, while its serial holds. */
struct sym_file {
	uint64_t serial; /* the id's in file_ids when this was filled; 0: not yet */
	enum sym_map_elf_state elf_state;
	struct sym_elf *elf; /* valid while elf->serial == elf_serial */
	uint64_t elf_serial;
	char name[256]; /* the file's base name, for module+0xVADDR */
};

struct sym_proc {
	uint32_t tgid;
	int err; /* maps unreadable: every lookup is [unknown: exited] */
	/* Exited since its maps were read: they are its last-known ones, and an
	 * address outside them was mapped later (an exec, a dlopen), unread. */
	bool exited;
	/* The refresh these maps were read in: older ones are re-read on next
	 * use, keeping these if that fails. */
	uint64_t maps_gen;
	struct sym_proc *hash_next;
	struct sym_proc *lru_prev, *lru_next;
	struct sym_map *maps;
	size_t n_maps, cap_maps;
	char *paths;
	size_t paths_len, paths_cap;
	struct perfmap *jit; /* /tmp/perf-PID.map; NULL until an anonymous frame */
	uint64_t jit_gen;    /* the refresh the map was last looked at in */
};

struct symbolizer {
	char *proc_root;
	char *debug_root;

	struct sym_table kernel;
	bool kernel_loaded;

	struct sym_proc *procs[SYM_PROC_BUCKETS];
	struct sym_proc *lru_oldest, *lru_newest;
	size_t n_procs;
	/* Bumped by symbolizer_refresh_processes(): one store marks every
	 * process stale, however many are cached. */
	uint64_t refresh_gen;

	struct proc_files *files; /* NULL: none; else exited processes' maps and files */
	struct file_ids *file_ids; /* NULL: none; else what file frames' ids stand for */
	struct hashtab *file_frames; /* file id -> struct sym_file */
	uint64_t unnamed[SYMBOLIZER_UNNAMED_COUNT]; /* read from other threads: atomics */

	struct sym_elf *elfs; /* SYM_ELFS_MAX slots */
	uint64_t elf_clock;
	uint64_t elf_serial;
	size_t tables_bytes; /* the kernel's symbol table and every slot's */
	size_t names_bytes;  /* of every slot */
	size_t dwarf_bytes;  /* of every slot */
	/* The sum of the three, for other threads to read: an atomic. */
	size_t cache_bytes;
};

/* Appends a string of len bytes plus a NUL to a buffer of initial bytes at
 * first; returns its offset or -errno. */
static int64_t sym_strbuf_add(char **buf, size_t *len_used, size_t *cap, size_t initial, size_t max,
			      const char *s, size_t len)
{
	size_t off = *len_used;

	if (len >= max - off)
		return -E2BIG;
	if (array_grow(buf, cap, off + len + 1, 1, initial) < 0)
		return -ENOMEM;
	memcpy(*buf + off, s, len);
	(*buf)[off + len] = '\0';
	*len_used = off + len + 1;
	return off;
}

/*
 * Symbols that share an address: the lowest rank names them. A public name
 * wins over a '_' one even when only weak: glibc's poll, nanosleep and ~170
 * others are weak aliases of a global __poll, __nanosleep...
 */
static unsigned sym_rank(enum sym_bind bind, const char *name)
{
	bool underscore = name[0] == '_';

	switch (bind) {
	case SYM_BIND_GLOBAL:
		return underscore ? 2 : 0;
	case SYM_BIND_WEAK:
		return underscore ? 3 : 1;
	default:
		return underscore ? 5 : 4;
	}
}

/* Returns 0, -E2BIG when the table is full (the symbol is dropped) or -ENOMEM. */
static int sym_table_add(struct sym_table *t, uint64_t addr, uint64_t size, unsigned rank,
			 const char *name, size_t len)
{
	int64_t off;

	if (t->n_funcs >= SYM_TABLE_MAX)
		return -E2BIG;
	if (array_grow(&t->funcs, &t->cap_funcs, t->n_funcs + 1, sizeof(*t->funcs), 1024) < 0)
		return -ENOMEM;
	off = sym_strbuf_add(&t->names, &t->names_len, &t->names_cap, 16384, SYM_NAMES_MAX_BYTES,
			     name, len);
	if (off < 0)
		return off;
	t->funcs[t->n_funcs++] = (struct sym_func){
		.addr = addr,
		.size = size > UINT32_MAX ? UINT32_MAX : size,
		.name = (uint32_t)rank << SYM_NAME_BITS | (uint32_t)off,
	};
	return 0;
}

static int sym_func_cmp(const void *a, const void *b)
{
	const struct sym_func *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts and keeps one symbol per address: the best-ranked name, the largest
 * size (an alias may carry the size the other lacks). */
static void sym_table_finish(struct sym_table *t)
{
	size_t i, n = 0;
	void *p;

	if (!t->n_funcs)
		return;
	qsort(t->funcs, t->n_funcs, sizeof(*t->funcs), sym_func_cmp);
	for (i = 0; i < t->n_funcs; i++) {
		if (n && t->funcs[n - 1].addr == t->funcs[i].addr) {
			if (t->funcs[i].size > t->funcs[n - 1].size)
				t->funcs[n - 1].size = t->funcs[i].size;
			continue;
		}
		t->funcs[n++] = t->funcs[i];
	}
	t->n_funcs = n;
	/* Tables live long: give back what doubling over-allocated. */
	p = reallocarray(t->funcs, n, sizeof(*t->funcs));
	if (p) {
		t->funcs = p;
		t->cap_funcs = n;
	}
	p = realloc(t->names, t->names_len);
	if (p) {
		t->names = p;
		t->names_cap = t->names_len;
	}
}

/* Returns the symbol with the greatest address <= addr, or NULL. */
static const struct sym_func *sym_table_find(const struct sym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n_funcs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->funcs[lo - 1] : NULL;
}

static const char *sym_table_name(const struct sym_table *t, const struct sym_func *f)
{
	return t->names + (f->name & (SYM_NAMES_MAX_BYTES - 1));
}

static void sym_table_free(struct sym_table *t)
{
	free(t->funcs);
	free(t->names);
	*t = (struct sym_table){ 0 };
}

/* Adds a kernel text symbol (modules' too) to the sym_table arg, skips the
 * rest. Returns 0, or -ENOMEM (a symbol that does not fit the table is
 * skipped too). */
static int sym_kernel_visit(void *arg, const struct kallsyms_sym *sym)
{
	struct sym_table *t = arg;
	enum sym_bind bind;
	int r;

	switch (sym->type) {
	case 'T':
		bind = SYM_BIND_GLOBAL;
		break;
	case 'W':
	case 'w':
		bind = SYM_BIND_WEAK;
		break;
	case 't':
		bind = SYM_BIND_LOCAL;
		break;
	default:
		return 0;
	}
	/* kptr_restrict shows every address as 0 */
	if (!sym->addr)
		return 0;
	r = sym_table_add(t, sym->addr, 0, sym_rank(bind, sym->name), sym->name, strlen(sym->name));
	return r == -ENOMEM ? r : 0;
}

static size_t sym_table_bytes(const struct sym_table *t)
{
	return t->cap_funcs * sizeof(*t->funcs) + t->names_cap;
}

/* Makes the caches' bytes, after a change, what other threads read. */
static void sym_cache_publish(struct symbolizer *s)
{
	__atomic_store_n(&s->cache_bytes, s->tables_bytes + s->names_bytes + s->dwarf_bytes,
			 __ATOMIC_RELAXED);
}

static int sym_kernel_load(struct symbolizer *s)
{
	char path[PATH_MAX];
	int r;

	if (snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = kallsyms_read(path, sym_kernel_visit, &s->kernel);
	if (r < 0) {
		sym_table_free(&s->kernel);
		return r;
	}
	sym_table_finish(&s->kernel);
	s->tables_bytes += sym_table_bytes(&s->kernel);
	sym_cache_publish(s);
	return 0;
}

int symbolizer_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t size)
{
	const struct sym_func *f;

	/* Loaded once: a failure other than memory (no file, kptr_restrict)
	 * will not go away by reading again. */
	if (!s->kernel_loaded && sym_kernel_load(s) != -ENOMEM)
		s->kernel_loaded = true;
	f = sym_table_find(&s->kernel, addr);
	if (!f || addr - f->addr >= SYM_KERNEL_FUNC_MAX_BYTES) {
		snprintf(buf, size, "0x%" PRIx64, addr);
		return -ENOENT;
	}
	snprintf(buf, size, "%s", sym_table_name(&s->kernel, f));
	return 0;
}

static void sym_elf_frames_free(struct sym_elf *e)
{
	struct sym_frames *f;
	size_t pos = 0;

	while (e->frames && hashtab_next(e->frames, &pos, NULL, (void **)&f))
		free(f->names);
	hashtab_free(e->frames);
	e->frames = NULL;
}

static void sym_elf_clear(struct sym_elf *e)
{
	sym_table_free(&e->syms);
	sym_elf_frames_free(e);
	debuginfo_free(e->dbg);
	memset(e, 0, sizeof(*e));
}

/* Empties slot e (of s), its bytes uncounted. */
static void sym_elf_drop(struct symbolizer *s, struct sym_elf *e)
{
	s->tables_bytes -= sym_table_bytes(&e->syms);
	s->names_bytes -= e->names_bytes;
	s->dwarf_bytes -= e->dwarf_bytes;
	sym_elf_clear(e);
	sym_cache_publish(s);
}

/* Counts bytes more of e's named addresses. */
static void sym_names_add(struct symbolizer *s, struct sym_elf *e, size_t bytes)
{
	e->names_bytes += bytes;
	s->names_bytes += bytes;
	sym_cache_publish(s);
}

/* Drops e's named addresses (they are made again on use). */
static void sym_elf_forget_names(struct symbolizer *s, struct sym_elf *e)
{
	sym_elf_frames_free(e);
	s->names_bytes -= e->names_bytes;
	e->names_bytes = 0;
	sym_cache_publish(s);
}

/* Keeps the named addresses of all slots under SYM_NAMED_MAX_BYTES: the
 * slot that holds the most forgets its own, which a long-lived process's
 * hot frames will make again. */
static void sym_names_bound(struct symbolizer *s)
{
	while (s->names_bytes > SYM_NAMED_MAX_BYTES) {
		struct sym_elf *most = &s->elfs[0];

		for (size_t i = 1; i < SYM_ELFS_MAX; i++)
			if (s->elfs[i].names_bytes > most->names_bytes)
				most = &s->elfs[i];
		if (!most->names_bytes)
			break; /* not reached: the slots' bytes add up to the total */
		sym_elf_forget_names(s, most);
	}
}

/* Counts what e's DWARF reader holds now, and keeps the readers of all
 * slots under SYM_DWARF_MAX_BYTES by dropping the least recently used
 * files with DWARF other than e (mappings notice by the slot's serial). */
static void sym_dwarf_bound(struct symbolizer *s, struct sym_elf *e)
{
	size_t bytes = e->dbg ? debuginfo_bytes(e->dbg) : 0;

	s->dwarf_bytes += bytes - e->dwarf_bytes;
	e->dwarf_bytes = bytes;
	sym_cache_publish(s);
	while (s->dwarf_bytes > SYM_DWARF_MAX_BYTES) {
		struct sym_elf *oldest = NULL;

		for (size_t i = 0; i < SYM_ELFS_MAX; i++) {
			struct sym_elf *c = &s->elfs[i];

			if (c != e && c->dwarf_bytes && (!oldest || c->last_used < oldest->last_used))
				oldest = c;
		}
		if (!oldest)
			break; /* e alone: it stays, as the file the frame is in */
		sym_elf_drop(s, oldest);
	}
}

size_t symbolizer_cache_bytes(struct symbolizer *s)
{
	return __atomic_load_n(&s->cache_bytes, __ATOMIC_RELAXED);
}

static bool sym_elf_key_equal(const struct sym_elf_key *a, const struct sym_elf_key *b)
{
	if (a->build_id_len != b->build_id_len)
		return false;
	if (a->build_id_len)
		return !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->dev == b->dev && a->ino == b->ino;
}

/* True if [offset, offset + size) lies inside a file of file_size bytes. */

static bool sym_elf_build_id(Elf *elf, size_t phnum, uint64_t file_size, struct sym_elf_key *key)
{
	key->build_id_len = elf_build_id(elf, phnum, file_size, key->build_id);
	return key->build_id_len > 0;
}

static void sym_elf_read_loads(struct sym_elf *e, Elf *elf, size_t phnum)
{
	for (size_t i = 0; i < phnum && e->n_loads < SYM_ELF_LOADS_MAX; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->loads[e->n_loads++] = (struct sym_elf_load){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
		};
	}
}


/* A symbol without size is taken to end at the end of its section at the
 * latest (e.g. _init must not swallow the PLT that follows it). */
static uint64_t sym_elf_unsized_bound(Elf *elf, const GElf_Sym *sym)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (sym->st_shndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh))
		return 0;
	if (sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_size - (sym->st_value - sh.sh_addr);
}

struct sym_read_ctx {
	Elf *elf;
	struct sym_table *t;
};

static int sym_read_visit(void *arg, const GElf_Sym *sym, const char *name)
{
	struct sym_read_ctx *c = arg;
	size_t len = strcspn(name, "@"); /* "read@@GLIBC_2.2.5" */
	enum sym_bind bind;
	uint64_t size;
	int r;

	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_WEAK:
		bind = SYM_BIND_WEAK;
		break;
	case STB_LOCAL:
		bind = SYM_BIND_LOCAL;
		break;
	default:
		bind = SYM_BIND_GLOBAL;
		break;
	}
	size = sym->st_size ? sym->st_size : sym_elf_unsized_bound(c->elf, sym);
	r = sym_table_add(c->t, sym->st_value, size, sym_rank(bind, name), name, len);
	if (r == -E2BIG)
		return 1; /* the table is full: keep what it has */
	return r;
}

/* Adds the function symbols of the symbol table scn to t. */
static int sym_elf_read_symbols(struct sym_table *t, Elf *elf, Elf_Scn *scn, uint64_t file_size)
{
	struct sym_read_ctx c = { elf, t };
	int r = elf_symtab_funcs(elf, scn, file_size, sym_read_visit, &c);

	return r > 0 ? 0 : r;
}

/* Fills e from an opened ELF: its PT_LOADs and its function symbols, from
 * .symtab if that has any, else from .dynsym. */
static int sym_elf_load(struct sym_elf *e, Elf *elf, size_t phnum, uint64_t file_size)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	int r = 0;

	sym_elf_read_loads(e, elf, phnum);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			break;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	if (symtab)
		r = sym_elf_read_symbols(&e->syms, elf, symtab, file_size);
	if (r != -ENOMEM && !e->syms.n_funcs && dynsym) {
		sym_table_free(&e->syms);
		r = sym_elf_read_symbols(&e->syms, elf, dynsym, file_size);
	}
	if (r == -ENOMEM)
		return r;
	sym_table_finish(&e->syms);
	return 0;
}

static struct sym_elf *sym_elf_find(struct symbolizer *s, const struct sym_elf_key *key)
{
	for (size_t i = 0; i < SYM_ELFS_MAX; i++)
		if (s->elfs[i].serial && sym_elf_key_equal(&s->elfs[i].key, key))
			return &s->elfs[i];
	return NULL;
}

/* A free slot, else the least recently used one, emptied. */
static struct sym_elf *sym_elf_victim(struct symbolizer *s)
{
	struct sym_elf *v = &s->elfs[0];

	for (size_t i = 0; i < SYM_ELFS_MAX; i++) {
		if (!s->elfs[i].serial) {
			v = &s->elfs[i];
			break;
		}
		if (s->elfs[i].last_used < v->last_used)
			v = &s->elfs[i];
	}
	sym_elf_drop(s, v);
	return v;
}

/* Opens path if it is a regular file (and, if ino is nonzero, that inode:
 * a path may since name another file). Returns an fd or -errno. */
static int sym_open_regular(const char *path, uint64_t ino, struct stat *st)
{
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || (ino && st->st_ino != ino)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* map_files reaches deleted files and other mount namespaces, <pid>/root
 * only the latter; the plain path is the last resort. */
static int sym_map_open(struct symbolizer *s, uint32_t tgid, const struct sym_map *m,
			const char *path, struct stat *st)
{
	char buf[PATH_MAX];
	int fd = -ENOENT;

	if (snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
		     s->proc_root, tgid, m->start, m->end) < (int)sizeof(buf))
		fd = sym_open_regular(buf, 0, st);
	if (fd < 0 && s->files && m->ino) {
		/* the process has exited: the file it mapped, held for it */
		fd = proc_files_open(s->files, m->dev, m->ino);
		if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))) {
			close(fd);
			fd = -ENOENT;
		}
	}
	if (fd < 0 && snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/root%s", s->proc_root, tgid,
			       path) < (int)sizeof(buf))
		fd = sym_open_regular(buf, m->ino, st);
	if (fd < 0)
		fd = sym_open_regular(path, m->ino, st);
	return fd;
}

/* The ELF slot of the file fd (st: its stat, path: how it is named),
 * loading it unless a slot of that file (build-id, else device and inode)
 * is loaded; NULL if it cannot be read as ELF. Closes fd. */
static struct sym_elf *sym_elf_from_fd(struct symbolizer *s, int fd, const struct stat *st,
				       const char *path)
{
	struct sym_elf_key key = { 0 };
	struct sym_elf *e = NULL;
	size_t phnum;
	Elf *elf;

	/* ELF_C_READ: elfutils reads only the parts asked for, and a file
	 * truncated under us gives errors, not SIGBUS as a mapping would. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) < 0)
		goto out;
	if (phnum > SYM_ELF_PHDRS_MAX)
		phnum = SYM_ELF_PHDRS_MAX;
	if (!sym_elf_build_id(elf, phnum, st->st_size, &key)) {
		key.dev = st->st_dev;
		key.ino = st->st_ino;
	}
	e = sym_elf_find(s, &key);
	if (!e) {
		int dbg_fd;

		e = sym_elf_victim(s);
		if (sym_elf_load(e, elf, phnum, st->st_size) < 0) {
			sym_elf_clear(e);
			e = NULL;
			goto out;
		}
		s->tables_bytes += sym_table_bytes(&e->syms);
		sym_cache_publish(s);
		/* Without DWARF the ELF symbols still name the frames. */
		dbg_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (dbg_fd >= 0 && debuginfo_open(dbg_fd, path, s->debug_root, &e->dbg) < 0)
			e->dbg = NULL;
		e->key = key;
		e->serial = ++s->elf_serial;
	}
	e->last_used = ++s->elf_clock;
out:
	elf_end(elf);
	close(fd);
	return e;
}

/* Returns the ELF slot of m's file, opening and loading it if needed, or
 * NULL if it cannot be read as ELF (remembered until the maps are dropped). */
static struct sym_elf *sym_map_elf(struct symbolizer *s, uint32_t tgid, struct sym_map *m,
				   const char *path)
{
	struct sym_elf *e;
	struct stat st;
	int fd;

	if (m->elf_state == SYM_MAP_ELF_NONE)
		return NULL;
	if (m->elf_state == SYM_MAP_ELF_OK && m->elf->serial == m->elf_serial) {
		m->elf->last_used = ++s->elf_clock;
		return m->elf;
	}
	m->elf_state = SYM_MAP_ELF_NONE;
	fd = sym_map_open(s, tgid, m, path, &st);
	if (fd < 0)
		return NULL;
	e = sym_elf_from_fd(s, fd, &st, path);
	if (e) {
		m->elf = e;
		m->elf_serial = e->serial;
		m->elf_state = SYM_MAP_ELF_OK;
	}
	return e;
}

static bool sym_elf_vaddr(const struct sym_elf *e, uint64_t offset, uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < e->n_loads; i++) {
		const struct sym_elf_load *l = &e->loads[i];

		if (offset >= l->offset && offset - l->offset < l->filesz) {
			*ret_vaddr = offset - l->offset + l->vaddr;
			return true;
		}
	}
	return false;
}

/*
 * "start-end perms offset dev inode   path": adds executable mappings to the
 * sym_proc arg, skips anything malformed. The path is the rest of the line (it
 * may hold spaces). Returns 0 or -ENOMEM.
 */
static int sym_proc_parse_line(void *arg, char *line)
{
	struct sym_proc *p = arg;
	struct proc_map m;
	int64_t off;

	if (!proc_maps_line_exec(line) || !proc_maps_parse(line, &m) || !proc_map_exec(&m) ||
	    p->n_maps >= SYM_PROC_MAPS_MAX)
		return 0;
	if (array_grow(&p->maps, &p->cap_maps, p->n_maps + 1, sizeof(*p->maps), 16) < 0)
		return -ENOMEM;
	/* A few paths: up to 4,096 processes are cached, and churn fills
	 * that (a 16 KiB start, as for a symbol table, was 64 MiB). */
	off = sym_strbuf_add(&p->paths, &p->paths_len, &p->paths_cap, 256, UINT32_MAX, m.path,
			     strlen(m.path));
	if (off == -E2BIG)
		return 0;
	if (off < 0)
		return off;
	p->maps[p->n_maps++] = (struct sym_map){
		.start = m.start,
		.end = m.end,
		.pgoff = m.pgoff,
		.dev = m.dev,
		.ino = m.ino,
		.path = off,
	};
	return 0;
}

static int sym_map_cmp(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Returns 0, -ENOENT if the maps cannot be read (or hold no executable
 * mapping: a zombie's are empty), or -ENOMEM. With kept, a process that
 * has exited is read from what s->files kept of it. */
static int sym_proc_read_maps(struct symbolizer *s, struct sym_proc *p, bool kept)
{
	char path[PATH_MAX], line[SYM_MAPS_LINE_MAX];
	int r = ENOENT;

	if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", s->proc_root, p->tgid) <
	    (int)sizeof(path))
		r = text_lines_read(path, line, sizeof(line), sym_proc_parse_line, p);
	if (r == 0 && !p->n_maps)
		r = ENOENT;
	if (r > 0 && kept && s->files)
		r = proc_files_maps(s->files, p->tgid, sym_proc_parse_line, p);
	if (r > 0 || (r == 0 && !p->n_maps))
		return -ENOENT;
	if (r < 0)
		return r;
	if (p->n_maps)
		qsort(p->maps, p->n_maps, sizeof(*p->maps), sym_map_cmp);
	return 0;
}

static struct sym_map *sym_proc_find_map(struct sym_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n_maps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

static void sym_proc_free(struct sym_proc *p)
{
	if (!p)
		return;
	perfmap_free(p->jit);
	free(p->maps);
	free(p->paths);
	free(p);
}

static void sym_lru_unlink(struct symbolizer *s, struct sym_proc *p)
{
	if (p->lru_prev)
		p->lru_prev->lru_next = p->lru_next;
	else
		s->lru_oldest = p->lru_next;
	if (p->lru_next)
		p->lru_next->lru_prev = p->lru_prev;
	else
		s->lru_newest = p->lru_prev;
	p->lru_prev = p->lru_next = NULL;
}

static void sym_lru_push(struct symbolizer *s, struct sym_proc *p)
{
	p->lru_prev = s->lru_newest;
	p->lru_next = NULL;
	if (s->lru_newest)
		s->lru_newest->lru_next = p;
	else
		s->lru_oldest = p;
	s->lru_newest = p;
}

static struct sym_proc **sym_proc_bucket(struct symbolizer *s, uint32_t tgid)
{
	return &s->procs[tgid & (SYM_PROC_BUCKETS - 1)];
}

static void sym_proc_evict_oldest(struct symbolizer *s)
{
	struct sym_proc *p = s->lru_oldest, **pp;

	for (pp = sym_proc_bucket(s, p->tgid); *pp != p; pp = &(*pp)->hash_next)
		;
	*pp = p->hash_next;
	sym_lru_unlink(s, p);
	sym_proc_free(p);
	s->n_procs--;
}

/* Re-reads p's maps. If they cannot be read any more, the process has
 * exited: its last-known maps still name the code its final stacks ran. */
static void sym_proc_refresh(struct symbolizer *s, struct sym_proc *p)
{
	struct sym_proc fresh = { .tgid = p->tgid };

	p->maps_gen = s->refresh_gen;
	fresh.err = sym_proc_read_maps(s, &fresh, p->err != 0);
	if (fresh.err < 0 && !p->err) {
		free(fresh.maps);
		free(fresh.paths);
		p->exited = true;
		return;
	}
	free(p->maps);
	free(p->paths);
	p->err = fresh.err;
	p->exited = false;
	p->maps = fresh.maps;
	p->n_maps = fresh.n_maps;
	p->cap_maps = fresh.cap_maps;
	p->paths = fresh.paths;
	p->paths_len = fresh.paths_len;
	p->paths_cap = fresh.paths_cap;
}

/* Returns the cached process, reading its maps on first use, or NULL when
 * out of memory. */
static struct sym_proc *sym_proc_get(struct symbolizer *s, uint32_t tgid)
{
	struct sym_proc **bucket = sym_proc_bucket(s, tgid), *p;

	for (p = *bucket; p; p = p->hash_next) {
		if (p->tgid == tgid) {
			sym_lru_unlink(s, p);
			sym_lru_push(s, p);
			if (p->maps_gen != s->refresh_gen)
				sym_proc_refresh(s, p);
			return p;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	p->maps_gen = s->refresh_gen;
	p->err = sym_proc_read_maps(s, p, true);
	if (p->err == -ENOMEM) {
		sym_proc_free(p);
		return NULL;
	}
	if (s->n_procs >= SYM_PROCS_MAX)
		sym_proc_evict_oldest(s);
	p->hash_next = *bucket;
	*bucket = p;
	sym_lru_push(s, p);
	s->n_procs++;
	return p;
}

static const char *sym_basename(const char *path)
{
	const char *b = strrchr(path, '/');

	return b && b[1] ? b + 1 : path;
}

/*
 * The frames at vaddr of e, as symbolizer_user() writes them: the ELF
 * symbol (demangled) names the function, DWARF where there is none; DWARF
 * adds the functions inlined at vaddr and source lines. Else module+0xVADDR.
 */
static int sym_elf_name(struct sym_elf *e, const char *path, uint64_t vaddr, char *buf, size_t size)
{
	const struct sym_func *f;
	const char *name = NULL;
	char *d = NULL;
	int err, r = 0;

	f = sym_table_find(&e->syms, vaddr);
	if (f && (!f->size || vaddr - f->addr < f->size)) {
		name = sym_table_name(&e->syms, f);
		d = demangle(name, &err);
		if (d)
			name = d;
	}
	if (e->dbg && debuginfo_frames(e->dbg, vaddr, name, buf, size) > 0)
		goto out;
	if (name)
		frame_format(buf, size, name, false, NULL, 0);
	else {
		snprintf(buf, size, "%s+0x%" PRIx64, sym_basename(path), vaddr);
		r = -ENOENT;
	}
out:
	free(d);
	return r;
}

/* sym_elf_name() through e's cache of named addresses: DWARF lookups and
 * demangling cost microseconds, and stacks share their frames. */
static int sym_elf_name_cached(struct symbolizer *s, struct sym_elf *e, const char *path,
			       uint64_t vaddr, char *buf, size_t size)
{
	char frames[SYM_FRAMES_MAX_BYTES];
	struct sym_frames *slot;
	size_t table_bytes;
	bool created;
	int r;

	if (e->frames && hashtab_count(e->frames) >= SYM_ELF_CACHE_MAX)
		sym_elf_forget_names(s, e); /* start afresh rather than grow without bound */
	if (!e->frames) {
		if (hashtab_new(sizeof(uint64_t), sizeof(struct sym_frames), &e->frames) < 0)
			return sym_elf_name(e, path, vaddr, buf, size);
		sym_names_add(s, e, hashtab_bytes(e->frames));
	}
	slot = hashtab_get(e->frames, &vaddr);
	if (slot && slot->names) {
		snprintf(buf, size, "%s", slot->names);
		return slot->r;
	}
	r = sym_elf_name(e, path, vaddr, frames, sizeof(frames));
	sym_dwarf_bound(s, e);
	snprintf(buf, size, "%s", frames);
	table_bytes = hashtab_bytes(e->frames);
	slot = hashtab_put(e->frames, &vaddr, &created);
	if (slot) {
		size_t added = hashtab_bytes(e->frames) - table_bytes;

		slot->names = strdup(frames); /* NULL: named again next time */
		slot->r = r;
		if (slot->names)
			added += strlen(frames) + 1;
		sym_names_add(s, e, added);
		sym_names_bound(s);
	}
	return r;
}

/* The process's pid in its own pid namespace, which names its perf map;
 * tgid if that cannot be read. */
static uint32_t sym_proc_ns_pid(struct symbolizer *s, uint32_t tgid)
{
	uint32_t pid;

	return pid_ns_innermost(s->proc_root, tgid, &pid) == 0 && pid ? pid : tgid;
}

/* A JIT's name for addr, from the process's /tmp/perf-PID.map (read
 * through its root, so a container's own /tmp), re-read once per refresh
 * if it changed. NULL if none. */
static void sym_proc_jit_refresh(struct symbolizer *s, struct sym_proc *p)
{
	char path[PATH_MAX];

	if (p->jit_gen == s->refresh_gen || (!p->jit && perfmap_new(&p->jit) < 0))
		return;
	p->jit_gen = s->refresh_gen;
	if (snprintf(path, sizeof(path), "%s/%" PRIu32 "/root/tmp/perf-%" PRIu32 ".map",
		     s->proc_root, p->tgid, sym_proc_ns_pid(s, p->tgid)) < (int)sizeof(path))
		perfmap_refresh(p->jit, path);
}

static const char *sym_proc_jit_name(struct symbolizer *s, struct sym_proc *p, uint64_t addr)
{
	sym_proc_jit_refresh(s, p);
	return p->jit ? perfmap_find(p->jit, addr) : NULL;
}

static const char *const unnamed_frames[SYMBOLIZER_UNNAMED_COUNT] = {
	[SYMBOLIZER_UNNAMED_EXITED] = "[unknown: exited]",
	[SYMBOLIZER_UNNAMED_UNMAPPED] = "[unknown: unmapped]",
	[SYMBOLIZER_UNNAMED_ANONYMOUS] = "[unknown: anonymous]",
	[SYMBOLIZER_UNNAMED_FORGOTTEN] = "[unknown: file forgotten]",
};

static int sym_unnamed(struct symbolizer *s, enum symbolizer_unnamed why, char *buf, size_t size)
{
	__atomic_fetch_add(&s->unnamed[why], 1, __ATOMIC_RELAXED);
	snprintf(buf, size, "%s", unnamed_frames[why]);
	return -ENOENT;
}

int symbolizer_user(struct symbolizer *s, uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	struct sym_elf *e;
	struct sym_proc *p;
	struct sym_map *m;
	uint64_t offset, vaddr;
	const char *path;

	p = sym_proc_get(s, tgid);
	if (!p || p->err)
		return sym_unnamed(s, SYMBOLIZER_UNNAMED_EXITED, buf, size);
	m = sym_proc_find_map(p, addr);
	if (!m)
		return sym_unnamed(s, p->exited ? SYMBOLIZER_UNNAMED_EXITED
						: SYMBOLIZER_UNNAMED_UNMAPPED,
				   buf, size);
	path = p->paths + m->path;
	/* Anonymous code may be a JIT's, named in its perf map. Else "[vdso]",
	 * "[anon:name]" are shown as they are; no path, "//anon",
	 * "anon_inode:..." name nothing useful. */
	if (path[0] != '/' || path[1] == '/') {
		const char *jit = path[0] != '[' || !strncmp(path, "[anon", 5)
					  ? sym_proc_jit_name(s, p, addr)
					  : NULL;

		if (jit) {
			frame_format(buf, size, jit, false, NULL, 0);
			return 0;
		}
		if (path[0] != '[')
			return sym_unnamed(s, SYMBOLIZER_UNNAMED_ANONYMOUS, buf, size);
		snprintf(buf, size, "%s", path);
		return -ENOENT;
	}
	offset = addr - m->start + m->pgoff;
	e = sym_map_elf(s, tgid, m, path);
	if (!e || !sym_elf_vaddr(e, offset, &vaddr)) {
		snprintf(buf, size, "%s+0x%" PRIx64, sym_basename(path), offset);
		return -ENOENT;
	}
	return sym_elf_name_cached(s, e, path, vaddr, buf, size);
}

/* Opens the file of f for reading where the unwinder found it: the
 * descriptor proc_files holds, else its path in its process's root, else
 * its path here, the inode checked. Returns an fd or -errno. */
static int sym_file_open(struct symbolizer *s, const struct file_id_info *f, struct stat *st)
{
	char buf[PATH_MAX];
	int fd = -ENOENT;

	if (s->files && f->ino) {
		fd = proc_files_open(s->files, f->dev, f->ino);
		if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))) {
			close(fd);
			fd = -ENOENT;
		}
	}
	if (fd < 0 && f->tgid &&
	    snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/root%s", s->proc_root, f->tgid, f->path) <
		    (int)sizeof(buf))
		fd = sym_open_regular(buf, f->ino, st);
	if (fd < 0)
		fd = sym_open_regular(f->path, f->ino, st);
	return fd;
}

/* Fills slot for the file of id, whose serial in s->file_ids is serial. */
static void sym_file_fill(struct symbolizer *s, struct sym_file *slot, uint32_t id,
			  uint64_t serial)
{
	struct file_id_info info;
	struct sym_elf_key key = { 0 };
	struct sym_elf *e;
	struct stat st;
	int fd;

	memset(slot, 0, sizeof(*slot));
	slot->serial = serial;
	slot->elf_state = SYM_MAP_ELF_NONE;
	if (file_ids_get(s->file_ids, id, &info) < 0 || info.serial != serial) {
		slot->serial = 0; /* forgotten meanwhile */
		return;
	}
	snprintf(slot->name, sizeof(slot->name), "%.255s", sym_basename(info.path));
	if (info.build_id_len) {
		memcpy(key.build_id, info.build_id, info.build_id_len);
		key.build_id_len = info.build_id_len;
	} else {
		key.dev = info.dev;
		key.ino = info.ino;
	}
	e = sym_elf_find(s, &key);
	if (!e) {
		fd = sym_file_open(s, &info, &st);
		e = fd >= 0 ? sym_elf_from_fd(s, fd, &st, info.path) : NULL;
	}
	if (!e)
		return;
	slot->elf = e;
	slot->elf_serial = e->serial;
	slot->elf_state = SYM_MAP_ELF_OK;
}

int symbolizer_user_file(struct symbolizer *s, uint32_t id, uint64_t vaddr, char *buf, size_t size)
{
	uint64_t serial = s->file_ids ? file_ids_serial(s->file_ids, id) : 0;
	struct sym_file *slot;
	bool created;

	if (!serial)
		return sym_unnamed(s, SYMBOLIZER_UNNAMED_FORGOTTEN, buf, size);
	if (s->file_frames && hashtab_count(s->file_frames) >= SYM_FILES_MAX) {
		hashtab_free(s->file_frames); /* start afresh rather than grow without bound */
		s->file_frames = NULL;
	}
	if (!s->file_frames && hashtab_new(sizeof(id), sizeof(*slot), &s->file_frames) < 0)
		s->file_frames = NULL;
	slot = s->file_frames ? hashtab_put(s->file_frames, &id, &created) : NULL;
	if (!slot) {
		snprintf(buf, size, "[out of memory]");
		return -ENOENT;
	}
	/* New, now another file's id, or its ELF slot given to another file. */
	if (slot->serial != serial ||
	    (slot->elf_state == SYM_MAP_ELF_OK && slot->elf->serial != slot->elf_serial))
		sym_file_fill(s, slot, id, serial);
	if (!slot->serial)
		return sym_unnamed(s, SYMBOLIZER_UNNAMED_FORGOTTEN, buf, size);
	if (slot->elf_state != SYM_MAP_ELF_OK) {
		snprintf(buf, size, "%s+0x%" PRIx64, slot->name, vaddr);
		return -ENOENT;
	}
	slot->elf->last_used = ++s->elf_clock;
	return sym_elf_name_cached(s, slot->elf, slot->name, vaddr, buf, size);
}

void symbolizer_use_file_ids(struct symbolizer *s, struct file_ids *ids)
{
	s->file_ids = ids;
}

void symbolizer_refresh_processes(struct symbolizer *s)
{
	s->refresh_gen++;
}

void symbolizer_prime(struct symbolizer *s, uint32_t tgid)
{
	struct sym_proc *p = sym_proc_get(s, tgid);

	if (!p || p->err)
		return;
	sym_proc_jit_refresh(s, p);
	/* The files' symbols too, while the process lives: a file deleted
	 * since (or hidden from the daemon) is only reachable through it. */
	for (size_t i = 0; i < p->n_maps; i++) {
		const char *path = p->paths + p->maps[i].path;

		if (path[0] == '/' && path[1] != '/')
			sym_map_elf(s, tgid, &p->maps[i], path);
	}
}

void symbolizer_unnamed(struct symbolizer *s, uint64_t ret[SYMBOLIZER_UNNAMED_COUNT])
{
	for (unsigned i = 0; i < SYMBOLIZER_UNNAMED_COUNT; i++)
		ret[i] = __atomic_load_n(&s->unnamed[i], __ATOMIC_RELAXED);
}

void symbolizer_use_proc_files(struct symbolizer *s, struct proc_files *files)
{
	s->files = files;
}

int symbolizer_new(const char *proc_root, const char *debug_root, struct symbolizer **ret)
{
	struct symbolizer *s;

	assert(proc_root && debug_root && ret);
	/* If libelf refused this version, elf_begin() fails later and frames
	 * come out as module+offset, as for any unreadable file. */
	elf_version(EV_CURRENT);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->proc_root = strdup(proc_root);
	s->debug_root = strdup(debug_root);
	s->elfs = calloc(SYM_ELFS_MAX, sizeof(*s->elfs));
	if (!s->proc_root || !s->debug_root || !s->elfs) {
		symbolizer_free(s);
		return -ENOMEM;
	}
	s->refresh_gen = 1; /* a new process's jit_gen (0) is not current */
	*ret = s;
	return 0;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	while (s->lru_oldest)
		sym_proc_evict_oldest(s);
	if (s->elfs)
		for (size_t i = 0; i < SYM_ELFS_MAX; i++)
			sym_elf_clear(&s->elfs[i]);
	free(s->elfs);
	sym_table_free(&s->kernel);
	hashtab_free(s->file_frames);
	free(s->proc_root);
	free(s->debug_root);
	free(s);
}
