/* python_splice: see python_splice.h. */
#include "python_splice.h"

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "frame.h"
#include "offcpu.h"

enum python_splice_native python_splice_classify(const char *frames)
{
	size_t n = strcspn(frames, ";"), eval = strlen(PYTHON_SPLICE_EVAL_FRAME);

	if (frame_name_len(frames, n) == eval && !strncmp(frames, PYTHON_SPLICE_EVAL_FRAME, eval))
		return PYTHON_SPLICE_EVAL;
	if (!strncmp(frames, "py::", 4))
		return PYTHON_SPLICE_TRAMPOLINE;
	return PYTHON_SPLICE_OTHER;
}

/* Appends activation g's frames (python[first[g]..first[g + 1])), oldest
 * first. */
static uint32_t put_activation(const uint32_t *first, uint32_t g, int32_t *order, uint32_t n)
{
	for (uint32_t j = first[g + 1]; j-- > first[g];)
		order[n++] = -1 - (int32_t)j;
	return n;
}

uint32_t python_splice_plan(const uint8_t *kinds, uint32_t n_native, const __u64 *python,
			    uint32_t n_python, int32_t *order)
{
	/* Activation g is python[first[g], first[g + 1]); a reason frame
	 * (the chain cut short) belongs to the oldest one it ends. */
	uint32_t first[OFFCPU_MAX_STACK_DEPTH + 2], n_act = 0, n = 0, evals = 0, g;

	if (n_python > OFFCPU_MAX_STACK_DEPTH)
		n_python = OFFCPU_MAX_STACK_DEPTH;
	for (uint32_t j = 0; j < n_python; j++) {
		bool starts = j == 0 || ((python[j - 1] & OFFCPU_FRAME_PYTHON_ENTRY) &&
					 OFFCPU_FRAME_PYTHON_CODE(python[j]) >= 4096);

		if (starts)
			first[n_act++] = j;
	}
	first[n_act] = n_python;
	for (uint32_t i = 0; i < n_native; i++)
		evals += kinds[i] == PYTHON_SPLICE_EVAL;
	/* The activations past the innermost `evals`, oldest first, at the root. */
	for (g = n_act; g-- > evals;)
		n = put_activation(first, g, order, n);
	/* The native frames, root first: eval frame number k from the leaf
	 * is activation k. */
	g = evals;
	for (uint32_t i = n_native; i-- > 0;) {
		if (kinds[i] == PYTHON_SPLICE_EVAL) {
			g--;
			if (g < n_act) {
				n = put_activation(first, g, order, n);
				continue;
			}
		} else if (kinds[i] == PYTHON_SPLICE_TRAMPOLINE && n_act) {
			continue;
		}
		order[n++] = (int32_t)i;
	}
	return n;
}
