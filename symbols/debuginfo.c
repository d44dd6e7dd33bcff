/*
 * debuginfo: see debuginfo.h.
 *
 * One Dwfl session per file, holding that one module placed at its link-time
 * addresses, so module addresses are ELF virtual addresses plus the bias
 * libdwfl reports. libdwfl finds separate debug files by build-id
 * (dwfl_build_id_find_debuginfo) and, for files without one, by
 * .gnu_debuglink (dwfl_standard_find_debuginfo, CRC-checked); only the
 * search path is ours, and the debuglink search of a file with a build-id
 * (debuginfo_find_by_link). Never through debuginfod: see
 * debuginfo_find_local.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "debuginfo.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "demangle.h"
#include "frame.h"

#define DEBUGINFO_NAME_MAX   512
#define DEBUGINFO_PATH_PREFIX "+:.debug:" /* then debug_root */
#define DEBUGINFO_FRAMES_MAX 32 /* functions inlined into one another at one address */
/* What libdw keeps of a line table's row (its Dwarf_Line and the sorted
 * array's share), for debuginfo_bytes(). */
#define DEBUGINFO_LINE_BYTES 48

/* One address range of a function's code. */
struct debuginfo_range {
	Dwarf_Addr low, high; /* [low, high), CU addresses */
	Dwarf_Die func;	      /* its subprogram DIE */
	size_t order;	      /* the DIE's place in the CU's tree */
};

/* A compilation unit's functions by address, built at its first lookup:
 * a lookup is then a binary search and a descent through one function's
 * inlined instances, not a walk of the CU's tree from its root (which
 * dwarf_getscopes() does at every address, and which was most of naming
 * a new address). */
struct debuginfo_cu {
	Dwarf_Off offset; /* the CU DIE's */
	struct debuginfo_range *ranges;
	size_t n_ranges, cap_ranges;
	bool lines_counted; /* its line table is in bytes */
};

struct debuginfo {
	Dwfl_Callbacks callbacks; /* referenced by dwfl: lives as long */
	char *search_path;	  /* "+:.debug:DEBUG_ROOT": CRC-checked debuglinks */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;	 /* module address - ELF vaddr */
	struct debuginfo_cu *cus; /* sorted by offset */
	size_t n_cus;
	bool sections_counted; /* the debug sections are in bytes */
	size_t bytes;		/* debuginfo_bytes() but the index's array */
};

/* The executable and its DWARF are opened by us and by the standard
 * debuginfo search; finding the main ELF by name is never needed. */
static int debuginfo_no_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
				 Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)name, (void)base, (void)file_name, (void)elfp;
	return -1;
}

/* The CRC-32 of .gnu_debuglink (zlib's) of the whole file fd; false if it
 * cannot be read. */
static bool debuginfo_file_crc(int fd, uint32_t *ret)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	*ret = (uint32_t)crc;
	return n == 0;
}

/* debuglink_file (whose CRC is crc) next to file_name, in its .debug
 * directory, then under debug_root and file_name's directory, as libdwfl
 * searches "+:.debug:DEBUG_ROOT". Returns an fd and sets
 * *debuginfo_file_name, or -1. */
static int debuginfo_find_by_link(const char *debug_root, const char *file_name,
				  const char *debuglink_file, GElf_Word crc,
				  char **debuginfo_file_name)
{
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	int dir_len = slash ? (int)(slash - file_name) : 0;
	char path[PATH_MAX];

	if (!debuglink_file || !slash)
		return -1;
	for (int i = 0; i < 3; i++) {
		uint32_t found;
		int fd, n;

		if (i == 0)
			n = snprintf(path, sizeof(path), "%.*s/%s", dir_len, file_name,
				     debuglink_file);
		else if (i == 1)
			n = snprintf(path, sizeof(path), "%.*s/.debug/%s", dir_len, file_name,
				     debuglink_file);
		else
			n = snprintf(path, sizeof(path), "%s%.*s/%s", debug_root, dir_len,
				     file_name, debuglink_file);
		if (n < 0 || n >= (int)sizeof(path) || !strcmp(path, file_name))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (debuginfo_file_crc(fd, &found) && found == crc && lseek(fd, 0, SEEK_SET) == 0 &&
		    (*debuginfo_file_name = strdup(path)))
			return fd;
		close(fd);
	}
	return -1;
}

/* Separate debug files, on this host only. dwfl_standard_find_debuginfo
 * asks debuginfod for a file with a build-id that has none here: that
 * makes a debuginfod client per Dwfl (a curl handle holding a Unix socket
 * pair while the Dwfl lives: the pairs offcpud held under process churn,
 * issue 16) and, with DEBUGINFOD_URLS set, fetches from the network in
 * the middle of a drain. */
static int debuginfo_find_local(Dwfl_Module *mod, void **userdata, const char *modname,
				Dwarf_Addr base, const char *file_name, const char *debuglink_file,
				GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct debuginfo *d = *userdata; /* set by debuginfo_open */
	const unsigned char *bits;
	GElf_Addr vaddr;
	int fd;

	/* Without a build-id the standard search never reaches debuginfod. */
	if (dwfl_module_build_id(mod, &bits, &vaddr) <= 0)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd >= 0)
		return fd;
	if (!d)
		return -1;
	return debuginfo_find_by_link(d->search_path + strlen(DEBUGINFO_PATH_PREFIX), file_name,
				      debuglink_file, debuglink_crc, debuginfo_file_name);
}

int debuginfo_open(int fd, const char *path, const char *debug_root, struct debuginfo **ret)
{
	struct debuginfo *d = calloc(1, sizeof(*d));
	void **userdata;
	GElf_Addr bias;

	if (!d || asprintf(&d->search_path, DEBUGINFO_PATH_PREFIX "%s", debug_root) < 0) {
		free(d);
		close(fd);
		return -ENOMEM;
	}
	d->callbacks = (Dwfl_Callbacks){
		.find_elf = debuginfo_no_find_elf,
		.find_debuginfo = debuginfo_find_local,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &d->search_path,
	};
	d->dwfl = dwfl_begin(&d->callbacks);
	if (!d->dwfl) {
		close(fd);
		debuginfo_free(d);
		return -ENOMEM;
	}
	/* Consumes fd on success only. */
	d->mod = dwfl_report_elf(d->dwfl, path, path, fd, 0, true);
	if (!d->mod) {
		close(fd);
		debuginfo_free(d);
		return -ENOEXEC;
	}
	dwfl_report_end(d->dwfl, NULL, NULL);
	/* debuginfo_find_local's: the debug_root of this session */
	if (dwfl_module_info(d->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		*userdata = d;
	if (!dwfl_module_getelf(d->mod, &bias)) {
		debuginfo_free(d);
		return -ENOEXEC;
	}
	d->bias = bias;
	*ret = d;
	return 0;
}

void debuginfo_free(struct debuginfo *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_cus; i++)
		free(d->cus[i].ranges);
	free(d->cus);
	dwfl_end(d->dwfl);
	free(d->search_path);
	free(d);
}

/* A function DIE's name: its linkage name demangled if it is a C++ one
 * (with its scope and parameters, as ELF symbols are shown), else its
 * DW_AT_name (a C linkage name may be an internal alias such as glibc's
 * "__GI___libc_read"); both may come from the abstract origin of an inlined
 * or out-of-line instance. */
static const char *debuginfo_die_name(Dwarf_Die *die, char *buf, size_t size)
{
	Dwarf_Attribute attr;
	const char *name = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (name && demangle_is_mangled(name)) {
		int err;
		char *d = demangle(name, &err);

		if (d) {
			snprintf(buf, size, "%s", d);
			free(d);
			return buf;
		}
	}
	if (dwarf_attr_integrate(die, DW_AT_name, &attr) && dwarf_formstring(&attr))
		return dwarf_formstring(&attr);
	return name;
}

/* True if inlined is an instance of the same function as the one it stands
 * in (both name the same abstract origin): GCC emits that for glibc's
 * aliased functions (read inlines __libc_read), and a frame for it would
 * only repeat its caller. */
static bool debuginfo_same_function(Dwarf_Die *inlined, Dwarf_Die *caller)
{
	Dwarf_Attribute a, b;
	Dwarf_Die da, db;

	if (!dwarf_attr(inlined, DW_AT_abstract_origin, &a) || !dwarf_formref_die(&a, &da))
		return false;
	if (dwarf_attr(caller, DW_AT_abstract_origin, &b) && dwarf_formref_die(&b, &db))
		return dwarf_dieoffset(&da) == dwarf_dieoffset(&db);
	return dwarf_dieoffset(&da) == dwarf_dieoffset(caller);
}

static const char *debuginfo_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* The call site of an inlined instance: where, in the function it was
 * inlined into, the call stands. */
static const char *debuginfo_call_site(Dwarf_Die *cu, Dwarf_Die *inlined, unsigned *ret_line)
{
	Dwarf_Attribute attr;
	Dwarf_Word file = 0, line = 0;
	Dwarf_Files *files;
	size_t n_files;

	*ret_line = 0;
	if (!dwarf_attr(inlined, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &file) ||
	    !dwarf_attr(inlined, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line))
		return NULL;
	if (dwarf_getsrcfiles(cu, &files, &n_files) || file >= n_files)
		return NULL;
	*ret_line = line;
	return dwarf_filesrc(files, file, NULL, NULL);
}

/* Appends frame to buf at *len (';'-joined) if it fits. */
static void debuginfo_append(char *buf, size_t size, size_t *len, const char *frame)
{
	size_t n = strlen(frame), sep = *len ? 1 : 0;

	if (*len + sep + n + 1 > size)
		return;
	if (sep)
		buf[(*len)++] = ';';
	memcpy(buf + *len, frame, n + 1);
	*len += n;
}

static bool debuginfo_is_function(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The function an inlined instance stands in: its nearest enclosing
 * function DIE in the tree (dwarf_getscopes() would continue from the
 * abstract origin's scopes instead). Returns 0 or -ENOENT. */
static int debuginfo_caller(Dwarf_Die *inlined, Dwarf_Die *ret)
{
	Dwarf_Die *up = NULL;
	int n = dwarf_getscopes_die(inlined, &up), r = -ENOENT;

	for (int j = 1; j < n; j++) {
		if (debuginfo_is_function(&up[j])) {
			*ret = up[j];
			r = 0;
			break;
		}
	}
	free(up);
	return r;
}

/* Tags whose children may hold functions but which hold no code of their
 * own (C++ member functions and namespace-scope ones can be defined there). */
static bool debuginfo_is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

static int debuginfo_range_add(struct debuginfo_cu *c, Dwarf_Addr low, Dwarf_Addr high,
			       Dwarf_Die *func)
{
	if (c->n_ranges == c->cap_ranges) {
		size_t cap = c->cap_ranges ? c->cap_ranges * 2 : 64;
		void *p = reallocarray(c->ranges, cap, sizeof(*c->ranges));

		if (!p)
			return -ENOMEM;
		c->ranges = p;
		c->cap_ranges = cap;
	}
	c->ranges[c->n_ranges] = (struct debuginfo_range){ low, high, *func, c->n_ranges };
	c->n_ranges++;
	return 0;
}

/* Adds the code ranges of the functions among parent's children (and in
 * the containers among them) to c. */
static int debuginfo_index_children(struct debuginfo_cu *c, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int r;

	if (depth > 8 || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, low, high;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &low, &high)) > 0)
				if (low < high && (r = debuginfo_range_add(c, low, high, &child)) < 0)
					return r;
		} else if (debuginfo_is_container(tag) &&
			   (r = debuginfo_index_children(c, &child, depth + 1)) < 0) {
			return r;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int debuginfo_range_cmp(const void *a, const void *b)
{
	const struct debuginfo_range *x = a, *y = b;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* cu's index, built if need be; NULL if it cannot be. */
static struct debuginfo_cu *debuginfo_cu_index(struct debuginfo *d, Dwarf_Die *cu)
{
	Dwarf_Off offset = dwarf_dieoffset(cu);
	size_t lo = 0, hi = d->n_cus;
	struct debuginfo_cu c = { .offset = offset };
	void *p;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->cus[mid].offset == offset)
			return &d->cus[mid];
		if (d->cus[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	p = reallocarray(d->cus, d->n_cus + 1, sizeof(*d->cus));
	if (!p)
		return NULL;
	d->cus = p;
	if (debuginfo_index_children(&c, cu, 0) < 0) {
		free(c.ranges);
		return NULL;
	}
	if (c.n_ranges) /* (qsort() takes no NULL) */
		qsort(c.ranges, c.n_ranges, sizeof(*c.ranges), debuginfo_range_cmp);
	memmove(&d->cus[lo + 1], &d->cus[lo], (d->n_cus - lo) * sizeof(*d->cus));
	d->cus[lo] = c;
	d->n_cus++;
	d->bytes += c.cap_ranges * sizeof(*c.ranges);
	return &d->cus[lo];
}

/* The bytes of the debug sections of the ELF that DWARF came from, as libdw
 * holds them (a compressed one decompressed). */
static size_t debuginfo_sections_bytes(Dwarf *dw)
{
	Elf *elf = dw ? dwarf_getelf(dw) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx, bytes = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Chdr ch;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strncmp(name, ".debug", 6) && strncmp(name, ".zdebug", 7)))
			continue;
		bytes += (sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch) ? ch.ch_size
										  : sh.sh_size;
	}
	return bytes;
}

/* Counts what naming an address in cu (index: its entry, or NULL) had libdw
 * read: the debug sections once, the CU's line table once. */
static void debuginfo_count(struct debuginfo *d, Dwarf_Die *cu, struct debuginfo_cu *index)
{
	Dwarf_Lines *lines;
	Dwarf_Addr bias;
	size_t n;

	if (!d->sections_counted) {
		d->sections_counted = true;
		d->bytes += debuginfo_sections_bytes(dwfl_module_getdwarf(d->mod, &bias));
	}
	if (index && !index->lines_counted) {
		index->lines_counted = true;
		if (dwarf_getsrclines(cu, &lines, &n) == 0) /* read already: getsrc did */
			d->bytes += n * DEBUGINFO_LINE_BYTES;
	}
}

size_t debuginfo_bytes(const struct debuginfo *d)
{
	return d->bytes + d->n_cus * sizeof(*d->cus);
}

/* The subprogram of c whose code holds pc (a CU address); false if none. */
static bool debuginfo_cu_function(const struct debuginfo_cu *c, Dwarf_Addr pc, Dwarf_Die *ret)
{
	const struct debuginfo_range *best = NULL;
	size_t lo = 0, hi = c->n_ranges;

	while (lo < hi) { /* the first range starting after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (c->ranges[mid].low <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Functions' ranges overlap where an assembly file's CU has one
	 * subprogram per alias of a symbol (glibc's __finitel and
	 * __GI___finitel): the first in the tree holds pc, as for
	 * dwarf_getscopes(). */
	for (size_t i = lo, seen = 0; i-- > 0 && seen < 8; seen++) {
		const struct debuginfo_range *r = &c->ranges[i];

		if (pc < r->high && (!best || r->order < best->order))
			best = r;
	}
	if (best)
		*ret = best->func;
	return best != NULL;
}

/* Scopes within a function that are not functions (dwarf_getscopes()'s). */
static bool debuginfo_is_block(int tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
	       tag == DW_TAG_with_stmt;
}

/*
 * The functions at pc within func, outermost first: func, then the
 * instance inlined in it whose code holds pc, and so on (through lexical
 * and try blocks, which are scopes but not frames). Returns how many were written
 * to path (at most max).
 */
static int debuginfo_inlined_path(Dwarf_Die *func, Dwarf_Addr pc, Dwarf_Die *path, int max)
{
	Dwarf_Die scope = *func, child;
	int n = 0;

	path[n++] = *func;
	while (n < max && dwarf_child(&scope, &child) == 0) {
		bool found = false;

		do {
			int tag = dwarf_tag(&child);

			if ((tag == DW_TAG_inlined_subroutine || debuginfo_is_block(tag)) &&
			    dwarf_haspc(&child, pc) > 0) {
				found = true;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
		if (dwarf_tag(&child) == DW_TAG_inlined_subroutine)
			path[n++] = child;
		scope = child;
	}
	return n;
}

/* The functions at pc in cu, outermost first (the subprogram, then each
 * instance inlined in the one before), by dwarf_getscopes(): for a CU the
 * index does not cover. Returns how many were written to chain. */
static int debuginfo_scopes_chain(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain, int max)
{
	Dwarf_Die *scopes = NULL, inner[DEBUGINFO_FRAMES_MAX];
	int n_scopes = dwarf_getscopes(cu, pc, &scopes), i, n = 0;

	for (i = 0; i < n_scopes && !debuginfo_is_function(&scopes[i]); i++)
		;
	if (i < n_scopes)
		inner[n++] = scopes[i]; /* the innermost function */
	free(scopes);
	while (n > 0 && n < max && n < DEBUGINFO_FRAMES_MAX &&
	       dwarf_tag(&inner[n - 1]) == DW_TAG_inlined_subroutine &&
	       debuginfo_caller(&inner[n - 1], &inner[n]) == 0)
		n++;
	for (i = 0; i < n; i++)
		chain[i] = inner[n - 1 - i];
	return n;
}

int debuginfo_frames(struct debuginfo *d, uint64_t vaddr, const char *outer_name, char *buf,
		     size_t size)
{
	struct {
		const char *name;
		const char *file;
		unsigned line;
		bool inlined;
	} frames[DEBUGINFO_FRAMES_MAX];
	char names[DEBUGINFO_FRAMES_MAX][DEBUGINFO_NAME_MAX];
	Dwarf_Addr addr = vaddr + d->bias, cu_bias;
	Dwarf_Die *cu, chain[DEBUGINFO_FRAMES_MAX], func;
	struct debuginfo_cu *index;
	const char *file = NULL;
	unsigned line = 0;
	Dwfl_Line *src;
	int depth, n = 0;
	size_t len = 0;

	cu = dwfl_module_addrdie(d->mod, addr, &cu_bias);
	if (!cu)
		return 0;
	index = debuginfo_cu_index(d, cu);
	if (index && debuginfo_cu_function(index, addr - cu_bias, &func))
		depth = debuginfo_inlined_path(&func, addr - cu_bias, chain, DEBUGINFO_FRAMES_MAX);
	else
		depth = debuginfo_scopes_chain(cu, addr - cu_bias, chain, DEBUGINFO_FRAMES_MAX);
	if (!depth)
		return 0;
	src = dwfl_module_getsrc(d->mod, addr);
	debuginfo_count(d, cu, index);
	if (src) {
		int l = 0;

		file = dwfl_lineinfo(src, NULL, &l, NULL, NULL, NULL);
		line = l > 0 ? l : 0;
	}
	/* Innermost to outermost, each frame with its line: the innermost at
	 * addr, each outer one at the call site of the instance inlined in it. */
	for (int k = depth - 1; k >= 0 && n < DEBUGINFO_FRAMES_MAX; k--) {
		Dwarf_Die *cur = &chain[k];
		bool inlined = dwarf_tag(cur) == DW_TAG_inlined_subroutine;
		const char *name = !inlined && outer_name
					   ? outer_name
					   : debuginfo_die_name(cur, names[n], sizeof(names[n]));

		frames[n].name = name ? name : "[unknown]";
		frames[n].file = debuginfo_basename(file);
		frames[n].line = line;
		frames[n].inlined = inlined;
		n++;
		if (!inlined || k == 0)
			break;
		file = debuginfo_call_site(cu, cur, &line);
		/* The caller takes the innermost frame's place, keeping its line. */
		if (debuginfo_same_function(cur, &chain[k - 1])) {
			n--;
			file = frames[n].file;
			line = frames[n].line;
		}
	}
	for (int k = n; k-- > 0;) {
		char frame[DEBUGINFO_NAME_MAX + 64];

		frame_format(frame, sizeof(frame), frames[k].name, frames[k].inlined,
			     frames[k].file, frames[k].line);
		debuginfo_append(buf, size, &len, frame);
	}
	return len ? n : 0;
}
