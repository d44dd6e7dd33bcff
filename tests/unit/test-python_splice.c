/* test-python_splice: where CPython's activations go among native frames. */
#include <linux/types.h>
#include <stdint.h>

#include "check.h"
#include "offcpu.h"
#include "python_splice.h"

#define O PYTHON_SPLICE_OTHER
#define E PYTHON_SPLICE_EVAL
#define T PYTHON_SPLICE_TRAMPOLINE
#define N(n) ((int32_t)-1 - (n)) /* Python frame n */

/* A Python frame of code object number c; entry: its activation's first. */
static __u64 py(unsigned c, int entry)
{
	return OFFCPU_FRAME_PYTHON | (uint64_t)(0x10000 + c * 0x100) | (entry ? OFFCPU_FRAME_PYTHON_ENTRY : 0);
}

static void check_plan(const char *what, const uint8_t *kinds, uint32_t n_native,
		       const __u64 *python, uint32_t n_python, const int32_t *want, uint32_t n_want)
{
	int32_t got[64];
	uint32_t n = python_splice_plan(kinds, n_native, python, n_python, got);

	CHECK_MSG(n == n_want, "%s: %u entries, want %u", what, n, n_want);
	for (uint32_t i = 0; i < n && i < n_want; i++)
		CHECK_MSG(got[i] == want[i], "%s: entry %u is %d, want %d", what, i, got[i], want[i]);
}

int main(void)
{
	/* 3.11+: one activation runs several frames. Leaf first: recv,
	 * sock_recv, eval (A, B entered), _PyEval_Vector, eval (C), main. */
	{
		uint8_t k[] = { O, O, E, O, E, O };
		__u64 p[] = { py(1, 0), py(2, 1), py(3, 1) };
		int32_t want[] = { 5, N(2), 3, N(1), N(0), 1, 0 };

		check_plan("activations", k, 6, p, 3, want, 7);
	}
	/* The native walk stopped before the outer activations: at the root. */
	{
		uint8_t k[] = { O, E };
		__u64 p[] = { py(1, 1), py(2, 1), py(3, 1) };
		int32_t want[] = { N(2), N(1), N(0), 0 };

		check_plan("more activations than eval frames", k, 2, p, 3, want, 4);
	}
	/* The chain was cut: outer eval frames stay as they are. */
	{
		uint8_t k[] = { O, E, O, E, O };
		__u64 p[] = { py(1, 1) };
		int32_t want[] = { 4, 3, 2, N(0), 0 };

		check_plan("fewer activations than eval frames", k, 5, p, 1, want, 5);
	}
	/* A reason frame ends the activation it cut. */
	{
		uint8_t k[] = { O, E, E };
		__u64 p[] = { py(1, 1), OFFCPU_FRAME_PYTHON_ERR(OFFCPU_PYTHON_ERR_READ) };
		int32_t want[] = { 2, N(1), N(0), 0 };

		check_plan("reason frame", k, 3, p, 2, want, 4);
	}
	/* Perf trampolines go where activations were spliced, not elsewhere. */
	{
		uint8_t k[] = { O, E, T, O };
		__u64 p[] = { py(1, 1) };
		int32_t want[] = { 3, N(0), 0 };
		int32_t kept[] = { 3, 2, 1, 0 };

		check_plan("trampoline", k, 4, p, 1, want, 3);
		check_plan("trampoline, no Python frames", k, 4, p, 0, kept, 4);
	}
	CHECK(python_splice_classify("_PyEval_EvalFrameDefault") == E);
	CHECK(python_splice_classify("_PyEval_EvalFrameDefault (ceval.c:1234)") == E);
	CHECK(python_splice_classify("_PyEval_EvalFrameDefault;call_function [inlined]") == E);
	CHECK(python_splice_classify("_PyEval_EvalFrameDefaultX") == O);
	CHECK(python_splice_classify("main;_PyEval_EvalFrameDefault [inlined]") == O);
	CHECK(python_splice_classify("py::nap:/tmp/x.py") == T);
	CHECK(python_splice_classify("libpython3.11.so.1.0+0x1234") == O);
	return check_failures ? 1 : 0;
}
