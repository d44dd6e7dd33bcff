/* See unwind_table.h. */
#include "unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16 /* the return address column on x86-64 */

/* .eh_frame_hdr's search table: (initial location, FDE address) pairs
 * sorted by location, the way gcc and lld write it. */
#define EH_PE_DATAREL_SDATA4 0x3b
#define EH_HDR_VERSION	     1

struct table_builder {
	struct unwind_table *t;
	size_t cap, max_rows;
};

static int builder_push(struct table_builder *b, const struct offcpu_unwind_row *row)
{
	struct unwind_table *t = b->t;
	struct offcpu_unwind_row *last = t->n_rows ? &t->rows[t->n_rows - 1] : NULL;

	if (last && last->cfa_rule == row->cfa_rule && last->cfa_off == row->cfa_off &&
	    last->rbp_rule == row->rbp_rule && last->rbp_off == row->rbp_off)
		return 0; /* the same rules continue */
	if (last && last->pc == row->pc) {
		*last = *row; /* an empty range: the later rules win */
		return 0;
	}
	if (t->n_rows == b->max_rows)
		return -E2BIG;
	if (t->n_rows == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		void *p = reallocarray(t->rows, cap, sizeof(*t->rows));

		if (!p)
			return -ENOMEM;
		t->rows = p;
		b->cap = cap;
	}
	t->rows[t->n_rows++] = *row;
	return 0;
}

/* rsp + 8 + ((rip & 15) >= 11) << 3: the CFA inside a lazy-binding PLT entry,
 * as binutils describes it. */
static bool is_plt_expression(const Dwarf_Op *ops, size_t n)
{
	static const uint8_t atoms[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15,
					 DW_OP_and,   DW_OP_lit11,  DW_OP_ge,
					 DW_OP_lit3,  DW_OP_shl,    DW_OP_plus };

	if (n != sizeof(atoms) || ops[0].number != 8 || ops[1].number != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ops[i].atom != atoms[i])
			return false;
	return true;
}

/* "saved at CFA + off": libdw writes it as call_frame_cfa, plus_uconst off. */
static bool is_cfa_offset(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

static void row_cfa(Dwarf_Frame *f, struct offcpu_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	int reg = -1;
	int64_t off = 0;

	row->cfa_rule = OFFCPU_CFA_UNSUPPORTED;
	if (dwarf_frame_cfa(f, &ops, &n) < 0 || n == 0)
		return;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		reg = (int)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (n == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else if (is_plt_expression(ops, n)) {
		row->cfa_rule = OFFCPU_CFA_PLT;
		return;
	}
	if ((reg != REG_RSP && reg != REG_RBP) || off < INT32_MIN || off > INT32_MAX)
		return;
	row->cfa_rule = reg == REG_RSP ? OFFCPU_CFA_RSP : OFFCPU_CFA_RBP;
	row->cfa_off = (int32_t)off;
}

static void row_return_address(Dwarf_Frame *f, struct offcpu_unwind_row *row)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	if (dwarf_frame_register(f, REG_RA, mem, &ops, &n) < 0)
		row->cfa_rule = OFFCPU_CFA_UNSUPPORTED;
	else if (n == 0 && ops)
		row->cfa_rule = OFFCPU_CFA_END; /* undefined: nothing called this frame */
	else if (!is_cfa_offset(ops, n, &off) || off != -8)
		row->cfa_rule = OFFCPU_CFA_UNSUPPORTED;
}

static void row_rbp(Dwarf_Frame *f, struct offcpu_unwind_row *row)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	row->rbp_rule = OFFCPU_RBP_UNDEFINED;
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n) < 0)
		return;
	if (n == 0 && !ops) {
		row->rbp_rule = OFFCPU_RBP_SAME;
	} else if (is_cfa_offset(ops, n, &off) && off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = OFFCPU_RBP_AT_CFA;
		row->rbp_off = (int16_t)off;
	}
}

/* Rows of the FDE that covers start, up to limit (the next FDE). */
static int add_fde_rows(struct table_builder *b, Dwarf_CFI *cfi, uint64_t start, uint64_t limit)
{
	uint64_t addr = start;
	int err;

	while (addr < limit) {
		struct offcpu_unwind_row row = { .pc = addr };
		Dwarf_Addr lo, hi;
		Dwarf_Frame *f;

		if (dwarf_cfi_addrframe(cfi, addr, &f) < 0)
			break;
		if (dwarf_frame_info(f, &lo, &hi, NULL) < 0 || hi <= addr) {
			free(f);
			break;
		}
		row_cfa(f, &row);
		if (row.cfa_rule != OFFCPU_CFA_UNSUPPORTED)
			row_return_address(f, &row);
		row_rbp(f, &row);
		free(f);
		b->t->n_unsupported += row.cfa_rule == OFFCPU_CFA_UNSUPPORTED;
		err = builder_push(b, &row);
		if (err)
			return err;
		addr = hi;
	}
	if (addr < limit) /* a gap before the next FDE */
		return builder_push(b, &(struct offcpu_unwind_row){ .pc = addr });
	return 0;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name) && sh->sh_type != SHT_NOBITS)
			return scn;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The initial locations of every FDE, sorted, from .eh_frame_hdr: libdw
 * looks FDEs up by address but does not list them. Returns the count, 0 if
 * the section is missing or in an encoding other than the usual one.
 */
static size_t fde_starts(Elf *elf, uint64_t **ret)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, ".eh_frame_hdr", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	const uint8_t *p;
	uint32_t count;
	uint64_t *starts;

	if (!d || d->d_size < 12)
		return 0;
	p = d->d_buf;
	/* version, eh_frame_ptr encoding (any 4-byte one), count and table encodings */
	if (p[0] != EH_HDR_VERSION || (p[1] & 0x0f) != 0x0b || (p[2] & 0x0f) != 0x03 ||
	    p[3] != EH_PE_DATAREL_SDATA4)
		return 0;
	memcpy(&count, p + 8, 4);
	if (!count || count > (d->d_size - 12) / 8)
		return 0;
	starts = calloc(count, sizeof(*starts));
	if (!starts)
		return 0;
	for (uint32_t i = 0; i < count; i++) {
		int32_t rel;

		memcpy(&rel, p + 12 + (size_t)i * 8, 4);
		starts[i] = sh.sh_addr + (int64_t)rel; /* datarel: from the section start */
	}
	qsort(starts, count, sizeof(*starts), cmp_u64);
	*ret = starts;
	return count;
}

int unwind_table_build(int fd, size_t max_rows, struct unwind_table *t)
{
	struct table_builder b = { .t = t, .max_rows = max_rows };
	uint64_t *starts = NULL;
	size_t n_starts;
	Dwarf_CFI *cfi = NULL;
	Elf *elf;
	int err = -ENOEXEC;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto out;
	n_starts = fde_starts(elf, &starts);
	if (!n_starts)
		goto out;
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi)
		goto out;
	t->source = ".eh_frame";
	err = 0;
	for (size_t i = 0; i < n_starts && !err; i++) {
		if (i + 1 < n_starts && starts[i + 1] == starts[i])
			continue;
		err = add_fde_rows(&b, cfi, starts[i],
				   i + 1 < n_starts ? starts[i + 1] : UINT64_MAX);
	}
	if (!err && !t->n_rows)
		err = -ENOEXEC;
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	free(starts);
	if (elf)
		elf_end(elf);
	if (err)
		unwind_table_free(t);
	return err;
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
