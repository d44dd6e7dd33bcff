/*
 * elf_funcs: the functions of an ELF file that a request pattern names, with
 * the file offsets uprobes attach to. Turns "--request SYMBOL[@BINARY]" into
 * (binary, offsets): which binaries to look in (a process's executable and
 * mapped files, or a name found on $PATH and in the library directories), and
 * which functions of that binary match SYMBOL (C names, C++ mangled,
 * demangled or qualified names, globs). Reads files with libelf, demangles with
 * libstdc++'s __cxa_demangle. Called by the daemon when it sets up a request;
 * elf_funcs_split_spec is shared with offcpuctl. Does not log: errors come back
 * as a negative errno with a one-line, user-facing message in err.
 */
#ifndef ELF_FUNCS_H
#define ELF_FUNCS_H

#include <stddef.h>
#include <stdint.h>

#define ELF_FUNCS_MAX		 64   /* functions one pattern may match */
#define ELF_FUNCS_CANDIDATES_MAX 4096 /* binaries one process may offer */

struct elf_func {
	char *name;	 /* as in the symbol table (mangled for C++) */
	char *demangled; /* NULL if the name is not a C++ mangled name */
	uint64_t offset; /* file offset of the first instruction */
	uint64_t size;	 /* bytes of code (st_size; 0 if the symbol does not say) */
};

/*
 * Finds the defined functions (STT_FUNC or STT_GNU_IFUNC, st_shndx != SHN_UNDEF,
 * st_value != 0) of the ELF file at path that pattern names. Both .symtab and
 * .dynsym are read (a stripped binary has only .dynsym); a function listed in
 * both, or under several aliases at one address, is returned once (by offset),
 * named by the best of the aliases that matched: global before weak before
 * local, a public name before a '_' one, non-versioned before "name@VERSION".
 * The pattern matches a function if it equals:
 *  - its symbol name ("do_command", "_Z10do_commandP3THDb"), with or without a
 *    "@VERSION"/"@@VERSION" suffix;
 *  - its demangled name ("do_command(THD*, bool)");
 *  - its demangled name without the parameter list, return type and
 *    "[abi:...]" tags, i.e. the qualified name ("do_command",
 *    "app::Server::handle"), with template arguments kept as demangled;
 *    a compiler clone keeps its suffix ("foo.constprop.0", "foo.cold"), as
 *    C symbol names do, so "foo" names only the function itself;
 * or, if pattern contains any of * ? [, fnmatch(pattern, X, 0) == 0 for X any of
 * the three forms above. The offset is st_value converted to a file offset
 * through the section (else the PT_LOAD segment) that contains it, so PIE,
 * non-PIE and shared libraries all work. Results are sorted by offset.
 * Returns the number of matches (>= 1) with *ret set (free with
 * elf_funcs_free), or a negative errno with a one-line message in err:
 *  -ENOENT  the file does not exist ("PATH: no such file")
 *  -ENOEXEC not an ELF file ("PATH is not an ELF file"), or no symbol tables at
 *           all ("PATH has no symbol table (.symtab or .dynsym)")
 *  -ESRCH   nothing matches: "no function 'PAT' in PATH; close matches: a, b, c"
 *           (up to 5 distinct qualified names: those that contain the pattern
 *           case-insensitively first (for a glob: that match it ignoring case),
 *           then those at the smallest case-insensitive Levenshtein distance from
 *           it, if at most max(2, strlen(pattern) / 3); no "; close matches"
 *           part if there are none)
 *  -E2BIG   more than ELF_FUNCS_MAX match: "'PAT' matches N functions in PATH
 *           (at most 64): be more specific"
 *  -EINVAL  an empty pattern or one over 4096 bytes
 *  -ENOMEM, or another errno from open(2) ("PATH: <strerror>")
 */
int elf_funcs_find(const char *path, const char *pattern, struct elf_func **ret, char *err,
		   size_t err_size);
void elf_funcs_free(struct elf_func *f, size_t n); /* NULL-safe */

/*
 * Where a request's binary is. spec_binary is the part after '@' (NULL or ""
 * if none).
 * With pid > 0: candidates are /proc/PID/exe's target and then each distinct
 * file-backed executable mapping in /proc/PID/maps, in maps order (at most
 * ELF_FUNCS_CANDIDATES_MAX); if spec_binary is given, only those whose path
 * equals it or whose basename equals it ("libc.so.6", "mariadbd") or starts
 * with it followed by '.' or '-' ("libfoo" matches libfoo.so.1 and
 * libfoo-2.3.so). The paths returned are prefixed with "/proc/PID/root", so
 * that a process in another mount namespace resolves to its own file; a
 * mapping whose path ends in " (deleted)" is skipped.
 * With pid <= 0: spec_binary is required; an absolute path is used as is (not
 * checked: elf_funcs_find reports a missing file), a bare name is looked up in
 * $PATH (default "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
 * and then in /lib/TRIPLET, /usr/lib/TRIPLET, /lib and /usr/lib, where TRIPLET
 * is the multiarch directory of this build ("x86_64-linux-gnu"); the first hit
 * is the one candidate.
 * Returns the number of candidate paths (>= 1) with *ret set (a malloc'd array
 * of malloc'd strings; free with elf_funcs_paths_free), or a negative errno
 * with a message in err:
 *  -ESRCH   "no process PID"
 *  -ENOENT  "no binary 'X' in process PID", "process PID maps no files",
 *           "binary 'X' not found (give a path)"
 *  -EINVAL  "--request SYM without @BINARY needs a pid", or a relative path
 *           ("binary 'X': give an absolute path")
 *  -ENOMEM, or another errno from reading /proc/PID/maps
 */
int elf_funcs_candidates(int pid, const char *spec_binary, char ***ret, char *err, size_t err_size);
void elf_funcs_paths_free(char **paths, size_t n); /* NULL-safe */

/*
 * The usual flow, both steps together: the first candidate binary (in the
 * order above) in which pattern matches at least one function; *ret_path is
 * that candidate (malloc'd) and *ret its functions, as from elf_funcs_find.
 * A candidate that cannot be read (gone, not ELF, no symbols) is skipped when
 * there are others. Errors as above; -E2BIG and -ENOMEM stop the search. If
 * no candidate matches, the -ESRCH message names the binaries searched ("no
 * function 'X' in /usr/sbin/mariadbd or 12 other mapped files; close matches:
 * ..."), the paths without their "/proc/PID/root" prefix, the close matches
 * from the first candidate (the main executable). The ret_ parameters are
 * written only on success.
 */
int elf_funcs_resolve(int pid, const char *spec_binary, const char *pattern, char **ret_path,
		      struct elf_func **ret, char *err, size_t err_size);

/*
 * Splits "SYMBOL[@BINARY]" at the last '@' into sym and bin (bin is "" without
 * '@'). The simple rule means a versioned symbol needs an explicit binary:
 * "memcpy@GLIBC_2.14" is memcpy in a binary named GLIBC_2.14, while
 * "memcpy@GLIBC_2.14@libc.so.6" is what it looks like. Returns 0, -EINVAL for
 * an empty symbol or an empty binary after '@', or -ENAMETOOLONG if a part
 * does not fit its buffer. sym and bin are left unchanged on error.
 */
int elf_funcs_split_spec(const char *spec, char *sym, size_t sym_size, char *bin, size_t bin_size);

/* path as the user knows it: without the "/proc/PID/root" prefix that
 * elf_funcs_candidates() adds for pid. */
const char *elf_funcs_display_path(int pid, const char *path);

#endif
