/*
 * Unit test of drain_run: a batch as collector_drain() returns it, named
 * through lookups that answer from tables here, no BPF. Checks the folded
 * names (root to leaf, tracing frames cut, return addresses looked up one
 * byte earlier, ';' kept out of frame names), the pseudo-frames of lost
 * stacks, chains and file names, the waker chains, the per-drain name cache,
 * the names kept across drains and what passes through (histograms,
 * counters).
 */
#include <errno.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "drain.h"

/* One address's name: exact addresses only, so a lookup of a return
 * address that was not moved back one byte finds nothing. */
struct sym {
	uint32_t tgid; /* 0: kernel */
	uint64_t addr;
	const char *name;
};

static const struct sym syms[] = {
	{ 0, 0x1000, "bpf_prog_0123_sched_switch" }, /* the tracing machinery */
	{ 0, 0x2000, "schedule" },
	{ 0, 0x3000, "do_nanosleep" },
	{ 0, 0x4000, "name;with;semicolons" },
	{ 0, 0x8000, "__do_softirq" },
	{ 0, 0x9000, "futex_wait" },
	{ 0, 0xa000, "do_syscall_64" },
	{ 10, 0x5000, "main" },
	{ 10, 0x6000, "outer;inlined" }, /* an inline chain, root first */
	{ 20, 0x5000, "other_main" },
	{ 20, 0x6000, "other_leaf" },
};

static unsigned lookups_kernel[0x10000], lookups_user;

static const char *sym_find(uint32_t tgid, uint64_t addr)
{
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (syms[i].tgid == tgid && syms[i].addr == addr)
			return syms[i].name;
	return "[unknown]";
}

static void kernel_frame(void *arg, uint64_t addr, char *buf, size_t size)
{
	(void)arg;
	if (addr < sizeof(lookups_kernel) / sizeof(lookups_kernel[0]))
		lookups_kernel[addr]++;
	snprintf(buf, size, "%s", sym_find(0, addr));
}

/* A file's frame (OFFCPU_FRAME_FILE): the same code in every process. */
#define FILE_FRAME(id, vaddr)                                                                      \
	(OFFCPU_FRAME_FILE | (uint64_t)(id) << OFFCPU_FRAME_FILE_SHIFT | (vaddr))

static void user_frames(void *arg, uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	(void)arg;
	lookups_user++;
	if (addr & OFFCPU_FRAME_FILE)
		snprintf(buf, size, "file%u:0x%llx", OFFCPU_FRAME_FILE_ID(addr),
			 (unsigned long long)(addr & OFFCPU_FRAME_VADDR_MASK));
	else
		snprintf(buf, size, "%s", sym_find(tgid, addr));
}

/* Waker stacks by hash, as the collector's waker_stacks map. */
#define WK_TASK	   0x100 /* leaf first: futex_wait, do_syscall_64 */
#define WU_TASK	   0x101 /* tgid 10, leaf first: 0x6000, 0x5000 */
#define WK_SOFTIRQ 0x102
#define WK_GONE	   0x1ff

static int waker_stack(void *arg, uint64_t hash, struct offcpu_stack *ret)
{
	(void)arg;
	memset(ret, 0, sizeof(*ret));
	switch (hash) {
	case WK_TASK:
		ret->nr = 2;
		ret->ips[0] = 0x9000;
		ret->ips[1] = 0xa001;
		return 0;
	case WU_TASK:
		ret->nr = 2;
		ret->ips[0] = 0x6000;
		ret->ips[1] = 0x5001;
		return 0;
	case WK_SOFTIRQ:
		ret->nr = 1;
		ret->ips[0] = 0x8000;
		return 0;
	default:
		return -ENOENT;
	}
}

#define FILE_HASH      0xf11e
#define FILE_HASH_GONE 0xf00d

static int file_name(void *arg, uint64_t hash, struct offcpu_file_name *ret)
{
	(void)arg;
	if (hash != FILE_HASH)
		return -ENOENT;
	snprintf(ret->name, sizeof(ret->name), "a;b\nc.log");
	return 0;
}

static const struct drain_lookup lookup = {
	.kernel_frame = kernel_frame,
	.user_frames = user_frames,
	.waker_stack = waker_stack,
	.file_name = file_name,
};

/* Stack hashes of the batch. */
#define K_SLEEP	  0x11 /* kernel: tracing frame, schedule, do_nanosleep */
#define K_SEMI	  0x12 /* kernel: a name with ';' */
#define U_MAIN	  0x21 /* user: main -> outer -> inlined */
#define U_TRUNC	  0x22 /* user: a table walk that stopped early */
#define S_MISSING 0x99 /* counted, but the stack map was full */

#define C_TASK	  0x31 /* a task woken by a task woken in a softirq */
#define C_GONE	  0x32 /* a level whose stack was evicted */
#define C_MISSING 0x39

static struct offcpu_stack stack_of(uint32_t flags, uint32_t nr, const uint64_t *ips)
{
	struct offcpu_stack st = { .nr = nr, .flags = flags };

	memcpy(st.ips, ips, nr * sizeof(*ips));
	return st;
}

static struct offcpu_waker waker(uint64_t kstack, uint64_t ustack, uint32_t tgid, const char *comm)
{
	struct offcpu_waker w = { .kstack = kstack, .ustack = ustack, .tgid = tgid, .pid = tgid };

	snprintf(w.comm, sizeof(w.comm), "%s", comm);
	return w;
}

enum {
	ROW_SLEEP_10,  /* off-CPU, tgid 10: K_SLEEP, U_MAIN */
	ROW_SLEEP_20,  /* off-CPU, tgid 20: the same hashes, another process */
	ROW_AGAIN_10,  /* off-CPU, tgid 10 again: names from the cache */
	ROW_SEMI,      /* K_SEMI, no user stack */
	ROW_LOST,      /* stacks not in the batch */
	ROW_TRUNC,     /* U_TRUNC */
	ROW_UNSAMPLED, /* time of a sampled slot no sample stands for */
	ROW_WAKEUP,    /* C_TASK */
	ROW_WAKE_GONE, /* C_GONE */
	ROW_WAKE_LOST, /* C_MISSING */
	ROW_WAKE_NONE, /* chain 0 */
	ROW_FILE,      /* fileio with a file name */
	ROW_FILE_GONE, /* fileio whose name was evicted */
	N_ROWS,
};

static void batch_make(struct collector_batch *b)
{
	static const uint64_t k_sleep[] = { 0x1000, 0x2001, 0x3001 };
	static const uint64_t k_semi[] = { 0x4000 };
	static const uint64_t u_main[] = { 0x6000, 0x5001 };
	static const uint64_t u_trunc[] = { 0x5000 };
	struct collector_row *r;

	memset(b, 0, sizeof(*b));
	/* Unsorted on purpose: drain_run sorts them to search them. */
	b->n_stacks = 4;
	b->stacks = calloc(b->n_stacks, sizeof(*b->stacks));
	b->stacks[0] =
		(struct collector_stack){ U_TRUNC, stack_of(OFFCPU_STACK_DWARF, 1, u_trunc) };
	b->stacks[1] = (struct collector_stack){ U_MAIN, stack_of(0, 2, u_main) };
	b->stacks[2] = (struct collector_stack){ K_SEMI, stack_of(0, 1, k_semi) };
	b->stacks[3] = (struct collector_stack){ K_SLEEP, stack_of(0, 3, k_sleep) };

	b->n_chains = 2;
	b->chains = calloc(b->n_chains, sizeof(*b->chains));
	b->chains[0].hash = C_TASK;
	b->chains[0].chain.n = 3;
	b->chains[0].chain.levels[0] = waker(WK_TASK, WU_TASK, 10, "writer");
	b->chains[0].chain.levels[1] = waker(WK_SOFTIRQ, 0, 0, "swapper/0");
	b->chains[0].chain.levels[2] = waker(0, 0, 30, "never"); /* past the interrupt */
	b->chains[1].hash = C_GONE;
	b->chains[1].chain.n = 1;
	b->chains[1].chain.levels[0] = waker(WK_GONE, 0, 40, "lost_one");

	b->n_rows = N_ROWS;
	b->rows = calloc(N_ROWS, sizeof(*b->rows));
	for (unsigned i = 0; i < N_ROWS; i++) {
		r = &b->rows[i];
		r->key = (struct offcpu_key){ .tgid = 10, .pid = 11, .kind = OFFCPU_KIND_OFFCPU };
		r->value.sum_ns = 1000 * (i + 1);
		r->value.count = i + 1;
		snprintf(r->value.comm, sizeof(r->value.comm), "row%u", i);
	}
	b->rows[ROW_SLEEP_10].key.kstack = K_SLEEP;
	b->rows[ROW_SLEEP_10].key.ustack = U_MAIN;
	b->rows[ROW_SLEEP_20].key = b->rows[ROW_SLEEP_10].key;
	b->rows[ROW_SLEEP_20].key.tgid = 20;
	b->rows[ROW_AGAIN_10].key = b->rows[ROW_SLEEP_10].key;
	b->rows[ROW_AGAIN_10].key.state = 1;
	/* A comm of all 16 bytes, no NUL: the row's gets one. */
	memset(b->rows[ROW_AGAIN_10].value.comm, 'x', sizeof(b->rows[0].value.comm));
	b->rows[ROW_SEMI].key.kstack = K_SEMI;
	b->rows[ROW_LOST].key.kstack = S_MISSING;
	b->rows[ROW_LOST].key.ustack = S_MISSING;
	b->rows[ROW_TRUNC].key.ustack = U_TRUNC;
	b->rows[ROW_UNSAMPLED].key.flags = OFFCPU_KEY_UNSAMPLED;
	b->rows[ROW_UNSAMPLED].key.kstack = K_SLEEP;
	b->rows[ROW_WAKEUP].key.kind = OFFCPU_KIND_WAKEUP;
	b->rows[ROW_WAKEUP].key.chain = C_TASK;
	b->rows[ROW_WAKE_GONE].key.kind = OFFCPU_KIND_OFFWAKE;
	b->rows[ROW_WAKE_GONE].key.chain = C_GONE;
	b->rows[ROW_WAKE_LOST].key.kind = OFFCPU_KIND_CHAIN;
	b->rows[ROW_WAKE_LOST].key.chain = C_MISSING;
	b->rows[ROW_WAKE_NONE].key.kind = OFFCPU_KIND_WAKEUP;
	b->rows[ROW_FILE].key.kind = OFFCPU_KIND_FILEIO;
	b->rows[ROW_FILE].key.ustack = U_MAIN;
	b->rows[ROW_FILE].key.chain = FILE_HASH;
	b->rows[ROW_FILE_GONE].key.kind = OFFCPU_KIND_FILEIO;
	b->rows[ROW_FILE_GONE].key.chain = FILE_HASH_GONE;

	b->n_hists = 2;
	b->hists = calloc(b->n_hists, sizeof(*b->hists));
	b->hists[1].key.tgid = 10;
	b->hists[1].count = 7;
	b->counters[OFFCPU_CNT_SWITCHES] = 12345;
}

static void batch_free(struct collector_batch *b)
{
	free(b->rows);
	free(b->stacks);
	free(b->chains);
	free(b->hists);
	free(b->totals);
}

static void test_names(void)
{
	struct collector_batch b;
	struct drain_result r;
	struct collector_hist *hists;
	const struct drain_row *row;

	batch_make(&b);
	hists = b.hists;
	CHECK(drain_run(&b, &lookup, NULL, NULL, &r) == 0);
	CHECK(r.n_rows == N_ROWS);
	if (r.n_rows != N_ROWS)
		goto out;
	row = r.rows;

	/* Root to leaf; the tracing frame at the leaf is cut. */
	CHECK_STR(row[ROW_SLEEP_10].kstack, "do_nanosleep;schedule");
	/* An address's inline chain stays root first. */
	CHECK_STR(row[ROW_SLEEP_10].ustack, "main;outer;inlined");
	CHECK_STR(row[ROW_SLEEP_10].chain, "");
	CHECK(row[ROW_SLEEP_10].value.sum_ns == 1000 && row[ROW_SLEEP_10].value.count == 1);
	CHECK_STR(row[ROW_SLEEP_10].value.comm, "row0");
	/* The same hashes in another process are other code. */
	CHECK_STR(row[ROW_SLEEP_20].kstack, "do_nanosleep;schedule");
	CHECK_STR(row[ROW_SLEEP_20].ustack, "other_main;other_leaf");
	CHECK_STR(row[ROW_AGAIN_10].ustack, "main;outer;inlined");
	CHECK(strlen(row[ROW_AGAIN_10].value.comm) == OFFCPU_COMM_LEN - 1);
	/* Named once per drain: K_SLEEP's root frame was looked up once for
	 * three rows (the unsampled row does not name its stacks); user stacks
	 * once per process (two addresses each in tgids 10 and 20). */
	CHECK(lookups_kernel[0x3000] == 1);
	CHECK(lookups_kernel[0x3001] == 0);   /* return addresses one byte back */
	CHECK(lookups_user == 2 + 2 + 1 + 2); /* and U_TRUNC, and the waker's */

	CHECK_STR(row[ROW_SEMI].kstack, "name:with:semicolons");
	CHECK_STR(row[ROW_SEMI].ustack, "");
	CHECK_STR(row[ROW_LOST].kstack, "[stack lost]");
	CHECK_STR(row[ROW_LOST].ustack, "[stack lost]");
	CHECK_STR(row[ROW_TRUNC].ustack, DRAIN_TRUNCATED_FRAME ";main");
	CHECK(row[ROW_TRUNC].ustack_flags == OFFCPU_STACK_DWARF);
	CHECK(row[ROW_SLEEP_10].ustack_flags == 0);
	CHECK_STR(row[ROW_UNSAMPLED].ustack, DRAIN_UNSAMPLED_FRAME);
	CHECK_STR(row[ROW_UNSAMPLED].kstack, "");
	CHECK_STR(row[ROW_UNSAMPLED].chain, "");

	/* Waker levels leaf first: kernel frames, "-", user frames, who; the
	 * softirq found in the second level's kernel stack ends the chain. */
	CHECK_STR(row[ROW_WAKEUP].chain, "futex_wait;do_syscall_64;-;inlined;outer;main;writer;--;"
					 "__do_softirq;-;[softirq]");
	CHECK_STR(row[ROW_WAKE_GONE].chain, "[stack lost];-;lost_one");
	CHECK_STR(row[ROW_WAKE_LOST].chain, "[chain lost]");
	CHECK_STR(row[ROW_WAKE_NONE].chain, "[no wakeup seen]");

	/* The file's name as the leaf, ';' and control bytes replaced. */
	CHECK_STR(row[ROW_FILE].ustack, "main;outer;inlined;" DRAIN_FILE_FRAME_PREFIX "a:b?c.log");
	CHECK_STR(row[ROW_FILE_GONE].ustack, DRAIN_FILE_FRAME_PREFIX "[name lost]");

	/* What passes through. */
	CHECK(r.hists == hists && r.n_hists == 2 && r.hists[1].count == 7);
	CHECK(b.hists == NULL && b.n_hists == 0);
	CHECK(r.n_stacks == 4 && r.n_chains == 2);
	CHECK(r.counters[OFFCPU_CNT_SWITCHES] == 12345);
out:
	drain_result_release(&r);
	CHECK(r.rows == NULL && r.n_rows == 0);
	batch_free(&b);
}

/* A failed collector_drain() leaves its batch empty: an empty result, with
 * the counters. */
static void test_empty(void)
{
	struct collector_batch b = { 0 };
	struct drain_result r;

	b.counters[OFFCPU_CNT_SWITCHES] = 5;
	CHECK(drain_run(&b, &lookup, NULL, NULL, &r) == 0);
	CHECK(r.n_rows == 0 && r.n_hists == 0 && r.n_stacks == 0);
	CHECK(r.counters[OFFCPU_CNT_SWITCHES] == 5);
	drain_result_release(&r);
}

static uint64_t epoch;

static uint64_t names_epoch(void *arg)
{
	(void)arg;
	return epoch;
}

/* One drain of three rows: K_SLEEP with a stack of file frames in tgids 10
 * and 20, and U_MAIN (addresses of tgid 10) with no kernel stack. */
static void drain_kept(struct drain_names *kept, struct drain_result *r)
{
	static const uint64_t k_sleep[] = { 0x1000, 0x2001, 0x3001 };
	static const uint64_t u_main[] = { 0x6000, 0x5001 };
	const uint64_t u_file[] = { FILE_FRAME(7, 0x700), FILE_FRAME(8, 0x801) };
	struct drain_lookup lk = lookup;
	struct collector_batch b = { .n_stacks = 3, .n_rows = 3 };

	lk.names_epoch = names_epoch;
	b.stacks = calloc(b.n_stacks, sizeof(*b.stacks));
	b.rows = calloc(b.n_rows, sizeof(*b.rows));
	b.stacks[0] = (struct collector_stack){ K_SLEEP, stack_of(0, 3, k_sleep) };
	b.stacks[1] = (struct collector_stack){ U_MAIN, stack_of(0, 2, u_main) };
	/* File frames come from table walks only. */
	b.stacks[2] = (struct collector_stack){
		0x23, stack_of(OFFCPU_STACK_DWARF | OFFCPU_STACK_COMPLETE, 2, u_file)
	};
	for (unsigned i = 0; i < 3; i++)
		b.rows[i].key = (struct offcpu_key){ .tgid = i == 1 ? 20 : 10,
						     .kstack = i < 2 ? K_SLEEP : 0,
						     .ustack = i < 2 ? 0x23 : U_MAIN };
	CHECK(drain_run(&b, &lk, NULL, kept, r) == 0 && r->n_rows == 3);
	if (r->n_rows == 3) {
		CHECK_STR(r->rows[0].kstack, "do_nanosleep;schedule");
		CHECK_STR(r->rows[0].ustack, "file8:0x800;file7:0x700");
		CHECK_STR(r->rows[1].ustack, "file8:0x800;file7:0x700");
		CHECK_STR(r->rows[2].ustack, "main;outer;inlined");
	}
	batch_free(&b);
}

/* Kernel stacks and stacks of file frames are named once, not once per
 * drain; stacks of a process's addresses are named in every drain; all are
 * named again when the lookups' epoch moves (a file id forgotten). */
static void test_kept_names(void)
{
	struct drain_names *kept;
	struct drain_result r;
	unsigned user;

	CHECK(drain_names_new(&kept) == 0);
	memset(lookups_kernel, 0, sizeof(lookups_kernel));
	lookups_user = 0;
	drain_kept(kept, &r);
	drain_result_release(&r);
	CHECK(lookups_kernel[0x3000] == 1 && lookups_user == 2 + 2);
	CHECK(drain_names_count(kept) == 2);

	drain_kept(kept, &r);
	CHECK(lookups_kernel[0x3000] == 1 && lookups_user == 4 + 2); /* U_MAIN again */
	/* A row's names may be the kept ones: released with the result, they
	 * stay kept. */
	drain_result_release(&r);
	CHECK(drain_names_count(kept) == 2);

	epoch++;
	user = lookups_user;
	drain_kept(kept, &r);
	drain_result_release(&r);
	CHECK(lookups_kernel[0x3000] == 2 && lookups_user == user + 4);
	drain_names_free(kept);
	drain_names_free(NULL);
}

/* drain_stack_name(): a kernel stack read off the CPU whose __sched frames
 * could not be put back says so at its leaf. */
static void test_sched_lost(void)
{
	const uint64_t ips[] = { 0x3000, 0xa001 };
	struct offcpu_stack whole = stack_of(0, 2, ips),
			    lost = stack_of(OFFCPU_STACK_SCHED_LOST, 2, ips);
	char *name;

	name = drain_stack_name(&lookup, &whole, 0, true);
	CHECK_STR(name, "do_syscall_64;do_nanosleep");
	free(name);
	name = drain_stack_name(&lookup, &lost, 0, true);
	CHECK_STR(name, "do_syscall_64;do_nanosleep;" DRAIN_SCHED_LOST_FRAME);
	free(name);
}

/* A CPython thread's stack: recv, called by the eval loop's frame that
 * ran activation (A, B entered), called by start_thread. */
static void py_user_frames(void *arg, uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	(void)arg;
	(void)tgid;
	snprintf(buf, size, "%s",
		 addr == 0x1000 ? "recv" : addr == 0x2000 ? "_PyEval_EvalFrameDefault (ceval.c:1)"
					   : "start_thread");
}

static void py_frame(void *arg, uint32_t tgid, uint64_t frame, char *buf, size_t size)
{
	(void)arg;
	snprintf(buf, size, "%s (app.py:%u) of %u",
		 OFFCPU_FRAME_PYTHON_CODE(frame) == 0x10000 ? "A" : "B",
		 OFFCPU_FRAME_PYTHON_INSTR(frame), tgid);
}

/* drain_stack_name(): a user stack's CPython frames in place of its eval
 * loop's frame, named through the lookup's python_frame. */
static void test_python_frames(void)
{
	struct drain_lookup py = { .user_frames = py_user_frames, .python_frame = py_frame };
	const uint64_t ips[] = { 0x1000, 0x2001, 0x3001,
				 OFFCPU_FRAME_PYTHON | 7ull << OFFCPU_FRAME_PYTHON_INSTR_SHIFT | 0x10000,
				 OFFCPU_FRAME_PYTHON | 9ull << OFFCPU_FRAME_PYTHON_INSTR_SHIFT | 0x20000 |
					 OFFCPU_FRAME_PYTHON_ENTRY };
	struct offcpu_stack whole = stack_of(OFFCPU_STACK_DWARF | OFFCPU_STACK_COMPLETE, 5, ips),
			    cut = stack_of(OFFCPU_STACK_DWARF, 5, ips);
	char *name;

	name = drain_stack_name(&py, &whole, 42, false);
	CHECK_STR(name, "start_thread;B (app.py:9) of 42;A (app.py:7) of 42;recv");
	free(name);
	name = drain_stack_name(&py, &cut, 42, false);
	CHECK_STR(name, DRAIN_TRUNCATED_FRAME ";start_thread;B (app.py:9) of 42;A (app.py:7) of 42;recv");
	free(name);
	py.python_frame = NULL;
	name = drain_stack_name(&py, &whole, 42, false);
	CHECK_STR(name, "start_thread;[python];[python];recv");
	free(name);
}

/* A frame-pointer walk's stack (no OFFCPU_STACK_DWARF: raw addresses)
 * that read data as a return address: the name ends before it, at
 * [truncated], rather than taking 2.0's bits for a CPython frame. */
static void test_garbage_in_raw_stack(void)
{
	struct drain_lookup py = { .user_frames = py_user_frames, .python_frame = py_frame };
	const uint64_t ips[] = { 0x1000, 0x3001, 0x4000000000000000ull /* 2.0 */, 0x3001 };
	struct offcpu_stack raw = stack_of(0, 4, ips), clean = stack_of(0, 2, ips);
	char *name;

	name = drain_stack_name(&py, &raw, 42, false);
	CHECK_STR(name, DRAIN_TRUNCATED_FRAME ";start_thread;recv");
	free(name);
	name = drain_stack_name(&py, &clean, 42, false);
	CHECK_STR(name, "start_thread;recv");
	free(name);
}

static int cgroup_lookups, ns_pid_lookups;

static int cgroup_path(void *arg, uint64_t id, uint32_t tgid, char *buf, size_t size)
{
	(void)arg;
	(void)tgid;
	cgroup_lookups++;
	if (id != 77)
		return -ENOENT;
	snprintf(buf, size, "/system.slice/a b.service");
	return 0;
}

static uint32_t ns_pid(void *arg, uint32_t tgid)
{
	(void)arg;
	ns_pid_lookups++;
	return tgid == 10 ? 1 : 0;
}

/* Rows' cgroups named by path and processes' ns_pid, each once a drain,
 * unsampled rows too; an id not named, or none, is "". */
static void test_cgroups(void)
{
	struct collector_row rows[] = {
		{ .key = { .tgid = 10, .pid = 10, .cgroup = 77 }, .value = { .sum_ns = 1 } },
		{ .key = { .tgid = 10, .pid = 11, .cgroup = 77 }, .value = { .sum_ns = 2 } },
		{ .key = { .tgid = 20, .pid = 20, .cgroup = 78 }, .value = { .sum_ns = 3 } },
		{ .key = { .tgid = 30, .pid = 30 }, .value = { .sum_ns = 4 } },
		{ .key = { .tgid = 10, .pid = 12, .cgroup = 77, .flags = OFFCPU_KEY_UNSAMPLED },
		  .value = { .sum_ns = 5 } },
	};
	struct collector_batch b = { .rows = rows, .n_rows = 5 };
	struct drain_lookup lk = lookup;
	struct drain_result r;

	lk.cgroup_path = cgroup_path;
	lk.ns_pid = ns_pid;
	CHECK(drain_run(&b, &lk, NULL, NULL, &r) == 0);
	CHECK(r.n_rows == 5);
	for (size_t i = 0; i < r.n_rows; i++) {
		uint64_t id = r.rows[i].key.cgroup;

		CHECK_STR(r.rows[i].cgroup, id == 77 ? "/system.slice/a b.service" : "");
		CHECK(r.rows[i].ns_pid == (r.rows[i].key.tgid == 10 ? 1u : 0u));
	}
	CHECK(cgroup_lookups == 2);  /* 77 and 78, once each; 0 is none */
	CHECK(ns_pid_lookups == 3); /* tgids 10, 20, 30 */
	drain_result_release(&r);
}

int main(void)
{
	test_cgroups();
	test_names();
	test_empty();
	test_kept_names();
	test_sched_lost();
	test_python_frames();
	test_garbage_in_raw_stack();
	return CHECK_DONE();
}
