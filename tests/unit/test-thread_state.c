/* Unit test of common/thread_state.c: state names and masks, as filters
 * ("--state S,D", continuous_states) spell them. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "thread_state.h"

static void test_thread_state(void)
{
	uint32_t mask;

	CHECK(thread_state_mask_parse("S,D", &mask) == 0 && mask == ((1u << 1) | (1u << 2)));
	mask = 0;
	CHECK(thread_state_mask_parse("running,disk", &mask) == 0 &&
	      mask == ((1u << 0) | (1u << 2)));
	CHECK(thread_state_mask_parse("R,S,D,O", &mask) == 0 && mask == THREAD_STATE_ALL);
	CHECK(thread_state_mask_parse("Sleeping", &mask) == 0 && mask == 1u << 1);
	mask = 0x55;
	CHECK(thread_state_mask_parse("x", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("S,,D", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse("S,", &mask) == -EINVAL);
	CHECK(thread_state_mask_parse(",S", &mask) == -EINVAL);
	CHECK_MSG(mask == 0x55, "(mask written on failure)");
	CHECK(thread_state_parse("uninterruptible") == 2);
	CHECK(thread_state_parse("bogus") == -EINVAL);
	CHECK(!strcmp(thread_state_name(3), "O"));
	CHECK(!strcmp(thread_state_name(THREAD_STATE_COUNT), "?"));
}

int main(void)
{
	test_thread_state();
	return CHECK_DONE();
}
