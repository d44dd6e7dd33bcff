/* Unit test of daemon/folded.c: the exact folded format. */
#include <stdlib.h>

#include "check.h"
#include "folded.h"

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
	CHECK(folded_add(f, "app", "main;work", "entry_SYSCALL_64;schedule", true, true, 1500) ==
	      0);
	CHECK(folded_add(f, "kworker/0:1", "", "worker_thread;schedule", true, true, 2000) == 0);
	CHECK(folded_add(f, "app", "main;work", "entry_SYSCALL_64;schedule", true, true, 600) == 0);
	CHECK(folded_add(f, "idle", "main", "", true, true, 1000) == 0);
	t = text_of(f, 1000);
	CHECK_STR(t, "app;main;work;-;entry_SYSCALL_64;schedule 2\n"
		     "idle;main;- 1\n"
		     "kworker/0:1;-;worker_thread;schedule 2\n");
	free(t);

	/* One part only: no delimiter. Values round to nearest; 0 lines vanish. */
	CHECK(folded_new(&f) == 0);
	CHECK(folded_add(f, "a", "main", "", true, false, 499) == 0);
	CHECK(folded_add(f, "b", "", "schedule", false, true, 500) == 0);
	CHECK(folded_add(f, "c", "", "", false, true, 7000) == 0);
	t = text_of(f, 1000);
	CHECK_STR(t, "b;schedule 1\nc 7\n");
	free(t);

	/* A comm with ';' or a newline must not break the line format. */
	CHECK(folded_new(&f) == 0);
	CHECK(folded_add(f, "we;ird\nname", "f", "g", true, true, 3) == 0);
	t = text_of(f, 1);
	CHECK_STR(t, "we_ird_name;f;-;g 3\n");
	free(t);

	/* Empty input gives empty text, not NULL. */
	CHECK(folded_new(&f) == 0);
	t = text_of(f, 1);
	CHECK_STR(t, "");
	free(t);
	return CHECK_DONE();
}
