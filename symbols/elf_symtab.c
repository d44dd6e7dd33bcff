/* elf_symtab: see elf_symtab.h. */
#include "elf_symtab.h"

#include <errno.h>
#include <stddef.h>

bool elf_in_file(uint64_t offset, uint64_t size, uint64_t file_size)
{
	return offset <= file_size && size <= file_size - offset;
}

bool elf_section_usable(const GElf_Shdr *sh, uint64_t file_size)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size <= ELF_SECTION_MAX_BYTES &&
	       elf_in_file(sh->sh_offset, sh->sh_size, file_size);
}

static int visit_symbols(Elf *elf, Elf_Scn *scn, uint64_t file_size, bool funcs_only,
			 elf_func_visit_fn visit, void *arg)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT), n;
	GElf_Shdr sh, str_sh;
	Elf_Scn *str_scn;
	Elf_Data *d;

	if (!gelf_getshdr(scn, &sh) || !elf_section_usable(&sh, file_size))
		return -EINVAL;
	str_scn = elf_getscn(elf, sh.sh_link);
	if (!str_scn || !gelf_getshdr(str_scn, &str_sh) || !elf_section_usable(&str_sh, file_size))
		return -EINVAL;
	d = elf_getdata(scn, NULL);
	if (!d || !entsize)
		return -EINVAL;
	n = d->d_size / entsize;
	for (size_t i = 1; i < n; i++) { /* entry 0 is the null symbol */
		const char *name;
		GElf_Sym sym;
		int r;

		if (!gelf_getsym(d, i, &sym))
			break;
		if (funcs_only && GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		    GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !name[0] || name[0] == '@')
			continue;
		r = visit(arg, &sym, name);
		if (r)
			return r;
	}
	return 0;
}

int elf_symtab_funcs(Elf *elf, Elf_Scn *scn, uint64_t file_size, elf_func_visit_fn visit,
		     void *arg)
{
	return visit_symbols(elf, scn, file_size, true, visit, arg);
}

int elf_symtab_defined(Elf *elf, Elf_Scn *scn, uint64_t file_size, elf_func_visit_fn visit,
		       void *arg)
{
	return visit_symbols(elf, scn, file_size, false, visit, arg);
}
