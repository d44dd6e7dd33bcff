/* walk_return: see walk_return.h. */
#include "walk_return.h"

#include <stdio.h>

bool walk_return_rseq(bool rseq, const struct walk_return_rates *r, char *why, size_t size)
{
	/* Nanoseconds a second each way costs: of task works, the part the
	 * program times. */
	double task_works = r->deferred_per_s * r->task_work_ns;
	double hook = WALK_RETURN_RSEQ_SWITCH_NS * r->switches_per_s;
	bool want;

	if (r->task_work_ns <= 0) {
		snprintf(why, size, "auto: by task work until one is timed");
		return false;
	}
	want = rseq ? task_works > hook / 2 : task_works > 2 * hook;
	snprintf(why, size,
		 "auto: %.0f walks/s would cost %.0f ns a switch by task work (%.1f us each "
		 "to schedule, the IPI aside), against about %.0f at rseq_update",
		 r->deferred_per_s, r->switches_per_s > 0 ? task_works / r->switches_per_s : 0,
		 r->task_work_ns / 1e3, WALK_RETURN_RSEQ_SWITCH_NS);
	return want;
}
