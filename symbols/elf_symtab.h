/*
 * elf_symtab: the one reader of an ELF file's symbol tables, shared by the
 * symbolizer (addresses to names) and elf_funcs (names to file offsets).
 * It bounds every section by the file's size, so a corrupt or truncated
 * file cannot send libelf past its end. Does not log.
 */
#ifndef ELF_SYMTAB_H
#define ELF_SYMTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/* Largest section read: symbol tables of the biggest binaries are far less. */
#define ELF_SECTION_MAX_BYTES (1ull << 30)

/* Whether [offset, offset + size) lies within a file of file_size bytes. */
bool elf_in_file(uint64_t offset, uint64_t size, uint64_t file_size);

/* Whether a section has its bytes in the file and is not over the limit. */
bool elf_section_usable(const GElf_Shdr *sh, uint64_t file_size);

/* Called with each function symbol; a nonzero return stops the walk. */
typedef int (*elf_func_visit_fn)(void *arg, const GElf_Sym *sym, const char *name);

/*
 * Calls visit on each defined function symbol (STT_FUNC or STT_GNU_IFUNC,
 * defined, at a nonzero address, with a name that does not begin with '@')
 * of the symbol table scn, in table order. Returns the first nonzero result
 * of visit, 0, or -EINVAL if the table or its strings cannot be read.
 */
int elf_symtab_funcs(Elf *elf, Elf_Scn *scn, uint64_t file_size, elf_func_visit_fn visit,
		     void *arg);

/* As elf_symtab_funcs(), for every defined symbol, functions or not
 * (data such as the loader's _r_debug). */
int elf_symtab_defined(Elf *elf, Elf_Scn *scn, uint64_t file_size, elf_func_visit_fn visit,
		       void *arg);

#endif
