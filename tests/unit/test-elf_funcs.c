/*
 * Unit test for symbols/elf_funcs.c. Builds its fixtures at run time with the
 * machine's compilers in a temporary directory: C executables (PIE, non-PIE,
 * stripped with only .dynsym), a C++ program, a shared library and an ELF
 * without symbols. Offsets are checked independently of any ELF parsing: each
 * fixture prints the first bytes of its functions as it sees them in memory
 * (the shared library is dlopen'ed here), and those must be the bytes at the
 * returned offset of the file. Exits 77 if there is no C compiler; without
 * g++ only the C++ checks are skipped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "elf_funcs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define CODE_BYTES 16

static char dir[] = "/tmp/test-elf_funcs.XXXXXX";

/* The path of a fixture file, into buf. */
static char *path_to(char buf[PATH_MAX], const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return buf;
}

/* The same, valid until the next call: for immediate use. */
static char *path_in(const char *name)
{
	static char buf[PATH_MAX];

	return path_to(buf, name);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	CHECK(f);
	if (!f)
		return;
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* Runs a shell command (cd'ed to the fixture directory); true if it exited 0. */
__attribute__((format(printf, 1, 2))) static bool run(const char *fmt, ...)
{
	char cmd[4096];
	int n = snprintf(cmd, sizeof(cmd), "cd %s && ", dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - n, fmt, ap);
	va_end(ap);
	return system(cmd) == 0;
}

/* A fixture's report of its own code: "NAME HEX" lines from "EXE --dump". */
static bool fixture_code(const char *exe, const char *name, unsigned char code[CODE_BYTES])
{
	char cmd[PATH_MAX + 16], line[256];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --dump", exe);
	p = popen(cmd, "re");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		size_t n = strlen(name);

		if (strncmp(line, name, n) || line[n] != ' ')
			continue;
		found = true;
		for (int i = 0; i < CODE_BYTES; i++)
			found &= sscanf(line + n + 1 + 2 * i, "%2hhx", &code[i]) == 1;
	}
	pclose(p);
	return found;
}

static bool file_code(const char *path, uint64_t offset, unsigned char code[CODE_BYTES])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, code, CODE_BYTES, offset) == CODE_BYTES;
	close(fd);
	return ok;
}

/* Finds pattern in path, expecting exactly one function named want_name
 * whose code, read at its offset, is what the code argument says. Returns
 * the offset (0 if not found). */
#define CHECK_ONE(path, pattern, want_name, code)                                                  \
	check_one(__FILE__, __LINE__, path, pattern, want_name, code)
static uint64_t check_one(const char *file, int line, const char *path, const char *pattern,
			  const char *want_name, const unsigned char *code)
{
	unsigned char got[CODE_BYTES];
	struct elf_func *f = NULL;
	uint64_t offset = 0;
	char err[512] = "";
	int n = elf_funcs_find(path, pattern, &f, err, sizeof(err));

	CHECK_AT(file, line, n == 1, "'%s' in %s: got %d (%s)", pattern, path, n, err);
	if (n != 1) {
		if (n > 0)
			elf_funcs_free(f, n);
		return 0;
	}
	CHECK_AT(file, line, !strcmp(f[0].name, want_name), "'%s': got name %s, want %s", pattern,
		 f[0].name, want_name);
	if (code) {
		CHECK_AT(file, line, file_code(path, f[0].offset, got), "read %s", path);
		CHECK_AT(file, line, !memcmp(got, code, CODE_BYTES),
			 "'%s': bytes at offset 0x%llx of %s are not the function's", pattern,
			 (unsigned long long)f[0].offset, path);
	}
	offset = f[0].offset;
	elf_funcs_free(f, n);
	return offset;
}

/* Expects elf_funcs_find to fail with want_r and a message containing want. */
#define CHECK_FIND_FAILS(path, pattern, want_r, want)                                              \
	check_find_fails(__FILE__, __LINE__, path, pattern, want_r, want)
static void check_find_fails(const char *file, int line, const char *path, const char *pattern,
			     int want_r, const char *want)
{
	struct elf_func *f = NULL;
	char err[512] = "";
	int n = elf_funcs_find(path, pattern, &f, err, sizeof(err));

	CHECK_AT(file, line, n == want_r && strstr(err, want),
		 "'%s' in %s: got %d \"%s\", want %d \"...%s...\"", pattern, path, n, err, want_r,
		 want);
	if (n > 0)
		elf_funcs_free(f, n);
}

static const char app_c[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"#define FUNC __attribute__((noinline, noclone))\n"
	"volatile int sink;\n"
	"FUNC int handle_request(int x) { sink = sink * 3 + x; return sink ^ 0x55; }\n"
	"FUNC int handle_other(int x) { sink += x * 7; if (sink > 1000) sink = 0; return sink; }\n"
	"static FUNC int hidden_helper(int x) { sink -= x; return sink * 11; }\n"
	"static void dump(const char *name, const void *code)\n"
	"{\n"
	"	const unsigned char *b = code;\n"
	"	printf(\"%s \", name);\n"
	"	for (int i = 0; i < 16; i++)\n"
	"		printf(\"%02x\", b[i]);\n"
	"	printf(\"\\n\");\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	if (argc > 1 && !strcmp(argv[1], \"--dump\")) {\n"
	"		dump(\"handle_request\", (const void *)handle_request);\n"
	"		dump(\"handle_other\", (const void *)handle_other);\n"
	"		dump(\"hidden_helper\", (const void *)hidden_helper);\n"
	"		return 0;\n"
	"	}\n"
	"	return handle_request(argc) + handle_other(argc) + hidden_helper(argc);\n"
	"}\n";

static const char app_cpp[] =
	"#include <cstdio>\n"
	"#include <cstring>\n"
	"#define FUNC __attribute__((noinline, noclone))\n"
	"volatile int sink;\n"
	"namespace app {\n"
	"struct Server {\n"
	"	void handle(int);\n"
	"	int count() const;\n"
	"};\n"
	"FUNC void Server::handle(int x) { sink += x; }\n"
	"FUNC int Server::count() const { return sink * 5; }\n"
	"template <typename T> FUNC T twice(T x) { return x * 2 + sink; }\n"
	"template int twice<int>(int);\n"
	"}\n"
	"FUNC void do_command(void *p, bool b) { sink += b ? 1 : (int)(long)p; }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	app::Server s;\n"
	"	if (argc > 1 && !strcmp(argv[1], \"--dump\")) {\n"
	"		const unsigned char *b = (const unsigned char *)(void *)do_command;\n"
	"		printf(\"do_command \");\n"
	"		for (int i = 0; i < 16; i++)\n"
	"			printf(\"%02x\", b[i]);\n"
	"		printf(\"\\n\");\n"
	"		return 0;\n"
	"	}\n"
	"	s.handle(argc);\n"
	"	do_command(argv, argc > 2);\n"
	"	return s.count() + app::twice(argc);\n"
	"}\n";

static const char lib_c[] =
	"#define FUNC __attribute__((noinline, noclone))\n"
	"volatile int lib_sink;\n"
	"FUNC int lib_request(int x) { lib_sink = lib_sink * 13 + x; return lib_sink >> 2; }\n"
	"FUNC int lib_other(int x) { lib_sink ^= x; return lib_sink + 99; }\n"
	"FUNC int __impl_call(int x) { return lib_sink - x; }\n"
	"extern int impl_call(int) __attribute__((weak, alias(\"__impl_call\")));\n";

static const char nosym_c[] = "void _start(void) { for (;;); }\n";

static void test_c(void)
{
	unsigned char req[CODE_BYTES], other[CODE_BYTES], hidden[CODE_BYTES];
	char pie[PATH_MAX], nopie[PATH_MAX];
	struct elf_func *f;
	uint64_t off;
	char err[512];
	int n;

	path_to(pie, "app");
	path_to(nopie, "app-nopie");
	write_text(path_in("app.c"), app_c);
	CHECK(run("cc -O2 -fPIE -pie -o app app.c"));
	CHECK(run("cc -O2 -fno-pie -no-pie -o app-nopie app.c"));

	/* PIE: offsets through sections, code as the running program has it */
	CHECK(fixture_code(pie, "handle_request", req));
	CHECK(fixture_code(pie, "handle_other", other));
	CHECK(fixture_code(pie, "hidden_helper", hidden));
	CHECK(memcmp(req, other, CODE_BYTES)); /* else a mix-up would go unnoticed */
	off = CHECK_ONE(pie, "handle_request", "handle_request", req);
	CHECK(off != 0);
	CHECK_ONE(pie, "handle_other", "handle_other", other);
	CHECK_ONE(pie, "hidden_helper", "hidden_helper", hidden); /* local, in .symtab */
	CHECK_ONE(pie, "handle_r?quest", "handle_request", req);
	CHECK_ONE(pie, "[h]andle_request", "handle_request", req);

	/* a glob: both, sorted by offset; C names are not demangled */
	n = elf_funcs_find(pie, "handle_*", &f, err, sizeof(err));
	CHECK_MSG(n == 2, "got %d (%s)", n, err);
	if (n == 2) {
		CHECK(f[0].offset < f[1].offset);
		CHECK(!f[0].demangled && !f[1].demangled);
		CHECK(!strcmp(f[0].name, "handle_request") || !strcmp(f[1].name, "handle_request"));
		CHECK(!strcmp(f[0].name, "handle_other") || !strcmp(f[1].name, "handle_other"));
	}
	if (n > 0)
		elf_funcs_free(f, n);

	/* in both .symtab and .dynsym: once */
	CHECK(run("cc -O2 -rdynamic -o app-dyn app.c"));
	CHECK_ONE(path_in("app-dyn"), "handle_request", "handle_request", NULL);

	/* non-PIE: addresses far from file offsets */
	CHECK(fixture_code(nopie, "handle_request", req));
	off = CHECK_ONE(nopie, "handle_request", "handle_request", req);
	CHECK(off != 0 && off < 0x400000);

	/* misspellings and the like */
	CHECK_FIND_FAILS(pie, "handle_requets", -ESRCH, "no function 'handle_requets' in ");
	CHECK_FIND_FAILS(pie, "handle_requets", -ESRCH, "; close matches: handle_request");
	CHECK_FIND_FAILS(pie, "REQUEST", -ESRCH, "close matches: handle_request");
	CHECK_FIND_FAILS(pie, "handle_request2x", -ESRCH, "close matches: handle_request");
	CHECK_FIND_FAILS(pie, "HANDLE_*", -ESRCH, "close matches: handle_other, handle_request");
	CHECK_FIND_FAILS(pie, "zzzzzzzzzzzzzzzzz", -ESRCH, "no function 'zzzzzzzzzzzzzzzzz' in ");
	n = elf_funcs_find(pie, "zzzzzzzzzzzzzzzzz", &f, err, sizeof(err));
	CHECK(n == -ESRCH && !strstr(err, "close matches"));
	CHECK_FIND_FAILS(pie, "handle", -ESRCH, "close matches: handle_other, handle_request");
	CHECK_FIND_FAILS(pie, "", -EINVAL, "pattern");
	CHECK_FIND_FAILS(path_in("no-such-file"), "main", -ENOENT, "no-such-file: no such file");
	CHECK_FIND_FAILS(path_in("app.c"), "main", -ENOEXEC, "app.c is not an ELF file");
	CHECK_FIND_FAILS(dir, "main", -ENOEXEC, "is not an ELF file");

	/* err may be small: truncated, still terminated */
	n = elf_funcs_find(pie, "handle_requets", &f, err, 8);
	CHECK(n == -ESRCH && strlen(err) == 7);
}

/* Only in .dynsym after strip --strip-all; a static function is gone. */
static void test_stripped(void)
{
	unsigned char req[CODE_BYTES];
	char exe[PATH_MAX];

	path_to(exe, "app-stripped");

	if (!run("cc -O2 -rdynamic -o app-stripped app.c && strip --strip-all app-stripped")) {
		CHECK_MSG(false, "building the stripped fixture");
		return;
	}
	CHECK(!run("readelf -SW app-stripped | grep -q ' .symtab '"));
	CHECK(fixture_code(exe, "handle_request", req));
	CHECK_ONE(exe, "handle_request", "handle_request", req);
	CHECK_FIND_FAILS(exe, "hidden_helper", -ESRCH, "no function 'hidden_helper'");
}

static void test_nosym(void)
{
	write_text(path_in("nosym.c"), nosym_c);
	CHECK(run("cc -O2 -nostdlib -static -o nosym nosym.c && strip --strip-all nosym"));
	CHECK_FIND_FAILS(path_in("nosym"), "_start", -ENOEXEC,
			 "nosym has no symbol table (.symtab or .dynsym)");
}

static void test_too_many(void)
{
	char src[8192] = "", *p = src, err[512];
	struct elf_func *f;
	int n;

	for (int i = 0; i < ELF_FUNCS_MAX + 6; i++)
		p += snprintf(p, src + sizeof(src) - p, "int many_%d(int x) { return x * %d; }\n",
			      i, i + 3);
	snprintf(p, src + sizeof(src) - p, "int main(void) { return 0; }\n");
	write_text(path_in("many.c"), src);
	CHECK(run("cc -O0 -o many many.c"));
	CHECK_FIND_FAILS(path_in("many"), "many_*", -E2BIG, "'many_*' matches 70 functions in ");
	CHECK_FIND_FAILS(path_in("many"), "many_*", -E2BIG, "(at most 64): be more specific");
	n = elf_funcs_find(path_in("many"), "many_4?", &f, err, sizeof(err));
	CHECK_MSG(n == 10, "got %d (%s)", n, err);
	if (n > 0)
		elf_funcs_free(f, n);
}

static void check_cpp_names(const char *exe, const char *pattern, int want_n, const char *want_name,
			    const char *want_demangled)
{
	struct elf_func *f = NULL;
	char err[512] = "";
	int n = elf_funcs_find(exe, pattern, &f, err, sizeof(err));
	bool found = false;

	CHECK_MSG(n == want_n, "'%s': got %d (%s), want %d", pattern, n, err, want_n);
	for (int i = 0; i < n; i++)
		found |= !strcmp(f[i].name, want_name) && f[i].demangled &&
			 !strcmp(f[i].demangled, want_demangled);
	CHECK_MSG(n <= 0 || found, "'%s': %s (%s) not among the matches", pattern, want_name,
		  want_demangled);
	if (n > 0)
		elf_funcs_free(f, n);
}

static void test_cpp(void)
{
	unsigned char code[CODE_BYTES];
	char exe[PATH_MAX];

	path_to(exe, "app-cpp");
	if (!run("command -v g++ >/dev/null 2>&1")) {
		printf("skipped: C++ checks (no g++)\n");
		return;
	}
	write_text(path_in("app.cpp"), app_cpp);
	if (!run("g++ -O2 -o app-cpp app.cpp")) {
		CHECK_MSG(false, "building the C++ fixture");
		return;
	}
	CHECK(fixture_code(exe, "do_command", code));
	CHECK_ONE(exe, "do_command", "_Z10do_commandPvb", code);
	CHECK_ONE(exe, "_Z10do_commandPvb", "_Z10do_commandPvb", code);
	CHECK_ONE(exe, "do_command(void*, bool)", "_Z10do_commandPvb", code);
	check_cpp_names(exe, "do_command", 1, "_Z10do_commandPvb", "do_command(void*, bool)");
	check_cpp_names(exe, "app::Server::handle", 1, "_ZN3app6Server6handleEi",
			"app::Server::handle(int)");
	check_cpp_names(exe, "app::Server::handle(int)", 1, "_ZN3app6Server6handleEi",
			"app::Server::handle(int)");
	check_cpp_names(exe, "app::Server::*", 2, "_ZNK3app6Server5countEv",
			"app::Server::count() const");
	check_cpp_names(exe, "app::Server::*", 2, "_ZN3app6Server6handleEi",
			"app::Server::handle(int)");
	check_cpp_names(exe, "app::twice<int>", 1, "_ZN3app5twiceIiEET_S1_",
			"int app::twice<int>(int)");
	check_cpp_names(exe, "app::twice<*>", 1, "_ZN3app5twiceIiEET_S1_",
			"int app::twice<int>(int)");
	CHECK_FIND_FAILS(exe, "app::Server", -ESRCH, "close matches: app::Server::count");
	CHECK_FIND_FAILS(exe, "app::Server::handel", -ESRCH, "close matches: app::Server::handle");
	CHECK_FIND_FAILS(exe, "app::Client::handle", -ESRCH, "close matches: app::Server::handle");
}

/* The library is dlopen'ed into this process: the code is what dlsym
 * points at, and the library is one of this process's mapped files. */
static void test_library(void)
{
	char err[512], want[2 * PATH_MAX], real_dir[PATH_MAX], exe[PATH_MAX], lib[PATH_MAX], *path;
	struct elf_func *f;
	char **paths;
	void *h, *sym;
	ssize_t len;
	int n, pid = getpid();

	path_to(lib, "libreqtest.so");
	write_text(path_in("lib.c"), lib_c);
	if (!run("cc -O2 -shared -fPIC -o libreqtest.so lib.c && cp libreqtest.so libdel-1.so") ||
	    !realpath(dir, real_dir)) {
		CHECK_MSG(false, "building the library fixture");
		return;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK_MSG(h, "dlopen: %s", dlerror());
	if (!h)
		return;
	sym = dlsym(h, "lib_request");
	CHECK(sym);
	if (sym)
		CHECK_ONE(lib, "lib_request", "lib_request", sym);
	sym = dlsym(h, "lib_other");
	if (sym)
		CHECK_ONE(lib, "lib_other", "lib_other", sym);

	/* aliases: the one asked for, or the public one of those that match */
	CHECK(CHECK_ONE(lib, "__impl_call", "__impl_call", NULL) ==
	      CHECK_ONE(lib, "*impl_call", "impl_call", NULL));
	CHECK_ONE(lib, "impl_call", "impl_call", NULL);

	/* by basename prefix, by basename, by path; the path in our own root */
	snprintf(want, sizeof(want), "/proc/%d/root%s/libreqtest.so", pid, real_dir);
	n = elf_funcs_candidates(pid, "libreqtest", &paths, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n == 1)
		CHECK_STR(paths[0], want);
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	n = elf_funcs_candidates(pid, "libreqtest.so", &paths, err, sizeof(err));
	CHECK(n == 1);
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	snprintf(want, sizeof(want), "%s/libreqtest.so", real_dir);
	n = elf_funcs_candidates(pid, want, &paths, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	n = elf_funcs_candidates(pid, "libreq", &paths, err, sizeof(err));
	CHECK_MSG(n == -ENOENT && strstr(err, "no binary 'libreq' in process "), "got %d (%s)", n,
		  err);

	/* without a binary: our executable first, then each mapped file once */
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(len > 0);
	exe[len > 0 ? len : 0] = '\0';
	snprintf(want, sizeof(want), "/proc/%d/root%s", pid, exe);
	n = elf_funcs_candidates(pid, NULL, &paths, err, sizeof(err));
	CHECK_MSG(n >= 3, "got %d (%s)", n, err); /* us, libc, libreqtest, ld.so... */
	if (n > 0) {
		CHECK_STR(paths[0], want);
		for (int i = 1; i < n; i++) {
			CHECK(strcmp(paths[i], paths[0]));
			CHECK(strcmp(paths[i], paths[i - 1]));
		}
		elf_funcs_paths_free(paths, n);
	}

	/* both steps: found in the library though the executable comes first */
	n = elf_funcs_resolve(pid, NULL, "lib_request", &path, &f, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n == 1) {
		snprintf(want, sizeof(want), "/proc/%d/root%s/libreqtest.so", pid, real_dir);
		CHECK_STR(path, want);
		CHECK_STR(f[0].name, "lib_request");
		free(path);
		elf_funcs_free(f, n);
	}
	n = elf_funcs_resolve(pid, "libreqtest", "lib_*", &path, &f, err, sizeof(err));
	CHECK_MSG(n == 2, "got %d (%s)", n, err);
	if (n > 0) {
		free(path);
		elf_funcs_free(f, n);
	}
	n = elf_funcs_resolve(pid, NULL, "no_such_function_anywhere", &path, &f, err, sizeof(err));
	snprintf(want, sizeof(want), "no function 'no_such_function_anywhere' in %s or ", exe);
	CHECK_MSG(n == -ESRCH && strstr(err, want) && strstr(err, " other mapped files"),
		  "got %d (%s)", n, err);
	n = elf_funcs_resolve(pid, "libreqtest", "lib_reqest", &path, &f, err, sizeof(err));
	snprintf(want, sizeof(want),
		 "no function 'lib_reqest' in %s/libreqtest.so; close matches: lib_request",
		 real_dir);
	CHECK_MSG(n == -ESRCH && !strcmp(err, want), "got %d (%s)", n, err);
	n = elf_funcs_resolve(pid, "libreqtest", "lib_*e*", &path, &f, err, sizeof(err));
	CHECK_MSG(n == 2, "got %d (%s)", n, err);
	if (n > 0) {
		free(path);
		elf_funcs_free(f, n);
	}

	/* a mapped file deleted since is skipped */
	h = dlopen(path_in("libdel-1.so"), RTLD_NOW | RTLD_LOCAL);
	CHECK(h);
	CHECK(unlink(path_in("libdel-1.so")) == 0);
	n = elf_funcs_candidates(pid, "libdel", &paths, err, sizeof(err));
	CHECK_MSG(n == -ENOENT, "got %d (%s)", n, err);
	if (n > 0)
		elf_funcs_paths_free(paths, n);

	n = elf_funcs_candidates(0x7ffffff0, NULL, &paths, err, sizeof(err));
	CHECK(n == -ESRCH);
	CHECK_STR(err, "no process 2147483632");
}

/* Without a pid: a path as is, a name on $PATH, then in the library dirs. */
static void test_names(void)
{
	const char *saved = getenv("PATH");
	char err[512], *old = saved ? strdup(saved) : NULL;
	char **paths;
	int n;

	n = elf_funcs_candidates(0, NULL, &paths, err, sizeof(err));
	CHECK(n == -EINVAL);
	CHECK_STR(err, "--request SYM without @BINARY needs a pid");
	n = elf_funcs_candidates(-1, "", &paths, err, sizeof(err));
	CHECK(n == -EINVAL);
	n = elf_funcs_candidates(0, "bin/app", &paths, err, sizeof(err));
	CHECK(n == -EINVAL);
	CHECK_STR(err, "binary 'bin/app': give an absolute path");

	n = elf_funcs_candidates(0, "/no/such/thing", &paths, err, sizeof(err));
	CHECK(n == 1);
	if (n == 1)
		CHECK_STR(paths[0], "/no/such/thing");
	if (n > 0)
		elf_funcs_paths_free(paths, n);

	/* app.c is in the directory too, but not executable */
	setenv("PATH", dir, 1);
	n = elf_funcs_candidates(0, "app", &paths, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n == 1)
		CHECK_STR(paths[0], path_in("app"));
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	n = elf_funcs_candidates(0, "app.c", &paths, err, sizeof(err));
	CHECK(n == -ENOENT);
	CHECK_STR(err, "binary 'app.c' not found (give a path)");
	unsetenv("PATH"); /* the default */
	n = elf_funcs_candidates(0, "sh", &paths, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n == 1)
		CHECK(paths[0][0] == '/' && strstr(paths[0], "bin/sh"));
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	if (old)
		setenv("PATH", old, 1);
	free(old);

	n = elf_funcs_candidates(0, "libc.so.6", &paths, err, sizeof(err));
	CHECK_MSG(n == 1, "got %d (%s)", n, err);
	if (n == 1)
		CHECK(!strncmp(paths[0], "/lib/", 5) || !strncmp(paths[0], "/usr/lib/", 9));
	if (n > 0)
		elf_funcs_paths_free(paths, n);
	n = elf_funcs_candidates(0, "no-such-binary-xyz", &paths, err, sizeof(err));
	CHECK(n == -ENOENT);
}

#define CHECK_SPLIT(spec, want_sym, want_bin)                                                      \
	do {                                                                                       \
		char sym_[64] = "?", bin_[64] = "?";                                               \
		CHECK(elf_funcs_split_spec(spec, sym_, sizeof(sym_), bin_, sizeof(bin_)) == 0);    \
		CHECK_STR(sym_, want_sym);                                                         \
		CHECK_STR(bin_, want_bin);                                                         \
	} while (0)

static void test_split_spec(void)
{
	char sym[8] = "?", bin[8] = "?";

	CHECK_SPLIT("do_command", "do_command", "");
	CHECK_SPLIT("do_command@mariadbd", "do_command", "mariadbd");
	CHECK_SPLIT("handle@/usr/lib/x86_64-linux-gnu/libfoo.so.1", "handle",
		    "/usr/lib/x86_64-linux-gnu/libfoo.so.1");
	CHECK_SPLIT("app::Server::handle(int)@srv", "app::Server::handle(int)", "srv");
	CHECK_SPLIT("handle_*@libreq", "handle_*", "libreq");
	/* the last '@': a versioned symbol needs its binary */
	CHECK_SPLIT("memcpy@GLIBC_2.14@libc.so.6", "memcpy@GLIBC_2.14", "libc.so.6");
	CHECK_SPLIT("memcpy@GLIBC_2.14", "memcpy", "GLIBC_2.14");

	CHECK(elf_funcs_split_spec("", sym, sizeof(sym), bin, sizeof(bin)) == -EINVAL);
	CHECK(elf_funcs_split_spec("@mariadbd", sym, sizeof(sym), bin, sizeof(bin)) == -EINVAL);
	CHECK(elf_funcs_split_spec("do_command@", sym, sizeof(sym), bin, sizeof(bin)) == -EINVAL);
	CHECK(elf_funcs_split_spec("do_command", sym, sizeof(sym), bin, sizeof(bin)) ==
	      -ENAMETOOLONG);
	CHECK(elf_funcs_split_spec("f@mariadbd", sym, sizeof(sym), bin, sizeof(bin)) ==
	      -ENAMETOOLONG);
	CHECK_STR(sym, "?"); /* unchanged on error */
	CHECK_STR(bin, "?");
	CHECK(elf_funcs_split_spec("f@mysqld", sym, sizeof(sym), bin, sizeof(bin)) == 0);
	CHECK_STR(sym, "f");
	CHECK_STR(bin, "mysqld");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("test-elf_funcs: mkdtemp");
		return 1;
	}
	write_text(path_in("probe.c"), "int main(void) { return 0; }\n");
	if (!run("cc -o probe probe.c")) {
		printf("skipped: no working C compiler (cc) to build the fixtures\n");
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		return 77;
	}
	test_split_spec();
	test_c();
	test_stripped();
	test_nosym();
	test_too_many();
	test_cpp();
	test_library();
	test_names();

	if (!check_failures)
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	else
		fprintf(stderr, "fixtures left in %s\n", dir);
	return CHECK_DONE();
}
