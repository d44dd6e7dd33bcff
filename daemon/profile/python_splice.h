/*
 * python_splice: where a user stack's CPython frames go among its native
 * ones. The walk records them after the native frames (bpf/python.bpf.h),
 * newest first, each activation of the interpreter's eval loop ending with
 * the frame it was entered with (OFFCPU_FRAME_PYTHON_ENTRY). Each
 * activation's frames take the place of its _PyEval_EvalFrameDefault,
 * matched from the leaf: the newest activation is the innermost eval
 * frame. Activations the native walk did not reach (it stopped early) go
 * at the root; eval frames the chain did not reach stay as they are. Used
 * by drain.c; pure, does not log.
 */
#ifndef PYTHON_SPLICE_H
#define PYTHON_SPLICE_H

#include <linux/types.h> /* the __u64 of offcpu.h's stacks */
#include <stdint.h>

#define PYTHON_SPLICE_EVAL_FRAME "_PyEval_EvalFrameDefault"

enum python_splice_native {
	PYTHON_SPLICE_OTHER,
	PYTHON_SPLICE_EVAL,	  /* _PyEval_EvalFrameDefault: an activation's place */
	PYTHON_SPLICE_TRAMPOLINE, /* 3.12's perf trampoline ("py::" in its perf map): it
				     names what the spliced frames say */
};

/* What a native frame is, by its name (an address's ';'-joined inline
 * chain, root first, as the symbolizer gives it). */
enum python_splice_native python_splice_classify(const char *frames);

/*
 * The order of a stack's frames, root first, into order (room for
 * n_native + n_python entries): i >= 0 is native frame i, -1 - j is
 * Python frame j. kinds[i] classifies native frame i; both lists are leaf
 * first. Eval frames an activation takes and trampolines, where any
 * activation was spliced, are left out. Returns the number of entries.
 */
uint32_t python_splice_plan(const uint8_t *kinds, uint32_t n_native, const __u64 *python,
			    uint32_t n_python, int32_t *order);

#endif
