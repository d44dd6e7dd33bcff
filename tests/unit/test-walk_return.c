/*
 * Unit test of daemon/kernel/walk_return.c: sampled_walk = auto's choice between
 * task works and rseq_update, with its 2x margin either way, and the line
 * status shows for it.
 */
#include <string.h>

#include "check.h"

#include "walk_return.h"

/* The choice from rseq (now) at deferred walks/s, 20 us a task work and
 * 100,000 switches/s (the rseq_update program: 10 ms/s). */
static bool choice(bool rseq, double deferred_per_s)
{
	struct walk_return_rates r = { .switches_per_s = 100000,
				       .deferred_per_s = deferred_per_s,
				       .task_work_ns = 20000 };
	char why[256];

	return walk_return_rseq(rseq, &r, why, sizeof(why));
}

int main(void)
{
	struct walk_return_rates r = { .switches_per_s = 100000, .deferred_per_s = 2000 };
	char why[256];

	/* Nothing timed yet: task works, and status says so. */
	CHECK(!walk_return_rseq(false, &r, why, sizeof(why)));
	CHECK(!strcmp(why, "auto: by task work until one is timed"));
	CHECK(!walk_return_rseq(true, &r, why, sizeof(why)));

	/* Task works cost 20 us each: 20 ms/s at 1,000/s, against 10 ms/s for
	 * the program. Task works go on up to 2x the program's cost... */
	CHECK(!choice(false, 500));
	CHECK(!choice(false, 1000));
	CHECK(!choice(false, 1000 * 0.999));
	/* ... and rseq_update is chosen past that. */
	CHECK(choice(false, 1001));
	CHECK(choice(false, 50000));
	/* Once at rseq_update, it stays down to half the program's cost. */
	CHECK(choice(true, 1000));
	CHECK(choice(true, 251));
	CHECK(!choice(true, 250));
	CHECK(!choice(true, 0));

	r.task_work_ns = 15000;
	r.deferred_per_s = 2000;
	CHECK(walk_return_rseq(false, &r, why, sizeof(why)));
	CHECK(!strcmp(why, "auto: 2000 walks/s would cost 300 ns a switch by task work (15.0 us "
			   "each to schedule, the IPI aside), against about 100 at rseq_update"));
	/* No switches seen: nothing a switch to divide by. */
	r.switches_per_s = 0;
	CHECK(walk_return_rseq(false, &r, why, sizeof(why)));
	CHECK(strstr(why, "cost 0 ns a switch") != NULL);
	return CHECK_DONE();
}
