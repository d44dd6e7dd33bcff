/* kind_status: each kind's state and detail from the manager's facts. */
#include <stdlib.h>

#include "check.h"
#include "kind_status.h"

int main(void)
{
	struct kind_status k[KIND_STATUS_COUNT];
	struct kind_status_input in = { 0 };

	kind_status_fill(&in, k);
	CHECK_STR(k[OFFCPU_KIND_OFFCPU].name, "offcpu");
	CHECK_STR(k[OFFCPU_KIND_FILEIO].name, "fileio");
	CHECK_STR(k[KIND_STATUS_HOTCOLD].name, "hotcold");
	CHECK_STR(k[KIND_STATUS_REQUEST].name, "request");
	CHECK_STR(k[KIND_STATUS_LATENCY].name, "latency");
	for (unsigned i = 0; i < KIND_STATUS_COUNT; i++) {
		CHECK(k[i].state == KIND_STATE_READY);
		CHECK_STR(k[i].detail, "");
	}

	/* unavailable wins over in use; the reason is kept whole */
	in.unavailable[OFFCPU_KIND_FILEIO] = "tracefs is not mounted at /sys/kernel/tracing";
	in.continuous[OFFCPU_KIND_FILEIO] = true;
	in.continuous[OFFCPU_KIND_OFFCPU] = true;
	in.captures[OFFCPU_KIND_OFFCPU] = 2;
	in.captures[OFFCPU_KIND_WAKEUP] = 1;
	in.captures[KIND_STATUS_LATENCY] = 1;
	in.traced_with[OFFCPU_KIND_BIO] = "block_rq_issue/block_rq_complete";
	in.captures[OFFCPU_KIND_BIO] = 1;
	kind_status_fill(&in, k);
	CHECK(k[OFFCPU_KIND_FILEIO].state == KIND_STATE_UNAVAILABLE);
	CHECK_STR(kind_status_state_name(k[OFFCPU_KIND_FILEIO].state), "unavailable");
	CHECK_STR(k[OFFCPU_KIND_FILEIO].detail, "tracefs is not mounted at /sys/kernel/tracing");
	CHECK(k[OFFCPU_KIND_OFFCPU].state == KIND_STATE_IN_USE);
	CHECK_STR(kind_status_state_name(k[OFFCPU_KIND_OFFCPU].state), "in use");
	CHECK_STR(k[OFFCPU_KIND_OFFCPU].detail, "by the continuous profile and 2 captures");
	CHECK_STR(k[OFFCPU_KIND_WAKEUP].detail, "by 1 capture");
	CHECK_STR(k[KIND_STATUS_LATENCY].detail, "by 1 session");
	CHECK_STR(k[OFFCPU_KIND_BIO].detail, "by 1 capture; block_rq_issue/block_rq_complete");
	CHECK(k[OFFCPU_KIND_RUNQ].state == KIND_STATE_READY);
	CHECK_STR(kind_status_state_name(k[OFFCPU_KIND_RUNQ].state), "ready");
	return CHECK_DONE();
}
