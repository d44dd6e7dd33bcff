/* Unit test of daemon/manager_window.c: windows close on the clock's
 * boundaries, whatever the time they open. */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "manager_internal.h"

static void test_window_close(void)
{
	CHECK(manager_window_close_ms(12345, 10) == 20000);
	CHECK(manager_window_close_ms(20000, 10) == 30000); /* on a boundary: the next */
	CHECK(manager_window_close_ms(19999, 10) == 20000);
	CHECK(manager_window_close_ms(1764000000123, 60) == 1764000060000);
	CHECK(manager_window_close_ms(0, 1) == 1000);
}

int main(void)
{
	test_window_close();
	return CHECK_DONE();
}
