/*
 * Unit test of daemon/push/pusher.c's back-off (the rest is tested on a
 * real daemon against a loopback receiver: tests/integration/test_push.py):
 * from 1 s doubling to 5 min, each wait between half and all of it.
 */
#include <stdint.h>

#include "check.h"
#include "pusher.h"

static void test_backoff(void)
{
	static const int64_t nominal[] = { 1000,  2000,	  4000,	  8000,	  16000, 32000,
					   64000, 128000, 256000, 300000, 300000 };

	for (unsigned i = 0; i < sizeof(nominal) / sizeof(nominal[0]); i++) {
		unsigned failures = i + 1;

		CHECK_MSG(pusher_backoff_ms(failures, 0.0) == nominal[i], "(%u failures)",
			  failures);
		CHECK_MSG(pusher_backoff_ms(failures, 0.999999) >= nominal[i] / 2 &&
				  pusher_backoff_ms(failures, 0.999999) < nominal[i] / 2 + 2,
			  "(%u failures)", failures);
		CHECK(pusher_backoff_ms(failures, 0.5) == nominal[i] - nominal[i] / 4);
	}
	/* No overflow however long the outage. */
	CHECK(pusher_backoff_ms(1000000, 0.0) == 300000);
	CHECK(pusher_backoff_ms(0, 0.0) == 1000);
}

int main(void)
{
	test_backoff();
	return CHECK_DONE();
}
