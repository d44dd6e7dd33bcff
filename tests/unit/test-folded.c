/* Unit test of daemon/profile/folded.c: the exact folded format. */
#include <stdlib.h>

#include "check.h"
#include "folded.h"

/* An off-CPU stack, the common case. */
static int add(struct folded *f, const char *comm, const char *ustack, const char *kstack,
	       bool want_user, bool want_kernel, uint64_t value)
{
	struct folded_stack st = { .comm = comm, .ustack = ustack, .kstack = kstack };

	return folded_add(f, &st, want_user, want_kernel, value);
}

static int add_kind(struct folded *f, uint32_t kind, const char *chain, uint64_t value)
{
	struct folded_stack st = {
		.comm = "tgt",
		.ustack = "main;wait",
		.kstack = "futex_wait;schedule",
		.kind = kind,
		.chain = chain,
	};

	return folded_add(f, &st, true, true, value);
}

static char *text_of(struct folded *f, uint64_t divisor)
{
	char *t = folded_text(f, divisor);

	folded_free(f);
	return t;
}

int main(void)
{
	struct folded *f;
	char *t;

	/* Both parts: the delimiter always stands between them. */
	CHECK(folded_new(&f) == 0);
	CHECK(add(f, "app", "main;work", "entry_SYSCALL_64;schedule", true, true, 1500) == 0);
	CHECK(add(f, "kworker/0:1", "", "worker_thread;schedule", true, true, 2000) == 0);
	CHECK(add(f, "app", "main;work", "entry_SYSCALL_64;schedule", true, true, 600) == 0);
	CHECK(add(f, "idle", "main", "", true, true, 1000) == 0);
	t = text_of(f, 1000);
	CHECK_STR(t, "app;main;work;-;entry_SYSCALL_64;schedule 2\n"
		     "idle;main;- 1\n"
		     "kworker/0:1;-;worker_thread;schedule 2\n");
	free(t);

	/* One part only: no delimiter. Values round to nearest; 0 lines vanish. */
	CHECK(folded_new(&f) == 0);
	CHECK(add(f, "a", "main", "", true, false, 499) == 0);
	CHECK(add(f, "b", "", "schedule", false, true, 500) == 0);
	CHECK(add(f, "c", "", "", false, true, 7000) == 0);
	t = text_of(f, 1000);
	CHECK_STR(t, "b;schedule 1\nc 7\n");
	free(t);

	/* A comm with ';' or a newline must not break the line format. */
	CHECK(folded_new(&f) == 0);
	CHECK(add(f, "we;ird\nname", "f", "g", true, true, 3) == 0);
	t = text_of(f, 1);
	CHECK_STR(t, "we_ird_name;f;-;g 3\n");
	free(t);

	/* Each kind's layout (see folded.h). */
	CHECK(folded_new(&f) == 0);
	CHECK(add_kind(f, OFFCPU_KIND_RUNQ, "", 5) == 0);
	CHECK(add_kind(f, OFFCPU_KIND_WAKEUP, "try_to_wake_up;futex_wake;-;signal;work;wkr", 6) ==
	      0);
	CHECK(add_kind(f, OFFCPU_KIND_OFFWAKE, "ttwu;-;signal;wkr", 7) == 0);
	CHECK(add_kind(f, OFFCPU_KIND_CHAIN, "ttwu;-;b;wkr;--;hrtimer_wakeup;-;[hardirq]", 8) == 0);
	CHECK(add_kind(f, OFFCPU_KIND_ONCPU, "", 9) == 0);
	t = text_of(f, 1);
	CHECK_STR(t, "tgt;main;wait;-;futex_wait;schedule;--;ttwu;-;b;wkr;--;hrtimer_wakeup;-;["
		     "hardirq] 8\n"
		     "tgt;main;wait;-;futex_wait;schedule;--;ttwu;-;signal;wkr 7\n"
		     "tgt;main;wait;-;futex_wait;schedule;[on-cpu] 9\n"
		     "tgt;main;wait;-;futex_wait;schedule;[runqueue] 5\n"
		     "tgt;try_to_wake_up;futex_wake;-;signal;work;wkr 6\n");
	free(t);

	/* BIO: device time as is, queue time (state R) with a [queued] leaf. */
	CHECK(folded_new(&f) == 0);
	{
		struct folded_stack st = {
			.comm = "tgt",
			.ustack = "main;read",
			.kstack = "submit",
			.kind = OFFCPU_KIND_BIO,
			.chain = "",
			.state = OFFCPU_IO_STATE_DEVICE,
		};

		CHECK(folded_add(f, &st, true, true, 9) == 0);
		st.state = OFFCPU_IO_STATE_QUEUE;
		CHECK(folded_add(f, &st, true, true, 2) == 0);
		st.kind = OFFCPU_KIND_FILEIO;
		st.kstack = "";
		st.state = OFFCPU_IO_STATE_DEVICE;
		CHECK(folded_add(f, &st, true, true, 4) == 0);
	}
	t = text_of(f, 1);
	CHECK_STR(t, "tgt;main;read;- 4\ntgt;main;read;-;submit 9\n"
		     "tgt;main;read;-;submit;[queued] 2\n");
	free(t);

	/* Empty input gives empty text, not NULL. */
	CHECK(folded_new(&f) == 0);
	t = text_of(f, 1);
	CHECK_STR(t, "");
	free(t);
	return CHECK_DONE();
}
