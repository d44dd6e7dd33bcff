/*
 * Unit test for symbols/cpython_layout.c. Checks each layout against the
 * interpreter it is for: every offset must equal the member's offset in the
 * DWARF of pyenv's libpython3.X.so (3.10 to 3.13, read here with libdw, so
 * a wrong table value fails), and Debian's stripped /usr/bin/python3.11
 * must get the 3.11 table. Then feeds it damaged copies (truncated, cookie,
 * version and offsets rewritten, random bytes) made under /tmp. Interpreters
 * that are not installed are skipped; exits 77 if none is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cpython_layout.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define PYENV	    "/root/.pyenv/versions"
#define DEBIAN_311  "/usr/bin/python3.11"
#define NOT_FOUND   UINT64_MAX
#define RANDOM_RUNS 300

/* Byte offsets in 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h). */
#define DO_VERSION	    8
#define DO_FREE_THREADED    16
#define DO_NATIVE_THREAD_ID 200
#define DO_FRAME_OWNER	    264
#define DO_CODE_ADAPTIVE    344

static char dir[] = "/tmp/test-cpython_layout.XXXXXX";

/* ---- DWARF: the offsets as the compiler laid them out ---- */

/* Follows typedefs and qualifiers to a struct or union; false if none. */
static bool dw_aggregate(Dwarf_Die *die)
{
	for (int i = 0; i < 16; i++) {
		Dwarf_Attribute a;
		int tag = dwarf_tag(die);

		if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type)
			return !dwarf_hasattr(die, DW_AT_declaration);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return false;
		if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, die))
			return false;
	}
	return false;
}

/* The definition of struct tag or typedef name, from the first unit that
 * has one. */
static bool dw_find_type(Dwarf *dw, const char *name, Dwarf_Die *ret)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				int tag = dwarf_tag(&die);
				const char *n;

				if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef)
					continue;
				n = dwarf_diename(&die);
				if (!n || strcmp(n, name))
					continue;
				*ret = die;
				if (dw_aggregate(ret))
					return true;
			} while (dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	return false;
}

/* The offset of member name in aggregate die (looking into anonymous
 * members too), with *die moved to its type; NOT_FOUND if none. */
static uint64_t dw_member(Dwarf_Die *die, const char *name, size_t len)
{
	Dwarf_Die m;

	if (dwarf_child(die, &m))
		return NOT_FOUND;
	do {
		Dwarf_Attribute a;
		Dwarf_Word loc = 0;
		const char *n;
		Dwarf_Die type;

		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &loc))
			continue;
		if (!dwarf_attr_integrate(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &type))
			continue;
		n = dwarf_diename(&m);
		if (n && strlen(n) == len && !memcmp(n, name, len)) {
			*die = type;
			return loc;
		}
		if (!n && dw_aggregate(&type)) {
			uint64_t in = dw_member(&type, name, len);

			if (in != NOT_FOUND) {
				*die = type;
				return loc + in;
			}
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return NOT_FOUND;
}

/* The offset of a member path ("interpreters.main") in type name. */
static uint64_t dw_offset(Dwarf *dw, const char *type, const char *path)
{
	uint64_t total = 0;
	Dwarf_Die die;

	if (!dw_find_type(dw, type, &die))
		return NOT_FOUND;
	for (const char *p = path;;) {
		size_t len = strcspn(p, ".");
		uint64_t o = dw_member(&die, p, len);

		if (o == NOT_FOUND)
			return NOT_FOUND;
		total += o;
		if (!p[len])
			return total;
		if (!dw_aggregate(&die))
			return NOT_FOUND;
		p += len + 1;
	}
}

/* The address of global variable name (DW_OP_addr). */
static uint64_t dw_variable(Dwarf *dw, const char *name)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				Dwarf_Attribute a;
				Dwarf_Op *ops;
				size_t n_ops;
				const char *n;

				if (dwarf_tag(&die) != DW_TAG_variable)
					continue;
				n = dwarf_diename(&die);
				if (!n || strcmp(n, name) ||
				    !dwarf_attr(&die, DW_AT_location, &a) ||
				    dwarf_getlocation(&a, &ops, &n_ops) || n_ops != 1 ||
				    ops[0].atom != DW_OP_addr)
					continue;
				return ops[0].number;
			} while (dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	return NOT_FOUND;
}

/* ---- what each version's fields are called ---- */

struct member {
	const char *type, *path;
};

/* Where a version keeps each field of struct offcpu_python_layout. */
struct version_members {
	unsigned minor;
	const char *dir;
	struct member runtime_interp, interp_threads, tstate_next, tstate_id, tstate_frame,
		cframe_frame, frame_code, frame_previous, frame_instr, frame_owner, code_instrs;
	unsigned flags;
};

#define RT "_PyRuntimeState"
#define IS "PyInterpreterState"
#define TS "PyThreadState"
#define CF "_PyCFrame"
#define IF "_PyInterpreterFrame"
#define FO "PyFrameObject"
#define CO "PyCodeObject"

/* A member left out (type NULL) is a field the version does not have. */
static const struct version_members versions[] = {
	{
		.minor = 10,
		.dir = "3.10.13",
		.runtime_interp = { RT, "interpreters.main" },
		.interp_threads = { IS, "tstate_head" },
		.tstate_next = { TS, "next" },
		.tstate_id = { TS, "thread_id" },
		.tstate_frame = { TS, "frame" },
		.frame_code = { FO, "f_code" },
		.frame_previous = { FO, "f_back" },
		.frame_instr = { FO, "f_lasti" },
		.flags = OFFCPU_PYTHON_ID_PTHREAD | OFFCPU_PYTHON_INSTR_INDEX,
	},
	{
		.minor = 11,
		.dir = "3.11.7",
		.runtime_interp = { RT, "interpreters.main" },
		.interp_threads = { IS, "threads.head" },
		.tstate_next = { TS, "next" },
		.tstate_id = { TS, "native_thread_id" },
		.tstate_frame = { TS, "cframe" },
		.cframe_frame = { CF, "current_frame" },
		.frame_code = { IF, "f_code" },
		.frame_previous = { IF, "previous" },
		.frame_instr = { IF, "prev_instr" },
		.frame_owner = { IF, "is_entry" },
		.code_instrs = { CO, "co_code_adaptive" },
		.flags = OFFCPU_PYTHON_ENTRY_FLAG,
	},
	{
		.minor = 12,
		.dir = "3.12.1",
		.runtime_interp = { RT, "interpreters.main" },
		.interp_threads = { IS, "threads.head" },
		.tstate_next = { TS, "next" },
		.tstate_id = { TS, "native_thread_id" },
		.tstate_frame = { TS, "cframe" },
		.cframe_frame = { CF, "current_frame" },
		.frame_code = { IF, "f_code" },
		.frame_previous = { IF, "previous" },
		.frame_instr = { IF, "prev_instr" },
		.frame_owner = { IF, "owner" },
		.code_instrs = { CO, "co_code_adaptive" },
		.flags = OFFCPU_PYTHON_ENTRY_SHIM,
	},
	{
		/* What its _Py_DebugOffsets must give. */
		.minor = 13,
		.dir = "3.13.0",
		.runtime_interp = { RT, "interpreters.head" },
		.interp_threads = { IS, "threads.head" },
		.tstate_next = { TS, "next" },
		.tstate_id = { TS, "native_thread_id" },
		.tstate_frame = { TS, "current_frame" },
		.frame_code = { IF, "f_executable" },
		.frame_previous = { IF, "previous" },
		.frame_instr = { IF, "instr_ptr" },
		.frame_owner = { IF, "owner" },
		.code_instrs = { CO, "co_code_adaptive" },
		.flags = OFFCPU_PYTHON_ENTRY_SHIM,
	},
};

static void check_field(Dwarf *dw, const char *version, const char *field, const struct member *m,
			unsigned got)
{
	uint64_t want = m->type ? dw_offset(dw, m->type, m->path) : OFFCPU_PYTHON_NO_FIELD;

	CHECK_MSG(want != NOT_FOUND, "%s: %s.%s not in the DWARF", version, m->type, m->path);
	CHECK_MSG(got == want, "%s: %s is %u, the DWARF's %s.%s is %lld", version, field, got,
		  m->type ? m->type : "-", m->path ? m->path : "-",
		  want == NOT_FOUND ? -1ll : (long long)want);
}

/* Every frame field within what the walk reads of a frame, as the BPF side
 * assumes (8-byte pointers; 3.10's f_lasti an int, the owner a byte). */
static void check_frame_bounds(const struct offcpu_python_layout *l)
{
	unsigned instr_bytes = l->flags & OFFCPU_PYTHON_INSTR_INDEX ? 4 : 8;

	CHECK(l->frame_code + 8u <= OFFCPU_PYTHON_FRAME_READ);
	CHECK(l->frame_previous + 8u <= OFFCPU_PYTHON_FRAME_READ);
	CHECK(l->frame_instr + instr_bytes <= OFFCPU_PYTHON_FRAME_READ);
	CHECK(l->frame_owner == OFFCPU_PYTHON_NO_FIELD ||
	      l->frame_owner + 1u <= OFFCPU_PYTHON_FRAME_READ);
}

static int open_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
	return fd;
}

/* cpython_layout_of_file() on path, given the name name; its result. */
static int layout_of(const char *path, const char *name, struct cpython_file *ret)
{
	int fd = open_file(path), r;

	if (fd < 0)
		return -errno;
	r = cpython_layout_of_file(fd, name, ret);
	close(fd);
	return r;
}

static void test_version(const struct version_members *v, char lib[PATH_MAX])
{
	char exe[PATH_MAX], want_version[16];
	struct offcpu_python_layout table;
	struct cpython_file f, g;
	uint64_t runtime;
	Dwarf *dw;
	int fd;

	fd = open_file(lib);
	if (fd < 0)
		return;
	CHECK(cpython_layout_of_file(fd, lib, &f) == 0);
	dw = dwarf_begin(fd, DWARF_C_READ);
	CHECK_MSG(dw, "%s: no DWARF", lib);
	if (!dw) {
		close(fd);
		return;
	}
	CHECK_MSG(f.status == CPYTHON_KNOWN, "%s: %s", lib, cpython_status_name(f.status));
	/* 3.10 has no Py_Version: only its file name tells. */
	if (v->minor == 10)
		snprintf(want_version, sizeof(want_version), "3.10");
	else
		snprintf(want_version, sizeof(want_version), "%s", v->dir);
	CHECK_STR(f.version, want_version);
	CHECK(f.layout.minor == v->minor);
	CHECK_MSG(f.layout.flags == v->flags, "%s: flags %u", v->dir, f.layout.flags);
	runtime = dw_variable(dw, "_PyRuntime");
	CHECK_MSG(runtime != NOT_FOUND && f.runtime_vaddr == runtime,
		  "%s: _PyRuntime at %#llx, the DWARF says %#llx", v->dir,
		  (unsigned long long)f.runtime_vaddr, (unsigned long long)runtime);

#define FIELD(name) check_field(dw, v->dir, #name, &v->name, f.layout.name)
	FIELD(runtime_interp);
	FIELD(interp_threads);
	FIELD(tstate_next);
	FIELD(tstate_id);
	FIELD(tstate_frame);
	FIELD(cframe_frame);
	FIELD(frame_code);
	FIELD(frame_previous);
	FIELD(frame_instr);
	FIELD(frame_owner);
	FIELD(code_instrs);
#undef FIELD
	check_frame_bounds(&f.layout);
	printf("%s: %s %s, _PyRuntime at %#llx, layout %u %u %u %u %u %u %u %u %u %u %u flags %u\n",
	       v->dir, cpython_status_name(f.status), f.version,
	       (unsigned long long)f.runtime_vaddr, f.layout.runtime_interp,
	       f.layout.interp_threads, f.layout.tstate_next, f.layout.tstate_id,
	       f.layout.tstate_frame, f.layout.cframe_frame, f.layout.frame_code,
	       f.layout.frame_previous, f.layout.frame_instr, f.layout.frame_owner,
	       f.layout.code_instrs, f.layout.flags);
	if (v->minor < 13) {
		CHECK(cpython_layout_for_minor(v->minor, &table));
		CHECK(!memcmp(&table, &f.layout, sizeof(table)));
	} else {
		CHECK(!cpython_layout_for_minor(v->minor, &table));
	}
	dwarf_end(dw);

	/* Without its name 3.10 cannot tell; the others can. */
	CHECK(cpython_layout_of_file(fd, NULL, &g) == 0);
	CHECK(g.runtime_vaddr == f.runtime_vaddr);
	if (v->minor == 10) {
		CHECK(g.status == CPYTHON_UNKNOWN_VERSION);
		CHECK_STR(g.version, "");
	} else {
		CHECK(g.status == CPYTHON_KNOWN);
		CHECK(!memcmp(&g.layout, &f.layout, sizeof(g.layout)));
	}
	close(fd);

	/* pyenv's python links libpython: _PyRuntime is not its own. */
	snprintf(exe, sizeof(exe), PYENV "/%s/bin/python3.%u", v->dir, v->minor);
	if (access(exe, R_OK) == 0) {
		CHECK(layout_of(exe, exe, &f) == 0);
		CHECK_MSG(f.status == CPYTHON_NONE, "%s: %s", exe, cpython_status_name(f.status));
	}
}

static void test_debian(void)
{
	struct offcpu_python_layout table;
	struct cpython_file f;

	if (access(DEBIAN_311, R_OK)) {
		printf("skipped: %s not installed\n", DEBIAN_311);
		return;
	}
	/* Stripped: the version is its Py_Version's, whatever its name. */
	CHECK(layout_of(DEBIAN_311, "/usr/bin/python3", &f) == 0);
	CHECK_MSG(f.status == CPYTHON_KNOWN, "%s", cpython_status_name(f.status));
	CHECK_MSG(!strncmp(f.version, "3.11.", 5), "version %s", f.version);
	CHECK(f.runtime_vaddr != 0);
	CHECK(cpython_layout_for_minor(11, &table));
	CHECK(!memcmp(&table, &f.layout, sizeof(table)));
}

/* ---- damaged copies ---- */

static bool copy_file(const char *from, const char *to, off_t size)
{
	int in = open_file(from), out;
	bool ok = false;
	off_t left = size;

	if (in < 0)
		return false;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(out >= 0);
	while (out >= 0 && left > 0) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);

		if (n <= 0)
			break;
		left -= n;
	}
	ok = out >= 0 && left == 0;
	CHECK(ok);
	if (out >= 0)
		close(out);
	close(in);
	return ok;
}

/* The file offset of virtual address vaddr, through the section that holds
 * it (the module goes through the segments instead). */
static off_t file_offset(const char *path, uint64_t vaddr)
{
	int fd = open_file(path);
	Elf_Scn *scn = NULL;
	off_t off = -1;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_ALLOC) && vaddr >= sh.sh_addr &&
		    vaddr - sh.sh_addr < sh.sh_size) {
			off = sh.sh_offset + (vaddr - sh.sh_addr);
			break;
		}
	}
	elf_end(elf);
	close(fd);
	CHECK(off >= 0);
	return off;
}

static void write_at(const char *path, off_t off, const void *buf, size_t size)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(pwrite(fd, buf, size, off) == (ssize_t)size);
	close(fd);
}

static void write_u64_at(const char *path, off_t off, uint64_t v)
{
	write_at(path, off, &v, sizeof(v)); /* little-endian, as the file */
}

/* Whatever a damaged file gives, it is an error or a status with no
 * layout that reads past a frame. */
static void check_sane(int r, const struct cpython_file *f)
{
	CHECK(r <= 0);
	if (r < 0)
		return;
	CHECK(f->status <= CPYTHON_FREE_THREADED);
	CHECK(memchr(f->version, '\0', sizeof(f->version)));
	if (f->status == CPYTHON_KNOWN)
		check_frame_bounds(&f->layout);
}

static void test_truncated(const char *lib, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	const off_t sizes[] = { 0, 64 << 10, 0 /* half, below */ };

	if (stat(lib, &st))
		return;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		off_t size = i == 2 ? st.st_size / 2 : sizes[i];
		struct cpython_file f = { .status = CPYTHON_KNOWN };
		int r;

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (!copy_file(lib, path, size))
			continue;
		r = layout_of(path, path, &f);
		check_sane(r, &f);
		CHECK_MSG(r < 0 || f.status == CPYTHON_NONE, "%s cut at %lld: %d %s", lib,
			  (long long)size, r, cpython_status_name(f.status));
		unlink(path);
	}
}

static void test_damaged_313(const char *lib)
{
	char path[PATH_MAX], path_t[PATH_MAX];
	struct cpython_file f;
	uint8_t saved[512];
	struct stat st;
	off_t runtime;
	int fd;

	snprintf(path, sizeof(path), "%s/libpython3.13.so.1.0", dir);
	snprintf(path_t, sizeof(path_t), "%s/libpython3.13t.so.1.0", dir);
	CHECK(layout_of(lib, lib, &f) == 0);
	runtime = file_offset(lib, f.runtime_vaddr);
	if (runtime < 0 || stat(lib, &st) || !copy_file(lib, path, st.st_size))
		return;
	fd = open_file(path);
	CHECK(pread(fd, saved, sizeof(saved), runtime) == (ssize_t)sizeof(saved));
	close(fd);
	CHECK(!memcmp(saved, "xdebugpy", 8));

	/* No cookie: Py_Version still says 3.13, which has no table. */
	write_at(path, runtime, "ydebugpy", 8);
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_UNKNOWN_VERSION);
	CHECK_STR(f.version, "3.13.0");
	/* ... and a 't' in the name is all that says it is free-threaded. */
	CHECK(layout_of(path, path_t, &f) == 0);
	CHECK(f.status == CPYTHON_FREE_THREADED);
	write_at(path, runtime, saved, sizeof(saved));

	/* The file, not its name, says whether it is free-threaded. */
	CHECK(layout_of(path, path_t, &f) == 0);
	CHECK(f.status == CPYTHON_KNOWN);
	write_u64_at(path, runtime + DO_FREE_THREADED, 1);
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_FREE_THREADED);
	CHECK_STR(f.version, "3.13.0");
	write_at(path, runtime, saved, sizeof(saved));

	/* 3.14's _Py_DebugOffsets are another struct. */
	write_u64_at(path, runtime + DO_VERSION, 0x030e00f0);
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_UNKNOWN_VERSION);
	CHECK_STR(f.version, "3.14.0");
	/* A 3.13 beta's may not be this one. */
	write_u64_at(path, runtime + DO_VERSION, 0x030d00b2);
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_UNKNOWN_VERSION);
	CHECK_STR(f.version, "3.13.0b2");
	/* Not a version at all. */
	write_u64_at(path, runtime + DO_VERSION, 0xffffffffffffffffull);
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_UNKNOWN_VERSION);
	CHECK_STR(f.version, "3.13");
	write_at(path, runtime, saved, sizeof(saved));

	/* Offsets out of bounds: an id past 0xffff, an owner past a frame read,
	 * the instructions past the code object. */
	const struct {
		off_t at;
		uint64_t value;
	} bad[] = {
		{ DO_NATIVE_THREAD_ID, 0x10000 },
		{ DO_NATIVE_THREAD_ID, OFFCPU_PYTHON_NO_FIELD },
		{ DO_FRAME_OWNER, OFFCPU_PYTHON_FRAME_READ },
		{ DO_FRAME_OWNER, UINT64_MAX },
		{ DO_CODE_ADAPTIVE, 0x8000 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_u64_at(path, runtime + bad[i].at, bad[i].value);
		CHECK(layout_of(path, path, &f) == 0);
		CHECK_MSG(f.status == CPYTHON_UNKNOWN_VERSION, "offset %lld = %#llx: %s",
			  (long long)bad[i].at, (unsigned long long)bad[i].value,
			  cpython_status_name(f.status));
		write_at(path, runtime, saved, sizeof(saved));
	}
	CHECK(layout_of(path, path, &f) == 0);
	CHECK(f.status == CPYTHON_KNOWN);

	/* Random bytes in the headers, symbol tables and debug offsets. */
	srand(1);
	for (int i = 0; i < RANDOM_RUNS; i++) {
		uint8_t head[64 << 10], bytes[8];
		off_t at = i % 2 ? runtime + rand() % (off_t)sizeof(saved)
				 : rand() % (off_t)sizeof(head);
		int r;

		fd = open_file(path);
		CHECK(pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head));
		close(fd);
		for (size_t k = 0; k < sizeof(bytes); k++)
			bytes[k] = (uint8_t)rand();
		write_at(path, at, bytes, 1 + rand() % sizeof(bytes));
		r = layout_of(path, path, &f);
		check_sane(r, &f);
		write_at(path, 0, head, sizeof(head));
		write_at(path, runtime, saved, sizeof(saved));
	}
	unlink(path);
}

int main(void)
{
	char lib[PATH_MAX], text[PATH_MAX];
	struct offcpu_python_layout l;
	struct cpython_file f;
	size_t found = 0;
	int fd;

	CHECK_STR(cpython_status_name(CPYTHON_NONE), "none");
	CHECK_STR(cpython_status_name(CPYTHON_KNOWN), "known");
	CHECK_STR(cpython_status_name(CPYTHON_UNKNOWN_VERSION), "unknown version");
	CHECK_STR(cpython_status_name(CPYTHON_FREE_THREADED), "free-threaded");
	CHECK_STR(cpython_status_name((enum cpython_status)99), "?");
	CHECK(!cpython_layout_for_minor(9, &l));
	CHECK(!cpython_layout_for_minor(13, &l));
	for (unsigned minor = 10; minor <= 12; minor++) {
		CHECK(cpython_layout_for_minor(minor, &l));
		CHECK(l.minor == minor);
		check_frame_bounds(&l);
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	elf_version(EV_CURRENT);

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		snprintf(lib, sizeof(lib), PYENV "/%s/lib/libpython3.%u.so.1.0", versions[i].dir,
			 versions[i].minor);
		if (access(lib, R_OK)) {
			printf("skipped: %s not installed\n", lib);
			continue;
		}
		found++;
		test_version(&versions[i], lib);
		if (versions[i].minor == 13) {
			test_truncated(lib, "libpython3.13.so.1.0");
			test_damaged_313(lib);
		}
	}
	test_debian();
	if (!access(DEBIAN_311, R_OK)) {
		found++;
		test_truncated(DEBIAN_311, "python3.11");
	}

	/* Not CPython, not ELF, not a file. */
	CHECK(layout_of("/bin/ls", "/bin/ls", &f) == 0);
	CHECK(f.status == CPYTHON_NONE);
	snprintf(text, sizeof(text), "%s/python3.11", dir);
	fd = open(text, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "#!/bin/sh\n", 10) == 10);
	close(fd);
	f.status = CPYTHON_KNOWN;
	CHECK(layout_of(text, text, &f) == -ENOEXEC);
	CHECK(f.status == CPYTHON_KNOWN); /* left unchanged */
	unlink(text);
	CHECK(layout_of("/tmp", "/tmp", &f) == -ENOEXEC);
	CHECK(cpython_layout_of_file(-1, NULL, &f) == -EBADF);

	rmdir(dir);
	if (!found) {
		printf("skipped: no CPython 3.10 to 3.13 installed\n");
		return 77;
	}
	return CHECK_DONE();
}
