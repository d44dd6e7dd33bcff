/*
 * demangle: C++ symbol names made readable, with libstdc++'s __cxa_demangle:
 * a shared library already linked, under the GCC runtime library exception.
 * libiberty's cplus_demangle is the same code, but Debian ships it only as a
 * static archive (libiberty-dev) under the GPL/LGPL. Shared by the symbolizer
 * (stack frames) and elf_funcs (request symbols). Does not log.
 */
#ifndef DEMANGLE_H
#define DEMANGLE_H

#include <stdbool.h>

/* True if name looks like an Itanium C++ ABI mangled name ("_Z..."). */
bool demangle_is_mangled(const char *name);

/*
 * The demangled form of name, malloc'd; NULL with *ret_err = -EINVAL if name
 * is not a valid mangled name (use it as it is), -ENOMEM when out of memory.
 */
char *demangle(const char *name, int *ret_err);

#endif
