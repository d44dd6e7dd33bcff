/* unwind_table: the rules read from this test's own .eh_frame (a function
 * with a known prologue) and from libc's (the PLT pattern, the outermost
 * frame). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "unwind_table.h"

/* push %rbp; mov %rsp,%rbp: CFA = rsp+8, then rsp+16 with rbp saved at
 * CFA-16, then rbp+16. */
__attribute__((noinline)) int framed(int x) /* -fno-omit-frame-pointer: tests/CMakeLists.txt */
{
	volatile int v = x;

	return v + 1;
}

static const struct offcpu_unwind_row *row_at(const struct unwind_table *t, uint64_t pc)
{
	const struct offcpu_unwind_row *found = NULL;

	for (size_t i = 0; i < t->n_rows && t->rows[i].pc <= pc; i++)
		found = &t->rows[i];
	return found;
}

static uint64_t load_bias(void)
{
	Dl_info info;
	struct link_map *lm;

	CHECK(dladdr1((void *)framed, &info, (void **)&lm, RTLD_DL_LINKMAP));
	return lm->l_addr;
}

static void test_own_prologue(void)
{
	struct unwind_table t;
	const struct offcpu_unwind_row *r;
	uint64_t f = (uint64_t)(uintptr_t)framed - load_bias();
	int fd = open("/proc/self/exe", O_RDONLY);
	int rbp_rows = 0;

	CHECK(unwind_table_build(fd, 1 << 20, &t) == 0);
	close(fd);
	CHECK(t.n_rows > 10);
	for (size_t i = 1; i < t.n_rows; i++)
		CHECK(t.rows[i - 1].pc < t.rows[i].pc);
	r = row_at(&t, f);
	CHECK(r && r->cfa_rule == OFFCPU_CFA_RSP && r->cfa_off == 8 &&
	      r->rbp_rule == OFFCPU_RBP_SAME);
	/* Further in: the frame is rbp-based, rbp saved at CFA-16. */
	for (uint64_t pc = f; pc < f + 16; pc++) {
		r = row_at(&t, pc);
		if (r && r->cfa_rule == OFFCPU_CFA_RBP && r->cfa_off == 16 &&
		    r->rbp_rule == OFFCPU_RBP_AT_CFA && r->rbp_off == -16)
			rbp_rows++;
	}
	CHECK_MSG(rbp_rows > 0, "no rbp+16 row in framed()");
	unwind_table_free(&t);
}

static void test_libc(void)
{
	struct unwind_table t;
	int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	size_t plt = 0, ends = 0, none = 0;

	if (fd < 0) {
		fprintf(stderr, "libc.so.6 not at the Debian path: skipped\n");
		return;
	}
	CHECK(unwind_table_build(fd, 1 << 22, &t) == 0);
	close(fd);
	for (size_t i = 0; i < t.n_rows; i++) {
		plt += t.rows[i].cfa_rule == OFFCPU_CFA_PLT;
		ends += t.rows[i].cfa_rule == OFFCPU_CFA_END;
		none += t.rows[i].cfa_rule == OFFCPU_CFA_NONE;
	}
	CHECK_MSG(t.n_rows > 10000, "%zu rows", t.n_rows);
	CHECK_MSG(plt >= 1, "no PLT row");
	CHECK_MSG(none >= 1, "no gap rows");
	CHECK_MSG(t.n_unsupported < t.n_rows / 100, "%u of %zu unsupported", t.n_unsupported,
		  t.n_rows);
	fprintf(stderr, "libc: %zu rows (%zu PLT, %zu outermost, %zu gaps, %u unsupported)\n",
		t.n_rows, plt, ends, none, t.n_unsupported);
	unwind_table_free(&t);
	/* Too small a limit is an error, not a partial table. */
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	CHECK(unwind_table_build(fd, 100, &t) == -E2BIG);
	CHECK(t.rows == NULL && t.n_rows == 0);
	close(fd);
}

static void test_not_elf(void)
{
	struct unwind_table t;
	int fd = open("/proc/self/cmdline", O_RDONLY);

	CHECK(unwind_table_build(fd, 1 << 20, &t) == -ENOEXEC);
	close(fd);
}

int main(void)
{
	CHECK(framed(1) == 2);
	test_own_prologue();
	test_libc();
	test_not_elf();
	return check_failures ? 1 : 0;
}
