/*
 * unwind_table: the compact unwind table of one ELF file, built from its
 * .eh_frame (else .debug_frame) with libdw's CFI API, for the in-kernel
 * unwinder (bpf/stack.bpf.c). One row per PC range with the same rules:
 * how to find the CFA (rsp + off, rbp + off, the PLT pattern), where the
 * caller's rbp was saved, or that the return address is undefined (the
 * outermost frame: _start, a thread's clone). The return address is at
 * CFA - 8, as the x86-64 psABI has it; a row that says otherwise is marked
 * unsupported, as are CFA rules that are other DWARF expressions. Called by
 * the unwinder on its own thread. Does not log.
 */
#ifndef UNWIND_TABLE_H
#define UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "offcpu.h"

struct unwind_table {
	struct offcpu_unwind_row *rows; /* sorted by pc (the ELF virtual address) */
	size_t n_rows;
	uint32_t n_unsupported; /* rows whose CFA rule is beyond us */
	const char *source;	/* ".eh_frame", ".debug_frame" */
};

/*
 * Builds fd's table (fd stays open and owned by the caller). Consecutive rows
 * with the same rules are merged, and a PC range without CFI gets a row of
 * rule OFFCPU_CFA_NONE, so that a lookup never borrows a neighbour's rules.
 * Returns 0, -ENOEXEC if fd is not ELF or has no CFI at all, -E2BIG beyond
 * max_rows rows, or -ENOMEM.
 */
int unwind_table_build(int fd, size_t max_rows, struct unwind_table *t);
void unwind_table_free(struct unwind_table *t); /* NULL-safe; t may be reused */

#endif
