/*
 * pt_target: the small binary whose control flow the Intel PT tests
 * synthesize traces for (tests/unit/test-pt.c). handle() is the analysed
 * function: it calls parse(), then lookup() only when asked to, then
 * reply(). The functions are kept out of line and free of loops so that
 * each call of handle() is a short, fixed path through its instructions:
 * one conditional branch (TNT bit) and direct calls and returns.
 * spin() is never called: its "jmp ." is code a decoder can follow
 * forever without reading trace (the stuck-decoder test).
 */
#include <stdlib.h>

volatile int pt_sink;

__attribute__((noinline)) void parse(void)
{
	pt_sink += 1;
}

__attribute__((noinline)) void lookup(void)
{
	pt_sink += 2;
}

__attribute__((noinline)) void reply(void)
{
	pt_sink += 3;
}

__attribute__((noinline)) void handle(int need_lookup)
{
	parse();
	if (need_lookup)
		lookup();
	reply();
}

__attribute__((noinline, used)) void spin(void)
{
	for (;;)
		__asm__ volatile("");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;

	for (int i = 0; i < n; i++)
		handle(i & 1);
	return 0;
}
