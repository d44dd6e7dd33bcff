/* See elf_build_id.h. */
#include "elf_build_id.h"

#include <stdbool.h>
#include <string.h>

#define NOTE_MAX_BYTES (64u << 10)

static bool in_file(uint64_t offset, uint64_t size, uint64_t file_size)
{
	return offset <= file_size && size <= file_size - offset;
}

size_t elf_build_id(Elf *elf, size_t phnum, uint64_t file_size, uint8_t id[ELF_BUILD_ID_MAX])
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t pos = 0, next, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE ||
		    !in_file(ph.p_offset, ph.p_filesz, file_size) || ph.p_filesz > NOTE_MAX_BYTES)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		while (d && (next = gelf_getnote(d, pos, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof("GNU") &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", sizeof("GNU")) &&
			    nh.n_descsz && nh.n_descsz <= ELF_BUILD_ID_MAX) {
				memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
				return nh.n_descsz;
			}
			pos = next;
		}
	}
	return 0;
}
