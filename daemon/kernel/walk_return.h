/*
 * walk_return: with sampled_walk = auto, how deferred user walks meet their
 * thread's return to user mode: by BPF task work, or at the rseq_update
 * tracepoint, whichever costs the host less, judged at each drain from the
 * last interval's rates.
 *
 * A task work costs the switch that schedules it the time the program
 * measures (task_work_ns: mostly sending its irq_work's self-IPI, 12-22 us
 * on the development VM, whose hypervisor traps it), and taking the IPI
 * costs about as much again there. Only what is measured counts, so auto
 * leans to task works (the old default) where the two are close. The
 * rseq_update program runs at every context switch of a thread with rseq
 * registered: WALK_RETURN_RSEQ_SWITCH_NS is counted for every switch (40-80
 * ns measured there, most of it calling any program). Only a 2x difference
 * either way changes the choice, so that it does not flap.
 */
#ifndef WALK_RETURN_H
#define WALK_RETURN_H

#include <stdbool.h>
#include <stddef.h>

#define WALK_RETURN_RSEQ_SWITCH_NS 100.0

/* The last drain interval's rates. */
struct walk_return_rates {
	double switches_per_s; /* context switches the scheduler programs saw */
	double deferred_per_s; /* walks waiting for a return to user mode: task works
				  scheduled and walks taken at rseq_update */
	double task_work_ns;   /* the mean time a switch spent scheduling a task work,
				  the last measured; 0: none timed yet */
};

/*
 * Whether deferred walks should wait for rseq_update, given that they do
 * now (rseq) or not, and the rates r. why (size bytes) is set to a line
 * for status that says why, with the estimates.
 */
bool walk_return_rseq(bool rseq, const struct walk_return_rates *r, char *why, size_t size);

#endif
