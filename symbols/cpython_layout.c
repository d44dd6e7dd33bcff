/*
 * cpython_layout: see cpython_layout.h.
 *
 * The version comes from the file's own bytes where it has them (3.13's
 * _Py_DebugOffsets, 3.11's Py_Version) and from its name only where it has
 * not (3.10). Every layout handed out has its frame fields within what the
 * BPF walk reads of a frame, so a hostile file can at worst make the walk
 * read the wrong bytes of memory it may read anyway.
 */
#include "cpython_layout.h"

#include "elf_symtab.h"

#include <endian.h>
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CPY_PHDRS_MAX 4096 /* program headers looked at; real files have about a dozen */
#define CPY_COOKIE    "xdebugpy"
#define CPY_NAME      "python3."

/* PY_VERSION_HEX: 0xMMmmuuLS, L the release level (A, B, C, F), S its serial. */
#define CPY_HEX_MAJOR(h)  ((unsigned)((h) >> 24) & 0xff)
#define CPY_HEX_MINOR(h)  ((unsigned)((h) >> 16) & 0xff)
#define CPY_HEX_MICRO(h)  ((unsigned)((h) >> 8) & 0xff)
#define CPY_HEX_LEVEL(h)  ((unsigned)((h) >> 4) & 0xf)
#define CPY_HEX_SERIAL(h) ((unsigned)(h)&0xf)
#define CPY_LEVEL_ALPHA	  0xa
#define CPY_LEVEL_BETA	  0xb
#define CPY_LEVEL_RC	  0xc
#define CPY_LEVEL_FINAL	  0xf

#define CPY_MINOR_DEBUG_OFFSETS 13 /* the first with _Py_DebugOffsets */

/* Widths of the frame fields the walk reads, for the bound on a frame read. */
#define CPY_PTR_BYTES	8
#define CPY_ULONG_BYTES 8 /* native_thread_id, on LP64 */
#define CPY_OWNER_BYTES 1 /* 3.11's bool is_entry, 3.12's char owner */

/*
 * The start of CPython 3.13's _Py_DebugOffsets (Include/internal/
 * pycore_runtime.h, v3.13.0), through the code object's table: the rest is
 * not read. Each table is a sizeof() followed by offsetof()s. The struct is
 * only stable within a minor version, so it is read for 3.13 alone.
 */
struct cpy_debug_offsets_313 {
	char cookie[8];
	uint64_t version; /* PY_VERSION_HEX */
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
};

_Static_assert(sizeof(struct cpy_debug_offsets_313) == 352, "3.13's _Py_DebugOffsets start");

/* The header that every _Py_DebugOffsets since 3.13 begins with. */
#define CPY_DEBUG_HEADER_BYTES offsetof(struct cpy_debug_offsets_313, runtime_state)

/* The byte offsets of 3.10 to 3.12, read from each one's DWARF
 * (tests/unit/test-cpython_layout.c checks them against it). */
static const struct offcpu_python_layout cpy_table[] = {
	{
		/* _PyRuntimeState.interpreters.main; PyInterpreterState.tstate_head */
		.runtime_interp = 40,
		.interp_threads = 8,
		.tstate_next = 8,
		.tstate_id = 176,   /* thread_id: pthread_self() */
		.tstate_frame = 24, /* PyFrameObject *frame: no _PyCFrame yet */
		.cframe_frame = OFFCPU_PYTHON_NO_FIELD,
		.frame_code = 32,     /* f_code */
		.frame_previous = 24, /* f_back */
		.frame_instr = 96,    /* int f_lasti */
		.frame_owner = OFFCPU_PYTHON_NO_FIELD,
		.code_instrs = OFFCPU_PYTHON_NO_FIELD,
		.minor = 10,
		.flags = OFFCPU_PYTHON_ID_PTHREAD | OFFCPU_PYTHON_INSTR_INDEX,
	},
	{
		/* interpreters.main; PyInterpreterState.threads.head */
		.runtime_interp = 48,
		.interp_threads = 16,
		.tstate_next = 8,
		.tstate_id = 160,   /* native_thread_id */
		.tstate_frame = 56, /* _PyCFrame *cframe */
		.cframe_frame = 8,  /* current_frame */
		.frame_code = 32,   /* f_code */
		.frame_previous = 48,
		.frame_instr = 56,  /* prev_instr */
		.frame_owner = 68,  /* is_entry */
		.code_instrs = 184, /* co_code_adaptive */
		.minor = 11,
		.flags = OFFCPU_PYTHON_ENTRY_FLAG,
	},
	{
		/* interpreters.main; threads.head */
		.runtime_interp = 48,
		.interp_threads = 72,
		.tstate_next = 8,
		.tstate_id = 144,   /* native_thread_id */
		.tstate_frame = 56, /* cframe */
		.cframe_frame = 0,  /* current_frame */
		.frame_code = 0,    /* f_code */
		.frame_previous = 8,
		.frame_instr = 56, /* prev_instr */
		.frame_owner = 70, /* owner */
		.code_instrs = 192,
		.minor = 12,
		.flags = OFFCPU_PYTHON_ENTRY_SHIM,
	},
};

static const char *const cpy_status_names[] = {
	[CPYTHON_NONE] = "none",
	[CPYTHON_KNOWN] = "known",
	[CPYTHON_UNKNOWN_VERSION] = "unknown version",
	[CPYTHON_FREE_THREADED] = "free-threaded",
};

const char *cpython_status_name(enum cpython_status s)
{
	if ((unsigned)s >= sizeof(cpy_status_names) / sizeof(cpy_status_names[0]))
		return "?";
	return cpy_status_names[s];
}

bool cpython_layout_for_minor(unsigned minor, struct offcpu_python_layout *ret)
{
	for (size_t i = 0; i < sizeof(cpy_table) / sizeof(cpy_table[0]); i++)
		if (cpy_table[i].minor == minor) {
			*ret = cpy_table[i];
			return true;
		}
	return false;
}

/* What the file's symbol tables say. */
struct cpy_syms {
	GElf_Sym runtime, version;
	bool has_runtime, has_version;
};

static int cpy_sym_visit(void *arg, const GElf_Sym *sym, const char *name)
{
	struct cpy_syms *s = arg;

	if (GELF_ST_TYPE(sym->st_info) != STT_OBJECT)
		return 0;
	if (!s->has_runtime && !strcmp(name, "_PyRuntime")) {
		s->runtime = *sym;
		s->has_runtime = true;
	} else if (!s->has_version && !strcmp(name, "Py_Version")) {
		s->version = *sym;
		s->has_version = true;
	}
	return s->has_runtime && s->has_version;
}

/* Fills s from .dynsym, then from .symtab for what .dynsym lacks (a
 * static python exports _PyRuntime; an unstripped one has it in both). */
static void cpy_find_symbols(Elf *elf, uint64_t file_size, struct cpy_syms *s)
{
	const Elf64_Word types[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh))
				break;
			if (sh.sh_type != types[t])
				continue;
			/* A table that cannot be read is as good as none. */
			elf_symtab_defined(elf, scn, file_size, cpy_sym_visit, s);
			break;
		}
		if (s->has_runtime && s->has_version)
			return;
	}
}

/*
 * Reads size bytes at virtual address vaddr from the file: from the
 * PT_LOAD segment whose bytes in the file hold them all, as the loader maps
 * them. Returns 0, or -ENODATA if no segment has them in the file.
 */
static int cpy_read_vaddr(int fd, Elf *elf, uint64_t file_size, uint64_t vaddr, void *buf,
			  size_t size)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) < 0)
		return -ENODATA;
	if (phnum > CPY_PHDRS_MAX)
		phnum = CPY_PHDRS_MAX;
	for (size_t i = 0; i < phnum; i++) {
		uint64_t in_segment;
		GElf_Phdr ph;
		ssize_t n;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || vaddr < ph.p_vaddr)
			continue;
		in_segment = vaddr - ph.p_vaddr;
		if (in_segment > ph.p_filesz || size > ph.p_filesz - in_segment ||
		    !elf_in_file(ph.p_offset, ph.p_filesz, file_size))
			continue;
		n = pread(fd, buf, size, ph.p_offset + in_segment);
		return n == (ssize_t)size ? 0 : -ENODATA;
	}
	return -ENODATA;
}

/* Whether hex is a PY_VERSION_HEX of a CPython 3 release. */
static bool cpy_hex_valid(uint64_t hex)
{
	unsigned level = CPY_HEX_LEVEL(hex);

	return hex <= UINT32_MAX && CPY_HEX_MAJOR(hex) == 3 &&
	       (level == CPY_LEVEL_ALPHA || level == CPY_LEVEL_BETA || level == CPY_LEVEL_RC ||
		(level == CPY_LEVEL_FINAL && !CPY_HEX_SERIAL(hex)));
}

/* "3.13.0", "3.14.0b2", "3.12.0rc1": as sys.version prints it. */
static void cpy_version_of_hex(char version[CPYTHON_VERSION_LEN], uint64_t hex)
{
	unsigned level = CPY_HEX_LEVEL(hex);
	const char *tag = "";

	if (level == CPY_LEVEL_ALPHA)
		tag = "a";
	else if (level == CPY_LEVEL_BETA)
		tag = "b";
	else if (level == CPY_LEVEL_RC)
		tag = "rc";
	if (*tag)
		snprintf(version, CPYTHON_VERSION_LEN, "%u.%u.%u%s%u", CPY_HEX_MAJOR(hex),
			 CPY_HEX_MINOR(hex), CPY_HEX_MICRO(hex), tag, CPY_HEX_SERIAL(hex));
	else
		snprintf(version, CPYTHON_VERSION_LEN, "%u.%u.%u", CPY_HEX_MAJOR(hex),
			 CPY_HEX_MINOR(hex), CPY_HEX_MICRO(hex));
}

/*
 * The minor version that the file name's "python3.N" gives
 * ("libpython3.10.so.1.0", "python3.13t"), and whether the ABI tag 't'
 * (free-threaded) follows it. Returns false if the name has none.
 */
static bool cpy_name_version(const char *path, unsigned *ret_minor, bool *ret_free_threaded)
{
	const char *base, *p;
	unsigned minor = 0;
	size_t digits = 0;

	if (!path)
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	p = strstr(base, CPY_NAME);
	if (!p)
		return false;
	for (p += strlen(CPY_NAME); *p >= '0' && *p <= '9'; p++, digits++)
		if (digits < 3)
			minor = minor * 10 + (unsigned)(*p - '0');
	if (!digits || digits > 3)
		return false;
	*ret_minor = minor;
	*ret_free_threaded = *p == 't';
	return true;
}

/* An offset of a layout: within its struct of struct_size bytes with its
 * width_bytes, and one a __u16 holds apart from NO_FIELD. */
static bool cpy_field(uint64_t offset, unsigned width_bytes, uint64_t struct_size, __u16 *ret)
{
	if (offset >= OFFCPU_PYTHON_NO_FIELD || offset + width_bytes > struct_size)
		return false;
	*ret = (__u16)offset;
	return true;
}

/* The same for a field of a frame: also within what the walk reads of it. */
static bool cpy_frame_field(uint64_t offset, unsigned width_bytes, uint64_t frame_size, __u16 *ret)
{
	return cpy_field(offset, width_bytes, frame_size, ret) &&
	       offset + width_bytes <= OFFCPU_PYTHON_FRAME_READ;
}

/* The layout that 3.13's debug offsets d give; false if any is out of
 * bounds (a corrupt file, or a build whose structs the walk cannot take). */
static bool cpy_layout_of_313(const struct cpy_debug_offsets_313 *d,
			      struct offcpu_python_layout *ret)
{
	uint64_t runtime_size = le64toh(d->runtime_state.size),
		 interp_size = le64toh(d->interpreter_state.size),
		 tstate_size = le64toh(d->thread_state.size),
		 frame_size = le64toh(d->interpreter_frame.size),
		 code_size = le64toh(d->code_object.size);
	struct offcpu_python_layout l = {
		.cframe_frame = OFFCPU_PYTHON_NO_FIELD,
		.minor = CPY_MINOR_DEBUG_OFFSETS,
		.flags = OFFCPU_PYTHON_ENTRY_SHIM,
	};

	if (!cpy_field(le64toh(d->runtime_state.interpreters_head), CPY_PTR_BYTES, runtime_size,
		       &l.runtime_interp) ||
	    !cpy_field(le64toh(d->interpreter_state.threads_head), CPY_PTR_BYTES, interp_size,
		       &l.interp_threads) ||
	    !cpy_field(le64toh(d->thread_state.next), CPY_PTR_BYTES, tstate_size, &l.tstate_next) ||
	    !cpy_field(le64toh(d->thread_state.native_thread_id), CPY_ULONG_BYTES, tstate_size,
		       &l.tstate_id) ||
	    !cpy_field(le64toh(d->thread_state.current_frame), CPY_PTR_BYTES, tstate_size,
		       &l.tstate_frame) ||
	    !cpy_frame_field(le64toh(d->interpreter_frame.executable), CPY_PTR_BYTES, frame_size,
			     &l.frame_code) ||
	    !cpy_frame_field(le64toh(d->interpreter_frame.previous), CPY_PTR_BYTES, frame_size,
			     &l.frame_previous) ||
	    !cpy_frame_field(le64toh(d->interpreter_frame.instr_ptr), CPY_PTR_BYTES, frame_size,
			     &l.frame_instr) ||
	    !cpy_frame_field(le64toh(d->interpreter_frame.owner), CPY_OWNER_BYTES, frame_size,
			     &l.frame_owner) ||
	    !cpy_field(le64toh(d->code_object.co_code_adaptive), 1, code_size, &l.code_instrs))
		return false;
	*ret = l;
	return true;
}

/*
 * Fills f from the _Py_DebugOffsets at the start of _PyRuntime, if the
 * file has them there. Returns false if it has not (before 3.13, or a
 * cookie that is not there: the caller looks further).
 */
static bool cpy_from_debug_offsets(struct cpython_file *f, int fd, Elf *elf, uint64_t file_size)
{
	struct cpy_debug_offsets_313 d;
	uint64_t hex;

	if (cpy_read_vaddr(fd, elf, file_size, f->runtime_vaddr, &d, CPY_DEBUG_HEADER_BYTES) < 0 ||
	    memcmp(d.cookie, CPY_COOKIE, sizeof(d.cookie)))
		return false;
	hex = le64toh(d.version);
	if (!cpy_hex_valid(hex) || CPY_HEX_MINOR(hex) < CPY_MINOR_DEBUG_OFFSETS)
		return true; /* UNKNOWN_VERSION, with what the name says */
	cpy_version_of_hex(f->version, hex);
	/* free_threaded is there since 3.13; the name is a guess, the file is not. */
	if (le64toh(d.free_threaded)) {
		f->status = CPYTHON_FREE_THREADED;
		return true;
	}
	/* Until its release candidates a version's structs may still move. */
	if (CPY_HEX_MINOR(hex) != CPY_MINOR_DEBUG_OFFSETS || CPY_HEX_LEVEL(hex) < CPY_LEVEL_RC)
		return true;
	if (cpy_read_vaddr(fd, elf, file_size, f->runtime_vaddr, &d, sizeof(d)) < 0 ||
	    !cpy_layout_of_313(&d, &f->layout))
		return true;
	f->status = CPYTHON_KNOWN;
	return true;
}

/* Fills f for the ELF file elf (open at fd). */
static void cpy_inspect(struct cpython_file *f, int fd, Elf *elf, const GElf_Ehdr *eh,
			uint64_t file_size, const char *path)
{
	struct cpy_syms s = { 0 };
	bool name_free_threaded = false, has_name;
	unsigned name_minor = 0, minor;
	uint32_t hex = 0;

	cpy_find_symbols(elf, file_size, &s);
	if (!s.has_runtime) {
		f->status = CPYTHON_NONE;
		return;
	}
	f->status = CPYTHON_UNKNOWN_VERSION;
	f->runtime_vaddr = s.runtime.st_value;
	has_name = cpy_name_version(path, &name_minor, &name_free_threaded);
	if (has_name)
		snprintf(f->version, sizeof(f->version), "3.%u", name_minor);
	/* The layouts are those of an LP64 little-endian build. */
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return;
	if (cpy_from_debug_offsets(f, fd, elf, file_size))
		return;
	/* Before 3.13: Py_Version (3.11+, an unsigned long), else the name. */
	if (s.has_version &&
	    cpy_read_vaddr(fd, elf, file_size, s.version.st_value, &hex, sizeof(hex)) == 0 &&
	    cpy_hex_valid(le32toh(hex))) {
		hex = le32toh(hex);
		cpy_version_of_hex(f->version, hex);
		minor = CPY_HEX_MINOR(hex);
		if (CPY_HEX_LEVEL(hex) < CPY_LEVEL_RC)
			return;
	} else if (has_name) {
		minor = name_minor;
	} else {
		return;
	}
	/* 3.13t without its debug offsets: only the name says so. */
	if (name_free_threaded && minor >= CPY_MINOR_DEBUG_OFFSETS) {
		f->status = CPYTHON_FREE_THREADED;
		return;
	}
	if (cpython_layout_for_minor(minor, &f->layout))
		f->status = CPYTHON_KNOWN;
}

int cpython_layout_of_file(int fd, const char *path, struct cpython_file *ret)
{
	struct cpython_file f = { 0 };
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	/* If libelf refused this version, elf_begin() fails below. */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		elf_end(elf);
		return -ENOEXEC;
	}
	cpy_inspect(&f, fd, elf, &eh, st.st_size, path);
	elf_end(elf);
	*ret = f;
	return 0;
}
