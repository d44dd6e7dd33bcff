/*
 * Unit test for symbols/symbolizer.c. Builds a fixture proc root in a
 * temporary directory: a made-up kallsyms, and maps files that list this
 * test's own executable and libc (so real functions resolve by name) next to
 * special, missing, non-ELF, corrupt and garbage mappings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "symbolizer.h"
#include "frame.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "file_ids.h"

/* Looks addr up and compares both the return value and the text. */
#define CHECK_USER(s, tgid, addr, want_r, want)                                                    \
	check_user(__FILE__, __LINE__, s, tgid, addr, want_r, want)
#define CHECK_KERNEL(s, addr, want_r, want) check_kernel(__FILE__, __LINE__, s, addr, want_r, want)

static void check_result(const char *file, int line, const char *what, uint64_t addr, int r,
			 const char *buf, int want_r, const char *want)
{
	if (r == want_r && !strcmp(buf, want))
		return;
	fprintf(stderr, "%s:%d: %s 0x%" PRIx64 ": got %d \"%s\", want %d \"%s\"\n", file, line,
		what, addr, r, buf, want_r, want);
	check_failures++;
}

/* check_result() on a user frame's names: source lines come with DWARF
 * (this test's, libc's when its debug package is installed), the names are
 * what is checked here. */
static void check_names(const char *file, int line, const char *what, uint64_t addr, int r,
			const char *buf, int want_r, const char *want)
{
	char *name = frame_list_strip_lines(buf);

	check_result(file, line, what, addr, r, name ? name : "", want_r, want);
	free(name);
}

static void check_user(const char *file, int line, struct symbolizer *s, uint32_t tgid,
		       uint64_t addr, int want_r, const char *want)
{
	char buf[256];
	int r = symbolizer_user(s, tgid, addr, buf, sizeof(buf));

	check_names(file, line, "user", addr, r, buf, want_r, want);
}

static void check_kernel(const char *file, int line, struct symbolizer *s, uint64_t addr,
			 int want_r, const char *want)
{
	char buf[256];
	int r = symbolizer_kernel(s, addr, buf, sizeof(buf));

	check_result(file, line, "kernel", addr, r, buf, want_r, want);
}

/* Targets: real functions of this executable, each several bytes long. */
static volatile int sink;
static const char rodata[] = "in a read-only mapping";

int main(void);
__attribute__((noinline)) void symbolizer_test_target(void);
__attribute__((noinline)) void symbolizer_test_target(void)
{
	sink = sink * 3 + 1;
}

static __attribute__((noinline)) int test_local_function(int x)
{
	sink = sink * 5 + x;
	return sink;
}

static char dir[] = "/tmp/test-symbolizer.XXXXXX";
static char exe[PATH_MAX];

/* Fake mappings live here, away from anything this process maps. */
#define FAKE_LOW_END  0x100000ull
#define FAKE_BASE     0x100000000000ull
#define FAKE_END      0x140000000000ull
#define FAKE_MAPFILES 0x100000000000ull
#define FAKE_ROOT     0x110000000000ull
#define FAKE_BAD_INO  0x120000000000ull
#define FAKE_TRUNC    0x130000000000ull

#define TGID	      4242
#define TGID_MISSING  999999
#define TGID_CHANGING 4343
#define TGID_FUZZ     4444
#define TGID_JIT      4545
#define TGID_MANY     10000
#define TGID_MANY_N   4100 /* more than the process cache holds */

static char *path_in(const char *fmt, ...)
{
	static char bufs[4][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 4];
	int n = snprintf(b, PATH_MAX, "%s/", dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, PATH_MAX - n, fmt, ap);
	va_end(ap);
	return b;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");

	CHECK(f);
	if (!f)
		return;
	CHECK(fwrite(data, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

static void write_text(const char *path, const char *text)
{
	write_file(path, text, strlen(text));
}

static uint64_t inode_of(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st) == 0);
	return st.st_ino;
}

struct self_map {
	uint64_t start, end, pgoff, ino;
	char dev[16];
	char path[PATH_MAX];
};

/* Finds the line of /proc/self/maps that covers addr. */
static bool self_map_find(uint64_t addr, struct self_map *ret)
{
	char line[PATH_MAX + 256];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		struct self_map m = { 0 };
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %15s %" SCNu64 " %n",
			   &m.start, &m.end, &m.pgoff, m.dev, &m.ino, &n) != 5 ||
		    !n)
			continue;
		if (addr < m.start || addr >= m.end)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(m.path, sizeof(m.path), "%s", line + n);
		*ret = m;
		found = true;
	}
	fclose(f);
	return found;
}

/* Appends to out every line of /proc/self/maps that names a file or a
 * special region, and skips the anonymous ones and the fake address ranges. */
static void copy_self_maps(FILE *out)
{
	char line[PATH_MAX + 256];
	FILE *f = fopen("/proc/self/maps", "re");

	CHECK(f);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %n", &start, &end, &n) !=
			    2 ||
		    !n || line[n] == '\0' || line[n] == '\n')
			continue;
		if ((start < FAKE_END && end > FAKE_BASE) || start < FAKE_LOW_END)
			continue;
		fputs(line, out);
	}
	fclose(f);
}

static void fixture_kallsyms(void)
{
	FILE *f = fopen(path_in("kallsyms"), "we");

	CHECK(f);
	if (!f)
		return;
	/* an over-long line must not swallow the next one */
	fputs("ffffffff81000400 T ", f);
	for (int i = 0; i < 3000; i++)
		fputc('x', f);
	fputc('\n', f);
	fputs("ffffffff81000000 T _text\n"
	      "ffffffff81000000 T kernel_entry\n"
	      "ffffffff81000000 t _stext_local\n"
	      "ffffffff81000100 t local_helper\n"
	      "ffffffff81000200 d some_data\n"
	      "ffffffff81000280 D more_data\n"
	      "garbage line\n"
	      "ffffffff81000290\n"
	      "ffffffff81000290 T\n"
	      "ffffffff81000300 T __weak_fn\n"
	      "ffffffff81000300 W weak_fn\n"
	      "ffffffff81000400 T vfs_read\n"
	      "ffffffffc0001000 t mod_func\t[mymod]\n"
	      "ffffffffc0002000 T mod_global\t[mymod]",
	      f);
	CHECK(fclose(f) == 0);
	CHECK(mkdir(path_in("restricted"), 0700) == 0);
	write_text(path_in("restricted/kallsyms"), "0000000000000000 T _text\n"
						   "0000000000000000 T vfs_read\n");
	CHECK(mkdir(path_in("empty"), 0700) == 0);
}

static void test_kernel(void)
{
	struct symbolizer *s = NULL;
	char small[4];

	CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);
	CHECK_KERNEL(s, 0xffffffff81000400ull, 0, "vfs_read");
	CHECK_KERNEL(s, 0xffffffff81000410ull, 0, "vfs_read");
	/* GLOBAL without '_' wins over other names at the same address */
	CHECK_KERNEL(s, 0xffffffff81000000ull, 0, "kernel_entry");
	/* data symbols do not end the previous function */
	CHECK_KERNEL(s, 0xffffffff81000250ull, 0, "local_helper");
	/* a public weak name wins over a '_' global one */
	CHECK_KERNEL(s, 0xffffffff81000300ull, 0, "weak_fn");
	CHECK_KERNEL(s, 0xffffffffc0001010ull, 0, "mod_func");
	CHECK_KERNEL(s, 0xffffffffc0002fffull, 0, "mod_global");
	CHECK_KERNEL(s, 0xffffffffc00fffffull, 0, "mod_global");
	CHECK_KERNEL(s, 0xffffffffc0102000ull, -ENOENT, "0xffffffffc0102000");
	CHECK_KERNEL(s, 0xffffffff80ffffffull, -ENOENT, "0xffffffff80ffffff");
	CHECK_KERNEL(s, 0, -ENOENT, "0x0");
	/* far past any symbol: between the kernel image and modules, and
	 * after the last one */
	CHECK_KERNEL(s, 0xffffffff90000000ull, -ENOENT, "0xffffffff90000000");
	CHECK_KERNEL(s, 0xffffffffc1002000ull, -ENOENT, "0xffffffffc1002000");
	CHECK(symbolizer_kernel(s, 0xffffffff81000400ull, small, sizeof(small)) == 0);
	CHECK(!strcmp(small, "vfs"));
	CHECK(symbolizer_kernel(s, 0xffffffff81000400ull, small, 1) == 0);
	CHECK(small[0] == '\0');
	symbolizer_free(s);

	CHECK(symbolizer_new(path_in("restricted"), "/usr/lib/debug", &s) == 0);
	CHECK_KERNEL(s, 0xffffffff81000400ull, -ENOENT, "0xffffffff81000400");
	symbolizer_free(s);

	CHECK(symbolizer_new(path_in("empty"), "/usr/lib/debug", &s) == 0);
	CHECK_KERNEL(s, 0xffffffff81000400ull, -ENOENT, "0xffffffff81000400");
	CHECK_KERNEL(s, 0xffffffff81000400ull, -ENOENT, "0xffffffff81000400");
	symbolizer_free(s);
}

/* Writes a maps line that maps the executable text holding symbolizer_test_target
 * at fake address base; returns the fake address of that function. */
static uint64_t fake_exe_line(FILE *out, const struct self_map *text, uint64_t base, uint64_t ino,
			      const char *path)
{
	fprintf(out, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %s %" PRIu64 " %s\n", base,
		base + (text->end - text->start), text->pgoff, text->dev, ino, path);
	return base + ((uintptr_t)symbolizer_test_target - text->start);
}

static void test_user(void)
{
	uint64_t target = (uintptr_t)symbolizer_test_target;
	uint64_t addr_map_files, addr_root, addr_bad_ino, addr_trunc, off;
	struct symbolizer *s = NULL;
	struct self_map text;
	void *libc, *fn_read, *fn_sleep, *fn_poll, *fn_nanosleep;
	uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
	char want[PATH_MAX + 32], buf[256], *long_path;
	const char *exe_base = strrchr(exe, '/') + 1;
	FILE *out;
	int r;

	CHECK(self_map_find(target, &text));
	CHECK(!strcmp(text.path, exe));

	/* A file that is not ELF, with a space in its name. */
	write_text(path_in("not elf.txt"), "just text\n");
	/* ELF magic, then nothing */
	write_file(path_in("corrupt.so"), "\177ELF\2\1\1", 7);
	/* The executable's first page only: headers but no sections. */
	{
		char page[4096];
		int fd = open(exe, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, page, sizeof(page)) : -1;

		CHECK(n == (ssize_t)sizeof(page));
		if (n > 0)
			write_file(path_in("trunc.so"), page, n);
		if (fd >= 0)
			close(fd);
	}

	CHECK(mkdir(path_in("%d", TGID), 0700) == 0);
	CHECK(mkdir(path_in("%d/map_files", TGID), 0700) == 0);
	CHECK(mkdir(path_in("%d/root", TGID), 0700) == 0);
	CHECK(mkdir(path_in("%d/root/fixture-bin", TGID), 0700) == 0);
	CHECK(symlink(exe, path_in("%d/root/fixture-bin/test-exe", TGID)) == 0);

	out = fopen(path_in("%d/maps", TGID), "we");
	CHECK(out);
	if (!out)
		return;
	/* garbage first: none of it may hide the good lines that follow */
	fputs("\n"
	      "garbage\n"
	      "1000-\n"
	      "zzzz-yyyy r-xp 0 0 0\n"
	      "20000-21000 r-xp\n"
	      "20000-21000 r-xp 00000000\n"
	      "20000-21000 r-xp 00000000 fd:01\n"
	      "21000-20000 r-xp 00000000 fd:01 0 /bin/sh\n"
	      "22000-23000 r-xpX 00000000 fd:01 0 /bin/sh\n"
	      "23000-24000 r-xp 00000000 fd:01 12x /bin/sh\n",
	      out);
	long_path = malloc(3 * PATH_MAX);
	CHECK(long_path);
	if (long_path) {
		memset(long_path, 'a', 3 * PATH_MAX - 1);
		long_path[3 * PATH_MAX - 1] = '\0';
		fprintf(out, "24000-25000 r-xp 00000000 fd:01 0 /%s\n", long_path);
		free(long_path);
	}
	copy_self_maps(out);
	fprintf(out, "10000-12000 r-xp 00001000 fd:01 %" PRIu64 "   %s\n",
		inode_of(path_in("not elf.txt")), path_in("not elf.txt"));
	fputs("12000-13000 r-xp 00000000 00:00 0 \n"
	      "13000-14000 r-xp 00000000 00:00 0                          [anon:jit]\n"
	      "14000-15000 r-xp 00000000 00:00 0  //anon\n",
	      out);
	fprintf(out, "15000-16000 r-xp 00002000 fd:01 12345 %s (deleted)\n", path_in("gone.so"));
	fprintf(out, "16000-17000 r--p 00000000 fd:01 %" PRIu64 " %s\n",
		inode_of(path_in("not elf.txt")), path_in("not elf.txt"));
	fprintf(out, "17000-18000 r-xp 00000000 fd:01 0 %s\n", path_in("corrupt.so"));
	addr_map_files = fake_exe_line(out, &text, FAKE_MAPFILES, text.ino,
				       "/nonexistent/test-exe (deleted)");
	CHECK(symlink(exe, path_in("%d/map_files/%" PRIx64 "-%" PRIx64, TGID, FAKE_MAPFILES,
				   FAKE_MAPFILES + (text.end - text.start))) == 0);
	addr_root = fake_exe_line(out, &text, FAKE_ROOT, text.ino, "/fixture-bin/test-exe");
	/* the path now names another file than the one mapped */
	addr_bad_ino = fake_exe_line(out, &text, FAKE_BAD_INO, 1, exe);
	addr_trunc = fake_exe_line(out, &text, FAKE_TRUNC, 0, path_in("trunc.so"));
	/* last line without a newline */
	fputs("25000-26000 r-xp 00000000 00:00 0 [vdso-like]", out);
	CHECK(fclose(out) == 0);

	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc);
	/* from libc itself: the sanitizers interpose their own read() */
	fn_read = libc ? dlsym(libc, "read") : NULL;
	fn_sleep = libc ? dlsym(libc, "clock_nanosleep") : NULL;
	fn_poll = libc ? dlsym(libc, "poll") : NULL;
	fn_nanosleep = libc ? dlsym(libc, "nanosleep") : NULL;
	CHECK(fn_read && fn_sleep && fn_poll && fn_nanosleep);

	CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);
	CHECK(symbolizer_cache_bytes(s) == 0);

	/* (a) this executable: .symtab, global and local functions, PIE */
	CHECK_USER(s, TGID, target, 0, "symbolizer_test_target");
	/* its symbol table, the name, and the DWARF read for it (this test is
	 * built with -g: its debug sections alone are tens of KiB) */
	CHECK_MSG(symbolizer_cache_bytes(s) > 16384, "%zu", symbolizer_cache_bytes(s));
	CHECK_USER(s, TGID, target + 3, 0, "symbolizer_test_target");
	CHECK_USER(s, TGID, (uintptr_t)test_local_function + 1, 0, "test_local_function");
	CHECK_USER(s, TGID, (uintptr_t)main, 0, "main");
	/* read-only data of the executable: not an executable mapping */
	CHECK_USER(s, TGID, (uintptr_t)rodata, -ENOENT, "[unknown: unmapped]");

	/* (b) libc: .dynsym only, "read" preferred over "__read" */
	CHECK_USER(s, TGID, (uintptr_t)fn_read, 0, "read");
	CHECK_USER(s, TGID, (uintptr_t)fn_read + 2, 0, "read");
	CHECK_USER(s, TGID, (uintptr_t)fn_sleep + 1, 0, "clock_nanosleep");
	/* weak "poll" over its global alias "__poll" */
	CHECK_USER(s, TGID, (uintptr_t)fn_poll + 1, 0, "poll");
	CHECK_USER(s, TGID, (uintptr_t)fn_nanosleep + 1, 0, "nanosleep");

	/* (c) vdso */
	CHECK(vdso);
	if (vdso)
		CHECK_USER(s, TGID, vdso + 0x10, -ENOENT, "[vdso]");

	/* (d) no mapping at all */
	CHECK_USER(s, TGID, 0x1000, -ENOENT, "[unknown: unmapped]");
	CHECK_USER(s, TGID, 0x20010, -ENOENT, "[unknown: unmapped]"); /* truncated lines */
	CHECK_USER(s, TGID, 0x21010, -ENOENT, "[unknown: unmapped]");
	CHECK_USER(s, TGID, 0x22010, -ENOENT, "[unknown: unmapped]");
	CHECK_USER(s, TGID, 0x23010, -ENOENT, "[unknown: unmapped]");
	CHECK_USER(s, TGID, 0x24010, -ENOENT, "[unknown: unmapped]"); /* over-long line */
	CHECK_USER(s, TGID, 0x16010, -ENOENT, "[unknown: unmapped]"); /* not executable */

	/* (e) not ELF: module + file offset */
	CHECK_USER(s, TGID, 0x10010, -ENOENT, "not elf.txt+0x1010");
	CHECK_USER(s, TGID, 0x11ffe, -ENOENT, "not elf.txt+0x2ffe");
	CHECK_USER(s, TGID, 0x17010, -ENOENT, "corrupt.so+0x10");
	CHECK_USER(s, TGID, 0x15010, -ENOENT, "gone.so+0x2010");

	/* special and anonymous mappings */
	CHECK_USER(s, TGID, 0x12010, -ENOENT, "[unknown: anonymous]");
	CHECK_USER(s, TGID, 0x13010, -ENOENT, "[anon:jit]");
	CHECK_USER(s, TGID, 0x14010, -ENOENT, "[unknown: anonymous]");
	CHECK_USER(s, TGID, 0x25010, -ENOENT, "[vdso-like]");

	/* the three ways to the file */
	CHECK_USER(s, TGID, addr_map_files + 3, 0, "symbolizer_test_target");
	CHECK_USER(s, TGID, addr_root + 3, 0, "symbolizer_test_target");
	off = target + 3 - text.start + text.pgoff;
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, exe_base, off);
	CHECK_USER(s, TGID, addr_bad_ino + 3, -ENOENT, want);

	/* the executable's first page carries its build-id: the symbols
	 * already loaded serve it */
	CHECK_USER(s, TGID, addr_trunc + 3, 0, "symbolizer_test_target");

	/* truncation keeps the terminator */
	CHECK(symbolizer_user(s, TGID, target, buf, 7) == 0);
	CHECK(!strcmp(buf, "symbol"));

	/* hot cache gives the same answers */
	CHECK_USER(s, TGID, target + 3, 0, "symbolizer_test_target");
	CHECK_USER(s, TGID, (uintptr_t)fn_read, 0, "read");

	symbolizer_free(s);

	/* loaded first, it has headers but no sections: an ELF address, no name */
	CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);
	r = symbolizer_user(s, TGID, addr_trunc + 3, buf, sizeof(buf));
	CHECK(r == -ENOENT);
	CHECK(!strncmp(buf, "trunc.so+0x", strlen("trunc.so+0x")));
	symbolizer_free(s);

	if (libc)
		dlclose(libc);
}

static void test_processes(void)
{
	char line[PATH_MAX + 128];
	struct symbolizer *s = NULL;

	CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);

	/* a process never seen alive stays [unknown: exited] until the next refresh */
	CHECK_USER(s, TGID_MISSING, 0x10010, -ENOENT, "[unknown: exited]");
	CHECK(mkdir(path_in("%d", TGID_MISSING), 0700) == 0);
	snprintf(line, sizeof(line), "10000-11000 r-xp 00000000 fd:01 0 %s\n",
		 path_in("not elf.txt"));
	write_text(path_in("%d/maps", TGID_MISSING), line);
	CHECK_USER(s, TGID_MISSING, 0x10010, -ENOENT, "[unknown: exited]");
	symbolizer_refresh_processes(s);
	CHECK_USER(s, TGID_MISSING, 0x10010, -ENOENT, "not elf.txt+0x10");

	/* once it exits (maps gone), its last-known maps still name its code */
	CHECK(unlink(path_in("%d/maps", TGID_MISSING)) == 0);
	symbolizer_refresh_processes(s);
	CHECK_USER(s, TGID_MISSING, 0x10010, -ENOENT, "not elf.txt+0x10");

	/* changed maps are seen only after a refresh */
	CHECK(mkdir(path_in("%d", TGID_CHANGING), 0700) == 0);
	write_text(path_in("%d/maps", TGID_CHANGING), line);
	CHECK_USER(s, TGID_CHANGING, 0x10010, -ENOENT, "not elf.txt+0x10");
	snprintf(line, sizeof(line), "10000-11000 r-xp 00005000 fd:01 0 %s\n",
		 path_in("not elf.txt"));
	write_text(path_in("%d/maps", TGID_CHANGING), line);
	CHECK_USER(s, TGID_CHANGING, 0x10010, -ENOENT, "not elf.txt+0x10");
	symbolizer_refresh_processes(s);
	CHECK_USER(s, TGID_CHANGING, 0x10010, -ENOENT, "not elf.txt+0x5010");
	symbolizer_refresh_processes(s);
	symbolizer_refresh_processes(s);

	/* more processes than the cache holds: evicted ones are read again */
	for (int i = 0; i < TGID_MANY_N; i++) {
		CHECK(mkdir(path_in("%d", TGID_MANY + i), 0700) == 0);
		snprintf(line, sizeof(line), "10000-11000 r-xp %08x fd:01 0 %s\n", i,
			 path_in("not elf.txt"));
		write_text(path_in("%d/maps", TGID_MANY + i), line);
	}
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < TGID_MANY_N; i++) {
			char want[64];

			snprintf(want, sizeof(want), "not elf.txt+0x%x", 0x10 + i);
			CHECK_USER(s, TGID_MANY + i, 0x10010, -ENOENT, want);
		}
	}
	symbolizer_free(s);
}

/* JIT code: anonymous executable mappings named by the process's perf map,
 * found through its root under its namespace pid, re-read when it changes. */
static void test_jit(void)
{
	struct symbolizer *s = NULL;

	CHECK(mkdir(path_in("%d", TGID_JIT), 0700) == 0);
	CHECK(mkdir(path_in("%d/root", TGID_JIT), 0700) == 0);
	CHECK(mkdir(path_in("%d/root/tmp", TGID_JIT), 0700) == 0);
	write_text(path_in("%d/maps", TGID_JIT),
		   "7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n"
		   "7f1000000000-7f1000001000 r-xp 00000000 00:00 0 [anon:jit]\n"
		   "7f2000000000-7f2000001000 r-xp 00000000 00:00 0 [vdso]\n");
	/* the container's pid 7 is host pid TGID_JIT */
	write_text(path_in("%d/status", TGID_JIT), "Name:\tjava\nNSpid:\t4545\t7\n");
	write_text(path_in("%d/root/tmp/perf-7.map", TGID_JIT),
		   "7f0000000100 40 Interpreter\n7f1000000000 10 LambdaForm;invoke\n"
		   "7f2000000000 10 not_the_vdso\n");
	CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);
	CHECK_USER(s, TGID_JIT, 0x7f0000000120, 0, "Interpreter");
	CHECK_USER(s, TGID_JIT, 0x7f0000000140, -ENOENT, "[unknown: anonymous]");
	CHECK_USER(s, TGID_JIT, 0x7f1000000008, 0, "LambdaForm:invoke");
	CHECK_USER(s, TGID_JIT, 0x7f2000000004, -ENOENT, "[vdso]");
	/* new code: seen at the next refresh (drain) */
	write_text(path_in("%d/root/tmp/perf-7.map", TGID_JIT),
		   "7f0000000100 40 Interpreter\n7f0000000140 40 compiled_loop\n");
	CHECK_USER(s, TGID_JIT, 0x7f0000000150, -ENOENT, "[unknown: anonymous]");
	uint64_t unnamed[SYMBOLIZER_UNNAMED_COUNT];
	symbolizer_unnamed(s, unnamed); /* each [unknown: WHY] counted by WHY */
	CHECK(unnamed[SYMBOLIZER_UNNAMED_ANONYMOUS] == 2 &&
	      unnamed[SYMBOLIZER_UNNAMED_EXITED] == 0 && unnamed[SYMBOLIZER_UNNAMED_UNMAPPED] == 0);
	symbolizer_refresh_processes(s);
	CHECK_USER(s, TGID_JIT, 0x7f0000000150, 0, "compiled_loop");
	/* the process exited (its root is gone): the last map still names */
	CHECK(unlink(path_in("%d/root/tmp/perf-7.map", TGID_JIT)) == 0);
	symbolizer_refresh_processes(s);
	CHECK_USER(s, TGID_JIT, 0x7f0000000150, 0, "compiled_loop");
	symbolizer_free(s);
}

/* Corrupts the executable's ELF, program and section headers at random:
 * every lookup must return a terminated answer, without crashing. */
static void test_corrupt_elf(void)
{
	struct self_map text;
	unsigned char *image;
	char line[PATH_MAX + 128];
	uint64_t shoff;
	size_t size;
	struct stat st;
	int fd;

	CHECK(self_map_find((uintptr_t)symbolizer_test_target, &text));
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	if (fd < 0)
		return;
	size = st.st_size;
	image = malloc(size);
	CHECK(image && read(fd, image, size) == (ssize_t)size);
	close(fd);
	if (!image || size < 4096)
		goto out;
	memcpy(&shoff, image + 0x28, sizeof(shoff)); /* e_shoff, ELF64 */
	if (shoff >= size)
		shoff = size - 1;

	CHECK(mkdir(path_in("%d", TGID_FUZZ), 0700) == 0);
	snprintf(line, sizeof(line), "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " fd:01 0 %s\n",
		 text.start, text.end, text.pgoff, path_in("fuzz.so"));
	write_text(path_in("%d/maps", TGID_FUZZ), line);
	srand(1);
	for (int i = 0; i < 300; i++) {
		unsigned char *copy = malloc(size);
		struct symbolizer *s = NULL;
		char buf[64];
		int r;

		if (!copy)
			break;
		memcpy(copy, image, size);
		int n_bytes = 1 + rand() % 16;

		for (int j = 0; j < n_bytes; j++) {
			size_t at = rand() % 2 ? (size_t)(rand() % 4096)
					       : shoff + rand() % (size - shoff);

			copy[at] = rand();
		}
		/* a few: cut the file short as well */
		write_file(path_in("fuzz.so"), copy, i % 5 ? size : rand() % size);
		free(copy);
		CHECK(symbolizer_new(dir, "/usr/lib/debug", &s) == 0);
		if (!s)
			break;
		memset(buf, 'x', sizeof(buf));
		r = symbolizer_user(s, TGID_FUZZ, (uintptr_t)symbolizer_test_target, buf,
				    sizeof(buf));
		CHECK(r == 0 || r == -ENOENT);
		CHECK(memchr(buf, '\0', sizeof(buf)));
		symbolizer_free(s);
	}
out:
	free(image);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) < 0 ? -errno : 0;
}

static void remove_tree(const char *path)
{
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "could not remove %s\n", path);
}

/* As check_user(), for a frame recorded by file id. */
#define CHECK_FILE(s, id, vaddr, want_r, want)                                                     \
	check_file(__FILE__, __LINE__, s, id, vaddr, want_r, want)

static void check_file(const char *file, int line, struct symbolizer *s, uint32_t id,
		       uint64_t vaddr, int want_r, const char *want)
{
	char buf[256];
	int r = symbolizer_user_file(s, id, vaddr, buf, sizeof(buf));

	check_names(file, line, "file frame", vaddr, r, buf, want_r, want);
}

/* Frames recorded by file id and ELF address (file_ids.h): named from the
 * file, whatever process they came from, until the id is forgotten; an id
 * handed out again names its new file, not what was cached for the old. */
static void test_file_frames(void)
{
	struct file_id_info f = { .tgid = TGID_MISSING }, other = { 0 };
	uint64_t counts[SYMBOLIZER_UNNAMED_COUNT], vaddr, before;
	const char *exe_base = strrchr(exe, '/') + 1;
	struct symbolizer *s = NULL;
	struct file_ids *ids = NULL;
	char want[PATH_MAX + 32];
	struct stat st;
	Dl_info dl;
	uint32_t id, id2;

	CHECK(dladdr((void *)symbolizer_test_target, &dl) && dl.dli_fbase);
	vaddr = (uintptr_t)symbolizer_test_target - (uintptr_t)dl.dli_fbase; /* PIE: based at 0 */
	CHECK(stat(exe, &st) == 0);
	f.dev = st.st_dev;
	f.ino = st.st_ino;
	snprintf(f.path, sizeof(f.path), "%s", exe);
	CHECK(file_ids_new(2, 0, &ids) == 0); /* ids 1 and 2; a retired one goes at the next add */
	CHECK(symbolizer_new(dir, "/nonexistent", &s) == 0);
	if (!s || !ids)
		goto out;
	symbolizer_use_file_ids(s, ids);
	id = file_ids_add(ids, &f);
	id2 = file_ids_add(ids, &f); /* the same file, as another table saw it */
	CHECK(id == 1 && id2 == 2);
	CHECK_FILE(s, id, vaddr, 0, "symbolizer_test_target");
	CHECK_FILE(s, id, vaddr + 3, 0, "symbolizer_test_target");
	CHECK_FILE(s, id2, vaddr + 3, 0, "symbolizer_test_target");
	symbolizer_unnamed(s, counts);
	before = counts[SYMBOLIZER_UNNAMED_FORGOTTEN];
	CHECK_FILE(s, 3, vaddr, -ENOENT, "[unknown: file forgotten]");
	symbolizer_unnamed(s, counts);
	CHECK(counts[SYMBOLIZER_UNNAMED_FORGOTTEN] == before + 1);
	/* Id 1 given to another file: a path that is not this inode any more
	 * names nothing, and the old file's names are not reused. */
	file_ids_retire(ids, id);
	other = f;
	other.ino = st.st_ino + 1;
	CHECK(file_ids_add(ids, &other) == 1);
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, exe_base, vaddr);
	CHECK_FILE(s, 1, vaddr, -ENOENT, want);
	CHECK_FILE(s, id2, vaddr, 0, "symbolizer_test_target");
out:
	symbolizer_free(s);
	file_ids_free(ids);
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0 || !mkdtemp(dir)) {
		perror("test-symbolizer: setup");
		return 1;
	}
	exe[n] = '\0';

	fixture_kallsyms();
	test_kernel();
	test_user();
	test_processes();
	test_jit();
	test_corrupt_elf();
	test_file_frames();

	if (!check_failures)
		remove_tree(dir);
	else
		fprintf(stderr, "fixture left in %s\n", dir);
	return CHECK_DONE();
}
