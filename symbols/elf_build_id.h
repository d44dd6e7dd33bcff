/*
 * elf_build_id: the GNU build-id of an ELF file, from its PT_NOTE segments.
 * Identifies a binary across paths, copies and containers: the symbolizer
 * and the unwinder cache per-file work by it. Does not log.
 */
#ifndef ELF_BUILD_ID_H
#define ELF_BUILD_ID_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX 32 /* bytes; GNU ld writes 20 (SHA-1) */

/* Copies elf's build-id (phnum program headers, file_size bytes of file)
 * into id; returns its length, 0 if there is none (or a note lies outside
 * the file, or is larger than a sane note segment). */
size_t elf_build_id(Elf *elf, size_t phnum, uint64_t file_size, uint8_t id[ELF_BUILD_ID_MAX]);

#endif
